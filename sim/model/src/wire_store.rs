//! The one table between the [`Store`] trait and the wire: a [`WireStore`]
//! turns every store call into a [`WireOp`] sent through a [`WireCall`] and
//! its [`WireReply`] back into the call's answer, and [`apply`] serves a
//! `WireOp` on a real store. Both simulators (turmoil's engine and the
//! madsim tests) carry requests their own way and share this table, so a
//! store operation means the same thing, and records the same history, in
//! both.

use crate::history::ReadRow;
use crate::wire::{WireError, WireOp, WireReply};
use leasehold_core::{
    CancelOutcome, ClaimRequest, CrashReport, FireRequest, JobId, JobRecord, Lease, ListRequest,
    ListSchedulesRequest, NewJob, Release, ReleaseRequest, RenewRequest, Renewal, Schedule,
    ScheduleRecord, Store, StoreError, StoreTime, SweepRequest,
};
use std::future::Future;

/// Carries one request to the store and brings its answer back: a
/// `WireReply::Error` for an error the store answered, `Err` for a request
/// whose outcome is unknown (lost, timed out: `StoreError::Unavailable`).
pub trait WireCall: Send + Sync + 'static {
    /// Sends `op` and waits for its answer.
    fn call(&self, op: WireOp) -> impl Future<Output = Result<WireReply, StoreError>> + Send;

    /// The caller's own wall clock to send with a sweep, for the catalogue's
    /// `sweeper-own-clock` bug; `None` (the protocol: the store's clock
    /// alone decides expiry) by default.
    fn sweep_wall(&self) -> Option<StoreTime> {
        None
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
    }
}

/// The rows a request touched, read right after it: the answer checks
/// compare them with the reference model, and each store event is given the
/// true time of the request after which its row had that version.
pub async fn touched<S: Store>(store: &S, op: &WireOp, reply: &WireReply) -> Vec<ReadRow> {
    let mut jobs: Vec<JobId> = match (op, reply) {
        (WireOp::Renew(r), _) => vec![r.job],
        (WireOp::Release(r), _) => vec![r.job],
        (WireOp::Cancel(j), _) => vec![*j],
        (_, WireReply::Job(j)) => vec![*j],
        (_, WireReply::Leases(ls)) => ls.iter().map(|l| l.job).collect(),
        (_, WireReply::Swept(rs)) => rs.iter().map(|r| r.job).collect(),
        _ => Vec::new(),
    };
    jobs.dedup();
    let mut out = Vec::with_capacity(jobs.len());
    for j in jobs {
        if let Ok(Some(row)) = store.get(j).await {
            out.push(ReadRow::of(&row));
        }
    }
    out
}
