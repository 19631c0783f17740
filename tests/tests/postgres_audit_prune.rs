//! The PostgreSQL audit prune on a real server (issue 44): it walks the
//! audit rows from the oldest, stops at the first row too young, and reads
//! at most its event budget in one call, so a call's work is bounded
//! whatever the backlog. Asserted on what each call deletes, not on time:
//! a row whose `at` cannot be parsed stands after the point where a call
//! must stop, so a call that read it would fail.
//! Needs `DATABASE_URL` (see `leasehold_tests::database_url`).

use leasehold_core::{ManualStoreClock, Millis, Policy, PruneRequest, Store, MIN_RETENTION};
use leasehold_postgres::PgStore;
use leasehold_tests::{database_url, pg_store, MANUAL_EPOCH};

const R: Millis = MIN_RETENTION;
/// An event time well past the audit cutoff at [`MANUAL_EPOCH`].
const OLD: i64 = MANUAL_EPOCH.0 - 2 * R.0 as i64;
/// An event time at [`MANUAL_EPOCH`]: younger than the cutoff.
const YOUNG: i64 = MANUAL_EPOCH.0;

/// A JSON array of `n` events written at `at` (only `at` is read by the
/// prune).
fn events(n: usize, at: &str) -> String {
    let one = format!(r#"{{"job":1,"version":1,"at":{at}}}"#);
    format!("[{}]", vec![one; n].join(","))
}

/// Appends audit rows with these events; answers their `seq`s.
async fn append(s: &PgStore, rows: &[String]) -> Vec<i64> {
    let table = format!("\"{}\".leasehold_audit", s.schema().expect("a schema"));
    let mut seqs = Vec::new();
    for ev in rows {
        let seq: i64 = sqlx::query_scalar(&format!(
            "INSERT INTO {table} (events) VALUES ($1::json) RETURNING seq"
        ))
        .bind(ev)
        .fetch_one(s.pool())
        .await
        .expect("insert audit row");
        seqs.push(seq);
    }
    seqs
}

/// The `seq`s of the audit rows left, oldest first.
async fn left(s: &PgStore) -> Vec<i64> {
    let table = format!("\"{}\".leasehold_audit", s.schema().expect("a schema"));
    sqlx::query_scalar(&format!("SELECT seq FROM {table} ORDER BY seq"))
        .fetch_all(s.pool())
        .await
        .expect("read audit rows")
}

fn req(limit: u32) -> PruneRequest {
    PruneRequest::new(R, limit).expect("a valid request")
}

/// A backlog of old rows with a young row in it: a call deletes the old
/// rows before the young one and nothing after it, even old rows, and
/// never parses a row past it (the poisoned one would fail the call).
/// Once the young row ages, the rest goes.
#[tokio::test]
async fn the_walk_stops_at_the_first_row_too_young() {
    let Some(url) = database_url() else { return };
    let clock = ManualStoreClock::new(MANUAL_EPOCH);
    let g = pg_store(&url, Policy::default(), Some(clock.clone())).await;
    let s = g.inner();
    let old = OLD.to_string();
    // A young row of many events: its first events are old, its newest is
    // not, so it stays whole.
    let mut young = events(500, &old);
    young.insert_str(
        young.len() - 1,
        &format!(r#",{{"job":2,"version":1,"at":{YOUNG}}}"#),
    );
    let seqs = append(
        s,
        &[
            events(1, &old),
            events(3, &old),
            young,
            events(1, &old),
            events(2, r#""not a time""#),
        ],
    )
    .await;
    assert_eq!(s.prune(req(100)).await.expect("prune"), vec![]);
    assert_eq!(
        left(s).await,
        seqs[2..],
        "the old rows before the young one go"
    );
    assert_eq!(s.prune(req(100)).await.expect("prune"), vec![]);
    assert_eq!(
        left(s).await,
        seqs[2..],
        "nothing past the young row, old or not"
    );
    // Once the young row is old, the walk reaches the poisoned row: the
    // call fails there (and rolls back), which is what shows the calls
    // above never parsed it.
    clock.advance(Millis(R.0 + 1));
    assert!(
        s.prune(req(100)).await.is_err(),
        "the poisoned row is parsed now"
    );
    assert_eq!(left(s).await, seqs[2..], "the failed call rolled back");
}

/// One call reads at most its event budget (ten events per job of its
/// limit; every row counts at least one): a backlog of old rows goes over
/// several calls, each deleting the rows that fit, and the row that does
/// not fit is not parsed (a poisoned row there would fail the call). The
/// first row goes whatever its size, so a call always progresses.
#[tokio::test]
async fn a_call_reads_at_most_its_event_budget() {
    let Some(url) = database_url() else { return };
    let clock = ManualStoreClock::new(MANUAL_EPOCH);
    let g = pg_store(&url, Policy::default(), Some(clock)).await;
    let s = g.inner();
    let old = OLD.to_string();
    // limit 1: a budget of 10 events.
    let mut rows = vec![events(1, &old); 12];
    rows.push(events(4, &old));
    rows.push(events(5, &old));
    rows.push(events(25, &old));
    rows.push(events(1, r#""not a time""#));
    let seqs = append(s, &rows).await;
    assert_eq!(s.prune(req(1)).await.expect("prune"), vec![]);
    assert_eq!(left(s).await, seqs[10..], "ten one-event rows: the budget");
    assert_eq!(s.prune(req(1)).await.expect("prune"), vec![]);
    assert_eq!(
        left(s).await,
        seqs[13..],
        "1 + 1 + 4 events; 5 more would pass 10"
    );
    assert_eq!(s.prune(req(1)).await.expect("prune"), vec![]);
    assert_eq!(
        left(s).await,
        seqs[14..],
        "the 5-event row alone: 25 more would pass 10"
    );
    // The 25-event row is first now: read whatever its size, and the
    // poisoned row after it is past the budget, so never parsed.
    assert_eq!(s.prune(req(1)).await.expect("prune"), vec![]);
    assert_eq!(
        left(s).await,
        seqs[15..],
        "a first row over the budget goes"
    );
    assert!(
        s.prune(req(1)).await.is_err(),
        "the poisoned row, first, is parsed"
    );
    // A larger limit reads more: 100 jobs, 1,000 events.
    let more = append(s, &vec![events(30, &old); 40]).await;
    let table = format!("\"{}\".leasehold_audit", s.schema().unwrap());
    sqlx::query(&format!("DELETE FROM {table} WHERE seq = $1"))
        .bind(seqs[15])
        .execute(s.pool())
        .await
        .expect("drop the poisoned row");
    assert_eq!(s.prune(req(100)).await.expect("prune"), vec![]);
    assert_eq!(left(s).await, more[33..], "33 rows of 30 events fit 1,000");
}
