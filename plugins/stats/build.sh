#!/usr/bin/env bash
# Builds dist/stats.wasm, a WebAssembly component, from app.py with componentize-py (CPython
# inside the component: about 18 MB; corral compiles it once at load).
#
#   ./build.sh && corral serve --plugins dist --watch
#
# Uses $COMPONENTIZE_PY when set; otherwise installs the pinned componentize-py from
# requirements.txt into .venv/ the first time.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
name=stats

cpy="${COMPONENTIZE_PY:-}"
if [[ -z "$cpy" ]]; then
    cpy=.venv/bin/componentize-py
    if [[ ! -x "$cpy" ]]; then
        python3 -m venv .venv || { echo "error: cannot create a Python venv (python3 -m venv)" >&2; exit 1; }
        .venv/bin/pip install --quiet --disable-pip-version-check -r requirements.txt
    fi
fi

mkdir -p dist
"$cpy" --wit-path wit --world plugin componentize app --output "dist/$name.wasm" >/dev/null
cp "$name.toml" "dist/$name.toml"
echo "built dist/$name.wasm ($(stat -c %s "dist/$name.wasm") bytes)"
