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
//! queues do.
//!
//! With interleaving ([`run_lane`]), a group the store answers in one
//! transaction (PostgreSQL's wrapper) is one call of the statement
//! scheduler's group of its instant, interleaved with the other calls
//! there; on the other stores a group stays one call run alone (see
//! [`run_lane`] for why).

use crate::stores::interleave::{Join, YieldNow};
use crate::stores::{Backend, SetupError, SimStore, StoreFactory};
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
/// and reads back the rows each touched. A store that answers the group in
/// one transaction (PostgreSQL's wrapper) answers it whole, and the rows
/// are read back after it. The others answer the members one by one, and
/// each member's rows are read back right after its own answer: read back
/// after the whole group, a row two members touched showed the later one's
/// change in the earlier one's image, and the history anchored that change
/// to it (a stale release repeated beside the holder's success was
/// recorded as applying the success: I2 and I11 on the correct core,
/// memory, false-alarm sweep seed 1001771 of
/// `single_claims_and_releases_sent_alone_keep_each_answer_with_its_caller`).
pub async fn answer_group<S: SimStore>(store: Arc<S>, ops: Vec<WireOp>) -> Vec<Served> {
    if store.coalesces_in_one_tx() {
        return answer_whole(store, ops).await;
    }
    let mut out = Vec::with_capacity(ops.len());
    for op in ops {
        let mut one = answer_whole(store.clone(), vec![op]).await;
        out.append(&mut one);
    }
    out
}

/// Answers `ops` (all of one kind) in one coalesced store call, then reads
/// back the rows each touched.
async fn answer_whole<S: SimStore>(store: Arc<S>, ops: Vec<WireOp>) -> Vec<Served> {
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

/// Runs a lane's group (`ops`, all of one kind) as one store call. With
/// interleaving, a store that answers the whole group in one transaction
/// (PostgreSQL, through its `Coalescing` wrapper, whose flushers carry the
/// call's statement gate) runs it as one call of the statement
/// scheduler's group of this instant; otherwise, and without
/// interleaving, the group runs alone once the earlier groups' callers
/// took their answers ([`Backend::call`]).
///
/// Why not the other stores: they answer the members one by one, several
/// transactions in one call, and the scheduler places a call at one point
/// of its group (its commit). Another call committing between two members
/// would be recorded before all of them although it came after the first,
/// and the reference model (I11) would judge the answers in that order.
pub async fn run_lane<F: StoreFactory>(
    backend: &Backend<F>,
    store: Arc<F::Store>,
    ops: Vec<WireOp>,
) -> Result<Vec<Served>, SetupError> {
    let call = answer_group(store.clone(), ops);
    if store.coalesces_in_one_tx() {
        backend.call_grouped(store, Join::Any, call).await
    } else {
        backend.call(call).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasehold_core::{ClaimRequest, JobId, Millis, WorkerId};

    fn claim(n: u32) -> WireOp {
        WireOp::Claim(ClaimRequest {
            worker: WorkerId(format!("w{n}")),
            queue: "q".into(),
            lease: Millis(1_000),
            max: n,
        })
    }

    fn max_of(op: &WireOp) -> u32 {
        match op {
            WireOp::Claim(c) => c.max,
            _ => u32::MAX,
        }
    }

    fn number(reply: &WireReply) -> u32 {
        match reply {
            WireReply::Job(j) => j.0 as u32,
            other => panic!("{other:?}"),
        }
    }

    /// What one test saw: each store call's requests (by `max`), and the
    /// order the answers were recorded in.
    #[derive(Default)]
    struct Seen {
        calls: Mutex<Vec<Vec<u32>>>,
        recorded: Mutex<Vec<u32>>,
    }

    /// Submits `op` to `lane` after `delay` yields; the store call answers
    /// each request with its own `max`.
    async fn submit(lane: &Lane, seen: &Arc<Seen>, op: WireOp, delay: u32) -> u32 {
        for _ in 0..delay {
            YieldNow(false).await;
        }
        let rec = seen.clone();
        let record: RecordServed =
            Box::new(move |(reply, _): &Served| lock(&rec.recorded).push(number(reply)));
        let calls = seen.clone();
        let run = move |ops: Vec<WireOp>| async move {
            lock(&calls.calls).push(ops.iter().map(max_of).collect());
            Ok(ops
                .iter()
                .map(|op| (WireReply::Job(JobId(u64::from(max_of(op)))), Vec::new()))
                .collect())
        };
        let (reply, _) = lane.submit(op, record, run).await.expect("answered");
        number(&reply)
    }

    fn run<F: Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime")
            .block_on(f)
    }

    /// Requests ready within the leader's yields (its instant) join its
    /// group and are answered by one call, each with its own answer and
    /// recorded in group order; a request that arrives after the group
    /// closed opens the next one.
    #[test]
    fn requests_of_one_instant_join_one_group_and_a_later_one_opens_the_next() {
        let (lane, seen) = (Lane::default(), Arc::new(Seen::default()));
        let answers = run(async {
            tokio::join!(
                submit(&lane, &seen, claim(1), 0),
                submit(&lane, &seen, claim(2), 0),
                submit(&lane, &seen, claim(3), GATHER_YIELDS - 1),
                submit(&lane, &seen, claim(4), GATHER_YIELDS + 2),
            )
        });
        assert_eq!(answers, (1, 2, 3, 4), "each request its own answer");
        let calls = lock(&seen.calls).clone();
        assert_eq!(calls.len(), 2, "two groups: {calls:?}");
        let mut first = calls[0].clone();
        first.sort_unstable();
        assert_eq!(first, [1, 2, 3], "the instant's three joined one group");
        assert_eq!(calls[1], [4]);
        assert_eq!(*lock(&seen.recorded), calls.concat(), "in group order");
    }

    /// A request that finds its instant's group full is served alone, in a
    /// call of its own, while the full group still gathers.
    #[test]
    fn a_request_finding_the_group_full_is_served_alone() {
        let (lane, seen) = (Lane::default(), Arc::new(Seen::default()));
        run(async {
            let full: Vec<_> = (0..MAX_COALESCED)
                .map(|_| Box::pin(submit(&lane, &seen, claim(1), 0)))
                .collect();
            let (answers, alone) = tokio::join!(join_all(full), submit(&lane, &seen, claim(7), 1));
            assert!(answers.iter().all(|&a| a == 1));
            assert_eq!(alone, 7);
        });
        let calls = lock(&seen.calls);
        assert_eq!(calls.len(), 2, "the full group and the one alone");
        assert_eq!(calls[0], [7], "the one alone ran while the group gathered");
        assert_eq!(calls[1].len(), MAX_COALESCED);
    }

    /// Polls every future until each is done (a join without a crate).
    async fn join_all<F: Future + Unpin>(mut fs: Vec<F>) -> Vec<F::Output> {
        let mut outs: Vec<Option<F::Output>> = fs.iter().map(|_| None).collect();
        std::future::poll_fn(|cx| {
            let mut pending = false;
            for (f, out) in fs.iter_mut().zip(outs.iter_mut()) {
                if out.is_none() {
                    match std::pin::Pin::new(f).poll(cx) {
                        std::task::Poll::Ready(v) => *out = Some(v),
                        std::task::Poll::Pending => pending = true,
                    }
                }
            }
            if pending {
                std::task::Poll::Pending
            } else {
                std::task::Poll::Ready(())
            }
        })
        .await;
        outs.into_iter().flatten().collect()
    }
}
