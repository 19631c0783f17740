//! The report of a run: jobs, faults by kind, crash reports, side effects,
//! the audit log, throughput under faults, violations, and the command
//! that reruns the same seed.

use crate::checks::CheckStats;
use crate::config::{self, ChaosConfig, StoreTarget};
use crate::job::PlantedBug;
use crate::nemesis::Injected;
use crate::shape::{queue_arg, QueueLimit, Shape};
use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// The figures of one run.
#[derive(Clone, Debug)]
pub struct Report {
    /// `postgres` or `sqlite`.
    pub store: &'static str,
    /// The seed.
    pub seed: u64,
    /// Worker processes.
    pub workers: u32,
    /// The shape of each process.
    pub shape: Shape,
    /// `Worker`s per process.
    pub workers_per_process: u32,
    /// The queues each Worker serves, with their limits.
    pub queues: Vec<QueueLimit>,
    /// Whether the PostgreSQL store is wrapped in `Coalescing`.
    pub coalescing: bool,
    /// The period of the PostgreSQL store's own vacuums, if it runs them.
    pub vacuum_every_ms: Option<u64>,
    /// Jobs per `Worker` at once.
    pub concurrency: u32,
    /// The lease.
    pub lease_ms: u64,
    /// The planted bug, if any.
    pub planted_bug: Option<PlantedBug>,
    /// Jobs drawn.
    pub jobs: u64,
    /// Jobs enqueued.
    pub enqueued: u64,
    /// Worker processes started (restarts included).
    pub processes: u64,
    /// Faults in the schedule.
    pub planned_faults: u64,
    /// The schedule's hash (the same for the same seed and shape).
    pub schedule_hash: u64,
    /// Faults as injected.
    pub faults: Vec<Injected>,
    /// The fault window's length.
    pub window: Duration,
    /// Jobs that succeeded inside the fault window.
    pub succeeded_in_window: u64,
    /// Time from the end of the faults until every job was terminal.
    pub healed: Option<Duration>,
    /// The whole run.
    pub wall: Duration,
    /// The checks' counts.
    pub stats: CheckStats,
    /// Violations found.
    pub violations: u64,
    /// The command that reruns this seed.
    pub rerun: String,
    /// Where logs and the audit export were kept.
    pub kept_dir: Option<PathBuf>,
}

impl Report {
    /// Injected faults per kind, in kind order.
    pub fn faults_by_kind(&self) -> BTreeMap<&'static str, u64> {
        let mut m = BTreeMap::new();
        for f in &self.faults {
            *m.entry(f.kind.as_str()).or_insert(0) += 1;
        }
        m
    }

    /// Per aimed kind: (faults, landed as aimed, LISTEN connections back,
    /// slowest return).
    pub fn aimed(&self) -> BTreeMap<&'static str, (u64, u64, u64, Duration)> {
        let mut m = BTreeMap::new();
        for f in self.faults.iter().filter(|f| f.kind.is_aimed()) {
            let e = m
                .entry(f.kind.as_str())
                .or_insert((0, 0, 0, Duration::ZERO));
            e.0 += 1;
            e.1 += u64::from(f.landed == Some(true));
            if let Some(back) = f.recovered {
                e.2 += 1;
                e.3 = e.3.max(back);
            }
        }
        m
    }

    /// Jobs per second that succeeded inside the fault window.
    pub fn jobs_per_sec_under_faults(&self) -> f64 {
        self.succeeded_in_window as f64 / self.window.as_secs_f64().max(0.001)
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.stats;
        writeln!(
            f,
            "leasehold chaos on {}: seed {}, {} shape: {} worker processes x {} Workers x {} jobs, \
             lease {}ms{}",
            self.store,
            self.seed,
            self.shape.as_str(),
            self.workers,
            self.workers_per_process,
            self.concurrency,
            self.lease_ms,
            self.planted_bug
                .map_or(String::new(), |b| format!(", PLANTED BUG {}", b.as_str()))
        )?;
        let queues: Vec<String> = self.queues.iter().map(queue_arg).collect();
        writeln!(
            f,
            "  shape:         queues {} (NAME:LIMIT per Worker){}{}",
            queues.join(", "),
            if self.coalescing {
                "; one store per process, Coalescing, LISTEN/NOTIFY"
            } else if self.store == "postgres" {
                "; one store per process, LISTEN/NOTIFY"
            } else {
                "; one store per process"
            },
            self.vacuum_every_ms.map_or(String::new(), |ms| format!(
                ", its own vacuums every {ms} ms"
            ))
        )?;
        writeln!(
            f,
            "  jobs:          {} drawn, {} enqueued, {} succeeded with their exact result bytes",
            self.jobs, self.enqueued, s.exact_results
        )?;
        let kinds: Vec<String> = self
            .faults_by_kind()
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        writeln!(
            f,
            "  faults:        {} injected of {} planned ({}); schedule hash {:016x}",
            self.faults.len(),
            self.planned_faults,
            if kinds.is_empty() {
                "none".to_string()
            } else {
                kinds.join(", ")
            },
            self.schedule_hash
        )?;
        let aimed: Vec<String> = self
            .aimed()
            .iter()
            .map(|(k, (n, landed, back, slowest))| {
                let mut t = format!("{k} {landed} of {n} landed");
                if *k == "kill-listener" {
                    t += &format!(" ({back} came back, slowest {} ms)", slowest.as_millis());
                }
                t
            })
            .collect();
        if !aimed.is_empty() {
            writeln!(f, "  aimed faults:  {}", aimed.join(", "))?;
        }
        writeln!(
            f,
            "  processes:     {} started (fresh identity each)",
            self.processes
        )?;
        writeln!(
            f,
            "  crash reports: {} sweep reclaims, {} matched to an injected fault \
             ({} of them only by the aftermath of a pause or restart)",
            s.crash_reports, s.crash_reports_matched, s.crash_reports_by_aftermath
        )?;
        writeln!(
            f,
            "  attribution:   {} Workers in {} processes ran jobs (up to {} in one process), \
             each only leases granted to it",
            s.workers_with_effects, s.processes_with_effects, s.most_workers_in_a_process
        )?;
        writeln!(
            f,
            "  side effects:  {} recorded by {} leases{}",
            s.effects,
            s.leases_with_effects,
            if s.torn_tails > 0 {
                format!(", {} logs torn by a kill", s.torn_tails)
            } else {
                String::new()
            }
        )?;
        writeln!(
            f,
            "  audit log:     {} events through the offline checker (I1, I2, I4, I7, I8)",
            s.audit_events
        )?;
        writeln!(
            f,
            "  throughput:    {:.1} jobs/s under faults ({} jobs in a {:.1}s fault window)",
            self.jobs_per_sec_under_faults(),
            self.succeeded_in_window,
            self.window.as_secs_f64()
        )?;
        writeln!(
            f,
            "  healing:       {}",
            self.healed.map_or("did not finish".into(), |d| format!(
                "every job terminal {:.1}s after the faults ended",
                d.as_secs_f64()
            ))
        )?;
        writeln!(f, "  wall time:     {:.1}s", self.wall.as_secs_f64())?;
        if let Some(dir) = &self.kept_dir {
            writeln!(
                f,
                "  evidence:      {} (audit.jsonl: `leasehold check {}`)",
                dir.display(),
                dir.join("audit.jsonl").display()
            )?;
        }
        if self.violations == 0 {
            writeln!(f, "PASS: no violations")?;
        } else {
            writeln!(f, "FAIL: {} violations", self.violations)?;
        }
        writeln!(
            f,
            "rerun (the same fault schedule; the interleavings differ):"
        )?;
        write!(f, "  {}", self.rerun)
    }
}

