//! The scheduler: fires every plan time of every schedule, exactly once.
//!
//! It ticks on its own clock ([`crate::Runtime`]) but decides nothing by it:
//! each tick reads the store's `now`, lists the schedules, asks the pure
//! [`crate::schedule::plan::due`] which plan times are due in that window
//! of store time, and fires each one. Firing is idempotent in the store
//! (the job of a plan time carries a unique key), so any number of
//! schedulers, on hosts with any clock skew, may run at once: each fires
//! every plan time, the first fire makes the job, every later one is
//! answered with it. No leader election is needed for safety.
//!
//! Invariants:
//! - no plan time is computed from this host's clock (its wall clock is
//!   never read, outside the catalogue's `scheduler-own-clock`);
//! - a plan time this scheduler saw fired (a definite answer) is not fired
//!   again by it while the schedule's version stays (a cursor per schedule);
//!   an unknown outcome is retried on the next tick, which is safe because
//!   firing is idempotent; a plan time the store answers as fired and
//!   pruned ([`crate::InputError::PlanTimePruned`]) counts as fired;
//! - every loop is bounded: schedules per tick by the store's listing
//!   bound, fires per schedule and tick by `max_fires_per_tick` plus the
//!   schedule's catch-up bound.

use super::scheduler_config::SchedulerConfig;
use super::shutdown::Shutdown;
use super::tick_report::TickReport;
use super::timeout::with_timeout;
use crate::clock::Runtime;
use crate::error::StoreError;
use crate::schedule::{plan, FireRequest, ListSchedulesRequest, ScheduleRecord};
use crate::store::Store;
use crate::time::StoreTime;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Schedules read per listing call.
const LIST_PAGE: u32 = 500;
/// Most listing calls per tick (so at most 500,000 schedules per tick).
const MAX_LIST_PAGES: usize = 1000;

/// Fires the plan times of the store's schedules.
pub struct Scheduler<S, R> {
    store: Arc<S>,
    rt: R,
    cfg: SchedulerConfig,
    /// Per schedule: the version seen and the last plan time fired.
    cursors: BTreeMap<String, (u64, StoreTime)>,
    /// Schedules still to put (from `cfg.ensure`).
    to_put: Vec<crate::schedule::Schedule>,
}

impl<S: Store, R: Runtime> Scheduler<S, R> {
    /// A scheduler on `store`, ticking on `rt`.
    pub fn new(store: Arc<S>, rt: R, cfg: SchedulerConfig) -> Self {
        let to_put = cfg.ensure.clone();
        Scheduler {
            store,
            rt,
            cfg,
            cursors: BTreeMap::new(),
            to_put,
        }
    }

    /// The store time to judge by (the store's, always, in a correct build).
    async fn now(&self) -> Result<StoreTime, StoreError> {
        if self.cfg.uses_own_clock() {
            return Ok(self.rt.wall());
        }
        with_timeout(&self.rt, self.cfg.request_timeout, self.store.now()).await
    }

    async fn list(&self) -> Result<Vec<ScheduleRecord>, StoreError> {
        let mut out: Vec<ScheduleRecord> = Vec::new();
        let mut after = None;
        for _ in 0..MAX_LIST_PAGES {
            let req = ListSchedulesRequest {
                after,
                limit: LIST_PAGE,
            };
            let page = with_timeout(
                &self.rt,
                self.cfg.request_timeout,
                self.store.list_schedules(req),
            )
            .await?;
            let n = page.len();
            after = page.last().map(|r| r.schedule.name.clone());
            out.extend(page);
            if n < LIST_PAGE as usize {
                break;
            }
        }
        Ok(out)
    }

    /// Puts the schedules still to ensure; keeps those that failed.
    async fn ensure(&mut self) {
        let mut left = Vec::new();
        for s in std::mem::take(&mut self.to_put) {
            let put = self.store.put_schedule(s.clone());
            match with_timeout(&self.rt, self.cfg.request_timeout, put).await {
                Ok(()) => {}
                Err(StoreError::Input(e)) => {
                    tracing::error!(schedule = %s.name, error = %e, "the store refused a schedule");
                }
                Err(e) => {
                    tracing::debug!(schedule = %s.name, error = %e, "put failed; retrying next tick");
                    left.push(s);
                }
            }
        }
        self.to_put = left;
    }

    /// One tick: reads the store's now and the schedules, and fires what is due.
    pub async fn tick_once(&mut self) -> Result<TickReport, StoreError> {
        self.ensure().await;
        let now = self.now().await?;
        let schedules = self.list().await?;
        let mut report = TickReport {
            now: Some(now),
            ..TickReport::default()
        };
        let limit = self.cfg.max_fires_per_tick as usize;
        let mut seen = BTreeMap::new();
        for rec in &schedules {
            let s = &rec.schedule;
            seen.insert(s.name.clone(), ());
            let rule = match s.rule.compile() {
                Ok(r) => r,
                Err(e) => {
                    tracing::error!(schedule = %s.name, error = %e, "stored schedule has a bad rule");
                    continue;
                }
            };
            let cursor = self
                .cursors
                .get(&s.name)
                .filter(|(version, _)| *version == rec.version)
                .map(|(_, t)| *t);
            let after = cursor.map_or(rec.updated_at, |c| c.max(rec.updated_at));
            let due = plan::due(&rule, s.catch_up, after, now, self.cfg.misfire_grace, limit);
            for plan_time in due {
                let req = FireRequest {
                    name: s.name.clone(),
                    plan_time,
                };
                match with_timeout(&self.rt, self.cfg.request_timeout, self.store.fire(req)).await {
                    Ok(job) => {
                        self.cursors
                            .insert(s.name.clone(), (rec.version, plan_time));
                        report.fired.push((s.name.clone(), plan_time, job));
                    }
                    Err(StoreError::Input(crate::error::InputError::PlanTimePruned { .. })) => {
                        // It fired once and its job was pruned since: as
                        // done as a fire answered with its job.
                        self.cursors
                            .insert(s.name.clone(), (rec.version, plan_time));
                    }
                    Err(StoreError::Input(e)) => {
                        // Removed or replaced since the listing; the next
                        // tick reads it again.
                        tracing::info!(schedule = %s.name, %plan_time, error = %e, "fire refused");
                        report.refused += 1;
                        break;
                    }
                    Err(e) => {
                        tracing::debug!(schedule = %s.name, %plan_time, error = %e, "fire outcome unknown; retrying next tick");
                        report.unknown += 1;
                        break;
                    }
                }
            }
        }
        self.cursors.retain(|name, _| seen.contains_key(name));
        super::metrics::record_tick(&report);
        Ok(report)
    }

    /// Ticks every `tick` until `shutdown`.
    pub async fn run(mut self, mut shutdown: Shutdown) {
        while !shutdown.is_requested() {
            if let Err(e) = self.tick_once().await {
                super::metrics::record_tick_failed();
                tracing::debug!(error = %e, "scheduler tick failed; retrying next tick");
            }
            tokio::select! {
                biased;
                _ = shutdown.wait() => {}
                _ = self.rt.sleep(self.cfg.tick) => {}
            }
        }
    }
}
