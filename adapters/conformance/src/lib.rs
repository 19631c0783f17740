//! # leasehold-conformance
//!
//! The adapter conformance suite: every rule of the protocol as a test case,
//! written once and run against every [`Store`] (memory, SQLite, Postgres,
//! or your own), as River's driver tests are run against each driver.
//!
//! ## Depends on
//! `leasehold-core` (the [`Store`] trait and the protocol's types) and tokio,
//! nothing else: never on an adapter (each adapter's harness lives with the
//! tests that run it, `tests/`), and never on the simulator.
//!
//! ## How to run it against an adapter
//! Implement [`Harness`]: it makes a fresh, empty store for a [`Policy`] and
//! says how store time can be moved ([`TimeControl`]). Then either call the
//! case functions ([`cases`], [`limits`], [`race`], [`retry`], [`runtime`], [`prune`]) yourself,
//! or generate one `#[tokio::test]` per case with
//! [`conformance_tests!`](crate::conformance_tests):
//!
//! ```ignore
//! async fn harness() -> Option<MyHarness> { Some(MyHarness::new()) }
//! leasehold_conformance::conformance_tests!(harness);
//! ```
//!
//! A harness function answering `None` skips every case (for example when
//! no database is configured); it should say so loudly.
//!
//! ## Store time
//! Time-dependent cases (expiry, sweeping, backoff) move store time only
//! through [`TimeControl::advance`]:
//! - [`TimeControl::Manual`]: the store reads a [`ManualStoreClock`] that the
//!   suite steps exactly (memory, SQLite, Postgres with a clock override);
//! - [`TimeControl::Real`]: the store reads a real clock that cannot be set
//!   (Postgres on its own `clock_timestamp()`); `advance` then waits for real
//!   and the cases use short leases ([`SHORT_LEASE`]) for leases meant to
//!   expire and long ones ([`LONG_LEASE`]) for leases that must not, so no
//!   assertion depends on how fast the machine is.

#![warn(missing_docs)]

pub mod batch;
pub mod cases;
pub mod counts;
pub mod limits;
pub mod prune;
pub mod race;
pub mod retry;
pub mod runtime;
pub mod schedules;
pub mod wake;

use leasehold_core::clock::ManualStoreClock;
use leasehold_core::Event;
use leasehold_core::Millis;
use leasehold_core::Store;
use leasehold_core::{Backoff, Policy};
use std::future::Future;
use std::sync::Arc;

/// A lease that the cases let expire (by advancing time past it).
pub const SHORT_LEASE: Millis = Millis(300);
/// A lease that never expires during a case.
pub const LONG_LEASE: Millis = Millis(600_000);
/// Extra real time waited past a deadline in [`TimeControl::Real`] mode
/// (covers millisecond rounding between clocks).
pub const REAL_SLACK: Millis = Millis(25);
/// Jobs raced over by the concurrent-claimers case, by default.
pub const RACE_JOBS: usize = 10_000;
/// Concurrent claimers in the race cases.
pub const RACE_CLAIMERS: usize = 16;

/// How a case moves the store's time.
#[derive(Clone, Debug)]
pub enum TimeControl {
    /// The store reads this clock; the suite steps it.
    Manual(ManualStoreClock),
    /// The store reads a real clock; the suite waits.
    Real,
}

impl TimeControl {
    /// Moves store time forward by at least `d`.
    pub async fn advance(&self, d: Millis) {
        match self {
            TimeControl::Manual(c) => c.advance(d),
            TimeControl::Real => tokio::time::sleep(d.saturating_add(REAL_SLACK).to_std()).await,
        }
    }

    /// Whether time moves only when told to (exact-time assertions hold).
    pub fn is_manual(&self) -> bool {
        matches!(self, TimeControl::Manual(_))
    }
}

/// A fresh store and the control of its time.
pub struct Fixture<S> {
    /// The store, empty.
    pub store: Arc<S>,
    /// How to move its time.
    pub time: TimeControl,
}

