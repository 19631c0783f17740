//! I5, the renews a holder owes over the whole life of a lease: the
//! schedule `docs/PROTOCOL.md` promises (§3, "The renew schedule"), judged
//! from the grant to the lease's end against the renews the holder sent.
//!
//! Written from that table, not from the worker's code: this module never
//! reads the core's lease machine. In the holder's local clock, with `R`
//! the renew interval and `T` the request timeout:
//! - after the grant (claim sent at `t`, answered at `a`): the first renew
//!   by `max(t + R, a)`;
//! - after `Renewed` (renew sent at `s`, answered at `a`): the next by
//!   `max(s + R, a)`;
//! - after an unknown outcome or a `Conflict` answered at `a` (a timeout is
//!   an unknown outcome answered at `s + T`): the retry by
//!   `a + max(MIN_RETRY, min(R/2, (D − a)/2))`, `D` the belief deadline;
//! - after `Lost` or any other rejection: nothing more.
//!
//! Every obligation ends at the lease's end (the release answered or given
//! up, the handler stopped as lost or fenced) and at the belief deadline,
//! past which the holder stops renewing by design (it also does so while
//! its release is retried). Pauses of the holder do not count (a paused
//! process sends nothing); a crash ends the lease and is judged by the
//! caller. A partition does not stop a holder from sending: its renews
//! are lost, but they are sent.
//!
//! **Time: no slack, only whole-millisecond rounding.** Each obligation
//! is counted from an instant the history records where the holder's
//! lease task acted (the claim's or renew's send, an answer's arrival or
//! the timeout that stands for one), never from a message's trip: the
//! simulator records a request when its caller sends it and an answer
//! when its caller gets it, and the lease task decides at that same
//! instant. Its timers fire at the first true millisecond at which the
//! host's clock reads their target (`ClockModel::true_at_mono`), not on a
//! tick, so neither the delivery `tick` nor the latency enters. What is
//! left is rounding, bounded here exactly: the local clock reads whole
//! milliseconds (floored), so a local wait `w` from a true instant ends at
//! most `⌈w/(1−d)⌉` true ms later with `d` the holder's drift ([`stretch`]
//! rounds up), and the holder's "halfway to the deadline" reads the time
//! left at most `⌈left·(1+d)⌉` local ms ([`retry`]). The retry floor
//! `MIN_RETRY` is a term of the retry's wait, not a slack on every renew.
//! `docs/PROTOCOL.md` §3 ("How late is late") states this bound.

use super::facts::{BeliefStep, Facts, ReqInfo};
use super::Violation;
use leasehold_core::{JobId, Token, WorkerId};
use leasehold_model::config::{InvariantId::I5, SimConfig};
use leasehold_model::history::{BeliefWhat, Op, Reply};

/// The shortest wait before a retry the protocol states (`docs/PROTOCOL.md`
/// §3, "The renew schedule"): a retry is never owed sooner than this.
const MIN_RETRY_MS: u64 = 100;

/// The schedule's constants for one run, in the holder's local ms.
pub(super) struct Schedule {
    renew: u64,
    /// The usable part of a lease, `L·(1−ρ)/(1+ρ) − margin`.
    safe: u64,
}

impl Schedule {
    /// The schedule of `cfg`'s workers (no slack: see the module docs,
    /// "Time").
    pub(super) fn of(cfg: &SimConfig) -> Schedule {
        let p = &cfg.protocol;
        let rho = u128::from(p.max_drift_ppm).min(900_000);
        let lease = u128::from(p.lease.as_ms());
        let safe = (lease * (1_000_000 - rho) / (1_000_000 + rho)) as u64;
        Schedule {
            renew: p.renew_interval.as_ms(),
            safe: safe.saturating_sub(p.fence_margin.as_ms()),
        }
    }
}

