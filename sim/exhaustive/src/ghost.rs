//! The checker's own record of what the store did, and the invariants
//! I1-I9 judged from it and from the world's state.
//!
//! Nothing here calls the core's guards: each invariant is the checker's
//! own reading of `PROTOCOL.md`, over rows before and after each store
//! step and over what each worker is doing. A step that breaks one is
//! recorded as the state's violation; the rest are judged on every state.

use crate::clock::local_at;
use crate::ident::Ident;
pub use crate::record::{GJob, GLease, Ghost, Inv, Step};
use crate::world::{Phase, State, Task};
use leasehold_core::{JobRecord, JobState, Token};

impl Ghost {
    /// A record for `jobs` jobs.
    pub fn new(jobs: usize) -> Self {
        Ghost {
            jobs: vec![GJob::default(); jobs],
            crashed: Vec::new(),
            violation: None,
        }
    }

    fn violate(&mut self, inv: Inv, why: String) {
        if self.violation.is_none() {
            self.violation = Some((inv, why));
        }
    }

    /// Judges one store step on job `j` at store time `now`.
    pub fn observe(
        &mut self,
        j: usize,
        pre: &JobRecord,
        post: &JobRecord,
        step: Step,
        now: i64,
        max_attempts: u32,
    ) {
        let changed = pre != post;
        let terminal = |s: JobState| {
            matches!(
                s,
                JobState::Succeeded | JobState::Dead | JobState::Cancelled
            )
        };
        if changed && terminal(pre.state) {
            if pre.state == JobState::Succeeded && post.state == JobState::Cancelled {
                self.violate(
                    Inv::I7,
                    format!("job {j}: a late cancel overwrote succeeded"),
                );
            } else {
                self.violate(
                    Inv::I2,
                    format!(
                        "job {j}: terminal {:?} changed to {:?}",
                        pre.state, post.state
                    ),
                );
            }
        }
        if pre.state == JobState::Cancelled && post.state == JobState::Pending {
            self.violate(Inv::I7, format!("job {j}: cancelled went back to pending"));
        }
        if post.attempt > max_attempts {
            self.violate(
                Inv::I8,
                format!("job {j}: attempt {} over {max_attempts}", post.attempt),
            );
        }
        match step {
            Step::Claim {
                who,
                token,
                expires_at,
            } => {
                let g = &mut self.jobs[j];
                if g.cancelled_pending {
                    self.violate(
                        Inv::I7,
                        format!("job {j}: cancelled while pending, then run"),
                    );
                }
                if pre.run_at.0 > now {
                    self.violate(Inv::I8, format!("job {j}: claimed before its run_at"));
                }
                let g = &mut self.jobs[j];
                let newest = g.leases.iter().map(|l| l.token).max();
                let live = g
                    .leases
                    .iter()
                    .find(|l| !l.ended && l.expires_at > now)
                    .map(|l| (l.token, l.holder));
                g.leases.push(GLease {
                    token,
                    holder: who,
                    expires_at,
                    ended: false,
                    explained: false,
                    believe_until: 0,
                    owed: None,
                    missed: None,
                });
                if newest.is_some_and(|n| token <= n) {
                    self.violate(
                        Inv::I1,
                        format!("job {j}: token {token:?} granted after {newest:?}"),
                    );
                }
                if let Some((t, h)) = live {
                    self.violate(
                        Inv::I1,
                        format!(
                            "job {j}: granted {token:?} to {} while {t:?} of {} is live",
                            who.worker_id(),
                            h.worker_id()
                        ),
                    );
                }
            }
            Step::Renew { token, expires_at } => {
                let g = &mut self.jobs[j];
                let others_live = g
                    .leases
                    .iter()
                    .any(|l| l.token != token && !l.ended && l.expires_at > now);
                if let Some(l) = g.leases.iter_mut().find(|l| l.token == token) {
                    l.expires_at = expires_at;
                    if l.ended || others_live {
                        self.violate(
                            Inv::I1,
                            format!("job {j}: renewed {token:?}, which is not the live lease"),
                        );
                    }
                }
            }
            Step::Release { token, committed } => {
                if changed {
                    if pre.state != JobState::Running || pre.token != token {
                        self.violate(
                            Inv::I2,
                            format!(
                                "job {j}: release of {token:?} accepted while {:?} held it",
                                pre.token
                            ),
                        );
                    }
                    let g = &mut self.jobs[j];
                    for l in g.leases.iter_mut().filter(|l| l.token == token) {
                        l.ended = true;
                    }
                    if terminal(post.state) {
                        g.terminal_steps += 1;
                        if g.terminal_steps > 1 {
                            self.violate(Inv::I2, format!("job {j}: a second terminal transition"));
                        }
                    }
                }
                if post.state == JobState::Succeeded && post.result.is_none() {
                    self.violate(Inv::I4, format!("job {j}: succeeded without its result"));
                }
                if committed {
                    self.jobs[j].committed = Some(token);
                }
            }
            Step::Sweep => {
                if !changed {
                    return;
                }
                if post.state == JobState::Dead && pre.attempt < max_attempts {
                    self.violate(Inv::I8, format!("job {j}: dead with budget left"));
                }
                let crashed = &self.crashed;
                let g = &mut self.jobs[j];
                let mut report = None;
                for l in g.leases.iter_mut().filter(|l| l.token == pre.token) {
                    l.ended = true;
                    if crashed.contains(&l.holder) {
                        continue;
                    }
                    // A lost message explains the reclaim only if the
                    // holder still sent every renew it owed (`owed.rs`).
                    if let Some(due) = l.missed {
                        report = Some(format!(
                            "job {j}: lease {:?} of {} reclaimed, but its holder is alive and never sent the renew it owed by {due} ms (the renew schedule, PROTOCOL.md §3)",
                            pre.token,
                            l.holder.worker_id()
                        ));
                    } else if !l.explained {
                        report = Some(format!(
                            "job {j}: lease {:?} of {} reclaimed, but its holder is alive and none of its messages was lost",
                            pre.token,
                            l.holder.worker_id()
                        ));
                    }
                }
                if terminal(post.state) {
                    g.terminal_steps += 1;
                }
                if let Some(why) = report {
                    self.violate(Inv::I5, why);
                }
            }
            Step::Cancel => {
                if changed && pre.state == JobState::Pending {
                    self.jobs[j].cancelled_pending = true;
                }
                if changed && terminal(post.state) && !terminal(pre.state) {
                    self.jobs[j].terminal_steps += 1;
                }
            }
        }
    }

