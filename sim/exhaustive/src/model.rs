//! The world as a `stateright` model: which actions are enabled in a
//! state, and the state each one leads to. Workers run the core's
//! [`LeaseMachine`], [`ReleaseRetries`] and [`Slots`]; the store applies the
//! core's pure transitions; the network, the faults, the sweeper, the
//! clocks and the handlers are the world's.

use crate::clock::{local_at, true_at};
use crate::ghost::{holds, Ghost, Inv, Step};
use crate::owed::{settle, Answer, Schedule};
use crate::plant::Plant;
use crate::scope::Scope;
use crate::shared::Shared;
use crate::world::{
    Body, ClaimAns, Heartbeat, Host, Ident, Msg, Phase, ReleaseAns, RenewAns, Spent, State, Task,
};
use leasehold_core::transition::{self, ReleasePlan, RenewPlan};
use leasehold_core::worker::lease_machine::{LeaseMachine, Renewed};
use leasehold_core::worker::release_retries::{ReleaseRetries, ReleaseStep};
use leasehold_core::worker::slots::Slots;
use leasehold_core::{
    JobId, JobRecord, JobState, Millis, NewJob, Outcome, Policy, Release, Renewal, StoreError,
    StoreTime, Token, WorkerConfig,
};
use stateright::{Model, Property};

/// The concurrency of every worker: one handler (and, while its release is
/// retried, one more lease task).
pub const CONCURRENCY: u32 = 1;
const QUEUE: &str = "q";

/// What can happen next.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// Host `h` sends a claim.
    Claim(u8),
    /// A timer of the lease task `(job, token)` on host `h` fires.
    Timer(u8, JobId, Token, Timer),
    /// A message is delivered (a request applied, an answer received).
    Deliver(Msg),
    /// A message is lost: its worker sees `Unavailable` at its timeout.
    Lose(Msg),
    /// The store answers a request `Conflict`, applying nothing.
    Conflict(Msg),
    /// The store answers a request `Unavailable` at once, applying nothing.
    Unavailable(Msg),
    /// The handler of `(job, token)` on host `h` returns.
    HandlerDone(u8, JobId, Token),
    /// Host `h`'s worker crashes and restarts with a fresh identity.
    Crash(u8),
    /// The sweeper reclaims job `j`'s expired lease.
    Sweep(u8),
    /// A client cancels job `j`.
    Cancel(u8),
    /// Time moves to the next instant where something can change.
    Tick(u64),
}

/// Which timer of a lease task.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Timer {
    /// The running loop's wake-up.
    Loop,
    /// The release's retry.
    Retry,
    /// The releasing heartbeat's sleep.
    Heartbeat,
}

/// The world of a scope (see the crate docs).
#[derive(Clone, Debug)]
pub struct World {
    /// The scope.
    pub scope: Scope,
    /// Each host's config per incarnation.
    cfgs: Vec<Vec<WorkerConfig>>,
    policy: Policy,
    plant: Option<Plant>,
    /// The renew schedule the checker judges holders by (`owed.rs`).
    sched: Schedule,
    fence_from_answer: bool,
    stop_at_violation: bool,
    /// The search's reductions are on (`reduce.rs`); off only to compare
    /// verdicts with the whole world.
    pub(crate) reduced: bool,
}

/// The catalogue variants whose bug is in the worker's lease decisions,
/// the ones [`World::with_variant`] runs (the store-side ones live in the
/// memory adapter, outside the core's transitions).
#[cfg(feature = "buggy-variants")]
pub const WORKER_VARIANTS: [leasehold_core::variants::Variant; 9] = {
    use leasehold_core::variants::Variant;
    [
        Variant::FixedLockNoHeartbeat,
        Variant::HeartbeatStopsOnError,
        Variant::ExpiryDoesNotStopHandler,
        Variant::WorkerWallClockDeadline,
        Variant::ConflictAbandonsLease,
        Variant::FenceFromAnswer,
        Variant::HeartbeatStopsAtRelease,
        Variant::FenceIgnoresDrift,
        Variant::RenewRetryWaitsFullInterval,
    ]
};

impl World {
    /// The world of `scope`, with the correct core.
    pub fn new(scope: Scope) -> Self {
        Self::build(scope, None, |b| b)
    }

    /// The world of `scope` with a wrong transition planted (negative tests).
    pub fn with_plant(scope: Scope, plant: Plant) -> Self {
        Self::build(scope, Some(plant), |b| b)
    }

    /// The world of `scope` whose workers run a catalogue variant.
    #[cfg(feature = "buggy-variants")]
    pub fn with_variant(scope: Scope, v: leasehold_core::variants::Variant) -> Self {
        let mut w = Self::build(scope, None, move |b| b.variant(v));
        w.fence_from_answer = v == leasehold_core::variants::Variant::FenceFromAnswer;
        w
    }

