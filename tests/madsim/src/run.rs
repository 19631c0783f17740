//! One seed: the supervisor builds the madsim nodes, applies the fault
//! plan, waits for the world to settle, collects the history and checks it
//! with the simulator's checker (`leasehold-check`).

use crate::faults::{Action, Plan};
use crate::nodes::{client_node, store_node, sweeper_node, worker_node, PlannedJob};
use crate::scenario::Scenario;
use crate::world::Shared;
use leasehold_check::checker::{check, Violation};
use leasehold_check::finding::Printed;
use leasehold_core::{JobRecord, Policy, SystemStoreClock};
use leasehold_memory::{MemoryState, MemoryStore};
use leasehold_model::config::InvariantId;
use leasehold_model::history::{History, Record};
use madsim::net::NetSim;
use madsim::rand::Rng;
use madsim::runtime::{Handle, NodeHandle};
use madsim::task::NodeId;
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long every job must have been terminal, after healing and the
/// client's last action, before a run ends early.
pub const QUIET_GRACE_MS: u64 = 10_000;
/// How often the supervisor looks for the quiet end.
const QUIET_CHECK_EVERY_MS: u64 = 1_000;
/// Longest delay between a job's enqueue and its cancel.
const CANCEL_WITHIN_MS: u64 = 30_000;

/// What one seed did.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Scenario name.
    pub scenario: String,
    /// The madsim seed.
    pub seed: u64,
    /// Invariant violations (empty = every invariant held).
    pub violations: Vec<Violation>,
    /// The full history (`leasehold-sim`'s format).
    pub history: History,
    /// Simulated time covered (ms).
    pub sim_ms: u64,
    /// The run ended early because nothing could change any more.
    pub quiet: bool,
}

impl Outcome {
    /// Whether a violation of `inv` was found.
    pub fn violates(&self, inv: InvariantId) -> bool {
        self.violations.iter().any(|v| v.invariant == inv)
    }

    /// A readable report: every violation, and how to replay the seed.
    pub fn report(&self) -> String {
        let mut out = format!(
            "scenario {} seed {}: {} violation(s) in {} ms simulated\n",
            self.scenario,
            self.seed,
            self.violations.len(),
            self.sim_ms
        );
        const SHOWN: usize = 8;
        for v in self.violations.iter().take(SHOWN) {
            // As every tool prints a finding, indented under the seed.
            let shown = Printed::new(v).with("when", format!("true {} ms", v.true_ms));
            for line in shown.to_string().lines() {
                out.push_str(&format!("  {line}\n"));
            }
            for f in &v.faults_nearby {
                out.push_str(&format!("      nearby: {f}\n"));
            }
        }
        if self.violations.len() > SHOWN {
            out.push_str(&format!("  … and {} more\n", self.violations.len() - SHOWN));
        }
        out.push_str(&format!(
            "  replay: MADSIM_TEST_SEED={} MADSIM_TEST_NUM=1 scripts/test-madsim.sh\n",
            self.seed
        ));
        out
    }
}

/// The state of one host's link with the store: which directions are cut
/// by a partition, and whether a loss burst is on.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
struct LinkState {
    to_store: bool,
    from_store: bool,
}

struct Supervisor {
    shared: Arc<Shared>,
    handle: Handle,
    net: Arc<NetSim>,
    nodes: BTreeMap<String, NodeId>,
    links: BTreeMap<String, LinkState>,
    loss: bool,
}

impl Supervisor {
    fn id(&self, host: &str) -> NodeId {
        self.nodes[host]
    }

    fn record_link(&self, host: &str) {
        let l = self.links.get(host).copied().unwrap_or_default();
        self.shared.record(Record::Link {
            t: self.shared.now(),
            a: host.to_string(),
            b: "store".to_string(),
            drop_ab: l.to_store || self.loss,
            drop_ba: l.from_store || self.loss,
            held: false,
        });
    }

    fn clog(&mut self, from: &str, to: &str, on: bool) {
        let (a, b) = (self.id(from), self.id(to));
        if on {
            self.net.clog_link(a, b);
        } else {
            self.net.unclog_link(a, b);
        }
        let host = if from == "store" { to } else { from };
        let l = self.links.entry(host.to_string()).or_default();
        if from == "store" {
            l.from_store = on;
        } else {
            l.to_store = on;
        }
        self.record_link(host);
    }

