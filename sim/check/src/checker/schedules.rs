//! I12 (schedules): for each schedule, each plan time yields at most one
//! job, always; once faults have healed, every plan time yields exactly one
//! job. A step of the store's clock excuses a missing job only for a plan
//! time inside the interval the step jumped over; nothing excuses a second
//! job.
//!
//! Read from the history and the scenario, sharing no code with the core:
//! - **jobs of a plan time** are the final rows whose idempotency key is
//!   `leasehold:schedule:<name>@<plan time ms>` (the spec's key of a fire,
//!   parsed here on its own), and the jobs fires were answered with that a
//!   prune later deleted (so a plan time fired again after its job was
//!   pruned has two jobs);
//! - **plan times** of an `every` rule are the multiples of its interval
//!   (computed here); cron rules are judged for at most one job only;
//! - **healed** means after the last fault that could keep a plan time from
//!   being fired: a crash, restart, pause, partition or hold of a scheduler
//!   host or the store, and the fault window when requests or answers could
//!   be lost. Clock offsets, drifts and steps are not faults that heal: a
//!   scheduler must fire by the store's clock whatever its own says, and a
//!   store step is judged by its own excuse. The window of store time judged
//!   runs from the store's clock `G` after healing (every scheduler has
//!   ticked and been answered by then), reaching back by the catch-up bound
//!   for schedules that fire each missed plan time, to `G` before the
//!   schedulers stop firing (one I6 liveness bound before the end);
//!   `G` is four scheduler ticks plus two request timeouts plus a second.
//!   The store's clock is the simulator's ground truth clock model of the
//!   store host.
//! - **catch-up bound**: one catch-up is one scheduler tick. A tick starts
//!   with the scheduler reading the store's clock (a `Now` request); its
//!   answer `N` is the store time the tick judges by, and every `Fire` the
//!   host sends until its next `Now` belongs to that tick. A plan time `p`
//!   fired in it is *missed* when `N - p` is more than the misfire grace.
//!   The distinct missed plan times of one schedule fired in one tick must
//!   not exceed its policy's bound (latest: one; each: its `catch_up_max`).
//!   Judging by the tick's own `N`, not by when the store applied a fire,
//!   is what makes this exact: an on-time plan time whose fire is applied
//!   late (a slow answer, a long tick) is still on time for the catch-up,
//!   and two ticks that each catch one plan time up (the first one's
//!   outcome unknown) are two catch-ups. A tick whose `Now` went
//!   unanswered fires nothing in a correct scheduler; one that never asks
//!   (a scheduler judging by its own clock) has no store time to be
//!   judged by here, and is left to the checks above.
//! - **removal**: a schedule exists in the store from a committed put
//!   (`Done`, whether or not the answer arrived) to a committed removal
//!   (`Removed(true)`), in the order the store served them. Once removed,
//!   a fire the store serves while no later put has brought it back must be
//!   refused; one that makes a new job is a violation, whenever it was
//!   sent (a fire in flight across the removal included). No job is
//!   demanded for a plan time later than `G` before the first committed
//!   removal's store time: schedulers fire a plan time within `G` of it,
//!   and one not fired by the removal is rightly never fired. Nor is the
//!   window reached back by catch-up when the removal committed before the
//!   healed point: there was no schedule left to catch up.

use super::facts::Facts;
use super::Violation;
use leasehold_core::{JobId, StoreTime};
use leasehold_model::clock::ClockModel;
use leasehold_model::config::{InvariantId, ScriptedFault, SimConfig};
use leasehold_model::history::{Fate, History, Op, Record, Reply};
use std::collections::{BTreeMap, BTreeSet};

/// Most missing plan times reported one by one per schedule.
const MAX_MISSING_REPORTED: usize = 3;
/// Most plan times enumerated per schedule.
const MAX_PLAN_TIMES: usize = 1_000_000;

/// The schedule and plan time a job key names, if it is a fire's key.
fn parse_key(key: &str) -> Option<(String, i64)> {
    let rest = key.strip_prefix("leasehold:schedule:")?;
    let at = rest.rfind('@')?;
    let t = rest[at + 1..].parse().ok()?;
    Some((rest[..at].to_string(), t))
}

