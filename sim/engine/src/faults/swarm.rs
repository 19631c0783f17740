//! Swarm testing: each seed draws its own fault rates, then concrete faults.

use leasehold_model::config::{HostKind, Range, ScriptedFault, SimConfig};
use leasehold_model::duration::{Dur, SignedDur};
use leasehold_model::rng::SimRng;

/// Most faults of one kind on one host, a bound on the arrival loop.
const MAX_ARRIVALS: usize = 10_000;

/// The rates one seed drew from the scenario's ranges.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SwarmDraw {
    /// Worker crashes per worker per minute.
    pub worker_crash_rate: f64,
    /// Sweeper crashes per sweeper per minute.
    pub sweeper_crash_rate: f64,
    /// Store crashes per minute.
    pub store_crash_rate: f64,
    /// Partitions per host per minute.
    pub partition_rate: f64,
    /// Pauses per host per minute.
    pub pause_rate: f64,
    /// Holds per host per minute.
    pub hold_rate: f64,
    /// Clock steps per host per minute.
    pub clock_step_rate: f64,
    /// Probability a message is lost (inside the window).
    pub message_loss: f64,
    /// Probability an answer is lost after its request committed (inside the window).
    pub answer_loss: f64,
    /// Scheduler crashes per scheduler per minute.
    pub scheduler_crash_rate: f64,
    /// Probability the store answers a write `Conflict` without applying
    /// it (inside the window).
    pub store_conflict: f64,
    /// Probability a wake-up is lost (inside the window).
    pub wake_loss: f64,
    /// Probability a worker's batch is cancelled mid-transaction (inside
    /// the window).
    pub store_cancel: f64,
}

fn draw(rng: &mut SimRng, r: &Range<f64>) -> f64 {
    rng.range_f64(r.lo, r.hi)
}

/// The rates `seed` draws from `cfg`'s ranges.
pub fn draw_swarm(cfg: &SimConfig, seed: u64) -> SwarmDraw {
    let f = &cfg.faults;
    let mut rng = SimRng::derive(seed, "swarm-rates", &[]);
    SwarmDraw {
        worker_crash_rate: draw(&mut rng, &f.worker_crash_rate),
        sweeper_crash_rate: draw(&mut rng, &f.sweeper_crash_rate),
        store_crash_rate: draw(&mut rng, &f.store_crash_rate),
        partition_rate: draw(&mut rng, &f.partition_rate),
        pause_rate: draw(&mut rng, &f.pause_rate),
        hold_rate: draw(&mut rng, &f.hold_rate),
        clock_step_rate: draw(&mut rng, &f.clock_step_rate),
        message_loss: draw(&mut rng, &f.message_loss),
        answer_loss: draw(&mut rng, &f.answer_loss),
        // Drawn last, so scenarios without schedulers draw as before.
        scheduler_crash_rate: draw(&mut rng, &f.scheduler_crash_rate),
        // Drawn after it, so scenarios without store conflicts draw as before.
        store_conflict: draw(&mut rng, &f.store_conflict),
        wake_loss: draw(&mut rng, &f.wake_loss),
        store_cancel: draw(&mut rng, &f.store_cancel),
    }
}

/// Poisson arrival times in `[from, window)` at `per_min` per minute.
fn arrivals(rng: &mut SimRng, per_min: f64, from: u64, window: u64) -> Vec<u64> {
    let mut out = Vec::new();
    if per_min <= 0.0 || from >= window {
        return out;
    }
    let mean = 60_000.0 / per_min;
    let mut t = from as f64;
    while out.len() < MAX_ARRIVALS {
        t += rng.exp(mean).max(1.0);
        if t >= window as f64 {
            break;
        }
        out.push(t as u64);
    }
    out
}

fn dur(rng: &mut SimRng, r: &Range<Dur>) -> u64 {
    rng.range_u64(r.lo.as_ms(), r.hi.as_ms())
}

fn crashes(
    rng: &mut SimRng,
    host: &str,
    rate: f64,
    cfg: &SimConfig,
    window: u64,
    out: &mut Vec<ScriptedFault>,
) {
    let mut t = 0;
    for _ in 0..MAX_ARRIVALS {
        let Some(&at) = arrivals(rng, rate, t, window).first() else {
            break;
        };
        let back = (at + dur(rng, &cfg.faults.restart_after).max(1)).min(window);
        out.push(ScriptedFault::Crash {
            host: host.into(),
            at: Dur::ms(at),
        });
        out.push(ScriptedFault::Restart {
            host: host.into(),
            at: Dur::ms(back),
        });
        t = back;
    }
}

