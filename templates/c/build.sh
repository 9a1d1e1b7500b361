#!/usr/bin/env bash
# Builds dist/{{name}}.wasm, a WebAssembly component, from the C sources here.
#
#   ./build.sh && corral serve --plugins dist --watch
#
# Needs clang and wasm-ld with the WASI libc (Debian: apt-get install clang lld wasi-libc
# libclang-rt-14-dev-wasm32) and wasm-component-ld, which ships with Rust's toolchain (rustup).
# gen/ holds the bindings `wit-bindgen c` 0.63.0 made from wit/plugin.wit (see README.md).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
name={{name}}

fail() { echo "error: $*" >&2; exit 1; }
command -v clang >/dev/null || fail "clang is missing; on Debian: apt-get install clang lld wasi-libc libclang-rt-14-dev-wasm32"
command -v wasm-ld >/dev/null || fail "wasm-ld is missing; on Debian: apt-get install lld"
sysroot="${WASI_SYSROOT:-/usr}"
[[ -f "$sysroot/lib/wasm32-wasi/libc.a" ]] || fail "no WASI libc under $sysroot/lib/wasm32-wasi; on Debian: apt-get install wasi-libc (or set WASI_SYSROOT)"
# wasm-component-ld links like wasm-ld, then turns the module into a component (with the WASI
# preview 1 adapter). Rust's toolchain carries it; `cargo install wasm-component-ld` also works.
linker="${WASM_COMPONENT_LD:-}"
if [[ -z "$linker" ]]; then
    linker="$(rustc --print sysroot 2>/dev/null)/lib/rustlib/$(rustc -vV 2>/dev/null | sed -n 's/^host: //p')/bin/wasm-component-ld"
    [[ -x "$linker" ]] || linker="$(command -v wasm-component-ld || true)"
fi
[[ -x "$linker" ]] || fail "wasm-component-ld not found: install Rust with rustup, or cargo install wasm-component-ld, or set WASM_COMPONENT_LD"

mkdir -p dist
clang --target=wasm32-wasi --sysroot="$sysroot" -mexec-model=reactor -Os -s -Wall -Wextra -Werror \
    -fuse-ld="$linker" -Wl,--wasi-adapter=reactor -Wl,--wasm-ld-path="$(command -v wasm-ld)" \
    -o "dist/$name.wasm" ./*.c gen/plugin.c gen/plugin_component_type.o
cp "$name.toml" "dist/$name.toml"
echo "built dist/$name.wasm ($(stat -c %s "dist/$name.wasm") bytes)"