/// One lease as its holder saw it.
pub(super) struct Lease<'a> {
    pub holder: &'a WorkerId,
    pub job: JobId,
    pub token: Token,
    /// The claim that granted it, when the history names it.
    pub claim: Option<&'a ReqInfo<'a>>,
    /// The holder's belief milestones of this lease.
    pub beliefs: &'a [BeliefStep<'a>],
    /// When the holder's obligations end: its legitimate stop, or the
    /// reclaim.
    pub end: u64,
}

/// One renew owed: counted from `from`, sent by `due` at the latest, owed
/// because of what the holder learned at `answered`.
struct Owed {
    from: u64,
    due: u64,
    answered: u64,
    after: After,
}

/// What a renew was owed after.
enum After {
    Grant,
    Renewed,
    Failed(String),
}

/// A local wait `w` in true time at least, for drift `d` ppm (the clock
/// at its fastest), rounded down.
fn shrink(w: u64, d: u64) -> u64 {
    (u128::from(w) * 1_000_000 / (1_000_000 + u128::from(d))) as u64
}

/// A local wait `w` in true time at most, for drift `d` ppm, in whole
/// true ms: a clock that read at least `x` at the start reads `x + w`
/// within `w/(1−d)` true ms, and a timer fires at the first whole true
/// ms at which it does, so the quotient is rounded up.
fn stretch(w: u64, d: u64) -> u64 {
    let rate = 1_000_000 - u128::from(d);
    (u128::from(w) * 1_000_000).div_ceil(rate) as u64
}

/// The first renew `l`'s holder owed and did not send before the lease
/// ended, as an I5 violation naming it.
pub(super) fn first_missing(facts: &Facts, s: &Schedule, l: &Lease<'_>) -> Option<Violation> {
    let host = Facts::host_of(l.holder);
    let d = facts.drift.get(&host).copied().unwrap_or(0).min(900_000);
    let granted = l.beliefs.iter().find_map(|b| match b.what {
        BeliefWhat::Claimed { .. } => Some(b.t),
        _ => None,
    })?;
    let sent = l
        .claim
        .filter(|q| q.host == host && matches!(q.op, Op::Claim { .. }))
        .map_or(granted, |q| q.t.min(granted));
    let renews = own_renews(facts, &host, l, sent);
    let mut owed = vec![Owed {
        from: sent,
        due: (sent + stretch(s.renew, d)).max(granted),
        answered: granted,
        after: After::Grant,
    }];
    for q in &renews {
        let Some((a, reply)) = &q.answer else {
            continue;
        };
        match reply {
            Reply::Renewed { .. } => owed.push(Owed {
                from: q.t,
                due: (q.t + stretch(s.renew, d)).max(*a),
                answered: *a,
                after: After::Renewed,
            }),
            Reply::Unavailable(_) => owed.push(retry(s, l, &renews, d, q, *a, "no outcome")),
            Reply::Rejected(text) if text.starts_with("Conflict") => {
                owed.push(retry(s, l, &renews, d, q, *a, "Conflict"))
            }
            _ => {}
        }
    }
    for o in owed {
        if o.answered >= l.end {
            continue;
        }
        // Past the belief deadline the holder stops renewing by design.
        let deadline = deadline_low(s, l, &renews, d, o.answered);
        let next = renews
            .iter()
            .map(|r| r.t)
            .find(|&t| t > o.from)
            .unwrap_or(l.end)
            .min(l.end)
            .min(deadline);
        if next <= o.from {
            continue;
        }
        let awake = (next - o.from).saturating_sub(facts.paused_within(&host, o.from, next));
        if o.from + awake <= o.due {
            continue;
        }
        let (holder, from, answered, due) = (l.holder, o.from, o.answered, o.due);
        let what = match o.after {
            After::Grant => format!(
                "{holder} was granted the lease by its claim at {from}ms (known at {answered}ms) and sent no renew until {next}ms, past its first renew ({due}ms at the latest)"
            ),
            After::Renewed => format!(
                "{holder} renewed at {from}ms (answered at {answered}ms) and sent no renew after it until {next}ms, past its next renew ({due}ms at the latest)"
            ),
            After::Failed(why) => format!(
                "{holder}'s renew {why} at {answered}ms and it sent no retry until {next}ms, past the retry the protocol owes ({due}ms at the latest: half a renew interval after the failure, or halfway to its belief deadline if sooner)"
            ),
        };
        return Some(
            Violation::new(I5, format!("{what}; then its lease was reclaimed"))
                .hosts([holder.as_str()]),
        );
    }
    None
}

