//! The simulated network protocol between the store host and its clients.
//!
//! One turmoil TCP connection per request: connect, send one frame, read
//! one frame, close. turmoil's TCP does not retransmit, so a segment dropped
//! by a partition would wedge a long-lived stream forever; a connection per
//! request makes every loss cost exactly one request, which times out (or
//! fails at once when the SYN itself is dropped or the store is down) and
//! surfaces as `StoreError::Unavailable`, like a lost answer in production.
//!
//! Wake-ups travel the other way, as datagrams (see [`wake`]).
//!
//! Frames are a 4-byte big-endian length and a bincode body, written in
//! one call so each frame is one segment.

pub mod remote;
pub mod wake;
pub use leasehold_model::wire;

pub use remote::{remote_store, worker_store, RemoteCall, RemoteStore};
pub use wake::{listen_for_wake_ups, WakeSender, WAKE_PORT};
pub use wire::{
    read_frame, write_frame, WireBatch, WireError, WireMessage, WireOp, WireReply, WireRequest,
    STORE_PORT,
};
