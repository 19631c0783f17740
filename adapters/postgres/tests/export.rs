//! `leasehold-export` writes the audit log as JSONL that parses back into the
//! same events, in order.

use leasehold_core::*;
use leasehold_postgres::PgStore;
use std::process::Command;

#[tokio::test]
async fn export_writes_every_audit_event_as_one_json_line() {
    let Ok(url) = std::env::var("DATABASE_URL") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must provide DATABASE_URL (scripts/with-postgres.sh)"
        );
        eprintln!("SKIP export_writes_every_audit_event_as_one_json_line: DATABASE_URL is not set");
        return;
    };
    let schema = format!("export_test_{}", std::process::id());
    let store = PgStore::builder(url.clone())
        .schema(schema.clone())
        .connect()
        .await
        .unwrap();
    store.migrate().await.unwrap();
    let job = store
        .enqueue(NewJob::new("q", b"p".to_vec()))
        .await
        .unwrap();
    let leases = store
        .claim(ClaimRequest {
            worker: WorkerId::new("w"),
            queue: "q".into(),
            lease: Millis(60_000),
            max: 1,
        })
        .await
        .unwrap();
    let token = leases[0].token;
    let release = ReleaseRequest {
        job,
        token,
        outcome: Outcome::Succeeded(b"r".to_vec()),
    };
    assert_eq!(store.release(release).await.unwrap(), Release::Committed);
    let expected = store.events().await.unwrap();

    let out = Command::new(env!("CARGO_BIN_EXE_leasehold-export"))
        .args(["--database-url", &url, "--schema", &schema])
        .output()
        .unwrap();
    let pool = sqlx::PgPool::connect(&url).await.unwrap();
    let drop_schema = format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE");
    sqlx::query(&drop_schema).execute(&pool).await.unwrap();

    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let events: Vec<Event> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events.len(), 3, "enqueue, claim, release");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("leasehold-export: 3 events"),
        "the count it reports: {stderr}"
    );
    assert_eq!(events, expected);
    assert!(
        matches!(&events[2].kind, EventKind::Released { outcome: Outcome::Succeeded(r), .. } if r == b"r")
    );
}

#[test]
fn export_without_a_database_is_a_usage_error() {
    let stderr = usage_error(
        Command::new(env!("CARGO_BIN_EXE_leasehold-export")).env_remove("DATABASE_URL"),
    );
    assert!(stderr.contains("--database-url"), "{stderr}");
}

/// The usage line every argument error ends with, and `--help` prints.
const USAGE: &str = "usage: leasehold-export [--database-url URL] [--schema NAME]";

/// Runs `cmd` (the export binary), which must stop with a usage error:
/// exit code 2 and the usage line on stderr. Its stderr.
fn usage_error(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(stderr.contains(USAGE), "{stderr}");
    stderr
}

#[test]
fn export_help_prints_the_usage_and_succeeds() {
    for flag in ["--help", "-h"] {
        let out = Command::new(env!("CARGO_BIN_EXE_leasehold-export"))
            .arg(flag)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{flag}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.starts_with(USAGE), "{flag}: {stdout}");
    }
}

#[test]
fn export_with_an_unknown_argument_names_it_and_shows_the_usage() {
    let stderr = usage_error(Command::new(env!("CARGO_BIN_EXE_leasehold-export")).args([
        "--database-url",
        "postgres://nowhere/db",
        "--shema",
        "x",
    ]));
    assert!(stderr.contains("unknown argument \"--shema\""), "{stderr}");
}
