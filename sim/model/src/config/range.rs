//! The closed range a scenario writes for a swarm setting or a draw:
//! `[min, max]`, or one value for both.

use serde::{de, Deserialize, Deserializer, Serialize};

/// A closed range `[lo, hi]`, written as a two-element array.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Range<T> {
    /// Lower bound (inclusive).
    pub lo: T,
    /// Upper bound (inclusive).
    pub hi: T,
}

impl<T: Copy> Range<T> {
    /// The range holding exactly `v`.
    pub const fn exactly(v: T) -> Self {
        Range { lo: v, hi: v }
    }
    /// `[lo, hi]`.
    pub const fn new(lo: T, hi: T) -> Self {
        Range { lo, hi }
    }
}

impl<'de, T: Deserialize<'de> + Copy> Deserialize<'de> for Range<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form<T> {
            Pair([T; 2]),
            One(T),
        }
        match Form::<T>::deserialize(d) {
            Ok(Form::Pair([lo, hi])) => Ok(Range { lo, hi }),
            Ok(Form::One(v)) => Ok(Range { lo: v, hi: v }),
            Err(_) => Err(de::Error::custom("expected a value or a [min, max] pair")),
        }
    }
}
