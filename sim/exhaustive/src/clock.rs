//! A host's monotonic clock: true time scaled by `1 + drift` (drift in
//! ppm, signed), with its inverse for turning a local deadline into the
//! true instant it comes at.

const PPM: i128 = 1_000_000;

/// The reading of a clock drifting by `drift_ppm` at true time `t`.
pub fn local_at(drift_ppm: i32, t: u64) -> u64 {
    let v = i128::from(t) * (PPM + i128::from(drift_ppm)) / PPM;
    u64::try_from(v.max(0)).unwrap_or(u64::MAX)
}

/// The first true instant at which that clock reads at least `local`
/// (`u64::MAX` for a deadline that never comes).
pub fn true_at(drift_ppm: i32, local: u64) -> u64 {
    if local >= u64::MAX / 4 {
        return u64::MAX;
    }
    let rate = PPM + i128::from(drift_ppm);
    let mut t = u64::try_from((i128::from(local) * PPM + rate - 1) / rate).unwrap_or(u64::MAX);
    // Integer rounding: step to the exact first instant (at most a step or
    // two either way).
    for _ in 0..4 {
        if t > 0 && local_at(drift_ppm, t - 1) >= local {
            t -= 1;
        } else if local_at(drift_ppm, t) < local {
            t += 1;
        } else {
            break;
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_inverse_finds_the_first_true_instant() {
        for d in [-10_000, 0, 10_000] {
            for l in [0u64, 1, 99, 3_000, 9_801, 12_345] {
                let t = true_at(d, l);
                assert!(local_at(d, t) >= l, "{d} {l}");
                assert!(t == 0 || local_at(d, t - 1) < l, "{d} {l}");
            }
        }
        assert_eq!(local_at(10_000, 1_000), 1_010);
        assert_eq!(local_at(-10_000, 1_000), 990);
    }
}
