//! Lease histories with values, checked for linearizability against a
//! lease model with fencing tokens and expiry on the store's clock.
//!
//! The model, per job (leases of different jobs never interact, so each
//! job is searched on its own, as Porcupine partitions by key):
//! - a grant of token `t` needs the job not ended and `t` above every
//!   token granted before; and, when the history carries the store's
//!   clock (see below), the grant's store time at or after the expiry of
//!   the previous lease unless that lease was released. A sweep does not
//!   shorten a lease: a grant to B while A's lease was unexpired on the
//!   store's clock is a violation even when A's lease was swept and both
//!   calls completed;
//! - a renew or release answered `:ok` needs the lease it names to be the
//!   one held (granted, not released, not swept). A release repeated with
//!   the same token and outcome after it committed is accepted
//!   (idempotent); a release `:succeeded` or `:cancelled` ends the job;
//! - a sweep `:ok` reclaims leases that were held.
//!
//! The store's clock: an `:acquire` invocation's `:lease-ms` (the lease
//! length asked for) and each granted lease's `:expires-ms` (its expiry
//! on the store's clock, in milliseconds) give the grant's store time,
//! `expires-ms - lease-ms`; a renew answered `:ok` with `:expires-ms`
//! moves the expiry. Without them, expiry is not judged (a lease may have
//! expired at any time), only tokens. `:time` is the client's clock and
//! is never compared with the store's.
//!
//! Invariants: `:fail` calls did not happen; `:info` or never-completed
//! renews and releases may have taken effect any time after their
//! invocation, or never; an `:acquire` that ended `:info` may have granted
//! an unseen lease, so a lease named later but never seen granted is
//! taken as granted just before it is first named (never blamed); an
//! `:info` sweep is left out. An acquire or sweep naming several jobs is
//! judged in each job's search on its own, which can only accept more.
//! Each job's search is bounded ([`Limits`]); a bound hit is
//! [`LeaseVerdict::Unknown`] for that job, never a pass.

use super::calls::{lease_of, outcome_of, pair, Call};
use super::edn::ReadError;
use super::linearize::{self, Effort, Limits, Model, Verdict};
use super::{Op, OpType, Pos, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Instant;

/// What a call does to one job's lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LeaseOp {
    /// A grant of `token`; `at` and `expires` on the store's clock, when
    /// the history says.
    Grant {
        /// The fencing token.
        token: i64,
        /// Store time of the grant (`:expires-ms - :lease-ms`).
        at: Option<i64>,
        /// Store time it expires (`:expires-ms`).
        expires: Option<i64>,
    },
    /// A renew of `token`, with its new expiry when the answer says.
    Renew {
        /// The fencing token.
        token: i64,
        /// New expiry on the store's clock.
        expires: Option<i64>,
    },
    /// A release of `token` with an outcome (`:succeeded`, ...).
    Release {
        /// The fencing token.
        token: i64,
        /// The outcome's name.
        outcome: String,
    },
    /// A sweep reclaiming `token`.
    Sweep {
        /// The fencing token.
        token: i64,
    },
}

/// One job's lease.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct JobLease {
    /// The newest token granted (0: none).
    pub token: i64,
    /// Whether that lease is held: granted, not released, not swept.
    pub held: bool,
    /// Store-clock expiry of the newest lease, unless it was released.
    pub valid_until: Option<i64>,
    /// Whether the job ended (a release `:succeeded` or `:cancelled`).
    pub ended: bool,
    /// Releases that committed: token and outcome, for idempotent repeats.
    pub released: Vec<(i64, String)>,
}

impl std::fmt::Display for JobLease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.token == 0 {
            return write!(f, "no lease granted");
        }
        let how = if self.held {
            "held"
        } else if self.ended {
            "released, the job ended"
        } else {
            "no longer held"
        };
        write!(f, "token {} {how}", self.token)?;
        if let Some(v) = self.valid_until {
            write!(f, ", valid until {v} ms on the store's clock")?;
        }
        Ok(())
    }
}

