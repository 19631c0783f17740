//! Settings under which the correct core cannot work at all, refused at
//! load.
//!
//! Each of these used to be accepted and then failed every seed of a
//! correct core, or failed at run time without a location: a tick (or a
//! network latency) so long that no request fits in its timeout; a
//! `concurrency` above the store's claim cap, so every claim is refused; a
//! `fence_margin` that eats the usable lease. The checks reuse the real
//! rules: the worker configuration is built exactly as the worker host
//! builds it (with the scenario's catalogue variant, which may relax a
//! rule on purpose), and the store limits are the store policy the store
//! host serves. [`problems`] runs once the settings are valid one by one
//! (so a zero lease is reported once, as zero, and not again as a fence
//! margin that eats it).

use crate::catalogue::Variant;
use crate::config::{ConfigProblem, SimConfig, DEFAULT_TICK};
use crate::duration::Dur;
use leasehold_core::{ConfigError, Millis, SweeperConfig};

/// One-way network hops a request takes: the request and its answer (one
/// message each over the client's long-lived channel, `net::fabric`). Each
/// hop takes at least the network's minimum latency, rounded up to the
/// delivery quantum (`tick`).
pub const REQUEST_HOPS: u64 = 2;

/// Every setting of `cfg` the correct core cannot work under.
pub fn problems(cfg: &SimConfig) -> Vec<ConfigProblem> {
    let mut out = Vec::new();
    round_trip(cfg, &mut out);
    worker_config(cfg, &mut out);
    store_limits(cfg, &mut out);
    if let Err(e) = SweeperConfig::new(cfg.protocol.sweep_interval.0, 1) {
        out.push(core_problem(&e));
    }
    out
}

fn problem(path: &str, message: String) -> ConfigProblem {
    ConfigProblem {
        path: path.to_string(),
        message,
    }
}

/// The shortest round trip a request can take, and whether it still fits
/// in the request timeout: otherwise every request times out and no job is
/// ever enqueued, claimed or finished.
fn round_trip(cfg: &SimConfig, out: &mut Vec<ConfigProblem>) {
    let tick = cfg.tick.as_ms().max(1);
    let latency = cfg.network.latency.lo.as_ms();
    // Arrivals are rounded up to the delivery quantum.
    let hop = latency.div_ceil(tick).max(1) * tick;
    let trip = REQUEST_HOPS * hop;
    let timeout = cfg.protocol.request_timeout;
    if trip < timeout.as_ms() {
        return;
    }
    // Point at the setting the file most likely changed.
    let path = if latency > tick {
        "network.latency"
    } else if cfg.tick != DEFAULT_TICK {
        "tick"
    } else {
        "protocol.request_timeout"
    };
    out.push(problem(
        path,
        format!(
            "a request needs at least {REQUEST_HOPS} one-way network hops (the request, the \
             answer) of at least one delivery quantum (tick {}) and at least the minimum \
             latency ({}) each: {}, not below protocol.request_timeout {timeout}, so every request \
             would time out; make the tick or the latency shorter, or the timeout longer",
            cfg.tick,
            cfg.network.latency.lo,
            Dur::ms(trip)
        ),
    ));
}

/// The scenario path of a core configuration field.
fn core_problem(e: &ConfigError) -> ConfigProblem {
    let path = match e.field {
        "queue" => "workload.queues".to_string(),
        "sweep_interval" | "interval" => "protocol.sweep_interval".to_string(),
        f @ ("concurrency" | "lease" | "renew_interval" | "poll_interval" | "request_timeout"
        | "fence_margin" | "max_drift_ppm") => format!("protocol.{f}"),
        _ => "protocol".to_string(),
    };
    problem(
        &path,
        format!("{} (the worker runtime refuses it)", e.reason),
    )
}

/// Builds the worker configuration as the worker host does
/// (both use [`crate::protocol::worker_config`]), with the scenario's catalogue variant.
fn worker_config(cfg: &SimConfig, out: &mut Vec<ConfigProblem>) {
    let queues = crate::protocol::queues_of(cfg, 0);
    if queues.is_empty() {
        return;
    }
    let variant = cfg.variant.as_deref().and_then(Variant::parse);
    if cfg.variant.is_some() && variant.is_none() {
        // A variant this build does not carry: running it says why not.
        return;
    }
    if let Err(e) = crate::protocol::worker_config(cfg, "worker-1", &queues, variant).build() {
        out.push(core_problem(&e));
    }
}

/// The store's own limits, from the policy the store host serves.
fn store_limits(cfg: &SimConfig, out: &mut Vec<ConfigProblem>) {
    let policy = match crate::protocol::policy_of(cfg, 0) {
        Ok(p) => p,
        Err(e) => {
            out.push(problem("protocol", format!("the store refuses it: {e}")));
            return;
        }
    };
    let l = &policy.limits;
    let p = &cfg.protocol;
    if p.concurrency > l.max_claim_batch {
        out.push(problem(
            "protocol.concurrency",
            format!(
                "{} is above the store's claim cap of {} leases per claim: every claim would \
                 be refused",
                p.concurrency, l.max_claim_batch
            ),
        ));
    }
    if let Err(e) = l.check_lease(Millis(p.lease.as_ms())) {
        out.push(problem(
            "protocol.lease",
            format!("{e} ({}): every claim would be refused", Dur(l.max_lease)),
        ));
    }
    if p.max_attempts > l.max_attempts_cap {
        out.push(problem(
            "protocol.max_attempts",
            format!(
                "{} is above the store's attempt cap of {}: every enqueue would be refused",
                p.max_attempts, l.max_attempts_cap
            ),
        ));
    }
    for (i, q) in cfg.workload.queues.iter().enumerate() {
        if let Err(e) = l.check_queue(q) {
            out.push(problem(
                &format!("workload.queues[{i}]"),
                format!(
                    "{e} (at most {} bytes): every enqueue would be refused",
                    l.max_queue_len
                ),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin::{assert_defaults_and_builtins_pass, paths_of};

    #[test]
    fn defaults_and_builtin_scenarios_are_feasible() {
        assert_defaults_and_builtins_pass(problems);
    }

    #[test]
    fn a_round_trip_that_cannot_fit_its_timeout_is_refused() {
        // 2 hops of 990 ms fit in 2 s; of 1 s they do not.
        let mut cfg = SimConfig {
            tick: Dur::ms(990),
            ..SimConfig::default()
        };
        assert_eq!(paths_of(problems(&cfg)), Vec::<String>::new());
        cfg.tick = Dur::ms(1000);
        assert_eq!(paths_of(problems(&cfg)), vec!["tick"]);
        cfg.tick = Dur::ms(10);
        cfg.network.latency = crate::config::Range::exactly(Dur::ms(1000));
        assert_eq!(paths_of(problems(&cfg)), vec!["network.latency"]);
    }

    #[test]
    fn store_and_worker_limits_are_the_real_ones() {
        let mut cfg = SimConfig::default();
        cfg.protocol.concurrency = leasehold_core::DEFAULT_MAX_CLAIM_BATCH + 1;
        cfg.protocol.fence_margin = cfg.protocol.lease;
        cfg.protocol.max_attempts = leasehold_core::DEFAULT_MAX_ATTEMPTS_CAP + 1;
        cfg.workload.queues = vec!["q".repeat(200)];
        assert_eq!(
            paths_of(problems(&cfg)),
            vec![
                "protocol.fence_margin",
                "protocol.concurrency",
                "protocol.max_attempts",
                "workload.queues[0]"
            ]
        );
    }
}
