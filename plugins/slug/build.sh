#!/usr/bin/env bash
# Builds dist/slug.wasm, a WebAssembly component, from app.js with componentize-qjs --sync
# (QuickJS inside the component: about 1.6 MB, calls in microseconds).
#
#   ./build.sh && corral serve --plugins dist --watch
#
# Uses $COMPONENTIZE_QJS when set; otherwise installs the pinned componentize-qjs from
# package-lock.json into node_modules/ (npm ci) the first time.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
name=slug

qjs="${COMPONENTIZE_QJS:-}"
if [[ -z "$qjs" ]]; then
    qjs=node_modules/.bin/componentize-qjs
    if [[ ! -x "$qjs" ]]; then
        command -v npm >/dev/null || { echo "error: npm is missing: install Node.js (20 or later)" >&2; exit 1; }
        npm ci --no-audit --no-fund
    fi
fi

mkdir -p dist
"$qjs" --wit wit --world plugin --js app.js --sync --output "dist/$name.wasm" >/dev/null
cp "$name.toml" "dist/$name.toml"
echo "built dist/$name.wasm ($(stat -c %s "dist/$name.wasm") bytes)"
