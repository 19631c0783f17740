//! I3 part (b), asserted on every run whatever the clocks: once a worker has
//! received `Lost` for a lease (renew or release), or has self-fenced, that
//! lease's handler is stopped within one step and produces no later side
//! effect.
//!
//! Negative tests plant a violation into the history of a real run (a late
//! side effect, a handler that never stops, a start after the stop, a stop
//! one millisecond past the step) and check that the checker reports it as
//! I3 part (b), also on runs that broke the timing assumption (where part
//! (a) is not asserted). Positive tests check that correct runs (pauses,
//! lost releases after a success) stay clean and that the catalogue's
//! `expiry-does-not-stop-handler` bug is caught by part (b).

mod engine_support;
use engine_support::memory_run;

use leasehold_check::checker::{check, Violation};
use leasehold_core::{JobId, Token, WorkerId};
use leasehold_model::config::{InvariantId, SimConfig};
use leasehold_model::history::{BeliefWhat, HandlerPhase, History, Op, Record, Reply};
use leasehold_model::scenario::load_file;
use leasehold_sim::runner::SeedOutcome;
use std::path::Path;

const LOST_RENEWS: &str = "lost_renew_answers_lead_to_self_fencing_not_double_work.toml";
const STORE_STEP: &str = "store_clock_step_breaks_timing_but_not_fencing.toml";
const GC_PAUSE: &str = "gc_pause_past_expiry_then_late_commit_is_refused.toml";
const CATALOGUE_EXPIRY: &str = "catalogue/expiry_does_not_stop_the_handler.toml";

fn scenario(file: &str) -> SimConfig {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(file);
    load_file(&path).unwrap_or_else(|e| panic!("{e}")).config
}

fn run(cfg: &SimConfig, seed: u64) -> SeedOutcome {
    memory_run(cfg, seed).unwrap_or_else(|e| panic!("{} seed {seed}: harness error: {e}", cfg.name))
}

/// The I3 part (b) violations the checker reports on `h`.
fn part_b(h: &History, cfg: &SimConfig) -> Vec<Violation> {
    check(h, cfg)
        .into_iter()
        .filter(|v| v.invariant == InvariantId::I3 && v.message.contains("part (b)"))
        .collect()
}

