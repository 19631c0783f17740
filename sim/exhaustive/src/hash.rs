//! State hashing with symmetry reduction: a state's fingerprint is the
//! least hash over every renaming of its hosts and of its jobs, so states
//! that differ only by which host or which job is which are visited once.
//!
//! Hosts are interchangeable with their clocks (a host's drift is hashed
//! with it); jobs are all alike. What a row's future cannot depend on is
//! left out (its version, timestamps and error text), and so is what no
//! step reads any more (a claim due time already past), so histories that
//! reach the same situation by different routes merge.

use crate::clock::local_at;
use crate::world::{Body, ClaimAns, Ident, Msg, Phase, State, Task};
use leasehold_core::{JobId, JobRecord, WorkerId};
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

/// A renaming: new index of each old host, and of each old job.
struct Renaming<'a> {
    hosts: &'a [u8],
    jobs: &'a [u8],
}

impl Renaming<'_> {
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
        u64::from(self.jobs[(j.0 - 1) as usize]) + 1
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
    let mut by_job: Vec<usize> = (0..s.rows.len()).collect();
    by_job.sort_by_key(|&j| n.jobs[j]);
    for &j in &by_job {
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
            )
                .hash(&mut h);
        }
    }
    let mut crashed: Vec<Ident> = s.ghost.crashed.iter().map(|&i| n.ident(i)).collect();
    crashed.sort();
    crashed.hash(&mut h);
    s.ghost.violation.as_ref().map(|v| v.0).hash(&mut h);
    let mut by_host: Vec<usize> = (0..s.hosts.len()).collect();
    by_host.sort_by_key(|&i| n.hosts[i]);
    for &i in &by_host {
        let x = &s.hosts[i];
        // A claim due time already past reads as the present: the claim is
        // due either way, and time only moves on (`reduce.rs`).
        let claim_due = x.claim_due.max(local_at(x.drift_ppm, s.now));
        (x.drift_ppm, x.inc, claim_due, &x.claim_out).hash(&mut h);
        (x.slots.alive(), x.slots.tasks()).hash(&mut h);
        let mut tasks: Vec<u64> = x.tasks.iter().map(|t| task(t, n)).collect();
        tasks.sort_unstable();
        tasks.hash(&mut h);
    }
    let mut net: Vec<u64> = s.net.iter().map(|m| msg(m, n)).collect();
    net.sort_unstable();
    net.hash(&mut h);
    h.finish()
}

/// Every permutation of `0..n` (n ≤ 4), as new indices.
fn permutations(n: usize) -> Vec<Vec<u8>> {
    let mut out = vec![Vec::new()];
    for k in 0..n as u8 {
        let mut next = Vec::new();
        for p in &out {
            for pos in 0..=p.len() {
                let mut q = p.clone();
                q.insert(pos, k);
                next.push(q);
            }
        }
        out = next;
    }
    out
}

/// The fingerprint of `s`'s symmetry class.
pub fn canonical(s: &State) -> u64 {
    let hosts = permutations(s.hosts.len());
    let jobs = permutations(s.rows.len());
    let mut best = u64::MAX;
    for hp in &hosts {
        for jp in &jobs {
            best = best.min(under(
                s,
                &Renaming {
                    hosts: hp,
                    jobs: jp,
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
    use super::permutations;

    #[test]
    fn every_permutation_once() {
        assert_eq!(permutations(1).len(), 1);
        assert_eq!(permutations(3).len(), 6);
        let mut p = permutations(3);
        p.sort();
        p.dedup();
        assert_eq!(p.len(), 6);
    }
}
