#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each (default 600, the issue's bar) on stable Rust:
# cargo-fuzz with `--sanitizer none` needs no nightly flag (reference: scale-out-oci-fuzz.md, C).
# New finds are minimised into fuzz/corpus/TARGET, which `cargo test --test fuzz_corpus` replays.
#
#   scripts/fuzz.sh [SECONDS]        # all targets, one after another
#   scripts/fuzz.sh build            # only build them
#   TARGETS="session" scripts/fuzz.sh 60
#   CMIN=1 scripts/fuzz.sh 600       # then minimise each corpus to the inputs that reach every
#                                    # coverage edge (hit counts ignored: hundreds, not thousands)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-600}"
targets="${TARGETS:-jsonrpc_parse session manifest uri_template http_request}"
CARGO_FUZZ_VERSION=0.13.2
if ! cargo fuzz --version 2>/dev/null | grep -q "$CARGO_FUZZ_VERSION"; then
    cargo install cargo-fuzz --locked --version "$CARGO_FUZZ_VERSION"
fi
export CARGO_TARGET_DIR="${FUZZ_TARGET_DIR:-$PWD/fuzz/target}"
if [ "$seconds" = build ]; then
    # The same profile and flags as `cargo fuzz run` below, so a later run finds them built.
    exec cargo fuzz build -D -s none --fuzz-dir fuzz
fi
for target in $targets; do
    echo "== fuzz $target for ${seconds}s"
    mkdir -p "fuzz/corpus/$target" "fuzz/artifacts/$target"
    # -D: a dev build (a release build of wasmtime with one codegen unit takes far longer).
    cargo fuzz run "$target" -D -s none --fuzz-dir fuzz -- \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
        "fuzz/corpus/$target"
    if [ -n "${CMIN:-}" ]; then
        cargo fuzz cmin "$target" -D -s none --fuzz-dir fuzz "fuzz/corpus/$target" -- -use_counters=0 -max_len=65536 -timeout=10
    fi
done
