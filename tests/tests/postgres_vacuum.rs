//! `PgStoreBuilder::vacuum_every`: the store vacuums `leasehold_jobs` once
//! it has dead rows, which takes the dead entries out of the claim scan's
//! way; it leaves an idle table alone; `close` ends it with its connection;
//! and a bad period is refused before connecting.
//! Needs `DATABASE_URL` (see `leasehold_tests::database_url`), except the
//! last test.

use leasehold_core::{InputError, NewJob, Outcome, Release, ReleaseRequest, Store, StoreError};
use leasehold_postgres::{PgStore, VacuumStats, MIN_VACUUM_PERIOD, VACUUM_MIN_DEAD_ROWS};
use leasehold_tests::backends::{assert_all_gone, backends};
use leasehold_tests::requests::claim_q;
use leasehold_tests::{database_url, unique_schema, SchemaGuard};
use std::time::{Duration, Instant};

/// Jobs run through the queue: each leaves two dead rows (its pending and
/// its running version), and its claim index entry behind.
const JOBS: usize = 6_000;
/// Longest wait for the store's first vacuum. The server counts dead rows
/// from statistics that an idle backend may report up to 10 s late.
const FIRST_VACUUM_BOUND: Duration = Duration::from_secs(30);
/// How long an idle backend may keep its pending statistics before it
/// flushes them (PostgreSQL's 10 s idle flush, plus a second): each of a
/// pool's connections flushes the dead rows it made on its own schedule,
/// and one flushing after the store's first vacuum would count as new dead
/// rows and start a second one.
const STATS_FLUSH_LAG: Duration = Duration::from_secs(11);

/// A migrated store in a fresh schema (its `application_name` is the
/// schema's name), with autovacuum off for its jobs table so that only the
/// store's own vacuums clean it.
async fn store(url: &str, vacuum: Option<Duration>) -> (PgStore, SchemaGuard) {
    let schema = unique_schema();
    let mut b = PgStore::builder(url)
        .schema(schema.clone())
        .application_name(schema.clone())
        .max_connections(4);
    if let Some(p) = vacuum {
        b = b.vacuum_every(p);
    }
    let store = b.connect().await.expect("connect");
    store.migrate().await.expect("migrate");
    sqlx::query("ALTER TABLE leasehold_jobs SET (autovacuum_enabled = false)")
        .execute(store.pool())
        .await
        .expect("autovacuum off");
    (store, SchemaGuard::new(url, schema))
}

/// Runs `JOBS` jobs through queue `q`, 200 at a time.
async fn churn(store: &PgStore) {
    let jobs: Vec<NewJob> = (0..JOBS).map(|_| NewJob::new("q", Vec::new())).collect();
    for chunk in jobs.chunks(1_000) {
        store.enqueue_many(chunk).await.expect("enqueue");
    }
    let mut done = 0;
    // Bounded: every pass claims at least one job, or fails the test.
    for _ in 0..JOBS {
        let leases = store.claim(claim_q("w", 200)).await.expect("claim");
        if leases.is_empty() {
            break;
        }
        let releases: Vec<ReleaseRequest> = leases
            .iter()
            .map(|l| ReleaseRequest {
                job: l.job,
                token: l.token,
                outcome: Outcome::Succeeded(Vec::new()),
            })
            .collect();
        for a in store.release_many(&releases).await.expect("release") {
            assert_eq!(a, Ok(Release::Committed));
        }
        done += leases.len();
    }
    assert_eq!(done, JOBS, "every job ran");
}

/// Buffers one claim scan of queue `q` reads (the index and the rows it
/// visits), from `EXPLAIN (ANALYZE, BUFFERS)`.
async fn claim_scan_buffers(store: &PgStore) -> i64 {
    let plan: Vec<String> = sqlx::query_scalar(
        "EXPLAIN (ANALYZE, BUFFERS) \
         SELECT id FROM leasehold_jobs WHERE queue = 'q' AND state = 'pending' \
         ORDER BY priority DESC, run_at, id LIMIT 200 FOR UPDATE SKIP LOCKED",
    )
    .fetch_all(store.pool())
    .await
    .expect("explain");
    // The first `Buffers:` line is the top node's, which counts its
    // children's: "Buffers: shared hit=12 read=3 ...".
    let line = plan
        .iter()
        .find(|l| l.trim_start().starts_with("Buffers:"))
        .unwrap_or_else(|| panic!("no buffers in {plan:#?}"));
    let count = |key: &str| -> i64 {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(key))
            .map_or(0, |n| n.parse().expect("a count"))
    };
    count("hit=") + count("read=")
}

/// A manual `VACUUM` of the jobs table has run, as the server counts it.
async fn manual_vacuums(store: &PgStore) -> i64 {
    sqlx::query_scalar(
        "SELECT vacuum_count FROM pg_stat_user_tables WHERE relid = 'leasehold_jobs'::regclass",
    )
    .fetch_one(store.pool())
    .await
    .expect("vacuum_count")
}

