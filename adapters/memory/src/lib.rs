//! # leasehold-memory
//!
//! The reference [`Store`]: the core transitions applied to rows held in
//! ordered maps under one lock, with an injectable store clock. The simulator
//! serves it to its workers over the simulated network.
//!
//! Invariants:
//! - every change goes through a `leasehold_core::transition` function, and
//!   is written only if the row's `version` is the one loaded;
//! - the history holds exactly one event per accepted transition, in commit
//!   order;
//! - iteration is over `BTreeMap`/`BTreeSet`, so answers are deterministic.
//!
//! ## Depends on
//! `leasehold-core` alone. It must never depend on a database driver or on
//! the simulator, which serves it as the reference store.

#![warn(missing_docs)]

#[cfg(feature = "buggy-variants")]
pub mod batch_variant;
mod index;
mod prune;
mod retry;
#[cfg(feature = "buggy-variants")]
mod variants;
#[cfg(feature = "buggy-variants")]
pub use variants::RESULT_SECOND_STEP_DELAY;

use index::Indexes;
use leasehold_core::transition::{
    self, Applied, EnqueuePlan, FirePlan, PutPlan, ReleasePlan, RenewPlan,
};
use leasehold_core::{
    CancelOutcome, ClaimRequest, CrashReport, Event, FireRequest, InputError, JobId, JobRecord,
    Lease, ListRequest, ListSchedulesRequest, NewJob, Policy, PruneRequest, Release,
    ReleaseRequest, RenewRequest, Renewal, Schedule, ScheduleRecord, Store, StoreClock, StoreError,
    StoreTime, SweepRequest, SystemStoreClock, WorkSignal,
};
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};

/// Most history events kept by default before the oldest are dropped.
pub const DEFAULT_HISTORY_CAP: usize = 1_000_000;

/// The mutable state: rows, indexes, keys and history.
#[derive(Debug, Default, Clone)]
pub struct MemoryState {
    rows: BTreeMap<JobId, JobRecord>,
    keys: BTreeMap<String, JobId>,
    index: Indexes,
    next_id: u64,
    events: Vec<Event>,
    dropped_events: u64,
    schedules: BTreeMap<String, ScheduleRecord>,
    /// Per schedule name, the latest plan time whose job was pruned
    /// ([`transition::refuse_pruned_plan_time`]). Kept when the schedule
    /// is removed, as its jobs' keys were.
    pruned_plan_times: BTreeMap<String, StoreTime>,
}

impl MemoryState {
    fn put(&mut self, applied: Applied, loaded_version: Option<u64>, history_cap: usize) {
        let Applied { record, event } = applied;
        let old = self.rows.get(&record.id);
        debug_assert_eq!(
            old.map(|r| r.version),
            loaded_version,
            "write guarded by the loaded version"
        );
        if let Some(old) = old.cloned() {
            self.index.remove(&old);
        }
        self.index.insert(&record);
        if let Some(k) = &record.idempotency_key {
            self.keys.insert(k.clone(), record.id);
        }
        self.rows.insert(record.id, record);
        if self.events.len() >= history_cap {
            self.events.remove(0);
            self.dropped_events += 1;
        }
        self.events.push(event);
    }

    /// Writes a row without the version check (buggy variants only).
    #[cfg(feature = "buggy-variants")]
    fn put_raw(&mut self, applied: Applied) {
        let v = self.rows.get(&applied.record.id).map(|r| r.version);
        let cap = usize::MAX;
        let mut a = applied;
        if let Some(v) = v {
            a.record.version = v + 1;
            a.event.version = v + 1;
        }
        self.put(a, v, cap);
    }
}

/// An in-memory job store.
pub struct MemoryStore {
    state: Arc<Mutex<MemoryState>>,
    clock: Box<dyn StoreClock>,
    policy: Policy,
    history_cap: usize,
    /// Wakes this process's idle workers when a write makes work claimable
    /// (`Store::work_available`).
    wake: WorkSignal,
    #[cfg(feature = "buggy-variants")]
    variant: Option<leasehold_core::variants::Variant>,
    #[cfg(feature = "buggy-variants")]
    scratch: Mutex<variants::VariantScratch>,
}

impl MemoryStore {
    /// A store on the system wall clock.
    pub fn new(policy: Policy) -> Self {
        Self::with_clock(policy, SystemStoreClock)
    }

    /// A store on `clock` (for tests and the simulator).
    pub fn with_clock(policy: Policy, clock: impl StoreClock) -> Self {
        Self::with_state(policy, clock, Arc::default())
    }

