//! [`PartGate`]: the store host's hand in the parts of one batch, for a
//! store whose `batch` runs its parts as separate concurrent calls (the
//! trait's default, a user's async store). Such a store's parts may
//! finish in any order, and one of them may meet a conflict the others do
//! not; a store that answers each call in one poll would always finish
//! them in list order, all or none conflicting.
//!
//! The store takes a [`Turn`] at the start of each part call (when the call
//! is made, so in the order its `batch` makes them) and awaits it before
//! doing the part's work. Unarmed, a turn is ready at once: the store polls
//! exactly as without the gate. Armed by the store host around one batch,
//! the turns of the calls made together are granted one at a time, each
//! drawn from those waiting, and a part the host marked answers `Conflict`
//! without running.
//!
//! Invariants: an armed gate grants one turn at a time, each ticket at
//! most once, and only while armed; [`PartGate::disarm`] hands back the
//! tickets in the order their turns were granted.

use leasehold_model::rng::SimRng;
use std::collections::BTreeSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

/// What a part does once its turn comes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartFate {
    /// Run the part.
    Run,
    /// Answer `Conflict` without running it (nothing applied).
    Conflict,
}

/// The gate (see the module docs). Cloning shares it.
#[derive(Clone, Default)]
pub struct PartGate {
    state: Arc<Mutex<Option<Armed>>>,
}

/// One armed batch.
struct Armed {
    /// Draws which waiting ticket goes next (`None`: the first, list order).
    rng: Option<SimRng>,
    /// Tickets issued so far (ticket `i` is the `i`-th part call made).
    issued: u32,
    /// Issued, not yet granted.
    waiting: BTreeSet<u32>,
    /// The ticket granted next, once drawn.
    next: Option<u32>,
    /// Tickets in the order their turns were granted.
    granted: Vec<u32>,
    /// Tickets that answer `Conflict`.
    conflicts: BTreeSet<u32>,
    /// Tasks waiting for a turn (woken whenever one is granted).
    wakers: Vec<Waker>,
}

/// Most part calls one armed batch may make (a bound far above a batch's
/// two phases of `MAX_BATCH_REQUESTS` each).
const MAX_TICKETS: u32 = 1 << 16;

impl PartGate {
    fn lock(&self) -> MutexGuard<'_, Option<Armed>> {
        // A panic while holding the lock leaves a consistent value.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Arms the gate for one batch: turns drawn with `rng` (in list order
    /// without one), and the parts
    /// numbered in `conflicts` (in the order the store makes its calls)
    /// answer `Conflict`.
    pub fn arm(&self, rng: Option<SimRng>, conflicts: BTreeSet<u32>) {
        *self.lock() = Some(Armed {
            rng,
            issued: 0,
            waiting: BTreeSet::new(),
            next: None,
            granted: Vec::new(),
            conflicts,
            wakers: Vec::new(),
        });
    }

    /// Disarms the gate; answers the tickets in the order their turns were
    /// granted (empty if it was not armed).
    pub fn disarm(&self) -> Vec<u32> {
        self.lock().take().map(|a| a.granted).unwrap_or_default()
    }

    /// The turn of one part call, taken when the call is made.
    pub fn turn(&self) -> Turn {
        let ticket = self.lock().as_mut().and_then(|a| {
            (a.issued < MAX_TICKETS).then(|| {
                let t = a.issued;
                a.issued += 1;
                a.waiting.insert(t);
                t
            })
        });
        Turn {
            gate: self.clone(),
            ticket,
        }
    }
}

/// One part's turn: resolves when the part may run (see [`PartGate`]).
pub struct Turn {
    gate: PartGate,
    /// `None`: the gate was not armed when the call was made; ready at once.
    ticket: Option<u32>,
}

