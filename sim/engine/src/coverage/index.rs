//! One pass over a history into the lookups the situation observers share:
//! each request with what the store did with it and the answer its sender
//! got, the beliefs of every lease, the faults and the store host's life.

use leasehold_core::{JobId, Token};
use leasehold_model::config::ScriptedFault;
use leasehold_model::history::{
    BeliefWhat, Fate, HandlerPhase, History, Op, ReadRow, Record, Reply,
};
use std::collections::{BTreeMap, BTreeSet};

/// One request and its fate.
#[derive(Debug)]
pub(super) struct Request<'h> {
    /// Request id.
    pub id: u64,
    /// True time it was recorded (asked).
    pub t: u64,
    /// Sender.
    pub host: &'h str,
    /// The request.
    pub op: &'h Op,
    /// Asked of the process's merger.
    pub merged: bool,
    /// What the store did with it.
    pub served: Option<Served<'h>>,
    /// What the sender got: (true time, reply).
    pub answer: Option<(u64, &'h Reply)>,
}

/// The store's handling of one request.
#[derive(Debug)]
pub(super) struct Served<'h> {
    /// True time.
    pub t: u64,
    /// Store time.
    pub store_time: i64,
    /// What happened to it.
    pub fate: Fate,
    /// The answer computed.
    pub reply: Option<&'h Reply>,
    /// The rows it touched, as read right after it.
    pub after: &'h [ReadRow],
}

/// One belief record of a worker's lease.
#[derive(Debug)]
pub(super) struct Belief<'h> {
    /// True time.
    pub t: u64,
    /// Host.
    pub host: &'h str,
    /// Worker identity.
    pub worker: &'h str,
    /// Job.
    pub job: JobId,
    /// Token.
    pub token: Token,
    /// What happened.
    pub what: &'h BeliefWhat,
}

/// The lookups of one history.
#[derive(Debug, Default)]
pub(super) struct Index<'h> {
    /// Every request, in recording order.
    pub requests: Vec<Request<'h>>,
    /// Position in `requests` of each request id (one counter per run).
    pub by_id: BTreeMap<u64, usize>,
    /// The requests that committed at least one store event.
    pub committed: BTreeSet<u64>,
    /// Every belief record, in time order.
    pub beliefs: Vec<Belief<'h>>,
    /// Every fault of the schedule.
    pub faults: Vec<&'h ScriptedFault>,
    /// Merged batches: (true time, sender, request ids).
    pub sent: Vec<(u64, &'h str, &'h [u64])>,
    /// Host crashes: (true time, host).
    pub crashes: Vec<(u64, &'h str)>,
    /// Host starts: (true time, host, incarnation).
    pub starts: Vec<(u64, &'h str, u32)>,
    /// Links that changed: (true time, drop a→b, drop b→a).
    pub links: Vec<(u64, bool, bool)>,
    /// Handler milestones: (true time, job, token, milestone).
    pub handlers: Vec<(u64, JobId, Token, &'h HandlerPhase)>,
    /// The rows of the final state.
    pub finals: Vec<&'h leasehold_core::JobRecord>,
    /// The run's end (true time).
    pub end: u64,
}

impl<'h> Index<'h> {
    /// The index of `history`.
    pub(super) fn of(history: &'h History) -> Index<'h> {
        let mut ix = Index::default();
        for r in &history.records {
            match r {
                Record::Request {
                    t,
                    host,
                    id,
                    op,
                    merged,
                    ..
                } => {
                    ix.by_id.insert(*id, ix.requests.len());
                    ix.requests.push(Request {
                        id: *id,
                        t: *t,
                        host,
                        op,
                        merged: *merged,
                        served: None,
                        answer: None,
                    });
                }
                Record::Served {
                    t,
                    store_time,
                    id,
                    fate,
                    reply,
                    after,
                    ..
                } => {
                    if let Some(req) = ix.request_mut(*id) {
                        req.served = Some(Served {
                            t: *t,
                            store_time: store_time.0,
                            fate: *fate,
                            reply: reply.as_ref(),
                            after,
                        });
                    }
                }
                Record::Answer { t, id, reply, .. } => {
                    if let Some(req) = ix.request_mut(*id) {
                        req.answer = Some((*t, reply));
                    }
                }
                Record::Belief {
                    t,
                    host,
                    worker,
                    job,
                    token,
                    what,
                    ..
                } => ix.beliefs.push(Belief {
                    t: *t,
                    host,
                    worker: &worker.0,
                    job: *job,
                    token: *token,
                    what,
                }),
                Record::Fault { fault, .. } => ix.faults.push(fault),
                Record::Sent { t, host, ids, .. } => ix.sent.push((*t, host, ids)),
                Record::HostCrashed { t, host } => ix.crashes.push((*t, host)),
                Record::HostStarted {
                    t,
                    host,
                    incarnation,
                    ..
                } => ix.starts.push((*t, host, *incarnation)),
                Record::Link {
                    t,
                    drop_ab,
                    drop_ba,
                    ..
                } => ix.links.push((*t, *drop_ab, *drop_ba)),
                Record::Handler {
                    t,
                    job,
                    token,
                    phase,
                    ..
                } => ix.handlers.push((*t, *job, *token, phase)),
                Record::Final { row } => ix.finals.push(row),
                Record::End { t, .. } => ix.end = *t,
                Record::Run { .. }
                | Record::ClientDone { .. }
                | Record::CrashReported { .. }
                | Record::StoreEvent { req: None, .. } => {}
                Record::StoreEvent { req: Some(id), .. } => {
                    ix.committed.insert(*id);
                }
            }
        }
        ix
    }

    fn request_mut(&mut self, id: u64) -> Option<&mut Request<'h>> {
        let k = *self.by_id.get(&id)?;
        self.requests.get_mut(k)
    }

    /// The request `id`, if recorded.
    pub(super) fn request(&self, id: u64) -> Option<&Request<'h>> {
        let k = *self.by_id.get(&id)?;
        self.requests.get(k)
    }

    /// Whether a partition (or a hold) touching `host` is in force at `t`.
    pub(super) fn cut_off(&self, host: &str, t: u64) -> bool {
        self.faults.iter().any(|f| match f {
            ScriptedFault::Partition { a, b, from, to, .. }
            | ScriptedFault::Hold { a, b, from, to, .. } => {
                (a == host || b == host) && from.as_ms() <= t && t < to.as_ms()
            }
            _ => false,
        })
    }

    /// The requests the store served, with their service.
    pub(super) fn served(&self) -> impl Iterator<Item = (&Request<'h>, &Served<'h>)> {
        self.requests
            .iter()
            .filter_map(|r| r.served.as_ref().map(|s| (r, s)))
    }
}