    /// A store over existing shared state: the simulator keeps the state
    /// outside the store host so that it survives a store crash (committed
    /// means durable) while in-flight requests are lost.
    pub fn with_state(
        policy: Policy,
        clock: impl StoreClock,
        state: Arc<Mutex<MemoryState>>,
    ) -> Self {
        MemoryStore {
            state,
            clock: Box::new(clock),
            policy,
            history_cap: DEFAULT_HISTORY_CAP,
            wake: WorkSignal::new(),
            #[cfg(feature = "buggy-variants")]
            variant: None,
            #[cfg(feature = "buggy-variants")]
            scratch: Mutex::new(Default::default()),
        }
    }

    /// Runs a deliberately buggy store behaviour (simulator only).
    #[cfg(feature = "buggy-variants")]
    pub fn set_variant(&mut self, v: Option<leasehold_core::variants::Variant>) {
        self.variant = v;
    }

    #[cfg(feature = "buggy-variants")]
    fn scratch(&self) -> MutexGuard<'_, variants::VariantScratch> {
        self.scratch.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sweeps judging expiry by `now` instead of the store's clock: the
    /// catalogue's "sweeper uses its own clock" bug (simulator only).
    #[cfg(feature = "buggy-variants")]
    pub fn sweep_at(
        &self,
        req: SweepRequest,
        now: StoreTime,
    ) -> Result<Vec<CrashReport>, StoreError> {
        self.do_sweep_at(req, now)
    }

    /// The shared state handle.
    pub fn state(&self) -> Arc<Mutex<MemoryState>> {
        self.state.clone()
    }

    /// The policy this store applies.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// A copy of the history: one event per accepted transition.
    pub fn events(&self) -> Vec<Event> {
        self.lock().events.clone()
    }

    /// A copy of every row, in id order.
    pub fn rows(&self) -> Vec<JobRecord> {
        self.lock().rows.values().cloned().collect()
    }

    fn lock(&self) -> MutexGuard<'_, MemoryState> {
        // A poisoned lock means a panic mid-write; the rows are still whole
        // because every write is a single insert.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    #[cfg(feature = "buggy-variants")]
    fn bug(&self) -> Option<leasehold_core::variants::Variant> {
        self.variant
    }

