//! Bad scenario input never crashes and never loads: every count and size
//! has an upper bound, and every setting the correct core cannot work
//! under is refused at load, each with the file, line and column of its key.

use leasehold_model::bounds::{MAX_EVENTS, MAX_JOBS};
use leasehold_model::config::SimConfig;
use leasehold_model::scenario::{load_str, LoadError};
use std::path::Path;
use toml::{Table, Value};

fn load(text: &str) -> Result<SimConfig, Vec<LoadError>> {
    load_str(text, Path::new("bad.toml"), "bad").map_err(|e| e.0)
}

/// The errors of `text`, which must not load.
fn errors(text: &str) -> Vec<LoadError> {
    match load(text) {
        Ok(cfg) => panic!("loaded a bad file:\n{text}\n{cfg:?}"),
        Err(e) => e,
    }
}

/// The single error of `text`, checked to sit at `line:col` and mention `needle`.
fn one_error_at(text: &str, line: usize, col: usize, needle: &str) -> String {
    let errs = errors(text);
    assert_eq!(errs.len(), 1, "{errs:?}");
    let shown = errs[0].to_string();
    assert_eq!((errs[0].line, errs[0].col), (line, col), "{shown}");
    assert!(
        shown.starts_with(&format!("bad.toml:{line}:{col}: ")),
        "{shown}"
    );
    assert!(shown.contains(needle), "{shown} lacks {needle:?}");
    shown
}

/// A leaf of the scenario format: its dotted path and default value.
/// `{lo, hi}` tables are ranges, written as pairs in a file.
fn leaves(t: &Table, prefix: &str, out: &mut Vec<(String, Value)>) {
    for (k, v) in t {
        let path = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            Value::Table(sub) if sub.len() == 2 && sub.contains_key("lo") => {
                out.push((path, sub["lo"].clone()))
            }
            Value::Table(sub) => leaves(sub, &path, out),
            other => out.push((path, other.clone())),
        }
    }
}

/// Every numeric leaf of the format (counts, sizes, durations, rates) with
/// a value far beyond any sane bound, written as a one-key scenario file.
/// Keys the default leaves unset are added by hand.
fn huge_files() -> Vec<(String, String)> {
    let table = Table::try_from(SimConfig::default()).expect("the default serializes");
    let mut all = Vec::new();
    leaves(&table, "", &mut all);
    all.push(("protocol.parallelism".into(), Value::Integer(1)));
    let mut out = Vec::new();
    for (path, default) in all {
        // A seed names a run, like a name: every u64 is a valid seed, so
        // `first_seed` is no count or size to bound.
        if path == "first_seed" {
            continue;
        }
        let huge = match &default {
            // u32::MAX: still a valid u32 for the parser, so a bound must refuse it.
            Value::Integer(_) => "4294967295".to_string(),
            Value::Float(_) => "1e300".to_string(),
            Value::String(s) if s.parse::<leasehold_model::duration::Dur>().is_ok() => {
                "\"100000h\"".into()
            }
            Value::String(s) if s.parse::<leasehold_model::duration::SignedDur>().is_ok() => {
                "\"+100000h\"".into()
            }
            // Names and texts: not a count or a size.
            _ => continue,
        };
        let (table, key) = path.rsplit_once('.').map_or(("", path.as_str()), |p| p);
        let text = if table.is_empty() {
            format!("{key} = {huge}\n")
        } else {
            format!("[{table}]\n{key} = {huge}\n")
        };
        out.push((path.clone(), text.clone()));
        // The same beyond the bound as the upper end of a range.
        if matches!(
            default,
            Value::Integer(_) | Value::Float(_) | Value::String(_)
        ) && is_range(&path)
        {
            let lo = match &default {
                Value::String(s) => format!("{s:?}"),
                v => v.to_string(),
            };
            let text = format!("[{table}]\n{key} = [{lo}, {huge}]\n");
            out.push((format!("{path} (range)"), text));
        }
    }
    out
}

