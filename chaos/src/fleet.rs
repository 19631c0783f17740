//! The worker processes: start, kill, stop, resume, restart, reap, and stop
//! them all, gracefully (SIGTERM) at the end or forcibly (SIGKILL) when the
//! fleet is dropped on any other exit path.
//!
//! Each slot runs one process at a time; each start of a process is an
//! *incarnation* with its own side-effect log, its own in-flight board, and
//! a fresh identity for the process and each of its Workers (the process
//! makes them and writes them as the log's first line).

use crate::effects::{read_log, Line};
use crate::error::ChaosError;
use crate::signals::{send, Signal};
use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How often a stopping fleet checks whether its processes have exited.
const EXIT_POLL: Duration = Duration::from_millis(20);
/// Longest wait for a just-started worker to be ready for SIGTERM.
const STARTUP_WAIT: Duration = Duration::from_secs(10);

/// The wall clock in ms since the epoch (the store's clock on this host).
pub fn wall_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// How to start a worker process.
#[derive(Clone, Debug)]
pub struct WorkerSpec {
    /// The program.
    pub bin: PathBuf,
    /// Its arguments (the side-effect log and identity prefix are added).
    pub args: Vec<OsString>,
    /// Where logs go.
    pub dir: PathBuf,
    /// A prefix for worker identities, unique to the run.
    pub id_prefix: String,
}

/// How an incarnation ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum End {
    /// The nemesis killed it (SIGKILL) at this wall time.
    Killed(i64),
    /// It exited after the final SIGTERM with this status.
    Stopped(String),
    /// It exited (or was signalled) without being asked: a finding.
    Unexpected(String),
}

/// One start of a worker process.
#[derive(Clone, Debug)]
pub struct Incarnation {
    /// Its slot.
    pub slot: u32,
    /// Which start of the slot (0-based).
    pub n: u32,
    /// Its process id.
    pub pid: u32,
    /// Its side-effect log.
    pub log: PathBuf,
    /// Its in-flight board (which Workers have store writes out).
    pub inflight: PathBuf,
    /// Its stderr (tracing output).
    pub stderr: PathBuf,
    /// Its process identity (PostgreSQL `application_name`), once read
    /// from the log.
    pub worker: Option<String>,
    /// The identities of its Workers, once read from the log.
    pub workers: Vec<String>,
    /// Wall time it was started.
    pub started_ms: i64,
    /// How it ended, if it has.
    pub end: Option<End>,
}

#[derive(Debug, PartialEq, Eq)]
enum State {
    Up,
    Paused,
    Down,
}

#[derive(Debug)]
struct Slot {
    child: Option<Child>,
    current: usize,
    state: State,
}

/// The running worker processes.
#[derive(Debug)]
pub struct Fleet {
    spec: WorkerSpec,
    slots: Vec<Slot>,
    /// Every incarnation so far, in start order.
    pub incarnations: Vec<Incarnation>,
}

impl Fleet {
    /// Starts `n` worker processes.
    pub fn start(spec: WorkerSpec, n: u32) -> Result<Fleet, ChaosError> {
        let mut fleet = Fleet {
            spec,
            slots: Vec::new(),
            incarnations: Vec::new(),
        };
        for slot in 0..n {
            fleet.slots.push(Slot {
                child: None,
                current: 0,
                state: State::Down,
            });
            fleet.spawn(slot)?;
        }
        Ok(fleet)
    }

    fn spawn(&mut self, slot: u32) -> Result<(), ChaosError> {
        let n = self.incarnations.iter().filter(|i| i.slot == slot).count() as u32;
        let log = self.spec.dir.join(format!("effects-{slot}.{n}.jsonl"));
        let stderr_path = self.spec.dir.join(format!("worker-{slot}.{n}.log"));
        let inflight = self.spec.dir.join(format!("inflight-{slot}.{n}"));
        let stderr = std::fs::File::create(&stderr_path)
            .map_err(|e| ChaosError::io("create", &stderr_path, e))?;
        let mut cmd = Command::new(&self.spec.bin);
        cmd.args(&self.spec.args)
            .arg("--effects-log")
            .arg(&log)
            .arg("--inflight-file")
            .arg(&inflight)
            .arg("--id-prefix")
            .arg(format!("{}{slot}-", self.spec.id_prefix))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            // Its own process group: a Ctrl-C at the terminal reaches only
            // the orchestrator, which then kills the workers itself.
            .process_group(0);
        // SAFETY: prctl(2) is async-signal-safe; between fork and exec it
        // only sets this child's parent-death signal, so a worker never
        // outlives an orchestrator that died without cleaning up.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .map_err(|e| ChaosError::io("start the worker", &self.spec.bin, e))?;
        self.incarnations.push(Incarnation {
            slot,
            n,
            pid: child.id(),
            log,
            inflight,
            stderr: stderr_path,
            worker: None,
            workers: Vec::new(),
            started_ms: wall_ms(),
            end: None,
        });
        let s = &mut self.slots[slot as usize];
        s.child = Some(child);
        s.current = self.incarnations.len() - 1;
        s.state = State::Up;
        Ok(())
    }

