//! What a Jepsen lease history shows on its own.
//!
//! A client history has no store clock, no expiries and no ground truth,
//! only operations in real-time order: an operation *precedes* another
//! when its completion comes before the other's invocation. Every check
//! below uses only that order and the values, so it never blames a store
//! for something concurrency or an unknown (`:info`) outcome could explain:
//!
//! - **I1 single grant**: no (job, token) is granted twice, and a grant of
//!   a job never carries a token at or below one already granted to that
//!   job by an acquire that preceded it;
//! - **I2 single winner**: a renew or release answered `:ok` must name the
//!   current lease: not a token older than a grant that preceded it, not a
//!   lease a sweep preceding it reclaimed, and (renew) not a lease already
//!   released. A release and a sweep can never both take the same lease,
//!   in whatever order they ran: once swept, the token is no longer
//!   current, and a lease already released is not running to be swept. A repeated release of the same token and outcome may be
//!   answered `:ok` (releases are idempotent) once an earlier one might
//!   have committed. A job succeeds at most once, and is not granted again
//!   after a success that preceded the grant. A release that ends a job
//!   (`:succeeded`, `:cancelled`) answered `:ok` excludes any grant of a
//!   newer token, in whatever order: before it the release was stale,
//!   after it the job had ended.
//!
//! Malformed histories (a completion without its invocation, a process
//! invoking twice at once or after it crashed, a lease without a job or
//! token) are bad input, reported with their position; nothing here calls
//! the lease core.

use super::calls::{lease_of, outcome_of, pair, Call};
use super::edn::ReadError;
use super::{Op, OpType, Pos, Value};
use leasehold_model::config::InvariantId;
use std::collections::BTreeMap;
use std::path::Path;

/// One violation found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// I1 or I2.
    pub invariant: InvariantId,
    /// The operation that shows it.
    pub pos: Pos,
    /// What happened, naming the operations by `:index` and position.
    pub message: String,
}

/// No context lines: the jobs and tokens are in the message, which names
/// the operations; the file is the caller's, so it adds the place.
impl crate::finding::Finding for Violation {
    fn broken(&self) -> String {
        crate::finding::invariant(self.invariant)
    }
    fn message(&self) -> String {
        self.message.clone()
    }
}

/// The outcome of checking a history.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Operations read.
    pub ops: usize,
    /// Calls (invocation and completion) per `:f` the checks read.
    pub calls: BTreeMap<String, usize>,
    /// Client calls of other functions, left out.
    pub skipped: usize,
    /// Violations, in history order.
    pub findings: Vec<Violation>,
}

/// What the checks ask of a call, beyond [`Call`]'s own fields.
trait Timing {
    /// Whether this call completed before `other` was invoked (a call never
    /// completed precedes nothing).
    fn precedes(&self, other: &Call<'_>) -> bool;
    /// `:index` and position, for messages.
    fn named(&self) -> String;
    /// Whether it took effect or may have.
    fn maybe_took_effect(&self) -> bool;
}

impl Timing for Call<'_> {
    fn precedes(&self, other: &Call<'_>) -> bool {
        self.done.is_some_and(|d| d < other.invoked)
    }
    fn named(&self) -> String {
        let op = self.end.unwrap_or(self.inv);
        format!("op {} at {}", op.index, self.pos())
    }
    fn maybe_took_effect(&self) -> bool {
        matches!(self.kind, OpType::Ok | OpType::Info)
    }
}

/// A (job, token) pair.
type Lease = (i64, i64);

/// Checks `ops` (from `file`), in history order.
pub fn check(ops: &[(Pos, Op)], file: &Path) -> Result<Summary, Vec<ReadError>> {
    let bad = |pos: Pos, message: String| ReadError {
        file: file.to_path_buf(),
        pos,
        message,
    };
    let (calls, skipped) = pair(ops, &READ, file)?;
    let mut errors = Vec::new();
    let mut facts = Facts::default();
    for (k, c) in calls.iter().enumerate() {
        if let Err(m) = facts.add(k, c) {
            errors.push(bad(c.pos(), m));
        }
    }
    if !errors.is_empty() {
        errors.sort_by_key(|e| e.pos);
        return Err(errors);
    }
    let mut findings = Vec::new();
    facts.single_grant(&calls, &mut findings);
    facts.single_winner(&calls, &mut findings);
    findings.sort_by_key(|f| f.pos);
    let mut by_f = BTreeMap::new();
    for c in &calls {
        *by_f.entry(c.f.to_string()).or_insert(0) += 1;
    }
    Ok(Summary {
        ops: ops.len(),
        calls: by_f,
        skipped,
        findings,
    })
}

