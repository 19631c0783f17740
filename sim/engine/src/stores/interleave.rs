//! Statement-level interleaving of SQL transactions, chosen by the seed
//! (issue 47; `leasehold run --interleave`, or `interleave = true` in a
//! scenario).
//!
//! Why: run one at a time, SQL transactions never meet inside the
//! database, so a claim that reads candidates without row locks and then
//! writes them, or an update without its version guard, passes every
//! seed. Interleaving them at statement boundaries reaches those bugs, and
//! the seed chooses the interleaving, so a failure replays.
//!
//! What:
//! - **Groups.** Store calls the store host makes in the same simulated
//!   instant gather into one group ([`Interleaver::call`]): the first call
//!   yields [`GATHER_YIELDS`] times to the simulation's executor, so every
//!   request ready in that instant can join, up to [`MAX_GROUP`] calls.
//!   The group then runs as one call on the driver (simulated time does
//!   not move), and each caller gets its own answer.
//! - **Steps.** On the driver every call of the group runs as a task of
//!   its own, on its own pooled connection, with a statement gate attached
//!   ([`leasehold_core::statement_gate`]). Every task first runs to its
//!   first gate. Then, [`MAX_STEPS`] times at most, the scheduler picks one
//!   transaction waiting at its gate with the seed's `statement-order`
//!   stream, lets it take its step, and waits until no transaction runs:
//!   each is at a gate, done, or blocked by the database.
//! - **Blocked.** PostgreSQL's own state says it: the scheduler asks
//!   `pg_blocking_pids` for the backend pid of each running transaction
//!   ([`SimStore::lock_waiters`]). SQLite's write lock is answered at the
//!   gate by the adapter itself ([`Step::Blocked`]). A transaction blocked
//!   on a lock is never chosen; while one is, only the transactions it
//!   waits for are, so two transactions never wait on one holder at once
//!   and PostgreSQL has never two waiters to choose from when it wakes
//!   one. A transaction SQLite blocked is chosen again only once another
//!   transaction of the group has ended.
//! - **Commit order.** While a transaction that decided at a
//!   [`Step::Decides`] scan has not committed, no transaction that decided
//!   later, or not at all, commits (except one it waits on), so the order
//!   of commits is the order of decisions (`interleave_candidates.rs`).
//!   And while one whose decision was not a claim's (a sweep, a release)
//!   has not committed, no claim's scan ([`Step::Claims`]) runs: it would
//!   skip rows that may become claimable at that commit.
//! - **Answer order.** The store host records the calls of a group in
//!   the order they took effect, which the reference model (I11) replays
//!   them in: a transaction at its commit, or at its first
//!   [`Step::Decides`] scan (`FOR UPDATE SKIP LOCKED`: what it decided no
//!   later commit changes); a call that committed nothing at the last
//!   step taken when it ended; ties in call order. Never the order in
//!   which tasks happened to finish: two calls that run at once (reads,
//!   which no gate precedes) finish in an order real time decides.
//! - **Bounds.** [`MAX_GROUP`] calls per group, [`MAX_STEPS`] steps per
//!   group, and [`REAL_TIME_GUARD`] of real time for one group: past
//!   either, the run fails as a harness error, never hangs.
//!
//! The real time the scheduler waits (it polls the database's lock state
//! every [`POLL`]) decides nothing: only what the database says does.
//! What PostgreSQL still decides on its own is written in
//! `docs/ENGINE.md` ("Interleaved SQL transactions").

use super::interleave_candidates::{candidates, Status, Tx};
use crate::stores::driver::Driver;
use crate::stores::{SetupError, SimStore};
use leasehold_core::statement_gate::{gated, StatementGate, Step, StepFuture};
use leasehold_model::rng::SimRng;
use std::any::Any;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};
use tokio::sync::{oneshot, Notify};

/// Times the first call of a group yields to the executor before the
/// group closes: every request ready in the same instant, and those their
/// polls wake in turn, join.
pub const GATHER_YIELDS: u32 = 4;
/// Most calls in one group (a later one starts the next group).
pub const MAX_GROUP: usize = 6;
/// Most steps the scheduler lets one group take.
pub const MAX_STEPS: u32 = 10_000;
/// Most real time one group may take before the run is failed as a
/// harness error.
pub const REAL_TIME_GUARD: Duration = Duration::from_secs(60);
/// How often the scheduler asks the database whether a running
/// transaction waits on a lock.
const POLL: Duration = Duration::from_millis(1);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