    fn build(
        scope: Scope,
        plant: Option<Plant>,
        tweak: impl Fn(
            leasehold_core::worker::WorkerConfigBuilder,
        ) -> leasehold_core::worker::WorkerConfigBuilder,
    ) -> Self {
        let cfgs = (0..scope.workers)
            .map(|host| {
                (0..=scope.crashes)
                    .map(|inc| {
                        let b = WorkerConfig::builder(Ident { host, inc }.worker_id(), QUEUE)
                            .concurrency(CONCURRENCY)
                            .lease(scope.lease)
                            .renew_interval(scope.renew_interval)
                            .max_drift_ppm(scope.drift_ppm)
                            .fence_margin(Millis::ZERO)
                            .poll_interval(scope.poll_interval)
                            .release_tries(scope.release_tries)
                            .request_timeout(scope.request_timeout)
                            .grace(scope.max_job_time);
                        tweak(b)
                            .build()
                            .expect("the scope's worker config is valid")
                    })
                    .collect()
            })
            .collect();
        World {
            sched: Schedule::of(&scope),
            scope,
            cfgs,
            policy: Policy::default(),
            plant,
            fence_from_answer: false,
            stop_at_violation: true,
            reduced: true,
        }
    }

    /// Explores past a step that broke an invariant (default: stops
    /// there), so that what else the run breaks is found too.
    pub fn explore_past_violations(mut self) -> Self {
        self.stop_at_violation = false;
        self
    }

    /// The same world without the search's reductions (`reduce.rs`): every
    /// state the reduced search skips is visited too. For the tests that
    /// compare verdicts; it reaches only small scopes.
    pub fn unreduced(mut self) -> Self {
        self.reduced = false;
        self
    }

    fn cfg(&self, who: Ident) -> &WorkerConfig {
        &self.cfgs[who.host as usize][who.inc as usize]
    }

    fn faults_ok(&self, s: &State) -> bool {
        s.now <= self.scope.faults_until.0
    }

    /// Whether the handler of `t` may run at local time `local`: the
    /// driver polls it only while the machine is not fenced.
    pub fn runnable(&self, t: &Task, local: u64) -> bool {
        matches!(t.phase, Phase::Running { .. })
            && (!t.m.is_fenced(Millis(local)) || self.plant == Some(Plant::DriverIgnoresFence))
    }

    fn claim_asks(&self, host: &Host) -> Vec<(usize, u32)> {
        if self.plant == Some(Plant::ClaimIgnoresSlots) {
            return vec![(0, 1)];
        }
        host.slots.clone().plan()
    }

    fn claim_enabled(&self, s: &State, h: usize) -> bool {
        let host = &s.hosts[h];
        // An idle worker claims when work appears (its wake-up), not on
        // every poll: an empty claim changes nothing in the store.
        self.plant != Some(Plant::NeverClaims)
            && s.rows.iter().any(|r| r.state == JobState::Pending)
            && host.claim_out.is_none()
            && local_at(host.drift_ppm, s.now) >= host.claim_due
            && !self.claim_asks(host).is_empty()
    }

    fn sweepable(&self, r: &JobRecord, now: u64) -> bool {
        r.state == JobState::Running
            && (r.expires_at.is_some_and(|e| e.0 <= now as i64)
                || self.plant == Some(Plant::SweepSkipsExpiry))
    }

    /// Every lease task timer due now, as actions.
    pub(crate) fn due_timers(&self, s: &State, out: &mut Vec<Action>) {
        for (h, host) in s.hosts.iter().enumerate() {
            let local = local_at(host.drift_ppm, s.now);
            for t in &host.tasks {
                let a = |k| Action::Timer(h as u8, t.job, t.token, k);
                match &t.phase {
                    Phase::Running { wake, .. } if local >= *wake => out.push(a(Timer::Loop)),
                    Phase::Running { .. } => {}
                    Phase::Releasing {
                        retry_at,
                        heartbeat,
                        ..
                    } => {
                        if retry_at.is_some_and(|at| local >= at) {
                            out.push(a(Timer::Retry));
                        }
                        if matches!(heartbeat, Heartbeat::Sleep(at) if local >= *at) {
                            out.push(a(Timer::Heartbeat));
                        }
                    }
                }
            }
        }
    }

    /// Whether something must happen before time may move on.
    fn urgent(&self, s: &State) -> bool {
        let mut timers = Vec::new();
        self.due_timers(s, &mut timers);
        if !timers.is_empty() || s.net.iter().any(|m| m.deadline <= s.now) {
            return true;
        }
        if (0..s.hosts.len()).any(|h| self.claim_enabled(s, h)) {
            return true;
        }
        for host in &s.hosts {
            let local = local_at(host.drift_ppm, s.now);
            for t in &host.tasks {
                if let Phase::Running { handler_by, .. } = t.phase {
                    if handler_by <= s.now && self.runnable(t, local) {
                        return true;
                    }
                }
            }
        }
        s.rows.iter().any(|r| {
            r.state == JobState::Running
                && r.expires_at.is_some_and(|e| {
                    e.0.saturating_add(self.scope.sweep_interval.0 as i64) <= s.now as i64
                })
        })
    }

