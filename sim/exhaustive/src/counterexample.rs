//! A counterexample as a scenario file the simulator replays: the
//! exhaustive world's timings (its scaled durations, each host's drift at
//! the bound), its faults as scripted fault sentences at the instants the
//! path took them, the catalogue variant it ran, and the invariant it
//! broke as the file's expected violation. The path itself is in the
//! file's opening comment, one line per step ([`crate::trace`]).
//!
//! The simulator's fault language names windows, not single messages, so
//! a fault is written as the narrowest window around the message the path
//! chose: the simulator's latency is fixed at [`LATENCY_MS`], a request
//! sent at `t` reaches the store at `t + 1ms` and its answer is back at
//! `t + 2ms`. A message the path took late is held one way (`hold A -> B`),
//! on its own direction only, until a hop before the world's instant, so
//! the simulator delivers it at that instant; a handler's run is shortened
//! by the hops the simulator's claim took and the world's did not, so it
//! returns at the world's instant too. A step that language cannot express
//! (a prompt `Unavailable`, a client's cancel, a `Conflict` on a claim) is
//! named in the file's comment instead, and [`Scenario::unexpressed`]
//! lists it.
//!
//! Written as text (this crate never depends on the simulator's model);
//! the simulator's own parser and validation judge the file, and its own
//! checker judges the replay (`docs/EXHAUSTIVE.md`, "Counterexamples the
//! simulator replays", says which replays break the same invariant).

use crate::clock::local_at;
use crate::ghost::Inv;
use crate::model::Action;
use crate::scope::Scope;
use crate::trace::{host_name, line};
use crate::world::{Body, ClaimAns, Phase, ReleaseAns, RenewAns, State};
use std::collections::BTreeMap;
use std::fmt::Write;

/// The simulator's one-way latency in the written file: the exhaustive
/// world delivers at once (or at the end of its window, written as a
/// hold), and 1 ms is the simulator's least latency.
pub const LATENCY_MS: u64 = 1;
/// Width of a window around one message's arrival (it arrives at
/// `send + LATENCY_MS`; the window covers a millisecond either side).
const WINDOW_MS: u64 = 3;
/// Seeds the file runs: the simulator's own draws (the sweeper's phase,
/// the store's interleaving) still vary by seed; the variant is caught when
/// any seed shows the expected violation, as for the catalogue's files.
pub const SEEDS: u64 = 20;

/// A written scenario file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scenario {
    /// The TOML text.
    pub toml: String,
    /// Steps of the path the simulator's fault language cannot express.
    pub unexpressed: Vec<String>,
}

