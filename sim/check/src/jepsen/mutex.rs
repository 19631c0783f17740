//! Lock histories without values, checked against a mutex, as Knossos's
//! `mutex` model checks them (Jepsen's etcd, Consul, ZooKeeper and
//! Hazelcast lock tests).
//!
//! The model is Knossos's exactly: one lock, free or held; `:acquire`
//! takes a free lock, `:release` frees a held one, whoever the process
//! (Knossos's mutex has no owner). Invariants:
//! - only client `:acquire` and `:release` calls are judged; the nemesis
//!   and other functions are left out and counted;
//! - a `:fail` call did not happen and is left out; an `:info` call, or
//!   one never completed, may have taken effect at any time after its
//!   invocation, or never;
//! - the search is bounded ([`Limits`]): a bound hit is
//!   [`MutexVerdict::Unknown`], never a pass;
//! - a violation names the call no order reaches and the shortest window
//!   of calls that cannot be linearized from either state of the lock.

use super::calls::{pair, Call};
use super::edn::ReadError;
use super::linearize::{self, Effort, Limits, Model, Verdict};
use super::{Op, OpType, Pos};
use std::path::Path;

/// What a mutex call does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockOp {
    /// Take the lock.
    Acquire,
    /// Free it.
    Release,
}

/// Knossos's mutex: the state is whether the lock is held.
#[derive(Clone, Copy, Debug, Default)]
pub struct Mutex;

impl Model for Mutex {
    type State = bool;
    type Op = LockOp;
    fn step(&self, held: &bool, op: &LockOp) -> Result<bool, String> {
        match (op, held) {
            (LockOp::Acquire, false) => Ok(true),
            (LockOp::Acquire, true) => Err("the lock was already held".into()),
            (LockOp::Release, true) => Ok(false),
            (LockOp::Release, false) => Err("the lock was not held".into()),
        }
    }
}

/// Calls counted by how they ended.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Operations read (every record, the nemesis's too).
    pub ops: usize,
    /// `:acquire` calls.
    pub acquire: usize,
    /// `:release` calls.
    pub release: usize,
    /// Calls that ended `:fail` (left out: they did not happen).
    pub failed: usize,
    /// Calls that ended `:info` or never completed.
    pub unknown: usize,
    /// Client calls of other functions, left out.
    pub skipped: usize,
}

/// A violation, in the history's own terms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MutexViolation {
    /// Where the call no order reaches ends in the file.
    pub pos: Pos,
    /// That call, described.
    pub call: String,
    /// Why it cannot take effect, when the lock's state says why.
    pub why: Option<String>,
    /// The shortest window of calls that cannot be linearized, described,
    /// in invocation order.
    pub window: Vec<String>,
    /// The `:index` of each window call's invocation, in the same order.
    pub window_indices: Vec<i64>,
    /// Calls never completed (`:info`) invoked before the window, which
    /// may take effect inside it: counted, and their `:index`es.
    pub earlier_unknown: Vec<i64>,
    /// Whether the window fails from either state of the lock (`false`:
    /// only from a free lock at the start of the history).
    pub from_any_state: bool,
    /// `:index` of the window's first and last records.
    pub span: (i64, i64),
}

/// The verdict on a lock history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MutexVerdict {
    /// Linearizable.
    Valid,
    /// Not linearizable.
    Invalid(Box<MutexViolation>),
    /// The search hit a bound first.
    Unknown(String),
}

/// The report on a lock history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MutexReport {
    /// What was read.
    pub counts: Counts,
    /// The verdict; `None` when there was no call to judge.
    pub verdict: Option<MutexVerdict>,
    /// Work the search did.
    pub effort: Effort,
}

/// Most windows tried when narrowing a violation.
const WINDOW_TRIES: usize = 200;