fn is_scheduler_or_store(h: &str) -> bool {
    h == "store" || h.starts_with("scheduler-")
}

/// When every fault that can keep a plan time from firing has ended.
fn schedule_heal(h: &History, facts: &Facts, cfg: &SimConfig) -> u64 {
    let mut heal = 0;
    for f in &facts.faults {
        let end = match f {
            ScriptedFault::Crash { host, at } | ScriptedFault::Restart { host, at }
                if is_scheduler_or_store(host) =>
            {
                at.as_ms()
            }
            ScriptedFault::Pause { host, at, len } if is_scheduler_or_store(host) => {
                at.as_ms() + len.as_ms()
            }
            ScriptedFault::Partition { a, b, to, .. } | ScriptedFault::Hold { a, b, to, .. }
                if a.starts_with("scheduler-") || b.starts_with("scheduler-") =>
            {
                to.as_ms()
            }
            _ => 0,
        };
        heal = heal.max(end);
    }
    let lossy = h.records.iter().any(|r| {
        matches!(r, Record::Run { message_loss, answer_loss, store_conflict, .. }
            if *message_loss > 0.0 || *answer_loss > 0.0 || *store_conflict > 0.0)
    });
    if lossy {
        heal = heal.max(cfg.faults.window.as_ms());
    }
    heal
}

/// I12 violations of a run.
pub fn check(h: &History, facts: &Facts, cfg: &SimConfig) -> Vec<Violation> {
    let mut out = Vec::new();
    let mut jobs: BTreeMap<(String, i64), Vec<JobId>> = BTreeMap::new();
    for row in facts.finals.values() {
        if let Some(k) = row.idempotency_key.as_deref().and_then(parse_key) {
            jobs.entry(k).or_default().push(row.id);
        }
    }
    // A plan time's job that was pruned has no final row, but it was that
    // plan time's job all the same: a later job for the plan time is a
    // second one, and the plan time is not missing.
    for q in facts.requests.values() {
        if let (Op::Fire { name, plan_time }, Some((_, _, Some(Reply::Job(job))))) =
            (&q.op, &q.served)
        {
            if facts.pruned.contains_key(job) {
                let ids = jobs.entry((name.clone(), plan_time.0)).or_default();
                if !ids.contains(job) {
                    ids.push(*job);
                }
            }
        }
    }
    // Who fired each plan time, for the reports.
    let mut firers: BTreeMap<(String, i64), Vec<String>> = BTreeMap::new();
    for q in facts.requests.values() {
        if let Op::Fire { name, plan_time } = &q.op {
            let f = firers.entry((name.clone(), plan_time.0)).or_default();
            if !f.iter().any(|h| h == q.host) {
                f.push(q.host.to_string());
            }
        }
    }
    for ((name, p), ids) in &jobs {
        if ids.len() > 1 {
            let hosts = firers.get(&(name.clone(), *p)).cloned().unwrap_or_default();
            let ids_text: Vec<String> = ids.iter().map(|j| j.to_string()).collect();
            out.push(
                Violation::new(
                    InvariantId::I12,
                    format!(
                        "plan time @{p}ms of schedule {name:?} has {} jobs ({}), fired by {}",
                        ids.len(),
                        ids_text.join(", "),
                        if hosts.is_empty() {
                            "nobody".into()
                        } else {
                            hosts.join(", ")
                        }
                    ),
                )
                .job(ids[1])
                .hosts(hosts)
                .store_at(StoreTime(*p)),
            );
        }
    }
    let removed = removals(h, facts, &mut out);
    out.extend(catch_up_bound(facts, cfg));
    out.extend(missing(h, facts, cfg, &jobs, &removed));
    out
}

