//! The conformance suite against every SQL adapter (the memory store runs it
//! in its own package, `adapters/memory/tests/conformance.rs`): SQLite (real temp
//! files), and Postgres twice (on the database clock, waiting for real; and
//! on a manual clock override), and Postgres through the coalescing layer
//! that batches concurrent claims and releases. Postgres cases need
//! `DATABASE_URL`.

mod sqlite {
    use leasehold_tests::sqlite_harness;
    leasehold_conformance::conformance_tests!(sqlite_harness);
}

mod postgres_db_clock {
    use leasehold_tests::pg_db_clock_harness;
    leasehold_conformance::conformance_tests!(pg_db_clock_harness);
}

mod postgres_manual_clock {
    use leasehold_tests::pg_manual_clock_harness;
    leasehold_conformance::conformance_tests!(pg_manual_clock_harness);
}

mod postgres_coalescing {
    use leasehold_tests::pg_coalescing_harness;
    leasehold_conformance::conformance_tests!(pg_coalescing_harness);
}