fn show(vs: &[Violation]) -> String {
    vs.iter()
        .map(|v| format!("{:?} {}", v.invariant, v.message))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A lease whose worker stopped believing (`Lost` or `Fenced`) while its
/// handler ran: the handler was dropped at the stop.
#[derive(Clone, Debug)]
struct Stopped {
    worker: WorkerId,
    job: JobId,
    token: Token,
    /// The belief end (true ms) and why.
    t_stop: u64,
    why: String,
    /// Index of the handler's `Dropped` record.
    dropped: usize,
}

fn is_handler_of(r: &Record, s: &Stopped) -> bool {
    matches!(r, Record::Handler { worker, job, token, .. }
        if *worker == s.worker && *job == s.job && *token == s.token)
}

/// Every belief record of `h`: its time, worker, job, token and what.
fn beliefs(h: &History) -> impl Iterator<Item = (u64, &WorkerId, JobId, Token, &BeliefWhat)> {
    h.records.iter().filter_map(|r| match r {
        Record::Belief {
            t,
            worker,
            job,
            token,
            what,
            ..
        } => Some((*t, worker, *job, *token, what)),
        _ => None,
    })
}

/// Leases of `h` stopped by a `Lost` or `Fenced` belief end, with their
/// handler dropped at that moment.
fn stopped_leases(h: &History) -> Vec<Stopped> {
    let mut out = Vec::new();
    for (t, worker, job, token, what) in beliefs(h) {
        let BeliefWhat::Ended { why } = what else {
            continue;
        };
        if why != "Lost" && why != "Fenced" {
            continue;
        }
        let mut s = Stopped {
            worker: worker.clone(),
            job,
            token,
            t_stop: t,
            why: why.clone(),
            dropped: usize::MAX,
        };
        let dropped = h.records.iter().position(|x| {
            is_handler_of(x, &s)
                && matches!(x, Record::Handler { t, phase: HandlerPhase::Dropped, .. } if *t == s.t_stop)
        });
        if let Some(i) = dropped {
            s.dropped = i;
            out.push(s);
        }
    }
    out
}

/// A self-fence of [`LOST_RENEWS`] (see [`find`]): the scenario, its
/// history to alter, and the stop.
fn a_lost_renews_stop() -> (SimConfig, History, Stopped) {
    let cfg = scenario(LOST_RENEWS);
    let (out, s) = find(&cfg, |_, _| true);
    (cfg, out.history, s)
}

/// The first seed of `cfg` with a clean run and a stopped lease that
/// `want` accepts.
fn find(cfg: &SimConfig, want: impl Fn(&History, &Stopped) -> bool) -> (SeedOutcome, Stopped) {
    for seed in 0..cfg.seeds.max(10) {
        let out = run(cfg, seed);
        assert!(
            out.violations.is_empty(),
            "{} seed {seed} is not clean:\n{}",
            cfg.name,
            show(&out.violations)
        );
        assert!(
            part_b(&out.history, cfg).is_empty(),
            "{} seed {seed}: part (b) on a correct run",
            cfg.name
        );
        if let Some(s) = stopped_leases(&out.history)
            .into_iter()
            .find(|s| want(&out.history, s))
        {
            return (out, s);
        }
    }
    panic!("{}: no seed has a suitable stopped lease", cfg.name);
}

/// Replaces the handler's drop by a successful return at `t`.
fn succeed_at(h: &mut History, s: &Stopped, at: u64) {
    let Record::Handler { t, phase, .. } = &mut h.records[s.dropped] else {
        unreachable!()
    };
    *t = at;
    *phase = HandlerPhase::Done { ok: true };
}

/// The violations name the lease and say part (b).
fn assert_caught(vs: &[Violation], s: &Stopped, says: &str) {
    let v = vs
        .iter()
        .find(|v| v.job == Some(s.job) && v.tokens.contains(&s.token))
        .unwrap_or_else(|| panic!("no part (b) violation for {s:?}; got:\n{}", show(vs)));
    assert!(v.message.contains("(b)"), "{}", v.message);
    assert!(
        v.message.contains(says),
        "expected {says:?} in: {}",
        v.message
    );
    assert!(v.hosts.contains(&s.worker.to_string()), "{:?}", v.hosts);
}

#[test]
fn a_side_effect_well_after_a_self_fence_is_a_part_b_violation() {
    let (cfg, mut h, s) = a_lost_renews_stop();
    let late = s.t_stop + 50 * cfg.tick.as_ms();
    succeed_at(&mut h, &s, late);
    let vs = part_b(&h, &cfg);
    assert_caught(&vs, &s, "produced its side effect");
    let v = vs
        .iter()
        .find(|v| v.job == Some(s.job))
        .expect("found above");
    assert_eq!(v.true_ms, late);
    assert!(
        v.message.contains(&format!("at {}ms", s.t_stop)),
        "{}",
        v.message
    );
}

#[test]
fn a_handler_that_never_stops_after_a_self_fence_is_a_part_b_violation() {
    let (cfg, mut h, s) = a_lost_renews_stop();
    h.records.remove(s.dropped);
    assert_caught(&part_b(&h, &cfg), &s, "never stopped");
}

#[test]
fn a_handler_started_after_the_stop_is_a_part_b_violation() {
    let (cfg, mut h, s) = a_lost_renews_stop();
    let Record::Handler { host, .. } = &h.records[s.dropped] else {
        unreachable!()
    };
    let host = host.clone();
    let start = s.t_stop + 1;
    // A second execution, started after the stop and dropped within the step.
    for phase in [HandlerPhase::Start, HandlerPhase::Dropped] {
        h.records.insert(
            s.dropped + 1,
            Record::Handler {
                t: start,
                host: host.clone(),
                worker: s.worker.clone(),
                job: s.job,
                token: s.token,
                phase,
            },
        );
    }
    // Inserted in reverse: put the start first.
    h.records.swap(s.dropped + 1, s.dropped + 2);
    assert_caught(&part_b(&h, &cfg), &s, "started afterwards");
}

#[test]
fn the_handler_may_take_one_step_to_stop_and_no_more() {
    let cfg = scenario(LOST_RENEWS);
    let tick = cfg.tick.as_ms();
    let (out, s) = find(&cfg, |_, _| true);
    let at = |t: u64| {
        let mut h = out.history.clone();
        let Record::Handler { t: when, .. } = &mut h.records[s.dropped] else {
            unreachable!()
        };
        *when = t;
        part_b(&h, &cfg)
    };
    assert!(
        at(s.t_stop + tick).is_empty(),
        "{}",
        show(&at(s.t_stop + tick))
    );
    assert_caught(&at(s.t_stop + tick + 1), &s, "stopped only at");
    // A success within the step is not flagged; one past it is.
    let mut h = out.history.clone();
    succeed_at(&mut h, &s, s.t_stop + tick);
    assert!(part_b(&h, &cfg).is_empty(), "{}", show(&part_b(&h, &cfg)));
    succeed_at(&mut h, &s, s.t_stop + tick + 1);
    assert_caught(&part_b(&h, &cfg), &s, "produced its side effect");
}

#[test]
fn part_b_is_asserted_when_the_run_is_marked_timing_broken() {
    let (cfg, mut h, s) = a_lost_renews_stop();
    for r in &mut h.records {
        if let Record::Run {
            timing_assumption_broken,
            ..
        } = r
        {
            *timing_assumption_broken = true;
        }
    }
    assert!(check(&h, &cfg).is_empty());
    succeed_at(&mut h, &s, s.t_stop + 50 * cfg.tick.as_ms());
    let all = check(&h, &cfg);
    assert_caught(&part_b(&h, &cfg), &s, "produced its side effect");
    // Part (a) and its belief-interval check are off: only (b) speaks.
    assert!(
        all.iter().all(|v| v.message.contains("(b)")),
        "{}",
        show(&all)
    );
}

#[test]
fn a_store_clock_step_run_still_asserts_part_b() {
    let cfg = scenario(STORE_STEP);
    let (out, s) = find(&cfg, |_, _| true);
    assert!(out.timing_assumption_broken, "the scenario breaks timing");
    // Late side effect.
    let mut h = out.history.clone();
    succeed_at(&mut h, &s, s.t_stop + 50 * cfg.tick.as_ms());
    assert_caught(&part_b(&h, &cfg), &s, "produced its side effect");
    // Never stopped.
    let mut h = out.history.clone();
    h.records.remove(s.dropped);
    assert_caught(&part_b(&h, &cfg), &s, "never stopped");
}

/// Request ids of renews of the lease answered `RenewLost` at `t`.
fn renew_lost_at(h: &History, s: &Stopped, t: u64) -> bool {
    h.records.iter().any(|r| {
        let Record::Answer {
            t: ta,
            id,
            reply: Reply::RenewLost,
            ..
        } = r
        else {
            return false;
        };
        *ta == t
            && h.records.iter().any(|q| {
                matches!(q, Record::Request { id: qi, op: Op::Renew { job, token, .. }, .. }
                    if qi == id && *job == s.job && *token == s.token)
            })
    })
}

#[test]
fn a_renew_answered_lost_starts_the_step_even_without_a_belief_end() {
    // The store's clock step makes leases expire early: renews come back Lost.
    let cfg = scenario(STORE_STEP);
    let (out, s) = find(&cfg, |h, s| {
        s.why == "Lost" && renew_lost_at(h, s, s.t_stop)
    });
    let mut h = out.history.clone();
    // Remove the worker's own account of the loss: only the answer's
    // receipt (ground truth of the network) remains.
    h.records.retain(|r| {
        !matches!(r, Record::Belief { worker, job, token, what: BeliefWhat::Ended { .. }, .. }
            if *worker == s.worker && *job == s.job && *token == s.token)
    });
    let dropped = h
        .records
        .iter()
        .position(|r| {
            is_handler_of(r, &s)
                && matches!(
                    r,
                    Record::Handler {
                        phase: HandlerPhase::Dropped,
                        ..
                    }
                )
        })
        .expect("still there");
    let s = Stopped { dropped, ..s };
    succeed_at(&mut h, &s, s.t_stop + 50 * cfg.tick.as_ms());
    let vs = part_b(&h, &cfg);
    assert_caught(&vs, &s, "received a renew answered Lost");
}

/// Leases whose handler succeeded and whose release was then answered Lost.
fn succeeded_then_release_lost(h: &History) -> Vec<(WorkerId, JobId, Token, usize, u64)> {
    let mut out = Vec::new();
    for (t, worker, job, token, what) in beliefs(h) {
        let BeliefWhat::Released {
            answer: Some(a), ..
        } = what
        else {
            continue;
        };
        if a != "Lost" {
            continue;
        }
        let done = h.records.iter().position(|x| {
            matches!(x, Record::Handler { worker: w, job: j, token: k, phase: HandlerPhase::Done { ok: true }, .. }
                if w == worker && *j == job && *k == token)
        });
        if let Some(i) = done {
            out.push((worker.clone(), job, token, i, t));
        }
    }
    out
}

#[test]
fn a_success_before_the_release_is_answered_lost_is_fine_but_not_after() {
    let cfg = scenario(STORE_STEP);
    for seed in 0..cfg.seeds {
        let out = run(&cfg, seed);
        let Some((worker, job, token, done, t_lost)) =
            succeeded_then_release_lost(&out.history).into_iter().next()
        else {
            continue;
        };
        assert!(
            part_b(&out.history, &cfg).is_empty(),
            "seed {seed}: a success before a Lost release was flagged:\n{}",
            show(&part_b(&out.history, &cfg))
        );
        // The same success, moved well after the Lost release, is flagged.
        let mut h = out.history.clone();
        let Record::Handler { t, .. } = &mut h.records[done] else {
            unreachable!()
        };
        assert!(*t <= t_lost);
        *t = t_lost + 50 * cfg.tick.as_ms();
        let vs = part_b(&h, &cfg);
        let v = vs
            .iter()
            .find(|v| v.job == Some(job) && v.tokens.contains(&token))
            .unwrap_or_else(|| panic!("not caught:\n{}", show(&vs)));
        assert!(v.message.contains("release"), "{}", v.message);
        assert!(v.hosts.contains(&worker.to_string()));
        return;
    }
    panic!("no seed has a success followed by a Lost release");
}

#[test]
fn a_paused_worker_is_measured_from_when_it_resumes() {
    // A worker paused past its belief deadline self-fences when it resumes,
    // long after the deadline in true time; the handler did not run in
    // between, and the check measures from the fence, not the deadline.
    let cfg = scenario(GC_PAUSE);
    let (out, s) = find(&cfg, |h, s| {
        s.why == "Fenced"
            && h.records.iter().any(|r| {
                matches!(r, Record::Belief { worker, job, token,
                    what: BeliefWhat::Claimed { until_true: Some(u), .. }
                        | BeliefWhat::Renewed { until_true: Some(u), .. }, .. }
                    if *worker == s.worker && *job == s.job && *token == s.token
                        && *u + 1_000 < s.t_stop)
            })
    });
    assert!(part_b(&out.history, &cfg).is_empty());
    let mut h = out.history.clone();
    succeed_at(&mut h, &s, s.t_stop + 50 * cfg.tick.as_ms());
    assert_caught(&part_b(&h, &cfg), &s, "self-fenced");
}

#[test]
fn expiry_does_not_stop_the_handler_is_caught_by_part_b() {
    let cfg = scenario(CATALOGUE_EXPIRY);
    assert_eq!(cfg.variant.as_deref(), Some("expiry-does-not-stop-handler"));
    let caught: Vec<u64> = (0..cfg.seeds)
        .filter(|&seed| {
            let out = run(&cfg, seed);
            part_b(&out.history, &cfg)
                .iter()
                .any(|v| v.message.contains("renew answered Lost"))
        })
        .collect();
    assert!(!caught.is_empty(), "no seed of {} seeds", cfg.seeds);
    // The correct core on the same seeds: no part (b).
    let mut correct = cfg.clone();
    correct.variant = None;
    correct.expect.violation = None;
    for seed in caught {
        let out = run(&correct, seed);
        assert!(
            part_b(&out.history, &correct).is_empty(),
            "seed {seed}:\n{}",
            show(&out.violations)
        );
    }
}
