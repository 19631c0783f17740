//! [`StatementGate`]: a yield point a SQL adapter awaits before each
//! statement of a transaction, so that the simulator can choose which of
//! several concurrent transactions runs its next statement.
//!
//! Why: the bugs that live inside a database (a read then a write without
//! a row lock, an update without its version guard) show only when two
//! transactions' statements interleave. A scheduler that owns the order in
//! which statements run can reach those interleavings from a seed, and
//! replay them.
//!
//! What: a gate is attached to one future ([`gated`]); while that future
//! is polled, [`step`] (called by the adapter before a statement) awaits
//! the gate's [`StatementGate::step`], and [`session`] tells it the
//! database session the transaction runs on. Outside [`gated`] there is no
//! gate: [`step`] is ready at once after one thread-local read, and
//! [`armed`] is `false`. Production never attaches one.
//!
//! Invariants:
//! - the gate seen by [`step`] is the one of the innermost [`gated`]
//!   future (or [`carried`] future made under a gate) being polled on
//!   this thread, and none once its poll returns
//!   (a guard restores the outer one, even if the poll panics);
//! - an unarmed [`step`] never suspends.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// The future a gate answers a step with: ready when the transaction may
/// run its statement.
pub type StepFuture<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// The name of the step before `BEGIN`: a transaction (or a new try of
/// one) starts.
pub const BEGIN: &str = "begin";
/// The name of the step before `COMMIT`.
pub const COMMIT: &str = "commit";

