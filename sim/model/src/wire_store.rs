//! The one table between the [`Store`] trait and the wire: a [`WireStore`]
//! turns every store call into a [`WireOp`] sent through a [`WireCall`] and
//! its [`WireReply`] back into the call's answer, and [`apply`] serves a
//! `WireOp` on a real store. Both simulators (leasehold's engine and the
//! madsim tests) carry requests their own way and share this table, so a
//! store operation means the same thing, and records the same history, in
//! both.

use crate::history::ReadRow;
use crate::wire::{WireBatch, WireError, WireOp, WireReply};
use leasehold_core::{
    BatchAnswer, BatchRequest, CancelOutcome, ClaimRequest, CrashReport, FireRequest, JobId,
    JobRecord, Lease, ListRequest, ListSchedulesRequest, NewJob, Patience, PruneRequest, Release,
    ReleaseRequest, RenewRequest, Renewal, RetryOutcome, Schedule, ScheduleRecord, Store,
    StoreError, StoreTime, SweepRequest, Token,
};
use std::collections::BTreeMap;
use std::future::Future;

/// Carries one request to the store and brings its answer back: a
/// `WireReply::Error` for an error the store answered, `Err` for a request
/// whose outcome is unknown (lost, timed out: `StoreError::Unavailable`).
pub trait WireCall: Send + Sync + 'static {
    /// Sends `op` and waits for its answer.
    fn call(&self, op: WireOp) -> impl Future<Output = Result<WireReply, StoreError>> + Send;

    /// Whether this carrier sends a [`Store::batch`] as one message
    /// ([`WireCall::call_batch`]); otherwise a batch goes as its separate
    /// requests ([`leasehold_core::batch_by_parts`]).
    const BATCHES: bool = false;

    /// Sends a batch as one message and answers each of its requests (only
    /// called when [`WireCall::BATCHES`] is set).
    fn call_batch(
        &self,
        req: BatchRequest,
    ) -> impl Future<Output = Result<BatchAnswer, StoreError>> + Send {
        let _ = req;
        async {
            Err(StoreError::Corrupt(
                "this carrier sends no batch message".into(),
            ))
        }
    }

    /// [`WireCall::call_batch`], waited for with `patience` (see
    /// [`Store::batch_within`]); a carrier that merges its callers'
    /// batches gives a caller running one its grace.
    fn call_batch_within(
        &self,
        req: BatchRequest,
        patience: Patience,
    ) -> impl Future<Output = Result<BatchAnswer, StoreError>> + Send {
        patience.run(self.call_batch(req))
    }

    /// The caller's own wall clock to send with a sweep, for the catalogue's
    /// `sweeper-own-clock` bug; `None` (the protocol: the store's clock
    /// alone decides expiry) by default.
    fn sweep_wall(&self) -> Option<StoreTime> {
        None
    }

    /// [`Store::work_available`] as this carrier hears of it (wake-ups the
    /// store host sends); never, by default: the worker polls.
    fn work_available(&self, queue: &str) -> impl Future<Output = ()> + Send {
        let _ = queue;
        std::future::pending()
    }
}

/// A [`Store`] whose every call travels as one wire request.
pub struct WireStore<C>(C);

impl<C: WireCall> WireStore<C> {
    /// A store that sends its calls through `carrier`.
    pub fn new(carrier: C) -> Self {
        WireStore(carrier)
    }

    /// The carrier.
    pub fn carrier(&self) -> &C {
        &self.0
    }
}

fn unexpected(r: WireReply) -> StoreError {
    StoreError::Corrupt(format!("unexpected answer {r:?}"))
}

