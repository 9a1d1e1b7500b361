#!/usr/bin/env bash
# Builds the example plugins and the host, then serves the plugins over MCP on stdio.
# Type JSON-RPC lines on stdin, or point an MCP client at `target/release/corral`.
set -euo pipefail
cd "$(dirname "$0")/.."
rustup target add wasm32-wasip2 >/dev/null
./scripts/build-plugins.sh
cargo build --release --locked
echo 'corral is serving plugins/dist on stdio; try: {"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"me","version":"0"}}}' >&2
exec target/release/corral serve --plugins plugins/dist "$@"
