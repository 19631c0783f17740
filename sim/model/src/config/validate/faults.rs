//! The checks of the faults: the swarm's `[faults]` ranges and the
//! scripted `events`.

use super::{check_range, Bad};
use crate::config::{ConflictOn, HostKind, Range, ScriptedFault, SimConfig};

/// The swarm's ranges: rates per minute, probabilities, lengths and clocks.
pub(super) fn swarm(cfg: &SimConfig, bad: &mut Bad) {
    let f = &cfg.faults;
    let out_of_rate = |r: &Range<f64>| r.lo < 0.0 || !r.hi.is_finite() || r.hi > 60.0;
    each_within(
        bad,
        &f.rates(),
        out_of_rate,
        "rates are per minute, between 0 and 60",
    );
    let out_of_unit = |r: &Range<f64>| r.lo < 0.0 || r.hi > 1.0;
    each_within(
        bad,
        &f.probabilities(),
        out_of_unit,
        "probabilities must lie in [0, 1]",
    );
    for (path, r) in [
        ("faults.restart_after", &f.restart_after),
        ("faults.partition_len", &f.partition_len),
        ("faults.pause_len", &f.pause_len),
        ("faults.hold_len", &f.hold_len),
    ] {
        check_range(bad, path, r);
    }
    check_range(bad, "faults.clock_offset", &f.clock_offset);
    check_range(bad, "faults.clock_drift_ppm", &f.clock_drift_ppm);
    check_range(bad, "faults.clock_step", &f.clock_step);
    if f.conflict_on == ConflictOn::EveryWrite && f.store_conflict.hi <= 0.0 {
        bad(
            "faults.conflict_on",
            "\"every-write\" widens faults.store_conflict, which is 0 here: set its rate too"
                .into(),
        );
    }
    if f.clock_drift_ppm.lo <= -1_000_000 || f.clock_drift_ppm.hi >= 1_000_000 {
        bad(
            "faults.clock_drift_ppm",
            "drift must stay within ±1000000 ppm".into(),
        );
    }
}

/// Each scripted event: hosts that exist, a start inside the run, and a
/// graceful shutdown only of a worker.
pub(super) fn events(cfg: &SimConfig, bad: &mut Bad) {
    let hosts = cfg.hosts();
    let names = || {
        hosts
            .draw()
            .map(|h| h.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    for (i, ev) in cfg.events.iter().enumerate() {
        for h in ev.hosts() {
            if !hosts.contains(h) {
                bad(
                    &format!("events[{i}]"),
                    format!("unknown host {h:?} in `{ev}`; hosts are {}", names()),
                );
            }
        }
        if ev.start() >= cfg.duration {
            bad(
                &format!("events[{i}]"),
                format!("`{ev}` starts after the run ends at {}", cfg.duration),
            );
        }
        if let ScriptedFault::Conflict { host, .. } = ev {
            // Only a host that sends the store renews, releases or cancels
            // (an unknown host is reported above).
            let kind = hosts.named(host).map(|h| h.kind);
            let sender = matches!(kind, Some(HostKind::Worker(_) | HostKind::Client));
            if !sender && kind.is_some() {
                bad(
                    &format!("events[{i}]"),
                    format!(
                        "`{ev}`: the store answers `Conflict` only to a worker's renew or \
                         release or the client's cancel; {host} sends none"
                    ),
                );
            }
        }
        if let ScriptedFault::Hold { a, b, .. } = ev {
            // A hold keeps messages on the link between two hosts; a host
            // has no link to itself, so the sentence would hold nothing.
            if a == b {
                bad(
                    &format!("events[{i}]"),
                    format!("`{ev}` holds nothing: a hold names two different hosts"),
                );
            }
        }
        if let ScriptedFault::Shutdown { host, .. } = ev {
            // An unknown host is reported above; a known one must be a worker.
            let kind = hosts.named(host).map(|h| h.kind);
            if kind.is_some_and(|k| !matches!(k, HostKind::Worker(_))) {
                bad(
                    &format!("events[{i}]"),
                    format!(
                        "`{ev}`: only a worker shuts down gracefully (worker-1 .. worker-{}); \
                         {host} can crash and restart",
                        cfg.topology.workers
                    ),
                );
            }
        }
    }
}

/// Each range in turn: its order, then its bounds (`message` when
/// `outside` says it leaves them).
fn each_within(
    bad: &mut Bad,
    ranges: &[(&str, &Range<f64>)],
    outside: impl Fn(&Range<f64>) -> bool,
    message: &str,
) {
    for &(path, r) in ranges {
        check_range(bad, path, r);
        if outside(r) {
            bad(path, message.into());
        }
    }
}
