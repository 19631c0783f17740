#!/usr/bin/env bash
# The full test command (README): every crate, every test, against a real
# PostgreSQL (a throwaway cluster when DATABASE_URL is not set), then the
# scenario library on every store the simulator serves:
#   - memory: every scenario with its full seed count (catalogue included);
#   - SQLite: full seed counts, each seed also run on memory (--against):
#     the two stores must give the same answer to every request;
#   - PostgreSQL: LEASEHOLD_PG_SEEDS seeds per scenario (default 8, for CI
#     time; docs/CLI.md gives the full command), also against memory;
#   - SQLite and PostgreSQL again with interleaving on (--interleave: the
#     SQL transactions of one instant interleaved at their statements),
#     LEASEHOLD_INTERLEAVE_SEEDS seeds per scenario (default 1, for CI
#     time; its cost is in docs/PERFORMANCE.md), judged by the reference
#     model (a differential run turns interleaving off). Every scenario but
#     regressions/: each pins a seed and the situation it reached in the
#     uninterleaved order, which interleaving changes.
# Between the two: the madsim tests (scripts/test-madsim.sh, its own
# target/madsim), the worker inside a madsim simulation.
# Each `leasehold run` also replays one seed per scenario and compares the
# history hashes (I10).
# Last, `leasehold chaos` on SQLite and on PostgreSQL (restarts included):
# real worker processes in production's shape (several Workers per process
# on one store) under every fault kind of the store, 3,000 jobs and 30 s of
# faults each, seed LEASEHOLD_CHAOS_SEED (default 1; docs/CHAOS.md gives the
# long runs).
set -euo pipefail
cd "$(dirname "$0")/.."
exec scripts/with-postgres.sh bash -c '
set -euo pipefail
start=$SECONDS
# Each stage says how long the script has run, so a slow stage shows.
stage() { echo "== [$(( (SECONDS - start) / 60 ))m$(( (SECONDS - start) % 60 ))s] $*"; }
stage "cargo fetch, every platform"
# tests/tests/crate_graph.rs reads the whole resolved graph with `cargo
# metadata --offline`, which needs every platform'"'"'s crates in the cache
# (windows-sys among them), not only the ones this build compiles: on a
# fresh machine only a fetch puts them there.
cargo fetch
stage "cargo test, every crate"
cargo test --workspace --all-targets --no-fail-fast
stage "doc tests"
cargo test --workspace --doc
stage "madsim"
scripts/test-madsim.sh
# `cargo test` built these programs for the CLI and chaos tests, in the
# test profile (the simulator, core and tokio at opt-level 3: within about
# 10% of a release build on the scenario library), so no second, release
# build of the whole tree is needed here.
bin=target/debug/leasehold
for program in "$bin" target/debug/leasehold-chaos-worker; do
    test -x "$program" || { echo "$program was not built by cargo test" >&2; exit 1; }
done
stage "scenario library on memory"
$bin run scenarios/
stage "scenario library on sqlite, against memory"
$bin run scenarios/ --store sqlite --against memory
stage "scenario library on postgres, against memory (${LEASEHOLD_PG_SEEDS:-8} seeds per scenario)"
$bin run scenarios/ --store postgres --against memory --seeds "${LEASEHOLD_PG_SEEDS:-8}"
stage "scenario library on sqlite, interleaved (${LEASEHOLD_INTERLEAVE_SEEDS:-1} seeds per scenario)"
# The catalogue'"'"'s race bugs (30, 31, 32) need more seeds than this stage
# runs; cli/tests/catalogue_bugs.rs runs them over their whole budget,
# caught interleaved and missed without.
races="claim_reads_without_row_locks|sweep_update_without_version_guard|limit_counted_without_lock"
interleaved="scenarios/*.toml $(ls scenarios/catalogue/*.toml | grep -v -E "$races") scenarios/exhaustive/ scenarios/sql_races/"
$bin run $interleaved --store sqlite --interleave --seeds "${LEASEHOLD_INTERLEAVE_SEEDS:-1}"
stage "scenario library on postgres, interleaved (${LEASEHOLD_INTERLEAVE_SEEDS:-1} seeds per scenario)"
$bin run $interleaved --store postgres --interleave --seeds "${LEASEHOLD_INTERLEAVE_SEEDS:-1}"
stage "leasehold chaos on sqlite"
$bin chaos --store sqlite --seed "${LEASEHOLD_CHAOS_SEED:-1}" --jobs 3000 --duration 30s
stage "leasehold chaos on postgres"
$bin chaos --store postgres --seed "${LEASEHOLD_CHAOS_SEED:-1}" --jobs 3000 --duration 30s
stage "all passed"
'
