//! A simulator history as Jepsen operations.
//!
//! Every request a host sent becomes an `:invoke` at its send time and a
//! completion when its answer (or network failure) came back: `:ok` when
//! it took effect, `:fail` when it definitely did not (a `Lost` answer, a
//! rejection, a claim that found nothing), `:info` when nobody knows (the
//! network or the store failed, or the host crashed first).
//!
//! Jepsen processes are single-threaded, but a worker host has several
//! requests in flight (a claim while its leases renew), so each host
//! draws processes from a pool of its own: a request takes a free one (or
//! a new number), an `:ok` or `:fail` frees it, and an `:info` retires it
//! for good, as Jepsen retires a process whose call crashed. `:node` names
//! the host. Faults are `:nemesis` operations. Reads (`get`, `list`,
//! `now`) are left out.

use super::{Op, OpType, Process, Value};
use leasehold_model::history::{History, Op as Req, Record, Reply};
use std::collections::BTreeMap;

/// Nanoseconds per millisecond of true time.
const NS_PER_MS: i64 = 1_000_000;

/// The operations of `history`, indexed from 0 in true-time order.
pub fn from_history(history: &History) -> Vec<Op> {
    let mut w = Writer::default();
    for r in &history.records {
        match r {
            Record::HostCrashed { t, host } => w.crashed(*t, host),
            Record::Fault { t, fault } => {
                let f = fault.to_string();
                let kind = f.split_whitespace().next().unwrap_or("fault").to_string();
                for _ in 0..2 {
                    w.push(
                        *t,
                        OpType::Info,
                        Process::Named("nemesis".into()),
                        &kind,
                        Value::Str(f.clone()),
                        vec![],
                    );
                }
            }
            Record::Request {
                t, host, id, op, ..
            } => {
                if let Some((f, value)) = invocation(op) {
                    let p = w.take(host);
                    w.pending
                        .insert(*id, (p.clone(), f, value.clone(), host.clone()));
                    w.push(*t, OpType::Invoke, p, f, value, worker(host));
                }
            }
            Record::Answer { t, id, reply, .. } => {
                if let Some((p, f, value, host)) = w.pending.remove(id) {
                    let (kind, value, error) = completion(f, value, reply);
                    let mut extra = worker(&host);
                    extra.extend(error.map(|e| ("error".to_string(), Value::Str(e))));
                    w.push(*t, kind, p.clone(), f, value, extra);
                    if kind != OpType::Info {
                        w.free.entry(host).or_default().push(p);
                    }
                }
            }
            Record::End { t, .. } => w.end(*t),
            _ => {}
        }
    }
    w.ops
}

#[derive(Default)]
struct Writer {
    ops: Vec<Op>,
    /// Per host: processes with no call open.
    free: BTreeMap<String, Vec<Process>>,
    next_process: i64,
    /// Requests without an answer yet: process, f, invoke value, host.
    pending: BTreeMap<u64, (Process, &'static str, Value, String)>,
}

impl Writer {
    /// A process of `host` with no call open: the lowest free one, or a
    /// new number.
    fn take(&mut self, host: &str) -> Process {
        let free = self.free.entry(host.to_string()).or_default();
        free.sort();
        if !free.is_empty() {
            return free.remove(0);
        }
        self.next_process += 1;
        Process::Client(self.next_process - 1)
    }

    fn push(
        &mut self,
        t: u64,
        kind: OpType,
        process: Process,
        f: &str,
        value: Value,
        extra: Vec<(String, Value)>,
    ) {
        self.ops.push(Op {
            index: self.ops.len() as i64,
            time_ns: Some(i64::try_from(t).unwrap_or(i64::MAX / NS_PER_MS) * NS_PER_MS),
            kind,
            process,
            f: f.to_string(),
            value,
            extra,
        });
    }

