//! The run's recorder: what every host and the runner write down (the
//! history's records, the store's anchors, request ids, panics), and the
//! switch that keeps a host's tear-down out of the history.
//!
//! It is the one piece of a run every host holds whole; everything else a
//! host reads is its own (its clock, its settings, its generators; see
//! [`crate::hosts::software`]). Everything runs on one thread (the seed's
//! executor), so the locks are never contended; they exist because the
//! core's `Runtime` and `Store` must be `Send + Sync`.

use leasehold_core::JobId;
use leasehold_model::history::Record;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

/// Where a store-event's true time comes from: the first request after which
/// the row had this version.
pub type Anchors = BTreeMap<(JobId, u64), (u64, u64)>;

/// What one run records.
pub struct Recorder {
    records: Mutex<Vec<Record>>,
    anchors: Mutex<Anchors>,
    panics: Mutex<Vec<String>>,
    next_req: AtomicU64,
    crashing: AtomicBool,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder {
            records: Mutex::new(Vec::with_capacity(1 << 14)),
            anchors: Mutex::default(),
            panics: Mutex::default(),
            next_req: AtomicU64::new(1),
            crashing: AtomicBool::new(false),
        }
    }
}

impl Recorder {
    /// Appends a record, unless a host is being torn down (its drop guards
    /// run outside simulated time and must not write history).
    pub fn record(&self, r: Record) {
        if !self.is_crashing() {
            lock(&self.records).push(r);
        }
    }

    /// Appends a record from the runner (always kept).
    pub fn record_runner(&self, r: Record) {
        lock(&self.records).push(r);
    }

    /// Takes the records out.
    pub fn take_records(&self) -> Vec<Record> {
        std::mem::take(&mut *lock(&self.records))
    }

    /// A fresh request id (global, in execution order).
    pub fn next_request_id(&self) -> u64 {
        self.next_req.fetch_add(1, Ordering::Relaxed)
    }

    /// Marks the start or end of a host tear-down by the runner.
    pub fn set_crashing(&self, on: bool) {
        self.crashing.store(on, Ordering::Relaxed);
    }

    /// Whether a host is being torn down right now.
    pub fn is_crashing(&self) -> bool {
        self.crashing.load(Ordering::Relaxed)
    }

    /// Notes the true time and request after which `job` had `version`
    /// (the first note wins).
    pub fn anchor(&self, job: JobId, version: u64, t: u64, req: u64) {
        lock(&self.anchors)
            .entry((job, version))
            .or_insert((t, req));
    }

    /// The anchors noted so far.
    pub fn take_anchors(&self) -> Anchors {
        std::mem::take(&mut *lock(&self.anchors))
    }

    /// Reports a panic inside simulated code.
    pub fn report_panic(&self, msg: String) {
        lock(&self.panics).push(msg);
    }

    /// Panics reported so far.
    pub fn panics(&self) -> Vec<String> {
        lock(&self.panics).clone()
    }
}