/// The swarm faults `seed` draws for `cfg` (not including scripted events).
pub fn swarm_faults(cfg: &SimConfig, seed: u64) -> Vec<ScriptedFault> {
    let d = draw_swarm(cfg, seed);
    let f = &cfg.faults;
    let window = f.window.as_ms().min(cfg.duration.as_ms());
    let mut out = Vec::new();
    let hosts = cfg.hosts();
    for h in hosts.draw() {
        let host = &h.name;
        // Each host has its own stream, so adding a host shifts nothing else.
        let mut rng = SimRng::derive(seed, &format!("swarm/{host}"), &[]);
        let is_store = h.kind == HostKind::Store;
        let crash_rate = match h.kind {
            HostKind::Store => d.store_crash_rate,
            HostKind::Worker(_) => d.worker_crash_rate,
            // A pruner is a background service like the sweeper.
            HostKind::Sweeper(_) | HostKind::Pruner(_) => d.sweeper_crash_rate,
            HostKind::Scheduler(_) => d.scheduler_crash_rate,
            HostKind::Client => 0.0,
        };
        crashes(&mut rng, host, crash_rate, cfg, window, &mut out);
        if !is_store {
            for from in arrivals(&mut rng, d.partition_rate, 0, window) {
                let to = (from + dur(&mut rng, &f.partition_len).max(1)).min(window);
                let oneway = rng.chance(f.oneway_share);
                let (a, b) = if oneway && rng.chance(0.5) {
                    ("store".to_string(), host.clone())
                } else {
                    (host.clone(), "store".to_string())
                };
                if to > from {
                    out.push(ScriptedFault::Partition {
                        a,
                        b,
                        from: Dur::ms(from),
                        to: Dur::ms(to),
                        oneway,
                    });
                }
            }
            for at in arrivals(&mut rng, d.pause_rate, 0, window) {
                let len = dur(&mut rng, &f.pause_len).min(window - at).max(1);
                out.push(ScriptedFault::Pause {
                    host: host.clone(),
                    at: Dur::ms(at),
                    len: Dur::ms(len),
                });
            }
            for from in arrivals(&mut rng, d.hold_rate, 0, window) {
                let to = (from + dur(&mut rng, &f.hold_len).max(1)).min(window);
                if to > from {
                    out.push(ScriptedFault::Hold {
                        a: host.clone(),
                        b: "store".into(),
                        from: Dur::ms(from),
                        to: Dur::ms(to),
                        oneway: false,
                    });
                }
            }
        }
        let offset = rng.range_i64(f.clock_offset.lo.0, f.clock_offset.hi.0);
        if offset != 0 {
            out.push(ScriptedFault::Skew {
                host: host.clone(),
                at: Dur::ms(0),
                by: SignedDur(offset),
            });
        }
        let ppm = rng.range_i64(f.clock_drift_ppm.lo, f.clock_drift_ppm.hi);
        if ppm != 0 {
            out.push(ScriptedFault::Drift {
                host: host.clone(),
                at: Dur::ms(0),
                ppm,
            });
        }
        for at in arrivals(&mut rng, d.clock_step_rate, 0, window) {
            let by = rng.range_i64(f.clock_step.lo.0, f.clock_step.hi.0);
            if by != 0 && at > 0 {
                out.push(ScriptedFault::Skew {
                    host: host.clone(),
                    at: Dur::ms(at),
                    by: SignedDur(by),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_stay_inside_the_window_and_replay() {
        let mut cfg = SimConfig::default();
        cfg.faults.worker_crash_rate = Range::new(1.0, 3.0);
        cfg.faults.partition_rate = Range::new(1.0, 2.0);
        cfg.faults.pause_rate = Range::exactly(1.0);
        cfg.faults.hold_rate = Range::exactly(1.0);
        cfg.faults.clock_step_rate = Range::exactly(0.5);
        let a = swarm_faults(&cfg, 9);
        assert_eq!(a, swarm_faults(&cfg, 9));
        assert_ne!(a, swarm_faults(&cfg, 10));
        let w = cfg.faults.window.as_ms();
        for f in &a {
            assert!(f.start().as_ms() <= w, "{f}");
            match f {
                ScriptedFault::Partition { to, .. } | ScriptedFault::Hold { to, .. } => {
                    assert!(to.as_ms() <= w)
                }
                ScriptedFault::Pause { at, len, .. } => assert!(at.as_ms() + len.as_ms() <= w),
                ScriptedFault::Restart { at, .. } => assert!(at.as_ms() <= w),
                _ => {}
            }
        }
        assert!(a.iter().any(|f| matches!(f, ScriptedFault::Crash { .. })));
    }
}
