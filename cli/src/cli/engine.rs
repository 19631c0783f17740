//! The one place the CLI calls the simulator engine (`runner`, `checker`,
//! `report`), reduced to what the commands print and judge.

use super::stores::Stores;
use leasehold_check::checker::{check_store_events, Violation};
use leasehold_check::finding::Printed;
use leasehold_model::config::{InvariantId, ScriptedFault, SimConfig};
use leasehold_model::history::{History, Record};
use leasehold_model::store_kind::StoreKind;
use leasehold_sim::report::times::Origin;
use leasehold_sim::report::violation_report;
use leasehold_sim::runner::{fault_schedule, PreparedConfig, SeedOutcome};

/// One violation rendered for people: how the CLI prints a finding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    /// One line: invariant, job, message.
    pub summary: String,
    /// The full report, ending with the replay command.
    pub report: String,
}

/// One seed as the commands show it: the door's own outcome, its history
/// taken out, and each of its violations rendered, in the same order.
#[derive(Clone, Debug)]
pub struct Shown {
    /// What the seed left (the history is dropped: a run keeps every seed).
    pub outcome: SeedOutcome,
    /// One rendering per `outcome.violations`, same order.
    found: Vec<Found>,
    /// Whether the seed was run twice and its hashes compared (I10).
    pub replayed: bool,
}

impl Shown {
    /// Every violation, in the checker's order (the CLI's own I10 and I11
    /// findings first).
    pub fn violations(&self) -> &[Violation] {
        &self.outcome.violations
    }

    /// Every violation's rendering, in the same order.
    pub fn found(&self) -> &[Found] {
        &self.found
    }

    /// Each violation with its rendering.
    pub fn findings(&self) -> impl Iterator<Item = (&Violation, &Found)> {
        self.outcome.violations.iter().zip(&self.found)
    }

    /// Puts a finding of the CLI's own (a determinism or differential
    /// check) before the checker's.
    pub fn add_first(&mut self, (v, f): (Violation, Found)) {
        self.outcome.violations.insert(0, v);
        self.found.insert(0, f);
    }
}

/// The replay command line for a scenario file and seed on a store.
pub fn replay_command(path: &str, seed: u64, store: StoreKind) -> String {
    leasehold_sim::report::replay_command_on(path, seed, Some(store))
}

fn found(v: &Violation, cfg: &SimConfig, seed: u64, path: Option<&str>) -> Found {
    let job = v.job.map(|j| format!(" job {}", j.0)).unwrap_or_default();
    Found {
        summary: format!(
            "{} ({}){job}: {}",
            v.invariant,
            v.invariant.name(),
            Origin::SIM.humanize(&v.message)
        ),
        report: violation_report(v, cfg, seed, path),
    }
}

/// Runs one seed on the scenario's store and checks it.
pub fn run(cfg: &PreparedConfig, seed: u64, path: &str, stores: &Stores) -> Result<Shown, String> {
    run_keep(cfg, seed, path, stores).map(|(r, _)| r)
}

/// Runs one seed on the scenario's store, checks it, and keeps the history.
pub fn run_keep(
    cfg: &PreparedConfig,
    seed: u64,
    path: &str,
    stores: &Stores,
) -> Result<(Shown, History), String> {
    let kind = stores.kind_for(cfg);
    let cfg = &cfg.clone().on_store(kind);
    let mut outcome = stores.run(kind, cfg, seed).map_err(|e| e.to_string())?;
    let history = outcome.take_history();
    let found = outcome
        .violations
        .iter()
        .map(|v| found(v, cfg, seed, Some(path)))
        .collect();
    let shown = Shown {
        outcome,
        found,
        replayed: false,
    };
    Ok((shown, history))
}

/// I10: the second run of a seed must give the same history hash.
pub fn determinism(
    first: u64,
    second: u64,
    cfg: &SimConfig,
    seed: u64,
    path: &str,
) -> Option<(Violation, Found)> {
    (first != second).then(|| {
        let v = Violation::new(
            InvariantId::I10,
            format!(
                "two runs of seed {seed} gave different histories: hash {first:016x}, then {second:016x}"
            ),
        );
        let f = found(&v, cfg, seed, Some(path));
        (v, f)
    })
}

/// The store's answers in execution order: (request id, answer).
fn answers(h: &History) -> Vec<(u64, String)> {
    h.records
        .iter()
        .filter_map(|r| match r {
            Record::Served {
                id,
                reply: Some(reply),
                ..
            } => Some((*id, serde_json::to_string(reply).unwrap_or_default())),
            _ => None,
        })
        .collect()
}