pub(crate) type Answer = Box<dyn Any + Send>;
pub(crate) type Call = Pin<Box<dyn Future<Output = Answer> + Send>>;
/// Asks the database which sessions hold the locks a session waits on.
pub(crate) type Probe = Arc<
    dyn Fn(i64) -> Pin<Box<dyn Future<Output = Result<Vec<i64>, String>> + Send>> + Send + Sync,
>;

/// How a store call may join a group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Join {
    /// Runs alone, as without interleaving (it arms one of the store's
    /// commit-point faults, which are armed on the whole store).
    Alone,
    /// Joins any group.
    Any,
    /// A batch: joins a group holding no other batch. The SQL stores merge
    /// concurrent batches into one transaction past the flushers they run
    /// at once, and a batch merged into another's waits for it outside the
    /// database, where no gate sees it.
    Batch,
    /// A batch of claims of one queue and no release: joins a group
    /// holding only such batches, fewer than the store runs at once
    /// ([`SimStore::concurrent_batches`]). Why only these: such a batch
    /// decides at one step (its one scan, or its count and scan), so the
    /// point it is recorded at is where all it decided was decided. A batch
    /// with several decision steps (releases' row locks, then a scan; or
    /// scans of several queues) is recorded at its first, and another
    /// batch's scan between its first and a later one would lock rows its
    /// later scan then skips: it would be recorded before a claim whose
    /// locks it met (found: `several_workers_in_one_process_merge_batches_
    /// and_die_together`, PostgreSQL seed 0, I11).
    ClaimBatch,
}

/// One seed's interleaving: the groups gathering now, the seed's
/// statement order stream, and the order every group ran in.
pub struct Interleaver {
    rng: Mutex<SimRng>,
    open: Mutex<Vec<Arc<Group>>>,
    /// Groups closed, in the order they closed, whose callers have not
    /// all taken their answers yet.
    closed: Mutex<Vec<Arc<Group>>>,
    orders: Mutex<Vec<String>>,
}

impl Interleaver {
    /// The interleaving of seed `seed` (its own random stream: drawing
    /// from it moves no other fault's draws).
    pub fn new(seed: u64) -> Self {
        Interleaver {
            rng: Mutex::new(SimRng::derive(seed, "statement-order", &[])),
            open: Mutex::new(Vec::new()),
            closed: Mutex::new(Vec::new()),
            orders: Mutex::new(Vec::new()),
        }
    }