/// The lease model of one job.
#[derive(Clone, Debug, Default)]
pub struct LeaseModel {
    /// Tokens some `:ok` acquire granted to this job.
    pub seen: BTreeSet<i64>,
    /// Whether some acquire ended `:info` (it may have granted an unseen
    /// lease).
    pub unseen_grants: bool,
}

impl LeaseModel {
    /// The state with `token` granted unseen just before, when that is
    /// possible.
    fn with_unseen(&self, s: &JobLease, token: i64) -> Option<JobLease> {
        if self.unseen_grants && !self.seen.contains(&token) && token > s.token && !s.ended {
            Some(JobLease {
                token,
                held: true,
                valid_until: None,
                ..s.clone()
            })
        } else {
            None
        }
    }
}

impl Model for LeaseModel {
    type State = JobLease;
    type Op = LeaseOp;
    fn step(&self, s: &JobLease, op: &LeaseOp) -> Result<JobLease, String> {
        match op {
            LeaseOp::Grant { token, at, expires } => {
                if s.ended {
                    return Err("the job had ended".into());
                }
                if *token <= s.token {
                    return Err(format!(
                        "token {token} is not above token {} granted before",
                        s.token
                    ));
                }
                if let (Some(at), Some(until)) = (at, s.valid_until) {
                    if *at < until {
                        return Err(format!(
                            "it was granted at {at} ms on the store's clock, while the lease of token {} was valid until {until} ms",
                            s.token
                        ));
                    }
                }
                Ok(JobLease {
                    token: *token,
                    held: true,
                    valid_until: *expires,
                    ..s.clone()
                })
            }
            LeaseOp::Renew { token, expires } => {
                let s = self.with_unseen(s, *token).unwrap_or_else(|| s.clone());
                if !(s.held && s.token == *token) {
                    return Err(format!("token {token} was not the lease held ({s})"));
                }
                Ok(JobLease {
                    valid_until: expires.or(s.valid_until),
                    ..s
                })
            }
            LeaseOp::Release { token, outcome } => {
                let s = self.with_unseen(s, *token).unwrap_or_else(|| s.clone());
                if s.held && s.token == *token {
                    let mut next = JobLease {
                        held: false,
                        valid_until: None,
                        ended: matches!(outcome.as_str(), "succeeded" | "cancelled"),
                        ..s
                    };
                    next.released.push((*token, outcome.clone()));
                    return Ok(next);
                }
                if s.released.iter().any(|(t, o)| t == token && o == outcome) {
                    return Ok(s); // an idempotent repeat
                }
                Err(format!("token {token} was not the lease held ({s})"))
            }
            LeaseOp::Sweep { token } => {
                let s = self.with_unseen(s, *token).unwrap_or_else(|| s.clone());
                if !(s.held && s.token == *token) {
                    return Err(format!("token {token} was not the lease held ({s})"));
                }
                Ok(JobLease { held: false, ..s })
            }
        }
    }
}

/// A job whose calls cannot be linearized.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseViolation {
    /// The job.
    pub job: i64,
    /// Where the call no order reaches ends in the file.
    pub pos: Pos,
    /// That call, described.
    pub call: String,
    /// Why it cannot take effect, when the lease's state says why.
    pub why: Option<String>,
    /// The lease's state just before, as the search last saw it.
    pub state: String,
    /// The job's calls concurrent with it (the window), described.
    pub window: Vec<String>,
}

impl crate::finding::Finding for LeaseViolation {
    fn broken(&self) -> String {
        "linearizability (lease model)".into()
    }
    fn message(&self) -> String {
        format!(
            "no order of its calls reaches the completion of {}{}; the lease before it: {}",
            self.call,
            self.why
                .as_ref()
                .map(|w| format!(" ({w})"))
                .unwrap_or_default(),
            self.state
        )
    }
    /// The job; the window is printed after, one call a line.
    fn context(&self) -> Vec<(&'static str, String)> {
        vec![("job", self.job.to_string())]
    }
}

/// The verdict on one job, or on the whole history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LeaseVerdict {
    /// Every job's calls are linearizable.
    Valid,
    /// These jobs' are not.
    Invalid(Vec<LeaseViolation>),
    /// A bound was hit for these jobs (and no violation found elsewhere).
    Unknown(Vec<(i64, String)>),
}

