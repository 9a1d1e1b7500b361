#!/usr/bin/env bash
# Runs the README's test command several times in a row under a CPU hog on every core, to find
# the tests that race the clock: what passes on an idle machine and fails on a loaded one.
# Stops at the first failing run and keeps every run's log.
#
#   scripts/flaky.sh                 # 3 runs of scripts/test.sh under stress-ng
#   scripts/flaky.sh 5 --test tasks  # 5 runs; the rest goes to cargo test (through test.sh)
#   FLAKY_HOG=0 scripts/flaky.sh     # the same runs without the hog
#
# Not in CI (three full runs take longer than CI's budget). The hog is Debian's stress-ng, one
# worker per core at the tests' own priority, so the tests get about half of each core and see
# the latencies of a busy shared runner.
set -euo pipefail
cd "$(dirname "$0")/.."

runs="${1:-3}"
[ $# -gt 0 ] && shift
case "$runs" in
    '' | *[!0-9]*) echo "error: the run count must be a number, not \`$runs\`" >&2; exit 2 ;;
esac

logs="$(mktemp -d "${TMPDIR:-/tmp}/corral-flaky.XXXXXX")"
hog=""
if [ "${FLAKY_HOG:-1}" != 0 ]; then
    if ! command -v stress-ng >/dev/null; then
        echo "error: stress-ng is not installed (apt-get install stress-ng), or set FLAKY_HOG=0" >&2
        exit 2
    fi
    stress-ng --cpu "$(nproc)" --cpu-method matrixprod --quiet &
    hog=$!
    trap 'kill "$hog" 2>/dev/null || true' EXIT
    echo "== a CPU hog on $(nproc) cores (stress-ng, pid $hog)"
fi

for run in $(seq 1 "$runs"); do
    echo "== run $run of $runs (log: $logs/run-$run.log)"
    start=$(date +%s)
    if ./scripts/test.sh "$@" >"$logs/run-$run.log" 2>&1; then
        echo "== run $run passed in $(( $(date +%s) - start )) s"
    else
        echo "== run $run FAILED in $(( $(date +%s) - start )) s; what failed:"
        grep -E '^(test .* FAILED|---- |failures:|== .*FAILED|error)' "$logs/run-$run.log" | head -40 || true
        exit 1
    fi
done
echo "== $runs runs passed; logs in $logs"
