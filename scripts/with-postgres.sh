#!/usr/bin/env bash
# Usage: scripts/with-postgres.sh CMD [ARGS...]
#
# Runs CMD with DATABASE_URL pointing at a PostgreSQL server. When
# DATABASE_URL is already set, CMD runs as is. Otherwise a throwaway cluster
# is made for the duration of CMD:
#   - initdb/pg_ctl are looked up on PATH, then in /usr/lib/postgresql/*/bin
#     (newest first); if missing, Debian's `postgresql` package is installed
#     (apt-get, non-interactive; needs root);
#   - the cluster lives in a mktemp directory, owned by an unprivileged user
#     when we are root (PostgreSQL refuses to run as root): `postgres` if it
#     exists, else a system user `leasehold-pg` created for it;
#   - the server listens on 127.0.0.1 on a free port, its unix socket in the
#     temp directory; a database `leasehold` is created;
#   - on exit (normal, error or signal) the server is stopped and the
#     directory deleted.
# Extra server settings can be passed in WITH_POSTGRES_OPTS, for example
# WITH_POSTGRES_OPTS="-c fsync=off".
set -euo pipefail

if [ "$#" -eq 0 ]; then
    echo "usage: $0 CMD [ARGS...]" >&2
    exit 2
fi

if [ -n "${DATABASE_URL:-}" ]; then
    exec "$@"
fi

log() { echo "with-postgres: $*" >&2; }

find_pg_bin() {
    if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
        dirname "$(command -v initdb)"
        return 0
    fi
    local d
    for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k5 -V -r); do
        if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then
            echo "$d"
            return 0
        fi
    done
    return 1
}

as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo -n "$@"
    else
        log "need root to run: $*"
        return 1
    fi
}

if ! PG_BIN="$(find_pg_bin)"; then
    log "PostgreSQL server binaries not found; installing Debian's postgresql package"
    # Do not let the package create and start its own main cluster.
    as_root mkdir -p /etc/postgresql-common
    if [ ! -e /etc/postgresql-common/createcluster.conf ]; then
        echo "create_main_cluster = false" | as_root tee /etc/postgresql-common/createcluster.conf >/dev/null
    fi
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q >&2
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends postgresql >&2
    PG_BIN="$(find_pg_bin)" || { log "initdb/pg_ctl still not found after installing postgresql"; exit 1; }
fi
log "using server binaries in $PG_BIN"

# The user the server runs as.
RUN_AS=""
if [ "$(id -u)" -eq 0 ]; then
    if id postgres >/dev/null 2>&1; then
        RUN_AS=postgres
    else
        if ! id leasehold-pg >/dev/null 2>&1; then
            useradd --system --no-create-home --shell /usr/sbin/nologin leasehold-pg
        fi
        RUN_AS=leasehold-pg
    fi
fi

as_server() {
    if [ -z "$RUN_AS" ]; then
        "$@"
    elif command -v runuser >/dev/null 2>&1; then
        runuser -u "$RUN_AS" -- "$@"
    else
        su -s /bin/sh "$RUN_AS" -c "$(printf '%q ' "$@")"
    fi
}

PG_DIR="$(mktemp -d "${TMPDIR:-/tmp}/leasehold-pg.XXXXXX")"
chmod 755 "$PG_DIR"
mkdir -p "$PG_DIR/data" "$PG_DIR/sock"
if [ -n "$RUN_AS" ]; then
    chown -R "$RUN_AS" "$PG_DIR"
fi
chmod 700 "$PG_DIR/data"

STARTED=0
cleanup() {
    local status=$?
    if [ "$STARTED" -eq 1 ]; then
        as_server "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m fast -w -t 30 stop >/dev/null 2>&1 ||
            as_server "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate stop >/dev/null 2>&1 || true
    fi
    rm -rf "$PG_DIR"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

as_server "$PG_BIN/initdb" -D "$PG_DIR/data" -U postgres -A trust -E UTF8 --locale=C --no-sync >"$PG_DIR/initdb.log" 2>&1 ||
    { cat "$PG_DIR/initdb.log" >&2; log "initdb failed"; exit 1; }

port_in_use() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

PORT=""
for _ in 1 2 3 4 5 6 7 8; do
    candidate=$((20000 + RANDOM % 40000))
    if port_in_use "$candidate"; then
        continue
    fi
    # shellcheck disable=SC2086
    if as_server "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -p $candidate -k $PG_DIR/sock -c max_connections=300 ${WITH_POSTGRES_OPTS:-}" \
        start >/dev/null; then
        PORT="$candidate"
        STARTED=1
        break
    fi
    log "server did not start on port $candidate; trying another"
done
if [ -z "$PORT" ]; then
    cat "$PG_DIR/server.log" >&2 || true
    log "could not start PostgreSQL"
    exit 1
fi

as_server "$PG_BIN/psql" -h "$PG_DIR/sock" -p "$PORT" -U postgres -d postgres -qAt \
    -c "CREATE DATABASE leasehold" >/dev/null 2>&1 ||
    psql -h 127.0.0.1 -p "$PORT" -U postgres -d postgres -qAt -c "CREATE DATABASE leasehold" >/dev/null

export DATABASE_URL="postgres://postgres@127.0.0.1:$PORT/leasehold"
# For `leasehold chaos`'s restart fault (pg_ctl restart -m immediate): this
# throwaway cluster may be restarted; a server given in DATABASE_URL never is.
export LEASEHOLD_PG_CTL="$PG_BIN/pg_ctl" LEASEHOLD_PG_DATA="$PG_DIR/data"
export LEASEHOLD_PG_LOG="$PG_DIR/server.log" LEASEHOLD_PG_USER="$RUN_AS"
log "$("$PG_BIN/pg_ctl" --version) on $DATABASE_URL (dir $PG_DIR)"

set +e
"$@"
status=$?
set -e
exit "$status"
