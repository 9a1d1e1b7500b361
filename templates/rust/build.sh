#!/usr/bin/env bash
# Builds dist/{{name}}.wasm (a WebAssembly component) and copies its manifest next to it.
#   ./build.sh && corral serve --plugins dist --watch
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-wasip2; then
    rustup target add wasm32-wasip2
fi
cargo build --release --target wasm32-wasip2
mkdir -p dist
# cargo names the component after the crate, with `-` turned into `_`.
cp "${CARGO_TARGET_DIR:-target}/wasm32-wasip2/release/{{crate}}.wasm" dist/{{name}}.wasm
cp {{name}}.toml dist/{{name}}.toml
echo "built dist/{{name}}.wasm ($(stat -c %s dist/{{name}}.wasm) bytes)"
