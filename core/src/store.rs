//! The storage interface every adapter implements.
//!
//! One small request struct per operation. Every adapter evaluates the
//! operation by loading the affected rows, applying the [`crate::transition`]
//! function, and persisting the result with a version check, atomically.
//!
//! Errors: [`StoreError::Unavailable`] means the outcome is unknown (the
//! request may have committed); all other errors are definite rejections
//! that changed nothing.

use crate::error::{InputError, StoreError};
use crate::history::CrashReport;
use crate::ids::{JobId, Token, WorkerId};
use crate::job::{
    CancelOutcome, JobRecord, Lease, NewJob, Outcome, Release, Renewal, RetryOutcome,
};
use crate::job_counts::{CountsBuilder, JobCounts};
use crate::patience::Patience;
use crate::schedule::{FireRequest, ListSchedulesRequest, Schedule, ScheduleRecord};
use crate::time::{Millis, StoreTime};
use crate::transition::PruneRequest;
use serde::{Deserialize, Serialize};
use std::future::Future;

/// Ask for up to `max` leases on `queue` for `worker`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimRequest {
    /// Who claims.
    pub worker: WorkerId,
    /// From which queue.
    pub queue: String,
    /// Lease duration.
    pub lease: Millis,
    /// At most this many leases.
    pub max: u32,
}

/// Extend the lease `token` on `job` by `lease` from the store's now.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RenewRequest {
    /// The job.
    pub job: JobId,
    /// The lease's token.
    pub token: Token,
    /// New lease duration from now.
    pub lease: Millis,
}

/// End the lease `token` on `job` with `outcome`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReleaseRequest {
    /// The job.
    pub job: JobId,
    /// The lease's token.
    pub token: Token,
    /// How it ended.
    pub outcome: Outcome,
}

/// Most requests of each kind one [`BatchRequest`] carries: the worker
/// runtime sends at most its concurrency of each, and adapters size one
/// transaction by it.
pub const MAX_BATCH_REQUESTS: usize = 10_000;

/// Many releases, then many claims, answered per request by
/// [`Store::batch`]: what one worker has to say to the store at once.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchRequest {
    /// Releases, applied first, in order.
    pub releases: Vec<ReleaseRequest>,
    /// Claims, applied after every release, in order.
    pub claims: Vec<ClaimRequest>,
}

/// One answer per request of a [`BatchRequest`], in the same order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BatchAnswer {
    /// The answer of each release.
    pub releases: Vec<Result<Release, StoreError>>,
    /// The leases (or the refusal) of each claim.
    pub claims: Vec<Result<Vec<Lease>, StoreError>>,
}

/// Reclaim up to `limit` expired leases.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepRequest {
    /// At most this many reclaims.
    pub limit: u32,
}

/// Page through all jobs in id order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListRequest {
    /// Only jobs with an id greater than this.
    pub after: Option<JobId>,
    /// At most this many.
    pub limit: u32,
}

/// [`Store::batch`] as separate requests: every release at once and, once
/// each is answered, every claim at once (the trait's default, for a store
/// without a batch of its own, and for a wrapper that forwards `batch` to
/// it only sometimes). First polls happen in list order.
pub async fn batch_by_parts<S: Store + ?Sized>(
    store: &S,
    req: BatchRequest,
) -> Result<BatchAnswer, StoreError> {
    let releases =
        crate::join::join_all(req.releases.into_iter().map(|r| store.release(r)).collect()).await;
    let claims =
        crate::join::join_all(req.claims.into_iter().map(|c| store.claim(c)).collect()).await;
    Ok(BatchAnswer { releases, claims })
}

/// [`Store::get_many`] as one [`Store::get`] per id, in order (the trait's
/// default): the first error ends it.
pub async fn get_one_by_one<S: Store + ?Sized>(
    store: &S,
    jobs: Vec<JobId>,
) -> Result<Vec<Option<JobRecord>>, StoreError> {
    let mut out = Vec::with_capacity(jobs.len());
    for job in jobs {
        out.push(store.get(job).await?);
    }
    Ok(out)
}

/// Puts rows read in any order back in the order of `jobs`, one entry per
/// id (`None` where no row came back): how a store that reads
/// [`Store::get_many`]'s rows in one statement answers it.
pub fn in_asked_order(
    jobs: &[JobId],
    rows: impl IntoIterator<Item = JobRecord>,
) -> Vec<Option<JobRecord>> {
    let by_id: std::collections::BTreeMap<JobId, JobRecord> =
        rows.into_iter().map(|r| (r.id, r)).collect();
    jobs.iter().map(|j| by_id.get(j).cloned()).collect()
}

