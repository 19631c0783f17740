//! Tasks of every simulated host on one thread: spawned per host, run in
//! the order they were woken, killed per host in the order they were
//! spawned.
//!
//! ## Invariants
//! - A task is in the ready queue at most once at a time (its waker's flag).
//! - Ready tasks are polled first in, first out (or, opted in, in an order
//!   drawn from the seed: [`Executor::with_seeded_order`]); a task's id never changes
//!   and ids count the tasks of this seed only, so no other seed run on the
//!   same thread or process can shift anything.
//! - [`Executor::take_host`] takes every live task of a host out at once,
//!   in spawn order; the caller drops them, and no waker can bring them
//!   back (their ids are gone).
//!
//! Simulated code spawns onto the seed's executor through a thread-local
//! handle the world installs for the length of one seed ([`enter`]).

use leasehold_model::rng::SimRng;
use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Wake, Waker};

/// A host's number in the world (registration order).
pub type HostIdx = usize;

/// A task's future.
pub type TaskFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Most polls between two moves of true time before the run is declared
/// live-locked (a bug of the simulator or of simulated code, never a
/// property of a scenario).
pub const MAX_POLLS_PER_INSTANT: u64 = 5_000_000;

/// The ready queue, shared with every waker (wakers must be `Send`).
#[derive(Default)]
struct ReadyQueue(Mutex<VecDeque<u64>>);

impl ReadyQueue {
    fn push(&self, id: u64) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push_back(id);
    }

    fn pop(&self, order: Option<&mut SimRng>) -> Option<u64> {
        let mut q = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        match order {
            None => q.pop_front(),
            Some(rng) if !q.is_empty() => {
                let i = rng.range_u64(0, q.len() as u64 - 1) as usize;
                q.remove(i)
            }
            Some(_) => None,
        }
    }
}

struct TaskWaker {
    id: u64,
    queued: AtomicBool,
    ready: Arc<ReadyQueue>,
}

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if !self.queued.swap(true, Ordering::AcqRel) {
            self.ready.push(self.id);
        }
    }
}

struct Task {
    /// `None` while it is being polled.
    fut: Option<TaskFuture>,
    flag: Arc<TaskWaker>,
    waker: Waker,
}

/// Every task of one seed.
pub struct Executor {
    tasks: BTreeMap<u64, Task>,
    /// Each host's task ids in spawn order (finished ones pruned lazily).
    by_host: Vec<Vec<u64>>,
    next_id: u64,
    ready: Arc<ReadyQueue>,
    polls: u64,
    /// `Some`: ready tasks run in an order this generator draws
    /// (exploration); `None`: first in, first out.
    order: Option<SimRng>,
}

impl Executor {
    /// An executor for `hosts` hosts.
    pub fn new(hosts: usize) -> Self {
        Executor {
            tasks: BTreeMap::new(),
            by_host: vec![Vec::new(); hosts],
            next_id: 0,
            ready: Arc::default(),
            polls: 0,
            order: None,
        }
    }

    /// Runs ready tasks in an order drawn from `rng` instead of first in,
    /// first out (an opt-in exploration of other interleavings; still one
    /// history per seed).
    pub fn with_seeded_order(mut self, rng: SimRng) -> Self {
        self.order = Some(rng);
        self
    }

    /// Spawns `fut` on `host`; it runs once the ready tasks before it have.
    pub fn spawn(&mut self, host: HostIdx, fut: TaskFuture) {
        let id = self.next_id;
        self.next_id += 1;
        let flag = Arc::new(TaskWaker {
            id,
            queued: AtomicBool::new(true),
            ready: self.ready.clone(),
        });
        let waker = Waker::from(flag.clone());
        self.tasks.insert(
            id,
            Task {
                fut: Some(fut),
                flag,
                waker,
            },
        );
        let list = &mut self.by_host[host];
        if list.len() >= 64 && list.len().is_power_of_two() {
            let tasks = &self.tasks;
            list.retain(|t| tasks.contains_key(t));
        }
        list.push(id);
        self.ready.push(id);
    }

