//! A database created by the previous schema (migrations 0001 and 0002:
//! one `lease_events` row per event) migrates to the current one without
//! losing a job or an audit event, and keeps working after; and the jobs
//! table carries migration 0004's autovacuum thresholds.
//! Needs `DATABASE_URL` (see `leasehold_tests::database_url`).

use leasehold_core::{Event, EventKind, JobState, NewJob, Outcome, Release, ReleaseRequest, Store};
use leasehold_postgres::PgStore;
use leasehold_tests::requests::claim_q as claim;
use leasehold_tests::{database_url, pg_store, unique_schema, SchemaGuard};
use std::borrow::Cow;
use std::path::Path;

/// The last migration of the previous schema.
const PREVIOUS_SCHEMA: i64 = 2;

/// The storage parameters migration 0004 gives `leasehold_jobs`.
const AUTOVACUUM: [&str; 2] = [
    "autovacuum_vacuum_scale_factor=0.01",
    "autovacuum_vacuum_threshold=1000",
];

/// `leasehold_jobs`'s storage parameters, in the pool's schema (none: empty).
async fn table_options(pool: &sqlx::PgPool) -> Vec<String> {
    let options: Option<Vec<String>> = sqlx::query_scalar(
        "SELECT reloptions FROM pg_class WHERE oid = 'leasehold_jobs'::regclass",
    )
    .fetch_one(pool)
    .await
    .unwrap();
    options.unwrap_or_default()
}

/// A new database gets the autovacuum thresholds too, and an operator's
/// own setting survives a later `migrate()` (sqlx applies a migration once).
#[tokio::test]
async fn a_new_database_gets_the_autovacuum_thresholds_and_keeps_an_operators_own() {
    let Some(url) = database_url() else { return };
    let store = pg_store(&url, Default::default(), None).await;
    let pool = store.inner().pool();
    assert_eq!(table_options(pool).await, AUTOVACUUM);
    sqlx::query("ALTER TABLE leasehold_jobs SET (autovacuum_vacuum_scale_factor = 0.05)")
        .execute(pool)
        .await
        .unwrap();
    store.inner().migrate().await.unwrap();
    assert_eq!(
        table_options(pool).await,
        [
            "autovacuum_vacuum_threshold=1000",
            "autovacuum_vacuum_scale_factor=0.05"
        ],
        "the operator's scale factor stands"
    );
}

/// Enqueues three jobs on `store`, runs one to success and leaves one
/// running: the jobs and events an old database would hold.
async fn some_history(store: &PgStore) {
    for i in 0..3u8 {
        store.enqueue(NewJob::new("q", vec![i])).await.unwrap();
    }
    let leases = store.claim(claim("old-worker", 2)).await.unwrap();
    assert_eq!(leases.len(), 2);
    let done = ReleaseRequest {
        job: leases[0].job,
        token: leases[0].token,
        outcome: Outcome::Succeeded(b"old result".to_vec()),
    };
    assert_eq!(store.release(done).await.unwrap(), Release::Committed);
}

