//! Carries out the schedule on the real processes and the real database,
//! and records every fault as injected, with the host's wall time (the
//! store's clock on this host), so the checks can match crash reports to
//! faults.

mod aim;
mod listener;
mod pg_restart;

pub use aim::{Aim, AIM_WAIT};
pub use listener::LISTENER_BACK_WAIT;
pub use pg_restart::PG_CTL_TIMEOUT_SECS;

use crate::config::{FaultKind, PgControl};
use crate::error::ChaosError;
use crate::fleet::{wall_ms, Fleet};
use crate::schedule::{Fault, Planned};
use crate::store::RunStore;
use listener::{Verdict, Watch};
use pg_restart::pg_restart;
use std::path::PathBuf;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often healing looks at the LISTEN connections still being watched.
const WATCH_POLL: Duration = Duration::from_millis(50);

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
    /// An aimed fault ([`FaultKind::is_aimed`]): whether it struck the
    /// moment it waited for (for `kill-listener`: a LISTEN backend was
    /// found and terminated).
    pub landed: Option<bool>,
    /// `kill-listener`: how long the LISTEN connection took to come back.
    pub recovered: Option<Duration>,
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
    watches: Vec<Watch>,
    /// Every fault injected so far.
    pub injected: Vec<Injected>,
    /// What the nemesis saw go wrong in the processes (a LISTEN connection
    /// that never came back).
    pub problems: Vec<String>,
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
            watches: Vec::new(),
            injected: Vec::new(),
            problems: Vec::new(),
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
        self.watch_listeners(fleet, store).await;
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

    /// Looks once at every terminated LISTEN connection still watched.
    pub async fn watch_listeners(&mut self, fleet: &Fleet, store: &RunStore) {
        let mut i = 0;
        while i < self.watches.len() {
            let Some(verdict) = self.watches[i].poll(fleet, store).await else {
                i += 1;
                continue;
            };
            let w = self.watches.swap_remove(i);
            let f = &mut self.injected[w.idx];
            match verdict {
                Verdict::Back(after) => {
                    f.recovered = Some(after);
                    f.note += &format!("; back after {} ms", after.as_millis());
                }
                Verdict::Gone => f.note += "; process gone before it came back",
                Verdict::Missing => {
                    f.note += "; never came back";
                    self.problems.push(w.missing());
                }
            }
        }
    }

    /// Waits, bounded by [`LISTENER_BACK_WAIT`], until every terminated
    /// LISTEN connection has come back (or its process is gone).
    pub async fn finish_watches(&mut self, fleet: &Fleet, store: &RunStore) {
        let deadline = Instant::now() + LISTENER_BACK_WAIT + WATCH_POLL;
        // Bounded by the deadline (each watch ends by LISTENER_BACK_WAIT).
        while !self.watches.is_empty() && Instant::now() < deadline {
            self.watch_listeners(fleet, store).await;
            tokio::time::sleep(WATCH_POLL).await;
        }
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
            landed: None,
            recovered: None,
        };
        match fault {
            Fault::Kill { slot, down_for }
            | Fault::KillWriter { slot, down_for }
            | Fault::KillMerged { slot, down_for }
            | Fault::KillWriterQueued { slot, down_for } => {
                let aim = match fault.kind() {
                    FaultKind::KillWriter => Some(Aim::WriteLock),
                    FaultKind::KillMerged => Some(Aim::MergedBatches),
                    FaultKind::KillWriterQueued => Some(Aim::WriteLockWithWaiters),
                    _ => None,
                };
                let board = fleet.current(slot).map(|inc| inc.inflight.clone());
                if let (Some(aim), Some(pid), Some(board)) = (aim, pid, board) {
                    let seen =
                        aim::await_moment(aim, pid, &board, self.sqlite_shm.as_deref()).await;
                    record.landed = Some(seen.landed);
                    record.note = seen.note;
                    record.from_ms = wall_ms();
                }
                fleet.kill(slot)?;
                self.restarts.push((Instant::now() + down_for, slot));
            }
            Fault::KillListener { slot } => {
                let (Some(app), Some(pid)) = (&worker, pid) else {
                    record.note = "identity not yet written; nothing terminated".into();
                    record.landed = Some(false);
                    record.to_ms = record.from_ms;
                    self.injected.push(record);
                    return Ok(());
                };
                match store.terminate_listener(app).await {
                    Ok(pids) if !pids.is_empty() => {
                        record.note = format!("LISTEN backend {pids:?} terminated");
                        record.landed = Some(true);
                        self.watches.push(Watch::new(
                            self.injected.len(),
                            slot,
                            pid,
                            app.clone(),
                            pids,
                        ));
                    }
                    Ok(_) => {
                        record.note = "no LISTEN backend found".into();
                        record.landed = Some(false);
                    }
                    Err(e) => {
                        record.note = format!("pg_terminate_backend failed: {e}");
                        record.landed = Some(false);
                    }
                }
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
}
