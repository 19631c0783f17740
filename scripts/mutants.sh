#!/usr/bin/env bash
# Mutation testing (cargo-mutants): plants small wrong versions of a crate's
# code and counts how many the tests catch. Not part of CI (hours on this
# 2-core machine); docs/MUTANTS.md gives the figures, the survivors'
# dispositions and the nightly recipe.
#
#   scripts/mutants.sh CRATE [--shard K/N] [more cargo-mutants options]
#   scripts/mutants.sh core --shard 1/8   # K from 1 to N; round-robin, so
#                                         # each shard samples the whole crate
#   scripts/mutants.sh list              # mutants per crate, nothing run
#
# CRATE is core, memory, sqlite or postgres. Each crate's mutants are judged
# by the tests that catch bugs there:
#   core:     core's unit tests; the memory adapter's tests (its unit
#             tests, the conformance suite on memory); nothing else needs
#             building per mutant (the Worker runtime tests and the
#             reference-model proptest are in leasehold-tests, not run here);
#   memory:   the same;
#   sqlite:   its own unit tests, and leasehold-tests (the conformance
#             suite on SQLite files, the busy, cancelled-write, disk-full
#             and multi-process tests), skipping tests named `postgres`;
#   postgres: its own unit tests, and leasehold-tests against a throwaway
#             PostgreSQL (scripts/with-postgres.sh) unless DATABASE_URL is
#             set, skipping tests named `sqlite`.
# Output: target/mutants/CRATE[-K-of-N]/mutants.out (caught.txt, missed.txt,
# timeout.txt, unviable.txt, outcomes.json). Merge shards by concatenating
# their .txt files. Builds share target/mutants/build, so a second run
# rebuilds only the workspace's own crates.
set -euo pipefail
cd "$(dirname "$0")/.."

# The version the figures in docs/MUTANTS.md were measured with.
CARGO_MUTANTS_VERSION=27.1.0
# Timeouts for this 2-core machine: a mutant that makes a test hang is cut
# at 3x the unmutated test time (at least 120 s), a build at 3x its time.
TIMEOUT_MULTIPLIER=3
MINIMUM_TEST_TIMEOUT=120
BUILD_TIMEOUT_MULTIPLIER=3
# A SQL adapter mutant's build (the adapter and leasehold-tests' binaries).
SQL_BUILD_TIMEOUT=600
# leasehold-tests' binaries instantiate the conformance suite for the
# mutated store. At the test profile's opt-level 1 every mutant recompiles
# them from scratch (44 s per SQLite mutant here); at opt-level 0 the
# incremental cache holds and the rebuild takes 5 s. The tests themselves
# run as fast (about 25 s either way): they wait on the database, not on
# this code. Only the mutants build uses it.
SQL_TESTS_PROFILE=(--cargo-arg=--config=profile.test.package.leasehold-tests.opt-level=0)

usage() { sed -n '2,27p' "$0" >&2; exit 2; }
crate=${1:-}; [ -n "$crate" ] || usage; shift

if ! command -v cargo-mutants >/dev/null 2>&1; then
    echo "mutants: installing cargo-mutants $CARGO_MUTANTS_VERSION" >&2
    cargo install cargo-mutants --locked --version "$CARGO_MUTANTS_VERSION"
fi

# Code compiled only with the simulator's `buggy-variants` feature (the
# bug catalogue) is never built by these tests, so its mutants would count
# as missed without being judged: the catalogue's own files, the
# functions gated on the feature, and `misroute_claims` (the merger's
# catalogue bug, called only with its variant set). (The simulator's catalogue scenarios
# judge that code: each must still catch its bug.) A gated line inside an
# ungated function is not excluded; docs/MUTANTS.md lists those.
exclude=(--exclude 'core/src/variants.rs' --exclude 'adapters/memory/src/variants.rs'
    --exclude-re '(replace|in) (MemoryState::put_raw|MemoryStore::(scratch|sweep_at|bug|set_variant)|BatchMerger::with_variant|[A-Za-z]*ConfigBuilder::variant|misroute_claims)( |$)|WorkerConfig::variant -> Option<crate::variants::Variant>|delete match arm Some\(Variant::')
