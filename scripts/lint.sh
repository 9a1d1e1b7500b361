#!/usr/bin/env bash
# Formatting, lints and the import arrows of the house plan (docs/architecture.md), for the host
# and the crates beside it. CI runs it before the tests; it changes nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all --check
for manifest in sdk/rust/Cargo.toml plugins/Cargo.toml tests/guests/Cargo.toml; do
    cargo fmt --all --check --manifest-path "$manifest"
done

echo "== cargo clippy"
cargo clippy --locked --all-targets -- -D warnings

echo "== import arrows"
# Each room may import only the rooms below it (docs/architecture.md, "Rooms").
status=0
forbid() {
    local room="$1" path="src/$1"
    shift
    [[ -e "$path" ]] || path="$path.rs"
    for target in "$@"; do
        if grep -rnE "crate::$target\b" "$path"; then
            echo "error: src/$room must not import crate::$target (see docs/architecture.md)" >&2
            status=1
        fi
    done
}
forbid mcp config cancel principal policy runtime registry tasks server transport oci cli
forbid config mcp cancel principal policy runtime registry tasks server transport oci cli
forbid cancel mcp config principal policy runtime registry tasks server transport oci cli
forbid principal mcp config cancel policy runtime registry tasks server transport oci cli
forbid policy mcp config cancel oci runtime registry tasks server transport cli
forbid oci mcp config cancel principal policy runtime registry tasks server transport cli
forbid runtime mcp oci principal policy registry tasks server transport cli
forbid registry mcp cancel principal policy tasks server transport cli
forbid tasks mcp oci principal policy runtime registry server transport cli
forbid server oci transport cli
forbid transport config cancel policy runtime registry tasks oci cli

echo "== import circles"
# Within a room, files import each other one way (a module and its own submodules aside).
for room in mcp config oci policy registry server transport cli; do
    python3 scripts/import_cycles.py "$room" || status=1
done
exit "$status"
