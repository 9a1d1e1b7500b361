#!/usr/bin/env bash
# The one command that runs every test: builds the example plugins, then the host's tests
# (unit, hostile WAT fixtures, end-to-end over stdio against the real binary), then checks
# that the benchmarks still compile, then runs the conformance and interop suites.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build-plugins.sh
# The Rust SDK and the example plugins' own unit tests, on this machine (no wasm).
cargo test --locked --manifest-path sdk/rust/Cargo.toml
cargo test --locked --manifest-path plugins/Cargo.toml
(cd plugins/slug && npm test)
(cd plugins/stats && python3 -m unittest)
cargo test --locked "$@"
cargo bench --locked --no-run
# The official MCP conformance suite against `corral serve --http` (installs Node 24 locally).
./tests/conformance/run.sh
# 0.2.0-alpha.12's frozen sets: the 2026-07-28 era (expected-failures-2026-07-28) and 2025-11-25.
CONFORMANCE_REQUIREMENTS=2026-07-28 ./tests/conformance/run.sh
CONFORMANCE_REQUIREMENTS=2025-11-25 ./tests/conformance/run.sh
# Real MCP clients (TypeScript SDK, Inspector CLI, Python SDK 1.x and 2.x) over stdio and HTTP;
# installs them from tests/interop's lock files.
./tests/interop/run.sh