    /// Ready once every caller of every group closed before `upto` (all
    /// of them when `None`) took its answer, or is gone.
    ///
    /// Why: a caller records its call in the history when it takes its
    /// answer, which may be some polls after its group ran. A store call
    /// that ran after the group (a later group, or a call run alone) must
    /// not be recorded before it: the history would show the calls in
    /// another order than they took effect in. So a later call first
    /// waits for the earlier groups' answers to be taken.
    pub(crate) fn drained(&self, upto: Option<&Arc<Group>>) -> Drained<'_> {
        Drained {
            il: self,
            upto: upto.cloned(),
        }
    }

    /// The statement order of every group of more than one call so far,
    /// one line per group: `<step>:<call>:<statement>` items (and
    /// `<call>:waits` when the database made one wait), calls
    /// numbered in the order they joined.
    pub fn orders(&self) -> Vec<String> {
        lock(&self.orders).clone()
    }

    /// Runs `fut` (a store call, joining as `join` says) on `driver` in a
    /// group of this instant, interleaved with the group's other calls at
    /// their statements.
    pub async fn call<S: SimStore, T: Send + 'static>(
        &self,
        driver: &Driver,
        store: Arc<S>,
        join: Join,
        fut: impl Future<Output = T> + Send + 'static,
    ) -> Result<T, SetupError> {
        if join == Join::Alone {
            self.drained(None).await;
            return driver.run(fut).map_err(|e| SetupError::new(e.to_string()));
        }
        let call: Call = Box::pin(async move { Box::new(fut.await) as Answer });
        let batch = matches!(join, Join::Batch | Join::ClaimBatch);
        let one_decision = join == Join::ClaimBatch;
        let batches = store.concurrent_batches().max(1);
        let (group, index, leads) = {
            let mut open = lock(&self.open);
            let fits = |g: &&Arc<Group>| {
                let calls = lock(&g.calls);
                let (held, all_one) = *lock(&g.batches);
                let room = held == 0 || (one_decision && all_one && held < batches);
                calls.len() < MAX_GROUP && (!batch || room)
            };
            match open.iter().find(fits) {
                Some(g) => {
                    let i = g.push(call, batch, one_decision);
                    (g.clone(), i, false)
                }
                None => {
                    let g = Arc::new(Group::default());
                    let i = g.push(call, batch, one_decision);
                    open.push(g.clone());
                    (g, i, true)
                }
            }
        };
        if leads {
            let mut lead = Lead {
                il: self,
                group: &group,
                ran: false,
            };
            for _ in 0..GATHER_YIELDS {
                YieldNow(false).await;
            }
            lock(&self.open).retain(|g| !Arc::ptr_eq(g, &group));
            lock(&self.closed).push(group.clone());
            self.drained(Some(&group)).await;
            let calls = std::mem::take(&mut *lock(&group.calls));
            let seed = lock(&self.rng).next_u64();
            let probe: Probe = Arc::new(move |session| {
                let store = store.clone();
                Box::pin(async move { store.lock_waiters(session).await })
            });
            let ran = driver
                .run(run_group(probe, calls, SimRng::new(seed)))
                .map_err(|e| e.to_string())
                .and_then(|r| r);
            if let Ok((_, order, _)) = &ran {
                if !order.is_empty() {
                    lock(&self.orders).push(order.clone());
                }
            }
            group.finish(ran.map(|(answers, _, effect)| (answers, effect)));
            lead.ran = true;
        }
        let answer = Finished {
            group: &group,
            index,
            taken: false,
        }
        .await
        .map_err(SetupError::new)?;
        answer
            .downcast::<T>()
            .map(|b| *b)
            .map_err(|_| SetupError::new("interleaved call answered the wrong type"))
    }
}

/// The leader of a group while it gathers and runs it: dropped before
/// the group ran (its host went down), it closes the group as failed, so
/// no later call joins it or waits for its answers.
struct Lead<'a> {
    il: &'a Interleaver,
    group: &'a Arc<Group>,
    ran: bool,
}

impl Drop for Lead<'_> {
    fn drop(&mut self) {
        if !self.ran {
            lock(&self.il.open).retain(|g| !Arc::ptr_eq(g, self.group));
            self.group
                .finish(Err("the group's caller went away before it ran".into()));
        }
    }
}

/// A future ready once earlier groups' answers were all taken
/// ([`Interleaver::drained`]).
pub(crate) struct Drained<'a> {
    il: &'a Interleaver,
    upto: Option<Arc<Group>>,
}

impl Future for Drained<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut closed = lock(&self.il.closed);
        closed.retain(|g| !g.drained());
        let ahead = closed
            .iter()
            .take_while(|g| self.upto.as_ref().is_none_or(|u| !Arc::ptr_eq(g, u)));
        let mut waiting = false;
        for g in ahead {
            lock(&g.waiters).push(cx.waker().clone());
            waiting = true;
        }
        if waiting {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    }
}

/// Calls gathering in one instant, and then their answers.
#[derive(Default)]
pub(crate) struct Group {
    calls: Mutex<Vec<Call>>,
    joined: Mutex<usize>,
    /// The batches it holds, and whether each is a [`Join::ClaimBatch`].
    batches: Mutex<(usize, bool)>,
    answers: Mutex<Option<Result<Vec<Option<Answer>>, String>>>,
    /// The calls in the order they took effect (`answer_order`), and how
    /// many of them took their answer: each caller takes its answer in its
    /// turn, so the store host records the calls in that order.
    turns: Mutex<(Vec<usize>, usize)>,
    /// Callers dropped before they took their answer (their host went
    /// down): their turns are skipped.
    gone: Mutex<Vec<usize>>,
    waiters: Mutex<Vec<Waker>>,
}

