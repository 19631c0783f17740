//! What one madsim run simulates: the world, the protocol settings, the
//! workload and the fault mix, and the same settings as a
//! [`SimConfig`] for the checker.
//!
//! Fault rates are swarm ranges: every seed draws its own rate from each
//! range (often zero), so different seeds stress different mixes. Faults
//! happen inside `[0, window)`; after that everything heals, every killed
//! node is restarted and liveness is judged.

use leasehold_core::variants::Variant;
use leasehold_model::config::{
    Faults, Network, Protocol, Range, ScriptedFault, SimConfig, Topology, Workload,
};
use leasehold_model::duration::Dur;

/// A closed range of milliseconds.
pub type MsRange = (u64, u64);

/// The madsim faults of a scenario, as swarm ranges.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultMix {
    /// Worker node kills per worker per minute (each followed by a restart).
    pub worker_kills: (f64, f64),
    /// Sweeper node kills per sweeper per minute.
    pub sweeper_kills: (f64, f64),
    /// Store node kills per minute (what committed survives).
    pub store_kills: (f64, f64),
    /// Time from a kill to the node's restart.
    pub restart_after: MsRange,
    /// Partitions between a worker or sweeper node and the store node, per
    /// node per minute.
    pub partitions: (f64, f64),
    /// Partition length.
    pub partition_len: MsRange,
    /// Share of partitions that cut one direction only.
    pub oneway_share: f64,
    /// Node pauses (madsim's `Handle::pause`) per worker or sweeper per minute.
    pub pauses: (f64, f64),
    /// Pause length.
    pub pause_len: MsRange,
    /// Bursts of packet loss (madsim's `packet_loss_rate`) per minute.
    pub loss_bursts: (f64, f64),
    /// Length of a loss burst.
    pub loss_len: MsRange,
    /// Packet loss rate inside a burst.
    pub loss_rate: (f64, f64),
}

impl FaultMix {
    /// No faults at all.
    pub const NONE: FaultMix = FaultMix {
        worker_kills: (0.0, 0.0),
        sweeper_kills: (0.0, 0.0),
        store_kills: (0.0, 0.0),
        restart_after: (1_000, 10_000),
        partitions: (0.0, 0.0),
        partition_len: (1_000, 15_000),
        oneway_share: 0.0,
        pauses: (0.0, 0.0),
        pause_len: (1_000, 8_000),
        loss_bursts: (0.0, 0.0),
        loss_len: (1_000, 8_000),
        loss_rate: (0.0, 0.0),
    };
}

/// A scripted fault at a fixed time (on top of the swarm draw).
#[derive(Clone, Debug, PartialEq)]
pub enum Scripted {
    /// The host's node is killed at `at` and restarted at `back` (ms).
    Kill {
        /// Host.
        host: String,
        /// Kill time, ms.
        at: u64,
        /// Restart time, ms.
        back: u64,
    },
    /// Both directions between `host` and the store are cut during `[from, to)`.
    Partition {
        /// Worker or sweeper host.
        host: String,
        /// Start, ms.
        from: u64,
        /// End, ms.
        to: u64,
    },
    /// The host's node is paused for `len` ms from `at`.
    Pause {
        /// Host.
        host: String,
        /// Start, ms.
        at: u64,
        /// Length, ms.
        len: u64,
    },
    /// Packet loss `rate` on every link during `[from, to)`.
    Loss {
        /// Start, ms.
        from: u64,
        /// End, ms.
        to: u64,
        /// Loss probability.
        rate: f64,
    },
}

