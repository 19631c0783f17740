//! Carries out the schedule on the real processes and the real database,
//! and records every fault as injected, with the host's wall time (the
//! store's clock on this host), so the checks can match crash reports to
//! faults.

use crate::config::{FaultKind, PgControl};
use crate::error::ChaosError;
use crate::fleet::{wall_ms, Fleet};
use crate::schedule::{Fault, Planned};
use crate::signals::holds_wal_write_lock;
use crate::store::RunStore;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a kill-writer fault waits for its victim to hold the write lock.
pub const KILL_WRITER_WAIT: Duration = Duration::from_millis(500);
/// `pg_ctl -t`: longest wait for the restarted server, in seconds.
pub const PG_CTL_TIMEOUT_SECS: u32 = 60;

/// One fault as it was injected.
#[derive(Clone, Debug)]
pub struct Injected {
    /// Its kind.
    pub kind: FaultKind,
    /// The schedule's line for it.
    pub planned: String,
    /// The worker slot, if any.
    pub slot: Option<u32>,
    /// The process hit, if any.
    pub pid: Option<u32>,
    /// Its worker identity, if known.
    pub worker: Option<String>,
    /// Wall time (ms) it began.
    pub from_ms: i64,
    /// Wall time (ms) it ended (resume, restart done); the start for instant faults.
    pub to_ms: i64,
    /// What happened (for example "mid-transaction").
    pub note: String,
}

/// The nemesis of one run.
pub struct Nemesis {
    plan: Vec<Planned>,
    next: usize,
    resumes: Vec<(Instant, u32, usize)>,
    restarts: Vec<(Instant, u32)>,
    pg_restart: Option<(usize, JoinHandle<Result<(), String>>)>,
    sqlite_shm: Option<PathBuf>,
    pg: Option<PgControl>,
    /// Every fault injected so far.
    pub injected: Vec<Injected>,
}

impl Nemesis {
    /// A nemesis for `plan`; `sqlite_db` names the SQLite file (for the
    /// kill-writer fault), `pg` the server control (for the restart).
    pub fn new(plan: Vec<Planned>, sqlite_db: Option<PathBuf>, pg: Option<PgControl>) -> Self {
        Nemesis {
            plan,
            next: 0,
            resumes: Vec::new(),
            restarts: Vec::new(),
            pg_restart: None,
            sqlite_shm: sqlite_db.map(|db| {
                let mut s = db.into_os_string();
                s.push("-shm");
                PathBuf::from(s)
            }),
            pg,
            injected: Vec::new(),
        }
    }

    /// Whether a PostgreSQL restart is under way.
    pub fn restarting(&self) -> bool {
        self.pg_restart.is_some()
    }

    /// Injects every fault due at `elapsed` into the window, resumes and
    /// restarts what is due, and collects a finished server restart.
    pub async fn tick(
        &mut self,
        elapsed: Duration,
        fleet: &mut Fleet,
        store: &RunStore,
    ) -> Result<(), ChaosError> {
        self.settle(fleet, false)?;
        // Bounded: each pass consumes one planned fault.
        while let Some(p) = self.plan.get(self.next).copied() {
            if p.at > elapsed {
                break;
            }
            self.next += 1;
            self.inject(p.fault, fleet, store).await?;
        }
        Ok(())
    }

    /// Ends every fault: resumes, restarts, and waits for a server restart.
    pub fn heal(&mut self, fleet: &mut Fleet) -> Result<(), ChaosError> {
        self.next = self.plan.len();
        self.settle(fleet, true)?;
        fleet.heal()
    }

    fn settle(&mut self, fleet: &mut Fleet, all: bool) -> Result<(), ChaosError> {
        let now = Instant::now();
        let mut i = 0;
        while i < self.resumes.len() {
            if all || self.resumes[i].0 <= now {
                let (_, slot, idx) = self.resumes.swap_remove(i);
                fleet.resume(slot)?;
                self.injected[idx].to_ms = wall_ms();
            } else {
                i += 1;
            }
        }
        let mut i = 0;
        while i < self.restarts.len() {
            if all || self.restarts[i].0 <= now {
                let (_, slot) = self.restarts.swap_remove(i);
                fleet.restart(slot)?;
            } else {
                i += 1;
            }
        }
        let done = self
            .pg_restart
            .as_ref()
            .is_some_and(|(_, h)| all || h.is_finished());
        if done {
            if let Some((idx, handle)) = self.pg_restart.take() {
                let result = handle
                    .join()
                    .unwrap_or_else(|_| Err("pg_ctl thread panicked".into()));
                self.injected[idx].to_ms = wall_ms();
                result.map_err(ChaosError::Nemesis)?;
            }
        }
        Ok(())
    }

