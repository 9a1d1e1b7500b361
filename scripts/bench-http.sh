#!/usr/bin/env bash
# tools/call throughput and latency over Streamable HTTP, measured with wrk (a C load
# generator: `apt-get install wrk`), for 1, 8 and 32 concurrent clients on one session.
#
#   scripts/bench-http.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-10}"
command -v wrk >/dev/null || { echo "wrk is not installed: apt-get install wrk" >&2; exit 1; }
./scripts/build-plugins.sh >/dev/null
# The bench profile builds target/release/corral with the same features as the benches.
cargo bench --locked --no-run --bench latency >/dev/null 2>&1
dir="$(mktemp -d)"
trap 'kill "$server" 2>/dev/null || true; rm -rf "$dir"' EXIT
cp plugins/dist/text.wasm "$dir/"
port=18473
target/release/corral serve --plugins "$dir" --http "127.0.0.1:$port" --db :memory: --log-level error &
server=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
session=$(curl -si -X POST "http://127.0.0.1:$port/mcp" -H 'content-type: application/json' \
    -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"wrk","version":"0"}}}' \
    | tr -d '\r' | awk -F': ' 'tolower($1)=="mcp-session-id"{print $2}')
cat > "$dir/call.lua" <<LUA
wrk.method = "POST"
wrk.body = '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["Mcp-Session-Id"] = "$session"
wrk.headers["MCP-Protocol-Version"] = "2025-11-25"
LUA
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
for clients in 1 8 32; do
    threads=$(( clients < 2 ? 1 : 2 ))
    echo "== $clients clients"
    wrk -t "$threads" -c "$clients" -d "${seconds}s" --latency -s "$dir/call.lua" "http://127.0.0.1:$port/mcp" \
        | grep -E 'Requests/sec|^ +(50|99)%|Non-2xx|Socket errors'
done