    fn apply(&mut self, action: Action) {
        let now = self.shared.now();
        match action {
            Action::Kill(h) => {
                self.shared.mark_dead(&h);
                self.shared.record(Record::HostCrashed {
                    t: now,
                    host: h.clone(),
                });
                self.handle.kill(self.id(&h));
            }
            Action::Restart(h) => self.handle.restart(self.id(&h)),
            Action::Clog(a, b) => self.clog(&a, &b, true),
            Action::Unclog(a, b) => self.clog(&a, &b, false),
            Action::Pause(h) => self.handle.pause(self.id(&h)),
            Action::Resume(h) => self.handle.resume(self.id(&h)),
            Action::Loss(rate) => {
                self.net.update_config(|c| c.packet_loss_rate = rate);
                self.loss = rate > 0.0;
                let hosts: Vec<String> = self
                    .nodes
                    .keys()
                    .filter(|h| *h != "store")
                    .cloned()
                    .collect();
                for h in hosts {
                    self.record_link(&h);
                }
            }
        }
    }
}

fn ip(a: u8, b: u8, c: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(10, a, b, c))
}

/// Runs `scenario` on the current madsim seed (call inside a madsim
/// runtime: `#[madsim::test]`, `Runtime::block_on`) and checks the history.
pub async fn simulate(scenario: Scenario) -> Outcome {
    let handle = Handle::current();
    let seed = handle.seed();
    let plan = Plan::draw(&scenario);
    let net = NetSim::current();
    let latency = Duration::from_millis(plan.latency.0)..Duration::from_millis(plan.latency.1);
    net.update_config(|c| {
        c.send_latency = latency;
        c.packet_loss_rate = 0.0;
    });

    let shared = Arc::new(Shared::new(scenario.clone(), seed, plan.heal_ms));
    let s = &scenario;
    let mut rng = madsim::rand::thread_rng();
    let jobs: Arc<Vec<PlannedJob>> = Arc::new(
        (0..s.jobs)
            .map(|index| {
                let enqueue_at = rng.gen_range(0..=s.enqueue_over);
                let cancel_at = rng
                    .gen_bool(s.cancel_rate)
                    .then(|| enqueue_at + rng.gen_range(0..=CANCEL_WITHIN_MS));
                PlannedJob {
                    index,
                    enqueue_at,
                    cancel_at,
                }
            })
            .collect(),
    );
    shared.record(Record::Run {
        scenario: s.name.clone(),
        seed,
        variant: s.variant.map(|v| v.name().to_string()),
        heal_ms: plan.heal_ms,
        duration_ms: s.duration,
        tick_ms: crate::scenario::TICK_MS,
        message_loss: plan.loss,
        answer_loss: 0.0,
        store_conflict: 0.0,
        wake_loss: 0.0,
        store_cancel: 0.0,
        // One clock for every node: no drift, no step, ever.
        timing_assumption_broken: false,
    });
    for f in &plan.faults {
        shared.record(Record::Fault {
            t: f.start().as_ms(),
            fault: f.clone(),
        });
    }

    // The durable state outlives the store node: a kill loses only what was
    // in flight. The supervisor reads it directly (no network).
    let state = Arc::new(Mutex::new(MemoryState::default()));
    let reader = MemoryStore::with_state(Policy::default(), SystemStoreClock, state.clone());

    let mut nodes: BTreeMap<String, NodeId> = BTreeMap::new();
    let mut add = |name: &str, node: NodeHandle| {
        nodes.insert(name.to_string(), node.id());
    };
    {
        let (sh, st) = (shared.clone(), state.clone());
        let n = handle
            .create_node()
            .name("store")
            .ip(ip(0, 0, 1))
            .init(move || store_node(sh.clone(), st.clone()))
            .build();
        add("store", n);
    }
    for i in 1..=s.workers {
        let sh = shared.clone();
        let n = handle
            .create_node()
            .name(format!("worker-{i}"))
            .ip(crate::wake::worker_ip(i))
            .init(move || worker_node(sh.clone(), i))
            .build();
        add(&format!("worker-{i}"), n);
    }
    for i in 1..=s.sweepers {
        let sh = shared.clone();
        let n = handle
            .create_node()
            .name(format!("sweeper-{i}"))
            .ip(ip(2, 0, i as u8))
            .init(move || sweeper_node(sh.clone(), i))
            .build();
        add(&format!("sweeper-{i}"), n);
    }
    {
        let (sh, plan) = (shared.clone(), jobs.clone());
        let n = handle
            .create_node()
            .name("client")
            .ip(ip(0, 0, 2))
            .init(move || client_node(sh.clone(), plan.clone()))
            .build();
        add("client", n);
    }

    let mut sup = Supervisor {
        shared: shared.clone(),
        handle: handle.clone(),
        net,
        nodes,
        links: BTreeMap::new(),
        loss: false,
    };
    let end = s.duration;
    for (at, action) in plan.actions {
        if at >= end {
            break;
        }
        sleep_until(&shared, at).await;
        sup.apply(action);
    }

    let all_terminal = |rows: &[JobRecord]| {
        rows.len() >= s.jobs as usize && rows.iter().all(|r| r.state.is_terminal())
    };
    let mut quiet_since: Option<u64> = None;
    let (end_ms, quiet) = loop {
        let now = shared.now();
        if now >= end {
            break (end, false);
        }
        let settled = now >= plan.heal_ms && shared.client_done() && all_terminal(&reader.rows());
        match (settled, quiet_since) {
            (false, _) => quiet_since = None,
            (true, None) => quiet_since = Some(now),
            (true, Some(since)) if now >= since + QUIET_GRACE_MS => break (now, true),
            _ => {}
        }
        sleep_until(&shared, (now + QUIET_CHECK_EVERY_MS).min(end)).await;
    };
    // Whatever the nodes do from now on is the teardown.
    shared.finish();
    let history = shared.collect(end_ms, quiet, reader.rows(), reader.events());
    let violations = check(&history, &shared.cfg);
    Outcome {
        scenario: s.name.clone(),
        seed,
        violations,
        history,
        sim_ms: end_ms,
        quiet,
    }
}