impl Group {
    fn push(&self, call: Call, batch: bool, one_decision: bool) -> usize {
        lock(&self.calls).push(call);
        if batch {
            let mut b = lock(&self.batches);
            let all_one = b.0 == 0 || b.1;
            *b = (b.0 + 1, all_one && one_decision);
        }
        let mut n = lock(&self.joined);
        *n += 1;
        *n - 1
    }

    /// Moves the next turn past callers that are gone; whether every
    /// answer is now taken (or the group failed).
    fn advance(&self) -> bool {
        let gone = lock(&self.gone).clone();
        let answered = lock(&self.answers).as_ref().map(Result::is_ok);
        let mut turns = lock(&self.turns);
        let (order, next) = &mut *turns;
        while order.get(*next).is_some_and(|i| gone.contains(i)) {
            *next += 1;
        }
        match answered {
            None => false,
            Some(false) => true,
            Some(true) => *next >= order.len(),
        }
    }

    /// Whether the group ran and every caller took its answer or is gone.
    fn drained(&self) -> bool {
        self.advance()
    }

    fn wake_all(&self) {
        for w in lock(&self.waiters).drain(..) {
            w.wake();
        }
    }

    fn finish(&self, answers: Result<(Vec<Answer>, Vec<usize>), String>) {
        let answers = answers.map(|(a, effect)| {
            *lock(&self.turns) = (effect, 0);
            a.into_iter().map(Some).collect()
        });
        *lock(&self.answers) = Some(answers);
        for w in lock(&self.waiters).drain(..) {
            w.wake();
        }
    }
}

/// A call's answer once its group ran.
struct Finished<'a> {
    group: &'a Group,
    index: usize,
    taken: bool,
}

impl Drop for Finished<'_> {
    fn drop(&mut self) {
        if !self.taken {
            // Dropped (its host went down): the turns after it go on.
            lock(&self.group.gone).push(self.index);
            self.group.wake_all();
        }
    }
}

impl Future for Finished<'_> {
    type Output = Result<Answer, String>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let group = self.group;
        let failed = lock(&group.answers)
            .as_ref()
            .map(|a| a.as_ref().err().cloned());
        match failed {
            None => {
                lock(&group.waiters).push(cx.waker().clone());
                Poll::Pending
            }
            Some(Some(e)) => {
                self.taken = true;
                Poll::Ready(Err(e))
            }
            Some(None) => {
                group.advance();
                {
                    let mut turns = lock(&group.turns);
                    let (effect, next) = &mut *turns;
                    if effect.get(*next) != Some(&self.index) {
                        drop(turns);
                        lock(&group.waiters).push(cx.waker().clone());
                        return Poll::Pending;
                    }
                    *next += 1;
                }
                self.taken = true;
                let answer = lock(&group.answers)
                    .as_mut()
                    .and_then(|a| a.as_mut().ok())
                    .and_then(|all| all.get_mut(self.index))
                    .and_then(Option::take);
                group.wake_all();
                Poll::Ready(
                    answer.ok_or_else(|| "an interleaved call was answered twice".to_string()),
                )
            }
        }
    }
}

/// Yields once to the executor: every other task ready now runs first
/// (also the lone-call gathering's yield, `hosts/store_coalesce.rs`).
pub(crate) struct YieldNow(pub(crate) bool);

