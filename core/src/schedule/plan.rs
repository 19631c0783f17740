//! Which plan times are due: a pure function of the rule, the catch-up
//! policy and a window of **store** time.
//!
//! A scheduler calls [`due`] with the store's `now` (never its own clock),
//! the last instant it has nothing left to do for (`after`: the schedule's
//! last put, or the last plan time it fired), and its misfire `grace`:
//! - plan times in `(after, now]` with `now − p ≤ grace` are **on time** and
//!   all due (up to `limit`, the most recent first);
//! - older ones are **late** (the scheduler was away, paused, cut off, or
//!   the store's clock jumped) and the catch-up policy picks the most recent
//!   [`CatchUp::bound`] of them.
//!
//! The answer is ascending and its length is at most `limit +
//! catch_up.bound()`. The walk runs backwards from `now` and is bounded by
//! that count, so a schedule put long ago costs no more than one put now.

use super::{CatchUp, CompiledRule};
use crate::time::{Millis, StoreTime};

/// The plan times of `rule` due at store time `now` after `after`
/// (exclusive), as the module docs define them.
pub fn due(
    rule: &CompiledRule,
    catch_up: CatchUp,
    after: StoreTime,
    now: StoreTime,
    grace: Millis,
    limit: usize,
) -> Vec<StoreTime> {
    let bound = catch_up.bound() as usize;
    let grace_ms = i64::try_from(grace.0).unwrap_or(i64::MAX);
    let on_time_from = now.0.saturating_sub(grace_ms);
    let mut on_time = Vec::new();
    let mut late = Vec::new();
    let mut next = rule.previous(now);
    for _ in 0..limit.saturating_add(bound).saturating_add(1) {
        let Some(p) = next else { break };
        if p <= after {
            break;
        }
        if p.0 >= on_time_from {
            if on_time.len() < limit {
                on_time.push(p);
            }
        } else if late.len() < bound {
            late.push(p);
        } else {
            break;
        }
        next = rule.previous_before(p);
    }
    late.reverse();
    on_time.reverse();
    late.extend(on_time);
    debug_assert!(late.windows(2).all(|w| w[0] < w[1]), "ascending");
    debug_assert!(late.iter().all(|p| *p > after && *p <= now));
    late
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::Rule;

    fn every(ms: u64) -> CompiledRule {
        Rule::every(Millis(ms)).compile().unwrap()
    }

    fn ts(v: &[i64]) -> Vec<StoreTime> {
        v.iter().map(|&t| StoreTime(t)).collect()
    }

    /// [`due`] with its times in ms (after, now, grace), the limit last.
    fn due_ms(
        r: &CompiledRule,
        catch_up: CatchUp,
        after: i64,
        now: i64,
        grace: u64,
        limit: usize,
    ) -> Vec<StoreTime> {
        due(
            r,
            catch_up,
            StoreTime(after),
            StoreTime(now),
            Millis(grace),
            limit,
        )
    }

    #[test]
    fn on_time_plan_times_are_all_due() {
        let r = every(1000);
        let d = due_ms(&r, CatchUp::Latest, 1000, 3500, 5000, 100);
        assert_eq!(d, ts(&[2000, 3000]));
    }

    #[test]
    fn nothing_is_due_at_or_before_after() {
        let r = every(1000);
        assert!(due_ms(&r, CatchUp::Latest, 3000, 3999, 5000, 100).is_empty());
    }

    #[test]
    fn latest_keeps_only_the_most_recent_late_plan_time() {
        let r = every(1000);
        // grace 1.5s at now=10.2s: 9s and 10s on time, 1..8s late.
        let d = due_ms(&r, CatchUp::Latest, 0, 10_200, 1500, 100);
        assert_eq!(d, ts(&[8000, 9000, 10_000]));
    }

    #[test]
    fn each_keeps_the_most_recent_late_plan_times_up_to_its_bound() {
        let r = every(1000);
        let d = due_ms(&r, CatchUp::Each { max: 3 }, 0, 10_200, 1500, 100);
        assert_eq!(d, ts(&[6000, 7000, 8000, 9000, 10_000]));
        let d = due_ms(&r, CatchUp::Each { max: 100 }, 4000, 10_200, 1500, 100);
        assert_eq!(d, ts(&[5000, 6000, 7000, 8000, 9000, 10_000]));
    }

    #[test]
    fn the_limit_bounds_on_time_plan_times() {
        let r = every(10);
        let d = due_ms(&r, CatchUp::Latest, 0, 100_000, 100_000, 5);
        assert_eq!(d, ts(&[99_960, 99_970, 99_980, 99_990, 100_000]));
    }

    #[test]
    fn a_schedule_put_long_ago_costs_a_bounded_walk() {
        let r = Rule::cron("* * * * * *").compile().unwrap();
        let now = StoreTime(1_704_067_200_000);
        let d = due_ms(&r, CatchUp::Each { max: 2 }, 0, now.0, 3000, 100);
        assert_eq!(d.len(), 2 + 4);
        assert_eq!(*d.last().unwrap(), now);
    }
}
