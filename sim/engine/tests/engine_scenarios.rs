//! The scenario library's stories happen: graceful shutdown returns leases
//! and refunds the attempt, values at the size limits round-trip byte for
//! byte, drift exactly at ρ keeps I3 asserted, keyed enqueues make one job
//! per key, and a release retried after a store crash commits once. Also the
//! `shutdown` fault sentence and the workload size knobs at load time.

mod engine_support;

use engine_support::{assert_says, clean_run, describe, run, scenario};
use leasehold_core::{EventKind, JobState, Outcome, Token, WorkerId};
use leasehold_model::config::{ScriptedFault, SimConfig};
use leasehold_model::duration::Dur;
use leasehold_model::history::{BeliefWhat, Blob, Fate, Op, Record, Reply};
use leasehold_model::scenario::load_str;
use leasehold_model::workload::WorkloadPlan;
use leasehold_sim::runner::SeedOutcome;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Store events with their true time.
fn events(out: &SeedOutcome) -> Vec<(u64, &leasehold_core::Event)> {
    out.history
        .records
        .iter()
        .filter_map(|r| match r {
            Record::StoreEvent { t, event, .. } => Some((*t, event)),
            _ => None,
        })
        .collect()
}

/// The attempt number each lease was granted with: (job, token) → attempt.
fn grants(out: &SeedOutcome) -> BTreeMap<(leasehold_core::JobId, Token), u32> {
    events(out)
        .into_iter()
        .filter_map(|(_, e)| match e.kind {
            EventKind::Claimed { attempt, .. } => Some(((e.job, e.token), attempt)),
            _ => None,
        })
        .collect()
}

const SHUTDOWN: &str = "graceful_shutdown_mid_run_returns_leases_and_refunds_the_attempt.toml";
const SIZES: &str = "results_payloads_and_errors_at_the_size_limits_round_trip_byte_exact.toml";

/// The rows a history ends with (its `Final` records).
fn final_rows(recs: &[Record]) -> Vec<&leasehold_core::JobRecord> {
    recs.iter()
        .filter_map(|r| match r {
            Record::Final { row } => Some(row),
            _ => None,
        })
        .collect()
}