impl Future for Turn {
    type Output = PartFate;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<PartFate> {
        let Some(me) = self.ticket else {
            return Poll::Ready(PartFate::Run);
        };
        let mut state = self.gate.lock();
        // Disarmed under a waiting part (its batch was dropped): run.
        let Some(a) = state.as_mut() else {
            return Poll::Ready(PartFate::Run);
        };
        if a.next.is_none() && !a.waiting.is_empty() {
            // Every call of this phase was made before the first was
            // polled, so the draw is over all of them.
            let last = a.waiting.len() as u64 - 1;
            let k = a.rng.as_mut().map_or(0, |r| r.range_u64(0, last)) as usize;
            a.next = a.waiting.iter().nth(k).copied();
        }
        if a.next != Some(me) {
            a.wakers.push(cx.waker().clone());
            return Poll::Pending;
        }
        a.waiting.remove(&me);
        a.next = None;
        a.granted.push(me);
        for w in a.wakers.drain(..) {
            w.wake();
        }
        Poll::Ready(if a.conflicts.contains(&me) {
            PartFate::Conflict
        } else {
            PartFate::Run
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_all(gate: &PartGate, n: usize) -> Vec<(usize, PartFate)> {
        let turns: Vec<_> = (0..n).map(|_| gate.turn()).collect();
        let finished = Arc::new(Mutex::new(Vec::new()));
        let futs: Vec<_> = turns
            .into_iter()
            .enumerate()
            .map(|(i, t)| {
                let finished = finished.clone();
                async move {
                    let fate = t.await;
                    finished.lock().unwrap().push((i, fate));
                }
            })
            .collect();
        futures_lite_block_on(futs);
        let out = finished.lock().unwrap().clone();
        out
    }

    /// Polls every future, in list order, until all have finished (the
    /// default batch's join, without a runtime).
    fn futures_lite_block_on<F: Future<Output = ()>>(futs: Vec<F>) {
        let mut futs: Vec<Option<Pin<Box<F>>>> =
            futs.into_iter().map(|f| Some(Box::pin(f))).collect();
        let waker = Waker::noop();
        let mut cx = Context::from_waker(waker);
        for _ in 0..1000 {
            let mut pending = false;
            for slot in futs.iter_mut() {
                if let Some(f) = slot {
                    if f.as_mut().poll(&mut cx).is_ready() {
                        *slot = None;
                    } else {
                        pending = true;
                    }
                }
            }
            if !pending {
                return;
            }
        }
        panic!("the parts never all finished");
    }

    #[test]
    fn an_unarmed_gate_lets_every_part_run_in_list_order() {
        let gate = PartGate::default();
        let out = run_all(&gate, 3);
        assert_eq!(
            out,
            vec![(0, PartFate::Run), (1, PartFate::Run), (2, PartFate::Run)]
        );
        assert!(gate.disarm().is_empty());
    }

    #[test]
    fn an_armed_gate_runs_parts_one_at_a_time_in_a_drawn_order() {
        let mut orders = BTreeSet::new();
        for seed in 0..40 {
            let gate = PartGate::default();
            gate.arm(Some(SimRng::new(seed)), BTreeSet::new());
            let out = run_all(&gate, 4);
            let finished: Vec<u32> = out.iter().map(|(i, _)| *i as u32).collect();
            // Recorded as granted, each part once.
            assert_eq!(gate.disarm(), finished);
            let mut sorted = finished.clone();
            sorted.sort();
            assert_eq!(sorted, vec![0, 1, 2, 3]);
            orders.insert(finished);
        }
        // Not always list order: the order is drawn.
        assert!(orders.len() > 1, "one order only: {orders:?}");
    }

    #[test]
    fn a_marked_part_answers_conflict_and_the_others_run() {
        let gate = PartGate::default();
        gate.arm(None, BTreeSet::from([1]));
        let mut out = run_all(&gate, 3);
        out.sort_by_key(|(i, _)| *i);
        assert_eq!(
            out,
            vec![
                (0, PartFate::Run),
                (1, PartFate::Conflict),
                (2, PartFate::Run)
            ]
        );
    }
}
