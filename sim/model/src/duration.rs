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
    pub const fn as_ms(self) -> u64 {
        self.0 .0
    }
}

/// Most `<number><unit>` parts of one duration (`1h2m3s400ms` has four).
// Keep the `TooManyParts` doc in step.
const MAX_PARTS: usize = 8;
/// Largest duration the parser accepts, in milliseconds (about 31,700
/// years: far beyond any bound a scenario checks, far below `u64` and
/// `i64` overflow and exact in `f64`).
pub const MAX_PARSED_MS: u64 = 1_000_000_000_000_000;

/// What is wrong with a duration's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DurationProblem {
    /// Nothing but blanks.
    Empty,
    /// More parts than a duration may have (8).
    TooManyParts,
    /// A unit with no number before it.
    NumberExpected,
    /// A number with no unit after it.
    UnitMissing,
    /// A unit other than `ms`, `s`, `m`, `min`, `h`.
    UnknownUnit,
    /// Digits and dots that are not a number (`1.2.3`).
    BadNumber,
    /// A fraction of a millisecond, or more than [`MAX_PARSED_MS`].
    OutOfRange,
    /// A sign where none is allowed (a plain duration is never negative).
    Negative,
}

/// A duration that does not parse: the text, the byte offset in it where
/// the problem starts, and what the problem is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DurationError {
    /// The text as given.
    pub text: String,
    /// Byte offset in `text` of the offending part.
    pub offset: usize,
    /// What is wrong.
    pub problem: DurationProblem,
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = &self.text;
        let rest = text.get(self.offset..).unwrap_or("");
        let number: String = rest
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .take(32)
            .collect();
        match self.problem {
            DurationProblem::Empty => write!(f, "empty duration"),
            DurationProblem::TooManyParts => write!(
                f,
                "duration {text:?} has too many parts (at most {MAX_PARTS})"
            ),
            DurationProblem::NumberExpected => {
                write!(f, "duration {text:?}: expected a number before {rest:?}")
            }
            DurationProblem::UnitMissing => {
                write!(f, "duration {text:?} needs a unit (ms, s, m, h)")
            }
            DurationProblem::UnknownUnit => write!(
                f,
                "duration {text:?}: unknown unit {:?} (use ms, s, m, h)",
                rest.split(|c: char| c.is_ascii_digit())
                    .next()
                    .unwrap_or("")
            ),
            DurationProblem::BadNumber => {
                write!(f, "duration {text:?}: bad number {number:?}")
            }
            DurationProblem::OutOfRange => write!(
                f,
                "duration {text:?} is not a whole number of milliseconds in range (at most {MAX_PARSED_MS}ms)"
            ),
            DurationProblem::Negative => write!(f, "duration {text:?} must not be negative"),
        }
    }
}

impl std::error::Error for DurationError {}

// Scenario sentences (`crash worker-1 at 5s`) carry their errors as text.
impl From<DurationError> for String {
    fn from(e: DurationError) -> String {
        e.to_string()
    }
}

/// Parses `1h2m3s400ms`-style text into milliseconds.
pub fn parse_ms(text: &str) -> Result<u64, DurationError> {
    let err = |offset: usize, problem| DurationError {
        text: text.to_string(),
        offset,
        problem,
    };
    let s = text.trim();
    // Offsets count from the start of `text`, blanks included.
    let lead = text.len() - text.trim_start().len();
    if s.is_empty() {
        return Err(err(0, DurationProblem::Empty));
    }
    let mut total: u64 = 0;
    let mut rest = s;
    let mut parts = 0;
    while !rest.is_empty() {
        let at = lead + (s.len() - rest.len());
        parts += 1;
        if parts > MAX_PARTS {
            return Err(err(at, DurationProblem::TooManyParts));
        }
        let digits = rest
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(rest.len());
        if digits == 0 {
            return Err(err(at, DurationProblem::NumberExpected));
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
            "" => return Err(err(at + digits, DurationProblem::UnitMissing)),
            _ => return Err(err(at + digits, DurationProblem::UnknownUnit)),
        };
        let value: f64 = num
            .parse()
            .map_err(|_| err(at, DurationProblem::BadNumber))?;
        let ms = value * scale;
        if !ms.is_finite() || !(0.0..=MAX_PARSED_MS as f64).contains(&ms) || ms.fract() != 0.0 {
            return Err(err(at, DurationProblem::OutOfRange));
        }
        total = total
            .checked_add(ms as u64)
            .filter(|&t| t <= MAX_PARSED_MS)
            .ok_or_else(|| err(at, DurationProblem::OutOfRange))?;
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

/// Splits a leading `+` or `-` (after blanks) off `s`: (negative, body,
/// offset of the body in `s`).
fn sign(s: &str) -> (bool, &str, usize) {
    let lead = s.len() - s.trim_start().len();
    match s.as_bytes().get(lead) {
        Some(b'-') => (true, &s[lead + 1..], lead + 1),
        Some(b'+') => (false, &s[lead + 1..], lead + 1),
        _ => (false, s, 0),
    }
}

/// `parse_ms` on the part of `s` after its sign, with offsets into `s`.
fn parse_body(s: &str, body: &str, at: usize) -> Result<u64, DurationError> {
    parse_ms(body).map_err(|e| DurationError {
        text: s.to_string(),
        offset: at + e.offset,
        problem: e.problem,
    })
}

impl std::str::FromStr for Dur {
    type Err = DurationError;
    fn from_str(s: &str) -> Result<Self, DurationError> {
        let (neg, body, at) = sign(s);
        if neg {
            return Err(DurationError {
                text: s.to_string(),
                offset: at - 1,
                problem: DurationProblem::Negative,
            });
        }
        parse_body(s, body, at).map(|ms| Dur(Millis(ms)))
    }
}

impl std::str::FromStr for SignedDur {
    type Err = DurationError;
    fn from_str(s: &str) -> Result<Self, DurationError> {
        let (neg, body, at) = sign(s);
        // MAX_PARSED_MS fits in an i64 either way.
        let ms = parse_body(s, body, at)? as i64;
        Ok(SignedDur(if neg { -ms } else { ms }))
    }
}

const _: () = assert!(MAX_PARSED_MS < i64::MAX as u64);

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
            let e = parse_ms(bad).unwrap_err().to_string();
            assert!(e.contains(needle), "{bad}: {e}");
        }
        assert!("-5s"
            .parse::<Dur>()
            .unwrap_err()
            .to_string()
            .contains("negative"));
    }

    #[test]
    fn errors_point_at_the_offending_part() {
        let at = |s: &str| s.parse::<SignedDur>().unwrap_err().offset;
        assert_eq!(at("1m30x"), 4);
        assert_eq!(at("  -1m 5s"), 4);
        assert_eq!(at("1.2.3s"), 0);
        assert_eq!(" -5s".parse::<Dur>().unwrap_err().offset, 1);
        let e = parse_ms("1h2h3h4h5h6h7h8h9h").unwrap_err();
        assert_eq!((e.offset, e.problem), (16, DurationProblem::TooManyParts));
    }

    #[test]
    fn formats_round_trip() {
        for ms in [0, 1, 150, 1000, 90_000, 3_723_004] {
            let text = format_ms(ms);
            assert_eq!(parse_ms(&text), Ok(ms), "{text}");
        }
    }
}
