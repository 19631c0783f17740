//! State hashing with symmetry reduction: a state's fingerprint is the
//! least hash over the renamings of its hosts and of its jobs that sort
//! them by their own signatures (what of a host or a job no renaming
//! touches), so states that differ only by which host or which job is
//! which are visited once. Signatures differ in most states, so one
//! renaming is hashed, not all of them.
//!
//! Hosts are interchangeable with their clocks (a host's drift is hashed
//! with it); jobs are all alike. What a row's future cannot depend on is
//! left out (its version, timestamps and error text), and so is what no
//! step reads any more (a claim due time already past), so histories that
//! reach the same situation by different routes merge.

use crate::clock::local_at;
use crate::scope::{MAX_JOBS, MAX_WORKERS};
use crate::world::{Body, ClaimAns, Ident, Msg, Phase, State, Task};
use leasehold_core::{JobId, JobRecord, WorkerId};
use std::hash::{Hash, Hasher};

/// The fingerprint hasher: each word folded into the state by a 128-bit
/// multiply (the high and low halves xored), a mix of the same quality
/// class as `ahash`'s fallback and several times cheaper than the
/// standard library's SipHash, which was the largest item in the
/// search's profile. No random key: the same state always gets the same
/// fingerprint (exploration order does not depend on it either way).
#[derive(Clone, Copy)]
struct DefaultHasher(u64);

/// An odd constant with well-spread bits (from `ahash`'s fallback).
const MULTIPLE: u64 = 0x5851_f42d_4c95_7f2d;
/// The starting state.
const SEED: u64 = 0x243f_6a88_85a3_08d3;

impl DefaultHasher {
    fn new() -> Self {
        DefaultHasher(SEED)
    }

    fn add(&mut self, word: u64) {
        let m = u128::from(self.0 ^ word) * u128::from(MULTIPLE);
        self.0 = ((m >> 64) as u64 ^ m as u64).rotate_left(23);
    }
}

impl Hasher for DefaultHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut b = [0u8; 8];
            b[..rest.len()].copy_from_slice(rest);
            // The length keeps "ab" and "ab\0" apart.
            self.add(u64::from_le_bytes(b) ^ ((rest.len() as u64) << 59));
        }
    }
    fn write_u8(&mut self, x: u8) {
        self.add(u64::from(x));
    }
    fn write_u16(&mut self, x: u16) {
        self.add(u64::from(x));
    }
    fn write_u32(&mut self, x: u32) {
        self.add(u64::from(x));
    }
    fn write_u64(&mut self, x: u64) {
        self.add(x);
    }
    fn write_usize(&mut self, x: usize) {
        self.add(x as u64);
    }
    fn finish(&self) -> u64 {
        // One more fold so the last word is mixed as well as the first.
        let m = u128::from(self.0) * u128::from(MULTIPLE.rotate_left(32));
        (m >> 64) as u64 ^ m as u64
    }
}

/// A renaming: new index of each old host, and of each old job.
struct Renaming<'a> {
    hosts: &'a [u8],
    /// `None` hashes every job alike (for signatures).
    jobs: Option<&'a [u8]>,
}

impl Renaming<'_> {
    /// Hashes jobs without their names (a task's signature).
    const NONE_OF_JOBS: Renaming<'static> = Renaming {
        hosts: &[],
        jobs: None,
    };

    fn host(&self, h: u8) -> u8 {
        self.hosts[h as usize]
    }
    fn ident(&self, i: Ident) -> Ident {
        Ident {
            host: self.host(i.host),
            inc: i.inc,
        }
    }
    fn job(&self, j: JobId) -> u64 {
        self.jobs
            .map_or(0, |jobs| u64::from(jobs[(j.0 - 1) as usize]) + 1)
    }
    fn worker(&self, w: &WorkerId) -> Option<Ident> {
        Ident::parse(w.as_str()).map(|i| self.ident(i))
    }
}

