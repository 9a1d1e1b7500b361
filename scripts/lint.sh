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

echo "== lockfiles"
# The fuzz crate resolves its own lockfile: a stale one is re-resolved on every CI run, to
# whatever versions are newest that day.
cargo tree --locked --manifest-path fuzz/Cargo.toml >/dev/null

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
forbid mcp config cancel principal audit policy runtime registry tasks server transport oci cli admin identity telemetry secrets
forbid config mcp cancel principal audit policy runtime registry tasks server transport oci cli admin identity telemetry secrets
forbid cancel mcp config principal audit policy runtime registry tasks server transport oci cli admin identity telemetry secrets
forbid uri mcp config cancel principal audit policy runtime registry tasks server transport oci cli admin identity telemetry secrets
forbid principal mcp config cancel audit policy runtime registry tasks server transport oci cli admin identity telemetry secrets
forbid audit mcp config cancel policy runtime registry tasks server transport oci cli admin identity telemetry secrets
forbid policy mcp config cancel audit oci runtime registry tasks server transport cli admin identity telemetry secrets
forbid secrets mcp cancel audit policy runtime registry tasks server transport oci cli admin identity telemetry
forbid identity mcp config cancel audit policy oci runtime registry tasks server transport cli admin telemetry secrets
forbid oci mcp config cancel principal audit policy runtime registry tasks server transport cli admin identity telemetry secrets
forbid runtime mcp oci principal audit policy registry tasks server transport cli admin identity secrets
forbid registry mcp cancel principal audit policy tasks server transport cli admin identity secrets
forbid tasks mcp oci principal policy runtime registry server transport cli admin identity
forbid server oci transport cli admin identity
forbid transport config cancel audit policy runtime registry tasks oci cli admin
forbid admin config cancel audit policy runtime registry oci mcp cli identity telemetry secrets
forbid telemetry mcp config cancel principal audit policy runtime registry tasks server transport oci cli admin identity secrets

echo "== import circles"
# Within a room, files import each other one way, a module and its own submodules included.
python3 scripts/import_cycles.py || status=1

# The systemd unit, the Kubernetes manifests and the MCP Registry's server.json, checked as
# systemd, Kubernetes and the registry would.
./scripts/check-deploy.sh || status=1
exit "$status"
