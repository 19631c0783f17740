//! Client operations paired into calls: an invocation and its completion.
//!
//! Invariants of the answer:
//! - only client processes (integers) are read: `:process :nemesis` and
//!   every other keyword process are left out, whatever their `:type`;
//! - only the functions asked for are paired; other client calls are
//!   counted (one per invocation) and left out;
//! - a process has at most one call open; a completion names the `:f` of
//!   its invocation; a process that crashed (`:info`) never invokes again.
//!   Any breach is a located error, and the offending record is dropped;
//! - a call never completed (the history ended) is [`OpType::Info`]: it
//!   may or may not have taken effect, as Jepsen and Knossos treat it.

use super::edn::ReadError;
use super::{Op, OpType, Pos, Process, Value};
use std::collections::BTreeMap;
use std::path::Path;

/// One call of a client process.
#[derive(Clone, Debug)]
pub struct Call<'a> {
    /// `:f`.
    pub f: &'a str,
    /// The invocation.
    pub inv: &'a Op,
    /// The completion, if any.
    pub end: Option<&'a Op>,
    /// How it ended: `:ok`, `:fail`, or `:info` (also when never completed).
    pub kind: OpType,
    /// Position in the history (0-based record number) of the invocation.
    pub invoked: usize,
    /// Position in the history of the completion, if any.
    pub done: Option<usize>,
    /// Where the invocation is in the file.
    pub inv_pos: Pos,
    /// Where the completion is in the file, if any.
    pub end_pos: Option<Pos>,
}

impl Call<'_> {
    /// The call in the history's own terms: `:index` of invocation and
    /// completion, `:process`, `:f`, how it ended.
    pub fn describe(&self) -> String {
        let process = match &self.inv.process {
            Process::Client(n) => n.to_string(),
            Process::Named(k) => format!(":{k}"),
        };
        match self.end {
            Some(end) => format!(
                ":{} by process {process} (:index {} -> {} :{})",
                self.f,
                self.inv.index,
                end.index,
                self.kind.name()
            ),
            None => format!(
                ":{} by process {process} (:index {}, never completed)",
                self.f, self.inv.index
            ),
        }
    }

    /// Where the call ends in the file (its invocation when it never
    /// completed).
    pub fn pos(&self) -> Pos {
        self.end_pos.unwrap_or(self.inv_pos)
    }
}

/// The lease `{:job J, :token T}` that `v` names, both whole numbers
/// at least 0; otherwise a message saying what was expected.
pub fn lease_of(v: &Value) -> Result<(i64, i64), String> {
    let field = |name: &str| v.get(name).and_then(Value::as_int).filter(|n| *n >= 0);
    match (field("job"), field("token")) {
        (Some(job), Some(token)) => Ok((job, token)),
        _ => Err(format!(
            "the value must be a map with :job and :token, whole numbers >= 0 (like {{:job 1, :token 2}}), not {v:?}"
        )),
    }
}

/// The `:outcome` a release's value names, if it names one.
pub fn outcome_of(v: &Value) -> Option<&str> {
    v.get("outcome").and_then(Value::as_name)
}