fn row(r: &JobRecord, n: &Renaming<'_>, h: &mut DefaultHasher) {
    n.job(r.id).hash(h);
    r.state.hash(h);
    r.token.hash(h);
    r.attempt.hash(h);
    r.holder.as_ref().map(|w| n.worker(w)).hash(h);
    r.expires_at.hash(h);
    r.cancel_requested.hash(h);
    r.result.is_some().hash(h);
    r.released.map(|m| (m.token, m.digest)).hash(h);
}

fn task(t: &Task, n: &Renaming<'_>) -> u64 {
    let mut h = DefaultHasher::new();
    n.job(t.job).hash(&mut h);
    t.token.hash(&mut h);
    t.m.hash(&mut h);
    t.renew_out.hash(&mut h);
    t.lost_seen.hash(&mut h);
    match &t.phase {
        Phase::Running { wake, handler_by } => (0u8, wake, handler_by).hash(&mut h),
        Phase::Releasing {
            tries,
            release_out,
            retry_at,
            heartbeat,
        } => (1u8, tries, release_out, retry_at, heartbeat).hash(&mut h),
    }
    h.finish()
}

fn msg(m: &Msg, n: &Renaming<'_>) -> u64 {
    let mut h = DefaultHasher::new();
    n.ident(m.who).hash(&mut h);
    (m.sent_local, m.not_before, m.deadline, m.timeout_at).hash(&mut h);
    match &m.body {
        Body::ClaimReq { max } => (0u8, max).hash(&mut h),
        Body::ClaimAns(ClaimAns::Granted(g)) => {
            1u8.hash(&mut h);
            for (j, t, e) in g {
                (n.job(*j), t, e).hash(&mut h);
            }
        }
        Body::ClaimAns(a) => (2u8, a).hash(&mut h),
        Body::RenewReq(j, t) => (3u8, n.job(*j), t).hash(&mut h),
        Body::RenewAns(j, t, a) => (4u8, n.job(*j), t, a).hash(&mut h),
        Body::ReleaseReq(j, t) => (5u8, n.job(*j), t).hash(&mut h),
        Body::ReleaseAns(j, t, a) => (6u8, n.job(*j), t, a).hash(&mut h),
    }
    h.finish()
}

fn under(s: &State, n: &Renaming<'_>) -> u64 {
    let mut h = DefaultHasher::new();
    s.now.hash(&mut h);
    s.spent.hash(&mut h);
    // Rows and the ghost's jobs in their new order.
    let jobs = n.jobs.expect("a whole renaming");
    for &j in &by_new_index(jobs)[..jobs.len()] {
        row(&s.rows[j], n, &mut h);
        let g = &s.ghost.jobs[j];
        (g.terminal_steps, g.committed, g.cancelled_pending).hash(&mut h);
        for l in &g.leases {
            (
                l.token,
                n.ident(l.holder),
                l.expires_at,
                l.ended,
                l.explained,
                (l.believe_until, l.owed, l.missed),
            )
                .hash(&mut h);
        }
    }
    // An identity hashes as its two bytes, as this pair does.
    let crashed = s.ghost.crashed.iter().map(|&i| {
        let r = n.ident(i);
        (r.host, r.inc)
    });
    hash_sorted(crashed, &mut h);
    s.ghost.violation.as_ref().map(|v| v.0).hash(&mut h);
    for &i in &by_new_index(n.hosts)[..n.hosts.len()] {
        let x = &s.hosts[i];
        // A claim due time already past reads as the present: the claim is
        // due either way, and time only moves on (`reduce.rs`).
        let claim_due = x.claim_due.max(local_at(x.drift_ppm, s.now));
        (x.drift_ppm, x.inc, claim_due, &x.claim_out).hash(&mut h);
        (x.slots.alive(), x.slots.tasks()).hash(&mut h);
        hash_sorted(x.tasks.iter().map(|t| task(t, n)), &mut h);
    }
    hash_sorted(s.net.iter().map(|m| msg(m, n)), &mut h);
    h.finish()
}

/// Most hosts or jobs a renaming orders (`scope.rs` refuses more).
const MAX_ITEMS: usize = if MAX_WORKERS > MAX_JOBS {
    MAX_WORKERS as usize
} else {
    MAX_JOBS as usize
};

