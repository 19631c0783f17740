//! Host clocks as pure functions of true (simulated) time.
//!
//! Every host has a monotonic clock and a wall clock. True time is the
//! simulation's one clock (the engine's event-driven time), in milliseconds. A host's
//! monotonic clock runs at `1 + drift` against true time, with the drift
//! changing at scheduled instants (`drift HOST PPM at T`); the wall clock is
//! `EPOCH + offset + monotonic + steps`, where the offset is the sum of the
//! host's skews at `0s` and the steps are its skews at later times
//! (`skew HOST +X at T`, like NTP corrections).
//!
//! All clock faults are known before the run starts (the schedule is drawn
//! from the seed), so the model is a function: `mono(t)`, `wall(t)` and the
//! inverse `true_at_mono(local)` used to turn a local sleep into a true one.
//! Arithmetic is exact: monotonic time is kept in millionths of a
//! millisecond, so drift never accumulates rounding error.

use crate::config::ScriptedFault;
use leasehold_core::StoreTime;

/// The fixed wall-clock epoch of every run: 2024-01-01T00:00:00Z.
pub const EPOCH_MS: i64 = 1_704_067_200_000;

/// Millionths per unit, the scale of drift.
const PPM: i128 = 1_000_000;

/// One stretch of constant drift.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Segment {
    /// True time the stretch starts (ms).
    start: u64,
    /// Monotonic reading at `start`, in millionths of a millisecond.
    mono_u: i128,
    /// Drift in ppm (greater than −1,000,000).
    ppm: i64,
}

/// The clocks of one host over the whole run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClockModel {
    offset: i64,
    segments: Vec<Segment>,
    steps: Vec<(u64, i64)>,
}

impl Default for ClockModel {
    fn default() -> Self {
        ClockModel::new(0, &[], &[])
    }
}

impl ClockModel {
    /// A clock with wall `offset` (ms), drift changes `(at, ppm)` and wall
    /// steps `(at, by)`; the lists need not be sorted.
    pub fn new(offset: i64, drifts: &[(u64, i64)], steps: &[(u64, i64)]) -> Self {
        let mut drifts = drifts.to_vec();
        drifts.sort_by_key(|d| d.0);
        let mut segments = vec![Segment {
            start: 0,
            mono_u: 0,
            ppm: 0,
        }];
        for (at, ppm) in drifts {
            let ppm = ppm.clamp(-999_999, 999_999);
            let last = segments.last_mut().expect("at least one segment");
            if at == last.start {
                last.ppm = ppm;
                continue;
            }
            let mono_u = last.mono_u + i128::from(at - last.start) * (PPM + i128::from(last.ppm));
            segments.push(Segment {
                start: at,
                mono_u,
                ppm,
            });
        }
        let mut steps = steps.to_vec();
        steps.sort_by_key(|s| s.0);
        ClockModel {
            offset,
            segments,
            steps,
        }
    }

    /// The clock of `host` under a resolved fault schedule.
    pub fn of_host(host: &str, schedule: &[ScriptedFault]) -> Self {
        let mut offset = 0i64;
        let mut drifts = Vec::new();
        let mut steps = Vec::new();
        for f in schedule {
            match f {
                ScriptedFault::Skew { host: h, at, by } if h == host => {
                    if at.as_ms() == 0 {
                        offset += by.0;
                    } else {
                        steps.push((at.as_ms(), by.0));
                    }
                }
                ScriptedFault::Drift { host: h, at, ppm } if h == host => {
                    drifts.push((at.as_ms(), *ppm));
                }
                _ => {}
            }
        }
        ClockModel::new(offset, &drifts, &steps)
    }

    fn segment_at(&self, t: u64) -> &Segment {
        let i = self.segments.partition_point(|s| s.start <= t);
        &self.segments[i.saturating_sub(1)]
    }

    fn mono_u(&self, t: u64) -> i128 {
        let s = self.segment_at(t);
        s.mono_u + i128::from(t - s.start) * (PPM + i128::from(s.ppm))
    }

    /// Monotonic milliseconds at true time `t` (never decreasing).
    pub fn mono(&self, t: u64) -> u64 {
        u64::try_from(self.mono_u(t) / PPM).unwrap_or(0)
    }

    /// The first true millisecond at which the monotonic clock reads at
    /// least `local`.
    pub fn true_at_mono(&self, local: u64) -> u64 {
        let target = i128::from(local) * PPM;
        let i = self.segments.partition_point(|s| s.mono_u <= target);
        let s = &self.segments[i.saturating_sub(1)];
        let rate = PPM + i128::from(s.ppm);
        let need = (target - s.mono_u).max(0);
        let dt = (need + rate - 1) / rate;
        let t = s
            .start
            .saturating_add(u64::try_from(dt).unwrap_or(u64::MAX));
        debug_assert!(self.mono(t) >= local, "inverse reaches the target");
        t
    }

    /// Wall-clock reading at true time `t`.
    pub fn wall(&self, t: u64) -> StoreTime {
        let stepped: i64 = self
            .steps
            .iter()
            .take_while(|s| s.0 <= t)
            .map(|s| s.1)
            .sum();
        let mono = i64::try_from(self.mono(t)).unwrap_or(i64::MAX);
        StoreTime(
            EPOCH_MS
                .saturating_add(self.offset)
                .saturating_add(mono)
                .saturating_add(stepped),
        )
    }

    /// The largest absolute drift this clock ever has, in ppm.
    pub fn max_abs_ppm(&self) -> u64 {
        self.segments
            .iter()
            .map(|s| s.ppm.unsigned_abs())
            .max()
            .unwrap_or(0)
    }

    /// Whether the wall clock ever steps after the start.
    pub fn has_steps(&self) -> bool {
        self.steps.iter().any(|s| s.1 != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undrifted_clock_is_true_time_plus_offset() {
        let c = ClockModel::new(5_000, &[], &[]);
        assert_eq!(c.mono(1234), 1234);
        assert_eq!(c.wall(1234), StoreTime(EPOCH_MS + 5_000 + 1234));
        assert_eq!(c.true_at_mono(1234), 1234);
    }

    #[test]
    fn drift_scales_and_inverse_is_tight() {
        let c = ClockModel::new(0, &[(0, 10_000), (10_000, -20_000)], &[]);
        assert_eq!(c.mono(1000), 1010);
        assert_eq!(c.mono(10_000), 10_100);
        assert_eq!(c.mono(20_000), 10_100 + 9_800);
        for local in [0, 1, 999, 1010, 5000, 10_100, 10_101, 15_000, 19_900] {
            let t = c.true_at_mono(local);
            assert!(c.mono(t) >= local);
            assert!(t == 0 || c.mono(t - 1) < local, "tight at {local}");
        }
        assert_eq!(c.max_abs_ppm(), 20_000);
    }

    #[test]
    fn monotonic_never_decreases_and_wall_steps() {
        let c = ClockModel::new(0, &[(0, -500_000), (7, 300_000)], &[(100, -60_000)]);
        let mut last = 0;
        for t in 0..1000 {
            let m = c.mono(t);
            assert!(m >= last);
            last = m;
        }
        assert_eq!(c.wall(100).0 - c.wall(99).0, -60_000 + 1);
        assert!(c.has_steps());
    }
}
