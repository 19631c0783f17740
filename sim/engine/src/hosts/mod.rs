//! The simulated hosts: store, workers, sweepers, schedulers and the client, each a
//! simulated host running real code on its own clock ([`runtime`]).

pub mod client;
pub mod handler;
pub mod runtime;
pub mod scheduler;
pub mod shared;
pub mod store;
pub mod worker;

pub use runtime::HostRuntime;
pub use shared::Shared;
