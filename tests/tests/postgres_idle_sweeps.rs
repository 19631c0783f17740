//! A sweep that finds no expired lease takes no transaction on
//! PostgreSQL.
//!
//! Another session holds `leasehold_jobs` in `EXCLUSIVE` mode, which lets
//! plain reads through and blocks every row lock. A sweep while no lease
//! has expired must answer "nothing reclaimed" at once from one read
//! (`adapters/postgres/src/sweep_probe.rs`). Once the lease has expired the
//! sweep runs its `FOR UPDATE SKIP LOCKED` scan: it waits for the table,
//! and reclaims the lease once the lock is gone. Without the probe every
//! sweep waited behind the lock.

use leasehold_core::{ManualStoreClock, Millis, NewJob, Policy, Store, SweepRequest};
use leasehold_tests::table_lock::{lock_jobs_table, READ_LIMIT};
use leasehold_tests::{database_url, pg_store, poll, MANUAL_EPOCH};
use std::sync::Arc;
use std::time::Instant;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sweeps_without_expired_leases_answer_while_another_session_locks_the_rows() {
    let Some(url) = database_url() else { return };
    let clock = ManualStoreClock::new(MANUAL_EPOCH);
    let store = Arc::new(pg_store(&url, Policy::default(), Some(clock.clone())).await);
    let schema = store.inner().schema().expect("schema").to_string();
    let job = store
        .enqueue(NewJob::new("q", "held"))
        .await
        .expect("enqueue");
    let lease = poll("q").lease;
    let granted = store.claim(poll("q")).await.expect("claim");
    assert_eq!(granted.iter().map(|l| l.job).collect::<Vec<_>>(), vec![job]);

    let mut table = lock_jobs_table(&url, &schema).await;
    // The lease runs until `MANUAL_EPOCH + lease`: a millisecond before,
    // nothing has expired.
    clock.advance(Millis(lease.0 - 1));
    let started = Instant::now();
    let swept = table
        .within_half_hold(store.sweep(SweepRequest { limit: 10 }))
        .await
        .expect("sweep before expiry");
    let took = started.elapsed();
    assert!(swept.is_empty(), "no lease has expired: {swept:?}");
    assert!(
        took < READ_LIMIT,
        "a sweep with nothing to reclaim waited for the table: {took:?}"
    );

    // At its end the lease has expired: the sweep needs its row lock.
    clock.advance(Millis(1));
    let (got, waited) = table
        .release({
            let store = store.clone();
            async move { store.sweep(SweepRequest { limit: 10 }).await }
        })
        .await;
    let got = got.expect("sweep after expiry");
    assert_eq!(
        got.iter().map(|r| r.job).collect::<Vec<_>>(),
        vec![job],
        "the expired lease is reclaimed once the table is free"
    );
    assert!(
        waited,
        "a sweep that reclaims a lease answered while another session locked the table"
    );
}