    async fn inject(
        &mut self,
        fault: Fault,
        fleet: &mut Fleet,
        store: &RunStore,
    ) -> Result<(), ChaosError> {
        let planned = fault.to_string();
        let target = fault.slot().and_then(|s| fleet.target(s));
        if fault.slot().is_some() && target.is_none() {
            // The slot's process exited on its own (reported separately).
            return Ok(());
        }
        let (pid, worker) = match &target {
            Some((pid, worker)) => (Some(*pid), worker.clone()),
            None => (None, None),
        };
        let mut record = Injected {
            kind: fault.kind(),
            planned,
            slot: fault.slot(),
            pid,
            worker: worker.clone(),
            from_ms: wall_ms(),
            to_ms: 0,
            note: String::new(),
        };
        match fault {
            Fault::Kill { slot, down_for } => {
                fleet.kill(slot)?;
                self.restarts.push((Instant::now() + down_for, slot));
            }
            Fault::KillWriter { slot, down_for } => {
                let pid = pid.unwrap_or(0);
                let mid_tx = self.await_write_lock(pid).await;
                record.from_ms = wall_ms();
                fleet.kill(slot)?;
                record.note = if mid_tx {
                    "mid-transaction".into()
                } else {
                    format!("no write transaction seen within {KILL_WRITER_WAIT:?}")
                };
                self.restarts.push((Instant::now() + down_for, slot));
            }
            Fault::Pause { slot, len } => {
                if fleet.pause(slot)?.is_some() {
                    self.resumes
                        .push((Instant::now() + len, slot, self.injected.len()));
                }
            }
            Fault::TerminateBackend { .. } => {
                record.note = match &worker {
                    Some(app) => match store.terminate_backends(app).await {
                        Ok(n) => format!("{n} backends terminated"),
                        Err(e) => format!("pg_terminate_backend failed: {e}"),
                    },
                    None => "identity not yet written; nothing terminated".into(),
                };
            }
            Fault::Restart => {
                let Some(pg) = self.pg.clone() else {
                    return Err(ChaosError::Nemesis(
                        "restart planned without server control".into(),
                    ));
                };
                if self.pg_restart.is_some() {
                    return Ok(());
                }
                let idx = self.injected.len();
                self.pg_restart = Some((idx, std::thread::spawn(move || pg_restart(&pg))));
            }
        }
        record.to_ms = record.from_ms;
        self.injected.push(record);
        Ok(())
    }

    /// Polls `/proc/locks` until `pid` holds SQLite's write lock, at most
    /// [`KILL_WRITER_WAIT`]; answers whether it did.
    async fn await_write_lock(&self, pid: u32) -> bool {
        let Some(shm) = &self.sqlite_shm else {
            return false;
        };
        let deadline = Instant::now() + KILL_WRITER_WAIT;
        // Bounded by the deadline.
        while Instant::now() < deadline {
            let inode = std::fs::metadata(shm).map(|m| m.ino());
            if let Ok(inode) = inode {
                if holds_wal_write_lock(pid, inode).unwrap_or(false) {
                    return true;
                }
            }
            tokio::time::sleep(Duration::from_micros(500)).await;
        }
        false
    }
}

/// `pg_ctl restart -m immediate`: the server stops without a checkpoint
/// (as in a crash) and recovers from its WAL on start.
fn pg_restart(pg: &PgControl) -> Result<(), String> {
    let mut args: Vec<String> = vec![
        "-D".into(),
        pg.data.display().to_string(),
        "-m".into(),
        "immediate".into(),
        "-w".into(),
        "-t".into(),
        PG_CTL_TIMEOUT_SECS.to_string(),
    ];
    if let Some(log) = &pg.log {
        args.push("-l".into());
        args.push(log.display().to_string());
    }
    args.push("restart".into());
    let mut cmd = match &pg.user {
        Some(user) => {
            let mut c = Command::new("runuser");
            c.arg("-u").arg(user).arg("--").arg(&pg.pg_ctl);
            c
        }
        None => Command::new(&pg.pg_ctl),
    };
    // Without `-l` the server inherits pg_ctl's output: never pipe it then,
    // or reading would wait for the server to exit.
    let captured = if pg.log.is_some() {
        Stdio::piped
    } else {
        Stdio::null
    };
    let out = cmd
        .args(&args)
        .stdin(Stdio::null())
        .stdout(captured())
        .stderr(captured())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", pg.pg_ctl.display()))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "pg_ctl restart failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout).trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}
