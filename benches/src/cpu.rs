//! Who used the machine's CPU during a measurement (Linux `/proc`).
//!
//! The load average lags by a minute, so a run that starts just after a
//! build, or shares the machine with one, cannot be told apart by it. This
//! samples CPU time before and after a run instead and splits what was
//! used between this process, the PostgreSQL server's processes (part of
//! the system being measured), and everything else (competition: builds,
//! other benchmarks). "Others" near zero means the figure was taken on a
//! quiet machine.
//!
//! Processes that start and end between the two samples are counted only
//! in the machine's total, so "others" is the total minus what could be
//! attributed (never negative). Off Linux every figure is `None`.

use serde_json::json;
use std::time::Instant;

/// Clock ticks per second of `/proc` CPU times (`USER_HZ`; 100 on every
/// Linux this runs on).
const USER_HZ: f64 = 100.0;
/// Most `/proc` entries read per sample: a bound on the scan.
const MAX_PROCS: usize = 100_000;

/// CPU times at one moment, in clock ticks.
#[derive(Clone, Copy, Debug)]
pub struct CpuSample {
    at: Instant,
    /// Busy ticks of all cores together (everything but idle and iowait).
    busy: u64,
    /// This process's user + system ticks.
    own: u64,
    /// The `postgres` processes' user + system ticks.
    postgres: u64,
}

/// CPU used between two samples, as a share of one core (1.0 = one core
/// busy the whole time).
#[derive(Clone, Copy, Debug)]
pub struct CpuUse {
    /// Cores available.
    pub cores: usize,
    /// All processes together.
    pub total: f64,
    /// This benchmark process.
    pub own: f64,
    /// The PostgreSQL server's processes.
    pub postgres: f64,
    /// Everything else: competition for the cores.
    pub others: f64,
}

impl CpuSample {
    /// Samples now; `None` where `/proc` is not readable.
    pub fn now() -> Option<CpuSample> {
        Some(CpuSample {
            at: Instant::now(),
            busy: machine_busy()?,
            own: proc_ticks("self")?,
            postgres: postgres_ticks(),
        })
    }

    /// CPU used from `self` to `later`.
    pub fn until(&self, later: &CpuSample) -> CpuUse {
        let secs = later.at.duration_since(self.at).as_secs_f64().max(1e-3);
        let share = |a: u64, b: u64| b.saturating_sub(a) as f64 / USER_HZ / secs;
        let total = share(self.busy, later.busy);
        let own = share(self.own, later.own);
        let postgres = share(self.postgres, later.postgres);
        CpuUse {
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            total,
            own,
            postgres,
            others: (total - own - postgres).max(0.0),
        }
    }
}

impl CpuUse {
    /// One line for the human report.
    pub fn line(&self) -> String {
        format!(
            "CPU during the run (cores busy, of {}): all {:.2}, this process {:.2}, postgres {:.2}, others {:.2}",
            self.cores, self.total, self.own, self.postgres, self.others
        )
    }

    /// The same as JSON.
    pub fn json(&self) -> serde_json::Value {
        json!({
            "unit": "cores busy", "cores": self.cores, "all": round(self.total),
            "this_process": round(self.own), "postgres": round(self.postgres),
            "others": round(self.others),
        })
    }
}

/// The line for an optional use ("n/a" off Linux).
pub fn line(u: Option<CpuUse>) -> String {
    u.map_or_else(|| "CPU during the run: n/a".to_string(), |u| u.line())
}

/// The JSON for an optional use (`null` off Linux).
pub fn json(u: Option<CpuUse>) -> serde_json::Value {
    u.map_or(serde_json::Value::Null, |u| u.json())
}

fn round(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

/// Busy ticks of the machine: the `cpu` line of `/proc/stat` without
/// idle (4th) and iowait (5th).
fn machine_busy() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    let all: u64 = v.iter().take(8).sum();
    Some(all - v.get(3).copied().unwrap_or(0) - v.get(4).copied().unwrap_or(0))
}

/// The (command, user + system ticks) of `/proc/<pid>/stat`.
fn stat(pid: &str) -> Option<(String, u64)> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

fn parse_stat(text: &str) -> Option<(String, u64)> {
    // The command is in parentheses and may itself hold spaces or ')'.
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?.to_string();
    let rest: Vec<&str> = text.get(close + 2..)?.split_whitespace().collect();
    // After the command: state is field 3, utime 14 and stime 15.
    let utime: u64 = rest.get(11)?.parse().ok()?;
    let stime: u64 = rest.get(12)?.parse().ok()?;
    Some((comm, utime + stime))
}

fn proc_ticks(pid: &str) -> Option<u64> {
    stat(pid).map(|(_, t)| t)
}

/// User + system ticks of every process named `postgres` (the server and
/// its backends) that is alive now.
fn postgres_ticks() -> u64 {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    dir.take(MAX_PROCS)
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            name.bytes().all(|b| b.is_ascii_digit()).then_some(name)
        })
        .filter_map(|pid| stat(&pid))
        .filter(|(comm, _)| comm == "postgres")
        .map(|(_, t)| t)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_loop_shows_as_this_process() {
        let Some(a) = CpuSample::now() else { return };
        let t = Instant::now();
        let mut x = 0u64;
        // About 300 ms of work on this thread.
        while t.elapsed().as_millis() < 300 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let u = a.until(&CpuSample::now().expect("sampled once already"));
        assert!(u.own > 0.5, "{u:?}");
        assert!(u.total + 0.05 >= u.own, "{u:?}");
        assert!(u.others >= 0.0 && u.others <= u.cores as f64, "{u:?}");
    }

    #[test]
    fn a_command_with_parentheses_and_spaces_is_read_whole() {
        let line = "42 (a (b) c) S 1 42 42 0 -1 4194560 100 0 0 0 7 5 0 0 20 0 1 0 9 0";
        assert_eq!(parse_stat(line), Some(("a (b) c".to_string(), 12)));
        assert_eq!(parse_stat("42 (x) S 1"), None);
    }
}