    /// The next instant after `s.now` where something can change.
    fn next_instant(&self, s: &State) -> u64 {
        let now = s.now;
        let mut at = self.scope.horizon.0;
        let mut consider = |t: u64| {
            if t > now && t < at {
                at = t;
            }
        };
        for m in &s.net {
            consider(m.not_before);
            consider(m.deadline);
        }
        for host in &s.hosts {
            let d = host.drift_ppm;
            if host.claim_out.is_none() && s.rows.iter().any(|r| r.state == JobState::Pending) {
                consider(true_at(d, host.claim_due));
            }
            for t in &host.tasks {
                match &t.phase {
                    Phase::Running { wake, handler_by } => {
                        consider(true_at(d, *wake));
                        consider(*handler_by);
                    }
                    Phase::Releasing {
                        retry_at,
                        heartbeat,
                        ..
                    } => {
                        if let Some(r) = retry_at {
                            consider(true_at(d, *r));
                        }
                        if let Heartbeat::Sleep(x) = heartbeat {
                            consider(true_at(d, *x));
                        }
                    }
                }
            }
        }
        for r in &s.rows {
            if let (JobState::Running, Some(e)) = (r.state, r.expires_at) {
                let e = e.0.max(0) as u64;
                consider(e);
                consider(e + self.scope.sweep_interval.0);
            }
        }
        consider(self.scope.faults_until.0);
        at
    }

    fn send(&self, s: &mut State, h: usize, body: Body) {
        let host = &s.hosts[h];
        let local = local_at(host.drift_ppm, s.now);
        let timeout_local = local.saturating_add(self.scope.request_timeout.0);
        if let Body::RenewReq(job, token) = body {
            let j = Self::job_index(s, job);
            // Only a renew that was owed changes the (shared) record.
            if s.ghost.jobs[j]
                .leases
                .iter()
                .any(|l| l.token == token && l.owed.is_some())
            {
                s.ghost.renew_sent(j, token, s.now);
            }
        }
        let host = &s.hosts[h];
        s.net.push(Msg {
            who: host.ident(h as u8),
            body,
            sent_local: local,
            not_before: s.now,
            deadline: s.now + self.scope.max_delay.0,
            timeout_at: true_at(host.drift_ppm, timeout_local),
        });
    }

    fn answer(&self, s: &mut State, req: &Msg, body: Body) {
        s.net.push(Msg {
            body,
            not_before: s.now,
            deadline: s.now + self.scope.max_delay.0,
            ..req.clone()
        });
    }

    // ---- the store ----

    fn job_index(s: &State, job: JobId) -> usize {
        s.rows
            .iter()
            .position(|r| r.id == job)
            .expect("a job of the world")
    }

    fn store_claim(&self, s: &mut State, who: Ident, max: u32) -> ClaimAns {
        let now = StoreTime(s.now as i64);
        let mut granted = Vec::new();
        let cfg = self.cfg(who);
        for j in 0..s.rows.len() {
            if granted.len() >= max as usize {
                break;
            }
            let pre = s.rows[j].clone();
            let mut row = pre.clone();
            if self.plant == Some(Plant::ClaimSkipsStateGuard) && row.state == JobState::Running {
                row.state = JobState::Pending;
            }
            let Ok((applied, lease)) = transition::claim(&row, &cfg.worker_id, cfg.lease, now)
            else {
                continue;
            };
            let mut post = applied.record;
            if self.plant == Some(Plant::ClaimPastBudget) {
                post.attempt = post.max_attempts + 1;
            }
            s.ghost.observe(
                j,
                &pre,
                &post,
                Step::Claim {
                    who,
                    token: lease.token,
                    expires_at: lease.expires_at.0,
                },
                now.0,
                self.scope.max_attempts,
            );
            s.rows[j] = post.into();
            granted.push((lease.job, lease.token, lease.expires_at.0));
        }
        ClaimAns::Granted(granted)
    }

    fn store_renew(&self, s: &mut State, job: JobId, token: Token) -> RenewAns {
        let now = StoreTime(s.now as i64);
        let j = Self::job_index(s, job);
        let pre = s.rows[j].clone();
        match transition::renew(&pre, token, self.scope.lease, &self.policy, now) {
            Ok(RenewPlan::Renewed(
                applied,
                Renewal::Renewed {
                    expires_at,
                    cancel_requested,
                },
            )) => {
                s.ghost.observe(
                    j,
                    &pre,
                    &applied.record,
                    Step::Renew {
                        token,
                        expires_at: expires_at.0,
                    },
                    now.0,
                    self.scope.max_attempts,
                );
                s.rows[j] = applied.record.into();
                RenewAns::Renewed {
                    expires_at: expires_at.0,
                    cancel: cancel_requested,
                }
            }
            Ok(_) => RenewAns::Lost,
            Err(_) => RenewAns::Rejected,
        }
    }

