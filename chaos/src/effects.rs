//! The side-effect log: one append-only JSON-lines file per worker process.
//! Its first line names the process and every `Worker` it runs; each side
//! effect names the Worker whose handler made it, so the checks know which
//! Worker inside a process ran what.
//!
//! A chaos handler records each side effect it makes (start, each step,
//! end) with the job, the lease's token and two readings of the host's
//! clock: wall time (comparable with the store's clock, which on one host
//! is the same clock) and `CLOCK_MONOTONIC` (shared by every process of the
//! host and never stepped, so effects of different processes order
//! correctly even if NTP steps the wall clock). The checks compare them
//! after the run; the log never fsyncs, since a killed process's writes
//! survive in the page cache, and only a host crash could lose them.

use crate::error::ChaosError;
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Most lines read from one log (a bound on the reader).
pub const MAX_LINES_PER_LOG: usize = 50_000_000;

/// The host's clocks now: (wall µs since the epoch, monotonic µs).
pub fn host_clocks() -> (i64, u64) {
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0);
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own; CLOCK_MONOTONIC
    // always exists on Linux.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    let mono = if rc == 0 {
        (ts.tv_sec as u64) * 1_000_000 + (ts.tv_nsec as u64) / 1_000
    } else {
        0
    };
    (wall, mono)
}

/// Where in a handler's run an effect was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// The handler started.
    Start,
    /// One unit of work was done.
    Step,
    /// The handler finished with its result.
    End,
    /// The handler failed on purpose (a retryable error).
    Failed,
}

/// One line of a side-effect log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Line {
    /// First line of a process: its identity and its Workers'.
    Started {
        /// The process's identity (its PostgreSQL `application_name`; in
        /// the single shape also its one Worker's identity).
        worker: String,
        /// The identity of every `Worker` the process runs (absent in logs
        /// written before processes ran several: then `worker` alone).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        workers: Vec<String>,
        /// Its process id.
        pid: u32,
        /// Wall clock, µs since the epoch.
        wall_us: i64,
        /// Monotonic clock, µs.
        mono_us: u64,
    },
    /// A side effect of a handler.
    Effect {
        /// The job.
        job: u64,
        /// The lease's token.
        token: u64,
        /// The attempt the lease was for.
        attempt: u32,
        /// Which `Worker` made it.
        worker: String,
        /// Where in the handler.
        phase: Phase,
        /// Wall clock, µs since the epoch.
        wall_us: i64,
        /// Monotonic clock, µs.
        mono_us: u64,
    },
}

/// An open side-effect log (append-only). Shared by a process's handlers.
#[derive(Debug)]
pub struct EffectLog {
    file: File,
}

impl EffectLog {
    /// Creates (or appends to) the log at `path` and records the process's
    /// identity and its Workers' first.
    pub fn open(path: &Path, process: &str, workers: &[String]) -> std::io::Result<EffectLog> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        let log = EffectLog { file };
        let (wall_us, mono_us) = host_clocks();
        log.write(&Line::Started {
            worker: process.to_string(),
            workers: workers.to_vec(),
            pid: std::process::id(),
            wall_us,
            mono_us,
        })?;
        Ok(log)
    }

    /// Records one side effect of the lease (job, token) by `worker`, now.
    pub fn record(
        &self,
        worker: &str,
        job: u64,
        token: u64,
        attempt: u32,
        phase: Phase,
    ) -> std::io::Result<()> {
        let (wall_us, mono_us) = host_clocks();
        self.write(&Line::Effect {
            job,
            token,
            attempt,
            worker: worker.to_string(),
            phase,
            wall_us,
            mono_us,
        })
    }

    fn write(&self, line: &Line) -> std::io::Result<()> {
        let mut bytes = serde_json::to_vec(line).map_err(std::io::Error::other)?;
        bytes.push(b'\n');
        // One write(2) of an O_APPEND file per line: lines never interleave,
        // and a kill leaves whole lines (at worst a torn last one).
        (&self.file).write_all(&bytes)
    }
}