/// The old index of each new one, for a renaming `new` (new index of each
/// old one).
fn by_new_index(new: &[u8]) -> [usize; MAX_ITEMS] {
    let mut old = [0; MAX_ITEMS];
    for (o, &k) in new.iter().enumerate() {
        old[k as usize] = o;
    }
    old
}

/// Most items a list hashed sorted holds on the stack (a host's tasks,
/// the messages in flight, the crashed identities); a longer one is
/// collected on the heap and hashed the same.
const ON_STACK: usize = 16;

/// Hashes `items` sorted, as a slice (its length, then its items): the
/// same words a sorted `Vec` of them hashes as, without allocating (this
/// runs several times per generated state).
fn hash_sorted<T: Ord + Copy + Default + Hash>(
    items: impl Iterator<Item = T>,
    h: &mut DefaultHasher,
) {
    let mut buf = [T::default(); ON_STACK];
    let mut n = 0;
    let mut spill: Vec<T> = Vec::new();
    for x in items {
        if n < ON_STACK {
            buf[n] = x;
            n += 1;
        } else {
            if spill.is_empty() {
                spill.extend_from_slice(&buf);
            }
            spill.push(x);
        }
    }
    let list: &mut [T] = if spill.is_empty() {
        &mut buf[..n]
    } else {
        &mut spill
    };
    list.sort_unstable();
    list.hash(h);
}

/// A host's signature: everything of its own that no renaming touches
/// (neither its name nor the jobs' names), so renamed states give each
/// host the same signature.
fn host_sig(x: &crate::world::Host, now: u64) -> u64 {
    let mut h = DefaultHasher::new();
    let claim_due = x.claim_due.max(local_at(x.drift_ppm, now));
    (x.drift_ppm, x.inc, claim_due, &x.claim_out).hash(&mut h);
    (x.slots.alive(), x.slots.tasks()).hash(&mut h);
    hash_sorted(
        x.tasks.iter().map(|t| task(t, &Renaming::NONE_OF_JOBS)),
        &mut h,
    );
    h.finish()
}

/// A job's signature: its row and record without its name or its
/// holders' hosts (only their incarnations).
fn job_sig(s: &State, j: usize) -> u64 {
    let mut h = DefaultHasher::new();
    let r = &s.rows[j];
    (
        r.state,
        r.token,
        r.attempt,
        r.expires_at,
        r.cancel_requested,
    )
        .hash(&mut h);
    r.holder
        .as_ref()
        .and_then(|w| Ident::parse(w.as_str()))
        .map(|i| i.inc)
        .hash(&mut h);
    r.result.is_some().hash(&mut h);
    r.released.map(|m| (m.token, m.digest)).hash(&mut h);
    let g = &s.ghost.jobs[j];
    (g.terminal_steps, g.committed, g.cancelled_pending).hash(&mut h);
    for l in &g.leases {
        (l.token, l.holder.inc, l.expires_at, l.ended, l.explained).hash(&mut h);
        (l.believe_until, l.owed, l.missed).hash(&mut h);
    }
    h.finish()
}

/// Renamings of up to [`MAX_ITEMS`] items: at most 4! of them.
struct Orders {
    list: [[u8; MAX_ITEMS]; 24],
    len: usize,
    /// Items renamed.
    items: usize,
}

impl Orders {
    /// Each renaming, as the new index of each old item.
    fn iter(&self) -> impl Iterator<Item = &[u8]> {
        self.list[..self.len].iter().map(|r| &r[..self.items])
    }
}

