#!/usr/bin/env bash
# The binary to ship: `target/release/corral` without its debug info (DIST/corral), and that
# debug info in a file of its own beside it (DIST/corral.debug), which the binary names
# (`.gnu_debuglink`), so a backtrace printed where corral.debug sits next to the binary (or in
# /usr/lib/debug) still resolves to files and lines. The symbol table stays in the binary: a
# backtrace without the debug file still names every function.
#
# Usage: scripts/release.sh [DIST]   (default: dist/)
set -euo pipefail
cd "$(dirname "$0")/.."
dist="${1:-dist}"
cargo build --release --locked --bin corral
mkdir -p "$dist"
cp target/release/corral "$dist/corral.full"
objcopy --only-keep-debug --compress-debug-sections=zlib "$dist/corral.full" "$dist/corral.debug"
objcopy --strip-debug --add-gnu-debuglink="$dist/corral.debug" "$dist/corral.full" "$dist/corral"
rm "$dist/corral.full"
chmod 0755 "$dist/corral"
chmod 0644 "$dist/corral.debug"
ls -l "$dist/corral" "$dist/corral.debug"