#[tokio::test]
async fn a_database_of_the_previous_schema_migrates_without_losing_a_job_or_an_event() {
    let Some(url) = database_url() else { return };
    // Real jobs and events, written by the current store in its own schema.
    let source = pg_store(&url, Default::default(), None).await;
    some_history(source.inner()).await;
    let events_before = source.inner().events().await.unwrap();
    assert_eq!(
        events_before.len(),
        3 + 2 + 1,
        "3 enqueues, 2 claims, 1 release"
    );

    // A database at the previous schema: its migrations applied by sqlx,
    // as the previous release's `migrate()` left it.
    let schema = unique_schema();
    let old = PgStore::builder(url.as_str())
        .schema(schema.clone())
        .connect()
        .await
        .unwrap();
    let _guard = SchemaGuard::new(url.as_str(), schema.as_str());
    sqlx::query(&format!("CREATE SCHEMA \"{schema}\""))
        .execute(old.pool())
        .await
        .unwrap();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../migrations/postgres");
    let mut previous = sqlx::migrate::Migrator::new(dir).await.unwrap();
    let kept: Vec<_> = previous
        .migrations
        .iter()
        .filter(|m| m.version <= PREVIOUS_SCHEMA)
        .cloned()
        .collect();
    assert_eq!(kept.len(), 2, "migrations 0001 and 0002");
    previous.migrations = Cow::Owned(kept);
    previous.run(old.pool()).await.unwrap();
    // The same rows, one event per `lease_events` row, as the previous
    // release wrote them.
    let source_schema = source.inner().schema().unwrap().to_string();
    for sql in [
        format!("INSERT INTO leasehold_jobs SELECT * FROM \"{source_schema}\".leasehold_jobs"),
        format!(
            "INSERT INTO lease_events (job_id, version, at, event) \
             SELECT job_id, version, at, event FROM \"{source_schema}\".lease_events \
             ORDER BY seq, pos"
        ),
        format!(
            "SELECT setval('leasehold_job_ids', \
             (SELECT last_value FROM \"{source_schema}\".leasehold_job_ids))"
        ),
    ] {
        sqlx::query(&sql).execute(old.pool()).await.unwrap();
    }
    let old_rows: i64 = sqlx::query_scalar("SELECT count(*) FROM lease_events")
        .fetch_one(old.pool())
        .await
        .unwrap();
    assert_eq!(old_rows, 6, "the previous schema's one row per event");

    assert_eq!(
        table_options(old.pool()).await,
        Vec::<String>::new(),
        "the previous schema set no storage parameter"
    );

    // Migrate, and read everything back.
    old.migrate().await.unwrap();
    let store = old;
    assert_eq!(
        table_options(store.pool()).await,
        AUTOVACUUM,
        "migration 0004 sets the jobs table's autovacuum thresholds"
    );
    assert_eq!(
        store.events().await.unwrap(),
        events_before,
        "every event, in order"
    );
    let jobs = store
        .list(leasehold_core::ListRequest {
            after: None,
            limit: 100,
        })
        .await
        .unwrap();
    assert_eq!(jobs.len(), 3);
    let states: Vec<JobState> = jobs.iter().map(|j| j.state).collect();
    assert!(states.contains(&JobState::Succeeded));
    assert!(states.contains(&JobState::Running));
    assert!(states.contains(&JobState::Pending));

    // It keeps working: the pending job runs, its events follow the old
    // ones, and the view still shows one row per event.
    let leases = store.claim(claim("new-worker", 8)).await.unwrap();
    assert_eq!(leases.len(), 1, "the one pending job");
    let release = ReleaseRequest {
        job: leases[0].job,
        token: leases[0].token,
        outcome: Outcome::Succeeded(b"new result".to_vec()),
    };
    assert_eq!(store.release(release).await.unwrap(), Release::Committed);
    let events = store.events().await.unwrap();
    assert_eq!(events.len(), 8);
    assert_eq!(&events[..6], &events_before[..]);
    assert!(matches!(events[6].kind, EventKind::Claimed { .. }));
    assert!(matches!(events[7].kind, EventKind::Released { .. }));
    let view: Vec<(i64, i64, i64)> =
        sqlx::query_as("SELECT seq, job_id, version FROM lease_events ORDER BY seq, pos")
            .fetch_all(store.pool())
            .await
            .unwrap();
    let expected: Vec<(i64, i64)> = events
        .iter()
        .map(|e: &Event| (e.job.0 as i64, e.version as i64))
        .collect();
    let got: Vec<(i64, i64)> = view.iter().map(|&(_, j, v)| (j, v)).collect();
    assert_eq!(got, expected, "the view lists every event in order");
    assert!(
        view.windows(2).all(|w| w[0].0 <= w[1].0),
        "sequence numbers never go back"
    );
    let new_job = store
        .enqueue(NewJob::new("q", b"after".to_vec()))
        .await
        .unwrap();
    assert!(
        jobs.iter().all(|j| j.id < new_job),
        "job ids continue after the old ones"
    );
}