#[test]
fn graceful_shutdown_returns_every_lease_and_refunds_the_attempt() {
    let cfg = scenario(SHUTDOWN);
    let seed = 1;
    let out = clean_run(&cfg, seed);
    let shutdowns: Vec<(String, u64)> = out
        .schedule
        .iter()
        .filter_map(|f| match f {
            ScriptedFault::Shutdown { host, at } => Some((host.clone(), at.as_ms())),
            _ => None,
        })
        .collect();
    assert_eq!(shutdowns.len(), 3, "{:?}", out.schedule);
    let recs = &out.history.records;
    // Ground truth: every shutdown is a fault record; nothing crashed.
    let fault_records = recs
        .iter()
        .filter(|r| {
            matches!(
                r,
                Record::Fault {
                    fault: ScriptedFault::Shutdown { .. },
                    ..
                }
            )
        })
        .count();
    assert_eq!(fault_records, 3);
    assert!(
        !recs.iter().any(|r| matches!(r, Record::HostCrashed { .. })),
        "a graceful shutdown is not a crash"
    );
    // The incarnation running at each shutdown: its worker identity.
    let starts: Vec<(String, u64, WorkerId)> = recs
        .iter()
        .filter_map(|r| match r {
            Record::HostStarted {
                host,
                t,
                worker: Some(w),
                ..
            } => Some((host.clone(), *t, w.clone())),
            _ => None,
        })
        .collect();
    let restarts = starts.iter().filter(|s| s.2.as_str().contains('#')).count();
    assert_eq!(
        restarts, 3,
        "each shutdown is followed by a restart: {starts:?}"
    );
    let grants = grants(&out);
    let evs = events(&out);
    for (host, at) in &shutdowns {
        let id = starts
            .iter()
            .rev()
            .find(|s| &s.0 == host && s.1 <= *at)
            .map(|s| s.2.clone())
            .expect("an incarnation runs at the shutdown");
        // Every lease the incarnation knew about ended in a release, never a sweep.
        let known: BTreeSet<(leasehold_core::JobId, Token)> = recs
            .iter()
            .filter_map(|r| match r {
                Record::Belief {
                    worker,
                    job,
                    token,
                    what: BeliefWhat::Claimed { .. },
                    ..
                } if *worker == id => Some((*job, *token)),
                _ => None,
            })
            .collect();
        for (t, e) in &evs {
            if let EventKind::Swept { .. } = e.kind {
                assert!(
                    !known.contains(&(e.job, e.token)),
                    "{id}'s lease {} {} was swept at {t}ms",
                    e.job,
                    e.token
                );
            }
        }
        // It returned what it held at the shutdown, then claimed nothing more.
        let returned: Vec<&leasehold_core::Event> = evs
            .iter()
            .filter(|(t, e)| {
                *t >= *at
                    && e.worker.as_ref() == Some(&id)
                    && matches!(
                        e.kind,
                        EventKind::Released {
                            outcome: Outcome::Returned,
                            ..
                        }
                    )
            })
            .map(|(_, e)| *e)
            .collect();
        assert!(
            !returned.is_empty(),
            "{id} returned nothing at its shutdown at {at}ms"
        );
        let claims_after = recs.iter().any(|r| {
            matches!(r, Record::Request { t, host: h, op: Op::Claim { worker, .. }, .. }
                if h == host && *worker == id && *t > *at)
        });
        assert!(!claims_after, "{id} claimed after its shutdown at {at}ms");
        for e in returned {
            assert_eq!(
                e.to,
                JobState::Pending,
                "a returned job goes back to pending"
            );
            let attempt = grants[&(e.job, e.token)];
            // The next lease on the job carries the same attempt number.
            let next = grants
                .iter()
                .find(|((j, k), _)| *j == e.job && *k > e.token)
                .unwrap_or_else(|| panic!("{} returned by {id} is never claimed again", e.job));
            assert_eq!(
                *next.1, attempt,
                "{} returned by {id} at attempt {attempt}: the attempt is refunded",
                e.job
            );
        }
    }
    // And every job finished.
    let finals = final_rows(recs);
    assert_eq!(finals.len(), cfg.workload.jobs as usize);
    assert!(finals.iter().all(|r| r.state == JobState::Succeeded));
}

#[test]
fn a_graceful_shutdown_replays_exactly() {
    // Shutdown wakes every lease task of the worker at once (a tokio watch
    // whose wake order the simulator cannot seed); the handlers return in
    // key order, so the history is the same every time.
    let cfg = scenario(SHUTDOWN);
    for seed in [0, 3] {
        let a = run(&cfg, seed);
        for _ in 0..2 {
            let b = run(&cfg, seed);
            assert_eq!(a.history_hash, b.history_hash, "seed {seed}");
        }
    }
}