/// Whether `l`'s holder still kept the lease at `at` (true time) by its
/// own account: no renew of its had been answered `Lost` or rejected (other
/// than `Conflict`) by then, and its belief deadline (the earliest it can
/// be in true time, a renew answered `Renewed` while its release is
/// retried included) lies past `at`: the worker's heartbeat stops at that
/// deadline, at the first true ms its clock reads it, and only then may
/// its release be given up. The protocol retries a release on a transient answer while the
/// lease is kept, so a release given up then is no end of the lease's
/// life: the renews it owes go on (`docs/PROTOCOL.md` §3).
pub(super) fn still_kept(facts: &Facts, s: &Schedule, l: &Lease<'_>, at: u64) -> bool {
    let host = Facts::host_of(l.holder);
    let d = facts.drift.get(&host).copied().unwrap_or(0).min(900_000);
    let renews = own_renews(facts, &host, l, 0);
    let over = renews.iter().any(|q| match &q.answer {
        Some((a, Reply::RenewLost)) => *a <= at,
        Some((a, Reply::Rejected(text))) => *a <= at && !text.starts_with("Conflict"),
        _ => false,
    });
    !over && at < deadline_low(s, l, &renews, d, at)
}

/// The holder's renews of `l`, from its claim to its end, by send time.
fn own_renews<'a>(
    facts: &'a Facts,
    host: &str,
    l: &Lease<'_>,
    claimed: u64,
) -> Vec<&'a ReqInfo<'a>> {
    let mut v: Vec<&ReqInfo> = facts
        .requests
        .values()
        .filter(|q| q.host == host && q.t >= claimed && q.t <= l.end)
        .filter(
            |q| matches!(q.op, Op::Renew { job, token, .. } if *job == l.job && *token == l.token),
        )
        .collect();
    v.sort_by_key(|q| q.t);
    v
}

/// The retry owed after renew `q` failed (or timed out) at `a`.
fn retry(
    s: &Schedule,
    l: &Lease<'_>,
    renews: &[&ReqInfo],
    d: u64,
    q: &ReqInfo,
    a: u64,
    why: &str,
) -> Owed {
    // Halfway to the deadline on the holder's clock. The true time left,
    // read at the fastest rate, is at most `⌈left·(1+d)⌉` local ms: the
    // deadline's true instant is the first at which the clock reads it,
    // and the clock read whole ms (floored) at `a`, less than one below
    // its exact reading. The worker halves that whole count (floor).
    let left = deadline_high(s, l, renews, d, a).saturating_sub(a);
    let local_left = (u128::from(left) * (1_000_000 + u128::from(d))).div_ceil(1_000_000) as u64;
    let wait = (s.renew / 2).min(local_left / 2).max(MIN_RETRY_MS);
    Owed {
        from: a,
        due: a + stretch(wait, d),
        answered: a,
        after: After::Failed(format!("sent at {}ms ended with {why}", q.t)),
    }
}

