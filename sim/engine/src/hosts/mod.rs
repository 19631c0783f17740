//! The simulated hosts: store, workers, sweepers, schedulers and the client, each a
//! simulated host running real code on its own clock ([`runtime`]), given
//! only what it reads ([`software`]) and the run's [`recorder`].

pub mod client;
pub mod handler;
pub mod recorder;
pub mod runtime;
pub mod scheduler;
pub mod software;
pub mod store;
pub mod store_faults;
pub mod worker;

pub use runtime::HostRuntime;
