//! Speed of `check --format jepsen`'s searches, printed (not a test):
//! - Knossos's etcd lock history (1,135 operations) against the mutex;
//! - a valid lease history of about 100,000 operations in `leasehold
//!   export`'s format (`:lease-ms`, `:expires-ms`), generated from a
//!   correct store with concurrent workers, crashes (`:info`), failed
//!   renews and a sweeper: read, I1/I2 checks, and the lease model's
//!   linearizability search.
//!
//! ```sh
//! CARGO_TARGET_DIR=... cargo run --release -p leasehold-check --example jepsen_speed [OPS]
//! ```

use leasehold_check::jepsen::edn::write_history;
use leasehold_check::jepsen::lease::{self, LeaseVerdict};
use leasehold_check::jepsen::linearize::Limits;
use leasehold_check::jepsen::mutex::{self, MutexVerdict};
use leasehold_check::jepsen::{check, read_history, Op, OpType, Process, Value};
use std::path::Path;
use std::time::Instant;

fn main() {
    let target: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000);
    etcd();
    leases(target);
}

fn best_of<T>(runs: usize, mut f: impl FnMut() -> T) -> (f64, T) {
    let mut best = f64::MAX;
    let mut out = None;
    for _ in 0..runs {
        let t = Instant::now();
        let r = f();
        best = best.min(t.elapsed().as_secs_f64());
        out = Some(r);
    }
    (best, out.expect("at least one run"))
}

fn etcd() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/knossos/mutex/bad/etcd.edn");
    let text = std::fs::read_to_string(&file).expect("the vendored etcd history");
    let (read_s, ops) = best_of(5, || read_history(&text, &file).expect("reads"));
    let (check_s, report) = best_of(5, || {
        mutex::check(&ops, &file, &Limits::default()).expect("well formed")
    });
    let verdict = match &report.verdict {
        Some(MutexVerdict::Invalid(v)) => format!("invalid, window of {} calls", v.window.len()),
        other => format!("{other:?}"),
    };
    println!(
        "etcd.edn: {} operations; read {:.1} ms, mutex search + window {:.1} ms (best of 5); {} configurations; {verdict}",
        ops.len(),
        read_s * 1e3,
        check_s * 1e3,
        report.effort.configs
    );
}

/// A small deterministic generator (PCG-style LCG).
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

#[derive(Clone)]
enum Job {
    Pending,
    Running { token: i64, expires: i64 },
    Done,
}

/// One worker's open call: what it asked, and its process.
struct Open {
    process: i64,
    f: &'static str,
    value: Value,
    lease: Option<(i64, i64)>,
}

fn lease_value(job: i64, token: i64) -> Value {
    Value::Map(vec![
        ("job".into(), Value::Int(job)),
        ("token".into(), Value::Int(token)),
    ])
}

fn with(v: &Value, key: &str, x: Value) -> Value {
    let Value::Map(mut m) = v.clone() else {
        return v.clone();
    };
    m.push((key.into(), x));
    Value::Map(m)
}

