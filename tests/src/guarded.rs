//! A store that owns a guard (a temp directory, a schema) dropped after it.

use leasehold_core::{
    BatchAnswer, BatchRequest, CancelOutcome, ClaimRequest, CrashReport, FireRequest, JobId,
    JobRecord, Lease, ListRequest, ListSchedulesRequest, NewJob, Patience, Release, ReleaseRequest,
    RenewRequest, Renewal, Schedule, ScheduleRecord, Store, StoreError, StoreTime, SweepRequest,
};

/// `store`, with `guard` dropped after it (fields drop in order).
pub struct Guarded<S, G> {
    pub(crate) store: S,
    pub(crate) _guard: G,
}

impl<S, G> Guarded<S, G> {
    /// Wraps `store` so that `guard` lives exactly as long.
    pub fn new(store: S, guard: G) -> Self {
        Guarded {
            store,
            _guard: guard,
        }
    }

    /// The wrapped store.
    pub fn inner(&self) -> &S {
        &self.store
    }
}

impl<S: Store, G: Send + Sync + 'static> Store for Guarded<S, G> {
    async fn now(&self) -> Result<StoreTime, StoreError> {
        self.store.now().await
    }
    async fn enqueue(&self, job: NewJob) -> Result<JobId, StoreError> {
        self.store.enqueue(job).await
    }
    async fn claim(&self, req: ClaimRequest) -> Result<Vec<Lease>, StoreError> {
        self.store.claim(req).await
    }
    async fn renew(&self, req: RenewRequest) -> Result<Renewal, StoreError> {
        self.store.renew(req).await
    }
    async fn release(&self, req: ReleaseRequest) -> Result<Release, StoreError> {
        self.store.release(req).await
    }
    // Forwarded, not the trait's one-by-one default: the conformance batch
    // cases must reach the adapters' own one-transaction batches.
    async fn batch(&self, req: BatchRequest) -> Result<BatchAnswer, StoreError> {
        self.store.batch(req).await
    }
    async fn batch_within(
        &self,
        req: BatchRequest,
        patience: Patience,
    ) -> Result<BatchAnswer, StoreError> {
        self.store.batch_within(req, patience).await
    }
    async fn sweep(&self, req: SweepRequest) -> Result<Vec<CrashReport>, StoreError> {
        self.store.sweep(req).await
    }
    async fn cancel(&self, job: JobId) -> Result<CancelOutcome, StoreError> {
        self.store.cancel(job).await
    }
    async fn get(&self, job: JobId) -> Result<Option<JobRecord>, StoreError> {
        self.store.get(job).await
    }
    async fn list(&self, req: ListRequest) -> Result<Vec<JobRecord>, StoreError> {
        self.store.list(req).await
    }
    async fn put_schedule(&self, schedule: Schedule) -> Result<(), StoreError> {
        self.store.put_schedule(schedule).await
    }
    async fn remove_schedule(&self, name: String) -> Result<bool, StoreError> {
        self.store.remove_schedule(name).await
    }
    async fn fire(&self, req: FireRequest) -> Result<JobId, StoreError> {
        self.store.fire(req).await
    }
    async fn list_schedules(
        &self,
        req: ListSchedulesRequest,
    ) -> Result<Vec<ScheduleRecord>, StoreError> {
        self.store.list_schedules(req).await
    }
    fn work_available(&self, queue: &str) -> impl std::future::Future<Output = ()> + Send {
        self.store.work_available(queue)
    }
}