/// The calls of `ops` to the functions `fs`, in invocation order, and the
/// number of other client calls left out.
pub fn pair<'a>(
    ops: &'a [(Pos, Op)],
    fs: &[&str],
    file: &Path,
) -> Result<(Vec<Call<'a>>, usize), Vec<ReadError>> {
    let bad = |pos: Pos, message: String| ReadError {
        file: file.to_path_buf(),
        pos,
        message,
    };
    let mut open: BTreeMap<i64, usize> = BTreeMap::new();
    let mut crashed: BTreeMap<i64, Pos> = BTreeMap::new();
    let mut calls: Vec<Call<'a>> = Vec::new();
    let mut errors = Vec::new();
    let mut skipped = 0;
    for (i, (pos, op)) in ops.iter().enumerate() {
        let Process::Client(p) = op.process else {
            continue; // the nemesis and other non-client processes
        };
        if !fs.contains(&op.f.as_str()) {
            skipped += usize::from(op.kind == OpType::Invoke);
            continue;
        }
        if op.kind == OpType::Invoke {
            if let Some(&k) = open.get(&p) {
                errors.push(bad(
                    *pos,
                    format!(
                        "process {p} invokes while its {} is still open",
                        calls[k].describe()
                    ),
                ));
                continue;
            }
            if let Some(at) = crashed.get(&p) {
                errors.push(bad(*pos, format!(
                    "process {p} invokes after its :info at {at}; a crashed process never invokes again (Jepsen gives it a new process number)"
                )));
                continue;
            }
            open.insert(p, calls.len());
            calls.push(Call {
                f: &op.f,
                inv: op,
                end: None,
                kind: OpType::Info,
                invoked: i,
                done: None,
                inv_pos: *pos,
                end_pos: None,
            });
            continue;
        }
        let Some(k) = open.remove(&p) else {
            errors.push(bad(
                *pos,
                format!(
                    "a :{} completion of process {p} with no invocation open",
                    op.kind.name()
                ),
            ));
            continue;
        };
        let c = &mut calls[k];
        if c.f != op.f {
            errors.push(bad(
                *pos,
                format!(
                    "completes :{} but process {p} invoked :{} (:index {})",
                    op.f, c.f, c.inv.index
                ),
            ));
            continue;
        }
        c.done = Some(i);
        c.kind = op.kind;
        c.end = Some(op);
        c.end_pos = Some(*pos);
        if op.kind == OpType::Info {
            crashed.insert(p, *pos);
        }
    }
    if errors.is_empty() {
        Ok((calls, skipped))
    } else {
        Err(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jepsen::edn::read_history;

    #[test]
    fn pairs_client_calls_and_leaves_out_the_nemesis_and_other_functions() {
        let text = "{:type :invoke, :f :acquire, :process 0, :index 0}\n\
                    {:type :info, :f :start, :process :nemesis, :index 1}\n\
                    {:type :invoke, :f :read, :process 1, :index 2}\n\
                    {:type :ok, :f :acquire, :process 0, :index 3}\n\
                    {:type :invoke, :f :release, :process 0, :index 4}\n";
        let ops = read_history(text, Path::new("h.edn")).unwrap();
        let (calls, skipped) = pair(&ops, &["acquire", "release"], Path::new("h.edn")).unwrap();
        assert_eq!(skipped, 1);
        assert_eq!(calls.len(), 2);
        assert_eq!((calls[0].invoked, calls[0].done), (0, Some(3)));
        assert_eq!(calls[0].kind, OpType::Ok);
        assert_eq!(calls[1].kind, OpType::Info);
        assert_eq!(calls[1].done, None);
        assert_eq!(
            calls[0].describe(),
            ":acquire by process 0 (:index 0 -> 3 :ok)"
        );
    }

    #[test]
    fn breaches_are_located() {
        for (text, needle, line) in [
            (
                "{:type :invoke, :f :acquire, :process 0}\n{:type :invoke, :f :acquire, :process 0}",
                "still open",
                2,
            ),
            ("{:type :ok, :f :acquire, :process 3}", "no invocation open", 1),
            (
                "{:type :invoke, :f :acquire, :process 0}\n{:type :ok, :f :release, :process 0}",
                "completes :release",
                2,
            ),
            (
                "{:type :invoke, :f :acquire, :process 0}\n{:type :info, :f :acquire, :process 0}\n{:type :invoke, :f :release, :process 0}",
                "crashed process",
                3,
            ),
        ] {
            let ops = read_history(text, Path::new("h.edn")).unwrap();
            let errs = pair(&ops, &["acquire", "release"], Path::new("h.edn")).unwrap_err();
            assert_eq!(errs.len(), 1, "{text}");
            assert!(errs[0].message.contains(needle), "{}", errs[0]);
            assert_eq!(errs[0].pos.line, line, "{}", errs[0]);
        }
    }
}
