//! I6 liveness: once faults have healed for long enough, every job reaches
//! a terminal state before the scenario ends.
//!
//! "Long enough" is the lease, the sweep interval and a request timeout,
//! plus, for every attempt the budget allows, the longest backoff, the
//! longest run, a poll interval, a renew interval and two request timeouts.
//! A run too short for that bound after healing is not checked for I6.

use super::facts::Facts;
use super::Violation;
use crate::config::{InvariantId::I6, SimConfig};
use crate::history::{Op, Reply};
use crate::hosts::workload::KEY_PREFIX;
use std::collections::BTreeSet;

/// How long after healing every job must be terminal.
pub fn liveness_bound_ms(cfg: &SimConfig) -> u64 {
    let p = &cfg.protocol;
    let per_attempt = p.backoff_cap.as_ms()
        + cfg.workload.run_time.hi.as_ms()
        + p.poll_interval.as_ms()
        + p.renew_interval.as_ms()
        + 2 * p.request_timeout.as_ms();
    p.lease.as_ms()
        + p.sweep_interval.as_ms()
        + p.request_timeout.as_ms()
        + u64::from(p.max_attempts) * per_attempt
}

/// Checks that every job ended.
pub fn check(facts: &Facts, cfg: &SimConfig) -> Vec<Violation> {
    let bound = liveness_bound_ms(cfg);
    let enqueue_end = cfg.workload.enqueue_over.as_ms();
    let due = facts.heal_ms.max(enqueue_end) + bound;
    if !facts.quiet && facts.end_ms < due {
        return Vec::new();
    }
    let mut out = Vec::new();
    if facts.client_done.is_none() {
        out.push(
            Violation::new(I6, "the client never finished enqueueing its jobs")
                .hosts(["client"])
                .at(facts.end_ms),
        );
    } else {
        let keys: BTreeSet<&str> = facts
            .requests
            .values()
            .filter(|q| matches!(q.answer, Some((_, Reply::Job(_)))))
            .filter_map(|q| match &q.op {
                Op::Enqueue { key: Some(k), .. } => Some(k.as_str()),
                _ => None,
            })
            .collect();
        for i in 0..cfg.workload.jobs {
            let k = format!("{KEY_PREFIX}{i}");
            if !keys.contains(k.as_str()) {
                out.push(
                    Violation::new(I6, format!("{k} was never enqueued"))
                        .hosts(["client"])
                        .at(facts.end_ms),
                );
            }
        }
    }
    for row in facts.finals.values() {
        if !row.state.is_terminal() {
            out.push(
                Violation::new(
                    I6,
                    format!(
                        "still {} at the end ({}ms after healing at {}ms; bound {}ms), attempt {}/{}{}",
                        row.state,
                        facts.end_ms.saturating_sub(facts.heal_ms),
                        facts.heal_ms,
                        bound,
                        row.attempt,
                        row.max_attempts,
                        row.holder
                            .as_ref()
                            .map(|h| format!(", held by {h}"))
                            .unwrap_or_default()
                    ),
                )
                .job(row.id)
                .tokens([row.token])
                .hosts(row.holder.iter().map(|h| h.as_str()))
                .at(facts.end_ms)
                .store_at(row.updated_at),
            );
        }
    }
    out
}
