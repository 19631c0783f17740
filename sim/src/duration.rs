//! Human durations in scenario files: `150ms`, `30s`, `2m`, `1h`, `1m30s`.
//!
//! A bare integer is rejected: the unit must be explicit. Negative values are
//! allowed only where a field is a signed offset ([`SignedDur`]).

use leasehold_core::Millis;
use serde::{de, Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// A non-negative duration, written with units.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Dur(pub Millis);

/// A signed duration (clock offsets, steps), written with units and an
/// optional leading `+` or `-`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SignedDur(pub i64);

impl Dur {
    /// Milliseconds.
    pub const fn ms(n: u64) -> Dur {
        Dur(Millis(n))
    }
    /// Seconds.
    pub const fn secs(n: u64) -> Dur {
        Dur(Millis(n * 1000))
    }
    /// As milliseconds.
    pub fn as_ms(self) -> u64 {
        self.0 .0
    }
}

/// Parses `1h2m3s400ms`-style text into milliseconds.
pub fn parse_ms(text: &str) -> Result<u64, String> {
    let s = text.trim();
    if s.is_empty() {
        return Err("empty duration".into());
    }
    let mut total: u64 = 0;
    let mut rest = s;
    let mut parts = 0;
    while !rest.is_empty() {
        parts += 1;
        if parts > 8 {
            return Err(format!("duration {text:?} has too many parts"));
        }
        let digits = rest
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(rest.len());
        if digits == 0 {
            return Err(format!(
                "duration {text:?}: expected a number before {rest:?}"
            ));
        }
        let (num, tail) = rest.split_at(digits);
        let unit_len = tail
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(tail.len());
        let (unit, tail) = tail.split_at(unit_len);
        let scale: f64 = match unit {
            "ms" => 1.0,
            "s" => 1000.0,
            "m" | "min" => 60_000.0,
            "h" => 3_600_000.0,
            "" => return Err(format!("duration {text:?} needs a unit (ms, s, m, h)")),
            u => {
                return Err(format!(
                    "duration {text:?}: unknown unit {u:?} (use ms, s, m, h)"
                ))
            }
        };
        let value: f64 = num
            .parse()
            .map_err(|_| format!("duration {text:?}: bad number {num:?}"))?;
        let ms = value * scale;
        if !ms.is_finite() || !(0.0..=1e15).contains(&ms) || ms.fract() != 0.0 {
            return Err(format!(
                "duration {text:?} is not a whole number of milliseconds in range"
            ));
        }
        total = total
            .checked_add(ms as u64)
            .ok_or_else(|| format!("duration {text:?} overflows"))?;
        rest = tail;
    }
    Ok(total)
}

/// Formats milliseconds compactly (`1m30s`, `150ms`).
pub fn format_ms(ms: u64) -> String {
    if ms == 0 {
        return "0s".into();
    }
    let (h, m, s, r) = (ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60, ms % 1000);
    let mut out = String::new();
    if h > 0 {
        out += &format!("{h}h");
    }
    if m > 0 {
        out += &format!("{m}m");
    }
    if s > 0 {
        out += &format!("{s}s");
    }
    if r > 0 {
        out += &format!("{r}ms");
    }
    out
}

impl fmt::Display for Dur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_ms(self.as_ms()))
    }
}

impl fmt::Display for SignedDur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.0 < 0 { "-" } else { "+" };
        write!(f, "{sign}{}", format_ms(self.0.unsigned_abs()))
    }
}

impl std::str::FromStr for Dur {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s.trim_start().starts_with('-') {
            return Err(format!("duration {s:?} must not be negative"));
        }
        parse_ms(s.trim_start_matches('+')).map(|ms| Dur(Millis(ms)))
    }
}

impl std::str::FromStr for SignedDur {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim();
        let (neg, body) = match t.as_bytes().first() {
            Some(b'-') => (true, &t[1..]),
            Some(b'+') => (false, &t[1..]),
            _ => (false, t),
        };
        let ms = i64::try_from(parse_ms(body)?).map_err(|_| format!("duration {s:?} overflows"))?;
        Ok(SignedDur(if neg { -ms } else { ms }))
    }
}

macro_rules! serde_text {
    ($t:ty, $expect:literal) => {
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.to_string())
            }
        }
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl de::Visitor<'_> for V {
                    type Value = $t;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str($expect)
                    }
                    fn visit_str<E: de::Error>(self, v: &str) -> Result<$t, E> {
                        v.parse().map_err(E::custom)
                    }
                }
                d.deserialize_str(V)
            }
        }
    };
}
serde_text!(
    Dur,
    "a duration with a unit, like \"150ms\", \"30s\" or \"2m\""
);
serde_text!(
    SignedDur,
    "a signed duration with a unit, like \"+60s\" or \"-2m\""
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units_and_compounds() {
        assert_eq!(parse_ms("150ms"), Ok(150));
        assert_eq!(parse_ms("30s"), Ok(30_000));
        assert_eq!(parse_ms("2m"), Ok(120_000));
        assert_eq!(parse_ms("1m30s"), Ok(90_000));
        assert_eq!(parse_ms("1.5s"), Ok(1500));
        assert_eq!("-60s".parse::<SignedDur>(), Ok(SignedDur(-60_000)));
        assert_eq!("+2m".parse::<SignedDur>(), Ok(SignedDur(120_000)));
    }

    #[test]
    fn rejects_bad_text_with_reason() {
        for (bad, needle) in [
            ("30", "unit"),
            ("30x", "unknown unit"),
            ("", "empty"),
            ("s", "number"),
            ("0.5ms", "whole"),
        ] {
            let e = parse_ms(bad).unwrap_err();
            assert!(e.contains(needle), "{bad}: {e}");
        }
        assert!("-5s".parse::<Dur>().unwrap_err().contains("negative"));
    }

    #[test]
    fn formats_round_trip() {
        for ms in [0, 1, 150, 1000, 90_000, 3_723_004] {
            let text = format_ms(ms);
            assert_eq!(parse_ms(&text), Ok(ms), "{text}");
        }
    }
}
