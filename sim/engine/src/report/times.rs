//! Times for people: durations from the run's start, never raw epoch
//! milliseconds.
//!
//! A store time is an absolute wall-clock reading (`StoreTime`, epoch ms,
//! shown by its `Display` as `@1704067262030ms`). Reports show it as the
//! time since an origin instead: `@+1m2s30ms` inline, `store +1m2s30ms` in a
//! report's `when:` line. In the simulator the origin is the simulated
//! epoch at true time 0, so a store clock running ahead reads ahead; for a
//! recorded history (`leasehold check`) it is the first event's store time.
//!
//! Machine formats keep the raw values, because tools compute with them:
//! the `--trace` JSON lines and the histories `leasehold check` reads carry
//! epoch ms, and `--json`'s `sim_ms` is a number of ms of true time.

use leasehold_core::StoreTime;
use leasehold_model::duration::format_ms;

/// Where store times are measured from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Origin(pub i64);

impl Origin {
    /// The simulator's: the store time the run starts at on a clock without
    /// offset (true time 0).
    pub const SIM: Origin = Origin(leasehold_model::clock::EPOCH_MS);

    /// The first event's store time, for histories recorded elsewhere.
    pub fn first_of(times: impl IntoIterator<Item = StoreTime>) -> Origin {
        Origin(times.into_iter().map(|t| t.0).min().unwrap_or(0))
    }

    /// `st` as a signed duration from the origin: `+1m2s30ms`, `-3s`.
    pub fn since(self, st: StoreTime) -> String {
        signed(st.0.saturating_sub(self.0))
    }

    /// `text` with every store time (`@<digits>ms`) shown as `@+duration`
    /// from the origin, and every other whole number of milliseconds of a
    /// second or more (`16460ms`) as a duration (`16s460ms`).
    pub fn humanize(self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        // Each pass consumes at least one character.
        while let Some(c) = rest.chars().next() {
            let prev_is_word = out
                .chars()
                .next_back()
                .is_some_and(|p| p.is_alphanumeric() || p == '_');
            if let Some((n, len)) = millis_at(rest.strip_prefix('@').unwrap_or(rest)) {
                let at = rest.starts_with('@');
                if at {
                    out.push('@');
                    out.push_str(&self.since(StoreTime(n)));
                    rest = &rest[1 + len..];
                    continue;
                }
                if !prev_is_word {
                    match u64::try_from(n) {
                        Ok(ms) if ms >= 1000 => out.push_str(&format_ms(ms)),
                        _ => out.push_str(&rest[..len]),
                    }
                    rest = &rest[len..];
                    continue;
                }
            }
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
        out
    }
}

/// A signed duration: `+1m2s30ms`, `-3s`, `+0s`.
pub fn signed(ms: i64) -> String {
    let sign = if ms < 0 { '-' } else { '+' };
    format!("{sign}{}", format_ms(ms.unsigned_abs()))
}

/// `<digits>ms` at the start of `s`, not followed by a letter or digit:
/// the number and the length of the match.
fn millis_at(s: &str) -> Option<(i64, usize)> {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || !s[digits..].starts_with("ms") {
        return None;
    }
    let after = s[digits + 2..].chars().next();
    if after.is_some_and(|c| c.is_alphanumeric() || c == '_') {
        return None;
    }
    let n = s[..digits].parse().ok()?;
    Some((n, digits + 2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_times_read_as_durations_from_the_start() {
        let o = Origin::SIM;
        assert_eq!(
            o.since(StoreTime(leasehold_model::clock::EPOCH_MS + 62_030)),
            "+1m2s30ms"
        );
        assert_eq!(
            o.since(StoreTime(leasehold_model::clock::EPOCH_MS - 3_000)),
            "-3s"
        );
        assert_eq!(
            o.humanize("renewed until @1704067262030ms, after 16460ms"),
            "renewed until @+1m2s30ms, after 16s460ms"
        );
    }

    #[test]
    fn only_whole_millisecond_tokens_change() {
        let o = Origin(0);
        for same in [
            "a 999ms pause",
            "1200msx",
            "t1 and t2",
            "x1500ms",
            "",
            "ms",
            "@ms",
        ] {
            assert_eq!(o.humanize(same), same);
        }
        assert_eq!(o.humanize("[16460ms, 40091ms)"), "[16s460ms, 40s91ms)");
        assert_eq!(o.humanize("é 2000ms é"), "é 2s é");
        assert_eq!(
            o.humanize("@99999999999999999999999ms"),
            "@99999999999999999999999ms"
        );
    }
}