/// Writes the counterexample `path` (with `states`, the state before each
/// step and the last one after it) that broke `inv` in the world of
/// `scope`, whose workers ran `variant` (a catalogue name) if any.
pub fn scenario(
    scope: &Scope,
    variant: Option<&str>,
    inv: Inv,
    why: &str,
    path: &[Action],
    states: &[State],
) -> Scenario {
    let mut events = Vec::new();
    let mut unexpressed = Vec::new();
    if let Some(first) = states.first() {
        for (h, host) in first.hosts.iter().enumerate() {
            events.push(format!(
                "drift {} {}ppm at 0s",
                host_name(h as u8),
                host.drift_ppm
            ));
        }
    }
    // The simulator starts every worker with a claim at 0ms, and the
    // client's enqueue reaches the store at 1ms, with them, in an order its
    // seed draws: the seed, not the path, would pick whether a claim finds
    // the job and which worker gets it. The world's job is pending from 0ms
    // and its workers claim in the path's order. So each worker's link to
    // the store is held at the start, one more millisecond for each worker
    // ahead of it in the path's order of first claims reaching the store
    // at 0ms (the enqueue, then those, then workers whose first claim the
    // path did not take there): the claims arrive one a millisecond, in
    // that order, after the enqueue. A hold keeps what arrives while it
    // lasts and sends it again when it ends (a hop later), so a hold
    // `0ms..Kms` delivers a claim sent at 0ms at K+1 ms: K is 2 for the
    // first worker (its claim at 3ms, the enqueue's at 1ms), 3 for the
    // next.
    let start = start_holds(path, states);
    for (h, k) in start.iter().enumerate() {
        events.push(format!("hold {} -> store 0ms..{k}ms", host_name(h as u8)));
    }
    // When each lease was granted to its worker (true time, and how much
    // later the simulator's handler starts: a hop for each of the claim's
    // two the world took at once), for the handlers' run times, which the
    // simulator counts on the host's clock.
    let mut granted: BTreeMap<(u64, u64), (u64, u64)> = BTreeMap::new();
    // Hops taken at once by each worker's claim request in flight.
    let mut claim_prompt: BTreeMap<(u8, u8), u64> = BTreeMap::new();
    // How far behind the world the simulator's store applied the last
    // claim or renew of each job (the hops it took that the world's
    // prompt delivery did not): its expiry there is that much later.
    let mut behind: BTreeMap<u64, u64> = BTreeMap::new();
    // How far behind the world each lease's next renew, and its next
    // release try, leave in the simulator (ms; keyed by job, token and
    // whether it is the release): a failed answer the world took at once
    // comes two hops later there, and the retry is timed from that answer
    // (a timeout is timed from the request's send, and a `Renewed`
    // answer's next renew from its renew's send: neither adds to it).
    let mut retry_lag: BTreeMap<(u64, u64, bool), u64> = BTreeMap::new();
    let mut run_times = Vec::new();
    for (a, s) in path.iter().zip(states) {
        let t = s.now;
        match a {
            Action::Deliver(m) => {
                let prompt = u64::from(t == m.not_before);
                match &m.body {
                    Body::ClaimReq { .. } => {
                        // A first claim held at the start arrives that
                        // much later: at K+1 ms, K ms after the world's
                        // prompt hop.
                        let held = match start.get(m.who.host as usize) {
                            Some(&k) if t == 0 && m.who.inc == 0 && prompt == 1 => k,
                            _ => 0,
                        };
                        claim_prompt.insert((m.who.host, m.who.inc), prompt + held);
                    }
                    Body::RenewReq(job, _) => {
                        behind.insert(job.0, prompt * LATENCY_MS);
                    }
                    Body::RenewAns(job, token, RenewAns::Conflict | RenewAns::Unavailable)
                    | Body::ReleaseAns(
                        job,
                        token,
                        ReleaseAns::Conflict | ReleaseAns::Unavailable,
                    ) => {
                        let timeout = m.not_before == m.timeout_at && m.deadline == m.timeout_at;
                        if prompt == 1 && !timeout {
                            let release = matches!(m.body, Body::ReleaseAns(..));
                            *retry_lag.entry((job.0, token.0, release)).or_default() +=
                                2 * LATENCY_MS;
                        }
                    }
                    Body::ClaimAns(ClaimAns::Granted(g)) => {
                        let before = claim_prompt.remove(&(m.who.host, m.who.inc));
                        // An answer the world took late is held until a
                        // hop before `t` and reaches the worker at `t`
                        // whatever the claim's hops were; one taken at
                        // once comes a hop after the claim reached the
                        // store.
                        let lag = prompt * (before.unwrap_or(0) + 1) * LATENCY_MS;
                        for (job, token, _) in g {
                            granted.insert((job.0, token.0), (t, lag));
                            // The claim reached the simulator's store
                            // its own hops after the world's instant.
                            behind.insert(job.0, before.unwrap_or(0));
                        }
                    }
                    _ => {}
                }
                hold(&mut events, m, t);
            }
            Action::Lose(m) => {
                let (a, b) = ends(m.body.to_store(), m.who.host);
                // A renew or release retried after a failed answer leaves
                // up to that much later in the simulator (a handler
                // returned a millisecond early, below, takes one off): its
                // window stretches by it.
                let lag = match m.body {
                    Body::RenewReq(job, token) => retry_lag.get(&(job.0, token.0, false)),
                    Body::ReleaseReq(job, token) => retry_lag.get(&(job.0, token.0, true)),
                    _ => None,
                };
                let to = t + WINDOW_MS + lag.copied().unwrap_or(0);
                events.push(format!("partition {a} -> {b} {t}ms..{to}ms"));
            }
            Action::Conflict(m) if !matches!(m.body, Body::ClaimReq { .. }) => {
                // A late request is held on its way to the store and
                // refused as it arrives; its answer has its own direction.
                hold(&mut events, m, t);
                // A lease whose handler returned at the instant it was
                // granted: the simulator's release leaves only when its
                // handler started, the claim's prompt hops after the
                // world's instant, so it reaches the store that much
                // later (at 3ms for a claim and release taken at once at
                // 0ms): the window stretches by those hops.
                let late = m
                    .body
                    .lease()
                    .and_then(|(j, k)| granted.get(&(j.0, k.0)))
                    .map_or(0, |&(g, lag)| (g + lag).saturating_sub(t));
                events.push(format!(
                    "conflict {} {t}ms..{}ms",
                    host_name(m.who.host),
                    t + WINDOW_MS + late
                ));
            }
            Action::Sweep(j) => {
                // The simulator's sweeper runs on its own period
                // (`sweep_interval` plus its round trip), so a reclaim the
                // world takes at the expiry instant would come up to a
                // period later there, after the holder's next message.
                // Every sweep arriving in the period before is held and
                // sent again so it reaches the store as far behind `t` as
                // the lease's expiry is there (its claim's or renew's
                // hops), before the holder's next message (a hop after
                // the world's instant). Sweeps before the window reached
                // the store before the expiry (the world reclaims at most
                // `sweep_interval` after it), so none reclaims earlier
                // than the path.
                let job = s.rows.get(*j as usize).map(|r| r.id.0);
                let at = t + job
                    .and_then(|j| behind.get(&j))
                    .copied()
                    .unwrap_or(LATENCY_MS);
                let to = at.saturating_sub(LATENCY_MS);
                let from = to.saturating_sub(scope.sweep_interval.0 + WINDOW_MS);
                events.push(format!("hold sweeper-1 -> store {from}ms..{to}ms"));
            }
            Action::Crash(h) => {
                let w = host_name(*h);
                events.push(format!("crash {w} at {t}ms"));
                events.push(format!("restart {w} at {t}ms"));
            }
            Action::HandlerDone(h, job, token) => {
                if let Some(&(g, lag)) = granted.get(&(job.0, token.0)) {
                    // The simulator's handler starts `lag` after the
                    // world's: it runs that much less, to return at the
                    // world's instant.
                    let d = s.hosts[*h as usize].drift_ppm;
                    let start = (g + lag).min(t);
                    // The path took the handler's return before its lease
                    // loop's timer due at the same instant: the simulator
                    // may fire the timer first (a renew sent as the handler
                    // returns), so the handler returns a millisecond early.
                    let timer_due = s.hosts[*h as usize].tasks.iter().any(|k| {
                        k.job == *job
                            && k.token == *token
                            && matches!(k.phase, Phase::Running { wake, .. } if local_at(d, t) >= wake)
                    });
                    let run = local_at(d, t) - local_at(d, start);
                    run_times.push(if timer_due {
                        run.saturating_sub(1)
                    } else {
                        run
                    });
                }
            }
            Action::Unavailable(m) => {
                hold(&mut events, m, t);
                unexpressed.push(line(a, s));
            }
            Action::Conflict(_) | Action::Cancel(_) => unexpressed.push(line(a, s)),
            Action::Claim(_) | Action::Timer(..) | Action::Tick(_) => {}
        }
    }
    // A message still in flight when the path ends had not arrived at the
    // violation: the world may deliver it as late as its window allows. The
    // simulator would deliver it a hop after it was sent, at the violation's
    // instant or before (a release retried at 1,199ms reaching the store
    // with the sweep at 1,200ms, the seed picking which goes first), so it
    // is held to the end of its window.
    if let Some(last) = states.last() {
        for m in &last.net {
            hold(&mut events, m, m.deadline);
        }
    }
    // A handler still running at the violation ran at least until then:
    // the longest run the world allows stands for it.
    let lo = run_times
        .iter()
        .copied()
        .min()
        .unwrap_or(scope.max_job_time.0);
    let hi = run_times
        .iter()
        .copied()
        .max()
        .unwrap_or(scope.max_job_time.0);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# A counterexample of the exhaustive checker (sim/exhaustive), written\n\
         # as a scenario the simulator replays: `leasehold run FILE` must fail\n\
         # with the same invariant. Its shortest path ({} steps), breadth-first:\n#",
        path.len()
    );
    for l in crate::trace::render(path, states).lines() {
        let _ = writeln!(out, "#   {l}");
    }
    let _ = writeln!(out, "#\n# {inv} broke: {why}");
    let _ = writeln!(
        out,
        "#\n# Each fault is the narrowest window around the message the path chose\n\
         # (latency {LATENCY_MS}ms: a request sent at t reaches the store at t+1ms); a\n\
         # delivery at the end of its window is a one-way hold of its direction\n\
         # until a hop before then."
    );
    if unexpressed.is_empty() {
        let _ = writeln!(out, "# Every step of the path is expressed.");
    } else {
        let _ = writeln!(out, "# Not expressible in the fault language, left out:");
        for u in &unexpressed {
            let _ = writeln!(out, "#   {u}");
        }
    }
    let description = match variant {
        Some(v) => format!("The exhaustive checker's shortest counterexample for `{v}`: {inv}."),
        None => format!("The exhaustive checker's shortest counterexample: {inv}."),
    };
    let _ = writeln!(out, "description = {description:?}");
    if let Some(v) = variant {
        let _ = writeln!(out, "variant = {v:?}");
    }
    let _ = writeln!(out, "seeds = {SEEDS}");
    let _ = writeln!(out, "duration = \"{}ms\"", scope.horizon.0);
    let _ = writeln!(out, "tick = \"1ms\"");
    let _ = writeln!(out, "events = [");
    for e in &events {
        let _ = writeln!(out, "  {e:?},");
    }
    let _ = writeln!(out, "]\n");
    let _ = writeln!(
        out,
        "[topology]\nworkers = {}\nsweepers = 1\n",
        scope.workers
    );
    let _ = writeln!(
        out,
        "[protocol]\nlease = \"{}ms\"\nrenew_interval = \"{}ms\"\nsweep_interval = \"{}ms\"\n\
         max_drift_ppm = {}\nfence_margin = \"0ms\"\nconcurrency = 1\nmax_attempts = {}\n\
         request_timeout = \"{}ms\"\npoll_interval = \"{}ms\"\n",
        scope.lease.0,
        scope.renew_interval.0,
        scope.sweep_interval.0,
        scope.drift_ppm,
        scope.max_attempts,
        scope.request_timeout.0,
        scope.poll_interval.0,
    );
    let _ = writeln!(
        out,
        "[workload]\njobs = {}\nenqueue_over = \"0s\"\nrun_time = [\"{lo}ms\", \"{hi}ms\"]\n",
        scope.jobs
    );
    let _ = writeln!(
        out,
        "[network]\nlatency = [\"{LATENCY_MS}ms\", \"{LATENCY_MS}ms\"]\n"
    );
    let _ = writeln!(out, "[faults]\nwindow = \"{}ms\"\n", scope.faults_until.0);
    let _ = writeln!(out, "[expect]\nviolation = \"{}\"", inv.name());
    Scenario {
        toml: out,
        unexpressed,
    }
}

