//! What one drain measured, and its report: human lines and one JSON
//! object. Latency percentiles come from an `hdrhistogram` (3 significant
//! digits, microseconds), not from sorting every sample.

use crate::args::{Mode, Settings};
use hdrhistogram::Histogram;
use serde_json::{json, Value};
use std::time::Duration;

/// Claim batches of enqueue.
pub const ENQUEUE_CHUNK: usize = 1_000;

/// What one drain measured.
pub struct Figures {
    /// Time to enqueue every job.
    pub enqueue: Duration,
    /// Time to drain them.
    pub drain: Duration,
    /// Claim → start latency of each job, in µs.
    pub latencies_us: Vec<u64>,
    /// Claim calls (batch mode) or leases granted (worker mode).
    pub claims: u64,
    /// Worker mode: the batched ceiling measured just before, on the same
    /// store (jobs/s).
    pub ceiling: Option<f64>,
    /// Worker mode: the `Worker` configuration, as a line.
    pub config: Option<String>,
    /// CPU used during the whole run (both drains in worker mode), by
    /// whom: a quiet machine shows "others" near zero.
    pub cpu: Option<crate::cpu::CpuUse>,
    /// PostgreSQL: WAL written during the run, and whether the server had
    /// to create WAL segment files for it (`wal.rs`).
    pub wal: Option<crate::wal::WalUse>,
}

impl Figures {
    /// Drain throughput, jobs/s.
    pub fn rate(&self, jobs: u64) -> f64 {
        jobs as f64 / self.drain.as_secs_f64().max(1e-9)
    }
}

/// The latency histogram: 1 µs to an hour, 3 significant digits.
fn histogram(samples: &[u64]) -> Histogram<u64> {
    let mut h =
        Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).expect("constant bounds are valid");
    for &s in samples {
        h.saturating_record(s.max(1));
    }
    h
}

