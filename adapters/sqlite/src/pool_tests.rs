//! The store's two pools hand out connections without a ping first
//! (`SqliteStore`'s builder says why): a ping is a round trip to the
//! connection's thread on every operation, and the simulator's SQLite
//! seeds ran 1.10x faster without it (`docs/PERFORMANCE.md`).

use crate::SqliteStore;
use leasehold_core::{NewJob, Policy, Store};

#[tokio::test]
async fn neither_pool_pings_a_connection_before_handing_it_out() {
    let dir = crate::close_tests::temp_dir("pools");
    let store = SqliteStore::open(&dir.join("jobs.db"), Policy::default())
        .await
        .expect("open");
    assert!(
        !store.pool().options().get_test_before_acquire(),
        "the read pool pings before each acquire"
    );
    assert!(
        !store.write_pool().options().get_test_before_acquire(),
        "the write pool pings before each acquire"
    );
    // Connections handed out unpinged still serve every operation: more
    // acquires than either pool has connections, reads and writes.
    for i in 0..12u8 {
        store
            .enqueue(NewJob::new("q", vec![i]))
            .await
            .expect("enqueue");
    }
    let counts = store.count_jobs().await.expect("count");
    let pending: u64 = counts.queues.iter().map(|q| q.by_state.pending).sum();
    assert_eq!(pending, 12, "{counts:?}");
    store.close().await;
    let _ = std::fs::remove_dir_all(&dir);
}
