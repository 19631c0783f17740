#!/usr/bin/env bash
# Per-seed history hashes (I10) of a `leasehold run --json` over scenarios/,
# to prove that a simulator speed change keeps every history identical.
#
#   scripts/sim-hashes.sh record FILE [run args...]   # e.g. on the base commit
#   scripts/sim-hashes.sh compare FILE [run args...]  # after the change
#
# FILE holds one `scenario seed store hash status` line per run, sorted.
# Extra arguments go to `leasehold run` (e.g. --store sqlite, --seeds 20).
# Uses the release binary from CARGO_TARGET_DIR (default target/).
set -euo pipefail
mode=${1:?record|compare}; file=${2:?FILE}; shift 2
bin=${CARGO_TARGET_DIR:-target}/release/leasehold
cargo build --release -q -p leasehold-cli
tmp=$(mktemp)
trap 'rm -f "$tmp" "$tmp.now"' EXIT
"$bin" run --json "$@" scenarios/ >"$tmp" 2>/dev/null || true
python3 - "$tmp" >"$tmp.now" <<'PY'
import json, sys
rows = []
for line in open(sys.argv[1]):
    d = json.loads(line)
    if d.get("type") == "run":
        rows.append(f'{d["scenario"]} {d["seed"]} {d["store"]} {d["hash"]} {d["status"]}')
print("\n".join(sorted(rows)))
PY
n=$(wc -l <"$tmp.now")
[ "$n" -gt 0 ] || { echo "no runs" >&2; exit 2; }
case $mode in
record) cp "$tmp.now" "$file"; echo "recorded $n runs in $file" ;;
compare)
    if diff <(cut -d' ' -f1-5 "$file") "$tmp.now" >&2; then
        echo "identical: $n runs (scenario x seed x store), same hash and status"
    else
        echo "DIFFERENT (see above)" >&2; exit 1
    fi ;;
*) echo "usage: $0 record|compare FILE [run args...]" >&2; exit 2 ;;
esac