fn is_range(path: &str) -> bool {
    let d = Value::Table(Table::try_from(SimConfig::default()).unwrap());
    let v = path.split('.').try_fold(&d, |v, k| v.get(k));
    matches!(v, Some(Value::Table(t)) if t.contains_key("lo"))
}

#[test]
fn any_seed_a_file_can_write_is_a_first_seed() {
    // TOML integers stop at i64::MAX; every seed up to it loads.
    let cfg = load("first_seed = 9223372036854775807\n").expect("loads");
    assert_eq!(cfg.first_seed, i64::MAX as u64);
    errors("first_seed = -1\n");
}

#[test]
fn every_count_and_size_has_an_upper_bound_located_at_its_key() {
    let files = huge_files();
    assert!(files.len() > 50, "only {} numeric keys found", files.len());
    for (path, text) in files {
        let errs = errors(&text);
        let line = text.lines().count();
        assert!(
            errs.iter().any(|e| e.line == line && e.col >= 1),
            "{path}: no error located at line {line}:\n{text}{errs:#?}"
        );
    }
}

#[test]
fn every_float_refuses_nan_and_infinity_at_its_key() {
    let table = Table::try_from(SimConfig::default()).unwrap();
    let mut all = Vec::new();
    leaves(&table, "", &mut all);
    let floats: Vec<String> = all
        .into_iter()
        .filter(|(_, v)| matches!(v, Value::Float(_)))
        .map(|(p, _)| p)
        .collect();
    assert!(floats.len() >= 15, "{floats:?}");
    for path in floats {
        let (table, key) = path.rsplit_once('.').unwrap();
        for bad in ["nan", "inf", "-inf", "[nan, 1.0]"] {
            let text = format!("[{table}]\n{key} = {bad}\n");
            let errs = errors(&text);
            assert!(errs.iter().any(|e| e.line == 2), "{path} = {bad}: {errs:?}");
        }
    }
}

#[test]
fn four_billion_jobs_is_refused_not_allocated() {
    let shown = one_error_at(
        "[workload]\njobs = 4000000000\n",
        2,
        1,
        "above the bound of",
    );
    assert!(shown.contains(&MAX_JOBS.to_string()), "{shown}");
    assert!(load(&format!("[workload]\njobs = {MAX_JOBS}\n")).is_ok());
}

#[test]
fn too_many_events_queues_and_bytes_are_refused() {
    let events: Vec<String> = (0..=MAX_EVENTS)
        .map(|i| format!("\"crash worker-1 at {}ms\"", i + 1))
        .collect();
    one_error_at(
        &format!("events = [{}]\n", events.join(", ")),
        1,
        1,
        "scripted events",
    );
    let queues: Vec<String> = (0..=leasehold_model::bounds::MAX_QUEUES)
        .map(|i| format!("\"q{i}\""))
        .collect();
    one_error_at(
        &format!("[workload]\nqueues = [{}]\n", queues.join(", ")),
        2,
        1,
        "queues",
    );
    one_error_at(
        "[workload]\njobs = 1000\npayload_bytes = 2000000\n[protocol]\nmax_payload_bytes = 2000000\n",
        3,
        1,
        "bytes the store may hold",
    );
}

#[test]
fn scripted_faults_beyond_their_bounds_are_located_at_the_sentence() {
    for (sentence, needle) in [
        ("pause worker-1 for 100000h at 1s", "longest duration"),
        ("partition worker-1 store 1s..100000h", "longest duration"),
        ("skew worker-1 +100000h at 1s", "10 years"),
        ("drift worker-1 -1000000ppm at 0s", "strictly within"),
        (
            "drift worker-1 9223372036854775807ppm at 0s",
            "strictly within",
        ),
    ] {
        one_error_at(
            &format!("seeds = 1\nevents = [\n  \"crash worker-2 at 1s\",\n  \"{sentence}\",\n]\n"),
            4,
            3,
            needle,
        );
    }
}