#[test]
fn values_at_the_size_limits_round_trip_byte_exact() {
    let cfg = scenario(SIZES);
    let p = &cfg.protocol;
    let w = &cfg.workload;
    assert_eq!(
        p.max_payload_bytes,
        leasehold_core::DEFAULT_MAX_PAYLOAD_BYTES as u64
    );
    assert_eq!(
        p.max_result_bytes,
        leasehold_core::DEFAULT_MAX_RESULT_BYTES as u64
    );
    assert_eq!(w.payload_bytes, p.max_payload_bytes);
    assert_eq!(w.result_bytes, p.max_result_bytes);
    assert!(w.error_bytes > p.max_error_bytes, "errors are truncated");
    let seed = 0;
    // The story first, every invariant at the end.
    let out = run(&cfg, seed);
    let recs = &out.history.records;

    // Every payload enqueued is exactly at the limit, and every lease hands
    // the handler the very bytes enqueued under its key.
    let mut enqueued: BTreeMap<String, Blob> = BTreeMap::new();
    for r in recs {
        if let Record::Request {
            op: Op::Enqueue { key, payload, .. },
            ..
        } = r
        {
            assert_eq!(payload.len, p.max_payload_bytes, "{key:?}");
            enqueued.insert(key.clone().unwrap(), *payload);
        }
    }
    assert_eq!(enqueued.len(), w.jobs as usize);
    let plan = WorkloadPlan::new(&cfg, seed);
    for j in &plan.jobs {
        let bytes = j.payload();
        assert_eq!(WorkloadPlan::decode(&bytes), Some(j.index));
        assert_eq!(Blob::of(&bytes), enqueued[&j.key()]);
    }
    let mut leases = 0;
    for r in recs {
        if let Record::Answer {
            reply: Reply::Leases(ls),
            ..
        } = r
        {
            for l in ls {
                assert_eq!(l.payload.len, p.max_payload_bytes);
                leases += 1;
            }
        }
    }
    assert!(leases >= w.jobs as usize);

    // Failing attempts sent errors above the limit; the store kept exactly
    // the limit's worth, a prefix of what was sent.
    let mut sent_errors: BTreeMap<(leasehold_core::JobId, Token), String> = BTreeMap::new();
    for r in recs {
        if let Record::Request {
            op:
                Op::Release {
                    job,
                    token,
                    outcome: Outcome::Failed { error, .. },
                },
            ..
        } = r
        {
            assert_eq!(error.len() as u64, w.error_bytes);
            sent_errors.insert((*job, *token), error.clone());
        }
    }
    let mut stored_errors = 0;
    for (_, e) in events(&out) {
        if let EventKind::Released {
            outcome: Outcome::Failed { error, .. },
            ..
        } = &e.kind
        {
            assert_eq!(
                error.len() as u64,
                p.max_error_bytes,
                "truncated to the limit"
            );
            assert!(sent_errors[&(e.job, e.token)].starts_with(error.as_str()));
            stored_errors += 1;
        }
    }
    assert!(stored_errors > 0, "seed {seed} has no failing attempt");

    // Every committed result is in the final rows, byte for byte.
    let finals = final_rows(recs);
    assert_eq!(finals.len(), w.jobs as usize);
    let mut succeeded = 0;
    for row in finals {
        let index = WorkloadPlan::decode(&row.payload).expect("payloads decode");
        assert_eq!(row.payload, plan.jobs[index as usize].payload());
        if row.state == JobState::Succeeded {
            let result = row.result.as_deref().expect("a success has its result");
            assert_eq!(result.len() as u64, p.max_result_bytes);
            assert_eq!(
                result,
                WorkloadPlan::result_sized(row.id.0, row.token.0, p.max_result_bytes as usize)
            );
            assert!(result.contains(&0) && result.iter().any(|&b| b >= 0x80));
            succeeded += 1;
        } else if let Some(err) = &row.error {
            assert_eq!(err.len() as u64, p.max_error_bytes);
        }
    }
    assert!(succeeded > 0);
    assert!(
        out.violations.is_empty(),
        "{} seed {seed}:\n{}",
        cfg.name,
        describe(&out, &cfg)
    );
}

#[test]
fn drift_exactly_at_rho_keeps_the_timing_assumption_and_i3() {
    let cfg = scenario("drift_exactly_at_the_declared_bound_keeps_belief_exclusive.toml");
    let rho = i64::from(cfg.protocol.max_drift_ppm);
    assert!(cfg.events.iter().all(|f| match f {
        ScriptedFault::Drift { ppm, .. } => ppm.abs() == rho,
        _ => true,
    }));
    let out = clean_run(&cfg, 0);
    assert!(
        !out.timing_assumption_broken,
        "drift of exactly ρ is within the assumption: I3 stays asserted"
    );
    let fenced = out.history.records.iter().any(
        |r| matches!(r, Record::Belief { what: BeliefWhat::Ended { why }, .. } if why == "Fenced"),
    );
    let reclaimed = events(&out)
        .iter()
        .any(|(_, e)| matches!(e.kind, EventKind::Swept { .. }));
    assert!(
        fenced && reclaimed,
        "lost renewals lead to self-fencing and reclaims"
    );
    // One ppm more breaks it.
    let mut beyond = cfg.clone();
    beyond.events.push(ScriptedFault::Drift {
        host: "worker-1".into(),
        at: Dur::ms(0),
        ppm: -(rho + 1),
    });
    assert!(leasehold_sim::faults::timing_assumption_broken(
        &beyond,
        &beyond.events
    ));
}