    fn store_release(&self, s: &mut State, job: JobId, token: Token, out: &Outcome) -> ReleaseAns {
        let now = StoreTime(s.now as i64);
        let j = Self::job_index(s, job);
        let pre = s.rows[j].clone();
        let mut row = pre.clone();
        if self.plant == Some(Plant::ReleaseSkipsRepeatGuard) && row.token == token {
            row.state = JobState::Running;
            row.released = None;
        }
        let (post, ans) = match transition::release(&row, token, out, &self.policy, now) {
            Ok(ReleasePlan::Apply(applied)) => {
                let mut post = applied.record;
                if self.plant == Some(Plant::ReleaseDropsResult) {
                    post.result = None;
                }
                (post, ReleaseAns::Committed)
            }
            Ok(ReleasePlan::Repeat) => ((*pre).clone(), ReleaseAns::Committed),
            Ok(ReleasePlan::Lost) => ((*pre).clone(), ReleaseAns::Lost),
            Err(_) => ((*pre).clone(), ReleaseAns::Rejected),
        };
        let committed = ans == ReleaseAns::Committed && matches!(out, Outcome::Succeeded(_));
        s.ghost.observe(
            j,
            &pre,
            &post,
            Step::Release { token, committed },
            now.0,
            self.scope.max_attempts,
        );
        s.rows[j] = post.into();
        ans
    }

    fn store_sweep(&self, s: &mut State, j: usize) {
        let now = StoreTime(s.now as i64);
        let pre = s.rows[j].clone();
        let mut row = pre.clone();
        if self.plant == Some(Plant::SweepSkipsExpiry) {
            row.expires_at = Some(now);
        }
        if let Ok((applied, _report)) = transition::sweep(&row, now) {
            s.ghost.observe(
                j,
                &pre,
                &applied.record,
                Step::Sweep,
                now.0,
                self.scope.max_attempts,
            );
            s.rows[j] = applied.record.into();
        }
    }

    fn store_cancel(&self, s: &mut State, j: usize) {
        let now = StoreTime(s.now as i64);
        let pre = s.rows[j].clone();
        let mut post = match transition::cancel(&pre, now) {
            (Some(applied), _) => applied.record,
            (None, _) => (*pre).clone(),
        };
        if self.plant == Some(Plant::CancelOverwritesSucceeded) && pre.state == JobState::Succeeded
        {
            post.state = JobState::Cancelled;
            post.version += 1;
        }
        s.ghost
            .observe(j, &pre, &post, Step::Cancel, now.0, self.scope.max_attempts);
        s.rows[j] = post.into();
    }

    // ---- the workers: the driver around the core's machines ----

    fn task_mut(s: &mut State, h: usize, job: JobId, token: Token) -> Option<&mut Task> {
        s.hosts[h]
            .tasks
            .iter_mut()
            .find(|t| t.job == job && t.token == token)
    }

    fn end_task(&self, s: &mut State, h: usize, job: JobId, token: Token) {
        let host = &mut s.hosts[h];
        host.tasks.retain(|t| !(t.job == job && t.token == token));
        if self.plant != Some(Plant::ClaimIgnoresSlots) {
            host.slots.end(job, token);
        }
    }

    /// The running loop's poll at the host's clock, and what it asks for.
    fn poll(&self, s: &mut State, h: usize, job: JobId, token: Token) {
        let local = local_at(s.hosts[h].drift_ppm, s.now);
        let ignore_fence = self.plant == Some(Plant::DriverIgnoresFence);
        let Some(t) = Self::task_mut(s, h, job, token) else {
            return;
        };
        let p = t.m.poll(Millis(local));
        if let Some(end) = p.end {
            if ignore_fence && end.belief_end() == leasehold_core::worker::BeliefEnd::Fenced {
                if let Phase::Running { wake, .. } = &mut t.phase {
                    *wake = u64::MAX;
                }
                return;
            }
            match end.released() {
                Some(out) => self.start_release(s, h, job, token, out),
                None => self.end_task(s, h, job, token),
            }
            return;
        }
        if let Phase::Running { wake, .. } = &mut t.phase {
            *wake = p.wake.0;
        }
        if p.send_renew && !ignore_fence {
            t.renew_out = true;
            self.send(s, h, Body::RenewReq(job, token));
        }
    }