/// The report on a lease history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseReport {
    /// Jobs searched.
    pub jobs: usize,
    /// Calls judged (grants and sweeps count once per lease named).
    pub calls: usize,
    /// Whether the history carried the store's clock for every grant
    /// (`:lease-ms` and `:expires-ms`), so expiry was judged.
    pub expiry_judged: bool,
    /// Violations (by job, in job order) and bounds hit.
    pub verdict: LeaseVerdict,
    /// Work the searches did, summed.
    pub effort: Effort,
}

/// Most violations reported (one per job).
pub const MAX_VIOLATIONS: usize = 20;

struct Parsed {
    job: i64,
    op: LeaseOp,
}

fn int(v: &Value, key: &str) -> Option<i64> {
    v.get(key).and_then(Value::as_int)
}

fn leases_of(v: &Value) -> Result<Vec<&Value>, String> {
    match v {
        Value::Vector(items) => Ok(items.iter().collect()),
        Value::Map(_) => Ok(vec![v]),
        other => Err(format!(
            "the value must be a lease {{:job J, :token T}} or a vector of them, not {other:?}"
        )),
    }
}

/// What one call does, per job (empty for calls left out).
fn parse(c: &Call<'_>) -> Result<Vec<Parsed>, String> {
    let result = c.end.map_or(&Value::Nil, |e| &e.value);
    Ok(match (c.f, c.kind) {
        ("acquire", OpType::Ok) => {
            let lease_ms = int(&c.inv.value, "lease-ms");
            let mut out = Vec::new();
            for l in leases_of(result)? {
                let (job, token) = lease_of(l)?;
                let expires = int(l, "expires-ms");
                let at = expires.zip(lease_ms).map(|(e, l)| e.saturating_sub(l));
                out.push(Parsed {
                    job,
                    op: LeaseOp::Grant { token, at, expires },
                });
            }
            out
        }
        ("sweep", OpType::Ok) => {
            let mut out = Vec::new();
            for l in leases_of(result)? {
                let (job, token) = lease_of(l)?;
                out.push(Parsed {
                    job,
                    op: LeaseOp::Sweep { token },
                });
            }
            out
        }
        ("renew", _) => {
            let (job, token) = lease_of(&c.inv.value)?;
            let expires = (c.kind == OpType::Ok)
                .then(|| int(result, "expires-ms"))
                .flatten();
            vec![Parsed {
                job,
                op: LeaseOp::Renew { token, expires },
            }]
        }
        ("release", _) => {
            let (job, token) = lease_of(&c.inv.value)?;
            let outcome = outcome_of(&c.inv.value).unwrap_or("").to_string();
            vec![Parsed {
                job,
                op: LeaseOp::Release { token, outcome },
            }]
        }
        _ => Vec::new(),
    })
}