/// Where a transaction stands when it reaches its gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// About to run this statement ([`BEGIN`] and [`COMMIT`] included).
    Before(&'static str),
    /// About to run the statement the transaction decides on: a scan whose
    /// rows it then writes, which skips rows other transactions lock and
    /// does not see their uncommitted rows (`FOR UPDATE SKIP LOCKED`).
    /// Such a transaction takes effect here, not at its commit: a commit
    /// of another transaction between the two does not change what it
    /// decided, so a scheduler that orders transactions by where they took
    /// effect places it at the first such step of its try.
    Decides(&'static str),
    /// A [`Step::Decides`] of a transaction that only claims: a claim's
    /// scan (or a limited queue's count before it), or the scan of a batch
    /// that carries no release. Its scan skips the rows another
    /// transaction locked, so it must not run while one whose rows may
    /// become claimable at its commit (a sweep, a release) has decided and
    /// not committed: the claim would skip a row that the order of
    /// decisions shows it as claimable (the simulator's scheduler holds it
    /// back until then; issue 47, the correct store's I11 on seeds 5 and
    /// 8 of bug 31's scenario).
    Claims(&'static str),
    /// Cannot go on until another transaction of the same store ends (on
    /// SQLite, the store's write lock is held by another transaction); the
    /// adapter tries again when the step returns.
    Blocked(&'static str),
}

impl Step {
    /// The statement's short name.
    pub fn what(&self) -> &'static str {
        match self {
            Step::Before(w) | Step::Decides(w) | Step::Claims(w) | Step::Blocked(w) => w,
        }
    }
}

/// The simulator's side of the gate (see the module docs).
pub trait StatementGate: Send + Sync {
    /// Answers when the transaction may take its step.
    fn step(&self, at: Step) -> StepFuture<'_>;
    /// The database session the transaction now runs on (PostgreSQL: its
    /// backend pid), so the scheduler can ask the database what it waits on.
    fn session(&self, id: i64);
}

thread_local! {
    /// The gate of the innermost [`Gated`] future being polled here.
    static CURRENT: RefCell<Option<Arc<dyn StatementGate>>> = const { RefCell::new(None) };
}

fn current() -> Option<Arc<dyn StatementGate>> {
    CURRENT.with(|c| c.borrow().clone())
}

/// Whether the caller runs under a gate (only the simulator's scheduler
/// attaches one).
pub fn armed() -> bool {
    CURRENT.with(|c| c.borrow().is_some())
}

/// Awaited by an adapter before each statement of a transaction: waits
/// for the gate when one is attached, else returns at once.
pub async fn step(at: Step) {
    if let Some(gate) = current() {
        gate.step(at).await;
    }
}

/// Tells the attached gate, if any, the transaction's database session.
pub fn session(id: i64) {
    if let Some(gate) = current() {
        gate.session(id);
    }
}

/// `fut` with `gate` attached (see the module docs).
pub fn gated<F: Future>(gate: Arc<dyn StatementGate>, fut: F) -> Gated<F> {
    Gated {
        gate: Some(gate),
        inner: Box::pin(fut),
    }
}

/// `fut` with the gate attached where it is made, if any: for a task that
/// a gated future spawns to run its transactions (PostgreSQL's
/// `Coalescing` flushers), whose statements must reach the same gate.
/// Made where no gate is attached (production), it attaches none.
pub fn carried<F: Future>(fut: F) -> Gated<F> {
    Gated {
        gate: current(),
        inner: Box::pin(fut),
    }
}

/// A future with a gate attached ([`gated`], [`carried`]).
pub struct Gated<F> {
    gate: Option<Arc<dyn StatementGate>>,
    inner: Pin<Box<F>>,
}

/// Puts the outer gate back when a poll ends, however it ends.
struct Restore(Option<Arc<dyn StatementGate>>);

impl Drop for Restore {
    fn drop(&mut self) {
        let outer = self.0.take();
        CURRENT.with(|c| *c.borrow_mut() = outer);
    }
}

impl<F: Future> Future for Gated<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let Some(gate) = self.gate.clone() else {
            // Nothing attached: the gate of the poller, if any, stays.
            return self.inner.as_mut().poll(cx);
        };
        let _restore = Restore(CURRENT.with(|c| c.borrow_mut().replace(gate)));
        self.inner.as_mut().poll(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Records every step and session, and parks the first step once.
    #[derive(Default)]
    struct Log {
        seen: Mutex<Vec<String>>,
    }

    impl StatementGate for Log {
        fn step(&self, at: Step) -> StepFuture<'_> {
            self.seen.lock().unwrap().push(format!("{at:?}"));
            Box::pin(async {})
        }
        fn session(&self, id: i64) {
            self.seen.lock().unwrap().push(format!("session {id}"));
        }
    }

    fn now<F: Future>(f: F) -> Option<F::Output> {
        let mut f = std::pin::pin!(f);
        let mut cx = Context::from_waker(std::task::Waker::noop());
        match f.as_mut().poll(&mut cx) {
            Poll::Ready(v) => Some(v),
            Poll::Pending => None,
        }
    }

    #[test]
    fn unarmed_steps_are_ready_at_once() {
        assert!(!armed());
        assert_eq!(now(step(Step::Before("select"))), Some(()));
        session(7);
    }

    #[test]
    fn a_gated_future_reaches_its_gate_and_only_while_polled() {
        let log = Arc::new(Log::default());
        let body = async {
            assert!(armed());
            step(Step::Before("begin")).await;
            session(42);
            step(Step::Blocked("write lock")).await;
        };
        assert_eq!(now(gated(log.clone(), body)), Some(()));
        assert!(!armed(), "no gate once the poll returned");
        assert_eq!(
            *log.seen.lock().unwrap(),
            ["Before(\"begin\")", "session 42", "Blocked(\"write lock\")"]
        );
    }

    #[test]
    fn the_innermost_gate_answers_and_the_outer_one_comes_back() {
        let (outer, inner) = (Arc::new(Log::default()), Arc::new(Log::default()));
        let inner2 = inner.clone();
        let body = async move {
            gated(inner2, step(Step::Before("in"))).await;
            step(Step::Before("out")).await;
        };
        assert_eq!(now(gated(outer.clone(), body)), Some(()));
        assert_eq!(*inner.seen.lock().unwrap(), ["Before(\"in\")"]);
        assert_eq!(*outer.seen.lock().unwrap(), ["Before(\"out\")"]);
    }

    /// A future made under a gate carries it to wherever it is polled
    /// later (a spawned task); one made without a gate carries none.
    #[test]
    fn a_carried_future_keeps_the_gate_it_was_made_under() {
        let log = Arc::new(Log::default());
        // Made inside the gated future, handed out (in a tuple: it is
        // polled later, not awaited there) and polled outside it.
        let (made,) = now(gated(log.clone(), async {
            (carried(async {
                assert!(armed());
                step(Step::Before("flush")).await;
            }),)
        }))
        .expect("made at once");
        assert!(!armed());
        assert_eq!(now(made), Some(()));
        assert_eq!(*log.seen.lock().unwrap(), ["Before(\"flush\")"]);
        let bare = carried(async { armed() });
        assert_eq!(now(bare), Some(false));
    }

    #[test]
    fn a_step_names_its_statement() {
        assert_eq!(Step::Before("commit").what(), "commit");
        assert_eq!(Step::Blocked("write lock").what(), "write lock");
        assert_eq!(Step::Decides("select rows").what(), "select rows");
    }
}
