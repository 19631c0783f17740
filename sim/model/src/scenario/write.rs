//! Writes a [`SimConfig`] back as scenario TOML that loads again.
//!
//! Only settings that differ from the defaults are written (plus `name`,
//! `description` and `seeds`), ranges as `[min, max]` (or one value when
//! both ends agree) and scripted faults as their sentences.

use crate::config::SimConfig;
use toml::{Table, Value};

/// Deepest nesting [`prune`] descends into.
const MAX_DEPTH: usize = 16;

/// The scenario file text for `cfg`, led by `header` as `#` comment lines.
pub fn to_toml(cfg: &SimConfig, header: &str) -> Result<String, String> {
    let mut value = as_table(cfg)?;
    let defaults = as_table(&SimConfig::default())?;
    prune(&mut value, &defaults, 0);
    for key in ["name", "description", "seeds", "first_seed"] {
        if key == "first_seed" && cfg.first_seed == 0 {
            continue;
        }
        if let Some(v) = as_table(cfg)?.remove(key) {
            value.insert(key.to_string(), v);
        }
    }
    if cfg.description.is_empty() {
        value.remove("description");
    }
    if !cfg.events.is_empty() {
        let sentences = cfg.events.iter().map(|e| Value::String(e.to_string()));
        value.insert("events".into(), Value::Array(sentences.collect()));
    }
    let body = toml::to_string(&value).map_err(|e| e.to_string())?;
    let mut out = String::new();
    for line in header.lines() {
        out.push_str(&format!("# {line}\n").replace("# \n", "#\n"));
    }
    if !header.is_empty() {
        out.push('\n');
    }
    out.push_str(&body);
    Ok(out)
}

fn as_table(cfg: &SimConfig) -> Result<Table, String> {
    let mut t = Table::try_from(cfg).map_err(|e| e.to_string())?;
    for (_, v) in t.iter_mut() {
        ranges_as_pairs(v, 0);
    }
    Ok(t)
}

/// `{lo, hi}` tables (the derived form of `Range`) become `[lo, hi]`, or a
/// single value when both ends are equal.
fn ranges_as_pairs(v: &mut Value, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    let Value::Table(t) = v else { return };
    if t.len() == 2 {
        if let (Some(lo), Some(hi)) = (t.get("lo"), t.get("hi")) {
            *v = if lo == hi {
                lo.clone()
            } else {
                Value::Array(vec![lo.clone(), hi.clone()])
            };
            return;
        }
    }
    for (_, child) in t.iter_mut() {
        ranges_as_pairs(child, depth + 1);
    }
}

/// Removes every entry equal to the default, and tables left empty.
fn prune(t: &mut Table, defaults: &Table, depth: usize) {
    let keys: Vec<String> = t.keys().cloned().collect();
    for k in keys {
        let Some(d) = defaults.get(&k) else { continue };
        let remove = match (t.get_mut(&k), d) {
            (Some(Value::Table(sub)), Value::Table(dsub)) if depth < MAX_DEPTH => {
                prune(sub, dsub, depth + 1);
                sub.is_empty()
            }
            (Some(v), d) => v == d,
            (None, _) => false,
        };
        if remove {
            t.remove(&k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Range, ScriptedFault};
    use crate::duration::Dur;
    use std::path::Path;

    #[test]
    fn written_config_loads_back_equal() {
        let mut cfg = SimConfig {
            name: "round trip".into(),
            variant: Some("claim-without-cas".into()),
            ..SimConfig::default()
        };
        cfg.workload.jobs = 3;
        cfg.workload.run_time = Range::new(Dur::secs(1), Dur::secs(4));
        cfg.faults.message_loss = Range::new(0.0, 0.25);
        cfg.faults.pause_len = Range::exactly(Dur::secs(7));
        cfg.protocol.parallelism = Some(2);
        cfg.events = [
            "crash worker-2 at 30s",
            "partition worker-1 -> store 40s..1m35s",
        ]
        .iter()
        .map(|s| s.parse::<ScriptedFault>().unwrap())
        .collect();
        let text = to_toml(&cfg, "shrunk\nby a test").unwrap();
        assert!(text.starts_with("# shrunk\n# by a test\n"), "{text}");
        let back = super::super::load_str(&text, Path::new("x.toml"), "x").unwrap();
        assert_eq!(back, cfg, "{text}");
    }

    #[test]
    fn default_config_writes_almost_nothing() {
        let cfg = SimConfig {
            name: "d".into(),
            ..SimConfig::default()
        };
        let text = to_toml(&cfg, "").unwrap();
        assert_eq!(text.lines().count(), 2, "{text}");
    }
}