/// The command that reruns `cfg`'s seed with the same shape.
pub fn rerun_command(program: &str, cfg: &ChaosConfig) -> String {
    let mut c = format!("{program} --store {} --seed {}", cfg.store.name(), cfg.seed);
    if let StoreTarget::Postgres { .. } = cfg.store {
        c = format!("DATABASE_URL=… {c}");
    }
    let mut flag = |name: &str, value: String, default: String| {
        if value != default {
            c += &format!(" --{name} {value}");
        }
    };
    flag(
        "jobs",
        cfg.jobs.to_string(),
        config::DEFAULT_JOBS.to_string(),
    );
    flag(
        "duration",
        secs(cfg.duration),
        secs(config::DEFAULT_DURATION),
    );
    flag(
        "workers",
        cfg.workers.to_string(),
        config::DEFAULT_WORKERS.to_string(),
    );
    flag(
        "shape",
        cfg.shape.as_str().to_string(),
        crate::shape::DEFAULT_SHAPE.as_str().to_string(),
    );
    flag(
        "workers-per-process",
        cfg.workers_per_process.to_string(),
        cfg.shape.default_workers_per_process().to_string(),
    );
    flag(
        "concurrency",
        cfg.concurrency.to_string(),
        cfg.shape.default_concurrency().to_string(),
    );
    let work = |(min, max): (u64, u64)| format!("{min}-{max}");
    flag("work-ms", work(cfg.work_ms), work(cfg.shape.work_ms()));
    flag(
        "lease-ms",
        cfg.lease.0.to_string(),
        config::DEFAULT_LEASE.0.to_string(),
    );
    flag(
        "renew-ms",
        cfg.renew.0.to_string(),
        config::DEFAULT_RENEW.0.to_string(),
    );
    flag(
        "sweep-ms",
        cfg.sweep.0.to_string(),
        config::DEFAULT_SWEEP.0.to_string(),
    );
    flag(
        "fault-every",
        format!("{}ms", cfg.fault_every.as_millis()),
        format!("{}ms", config::DEFAULT_FAULT_EVERY.as_millis()),
    );
    let kinds: Vec<&str> = cfg.faults.iter().map(|k| k.as_str()).collect();
    let defaults: Vec<&str> = config::default_faults(&cfg.store, cfg.workers_per_process)
        .iter()
        .map(|k| k.as_str())
        .collect();
    flag("faults", kinds.join(","), defaults.join(","));
    if let Some(bug) = cfg.planted_bug {
        c += &format!(" --planted-bug {}", bug.as_str());
    }
    c
}

fn secs(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}
