#!/usr/bin/env bash
# The full test command (README): every crate, every test, against a real
# PostgreSQL (a throwaway cluster when DATABASE_URL is not set), then the
# scenario library on every store the simulator serves:
#   - memory: every scenario with its full seed count (catalogue included);
#   - SQLite: full seed counts, each seed also run on memory (--against):
#     the two stores must give the same answer to every request;
#   - PostgreSQL: LEASEHOLD_PG_SEEDS seeds per scenario (default 3, for CI
#     time; the README gives the full command), also against memory.
# Between the two: the madsim tests (scripts/test-madsim.sh, its own
# target/madsim), the worker inside a madsim simulation.
# Each `leasehold run` also replays one seed per scenario and compares the
# history hashes (I10).
set -euo pipefail
cd "$(dirname "$0")/.."
exec scripts/with-postgres.sh bash -c '
set -euo pipefail
cargo test --workspace --all-targets
cargo test --workspace --doc
scripts/test-madsim.sh
cargo build --release -p leasehold-cli
bin=target/release/leasehold
echo "== scenario library on memory"
$bin run scenarios/
echo "== scenario library on sqlite, against memory"
$bin run scenarios/ --store sqlite --against memory
echo "== scenario library on postgres, against memory (${LEASEHOLD_PG_SEEDS:-3} seeds per scenario)"
$bin run scenarios/ --store postgres --against memory --seeds "${LEASEHOLD_PG_SEEDS:-3}"
'