#[test]
fn keyed_enqueues_retried_after_lost_answers_make_one_job_per_key() {
    let cfg = scenario("enqueue_retried_after_lost_answers_makes_one_job_per_key.toml");
    let out = clean_run(&cfg, 0);
    let recs = &out.history.records;
    let mut tries: BTreeMap<String, u32> = BTreeMap::new();
    let mut ids: BTreeMap<u64, String> = BTreeMap::new();
    for r in recs {
        if let Record::Request {
            id,
            op: Op::Enqueue { key: Some(k), .. },
            ..
        } = r
        {
            *tries.entry(k.clone()).or_default() += 1;
            ids.insert(*id, k.clone());
        }
    }
    let lost_answers = recs
        .iter()
        .filter(|r| matches!(r, Record::Served { id, fate: Fate::AnswerLost, .. } if ids.contains_key(id)))
        .count();
    assert!(lost_answers > 0, "some enqueue committed without an answer");
    assert!(tries.values().any(|&n| n > 1), "some key was sent again");
    let mut per_key: BTreeMap<String, u32> = BTreeMap::new();
    for r in recs {
        if let Record::Final { row } = r {
            *per_key
                .entry(row.idempotency_key.clone().expect("keyed"))
                .or_default() += 1;
        }
    }
    assert_eq!(per_key.len(), cfg.workload.jobs as usize);
    assert!(per_key.values().all(|&n| n == 1), "{per_key:?}");
}

#[test]
fn a_release_retried_after_a_store_crash_answers_committed_once() {
    let cfg =
        scenario("release_retried_with_the_same_outcome_after_a_store_crash_commits_once.toml");
    let out = clean_run(&cfg, 0);
    let recs = &out.history.records;
    let crashes: Vec<u64> = recs
        .iter()
        .filter_map(|r| match r {
            Record::HostCrashed { t, host } if host == "store" => Some(*t),
            _ => None,
        })
        .collect();
    let mut sent: BTreeMap<u64, (u64, (leasehold_core::JobId, Token))> = BTreeMap::new();
    let mut fate: BTreeMap<u64, Fate> = BTreeMap::new();
    let mut answer: BTreeMap<u64, Reply> = BTreeMap::new();
    for r in recs {
        match r {
            Record::Request {
                t,
                id,
                op: Op::Release { job, token, .. },
                ..
            } => {
                sent.insert(*id, (*t, (*job, *token)));
            }
            Record::Served { id, fate: f, .. } => {
                fate.insert(*id, *f);
            }
            Record::Answer { id, reply, .. } => {
                answer.entry(*id).or_insert_with(|| reply.clone());
            }
            _ => {}
        }
    }
    let mut by_lease: BTreeMap<(leasehold_core::JobId, Token), Vec<u64>> = BTreeMap::new();
    for (id, (_, lease)) in &sent {
        by_lease.entry(*lease).or_default().push(*id);
    }
    // Committed, answer lost, store crashed, the same release retried into
    // the restarted store answers Committed.
    let stories = by_lease
        .values()
        .filter(|ids| {
            let Some(lost) = ids.iter().find(|i| fate.get(i) == Some(&Fate::AnswerLost)) else {
                return false;
            };
            let t0 = sent[lost].0;
            ids.iter().any(|i| {
                i > lost
                    && answer.get(i) == Some(&Reply::Committed)
                    && crashes.iter().any(|&c| c >= t0 && c <= sent[i].0)
            })
        })
        .count();
    assert!(stories > 0, "no release was retried across a store crash");
    let mut released: BTreeMap<(leasehold_core::JobId, Token), u32> = BTreeMap::new();
    for (_, e) in events(&out) {
        if let EventKind::Released { .. } = e.kind {
            *released.entry((e.job, e.token)).or_default() += 1;
        }
    }
    assert!(released.values().all(|&n| n == 1), "one release per lease");
}