/// One madsim scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// Name (shown in reports and in the history's `run` record).
    pub name: String,
    /// A catalogued buggy variant, if any.
    pub variant: Option<Variant>,
    /// Worker nodes (`worker-1` …).
    pub workers: u32,
    /// Workers on each worker node (`worker-1.1`, `worker-1.2` … when
    /// above 1), sharing the node's store client, whose batches merge into
    /// one message each, and its wake-up listener.
    pub workers_per_node: u32,
    /// Sweeper nodes (`sweeper-1` …).
    pub sweepers: u32,
    /// Protocol settings (lease, renew, sweep, …) as the simulator's
    /// scenarios spell them.
    pub protocol: Protocol,
    /// Number of jobs the client enqueues.
    pub jobs: u32,
    /// Enqueues are spread over `[0, enqueue_over]` ms.
    pub enqueue_over: u64,
    /// Handler run time per attempt.
    pub run_time: MsRange,
    /// Probability an attempt fails.
    pub fail_rate: f64,
    /// Share of failures that are not retryable.
    pub permanent_share: f64,
    /// Probability an attempt hangs until stopped (inside the fault window).
    pub hang_rate: f64,
    /// Probability the client cancels a job.
    pub cancel_rate: f64,
    /// One-way message latency (madsim's `send_latency`).
    pub latency: MsRange,
    /// Faults happen before this time (ms).
    pub window: u64,
    /// Longest simulated time of a run (ms); a run ends earlier once every
    /// job has been terminal for a while after healing.
    pub duration: u64,
    /// The swarm fault mix.
    pub faults: FaultMix,
    /// Scripted faults.
    pub scripted: Vec<Scripted>,
}

impl Scenario {
    /// Every fault madsim offers, drawn per seed: worker, sweeper and store
    /// kills and restarts, partitions (both ways and one way), pauses,
    /// packet-loss bursts, latency, on three worker nodes of two workers
    /// each (merged batches, lost wake-ups). The correct core must pass
    /// every seed.
    pub fn swarm() -> Scenario {
        Scenario {
            name: "madsim-swarm".into(),
            variant: None,
            workers: 3,
            workers_per_node: 2,
            sweepers: 1,
            protocol: Protocol {
                lease: Dur::secs(5),
                renew_interval: Dur::ms(1_500),
                sweep_interval: Dur::secs(1),
                request_timeout: Dur::secs(1),
                poll_interval: Dur::ms(300),
                backoff_base: Dur::ms(200),
                backoff_cap: Dur::secs(3),
                ..Protocol::default()
            },
            jobs: 24,
            enqueue_over: 15_000,
            run_time: (200, 4_000),
            fail_rate: 0.1,
            permanent_share: 0.2,
            hang_rate: 0.03,
            cancel_rate: 0.05,
            latency: (1, 20),
            window: 30_000,
            duration: 180_000,
            faults: FaultMix {
                worker_kills: (0.0, 2.0),
                sweeper_kills: (0.0, 1.0),
                store_kills: (0.0, 1.0),
                restart_after: (500, 8_000),
                partitions: (0.0, 3.0),
                partition_len: (500, 12_000),
                oneway_share: 0.3,
                pauses: (0.0, 2.0),
                pause_len: (500, 8_000),
                loss_bursts: (0.0, 3.0),
                loss_len: (500, 6_000),
                loss_rate: (0.02, 0.3),
            },
            scripted: Vec::new(),
        }
    }

    /// A quiet world for a catalogued bug, in the shape of its catalogue
    /// scenario (`scenarios/catalogue/`).
    fn catalogue(name: &str, variant: Variant) -> Scenario {
        Scenario {
            name: format!("madsim-{name}"),
            variant: Some(variant),
            workers: 4,
            workers_per_node: 1,
            sweepers: 1,
            protocol: Protocol {
                lease: Dur::secs(5),
                renew_interval: Dur::ms(1_500),
                ..Protocol::default()
            },
            jobs: 20,
            enqueue_over: 10_000,
            run_time: (2_000, 20_000),
            fail_rate: 0.0,
            permanent_share: 0.0,
            hang_rate: 0.0,
            cancel_rate: 0.0,
            latency: (1, 10),
            window: 60_000,
            duration: 180_000,
            faults: FaultMix::NONE,
            scripted: Vec::new(),
        }
    }

