//! `SqliteStore::close`: after it, the store takes no more work, and the
//! file is left clean (its write-ahead log checkpointed and removed).

use crate::SqliteStore;
use leasehold_core::{NewJob, Policy, Store};

#[tokio::test]
async fn a_closed_store_refuses_work_and_leaves_no_write_ahead_log() {
    let dir = std::env::temp_dir().join(format!(
        "leasehold-sqlite-close-{}-{:?}",
        std::process::id(),
        std::time::SystemTime::now()
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let db = dir.join("jobs.db");
    let store = SqliteStore::open(&db, Policy::default())
        .await
        .expect("open");
    store
        .enqueue(NewJob::new("q", b"x".to_vec()))
        .await
        .expect("enqueue");
    let wal = dir.join("jobs.db-wal");
    assert!(wal.exists(), "a write before close left no WAL at {wal:?}");
    store.close().await;
    let after = store.enqueue(NewJob::new("q", b"y".to_vec())).await;
    assert!(after.is_err(), "a closed store took a job: {after:?}");
    assert!(!wal.exists(), "the WAL outlived close");
    std::fs::remove_dir_all(&dir).expect("remove temp dir");
}
