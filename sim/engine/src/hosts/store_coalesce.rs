//! The store host's lanes for single claims and single releases, in
//! scenarios whose workers send them alone (`topology.single_calls`).
//!
//! Production's `Coalescing` wrapper (PostgreSQL) merges the single calls
//! that are queued when one of its flushers wakes. Under simulation a
//! store call takes no simulated time, so the calls that are "queued
//! together" are those that reach the store host in the same instant: the
//! first single claim (or release) of an instant opens a group and yields
//! [`GATHER_YIELDS`] times to the executor, so every request ready in that
//! instant joins it (at most [`MAX_COALESCED`], one batch of the wrapper);
//! then one store call answers the whole group
//! ([`SimStore::coalesced_claims`]: on PostgreSQL through the wrapper, on
//! the other stores one by one, in order) and each request gets its own
//! answer. Every store gathers alike, so a seed draws and orders the same
//! on each. Claims and releases keep lanes of their own, as the wrapper's
//! queues do, and each group is one call, so two transactions never run
//! at once.

use crate::stores::interleave::YieldNow;
use crate::stores::{SetupError, SimStore};
use leasehold_model::history::ReadRow;
use leasehold_model::wire::{WireOp, WireReply};
use leasehold_model::wire_store::{touched, wire};
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::oneshot;

/// Times the first request of a group yields before the group closes.
pub const GATHER_YIELDS: u32 = 4;
/// Most requests in one group: one batch of the production wrapper
/// (`leasehold_postgres::DEFAULT_COALESCE_BATCH`, not imported: this host
/// builds without the SQL stores), so one transaction answers them all.
pub const MAX_COALESCED: usize = 500;

/// One request's answer and the rows it touched, read back.
pub type Served = (WireReply, Vec<ReadRow>);

/// Records one request's answer in the history. The group's leader
/// records every member's, in the order the group ran them, right after
/// the store call: the history then has them in the order they committed,
/// whatever order their tasks resume in.
pub type RecordServed = Box<dyn FnOnce(&Served) + Send>;

struct Group {
    ops: Vec<WireOp>,
    records: Vec<RecordServed>,
    replies: Vec<oneshot::Sender<Served>>,
}

/// The requests of one kind gathering in this instant.
#[derive(Default)]
pub struct Lane {
    open: Mutex<Option<Group>>,
}

/// The store host's two lanes, one per incarnation.
#[derive(Default)]
pub struct Lanes {
    claims: Lane,
    releases: Lane,
}

impl Lanes {
    /// The lane of `op`: single claims and single releases coalesce;
    /// nothing else does.
    pub fn of(&self, op: &WireOp) -> Option<&Lane> {
        match op {
            WireOp::Claim(_) => Some(&self.claims),
            WireOp::Release(_) => Some(&self.releases),
            _ => None,
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Lane {
    /// Answers `op` in the group of this instant: the first request of a
    /// group gathers the others and runs the group with `run` (one store
    /// call answering every request in order), records each answer with
    /// its `record`, in order, and hands it out; the others wait for
    /// their answers.
    pub async fn submit<Fut>(
        &self,
        op: WireOp,
        record: RecordServed,
        run: impl FnOnce(Vec<WireOp>) -> Fut,
    ) -> Result<Served, SetupError>
    where
        Fut: Future<Output = Result<Vec<Served>, SetupError>>,
    {
        let (tx, rx) = oneshot::channel();
        let role = {
            let mut open = lock(&self.open);
            match &mut *open {
                Some(g) if g.ops.len() < MAX_COALESCED => {
                    g.ops.push(op);
                    g.records.push(record);
                    g.replies.push(tx);
                    Role::Joins
                }
                // A full group is closing: this request is answered alone.
                Some(_) => Role::Alone(op, record),
                None => {
                    *open = Some(Group {
                        ops: vec![op],
                        records: vec![record],
                        replies: vec![tx],
                    });
                    Role::Leads
                }
            }
        };
        let leads = match role {
            Role::Alone(op, record) => {
                let served = first(run(vec![op]).await)?;
                record(&served);
                return Ok(served);
            }
            Role::Joins => false,
            Role::Leads => true,
        };
        if leads {
            for _ in 0..GATHER_YIELDS {
                YieldNow(false).await;
            }
            let Some(group) = lock(&self.open).take() else {
                return Err(SetupError::new("a coalesced group vanished"));
            };
            let answers = run(group.ops).await?;
            if answers.len() != group.replies.len() {
                return Err(SetupError::new(format!(
                    "{} answers for a coalesced group of {}",
                    answers.len(),
                    group.replies.len()
                )));
            }
            for ((record, reply), answer) in
                group.records.into_iter().zip(group.replies).zip(answers)
            {
                record(&answer);
                let _ = reply.send(answer);
            }
        }
        rx.await
            .map_err(|_| SetupError::new("the coalesced call of its instant failed"))
    }
}

/// What a request does on reaching its lane.
enum Role {
    /// Opens the group of this instant and runs it.
    Leads,
    /// Joins the open group.
    Joins,
    /// Runs alone: the open group is full.
    Alone(WireOp, RecordServed),
}

fn first(r: Result<Vec<Served>, SetupError>) -> Result<Served, SetupError> {
    r?.into_iter()
        .next()
        .ok_or_else(|| SetupError::new("no answer for a request answered alone"))
}

/// Answers a group of single claims or single releases (all of one kind)
/// through the store's coalescing, then reads back the rows each touched.
pub async fn answer_group<S: SimStore>(store: Arc<S>, ops: Vec<WireOp>) -> Vec<Served> {
    let claims: Vec<_> = ops
        .iter()
        .filter_map(|op| match op {
            WireOp::Claim(c) => Some(c.clone()),
            _ => None,
        })
        .collect();
    let releases: Vec<_> = ops
        .iter()
        .filter_map(|op| match op {
            WireOp::Release(r) => Some(r.clone()),
            _ => None,
        })
        .collect();
    let replies: Vec<WireReply> = if !claims.is_empty() {
        let answers = store.clone().coalesced_claims(claims).await;
        answers
            .into_iter()
            .map(|a| wire(a, WireReply::Leases))
            .collect()
    } else {
        let answers = store.clone().coalesced_releases(releases).await;
        answers
            .into_iter()
            .map(|a| wire(a, WireReply::Release))
            .collect()
    };
    let mut out = Vec::with_capacity(replies.len());
    for (op, reply) in ops.iter().zip(replies) {
        let after = touched(&*store, op, &reply).await;
        out.push((reply, after));
    }
    out
}