/// Checks the lease calls of `ops` (from `file`) for linearizability,
/// each job on its own; `limits` bound each job's search, and its
/// deadline the whole check.
pub fn check(
    ops: &[(Pos, Op)],
    file: &Path,
    limits: &Limits,
) -> Result<LeaseReport, Vec<ReadError>> {
    let (calls, _) = pair(ops, &["acquire", "renew", "release", "sweep"], file)?;
    let mut errors = Vec::new();
    let mut jobs: BTreeMap<i64, Vec<(usize, LeaseOp)>> = BTreeMap::new();
    let mut unseen_grants = false;
    let (mut grants, mut timed) = (0usize, 0usize);
    for (k, c) in calls.iter().enumerate() {
        if c.kind == OpType::Fail {
            continue;
        }
        if c.f == "acquire" && c.kind != OpType::Ok {
            unseen_grants = true;
            continue;
        }
        match parse(c) {
            Ok(parsed) => {
                for p in parsed {
                    if let LeaseOp::Grant { at, .. } = p.op {
                        grants += 1;
                        timed += usize::from(at.is_some());
                    }
                    jobs.entry(p.job).or_default().push((k, p.op));
                }
            }
            Err(m) => errors.push(ReadError {
                file: file.to_path_buf(),
                pos: c.pos(),
                message: m,
            }),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut effort = Effort::default();
    let mut violations = Vec::new();
    let mut unknown = Vec::new();
    let mut judged = 0;
    for (&job, job_calls) in &jobs {
        if limits.deadline.is_some_and(|d| Instant::now() > d) {
            unknown.push((job, "the check ran out of time before this job".to_string()));
            continue;
        }
        judged += job_calls.len();
        let model = LeaseModel {
            seen: job_calls
                .iter()
                .filter_map(|(_, op)| match op {
                    LeaseOp::Grant { token, .. } => Some(*token),
                    _ => None,
                })
                .collect(),
            unseen_grants,
        };
        let lin: Vec<linearize::Call<LeaseOp>> = job_calls
            .iter()
            .map(|(k, op)| linearize::Call {
                op: op.clone(),
                invoked: calls[*k].invoked,
                returned: if calls[*k].kind == OpType::Ok {
                    calls[*k].done
                } else {
                    None
                },
            })
            .collect();
        let verdict = linearize::search(&model, &lin, &[JobLease::default()], limits);
        let e = match &verdict {
            Verdict::Linearizable(e) | Verdict::Violation(_, e) | Verdict::Unknown(_, e) => *e,
        };
        effort.configs += e.configs;
        effort.steps += e.steps;
        match verdict {
            Verdict::Linearizable(_) => {}
            Verdict::Unknown(why, _) => unknown.push((job, why)),
            Verdict::Violation(stuck, _) => {
                if violations.len() >= MAX_VIOLATIONS {
                    continue;
                }
                let c = &calls[job_calls[stuck.call].0];
                let (lo, hi) = (c.invoked, c.done.unwrap_or(usize::MAX));
                let window = job_calls
                    .iter()
                    .filter(|(k, _)| {
                        let o = &calls[*k];
                        o.invoked <= hi && o.done.is_none_or(|d| d >= lo)
                    })
                    .map(|(k, _)| calls[*k].describe())
                    .collect();
                violations.push(LeaseViolation {
                    job,
                    pos: c.pos(),
                    call: c.describe(),
                    why: stuck.why,
                    state: stuck
                        .states
                        .first()
                        .map_or_else(String::new, ToString::to_string),
                    window,
                });
            }
        }
    }
    let verdict = if !violations.is_empty() {
        LeaseVerdict::Invalid(violations)
    } else if !unknown.is_empty() {
        LeaseVerdict::Unknown(unknown)
    } else {
        LeaseVerdict::Valid
    };
    Ok(LeaseReport {
        jobs: jobs.len(),
        calls: judged,
        expiry_judged: grants > 0 && timed == grants,
        verdict,
        effort,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jepsen::edn::test_history::{ops, FILE};

    fn run(text: &str) -> LeaseReport {
        check(&ops(text), Path::new(FILE), &Limits::default()).expect("well formed")
    }

    /// A grants job 1 (lease 100 ms, store clock 1000..1100); the lease
    /// is swept; B is granted at store time `b_at`.
    fn swept_then_granted(b_at: i64) -> String {
        format!(
            "{{:type :invoke, :f :acquire, :value {{:lease-ms 100}}, :process 0}}\n\
             {{:type :ok, :f :acquire, :value {{:job 1, :token 1, :expires-ms 1100}}, :process 0}}\n\
             {{:type :invoke, :f :sweep, :process 9}}\n\
             {{:type :ok, :f :sweep, :value [{{:job 1, :token 1}}], :process 9}}\n\
             {{:type :invoke, :f :acquire, :value {{:lease-ms 100}}, :process 1}}\n\
             {{:type :ok, :f :acquire, :value {{:job 1, :token 2, :expires-ms {}}}, :process 1}}\n",
            b_at + 100
        )
    }

    #[test]
    fn a_grant_while_the_previous_lease_was_unexpired_on_the_store_clock_is_a_violation() {
        let r = run(&swept_then_granted(1050));
        assert!(r.expiry_judged);
        let LeaseVerdict::Invalid(v) = &r.verdict else {
            panic!("{r:?}");
        };
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].job, 1);
        assert_eq!(v[0].pos.line, 6);
        assert_eq!(
            v[0].why.as_deref(),
            Some("it was granted at 1050 ms on the store's clock, while the lease of token 1 was valid until 1100 ms")
        );
        // At or after the expiry, the same history is fine.
        assert_eq!(run(&swept_then_granted(1100)).verdict, LeaseVerdict::Valid);
        // Without the store's clock, expiry is not judged.
        let untimed = swept_then_granted(1050).replace(", :expires-ms 1150", "");
        let r = run(&untimed);
        assert!(!r.expiry_judged);
        assert_eq!(r.verdict, LeaseVerdict::Valid);
    }

    #[test]
    fn a_released_lease_frees_the_job_at_once_and_a_renew_moves_the_expiry() {
        let text = "{:type :invoke, :f :acquire, :value {:lease-ms 100}, :process 0}\n\
             {:type :ok, :f :acquire, :value {:job 1, :token 1, :expires-ms 1100}, :process 0}\n\
             {:type :invoke, :f :renew, :value {:job 1, :token 1}, :process 0}\n\
             {:type :ok, :f :renew, :value {:job 1, :token 1, :expires-ms 1200}, :process 0}\n\
             {:type :invoke, :f :release, :value {:job 1, :token 1, :outcome :returned}, :process 0}\n\
             {:type :ok, :f :release, :value {:job 1, :token 1, :outcome :returned}, :process 0}\n\
             {:type :invoke, :f :acquire, :value {:lease-ms 100}, :process 1}\n\
             {:type :ok, :f :acquire, :value {:job 1, :token 2, :expires-ms 1160}, :process 1}\n";
        assert_eq!(run(text).verdict, LeaseVerdict::Valid);
        // Without the release, token 1 is valid until 1200: granted at 1060.
        let kept: String = text
            .lines()
            .filter(|l| !l.contains(":f :release"))
            .map(|l| format!("{l}\n"))
            .collect();
        let LeaseVerdict::Invalid(v) = run(&kept).verdict else {
            panic!("missed");
        };
        assert!(
            v[0].why.as_deref().unwrap().contains("valid until 1200"),
            "{v:?}"
        );
    }

    #[test]
    fn a_crashed_release_may_have_committed_so_its_repeat_is_fine() {
        let text = "{:type :invoke, :f :acquire, :process 0}\n\
             {:type :ok, :f :acquire, :value {:job 1, :token 1}, :process 0}\n\
             {:type :invoke, :f :release, :value {:job 1, :token 1, :outcome :returned}, :process 0}\n\
             {:type :info, :f :release, :value {:job 1, :token 1, :outcome :returned}, :process 0}\n\
             {:type :invoke, :f :acquire, :process 1}\n\
             {:type :ok, :f :acquire, :value {:job 1, :token 2}, :process 1}\n\
             {:type :invoke, :f :release, :value {:job 1, :token 1, :outcome :returned}, :process 2}\n\
             {:type :ok, :f :release, :value {:job 1, :token 1, :outcome :returned}, :process 2}\n";
        assert_eq!(run(text).verdict, LeaseVerdict::Valid);
        // Had the first release failed, the repeat is a stale release.
        let LeaseVerdict::Invalid(v) =
            run(&text.replace(":type :info, :f :release", ":type :fail, :f :release")).verdict
        else {
            panic!("missed");
        };
        assert_eq!(v[0].pos.line, 8);
        assert!(v[0].state.contains("token 2 held"), "{v:?}");
        assert_eq!(v[0].window.len(), 1, "{v:?}");
    }

    #[test]
    fn a_crashed_acquire_may_have_granted_a_lease_a_sweep_then_reclaims() {
        let text = "{:type :invoke, :f :acquire, :process 0}\n\
             {:type :info, :f :acquire, :process 0}\n\
             {:type :invoke, :f :sweep, :process 9}\n\
             {:type :ok, :f :sweep, :value [{:job 4, :token 1}], :process 9}\n";
        assert_eq!(run(text).verdict, LeaseVerdict::Valid);
        // Without the crashed acquire, nothing granted that lease.
        let r = run(&text.replace(":type :info, :f :acquire", ":type :fail, :f :acquire"));
        assert!(matches!(r.verdict, LeaseVerdict::Invalid(_)), "{r:?}");
    }
}