    /// Prepares a locked state for an operation at `now`.
    fn begin(&self, now: StoreTime) -> MutexGuard<'_, MemoryState> {
        #[allow(unused_mut)]
        let mut st = self.lock();
        #[cfg(feature = "buggy-variants")]
        self.flush_deferred(&mut st, now);
        let _ = now;
        st
    }

    /// Writes `applied` over `old` (as loaded) and wakes idle workers of
    /// its queue when the write made work claimable.
    fn put_waking(
        &self,
        st: &mut MemoryState,
        applied: Applied,
        old: Option<&JobRecord>,
        now: StoreTime,
    ) {
        let woken =
            leasehold_core::wakes_workers(old.map(|r| r.state), &applied.record, now, &self.policy)
                .then(|| applied.record.queue.clone());
        st.put(applied, old.map(|r| r.version), self.history_cap);
        if let Some(queue) = woken {
            self.wake.announce(&queue);
        }
    }

    /// Prepares a locked state for an operation on job `id` at the
    /// clock's now: the time, the state, and the job's row as loaded.
    fn begin_on(
        &self,
        id: JobId,
    ) -> Result<(StoreTime, MutexGuard<'_, MemoryState>, JobRecord), StoreError> {
        let now = self.clock.now();
        let st = self.begin(now);
        let row = Self::load(&st, id)?;
        Ok((now, st, row))
    }

    fn load(state: &MemoryState, id: JobId) -> Result<JobRecord, StoreError> {
        state
            .rows
            .get(&id)
            .cloned()
            .ok_or(StoreError::Input(InputError::UnknownJob(id)))
    }

    fn do_enqueue(&self, job: NewJob) -> Result<JobId, StoreError> {
        let now = self.clock.now();
        let mut st = self.begin(now);
        let existing = job
            .idempotency_key
            .as_ref()
            .and_then(|k| st.keys.get(k))
            .and_then(|id| st.rows.get(id))
            .cloned();
        let id = JobId(st.next_id + 1);
        match transition::enqueue(&job, id, existing.as_ref(), &self.policy, now)? {
            EnqueuePlan::Existing(id) => Ok(id),
            EnqueuePlan::Insert(applied) => {
                st.next_id += 1;
                self.put_waking(&mut st, applied, None, now);
                Ok(id)
            }
        }
    }

    fn do_claim(&self, req: ClaimRequest) -> Result<Vec<Lease>, StoreError> {
        transition::validate_claim(&req.queue, req.lease, req.max, &self.policy)?;
        let now = self.clock.now();
        let mut st = self.begin(now);
        #[cfg(feature = "buggy-variants")]
        if self.bug() == Some(leasehold_core::variants::Variant::ClaimWithoutCas) {
            return self.buggy_claim(&mut st, &req, now);
        }
        let running = st
            .index
            .running_per_queue
            .get(&req.queue)
            .copied()
            .unwrap_or(0);
        let cap = transition::claim_capacity(&req.queue, req.max, running, &self.policy) as usize;
        let due: Vec<JobId> = st
            .index
            .pending_of(&req.queue)
            .filter(|k| k.2 <= now)
            .map(|k| k.3)
            .take(cap)
            .collect();
        let mut leases = Vec::with_capacity(due.len());
        for id in due {
            let row = Self::load(&st, id)?;
            match transition::claim(&row, &req.worker, req.lease, now) {
                Ok((applied, lease)) => {
                    st.put(applied, Some(row.version), self.history_cap);
                    leases.push(lease);
                }
                Err(refusal) => {
                    debug_assert!(false, "index offered an unclaimable row: {refusal:?}")
                }
            }
        }
        Ok(leases)
    }

    fn do_renew(&self, req: RenewRequest) -> Result<Renewal, StoreError> {
        let (now, mut st, row) = self.begin_on(req.job)?;
        #[cfg(feature = "buggy-variants")]
        if let Some(answer) = self.buggy_renew(&mut st, &req, &row, now) {
            return answer;
        }
        match transition::renew(&row, req.token, req.lease, &self.policy, now)? {
            RenewPlan::Renewed(applied, answer) => {
                st.put(applied, Some(row.version), self.history_cap);
                Ok(answer)
            }
            RenewPlan::Lost => Ok(Renewal::Lost),
        }
    }

    fn do_release(&self, req: ReleaseRequest) -> Result<Release, StoreError> {
        let (now, mut st, row) = self.begin_on(req.job)?;
        #[cfg(feature = "buggy-variants")]
        if let Some(answer) = self.buggy_release(&mut st, &req, &row, now) {
            return answer;
        }
        let plan = transition::release(&row, req.token, &req.outcome, &self.policy, now);
        self.apply_release(&mut st, &row, plan, now)
    }

    /// Persists a release plan for `row` (as loaded) and answers it.
    fn apply_release(
        &self,
        st: &mut MemoryState,
        row: &JobRecord,
        plan: Result<ReleasePlan, InputError>,
        now: StoreTime,
    ) -> Result<Release, StoreError> {
        match plan? {
            ReleasePlan::Apply(applied) => {
                self.put_waking(st, applied, Some(row), now);
                Ok(Release::Committed)
            }
            ReleasePlan::Repeat => Ok(Release::Committed),
            ReleasePlan::Lost => Ok(Release::Lost),
        }
    }

    fn do_sweep(&self, req: SweepRequest) -> Result<Vec<CrashReport>, StoreError> {
        self.do_sweep_at(req, self.clock.now())
    }

    fn do_sweep_at(
        &self,
        req: SweepRequest,
        now: StoreTime,
    ) -> Result<Vec<CrashReport>, StoreError> {
        let mut st = self.begin(now);
        #[cfg(feature = "buggy-variants")]
        if self.bug() == Some(leasehold_core::variants::Variant::SweepWithoutRecheck) {
            return Ok(self.buggy_sweep(&mut st, req.limit, now));
        }
        let expired: Vec<JobId> = st.index.expired(now).take(req.limit as usize).collect();
        let mut reports = Vec::with_capacity(expired.len());
        for id in expired {
            let row = Self::load(&st, id)?;
            // The guard is re-checked on the row as it is now.
            if let Ok((applied, report)) = transition::sweep(&row, now) {
                self.put_waking(&mut st, applied, Some(&row), now);
                reports.push(report);
            }
        }
        Ok(reports)
    }

    fn do_cancel(&self, id: JobId) -> Result<CancelOutcome, StoreError> {
        let (now, mut st, row) = self.begin_on(id)?;
        #[cfg(feature = "buggy-variants")]
        if self.bug() == Some(leasehold_core::variants::Variant::LateCancelOverwrites) {
            if let Some(answer) = self.buggy_cancel(&mut st, &row, now) {
                return Ok(answer);
            }
        }
        let (applied, answer) = transition::cancel(&row, now);
        if let Some(applied) = applied {
            st.put(applied, Some(row.version), self.history_cap);
        }
        Ok(answer)
    }

    fn do_put_schedule(&self, schedule: Schedule) -> Result<(), StoreError> {
        let now = self.clock.now();
        let mut st = self.begin(now);
        let existing = st.schedules.get(&schedule.name);
        if let PutPlan::Write(rec) =
            transition::put_schedule(&schedule, existing, &self.policy, now)?
        {
            st.schedules.insert(rec.schedule.name.clone(), rec);
        }
        Ok(())
    }

    fn do_remove_schedule(&self, name: &str) -> Result<bool, StoreError> {
        let now = self.clock.now();
        let mut st = self.begin(now);
        Ok(st.schedules.remove(name).is_some())
    }

    fn do_fire(&self, req: FireRequest) -> Result<JobId, StoreError> {
        let now = self.clock.now();
        let mut st = self.begin(now);
        #[cfg(feature = "buggy-variants")]
        if let Some(answer) = self.buggy_fire(&mut st, &req, now) {
            return answer;
        }
        let key = transition::fire_key(&req);
        let existing = st.keys.get(&key).and_then(|id| st.rows.get(id)).cloned();
        if existing.is_none() {
            let through = st.pruned_plan_times.get(&req.name).copied();
            transition::refuse_pruned_plan_time(&req, through)?;
        }
        let id = JobId(st.next_id + 1);
        let schedule = st.schedules.get(&req.name);
        match transition::fire(schedule, &req, id, existing.as_ref(), now)? {
            FirePlan::Existing(id) => Ok(id),
            FirePlan::Insert(applied) => {
                st.next_id += 1;
                self.put_waking(&mut st, applied, None, now);
                Ok(id)
            }
        }
    }

    fn do_list_schedules(&self, req: ListSchedulesRequest) -> Vec<ScheduleRecord> {
        use std::ops::Bound;
        let st = self.lock();
        let from = match &req.after {
            Some(a) => Bound::Excluded(a.clone()),
            None => Bound::Unbounded,
        };
        st.schedules
            .range((from, Bound::Unbounded))
            .take(req.limit as usize)
            .map(|(_, r)| r.clone())
            .collect()
    }

    /// Every job counted under the one lock: a consistent count.
    fn do_count_jobs(&self) -> leasehold_core::JobCounts {
        let st = self.lock();
        let mut counts = leasehold_core::job_counts::CountsBuilder::default();
        for r in st.rows.values() {
            counts.queue(&r.queue).add_job(r);
        }
        counts.finish(true)
    }

    fn do_list(&self, req: ListRequest) -> Vec<JobRecord> {
        let st = self.lock();
        let start = req.after.map(|a| JobId(a.0 + 1)).unwrap_or(JobId(0));
        st.rows
            .range(start..)
            .take(req.limit as usize)
            .map(|(_, r)| r.clone())
            .collect()
    }
}

