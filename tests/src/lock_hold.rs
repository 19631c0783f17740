//! The common end of [`crate::write_lock`] and [`crate::table_lock`]: a
//! call started while another session holds a lock, the lock let go once
//! its hold has passed, and whether the call answered only after that.

use std::future::Future;
use std::time::{Duration, Instant};

/// Starts `call`, waits until `hold` has passed since `held_at`, runs
/// `let_go`, and returns `call`'s output with whether it answered only
/// after `let_go` began.
pub(crate) async fn answered_after_release<T: Send + 'static>(
    call: impl Future<Output = T> + Send + 'static,
    held_at: Instant,
    hold: Duration,
    let_go: impl Future<Output = ()>,
) -> (T, bool) {
    let task = tokio::spawn(async move {
        let got = call.await;
        (got, Instant::now())
    });
    tokio::time::sleep(hold.saturating_sub(held_at.elapsed())).await;
    let released_at = Instant::now();
    let_go.await;
    let (got, answered_at) = task.await.expect("the call's task");
    (got, answered_at >= released_at)
}
