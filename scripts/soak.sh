#!/usr/bin/env bash
# The soak and crash suite: mixed load with RSS / open-file plateaus, a kill -9 loop,
# the 10 000-task burst, idle-connection and slowloris attacks, SIGTERM with work in flight.
# Not in CI (it takes about 20 minutes); figures go to RELIABILITY.md.
#
#   scripts/soak.sh                         # everything, 10 minutes of mixed load
#   scripts/soak.sh --minutes 2 --only mixed,sigterm
#   CORRAL_BIN=target/release/corral scripts/soak.sh
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f plugins/dist/ticker.wasm ] || ./scripts/build-plugins.sh
bin="${CORRAL_BIN:-target/debug/corral}"
[ -x "$bin" ] || cargo build --locked
exec python3 scripts/soak.py --bin "$bin" "$@"