    /// Takes out every live task of `host`, in spawn order, for the caller
    /// to drop (outside any borrow of the executor).
    pub fn take_host(&mut self, host: HostIdx) -> Vec<TaskFuture> {
        let ids = std::mem::take(&mut self.by_host[host]);
        ids.into_iter()
            .filter_map(|id| self.tasks.remove(&id))
            .filter_map(|t| t.fut)
            .collect()
    }

    /// Live tasks of `host`.
    pub fn live_on(&self, host: HostIdx) -> usize {
        self.by_host[host]
            .iter()
            .filter(|id| self.tasks.contains_key(id))
            .count()
    }

    /// Total polls so far.
    pub fn polls(&self) -> u64 {
        self.polls
    }

    /// The next ready task's future, taken out to be polled, with its waker.
    fn next_ready(&mut self) -> Option<(u64, TaskFuture, Waker)> {
        // Bounded by the queue's length: each pop removes one entry.
        while let Some(id) = self.ready.pop(self.order.as_mut()) {
            let Some(task) = self.tasks.get_mut(&id) else {
                continue;
            };
            task.flag.queued.store(false, Ordering::Release);
            let Some(fut) = task.fut.take() else {
                continue;
            };
            self.polls += 1;
            return Some((id, fut, task.waker.clone()));
        }
        None
    }

    fn put_back(&mut self, id: u64, fut: TaskFuture) {
        if let Some(t) = self.tasks.get_mut(&id) {
            t.fut = Some(fut);
        }
    }

    fn finish(&mut self, id: u64) {
        self.tasks.remove(&id);
    }
}

/// Polls ready tasks of the executor in `cell` until none is left; returns
/// how many were polled, or an error after [`MAX_POLLS_PER_INSTANT`].
///
/// The executor is borrowed only between polls, so a task may spawn.
pub fn run_ready(cell: &std::cell::RefCell<Executor>) -> Result<u64, String> {
    let mut n = 0u64;
    loop {
        let next = cell.borrow_mut().next_ready();
        let Some((id, mut fut, waker)) = next else {
            return Ok(n);
        };
        n += 1;
        if n > MAX_POLLS_PER_INSTANT {
            return Err(format!(
                "{MAX_POLLS_PER_INSTANT} polls without true time moving: a live-lock"
            ));
        }
        let mut cx = Context::from_waker(&waker);
        match fut.as_mut().poll(&mut cx) {
            Poll::Pending => cell.borrow_mut().put_back(id, fut),
            Poll::Ready(()) => {
                cell.borrow_mut().finish(id);
                // Dropped outside the borrow: its drop may spawn or send.
                drop(fut);
            }
        }
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Rc<RefCell<Executor>>>> = const { RefCell::new(None) };
}

/// Installs `exec` as the thread's current executor until the guard drops.
pub fn enter(exec: Rc<RefCell<Executor>>) -> Entered {
    let prev = CURRENT.with(|c| c.replace(Some(exec)));
    Entered { prev }
}

/// Restores the thread's previous executor when dropped.
pub struct Entered {
    prev: Option<Rc<RefCell<Executor>>>,
}

impl Drop for Entered {
    fn drop(&mut self) {
        let prev = self.prev.take();
        // Dropped after the slot's borrow ends: the executor's own drop
        // drops tasks, which may look for the current executor.
        let old = CURRENT.with(|c| c.replace(prev));
        drop(old);
    }
}

/// Spawns `fut` on `host` of the current executor; `None` outside a
/// simulation.
pub fn spawn(host: HostIdx, fut: TaskFuture) -> Option<()> {
    let exec = CURRENT.with(|c| c.borrow().clone())?;
    exec.borrow_mut().spawn(host, fut);
    Some(())
}
