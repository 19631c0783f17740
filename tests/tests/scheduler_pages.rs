//! The scheduler on the memory store: what it reads of the store's
//! schedules.

use leasehold_core::*;
use leasehold_memory::MemoryStore;
use std::collections::BTreeSet;
use std::sync::Arc;

/// The scheduler reads the schedules page by page (500 a page): one more
/// than a page still fires, not only the first page's. `list_all_schedules`
/// reads them all too.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn every_schedule_fires_past_the_first_page() {
    const SCHEDULES: usize = 501;
    let clock = ManualStoreClock::new(StoreTime(1_000_000));
    let store = Arc::new(MemoryStore::with_clock(Policy::default(), clock.clone()));
    for i in 0..SCHEDULES {
        let s = Schedule::new(format!("s{i:04}"), "q", "p", Rule::every(Millis(10_000)));
        store.put_schedule(s).await.unwrap();
    }
    let all = list_all_schedules(&*store).await.unwrap();
    assert_eq!(all.len(), SCHEDULES, "list_all_schedules reads every page");
    let cfg = SchedulerConfig::builder("pages").build().unwrap();
    let mut scheduler = Scheduler::new(store.clone(), TokioRuntime::new(), cfg);
    let first = scheduler.tick_once().await.unwrap();
    assert_eq!(
        first.now,
        Some(StoreTime(1_000_000)),
        "judged by the store's now"
    );
    clock.advance(Millis(10_000));
    let second = scheduler.tick_once().await.unwrap();
    let fired: BTreeSet<&str> = first
        .fired
        .iter()
        .chain(&second.fired)
        .map(|(name, _, _)| name.as_str())
        .collect();
    assert_eq!(fired.len(), SCHEDULES, "{second:?}");
}

/// A tick fires only the plan times after the last one it fired: a plan
/// time fired in one tick is not fired again in the next.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_plan_time_fired_is_not_fired_again_next_tick() {
    let clock = ManualStoreClock::new(StoreTime(1_000_000));
    let store = Arc::new(MemoryStore::with_clock(Policy::default(), clock.clone()));
    let every_10s = Schedule::new("report", "q", "p", Rule::every(Millis(10_000)))
        .catch_up(CatchUp::Each { max: 10 });
    store.put_schedule(every_10s).await.unwrap();
    let cfg = SchedulerConfig::builder("cursor").build().unwrap();
    let mut scheduler = Scheduler::new(store.clone(), TokioRuntime::new(), cfg);
    clock.advance(Millis(10_000));
    let first = scheduler.tick_once().await.unwrap();
    assert_eq!(first.fired.len(), 1, "{first:?}");
    clock.advance(Millis(10_000));
    let second = scheduler.tick_once().await.unwrap();
    let times: Vec<StoreTime> = second.fired.iter().map(|f| f.1).collect();
    assert_eq!(times, [StoreTime(1_020_000)], "only the new plan time");
}