/// A valid lease history from a correct store: each call takes effect at
/// its completion (store time = one ms per record), or, for `:info`,
/// maybe.
fn generate(target: usize) -> Vec<Op> {
    const WORKERS: usize = 8;
    const LEASE_MS: i64 = 40;
    let mut rng = Rng(42);
    let mut jobs: Vec<Job> = Vec::new();
    let mut ops: Vec<Op> = Vec::new();
    let mut open: Vec<Option<Open>> = (0..=WORKERS).map(|_| None).collect();
    let mut process: Vec<i64> = (0..=WORKERS as i64).collect();
    let mut held: Vec<Option<(i64, i64)>> = vec![None; WORKERS + 1];
    let mut next_process = WORKERS as i64 + 1;
    let mut tokens: Vec<i64> = Vec::new();
    while ops.len() < target {
        let now = ops.len() as i64;
        // Keep work available.
        if jobs.iter().filter(|j| matches!(j, Job::Pending)).count() < 4 {
            jobs.push(Job::Pending);
            tokens.push(0);
        }
        let w = rng.below(WORKERS as u64 + 1) as usize;
        let sweeper = w == WORKERS;
        match open[w].take() {
            None => {
                let p = process[w];
                let (f, value, lease) = if sweeper {
                    (
                        "sweep",
                        Value::Map(vec![("limit".into(), Value::Int(10))]),
                        None,
                    )
                } else if let Some((job, token)) = held[w] {
                    if rng.below(3) == 0 {
                        let v = with(
                            &lease_value(job, token),
                            "outcome",
                            Value::Key(
                                ["succeeded", "returned", "failed"][rng.below(3) as usize].into(),
                            ),
                        );
                        ("release", v, Some((job, token)))
                    } else {
                        let v = with(&lease_value(job, token), "lease-ms", Value::Int(LEASE_MS));
                        ("renew", v, Some((job, token)))
                    }
                } else {
                    let v = Value::Map(vec![
                        ("queue".into(), Value::Str("q".into())),
                        ("max".into(), Value::Int(1)),
                        ("lease-ms".into(), Value::Int(LEASE_MS)),
                    ]);
                    ("acquire", v, None)
                };
                push(&mut ops, OpType::Invoke, p, f, value.clone());
                open[w] = Some(Open {
                    process: p,
                    f,
                    value,
                    lease,
                });
            }
            Some(call) => {
                // The store applies the call now, unless it is lost.
                let crash = rng.below(40) == 0;
                let applied = !crash || rng.below(2) == 0;
                let (kind, value) = match call.f {
                    "acquire" => {
                        let free = jobs.iter().position(|j| matches!(j, Job::Pending));
                        match (applied, free) {
                            (true, Some(j)) => {
                                tokens[j] += 1;
                                let token = tokens[j];
                                let expires = now + LEASE_MS;
                                jobs[j] = Job::Running { token, expires };
                                if !crash {
                                    held[w] = Some((j as i64, token));
                                }
                                (
                                    OpType::Ok,
                                    with(
                                        &lease_value(j as i64, token),
                                        "expires-ms",
                                        Value::Int(expires),
                                    ),
                                )
                            }
                            _ => (OpType::Fail, call.value.clone()),
                        }
                    }
                    "renew" => {
                        let (job, token) = call.lease.expect("a renew names its lease");
                        match jobs[job as usize].clone() {
                            Job::Running { token: t, .. } if t == token && applied => {
                                let expires = now + LEASE_MS;
                                jobs[job as usize] = Job::Running { token, expires };
                                (
                                    OpType::Ok,
                                    with(&call.value, "expires-ms", Value::Int(expires)),
                                )
                            }
                            _ => {
                                held[w] = None;
                                (OpType::Fail, call.value.clone())
                            }
                        }
                    }
                    "release" => {
                        let (job, token) = call.lease.expect("a release names its lease");
                        held[w] = None;
                        match jobs[job as usize].clone() {
                            Job::Running { token: t, .. } if t == token && applied => {
                                let ends = call.value.get("outcome")
                                    == Some(&Value::Key("succeeded".into()));
                                jobs[job as usize] = if ends { Job::Done } else { Job::Pending };
                                (OpType::Ok, call.value.clone())
                            }
                            _ => (OpType::Fail, call.value.clone()),
                        }
                    }
                    _ => {
                        let mut swept = Vec::new();
                        for (j, state) in jobs.iter_mut().enumerate() {
                            if let Job::Running { token, expires } = *state {
                                if expires <= now && swept.len() < 10 && applied {
                                    swept.push(lease_value(j as i64, token));
                                    *state = Job::Pending;
                                }
                            }
                        }
                        (OpType::Ok, Value::Vector(swept))
                    }
                };
                if crash {
                    push(
                        &mut ops,
                        OpType::Info,
                        call.process,
                        call.f,
                        call.value.clone(),
                    );
                    process[w] = next_process;
                    next_process += 1;
                    held[w] = None;
                } else {
                    push(&mut ops, kind, call.process, call.f, value);
                }
            }
        }
    }
    ops
}

fn push(ops: &mut Vec<Op>, kind: OpType, p: i64, f: &str, value: Value) {
    let i = ops.len() as i64;
    ops.push(Op {
        index: i,
        time_ns: Some(i * 1_000_000),
        kind,
        process: Process::Client(p),
        f: f.into(),
        value,
        extra: vec![],
    });
}

fn leases(target: usize) {
    let t = Instant::now();
    let ops = generate(target);
    let text = write_history(&ops);
    let gen_s = t.elapsed().as_secs_f64();
    let file = Path::new("generated.edn");
    let t = Instant::now();
    let read = read_history(&text, file).expect("reads");
    let read_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let summary = check::check(&read, file).expect("well formed");
    let i12_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let report = lease::check(&read, file, &Limits::default()).expect("well formed");
    let lin_s = t.elapsed().as_secs_f64();
    let verdict = match &report.verdict {
        LeaseVerdict::Valid => "linearizable".to_string(),
        other => format!("{other:?}"),
    };
    println!(
        "lease history: {} operations ({:.1} MB EDN, generated in {:.2} s), {} jobs; read {:.2} s, I1/I2 {:.2} s ({} findings), lease search {:.2} s ({} configurations, expiry judged: {}): {verdict}; total check {:.2} s",
        read.len(),
        text.len() as f64 / 1e6,
        gen_s,
        report.jobs,
        read_s,
        i12_s,
        summary.findings.len(),
        lin_s,
        report.effort.configs,
        report.expiry_judged,
        read_s + i12_s + lin_s
    );
}