/// Makes fresh stores of one adapter for the suite.
pub trait Harness: Send + Sync + 'static {
    /// The adapter.
    type Store: Store;

    /// A short name for failure messages (`"memory"`, `"sqlite"`, …).
    fn name(&self) -> String;

    /// A new, empty store applying `policy`, isolated from every other
    /// store this harness made (cases run in parallel).
    fn fresh(&self, policy: Policy) -> impl Future<Output = Fixture<Self::Store>> + Send;

    /// How many jobs the concurrent-claimers case races over
    /// (default [`RACE_JOBS`]).
    fn race_jobs(&self) -> usize {
        RACE_JOBS
    }

    /// The store's audit events in commit order, or `None` when the adapter
    /// keeps none (the audit case is then skipped).
    fn events(&self, store: &Self::Store) -> impl Future<Output = Option<Vec<Event>>> + Send {
        let _ = store;
        std::future::ready(None)
    }
}

/// The policy the cases run under unless they need limits of their own: the
/// defaults with a short, seeded backoff so retries come due quickly.
pub fn suite_policy() -> Policy {
    Policy::builder()
        .backoff(Backoff {
            base: Millis(400),
            cap: Millis(2_000),
            jitter_permille: 200,
            seed: 7,
        })
        .build()
        .expect("the suite policy is valid")
}

/// Names of every case, in the order [`conformance_tests!`](crate::conformance_tests) generates them.
pub const CASES: &[&str] = &[
    "enqueue_then_get_returns_the_pending_row",
    "claim_takes_priority_then_run_at_then_id_and_skips_delayed_jobs",
    "claim_respects_batch_size_and_queue",
    "stale_token_release_is_lost_and_changes_nothing",
    "repeated_release_is_committed_once",
    "renew_extends_from_store_now_and_is_allowed_after_expiry_before_sweep",
    "renew_after_sweep_is_lost",
    "late_cancel_keeps_succeeded",
    "cancel_of_pending_job_is_final_and_cancel_of_running_job_is_a_request",
    "failed_release_backs_off_and_claim_respects_run_at",
    "job_is_dead_after_its_attempt_budget",
    "returned_job_gets_its_attempt_back",
    "sweep_reclaims_only_expired_leases_up_to_its_limit",
    "bad_input_is_rejected_and_changes_nothing",
    "idempotency_key_answers_the_existing_job",
    "list_pages_through_every_job_in_id_order",
    "get_many_answers_each_id_as_get_does_in_the_order_asked",
    "audit_events_follow_every_accepted_transition",
    "payload_at_its_cap_round_trips_and_one_byte_more_is_refused",
    "result_at_its_cap_round_trips_and_one_byte_more_is_refused",
    "long_error_is_cut_at_a_character_boundary_within_its_cap",
    "idempotency_key_at_its_cap_works_and_one_byte_more_is_refused",
    "every_limit_holds_at_the_default_caps",
    "nul_in_an_error_is_replaced_and_in_a_key_is_refused",
    "concurrent_claimers_claim_each_job_exactly_once_per_token",
    "parallelism_limit_holds_under_concurrent_claimers",
    "concurrent_enqueues_of_one_key_make_one_job",
    "poison_payload_is_dead_after_one_attempt",
    "one_worker_serves_several_queues_within_their_limits",
    "batch_answers_each_release_and_claim_on_its_own",
    "empty_batch_answers_nothing",
    "a_job_returned_in_a_batch_is_claimable_by_its_claims",
    "a_slot_freed_in_a_batch_is_claimable_by_its_claims",
    "schedules_are_put_listed_replaced_and_removed_keeping_their_jobs",
    "fire_makes_one_job_per_plan_time",
    "refused_fires_burn_no_job_id",
    "enqueued_and_fired_jobs_share_one_id_sequence",
    "schedule_bad_input_is_refused_naming_the_field_and_changes_nothing",
    "schedules_are_held_to_the_stores_own_limits",
    "concurrent_firers_of_one_plan_time_make_one_job",
    "two_schedulers_fire_each_plan_time_once",
    "prune_deletes_only_terminal_jobs_finished_at_least_r_ago",
    "prune_respects_its_limit_oldest_finish_first",
    "a_pruned_idempotency_key_is_free_again",
    "a_pruned_plan_time_does_not_fire_again",
    "operations_on_a_pruned_job_answer_as_for_an_unknown_job",
    "audit_events_are_kept_for_their_own_retention",
    "a_prune_deletes_at_most_ten_audit_events_per_job_of_its_limit",
    "bad_prune_requests_are_refused_and_change_nothing",
    "count_jobs_counts_every_queue_and_state",
    "a_dead_job_is_retried_with_a_fresh_budget",
    "retry_refuses_every_other_state_and_an_unknown_job",
];

