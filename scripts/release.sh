#!/usr/bin/env bash
# The binaries to ship: corral linked statically against musl for x86-64 and aarch64, so that one
# file runs on any Linux of that architecture (no glibc version to match: RHEL 8, Ubuntu 20.04 and
# Amazon Linux 2 included). For each target it writes, into DIST:
#
#   corral-ARCH-linux-musl        the binary without its debug info, symbol table kept (a backtrace
#                                 still names every function)
#   corral-ARCH-linux-musl.debug  that debug info (DWARF line tables, compressed), which the binary
#                                 names in `.gnu_debuglink`: beside the binary, or under
#                                 /usr/lib/debug, backtraces resolve to files and lines
#
#   corral-ARCH-linux-musl.cdx.json  a CycloneDX SBOM of the binary's crates (cargo-cyclonedx)
#
# and then SHA256SUMS over all of them and, when CORRAL_SIGN_KEY names a cosign key (password in
# COSIGN_PASSWORD), SHA256SUMS.sig, a cosign `sign-blob` signature (`corral verify SHA256SUMS --key
# cosign.pub`, or `cosign verify-blob`): the sums cover every file, so one signature covers all. The aarch64 binary is smoke-tested under qemu-user
# (scripts/smoke.py: --version, a call, an MCP session with a task) and the x86-64 one natively.
#
# Cross-linking goes through `cargo zigbuild` (zig as the C compiler and linker): Debian's
# aarch64 gcc compiles the bundled SQLite against glibc's headers, whose 64-bit file functions
# (open64, ...) Rust's musl 1.2.5 no longer has. The script installs what it needs itself: the
# rustup targets, cargo-zigbuild and zig (PyPI) pinned in a venv, cargo-cyclonedx pinned, and
# Debian's qemu-user-static for the smoke test.
#
# Usage: scripts/release.sh [DIST]   (default: dist/)
#   CORRAL_RELEASE_TARGETS="x86_64-unknown-linux-musl"  build only some targets
#   CORRAL_RELEASE_PROFILE=release                      the cargo profile (default: release)
#   CORRAL_RELEASE_TOOLS=DIR                            where the tools go (default: ~/.cache/corral-release)
#   CORRAL_SIGN_KEY=cosign.key                          sign SHA256SUMS and the SBOM
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
dist="$(mkdir -p "${1:-dist}" && cd "${1:-dist}" && pwd)"
targets="${CORRAL_RELEASE_TARGETS:-x86_64-unknown-linux-musl aarch64-unknown-linux-musl}"
profile="${CORRAL_RELEASE_PROFILE:-release}"
tools="${CORRAL_RELEASE_TOOLS:-$HOME/.cache/corral-release}"
target_dir="${CARGO_TARGET_DIR:-$root/target}"

# Pinned: a new zig or cargo-zigbuild is a new linker, and a release should change only when
# corral does.
ZIGBUILD_VERSION=0.24.1
ZIG_VERSION=0.17.1
CYCLONEDX_VERSION=0.5.9

echo "== tools"
# shellcheck disable=SC2086
rustup target add $targets
rustup component add llvm-tools >/dev/null # llvm-objcopy: one objcopy for every target's ELF
objcopy="$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin/llvm-objcopy"
[ -x "$objcopy" ] || { echo "error: llvm-objcopy is missing from the llvm-tools component ($objcopy)" >&2; exit 1; }
pip_version() { "$tools/venv/bin/pip" show "$1" 2>/dev/null | sed -n 's/^Version: //p'; }
if [ "$(pip_version cargo-zigbuild)" != "$ZIGBUILD_VERSION" ] || [ "$(pip_version ziglang)" != "$ZIG_VERSION" ]; then
    python3 -m venv "$tools/venv"
    "$tools/venv/bin/pip" install -q "cargo-zigbuild==$ZIGBUILD_VERSION" "ziglang==$ZIG_VERSION"
fi
export PATH="$tools/venv/bin:$PATH"
if [ "$("$tools/cargo/bin/cargo-cyclonedx" --version 2>/dev/null | awk '{print $2}')" != "$CYCLONEDX_VERSION" ]; then
    cargo install --locked --root "$tools/cargo" cargo-cyclonedx --version "$CYCLONEDX_VERSION"
fi
if [[ " $targets " == *" aarch64-unknown-linux-musl "* ]] && ! command -v qemu-aarch64-static >/dev/null; then
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends qemu-user-static
fi

for target in $targets; do
    echo "== $target"
    arch="${target%%-*}"
    name="corral-$arch-linux-musl"
    start=$SECONDS
    cargo zigbuild --locked --profile "$profile" --bin corral --target "$target"
    echo "built $target in $((SECONDS - start)) s"
    built="$target_dir/$target/$profile/corral"
    "$objcopy" --only-keep-debug --compress-debug-sections=zlib "$built" "$dist/$name.debug"
    "$objcopy" --strip-debug --add-gnu-debuglink="$dist/$name.debug" "$built" "$dist/$name"
    chmod 0755 "$dist/$name"
    chmod 0644 "$dist/$name.debug"
    # Static: no program interpreter and no shared library needed.
    if readelf -l "$dist/$name" | grep -q INTERP || readelf -d "$dist/$name" | grep -q NEEDED; then
        echo "error: $dist/$name is dynamically linked:" >&2
        readelf -d "$dist/$name" | grep NEEDED >&2
        exit 1
    fi
done

echo "== smoke"
scripts/build-plugins.sh >/dev/null
for target in $targets; do
    arch="${target%%-*}"
    runner=()
    [ "$arch" = "$(uname -m)" ] || runner=(--runner "qemu-$arch-static")
    python3 scripts/smoke.py "${runner[@]}" "$dist/corral-$arch-linux-musl" plugins/dist
done

echo "== SBOMs and sums"
# One CycloneDX SBOM per binary: the crates resolved for its target.
for target in $targets; do
    arch="${target%%-*}"
    rm -f "$root"/corral*.cdx.json
    "$tools/cargo/bin/cargo-cyclonedx" cyclonedx --format json --describe binaries --target "$target" >/dev/null
    sbom=("$root"/corral*.cdx.json)
    [ -f "${sbom[0]}" ] || { echo "error: cargo-cyclonedx wrote no corral*.cdx.json" >&2; exit 1; }
    mv "${sbom[0]}" "$dist/corral-$arch-linux-musl.cdx.json"
done
(cd "$dist" && sha256sum corral-*-linux-musl corral-*-linux-musl.debug corral-*-linux-musl.cdx.json > SHA256SUMS)
if [ -n "${CORRAL_SIGN_KEY:-}" ]; then
    "$dist/corral-$(uname -m)-linux-musl" sign "$dist/SHA256SUMS" --key "$CORRAL_SIGN_KEY"
fi
ls -l "$dist"
