#!/usr/bin/env bash
# S2 of the exhaustive checker (docs/EXHAUSTIVE.md): 3 workers, 2 jobs, at
# most 1 crash, 2 lost messages, 1 `Conflict`, 1 prompt `Unavailable`, 1
# client cancel, searched depth-first (`--search depth-first`: its memory is
# the visited set's fingerprints and the current path, where the
# breadth-first frontier ran out of 8 GB). Prints progress every 10 s
# (states, states/s, stack depth, memory), then the states, time,
# states/s and peak memory.
#
#   scripts/exhaustive-s2.sh [BIN] [-- exhaust flags ...]
#
# BIN defaults to target/debug/leasehold (`cargo build --profile test -p
# leasehold-cli --bin leasehold`: opt-level 3, the figures of a release
# build without its 12-minute fat LTO). Flags after `--` replace S2's scope
# (e.g. `-- --workers 3 --jobs 2 --lost 1 --conflicts 0` for a smaller
# S2-like scope). The run is capped at LEASEHOLD_S2_LIMIT seconds (default
# 900) and at LEASEHOLD_S2_MEM_GB of resident memory (default 8: the
# machine is shared), watched every second: a capped run prints how far it
# got. The cap is on resident memory, not address space (`ulimit -v`):
# the binary's allocator reserves address space ahead of what it touches,
# so an address-space cap failed a table's doubling at half the resident
# memory it allowed (docs/EXHAUSTIVE.md). The depth-first search
# stops at the first violation it meets and prints it (its path, not
# necessarily a shortest one); LEASEHOLD_S2_COUNTEREXAMPLE=FILE writes it as
# a scenario file too.
set -uo pipefail
bin=${1:-target/debug/leasehold}
[ "$#" -gt 0 ] && shift
[ "${1:-}" = "--" ] && shift
scope=(--workers 3 --jobs 2 --crashes 1 --lost 2 --conflicts 1 --unavailable 1 --cancels 1)
[ "$#" -gt 0 ] && scope=("$@")
[ -n "${LEASEHOLD_S2_COUNTEREXAMPLE:-}" ] && scope+=(--write-counterexample "$LEASEHOLD_S2_COUNTEREXAMPLE")
limit=${LEASEHOLD_S2_LIMIT:-900}
mem_gb=${LEASEHOLD_S2_MEM_GB:-8}
case "$limit:$mem_gb" in *[!0-9:]* | :* | *: | 0:* | *:0) echo "LEASEHOLD_S2_LIMIT and LEASEHOLD_S2_MEM_GB must be whole numbers above 0 (got '$limit' and '$mem_gb')" >&2; exit 2 ;; esac
[ -x "$bin" ] || { echo "no binary at $bin (cargo build --profile test -p leasehold-cli --bin leasehold)" >&2; exit 2; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
echo "scope: ${scope[*]} (cap ${limit}s, ${mem_gb} GB resident)"
cap_kb=$((mem_gb * 1024 * 1024))
start=$(date +%s.%N)
timer=()
[ -x /usr/bin/time ] && timer=(/usr/bin/time -v)
"${timer[@]}" timeout "$limit" "$bin" exhaust --search depth-first "${scope[@]}" >"$log" 2>&1 &
pid=$!
peak_kb=0
capped=
shown=0
# Bounded by the time cap: `timeout` ends the search after $limit seconds.
while kill -0 "$pid" 2>/dev/null; do
  # The search is the leaf under this script's child (`time`, then
  # `timeout`): another search running on the machine is not watched.
  search=$pid
  for _ in 1 2 3; do
    next=$(pgrep -P "$search" | head -1)
    [ -n "$next" ] && search=$next
  done
  rss=$(awk '$1 == "VmRSS:" {print $2}' "/proc/$search/status" 2>/dev/null)
  hwm=$(awk '$1 == "VmHWM:" {print $2}' "/proc/$search/status" 2>/dev/null)
  [ -n "$hwm" ] && [ "$hwm" -gt "$peak_kb" ] && peak_kb=$hwm
  if [ -n "$rss" ] && [ "$rss" -gt "$cap_kb" ]; then
    capped=yes
    kill "$search" 2>/dev/null
  fi
  # The search's progress lines as they come.
  lines=$(grep -c '^  [0-9]* states,' "$log")
  if [ "$lines" -gt "$shown" ]; then
    grep '^  [0-9]* states,' "$log" | tail -n +"$((shown + 1))"
    shown=$lines
  fi
  sleep 1
done
wait "$pid"; rc=$?
[ -n "$capped" ] && rc=137
if [ -x /usr/bin/time ]; then
  v=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$log")
  [ -n "$v" ] && [ "$v" -gt "$peak_kb" ] && peak_kb=$v
fi
end=$(date +%s.%N)
grep -v '^  [0-9]* states,' "$log" | grep -v '^\s*\(Command\|User\|System\|Percent\|Elapsed\|Average\|Major\|Minor\|Voluntary\|Involuntary\|Swaps\|File\|Socket\|Signals\|Page\|Exit\|Maximum\)' | tr '\r' '\n' | grep -v '^\s*$' | tail -n 40
secs=$(echo "$end - $start" | bc)
user=$(sed -n 's/.*User time (seconds): //p' "$log")
sys=$(sed -n 's/.*System time (seconds): //p' "$log")
[ -n "$user" ] && echo "cpu: ${user}s user + ${sys}s system"
echo "wall: ${secs}s, peak memory: $((${peak_kb:-0} / 1024)) MB, exit ${rc}"
case $rc in
  0) echo "verdict: holds" ;;
  1) echo "verdict: violated (the first violation the depth-first search met, above)" ;;
  124) echo "verdict: no violation met before the cap at ${limit}s (the search stops at the first one it meets; the last progress line above is how far it got)" ;;
  137) echo "verdict: none (stopped at the ${mem_gb} GB resident-memory cap, LEASEHOLD_S2_MEM_GB; the last progress line above is how far it got)" ;;
  *) echo "verdict: none (exit $rc)" ;;
esac
exit "$rc"