async fn sleep_until(shared: &Shared, t: u64) {
    let now = shared.now();
    if t > now {
        madsim::time::sleep(Duration::from_millis(t - now)).await;
    }
}

/// Runs `scenario` on the current madsim seed and panics with the checker's
/// report (and the seed) if any invariant is violated.
pub async fn simulate_and_check(scenario: Scenario) -> Outcome {
    let out = simulate(scenario).await;
    assert!(out.violations.is_empty(), "{}", out.report());
    out
}

/// Runs one seed in a fresh madsim runtime on its own thread (as madsim's
/// own test runner does), outside any simulation.
///
/// Not a door into the engine (`leasehold_sim::runner::run_seed` is the
/// only one): this is a second simulator, with madsim's runtime, network
/// and nodes instead of the engine's world, which shares only the model's
/// history types and the checker, run at the end as the engine runs it.
pub fn run_seed(scenario: Scenario, seed: u64) -> Outcome {
    std::thread::spawn(move || {
        let rt = madsim::runtime::Runtime::with_seed_and_config(seed, madsim::Config::default());
        rt.block_on(simulate(scenario))
    })
    .join()
    .unwrap_or_else(|e| {
        eprintln!(
            "note: run with `MADSIM_TEST_SEED={seed}` environment variable to reproduce this error"
        );
        std::panic::resume_unwind(e)
    })
}

/// How fast a catalogued bug was caught.
#[derive(Clone, Debug)]
pub struct Detection {
    /// Scenario name.
    pub scenario: String,
    /// The invariant that had to break.
    pub expect: InvariantId,
    /// The first seed tried.
    pub first_seed: u64,
    /// Seeds run, up to and including the first detection.
    pub seeds_run: u64,
    /// The first seed whose history showed the expected violation.
    pub caught_at: Option<u64>,
    /// The report of that seed.
    pub report: Option<String>,
    /// Wall-clock time taken.
    pub elapsed: Duration,
}

impl Detection {
    /// Seeds per second of wall-clock time.
    pub fn seeds_per_sec(&self) -> f64 {
        self.seeds_run as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// Runs seeds `first_seed..first_seed + max_seeds` of `scenario` until one
/// shows a violation of `expect`.
pub fn first_detection(
    scenario: fn() -> Scenario,
    expect: InvariantId,
    first_seed: u64,
    max_seeds: u64,
) -> Detection {
    // Wall-clock time of the harness, outside any simulation.
    let started = Instant::now();
    let mut d = Detection {
        scenario: scenario().name,
        expect,
        first_seed,
        seeds_run: 0,
        caught_at: None,
        report: None,
        elapsed: Duration::ZERO,
    };
    for seed in first_seed..first_seed.saturating_add(max_seeds) {
        let out = run_seed(scenario(), seed);
        d.seeds_run += 1;
        if out.violates(expect) {
            d.caught_at = Some(seed);
            d.report = Some(out.report());
            break;
        }
    }
    d.elapsed = started.elapsed();
    d
}

/// The seeds a test runs the madsim way: `MADSIM_TEST_SEED` (first seed;
/// madsim's default is the current time) and `MADSIM_TEST_NUM` (how many;
/// `default_num` when unset), through madsim's own builder so that
/// `MADSIM_TEST_CHECK_DETERMINISM`, `MADSIM_TEST_JOBS` and
/// `MADSIM_TEST_TIME_LIMIT` work as well.
pub fn builder(default_num: u64) -> madsim::runtime::Builder {
    let mut b = madsim::runtime::Builder::from_env();
    if std::env::var_os("MADSIM_TEST_NUM").is_none() && !b.check {
        b.count = default_num;
    }
    b
}