if [ "$crate" = list ]; then
    for p in leasehold-core leasehold-memory leasehold-sqlite leasehold-postgres; do
        echo "$p $(cargo mutants --list -p "$p" "${exclude[@]}" | wc -l)"
    done
    exit 0
fi

# The SQL adapters' tests in leasehold-tests run each case on both stores;
# a mutant of one store cannot change the other's answers, so the other
# store's tests (by name) are skipped.
skip=()
# The unmutated baseline builds only the mutated package, so for the SQL
# adapters a build timeout derived from it (3x a few seconds) would cut
# every mutant's build of leasehold-tests' binaries (about a minute):
# their builds get a fixed limit instead.
build_args=(--build-timeout-multiplier "$BUILD_TIMEOUT_MULTIPLIER")
case $crate in
core) pkg=leasehold-core; tests=(leasehold-core leasehold-memory) ;;
memory) pkg=leasehold-memory; tests=(leasehold-memory) ;;
sqlite) pkg=leasehold-sqlite; tests=(leasehold-sqlite leasehold-tests); skip=(-- -- --skip postgres)
    build_args=(--build-timeout "$SQL_BUILD_TIMEOUT" "${SQL_TESTS_PROFILE[@]}") ;;
postgres) pkg=leasehold-postgres; tests=(leasehold-postgres leasehold-tests); skip=(-- -- --skip sqlite)
    build_args=(--build-timeout "$SQL_BUILD_TIMEOUT" "${SQL_TESTS_PROFILE[@]}") ;;
*) echo "mutants: unknown crate '$crate' (core, memory, sqlite, postgres, list)" >&2; usage ;;
esac

out=target/mutants/$crate
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
    if [ "${args[$i]}" = --shard ]; then
        shard=${args[$((i + 1))]:-}
        k=${shard%/*}; n=${shard#*/}
        if ! [[ $shard =~ ^[0-9]+/[0-9]+$ ]] || [ "$k" -lt 1 ] || [ "$k" -gt "$n" ]; then
            echo "mutants: --shard wants K/N with 1 <= K <= N, got '$shard'" >&2; exit 2
        fi
        # 1-based here, as `leasehold run --shard`; cargo-mutants counts from 0.
        args[$((i + 1))]=$((k - 1))/$n
        out=$out-$k-of-$n
    fi
done
mkdir -p "$out"
test_args=()
for t in "${tests[@]}"; do test_args+=(--test-package "$t"); done

if { [ "$crate" = postgres ] || [ "$crate" = sqlite ]; } && [ -z "${DATABASE_URL:-}" ]; then
    # leasehold-tests' PostgreSQL cases fail without a database under CI=1
    # and skip loudly otherwise: give them a throwaway one.
    exec scripts/with-postgres.sh "$0" "$crate" "$@"
fi
start=$SECONDS
status=0
CARGO_TARGET_DIR=$PWD/target/mutants/build cargo mutants \
    --package "$pkg" "${test_args[@]}" "${exclude[@]}" \
    --timeout-multiplier "$TIMEOUT_MULTIPLIER" \
    --minimum-test-timeout "$MINIMUM_TEST_TIMEOUT" \
    "${build_args[@]}" \
    ${shard:+--sharding round-robin} --jobs 1 --output "$out" "${args[@]}" "${skip[@]}" || status=$?
m=$out/mutants.out
count() { [ -f "$m/$1.txt" ] && wc -l <"$m/$1.txt" || echo 0; }
caught=$(count caught); missed=$(count missed); timeout=$(count timeout); unviable=$(count unviable)
viable=$((caught + missed + timeout))
echo "mutants: $pkg${shard:+ shard $shard}: caught $caught, missed $missed, timeout $timeout, unviable $unviable in $((SECONDS - start)) s"
if [ "$viable" -gt 0 ]; then
    echo "mutants: score $(( (caught + timeout) * 1000 / viable / 10 )).$(( (caught + timeout) * 1000 / viable % 10 ))% of viable mutants caught (timeouts count as caught)"
fi
# cargo-mutants' status: 0 every mutant caught, 2 some missed, 3 some timed
# out (findings: $m/missed.txt, $m/timeout.txt), 4 the unmutated tests fail.
exit "$status"