/// The functions the checks read.
const READ: [&str; 4] = ["acquire", "renew", "release", "sweep"];

fn leases_of(v: &Value) -> Result<Vec<Lease>, String> {
    match v {
        Value::Vector(items) => items.iter().map(lease_of).collect(),
        other => lease_of(other).map(|l| vec![l]),
    }
}

/// The facts each check reads, per job.
#[derive(Default)]
struct Facts {
    /// `:ok` acquires: call, token.
    grants: BTreeMap<i64, Vec<(usize, i64)>>,
    /// `:ok` sweeps: call, token reclaimed.
    swept: BTreeMap<i64, Vec<(usize, i64)>>,
    /// Releases and renews (any completion): call, token, outcome.
    releases: BTreeMap<i64, Vec<(usize, i64, Option<String>)>>,
    renews: BTreeMap<i64, Vec<(usize, i64)>>,
}

impl Facts {
    fn add(&mut self, k: usize, c: &Call<'_>) -> Result<(), String> {
        match c.f {
            "acquire" if c.kind == OpType::Ok => {
                let v = &c.end.map_or(&Value::Nil, |e| &e.value);
                for (job, token) in leases_of(v)? {
                    self.grants.entry(job).or_default().push((k, token));
                }
            }
            "sweep" if c.kind == OpType::Ok => {
                let v = &c.end.map_or(&Value::Nil, |e| &e.value);
                for (job, token) in leases_of(v)? {
                    self.swept.entry(job).or_default().push((k, token));
                }
            }
            "renew" => {
                let (job, token) = lease_of(&c.inv.value)?;
                self.renews.entry(job).or_default().push((k, token));
            }
            "release" => {
                let (job, token) = lease_of(&c.inv.value)?;
                let outcome = outcome_of(&c.inv.value).map(str::to_string);
                self.releases
                    .entry(job)
                    .or_default()
                    .push((k, token, outcome));
            }
            _ => {}
        }
        Ok(())
    }

