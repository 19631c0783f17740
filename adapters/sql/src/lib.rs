//! # leasehold-sql
//!
//! What both SQL adapters (`leasehold-sqlite`, `leasehold-postgres`)
//! share, written once:
//! - the row codecs: how a [`JobRecord`](leasehold_core::JobRecord) and a
//!   [`ScheduleRecord`](leasehold_core::ScheduleRecord) are stored in SQL
//!   columns, and reading them from either driver's rows
//!   ([`job_columns`], [`schedule_columns`], [`column`]);
//! - the job reads and the schedule statements, in each driver's
//!   placeholder style, run on either driver ([`dialect`], [`job_sql`],
//!   [`schedule_sql`]);
//! - the statements of prune both send alike ([`prune_sql`]);
//! - the bug catalogue's hook, the variant a store runs with
//!   ([`variant_hook`]), and the prune bugs planted through it
//!   ([`prune_variants`]) and the races of concurrent transactions
//!   PostgreSQL's claim and sweep plant through it ([`race_variants`]):
//!   compiled in only with the `buggy-variants` feature, which the
//!   simulator's catalogue turns on;
//! - closing a pool for good ([`pool_close`]), and lending one connection
//!   from operation to operation without sqlx's ping on its return
//!   ([`kept_conn`]);
//! - the bounded retry of a transaction after a version conflict
//!   ([`conflict_retry`]);
//! - a release applied to a job's current row ([`release_row`]);
//! - for the operator's commands: judging a database's schema against a
//!   build's migrations ([`schema_state`]) and reading one job's audit
//!   trail ([`job_trail`]).
//!
//! What differs between the stores (how a transaction begins, commits and
//! rolls back, how a claim scans, how rows are written in batches) stays
//! in each adapter.
//!
//! ## Depends on
//! `leasehold-core`, sqlx, tokio (a timer), tracing and serde_json. It must never
//! depend on an adapter, the conformance suite or the simulator: the
//! adapters build on it. The core must never depend on it: the core stays
//! free of database drivers.

#![warn(missing_docs)]

pub mod affected;
pub mod column;
pub mod conflict_retry;
pub mod dialect;
pub mod idle_queues;
pub mod job_columns;
pub mod job_sql;
pub mod job_trail;
pub mod kept_conn;
pub mod pool_close;
pub mod prune_sql;
pub mod prune_variants;
pub mod race_variants;
pub mod release_row;
pub mod schedule_columns;
pub mod schedule_sql;
pub mod schema_state;
pub mod variant_hook;