/// Generates one `#[tokio::test]` per conformance case.
///
/// `$harness` names an `async fn() -> Option<H>` with `H: Harness`; `None`
/// skips the case. The calling crate needs `tokio` with the `macros` and
/// `rt-multi-thread` features.
#[macro_export]
macro_rules! conformance_tests {
    ($harness:path) => {
        $crate::conformance_tests!(@case $harness, cases::enqueue_then_get_returns_the_pending_row);
        $crate::conformance_tests!(@case $harness, cases::claim_takes_priority_then_run_at_then_id_and_skips_delayed_jobs);
        $crate::conformance_tests!(@case $harness, cases::claim_respects_batch_size_and_queue);
        $crate::conformance_tests!(@case $harness, cases::stale_token_release_is_lost_and_changes_nothing);
        $crate::conformance_tests!(@case $harness, cases::repeated_release_is_committed_once);
        $crate::conformance_tests!(@case $harness, cases::renew_extends_from_store_now_and_is_allowed_after_expiry_before_sweep);
        $crate::conformance_tests!(@case $harness, cases::renew_after_sweep_is_lost);
        $crate::conformance_tests!(@case $harness, cases::late_cancel_keeps_succeeded);
        $crate::conformance_tests!(@case $harness, cases::cancel_of_pending_job_is_final_and_cancel_of_running_job_is_a_request);
        $crate::conformance_tests!(@case $harness, cases::failed_release_backs_off_and_claim_respects_run_at);
        $crate::conformance_tests!(@case $harness, cases::job_is_dead_after_its_attempt_budget);
        $crate::conformance_tests!(@case $harness, cases::returned_job_gets_its_attempt_back);
        $crate::conformance_tests!(@case $harness, cases::sweep_reclaims_only_expired_leases_up_to_its_limit);
        $crate::conformance_tests!(@case $harness, cases::bad_input_is_rejected_and_changes_nothing);
        $crate::conformance_tests!(@case $harness, cases::idempotency_key_answers_the_existing_job);
        $crate::conformance_tests!(@case $harness, cases::list_pages_through_every_job_in_id_order);
        $crate::conformance_tests!(@case $harness, cases::get_many_answers_each_id_as_get_does_in_the_order_asked);
        $crate::conformance_tests!(@case $harness, cases::audit_events_follow_every_accepted_transition);
        $crate::conformance_tests!(@case $harness, limits::payload_at_its_cap_round_trips_and_one_byte_more_is_refused);
        $crate::conformance_tests!(@case $harness, limits::result_at_its_cap_round_trips_and_one_byte_more_is_refused);
        $crate::conformance_tests!(@case $harness, limits::long_error_is_cut_at_a_character_boundary_within_its_cap);
        $crate::conformance_tests!(@case $harness, limits::idempotency_key_at_its_cap_works_and_one_byte_more_is_refused);
        $crate::conformance_tests!(@case $harness, limits::every_limit_holds_at_the_default_caps);
        $crate::conformance_tests!(@case $harness, limits::nul_in_an_error_is_replaced_and_in_a_key_is_refused);
        $crate::conformance_tests!(@case $harness, race::concurrent_claimers_claim_each_job_exactly_once_per_token);
        $crate::conformance_tests!(@case $harness, race::parallelism_limit_holds_under_concurrent_claimers);
        $crate::conformance_tests!(@case $harness, race::concurrent_enqueues_of_one_key_make_one_job);
        $crate::conformance_tests!(@case $harness, runtime::poison_payload_is_dead_after_one_attempt);
        $crate::conformance_tests!(@case $harness, runtime::one_worker_serves_several_queues_within_their_limits);
        $crate::conformance_tests!(@case $harness, batch::batch_answers_each_release_and_claim_on_its_own);
        $crate::conformance_tests!(@case $harness, batch::empty_batch_answers_nothing);
        $crate::conformance_tests!(@case $harness, batch::a_job_returned_in_a_batch_is_claimable_by_its_claims);
        $crate::conformance_tests!(@case $harness, batch::a_slot_freed_in_a_batch_is_claimable_by_its_claims);
        $crate::conformance_tests!(@case $harness, schedules::schedules_are_put_listed_replaced_and_removed_keeping_their_jobs);
        $crate::conformance_tests!(@case $harness, schedules::fire_makes_one_job_per_plan_time);
        $crate::conformance_tests!(@case $harness, schedules::refused_fires_burn_no_job_id);
        $crate::conformance_tests!(@case $harness, schedules::enqueued_and_fired_jobs_share_one_id_sequence);
        $crate::conformance_tests!(@case $harness, schedules::schedule_bad_input_is_refused_naming_the_field_and_changes_nothing);
        $crate::conformance_tests!(@case $harness, schedules::schedules_are_held_to_the_stores_own_limits);
        $crate::conformance_tests!(@case $harness, schedules::concurrent_firers_of_one_plan_time_make_one_job);
        $crate::conformance_tests!(@case $harness, schedules::two_schedulers_fire_each_plan_time_once);
        $crate::conformance_tests!(@case $harness, prune::prune_deletes_only_terminal_jobs_finished_at_least_r_ago);
        $crate::conformance_tests!(@case $harness, prune::prune_respects_its_limit_oldest_finish_first);
        $crate::conformance_tests!(@case $harness, prune::a_pruned_idempotency_key_is_free_again);
        $crate::conformance_tests!(@case $harness, prune::a_pruned_plan_time_does_not_fire_again);
        $crate::conformance_tests!(@case $harness, prune::operations_on_a_pruned_job_answer_as_for_an_unknown_job);
        $crate::conformance_tests!(@case $harness, prune::audit_events_are_kept_for_their_own_retention);
        $crate::conformance_tests!(@case $harness, prune::a_prune_deletes_at_most_ten_audit_events_per_job_of_its_limit);
        $crate::conformance_tests!(@case $harness, prune::bad_prune_requests_are_refused_and_change_nothing);
        $crate::conformance_tests!(@case $harness, counts::count_jobs_counts_every_queue_and_state);
        $crate::conformance_tests!(@case $harness, retry::a_dead_job_is_retried_with_a_fresh_budget);
        $crate::conformance_tests!(@case $harness, retry::retry_refuses_every_other_state_and_an_unknown_job);
    };
    (@case $harness:path, $module:ident :: $case:ident) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn $case() {
            if let Some(h) = $harness().await {
                $crate::$module::$case(&h).await;
            }
        }
    };
}

#[cfg(test)]
mod tests {
    /// `CASES` names every case the macro generates, in its order: a case
    /// added to one and not the other is caught here.
    #[test]
    fn cases_lists_every_generated_case_in_order() {
        let source = include_str!("lib.rs");
        let generated: Vec<&str> = source
            .lines()
            .filter_map(|l| {
                l.trim()
                    .strip_prefix("$crate::conformance_tests!(@case $harness, ")
            })
            .filter_map(|l| l.strip_suffix(");"))
            .filter_map(|l| l.split("::").nth(1))
            .collect();
        assert_eq!(generated, super::CASES);
    }
}