    fn start_release(&self, s: &mut State, h: usize, job: JobId, token: Token, out: Outcome) {
        let cfg = self.cfg(s.hosts[h].ident(h as u8)).clone();
        if self.plant != Some(Plant::ClaimIgnoresSlots) {
            s.hosts[h].slots.handler_done(job, token);
        }
        let Some(t) = Self::task_mut(s, h, job, token) else {
            return;
        };
        if !t.m.start_releasing() {
            t.renew_out = false;
        }
        let heartbeat = if t.renew_out {
            Heartbeat::Await
        } else {
            Heartbeat::Stopped
        };
        t.phase = Phase::Releasing {
            tries: ReleaseRetries::new(&cfg),
            release_out: true,
            retry_at: None,
            heartbeat,
        };
        let body = release_body(job, token, &out);
        self.send(s, h, body);
        if heartbeat == Heartbeat::Stopped {
            self.heartbeat_poll(s, h, job, token);
        }
    }

    fn heartbeat_poll(&self, s: &mut State, h: usize, job: JobId, token: Token) {
        use leasehold_core::worker::lease_machine::HeartbeatPoll;
        let local = local_at(s.hosts[h].drift_ppm, s.now);
        let Some(t) = Self::task_mut(s, h, job, token) else {
            return;
        };
        let next = match t.m.heartbeat_poll(Millis(local)) {
            HeartbeatPoll::Stop => Heartbeat::Stopped,
            HeartbeatPoll::SleepUntil(at) => Heartbeat::Sleep(at.0),
            HeartbeatPoll::SendRenew => {
                t.renew_out = true;
                Heartbeat::Await
            }
        };
        if let Phase::Releasing { heartbeat, .. } = &mut t.phase {
            *heartbeat = next;
        }
        if next == Heartbeat::Await {
            self.send(s, h, Body::RenewReq(job, token));
        }
    }

    fn on_claim_answer(&self, s: &mut State, h: usize, msg: &Msg, ans: &ClaimAns) {
        let who = s.hosts[h].ident(h as u8);
        let cfg = self.cfg(who).clone();
        let local = local_at(s.hosts[h].drift_ppm, s.now);
        let asks = s.hosts[h].claim_out.take().unwrap_or_default();
        let max: u32 = asks.iter().map(|a| a.1).sum();
        if self.plant != Some(Plant::ClaimIgnoresSlots) {
            s.hosts[h].slots.unreserve(&asks);
        }
        let granted = match ans {
            ClaimAns::Granted(g) => g.clone(),
            _ => Vec::new(),
        };
        s.hosts[h].claim_due =
            if matches!(ans, ClaimAns::Granted(_)) && granted.len() >= max as usize {
                local
            } else {
                local.saturating_add(self.scope.poll_interval.0)
            };
        for (job, token, expires_at) in granted.into_iter().take(max as usize) {
            if self.plant != Some(Plant::ClaimIgnoresSlots)
                && !s.hosts[h].slots.start(0, job, token)
            {
                continue;
            }
            let t_send = if self.fence_from_answer {
                local
            } else {
                msg.sent_local
            };
            let wall = StoreTime(local as i64);
            let m = LeaseMachine::new(
                &cfg,
                Millis(t_send),
                Millis(local),
                wall,
                StoreTime(expires_at),
            );
            s.hosts[h].tasks.push(Task {
                job,
                token,
                m,
                phase: Phase::Running {
                    wake: 0,
                    handler_by: s.now + self.scope.max_job_time.0,
                },
                renew_out: false,
                lost_seen: false,
            });
            let j = Self::job_index(s, job);
            let drift = s.hosts[h].drift_ppm;
            s.ghost.answered(
                &self.sched,
                j,
                token,
                drift,
                local,
                Answer::Granted(msg.sent_local),
            );
            self.poll(s, h, job, token);
        }
    }

    fn on_renew_answer(&self, s: &mut State, h: usize, msg: &Msg, ans: RenewAns) {
        let Some((job, token)) = msg.body.lease() else {
            return;
        };
        let drift = s.hosts[h].drift_ppm;
        let local = local_at(drift, s.now);
        let answer = renew_result(job, ans);
        let Some(t) = Self::task_mut(s, h, job, token) else {
            return;
        };
        if !t.renew_out {
            return;
        }
        t.renew_out = false;
        // The checker's own account of what the holder now owes, taken
        // before the driver acts on the answer (a renew it sends at once
        // settles it).
        let j = Self::job_index(s, job);
        s.ghost.answered(
            &self.sched,
            j,
            token,
            drift,
            local,
            Answer::Renew(msg.sent_local, ans),
        );
        let Some(t) = Self::task_mut(s, h, job, token) else {
            return;
        };
        match t.phase {
            Phase::Running { .. } => {
                match t
                    .m
                    .on_renew_answer(Millis(local), StoreTime(local as i64), &answer)
                {
                    Renewed::Ended(_) => {
                        self.end_task(s, h, job, token);
                        return;
                    }
                    Renewed::LostIgnored => t.lost_seen = true,
                    Renewed::Extended { .. } | Renewed::Unavailable => {}
                }
                self.poll(s, h, job, token);
                if self.plant == Some(Plant::RetryWaitsFullInterval)
                    && matches!(ans, RenewAns::Unavailable | RenewAns::Conflict)
                {
                    let late = local.saturating_add(self.scope.renew_interval.0);
                    if let Some(t) = Self::task_mut(s, h, job, token) {
                        let fence = t.m.believe_until().0;
                        if let Phase::Running { wake, .. } = &mut t.phase {
                            *wake = late.min(fence);
                        }
                    }
                }
            }
            Phase::Releasing { .. } => {
                if t.m.heartbeat_answer(Millis(local), &answer) {
                    self.heartbeat_poll(s, h, job, token);
                } else if let Phase::Releasing { heartbeat, .. } = &mut t.phase {
                    *heartbeat = Heartbeat::Stopped;
                }
            }
        }
    }

