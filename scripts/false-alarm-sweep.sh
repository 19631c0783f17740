#!/usr/bin/env bash
# The false-alarm sweep (docs/SCALE-OUT.md): the correct core over the
# library's correct-core scenarios (scenarios/*.toml, the catalogue left
# out), each over FACTOR times its own seed count from BASE (the library's
# seed mix, FACTOR times deeper), as SHARDS shards run one after another on
# this machine (each on every core), then `leasehold merge` over the
# shards' JSON Lines: the same commands a CI matrix runs, one shard per job.
#
#   scripts/false-alarm-sweep.sh                   # 919 x 218 = 200,342 seeds
#   FACTOR=2 SHARDS=2 scripts/false-alarm-sweep.sh # a quick try
#
# Env: FACTOR (default 218), BASE (default 1000000, away from CI's 0..N),
# SHARDS (default 4), OUT (default target/sweep), LEASEHOLD (the binary;
# default target/release/leasehold, built if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
factor=${FACTOR:-218}
base=${BASE:-1000000}
shards=${SHARDS:-4}
out=${OUT:-target/sweep}
bin=${LEASEHOLD:-target/release/leasehold}
[ -x "$bin" ] || cargo build --release -p leasehold-cli
mkdir -p "$out"
start=$SECONDS
for i in $(seq 1 "$shards"); do
    echo "== shard $i/$shards ($(( SECONDS - start ))s)"
    # A shard that finds a failure exits 1; the merge still needs its file.
    LEASEHOLD_SHARD="$i/$shards" "$bin" run scenarios/*.toml \
        --seed-factor "$factor" --seed-base "$base" --json \
        >"$out/shard-$i.jsonl" 2>"$out/shard-$i.log" || true
    tail -n 2 "$out/shard-$i.log"
done
echo "== merge ($(( SECONDS - start ))s)"
"$bin" merge "$out"/shard-*.jsonl --junit "$out/junit.xml"