    /// A crashed host's open requests end `:info`: they may have taken
    /// effect, and that process never invokes again.
    fn crashed(&mut self, t: u64, host: &str) {
        self.end_open(t, host, "crashed");
        // Their processes are retired; the host's free ones stay free.
    }

    /// Requests still open when the run ended end `:info`.
    fn end(&mut self, t: u64) {
        let hosts: Vec<String> = self.pending.values().map(|p| p.3.clone()).collect();
        for h in hosts {
            self.end_open(t, &h, "run-ended");
        }
    }

    /// Ends `host`'s open requests `:info`, in id order, with `:error`
    /// saying why.
    fn end_open(&mut self, t: u64, host: &str, why: &str) {
        let ids: Vec<u64> = self
            .pending
            .iter()
            .filter(|(_, p)| p.3 == host)
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            if let Some((p, f, value, host)) = self.pending.remove(&id) {
                let mut extra = worker(&host);
                extra.push(("error".into(), Value::Key(why.into())));
                self.push(t, OpType::Info, p, f, value, extra);
            }
        }
    }
}

fn worker(host: &str) -> Vec<(String, Value)> {
    vec![("node".into(), Value::Str(host.to_string()))]
}

fn lease(job: u64, token: u64) -> Value {
    Value::Map(vec![("job".into(), int(job)), ("token".into(), int(token))])
}

/// `v` (a map) with `:expires-ms`, an expiry on the store's clock.
fn with_expiry(v: Value, expires_ms: i64) -> Value {
    match v {
        Value::Map(mut m) => {
            m.push(("expires-ms".into(), Value::Int(expires_ms)));
            Value::Map(m)
        }
        other => other,
    }
}

fn int(n: u64) -> Value {
    Value::Int(i64::try_from(n).unwrap_or(i64::MAX))
}

/// The `:f` and invoke `:value` of a request, for the operations the
/// mapping covers.
fn invocation(op: &Req) -> Option<(&'static str, Value)> {
    Some(match op {
        Req::Claim {
            queue, max, lease, ..
        } => (
            "acquire",
            Value::Map(vec![
                ("queue".into(), Value::Str(queue.clone())),
                ("max".into(), int((*max).into())),
                ("lease-ms".into(), int(lease.0)),
            ]),
        ),
        Req::Renew {
            job,
            token,
            lease: length,
        } => {
            let Value::Map(mut m) = lease(job.0, token.0) else {
                return None;
            };
            m.push(("lease-ms".into(), int(length.0)));
            ("renew", Value::Map(m))
        }
        Req::Release {
            job,
            token,
            outcome,
        } => {
            let Value::Map(mut m) = lease(job.0, token.0) else {
                return None;
            };
            m.push(("outcome".into(), Value::Key(outcome.kind().into())));
            ("release", Value::Map(m))
        }
        Req::Sweep { limit, .. } => (
            "sweep",
            Value::Map(vec![("limit".into(), int((*limit).into()))]),
        ),
        Req::Enqueue { queue, .. } => (
            "enqueue",
            Value::Map(vec![("queue".into(), Value::Str(queue.clone()))]),
        ),
        Req::Cancel { job } => ("cancel", Value::Map(vec![("job".into(), int(job.0))])),
        // Reads, and operations outside the lease mapping (schedules).
        _ => return None,
    })
}

