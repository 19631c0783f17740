//! The simulated hosts' software: store, workers, sweepers, schedulers,
//! the client and pruners, each running real code on its own machine
//! ([`crate::machine`]), given only what it reads ([`software`]).

pub mod batch_parts;
pub mod client;
pub mod handler;
pub mod pruner;
pub mod scheduler;
pub mod single_calls;
pub mod software;
pub mod store;
pub mod store_coalesce;
pub mod store_faults;
pub mod store_paths;
pub mod worker;