/// The store time of each schedule's first committed removal, and a
/// violation for every job a fire made while its schedule was removed.
fn removals(h: &History, facts: &Facts, out: &mut Vec<Violation>) -> BTreeMap<String, i64> {
    let mut first: BTreeMap<String, i64> = BTreeMap::new();
    // Whether each schedule is in the store, in serve order.
    let mut exists: BTreeMap<&str, bool> = BTreeMap::new();
    // The last committed removal of each schedule: store time, true time.
    let mut last_removal: BTreeMap<&str, (i64, u64)> = BTreeMap::new();
    let mut made: BTreeSet<(&str, i64)> = BTreeSet::new();
    for r in &h.records {
        let Record::Served {
            t,
            store_time,
            id,
            host,
            fate,
            reply: Some(reply),
            ..
        } = r
        else {
            continue;
        };
        // A request lost on the way in was never executed.
        if *fate == Fate::RequestLost {
            continue;
        }
        let Some(q) = facts.requests.get(id) else {
            continue;
        };
        match (&q.op, reply) {
            (Op::PutSchedule { name, .. }, Reply::Done) => {
                exists.insert(name, true);
            }
            (Op::RemoveSchedule { name }, Reply::Removed(true)) => {
                exists.insert(name, false);
                last_removal.insert(name, (store_time.0, *t));
                first.entry(name.clone()).or_insert(store_time.0);
            }
            (Op::Fire { name, plan_time }, Reply::Job(job)) => {
                let new = made.insert((name, plan_time.0));
                let gone = !exists.get(name.as_str()).copied().unwrap_or(false);
                if let (true, true, Some(&(removed_st, removed_t))) =
                    (new, gone, last_removal.get(name.as_str()))
                {
                    out.push(
                        Violation::new(
                            InvariantId::I12,
                            format!(
                                "plan time @{}ms of schedule {name:?} yielded job {job}, fired by \
                                 {host} (request {id}, sent at {}ms) and applied at store time \
                                 @{}ms, after the schedule's removal committed at store time \
                                 @{removed_st}ms (true time {removed_t}ms) and with no put since",
                                plan_time.0, q.t, store_time.0
                            ),
                        )
                        .job(*job)
                        .hosts([host.clone()])
                        .at(*t)
                        .store_at(*store_time),
                    );
                }
            }
            _ => {}
        }
    }
    first
}

/// Catch-ups that fired more missed plan times than their schedule's
/// policy allows (one catch-up is one tick; see the module docs).
fn catch_up_bound(facts: &Facts, cfg: &SimConfig) -> Vec<Violation> {
    /// One scheduler's current tick: the store time it judges by (if its
    /// `Now` was answered), when it started, and the missed plan times it
    /// fired per schedule.
    struct Tick<'a> {
        now: Option<i64>,
        t: u64,
        missed: BTreeMap<&'a str, BTreeSet<i64>>,
    }
    let grace = i64::try_from(cfg.protocol.misfire_grace.as_ms()).unwrap_or(i64::MAX);
    let bound_of = |name: &str| {
        cfg.schedules
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.catch_up_max.unwrap_or(1))
    };
    let mut out = Vec::new();
    let close =
        |host: &str, tick: Tick<'_>, out: &mut Vec<Violation>| {
            let Some(now) = tick.now else { return };
            for (name, missed) in tick.missed {
                let Some(bound) = bound_of(name) else {
                    continue;
                };
                if missed.len() <= bound as usize {
                    continue;
                }
                let policy = match cfg.schedules.iter().find(|s| s.name == name) {
                    Some(s) if s.catch_up_max.is_some() => format!("each (at most {bound})"),
                    _ => "latest (one)".to_string(),
                };
                let shown: Vec<String> = missed.iter().take(8).map(|p| format!("@{p}ms")).collect();
                out.push(
                    Violation::new(
                        InvariantId::I12,
                        format!(
                        "one catch-up of schedule {name:?} by {host} fired {} missed plan times \
                         ({}{}) in the tick that read the store's clock at @{now}ms (misfire \
                         grace {grace}ms), more than its catch-up policy {policy} allows",
                        missed.len(),
                        shown.join(", "),
                        if missed.len() > shown.len() { ", ..." } else { "" }
                    ),
                    )
                    .hosts([host.to_string()])
                    .at(tick.t)
                    .store_at(StoreTime(now)),
                );
            }
        };
    // Requests are in the order they were sent; one tick at a time per host.
    let mut ticks: BTreeMap<&str, Tick<'_>> = BTreeMap::new();
    for q in facts.requests.values() {
        if !q.host.starts_with("scheduler-") {
            continue;
        }
        match &q.op {
            Op::Now => {
                let now = match &q.answer {
                    Some((_, Reply::Time(n))) => Some(n.0),
                    _ => None,
                };
                let fresh = Tick {
                    now,
                    t: q.t,
                    missed: BTreeMap::new(),
                };
                if let Some(done) = ticks.insert(q.host, fresh) {
                    close(q.host, done, &mut out);
                }
            }
            Op::Fire { name, plan_time } => {
                if let Some(tick) = ticks.get_mut(q.host) {
                    if tick
                        .now
                        .is_some_and(|n| n.saturating_sub(plan_time.0) > grace)
                    {
                        tick.missed.entry(name).or_default().insert(plan_time.0);
                    }
                }
            }
            _ => {}
        }
    }
    for (host, tick) in ticks {
        close(host, tick, &mut out);
    }
    out
}

