#!/usr/bin/env bash
# Where a drain's time goes on PostgreSQL: runs one drain command and
# reports, for the drain alone, the server's and the client's CPU per job,
# the wait events of the server's active client backends, and the
# statements by total execution time (pg_stat_statements).
#
# usage (from the project root, inside scripts/with-postgres.sh):
#   WITH_POSTGRES_OPTS="-c shared_preload_libraries=pg_stat_statements" \
#     scripts/with-postgres.sh scripts/pg-drain-profile.sh JOBS CMD [ARGS...]
#   e.g. ... scripts/pg-drain-profile.sh 200000 \
#     target/release/leasehold-bench --backend postgres --mode batch --jobs 200000
#
# JOBS is the number of jobs the drain finishes (for the per-job figures).
# The drain's length is read from the command's output: leasehold-bench's
# last "drain: ... (N jobs in S s, ...)" line, or graphile-worker's
# benchmark's "drain_ms"; the drain is taken to be that long and to end
# 0.2 s before the command exits (both print and exit right after it, but
# graphile-worker's benchmark then runs its latency phase: set LN=0 in a
# copy of it that reads it, or expect a window that misses the drain).
# Server CPU is the postmaster's and its children's, sampled every 100 ms
# (a backend that exits is reaped by the postmaster and counted in its
# children's time); the client's is the command's and its children's.
set -uo pipefail
[ "$#" -ge 2 ] || { sed -n '2,22p' "$0" >&2; exit 2; }
: "${DATABASE_URL:?set DATABASE_URL (scripts/with-postgres.sh sets one)}"
command -v psql >/dev/null || { echo "needs psql" >&2; exit 2; }
JOBS=$1; shift
case $JOBS in '' | *[!0-9]*) echo "JOBS must be a whole number, got '$JOBS'" >&2; exit 2 ;; esac
[ "$JOBS" -gt 0 ] || { echo "JOBS must be above 0" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The cluster's processes: the postmaster (parent of its checkpointer,
# which lives as long as the server) and its children.
checkpointer=$(psql "$DATABASE_URL" -qAtc "select pid from pg_stat_activity where backend_type = 'checkpointer'")
postmaster=$(ps -o ppid= -p "${checkpointer:-0}" 2>/dev/null | tr -d ' ')
[ -n "$postmaster" ] || { echo "cannot find the server's processes (is the server on this machine?)" >&2; exit 2; }
ticks() { # utime + stime of the given live processes, and of the first
  # one's reaped children (cutime + cstime), in clock ticks: a backend
  # that exits is reaped by the postmaster, so its CPU stays counted.
  [ "$#" -gt 0 ] || { echo 0; return; }
  cat $(printf '/proc/%s/stat ' "$@") 2>/dev/null | awk 'NR == 1 {t += $16 + $17} {t += $14 + $15} END {print t + 0}'
}
statements=yes
psql "$DATABASE_URL" -qAtc "create extension if not exists pg_stat_statements; select pg_stat_statements_reset()" >/dev/null 2>&1 \
  || { statements=no; echo "(pg_stat_statements not loaded: no statement table; see the usage line)"; }
psql "$DATABASE_URL" -qAtc "checkpoint" >/dev/null

"$@" >"$work/out" 2>&1 &
cmd=$!
# Wait events of active client backends, every 50 ms, in one session.
(echo "select coalesce(wait_event_type, 'CPU') || ':' || coalesce(wait_event, '-') from pg_stat_activity where state = 'active' and backend_type = 'client backend' and pid <> pg_backend_pid() \watch 0.05" \
  | psql "$DATABASE_URL" -qAt >"$work/waits" 2>/dev/null) 2>/dev/null &
watcher=$!
hz=$(getconf CLK_TCK)
# Bounded by the command: one sample per 100 ms while it runs.
while kill -0 "$cmd" 2>/dev/null; do
  echo "$(date +%s.%N) $(ticks "$postmaster" $(pgrep -P "$postmaster")) $(ticks "$cmd" $(pgrep -P "$cmd"))" >>"$work/series"
  sleep 0.1
done
wait "$cmd"; rc=$?
end=$(date +%s.%N)
pkill -P "$watcher" 2>/dev/null; kill "$watcher" 2>/dev/null; wait "$watcher" 2>/dev/null

grep -E 'drain|ceiling|jobs_per_s' "$work/out" | cut -c1-240
[ "$rc" -eq 0 ] || { echo "the command failed (exit $rc):" >&2; tail -20 "$work/out" >&2; exit "$rc"; }
drain_ms=$(grep -o '"drain_ms":[0-9]*' "$work/out" | tail -1 | cut -d: -f2)
[ -n "$drain_ms" ] || drain_ms=$(grep -o 'jobs in [0-9.]* s' "$work/out" | tail -1 | awk '{printf "%d", $3 * 1000}')
[ -n "$drain_ms" ] || { echo "no drain length in the command's output" >&2; exit 1; }
awk -v end="$end" -v d="$drain_ms" -v jobs="$JOBS" -v hz="$hz" '
  { t[NR] = $1; s[NR] = $2; c[NR] = $3 }
  END {
    lo = end - 0.2 - d / 1000; hi = end - 0.2; a = 0; b = 0
    for (i = 1; i <= NR; i++) { if (t[i] >= lo && a == 0) a = i; if (t[i] <= hi) b = i }
    if (a == 0 || b <= a) { print "drain too short to sample"; exit 1 }
    dt = t[b] - t[a]; ds = (s[b] - s[a]) / hz; dc = (c[b] - c[a]) / hz
    # Per job: CPU over the sampled part of the drain, scaled to the whole drain.
    k = (d / 1000) / dt * 1e6 / jobs
    printf "drain %.2f s (sampled %.2f s): server %.2f cores, %.1f us/job; client %.2f cores, %.1f us/job\n", d / 1000, dt, ds / dt, ds * k, dc / dt, dc * k
  }' "$work/series" || exit 1
echo "wait events of active backends (samples): $(grep -v '^$' "$work/waits" | sort | uniq -c | sort -rn | head -8 | awk '{printf "%s %s; ", $2, $1}')"
if [ "$statements" = yes ]; then
  echo "statements by total execution time (calls | ms | ms each | rows | text):"
  psql "$DATABASE_URL" -qAt -F ' | ' -c "select calls, round(total_exec_time::numeric), round((total_exec_time / greatest(calls, 1))::numeric, 2), rows, left(regexp_replace(query, '\s+', ' ', 'g'), 100) from pg_stat_statements where query not like '%pg_stat_activity%' order by total_exec_time desc limit 6" | sed 's/^/  /'
fi
