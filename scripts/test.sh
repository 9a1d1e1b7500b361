#!/usr/bin/env bash
# The one command that runs every test: builds the example plugins, then the host's tests
# (unit, hostile WAT fixtures, end-to-end over stdio against the real binary), then checks
# that the benchmarks still compile, then runs the conformance and interop suites.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each phase's start, with the time since this script started, so a slow run shows where it went.
phase() { echo "== $* (at $(date -u +%T), ${SECONDS} s in)"; }
phase "example plugins"
./scripts/build-plugins.sh
# The Rust SDK and the example plugins' own unit tests, on this machine (no wasm).
phase "SDK and example plugins' unit tests"
cargo test --locked --manifest-path sdk/rust/Cargo.toml
cargo test --locked --manifest-path plugins/Cargo.toml
(cd plugins/slug && npm test)
(cd plugins/stats && python3 -m unittest)
phase "cargo test"
cargo test --locked "$@"
# The benchmarks still compile: checked, not built in release (a release build of wasmtime takes
# longer than the rest of this script's builds together). CI sets CORRAL_BENCHES_CHECKED when its
# lint (clippy --all-targets) has compiled them already.
if [ -z "${CORRAL_BENCHES_CHECKED:-}" ]; then
    cargo check --locked --benches
fi
# The official MCP conformance suite against `corral serve --http` (installs Node 24 locally and
# builds the fixture plugins, which the runs below share).
phase "conformance (frozen sets)"
./tests/conformance/run.sh
# Then, side by side (each against its own host on its own port; they mostly wait on each other's
# round trips, so two cores serve them together): 0.2.0-alpha.12's frozen sets, the 2026-07-28 era
# (expected-failures-2026-07-28) and 2025-11-25, and real MCP clients (TypeScript SDK, Inspector
# CLI, Python SDK 1.x and 2.x) over stdio and HTTP, installed from tests/interop's lock files.
# Beside them, the admin console in Debian's Chromium (tests/console: Playwright against a live host).
# Each writes to its own log, printed whole when it ends.
phase "conformance by era, interop, console (side by side)"
logs="$(mktemp -d "${TMPDIR:-/tmp}/corral-suites.XXXXXX")"
CONFORMANCE_REQUIREMENTS=2026-07-28 ./tests/conformance/run.sh >"$logs/conformance-2026-07-28.log" 2>&1 &
modern=$!
CONFORMANCE_REQUIREMENTS=2025-11-25 ./tests/conformance/run.sh >"$logs/conformance-2025-11-25.log" 2>&1 &
legacy=$!
./tests/interop/run.sh >"$logs/interop.log" 2>&1 &
interop=$!
./tests/console/run.sh >"$logs/console.log" 2>&1 &
console=$!
failed=0
for suite in "$modern conformance-2026-07-28" "$legacy conformance-2025-11-25" "$interop interop" "$console console"; do
    read -r pid name <<<"$suite"
    if wait "$pid"; then result=passed; else result=FAILED; failed=1; fi
    echo "== $name: $result"
    cat "$logs/$name.log"
done
rm -rf "$logs"
phase "done"
exit "$failed"
