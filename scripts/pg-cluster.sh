#!/usr/bin/env bash
# A throwaway PostgreSQL cluster on 127.0.0.1, for trying replicas by hand and for benchmarks
# (the test suites start their own; see src/tasks/postgres/testing.rs).
#
#   scripts/pg-cluster.sh start DIR [PORT]   # initdb + pg_ctl start; prints the URL to use with --db
#   scripts/pg-cluster.sh stop DIR           # pg_ctl stop, then removes DIR
#
# Runs initdb/pg_ctl as the `postgres` user when run as root (initdb refuses root). Password
# authentication over TCP: user postgres, password corral-test. Installs postgresql-15 with apt
# when no server binaries are found.
set -euo pipefail
cmd=${1:?usage: pg-cluster.sh start|stop DIR [PORT]}
dir=${2:?usage: pg-cluster.sh start|stop DIR [PORT]}
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
as_pg=()
[ "$(id -u)" = 0 ] && as_pg=(runuser -u postgres --)
case "$cmd" in
start)
    if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends postgresql-15 postgresql-client-15 >/dev/null
        bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
    fi
    port=${3:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
    rm -rf "$dir" && mkdir -p "$dir"
    echo corral-test >"$dir/pw"
    [ "$(id -u)" = 0 ] && chown -R postgres:postgres "$dir"
    "${as_pg[@]}" "$bin/initdb" -D "$dir/data" -U postgres --auth-local=trust --auth-host=scram-sha-256 \
        --pwfile="$dir/pw" --no-sync -E UTF8 --locale=C >"$dir/initdb.log"
    "${as_pg[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=400" start >/dev/null
    echo "postgres://postgres:corral-test@127.0.0.1:$port/postgres"
    ;;
stop)
    [ -d "$dir/data" ] && "${as_pg[@]}" "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null || true
    rm -rf "$dir"
    ;;
*)
    echo "usage: pg-cluster.sh start|stop DIR [PORT]" >&2
    exit 2
    ;;
esac