    /// The slot's current process id and worker identity (read from its
    /// log once written), if it is running.
    pub fn target(&mut self, slot: u32) -> Option<(u32, Option<String>)> {
        let s = self.slots.get(slot as usize)?;
        if s.state == State::Down {
            return None;
        }
        let idx = s.current;
        let inc = &mut self.incarnations[idx];
        inc.learn_identity();
        Some((inc.pid, inc.worker.clone()))
    }

    /// The slot's current incarnation, if its process is running (or stopped).
    pub fn current(&self, slot: u32) -> Option<&Incarnation> {
        let s = self.slots.get(slot as usize)?;
        (s.state != State::Down).then(|| &self.incarnations[s.current])
    }

    /// Whether process `pid` is the slot's current one and is running (not
    /// stopped, not down).
    pub fn is_running(&self, slot: u32, pid: u32) -> bool {
        self.slots
            .get(slot as usize)
            .is_some_and(|s| s.state == State::Up && self.incarnations[s.current].pid == pid)
    }

    /// SIGKILLs the slot's process and reaps it; answers its pid.
    pub fn kill(&mut self, slot: u32) -> Result<Option<u32>, ChaosError> {
        let Some(s) = self.slots.get_mut(slot as usize) else {
            return Ok(None);
        };
        let Some(mut child) = s.child.take() else {
            return Ok(None);
        };
        let pid = child.id();
        let at = wall_ms();
        send(pid, Signal::Kill).map_err(|e| ChaosError::Nemesis(format!("SIGKILL {pid}: {e}")))?;
        child
            .wait()
            .map_err(|e| ChaosError::Nemesis(format!("reap {pid}: {e}")))?;
        s.state = State::Down;
        self.incarnations[s.current].end = Some(End::Killed(at));
        Ok(Some(pid))
    }

    /// SIGSTOPs the slot's process; answers its pid.
    pub fn pause(&mut self, slot: u32) -> Result<Option<u32>, ChaosError> {
        let Some(s) = self.slots.get_mut(slot as usize) else {
            return Ok(None);
        };
        let (Some(child), State::Up) = (&s.child, &s.state) else {
            return Ok(None);
        };
        let pid = child.id();
        send(pid, Signal::Stop).map_err(|e| ChaosError::Nemesis(format!("SIGSTOP {pid}: {e}")))?;
        s.state = State::Paused;
        Ok(Some(pid))
    }

    /// SIGCONTs the slot's process if it is stopped.
    pub fn resume(&mut self, slot: u32) -> Result<(), ChaosError> {
        let Some(s) = self.slots.get_mut(slot as usize) else {
            return Ok(());
        };
        if let (Some(child), State::Paused) = (&s.child, &s.state) {
            let pid = child.id();
            send(pid, Signal::Cont)
                .map_err(|e| ChaosError::Nemesis(format!("SIGCONT {pid}: {e}")))?;
            s.state = State::Up;
        }
        Ok(())
    }

    /// Starts a new process (fresh identity) in a slot that is down.
    pub fn restart(&mut self, slot: u32) -> Result<(), ChaosError> {
        match self.slots.get(slot as usize) {
            Some(s) if s.state == State::Down => self.spawn(slot),
            _ => Ok(()),
        }
    }

    /// Resumes every stopped process and restarts every slot that is down.
    pub fn heal(&mut self) -> Result<(), ChaosError> {
        for slot in 0..self.slots.len() as u32 {
            self.resume(slot)?;
            self.restart(slot)?;
        }
        Ok(())
    }

    /// Processes that exited without being asked to: marks their slots down
    /// (to be restarted) and answers each slot and what happened.
    pub fn reap(&mut self) -> Vec<(u32, String)> {
        let mut found = Vec::new();
        for (i, s) in self.slots.iter_mut().enumerate() {
            let Some(child) = s.child.as_mut() else {
                continue;
            };
            if let Ok(Some(status)) = child.try_wait() {
                let inc = &mut self.incarnations[s.current];
                let what = format!(
                    "worker {i} (pid {}, {}) exited unasked: {status}; see {}",
                    inc.pid,
                    inc.worker.as_deref().unwrap_or("identity unknown"),
                    inc.stderr.display()
                );
                inc.end = Some(End::Unexpected(status.to_string()));
                s.child = None;
                s.state = State::Down;
                found.push((i as u32, what));
            }
        }
        found
    }

