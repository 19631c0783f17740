//! The store over madsim's network: a [`RemoteStore`] for workers, sweepers
//! and the client, and the store node's server.
//!
//! Messages are madsim datagrams ([`Endpoint`]): one request message to the
//! store's port, one answer message back, tagged with the request id. madsim
//! decides their fate: latency drawn from its `send_latency`, loss from its
//! `packet_loss_rate`, nothing at all across a clogged link or to a killed
//! node. A lost request is never executed; a lost answer was executed (the
//! ambiguous outcome); either way the caller times out and the core sees
//! [`StoreError::Unavailable`], as in production. The wire types and their
//! history summaries are the turmoil simulator's own
//! (`leasehold_sim::net::wire`), so both simulators record the same history.

use crate::world::Host;
use leasehold_core::{
    CancelOutcome, ClaimRequest, CrashReport, FireRequest, JobId, JobRecord, Lease, ListRequest,
    ListSchedulesRequest, Millis, NewJob, Release, ReleaseRequest, RenewRequest, Renewal, Runtime,
    Schedule, ScheduleRecord, Store, StoreError, StoreTime, SweepRequest,
};
use leasehold_memory::MemoryStore;
use leasehold_sim::history::{Fate, ReadRow, Record, Reply};
use leasehold_sim::net::{WireError, WireOp, WireReply, WireRequest};
use madsim::net::Endpoint;
use std::net::SocketAddr;
use std::sync::Arc;

/// The store node's address.
pub const STORE_ADDR: &str = "10.0.0.1:7000";
/// Tag of request messages (answers are tagged with the request id, which
/// starts at 1).
const REQUEST_TAG: u64 = 0;
/// Longest any remote call may take before it counts as unknown (the core's
/// own timeouts are shorter).
pub const SAFETY_TIMEOUT: Millis = Millis(20_000);

fn store_addr() -> SocketAddr {
    STORE_ADDR.parse().expect("a socket address")
}

/// A store reached over madsim's network.
pub struct RemoteStore {
    host: Host,
    ep: Endpoint,
}

/// Records "no answer" if a call is dropped before it finished (its caller
/// timed out), unless the node was killed.
struct Pending<'a> {
    host: &'a Host,
    id: u64,
    done: bool,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if !self.done {
            let t = self.host.now();
            self.host.record(Record::Answer {
                t,
                local: t,
                host: self.host.name.clone(),
                id: self.id,
                reply: Reply::Unavailable("caller gave up waiting".into()),
            });
        }
    }
}

impl RemoteStore {
    /// A remote store for `host` (binds an ephemeral endpoint on its node).
    pub async fn connect(host: Host) -> std::io::Result<Self> {
        let ep = Endpoint::bind("0.0.0.0:0").await?;
        Ok(RemoteStore { host, ep })
    }

    async fn call(&self, op: WireOp) -> Result<WireReply, StoreError> {
        let shared = &self.host.shared;
        let id = shared.next_request_id();
        let t = self.host.now();
        self.host.record(Record::Request {
            t,
            local: t,
            host: self.host.name.clone(),
            id,
            op: op.summary(),
        });
        let mut pending = Pending {
            host: &self.host,
            id,
            done: false,
        };
        let req = WireRequest {
            id,
            host: self.host.name.clone(),
            op,
        };
        let exchange = async {
            self.ep
                .send_to_raw(store_addr(), REQUEST_TAG, Box::new(req))
                .await?;
            let (payload, _) = self.ep.recv_from_raw(id).await?;
            payload
                .downcast::<WireReply>()
                .map(|r| *r)
                .map_err(|_| std::io::Error::other("not an answer"))
        };
        let result = tokio::select! {
            biased;
            r = exchange => r.map_err(|e| e.to_string()),
            _ = self.host.rt().sleep(SAFETY_TIMEOUT) => Err(format!("no answer within {SAFETY_TIMEOUT}")),
        };
        pending.done = true;
        let t = self.host.now();
        self.host.record(Record::Answer {
            t,
            local: t,
            host: self.host.name.clone(),
            id,
            reply: match &result {
                Ok(r) => r.summary(),
                Err(e) => Reply::Unavailable(e.clone()),
            },
        });
        match result {
            Ok(WireReply::Error(e)) => Err(e.into_store_error()),
            Ok(r) => Ok(r),
            Err(e) => Err(StoreError::Unavailable(e)),
        }
    }
}

fn unexpected(r: WireReply) -> StoreError {
    StoreError::Corrupt(format!("unexpected answer {r:?}"))
}

