//! Delta debugging of a failing scenario: the smallest configuration that
//! still breaks the same invariant on the same seed.
//!
//! The algorithm is independent of the engine: it takes a predicate
//! `fails(cfg)` (run the seed, look for the invariant) and, optionally,
//! the seed's concrete fault schedule. It first trades swarm faults for
//! that explicit schedule (so the file no longer depends on what the seed
//! draws), then greedily applies reductions while the predicate holds:
//! ddmin over the scripted events, then fewer jobs, workers, sweepers,
//! queues, a shorter run and fault window, shorter fault windows, swarm
//! ranges zeroed or pinned, the store paths a scenario opted into turned
//! off (`batch_parts`, `conflict_on`; `single_cancel` is a swarm range),
//! workload rates zeroed. Every candidate must
//! pass [`SimConfig::validate`]; the variant, expectation and seed are
//! never touched. The work is bounded by a run count and a wall budget.

use crate::runner::PreparedConfig;
use leasehold_model::config::{Range, ScriptedFault, SimConfig};
use leasehold_model::duration::{Dur, SignedDur};
use std::fmt;
use std::time::{Duration, Instant};

/// Default most predicate runs one shrink may spend.
pub const DEFAULT_MAX_RUNS: u32 = 400;
/// Default wall-time budget of one shrink.
pub const DEFAULT_MAX_WALL: Duration = Duration::from_secs(300);
/// Most passes over all reductions.
const MAX_PASSES: u32 = 12;
/// Most times one reduction is repeated inside a pass.
const MAX_REPEAT: u32 = 32;

/// Limits of one shrink.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    /// Most predicate runs.
    pub max_runs: u32,
    /// Most wall time.
    pub max_wall: Duration,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            max_runs: DEFAULT_MAX_RUNS,
            max_wall: DEFAULT_MAX_WALL,
        }
    }
}

/// How big a scenario is, for before/after reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size {
    /// Jobs.
    pub jobs: u32,
    /// Workers.
    pub workers: u32,
    /// Sweepers.
    pub sweepers: u32,
    /// Scripted events.
    pub events: usize,
    /// Swarm fault ranges that are not zero, and store paths opted into.
    pub swarm: usize,
    /// Simulated time.
    pub duration: Dur,
}

impl Size {
    /// The size of `cfg`.
    pub fn of(cfg: &SimConfig) -> Size {
        Size {
            jobs: cfg.workload.jobs,
            workers: cfg.topology.workers,
            sweepers: cfg.topology.sweepers,
            events: cfg.events.len(),
            swarm: swarm_ranges(cfg)
                .into_iter()
                .filter(|r| r.hi != 0.0)
                .count()
                + usize::from(cfg.faults.clock_offset != Range::exactly(SignedDur(0)))
                + usize::from(cfg.faults.clock_drift_ppm != Range::exactly(0))
                + usize::from(!cfg.faults.batch_parts.is_list())
                + usize::from(!cfg.faults.conflict_on.is_row_writes()),
            duration: cfg.duration,
        }
    }

    /// One number: jobs + workers + sweepers + events + swarm ranges.
    pub fn total(&self) -> u64 {
        u64::from(self.jobs)
            + u64::from(self.workers)
            + u64::from(self.sweepers)
            + self.events as u64
            + self.swarm as u64
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} jobs, {} workers, {} sweepers, {} scripted events, {} swarm fault ranges, {} simulated (size {})",
            self.jobs,
            self.workers,
            self.sweepers,
            self.events,
            self.swarm,
            self.duration,
            self.total()
        )
    }
}

/// What a shrink found.
#[derive(Clone, Debug)]
pub struct Shrunk {
    /// The smallest failing configuration found.
    pub config: SimConfig,
    /// Size before.
    pub before: Size,
    /// Size after.
    pub after: Size,
    /// Predicate runs spent.
    pub runs: u32,
    /// Whether swarm faults were replaced by the seed's concrete schedule.
    pub concretized: bool,
    /// Whether a budget ran out before no reduction was left.
    pub budget_exhausted: bool,
}

