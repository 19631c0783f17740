//! The set of visited states' fingerprints ([`crate::hash::canonical`]):
//! open addressing with linear probing over a power-of-two table of bare
//! `u64`s, 8 bytes a slot and no state kept. A fingerprint is already a
//! well-mixed hash, so it is its own bucket (after one multiply to spread
//! its high bits); the table doubles before it is 5/8 full, so a probe
//! meets an empty slot within a few steps.
//!
//! A dense set ([`Fingerprints::dense`], the depth-first search's, for
//! S2) doubles only before it is 7/8 full: at the same 8 bytes a slot it
//! holds 7/5 as many fingerprints in a table of one size (939 M in 8 GB
//! where the 5/8 table holds 671 M), for longer probes (a new fingerprint,
//! the common case in a search, probes about `(1 + 1/(1-a)^2)/2` slots at
//! load `a`: 32.5 at 7/8 against 4.1 at 5/8, each the next 8 bytes, mostly
//! in the same cache line). Either table's doubling briefly holds the old
//! and the new table. Fingerprints stay 64 bits: two distinct states share
//! one (and the second is taken for visited) with probability about
//! `n^2 / 2^65` over `n` states, 2.4 % at 939 M, 0.0004 % at S1's
//! 12.6 M (a narrower fingerprint multiplies that by `2^(64 - bits)`:
//! 5 bytes give a collision almost surely at 939 M, so it was not taken).

/// Fingerprints seen so far.
#[derive(Clone, Debug)]
pub struct Fingerprints {
    /// `EMPTY` or a fingerprint; its length is a power of two.
    slots: Vec<u64>,
    /// Fingerprints in `slots`.
    len: usize,
    /// The fingerprint equal to `EMPTY` was seen (kept apart, so every
    /// `u64` is a fingerprint and none is merged with another).
    zero: bool,
    /// Eighths of the table filled before it doubles (5, or 7 dense).
    load_eighths: usize,
}

/// An unused slot.
const EMPTY: u64 = 0;
/// The table is grown when it would be fuller than `LOAD_NUM / LOAD_DEN`
/// (`DENSE_NUM / LOAD_DEN` for a dense set).
const LOAD_NUM: usize = 5;
const DENSE_NUM: usize = 7;
const LOAD_DEN: usize = 8;
/// The smallest table.
const MIN_SLOTS: usize = 1 << 10;

impl Fingerprints {
    /// An empty set sized for `expected` fingerprints without growing.
    pub fn with_capacity(expected: usize) -> Self {
        Self::with_load(expected, LOAD_NUM)
    }

    /// An empty dense set (doubling before 7/8 full, see the module docs)
    /// sized for `expected` fingerprints without growing.
    pub fn dense(expected: usize) -> Self {
        Self::with_load(expected, DENSE_NUM)
    }

    fn with_load(expected: usize, load_eighths: usize) -> Self {
        let slots = (expected.saturating_mul(LOAD_DEN) / load_eighths + 1)
            .next_power_of_two()
            .max(MIN_SLOTS);
        Fingerprints {
            slots: vec![EMPTY; slots],
            len: 0,
            zero: false,
            load_eighths,
        }
    }

    /// Fingerprints held.
    pub fn len(&self) -> usize {
        self.len + usize::from(self.zero)
    }

    /// Bytes of the table (what the set costs in memory).
    pub fn table_bytes(&self) -> usize {
        self.slots.len() * std::mem::size_of::<u64>()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Empties the set, keeping its table.
    pub fn clear(&mut self) {
        self.slots.fill(EMPTY);
        self.len = 0;
        self.zero = false;
    }

    /// The slot `fp`'s probe starts at.
    fn home(&self, fp: u64) -> usize {
        // The high bits of a multiply by an odd constant: every bit of the
        // fingerprint moves them, whatever the table's size.
        let shift = 64 - self.slots.len().trailing_zeros();
        (fp.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> shift) as usize
    }

    /// Whether `fp` was seen.
    pub fn contains(&self, fp: u64) -> bool {
        if fp == EMPTY {
            return self.zero;
        }
        let mask = self.slots.len() - 1;
        let mut i = self.home(fp);
        // Bounded: the table always has an empty slot (load < 7/8).
        loop {
            match self.slots[i] {
                EMPTY => return false,
                x if x == fp => return true,
                _ => i = (i + 1) & mask,
            }
        }
    }

    /// Adds `fp`; answers whether it was new.
    pub fn insert(&mut self, fp: u64) -> bool {
        if fp == EMPTY {
            return !std::mem::replace(&mut self.zero, true);
        }
        if (self.len + 1) * LOAD_DEN > self.slots.len() * self.load_eighths {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut i = self.home(fp);
        // Bounded as in `contains`.
        loop {
            match self.slots[i] {
                EMPTY => {
                    self.slots[i] = fp;
                    self.len += 1;
                    return true;
                }
                x if x == fp => return false,
                _ => i = (i + 1) & mask,
            }
        }
    }

    /// Doubles the table and puts every fingerprint back.
    fn grow(&mut self) {
        let doubled = vec![EMPTY; self.slots.len() * 2];
        let old = std::mem::replace(&mut self.slots, doubled);
        self.len = 0;
        for fp in old.into_iter().filter(|&x| x != EMPTY) {
            self.insert(fp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Fingerprints;

    #[test]
    fn each_fingerprint_is_new_once_and_survives_growth() {
        seen_once(Fingerprints::with_capacity(0));
        seen_once(Fingerprints::dense(0));
    }

    /// A dense table doubles only past 7/8 full: the smallest (1,024
    /// slots) holds 896 fingerprints and doubles at the 897th, where the
    /// ordinary one doubled at the 641st.
    #[test]
    fn a_dense_table_fills_to_seven_eighths_before_it_doubles() {
        let fp = |x: u64| (x + 1).wrapping_mul(0x2545_f491_4f6c_dd1d);
        let mut plain = Fingerprints::with_capacity(0);
        let mut dense = Fingerprints::dense(0);
        for x in 0..640 {
            plain.insert(fp(x));
        }
        assert_eq!(plain.table_bytes(), 1024 * 8);
        plain.insert(fp(640));
        assert_eq!(plain.table_bytes(), 2048 * 8);
        for x in 0..896 {
            assert!(dense.insert(fp(x)));
        }
        assert_eq!(dense.table_bytes(), 1024 * 8, "896 of 1,024 slots");
        for x in 0..896 {
            assert!(dense.contains(fp(x)) && !dense.insert(fp(x)));
        }
        assert!(dense.insert(fp(896)));
        assert_eq!(dense.table_bytes(), 2048 * 8);
        assert_eq!(dense.len(), 897);
        for x in 0..897 {
            assert!(dense.contains(fp(x)));
        }
        assert!(!dense.contains(fp(897)));
    }

    fn seen_once(mut f: Fingerprints) {
        assert!(f.is_empty());
        // Enough to grow the smallest table several times; 0 is a
        // fingerprint like any other.
        for x in 0..10_000u64 {
            let fp = x.wrapping_mul(0x2545_f491_4f6c_dd1d);
            assert!(f.insert(fp), "{x} is new");
            assert!(!f.insert(fp), "{x} is seen");
        }
        assert_eq!(f.len(), 10_000);
        for x in 0..10_000u64 {
            assert!(f.contains(x.wrapping_mul(0x2545_f491_4f6c_dd1d)));
        }
        assert!(!f.contains(1));
        f.clear();
        assert!(f.is_empty() && !f.contains(0));
    }
}
