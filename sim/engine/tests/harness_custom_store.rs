//! The harness as a library: a user's own store, with a bug of their own,
//! run through the public API (`leasehold_sim::harness`), is caught; the
//! same store without the bug passes. One of the bugs lives only in the
//! store's `batch` (the worker's releases and claims travel as one batch
//! message and run the store's own `batch`), so it is caught only if the
//! simulator runs that code and judges each of its answers. Another lets
//! a batch its caller cancelled commit anyway: the simulator cancels worker
//! batches at the store's commit point, and must see the rows change.

// The store's methods return `impl Future + Send` as the trait declares,
// building owned futures (what a user's code looks like); `async fn` would
// hide that shape from the example.
#![allow(clippy::manual_async_fn)]

use leasehold_core::forward_store;
use leasehold_core::tx_faults::TxFaults;
use leasehold_core::{BatchAnswer, BatchRequest, Outcome, Release, ReleaseRequest, StoreError};
use leasehold_memory::MemoryStore;
use leasehold_sim::harness::{check_store, Report};
use leasehold_sim::stores::{MemoryRows, OnMemoryRows, SeedContext, SimStore};
use std::future::Future;
use std::path::PathBuf;

/// A user's store: the memory adapter behind a "result column" that keeps
/// at most `keep` bytes (`None`: the column is fine), and whose `batch`
/// answers a committed release `Lost` when `batch_says_lost`.
struct ShortColumn {
    inner: MemoryStore,
    keep: Option<usize>,
    batch_says_lost: bool,
    commit_point: CommitPoint,
    faults: TxFaults,
}

/// Where the store's `batch` lets the simulator cancel it (its commit
/// point, `SimStore::tx_faults`).
#[derive(Clone, Copy, Default, PartialEq, Eq)]
enum CommitPoint {
    /// It offers none: a cancelled batch is one it never started.
    #[default]
    None,
    /// Before it writes anything, as a transaction commits at its end.
    BeforeWriting,
    /// After it wrote everything: a cancelled batch has committed (the bug).
    AfterWriting,
}

forward_store! {
    impl[] Store for ShortColumn, |self| self.inner;
    // `batch_within` and `work_available` keep the defaults: the batch
    // under test is the one written here, and workers poll.
    except [release, batch, batch_within, work_available] {
        fn release(
            &self,
            mut r: ReleaseRequest,
        ) -> impl Future<Output = Result<Release, StoreError>> + Send {
            if let (Outcome::Succeeded(bytes), Some(keep)) = (&mut r.outcome, self.keep) {
                bytes.truncate(keep);
            }
            self.inner.release(r)
        }
        fn batch(
            &self,
            req: BatchRequest,
        ) -> impl Future<Output = Result<BatchAnswer, StoreError>> + Send {
            async move {
                if self.commit_point == CommitPoint::BeforeWriting {
                    self.faults.at_commit().await;
                }
                let mut a = BatchAnswer::default();
                for r in req.releases {
                    a.releases.push(self.release(r).await);
                }
                for c in req.claims {
                    a.claims.push(self.claim(c).await);
                }
                if self.commit_point == CommitPoint::AfterWriting {
                    self.faults.at_commit().await;
                }
                if self.batch_says_lost {
                    for r in &mut a.releases {
                        if *r == Ok(Release::Committed) {
                            *r = Ok(Release::Lost);
                        }
                    }
                }
                Ok(a)
            }
        }
    }
}

/// No audit log, nothing to close; a commit point when it has one.
impl SimStore for ShortColumn {
    fn tx_faults(&self) -> Option<&TxFaults> {
        (self.commit_point != CommitPoint::None).then_some(&self.faults)
    }
}

#[derive(Default)]
struct Factory {
    keep: Option<usize>,
    batch_says_lost: bool,
    commit_point: CommitPoint,
}

/// The store lives on the memory adapter's rows, so the engine makes its
/// factory: fresh rows per seed, kept across the store host's crashes.
impl OnMemoryRows for Factory {
    type Store = ShortColumn;
    const NAME: &'static str = "short-column";

    fn open_on(&self, rows: MemoryRows, _: &SeedContext) -> ShortColumn {
        ShortColumn {
            inner: rows.store(),
            keep: self.keep,
            batch_says_lost: self.batch_says_lost,
            commit_point: self.commit_point,
            faults: TxFaults::default(),
        }
    }
}

fn scenarios() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    vec![
        root.join("worker_crash_mid_job_is_reclaimed_once.toml"),
        root.join("store_crash_and_restart_loses_no_committed_result.toml"),
    ]
}

#[test]
fn a_store_that_shortens_results_is_caught_through_the_public_api() {
    let f = Factory {
        keep: Some(8),
        ..Factory::default()
    };
    let report = check_store(f, &scenarios(), Some(2)).unwrap();
    assert_eq!(report.runs.len(), 4);
    let failure = report
        .failures()
        .next()
        .expect("the short column is caught");
    let v = &failure.violations()[0];
    assert!(
        matches!(v.invariant.to_string().as_str(), "I4" | "I11"),
        "{}",
        failure.summary()
    );
    assert!(
        failure.reports[0].contains("leasehold replay"),
        "{}",
        failure.reports[0]
    );
    assert!(failure.replay.contains("--seed"), "{}", failure.replay);
}

#[test]
fn the_same_store_without_the_bug_passes() {
    let report = check_store(Factory::default(), &scenarios(), Some(2)).unwrap();
    let failures: Vec<String> = report.failures().map(|f| f.summary()).collect();
    assert!(failures.is_empty(), "{failures:#?}");
    assert_eq!(report.runs.len(), 4);
}

#[test]
fn a_store_whose_batch_misanswers_a_release_is_caught() {
    let f = Factory {
        batch_says_lost: true,
        ..Factory::default()
    };
    let report = check_store(f, &scenarios(), Some(2)).unwrap();
    let failure = report
        .failures()
        .next()
        .expect("the batch's wrong answer is caught");
    assert!(
        failure
            .violations()
            .iter()
            .any(|v| v.invariant.to_string() == "I11"),
        "{}",
        failure.summary()
    );
}

/// Three seeds of the scenario whose worker batches the simulator cancels,
/// on the store with its commit point `at`.
fn cancelling_at(at: CommitPoint) -> Report {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let scenario = root.join("cancelled_batches_commit_nothing_and_later_writers_get_through.toml");
    let f = Factory {
        commit_point: at,
        ..Factory::default()
    };
    check_store(f, &[scenario], Some(3)).unwrap()
}

#[test]
fn a_store_whose_cancelled_batch_commits_anyway_is_caught() {
    let report = cancelling_at(CommitPoint::AfterWriting);
    let failures: Vec<_> = report.failures().collect();
    assert!(
        !failures.is_empty(),
        "the committed cancelled batch is caught"
    );
    // Its committed release shows as a changed row under a cancelled
    // request (I11) on at least one seed.
    assert!(
        failures.iter().any(|f| f
            .violations()
            .iter()
            .any(|v| v.invariant.to_string() == "I11")),
        "{}",
        failures
            .iter()
            .map(|f| f.summary())
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn a_store_cancelled_before_it_writes_passes() {
    let report = cancelling_at(CommitPoint::BeforeWriting);
    let failures: Vec<String> = report.failures().map(|f| f.summary()).collect();
    assert!(failures.is_empty(), "{failures:#?}");
    assert_eq!(report.runs.len(), 3);
}