/// Plan times in the healed window with no job.
fn missing(
    h: &History,
    facts: &Facts,
    cfg: &SimConfig,
    jobs: &BTreeMap<(String, i64), Vec<JobId>>,
    removed: &BTreeMap<String, i64>,
) -> Vec<Violation> {
    let mut out = Vec::new();
    if cfg.topology.schedulers == 0 {
        return out;
    }
    let p = &cfg.protocol;
    let g = 4 * p.scheduler_tick.as_ms() + 2 * p.request_timeout.as_ms() + 1_000;
    let heal = schedule_heal(h, facts, cfg);
    // Schedulers stop firing one liveness bound before the end.
    let stop = facts
        .end_ms
        .min(leasehold_model::timing::firing_stops_ms(cfg));
    let (lo_t, hi_t) = (heal + g, stop.saturating_sub(g));
    if lo_t >= hi_t {
        return out;
    }
    let store = ClockModel::of_host("store", &facts.faults);
    let (s_lo, s_hi) = (store.wall(lo_t).0, store.wall(hi_t).0);
    // Forward steps of the store's clock: the store times it never read,
    // `[before, after)` (it read `after` at the step itself).
    let jumps: Vec<(i64, i64)> = facts
        .faults
        .iter()
        .filter_map(|f| match f {
            ScriptedFault::Skew { host, at, by }
                if host == "store" && at.as_ms() > 0 && by.0 > 0 =>
            {
                let after = store.wall(at.as_ms()).0;
                Some((after - by.0, after))
            }
            _ => None,
        })
        .collect();
    let excused = |t: i64| jumps.iter().any(|&(a, b)| t >= a && t < b);
    // When each schedule was first stored (its plan times start after).
    let mut put_at: BTreeMap<&str, i64> = BTreeMap::new();
    for r in &h.records {
        if let Record::Served {
            id,
            store_time,
            reply: Some(Reply::Done),
            ..
        } = r
        {
            if let Some(Op::PutSchedule { name, .. }) = facts.requests.get(id).map(|q| &q.op) {
                put_at.entry(name.as_str()).or_insert(store_time.0);
            }
        }
    }
    let grace = i64::try_from(p.misfire_grace.as_ms()).unwrap_or(i64::MAX);
    for spec in &cfg.schedules {
        let Some(every) = spec.every else { continue };
        let i = i64::try_from(every.as_ms()).unwrap_or(i64::MAX).max(1);
        let Some(&put) = put_at.get(spec.name.as_str()) else {
            out.push(Violation::new(
                InvariantId::I12,
                format!("schedule {:?} was never stored by any scheduler", spec.name),
            ));
            continue;
        };
        let removal = removed.get(spec.name.as_str()).copied();
        // Each-missed catch-up must also have fired the plan times its
        // bound reaches back over at the first healed tick, which is done
        // by `s_lo`; a schedule removed by then was never caught up.
        let reach = match spec.catch_up_max {
            Some(m) if removal.is_none_or(|r| s_lo < r) => {
                grace + i64::from(m.saturating_sub(1)) * i
            }
            _ => 0,
        };
        let lo = (s_lo - reach).max(put + 1);
        // Plan times too close to (or after) the removal are not demanded.
        let s_hi = removal.map_or(s_hi, |r| s_hi.min(r - i64::try_from(g).unwrap_or(i64::MAX)));
        let first = lo.div_euclid(i) * i + if lo.rem_euclid(i) == 0 { 0 } else { i };
        let mut gone = Vec::new();
        let mut t = first;
        for _ in 0..MAX_PLAN_TIMES {
            if t > s_hi {
                break;
            }
            if !jobs.contains_key(&(spec.name.clone(), t)) && !excused(t) {
                gone.push(t);
            }
            t += i;
        }
        for &t in gone.iter().take(MAX_MISSING_REPORTED) {
            out.push(
                Violation::new(
                    InvariantId::I12,
                    format!(
                        "plan time @{t}ms of schedule {:?} has no job, though it falls in the \
                         healed window [@{s_lo}ms, @{s_hi}ms] of store time{} ({} missing in all)",
                        spec.name,
                        if reach > 0 {
                            format!(" reached back by catch-up to @{lo}ms")
                        } else {
                            String::new()
                        },
                        gone.len()
                    ),
                )
                .at(lo_t)
                .store_at(StoreTime(t)),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasehold_core::{JobRecord, JobState, Token};
    use leasehold_model::duration::Dur;
    use leasehold_model::schedules::ScheduleSpec;

    fn row(id: u64, key: &str) -> JobRecord {
        JobRecord {
            id: JobId(id),
            queue: "default".into(),
            payload: b"sched:s".to_vec(),
            priority: 0,
            run_at: StoreTime(0),
            state: JobState::Pending,
            attempt: 0,
            max_attempts: 3,
            token: Token::NONE,
            holder: None,
            expires_at: None,
            cancel_requested: false,
            result: None,
            error: None,
            released: None,
            idempotency_key: Some(key.into()),
            version: 1,
            created_at: StoreTime(0),
            updated_at: StoreTime(0),
        }
    }

    fn cfg() -> SimConfig {
        let mut c = SimConfig::default();
        c.topology.schedulers = 1;
        c.schedules.push(ScheduleSpec {
            name: "s".into(),
            every: Some(Dur::secs(10)),
            cron: None,
            time_zone: None,
            queue: None,
            catch_up_max: None,
            jitter: None,
            remove_at: None,
        });
        c
    }

    /// A history where schedule `s` was put at store time 0 and the final
    /// rows are `rows`, ending at true time `end`.
    fn history(rows: Vec<JobRecord>, end: u64) -> History {
        use leasehold_model::history::{Blob, Fate};
        let mut records = vec![
            Record::Request {
                t: 0,
                local: 0,
                host: "scheduler-1".into(),
                id: 1,
                op: Op::PutSchedule {
                    name: "s".into(),
                    queue: "default".into(),
                    payload: Blob::of(b"sched:s"),
                    rule: leasehold_core::Rule::every(leasehold_core::Millis(10_000)),
                    catch_up: leasehold_core::CatchUp::Latest,
                    jitter: leasehold_core::Millis(0),
                    max_attempts: 3,
                },
                merged: false,
            },
            Record::Served {
                t: 0,
                store_time: StoreTime(0),
                id: 1,
                host: "scheduler-1".into(),
                fate: Fate::Answered,
                reply: Some(Reply::Done),
                after: vec![],
            },
        ];
        records.extend(rows.into_iter().map(|row| Record::Final { row }));
        records.push(Record::End {
            t: end,
            quiet: false,
        });
        History { records }
    }

    fn key(p: i64) -> String {
        format!("leasehold:schedule:s@{p}")
    }

    #[test]
    fn two_jobs_for_one_plan_time_are_a_violation() {
        let c = cfg();
        let h = history(vec![row(1, &key(10_000)), row(2, &key(10_000))], 0);
        let v = check(&h, &Facts::of(&h, &c), &c);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].invariant, InvariantId::I12);
        assert!(v[0].message.contains("has 2 jobs"), "{}", v[0].message);
    }

    #[test]
    fn a_missing_plan_time_in_the_healed_window_is_a_violation() {
        let c = cfg();
        let epoch = leasehold_model::clock::EPOCH_MS;
        // Jobs for every plan time in [epoch, epoch + 120s] but one.
        let rows: Vec<JobRecord> = (0..=12)
            .filter(|k| *k != 7)
            .map(|k| row(k as u64 + 1, &key(epoch + k * 10_000)))
            .collect();
        let h = history(rows.clone(), 120_000);
        let v = check(&h, &Facts::of(&h, &c), &c);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].message.contains("has no job"), "{}", v[0].message);
        assert_eq!(v[0].store_time, Some(StoreTime(epoch + 70_000)));
        // The same plan time inside a forward step of the store is excused.
        let mut c2 = c.clone();
        c2.events.push(ScriptedFault::Skew {
            host: "store".into(),
            at: Dur::secs(60),
            by: leasehold_model::duration::SignedDur(15_000),
        });
        let mut h2 = history(rows, 120_000);
        h2.records.insert(
            0,
            Record::Fault {
                t: 60_000,
                fault: c2.events[0].clone(),
            },
        );
        let v = check(&h2, &Facts::of(&h2, &c2), &c2);
        assert!(
            v.iter().all(|x| !x.message.contains("@1704067270000ms")),
            "{v:?}"
        );
    }

    /// Records of one request from `host`: sent at `t`, served at store
    /// time `st` (unless `st` is `None`: lost on the way in), answered.
    fn exchange(id: u64, host: &str, t: u64, st: Option<i64>, op: Op, reply: Reply) -> Vec<Record> {
        use leasehold_model::history::Fate;
        let mut v = vec![Record::Request {
            t,
            local: t,
            host: host.into(),
            id,
            op,
            merged: false,
        }];
        if let Some(st) = st {
            v.push(Record::Served {
                t,
                store_time: StoreTime(st),
                id,
                host: host.into(),
                fate: Fate::Answered,
                reply: Some(reply.clone()),
                after: vec![],
            });
        }
        v.push(Record::Answer {
            t,
            local: t,
            host: host.into(),
            id,
            reply,
        });
        v
    }

    /// A tick of `host` at store time `now` (true time `t`) firing
    /// `plan_times` of `s`, request ids from `id`; each fire makes job
    /// `plan time / 1000`.
    fn tick(id: u64, host: &str, t: u64, now: i64, plan_times: &[i64]) -> Vec<Record> {
        let mut v = exchange(id, host, t, Some(now), Op::Now, Reply::Time(StoreTime(now)));
        for (k, &p) in plan_times.iter().enumerate() {
            v.extend(exchange(
                id + 1 + k as u64,
                host,
                t,
                Some(now),
                Op::Fire {
                    name: "s".into(),
                    plan_time: StoreTime(p),
                },
                Reply::Job(JobId(p as u64 / 1000)),
            ));
        }
        v
    }

    fn with(mut h: History, extra: Vec<Record>) -> History {
        // After the put, before the final rows.
        h.records.splice(2..2, extra);
        h
    }

    fn catch_up_violations(c: &SimConfig, h: &History) -> Vec<Violation> {
        catch_up_bound(&Facts::of(h, c), c)
    }

    #[test]
    fn a_latest_catch_up_fires_one_missed_plan_time_and_passes() {
        let c = cfg();
        // Grace 5s, every 10s, now = 100.5s: 100s is on time, 90s and
        // older are missed; only 90s is caught up.
        let h = with(
            history(vec![], 0),
            tick(10, "scheduler-1", 0, 100_500, &[90_000, 100_000]),
        );
        assert!(catch_up_violations(&c, &h).is_empty());
        // An on-time plan time whose fire is applied long after the tick
        // began is still on time: the tick's own reading of the clock judges.
        let mut late_apply = tick(10, "scheduler-1", 0, 100_500, &[90_000, 100_000]);
        for r in &mut late_apply {
            if let Record::Served {
                id: 12, store_time, ..
            } = r
            {
                *store_time = StoreTime(130_000);
            }
        }
        let h = with(history(vec![], 0), late_apply);
        assert!(catch_up_violations(&c, &h).is_empty());
        // Two ticks catching up one each (the first one's outcome unknown,
        // a plan time crossing the grace between them) are two catch-ups.
        let mut two = tick(10, "scheduler-1", 0, 100_500, &[90_000]);
        two.extend(tick(20, "scheduler-1", 1_000, 106_000, &[100_000]));
        let h = with(history(vec![], 0), two);
        assert!(catch_up_violations(&c, &h).is_empty());
    }

    #[test]
    fn a_latest_catch_up_firing_two_missed_plan_times_is_a_violation() {
        let c = cfg();
        let h = with(
            history(vec![], 0),
            tick(10, "scheduler-1", 0, 100_500, &[80_000, 90_000, 100_000]),
        );
        let v = catch_up_violations(&c, &h);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].invariant, InvariantId::I12);
        assert!(
            v[0].message.contains("2 missed plan times"),
            "{}",
            v[0].message
        );
        assert!(v[0].message.contains("latest (one)"), "{}", v[0].message);
        assert_eq!(v[0].hosts, vec!["scheduler-1".to_string()]);
        // The same fires split over two schedulers are one catch-up each.
        let mut split = tick(10, "scheduler-1", 0, 100_500, &[80_000, 100_000]);
        split.extend(tick(20, "scheduler-2", 0, 100_500, &[90_000, 100_000]));
        let h = with(history(vec![], 0), split);
        assert!(catch_up_violations(&c, &h).is_empty());
    }

    #[test]
    fn an_each_catch_up_is_held_to_its_bound() {
        let mut c = cfg();
        c.schedules[0].catch_up_max = Some(3);
        let ok = tick(
            10,
            "scheduler-1",
            0,
            100_500,
            &[70_000, 80_000, 90_000, 100_000],
        );
        let h = with(history(vec![], 0), ok);
        assert!(catch_up_violations(&c, &h).is_empty());
        // max + 1 missed plan times in one tick: the planted bug of a
        // scheduler that forgets the bound.
        let over = tick(
            10,
            "scheduler-1",
            0,
            100_500,
            &[60_000, 70_000, 80_000, 90_000, 100_000],
        );
        let h = with(history(vec![], 0), over);
        let v = catch_up_violations(&c, &h);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(
            v[0].message.contains("4 missed plan times"),
            "{}",
            v[0].message
        );
        assert!(
            v[0].message.contains("each (at most 3)"),
            "{}",
            v[0].message
        );
        assert_eq!(v[0].store_time, Some(StoreTime(100_500)));
        // The whole check reports it too.
        let all = check(&h, &Facts::of(&h, &c), &c);
        assert!(
            all.iter().any(|x| x.message.contains("one catch-up")),
            "{all:?}"
        );
    }

    fn remove(id: u64, t: u64, st: Option<i64>, existed: bool) -> Vec<Record> {
        exchange(
            id,
            "client",
            t,
            st,
            Op::RemoveSchedule { name: "s".into() },
            Reply::Removed(existed),
        )
    }

    #[test]
    fn a_job_made_after_the_removal_committed_is_a_violation() {
        let c = cfg();
        // Fired before the removal: fine. Removed at store time 55s.
        let mut recs = tick(10, "scheduler-1", 0, 50_500, &[50_000]);
        recs.extend(remove(20, 5_000, Some(55_000), true));
        let h = with(history(vec![], 0), recs.clone());
        assert!(check(&h, &Facts::of(&h, &c), &c).is_empty());
        // A fire the store applied after the removal (sent before it or
        // not) made a job.
        recs.extend(tick(30, "scheduler-1", 6_000, 60_500, &[60_000]));
        let h = with(history(vec![], 0), recs.clone());
        let v = check(&h, &Facts::of(&h, &c), &c);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(
            v[0].message.contains("after the schedule's removal"),
            "{}",
            v[0].message
        );
        assert_eq!(v[0].job, Some(JobId(60)));
        // Put back by a scheduler since: the schedule exists again.
        let mut back = recs[..recs.len() - 6].to_vec();
        let put = with(history(vec![], 0), vec![]).records[0].clone();
        let Record::Request { op, .. } = put else {
            unreachable!("the history starts with the put")
        };
        back.extend(exchange(
            25,
            "scheduler-2",
            5_500,
            Some(57_000),
            op,
            Reply::Done,
        ));
        back.extend(tick(30, "scheduler-1", 6_000, 60_500, &[60_000]));
        let h = with(history(vec![], 0), back);
        assert!(check(&h, &Facts::of(&h, &c), &c).is_empty());
        // A removal that never reached the store removes nothing.
        let mut lost = tick(10, "scheduler-1", 0, 50_500, &[50_000]);
        lost.extend(remove(20, 5_000, None, true));
        lost.extend(tick(30, "scheduler-1", 6_000, 60_500, &[60_000]));
        let h = with(history(vec![], 0), lost);
        assert!(check(&h, &Facts::of(&h, &c), &c).is_empty());
    }

    #[test]
    fn plan_times_after_the_removal_are_not_demanded() {
        let c = cfg();
        let epoch = leasehold_model::clock::EPOCH_MS;
        // Jobs for every plan time up to 40s; the removal commits at 50s.
        let rows: Vec<JobRecord> = (0..=4)
            .map(|k| row(k as u64 + 1, &key(epoch + k * 10_000)))
            .collect();
        let h = history(rows.clone(), 120_000);
        let v = check(&h, &Facts::of(&h, &c), &c);
        assert!(v.iter().any(|x| x.message.contains("has no job")), "{v:?}");
        let h = with(
            history(rows.clone(), 120_000),
            remove(20, 50_000, Some(epoch + 50_000), true),
        );
        let v = check(&h, &Facts::of(&h, &c), &c);
        assert!(v.is_empty(), "{v:?}");
        // A schedule catching up each missed plan time, its scheduler
        // paused from before plan time 30s until after the removal: no
        // catch-up reaches back, so 30s and 40s are not demanded.
        let mut c2 = c.clone();
        c2.schedules[0].catch_up_max = Some(30);
        let crash = ScriptedFault::Pause {
            host: "scheduler-1".into(),
            at: Dur::secs(25),
            len: Dur::secs(30),
        };
        c2.events.push(crash.clone());
        let mut h = with(
            history(rows[..3].to_vec(), 120_000),
            remove(20, 50_000, Some(epoch + 50_000), true),
        );
        h.records.insert(
            0,
            Record::Fault {
                t: 25_000,
                fault: crash,
            },
        );
        let v = check(&h, &Facts::of(&h, &c2), &c2);
        assert!(v.is_empty(), "{v:?}");
    }

    /// A prune at store time `st` answered with `ids`.
    fn prune(id: u64, st: i64, ids: &[u64]) -> Vec<Record> {
        let r = leasehold_core::Millis(60_000);
        exchange(
            id,
            "pruner-1",
            st as u64,
            Some(st),
            Op::Prune {
                retention: r,
                limit: 10,
                audit_retention: r,
            },
            Reply::Pruned(ids.iter().map(|i| JobId(*i)).collect()),
        )
    }

    #[test]
    fn a_plan_time_fired_again_after_its_job_was_pruned_has_two_jobs() {
        let c = cfg();
        let fire = |id, t: u64, reply| {
            exchange(
                id,
                "scheduler-1",
                t,
                Some(t as i64),
                Op::Fire {
                    name: "s".into(),
                    plan_time: StoreTime(10_000),
                },
                reply,
            )
        };
        // Fired (job 10), pruned, then refused: one job, though no final row.
        let mut ok = tick(2, "scheduler-1", 10_000, 10_000, &[10_000]);
        ok.extend(prune(4, 80_000, &[10]));
        ok.extend(fire(
            5,
            80_001,
            Reply::Rejected("PlanTimePruned(\"s\", @10000ms, @10000ms)".into()),
        ));
        let h = with(history(vec![], 0), ok.clone());
        let v = check(&h, &Facts::of(&h, &c), &c);
        assert!(v.is_empty(), "{v:?}");
        // Fired again after the prune: a second job for the plan time.
        let mut again = ok;
        again.truncate(again.len() - 3);
        again.extend(fire(5, 80_001, Reply::Job(JobId(11))));
        let h = with(history(vec![row(11, &key(10_000))], 0), again);
        let v = check(&h, &Facts::of(&h, &c), &c);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(
            v[0].message
                .contains("plan time @10000ms of schedule \"s\" has 2 jobs (job-11, job-10)"),
            "{}",
            v[0].message
        );
    }
}
