//! No job's side effects overlap between two tokens. A worker stops its
//! handler before the store could hand the job to anyone else (self-fencing,
//! PROTOCOL.md §2), so the effects of token `t` all come before the first
//! effect of any later token: fencing permits no overlap at all. Times are
//! the host's monotonic clock, which every process shares.

use super::{clock, effects, CheckId, CheckStats, Evidence, Violation};
use leasehold_core::{JobId, Token};
use std::collections::BTreeMap;

/// The side effects of one lease.
#[derive(Clone, Debug)]
struct Span {
    first_mono: u64,
    last_mono: u64,
    first_wall: i64,
    last_wall: i64,
    worker: String,
    count: u64,
}

/// Runs the check.
pub fn check(e: &Evidence<'_>, stats: &mut CheckStats) -> Vec<Violation> {
    let mut spans: BTreeMap<JobId, BTreeMap<Token, Span>> = BTreeMap::new();
    for (job, token, worker, _, wall, mono) in effects(e.logs) {
        stats.effects += 1;
        let s = spans
            .entry(job)
            .or_default()
            .entry(token)
            .or_insert_with(|| Span {
                first_mono: mono,
                last_mono: mono,
                first_wall: wall,
                last_wall: wall,
                worker: worker.to_string(),
                count: 0,
            });
        s.count += 1;
        if mono < s.first_mono {
            s.first_mono = mono;
            s.first_wall = wall;
        }
        if mono > s.last_mono {
            s.last_mono = mono;
            s.last_wall = wall;
        }
    }
    let mut out = Vec::new();
    for (job, tokens) in &spans {
        stats.leases_with_effects += tokens.len() as u64;
        let mut by_start: Vec<(&Token, &Span)> = tokens.iter().collect();
        by_start.sort_by_key(|(t, s)| (s.first_mono, **t));
        // The lease whose effects reach furthest so far.
        let mut reach: Option<(&Token, &Span)> = None;
        for (token, span) in by_start {
            if let Some((rt, rs)) = reach {
                if span.first_mono <= rs.last_mono {
                    out.push(overlap(*job, (rt, rs), (token, span)));
                }
                if span.last_mono > rs.last_mono {
                    reach = Some((token, span));
                }
            } else {
                reach = Some((token, span));
            }
        }
    }
    out
}

fn overlap(job: JobId, a: (&Token, &Span), b: (&Token, &Span)) -> Violation {
    let by = a.1.last_mono.min(b.1.last_mono) - b.1.first_mono;
    let describe = |(t, s): (&Token, &Span)| {
        format!(
            "token {t} ({}, {} effects {}–{})",
            s.worker,
            s.count,
            clock(s.first_wall),
            clock(s.last_wall)
        )
    };
    Violation::new(
        CheckId::Overlap,
        format!(
            "side effects of two leases overlap by {:.1} ms: {} and {}",
            by as f64 / 1_000.0,
            describe(a),
            describe(b)
        ),
    )
    .job(job)
    .tokens([*a.0, *b.0])
    .workers([a.1.worker.as_str(), b.1.worker.as_str()])
}