/// What one process's log holds.
#[derive(Clone, Debug, Default)]
pub struct ProcessLog {
    /// The file.
    pub path: PathBuf,
    /// The process identity, if the process got as far as writing it.
    pub worker: Option<String>,
    /// The identities of its Workers (the process identity alone in the
    /// single shape and in old logs).
    pub workers: Vec<String>,
    /// Its effects, in the order written.
    pub effects: Vec<Line>,
    /// Whether the last line was torn (the process died mid-write).
    pub torn_tail: bool,
}

/// Reads one log. A torn last line (no newline: the process died while
/// writing it) is tolerated and reported; any other bad line is an error
/// naming the file and line.
pub fn read_log(path: &Path) -> Result<ProcessLog, ChaosError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(ProcessLog {
                path: path.to_path_buf(),
                ..ProcessLog::default()
            })
        }
        Err(e) => return Err(ChaosError::io("read the side-effect log", path, e)),
    };
    let mut out = ProcessLog {
        path: path.to_path_buf(),
        ..ProcessLog::default()
    };
    let complete = text.ends_with('\n');
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in lines.iter().enumerate().take(MAX_LINES_PER_LOG) {
        match serde_json::from_str::<Line>(line) {
            Ok(Line::Started {
                worker, workers, ..
            }) if out.worker.is_none() => {
                out.workers = if workers.is_empty() {
                    vec![worker.clone()]
                } else {
                    workers
                };
                out.worker = Some(worker);
            }
            Ok(Line::Started { .. }) => {
                return Err(ChaosError::BadLog {
                    path: path.to_path_buf(),
                    line: i + 1,
                    what: "a second `started` line: two processes share this log".into(),
                })
            }
            Ok(effect) => out.effects.push(effect),
            Err(_) if i + 1 == lines.len() && !complete => out.torn_tail = true,
            Err(e) => {
                return Err(ChaosError::BadLog {
                    path: path.to_path_buf(),
                    line: i + 1,
                    what: e.to_string(),
                })
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_round_trips_and_tolerates_only_a_torn_tail() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.jsonl");
        let workers = vec!["p-1.w0".to_string(), "p-1.w1".to_string()];
        let log = EffectLog::open(&path, "p-1", &workers).unwrap();
        log.record("p-1.w0", 7, 2, 1, Phase::Start).unwrap();
        log.record("p-1.w1", 7, 2, 1, Phase::End).unwrap();
        let read = read_log(&path).unwrap();
        assert_eq!(read.worker.as_deref(), Some("p-1"));
        assert_eq!(read.workers, workers);
        let by: Vec<&str> = read
            .effects
            .iter()
            .map(|l| match l {
                Line::Effect { worker, .. } => worker.as_str(),
                Line::Started { .. } => "",
            })
            .collect();
        assert_eq!(by, ["p-1.w0", "p-1.w1"], "each effect names its Worker");
        assert_eq!(read.effects.len(), 2);
        assert!(!read.torn_tail);

        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"kind\":\"eff").unwrap();
        let read = read_log(&path).unwrap();
        assert!(read.torn_tail);
        assert_eq!(read.effects.len(), 2);

        f.write_all(b"\n{}\n").unwrap();
        let e = read_log(&path).unwrap_err().to_string();
        assert!(e.contains("w.jsonl:4"), "{e}");
    }

    #[test]
    fn a_log_without_a_worker_list_is_one_worker_named_after_its_process() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.jsonl");
        std::fs::write(
            &path,
            "{\"kind\":\"started\",\"worker\":\"w-9\",\"pid\":1,\"wall_us\":0,\"mono_us\":0}\n",
        )
        .unwrap();
        let read = read_log(&path).unwrap();
        assert_eq!(read.workers, ["w-9"]);
    }

    #[test]
    fn monotonic_readings_never_go_back() {
        let (_, a) = host_clocks();
        let (_, b) = host_clocks();
        assert!(a > 0 && b >= a);
    }
}
