//! A batch's parts finishing in a seed-drawn order, and one part of a
//! batch answered `Conflict` (issue 48, classes 3 and 5).
//!
//! A store whose `batch` runs its parts as separate concurrent calls (the
//! trait's default, a user's async store) may finish them in any order and
//! may fail one of them alone. A store that offers a
//! [`PartGate`](crate::stores::part_gate::PartGate) (the memory store) lets
//! the store host choose both: the gate is armed around one batch, its
//! turns are drawn from the scenario's `batch-parts` generator
//! (`faults.batch_parts = "drawn"`), and the parts drawn to conflict
//! (`faults.conflict_on = "every-write"`) answer `Conflict` unapplied.
//!
//! The batch still runs at one instant of simulated time, with no other
//! request between its parts ([`Uninterrupted`]), so the host records its
//! parts, each with its own answer, in the order they ran: the checker's
//! model then replays them in that order.
//!
//! For a store whose parts the host applies one at a time itself (one that
//! is not atomic, [`crate::stores::SimStore::batch_is_atomic`]), the same
//! generator draws the order of each phase ([`run_order`]).

use crate::stores::part_gate::PartGate;
use leasehold_model::rng::SimRng;
use std::collections::BTreeSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

/// Most polls one batch takes at one instant: each poll grants at least
/// one turn, so a batch of `MAX_BATCH_REQUESTS` of each kind is far below.
const MAX_POLLS: u32 = 1 << 20;

/// Runs `batch` with `gate` armed (`order` draws its turns, the parts
/// numbered in `conflicts` answer `Conflict`), without letting other
/// requests run between its parts; answers its parts in the order they
/// ran. Unarmed (`order` is `None` and no conflict) it is `batch` itself.
pub async fn gated<T, F: Future<Output = Vec<T>>>(
    gate: Option<&PartGate>,
    order: Option<SimRng>,
    conflicts: BTreeSet<u32>,
    batch: F,
) -> Vec<T> {
    let Some(gate) = gate.filter(|_| order.is_some() || !conflicts.is_empty()) else {
        return batch.await;
    };
    gate.arm(order, conflicts);
    let parts = Uninterrupted::new(batch).await;
    let granted = gate.disarm();
    in_run_order(parts, &granted)
}

/// The parts of a batch (in list order) in the order their turns were
/// granted; a part that never took a turn keeps its place after them.
fn in_run_order<T>(parts: Vec<T>, granted: &[u32]) -> Vec<T> {
    let n = parts.len();
    let mut slots: Vec<Option<T>> = parts.into_iter().map(Some).collect();
    let mut out = Vec::with_capacity(n);
    for &g in granted {
        if let Some(p) = slots.get_mut(g as usize).and_then(Option::take) {
            out.push(p);
        }
    }
    out.extend(slots.into_iter().flatten());
    out
}

/// The order in which the host applies the parts of a batch itself: each
/// phase (`releases` first, then the rest) in list order, or shuffled by
/// `order` when the scenario draws it.
pub fn run_order(len: usize, releases: usize, order: Option<SimRng>) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..len).collect();
    if let Some(mut rng) = order {
        let releases = releases.min(len);
        shuffle(&mut idx[..releases], &mut rng);
        shuffle(&mut idx[releases..], &mut rng);
    }
    idx
}

/// Fisher-Yates, from the last position down.
fn shuffle(xs: &mut [usize], rng: &mut SimRng) {
    for i in (1..xs.len()).rev() {
        let j = rng.range_u64(0, i as u64) as usize;
        xs.swap(i, j);
    }
}

/// A future polled to completion within one poll of the store host, as
/// long as it only waits on wakes it gives itself (the part gate's turns):
/// no other request runs between a batch's parts. A wait on anything else
/// is passed on.
struct Uninterrupted<F> {
    inner: Pin<Box<F>>,
}

impl<F: Future> Uninterrupted<F> {
    fn new(inner: F) -> Self {
        Uninterrupted {
            inner: Box::pin(inner),
        }
    }
}

/// Records that the inner future was woken, and passes the wake on.
struct Flag {
    woken: AtomicBool,
    outer: Waker,
}

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::SeqCst);
        self.outer.wake_by_ref();
    }
}

impl<F: Future> Future for Uninterrupted<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        for _ in 0..MAX_POLLS {
            let flag = Arc::new(Flag {
                woken: AtomicBool::new(false),
                outer: cx.waker().clone(),
            });
            let waker = Waker::from(flag.clone());
            let mut inner_cx = Context::from_waker(&waker);
            match self.inner.as_mut().poll(&mut inner_cx) {
                Poll::Ready(v) => return Poll::Ready(v),
                Poll::Pending if flag.woken.load(Ordering::SeqCst) => continue,
                Poll::Pending => return Poll::Pending,
            }
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_come_back_in_the_order_they_ran() {
        let parts = vec!["r0", "r1", "c2", "c3"];
        assert_eq!(
            in_run_order(parts, &[1, 0, 3, 2]),
            vec!["r1", "r0", "c3", "c2"]
        );
        // A part that never ran (its batch failed first) keeps its place after.
        assert_eq!(in_run_order(vec![1, 2, 3], &[2]), vec![3, 1, 2]);
    }

    #[test]
    fn the_host_s_own_order_keeps_releases_before_claims() {
        assert_eq!(run_order(5, 2, None), vec![0, 1, 2, 3, 4]);
        let mut seen = BTreeSet::new();
        for seed in 0..30 {
            let o = run_order(5, 2, Some(SimRng::new(seed)));
            let mut head = o[..2].to_vec();
            head.sort();
            assert_eq!(head, vec![0, 1], "releases first: {o:?}");
            let mut tail = o[2..].to_vec();
            tail.sort();
            assert_eq!(tail, vec![2, 3, 4]);
            seen.insert(o);
        }
        assert!(seen.len() > 1);
    }
}
