//! Pickup latency: an idle `Worker` with a 30 s poll interval is woken by
//! its store (in-process for memory and SQLite, `LISTEN/NOTIFY` for
//! Postgres) and claims new work within seconds; with the wake-ups hidden
//! the poll still finds it. The cases are `leasehold_conformance::wake`;
//! the Postgres listener's reconnect is tested here. Postgres cases need
//! `DATABASE_URL` (see `leasehold_tests::database_url`).

macro_rules! wake_cases {
    ($harness:path) => {
        wake_cases!(@case $harness, idle_worker_claims_a_new_job_long_before_its_poll_interval);
        wake_cases!(@case $harness, returned_job_wakes_an_idle_worker);
        wake_cases!(@case $harness, a_burst_of_enqueues_is_claimed_without_a_claim_storm);
        wake_cases!(@case $harness, a_job_committed_while_a_claim_is_in_flight_wakes_the_worker);
        wake_cases!(@case $harness, without_wake_ups_the_poll_still_finds_the_job);
        wake_cases!(@case $harness, a_sweep_that_frees_a_limited_slot_wakes_an_idle_worker);
        wake_cases!(@case $harness, a_sweep_that_returns_a_job_wakes_an_idle_worker);
        wake_cases!(@case $harness, a_fired_job_wakes_an_idle_worker);
        wake_cases!(@case $harness, a_release_that_frees_a_limited_slot_wakes_an_idle_worker);
    };
    (@case $harness:path, $case:ident) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $case() {
            if let Some(h) = $harness().await {
                leasehold_conformance::wake::$case(&h).await;
            }
        }
    };
}

mod memory {
    use leasehold_tests::memory_harness;
    wake_cases!(memory_harness);
}

mod sqlite {
    use leasehold_tests::sqlite_harness;
    wake_cases!(sqlite_harness);
}

mod postgres_db_clock {
    use leasehold_tests::pg_db_clock_harness;
    wake_cases!(pg_db_clock_harness);
}

mod postgres_coalescing {
    use leasehold_tests::pg_coalescing_harness;
    wake_cases!(pg_coalescing_harness);
}

mod postgres_listener {
    use leasehold_conformance::wake::{Counted, Running, LONG_POLL, QUEUE, WAKE_BOUND};
    use leasehold_core::{NewJob, Policy, Store};
    use leasehold_postgres::PgStore;
    use leasehold_tests::{database_url, pg_store, Guarded, SchemaGuard};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    /// Most passes looking for the listener's backend (every 20 ms).
    const FIND_TRIES: u32 = 250;