/// The human report and the JSON object of one store's run.
pub fn report(backend: &str, detail: &str, s: &Settings, f: &Figures) -> (String, Value) {
    let h = histogram(&f.latencies_us);
    let ms = |us: u64| us as f64 / 1000.0;
    let (p50, p90, p99, p999, max) = (
        h.value_at_quantile(0.50),
        h.value_at_quantile(0.90),
        h.value_at_quantile(0.99),
        h.value_at_quantile(0.999),
        h.max(),
    );
    let rate = f.rate(s.jobs);
    let enq_rate = s.jobs as f64 / f.enqueue.as_secs_f64().max(1e-9);
    let lease = crate::LEASE;
    let settings = match s.mode {
        Mode::Batch => format!(
            "mode=batch jobs={} workers={} claim/release batch={} lease={lease} audit={} analyze={}",
            s.jobs,
            s.workers,
            s.batch,
            s.audit(),
            s.analyze()
        ),
        Mode::Worker => format!(
            "mode=worker (leasehold_core::Worker) jobs={} workers={} audit={} analyze={}\n   worker config: {}",
            s.jobs,
            s.workers,
            s.audit(),
            s.analyze(),
            f.config.as_deref().unwrap_or("?")
        ),
        Mode::Latency | Mode::Soak | Mode::PruneClaims => {
            unreachable!("these modes report in their own files")
        }
    };
    let (claims_what, unit) = match s.mode {
        Mode::Batch => ("claim calls", "claim sent"),
        Mode::Worker => ("leases granted", "lease granted"),
        Mode::Latency | Mode::Soak | Mode::PruneClaims => {
            unreachable!("these modes report in their own files")
        }
    };
    let ceiling = f.ceiling.map(|c| {
        format!(
            "\n   batched ceiling (mode=batch, batch={}, same run): {c:.0} jobs/s; Worker/ceiling = {:.0}%",
            s.batch,
            100.0 * rate / c.max(1e-9)
        )
    });
    let text = format!(
        "== {backend} ({detail})\n   settings: {settings}\n   enqueue:  {enq_rate:.0} jobs/s ({:.2} s, batches of {ENQUEUE_CHUNK})\n   drain:    {rate:.0} jobs/s ({} jobs in {:.3} s, {} {claims_what})\n   {unit} -> start latency: p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, p99.9 {:.2} ms, max {:.2} ms ({} samples)",
        f.enqueue.as_secs_f64(),
        s.jobs,
        f.drain.as_secs_f64(),
        f.claims,
        ms(p50),
        ms(p90),
        ms(p99),
        ms(p999),
        ms(max),
        h.len()
    ) + ceiling.as_deref().unwrap_or("")
        + "\n   "
        + &crate::cpu::line(f.cpu)
        + &f.wal.map_or(String::new(), |w| {
            let drains = if s.mode == Mode::Worker { 2 } else { 1 };
            format!("\n   {}", crate::wal::line(w, s.jobs, drains))
        });
    let value = json!({
        "backend": backend, "detail": detail,
        "mode": match s.mode { Mode::Batch => "batch", Mode::Worker => "worker", _ => "other" },
        "jobs": s.jobs, "workers": s.workers, "batch": s.batch, "concurrency": s.concurrency,
        "audit": s.audit(), "analyze": s.analyze(), "lease_ms": lease.0,
        "enqueue_s": f.enqueue.as_secs_f64(), "enqueue_jobs_per_s": enq_rate,
        "drain_s": f.drain.as_secs_f64(), "drain_jobs_per_s": rate, "claims": f.claims,
        "worker_config": f.config, "ceiling_jobs_per_s": f.ceiling,
        "ratio_to_ceiling": f.ceiling.map(|c| rate / c.max(1e-9)),
        "latency": {
            "from": unit, "unit": "us", "samples": h.len(),
            "p50": p50, "p90": p90, "p99": p99, "p999": p999, "max": max,
        },
        "cpu": crate::cpu::json(f.cpu),
        "wal": crate::wal::json(f.wal),
    });
    (text, value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn percentiles_come_from_the_histogram() {
        let s = Settings::parse_from(["leasehold-bench", "--jobs", "1000"]);
        let f = Figures {
            enqueue: Duration::from_secs(1),
            drain: Duration::from_secs(2),
            // 1..=1000 ms, in µs.
            latencies_us: (1..=1000).map(|ms| ms * 1000).collect(),
            claims: 5,
            ceiling: Some(1000.0),
            config: None,
            cpu: None,
            wal: None,
        };
        let (text, v) = report("sqlite", "test", &s, &f);
        let p50 = v["latency"]["p50"].as_u64().unwrap();
        let p99 = v["latency"]["p99"].as_u64().unwrap();
        // Three significant digits: within 0.1% of the exact value.
        assert!((499_500..=500_500).contains(&p50), "{p50}");
        assert!((989_000..=991_000).contains(&p99), "{p99}");
        assert_eq!(v["latency"]["samples"], 1000);
        assert_eq!(v["drain_jobs_per_s"], 500.0);
        assert_eq!(v["ratio_to_ceiling"], 0.5);
        assert!(text.contains("Worker/ceiling = 50%"), "{text}");
        assert!(
            text.contains("p50 500.") && text.contains("(1000 samples)"),
            "{text}"
        );
    }

    /// The report says whether the statistics were brought up to date:
    /// a drain without them plans differently, so its figures are not
    /// comparable with one that had them.
    #[test]
    fn the_report_says_whether_the_store_was_analyzed() {
        let f = Figures {
            enqueue: Duration::from_secs(1),
            drain: Duration::from_secs(1),
            latencies_us: vec![1],
            claims: 1,
            ceiling: None,
            config: None,
            cpu: None,
            wal: None,
        };
        for (args, analyzed) in [
            (&["x", "--mode", "batch"][..], true),
            (&["x", "--mode", "batch", "--no-analyze"][..], false),
            (&["x", "--mode", "worker", "--no-analyze"][..], false),
        ] {
            let s = Settings::parse_from(args);
            assert_eq!(s.analyze(), analyzed, "{args:?}");
            let (text, v) = report("postgres", "test", &s, &f);
            assert!(text.contains(&format!("analyze={analyzed}")), "{text}");
            assert_eq!(v["analyze"], analyzed, "{args:?}");
        }
    }

    #[test]
    fn bad_arguments_are_refused() {
        for bad in [
            &["x", "--jobs", "0"][..],
            &["x", "--mode", "fast"][..],
            &["x", "--backend", "mysql"][..],
            &["x", "--workers", "-1"][..],
        ] {
            assert!(Settings::try_parse_from(bad).is_err(), "{bad:?}");
        }
        let s = Settings::try_parse_from(["x", "--backend", "sqlite", "--json"]).unwrap();
        assert_eq!(s.backends(), ["sqlite"]);
        assert!(s.json);
    }
}
