//! A byte string as the history shows it: its length and a digest.
//!
//! Payloads ride along every lease answer and can be as large as the
//! store's payload limit, so the history keeps a fixed-size fingerprint
//! instead of the bytes. Two blobs are equal exactly when the byte strings
//! are (up to a 64-bit hash collision), which is what the answer checks
//! need: a payload or result that comes back shortened, padded or altered
//! changes the blob.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Length and FNV-1a-64 of a byte string.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Blob {
    /// Length in bytes.
    pub len: u64,
    /// FNV-1a-64 of the bytes.
    pub fnv: u64,
}

impl Blob {
    /// The blob of `bytes`.
    pub fn of(bytes: &[u8]) -> Blob {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        Blob {
            len: bytes.len() as u64,
            fnv: h,
        }
    }
}

impl fmt::Display for Blob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} bytes #{:016x}", self.len, self.fnv)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blobs_differ_when_bytes_differ_even_by_length_only() {
        let a = vec![0u8; 1 << 16];
        let mut b = a.clone();
        b.truncate((1 << 16) - 1);
        assert_ne!(Blob::of(&a), Blob::of(&b));
        assert_eq!(Blob::of(&a), Blob::of(&a.clone()));
        assert_eq!(Blob::of(b"").len, 0);
    }
}
