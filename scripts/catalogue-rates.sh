#!/usr/bin/env bash
# Detection rate of every catalogue scenario: the first seed that catches
# its bug and how many of N seeds (0..N) catch it. Used to show that an
# engine change loses no bug-finding power (docs/ENGINE.md).
#
#   scripts/catalogue-rates.sh [BINARY] [N] [JOBS] > rates.tsv
set -euo pipefail
bin=${1:-target/release/leasehold}
n=${2:-200}
jobs=${3:-2}
printf 'scenario\tfirst_seed\tcaught\tseeds\n'
for f in scenarios/catalogue/*.toml; do
  "$bin" run "$f" --seeds "$n" --json -j "$jobs" 2>/dev/null |
    python3 -c '
import json, sys
name, first, caught = None, None, 0
for line in sys.stdin:
    r = json.loads(line)
    if r.get("type") != "run":
        continue
    name = r["scenario"]
    if r["status"] == "caught":
        caught += 1
        if first is None or r["seed"] < first:
            first = r["seed"]
print("\t".join([str(name), "-" if first is None else str(first), str(caught), "'"$n"'"]))
' || true
done
