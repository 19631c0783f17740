//! Who a worker is: its host and its incarnation there.

/// A worker identity: host index and incarnation (a restart is a fresh
/// identity on the same host).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ident {
    /// Host index.
    pub host: u8,
    /// Incarnation on that host, from 0.
    pub inc: u8,
}

impl Ident {
    /// The worker id this identity claims with.
    pub fn worker_id(self) -> String {
        format!("w{}.{}", self.host, self.inc)
    }

    /// Parses [`Ident::worker_id`].
    pub fn parse(id: &str) -> Option<Ident> {
        let (h, i) = id.strip_prefix('w')?.split_once('.')?;
        Some(Ident {
            host: h.parse().ok()?,
            inc: i.parse().ok()?,
        })
    }
}