impl Future for YieldNow {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// What the gates and the scheduler share.
struct Shared {
    txs: Mutex<Vec<Tx>>,
    /// Steps the scheduler has chosen so far (numbered from 1).
    taken: AtomicU64,
    changed: Notify,
}

/// The gate of transaction `i` of a group.
struct Gate {
    shared: Arc<Shared>,
    i: usize,
}

impl StatementGate for Gate {
    fn step(&self, at: Step) -> StepFuture<'_> {
        let (go, chosen) = oneshot::channel();
        {
            let mut txs = lock(&self.shared.txs);
            let ended = txs.iter().filter(|t| t.status == Status::Done).count();
            let tx = &mut txs[self.i];
            tx.parked(self.shared.taken.load(Ordering::SeqCst));
            tx.status = match at {
                Step::Before(w) | Step::Decides(w) | Step::Claims(w) => Status::Parked(w),
                Step::Blocked(w) => Status::Blocked { at: w, ended },
            };
            tx.decides = matches!(at, Step::Decides(_) | Step::Claims(_));
            tx.claims = matches!(at, Step::Claims(_));
            tx.go = Some(go);
        }
        self.shared.changed.notify_one();
        Box::pin(async move {
            // A dropped sender (the group failed) lets it go on; the
            // group's tasks are then aborted.
            let _ = chosen.await;
        })
    }

    fn session(&self, id: i64) {
        lock(&self.shared.txs)[self.i].session = Some(id);
    }
}

/// Runs the calls of one group to their answers, interleaved at their
/// statements in an order drawn from `rng`; their answers in call order,
/// the order the steps ran in, and the calls in the order they took
/// effect ([`answer_order`]).
pub(crate) async fn run_group(
    probe: Probe,
    calls: Vec<Call>,
    mut rng: SimRng,
) -> Result<(Vec<Answer>, String, Vec<usize>), String> {
    if calls.len() == 1 {
        // Nothing to interleave with: the call runs as it would alone.
        let mut answers = Vec::with_capacity(1);
        for c in calls {
            answers.push(c.await);
        }
        return Ok((answers, String::new(), vec![0]));
    }
    let shared = Arc::new(Shared {
        txs: Mutex::new((0..calls.len()).map(|_| Tx::new()).collect()),
        taken: AtomicU64::new(0),
        changed: Notify::new(),
    });
    let mut tasks = Vec::with_capacity(calls.len());
    for (i, call) in calls.into_iter().enumerate() {
        let gate = Arc::new(Gate {
            shared: shared.clone(),
            i,
        });
        let done = shared.clone();
        tasks.push(tokio::spawn(gated(gate, async move {
            let answer = call.await;
            let taken = done.taken.load(Ordering::SeqCst);
            let mut txs = lock(&done.txs);
            txs[i].ended(taken);
            drop(txs);
            done.changed.notify_one();
            answer
        })));
    }
    let started = Instant::now();
    let ran = schedule(&probe, &shared, &mut rng, started).await;
    if let Err(e) = ran {
        for t in &tasks {
            t.abort();
        }
        return Err(e);
    }
    let mut answers = Vec::with_capacity(tasks.len());
    for t in tasks {
        answers.push(
            t.await
                .map_err(|e| format!("an interleaved call died: {e}"))?,
        );
    }
    let effect = answer_order(&lock(&shared.txs));
    ran.map(|order| (answers, order, effect))
}

/// The calls of a group in the order the history records them: the order
/// they took effect in, which the reference model replays them in.
///
/// A transaction takes effect at its commit (its writes become visible
/// there, and the row locks it holds until then keep anyone from acting
/// on what it read), or at its first [`Step::Decides`] scan, whose answer
/// no commit between the two changes (it skips the rows others lock and
/// does not see rows they have not committed). A call that committed
/// nothing (a read, a rejected or failed call) took effect among the
/// steps before it ended: when the last step taken then ran. Ties, and
/// calls that ended before any step (reads, which run at once and all
/// see the state before the group), keep their call order. So the order
/// never depends on which of two calls running at once ended first.
fn answer_order(txs: &[Tx]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..txs.len()).collect();
    order.sort_by_key(|&i| (txs[i].point.unwrap_or(u64::MAX), i));
    order
}

