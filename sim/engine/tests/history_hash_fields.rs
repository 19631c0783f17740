//! I10's hash (format 2) is a function of the whole history: changing any
//! one field of any record changes it. The records come from real runs;
//! each field is changed through the record's JSON form (the trace), so
//! the test covers every field the trace shows without naming them.

mod engine_support;

use engine_support::run;
use leasehold_model::builtin;
use leasehold_model::history::{History, Record};
use serde_json::Value;
use std::collections::BTreeMap;

/// Records of this many of each kind are changed field by field.
const PER_KIND: usize = 3;

/// A record's kind: its type, and the tag of what it carries.
fn kind(v: &Value) -> String {
    let tag = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("");
    let inner = |k: &str, t: &str| {
        v.get(k)
            .and_then(|x| x.get(t))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    format!(
        "{}/{}{}{}/{}/{}",
        tag("type"),
        tag("what"),
        tag("phase"),
        tag("fate"),
        inner("op", "op"),
        inner("reply", "reply"),
    )
}

/// Every one-leaf change of `v`: numbers moved by one (floats by a
/// quarter), booleans flipped, strings lengthened, arrays shortened.
fn changes(v: &Value, out: &mut Vec<Value>) {
    match v {
        Value::Bool(b) => out.push(Value::Bool(!b)),
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                out.push(Value::from(if u == u64::MAX { u - 1 } else { u + 1 }));
            } else if let Some(i) = n.as_i64() {
                out.push(Value::from(i - 1));
            } else if let Some(f) = n.as_f64() {
                out.push(Value::from(f + 0.25));
            }
        }
        Value::String(s) => out.push(Value::String(format!("{s}x"))),
        Value::Array(a) => {
            if !a.is_empty() {
                out.push(Value::Array(a[..a.len() - 1].to_vec()));
            }
            for (i, x) in a.iter().enumerate() {
                let mut sub = Vec::new();
                changes(x, &mut sub);
                out.extend(sub.into_iter().map(|c| {
                    let mut a = a.clone();
                    a[i] = c;
                    Value::Array(a)
                }));
            }
        }
        Value::Object(m) => {
            for (k, x) in m {
                let mut sub = Vec::new();
                changes(x, &mut sub);
                out.extend(sub.into_iter().map(|c| {
                    let mut m = m.clone();
                    m.insert(k.clone(), c);
                    Value::Object(m)
                }));
            }
        }
        Value::Null => {}
    }
}

#[test]
fn changing_any_one_field_of_any_record_changes_the_history_hash() {
    let mut tested: BTreeMap<String, usize> = BTreeMap::new();
    let mut total = 0;
    for (cfg, seed) in [(builtin::standard(), 1), (builtin::small_swarm(), 3)] {
        let out = run(&cfg, seed);
        let base = out.history.hash();
        assert_eq!(base, out.history_hash);
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        for (i, r) in out.history.records.iter().enumerate() {
            let v = serde_json::to_value(r).unwrap();
            let k = kind(&v);
            let n = seen.entry(k.clone()).or_default();
            if *n >= PER_KIND {
                continue;
            }
            *n += 1;
            let mut cs = Vec::new();
            changes(&v, &mut cs);
            for c in cs {
                // A change the record type cannot hold (an enum's name, a
                // fault's sentence) is not a history; one that reads back
                // as the same record changed nothing.
                let Ok(changed) = serde_json::from_value::<Record>(c.clone()) else {
                    continue;
                };
                if &changed == r {
                    continue;
                }
                // The record alone, and (for the first change of each
                // kind) the whole history with it in its place.
                let alone = |r: &Record| {
                    History {
                        records: vec![r.clone()],
                    }
                    .hash()
                };
                assert_ne!(
                    alone(&changed),
                    alone(r),
                    "{} seed {seed}: record {i} changed to {c} kept the hash",
                    cfg.name
                );
                if !tested.contains_key(&k) {
                    let mut h = out.history.clone();
                    h.records[i] = changed;
                    assert_ne!(h.hash(), base, "{} seed {seed}: record {i}", cfg.name);
                }
                *tested.entry(k.clone()).or_default() += 1;
                total += 1;
            }
        }
    }
    for k in [
        "run///",
        "request//claim/",
        "served/answered//leases",
        "answer///leases",
        "belief/claimed//",
        "handler/done//",
        "store_event///",
        "final///",
        "end///",
    ] {
        let hit = tested.iter().any(|(t, n)| t.starts_with(k) && *n > 0);
        assert!(hit, "no change tested on a {k} record: {tested:?}");
    }
    assert!(total > 500, "only {total} changes tested: {tested:?}");
}

#[test]
fn dropping_or_swapping_records_changes_the_history_hash() {
    let out = run(&builtin::calm(), 1);
    let base = out.history.hash();
    let mut h = out.history.clone();
    h.records.pop();
    assert_ne!(h.hash(), base, "a shorter history");
    let mut h = out.history.clone();
    let n = h.records.len();
    assert_ne!(h.records[n / 2], h.records[n / 2 + 1]);
    h.records.swap(n / 2, n / 2 + 1);
    assert_ne!(h.hash(), base, "two records in the other order");
}
