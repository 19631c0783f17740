//! The simulator's executor: every host of one seed runs on one small,
//! single-threaded executor of the simulator's own, over one simulated
//! clock that jumps from event to event.
//!
//! ## Why an executor of our own
//! A paused tokio runtime with one `LocalSet` would also run every host on
//! one scheduler, but its order of ready tasks, its task ids and its timer
//! wheel are tokio's internals: a tokio upgrade could change every history
//! hash, and crash order would again hang on tokio's task ids (which count
//! the tasks of every seed in the process). The parts the simulator needs
//! are small and all of them are what a history depends on, so they live
//! here, where the order is ours and written down:
//! - [`executor`]: tasks registered per host and per incarnation, a FIFO
//!   ready queue, synchronous kill in spawn order;
//! - [`timers`]: one event queue of timers and message deliveries, ordered
//!   by (true time, insertion), true time itself, and the [`Sleep`] every
//!   simulated timer is.
//!
//! Simulated code reaches each of them (and the network, `crate::net`)
//! through a thread-local handle of that layer's own, which the seed's
//! world installs for the length of the seed: so the executor, the timers
//! and the network never import one another in a circle, and the world
//! above them owns all three.
//!
//! tokio is still used for what runs *inside* tasks (its `sync` channels,
//! `select!`): those are plain futures that work on any executor. Nothing
//! simulated calls `tokio::spawn` or `tokio::time` (tests/determinism_rules.rs
//! checks the sources).
//!
//! ## Invariants
//! - Ready tasks run in the order they were woken (FIFO), one at a time; a
//!   task woken twice before it runs is queued once.
//! - True time only moves between polls, to the earliest pending event;
//!   every event due at an instant fires in (time, insertion) order before
//!   any task woken by them runs.
//! - A killed host's tasks are dropped at once, in the order they were
//!   spawned, and never polled again.

pub mod executor;
pub mod timers;

pub use executor::{Executor, HostIdx};
pub use timers::{now_ms, sleep_until, try_now_ms, Sleep};

#[cfg(test)]
mod tests {
    use super::executor::{self, run_ready, Executor};
    use super::timers::{self, sleep_until, Event, Timeline};
    use std::cell::RefCell;
    use std::rc::Rc;
    use std::sync::{Arc, Mutex};

    /// A timeline without messages and an executor, both entered.
    struct Core {
        time: Rc<Timeline<()>>,
        exec: Rc<RefCell<Executor>>,
        _in: (timers::Entered, executor::Entered),
    }

    fn world(hosts: usize) -> Core {
        let time: Rc<Timeline<()>> = Rc::default();
        let exec = Rc::new(RefCell::new(Executor::new(hosts)));
        let _in = (timers::enter(time.clone()), executor::enter(exec.clone()));
        Core { time, exec, _in }
    }

    /// Fires every event due at the next instant, as the runner does.
    fn step(core: &Core) -> bool {
        let Some(t) = core.time.events.borrow().next_time() else {
            return false;
        };
        core.time.advance_to(t);
        loop {
            let ev = core.time.events.borrow_mut().pop_due(t);
            match ev {
                Some(Event::Wake(w)) => w.wake(),
                Some(Event::Deliver(())) => unreachable!("no messages here"),
                None => return true,
            }
        }
    }

    type Log = Arc<Mutex<Vec<String>>>;

    fn note(log: &Log, s: String) {
        log.lock().unwrap().push(s);
    }

    #[test]
    fn tasks_run_in_spawn_order_and_timers_in_time_then_insertion_order() {
        let core = world(2);
        let log: Log = Arc::default();
        for (host, at, name) in [(0, 30, "a"), (1, 10, "b"), (0, 10, "c"), (1, 20, "d")] {
            let log = log.clone();
            core.exec.borrow_mut().spawn(
                host,
                Box::pin(async move {
                    note(&log, format!("start {name}"));
                    sleep_until(at).await;
                    note(&log, format!("{name}@{}", super::now_ms()));
                }),
            );
        }
        run_ready(&core.exec).unwrap();
        while step(&core) {
            run_ready(&core.exec).unwrap();
        }
        assert_eq!(
            *log.lock().unwrap(),
            ["start a", "start b", "start c", "start d", "b@10", "c@10", "d@20", "a@30"]
        );
    }

    /// Drops into the log when dropped: shows the order of a kill.
    struct Tell(Log, &'static str);

    impl Drop for Tell {
        fn drop(&mut self) {
            note(&self.0, format!("dropped {}", self.1));
        }
    }

    #[test]
    fn a_kill_drops_the_hosts_tasks_at_once_in_spawn_order_and_only_them() {
        let core = world(2);
        let log: Log = Arc::default();
        for (host, name) in [(0, "x"), (1, "other"), (0, "y"), (0, "z")] {
            let tell = Tell(log.clone(), name);
            let log2 = log.clone();
            core.exec.borrow_mut().spawn(
                host,
                Box::pin(async move {
                    let _t = tell;
                    sleep_until(100).await;
                    note(&log2, format!("{name} ran on"));
                }),
            );
        }
        run_ready(&core.exec).unwrap();
        assert_eq!(core.time.events.borrow().len(), 4, "four timers pending");
        let tasks = core.exec.borrow_mut().take_host(0);
        drop(tasks);
        assert_eq!(
            *log.lock().unwrap(),
            ["dropped x", "dropped y", "dropped z"],
            "host 0's tasks, in spawn order"
        );
        assert_eq!(
            core.time.events.borrow().len(),
            1,
            "the killed tasks' timers are gone"
        );
        assert_eq!(core.exec.borrow().live_on(0), 0);
        while step(&core) {
            run_ready(&core.exec).unwrap();
        }
        assert_eq!(
            log.lock().unwrap()[3..],
            ["other ran on", "dropped other"],
            "nothing of the killed host ran again"
        );
    }

    #[test]
    fn a_task_woken_twice_before_it_runs_is_polled_once() {
        let core = world(1);
        let polls = Arc::new(Mutex::new(0u32));
        let p = polls.clone();
        let waker_slot: Arc<Mutex<Option<std::task::Waker>>> = Arc::default();
        let w2 = waker_slot.clone();
        core.exec.borrow_mut().spawn(
            0,
            Box::pin(std::future::poll_fn(move |cx| {
                *p.lock().unwrap() += 1;
                *w2.lock().unwrap() = Some(cx.waker().clone());
                std::task::Poll::<()>::Pending
            })),
        );
        run_ready(&core.exec).unwrap();
        let w = waker_slot.lock().unwrap().clone().unwrap();
        w.wake_by_ref();
        w.wake_by_ref();
        run_ready(&core.exec).unwrap();
        assert_eq!(*polls.lock().unwrap(), 2);
    }
}
