//! I12 (schedules): for each schedule, each plan time yields at most one
//! job, always; once faults have healed, every plan time yields exactly one
//! job. A step of the store's clock excuses a missing job only for a plan
//! time inside the interval the step jumped over; nothing excuses a second
//! job.
//!
//! Read from the history and the scenario, sharing no code with the core:
//! - **jobs of a plan time** are the final rows whose idempotency key is
//!   `leasehold:schedule:<name>@<plan time ms>` (the spec's key of a fire,
//!   parsed here on its own);
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

use super::facts::Facts;
use super::Violation;
use crate::clock::ClockModel;
use crate::config::{InvariantId, ScriptedFault, SimConfig};
use crate::history::{History, Op, Record, Reply};
use leasehold_core::{JobId, StoreTime};
use std::collections::BTreeMap;

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
    // Who fired each plan time, for the reports.
    let mut firers: BTreeMap<(String, i64), Vec<String>> = BTreeMap::new();
    for q in facts.requests.values() {
        if let Op::Fire { name, plan_time } = &q.op {
            let f = firers.entry((name.clone(), plan_time.0)).or_default();
            if !f.contains(&q.host) {
                f.push(q.host.clone());
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
    out.extend(missing(h, facts, cfg, &jobs));
    out
}

/// Plan times in the healed window with no job.
fn missing(
    h: &History,
    facts: &Facts,
    cfg: &SimConfig,
    jobs: &BTreeMap<(String, i64), Vec<JobId>>,
) -> Vec<Violation> {
    let mut out = Vec::new();
    if cfg.topology.schedulers == 0 {
        return out;
    }
    let p = &cfg.protocol;
    let g = 4 * p.scheduler_tick.as_ms() + 2 * p.request_timeout.as_ms() + 1_000;
    let heal = schedule_heal(h, facts, cfg);
    // Schedulers stop firing one liveness bound before the end.
    let stop = facts.end_ms.min(crate::timing::firing_stops_ms(cfg));
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
        // Each-missed catch-up must also have fired the plan times its
        // bound reaches back over at the first healed tick.
        let reach = spec
            .catch_up_max
            .map_or(0, |m| grace + i64::from(m.saturating_sub(1)) * i);
        let lo = (s_lo - reach).max(put + 1);
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
    use crate::duration::Dur;
    use leasehold_core::{JobRecord, JobState, Token};
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
        });
        c
    }

    /// A history where schedule `s` was put at store time 0 and the final
    /// rows are `rows`, ending at true time `end`.
    fn history(rows: Vec<JobRecord>, end: u64) -> History {
        use crate::history::{Blob, Fate};
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
        let epoch = crate::clock::EPOCH_MS;
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
            by: crate::duration::SignedDur(15_000),
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
}
