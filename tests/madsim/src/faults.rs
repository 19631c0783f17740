//! The seed's fault plan, drawn from madsim's own random generator, and
//! its application with madsim's own fault tools: `Handle::kill` and
//! `Handle::restart`, `Handle::pause` and `Handle::resume`,
//! `NetSim::clog_link`/`unclog_link` (partitions, both ways or one way) and
//! `NetSim::update_config` (packet loss; latency is set once per seed).
//!
//! Every fault is also written to the history as the simulator
//! (`leasehold-sim`) writes its ground truth: `fault` records (crash, restart, partition,
//! pause), `host_crashed` when a kill is applied, and `link` records for
//! the state of each host's link with the store. madsim does not tell
//! which packets it dropped, so a loss burst is recorded as every link
//! being impaired for its duration: a request failing then is explained by
//! the burst (I5), exactly as the simulator's recorded losses are.

use crate::scenario::{MsRange, Scenario, Scripted};
use leasehold_model::config::ScriptedFault;
use leasehold_model::duration::Dur;
use madsim::rand::Rng;

/// One thing the supervisor does at a time.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Kill the host's node (its tasks and sockets are gone).
    Kill(String),
    /// Restart the host's node (its software starts again).
    Restart(String),
    /// Cut messages from `.0` to `.1` (one of them is the store).
    Clog(String, String),
    /// Let messages from `.0` to `.1` through again.
    Unclog(String, String),
    /// Pause the host's node.
    Pause(String),
    /// Resume the host's node.
    Resume(String),
    /// Set madsim's packet loss rate.
    Loss(f64),
}

/// The seed's faults: timed actions, the ground-truth records, and when
/// everything has healed.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    /// `(time ms, action)`, in time order (ties in drawing order).
    pub actions: Vec<(u64, Action)>,
    /// The faults as the history shows them.
    pub faults: Vec<ScriptedFault>,
    /// Every fault has ended by this time.
    pub heal_ms: u64,
    /// The one-way latency range this seed runs with (ms).
    pub latency: MsRange,
    /// Highest packet loss rate of the seed (for the `run` record).
    pub loss: f64,
}

fn draw_range(rng: &mut impl Rng, (lo, hi): MsRange) -> u64 {
    if hi <= lo {
        lo
    } else {
        rng.gen_range(lo..=hi)
    }
}

fn draw_rate(rng: &mut impl Rng, (lo, hi): (f64, f64)) -> f64 {
    // Swarm testing: half the seeds leave a kind of fault out entirely.
    if hi <= 0.0 || !rng.gen_bool(0.5) {
        0.0
    } else if hi <= lo {
        lo
    } else {
        rng.gen_range(lo..hi)
    }
}

/// Faults of one kind on one host: a Poisson process of `per_min` inside
/// `[0, window)`, each lasting a length drawn from `len` and the next one
/// starting after it ended. `(start, length)` in ms.
fn times(rng: &mut impl Rng, per_min: f64, window: u64, len: MsRange) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    if per_min <= 0.0 {
        return out;
    }
    let mean_gap = 60_000.0 / per_min;
    let mut t = 0u64;
    loop {
        let u: f64 = rng.gen_range(f64::EPSILON..1.0);
        t += (-u.ln() * mean_gap) as u64;
        if t >= window {
            return out;
        }
        let l = draw_range(rng, len).max(1);
        out.push((t, l));
        t += l;
    }
}