impl Store for RemoteStore {
    async fn now(&self) -> Result<StoreTime, StoreError> {
        match self.call(WireOp::Now).await? {
            WireReply::Time(t) => Ok(t),
            r => Err(unexpected(r)),
        }
    }
    async fn enqueue(&self, job: NewJob) -> Result<JobId, StoreError> {
        match self.call(WireOp::Enqueue(job)).await? {
            WireReply::Job(j) => Ok(j),
            r => Err(unexpected(r)),
        }
    }
    async fn claim(&self, req: ClaimRequest) -> Result<Vec<Lease>, StoreError> {
        match self.call(WireOp::Claim(req)).await? {
            WireReply::Leases(l) => Ok(l),
            r => Err(unexpected(r)),
        }
    }
    async fn renew(&self, req: RenewRequest) -> Result<Renewal, StoreError> {
        match self.call(WireOp::Renew(req)).await? {
            WireReply::Renewal(r) => Ok(r),
            r => Err(unexpected(r)),
        }
    }
    async fn release(&self, req: ReleaseRequest) -> Result<Release, StoreError> {
        match self.call(WireOp::Release(req)).await? {
            WireReply::Release(r) => Ok(r),
            r => Err(unexpected(r)),
        }
    }
    async fn sweep(&self, req: SweepRequest) -> Result<Vec<CrashReport>, StoreError> {
        match self.call(WireOp::Sweep(req, None)).await? {
            WireReply::Swept(r) => Ok(r),
            r => Err(unexpected(r)),
        }
    }
    async fn cancel(&self, job: JobId) -> Result<CancelOutcome, StoreError> {
        match self.call(WireOp::Cancel(job)).await? {
            WireReply::Cancel(c) => Ok(c),
            r => Err(unexpected(r)),
        }
    }
    async fn get(&self, job: JobId) -> Result<Option<JobRecord>, StoreError> {
        match self.call(WireOp::Get(job)).await? {
            WireReply::Row(r) => Ok(r),
            r => Err(unexpected(r)),
        }
    }
    async fn list(&self, req: ListRequest) -> Result<Vec<JobRecord>, StoreError> {
        match self.call(WireOp::List(req)).await? {
            WireReply::Rows(r) => Ok(r),
            r => Err(unexpected(r)),
        }
    }
    async fn put_schedule(&self, schedule: Schedule) -> Result<(), StoreError> {
        match self.call(WireOp::PutSchedule(schedule)).await? {
            WireReply::Done => Ok(()),
            r => Err(unexpected(r)),
        }
    }
    async fn remove_schedule(&self, name: String) -> Result<bool, StoreError> {
        match self.call(WireOp::RemoveSchedule(name)).await? {
            WireReply::Removed(b) => Ok(b),
            r => Err(unexpected(r)),
        }
    }
    async fn fire(&self, req: FireRequest) -> Result<JobId, StoreError> {
        match self.call(WireOp::Fire(req)).await? {
            WireReply::Job(j) => Ok(j),
            r => Err(unexpected(r)),
        }
    }
    async fn list_schedules(
        &self,
        req: ListSchedulesRequest,
    ) -> Result<Vec<ScheduleRecord>, StoreError> {
        match self.call(WireOp::ListSchedules(req)).await? {
            WireReply::Schedules(s) => Ok(s),
            r => Err(unexpected(r)),
        }
    }
}

/// The store node's software: one incarnation serving `store` on
/// [`STORE_ADDR`] until madsim kills the node.
pub async fn serve_store(host: Host, store: Arc<MemoryStore>) {
    let ep = Endpoint::bind(STORE_ADDR)
        .await
        .expect("the store's address is free on a fresh incarnation");
    loop {
        let Ok((payload, from)) = ep.recv_from_raw(REQUEST_TAG).await else {
            return;
        };
        let Ok(req) = payload.downcast::<WireRequest>() else {
            continue;
        };
        let (host, store, ep) = (host.clone(), store.clone(), ep.clone());
        host.rt().clone().spawn(Box::pin(async move {
            serve(host, store, ep, *req, from).await;
        }));
    }
}

fn wire<T>(r: Result<T, StoreError>, ok: impl FnOnce(T) -> WireReply) -> WireReply {
    match r {
        Ok(v) => ok(v),
        Err(e) => WireReply::Error(WireError::of(&e)),
    }
}

async fn serve(
    host: Host,
    store: Arc<MemoryStore>,
    ep: Endpoint,
    req: WireRequest,
    from: SocketAddr,
) {
    let t = host.now();
    let store_time = store.now().await.unwrap_or(StoreTime(0));
    let op = req.op.clone();
    let reply = match op.clone() {
        WireOp::Now => wire(store.now().await, WireReply::Time),
        WireOp::Enqueue(j) => wire(store.enqueue(j).await, WireReply::Job),
        WireOp::Claim(c) => wire(store.claim(c).await, WireReply::Leases),
        WireOp::Renew(r) => wire(store.renew(r).await, WireReply::Renewal),
        WireOp::Release(r) => wire(store.release(r).await, WireReply::Release),
        WireOp::Sweep(r, _) => wire(store.sweep(r).await, WireReply::Swept),
        WireOp::Cancel(j) => wire(store.cancel(j).await, WireReply::Cancel),
        WireOp::Get(j) => wire(store.get(j).await, WireReply::Row),
        WireOp::List(l) => wire(store.list(l).await, WireReply::Rows),
        WireOp::PutSchedule(s) => wire(store.put_schedule(s).await, |()| WireReply::Done),
        WireOp::RemoveSchedule(n) => wire(store.remove_schedule(n).await, WireReply::Removed),
        WireOp::Fire(f) => wire(store.fire(f).await, WireReply::Job),
        WireOp::ListSchedules(l) => wire(store.list_schedules(l).await, WireReply::Schedules),
    };
    let after = touched(&store, &op, &reply).await;
    for row in &after {
        host.shared.anchor(row.job, row.version, t, req.id);
    }
    host.record(Record::Served {
        t,
        store_time,
        id: req.id,
        host: req.host,
        // Whether madsim loses the answer on its way is not known here; a
        // lost answer shows as the caller's `Unavailable`.
        fate: Fate::Answered,
        reply: Some(reply.summary()),
        after,
    });
    let _ = ep.send_to_raw(from, req.id, Box::new(reply)).await;
}

/// The rows a request touched, read right after it.
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
