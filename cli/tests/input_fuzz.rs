//! Property tests of every parser a user can feed: scenario TOML,
//! durations, fault sentences and history JSON lines. Whatever the input,
//! none panics; what does not parse gives a typed error that says where;
//! and a scenario that loads is safe to plan (its workload, fault schedule
//! and clocks are built without overflow or unbounded allocation).

use leasehold_cli::cli::check_input::parse_history;
use leasehold_model::clock::ClockModel;
use leasehold_model::config::{ScriptedFault, SimConfig};
use leasehold_model::duration::{parse_ms, Dur, SignedDur, MAX_PARSED_MS};
use leasehold_model::scenario::load_str;
use leasehold_model::workload::WorkloadPlan;
use leasehold_sim::faults::{fault_schedule, heal_time, FaultPlan};
use proptest::prelude::*;
use std::path::Path;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 400,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Text that looks like a duration most of the time.
fn duration_text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[ +-]{0,2}([0-9.]{0,20}(ms|s|m|min|h|x|µs|)){0,10} ?",
        "\\PC{0,24}",
        (
            0u64..=u64::MAX,
            prop::sample::select(vec!["ms", "s", "m", "h"])
        )
            .prop_map(|(n, u)| format!("{n}{u}")),
    ]
}

/// Words of the fault sentences, plus noise.
fn sentence() -> impl Strategy<Value = String> {
    let word = prop_oneof![
        prop::sample::select(vec![
            "crash",
            "restart",
            "shutdown",
            "partition",
            "hold",
            "pause",
            "skew",
            "drift",
            "at",
            "for",
            "->",
            "store",
            "client",
            "worker-1",
            "worker-9",
            "sweeper-1",
            "1s",
            "0s",
            "100000h",
            "5s..10s",
            "10s..5s",
            "..",
            "+1m",
            "-2m",
            "50000ppm",
            "ppm",
            "-1000000ppm",
            "99999999999999999999ppm",
        ])
        .prop_map(String::from),
        duration_text(),
        "\\PC{0,8}",
    ];
    prop::collection::vec(word, 0..8).prop_map(|w| w.join(" "))
}

/// A TOML literal of any kind a scenario key might be given.
fn toml_value() -> impl Strategy<Value = String> {
    let scalar = prop_oneof![
        any::<i64>().prop_map(|n| n.to_string()),
        (0u64..5000).prop_map(|n| n.to_string()),
        any::<f64>().prop_map(|f| toml::Value::Float(f).to_string()),
        prop::sample::select(vec!["nan", "inf", "-inf", "true", "0.5", "1e300"])
            .prop_map(String::from),
        duration_text().prop_map(|s| toml::Value::String(s).to_string()),
        sentence().prop_map(|s| toml::Value::String(s).to_string()),
    ];
    prop_oneof![
        3 => scalar.clone(),
        1 => (scalar.clone(), scalar).prop_map(|(a, b)| format!("[{a}, {b}]")),
    ]
}

/// Keys of the scenario format by table, and a few that are not.
const KEYS: &[(&str, &[&str])] = &[
    (
        "",
        &[
            "seeds", "duration", "tick", "name", "variant", "store", "events", "bogus",
        ],
    ),
    ("topology", &["workers", "sweepers", "schedulers"]),
    (
        "protocol",
        &[
            "lease",
            "renew_interval",
            "sweep_interval",
            "max_drift_ppm",
            "fence_margin",
            "concurrency",
            "max_attempts",
            "backoff_base",
            "backoff_cap",
            "parallelism",
            "request_timeout",
            "poll_interval",
            "max_payload_bytes",
            "max_result_bytes",
            "max_error_bytes",
        ],
    ),
    (
        "workload",
        &[
            "jobs",
            "queues",
            "enqueue_over",
            "run_time",
            "fail_rate",
            "hang_rate",
            "cancel_rate",
            "payload_bytes",
            "result_bytes",
            "error_bytes",
        ],
    ),
    ("network", &["latency"]),
    (
        "faults",
        &[
            "window",
            "worker_crash_rate",
            "store_crash_rate",
            "restart_after",
            "partition_rate",
            "partition_len",
            "oneway_share",
            "pause_rate",
            "pause_len",
            "message_loss",
            "answer_loss",
            "store_conflict",
            "hold_rate",
            "hold_len",
            "clock_offset",
            "clock_drift_ppm",
            "clock_step_rate",
            "clock_step",
        ],
    ),
    ("expect", &["violation"]),
];

/// A scenario file of a few random settings, grouped by table.
fn scenario_text() -> impl Strategy<Value = String> {
    let entry = (0..KEYS.len(), any::<prop::sample::Index>(), toml_value());
    prop::collection::vec(entry, 0..10).prop_map(|entries| {
        let mut out = String::new();
        for (t, (table, keys)) in KEYS.iter().enumerate() {
            let mine: Vec<_> = entries.iter().filter(|e| e.0 == t).collect();
            if mine.is_empty() {
                continue;
            }
            if !table.is_empty() {
                out.push_str(&format!("[{table}]\n"));
            }
            for (_, k, v) in mine {
                out.push_str(&format!("{} = {v}\n", k.get(keys)));
            }
        }
        out
    })
}

