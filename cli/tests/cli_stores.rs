//! `--store` and `--against` as a user meets them: bad setups exit 2 with a
//! clear message, SQLite runs and agrees with memory, and PostgreSQL (when
//! `DATABASE_URL` is set, as the test script does) refuses a schema that
//! already holds data.

mod cli_support;

use cli_support::{all, database_url, exits, leasehold, leasehold_env};
use std::process::Output;

const SCENARIO: &str = "scenarios/worker_crash_mid_job_is_reclaimed_once.toml";

#[test]
fn postgres_without_a_database_url_exits_2_and_says_how_to_give_one() {
    let o = leasehold(&["run", SCENARIO, "--store", "postgres", "--seeds", "1"]);
    let t = exits(&o, 2);
    assert!(t.contains("--database-url"), "{t}");
}

#[test]
fn an_unreachable_database_exits_2_without_running_seeds() {
    let url = "postgres://nobody:secret@127.0.0.1:1/none";
    let postgres = ["--store", "postgres", "--database-url", url];
    let o = leasehold(&[&["run", SCENARIO, "--seeds", "1"][..], &postgres].concat());
    let t = exits(&o, 2);
    assert!(t.contains("cannot reach the database"), "{t}");
    assert!(!t.contains("secret"), "passwords stay out of messages: {t}");
    assert!(!t.contains("passed"), "{t}");
}

#[test]
fn a_bad_store_name_exits_2() {
    exits(&leasehold(&["run", SCENARIO, "--store", "oracle"]), 2);
}

#[test]
fn sqlite_runs_the_same_answers_as_memory_and_prints_store_replays() {
    let scenario = "scenarios/store_crash_and_restart_loses_no_committed_result.toml";
    let against = ["--store", "sqlite", "--against", "memory"];
    let o = leasehold(&[&["run", scenario, "--seeds", "2"][..], &against].concat());
    let t = exits(&o, 0);
    assert!(t.contains("2 passed, 0 failed"), "{t}");
    let replay = ["replay", scenario, "--seed", "1", "--hash"];
    let a = leasehold(&[&replay[..], &["--store", "sqlite"]].concat());
    let b = leasehold(&replay);
    let hash = |o: &Output| {
        all(o)
            .lines()
            .find(|l| l.starts_with("history hash"))
            .map(str::to_string)
    };
    assert!(hash(&a).is_some(), "{}", all(&a));
    assert_eq!(
        hash(&a),
        hash(&b),
        "sqlite and memory histories are byte-identical"
    );
}

/// The options that reorder or fail single batch parts reach only a store
/// with a part gate (memory): compared with SQLite, whose batch is one
/// transaction, both runs get the same inputs (`--compared`), so the
/// answers must agree; run alone, memory still draws them.
#[test]
fn part_options_reach_neither_side_of_a_differential_run_with_sqlite() {
    let scenarios = [
        "scenarios/batch_parts_finishing_in_a_drawn_order_keep_each_answer_with_its_request.toml",
        "scenarios/conflicts_on_every_write_are_retried_and_apply_nothing.toml",
    ];
    let against = ["--store", "sqlite", "--against", "memory", "--seeds", "2"];
    let o = leasehold(&[&["run"][..], &scenarios, &against].concat());
    let t = exits(&o, 0);
    assert!(t.contains("4 passed, 0 failed"), "{t}");
    let replay = ["replay", scenarios[0], "--seed", "0", "--hash"];
    let hash = |o: &Output| {
        all(o)
            .lines()
            .find(|l| l.starts_with("history hash"))
            .map(str::to_string)
    };
    let (sqlite, memory, compared) = (
        hash(&leasehold(&[&replay[..], &["--store", "sqlite"]].concat())),
        hash(&leasehold(&replay)),
        hash(&leasehold(&[&replay[..], &["--compared"]].concat())),
    );
    assert!(sqlite.is_some() && memory.is_some());
    assert_ne!(sqlite, memory, "run alone, memory draws the part order");
    assert_eq!(sqlite, compared, "compared, the two histories are the same");
}

#[test]
fn memory_only_catalogue_bugs_are_skipped_on_sqlite_with_a_note() {
    let memory_only = "scenarios/catalogue/claim_without_cas_grants_one_lease_twice.toml";
    let both = "scenarios/catalogue/fixed_lock_no_heartbeat_runs_a_job_twice_at_once.toml";
    // A store-side bug the SQL stores carry: run, not skipped.
    let carried = "scenarios/catalogue/prune_ignores_retention_loses_a_committed_result.toml";
    let o = leasehold(&["run", memory_only, both, carried, "--store", "sqlite"]);
    let t = all(&o);
    assert!(t.contains("skipped 1 catalogue scenarios"), "{t}");
    assert!(
        t.contains("claim_without_cas_grants_one_lease_twice"),
        "{t}"
    );
    assert!(t.contains("caught fixed-lock-no-heartbeat"), "{t}");
    assert!(t.contains("caught prune-ignores-retention"), "{t}");
    exits(&o, 0);
}

#[test]
fn postgres_refuses_a_schema_that_already_holds_data() {
    let Some(url) = database_url() else { return };
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
    let postgres = ["--store", "postgres", "--pg-schema-prefix", &prefix];
    let args = [&["run", SCENARIO, "--seeds", "1"][..], &postgres].concat();
    let o = leasehold_env(&args, &[("DATABASE_URL", &url)]);
    let still: i64 = rt
        .block_on(
            sqlx::query_scalar(&format!("SELECT count(*) FROM {schema}.precious")).fetch_one(&pool),
        )
        .unwrap();
    rt.block_on(sqlx::query(&format!("DROP SCHEMA {schema} CASCADE")).execute(&pool))
        .unwrap();
    let t = exits(&o, 2);
    assert!(t.contains("already exists"), "{t}");
    assert_eq!(still, 1, "the simulator never touches data it did not make");
}