/// Differential mode: the first answer in which two stores' runs of the
/// same seed differ, as an I11 finding naming both answers.
pub fn first_difference(
    a: (StoreKind, &History),
    b: (StoreKind, &History),
    cfg: &SimConfig,
    seed: u64,
    path: &str,
) -> Option<(Violation, Found)> {
    let (xa, xb) = (answers(a.1), answers(b.1));
    let op_of = |h: &History, id: u64| {
        h.records.iter().find_map(|r| match r {
            Record::Request {
                id: i, op, host, ..
            } if *i == id => Some(format!(
                "{host} {}",
                serde_json::to_string(op).unwrap_or_default()
            )),
            _ => None,
        })
    };
    let n = xa.len().max(xb.len());
    let k = (0..n).find(|&k| xa.get(k) != xb.get(k))?;
    let show = |x: Option<&(u64, String)>| {
        x.map_or("no answer (the run ended)".to_string(), |(id, r)| {
            format!("#{id} {r}")
        })
    };
    let id = xa.get(k).or(xb.get(k)).map_or(0, |x| x.0);
    let request = op_of(a.1, id)
        .or_else(|| op_of(b.1, id))
        .unwrap_or_else(|| "?".into());
    let message = format!(
        "the stores answered differently at answer {k} (request #{id}: {request}):\n    {}: {}\n    {}: {}",
        a.0,
        show(xa.get(k)),
        b.0,
        show(xb.get(k))
    );
    let v = Violation::new(InvariantId::I11, message);
    let mut f = found(&v, cfg, seed, Some(path));
    f.report = format!(
        "{}\n  replay: {}\n  replay: {}",
        f.report
            .lines()
            .take_while(|l| !l.trim_start().starts_with("replay:"))
            .collect::<Vec<_>>()
            .join("\n"),
        compared(replay_command(path, seed, a.0)),
        compared(replay_command(path, seed, b.0))
    );
    Some((v, f))
}

/// A replay command of one side of a differential run: with the inputs
/// both sides drew (`--compared`).
fn compared(command: String) -> String {
    format!("{command} --compared")
}

/// The seed's concrete fault schedule.
pub fn schedule(cfg: &SimConfig, seed: u64) -> Vec<ScriptedFault> {
    fault_schedule(cfg, seed)
}

/// The ground-truth-free checks on recorded store events.
/// Reports name the invariant, job, tokens, workers and store time (a
/// recorded history has no scenario, seed or true time to show), store
/// times as durations from the first event's.
pub fn check_events(events: &[leasehold_core::Event], parallelism: Option<u32>) -> Vec<Found> {
    let origin = Origin::first_of(events.iter().map(|e| e.at));
    check_store_events(events, parallelism)
        .iter()
        .map(|v| {
            let mut shown = Printed::new(v).message(|m| origin.humanize(m));
            if let Some(st) = v.store_time {
                shown = shown.with(
                    "store time",
                    format!("{} from the first event ({st})", origin.since(st)),
                );
            }
            Found {
                summary: format!("{}: {}", v.invariant, origin.humanize(&v.message)),
                report: shown.to_string(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasehold_model::history::Reply;

    fn calm() -> (SimConfig, History) {
        let mut cfg = SimConfig {
            name: "calm".into(),
            duration: leasehold_model::duration::Dur::secs(120),
            ..SimConfig::default()
        };
        cfg.workload.jobs = 5;
        cfg.faults.window = leasehold_model::duration::Dur::secs(30);
        let valid = PreparedConfig::new(cfg.clone()).unwrap();
        let memory = std::sync::Arc::new(leasehold_sim::stores::MemoryFactory);
        let out = leasehold_sim::runner::run_seed(&valid, 1, &memory, Default::default()).unwrap();
        (cfg, out.history)
    }

    #[test]
    fn a_second_run_with_another_hash_is_an_i10_violation() {
        let (cfg, _) = calm();
        assert!(determinism(7, 7, &cfg, 1, "x.toml").is_none());
        let (v, f) = determinism(7, 8, &cfg, 1, "x.toml").expect("reported");
        assert_eq!(v.invariant, InvariantId::I10);
        assert!(
            f.report.contains("leasehold replay x.toml --seed 1"),
            "{}",
            f.report
        );
    }

    #[test]
    fn differential_mode_names_the_request_and_both_answers() {
        let (cfg, a) = calm();
        assert!(first_difference(
            (StoreKind::Sqlite, &a),
            (StoreKind::Memory, &a),
            &cfg,
            1,
            "x.toml"
        )
        .is_none());
        let mut b = a.clone();
        let k = b
            .records
            .iter()
            .position(|r| {
                matches!(
                    r,
                    Record::Served {
                        reply: Some(Reply::Job(_)),
                        ..
                    }
                )
            })
            .expect("an enqueue was served");
        if let Record::Served { reply, .. } = &mut b.records[k] {
            *reply = Some(Reply::Job(leasehold_core::JobId(999)));
        }
        let (v, f) = first_difference(
            (StoreKind::Sqlite, &a),
            (StoreKind::Memory, &b),
            &cfg,
            1,
            "x.toml",
        )
        .expect("the planted difference is found");
        assert_eq!(v.invariant, InvariantId::I11);
        assert!(f.report.contains("999"), "{}", f.report);
        assert!(f.report.contains("enqueue"), "{}", f.report);
        assert!(f.report.contains("--store sqlite"), "{}", f.report);
    }
}
