//! A counterexample as a reader follows it: one line per step, saying
//! which host acted, what happened, and at which true instant and local
//! clock reading. Hosts are named as the simulator names them
//! (`worker-1` is host index 0), so a line can be matched against a
//! `leasehold replay` timeline of the scenario file written from the same
//! path (`counterexample.rs`).

use crate::clock::local_at;
use crate::model::{Action, Timer};
use crate::world::{Body, ClaimAns, Msg, ReleaseAns, RenewAns, State};
use std::fmt::Write;

/// The simulator's name of host index `h`.
pub fn host_name(h: u8) -> String {
    format!("worker-{}", u32::from(h) + 1)
}

/// One line per step of `path` (`states` holds the state before each
/// step and the last one after it, as [`crate::report::Verdict`] carries
/// them).
pub fn render(path: &[Action], states: &[State]) -> String {
    let mut out = String::new();
    if let Some(first) = states.first() {
        let drifts: Vec<String> = first
            .hosts
            .iter()
            .enumerate()
            .map(|(h, host)| format!("{} {:+}ppm", host_name(h as u8), host.drift_ppm))
            .collect();
        let _ = writeln!(out, "clocks: {}", drifts.join(", "));
    }
    for (i, (a, s)) in path.iter().zip(states).enumerate() {
        let _ = writeln!(out, "{:>3}. {}", i + 1, line(a, s));
    }
    out
}

/// The step `a` taken from state `s`, in words.
pub fn line(a: &Action, s: &State) -> String {
    let at = |h: u8| {
        let local = s
            .hosts
            .get(h as usize)
            .map_or(s.now, |x| local_at(x.drift_ppm, s.now));
        format!(
            "t={:>5}ms {:<9} (local {:>5}ms)",
            s.now,
            host_name(h),
            local
        )
    };
    let store = format!("t={:>5}ms {:<9} {:<18}", s.now, "store", "");
    match a {
        Action::Claim(h) => format!("{}: sends a claim", at(*h)),
        Action::Timer(h, j, t, k) => {
            let what = match k {
                Timer::Loop => "the lease loop wakes (renew due or deadline check)",
                Timer::Retry => "retries the release",
                Timer::Heartbeat => "the releasing heartbeat wakes",
            };
            format!("{}: job {} token {}: {what}", at(*h), j.0, t.0)
        }
        Action::Deliver(m) if m.body.to_store() => {
            format!("{store}: receives {} ({})", body(&m.body), when(m, s))
        }
        Action::Deliver(m) => format!(
            "{}: receives {} ({})",
            at(m.who.host),
            body(&m.body),
            when(m, s)
        ),
        Action::Lose(m) => {
            let dir = if m.body.to_store() {
                "request lost on its way to the store"
            } else {
                "answer lost on its way back"
            };
            format!("{}: {} {dir}", at(m.who.host), body(&m.body))
        }
        Action::Conflict(m) => format!(
            "{store}: answers {} from {} `Conflict`, applying nothing",
            body(&m.body),
            host_name(m.who.host)
        ),
        Action::Unavailable(m) => format!(
            "{store}: answers {} from {} `Unavailable` at once",
            body(&m.body),
            host_name(m.who.host)
        ),
        Action::HandlerDone(h, j, t) => {
            format!("{}: job {} token {}: the handler returns", at(*h), j.0, t.0)
        }
        Action::Crash(h) => format!("{}: crashes and restarts as a new identity", at(*h)),
        Action::Sweep(j) => format!("{store}: the sweeper reclaims job {}", u32::from(*j) + 1),
        Action::Cancel(j) => format!("{store}: a client cancels job {}", u32::from(*j) + 1),
        Action::Tick(to) => format!("t={:>5}ms time moves to {to}ms", s.now),
    }
}

fn when(m: &Msg, s: &State) -> String {
    if s.now == m.not_before {
        "at once".into()
    } else {
        format!("{}ms late, at the end of its window", s.now - m.not_before)
    }
}

fn body(b: &Body) -> String {
    match b {
        Body::ClaimReq { max } => format!("a claim for up to {max}"),
        Body::ClaimAns(ClaimAns::Granted(g)) if g.is_empty() => "a claim's answer: nothing".into(),
        Body::ClaimAns(ClaimAns::Granted(g)) => {
            let g: Vec<String> = g
                .iter()
                .map(|(j, t, e)| format!("job {} token {} until {e}ms", j.0, t.0))
                .collect();
            format!("a claim's answer: {}", g.join(", "))
        }
        Body::ClaimAns(a) => format!("a claim's answer: {a:?}"),
        Body::RenewReq(j, t) => format!("a renew of job {} token {}", j.0, t.0),
        Body::RenewAns(j, t, a) => {
            let a = match a {
                RenewAns::Renewed { expires_at, .. } => format!("Renewed until {expires_at}ms"),
                other => format!("{other:?}"),
            };
            format!("a renew's answer for job {} token {}: {a}", j.0, t.0)
        }
        Body::ReleaseReq(j, t) => format!("a release of job {} token {}", j.0, t.0),
        Body::ReleaseAns(j, t, a) => {
            let a: &str = match a {
                ReleaseAns::Committed => "Committed",
                ReleaseAns::Lost => "Lost",
                ReleaseAns::Conflict => "Conflict",
                ReleaseAns::Unavailable => "Unavailable",
                ReleaseAns::Rejected => "Rejected",
            };
            format!("a release's answer for job {} token {}: {a}", j.0, t.0)
        }
    }
}
