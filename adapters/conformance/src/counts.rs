//! `Store::count_jobs` (what `leasehold status` shows): per queue, the jobs
//! in each state, the oldest pending job's enqueue time and the nearest
//! running lease's expiry, exactly as the rows say.

use super::cases::{assert_cancel, claim_one, enqueue, release};
use super::{suite_policy, Harness, LONG_LEASE};
use leasehold_core::{
    count_by_listing, CancelOutcome, NewJob, Outcome, Release, StateCounts, Store,
};

/// Two queues with a job in every state: the store's own count gives the
/// counts, the oldest pending enqueue and the nearest expiry the rows
/// give, and the same answer as counting by listing (the trait's
/// default); an empty store counts no queue.
pub async fn count_jobs_counts_every_queue_and_state<H: Harness>(h: &H) {
    let f = h.fresh(suite_policy()).await;
    let (s, name) = (&*f.store, h.name());
    let empty = s.count_jobs().await.expect("count an empty store");
    assert!(
        empty.queues.is_empty() && empty.complete,
        "{name}: {empty:?}"
    );

    let done = enqueue(s, NewJob::new("a", b"s".to_vec())).await;
    let l = claim_one(s, "w", "a", LONG_LEASE).await;
    let ok = Outcome::Succeeded(b"r".to_vec());
    assert_eq!(release(s, done, l.token, ok).await, Release::Committed);
    let dead = enqueue(s, NewJob::new("a", b"d".to_vec())).await;
    let l = claim_one(s, "w", "a", LONG_LEASE).await;
    let failed = Outcome::Failed {
        error: "no".into(),
        retryable: false,
    };
    assert_eq!(release(s, dead, l.token, failed).await, Release::Committed);
    let cancelled = enqueue(s, NewJob::new("a", b"c".to_vec())).await;
    assert_cancel(s, cancelled, CancelOutcome::Cancelled, &name).await;
    let running = enqueue(s, NewJob::new("a", b"r".to_vec())).await;
    claim_one(s, "w", "a", LONG_LEASE).await;
    f.time.advance(leasehold_core::Millis(1)).await;
    let first = enqueue(s, NewJob::new("a", b"p1".to_vec())).await;
    f.time.advance(leasehold_core::Millis(1)).await;
    enqueue(s, NewJob::new("a", b"p2".to_vec())).await;
    enqueue(s, NewJob::new("b", b"p3".to_vec())).await;

    let c = s.count_jobs().await.expect("count");
    assert!(c.complete, "{name}");
    let names: Vec<&str> = c.queues.iter().map(|q| q.queue.as_str()).collect();
    assert_eq!(
        names,
        ["a", "b"],
        "{name}: one entry per queue, in name order"
    );
    let a = &c.queues[0];
    assert_eq!(
        a.by_state,
        StateCounts {
            pending: 2,
            running: 1,
            succeeded: 1,
            dead: 1,
            cancelled: 1
        },
        "{name}: {a:?}"
    );
    let get = |id| async move { s.get(id).await.expect("get").expect("the row") };
    assert_eq!(
        a.oldest_pending,
        Some(get(first).await.created_at),
        "{name}: the oldest pending job's enqueue"
    );
    assert_eq!(
        a.nearest_expiry,
        get(running).await.expires_at,
        "{name}: the running lease's expiry"
    );
    let b = &c.queues[1];
    assert_eq!(
        (b.by_state.pending, b.by_state.running, b.nearest_expiry),
        (1, 0, None),
        "{name}"
    );
    assert_eq!(
        c,
        count_by_listing(s).await.expect("count by listing"),
        "{name}: the store's count is the listing's"
    );
}
