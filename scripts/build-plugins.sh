#!/usr/bin/env bash
# Builds the example plugins in plugins/ from source and collects them in plugins/dist/,
# ready for `corral serve --plugins plugins/dist`.
#
#   scripts/build-plugins.sh                 # from any directory
#   PLUGINS_TARGET_DIR=/tmp/t scripts/build-plugins.sh
#   PLUGINS_LANGS="rust js" scripts/build-plugins.sh   # only some languages
#
# Rust (text, ticker, hash, indexer; the SDK, contract 0.3.0): the wasm32-wasip2 target (`rustup target add wasm32-wasip2`).
# C (checksum): clang, lld and the WASI libc from Debian, installed here with apt-get when
#   missing and running as root; wasm-component-ld from Rust's toolchain.
# JavaScript (slug): componentize-qjs, pinned by plugins/slug/package-lock.json (npm ci).
# Python (stats): componentize-py, pinned by plugins/stats/requirements.txt (a venv).
# Each non-Rust plugin is built by its own build.sh, the same one `corral new` writes, and
# only when a file of its directory (or wit/) changed since its last build.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
plugins="$root/plugins"
target_dir="${PLUGINS_TARGET_DIR:-$plugins/target}"
dist="$plugins/dist"
langs="${PLUGINS_LANGS:-rust c js python}"
mkdir -p "$dist"

# Puts FROM at TO whole or not at all: the suites run side by side, and one of them may run this
# script while another copies from dist/ or serves it (a plain `cp` rewrites the file in place,
# and a reader then sees its first 64 KiB). An unchanged file is left as it is.
install_file() {
    local from="$1" to="$2"
    cmp -s "$from" "$to" && return
    local tmp
    tmp="$(dirname "$to")/.$(basename "$to").$$.tmp"
    cp "$from" "$tmp"
    mv -f "$tmp" "$to"
}

# Copies plugins/NAME's component (from FROM) and its optional manifest into dist/.
collect() {
    local name="$1" from="$2"
    install_file "$from" "$dist/$name.wasm"
    if [[ -f "$plugins/$name/$name.toml" ]]; then
        install_file "$plugins/$name/$name.toml" "$dist/$name.toml"
    else
        rm -f "$dist/$name.toml"
    fi
}

# Runs plugins/NAME/build.sh unless its dist/NAME.wasm is newer than every source file.
build_with_script() {
    local name="$1" dir="$plugins/$1"
    local out="$dir/dist/$name.wasm"
    if [[ -f "$out" ]] && [[ -z "$(find -L "$dir" "$root/wit" \
        \( -name dist -o -name node_modules -o -name .venv -o -name __pycache__ \) -prune \
        -o -type f -newer "$out" -print -quit)" ]]; then
        echo "$name: up to date"
    else
        echo "$name: building"
        "$dir/build.sh"
    fi
    collect "$name" "$out"
}

# clang + wasm-ld + the WASI libc: Debian packages, installed when missing and we may.
ensure_c_toolchain() {
    if command -v clang >/dev/null && command -v wasm-ld >/dev/null && [[ -f /usr/lib/wasm32-wasi/libc.a ]]; then
        return
    fi
    local packages=(clang lld wasi-libc libclang-rt-14-dev-wasm32)
    if [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null; then
        echo "error: the C plugin needs clang, wasm-ld and the WASI libc: apt-get install ${packages[*]}" >&2
        exit 1
    fi
    echo "installing the C toolchain: ${packages[*]}"
    apt-get update -qq || { echo "error: apt-get update failed" >&2; exit 1; }
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}" >/dev/null \
        || { echo "error: apt-get install ${packages[*]} failed" >&2; exit 1; }
}

for lang in $langs; do
    case "$lang" in
        rust)
            cargo build --locked --release --target wasm32-wasip2 \
                --manifest-path "$plugins/Cargo.toml" --target-dir "$target_dir"
            # A cdylib crate named <name> builds to <name>.wasm, which is already a component.
            for name in text ticker hash indexer; do
                collect "$name" "$target_dir/wasm32-wasip2/release/$name.wasm"
            done
            ;;
        c)
            ensure_c_toolchain
            build_with_script checksum
            ;;
        js)
            command -v npm >/dev/null || { echo "error: the JavaScript plugin needs Node.js and npm" >&2; exit 1; }
            build_with_script slug
            ;;
        python)
            command -v python3 >/dev/null || { echo "error: the Python plugin needs python3" >&2; exit 1; }
            build_with_script stats
            ;;
        *)
            echo "error: unknown language '$lang' in PLUGINS_LANGS (rust, c, js, python)" >&2
            exit 1
            ;;
    esac
done

echo "plugins in $dist:"
for f in "$dist"/*; do
    printf '  %-14s %9d bytes\n' "$(basename "$f")" "$(stat -c %s "$f")"
done
echo "run: corral serve --plugins $dist"
