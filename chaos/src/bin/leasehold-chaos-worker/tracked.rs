//! One `Worker`'s view of the process's shared store.
//!
//! CHAOS ONLY (a production process hands every Worker the same
//! `Arc<Store>`): each call passes straight through to the shared store,
//! and its writes are counted on the process's in-flight board while they
//! are out, so the nemesis can aim `kill-merged` and `kill-writer-queued`.
//! Merging is untouched: every Worker's `batch` still reaches the one
//! store and its `BatchMerger`.

use leasehold_chaos::inflight::{Call, InFlightBoard};
use leasehold_core::{
    BatchAnswer, BatchRequest, CancelOutcome, ClaimRequest, CrashReport, FireRequest, JobId,
    JobRecord, Lease, ListRequest, ListSchedulesRequest, NewJob, Patience, Release, ReleaseRequest,
    RenewRequest, Renewal, Schedule, ScheduleRecord, Store, StoreError, StoreTime, SweepRequest,
};
use std::sync::Arc;

/// Worker `index`'s handle on the shared store `S`.
pub struct Tracked<S> {
    inner: Arc<S>,
    index: usize,
    board: Arc<InFlightBoard>,
}

impl<S> Tracked<S> {
    /// Worker `index`'s view of `inner`, counted on `board`.
    pub fn new(inner: Arc<S>, index: usize, board: Arc<InFlightBoard>) -> Self {
        Tracked {
            inner,
            index,
            board,
        }
    }
}

impl<S: Store> Store for Tracked<S> {
    async fn now(&self) -> Result<StoreTime, StoreError> {
        self.inner.now().await
    }
    async fn enqueue(&self, job: NewJob) -> Result<JobId, StoreError> {
        self.inner.enqueue(job).await
    }
    async fn claim(&self, req: ClaimRequest) -> Result<Vec<Lease>, StoreError> {
        let _out = self.board.enter(self.index, Call::Write);
        self.inner.claim(req).await
    }
    async fn renew(&self, req: RenewRequest) -> Result<Renewal, StoreError> {
        let _out = self.board.enter(self.index, Call::Write);
        self.inner.renew(req).await
    }
    async fn release(&self, req: ReleaseRequest) -> Result<Release, StoreError> {
        let _out = self.board.enter(self.index, Call::Write);
        self.inner.release(req).await
    }
    async fn batch(&self, req: BatchRequest) -> Result<BatchAnswer, StoreError> {
        let _out = self.board.enter(self.index, Call::Batch);
        self.inner.batch(req).await
    }
    async fn batch_within(
        &self,
        req: BatchRequest,
        patience: Patience,
    ) -> Result<BatchAnswer, StoreError> {
        let _out = self.board.enter(self.index, Call::Batch);
        self.inner.batch_within(req, patience).await
    }
    async fn sweep(&self, req: SweepRequest) -> Result<Vec<CrashReport>, StoreError> {
        self.inner.sweep(req).await
    }
    async fn cancel(&self, job: JobId) -> Result<CancelOutcome, StoreError> {
        self.inner.cancel(job).await
    }
    async fn get(&self, job: JobId) -> Result<Option<JobRecord>, StoreError> {
        self.inner.get(job).await
    }
    async fn list(&self, req: ListRequest) -> Result<Vec<JobRecord>, StoreError> {
        self.inner.list(req).await
    }
    async fn put_schedule(&self, schedule: Schedule) -> Result<(), StoreError> {
        self.inner.put_schedule(schedule).await
    }
    async fn remove_schedule(&self, name: String) -> Result<bool, StoreError> {
        self.inner.remove_schedule(name).await
    }
    async fn fire(&self, req: FireRequest) -> Result<JobId, StoreError> {
        self.inner.fire(req).await
    }
    async fn list_schedules(
        &self,
        req: ListSchedulesRequest,
    ) -> Result<Vec<ScheduleRecord>, StoreError> {
        self.inner.list_schedules(req).await
    }
    fn work_available(&self, queue: &str) -> impl std::future::Future<Output = ()> + Send {
        // The shared store's wake-ups: its LISTEN connection on PostgreSQL.
        self.inner.work_available(queue)
    }
}