    /// Graceful stop: SIGTERM every process, wait up to `timeout` for them
    /// to return their leases and exit. A process that exits non-zero or
    /// must be killed is a finding, answered here.
    pub fn stop_all(&mut self, timeout: Duration) -> Vec<String> {
        let mut problems = Vec::new();
        // A worker writes its identity once its SIGTERM handler is in place;
        // a process signalled before that would die of the signal's default
        // action, so wait (bounded) for every identity first.
        let ready_by = Instant::now() + STARTUP_WAIT;
        for s in &self.slots {
            let Some(inc) = s.child.as_ref().map(|_| &self.incarnations[s.current]) else {
                continue;
            };
            // Bounded by `ready_by`.
            while read_identity(&inc.log).is_none() && Instant::now() < ready_by {
                std::thread::sleep(EXIT_POLL);
            }
        }
        for s in self.slots.iter_mut() {
            if let Some(child) = &s.child {
                let pid = child.id();
                if s.state == State::Paused {
                    let _ = send(pid, Signal::Cont);
                }
                if let Err(e) = send(pid, Signal::Term) {
                    problems.push(format!("SIGTERM {pid}: {e}"));
                }
            }
        }
        let deadline = Instant::now() + timeout;
        for (i, s) in self.slots.iter_mut().enumerate() {
            let Some(mut child) = s.child.take() else {
                continue;
            };
            let inc = &mut self.incarnations[s.current];
            s.state = State::Down;
            // Bounded by the deadline.
            let status = loop {
                match child.try_wait() {
                    Ok(Some(status)) => break Some(status),
                    Ok(None) if Instant::now() < deadline => std::thread::sleep(EXIT_POLL),
                    _ => break None,
                }
            };
            match status {
                Some(st) if st.success() => inc.end = Some(End::Stopped(st.to_string())),
                Some(st) => {
                    problems.push(format!(
                        "worker {i} (pid {}) exited with {st} after SIGTERM; see {}",
                        inc.pid,
                        inc.stderr.display()
                    ));
                    inc.end = Some(End::Unexpected(st.to_string()));
                }
                None => {
                    let _ = child.kill();
                    let _ = child.wait();
                    problems.push(format!(
                        "worker {i} (pid {}) did not exit within {timeout:?} of SIGTERM; killed",
                        inc.pid
                    ));
                    inc.end = Some(End::Unexpected("killed after SIGTERM timeout".into()));
                }
            }
        }
        for inc in self.incarnations.iter_mut() {
            inc.learn_identity();
        }
        problems
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        // Every exit path that did not stop the fleet gracefully (an error,
        // Ctrl-C, a panic) ends here: no worker outlives the run.
        for s in self.slots.iter_mut() {
            if let Some(mut child) = s.child.take() {
                let _ = send(child.id(), Signal::Cont);
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

impl Incarnation {
    /// Reads the process's and its Workers' identities from its log, once
    /// written.
    fn learn_identity(&mut self) {
        if self.worker.is_none() {
            if let Some((process, workers)) = read_started(&self.log) {
                self.worker = Some(process);
                self.workers = workers;
            }
        }
    }
}

/// The process identity in the first line of a side-effect log.
pub fn read_identity(log: &Path) -> Option<String> {
    read_started(log).map(|(process, _)| process)
}

/// The process identity and its Workers' in the first line of a
/// side-effect log (the process alone when the line names no Workers).
pub fn read_started(log: &Path) -> Option<(String, Vec<String>)> {
    use std::io::BufRead;
    let file = std::fs::File::open(log).ok()?;
    let mut first = String::new();
    // One line only: the log may already be large.
    std::io::BufReader::new(file).read_line(&mut first).ok()?;
    match serde_json::from_str::<Line>(first.trim_end()).ok()? {
        Line::Started {
            worker, workers, ..
        } => {
            let workers = if workers.is_empty() {
                vec![worker.clone()]
            } else {
                workers
            };
            Some((worker, workers))
        }
        Line::Effect { .. } => None,
    }
}

/// Reads every incarnation's side-effect log.
pub fn read_logs(incs: &[Incarnation]) -> Result<Vec<crate::effects::ProcessLog>, ChaosError> {
    incs.iter().map(|i| read_log(&i.log)).collect()
}