fn swarm_ranges(cfg: &SimConfig) -> [Range<f64>; 13] {
    let f = &cfg.faults;
    [
        f.worker_crash_rate,
        f.sweeper_crash_rate,
        f.store_crash_rate,
        f.partition_rate,
        f.pause_rate,
        f.hold_rate,
        f.clock_step_rate,
        f.message_loss,
        f.answer_loss,
        f.store_conflict,
        f.wake_loss,
        f.store_cancel,
        f.single_cancel,
    ]
}

/// `cfg` with its swarm faults that have a scripted form (crashes,
/// partitions, pauses, holds, clock offsets, drifts and steps) replaced by
/// `schedule`, the faults the seed drew. Message and answer loss have no
/// scripted form and stay.
pub fn concretize(cfg: &SimConfig, schedule: &[ScriptedFault]) -> SimConfig {
    let mut c = cfg.clone();
    let none = Range::exactly(0.0);
    let f = &mut c.faults;
    f.worker_crash_rate = none;
    f.sweeper_crash_rate = none;
    f.store_crash_rate = none;
    f.partition_rate = none;
    f.pause_rate = none;
    f.hold_rate = none;
    f.clock_step_rate = none;
    f.clock_offset = Range::exactly(SignedDur(0));
    f.clock_drift_ppm = Range::exactly(0);
    let mut events = cfg.events.clone();
    for e in schedule {
        if !events.contains(e) {
            events.push(e.clone());
        }
    }
    events.sort_by_key(ScriptedFault::start);
    c.events = events;
    c
}

struct Shrinker<'a> {
    fails: &'a mut dyn FnMut(&PreparedConfig) -> bool,
    budget: Budget,
    started: Instant,
    runs: u32,
    exhausted: bool,
}

impl Shrinker<'_> {
    /// Whether `candidate` still fails (and is valid, and differs).
    fn test(&mut self, current: &SimConfig, candidate: &SimConfig) -> bool {
        if candidate == current {
            return false;
        }
        // Validated once here; the run it is handed to does not again.
        let Ok(valid) = PreparedConfig::new(candidate.clone()) else {
            return false;
        };
        if self.runs >= self.budget.max_runs || self.started.elapsed() >= self.budget.max_wall {
            self.exhausted = true;
            return false;
        }
        self.runs += 1;
        (self.fails)(&valid)
    }

    /// Takes the first candidate that still fails.
    fn first_failing(&mut self, current: &mut SimConfig, candidates: Vec<SimConfig>) -> bool {
        for c in candidates {
            if self.test(current, &c) {
                *current = c;
                return true;
            }
        }
        false
    }

    /// ddmin over the scripted events.
    fn events(&mut self, current: &mut SimConfig) -> bool {
        let before = current.events.len();
        let mut items = current.events.clone();
        let with = |items: &[ScriptedFault], cur: &SimConfig| SimConfig {
            events: items.to_vec(),
            ..cur.clone()
        };
        if !items.is_empty() && self.test(current, &with(&[], current)) {
            *current = with(&[], current);
            return true;
        }
        let mut n = 2usize;
        // Each round removes events or doubles n up to len: O(len²) rounds at most.
        for _ in 0..(before * before + 4) {
            if items.len() < 2 || self.exhausted {
                break;
            }
            let chunk = items.len().div_ceil(n);
            let parts: Vec<Vec<ScriptedFault>> = items.chunks(chunk).map(<[_]>::to_vec).collect();
            let mut reduced = false;
            for (i, part) in parts.iter().enumerate() {
                let complement: Vec<ScriptedFault> = parts
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| *j != i)
                    .flat_map(|(_, p)| p.iter().cloned())
                    .collect();
                for subset in [part.clone(), complement] {
                    let cand = with(&subset, current);
                    if subset.len() < items.len() && self.test(current, &cand) {
                        *current = cand;
                        items = subset;
                        n = n.saturating_sub(1).max(2);
                        reduced = true;
                        break;
                    }
                }
                if reduced {
                    break;
                }
            }
            if !reduced {
                if n >= items.len() {
                    break;
                }
                n = (n * 2).min(items.len());
            }
        }
        current.events.len() < before
    }
}