/// Belief deadlines known at `at` (true time): the holder's belief
/// records, and one per renew answered `Renewed` by then once the handler
/// was done (a renew while the release is retried moves the fence without
/// a belief record), its local safe lease mapped to true time by `to_true`.
fn deadlines(
    s: &Schedule,
    l: &Lease<'_>,
    renews: &[&ReqInfo],
    at: u64,
    to_true: impl Fn(u64) -> u64,
) -> Option<u64> {
    let believed = l
        .beliefs
        .iter()
        .filter(|b| b.t <= at)
        .filter_map(|b| match &b.what {
            BeliefWhat::Claimed { until_true, .. } | BeliefWhat::Renewed { until_true, .. } => {
                Some(until_true.unwrap_or(u64::MAX))
            }
            _ => None,
        });
    let releasing = l
        .beliefs
        .iter()
        .find(|b| matches!(b.what, BeliefWhat::Ended { .. }))
        .map_or(u64::MAX, |b| b.t);
    let renewed = renews
        .iter()
        .filter(|q| {
            matches!(&q.answer, Some((a, Reply::Renewed { .. })) if *a <= at && *a >= releasing)
        })
        .map(|q| q.t.saturating_add(to_true(s.safe)));
    believed.chain(renewed).max()
}

/// The protocol's belief deadline at `at` (§2), as the range of true
/// instants it can fall at: the send of the holder's claim, or of its
/// latest renew answered `Renewed` by `at`, plus the safe lease on its
/// clock. From a send at true `t` (the clock then read whole ms, less
/// than one below its exact reading) that is no sooner than the safe
/// lease at the fastest rate, less a ms, and no later than at the slowest
/// rate, rounded up. `None` when the history names no claim of the
/// holder's (hand-written histories): the holder's records alone count.
fn protocol_deadline(
    s: &Schedule,
    l: &Lease<'_>,
    renews: &[&ReqInfo],
    d: u64,
    at: u64,
) -> Option<(u64, u64)> {
    let host = Facts::host_of(l.holder);
    let claim = l
        .claim
        .filter(|q| q.host == host && matches!(q.op, Op::Claim { .. }))?;
    let last = renews
        .iter()
        .filter(|q| matches!(&q.answer, Some((a, Reply::Renewed { .. })) if *a <= at))
        .map(|q| q.t)
        .chain([claim.t])
        .max()?;
    Some((
        last.saturating_add(shrink(s.safe, d)).saturating_sub(1),
        last.saturating_add(stretch(s.safe, d)),
    ))
}

/// The holder's belief deadline at `at` in true time, read from its own
/// records where they keep the protocol's (exact, and a correct holder's
/// always do), else the protocol's, at the end of its range `pick` takes:
/// a holder that believes past the protocol's deadline, or never fences
/// (the catalogue's `expiry-does-not-stop-handler`, `fence-from-answer`),
/// owes what the table owes with the deadline §2 gives, not with its own.
fn deadline(
    s: &Schedule,
    l: &Lease<'_>,
    renews: &[&ReqInfo],
    d: u64,
    at: u64,
    recorded: Option<u64>,
    pick: impl Fn((u64, u64)) -> u64,
) -> u64 {
    let recorded = recorded.unwrap_or(u64::MAX);
    match protocol_deadline(s, l, renews, d, at) {
        Some((lo, hi)) if !(lo..=hi).contains(&recorded) => pick((lo, hi)),
        _ => recorded,
    }
}

/// The earliest the holder's belief deadline at `at` can be in true time:
/// where obligations end.
fn deadline_low(s: &Schedule, l: &Lease<'_>, renews: &[&ReqInfo], d: u64, at: u64) -> u64 {
    let recorded = deadlines(s, l, renews, at, |w| shrink(w, d));
    deadline(s, l, renews, d, at, recorded, |(lo, _)| lo)
}

/// The latest the holder's belief deadline at `at` can be in true time:
/// how long a retry may wait (a belief record's true deadline is exact; a
/// renew's is its send plus the safe lease, [`stretch`]ed, rounded up).
fn deadline_high(s: &Schedule, l: &Lease<'_>, renews: &[&ReqInfo], d: u64, at: u64) -> u64 {
    let recorded = deadlines(s, l, renews, at, |w| stretch(w, d));
    deadline(s, l, renews, d, at, recorded, |(_, hi)| hi)
}