/// Checks what a loaded scenario or a load error says.
fn judge_load(text: &str) -> Result<(), TestCaseError> {
    let lines = text.lines().count().max(1);
    match load_str(text, Path::new("f.toml"), "f") {
        Err(errors) => {
            prop_assert!(!errors.0.is_empty());
            for e in &errors.0 {
                prop_assert!(e.line >= 1 && e.line <= lines + 1, "{e}\n{text}");
                prop_assert!(e.col >= 1, "{e}");
                prop_assert!(e.to_string().starts_with("f.toml:"), "{e}");
                prop_assert!(!e.message.is_empty(), "{e}");
            }
        }
        Ok(cfg) => {
            prop_assert!(cfg.validate().is_ok());
            plan(&cfg);
        }
    }
    Ok(())
}

/// What a run builds from a scenario before the first step: none of it may
/// panic or allocate beyond the bounds.
fn plan(cfg: &SimConfig) {
    for seed in [0, 7] {
        let schedule = fault_schedule(cfg, seed);
        let _ = FaultPlan::new(&schedule);
        let heal = heal_time(cfg, &schedule);
        assert!(heal <= cfg.duration.as_ms());
        let w = WorkloadPlan::new(cfg, seed);
        assert_eq!(w.jobs.len(), cfg.workload.jobs as usize);
        for host in cfg.hosts().draw() {
            let c = ClockModel::of_host(&host.name, &schedule);
            for t in [0, heal, cfg.duration.as_ms()] {
                let _ = (c.mono(t), c.wall(t), c.true_at_mono(c.mono(t)));
            }
        }
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn durations_parse_or_point_at_the_bad_part(s in duration_text()) {
        match parse_ms(&s) {
            Ok(ms) => prop_assert!(ms <= MAX_PARSED_MS),
            Err(e) => {
                prop_assert!(e.offset <= s.len() && s.is_char_boundary(e.offset), "{e:?}");
                prop_assert!(!e.to_string().is_empty());
                prop_assert_eq!(&e.text, &s);
            }
        }
        for r in [s.parse::<Dur>().map(|d| d.as_ms() as i64), s.parse::<SignedDur>().map(|d| d.0)] {
            if let Err(e) = r {
                prop_assert!(e.offset <= s.len() && s.is_char_boundary(e.offset), "{e:?}");
            }
        }
    }

    #[test]
    fn fault_sentences_parse_or_are_located_in_the_file(s in sentence()) {
        match s.parse::<ScriptedFault>() {
            // What parses writes back as a sentence that parses the same.
            Ok(f) => prop_assert_eq!(f.to_string().parse::<ScriptedFault>(), Ok(f)),
            Err(e) => prop_assert!(!e.is_empty()),
        }
        let text = format!("seeds = 1\nevents = [\n  {},\n]\n", toml::Value::String(s.clone()));
        if let Err(errors) = load_str(&text, Path::new("f.toml"), "f") {
            for e in &errors.0 {
                prop_assert_eq!((e.line, e.col), (3, 3), "{} for {:?}", e, s);
            }
        }
    }

    #[test]
    fn scenario_files_load_or_say_where_they_are_wrong(text in scenario_text()) {
        judge_load(&text)?;
    }

    #[test]
    fn any_text_as_a_scenario_never_panics(text in "\\PC{0,300}") {
        judge_load(&text)?;
    }

    #[test]
    fn deeply_nested_values_never_overflow_the_stack(depth in 1usize..20_000, array in any::<bool>()) {
        let (open, close) = if array { ("[", "]") } else { ("{a=", "}") };
        let text = format!("seeds = {}1{}\n", open.repeat(depth), close.repeat(depth));
        judge_load(&text)?;
    }

    #[test]
    fn history_lines_parse_or_say_where_they_are_wrong(lines in prop::collection::vec(history_line(), 0..12)) {
        let text = lines.join("\n");
        let count = text.lines().count();
        match parse_history(&text, Path::new("h.jsonl")) {
            Ok(h) => prop_assert!(!h.events.is_empty()),
            Err(errors) => {
                prop_assert!(!errors.is_empty());
                for e in &errors {
                    let whole = e.line == 0 && e.col == 0;
                    prop_assert!(whole || (e.line <= count && e.col >= 1), "{e}");
                    prop_assert!(e.to_string().starts_with("h.jsonl"), "{e}");
                }
            }
        }
    }
}

/// Real store events and trace records, damaged or not, and noise.
fn history_line() -> impl Strategy<Value = String> {
    let event = r#"{"job":1,"token":0,"worker":null,"from":null,"to":"pending","at":5,"version":1,"kind":{"type":"enqueued","queue":"q","max_attempts":3,"run_at":5}}"#;
    let claim = r#"{"job":1,"token":1,"worker":"w","from":"pending","to":"running","at":6,"version":2,"kind":{"type":"claimed","attempt":1,"expires_at":100}}"#;
    let record = format!(r#"{{"type":"store_event","t":1,"seq":0,"req":null,"event":{event}}}"#);
    let other = r#"{"type":"client_done","t":5}"#.to_string();
    let real = prop::sample::select(vec![event.to_string(), claim.to_string(), record, other]);
    prop_oneof![
        3 => real.clone(),
        2 => (real, any::<prop::sample::Index>(), "\\PC{0,3}").prop_map(|(l, i, s)| {
            let cut = i.index(l.len() + 1);
            let cut = (0..=cut).rev().find(|&c| l.is_char_boundary(c)).unwrap_or(0);
            format!("{}{s}{}", &l[..cut], &l[cut..].chars().skip(1).collect::<String>())
        }),
        1 => "\\PC{0,40}",
        1 => Just(String::new()),
    ]
}
