//! Runs independent work items on a fixed number of threads.
//!
//! Each item (one scenario × one seed) runs whole on one thread; a seed's
//! simulation is single-threaded and deterministic, so threads exist only
//! at this outer level and cannot change any result. Results come back in
//! item order whatever the scheduling.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

/// Runs `work` on every item with up to `jobs` threads, calling `on_done`
/// on the calling thread as each finishes (for progress output). A panic
/// inside `work` becomes `Err(message)` for that item instead of tearing
/// the run down.
pub fn run_parallel<T, R, W, D>(
    items: &[T],
    jobs: usize,
    work: W,
    mut on_done: D,
) -> Vec<Result<R, String>>
where
    T: Sync,
    R: Send,
    W: Fn(&T) -> R + Sync,
    D: FnMut(usize, &Result<R, String>),
{
    let jobs = jobs.clamp(1, items.len().max(1));
    let next = AtomicUsize::new(0);
    let mut out: Vec<Option<Result<R, String>>> = (0..items.len()).map(|_| None).collect();
    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::channel::<(usize, Result<R, String>)>();
        for _ in 0..jobs {
            let tx = tx.clone();
            let (next, work) = (&next, &work);
            scope.spawn(move || {
                // Each pass takes one item; there are finitely many.
                for _ in 0..items.len() {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(i) else { break };
                    let r = catch_unwind(AssertUnwindSafe(|| work(item))).map_err(panic_text);
                    if tx.send((i, r)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        for (i, r) in rx.iter().take(items.len()) {
            on_done(i, &r);
            out[i] = Some(r);
        }
    });
    out.into_iter()
        .map(|r| r.unwrap_or_else(|| Err("worker thread lost the result".into())))
        .collect()
}

fn panic_text(p: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        format!("panicked: {s}")
    } else if let Some(s) = p.downcast_ref::<String>() {
        format!("panicked: {s}")
    } else {
        "panicked".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_back_in_item_order() {
        let items: Vec<u64> = (0..100).collect();
        let mut seen = 0;
        let out = run_parallel(&items, 4, |x| x * 2, |_, _| seen += 1);
        assert_eq!(seen, 100);
        let values: Vec<u64> = out.into_iter().map(Result::unwrap).collect();
        assert_eq!(values, (0..100).map(|x| x * 2).collect::<Vec<_>>());
    }

    #[test]
    fn a_panicking_item_is_an_error_not_a_crash() {
        let items = [1u32, 0, 2];
        let out = run_parallel(&items, 2, |x| 10 / x, |_, _| {});
        assert_eq!(out[0], Ok(10));
        assert!(out[1].as_ref().unwrap_err().contains("panicked"));
        assert_eq!(out[2], Ok(5));
    }

    #[test]
    fn no_items_no_threads() {
        let out = run_parallel(&[] as &[u8], 8, |x| *x, |_, _| {});
        assert!(out.is_empty());
    }
}