/// How long each worker's link to the store is held at the start (ms,
/// from 0ms): 2 for the worker whose first claim the path delivers first
/// at 0ms, 3 for the next, and so on; workers whose first claim the path
/// does not deliver at 0ms come last, in host order.
fn start_holds(path: &[Action], states: &[State]) -> Vec<u64> {
    let hosts = states.first().map_or(0, |s| s.hosts.len());
    let mut order: Vec<u8> = Vec::new();
    for (a, s) in path.iter().zip(states) {
        if s.now > 0 {
            break;
        }
        if let Action::Deliver(m) = a {
            if matches!(m.body, Body::ClaimReq { .. }) && !order.contains(&m.who.host) {
                order.push(m.who.host);
            }
        }
    }
    for h in 0..hosts as u8 {
        if !order.contains(&h) {
            order.push(h);
        }
    }
    let mut k = vec![0; hosts];
    for (i, &h) in order.iter().enumerate() {
        k[h as usize] = i as u64 + 2;
    }
    k
}

/// A message the path took at `t`, past the start of its window, was held
/// on its own direction of the link until then: one way, so a late
/// request and its late answer do not hold each other. The hold ends a
/// hop early, so the simulator delivers it at `t`, the world's instant.
fn hold(events: &mut Vec<String>, m: &crate::world::Msg, t: u64) {
    let from = m.not_before;
    let to = t.saturating_sub(LATENCY_MS);
    if t > from && to > from {
        let (a, b) = ends(m.body.to_store(), m.who.host);
        events.push(format!("hold {a} -> {b} {from}ms..{to}ms"));
    }
}

/// The link's two ends, in the message's direction.
fn ends(to_store: bool, host: u8) -> (String, String) {
    if to_store {
        (host_name(host), "store".into())
    } else {
        ("store".into(), host_name(host))
    }
}
