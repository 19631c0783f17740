#!/usr/bin/env bash
# Builds and runs leasehold's madsim tests (tests/madsim, crate
# leasehold-madsim-tests): the real worker runtime inside a madsim
# simulation, checked by the simulator's checker (leasehold-check).
#
# `--cfg madsim` changes how every crate of the build compiles, so the
# build lives in its own target directory (target/madsim by default,
# MADSIM_TARGET_DIR to change it) and never invalidates the normal one.
#
# Seeds, the madsim way (see madsim's docs):
#   MADSIM_TEST_SEED=S   first seed (default: the current time; the bug
#                        catalogue tests start at 1 unless it is set)
#   MADSIM_TEST_NUM=N    seeds of the correct-core test (default 200)
#   MADSIM_TEST_CHECK_DETERMINISM=1   run one seed twice, fail on any
#                        difference (this script also runs it once)
#   MADSIM_CHECK_SQL_REFUSAL=1   also check that `cargo check` of the SQL
#                        adapters under --cfg madsim stops with one message
# Extra arguments go to `cargo test` (for example a test name filter).
#
# Cost (2-core machine): a cold target/madsim compiles the test crate's
# dependency tree under --cfg madsim with the `madsim` profile (opt-level 1,
# no debuginfo; no sqlx, no SQLite): 7m23s wall while other builds loaded
# the machine (load 4-5); warm, the script takes about 9 s, of which the
# tests about 4 s.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${MADSIM_TARGET_DIR:-target/madsim}"
export RUSTFLAGS="${RUSTFLAGS:+$RUSTFLAGS }--cfg madsim"
echo "== madsim: leasehold's worker inside a madsim simulation (RUSTFLAGS=\"$RUSTFLAGS\")"
if [ "$#" -eq 0 ]; then
    # Show each test's figures (seeds/s, seeds to first detection).
    cargo test --profile madsim -p leasehold-madsim-tests -- --show-output
else
    cargo test --profile madsim -p leasehold-madsim-tests "$@"
fi
if [ "$#" -eq 0 ] && [ -z "${MADSIM_TEST_CHECK_DETERMINISM:-}" ]; then
    echo "== madsim: MADSIM_TEST_CHECK_DETERMINISM=1 on the correct-core test"
    MADSIM_TEST_CHECK_DETERMINISM=1 cargo test --profile madsim -p leasehold-madsim-tests --test madsim \
        correct_core_holds_every_invariant_under_madsim_faults
fi
if [ "$#" -eq 0 ] && [ -n "${MADSIM_CHECK_SQL_REFUSAL:-}" ]; then
    # The SQL adapters must refuse a madsim build with one clear message.
    # Opt-in: cargo compiles much of sqlx's tree before the adapters' build
    # scripts get to run (about 5 minutes cold). The normal build's
    # tests/madsim/tests/sql_adapters_refuse_madsim.rs runs those build
    # scripts directly on every test run.
    echo "== madsim: the SQL adapters refuse --cfg madsim with one clear message"
    for crate in leasehold-sqlite leasehold-postgres; do
        if out=$(cargo check --profile madsim -q -p "$crate" 2>&1); then
            echo "$crate built under --cfg madsim; it must refuse" >&2
            exit 1
        fi
        if ! grep -q "$crate cannot be built under \`--cfg madsim\`" <<<"$out"; then
            echo "$crate failed under --cfg madsim without its message:" >&2
            echo "$out" | tail -20 >&2
            exit 1
        fi
        if [ "$(grep -c '^error' <<<"$out")" -gt 2 ]; then
            echo "$crate gave more than its one error under --cfg madsim:" >&2
            echo "$out" | tail -40 >&2
            exit 1
        fi
        echo "   $crate: refused, one message"
    done
fi
