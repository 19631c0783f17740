//! Each seed of a SQL store gets a database of its own: two seeds of one
//! factory, open at once, start empty and never see each other's jobs; a
//! restart reopens a seed's own data; destroying them leaves nothing. Real
//! SQLite files and (with `DATABASE_URL`) the real PostgreSQL.

use leasehold_core::{JobId, NewJob, Store};
use leasehold_sim::runner::Backend;
use leasehold_sim::stores::driver::ready_now;
use leasehold_sim::stores::{PostgresFactory, SeedContext, SimStore, SqliteFactory, StoreFactory};
use std::sync::Arc;

fn ctx(seed: u64) -> SeedContext {
    SeedContext {
        scenario: "isolation".into(),
        seed,
        policy: leasehold_core::Policy::default(),
        variant: None,
        interleave: false,
        differential: false,
    }
}

fn enqueue<F: StoreFactory>(b: &Backend<F>, payload: &'static str) -> JobId {
    let s = ready_now(b.open()).expect("in place").expect("opens");
    b.block_on(async move { s.enqueue(NewJob::new("q", payload)).await })
        .expect("driver")
        .expect("enqueued")
}

fn payload<F: StoreFactory>(b: &Backend<F>, id: JobId) -> Option<Vec<u8>> {
    let s = b.current().expect("open");
    b.block_on(async move { s.get(id).await })
        .expect("driver")
        .expect("read")
        .map(|r| r.payload)
}

fn events<F: StoreFactory>(b: &Backend<F>) -> usize {
    let s = ready_now(b.open()).expect("in place").expect("opens");
    b.block_on(async move { s.audit_log().await })
        .expect("driver")
        .expect("read")
        .map_or(0, |e| e.len())
}

/// Two seeds of one factory side by side: each starts with no job and no
/// audit row, each numbers its jobs from the start, neither sees the
/// other's, and a crash and restart of one reopens its own data.
fn two_seeds_apart<F: StoreFactory>(factory: F) -> (Backend<F>, Backend<F>) {
    let f = Arc::new(factory);
    let a = Backend::create(f.clone(), ctx(1)).expect("seed 1's database");
    let b = Backend::create(f, ctx(2)).expect("seed 2's database");
    assert_eq!(events(&a), 0, "a fresh database has no audit rows");
    assert_eq!(events(&b), 0, "a fresh database has no audit rows");
    let in_a = enqueue(&a, "a");
    let in_b = enqueue(&b, "b");
    assert_eq!(in_a, in_b, "each database numbers its jobs from the start");
    assert_eq!(payload(&a, in_a), Some(b"a".to_vec()));
    assert_eq!(
        payload(&b, in_b),
        Some(b"b".to_vec()),
        "b never sees a's job"
    );
    a.close();
    ready_now(a.open()).expect("in place").expect("reopens");
    assert_eq!(
        payload(&a, in_a),
        Some(b"a".to_vec()),
        "a restart reopens the seed's own database"
    );
    assert_eq!(events(&a), 1, "seed 1 holds its one enqueue, no more");
    assert_eq!(events(&b), 1, "seed 2 holds its one enqueue, no more");
    (a, b)
}

#[test]
fn sqlite_seeds_get_databases_of_their_own_and_leave_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = two_seeds_apart(SqliteFactory::new(Some(dir.path().into())));
    let names = || -> Vec<String> {
        let mut n: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        n.sort();
        n
    };
    let live = names();
    let templates = live
        .iter()
        .filter(|n| n.starts_with("leasehold-sim-template-"))
        .count();
    assert_eq!(
        (live.len(), templates),
        (3, 1),
        "one database directory per live seed, and the factory's one template: {live:?}"
    );
    a.destroy();
    b.destroy();
    assert_eq!(
        names().len(),
        1,
        "destroy removes each seed's database; the template stays with its factory"
    );
    drop((a, b));
    assert_eq!(
        names(),
        Vec::<String>::new(),
        "the factory's end removes its template"
    );
}

#[test]
fn postgres_seeds_get_schemas_of_their_own_and_leave_nothing() {
    let Ok(url) = std::env::var("DATABASE_URL") else {
        eprintln!("DATABASE_URL is not set: skipping (scripts/test.sh sets it)");
        return;
    };
    let prefix = format!("lh_isolation_{}", std::process::id());
    let f = PostgresFactory::new(url.clone(), Some(prefix.clone())).unwrap();
    let (a, b) = two_seeds_apart(f);
    let s = a.current().expect("open");
    let sync: String = a
        .block_on(async move {
            sqlx::query_scalar("SHOW synchronous_commit")
                .fetch_one(s.pool())
                .await
        })
        .expect("driver")
        .expect("asked");
    assert_eq!(
        sync, "off",
        "simulator sessions do not wait for the WAL flush"
    );
    let schemas = {
        let (url, prefix) = (url.clone(), prefix.clone());
        move || -> i64 {
            let (url, prefix) = (url.clone(), prefix.clone());
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(async move {
                    let pool = sqlx::PgPool::connect(&url).await.unwrap();
                    let n = sqlx::query_scalar(
                        "SELECT count(*) FROM information_schema.schemata \
                         WHERE schema_name LIKE $1",
                    )
                    .bind(format!("{prefix}\\_%"))
                    .fetch_one(&pool)
                    .await
                    .unwrap();
                    pool.close().await;
                    n
                })
        }
    };
    assert_eq!(schemas(), 2, "one schema per live seed");
    a.destroy();
    b.destroy();
    assert_eq!(schemas(), 0, "destroy drops each seed's schema");
}