impl<C: WireCall> Store for WireStore<C> {
    async fn now(&self) -> Result<StoreTime, StoreError> {
        match self.0.call(WireOp::Now).await? {
            WireReply::Time(t) => Ok(t),
            r => Err(unexpected(r)),
        }
    }
    async fn enqueue(&self, job: NewJob) -> Result<JobId, StoreError> {
        match self.0.call(WireOp::Enqueue(job)).await? {
            WireReply::Job(j) => Ok(j),
            r => Err(unexpected(r)),
        }
    }
    async fn claim(&self, req: ClaimRequest) -> Result<Vec<Lease>, StoreError> {
        match self.0.call(WireOp::Claim(req)).await? {
            WireReply::Leases(l) => Ok(l),
            r => Err(unexpected(r)),
        }
    }
    async fn renew(&self, req: RenewRequest) -> Result<Renewal, StoreError> {
        match self.0.call(WireOp::Renew(req)).await? {
            WireReply::Renewal(r) => Ok(r),
            r => Err(unexpected(r)),
        }
    }
    async fn release(&self, req: ReleaseRequest) -> Result<Release, StoreError> {
        match self.0.call(WireOp::Release(req)).await? {
            WireReply::Release(r) => Ok(r),
            r => Err(unexpected(r)),
        }
    }
    async fn batch(&self, req: BatchRequest) -> Result<BatchAnswer, StoreError> {
        if C::BATCHES {
            self.0.call_batch(req).await
        } else {
            leasehold_core::batch_by_parts(self, req).await
        }
    }
    async fn batch_within(
        &self,
        req: BatchRequest,
        patience: Patience,
    ) -> Result<BatchAnswer, StoreError> {
        if C::BATCHES {
            self.0.call_batch_within(req, patience).await
        } else {
            patience
                .run(leasehold_core::batch_by_parts(self, req))
                .await
        }
    }
    async fn sweep(&self, req: SweepRequest) -> Result<Vec<CrashReport>, StoreError> {
        let wall = self.0.sweep_wall();
        match self.0.call(WireOp::Sweep(req, wall)).await? {
            WireReply::Swept(r) => Ok(r),
            r => Err(unexpected(r)),
        }
    }
    async fn cancel(&self, job: JobId) -> Result<CancelOutcome, StoreError> {
        match self.0.call(WireOp::Cancel(job)).await? {
            WireReply::Cancel(c) => Ok(c),
            r => Err(unexpected(r)),
        }
    }
    async fn retry_dead(&self, job: JobId) -> Result<RetryOutcome, StoreError> {
        match self.0.call(WireOp::RetryDead(job)).await? {
            WireReply::Retry(r) => Ok(r),
            r => Err(unexpected(r)),
        }
    }
    async fn get(&self, job: JobId) -> Result<Option<JobRecord>, StoreError> {
        match self.0.call(WireOp::Get(job)).await? {
            WireReply::Row(r) => Ok(r),
            r => Err(unexpected(r)),
        }
    }
    async fn list(&self, req: ListRequest) -> Result<Vec<JobRecord>, StoreError> {
        match self.0.call(WireOp::List(req)).await? {
            WireReply::Rows(r) => Ok(r),
            r => Err(unexpected(r)),
        }
    }
    async fn put_schedule(&self, schedule: Schedule) -> Result<(), StoreError> {
        match self.0.call(WireOp::PutSchedule(schedule)).await? {
            WireReply::Done => Ok(()),
            r => Err(unexpected(r)),
        }
    }
    async fn remove_schedule(&self, name: String) -> Result<bool, StoreError> {
        match self.0.call(WireOp::RemoveSchedule(name)).await? {
            WireReply::Removed(b) => Ok(b),
            r => Err(unexpected(r)),
        }
    }
    async fn fire(&self, req: FireRequest) -> Result<JobId, StoreError> {
        match self.0.call(WireOp::Fire(req)).await? {
            WireReply::Job(j) => Ok(j),
            r => Err(unexpected(r)),
        }
    }
    async fn list_schedules(
        &self,
        req: ListSchedulesRequest,
    ) -> Result<Vec<ScheduleRecord>, StoreError> {
        match self.0.call(WireOp::ListSchedules(req)).await? {
            WireReply::Schedules(s) => Ok(s),
            r => Err(unexpected(r)),
        }
    }
    async fn prune(&self, req: PruneRequest) -> Result<Vec<JobId>, StoreError> {
        match self.0.call(WireOp::Prune(req)).await? {
            WireReply::Pruned(ids) => Ok(ids),
            r => Err(unexpected(r)),
        }
    }
    fn work_available(&self, queue: &str) -> impl Future<Output = ()> + Send {
        self.0.work_available(queue)
    }
}

