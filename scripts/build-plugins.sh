#!/usr/bin/env bash
# Builds the example plugins in plugins/ and collects them in plugins/dist/,
# ready for `corral serve --plugins plugins/dist`.
#
#   scripts/build-plugins.sh                 # from any directory
#   PLUGINS_TARGET_DIR=/tmp/t scripts/build-plugins.sh
#
# Needs the wasm32-wasip2 target: `rustup target add wasm32-wasip2`.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
plugins="$root/plugins"
target_dir="${PLUGINS_TARGET_DIR:-$plugins/target}"
dist="$plugins/dist"
names=(text ticker hash)

cargo build --locked --release --target wasm32-wasip2 \
    --manifest-path "$plugins/Cargo.toml" --target-dir "$target_dir"

mkdir -p "$dist"
for name in "${names[@]}"; do
    # A cdylib crate named <name> builds to <name>.wasm, which is already a component.
    cp "$target_dir/wasm32-wasip2/release/$name.wasm" "$dist/$name.wasm"
    # The optional manifest with per-plugin limits travels next to the component.
    if [[ -f "$plugins/$name/$name.toml" ]]; then
        cp "$plugins/$name/$name.toml" "$dist/$name.toml"
    else
        rm -f "$dist/$name.toml"
    fi
done

echo "plugins in $dist:"
for f in "$dist"/*; do
    printf '  %-12s %8d bytes\n' "$(basename "$f")" "$(stat -c %s "$f")"
done
echo "run: corral serve --plugins $dist"
