#!/usr/bin/env bash
# Runs the scale-out recipes of docs/SCALE-OUT.md on this machine, with the
# environment their platforms set:
#   1. docs/recipes/github-actions-shards.yml: LEASEHOLD_SHARD=I/4 per matrix
#      job, then `leasehold merge` (and the merged summary compared with one
#      unsharded run's);
#   2. docs/recipes/kubernetes-indexed-job.yaml: JOB_COMPLETION_INDEX=0..7 with
#      LEASEHOLD_SHARDS=8, the pod's own shell line, then the merge Job's;
#   3. a nextest archive run as partitions (count:1/2, count:2/2) of one
#      crate's tests (set NEXTEST=0 to skip: it builds the crate's tests).
# Env: SEEDS (default 2 per scenario), LEASEHOLD (default
# target/release/leasehold, built if missing), OUT (default target/recipes).
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${SEEDS:-2}
bin=$(realpath -m "${LEASEHOLD:-target/release/leasehold}")
out=$(realpath -m "${OUT:-target/recipes}")
[ -x "$bin" ] || cargo build --release -p leasehold-cli
rm -rf "$out" && mkdir -p "$out/gha" "$out/k8s"
# The summary fields a merge must reproduce (the scenario lists whole).
summary() { jq -c '{passed, failed, errors, seeds, held, caught}'; }
short() { jq -c '{passed, failed, errors, seeds, held: (.held | length), caught: (.caught | length)}' "$1"; }
same() {
    if cmp -s "$out/unsharded.json" "$1"; then
        echo "merged summary = unsharded summary"
    else
        echo "merged summary DIFFERS from the unsharded one" >&2
        exit 1
    fi
}

echo "== unsharded"
# A failing seed (exit 1) is a verdict to compare, not a reason to stop.
{ "$bin" run scenarios/ --seeds "$seeds" --seed-base 1000000 --json 2>/dev/null || true; } \
    | tail -n 1 | summary >"$out/unsharded.json"
short "$out/unsharded.json"

echo "== GitHub Actions matrix (LEASEHOLD_SHARD=I/4)"
cp -r scenarios "$out/gha/"
for shard in 1 2 3 4; do
    (
        cd "$out/gha"
        export LEASEHOLD_SHARD="$shard/4"
        "$bin" run scenarios/ --seeds "$seeds" --seed-base 1000000 \
            --json --junit "junit-$shard.xml" >"shard-$shard.jsonl" 2>/dev/null \
            || [ $? -eq 1 ]
    )
done
{ (cd "$out/gha" && "$bin" merge shard-*.jsonl --junit junit.xml --json 2>/dev/null) || true; } \
    | summary >"$out/gha.json"
short "$out/gha.json"
same "$out/gha.json"

echo "== Kubernetes Indexed Job (JOB_COMPLETION_INDEX=0..7, LEASEHOLD_SHARDS=8)"
mkdir -p "$out/k8s/results"
cp -r scenarios "$out/k8s/"
for idx in 0 1 2 3 4 5 6 7; do
    (
        cd "$out/k8s"
        # The pod's args line, with /results on a local folder.
        JOB_COMPLETION_INDEX=$idx LEASEHOLD_SHARDS=8 PATH="$(dirname "$bin"):$PATH" sh -c "
            leasehold run scenarios/ --seeds $seeds --seed-base 1000000 --json \
              > results/shard-\$JOB_COMPLETION_INDEX.jsonl.part 2>/dev/null;
            code=\$?;
            mv results/shard-\$JOB_COMPLETION_INDEX.jsonl.part results/shard-\$JOB_COMPLETION_INDEX.jsonl;
            [ \$code -le 1 ]"
    )
done
{ (cd "$out/k8s" && PATH="$(dirname "$bin"):$PATH" sh -c "leasehold merge results/shard-*.jsonl --json" 2>/dev/null) || true; } \
    | summary >"$out/k8s.json"
short "$out/k8s.json"
same "$out/k8s.json"

if [ "${NEXTEST:-1}" != 0 ]; then
    echo "== nextest archive, two partitions (leasehold-model's tests)"
    cargo nextest archive -p leasehold-model --archive-file "$out/tests.tar.zst"
    for k in 1 2; do
        cargo nextest run --archive-file "$out/tests.tar.zst" \
            --workspace-remap . --partition "count:$k/2" 2>&1 | tail -n 2
    done
fi
