//! The server's backends of one store, for tests that `close` leaves none.

use std::time::{Duration, Instant};

/// Longest a closed connection's backend may linger: it leaves within
/// milliseconds.
pub const GONE_BOUND: Duration = Duration::from_secs(5);

/// Backends of one application name on the server.
pub async fn backends(admin: &sqlx::PgPool, app: &str) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1")
        .bind(app)
        .fetch_one(admin)
        .await
        .expect("pg_stat_activity")
}

/// Waits until no backend of `app` is left, failing the test (naming
/// `what`) if one outlives [`GONE_BOUND`].
pub async fn assert_all_gone(admin: &sqlx::PgPool, app: &str, what: &str) {
    let t = Instant::now();
    while backends(admin, app).await > 0 {
        assert!(
            t.elapsed() < GONE_BOUND,
            "{what}: a backend outlived close by {GONE_BOUND:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
