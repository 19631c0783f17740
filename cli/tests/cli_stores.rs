//! `--store` and `--against` as a user meets them: bad setups exit 2 with a
//! clear message, SQLite runs and agrees with memory, and PostgreSQL (when
//! `DATABASE_URL` is set, as the test script does) refuses a schema that
//! already holds data.

use std::path::PathBuf;
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn leasehold(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_leasehold"));
    c.current_dir(root()).args(args).env_remove("DATABASE_URL");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("the binary runs")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

const SCENARIO: &str = "scenarios/worker_crash_mid_job_is_reclaimed_once.toml";

#[test]
fn postgres_without_a_database_url_exits_2_and_says_how_to_give_one() {
    let o = leasehold(
        &["run", SCENARIO, "--store", "postgres", "--seeds", "1"],
        &[],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--database-url"), "{}", text(&o));
}

#[test]
fn an_unreachable_database_exits_2_without_running_seeds() {
    let o = leasehold(
        &[
            "run",
            SCENARIO,
            "--store",
            "postgres",
            "--seeds",
            "1",
            "--database-url",
            "postgres://nobody:secret@127.0.0.1:1/none",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains("cannot reach the database"), "{t}");
    assert!(!t.contains("secret"), "passwords stay out of messages: {t}");
    assert!(!t.contains("passed"), "{t}");
}

#[test]
fn a_bad_store_name_exits_2() {
    let o = leasehold(&["run", SCENARIO, "--store", "oracle"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

#[test]
fn sqlite_runs_the_same_answers_as_memory_and_prints_store_replays() {
    let o = leasehold(
        &[
            "run",
            "scenarios/store_crash_and_restart_loses_no_committed_result.toml",
            "--store",
            "sqlite",
            "--against",
            "memory",
            "--seeds",
            "2",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("2 passed, 0 failed"), "{}", text(&o));
    let a = leasehold(
        &[
            "replay",
            "scenarios/store_crash_and_restart_loses_no_committed_result.toml",
            "--seed",
            "1",
            "--store",
            "sqlite",
            "--hash",
        ],
        &[],
    );
    let b = leasehold(
        &[
            "replay",
            "scenarios/store_crash_and_restart_loses_no_committed_result.toml",
            "--seed",
            "1",
            "--hash",
        ],
        &[],
    );
    let hash = |o: &Output| {
        text(o)
            .lines()
            .find(|l| l.starts_with("history hash"))
            .map(str::to_string)
    };
    assert!(hash(&a).is_some(), "{}", text(&a));
    assert_eq!(
        hash(&a),
        hash(&b),
        "sqlite and memory histories are byte-identical"
    );
}

#[test]
fn memory_only_catalogue_bugs_are_skipped_on_sqlite_with_a_note() {
    let o = leasehold(
        &[
            "run",
            "scenarios/catalogue/claim_without_cas_grants_one_lease_twice.toml",
            "scenarios/catalogue/fixed_lock_no_heartbeat_runs_a_job_twice_at_once.toml",
            "--store",
            "sqlite",
        ],
        &[],
    );
    let t = text(&o);
    assert!(t.contains("skipped 1 catalogue scenarios"), "{t}");
    assert!(t.contains("caught fixed-lock-no-heartbeat"), "{t}");
    assert_eq!(o.status.code(), Some(0), "{t}");
}

#[test]
fn postgres_refuses_a_schema_that_already_holds_data() {
    let Ok(url) = std::env::var("DATABASE_URL") else {
        eprintln!("DATABASE_URL is not set: skipping (scripts/test.sh sets it)");
        return;
    };
    let prefix = format!("lh_cli_taken_{}", std::process::id());
    let schema = format!("{prefix}_0");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let pool = rt
        .block_on(sqlx::PgPool::connect(&url))
        .expect("the test database answers");
    for q in [
        format!("CREATE SCHEMA IF NOT EXISTS {schema}"),
        format!("CREATE TABLE IF NOT EXISTS {schema}.precious (x int)"),
        format!("INSERT INTO {schema}.precious VALUES (1)"),
    ] {
        rt.block_on(sqlx::query(&q).execute(&pool)).unwrap();
    }
    let o = leasehold(
        &[
            "run",
            SCENARIO,
            "--store",
            "postgres",
            "--seeds",
            "1",
            "--pg-schema-prefix",
            &prefix,
        ],
        &[("DATABASE_URL", &url)],
    );
    let still: i64 = rt
        .block_on(
            sqlx::query_scalar(&format!("SELECT count(*) FROM {schema}.precious")).fetch_one(&pool),
        )
        .unwrap();
    rt.block_on(sqlx::query(&format!("DROP SCHEMA {schema} CASCADE")).execute(&pool))
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("already exists"), "{}", text(&o));
    assert_eq!(still, 1, "the simulator never touches data it did not make");
}
