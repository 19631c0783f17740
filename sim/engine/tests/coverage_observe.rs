//! Coverage is observation only: the named situations a run reached come
//! out of the run, the same for the same seed, without changing its
//! history; a user's store marks its own with `sometimes`; and the
//! observer reads only the history (never the checker).

#![allow(clippy::manual_async_fn)]

mod engine_support;

use engine_support::scenario;
use leasehold_core::forward_store;
use leasehold_core::{Release, ReleaseRequest, StoreError};
use leasehold_memory::MemoryStore;
use leasehold_sim::coverage::{observe, sometimes};
use leasehold_sim::harness::check_store;
use leasehold_sim::runner::{run_seed, PreparedConfig, RunOptions};
use leasehold_sim::stores::{MemoryFactory, MemoryRows, OnMemoryRows, SeedContext, SimStore};
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

#[test]
fn observing_changes_no_history_and_is_the_same_for_the_same_seed() {
    let cfg = PreparedConfig::new(scenario("worker_crash_mid_job_is_reclaimed_once.toml"))
        .expect("valid");
    let memory = Arc::new(MemoryFactory);
    let on = |seed| run_seed(&cfg, seed, &memory, RunOptions::default()).expect("runs");
    let off = |seed| {
        let opts = RunOptions {
            skip_coverage: true,
            ..RunOptions::default()
        };
        run_seed(&cfg, seed, &memory, opts).expect("runs")
    };
    for seed in 0..3 {
        let (a, b, c) = (on(seed), on(seed), off(seed));
        assert_eq!(
            a.history_hash, c.history_hash,
            "seed {seed}: observing changed the history"
        );
        assert_eq!(
            a.coverage, b.coverage,
            "seed {seed}: coverage is deterministic"
        );
        assert!(
            c.coverage.is_empty(),
            "seed {seed}: nothing observed when skipped"
        );
        assert_eq!(
            observe(&a.history, &cfg),
            a.coverage,
            "seed {seed}: read off the history"
        );
    }
    let any = (0..3)
        .map(on)
        .any(|o| o.coverage.reached("worker-crashed-holding-a-lease"));
    assert!(any, "a worker crashing mid-job crashes holding a lease");
}

/// The memory store marking each release it commits.
struct Marking(MemoryStore);

forward_store! {
    impl[] Store for Marking, |self| self.0;
    // `batch` and `batch_within` keep the trait's defaults, which run a
    // batch by parts through `self.release`: the Worker sends its releases
    // inside batches, and forwarding `batch` to the wrapped store would
    // run them through *its* `release`, past the mark below (so no seed
    // recorded one).
    except [release, batch, batch_within] {
        fn release(
            &self,
            r: ReleaseRequest,
        ) -> impl Future<Output = Result<Release, StoreError>> + Send {
            async move {
                let out = self.0.release(r).await;
                sometimes("marking-store-committed-a-release", out == Ok(Release::Committed));
                out
            }
        }
    }
}

impl SimStore for Marking {}

struct Factory;

impl OnMemoryRows for Factory {
    type Store = Marking;
    const NAME: &'static str = "marking";

    fn open_on(&self, rows: MemoryRows, _: &SeedContext) -> Marking {
        Marking(rows.store())
    }
}

#[test]
fn a_users_store_marks_its_own_situations_into_its_run() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let path = root.join("worker_crash_mid_job_is_reclaimed_once.toml");
    let report = check_store(Factory, &[path], Some(2)).expect("loads");
    assert_eq!(report.runs.len(), 2);
    for run in &report.runs {
        let out = run.outcome.as_ref().expect("runs");
        assert!(
            out.coverage.times("marking-store-committed-a-release") > 0,
            "seed {}: {:?}",
            out.seed,
            out.coverage
        );
    }
    assert!(
        sometimes("outside-any-run", true),
        "outside a run it answers its condition"
    );
}

#[test]
fn the_observer_reads_the_history_only() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/coverage");
    let mut files = 0;
    for entry in std::fs::read_dir(&dir).expect("src/coverage") {
        let path = entry.expect("entry").path();
        let text = std::fs::read_to_string(&path).expect("source");
        files += 1;
        for banned in ["leasehold_check", "crate::"] {
            let uses = text
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .any(|l| l.contains(banned));
            assert!(!uses, "{} uses {banned}", path.display());
        }
    }
    assert!(files >= 5, "{files} files under {}", dir.display());
    let check = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../check/Cargo.toml");
    let manifest = std::fs::read_to_string(check).expect("the checker's manifest");
    assert!(
        !manifest.contains("leasehold-sim"),
        "the checker never depends on the engine"
    );
}