impl Plan {
    /// Draws the plan of the current madsim seed for `s`.
    pub fn draw(s: &Scenario) -> Plan {
        let mut rng = madsim::rand::thread_rng();
        let rng = &mut rng;
        let f = &s.faults;
        let mut plan = Plan {
            latency: (s.latency.0, draw_range(rng, s.latency).max(s.latency.0 + 1)),
            ..Plan::default()
        };
        let w = s.window;
        let kills = |plan: &mut Plan, rng: &mut madsim::rand::GlobalRng, host: &str, rate| {
            for (at, back) in times(rng, rate, w, f.restart_after) {
                plan.kill(host, at, at + back);
            }
        };
        let worker_kills = draw_rate(rng, f.worker_kills);
        let sweeper_kills = draw_rate(rng, f.sweeper_kills);
        let store_kills = draw_rate(rng, f.store_kills);
        let partitions = draw_rate(rng, f.partitions);
        let pauses = draw_rate(rng, f.pauses);
        let bursts = draw_rate(rng, f.loss_bursts);
        let movers: Vec<String> = (1..=s.workers)
            .map(|i| format!("worker-{i}"))
            .chain((1..=s.sweepers).map(|i| format!("sweeper-{i}")))
            .collect();
        for h in &movers {
            let rate = if h.starts_with("worker") {
                worker_kills
            } else {
                sweeper_kills
            };
            kills(&mut plan, rng, h, rate);
        }
        kills(&mut plan, rng, "store", store_kills);
        for h in &movers {
            for (at, len) in times(rng, partitions, w, f.partition_len) {
                let oneway = rng.gen_bool(f.oneway_share.clamp(0.0, 1.0));
                let (a, b) = if oneway && rng.gen_bool(0.5) {
                    ("store".to_string(), h.clone())
                } else {
                    (h.clone(), "store".to_string())
                };
                plan.partition(&a, &b, at, at + len, oneway);
            }
            for (at, len) in times(rng, pauses, w, f.pause_len) {
                plan.pause(h, at, len);
            }
        }
        for (at, len) in times(rng, bursts, w, f.loss_len) {
            let rate = rng.gen_range(f.loss_rate.0..=f.loss_rate.1.max(f.loss_rate.0));
            plan.loss(at, at + len, rate);
        }
        for sc in &s.scripted {
            match sc {
                Scripted::Kill { host, at, back } => plan.kill(host, *at, *back),
                Scripted::Partition { host, from, to } => {
                    plan.partition(host, "store", *from, *to, false)
                }
                Scripted::Pause { host, at, len } => plan.pause(host, *at, *len),
                Scripted::Loss { from, to, rate } => plan.loss(*from, *to, *rate),
            }
        }
        plan.heal_ms = plan.heal_ms.max(w);
        plan.actions.sort_by_key(|a| a.0);
        plan
    }

    fn heal_at(&mut self, t: u64) {
        self.heal_ms = self.heal_ms.max(t);
    }

    fn kill(&mut self, host: &str, at: u64, back: u64) {
        self.actions.push((at, Action::Kill(host.into())));
        self.actions.push((back, Action::Restart(host.into())));
        self.faults.push(ScriptedFault::Crash {
            host: host.into(),
            at: Dur::ms(at),
        });
        self.faults.push(ScriptedFault::Restart {
            host: host.into(),
            at: Dur::ms(back),
        });
        self.heal_at(back);
    }

    fn partition(&mut self, a: &str, b: &str, from: u64, to: u64, oneway: bool) {
        self.actions.push((from, Action::Clog(a.into(), b.into())));
        self.actions.push((to, Action::Unclog(a.into(), b.into())));
        if !oneway {
            self.actions.push((from, Action::Clog(b.into(), a.into())));
            self.actions.push((to, Action::Unclog(b.into(), a.into())));
        }
        self.faults.push(ScriptedFault::Partition {
            a: a.into(),
            b: b.into(),
            from: Dur::ms(from),
            to: Dur::ms(to),
            oneway,
        });
        self.heal_at(to);
    }

    fn pause(&mut self, host: &str, at: u64, len: u64) {
        self.actions.push((at, Action::Pause(host.into())));
        self.actions.push((at + len, Action::Resume(host.into())));
        self.faults.push(ScriptedFault::Pause {
            host: host.into(),
            at: Dur::ms(at),
            len: Dur::ms(len),
        });
        self.heal_at(at + len);
    }

    fn loss(&mut self, from: u64, to: u64, rate: f64) {
        self.actions.push((from, Action::Loss(rate)));
        self.actions.push((to, Action::Loss(0.0)));
        self.loss = self.loss.max(rate);
        self.heal_at(to);
    }
}