/// The completion type, value and error of an answer.
fn completion(f: &str, invoked: Value, reply: &Reply) -> (OpType, Value, Option<String>) {
    match reply {
        Reply::Unavailable(e) => (OpType::Info, invoked, Some(e.clone())),
        Reply::Rejected(e) => (OpType::Fail, invoked, Some(e.clone())),
        Reply::RenewLost | Reply::ReleaseLost => (OpType::Fail, invoked, Some("lost".into())),
        Reply::Leases(ls) if ls.is_empty() => (OpType::Fail, invoked, Some("empty".into())),
        Reply::Leases(ls) => {
            let leases: Vec<Value> = ls
                .iter()
                .map(|l| with_expiry(lease(l.job.0, l.token.0), l.expires_at.0))
                .collect();
            let value = match <[Value; 1]>::try_from(leases) {
                Ok([one]) => one,
                Err(many) => Value::Vector(many),
            };
            (OpType::Ok, value, None)
        }
        Reply::Swept(reports) => {
            let v = reports.iter().map(|r| lease(r.job.0, r.token.0)).collect();
            (OpType::Ok, Value::Vector(v), None)
        }
        Reply::Job(j) => (OpType::Ok, Value::Map(vec![("job".into(), int(j.0))]), None),
        Reply::Cancel(c) => {
            let Value::Map(mut m) = invoked else {
                return (OpType::Ok, Value::Nil, None);
            };
            let outcome = format!("{c:?}").to_lowercase();
            let outcome = outcome.split('(').next().unwrap_or("").to_string();
            m.push(("outcome".into(), Value::Key(outcome)));
            (OpType::Ok, Value::Map(m), None)
        }
        Reply::Renewed { expires_at, .. } => (OpType::Ok, with_expiry(invoked, expires_at.0), None),
        Reply::Committed => (OpType::Ok, invoked, None),
        other => (
            OpType::Info,
            invoked,
            Some(format!("unexpected answer to {f}: {other:?}")),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasehold_core::{JobId, Millis, Outcome, StoreTime, Token, WorkerId};
    use leasehold_model::history::LeaseRef;

    fn req(t: u64, host: &str, id: u64, op: Req) -> Record {
        Record::Request {
            t,
            local: t,
            host: host.into(),
            id,
            op,
            merged: false,
        }
    }
    fn ans(t: u64, host: &str, id: u64, reply: Reply) -> Record {
        Record::Answer {
            t,
            local: t,
            host: host.into(),
            id,
            reply,
        }
    }

    #[test]
    fn requests_become_invocations_and_answers_completions() {
        let claim = Req::Claim {
            worker: WorkerId::new("worker-1"),
            queue: "q".into(),
            lease: Millis(10),
            max: 1,
        };
        let granted = Reply::Leases(vec![LeaseRef {
            job: JobId(4),
            token: Token(2),
            attempt: 1,
            expires_at: StoreTime(0),
            queue: "q".into(),
            payload: leasehold_model::history::Blob::of(b""),
        }]);
        let release = Req::Release {
            job: JobId(4),
            token: Token(2),
            outcome: Outcome::Returned,
        };
        let h = History {
            records: vec![
                req(1, "worker-1", 1, claim.clone()),
                ans(2, "worker-1", 1, granted),
                req(3, "worker-1", 2, release),
                Record::HostCrashed {
                    t: 4,
                    host: "worker-1".into(),
                },
                req(5, "worker-1", 3, claim),
                ans(6, "worker-1", 3, Reply::Leases(vec![])),
            ],
        };
        let ops = from_history(&h);
        let kinds: Vec<(OpType, &str, &Process)> = ops
            .iter()
            .map(|o| (o.kind, o.f.as_str(), &o.process))
            .collect();
        assert_eq!(
            kinds,
            [
                (OpType::Invoke, "acquire", &Process::Client(0)),
                (OpType::Ok, "acquire", &Process::Client(0)),
                (OpType::Invoke, "release", &Process::Client(0)),
                (OpType::Info, "release", &Process::Client(0)),
                (OpType::Invoke, "acquire", &Process::Client(1)),
                (OpType::Fail, "acquire", &Process::Client(1)),
            ]
        );
        assert_eq!(ops[0].value.get("lease-ms"), Some(&Value::Int(10)));
        assert_eq!(ops[1].value, with_expiry(lease(4, 2), 0));
        assert_eq!(
            ops[2].value.get("outcome"),
            Some(&Value::Key("returned".into()))
        );
        assert_eq!(ops[5].time_ns, Some(6_000_000));
        assert!(ops.iter().enumerate().all(|(i, o)| o.index == i as i64));
    }
}