/// A store's answer as a wire reply.
pub fn wire<T>(r: Result<T, StoreError>, ok: impl FnOnce(T) -> WireReply) -> WireReply {
    match r {
        Ok(v) => ok(v),
        Err(e) => WireReply::Error(WireError::of(&e)),
    }
}

/// Serves `op` on `store`. A sweep's wall clock (the `sweeper-own-clock`
/// bug) is ignored here: a server that carries that bug handles
/// `WireOp::Sweep` itself before calling this.
pub async fn apply<S: Store>(store: &S, op: WireOp) -> WireReply {
    match op {
        WireOp::Now => wire(store.now().await, WireReply::Time),
        WireOp::Enqueue(j) => wire(store.enqueue(j).await, WireReply::Job),
        WireOp::Claim(c) => wire(store.claim(c).await, WireReply::Leases),
        WireOp::Renew(r) => wire(store.renew(r).await, WireReply::Renewal),
        WireOp::Release(r) => wire(store.release(r).await, WireReply::Release),
        WireOp::Sweep(r, _) => wire(store.sweep(r).await, WireReply::Swept),
        WireOp::Cancel(j) => wire(store.cancel(j).await, WireReply::Cancel),
        WireOp::Get(j) => wire(store.get(j).await, WireReply::Row),
        WireOp::List(l) => wire(store.list(l).await, WireReply::Rows),
        WireOp::PutSchedule(s) => wire(store.put_schedule(s).await, |()| WireReply::Done),
        WireOp::RemoveSchedule(n) => wire(store.remove_schedule(n).await, WireReply::Removed),
        WireOp::Fire(f) => wire(store.fire(f).await, WireReply::Job),
        WireOp::ListSchedules(l) => wire(store.list_schedules(l).await, WireReply::Schedules),
        WireOp::Prune(p) => wire(store.prune(p).await, WireReply::Pruned),
        WireOp::RetryDead(j) => wire(store.retry_dead(j).await, WireReply::Retry),
    }
}