/// Waits until `done` holds of the store's vacuum stats, at most `bound`.
async fn wait_for(store: &PgStore, bound: Duration, done: impl Fn(VacuumStats) -> bool) {
    let t = Instant::now();
    loop {
        let stats = store.vacuum_stats().expect("vacuum asked for");
        if done(stats) {
            return;
        }
        assert!(t.elapsed() < bound, "not within {bound:?}: {stats:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Dead rows from a store without vacuums make its claim scan read many
/// buffers; a store with `vacuum_every` on the same tables vacuums them
/// away, and the scan reads a handful again.
#[tokio::test]
async fn the_store_vacuums_dead_rows_out_of_the_claim_scans_way() {
    let Some(url) = database_url() else { return };
    let (plain, guard) = store(&url, None).await;
    assert_eq!(plain.vacuum_stats(), None, "off unless asked for");
    churn(&plain).await;
    let before = claim_scan_buffers(&plain).await;
    assert!(
        before > 20,
        "{JOBS} claimed jobs' entries cost the scan {before} buffers"
    );
    assert_eq!(manual_vacuums(&plain).await, 0);
    // Every churn connection's dead rows counted before the vacuums start.
    tokio::time::sleep(STATS_FLUSH_LAG).await;

    // A second store on the same schema, with vacuums.
    let schema = plain.schema().expect("schema").to_string();
    let maintained = PgStore::builder(url.as_str())
        .schema(schema.clone())
        .application_name(format!("{schema}_v"))
        .vacuum_every(Duration::from_millis(100))
        .connect()
        .await
        .expect("connect");
    wait_for(&maintained, FIRST_VACUUM_BOUND, |s| s.runs >= 1).await;
    let stats = maintained.vacuum_stats().expect("stats");
    assert_eq!(stats.failed, 0, "{stats:?}");
    assert!(stats.micros > 0, "a vacuum takes time: {stats:?}");
    assert!(manual_vacuums(&plain).await >= 1, "the server saw it");
    let after = claim_scan_buffers(&plain).await;
    assert!(
        after <= 8,
        "after the vacuum the scan read {after} buffers (before: {before})"
    );
    eprintln!("claim scan: {before} buffers before, {after} after; {stats:?}");
    // Its own dead rows gone, the next looks find too few to vacuum again.
    let then = maintained.vacuum_stats().expect("stats");
    wait_for(&maintained, FIRST_VACUUM_BOUND, |s| s.idle >= then.idle + 3).await;
    assert_eq!(maintained.vacuum_stats().expect("stats").runs, then.runs);
    maintained.close().await;
    plain.close().await;
    drop(guard);
}

/// An idle table is looked at and left alone, and `close` ends the task
/// and its connection.
#[tokio::test]
async fn an_idle_table_is_left_alone_and_close_ends_the_task() {
    let Some(url) = database_url() else { return };
    let admin = sqlx::PgPool::connect(&url).await.expect("admin");
    let (store, _guard) = store(&url, Some(MIN_VACUUM_PERIOD)).await;
    store
        .enqueue(NewJob::new("q", Vec::new()))
        .await
        .expect("enqueue");
    wait_for(&store, Duration::from_secs(10), |s| s.idle >= 5).await;
    let stats = store.vacuum_stats().expect("stats");
    assert_eq!(stats.runs, 0, "fewer than {VACUUM_MIN_DEAD_ROWS} dead rows");
    assert_eq!(stats.failed, 0, "{stats:?}");
    assert_eq!(manual_vacuums(&store).await, 0);

    let app = store.schema().expect("schema").to_string();
    assert!(backends(&admin, &app).await > 0, "the store's backends");
    store.close().await;
    assert_all_gone(&admin, &app, "the vacuum task's connection").await;
    let idle = store.vacuum_stats().expect("stats").idle;
    tokio::time::sleep(MIN_VACUUM_PERIOD * 4).await;
    assert_eq!(
        store.vacuum_stats().expect("stats").idle,
        idle,
        "no look after close"
    );
    admin.close().await;
}

/// Before `migrate` creates the table, a look finds no table: idle, not a
/// failure (the task starts at `connect`, before any `migrate`).
#[tokio::test]
async fn a_table_not_created_yet_counts_as_idle() {
    let Some(url) = database_url() else { return };
    let schema = unique_schema();
    let _guard = SchemaGuard::new(url.as_str(), schema.as_str());
    let store = PgStore::builder(url.as_str())
        .schema(schema.clone())
        .application_name(schema.clone())
        .vacuum_every(MIN_VACUUM_PERIOD)
        .connect()
        .await
        .expect("connect");
    wait_for(&store, Duration::from_secs(10), |s| s.idle >= 3).await;
    let stats = store.vacuum_stats().expect("stats");
    assert_eq!((stats.runs, stats.failed), (0, 0), "{stats:?}");
    store.close().await;
}

/// A period outside the bounds is refused by `connect`, before it tries
/// the database, with the setting's name.
#[tokio::test]
async fn a_bad_period_is_refused_before_connecting() {
    for bad in [
        Duration::ZERO,
        Duration::from_millis(10),
        Duration::from_secs(7_200),
    ] {
        let r = PgStore::builder("postgres://nobody@127.0.0.1:1/none")
            .vacuum_every(bad)
            .connect()
            .await;
        match r {
            Err(StoreError::Input(InputError::BadDuration { what, .. })) => {
                assert_eq!(what, "vacuum_every");
            }
            Err(e) => panic!("{bad:?}: {e}"),
            Ok(_) => panic!("{bad:?} accepted"),
        }
    }
}
