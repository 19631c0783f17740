//! The state of the small world: the store's rows, each worker host, the
//! messages in flight, the faults spent, and the checker's own record of
//! what happened (`Ghost`), from which the invariants are judged.
//!
//! Time is abstracted: a run moves from one instant where something can
//! change to the next (a worker's timer, a message's delivery window, a
//! handler's last moment, a store expiry, a sweep's deadline), never
//! millisecond by millisecond; every action enabled at an instant may
//! happen there, in any order.

pub use crate::ident::Ident;
use crate::record::Ghost;
use crate::shared::Shared;
use leasehold_core::worker::lease_machine::LeaseMachine;
use leasehold_core::worker::release_retries::ReleaseRetries;
use leasehold_core::worker::slots::Slots;
use leasehold_core::{JobId, JobRecord, Token};

/// A renew's answer as the world carries it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RenewAns {
    /// `Renewed` until this store instant.
    Renewed {
        /// New store expiry.
        expires_at: i64,
        /// A cancel was requested.
        cancel: bool,
    },
    /// `Lost`.
    Lost,
    /// `Conflict` (nothing applied).
    Conflict,
    /// `Unavailable` (a timeout, or the store's prompt refusal).
    Unavailable,
    /// A definite rejection.
    Rejected,
}

/// A release's answer as the world carries it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReleaseAns {
    /// `Committed`.
    Committed,
    /// `Lost`.
    Lost,
    /// `Conflict`.
    Conflict,
    /// `Unavailable`.
    Unavailable,
    /// A definite rejection.
    Rejected,
}

/// A claim's answer: granted `(job, token, store expiry)`, or an error.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ClaimAns {
    /// Leases granted.
    Granted(Vec<(JobId, Token, i64)>),
    /// `Conflict`.
    Conflict,
    /// `Unavailable`.
    Unavailable,
}

/// What a message says.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Body {
    /// Claim up to `max` leases.
    ClaimReq {
        /// Most leases.
        max: u32,
    },
    /// The claim's answer.
    ClaimAns(ClaimAns),
    /// Renew a lease.
    RenewReq(JobId, Token),
    /// The renew's answer.
    RenewAns(JobId, Token, RenewAns),
    /// Release a lease as succeeded.
    ReleaseReq(JobId, Token),
    /// The release's answer.
    ReleaseAns(JobId, Token, ReleaseAns),
}

impl Body {
    /// Whether the store is its destination.
    pub fn to_store(&self) -> bool {
        matches!(
            self,
            Body::ClaimReq { .. } | Body::RenewReq(..) | Body::ReleaseReq(..)
        )
    }

    /// The lease it is about (none for claims).
    pub fn lease(&self) -> Option<(JobId, Token)> {
        match *self {
            Body::RenewReq(j, t)
            | Body::RenewAns(j, t, _)
            | Body::ReleaseReq(j, t)
            | Body::ReleaseAns(j, t, _) => Some((j, t)),
            _ => None,
        }
    }
}

/// A message in flight between worker `from` and the store.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Msg {
    /// The worker it is from or to.
    pub who: Ident,
    /// What it says.
    pub body: Body,
    /// Local time of the worker when it sent the request.
    pub sent_local: u64,
    /// Earliest true instant of delivery.
    pub not_before: u64,
    /// Latest true instant of delivery.
    pub deadline: u64,
    /// True instant at which the worker gives up on the request.
    pub timeout_at: u64,
}

/// A lease task's phase.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// The handler runs.
    Running {
        /// Local instant the task's loop wakes at.
        wake: u64,
        /// Latest true instant the handler finishes by.
        handler_by: u64,
    },
    /// The handler is done; its release is being sent.
    Releasing {
        /// The release's tries.
        tries: ReleaseRetries,
        /// A release is in flight.
        release_out: bool,
        /// Local instant of the next try, while waiting to retry.
        retry_at: Option<u64>,
        /// The heartbeat while releasing.
        heartbeat: Heartbeat,
    },
}

/// The releasing heartbeat's driver state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Heartbeat {
    /// Over.
    Stopped,
    /// Sleeping until this local instant.
    Sleep(u64),
    /// Awaiting a renew's answer.
    Await,
}

/// One lease task of a worker.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Task {
    /// The job.
    pub job: JobId,
    /// The token.
    pub token: Token,
    /// The core's lease machine.
    pub m: LeaseMachine,
    /// Its phase.
    pub phase: Phase,
    /// A renew is in flight and its answer is awaited.
    pub renew_out: bool,
    /// A renew answered `Lost` (the handler must stop within a step).
    pub lost_seen: bool,
}

/// A worker host and its current incarnation.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Host {
    /// Signed drift of its clock, ppm.
    pub drift_ppm: i32,
    /// Current incarnation.
    pub inc: u8,
    /// The core's slot accounting.
    pub slots: Slots,
    /// Local instant from which the next claim is due.
    pub claim_due: u64,
    /// The `(queue, max)` asks of the claim in flight.
    pub claim_out: Option<Vec<(usize, u32)>>,
    /// Lease tasks, by (job, token).
    pub tasks: Vec<Task>,
}

impl Host {
    /// This host's current identity.
    pub fn ident(&self, host: u8) -> Ident {
        Ident {
            host,
            inc: self.inc,
        }
    }
}

/// Faults spent so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Spent {
    /// Crashes.
    pub crashes: u8,
    /// Lost messages.
    pub lost: u8,
    /// `Conflict` answers.
    pub conflicts: u8,
    /// Prompt `Unavailable` answers.
    pub unavailable: u8,
    /// Client cancels.
    pub cancels: u8,
}

/// The whole world.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct State {
    /// True time, ms.
    pub now: u64,
    /// The store's rows, by job index (shared with other states until a
    /// step changes one).
    pub rows: Vec<Shared<JobRecord>>,
    /// Worker hosts (shared likewise).
    pub hosts: Vec<Shared<Host>>,
    /// Messages in flight (a multiset, kept sorted by the steps).
    pub net: Vec<Msg>,
    /// Faults spent.
    pub spent: Spent,
    /// The checker's record (shared likewise: most steps leave it be).
    pub ghost: Shared<Ghost>,
}