/// The renamings that put `n` items in the order of their signatures
/// (as new indices of each old one): one when the signatures differ,
/// every order of the tied items otherwise. They are the arrangements
/// whose signatures do not decrease, found among every arrangement
/// (n! ≤ 24) without allocating.
fn orders(sigs: &[u64]) -> Orders {
    let n = sigs.len();
    let mut out = Orders {
        list: [[0; MAX_ITEMS]; 24],
        len: 0,
        items: n,
    };
    // Position k holds old item `a[k]`; from the identity, in
    // lexicographic order (bounded: n! arrangements).
    let mut a = [0u8; MAX_ITEMS];
    for (k, x) in a.iter_mut().enumerate().take(n) {
        *x = k as u8;
    }
    loop {
        if (1..n).all(|k| sigs[a[k - 1] as usize] <= sigs[a[k] as usize]) {
            let r = &mut out.list[out.len];
            for (k, &old) in a[..n].iter().enumerate() {
                r[old as usize] = k as u8;
            }
            out.len += 1;
        }
        if !next_permutation(&mut a[..n]) {
            return out;
        }
    }
}

/// Steps `a` to its next arrangement in lexicographic order; false after
/// the last (descending) one.
fn next_permutation(a: &mut [u8]) -> bool {
    let n = a.len();
    let Some(i) = (1..n).rev().find(|&i| a[i - 1] < a[i]) else {
        return false;
    };
    let j = (i..n)
        .rev()
        .find(|&j| a[j] > a[i - 1])
        .expect("a[i] > a[i - 1]");
    a.swap(i - 1, j);
    a[i..].reverse();
    true
}

/// The fingerprint of `s`'s symmetry class: the least hash over the
/// renamings that sort hosts and jobs by their signatures. Any renaming
/// of `s` has the same signatures, so the same set of sorted arrangements,
/// hence the same least hash: a class gets one fingerprint, computed from
/// one renaming unless signatures tie (canonicalizing once, instead of
/// hashing every renaming).
pub fn canonical(s: &State) -> u64 {
    let mut host_sigs = [0u64; MAX_ITEMS];
    for (sig, x) in host_sigs.iter_mut().zip(&s.hosts) {
        *sig = host_sig(x, s.now);
    }
    let mut job_sigs = [0u64; MAX_ITEMS];
    for (j, sig) in job_sigs.iter_mut().enumerate().take(s.rows.len()) {
        *sig = job_sig(s, j);
    }
    let hosts = orders(&host_sigs[..s.hosts.len()]);
    let jobs = orders(&job_sigs[..s.rows.len()]);
    let mut best = u64::MAX;
    for hp in hosts.iter() {
        for jp in jobs.iter() {
            best = best.min(under(
                s,
                &Renaming {
                    hosts: hp,
                    jobs: Some(jp),
                },
            ));
        }
    }
    best
}

impl Hash for State {
    fn hash<H: Hasher>(&self, state: &mut H) {
        canonical(self).hash(state);
    }
}

#[cfg(test)]
mod tests {
    use super::{next_permutation, orders};

    fn all(sigs: &[u64]) -> Vec<Vec<u8>> {
        let mut o: Vec<Vec<u8>> = orders(sigs).iter().map(<[u8]>::to_vec).collect();
        o.sort();
        o
    }

    #[test]
    fn every_permutation_once() {
        let count = |n: usize| {
            let mut a: Vec<u8> = (0..n as u8).collect();
            let mut seen = vec![a.clone()];
            while next_permutation(&mut a) {
                seen.push(a.clone());
            }
            let len = seen.len();
            seen.sort();
            seen.dedup();
            assert_eq!(seen.len(), len, "no arrangement twice");
            len
        };
        assert_eq!(count(1), 1);
        assert_eq!(count(3), 6);
        assert_eq!(count(4), 24);
    }

    #[test]
    fn orders_sort_by_signature_and_permute_only_ties() {
        // Distinct signatures: the one renaming that sorts them.
        assert_eq!(all(&[30, 10, 20]), vec![vec![2, 0, 1]]);
        // Items 0 and 2 tie: both of their orders, item 1 first.
        assert_eq!(all(&[5, 1, 5]), vec![vec![1, 0, 2], vec![2, 0, 1]]);
        // All tie: every permutation.
        assert_eq!(all(&[7, 7, 7]).len(), 6);
        assert_eq!(all(&[7, 7, 7, 7]).len(), 24);
    }
}