    /// Bug 7 (`fixed-lock-no-heartbeat`, expected I3): a fixed lock shorter
    /// than the job and no heartbeat; no faults needed.
    pub fn fixed_lock_no_heartbeat() -> Scenario {
        Scenario::catalogue("fixed-lock-no-heartbeat", Variant::FixedLockNoHeartbeat)
    }

    /// Bug 12 (`expiry-does-not-stop-handler`, expected I3): a partitioned
    /// and a paused worker keep running handlers whose leases were reclaimed.
    pub fn expiry_does_not_stop_handler() -> Scenario {
        let mut s = Scenario::catalogue(
            "expiry-does-not-stop-handler",
            Variant::ExpiryDoesNotStopHandler,
        );
        s.run_time = (5_000, 30_000);
        s.scripted = vec![
            Scripted::Partition {
                host: "worker-1".into(),
                from: 12_000,
                to: 40_000,
            },
            Scripted::Pause {
                host: "worker-2".into(),
                at: 20_000,
                len: 12_000,
            },
        ];
        s
    }

    /// Bug 5 (`heartbeat-stops-on-error`, expected I5): madsim's packet
    /// loss makes one renew fail, the heartbeat stops, and a live worker's
    /// lease is reclaimed.
    pub fn heartbeat_stops_on_error() -> Scenario {
        let mut s = Scenario::catalogue("heartbeat-stops-on-error", Variant::HeartbeatStopsOnError);
        s.run_time = (5_000, 30_000);
        s.faults.loss_bursts = (1.0, 3.0);
        s.faults.loss_len = (500, 2_000);
        s.faults.loss_rate = (0.05, 0.2);
        s
    }

    /// Bug 11 (`heartbeat-too-close`, expected I5): a heartbeat nearly as
    /// long as the lease loses it under madsim's latency.
    pub fn heartbeat_too_close() -> Scenario {
        let mut s = Scenario::catalogue("heartbeat-too-close", Variant::HeartbeatTooClose);
        s.protocol.renew_interval = Dur::ms(4_900);
        s.protocol.sweep_interval = Dur::ms(500);
        s.latency = (20, 300);
        s.run_time = (6_000, 30_000);
        s
    }

    /// Bug 8 (`claim-without-cas`, expected I1): claims from a stale read
    /// grant one lease twice.
    pub fn claim_without_cas() -> Scenario {
        let mut s = Scenario::catalogue("claim-without-cas", Variant::ClaimWithoutCas);
        s.workers = 8;
        s.protocol.poll_interval = Dur::ms(200);
        s.jobs = 40;
        s.enqueue_over = 5_000;
        s.run_time = (200, 3_000);
        s.duration = 120_000;
        s
    }

    /// Bug 9 (`restart-reuses-identity`, expected I6): a worker killed and
    /// restarted by madsim comes back under its old name; the store counts
    /// its heartbeats as liveness for the dead incarnation's leases too, so
    /// those jobs are never reclaimed.
    pub fn restart_reuses_identity() -> Scenario {
        let mut s = Scenario::catalogue("restart-reuses-identity", Variant::RestartReusesIdentity);
        s.workers = 1;
        s.protocol.lease = Dur::secs(30);
        s.protocol.renew_interval = Dur::secs(10);
        s.protocol.concurrency = 4;
        s.jobs = 80;
        s.enqueue_over = 240_000;
        s.run_time = (5_000, 15_000);
        s.duration = 240_000;
        s.scripted = vec![
            Scripted::Kill {
                host: "worker-1".into(),
                at: 20_000,
                back: 22_000,
            },
            Scripted::Kill {
                host: "worker-1".into(),
                at: 50_000,
                back: 52_000,
            },
        ];
        s
    }

    /// Bug 16 (`merged-answers-misrouted`, expected I1): the production
    /// merger of a worker node hands one worker the claim answers of
    /// another worker of the node, in the shape of its catalogue scenario:
    /// six workers share each node's store client, over a network slow
    /// enough that a merged batch is still out when the next claims come.
    pub fn merged_answers_misrouted() -> Scenario {
        let mut s =
            Scenario::catalogue("merged-answers-misrouted", Variant::MergedAnswersMisrouted);
        s.workers = 2;
        s.workers_per_node = 6;
        s.jobs = 60;
        s.run_time = (500, 3_000);
        s.latency = (5, 40);
        s.window = 30_000;
        s.duration = 120_000;
        s
    }