    /// The pid of the store's `LISTEN` connection, other than `not`.
    async fn listener_pid(admin: &sqlx::PgPool, app: &str, not: Option<i32>) -> i32 {
        for _ in 0..FIND_TRIES {
            let pid: Option<i32> = sqlx::query_scalar(
                "SELECT pid FROM pg_stat_activity WHERE application_name = $1 \
                 AND query LIKE 'LISTEN%' AND pid <> COALESCE($2, 0) LIMIT 1",
            )
            .bind(app)
            .bind(not)
            .fetch_optional(admin)
            .await
            .expect("pg_stat_activity");
            if let Some(pid) = pid {
                return pid;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("no LISTEN connection for {app}");
    }

    /// A store on a schema of its own with an idle worker (`worker_id`,
    /// poll interval [`LONG_POLL`]) whose wake-ups come through the store's
    /// listener, and an admin pool to watch the server with.
    struct Listening {
        pg: Arc<Guarded<PgStore, SchemaGuard>>,
        /// The store's `application_name`: its backends carry it.
        app: String,
        admin: sqlx::PgPool,
        store: Arc<Counted<Guarded<PgStore, SchemaGuard>>>,
        worker: Running,
        /// Short claims the worker had made when it went idle.
        seen: u64,
    }

    impl Listening {
        async fn start(url: &str, worker_id: &str) -> Listening {
            let pg = Arc::new(pg_store(url, Policy::default(), None).await);
            let app = pg.inner().schema().expect("schema").to_string();
            let admin = sqlx::PgPool::connect(url).await.expect("admin");
            let (store, worker, seen) =
                Running::start_counted(pg.clone(), true, worker_id, LONG_POLL).await;
            Listening {
                pg,
                app,
                admin,
                store,
                worker,
                seen,
            }
        }
    }

    /// Waits until `count` answers 0, looking every 20 ms; fails the test
    /// with `what` if it still does not after [`WAKE_BOUND`].
    async fn until_none<F>(what: &str, mut count: impl FnMut() -> F)
    where
        F: std::future::Future<Output = i64>,
    {
        let t = Instant::now();
        while count().await > 0 {
            assert!(t.elapsed() < WAKE_BOUND, "{what}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Enqueues a job with `payload` and asserts the idle worker `w` claims
    /// it within [`WAKE_BOUND`], long before its poll (`when` says which
    /// wake-up it was).
    async fn claimed_soon(l: &mut Listening, payload: &[u8], when: &str) {
        let t = Instant::now();
        let job =
            l.pg.enqueue(NewJob::new(QUEUE, payload.to_vec()))
                .await
                .expect("enqueue");
        assert_eq!(l.worker.next_claim(WAKE_BOUND, when).await, job);
        assert!(t.elapsed() < WAKE_BOUND, "took {:?}", t.elapsed());
    }

    /// How many `LISTEN` connections carry `application_name` `app`. (Only
    /// those: the pool's own backends after `close` are the subject of
    /// `postgres_adapter.rs`'s `close_leaves_no_backend_behind`.)
    async fn listeners(admin: &sqlx::PgPool, app: &str) -> i64 {
        sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 \
             AND query LIKE 'LISTEN%'",
        )
        .bind(app)
        .fetch_one(admin)
        .await
        .expect("pg_stat_activity")
    }

    /// The listener's backend is terminated; a job enqueued right after is
    /// still claimed well before the 30 s poll (the listener reconnects and
    /// wakes every queue, since notifications were lost meanwhile), and
    /// the next job is woken by a notification on the new connection.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn worker_wakes_after_its_listener_connection_is_terminated() {
        let Some(url) = database_url() else { return };
        let mut l = Listening::start(&url, "reconnect-1").await;

        let old = listener_pid(&l.admin, &l.app, None).await;
        let killed: bool = sqlx::query_scalar("SELECT pg_terminate_backend($1)")
            .bind(old)
            .fetch_one(&l.admin)
            .await
            .expect("terminate");
        assert!(killed, "the listener's backend was terminated");
        claimed_soon(&mut l, b"a", "after the kill").await;

        let new = listener_pid(&l.admin, &l.app, Some(old)).await;
        assert_ne!(new, old, "a new LISTEN connection");
        l.store.short_claims_above(l.seen, WAKE_BOUND).await;
        claimed_soon(&mut l, b"b", "on the new connection").await;
        l.worker.stop().await;
        l.admin.close().await;
    }

    /// Dropping the store (without `close`) ends its `LISTEN` connection
    /// too: the listener task does not outlive the store.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn dropping_the_store_ends_its_listener() {
        let Some(url) = database_url() else { return };
        let l = Listening::start(&url, "drop-1").await;
        let (admin, pid) = (&l.admin, listener_pid(&l.admin, &l.app, None).await);
        l.worker.stop().await;
        drop(l.store);
        let pg = Arc::into_inner(l.pg).expect("the test holds the last handle");
        drop(pg);
        let alive = || async move {
            sqlx::query_scalar("SELECT count(*) FROM pg_stat_activity WHERE pid = $1")
                .bind(pid)
                .fetch_one(admin)
                .await
                .expect("pg_stat_activity")
        };
        until_none("the listener outlived its store", alive).await;
        l.admin.close().await;
    }

    /// Closing the store ends its `LISTEN` connection for good: the backend
    /// leaves `pg_stat_activity` and the listener does not reconnect.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn closing_the_store_ends_its_listener() {
        let Some(url) = database_url() else { return };
        let l = Listening::start(&url, "close-1").await;
        let (admin, app) = (&l.admin, &l.app);
        listener_pid(admin, app, None).await;
        l.worker.stop().await;
        l.pg.inner().close().await;
        until_none("the listener outlived close", || listeners(admin, app)).await;
        // Longer than the listener's first reconnect delay.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let back = listeners(admin, app).await;
        assert_eq!(back, 0, "the listener came back after close");

        // A store closed before any worker asked for wake-ups starts no
        // listener when one asks afterwards.
        let unused = pg_store(&url, Policy::default(), None).await;
        let app = unused.inner().schema().expect("schema").to_string();
        unused.inner().close().await;
        drop(unused.work_available(QUEUE));
        tokio::time::sleep(Duration::from_millis(500)).await;
        let started = listeners(admin, &app).await;
        assert_eq!(started, 0, "a closed store started a listener");
        admin.close().await;
    }
}