#[test]
fn the_shutdown_sentence_parses_prints_and_is_checked() {
    let f: ScriptedFault = "shutdown worker-2 at 40s".parse().unwrap();
    assert_eq!(
        f,
        ScriptedFault::Shutdown {
            host: "worker-2".into(),
            at: Dur::secs(40),
        }
    );
    assert_eq!(f.to_string(), "shutdown worker-2 at 40s");
    assert_eq!(f.start(), Dur::secs(40));
    assert_eq!(f.hosts(), vec!["worker-2"]);
    assert_eq!(f.to_string().parse::<ScriptedFault>().unwrap(), f);

    for bad in [
        "shutdown worker-2",
        "shutdown worker-2 in 40s",
        "shutdown at 40s",
    ] {
        let e = bad.parse::<ScriptedFault>().unwrap_err();
        assert!(e.contains("shutdown worker-N at T"), "{bad}: {e}");
    }
    let e = "shutdown worker-2 at 40"
        .parse::<ScriptedFault>()
        .unwrap_err();
    assert!(e.contains("40"), "{e}");
    let e = "reboot worker-2 at 4s"
        .parse::<ScriptedFault>()
        .unwrap_err();
    assert!(e.contains("`shutdown WORKER at T`"), "{e}");

    let load = |events: &str| {
        let text = format!("duration = \"2m\"\nevents = [{events}]\n[faults]\nwindow = \"1m\"\n");
        load_str(&text, Path::new("x.toml"), "x").map_err(|e| e.to_string())
    };
    let ok = load("\"shutdown worker-4 at 30s\", \"restart worker-4 at 50s\"").unwrap();
    assert_eq!(ok.events.len(), 2);
    // Each case: the events, and what the error must say.
    let refused: [(&str, &[&str]); 5] = [
        (
            "\"shutdown store at 30s\"",
            &["x.toml:2:", "events[0]", "only a worker"],
        ),
        (
            "\"restart worker-1 at 5s\", \"shutdown sweeper-1 at 30s\"",
            &["events[1]", "only a worker"],
        ),
        (
            "\"shutdown worker-5 at 30s\"",
            &["events[0]", "unknown host"],
        ),
        ("\"shutdown worker-2 at 3m\"", &["after the run ends"]),
        (
            "\"shutdown worker-2\"",
            &["x.toml:2:", "shutdown worker-N at T"],
        ),
    ];
    for (events, says) in refused {
        assert_says(&load(events).unwrap_err(), says);
    }
}

#[test]
fn size_knobs_default_to_zero_and_are_checked_against_the_limits() {
    let plain = SimConfig::default();
    assert_eq!(
        (
            plain.workload.payload_bytes,
            plain.workload.result_bytes,
            plain.workload.error_bytes
        ),
        (0, 0, 0)
    );
    let load = |workload: &str| {
        let text = format!(
            "[protocol]\nmax_payload_bytes = 1000\nmax_result_bytes = 2000\nmax_error_bytes = 100\n\n[workload]\njobs = 5\n{workload}\n"
        );
        load_str(&text, Path::new("s.toml"), "s").map_err(|e| e.to_string())
    };
    let ok = load("payload_bytes = 1000\nresult_bytes = 2000\nerror_bytes = 5000").unwrap();
    assert_eq!(
        ok.workload.error_bytes, 5000,
        "errors above the limit are truncated, not refused"
    );
    // Each case: the workload, and what the error must say.
    let refused: [(&str, &[&str]); 3] = [
        (
            "payload_bytes = 1001",
            &[
                "s.toml:8:1: workload.payload_bytes",
                "protocol.max_payload_bytes 1000",
            ],
        ),
        (
            "result_bytes = 2001",
            &["workload.result_bytes", "protocol.max_result_bytes 2000"],
        ),
        (
            "payload_bytes = 3",
            &["workload.payload_bytes", "too short"],
        ),
    ];
    for (workload, says) in refused {
        assert_says(&load(workload).unwrap_err(), says);
    }
    // A claim answer of that many 2 MiB leases is too large for one frame
    // of the simulated wire.
    let max = leasehold_model::config::MAX_VALUE_BYTES;
    let leases = leasehold_model::wire::MAX_FRAME as u64 / (2 * max) + 1;
    let text = format!(
        "[protocol]\nconcurrency = {leases}\nmax_payload_bytes = {max}\n\n[workload]\npayload_bytes = {max}\n"
    );
    let e = load_str(&text, Path::new("w.toml"), "w")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("workload.payload_bytes") && e.contains("frame"),
        "{e}"
    );
}