    fn single_grant(&self, calls: &[Call<'_>], out: &mut Vec<Violation>) {
        for (job, grants) in &self.grants {
            for (n, &(k, token)) in grants.iter().enumerate() {
                let c = &calls[k];
                if let Some(&(e, _)) = grants[..n].iter().find(|g| g.1 == token) {
                    out.push(Violation {
                        invariant: InvariantId::I1,
                        pos: c.pos(),
                        message: format!(
                            "job {job} token {token} granted twice: by {} and by {}",
                            calls[e].named(),
                            c.named()
                        ),
                    });
                    continue;
                }
                let older = grants
                    .iter()
                    .filter(|&&(e, t)| t > token && calls[e].precedes(c))
                    .max_by_key(|g| g.1);
                if let Some(&(e, t)) = older {
                    out.push(Violation {
                        invariant: InvariantId::I1,
                        pos: c.pos(),
                        message: format!(
                            "job {job} granted with token {token} by {}, after token {t} had been granted ({}): tokens must increase",
                            c.named(),
                            calls[e].named()
                        ),
                    });
                }
            }
        }
    }

    fn single_winner(&self, calls: &[Call<'_>], out: &mut Vec<Violation>) {
        let empty = Vec::new();
        for (job, releases) in &self.releases {
            let grants = self.grants.get(job).unwrap_or(&empty);
            let swept = self.swept.get(job).unwrap_or(&empty);
            for &(k, token, ref outcome) in releases {
                let c = &calls[k];
                if c.kind != OpType::Ok {
                    continue;
                }
                // An earlier release of this token and outcome that may
                // have committed: this one may be its idempotent repeat.
                let repeat = releases.iter().any(|&(e, t, ref o)| {
                    e != k
                        && t == token
                        && o == outcome
                        && calls[e].maybe_took_effect()
                        && calls[e].invoked < c.invoked
                });
                if let Some(why) = stale(calls, c, token, grants, swept, repeat, true) {
                    out.push(Violation {
                        invariant: InvariantId::I2,
                        pos: c.pos(),
                        message: format!(
                            "release of job {job} with token {token} answered :ok by {}, but {why}: a stale token must be refused",
                            c.named()
                        ),
                    });
                }
            }
            let wins: Vec<&(usize, i64, Option<String>)> = releases
                .iter()
                .filter(|r| calls[r.0].kind == OpType::Ok && r.2.as_deref() == Some("succeeded"))
                .collect();
            if let Some(second) = wins.iter().find(|r| r.1 != wins[0].1) {
                out.push(Violation {
                    invariant: InvariantId::I2,
                    pos: calls[second.0].pos(),
                    message: format!(
                        "job {job} succeeded twice: token {} ({}) and token {} ({})",
                        wins[0].1,
                        calls[wins[0].0].named(),
                        second.1,
                        calls[second.0].named()
                    ),
                });
            }
            for &(k, token, ref outcome) in releases {
                let ends = matches!(outcome.as_deref(), Some("succeeded" | "cancelled"));
                if !ends || calls[k].kind != OpType::Ok {
                    continue;
                }
                if let Some(&(g, t)) = grants.iter().find(|&&(g, t)| {
                    // A success before the grant is reported just below.
                    let reported =
                        outcome.as_deref() == Some("succeeded") && calls[k].precedes(&calls[g]);
                    t > token && !reported
                }) {
                    out.push(Violation {
                        invariant: InvariantId::I2,
                        pos: calls[k].pos(),
                        message: format!(
                            "job {job} ended with token {token} ({}), but token {t} was granted too ({}): whichever came first, one of them is wrong",
                            calls[k].named(),
                            calls[g].named()
                        ),
                    });
                }
            }
            if let Some(win) = wins.first() {
                for &(g, token) in grants {
                    if calls[win.0].precedes(&calls[g]) {
                        out.push(Violation {
                            invariant: InvariantId::I2,
                            pos: calls[g].pos(),
                            message: format!(
                                "job {job} granted again with token {token} ({}) after it succeeded ({})",
                                calls[g].named(),
                                calls[win.0].named()
                            ),
                        });
                    }
                }
            }
        }
        for (job, renews) in &self.renews {
            let grants = self.grants.get(job).unwrap_or(&empty);
            let swept = self.swept.get(job).unwrap_or(&empty);
            let released: Vec<(usize, i64)> = self
                .releases
                .get(job)
                .map(|r| {
                    r.iter()
                        .filter(|x| calls[x.0].kind == OpType::Ok)
                        .map(|x| (x.0, x.1))
                        .collect()
                })
                .unwrap_or_default();
            for &(k, token) in renews {
                let c = &calls[k];
                if c.kind != OpType::Ok {
                    continue;
                }
                let why = stale(calls, c, token, grants, swept, false, false).or_else(|| {
                    released
                        .iter()
                        .find(|&&(e, t)| t == token && calls[e].precedes(c))
                        .map(|&(e, _)| {
                            format!("that lease had been released ({})", calls[e].named())
                        })
                });
                if let Some(why) = why {
                    out.push(Violation {
                        invariant: InvariantId::I2,
                        pos: c.pos(),
                        message: format!(
                            "renew of job {job} with token {token} answered :ok by {}, but {why}: a stale token must be refused",
                            c.named()
                        ),
                    });
                }
            }
        }
    }
}

/// Why token `token` was no longer current when `c` was invoked: a newer
/// grant, or a sweep of that very lease, completed before it (a grant
/// does not count for an idempotent `repeat`). With `any_sweep`, a sweep
/// of that lease counts in any order (a release and a sweep exclude each
/// other).
fn stale(
    calls: &[Call<'_>],
    c: &Call<'_>,
    token: i64,
    grants: &[(usize, i64)],
    swept: &[(usize, i64)],
    repeat: bool,
    any_sweep: bool,
) -> Option<String> {
    let sweep = swept
        .iter()
        .find(|&&(s, t)| t == token && (any_sweep || calls[s].precedes(c)));
    if let Some(&(s, _)) = sweep {
        return Some(format!(
            "a sweep reclaimed that lease ({})",
            calls[s].named()
        ));
    }
    if repeat {
        return None;
    }
    grants
        .iter()
        .filter(|&&(g, t)| t > token && calls[g].precedes(c))
        .max_by_key(|g| g.1)
        .map(|&(g, t)| format!("token {t} had been granted ({})", calls[g].named()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jepsen::edn::test_history::{ops, FILE};

    fn run(text: &str) -> Result<Summary, Vec<ReadError>> {
        check(&ops(text), Path::new(FILE))
    }

    const CLEAN: &str = r#"
{:type :invoke, :f :acquire, :value nil, :process 0, :index 0}
{:type :ok, :f :acquire, :value {:job 1, :token 1}, :process 0, :index 1}
{:type :invoke, :f :release, :value {:job 1, :token 1, :outcome :returned}, :process 0, :index 2}
{:type :info, :f :release, :value {:job 1, :token 1, :outcome :returned}, :process 0, :index 3}
{:type :invoke, :f :acquire, :value nil, :process 1, :index 4}
{:type :ok, :f :acquire, :value {:job 1, :token 2}, :process 1, :index 5}
{:type :invoke, :f :release, :value {:job 1, :token 1, :outcome :returned}, :process 2, :index 6}
{:type :ok, :f :release, :value {:job 1, :token 1, :outcome :returned}, :process 2, :index 7}
{:type :invoke, :f :renew, :value {:job 1, :token 2}, :process 1, :index 8}
{:type :ok, :f :renew, :value {:job 1, :token 2}, :process 1, :index 9}
"#;

    #[test]
    fn an_idempotent_repeat_after_a_newer_grant_is_clean() {
        let s = run(CLEAN).unwrap();
        assert_eq!(s.findings, vec![]);
        assert_eq!(s.calls.get("acquire"), Some(&2));
    }

    #[test]
    fn a_stale_release_without_an_earlier_attempt_is_caught() {
        // Drop the first (unknown) release: now the :ok release of token 1
        // after token 2's grant has no earlier attempt to repeat.
        let text: String = CLEAN
            .lines()
            .filter(|l| !l.contains(":index 2}") && !l.contains(":index 3}"))
            .collect::<Vec<_>>()
            .join("\n");
        let s = run(&text).unwrap();
        assert_eq!(s.findings.len(), 1, "{:?}", s.findings);
        let f = &s.findings[0];
        assert_eq!(f.invariant, InvariantId::I2);
        assert!(
            f.message.contains("token 2 had been granted (op 5"),
            "{}",
            f.message
        );
        assert_eq!(f.pos.line, 7);
    }

    #[test]
    fn concurrent_operations_are_not_blamed() {
        // The release was invoked before the newer grant completed: it may
        // have returned the job first, and the grant followed.
        let text = r#"
{:type :invoke, :f :acquire, :value nil, :process 0, :index 0}
{:type :ok, :f :acquire, :value {:job 1, :token 1}, :process 0, :index 1}
{:type :invoke, :f :release, :value {:job 1, :token 1, :outcome :returned}, :process 0, :index 2}
{:type :invoke, :f :acquire, :value nil, :process 1, :index 3}
{:type :ok, :f :acquire, :value {:job 1, :token 2}, :process 1, :index 4}
{:type :ok, :f :release, :value {:job 1, :token 1, :outcome :returned}, :process 0, :index 5}
"#;
        assert_eq!(run(text).unwrap().findings, vec![]);
        // A success cannot: before the grant it ended the job, after it
        // it was stale.
        let s = run(&text.replace(":returned", ":succeeded")).unwrap();
        assert_eq!(s.findings.len(), 1, "{:?}", s.findings);
        assert!(
            s.findings[0].message.contains("ended with token 1"),
            "{}",
            s.findings[0].message
        );
    }

    #[test]
    fn a_held_release_landing_after_a_sweep_is_caught_in_any_order() {
        // Release-without-token: the release of token 1 is held in the
        // network while the lease is swept and granted again; it lands and
        // is answered :ok. It overlaps both, but a swept lease cannot also
        // be released.
        let text = r#"
{:type :invoke, :f :acquire, :process 0}
{:type :ok, :f :acquire, :value {:job 1, :token 1}, :process 0}
{:type :invoke, :f :release, :value {:job 1, :token 1, :outcome :returned}, :process 0}
{:type :invoke, :f :sweep, :process 9}
{:type :ok, :f :sweep, :value [{:job 1, :token 1}], :process 9}
{:type :invoke, :f :acquire, :process 1}
{:type :ok, :f :acquire, :value {:job 1, :token 2}, :process 1}
{:type :ok, :f :release, :value {:job 1, :token 1, :outcome :returned}, :process 0}
"#;
        let s = run(text).unwrap();
        assert_eq!(s.findings.len(), 1, "{:?}", s.findings);
        assert!(
            s.findings[0]
                .message
                .contains("a sweep reclaimed that lease (op 4 at 6:1)"),
            "{}",
            s.findings[0].message
        );
        assert_eq!(s.findings[0].pos.line, 9);
    }

    /// Asserts the history's findings are exactly one per needle, in
    /// order, each message containing its needle.
    fn assert_findings(text: &str, needles: &[&str]) {
        let s = run(text).unwrap();
        let msgs: Vec<&str> = s.findings.iter().map(|f| f.message.as_str()).collect();
        assert_eq!(msgs.len(), needles.len(), "{msgs:?}");
        for (msg, needle) in msgs.iter().zip(needles) {
            assert!(msg.contains(needle), "{needle:?} in {msgs:?}");
        }
    }

    #[test]
    fn duplicate_and_decreasing_tokens_break_i1() {
        let text = r#"
{:type :invoke, :f :acquire, :process 0}
{:type :ok, :f :acquire, :value [{:job 1, :token 3}], :process 0}
{:type :invoke, :f :acquire, :process 1}
{:type :ok, :f :acquire, :value {:job 1, :token 2}, :process 1}
{:type :invoke, :f :acquire, :process 2}
{:type :ok, :f :acquire, :value {:job 1, :token 3}, :process 2}
"#;
        assert_findings(text, &["tokens must increase", "granted twice"]);
    }

    #[test]
    fn sweeps_successes_and_released_leases_end_a_token() {
        let text = r#"
{:type :invoke, :f :acquire, :process 0}
{:type :ok, :f :acquire, :value {:job 1, :token 1}, :process 0}
{:type :invoke, :f :sweep, :process 9}
{:type :ok, :f :sweep, :value [{:job 1, :token 1}], :process 9}
{:type :invoke, :f :renew, :value {:job 1, :token 1}, :process 0}
{:type :ok, :f :renew, :value {:job 1, :token 1}, :process 0}
{:type :invoke, :f :acquire, :process 1}
{:type :ok, :f :acquire, :value {:job 1, :token 2}, :process 1}
{:type :invoke, :f :release, :value {:job 1, :token 2, :outcome :succeeded}, :process 1}
{:type :ok, :f :release, :value {:job 1, :token 2, :outcome :succeeded}, :process 1}
{:type :invoke, :f :acquire, :process 2}
{:type :ok, :f :acquire, :value {:job 1, :token 3}, :process 2}
"#;
        assert_findings(text, &["a sweep reclaimed", "granted again with token 3"]);
    }

    #[test]
    fn malformed_pairs_are_bad_input_with_positions() {
        for (text, needle) in [
            ("{:type :ok, :f :acquire, :value {:job 1 :token 1}, :process 0}", "no invocation open"),
            ("{:type :invoke, :f :acquire, :process 0}\n{:type :invoke, :f :acquire, :process 0}", "still open"),
            ("{:type :invoke, :f :renew, :value {:job 1 :token 1}, :process 0}\n{:type :ok, :f :release, :process 0}", "completes :release"),
            ("{:type :invoke, :f :renew, :value {:job 1}, :process 0}", ":job and :token"),
            ("{:type :invoke, :f :renew, :value {:job 1 :token 1}, :process 0}\n{:type :info, :f :renew, :process 0}\n{:type :invoke, :f :renew, :value {:job 1 :token 1}, :process 0}", "crashed process"),
        ] {
            let errs = run(text).expect_err(text);
            let shown = errs[0].to_string();
            assert!(shown.starts_with("h.edn:"), "{shown}");
            assert!(shown.contains(needle), "{text}: {shown}");
        }
    }
}
