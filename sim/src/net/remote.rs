//! `RemoteStore`: the [`Store`] workers, sweepers and the client use, over
//! the simulated network.
//!
//! Every call is recorded (request, then answer or failure). A call whose
//! answer does not arrive returns [`StoreError::Unavailable`]: the outcome
//! is unknown, exactly as in production. The core bounds each call with its
//! own timeout; the remote store adds a safety bound of its own so no call
//! can wait forever.
//!
//! The connection itself outlives a caller that gave up (for at most
//! [`DETACHED_MAX_MS`]): a request held by the network, or queued at a
//! paused store, is still delivered and executed late, which is how stale
//! releases and late renewals reach a store in production.

use super::wire::{read_frame, write_frame, WireOp, WireReply, WireRequest, STORE_PORT};
use crate::history::{Record, Reply};
use crate::hosts::runtime::{sleep_until_true, true_now_ms, HostRuntime};
use leasehold_core::{
    CancelOutcome, ClaimRequest, CrashReport, FireRequest, JobId, JobRecord, Lease, ListRequest,
    ListSchedulesRequest, Millis, NewJob, Release, ReleaseRequest, RenewRequest, Renewal, Runtime,
    Schedule, ScheduleRecord, Store, StoreError, StoreTime, SweepRequest,
};
use std::io;
use turmoil::net::TcpStream;

/// Longest any remote call may take before it counts as unknown, on the
/// caller's clock (the core's own timeouts are shorter).
pub const SAFETY_TIMEOUT: Millis = Millis(20_000);
/// Longest a request's connection lives on after its caller gave up.
pub const DETACHED_MAX_MS: u64 = 60_000;

/// A store reached over the simulated network.
pub struct RemoteStore {
    rt: HostRuntime,
    send_wall_on_sweep: bool,
}

/// Records "no answer" if a call is dropped before it finished (the caller
/// timed out), unless the host is being killed.
struct Pending<'a> {
    rt: &'a HostRuntime,
    id: u64,
    done: bool,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if !self.done && !self.rt.shared().is_crashing() {
            let (t, local) = self.rt.times();
            self.rt.shared().record(Record::Answer {
                t,
                local,
                host: self.rt.host().to_string(),
                id: self.id,
                reply: Reply::Unavailable("caller gave up waiting".into()),
            });
        }
    }
}

async fn exchange(req: &WireRequest) -> io::Result<WireReply> {
    let mut s = TcpStream::connect(("store", STORE_PORT)).await?;
    write_frame(&mut s, req).await?;
    read_frame(&mut s).await
}

impl RemoteStore {
    /// A remote store for the host of `rt`; `send_wall_on_sweep` makes sweeps
    /// carry this host's wall clock (the `sweeper-own-clock` bug).
    pub fn new(rt: HostRuntime, send_wall_on_sweep: bool) -> Self {
        RemoteStore {
            rt,
            send_wall_on_sweep,
        }
    }

    async fn call(&self, op: WireOp) -> Result<WireReply, StoreError> {
        let shared = self.rt.shared().clone();
        let id = shared.next_request_id();
        let host = self.rt.host().to_string();
        let (t, local) = self.rt.times();
        shared.record(Record::Request {
            t,
            local,
            host: host.clone(),
            id,
            op: op.summary(),
        });
        let mut pending = Pending {
            rt: &self.rt,
            id,
            done: false,
        };
        let req = WireRequest {
            id,
            host: host.clone(),
            op,
        };
        // The exchange runs on its own, like bytes already handed to the
        // kernel: if the caller gives up, a held or queued request may
        // still reach the store late (and be executed there).
        let (tx, rx) = tokio::sync::oneshot::channel();
        let give_up = true_now_ms() + DETACHED_MAX_MS;
        self.rt.spawn(Box::pin(async move {
            let r = tokio::select! {
                biased;
                r = exchange(&req) => r.map_err(|e| e.to_string()),
                _ = sleep_until_true(give_up) => Err("connection abandoned".to_string()),
            };
            let _ = tx.send(r);
        }));
        let result = tokio::select! {
            biased;
            r = rx => r.unwrap_or_else(|_| Err("exchange ended without an answer".into())),
            _ = self.rt.sleep(SAFETY_TIMEOUT) => Err(format!("no answer within {SAFETY_TIMEOUT}")),
        };
        pending.done = true;
        let (t, local) = self.rt.times();
        let reply = match &result {
            Ok(r) => r.summary(),
            Err(e) => Reply::Unavailable(e.clone()),
        };
        shared.record(Record::Answer {
            t,
            local,
            host,
            id,
            reply,
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
        let wall = self.send_wall_on_sweep.then(|| self.rt.wall());
        match self.call(WireOp::Sweep(req, wall)).await? {
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