/// The scheduler's loop (see the module docs); the order the steps ran in.
async fn schedule(
    probe: &Probe,
    shared: &Shared,
    rng: &mut SimRng,
    started: Instant,
) -> Result<String, String> {
    let mut order = Vec::new();
    settle(probe, shared, started, &mut order).await?;
    // Bounded: each round either takes a step or waits for PostgreSQL to
    // break a deadlock.
    for _ in 0..MAX_STEPS {
        let chosen = {
            let mut txs = lock(&shared.txs);
            if txs.iter().all(|t| t.status == Status::Done) {
                return Ok(order.join(" "));
            }
            let candidates = candidates(&txs);
            if candidates.is_empty() {
                None
            } else {
                let pick = rng.range_u64(0, candidates.len() as u64 - 1) as usize;
                let i = candidates[pick];
                let at = match txs[i].status {
                    Status::Parked(w) | Status::Blocked { at: w, .. } => w,
                    _ => "?",
                };
                // Numbered by the steps taken, not the rounds: rounds spent
                // waiting on a deadlock depend on real time.
                let n = shared.taken.fetch_add(1, Ordering::SeqCst) + 1;
                order.push(format!("{n}:{i}:{at}"));
                txs[i].chosen(at, n);
                if let Some(go) = txs[i].go.take() {
                    let _ = go.send(());
                }
                Some(i)
            }
        };
        if chosen.is_none() {
            // Every transaction waits on another: a deadlock PostgreSQL
            // breaks on its own (one of them fails and retries).
            wake_waiters(shared);
        }
        settle(probe, shared, started, &mut order).await?;
    }
    Err(format!(
        "an interleaved group took more than {MAX_STEPS} steps: {}",
        order.join(" ")
    ))
}

/// Puts every lock waiter back to running, so [`settle`] asks the database
/// again.
fn wake_waiters(shared: &Shared) {
    for t in lock(&shared.txs).iter_mut() {
        if matches!(t.status, Status::Waits(_)) {
            t.status = Status::Running;
        }
    }
}

/// Waits until no transaction of the group runs: each at its gate, done,
/// blocked, or waiting on a lock the database reports. A transaction that
/// ended may have freed a waiter: waiters are asked again.
async fn settle(
    probe: &Probe,
    shared: &Shared,
    started: Instant,
    order: &mut Vec<String>,
) -> Result<(), String> {
    let mut ended = done_count(shared);
    // Bounded by REAL_TIME_GUARD.
    loop {
        let now_ended = done_count(shared);
        if now_ended > ended {
            ended = now_ended;
            wake_waiters(shared);
        }
        let running: Vec<(usize, Option<i64>)> = lock(&shared.txs)
            .iter()
            .enumerate()
            .filter(|(_, t)| t.status == Status::Running)
            .map(|(i, t)| (i, t.session))
            .collect();
        if running.is_empty() {
            return Ok(());
        }
        if started.elapsed() > REAL_TIME_GUARD {
            return Err(format!(
                "an interleaved group did not settle within {}s of real time \
                 (transactions still running: {:?})",
                REAL_TIME_GUARD.as_secs(),
                running.iter().map(|(i, _)| i).collect::<Vec<_>>()
            ));
        }
        tokio::select! {
            biased;
            _ = shared.changed.notified() => continue,
            _ = tokio::time::sleep(POLL) => {}
        }
        for (i, session) in running {
            let Some(s) = session else { continue };
            let holders = probe(s).await?;
            if holders.is_empty() {
                continue;
            }
            let mut txs = lock(&shared.txs);
            // It may have reached its gate meanwhile: only a transaction
            // still running is marked waiting.
            if txs[i].status == Status::Running {
                // Logged once per wait: while PostgreSQL breaks a
                // deadlock the wait is read again every round.
                if !txs[i].wait_logged {
                    order.push(format!("{i}:waits"));
                    txs[i].wait_logged = true;
                }
                txs[i].waits(holders);
            }
        }
    }
}

