//! The store host: the memory adapter served over simulated TCP.
//!
//! The rows and events live in [`Shared::store_state`], outside the host,
//! so a store crash keeps everything committed (committed = durable) and
//! loses only what was in flight. The lease clock is this host's wall clock.
//!
//! Message loss and answer loss are decided here, per request, inside the
//! fault window: a lost request is never executed; a lost answer is
//! executed, committed, and then not sent (the ambiguous outcome). Either
//! way the connection is held open without a reply until the caller gives
//! up, as a lost packet would leave it.

use super::runtime::{sleep_until_true, HostRuntime};
use super::shared::Shared;
use crate::history::{Fate, ReadRow, Record};
use crate::net::{read_frame, write_frame, WireError, WireOp, WireReply, WireRequest, STORE_PORT};
use leasehold_core::variants::Variant;
use leasehold_core::{Backoff, JobId, Limits, Policy, Runtime, Store, StoreError, DEFAULT_JITTER_PERMILLE};
use leasehold_memory::MemoryStore;
use std::sync::Arc;
use tokio::io::AsyncReadExt;
use turmoil::net::{TcpListener, TcpStream};

/// Most connections one store incarnation accepts (a bound far above any
/// scenario: one connection per request).
const MAX_CONNECTIONS: u64 = 100_000_000;
/// How long a connection whose reply was lost is held before it is dropped.
const HOLD_LOST_MS: u64 = 30_000;

/// The store policy of a scenario.
pub fn policy(shared: &Shared) -> Result<Policy, String> {
    let p = &shared.cfg.protocol;
    let limits = Limits {
        max_payload_bytes: p.max_payload_bytes as usize,
        max_result_bytes: p.max_result_bytes as usize,
        max_error_bytes: p.max_error_bytes as usize,
        ..Limits::default()
    };
    let mut b = Policy::builder().limits(limits).backoff(Backoff {
        base: p.backoff_base.0,
        cap: p.backoff_cap.0,
        jitter_permille: DEFAULT_JITTER_PERMILLE,
        seed: crate::rng::SimRng::derive(shared.seed, "backoff", &[]).next_u64(),
    });
    if let Some(limit) = p.parallelism {
        for q in &shared.cfg.workload.queues {
            b = b.parallelism(q.clone(), limit);
        }
    }
    b.build().map_err(|e| e.to_string())
}

/// The store host's software: one incarnation.
pub async fn run(shared: Arc<Shared>) -> turmoil::Result {
    let rt = HostRuntime::new(shared.clone(), "store");
    let incarnation = shared.next_incarnation("store");
    let (t, _) = rt.times();
    shared.record(Record::HostStarted {
        t,
        host: "store".into(),
        incarnation,
        worker: None,
    });
    let clock_rt = rt.clone();
    let mut store = MemoryStore::with_state(
        policy(&shared)?,
        move || clock_rt.wall(),
        shared.store_state.clone(),
    );
    store.set_variant(shared.variant);
    let store = Arc::new(store);
    let listener = TcpListener::bind(("0.0.0.0", STORE_PORT)).await?;
    for _ in 0..MAX_CONNECTIONS {
        let (stream, _) = listener.accept().await?;
        let (store, rt2) = (store.clone(), rt.clone());
        rt.spawn(Box::pin(async move {
            serve(stream, store, rt2).await;
        }));
    }
    Err(format!("store served {MAX_CONNECTIONS} connections in one incarnation").into())
}

async fn hold_without_reply(mut s: TcpStream) {
    let give_up = super::runtime::true_now_ms() + HOLD_LOST_MS;
    let mut buf = [0u8; 256];
    tokio::select! {
        biased;
        _ = async { while let Ok(n) = s.read(&mut buf).await { if n == 0 { break; } } } => {}
        _ = sleep_until_true(give_up) => {}
    }
}

async fn serve(mut s: TcpStream, store: Arc<MemoryStore>, rt: HostRuntime) {
    let Ok(req) = read_frame::<_, WireRequest>(&mut s).await else {
        return;
    };
    let shared = rt.shared().clone();
    let (t, _) = rt.times();
    let in_window = t < shared.window_ms;
    let loss = if in_window {
        shared.draw.message_loss
    } else {
        0.0
    };
    if shared.net_chance(loss) {
        shared.record(Record::Served {
            t,
            store_time: rt.wall(),
            id: req.id,
            host: req.host,
            fate: Fate::RequestLost,
            reply: None,
            after: Vec::new(),
        });
        hold_without_reply(s).await;
        return;
    }
    let store_time = rt.wall();
    let reply = execute(&store, &req.op, shared.variant).await;
    let after = touched(&store, &req.op, &reply).await;
    for row in &after {
        shared.anchor(row.job, row.version, t, req.id);
    }
    let answer_lost =
        in_window && (shared.net_chance(shared.draw.answer_loss) || shared.net_chance(loss));
    let fate = if answer_lost {
        Fate::AnswerLost
    } else {
        Fate::Answered
    };
    shared.record(Record::Served {
        t,
        store_time,
        id: req.id,
        host: req.host,
        fate,
        reply: Some(reply.summary()),
        after,
    });
    if answer_lost {
        hold_without_reply(s).await;
    } else {
        let _ = write_frame(&mut s, &reply).await;
    }
}

fn wire<T>(r: Result<T, StoreError>, ok: impl FnOnce(T) -> WireReply) -> WireReply {
    match r {
        Ok(v) => ok(v),
        Err(e) => WireReply::Error(WireError::of(&e)),
    }
}

async fn execute(store: &MemoryStore, op: &WireOp, variant: Option<Variant>) -> WireReply {
    match op.clone() {
        WireOp::Now => wire(store.now().await, WireReply::Time),
        WireOp::Enqueue(j) => wire(store.enqueue(j).await, WireReply::Job),
        WireOp::Claim(c) => wire(store.claim(c).await, WireReply::Leases),
        WireOp::Renew(r) => wire(store.renew(r).await, WireReply::Renewal),
        WireOp::Release(r) => wire(store.release(r).await, WireReply::Release),
        WireOp::Sweep(req, wall) => match (variant, wall) {
            (Some(Variant::SweeperOwnClock), Some(w)) => {
                wire(store.sweep_at(req, w), WireReply::Swept)
            }
            _ => wire(store.sweep(req).await, WireReply::Swept),
        },
        WireOp::Cancel(j) => wire(store.cancel(j).await, WireReply::Cancel),
        WireOp::Get(j) => wire(store.get(j).await, WireReply::Row),
        WireOp::List(l) => wire(store.list(l).await, WireReply::Rows),
    }
}

/// The rows a request touched, read right after it: the answer checks
/// compare them with the reference model, and each store event is given the
/// true time of the request after which its row had that version.
async fn touched(store: &MemoryStore, op: &WireOp, reply: &WireReply) -> Vec<ReadRow> {
    let mut jobs: Vec<JobId> = match (op, reply) {
        (WireOp::Renew(r), _) => vec![r.job],
        (WireOp::Release(r), _) => vec![r.job],
        (WireOp::Cancel(j), _) => vec![*j],
        (_, WireReply::Job(j)) => vec![*j],
        (_, WireReply::Leases(ls)) => ls.iter().map(|l| l.job).collect(),
        (_, WireReply::Swept(rs)) => rs.iter().map(|r| r.job).collect(),
        _ => Vec::new(),
    };
    jobs.dedup();
    let mut out = Vec::with_capacity(jobs.len());
    for j in jobs {
        if let Ok(Some(row)) = store.get(j).await {
            out.push(ReadRow::of(&row));
        }
    }
    out
}
