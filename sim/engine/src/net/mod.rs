//! The simulated network between the store host and its clients.
//!
//! [`fabric`] carries messages between hosts at exact instants under the
//! fault plan's cuts and holds; [`remote`] is the store client on top of
//! it (one message per request or batch, one per answer); [`wake`] carries
//! the store's wake-ups the other way, as datagrams.
//!
//! Message bodies are bincode ([`leasehold_model::wire::encode`]), as they would be on a
//! real wire: what the store host executes is what survived the encoding.

pub mod fabric;
pub mod remote;
pub mod wake;

pub use remote::{remote_store, worker_store, RemoteCall, RemoteStore};
pub use wake::{listen_for_wake_ups, WakeSender};
