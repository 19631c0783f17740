//! A sweep that finds no expired lease never takes SQLite's write lock.
//!
//! Another connection (standing in for another process) holds the write
//! lock. A sweep while no lease has expired must answer "nothing
//! reclaimed" at once from a read (`adapters/sqlite/src/sweep_probe.rs`),
//! as a read does. Once the lease has expired the sweep needs the lock: it
//! waits for it, and reclaims the lease once the lock comes back. Without
//! the probe every sweep queued on the lock for up to the busy timeout.

use leasehold_core::{ManualStoreClock, Millis, NewJob, Store, SweepRequest};
use leasehold_tests::write_lock::{hold_write_lock, two_processes, READ_LIMIT};
use leasehold_tests::{poll, MANUAL_EPOCH};
use std::time::Instant;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sweeps_without_expired_leases_answer_while_another_process_holds_the_write_lock() {
    let clock = ManualStoreClock::new(MANUAL_EPOCH);
    let p = two_processes(Some(clock.clone())).await;
    let store = p.store.clone();
    let job = store
        .enqueue(NewJob::new("q", "held"))
        .await
        .expect("enqueue");
    let lease = poll("q").lease;
    let granted = store.claim(poll("q")).await.expect("claim");
    assert_eq!(granted.iter().map(|l| l.job).collect::<Vec<_>>(), vec![job]);

    let held = hold_write_lock(&p.other).await;
    // The lease runs until `MANUAL_EPOCH + lease`: a millisecond before,
    // nothing has expired.
    clock.advance(Millis(lease.0 - 1));
    let started = Instant::now();
    let swept = store
        .sweep(SweepRequest { limit: 10 })
        .await
        .expect("sweep before expiry");
    let took = started.elapsed();
    assert!(swept.is_empty(), "no lease has expired: {swept:?}");
    assert!(
        took < READ_LIMIT,
        "a sweep with nothing to reclaim waited for the write lock: {took:?}"
    );

    // At its end the lease has expired: the sweep needs the lock.
    clock.advance(Millis(1));
    let (got, waited) = held
        .release(async move { store.sweep(SweepRequest { limit: 10 }).await })
        .await;
    let got = got.expect("sweep after expiry");
    assert_eq!(
        got.iter().map(|r| r.job).collect::<Vec<_>>(),
        vec![job],
        "the expired lease is reclaimed once the lock is free"
    );
    assert!(
        waited,
        "a sweep that reclaims a lease answered while another process held the write lock"
    );
}