/// Serves a batch with the store's own `batch` (one transaction on the SQL
/// stores) and answers each part with its reply and the rows it touched.
///
/// The rows are read once, after the whole batch; a row touched by several
/// parts is given to one of them only, since the other parts' images of it
/// cannot be read any more (the checker compares the model's row after
/// each part with the image that part carries, and dates the row's
/// version by the part that carries it). That part is the last one whose
/// token is the row's token: the part that made the row what it is. A
/// part with another token (a stale release refused in the same batch as
/// the holder's own) did not change it, and giving it the row would
/// credit the stale token with the holder's write; when no part holds the
/// row's token, the last part gets it. A store that answers a different
/// number of requests than it was asked leaves every part unknown.
pub async fn apply_batch<S: Store>(
    store: &S,
    batch: WireBatch,
) -> Vec<(u64, WireReply, Vec<ReadRow>)> {
    let n = batch.parts.len();
    let answers: Vec<WireReply> = match batch.request() {
        Ok(req) => match store.batch(req).await {
            Ok(a) => a
                .releases
                .into_iter()
                .map(|r| wire(r, WireReply::Release))
                .chain(a.claims.into_iter().map(|c| wire(c, WireReply::Leases)))
                .collect(),
            Err(e) => vec![WireReply::Error(WireError::of(&e)); n],
        },
        Err(what) => vec![WireReply::Error(WireError::of(&StoreError::Corrupt(what))); n],
    };
    let replies: Vec<WireReply> = if answers.len() == n {
        answers
    } else {
        let missing = WireReply::Error(WireError::Unavailable(format!(
            "the store answered {} of {n} requests in the batch",
            answers.len()
        )));
        vec![missing; n]
    };
    let jobs: Vec<Vec<JobId>> = batch
        .parts
        .iter()
        .zip(&replies)
        .map(|((_, op), r)| touched_jobs(op, r))
        .collect();
    let mut touchers: BTreeMap<JobId, Vec<usize>> = BTreeMap::new();
    for (i, js) in jobs.iter().enumerate() {
        for j in js {
            touchers.entry(*j).or_default().push(i);
        }
    }
    let mut rows: Vec<Vec<ReadRow>> = vec![Vec::new(); n];
    let ids: Vec<JobId> = touchers.keys().copied().collect();
    let read = read_rows(store, ids).await;
    for ((j, parts), row) in touchers.into_iter().zip(read) {
        if let Some(row) = row {
            let holder = parts
                .iter()
                .rev()
                .find(|&&i| part_token(&batch.parts[i].1, &replies[i], j) == Some(row.token));
            let i = holder.or(parts.last()).copied().unwrap_or(0);
            rows[i].push(ReadRow::of(&row));
        }
    }
    // In each part's own order of jobs, as a lone request would read them.
    for (i, r) in rows.iter_mut().enumerate() {
        r.sort_by_key(|row| jobs[i].iter().position(|j| *j == row.job));
    }
    batch
        .parts
        .into_iter()
        .zip(replies)
        .zip(rows)
        .map(|(((id, _), reply), after)| (id, reply, after))
        .collect()
}

/// The rows a request touched, read right after it: the answer checks
/// compare them with the reference model, and each store event is given the
/// true time of the request after which its row had that version.
pub async fn touched<S: Store>(store: &S, op: &WireOp, reply: &WireReply) -> Vec<ReadRow> {
    let jobs = touched_jobs(op, reply);
    read_rows(store, jobs)
        .await
        .iter()
        .flatten()
        .map(ReadRow::of)
        .collect()
}

/// The rows of `jobs` in one [`Store::get_many`], one entry per id (all
/// `None` if the read failed, as a failed `get` of each would leave them).
async fn read_rows<S: Store>(store: &S, jobs: Vec<JobId>) -> Vec<Option<JobRecord>> {
    let n = jobs.len();
    match store.get_many(jobs).await {
        Ok(rows) if rows.len() == n => rows,
        _ => vec![None; n],
    }
}

/// The token under which a part of a batch acted on `job`: a release's
/// or renew's own token, a claim's granted one.
fn part_token(op: &WireOp, reply: &WireReply, job: JobId) -> Option<Token> {
    match (op, reply) {
        (WireOp::Renew(r), _) => Some(r.token),
        (WireOp::Release(r), _) => Some(r.token),
        (_, WireReply::Leases(ls)) => ls.iter().find(|l| l.job == job).map(|l| l.token),
        _ => None,
    }
}

/// The jobs a request touched, in the order its rows are read.
fn touched_jobs(op: &WireOp, reply: &WireReply) -> Vec<JobId> {
    let mut jobs: Vec<JobId> = match (op, reply) {
        (WireOp::Renew(r), _) => vec![r.job],
        (WireOp::Release(r), _) => vec![r.job],
        (WireOp::Cancel(j), _) => vec![*j],
        (WireOp::RetryDead(j), _) => vec![*j],
        (_, WireReply::Job(j)) => vec![*j],
        (_, WireReply::Leases(ls)) => ls.iter().map(|l| l.job).collect(),
        (_, WireReply::Swept(rs)) => rs.iter().map(|r| r.job).collect(),
        _ => Vec::new(),
    };
    jobs.dedup();
    jobs
}