impl Store for MemoryStore {
    async fn now(&self) -> Result<StoreTime, StoreError> {
        Ok(self.clock.now())
    }
    async fn enqueue(&self, job: NewJob) -> Result<JobId, StoreError> {
        self.do_enqueue(job)
    }
    async fn claim(&self, req: ClaimRequest) -> Result<Vec<Lease>, StoreError> {
        self.do_claim(req)
    }
    async fn renew(&self, req: RenewRequest) -> Result<Renewal, StoreError> {
        self.do_renew(req)
    }
    async fn release(&self, req: ReleaseRequest) -> Result<Release, StoreError> {
        self.do_release(req)
    }
    async fn sweep(&self, req: SweepRequest) -> Result<Vec<CrashReport>, StoreError> {
        self.do_sweep(req)
    }
    async fn cancel(&self, job: JobId) -> Result<CancelOutcome, StoreError> {
        self.do_cancel(job)
    }
    async fn retry_dead(&self, job: JobId) -> Result<leasehold_core::RetryOutcome, StoreError> {
        self.do_retry_dead(job)
    }
    async fn get(&self, job: JobId) -> Result<Option<JobRecord>, StoreError> {
        Ok(self.lock().rows.get(&job).cloned())
    }
    async fn list(&self, req: ListRequest) -> Result<Vec<JobRecord>, StoreError> {
        Ok(self.do_list(req))
    }
    async fn count_jobs(&self) -> Result<leasehold_core::JobCounts, StoreError> {
        Ok(self.do_count_jobs())
    }
    async fn put_schedule(&self, schedule: Schedule) -> Result<(), StoreError> {
        self.do_put_schedule(schedule)
    }
    async fn remove_schedule(&self, name: String) -> Result<bool, StoreError> {
        self.do_remove_schedule(&name)
    }
    async fn fire(&self, req: FireRequest) -> Result<JobId, StoreError> {
        self.do_fire(req)
    }
    async fn list_schedules(
        &self,
        req: ListSchedulesRequest,
    ) -> Result<Vec<ScheduleRecord>, StoreError> {
        Ok(self.do_list_schedules(req))
    }
    async fn prune(&self, req: PruneRequest) -> Result<Vec<JobId>, StoreError> {
        self.do_prune(req)
    }
    fn work_available(&self, queue: &str) -> impl Future<Output = ()> + Send {
        self.wake.subscribe(queue)
    }
}

#[cfg(test)]
mod tests;

/// The README's code blocks, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