    fn on_release_answer(
        &self,
        s: &mut State,
        h: usize,
        job: JobId,
        token: Token,
        ans: ReleaseAns,
    ) {
        let local = local_at(s.hosts[h].drift_ppm, s.now);
        let answer = release_result(job, ans);
        let transient = answer.as_ref().is_err_and(StoreError::is_transient);
        let Some(t) = Self::task_mut(s, h, job, token) else {
            return;
        };
        let Phase::Releasing {
            tries,
            release_out,
            retry_at,
            heartbeat,
        } = &mut t.phase
        else {
            return;
        };
        if !*release_out {
            return;
        }
        *release_out = false;
        // As the Worker's lease task: the release is not given up while its
        // heartbeat keeps the lease.
        let kept = *heartbeat != Heartbeat::Stopped;
        match tries.on_answer(&answer, kept) {
            ReleaseStep::RetryAfter(wait) => {
                *retry_at = Some(local.saturating_add(wait.0));
                if !transient && self.plant != Some(Plant::ClaimIgnoresSlots) {
                    s.hosts[h].slots.answered(job, token);
                }
            }
            ReleaseStep::Answered(_) | ReleaseStep::GiveUp | ReleaseStep::Rejected => {
                if !transient && self.plant != Some(Plant::ClaimIgnoresSlots) {
                    s.hosts[h].slots.answered(job, token);
                }
                self.end_task(s, h, job, token);
            }
        }
    }

    fn deliver(&self, s: &mut State, msg: &Msg) {
        let h = msg.who.host as usize;
        if msg.body.to_store() {
            let body = match msg.body {
                Body::ClaimReq { max } => Body::ClaimAns(self.store_claim(s, msg.who, max)),
                Body::RenewReq(j, t) => Body::RenewAns(j, t, self.store_renew(s, j, t)),
                Body::ReleaseReq(j, t) => {
                    Body::ReleaseAns(j, t, self.store_release(s, j, t, &succeeded()))
                }
                _ => unreachable!("to the store"),
            };
            self.answer(s, msg, body);
            return;
        }
        if s.hosts[h].ident(h as u8) != msg.who {
            return; // to an identity that crashed
        }
        match &msg.body {
            Body::ClaimAns(a) => self.on_claim_answer(s, h, msg, a),
            Body::RenewAns(_, _, a) => self.on_renew_answer(s, h, msg, *a),
            Body::ReleaseAns(j, t, a) => self.on_release_answer(s, h, *j, *t, *a),
            _ => unreachable!("to a worker"),
        }
    }

    /// The answer a lost or refused request is seen with.
    fn refused(body: &Body, how: RenewAns) -> Body {
        let rel = match how {
            RenewAns::Conflict => ReleaseAns::Conflict,
            _ => ReleaseAns::Unavailable,
        };
        match *body {
            Body::ClaimReq { .. } | Body::ClaimAns(_) => Body::ClaimAns(match how {
                RenewAns::Conflict => ClaimAns::Conflict,
                _ => ClaimAns::Unavailable,
            }),
            Body::RenewReq(j, t) | Body::RenewAns(j, t, _) => Body::RenewAns(j, t, how),
            Body::ReleaseReq(j, t) | Body::ReleaseAns(j, t, _) => Body::ReleaseAns(j, t, rel),
        }
    }
}

fn succeeded() -> Outcome {
    Outcome::Succeeded(b"ok".to_vec())
}

fn release_body(job: JobId, token: Token, _out: &Outcome) -> Body {
    Body::ReleaseReq(job, token)
}

fn renew_result(job: JobId, a: RenewAns) -> Result<Renewal, StoreError> {
    match a {
        RenewAns::Renewed { expires_at, cancel } => Ok(Renewal::Renewed {
            expires_at: StoreTime(expires_at),
            cancel_requested: cancel,
        }),
        RenewAns::Lost => Ok(Renewal::Lost),
        RenewAns::Conflict => Err(StoreError::Conflict(job)),
        RenewAns::Unavailable => Err(StoreError::Unavailable("no answer".into())),
        RenewAns::Rejected => Err(StoreError::Corrupt("rejected".into())),
    }
}

