//! I3 on a hand-written history: two workers believe they hold one job at
//! once, and a handler finishes after its worker's belief ended.

mod histories;

use histories::{
    belief, cfg, claim, claimed_until, end, handler, run_record, store_event, sweep_of_w1,
    w1_holds_job_1,
};
use leasehold_check::checker::check;
use leasehold_model::config::InvariantId;
use leasehold_model::history::{HandlerPhase, History};

#[test]
fn i3_two_workers_believe_at_once_and_a_handler_finishes_after_its_belief() {
    let mut records = vec![run_record(0)];
    records.extend(w1_holds_job_1(None));
    records.extend([
        belief(25, "w1", 1, 1, claimed_until(9_000)),
        sweep_of_w1(6_000, 2, 3, 5_020),
        store_event(6_100, 3, None, claim(1, 2, "w2", 2, 6_100, 4)),
        belief(6_110, "w2", 1, 2, claimed_until(11_000)),
        handler(9_500, "w1", 1, HandlerPhase::Done { ok: true }),
        end(12_000, false),
    ]);
    let h = History { records };
    let v = check(&h, &cfg());
    let i3: Vec<_> = v
        .iter()
        .filter(|v| v.invariant == InvariantId::I3)
        .collect();
    assert_eq!(i3.len(), 2, "{v:#?}");
    assert!(i3.iter().any(|v| v.message.contains("both believed")));
    assert!(i3.iter().any(|v| v.message.contains("no longer believed")));
}