/// Smaller values to try for a count `n` with floor `min`, smallest first.
fn smaller(n: u32, min: u32) -> Vec<u32> {
    let mut v = vec![
        min,
        min + (n.saturating_sub(min)) / 4,
        min + (n.saturating_sub(min)) / 2,
        n.saturating_sub(1),
    ];
    v.retain(|&x| x >= min && x < n);
    v.dedup();
    v
}

/// Drops events naming hosts that no longer exist.
fn keep_known_hosts(c: &mut SimConfig) {
    let hosts = c.hosts();
    c.events
        .retain(|e| e.hosts().iter().all(|h| hosts.contains(h)));
}

type Reduce = fn(&SimConfig) -> Vec<SimConfig>;

/// One copy of `c` per value of `values`, each changed by `set`.
fn each<T>(c: &SimConfig, values: Vec<T>, set: impl Fn(&mut SimConfig, T)) -> Vec<SimConfig> {
    values
        .into_iter()
        .map(|v| {
            let mut d = c.clone();
            set(&mut d, v);
            d
        })
        .collect()
}

fn fewer_jobs(c: &SimConfig) -> Vec<SimConfig> {
    each(c, smaller(c.workload.jobs, 1), |d, n| d.workload.jobs = n)
}

fn fewer_workers(c: &SimConfig) -> Vec<SimConfig> {
    each(c, smaller(c.topology.workers, 1), |d, n| {
        d.topology.workers = n;
        keep_known_hosts(d);
    })
}

fn fewer_sweepers(c: &SimConfig) -> Vec<SimConfig> {
    each(c, smaller(c.topology.sweepers, 0), |d, n| {
        d.topology.sweepers = n;
        keep_known_hosts(d);
    })
}

fn less_concurrency(c: &SimConfig) -> Vec<SimConfig> {
    each(c, smaller(c.protocol.concurrency, 1), |d, n| {
        d.protocol.concurrency = n
    })
}

fn one_queue(c: &SimConfig) -> Vec<SimConfig> {
    if c.workload.queues.len() < 2 {
        return vec![];
    }
    let mut d = c.clone();
    d.workload.queues.truncate(1);
    vec![d]
}

fn scale(d: Dur, num: u64, den: u64) -> Dur {
    Dur::ms(d.as_ms() * num / den)
}

fn shorter_run(c: &SimConfig) -> Vec<SimConfig> {
    each(c, vec![(1, 4), (1, 2), (3, 4)], |d, (num, den)| {
        d.duration = scale(c.duration, num, den);
        d.faults.window = scale(c.faults.window, num, den);
        d.events.retain(|e| e.start() < d.duration);
    })
}

fn shorter_window(c: &SimConfig) -> Vec<SimConfig> {
    each(c, vec![(1, 4), (1, 2)], |d, (num, den)| {
        d.faults.window = scale(c.faults.window, num, den)
    })
}

fn faster_enqueue(c: &SimConfig) -> Vec<SimConfig> {
    each(c, vec![(0, 1), (1, 2)], |d, (num, den)| {
        d.workload.enqueue_over = scale(c.workload.enqueue_over, num, den)
    })
}

fn shorter_fault_windows(c: &SimConfig) -> Vec<SimConfig> {
    let mut out = Vec::new();
    for i in 0..c.events.len() {
        let mut d = c.clone();
        let halve = |from: Dur, to: Dur| Dur::ms(from.as_ms() + (to.as_ms() - from.as_ms()) / 2);
        match &mut d.events[i] {
            ScriptedFault::Partition { from, to, .. } | ScriptedFault::Hold { from, to, .. } => {
                *to = halve(*from, *to);
                if *to <= *from {
                    continue;
                }
            }
            ScriptedFault::Pause { len, .. } if len.as_ms() > 1 => *len = scale(*len, 1, 2),
            _ => continue,
        }
        out.push(d);
    }
    out
}