/// Checks the `:acquire` and `:release` calls of `ops` (from `file`).
pub fn check(
    ops: &[(Pos, Op)],
    file: &Path,
    limits: &Limits,
) -> Result<MutexReport, Vec<ReadError>> {
    let (calls, skipped) = pair(ops, &["acquire", "release"], file)?;
    let mut counts = Counts {
        ops: ops.len(),
        skipped,
        ..Counts::default()
    };
    let mut judged: Vec<&Call<'_>> = Vec::with_capacity(calls.len());
    for c in &calls {
        match c.f {
            "acquire" => counts.acquire += 1,
            _ => counts.release += 1,
        }
        match c.kind {
            OpType::Fail => counts.failed += 1,
            OpType::Info | OpType::Invoke => {
                counts.unknown += 1;
                judged.push(c);
            }
            OpType::Ok => judged.push(c),
        }
    }
    if judged.is_empty() {
        return Ok(MutexReport {
            counts,
            verdict: None,
            effort: Effort::default(),
        });
    }
    let lin: Vec<linearize::Call<LockOp>> = judged
        .iter()
        .map(|c| linearize::Call {
            op: if c.f == "acquire" {
                LockOp::Acquire
            } else {
                LockOp::Release
            },
            invoked: c.invoked,
            returned: if c.kind == OpType::Ok { c.done } else { None },
        })
        .collect();
    let (verdict, effort) = match linearize::search(&Mutex, &lin, &[false], limits) {
        Verdict::Linearizable(e) => (MutexVerdict::Valid, e),
        Verdict::Unknown(why, e) => (MutexVerdict::Unknown(why), e),
        Verdict::Violation(stuck, e) => {
            let w = linearize::minimal_window(
                &Mutex,
                &lin,
                stuck.call,
                &[false, true],
                limits,
                WINDOW_TRIES,
            );
            let c = judged[stuck.call];
            let (inside, earlier): (Vec<usize>, Vec<usize>) = w
                .calls
                .iter()
                .partition(|&&i| lin[i].returned.is_some() || lin[i].invoked >= w.start);
            let first = inside.first().map_or(c.inv.index, |&i| judged[i].inv.index);
            let v = MutexViolation {
                pos: c.pos(),
                call: c.describe(),
                why: stuck.why,
                window: inside.iter().map(|&i| judged[i].describe()).collect(),
                window_indices: inside.iter().map(|&i| judged[i].inv.index).collect(),
                earlier_unknown: earlier.iter().map(|&i| judged[i].inv.index).collect(),
                from_any_state: w.from_any_state,
                span: (first, c.end.map_or(c.inv.index, |e| e.index)),
            };
            (MutexVerdict::Invalid(Box::new(v)), e)
        }
    };
    Ok(MutexReport {
        counts,
        verdict: Some(verdict),
        effort,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jepsen::edn::test_history::{ops, FILE};

    fn run(text: &str) -> MutexReport {
        check(&ops(text), Path::new(FILE), &Limits::default()).expect("well formed")
    }

    #[test]
    fn two_overlapping_holders_are_invalid_and_the_window_is_theirs() {
        let r = run("{:type :invoke, :f :acquire, :process 0, :index 0}\n\
                     {:type :ok, :f :acquire, :process 0, :index 1}\n\
                     {:type :invoke, :f :release, :process 0, :index 2}\n\
                     {:type :ok, :f :release, :process 0, :index 3}\n\
                     {:type :invoke, :f :acquire, :process 1, :index 4}\n\
                     {:type :ok, :f :acquire, :process 1, :index 5}\n\
                     {:type :invoke, :f :acquire, :process 2, :index 6}\n\
                     {:type :ok, :f :acquire, :process 2, :index 7}\n");
        let Some(MutexVerdict::Invalid(v)) = r.verdict else {
            panic!("{r:?}");
        };
        assert_eq!(v.call, ":acquire by process 2 (:index 6 -> 7 :ok)");
        assert_eq!(v.why.as_deref(), Some("the lock was already held"));
        assert_eq!(v.pos.line, 8);
        assert_eq!(v.span, (4, 7));
        assert_eq!(v.window.len(), 2, "{:?}", v.window);
        assert!(v.from_any_state);
    }

    #[test]
    fn a_crashed_release_may_have_freed_the_lock_and_a_failed_one_did_not() {
        let text = "{:type :invoke, :f :acquire, :process 0, :index 0}\n\
                    {:type :ok, :f :acquire, :process 0, :index 1}\n\
                    {:type :invoke, :f :release, :process 0, :index 2}\n\
                    {:type :info, :f :release, :process 0, :index 3}\n\
                    {:type :info, :f :crash, :process :nemesis, :index 4}\n\
                    {:type :invoke, :f :acquire, :process 1, :index 5}\n\
                    {:type :ok, :f :acquire, :process 1, :index 6}\n";
        let r = run(text);
        assert_eq!(r.verdict, Some(MutexVerdict::Valid));
        assert_eq!(r.counts.unknown, 1);
        let r = run(&text.replace(":type :info, :f :release", ":type :fail, :f :release"));
        assert!(matches!(r.verdict, Some(MutexVerdict::Invalid(_))), "{r:?}");
        assert_eq!(r.counts.failed, 1);
    }

    #[test]
    fn nothing_to_judge_has_no_verdict() {
        let r = run("{:type :invoke, :f :read, :process 0}\n{:type :ok, :f :read, :process 0, :value 3}\n\
                     {:type :invoke, :f :acquire, :process 1}\n{:type :fail, :f :acquire, :process 1}\n");
        assert_eq!(r.verdict, None);
        assert_eq!((r.counts.skipped, r.counts.failed), (1, 1));
    }
}
