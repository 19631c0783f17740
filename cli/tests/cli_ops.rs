//! The operator's commands (`migrate`, `status`, `list`, `show`, `retry`,
//! `cancel`, `prune`) run as the real binary against real SQLite files and, when
//! `DATABASE_URL` is set (as `scripts/test.sh` and `scripts/with-postgres.sh`
//! do), a real PostgreSQL in a schema of its own. Every bad input exits 2
//! with a message naming the problem, and changes nothing.

use leasehold_core::{
    ClaimRequest, JobId, JobState, ManualStoreClock, Millis, NewJob, Outcome, ReleaseRequest,
    Store, StoreClock, StoreTime, SystemStoreClock, WorkerId,
};
use leasehold_postgres::PgStore;
use leasehold_sqlite::SqliteStore;
use std::path::PathBuf;
use std::process::{Command, Output};

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn leasehold(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_leasehold"))
        .args(args)
        .env_remove("LEASEHOLD_DATABASE_URL")
        .env_remove("DATABASE_URL")
        .output()
        .expect("the binary runs")
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn all(o: &Output) -> String {
    format!("{}{}", out(o), String::from_utf8_lossy(&o.stderr))
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_str(out(o).trim()).unwrap_or_else(|e| panic!("{e}: {}", all(o)))
}

/// One store under test: how the binary names it, and the test's own
/// connection to set it up and look behind the commands.
enum Db {
    Sqlite(PathBuf),
    Postgres { url: String, schema: String },
}

/// The jobs [`Db::seed`] makes, one in each interesting state.
struct Seeded {
    pending: JobId,
    running: JobId,
    succeeded: JobId,
    dead: JobId,
}

impl Db {
    fn sqlite(name: &str) -> Db {
        let dir = std::env::temp_dir().join(format!("leasehold-ops-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Db::Sqlite(dir.join("jobs.db"))
    }

    /// A fresh schema on `DATABASE_URL`, or `None` (skip, loudly).
    fn postgres(name: &str) -> Option<Db> {
        let Ok(url) = std::env::var("DATABASE_URL") else {
            eprintln!("DATABASE_URL is not set: skipping (scripts/test.sh sets it)");
            return None;
        };
        let schema = format!("lh_ops_{name}_{}", std::process::id());
        let db = Db::Postgres { url, schema };
        db.exec(&format!("DROP SCHEMA IF EXISTS {} CASCADE", db.schema()));
        Some(db)
    }

    fn schema(&self) -> &str {
        match self {
            Db::Sqlite(_) => "",
            Db::Postgres { schema, .. } => schema,
        }
    }

    /// The flags naming this store.
    fn args(&self) -> Vec<String> {
        match self {
            Db::Sqlite(p) => vec!["--store-url".into(), format!("sqlite://{}", p.display())],
            Db::Postgres { url, schema } => vec![
                "--store-url".into(),
                url.clone(),
                "--schema".into(),
                schema.clone(),
            ],
        }
    }

    /// Runs `leasehold CMD ARGS… <store flags>`.
    fn run(&self, cmd: &[&str]) -> Output {
        let mut args: Vec<String> = cmd.iter().map(|s| s.to_string()).collect();
        args.extend(self.args());
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        leasehold(&refs)
    }

    /// One SQL statement on the test's own connection.
    fn exec(&self, sql: &str) {
        rt().block_on(async {
            match self {
                Db::Sqlite(p) => {
                    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", p.display()))
                        .await
                        .unwrap();
                    sqlx::query(sql).execute(&pool).await.unwrap();
                    pool.close().await;
                }
                Db::Postgres { url, .. } => {
                    let pool = sqlx::PgPool::connect(url).await.unwrap();
                    sqlx::query(sql).execute(&pool).await.unwrap();
                    pool.close().await;
                }
            }
        })
    }

    /// How many migrations the database records (`None`: no table).
    fn migrations_recorded(&self) -> Option<i64> {
        rt().block_on(async {
            match self {
                Db::Sqlite(p) if !p.exists() => None,
                Db::Sqlite(p) => {
                    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", p.display()))
                        .await
                        .unwrap();
                    let n = sqlx::query_scalar::<_, i64>("SELECT count(*) FROM _sqlx_migrations")
                        .fetch_one(&pool)
                        .await
                        .ok();
                    pool.close().await;
                    n
                }
                Db::Postgres { url, schema } => {
                    let pool = sqlx::PgPool::connect(url).await.unwrap();
                    let n = sqlx::query_scalar::<_, i64>(&format!(
                        "SELECT count(*) FROM {schema}._sqlx_migrations"
                    ))
                    .fetch_one(&pool)
                    .await
                    .ok();
                    pool.close().await;
                    n
                }
            }
        })
    }

    /// Records a migration no binary of this build knows.
    fn add_future_migration(&self) {
        match self {
            Db::Sqlite(_) => self.exec(
                "INSERT INTO _sqlx_migrations (version, description, success, checksum, \
                 execution_time) VALUES (9999, 'from the future', 1, X'00', 0)",
            ),
            Db::Postgres { schema, .. } => self.exec(&format!(
                "INSERT INTO {schema}._sqlx_migrations (version, description, success, \
                 checksum, execution_time) VALUES (9999, 'from the future', true, '\\x00', 0)"
            )),
        }
    }

    /// Runs `f` on the test's own store connection (already migrated).
    fn with_store<T>(&self, f: impl AsyncStoreFn<T>) -> T {
        self.with_store_at(Millis(0), f)
    }

    /// `f` on the store, its clock reading `ago` before the wall clock
    /// (jobs that finished long ago, for `prune`).
    fn with_store_at<T>(&self, ago: Millis, f: impl AsyncStoreFn<T>) -> T {
        let clock = ManualStoreClock::new(StoreTime(SystemStoreClock.now().0 - ago.0 as i64));
        rt().block_on(async {
            match self {
                Db::Sqlite(p) => {
                    let s = SqliteStore::builder(p).clock(clock).open().await.unwrap();
                    let v = f.call(&s).await;
                    s.close().await;
                    v
                }
                Db::Postgres { url, schema } => {
                    let s = PgStore::builder(url.clone())
                        .schema(schema.clone())
                        .clock_override(clock)
                        .connect()
                        .await
                        .unwrap();
                    let v = f.call(&s).await;
                    s.close().await;
                    v
                }
            }
        })
    }

    fn exists(&self, job: JobId) -> bool {
        self.with_store(Exists(job))
    }

    fn state(&self, job: JobId) -> JobState {
        self.with_store(Get(job)).state
    }

    fn seed(&self) -> Seeded {
        self.with_store(Seed(""))
    }
}

/// An async function of any store (a closure cannot be generic).
trait AsyncStoreFn<T> {
    async fn call<S: Store>(self, s: &S) -> T;
}

struct Get(JobId);
impl AsyncStoreFn<leasehold_core::JobRecord> for Get {
    async fn call<S: Store>(self, s: &S) -> leasehold_core::JobRecord {
        s.get(self.0).await.unwrap().expect("the job exists")
    }
}

struct Exists(JobId);
impl AsyncStoreFn<bool> for Exists {
    async fn call<S: Store>(self, s: &S) -> bool {
        s.get(self.0).await.unwrap().is_some()
    }
}

/// Seeds a dead, a succeeded, a running and a pending job, on the queues
/// `mail` and `report` followed by its suffix.
struct Seed(&'static str);
impl AsyncStoreFn<Seeded> for Seed {
    async fn call<S: Store>(self, s: &S) -> Seeded {
        let q = |queue: &str| format!("{queue}{}", self.0);
        let claim = |queue: &str| ClaimRequest {
            worker: WorkerId::new("w1"),
            queue: q(queue),
            lease: Millis(600_000),
            max: 1,
        };
        let dead = s.enqueue(NewJob::new(q("mail"), "to-bob")).await.unwrap();
        let l = s.claim(claim("mail")).await.unwrap().remove(0);
        s.release(ReleaseRequest {
            job: dead,
            token: l.token,
            outcome: Outcome::Failed {
                error: "smtp refused".into(),
                retryable: false,
            },
        })
        .await
        .unwrap();
        let succeeded = s.enqueue(NewJob::new(q("mail"), "to-ann")).await.unwrap();
        let l = s.claim(claim("mail")).await.unwrap().remove(0);
        s.release(ReleaseRequest {
            job: succeeded,
            token: l.token,
            outcome: Outcome::Succeeded(b"sent".to_vec()),
        })
        .await
        .unwrap();
        let running = s.enqueue(NewJob::new(q("report"), "q3")).await.unwrap();
        s.claim(claim("report")).await.unwrap();
        let pending = s.enqueue(NewJob::new(q("mail"), "to-cy")).await.unwrap();
        Seeded {
            pending,
            running,
            succeeded,
            dead,
        }
    }
}

fn exits_2_with(o: &Output, words: &str) {
    assert_eq!(o.status.code(), Some(2), "{}", all(o));
    assert!(all(o).contains(words), "want {words:?} in: {}", all(o));
}

// ---- the flows, run on each store ----

fn migrate_dry_run_then_apply(db: &Db, first_table: &str) {
    let o = db.run(&["migrate", "--dry-run"]);
    assert_eq!(o.status.code(), Some(0), "{}", all(&o));
    assert!(
        out(&o).contains("-- migration 1: leasehold init"),
        "{}",
        all(&o)
    );
    assert!(out(&o).contains(first_table), "{}", all(&o));
    if let Db::Sqlite(p) = db {
        assert!(!p.exists(), "a dry run creates no file");
    }
    assert_eq!(db.migrations_recorded(), None, "a dry run changes nothing");

    let o = db.run(&["migrate"]);
    assert_eq!(o.status.code(), Some(0), "{}", all(&o));
    let known = match db {
        Db::Sqlite(_) => leasehold_sqlite::schema::migrations(),
        Db::Postgres { .. } => leasehold_postgres::schema::migrations(),
    };
    let latest = known.last().unwrap().version;
    assert!(
        out(&o).contains(&format!(
            "schema version {latest} ({} migration(s) applied)",
            known.len()
        )),
        "{}",
        all(&o)
    );
    assert_eq!(db.migrations_recorded(), Some(known.len() as i64));

    let o = db.run(&["migrate"]);
    assert!(out(&o).contains("(0 migration(s) applied)"), "{}", all(&o));
    let o = db.run(&["migrate", "--dry-run"]);
    assert!(
        out(&o).contains(&format!("-- nothing to apply: schema version {latest}")),
        "{}",
        all(&o)
    );
}

fn status_list_show_retry_cancel(db: &Db) {
    assert_eq!(db.run(&["migrate"]).status.code(), Some(0));
    let j = db.seed();

    let o = db.run(&["status", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", all(&o));
    let st = json(&o);
    assert_eq!(st["complete"], true);
    let mail = &st["queues"][0];
    assert_eq!(mail["queue"], "mail");
    assert_eq!(
        (
            &mail["pending"],
            &mail["running"],
            &mail["succeeded"],
            &mail["dead"]
        ),
        (&1.into(), &0.into(), &1.into(), &1.into())
    );
    assert!(mail["oldest_pending_age_ms"].as_i64().unwrap() >= 0);
    let report = &st["queues"][1];
    assert_eq!(
        (&report["queue"], &report["running"]),
        (&"report".into(), &1.into())
    );
    let left = report["nearest_expiry_in_ms"].as_i64().unwrap();
    assert!(left > 0 && left <= 600_000, "{left}");
    let o = db.run(&["status"]);
    assert!(out(&o).contains("oldest pending"), "{}", all(&o));
    assert!(
        out(&o).lines().any(|l| l.starts_with("report")),
        "{}",
        all(&o)
    );

    let o = db.run(&["list", "--state", "dead", "--json"]);
    let dead = json(&o)["jobs"].as_array().unwrap().clone();
    assert_eq!(dead.len(), 1, "{}", all(&o));
    assert_eq!(dead[0]["id"], j.dead.0);
    assert_eq!(dead[0]["error"], "smtp refused");
    let o = db.run(&["list", "--queue", "mail", "--limit", "2", "--json"]);
    let page = json(&o);
    assert_eq!(page["jobs"].as_array().unwrap().len(), 2, "{}", all(&o));
    let next = page["next_after"].as_u64().expect("a next page");
    let o = db.run(&[
        "list",
        "--queue",
        "mail",
        "--after",
        &next.to_string(),
        "--json",
    ]);
    let rest = json(&o);
    assert_eq!(rest["jobs"].as_array().unwrap().len(), 1, "{}", all(&o));
    assert_eq!(rest["jobs"][0]["id"], j.pending.0);
    assert!(rest["next_after"].is_null());
    let o = db.run(&["list"]);
    assert_eq!(
        out(&o).lines().count(),
        5,
        "a header and four jobs: {}",
        all(&o)
    );

    let o = db.run(&["show", &j.succeeded.0.to_string()]);
    assert_eq!(o.status.code(), Some(0), "{}", all(&o));
    assert!(out(&o).contains("result sent"), "{}", all(&o));
    let o = db.run(&["show", &format!("job-{}", j.dead.0), "--json"]);
    let shown = json(&o);
    assert_eq!(shown["job"]["state"], "dead");
    let kinds: Vec<&str> = shown["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"]["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["enqueued", "claimed", "released"]);

    let o = db.run(&["retry", &j.dead.0.to_string()]);
    assert_eq!(o.status.code(), Some(0), "{}", all(&o));
    assert!(out(&o).contains("retried"), "{}", all(&o));
    let row = db.with_store(Get(j.dead));
    assert_eq!((row.state, row.attempt), (JobState::Pending, 0));
    let o = db.run(&["show", &j.dead.0.to_string()]);
    assert!(out(&o).contains("dead -> pending"), "{}", all(&o));
    assert!(
        out(&o).contains("\"type\":\"retried\""),
        "the audit records it: {}",
        all(&o)
    );

    // A retry of a job that is not dead is refused and changes nothing.
    let before = db.with_store(Get(j.succeeded));
    exits_2_with(&db.run(&["retry", &j.succeeded.0.to_string()]), "not dead");
    assert_eq!(db.with_store(Get(j.succeeded)), before);

    let o = db.run(&["cancel", &j.pending.0.to_string()]);
    assert_eq!(o.status.code(), Some(0), "{}", all(&o));
    assert!(out(&o).contains("cancelled"), "{}", all(&o));
    assert_eq!(db.state(j.pending), JobState::Cancelled);
    let o = db.run(&["cancel", &j.running.0.to_string()]);
    assert!(out(&o).contains("cancel requested"), "{}", all(&o));
    assert!(db.with_store(Get(j.running)).cancel_requested);
    let o = db.run(&["cancel", &j.succeeded.0.to_string()]);
    assert_eq!(o.status.code(), Some(0), "{}", all(&o));
    assert!(out(&o).contains("already succeeded"), "{}", all(&o));
    assert_eq!(db.with_store(Get(j.succeeded)), before);
}

fn an_unknown_job_exits_2(db: &Db) {
    assert_eq!(db.run(&["migrate"]).status.code(), Some(0));
    let j = db.seed();
    for cmd in ["show", "retry", "cancel"] {
        exits_2_with(&db.run(&[cmd, "424242"]), "unknown job job-424242");
    }
    assert_eq!(db.state(j.dead), JobState::Dead);
    assert_eq!(db.state(j.pending), JobState::Pending);
    exits_2_with(&db.run(&["show", "nope"]), "not a job id");
}

fn prune_deletes_only_jobs_finished_before_the_retention(db: &Db) {
    assert_eq!(db.run(&["migrate"]).status.code(), Some(0));
    // Four jobs settled 10 minutes ago on the store's clock, four now.
    let old = db.with_store_at(Millis(600_000), Seed(""));
    let new = db.with_store(Seed("-new"));
    exits_2_with(&db.run(&["prune", "--older-than", "1s"]), "retention");
    exits_2_with(
        &db.run(&["prune", "--older-than", "5m", "--batch", "0"]),
        "--batch",
    );
    exits_2_with(
        &db.run(&["prune", "--older-than", "5m", "--audit-older-than", "1m"]),
        "prune",
    );
    exits_2_with(&db.run(&["prune", "--older-than", "soon"]), "soon");
    assert!(
        db.exists(old.dead) && db.exists(old.succeeded),
        "bad input pruned"
    );

    // One job a round: the two old finished jobs take two full rounds and
    // an empty third.
    let o = db.run(&["prune", "--older-than", "5m", "--batch", "1"]);
    assert_eq!(o.status.code(), Some(0), "{}", all(&o));
    assert!(out(&o).contains("pruned 2 jobs"), "{}", all(&o));
    assert!(!db.exists(old.dead) && !db.exists(old.succeeded));
    for kept in [
        old.pending,
        old.running,
        new.dead,
        new.succeeded,
        new.pending,
    ] {
        assert!(db.exists(kept), "{kept} was pruned");
    }
    assert_eq!(db.state(old.running), JobState::Running);
    exits_2_with(&db.run(&["show", &old.dead.0.to_string()]), "unknown job");

    // Bounded: one round of one job stops and says more may be left.
    let again = db.with_store_at(Millis(600_000), Seed("-again"));
    let o = db.run(&[
        "prune",
        "--older-than",
        "5m",
        "--batch",
        "1",
        "--max-rounds",
        "1",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", all(&o));
    assert!(out(&o).contains("more may be left"), "{}", all(&o));
    assert_eq!(
        [again.dead, again.succeeded]
            .iter()
            .filter(|j| db.exists(**j))
            .count(),
        1
    );
}

fn a_database_without_the_schema_exits_2(db: &Db) {
    // The database exists, leasehold's schema does not.
    if let Db::Sqlite(p) = db {
        rt().block_on(async {
            let s = SqliteStore::builder(p).open().await.unwrap();
            s.close().await;
        });
    }
    for cmd in [
        &["status"][..],
        &["list"],
        &["show", "1"],
        &["retry", "1"],
        &["cancel", "1"],
        &["prune", "--older-than", "5m"],
    ] {
        exits_2_with(
            &db.run(cmd),
            "no leasehold schema (run `leasehold migrate`)",
        );
    }
    assert_eq!(db.migrations_recorded(), None, "nothing was created");
}

fn a_schema_newer_than_the_binary_exits_2(db: &Db) {
    assert_eq!(db.run(&["migrate"]).status.code(), Some(0));
    let j = db.seed();
    db.add_future_migration();
    let recorded = db.migrations_recorded();
    for cmd in [
        &["status"][..],
        &["list"],
        &["show", "1"],
        &["cancel", &j.pending.0.to_string()],
        &["retry", &j.dead.0.to_string()],
        &["prune", "--older-than", "1m"],
        &["migrate"],
        &["migrate", "--dry-run"],
    ] {
        exits_2_with(&db.run(cmd), "newer than this binary");
    }
    assert_eq!(
        db.migrations_recorded(),
        recorded,
        "migrate changed nothing"
    );
    assert_eq!(db.state(j.dead), JobState::Dead);
    assert_eq!(db.state(j.pending), JobState::Pending);
}

// ---- Both stores ----

/// Each case as two tests: on a SQLite file and on a PostgreSQL schema
/// ([`on_postgres`]), each named for the case (`$name`).
macro_rules! on_both_stores {
    ($($sqlite:ident, $postgres:ident: $name:literal => $case:expr;)*) => {$(
        #[test]
        fn $sqlite() {
            ($case)(&Db::sqlite($name));
        }

        #[test]
        fn $postgres() {
            on_postgres($name, $case);
        }
    )*};
}

on_both_stores! {
    sqlite_migrate_prints_its_sql_on_a_dry_run_then_applies_it,
    postgres_migrate_prints_its_sql_on_a_dry_run_then_applies_it: "migrate" =>
        |db: &Db| migrate_dry_run_then_apply(db, "CREATE TABLE leasehold_jobs");
    sqlite_status_list_show_retry_and_cancel,
    postgres_status_list_show_retry_and_cancel: "flow" => status_list_show_retry_cancel;
    sqlite_prune_deletes_only_jobs_finished_before_the_retention,
    postgres_prune_deletes_only_jobs_finished_before_the_retention: "prune" =>
        prune_deletes_only_jobs_finished_before_the_retention;
    sqlite_an_unknown_job_exits_2_and_changes_nothing,
    postgres_an_unknown_job_exits_2_and_changes_nothing: "unknown" => an_unknown_job_exits_2;
    sqlite_a_schema_newer_than_the_binary_exits_2_and_changes_nothing,
    postgres_a_schema_newer_than_the_binary_exits_2_and_changes_nothing: "newer" =>
        a_schema_newer_than_the_binary_exits_2;
}

// ---- SQLite ----

#[test]
fn sqlite_a_file_without_the_schema_exits_2() {
    a_database_without_the_schema_exits_2(&Db::sqlite("noschema"));
}

#[test]
fn sqlite_a_missing_file_exits_2_and_is_not_created() {
    let Db::Sqlite(p) = Db::sqlite("missing") else {
        unreachable!()
    };
    let url = p.display().to_string();
    for cmd in ["status", "list"] {
        exits_2_with(
            &leasehold(&[cmd, "--store-url", &url]),
            "no SQLite database at",
        );
    }
    exits_2_with(
        &leasehold(&["retry", "1", "--store-url", &url]),
        "no SQLite database at",
    );
    assert!(
        !p.exists(),
        "never created by a command that reads or changes jobs"
    );
}

#[test]
fn a_file_that_is_not_a_database_exits_2_and_is_left_alone() {
    let Db::Sqlite(p) = Db::sqlite("notdb") else {
        unreachable!()
    };
    std::fs::write(
        &p,
        "these are not the rows you are looking for\n".repeat(200),
    )
    .unwrap();
    let before = std::fs::read(&p).unwrap();
    let o = leasehold(&["status", "--store-url", &p.display().to_string()]);
    assert_eq!(o.status.code(), Some(2), "{}", all(&o));
    assert!(all(&o).contains("leasehold: "), "{}", all(&o));
    assert_eq!(std::fs::read(&p).unwrap(), before);
}

// ---- URLs, whatever the store ----

#[test]
fn a_missing_or_unsupported_url_exits_2_naming_the_problem() {
    exits_2_with(&leasehold(&["status"]), "pass --store-url URL");
    exits_2_with(
        &leasehold(&["status", "--store-url", "mysql://db/jobs"]),
        "unsupported store URL scheme \"mysql\"",
    );
    exits_2_with(
        &leasehold(&["status", "--store-url", "jobs.db", "--schema", "x"]),
        "--schema is for PostgreSQL",
    );
    exits_2_with(
        &leasehold(&["list", "--state", "lost", "--store-url", "x.db"]),
        "is not a state",
    );
    exits_2_with(
        &leasehold(&["list", "--limit", "100000", "--store-url", "x.db"]),
        "100000",
    );
}

#[test]
fn an_unreachable_postgres_exits_2_without_its_password() {
    let o = leasehold(&[
        "status",
        "--store-url",
        "postgres://nobody:secret@127.0.0.1:1/none",
    ]);
    exits_2_with(
        &o,
        "cannot reach the database at postgres://nobody:***@127.0.0.1:1/none",
    );
    assert!(!all(&o).contains("secret"), "{}", all(&o));
}

#[test]
fn the_env_var_names_the_store_when_no_flag_does() {
    let Db::Sqlite(p) = Db::sqlite("env") else {
        unreachable!()
    };
    let o = Command::new(env!("CARGO_BIN_EXE_leasehold"))
        .args(["migrate"])
        .env(
            "LEASEHOLD_DATABASE_URL",
            format!("sqlite://{}", p.display()),
        )
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", all(&o));
    assert!(p.exists());
}

// ---- PostgreSQL ----

/// Runs `case` on a fresh schema named for it, then drops the schema,
/// which must exist by then; skipped without `DATABASE_URL`.
fn on_postgres(name: &str, case: impl FnOnce(&Db)) {
    if let Some(db) = Db::postgres(name) {
        case(&db);
        db.exec(&format!("DROP SCHEMA {} CASCADE", db.schema()));
    }
}

#[test]
fn postgres_a_database_without_the_schema_exits_2() {
    if let Some(db) = Db::postgres("noschema") {
        a_database_without_the_schema_exits_2(&db);
        db.exec(&format!("DROP SCHEMA IF EXISTS {} CASCADE", db.schema()));
    }
}