fn release_result(job: JobId, a: ReleaseAns) -> Result<Release, StoreError> {
    match a {
        ReleaseAns::Committed => Ok(Release::Committed),
        ReleaseAns::Lost => Ok(Release::Lost),
        ReleaseAns::Conflict => Err(StoreError::Conflict(job)),
        ReleaseAns::Unavailable => Err(StoreError::Unavailable("no answer".into())),
        ReleaseAns::Rejected => Err(StoreError::Corrupt("rejected".into())),
    }
}

macro_rules! inv_fn {
    ($($f:ident => $inv:expr),* $(,)?) => {$(
        fn $f(m: &World, s: &State) -> bool {
            holds($inv, s, m.scope.horizon.0, CONCURRENCY as usize, &|t, l| m.runnable(t, l)).is_ok()
        }
    )*};
}

inv_fn! {
    i1 => Inv::I1, i2 => Inv::I2, i3 => Inv::I3, i4 => Inv::I4, i5 => Inv::I5,
    i6 => Inv::I6, i7 => Inv::I7, i8 => Inv::I8, i9 => Inv::I9,
}

impl Model for World {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        let policy = &self.policy;
        let rows: Vec<JobRecord> = (0..self.scope.jobs)
            .map(|j| {
                let spec = NewJob::new(QUEUE, vec![j]).max_attempts(self.scope.max_attempts);
                match transition::enqueue(
                    &spec,
                    JobId(u64::from(j) + 1),
                    None,
                    policy,
                    StoreTime(0),
                ) {
                    Ok(transition::EnqueuePlan::Insert(a)) => a.record,
                    other => panic!("enqueue in the world: {other:?}"),
                }
            })
            .collect();
        // Drift at the bound: every host runs at exactly 1-ρ or 1+ρ; by
        // symmetry, only how many run fast matters.
        let rho = self.scope.drift_ppm as i32;
        let n = self.scope.workers as usize;
        (0..=n)
            .map(|fast| {
                let hosts = (0..n)
                    .map(|h| Host {
                        drift_ppm: if h < fast { rho } else { -rho },
                        inc: 0,
                        slots: Slots::new(self.cfg(Ident {
                            host: h as u8,
                            inc: 0,
                        })),
                        claim_due: 0,
                        claim_out: None,
                        tasks: Vec::new(),
                    })
                    .map(Shared::new)
                    .collect();
                State {
                    now: 0,
                    rows: rows.iter().cloned().map(Shared::new).collect(),
                    hosts,
                    net: Vec::new(),
                    spent: Spent::default(),
                    ghost: Ghost::new(rows.len()).into(),
                }
            })
            .collect()
    }

    fn actions(&self, s: &State, out: &mut Vec<Action>) {
        // A state whose step broke an invariant is not explored further
        // (the path to it is the counterexample), unless the world says so.
        if s.now >= self.scope.horizon.0 || (self.stop_at_violation && s.ghost.violation.is_some())
        {
            return;
        }
        let faults = self.faults_ok(s);
        for h in 0..s.hosts.len() {
            if self.claim_enabled(s, h) {
                out.push(Action::Claim(h as u8));
            }
        }
        self.due_timers(s, out);
        for m in &s.net {
            let alive = s.hosts[m.who.host as usize].inc == m.who.inc;
            // A message arrives at once or as late as it may: the two ends
            // of its window are the instants that can change an outcome.
            if s.now == m.not_before || s.now >= m.deadline {
                out.push(Action::Deliver(m.clone()));
                if faults && m.body.to_store() {
                    if s.spent.conflicts < self.scope.conflicts {
                        out.push(Action::Conflict(m.clone()));
                    }
                    if s.spent.unavailable < self.scope.unavailable {
                        out.push(Action::Unavailable(m.clone()));
                    }
                }
            }
            // A timeout is the loss's own consequence: it cannot be lost. A
            // loss is decided as the message leaves: when it is lost does
            // not change what follows (its worker times out all the same).
            let timeout = m.not_before == m.timeout_at && m.deadline == m.timeout_at;
            if faults
                && alive
                && !timeout
                && s.now == m.not_before
                && s.spent.lost < self.scope.lost
            {
                out.push(Action::Lose(m.clone()));
            }
        }
        for (h, host) in s.hosts.iter().enumerate() {
            let local = local_at(host.drift_ppm, s.now);
            for t in &host.tasks {
                if self.runnable(t, local) {
                    out.push(Action::HandlerDone(h as u8, t.job, t.token));
                }
            }
            // Only a worker with work in hand: crashing an idle one changes
            // nothing but its name.
            let busy = !host.tasks.is_empty() || host.claim_out.is_some();
            if faults
                && busy
                && s.spent.crashes < self.scope.crashes
                && (!self.reduced || self.crash_instant(s, h))
            {
                out.push(Action::Crash(h as u8));
            }
        }
        for (j, r) in s.rows.iter().enumerate() {
            if self.sweepable(r, s.now) {
                out.push(Action::Sweep(j as u8));
            }
            if faults
                && s.spent.cancels < self.scope.cancels
                && (r.state != JobState::Succeeded
                    || self.plant == Some(Plant::CancelOverwritesSucceeded))
            {
                out.push(Action::Cancel(j as u8));
            }
        }
        if !self.urgent(s) {
            out.push(Action::Tick(self.next_instant(s)));
        }
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        let mut s = last.clone();
        let take = |s: &mut State, m: &Msg| {
            let i = s.net.iter().position(|x| x == m).expect("in flight");
            s.net.remove(i);
        };
        match action {
            Action::Claim(h) => {
                let h = h as usize;
                let asks = self.claim_asks(&s.hosts[h]);
                let asks = if self.plant == Some(Plant::ClaimIgnoresSlots) {
                    asks
                } else {
                    s.hosts[h].slots.plan()
                };
                let max = asks.iter().map(|a| a.1).sum();
                s.hosts[h].claim_out = Some(asks);
                self.send(&mut s, h, Body::ClaimReq { max });
            }
            Action::Timer(h, job, token, kind) => {
                let h = h as usize;
                match kind {
                    Timer::Loop => self.poll(&mut s, h, job, token),
                    Timer::Heartbeat => self.heartbeat_poll(&mut s, h, job, token),
                    Timer::Retry => {
                        if let Some(t) = Self::task_mut(&mut s, h, job, token) {
                            if let Phase::Releasing {
                                retry_at,
                                release_out,
                                ..
                            } = &mut t.phase
                            {
                                *retry_at = None;
                                *release_out = true;
                            }
                            self.send(&mut s, h, Body::ReleaseReq(job, token));
                        }
                    }
                }
            }
            Action::Deliver(m) => {
                take(&mut s, &m);
                self.deliver(&mut s, &m);
            }
            Action::Lose(m) => {
                take(&mut s, &m);
                s.spent.lost += 1;
                if let Some((job, token)) = m.body.lease() {
                    let j = Self::job_index(&s, job);
                    s.ghost.lost(j, token);
                }
                if let Body::ClaimAns(ClaimAns::Granted(g)) = &m.body {
                    for &(job, token, _) in g {
                        let j = Self::job_index(&s, job);
                        s.ghost.lost(j, token);
                    }
                }
                s.net.push(Msg {
                    body: Self::refused(&m.body, RenewAns::Unavailable),
                    not_before: m.timeout_at.max(s.now),
                    deadline: m.timeout_at.max(s.now),
                    timeout_at: m.timeout_at.max(s.now),
                    ..m
                });
            }
            Action::Conflict(m) => {
                take(&mut s, &m);
                s.spent.conflicts += 1;
                let body = Self::refused(&m.body, RenewAns::Conflict);
                self.answer(&mut s, &m, body);
            }
            Action::Unavailable(m) => {
                take(&mut s, &m);
                s.spent.unavailable += 1;
                let body = Self::refused(&m.body, RenewAns::Unavailable);
                self.answer(&mut s, &m, body);
            }
            Action::HandlerDone(h, job, token) => {
                let h = h as usize;
                if let Some(t) = Self::task_mut(&mut s, h, job, token) {
                    let out = t.m.on_handler_done(Ok(b"ok".to_vec()));
                    self.start_release(&mut s, h, job, token, out);
                }
            }
            Action::Crash(h) => {
                let h = h as usize;
                s.spent.crashes += 1;
                let who = s.hosts[h].ident(h as u8);
                s.ghost.crashed.push(who);
                let next = Ident {
                    host: who.host,
                    inc: who.inc + 1,
                };
                let local = local_at(s.hosts[h].drift_ppm, s.now);
                let host = &mut s.hosts[h];
                host.inc = next.inc;
                host.slots = Slots::new(self.cfg(next));
                host.tasks.clear();
                host.claim_out = None;
                host.claim_due = local;
            }
            Action::Sweep(j) => self.store_sweep(&mut s, j as usize),
            Action::Cancel(j) => {
                s.spent.cancels += 1;
                self.store_cancel(&mut s, j as usize);
            }
            Action::Tick(to) => s.now = to,
        }
        settle(&mut s);
        Some(s)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("I1", i1),
            Property::always("I2", i2),
            Property::always("I3", i3),
            Property::always("I4", i4),
            Property::always("I5", i5),
            Property::always("I6", i6),
            Property::always("I7", i7),
            Property::always("I8", i8),
            Property::always("I9", i9),
        ]
    }
}