fn quieter_swarm(c: &SimConfig) -> Vec<SimConfig> {
    let mut out = Vec::new();
    let zero = Range::exactly(0.0);
    let fields: [fn(&mut SimConfig) -> &mut Range<f64>; 13] = [
        |c| &mut c.faults.worker_crash_rate,
        |c| &mut c.faults.sweeper_crash_rate,
        |c| &mut c.faults.store_crash_rate,
        |c| &mut c.faults.partition_rate,
        |c| &mut c.faults.pause_rate,
        |c| &mut c.faults.hold_rate,
        |c| &mut c.faults.clock_step_rate,
        |c| &mut c.faults.message_loss,
        |c| &mut c.faults.answer_loss,
        |c| &mut c.faults.store_conflict,
        |c| &mut c.faults.wake_loss,
        |c| &mut c.faults.store_cancel,
        |c| &mut c.faults.single_cancel,
    ];
    for field in fields {
        let mut d = c.clone();
        let r = *field(&mut d);
        for pinned in [zero, Range::exactly(r.lo), Range::exactly(r.hi)] {
            if pinned != r {
                let mut e = c.clone();
                *field(&mut e) = pinned;
                out.push(e);
            }
        }
    }
    // Lengths of faults that no longer happen go back to their defaults,
    // so the written file shows only what matters.
    let defaults = leasehold_model::config::Faults::default();
    let f = &c.faults;
    let idle_lengths = [
        (
            f.partition_rate.hi == 0.0 && f.partition_len != defaults.partition_len,
            0,
        ),
        (
            f.pause_rate.hi == 0.0 && f.pause_len != defaults.pause_len,
            1,
        ),
        (f.hold_rate.hi == 0.0 && f.hold_len != defaults.hold_len, 2),
        (
            f.clock_step_rate.hi == 0.0 && f.clock_step != defaults.clock_step,
            3,
        ),
        (
            f.worker_crash_rate.hi == 0.0
                && f.sweeper_crash_rate.hi == 0.0
                && f.store_crash_rate.hi == 0.0
                && f.restart_after != defaults.restart_after,
            4,
        ),
    ];
    for (idle, which) in idle_lengths {
        if idle {
            let mut d = c.clone();
            match which {
                0 => d.faults.partition_len = defaults.partition_len,
                1 => d.faults.pause_len = defaults.pause_len,
                2 => d.faults.hold_len = defaults.hold_len,
                3 => d.faults.clock_step = defaults.clock_step,
                _ => d.faults.restart_after = defaults.restart_after,
            }
            out.push(d);
        }
    }
    let mut d = c.clone();
    d.faults.clock_offset = Range::exactly(SignedDur(0));
    out.push(d);
    let mut d = c.clone();
    d.faults.clock_drift_ppm = Range::exactly(0);
    out.push(d);
    out
}

/// The store paths a scenario opted into, each turned back off: a batch's
/// parts finishing in list order, conflicts on row writes only. Turning
/// `conflict_on` off is also tried together with `store_conflict` zeroed,
/// the one step validation accepts when conflicts go entirely (a scenario
/// may not ask conflicts to reach every write at a rate of zero).
fn plainer_store_paths(c: &SimConfig) -> Vec<SimConfig> {
    use leasehold_model::config::{BatchParts, ConflictOn};
    let mut out = Vec::new();
    if !c.faults.batch_parts.is_list() {
        let mut d = c.clone();
        d.faults.batch_parts = BatchParts::List;
        out.push(d);
    }
    if !c.faults.conflict_on.is_row_writes() {
        let mut d = c.clone();
        d.faults.conflict_on = ConflictOn::RowWrites;
        out.push(d.clone());
        d.faults.store_conflict = Range::exactly(0.0);
        out.push(d);
    }
    out
}

