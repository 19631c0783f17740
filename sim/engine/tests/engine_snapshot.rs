//! Pins what one small fixed run does, so behaviour changes show up in
//! review: the counts of every kind of record of the calm scenario, seed 1.

mod engine_support;

use leasehold_model::builtin;

#[test]
fn calm_seed_1_history_summary() {
    let out = engine_support::run(&builtin::calm(), 1);
    let mut text = String::new();
    for (k, n) in out.history.summary() {
        text.push_str(&format!("{k} {n}\n"));
    }
    text.push_str(&format!(
        "sim_time_ms {}\nquiet_end {}\nviolations {}\nhash {:016x}\n",
        out.sim_time_ms,
        out.quiet_end,
        out.violations.len(),
        out.history_hash
    ));
    insta::assert_snapshot!(text);
}
