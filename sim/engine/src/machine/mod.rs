//! What one simulated machine gives the software on it: its [`runtime`]
//! (the core's `Runtime` on the host's own clock: timers, spawner, pause
//! gate, incarnations) and the run's [`recorder`]. The hosts' software
//! ([`crate::hosts`]) and the network's store client ([`crate::net`]) both
//! stand on it; it stands on the executor and the fault plan only.

pub mod recorder;
pub mod runtime;

pub use runtime::HostRuntime;
