//! Times a scenario implies, which both sides need: the checker judges I6
//! against the liveness bound, and scheduler hosts stop firing one bound
//! before the end so that every fired job can be judged. Computed here, from
//! the scenario alone, so that neither side asks the other.

use crate::config::SimConfig;

/// How long after healing (or its enqueue) a job may take, per attempt.
pub fn liveness_bound_ms(cfg: &SimConfig) -> u64 {
    let p = &cfg.protocol;
    p.lease.as_ms()
        + p.sweep_interval.as_ms()
        + p.backoff_cap.as_ms()
        + cfg.workload.run_time.hi.as_ms()
        + p.poll_interval.as_ms()
        + p.renew_interval.as_ms()
        + 2 * p.request_timeout.as_ms()
}

/// True time (ms) at which scheduler hosts stop firing: one I6 liveness
/// bound before the end of the run, so that every fired job can reach a
/// terminal state, and be judged, before the run ends.
pub fn firing_stops_ms(cfg: &SimConfig) -> u64 {
    cfg.duration.as_ms().saturating_sub(liveness_bound_ms(cfg))
}