    /// Bug 18 (`waits-only-for-wake-ups`, expected I6): idle workers wait
    /// only for wake-ups and never poll. Both worker nodes are cut off from
    /// the store while the client enqueues, so the wake-ups of those
    /// enqueues are lost in madsim's network and the jobs sit unclaimed
    /// after the partitions heal.
    pub fn waits_only_for_wake_ups() -> Scenario {
        let mut s = Scenario::catalogue("waits-only-for-wake-ups", Variant::WaitsOnlyForWakeUps);
        s.workers = 2;
        s.workers_per_node = 2;
        s.jobs = 30;
        s.enqueue_over = 40_000;
        s.run_time = (100, 1_000);
        s.scripted = (1..=2)
            .map(|i| Scripted::Partition {
                host: format!("worker-{i}"),
                from: 0,
                to: 50_000,
            })
            .collect();
        s
    }

    /// [`Scenario::waits_only_for_wake_ups`] without the partitions: every
    /// wake-up arrives, so workers that never poll still finish every job,
    /// woken only by the store node's messages.
    pub fn wake_ups_alone_drive_the_workers() -> Scenario {
        let mut s = Scenario::waits_only_for_wake_ups();
        s.name = "madsim-wake-ups-alone-drive-the-workers".into();
        s.scripted.clear();
        s
    }

    /// Host names: the store, the client, workers, sweepers.
    pub fn hosts(&self) -> Vec<String> {
        let mut v = vec!["store".to_string(), "client".to_string()];
        v.extend((1..=self.workers).map(|i| format!("worker-{i}")));
        v.extend((1..=self.sweepers).map(|i| format!("sweeper-{i}")));
        v
    }

    /// The same world as a [`SimConfig`], for the checker (and for the
    /// store's policy). Clock faults are all zero: madsim has one clock.
    pub fn sim_config(&self) -> SimConfig {
        let ms = |(lo, hi): MsRange| Range::new(Dur::ms(lo), Dur::ms(hi));
        SimConfig {
            name: self.name.clone(),
            description: "a madsim run".into(),
            seeds: 1,
            duration: Dur::ms(self.duration),
            tick: Dur::ms(TICK_MS),
            variant: self.variant.map(|v| v.name().to_string()),
            // The madsim world runs no scheduler (I12 is judged in the
            // simulator): zero keeps the schedule checks out of it.
            topology: Topology {
                workers: self.workers,
                sweepers: self.sweepers,
                schedulers: 0,
                workers_per_process: self.workers_per_node.max(1),
                // Every worker on the one queue.
                ..Topology::default()
            },
            protocol: self.protocol.clone(),
            workload: Workload {
                jobs: self.jobs,
                queues: vec![QUEUE.to_string()],
                enqueue_over: Dur::ms(self.enqueue_over),
                run_time: ms(self.run_time),
                fail_rate: self.fail_rate,
                permanent_share: self.permanent_share,
                hang_rate: self.hang_rate,
                cancel_rate: self.cancel_rate,
                ..Workload::default()
            },
            network: Network {
                latency: ms(self.latency),
            },
            faults: Faults {
                window: Dur::ms(self.window),
                ..Faults::default()
            },
            events: Vec::<ScriptedFault>::new(),
            ..SimConfig::default()
        }
    }
}

/// The queue every job and worker uses.
pub const QUEUE: &str = "default";

/// The "step" the checker allows a stopped handler (I3 b) and adds to its
/// slack. madsim has no steps (time jumps from event to event); 10 ms is
/// the fixed step the simulator once had, which scenario files written for
/// it still set as their `tick`.
pub const TICK_MS: u64 = 10;