fn calmer_workload(c: &SimConfig) -> Vec<SimConfig> {
    let fields: [fn(&mut SimConfig) -> &mut f64; 5] = [
        |c| &mut c.workload.fail_rate,
        |c| &mut c.workload.permanent_share,
        |c| &mut c.workload.poison_rate,
        |c| &mut c.workload.hang_rate,
        |c| &mut c.workload.cancel_rate,
    ];
    let mut out = Vec::new();
    for field in fields {
        let mut d = c.clone();
        if *field(&mut d) != 0.0 {
            *field(&mut d) = 0.0;
            out.push(d);
        }
    }
    let rt = c.workload.run_time;
    for pinned in [Range::exactly(rt.lo), Range::exactly(rt.hi)] {
        if pinned != rt {
            let mut d = c.clone();
            d.workload.run_time = pinned;
            out.push(d);
        }
    }
    out
}

const REDUCTIONS: [Reduce; 13] = [
    fewer_jobs,
    fewer_workers,
    fewer_sweepers,
    shorter_run,
    shorter_window,
    quieter_swarm,
    plainer_store_paths,
    calmer_workload,
    less_concurrency,
    one_queue,
    faster_enqueue,
    shorter_fault_windows,
    fewer_jobs,
];

/// Shrinks `cfg` while `fails` keeps answering true. `schedule` is the
/// seed's concrete fault schedule, tried first in place of swarm faults.
/// `cfg` itself must fail; the answer is never larger than `cfg`.
pub fn shrink(
    cfg: &SimConfig,
    schedule: Option<&[ScriptedFault]>,
    fails: &mut dyn FnMut(&PreparedConfig) -> bool,
    budget: Budget,
) -> Shrunk {
    let mut s = Shrinker {
        fails,
        budget,
        started: Instant::now(),
        runs: 0,
        exhausted: false,
    };
    let mut current = cfg.clone();
    let mut concretized = false;
    if let Some(schedule) = schedule {
        let c = concretize(cfg, schedule);
        if s.test(&current, &c) {
            current = c;
            concretized = true;
        }
    }
    for _ in 0..MAX_PASSES {
        let mut changed = s.events(&mut current);
        for reduce in REDUCTIONS {
            for _ in 0..MAX_REPEAT {
                let candidates = reduce(&current);
                if !s.first_failing(&mut current, candidates) {
                    break;
                }
                changed = true;
            }
        }
        if !changed || s.exhausted {
            break;
        }
    }
    Shrunk {
        before: Size::of(cfg),
        after: Size::of(&current),
        config: current,
        runs: s.runs,
        concretized,
        budget_exhausted: s.exhausted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fault(s: &str) -> ScriptedFault {
        s.parse().unwrap()
    }

    /// A toy bug: fails when worker-2 crashes and there are at least 3 jobs.
    fn toy(c: &SimConfig) -> bool {
        c.workload.jobs >= 3
            && c.events
                .iter()
                .any(|e| e.to_string().starts_with("crash worker-2"))
    }

    #[test]
    fn reduces_to_the_one_event_and_the_floor_that_matter() {
        let mut cfg = SimConfig::default();
        cfg.workload.jobs = 40;
        cfg.topology.workers = 6;
        cfg.events = vec![
            fault("crash worker-1 at 5s"),
            fault("pause worker-3 for 10s at 7s"),
            fault("crash worker-2 at 30s"),
            fault("partition worker-4 store 40s..95s"),
            fault("skew sweeper-1 +1m at 0s"),
        ];
        let out = shrink(
            &cfg,
            None,
            &mut |c: &PreparedConfig| toy(c),
            Budget::default(),
        );
        assert_eq!(out.config.events, vec![fault("crash worker-2 at 30s")]);
        assert_eq!(out.config.workload.jobs, 3);
        assert_eq!(out.config.topology.workers, 2);
        assert!(out.after.total() < out.before.total());
        assert!(toy(&out.config));
        assert!(out.config.validate().is_ok());
    }

    #[test]
    fn concretize_zeroes_swarm_rates_and_keeps_loss() {
        let mut cfg = SimConfig::default();
        cfg.faults.worker_crash_rate = Range::new(0.1, 0.5);
        cfg.faults.message_loss = Range::new(0.0, 0.1);
        cfg.events = vec![fault("crash worker-2 at 30s")];
        let c = concretize(
            &cfg,
            &[
                fault("pause worker-1 for 3s at 1s"),
                fault("crash worker-2 at 30s"),
            ],
        );
        assert_eq!(c.faults.worker_crash_rate, Range::exactly(0.0));
        assert_eq!(c.faults.message_loss, cfg.faults.message_loss);
        assert_eq!(c.events.len(), 2);
        assert_eq!(c.events[0].start(), Dur::secs(1));
    }

    /// The store paths a scenario opts into are turned off when the bug
    /// does not need them, and `single_cancel` is zeroed like any swarm
    /// range.
    #[test]
    fn turns_off_store_paths_the_failure_does_not_need() {
        use leasehold_model::config::{BatchParts, ConflictOn};
        let mut cfg = SimConfig::default();
        cfg.faults.single_cancel = Range::new(0.1, 0.3);
        cfg.faults.batch_parts = BatchParts::Drawn;
        cfg.faults.conflict_on = ConflictOn::EveryWrite;
        cfg.faults.store_conflict = Range::new(0.1, 0.2);
        cfg.events = vec![fault("crash worker-2 at 30s")];
        assert!(cfg.validate().is_ok());
        let before = Size::of(&cfg);
        let out = shrink(
            &cfg,
            None,
            &mut |c: &PreparedConfig| toy(c),
            Budget::default(),
        );
        let f = &out.config.faults;
        assert_eq!(f.single_cancel, Range::exactly(0.0));
        assert_eq!(f.batch_parts, BatchParts::List);
        assert_eq!(f.conflict_on, ConflictOn::RowWrites);
        assert_eq!(f.store_conflict, Range::exactly(0.0));
        assert_eq!(out.after.swarm, 0);
        assert_eq!(before.swarm, 4, "two ranges and two store paths");
        assert!(toy(&out.config));
    }

    /// A failure that needs the store paths keeps them: each is on in the
    /// answer, and `single_cancel` is only narrowed (pinned), never zeroed.
    #[test]
    fn keeps_the_store_paths_the_failure_needs() {
        use leasehold_model::config::{BatchParts, ConflictOn};
        let mut cfg = SimConfig::default();
        cfg.faults.single_cancel = Range::new(0.1, 0.3);
        cfg.faults.batch_parts = BatchParts::Drawn;
        cfg.faults.conflict_on = ConflictOn::EveryWrite;
        cfg.faults.store_conflict = Range::new(0.1, 0.2);
        cfg.events = vec![fault("crash worker-2 at 30s")];
        let needs = |c: &SimConfig| {
            toy(c)
                && c.faults.single_cancel.hi > 0.0
                && c.faults.batch_parts == BatchParts::Drawn
                && c.faults.conflict_on == ConflictOn::EveryWrite
        };
        let out = shrink(
            &cfg,
            None,
            &mut |c: &PreparedConfig| needs(c),
            Budget::default(),
        );
        let f = &out.config.faults;
        assert!(needs(&out.config));
        assert_eq!(f.single_cancel.lo, f.single_cancel.hi, "pinned");
        assert!(f.store_conflict.hi > 0.0);
    }

    #[test]
    fn stops_at_the_run_budget() {
        let cfg = SimConfig {
            events: vec![fault("crash worker-2 at 30s")],
            ..SimConfig::default()
        };
        let mut runs = 0;
        let mut count = |c: &PreparedConfig| {
            runs += 1;
            toy(c)
        };
        let budget = Budget {
            max_runs: 5,
            max_wall: Duration::from_secs(60),
        };
        let out = shrink(&cfg, None, &mut count, budget);
        assert!(out.runs <= 5 && out.budget_exhausted);
        assert!(runs <= 5);
    }
}