fn done_count(shared: &Shared) -> usize {
    lock(&shared.txs)
        .iter()
        .filter(|t| t.status == Status::Done)
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasehold_core::statement_gate::{BEGIN, COMMIT};

    /// Three gated calls on a runtime: each step the seed chooses runs
    /// alone, so the order the statements ran in is the order logged, and
    /// one seed gives one order.
    #[test]
    fn one_seed_gives_one_statement_order() {
        use leasehold_core::statement_gate::{step, Step};
        use std::sync::atomic::{AtomicUsize, Ordering};
        let run = |seed: u64| {
            let driver = Driver::new().expect("a driver");
            let trace = Arc::new(Mutex::new(Vec::new()));
            let calls: Vec<Call> = (0..3usize)
                .map(|c| {
                    let trace = trace.clone();
                    Box::pin(async move {
                        for s in 0..3 {
                            step(Step::Before("stmt")).await;
                            lock(&trace).push((c, s));
                        }
                        Box::new(c) as Answer
                    }) as Call
                })
                .collect();
            let probe: Probe = Arc::new(|_| Box::pin(async { Ok(Vec::new()) }));
            let (answers, order, ended) = driver
                .run(run_group(probe, calls, SimRng::new(seed)))
                .expect("ran")
                .expect("scheduled");
            assert_eq!(ended.len(), 3, "every call ended once: {ended:?}");
            let answers: Vec<usize> = answers
                .into_iter()
                .map(|a| *a.downcast::<usize>().expect("usize"))
                .collect();
            assert_eq!(answers, [0, 1, 2]);
            let t = lock(&trace).clone();
            (t, order)
        };
        let seen = AtomicUsize::new(0);
        let (a, order_a) = run(7);
        for _ in 0..3 {
            let (b, order_b) = run(7);
            assert_eq!(a, b);
            assert_eq!(order_a, order_b);
            seen.fetch_add(1, Ordering::Relaxed);
        }
        assert_eq!(a.len(), 9);
        let orders: std::collections::BTreeSet<_> = (0..20).map(|s| run(s).1).collect();
        assert!(
            orders.len() > 1,
            "seeds choose different orders: {orders:?}"
        );
    }

    fn no_waits() -> Probe {
        Arc::new(|_| Box::pin(async { Ok(Vec::new()) }))
    }

    /// Two calls no gate precedes (reads) run at once: the later one in
    /// call order finishing first must not put it first in the history.
    #[test]
    fn calls_that_run_at_once_are_answered_in_call_order() {
        let driver = Driver::new().expect("a driver");
        for _ in 0..3 {
            let calls: Vec<Call> = vec![
                Box::pin(async {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    Box::new(0usize) as Answer
                }),
                Box::pin(async { Box::new(1usize) as Answer }),
            ];
            let (_, order, effect) = driver
                .run(run_group(no_waits(), calls, SimRng::new(1)))
                .expect("ran")
                .expect("scheduled");
            assert_eq!(order, "", "no gate, no step");
            assert_eq!(effect, [0, 1]);
        }
    }

    /// A transaction that decides at a scan takes effect there, and no
    /// other transaction commits between its scan and its commit (the
    /// commit order follows the decisions, `interleave_candidates.rs`);
    /// the other's other steps may still run in between.
    #[test]
    fn a_decision_orders_a_transaction_before_later_commits() {
        use leasehold_core::statement_gate::step;
        let driver = Driver::new().expect("a driver");
        let (mut inside, mut before) = (0, 0);
        for seed in 0..40 {
            let calls: Vec<Call> = vec![
                Box::pin(async {
                    step(Step::Before(BEGIN)).await;
                    step(Step::Decides("scan")).await;
                    step(Step::Before(COMMIT)).await;
                    Box::new(()) as Answer
                }),
                Box::pin(async {
                    step(Step::Before(BEGIN)).await;
                    step(Step::Before("write")).await;
                    step(Step::Before(COMMIT)).await;
                    Box::new(()) as Answer
                }),
            ];
            let (_, order, effect) = driver
                .run(run_group(no_waits(), calls, SimRng::new(seed)))
                .expect("ran")
                .expect("scheduled");
            let at = |what: &str| order.find(what).expect(what);
            let (scan, commit0, commit1) = (at(":0:scan"), at(":0:commit"), at(":1:commit"));
            assert!(
                !(scan < commit1 && commit1 < commit0),
                "seed {seed}: a commit between the scan and its commit: {order}"
            );
            let want = if scan < commit1 { [0, 1] } else { [1, 0] };
            assert_eq!(effect, want, "seed {seed}: {order}");
            let write = at(":1:write");
            if scan < write && write < commit0 {
                inside += 1;
            }
            if commit1 < scan {
                before += 1;
            }
        }
        assert!(inside > 0, "no seed ran another step inside the decision");
        assert!(before > 0, "no seed committed the other before the scan");
    }
}