    /// A message about lease `(j, token)` was lost: its reclaim is explained.
    pub fn lost(&mut self, j: usize, token: Token) {
        for l in self.jobs[j].leases.iter_mut().filter(|l| l.token == token) {
            l.explained = true;
        }
    }
}

/// Whether `inv` holds in `s` (see [`Inv`]); `Err` says how it does not.
///
/// `runnable(task, local)` says whether the world's driver would poll the
/// task's handler at local time `local` (the ground truth of "a handler
/// runs", which I3 judges).
pub fn holds(
    inv: Inv,
    s: &State,
    horizon: u64,
    concurrency: usize,
    runnable: &dyn Fn(&Task, u64) -> bool,
) -> Result<(), String> {
    if let Some((v, why)) = &s.ghost.violation {
        if *v == inv {
            return Err(why.clone());
        }
    }
    match inv {
        Inv::I3 => exclusive(s, runnable),
        Inv::I4 => {
            for (j, g) in s.ghost.jobs.iter().enumerate() {
                if let Some(t) = g.committed {
                    let r = &s.rows[j];
                    let kept = r.state == JobState::Succeeded
                        && r.result.is_some()
                        && r.released.map(|m| m.token) == Some(t);
                    if !kept {
                        return Err(format!(
                            "job {j}: release of {t:?} committed, the row is {:?}",
                            r.state
                        ));
                    }
                }
            }
            Ok(())
        }
        Inv::I6 if s.now >= horizon => {
            match s.rows.iter().position(|r| {
                !matches!(
                    r.state,
                    JobState::Succeeded | JobState::Dead | JobState::Cancelled
                )
            }) {
                Some(j) => Err(format!("job {j} is {:?} at the horizon", s.rows[j].state)),
                None => Ok(()),
            }
        }
        Inv::I8 => match s.rows.iter().position(|r| r.attempt > r.max_attempts) {
            Some(j) => Err(format!("job {j}: attempt over the budget")),
            None => Ok(()),
        },
        Inv::I9 => {
            for (h, host) in s.hosts.iter().enumerate() {
                let running = host
                    .tasks
                    .iter()
                    .filter(|t| matches!(t.phase, Phase::Running { .. }))
                    .count();
                if running > concurrency || host.tasks.len() > 2 * concurrency {
                    return Err(format!(
                        "host {h}: {running} handlers and {} lease tasks, limit {concurrency}",
                        host.tasks.len()
                    ));
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// I3: a handler may run (its task's loop would poll it: running phase,
/// not fenced at the host's clock) only while no other worker's may on
/// the same job, never after `Lost`, and never past its lease's store
/// expiry once the job was granted again.
fn exclusive(s: &State, runnable: &dyn Fn(&Task, u64) -> bool) -> Result<(), String> {
    let now = s.now;
    let mut runs: Vec<(usize, Ident, Token)> = Vec::new();
    for (h, host) in s.hosts.iter().enumerate() {
        let local = local_at(host.drift_ppm, now);
        for t in &host.tasks {
            if runnable(t, local) {
                let who = host.ident(h as u8);
                if t.lost_seen {
                    return Err(format!(
                        "{} keeps running job {:?} after Lost",
                        who.worker_id(),
                        t.job
                    ));
                }
                let j = s.rows.iter().position(|r| r.id == t.job).unwrap_or(0);
                let g = &s.ghost.jobs[j];
                let newer = g.leases.iter().any(|l| l.token > t.token);
                let expiry = g
                    .leases
                    .iter()
                    .find(|l| l.token == t.token)
                    .map_or(i64::MIN, |l| l.expires_at);
                if newer && now as i64 > expiry {
                    return Err(format!(
                        "{} runs job {j} with {:?} past its store expiry {expiry} while a newer lease exists",
                        who.worker_id(),
                        t.token
                    ));
                }
                if let Some((_, other, tok)) = runs.iter().find(|r| r.0 == j) {
                    return Err(format!(
                        "{} ({tok:?}) and {} ({:?}) both run job {j}",
                        other.worker_id(),
                        who.worker_id(),
                        t.token
                    ));
                }
                runs.push((j, who, t.token));
            }
        }
    }
    Ok(())
}