/// A job store. Implemented by the memory, SQLite and Postgres adapters, and
/// by the simulator's remote client.
pub trait Store: Send + Sync + 'static {
    /// The store's clock.
    fn now(&self) -> impl Future<Output = Result<StoreTime, StoreError>> + Send;
    /// Adds a job; answers its id (the existing id for a repeated idempotency key).
    fn enqueue(&self, job: NewJob) -> impl Future<Output = Result<JobId, StoreError>> + Send;
    /// Claims up to `req.max` due jobs.
    fn claim(
        &self,
        req: ClaimRequest,
    ) -> impl Future<Output = Result<Vec<Lease>, StoreError>> + Send;
    /// Extends a lease.
    fn renew(&self, req: RenewRequest) -> impl Future<Output = Result<Renewal, StoreError>> + Send;
    /// Ends a lease.
    fn release(
        &self,
        req: ReleaseRequest,
    ) -> impl Future<Output = Result<Release, StoreError>> + Send;
    /// Applies `req.releases`, then `req.claims`, and answers each request
    /// exactly as [`Store::release`] and [`Store::claim`] would have alone
    /// (each lease fenced by its own token; the core's transitions decide).
    /// Every claim sees every release of the batch (a slot a release frees
    /// is claimable by the batch's claims). An outer error leaves the
    /// outcome of every request unknown ([`StoreError::Unavailable`]).
    ///
    /// The default sends every release at once and, once each is answered,
    /// every claim at once, so any store works and one slow or lost request
    /// never keeps the others from being sent: sent one after another, a
    /// release stuck behind another's lost message never left the worker
    /// while the batch's timeout ran, and its lease was reclaimed as if its
    /// worker had crashed (a madsim swarm seed). The SQL adapters answer the
    /// whole batch in one transaction. At most [`MAX_BATCH_REQUESTS`] of
    /// each kind.
    fn batch(
        &self,
        req: BatchRequest,
    ) -> impl Future<Output = Result<BatchAnswer, StoreError>> + Send {
        batch_by_parts(self, req)
    }
    /// [`Store::batch`], waited for with `patience` (what the `Worker`
    /// sends): past its limit the outcome is unknown
    /// ([`StoreError::Unavailable`]). A store that runs one caller's batch
    /// merged with others' (the SQL adapters, through
    /// [`crate::BatchMerger`]) lets a caller that is running such a batch
    /// finish it (see [`Patience`]), so that one caller's limit never
    /// throws away the others' answers. The default waits for
    /// [`Store::batch`] until the limit; a wrapper forwards this to the
    /// store it wraps.
    fn batch_within(
        &self,
        req: BatchRequest,
        patience: Patience,
    ) -> impl Future<Output = Result<BatchAnswer, StoreError>> + Send {
        patience.run(self.batch(req))
    }
    /// Reclaims expired leases; answers one crash report per reclaim.
    fn sweep(
        &self,
        req: SweepRequest,
    ) -> impl Future<Output = Result<Vec<CrashReport>, StoreError>> + Send;
    /// Cancels a job.
    fn cancel(&self, job: JobId) -> impl Future<Output = Result<CancelOutcome, StoreError>> + Send;
    /// An operator's retry: takes a `dead` job back to `pending` with a
    /// fresh attempt budget through [`crate::transition::retry`], with its
    /// audit event; answers `NotDead(state)` (nothing changed) for any
    /// other state, and [`InputError::UnknownJob`] for an unknown job.
    /// Never called by a worker, a sweeper or the simulator.
    ///
    /// The default refuses with [`InputError::Unsupported`], so a store
    /// written before this method existed still builds; the memory,
    /// SQLite and PostgreSQL adapters implement it.
    fn retry_dead(
        &self,
        job: JobId,
    ) -> impl Future<Output = Result<RetryOutcome, StoreError>> + Send {
        let _ = job;
        std::future::ready(Err(StoreError::Input(InputError::Unsupported {
            operation: "retry_dead",
        })))
    }
    /// Reads one job.
    fn get(&self, job: JobId)
        -> impl Future<Output = Result<Option<JobRecord>, StoreError>> + Send;
    /// Reads several jobs: one entry per id of `jobs`, in the order given
    /// (a repeated id answered each time), `None` for an unknown job. What
    /// a tool that inspects many rows calls instead of one [`Store::get`]
    /// per job, as the simulator does after every request.
    ///
    /// The default calls [`Store::get`] once per id
    /// ([`get_one_by_one`]), so a store written before this method
    /// existed still builds; the SQLite and PostgreSQL adapters read up to
    /// 1,000 ids in one statement. Each statement sees one snapshot; a
    /// longer list, split into several, may see writes committed between
    /// them.
    fn get_many(
        &self,
        jobs: Vec<JobId>,
    ) -> impl Future<Output = Result<Vec<Option<JobRecord>>, StoreError>> + Send {
        get_one_by_one(self, jobs)
    }
    /// Lists jobs in id order, for checks and exports.
    fn list(
        &self,
        req: ListRequest,
    ) -> impl Future<Output = Result<Vec<JobRecord>, StoreError>> + Send;
    /// Stores a schedule, replacing the one of the same name (an identical
    /// spec changes nothing).
    fn put_schedule(
        &self,
        schedule: Schedule,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// Removes a schedule; answers whether it existed. Its jobs stay.
    fn remove_schedule(
        &self,
        name: String,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;
    /// Enqueues the job of one plan time of a schedule, judged on the
    /// store's clock; answers its id (the existing one if that plan time
    /// already fired).
    fn fire(&self, req: FireRequest) -> impl Future<Output = Result<JobId, StoreError>> + Send;
    /// Lists schedules in name order.
    fn list_schedules(
        &self,
        req: ListSchedulesRequest,
    ) -> impl Future<Output = Result<Vec<ScheduleRecord>, StoreError>> + Send;
    /// Deletes up to `req.limit` terminal jobs that finished at or before
    /// `now − req.retention` (store clock), oldest finish first, and audit
    /// events written at or before `now − req.audit_retention`, in one
    /// atomic step; answers the pruned job ids. The guard is the core's
    /// ([`crate::transition::prune`]); a bad request is refused and changes
    /// nothing. A pruned job is an unknown job to every later operation,
    /// its idempotency key is free again, and its schedule's plan time
    /// never fires again (see `docs/RETENTION.md`).
    fn prune(
        &self,
        req: PruneRequest,
    ) -> impl Future<Output = Result<Vec<JobId>, StoreError>> + Send;
    /// Counts the jobs per queue and state, with each queue's oldest
    /// pending enqueue time and nearest running expiry (store time): what
    /// an operator's `leasehold status` shows.
    ///
    /// The default lists every job through [`Store::list`], page by page
    /// (at most [`LIST_ALL_MAX_ROWS`], then `complete` is false), so a
    /// store written before this method existed still builds; the memory,
    /// SQLite and PostgreSQL adapters count in one step instead.
    fn count_jobs(&self) -> impl Future<Output = Result<JobCounts, StoreError>> + Send {
        count_by_listing(self)
    }
    /// A hint that work may have become claimable on `queue`: resolves at
    /// the first such change committed **after this call returns** (the
    /// subscription is taken when the future is made, not when it is first
    /// polled), so a [`crate::Worker`] makes it before its claim and sleeps
    /// on it after a short claim, next to its poll interval.
    ///
    /// Only a hint: it may resolve without work (the worker claims once and
    /// waits again) and may miss work (the poll finds it). The default never
    /// resolves, so a store that cannot tell keeps polling. The memory,
    /// SQLite and PostgreSQL adapters implement it (see
    /// [`crate::worker::wake`]).
    fn work_available(&self, queue: &str) -> impl Future<Output = ()> + Send {
        let _ = queue;
        std::future::pending()
    }
}

/// Most rows [`list_all`] reads, so a runaway store cannot loop forever.
pub const LIST_ALL_MAX_ROWS: usize = 10_000_000;

/// Reads every job, page by page.
pub async fn list_all<S: Store>(store: &S) -> Result<Vec<JobRecord>, StoreError> {
    const PAGE: u32 = 1000;
    let mut out = Vec::new();
    let mut after = None;
    while out.len() < LIST_ALL_MAX_ROWS {
        let page = store.list(ListRequest { after, limit: PAGE }).await?;
        let n = page.len();
        after = page.last().map(|r| r.id);
        out.extend(page);
        if n < PAGE as usize {
            break;
        }
    }
    Ok(out)
}

/// Rows read per page by [`count_by_listing`].
pub const COUNT_PAGE: u32 = 1_000;

/// Counts by listing every job, page by page, up to [`LIST_ALL_MAX_ROWS`]
/// (the trait's default).
pub async fn count_by_listing<S: Store + ?Sized>(store: &S) -> Result<JobCounts, StoreError> {
    let mut counts = CountsBuilder::default();
    let (mut after, mut read) = (None, 0usize);
    while read < LIST_ALL_MAX_ROWS {
        let page = store
            .list(ListRequest {
                after,
                limit: COUNT_PAGE,
            })
            .await?;
        read += page.len();
        after = page.last().map(|r| r.id);
        for r in &page {
            counts.queue(&r.queue).add_job(r);
        }
        if page.len() < COUNT_PAGE as usize {
            return Ok(counts.finish(true));
        }
    }
    Ok(counts.finish(false))
}

/// Most schedules [`list_all_schedules`] reads.
pub const LIST_ALL_MAX_SCHEDULES: usize = 1_000_000;

/// Reads every schedule, page by page, in name order.
pub async fn list_all_schedules<S: Store>(store: &S) -> Result<Vec<ScheduleRecord>, StoreError> {
    const PAGE: u32 = 500;
    let mut out: Vec<ScheduleRecord> = Vec::new();
    let mut after = None;
    while out.len() < LIST_ALL_MAX_SCHEDULES {
        let page = store
            .list_schedules(ListSchedulesRequest { after, limit: PAGE })
            .await?;
        let n = page.len();
        after = page.last().map(|r| r.schedule.name.clone());
        out.extend(page);
        if n < PAGE as usize {
            break;
        }
    }
    Ok(out)
}