#[test]
fn a_bad_hold_is_located_at_its_sentence() {
    for (sentence, needle) in [
        // Unreadable: the one-way arrow without a second host.
        ("hold worker-1 -> 1s..2s", "hold A -> B FROM..TO"),
        ("hold worker-1 -> store 2s..1s", "is empty"),
        ("hold worker-1 -> nobody 1s..2s", "unknown host"),
        ("hold store -> store 1s..2s", "holds nothing"),
    ] {
        one_error_at(
            &format!("seeds = 1\nevents = [\n  \"crash worker-2 at 1s\",\n  \"{sentence}\",\n]\n"),
            4,
            3,
            needle,
        );
    }
    let ok = "seeds = 1\nevents = [\"hold worker-1 -> store 1s..2s\"]\n";
    assert!(load(ok).is_ok());
}

#[test]
fn a_tick_longer_than_a_request_can_take_is_refused_at_load() {
    one_error_at("tick = \"3s\"\n", 1, 1, "protocol.request_timeout 2s");
    // Two hops (request, answer) of a 1 s delivery quantum do not fit in
    // 2 s; of 990 ms they do.
    one_error_at("tick = \"1s\"\n", 1, 1, "every request would time out");
    assert!(load("tick = \"990ms\"\n").is_ok());
    one_error_at(
        "[network]\nlatency = [\"1s\", \"1500ms\"]\n",
        2,
        1,
        "minimum latency",
    );
}

#[test]
fn concurrency_above_the_stores_claim_cap_is_refused_at_load() {
    let cap = leasehold_core::DEFAULT_MAX_CLAIM_BATCH;
    one_error_at(
        &format!("[protocol]\nconcurrency = {}\n", cap + 1),
        2,
        1,
        "claim cap",
    );
    assert!(load(&format!("[protocol]\nconcurrency = {cap}\n")).is_ok());
}

#[test]
fn a_fence_margin_that_eats_the_lease_is_refused_at_load() {
    one_error_at(
        "[protocol]\nlease = \"5s\"\nrenew_interval = \"1s\"\nfence_margin = \"5s\"\n",
        4,
        1,
        "fence_margin",
    );
    // Under ρ = 1 % a 5 s lease shrinks to 4.90 s: a 4.9 s margin leaves nothing.
    one_error_at(
        "[protocol]\nlease = \"5s\"\nrenew_interval = \"1s\"\nfence_margin = \"4900ms\"\n",
        4,
        1,
        "no usable lease",
    );
}

#[test]
fn a_scripted_drift_beyond_the_swarm_bound_is_refused_but_beyond_rho_loads() {
    one_error_at(
        "events = [\"drift worker-1 1000000ppm at 0s\"]\n",
        1,
        11,
        "strictly within ±1000000ppm",
    );
    // Beyond ρ (max_drift_ppm) is a fault the library runs on purpose.
    let cfg = load("events = [\"drift worker-1 999999ppm at 0s\"]\n").unwrap();
    assert_eq!(cfg.events.len(), 1);
}

#[test]
fn store_caps_on_lease_attempts_and_queue_names_are_refused_at_load() {
    one_error_at(
        "[protocol]\nlease = \"25h\"\nrenew_interval = \"1h\"\n",
        2,
        1,
        "every claim would be refused",
    );
    one_error_at("[protocol]\nmax_attempts = 1001\n", 2, 1, "attempt cap");
    one_error_at(
        &format!("[workload]\nqueues = [\"a\", \"{}\"]\n", "q".repeat(129)),
        2,
        16,
        "every enqueue would be refused",
    );
}

#[test]
fn schedule_intervals_are_bounded_at_their_key() {
    let errs = errors("[[schedules]]\nname = \"a\"\nevery = \"100000h\"\n");
    assert!(errs.iter().any(|e| e.line == 3), "{errs:?}");
}
