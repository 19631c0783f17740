//! Comparing the store's answers and row images with the model, and the
//! short texts the messages use (blobs by their Display, never bytes).

use super::model::{ErrText, Row, RunAt, Want};
use leasehold_core::{CancelOutcome, CrashReport, JobId, Outcome};
use leasehold_model::history::{LeaseRef, Op, ReadRow, Reply};

/// Longest quoted text (error messages, rejection texts) in a message.
const MAX_QUOTE: usize = 60;
/// Most list items shown in a message.
const MAX_ITEMS: usize = 4;

/// One field where the store's row and the model's differ.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Diff {
    /// Field name.
    pub field: &'static str,
    /// The store's value.
    pub store: String,
    /// The model's value.
    pub model: String,
}

impl Diff {
    fn new(field: &'static str, store: impl ToString, model: impl ToString) -> Diff {
        Diff {
            field,
            store: store.to_string(),
            model: model.to_string(),
        }
    }
}

/// The differing fields, as `field=store (model: value)`.
pub(crate) fn diffs_text(d: &[Diff]) -> String {
    d.iter()
        .map(|d| format!("{}={} (model: {})", d.field, d.store, d.model))
        .collect::<Vec<_>>()
        .join(", ")
}

fn opt<T: ToString>(v: &Option<T>) -> String {
    v.as_ref().map_or("none".into(), |x| x.to_string())
}

fn quote(s: &str) -> String {
    if s.chars().count() <= MAX_QUOTE {
        format!("{s:?}")
    } else {
        let head: String = s.chars().take(MAX_QUOTE).collect();
        format!("{head:?}… ({} bytes)", s.len())
    }
}

/// Compares the model's row with an image of the store's row. The free
/// choices of the model (a backoff window, a store-worded error) accept
/// any value inside them. Every field of [`ReadRow`] is compared; the
/// version must be exactly the model's (one bump per accepted transition).
pub(crate) fn row_diffs(m: &Row, img: &ReadRow) -> Vec<Diff> {
    let mut d = Vec::new();
    if img.job != m.job {
        d.push(Diff::new("job", img.job, m.job));
    }
    if img.queue != m.queue {
        d.push(Diff::new("queue", &img.queue, &m.queue));
    }
    if img.payload != m.payload {
        d.push(Diff::new("payload", img.payload, m.payload));
    }
    if img.priority != m.priority {
        d.push(Diff::new("priority", img.priority, m.priority));
    }
    match m.run_at {
        RunAt::At(t) if t != img.run_at => d.push(Diff::new("run_at", img.run_at, t)),
        RunAt::Between { lo, hi, attempt } if img.run_at < lo || img.run_at > hi => {
            d.push(Diff::new(
                "run_at",
                img.run_at,
                format!("within [{lo}, {hi}], the backoff window after attempt {attempt}"),
            ))
        }
        _ => {}
    }
    if img.state != m.state {
        d.push(Diff::new("state", img.state, m.state));
    }
    if img.attempt != m.attempt {
        d.push(Diff::new("attempt", img.attempt, m.attempt));
    }
    if img.max_attempts != m.max_attempts {
        d.push(Diff::new("max_attempts", img.max_attempts, m.max_attempts));
    }
    if img.token != m.token {
        d.push(Diff::new("token", img.token, m.token));
    }
    if img.holder != m.holder {
        d.push(Diff::new("holder", opt(&img.holder), opt(&m.holder)));
    }
    if img.expires_at != m.expires_at {
        d.push(Diff::new(
            "expires_at",
            opt(&img.expires_at),
            opt(&m.expires_at),
        ));
    }
    if img.cancel_requested != m.cancel_requested {
        d.push(Diff::new(
            "cancel_requested",
            img.cancel_requested,
            m.cancel_requested,
        ));
    }
    let mark = m.released.as_ref().map(|x| x.token);
    if img.released_token != mark {
        d.push(Diff::new(
            "released_token",
            opt(&img.released_token),
            opt(&mark),
        ));
    }
    if img.result != m.result {
        d.push(Diff::new("result", opt(&img.result), opt(&m.result)));
    }
    let err = |e: &Option<String>| e.as_deref().map_or("none".into(), quote);
    match &m.error {
        ErrText::Is(e) if *e != img.error => d.push(Diff::new("error", err(&img.error), err(e))),
        ErrText::AnyText if img.error.as_deref().is_none_or(str::is_empty) => d.push(Diff::new(
            "error",
            err(&img.error),
            "a message of the store's wording",
        )),
        _ => {}
    }
    if img.key != m.key {
        d.push(Diff::new("key", opt(&img.key), opt(&m.key)));
    }
    if img.version != m.version {
        d.push(Diff::new("version", img.version, m.version));
    }
    d
}

/// The name of a rejection: the `WireError` variant, the text before the
/// first `(`.
pub(crate) fn variant_of(rejection: &str) -> &str {
    rejection.split('(').next().unwrap_or(rejection).trim()
}

/// The request, short: `claim(queue=default, max=2, lease=10000ms)`.
pub(crate) fn op_text(op: &Op, host: &str) -> String {
    match op {
        Op::Now => "now()".into(),
        Op::Enqueue {
            key,
            queue,
            payload,
            priority,
            delay,
            max_attempts,
        } => format!(
            "enqueue(key={}, queue={queue}, priority={priority}, delay={delay}, max_attempts={max_attempts}, payload={payload})",
            key.as_deref().map_or("none".into(), quote)
        ),
        Op::Claim {
            worker,
            queue,
            lease,
            max,
        } => {
            let who = if worker.as_str() == host {
                String::new()
            } else {
                format!("worker={worker}, ")
            };
            format!("claim({who}queue={queue}, max={max}, lease={lease})")
        }
        Op::Renew { job, token, lease } => format!("renew({job}, {token}, lease={lease})"),
        Op::Release {
            job,
            token,
            outcome,
        } => format!("release({job}, {token}, {})", outcome_text(outcome)),
        Op::Sweep { limit, wall: None } => format!("sweep(limit={limit})"),
        Op::Sweep {
            limit,
            wall: Some(w),
        } => format!("sweep(limit={limit}, wall={w})"),
        Op::Cancel { job } => format!("cancel({job})"),
        Op::RetryDead { job } => format!("retry_dead({job})"),
        Op::Get { job } => format!("get({job})"),
        Op::List { after, limit } => format!("list(after={}, limit={limit})", opt(after)),
        Op::PutSchedule {
            name,
            queue,
            rule,
            catch_up,
            jitter,
            ..
        } => format!(
            "put_schedule({}, queue={queue}, rule={rule:?}, catch_up={catch_up}, jitter={jitter})",
            quote(name)
        ),
        Op::RemoveSchedule { name } => format!("remove_schedule({})", quote(name)),
        Op::Fire { name, plan_time } => format!("fire({}, {plan_time})", quote(name)),
        Op::ListSchedules { after, limit } => format!(
            "list_schedules(after={}, limit={limit})",
            after.as_deref().map_or("none".into(), quote)
        ),
        Op::Prune {
            retention,
            limit,
            audit_retention,
        } => format!("prune(retention={retention}, limit={limit}, audit={audit_retention})"),
    }
}

/// An outcome, short.
pub(crate) fn outcome_text(o: &Outcome) -> String {
    match o {
        Outcome::Succeeded(r) => format!("succeeded({})", leasehold_model::history::Blob::of(r)),
        Outcome::Failed { error, retryable } => format!(
            "failed({}, {})",
            if *retryable { "retryable" } else { "permanent" },
            quote(error)
        ),
        Outcome::Returned => "returned".into(),
        Outcome::Cancelled => "cancelled".into(),
    }
}

fn list<T>(items: &[T], one: impl Fn(&T) -> String) -> String {
    let mut parts: Vec<String> = items.iter().take(MAX_ITEMS).map(one).collect();
    if items.len() > MAX_ITEMS {
        parts.push(format!("… {} in all", items.len()));
    }
    format!("[{}]", parts.join(", "))
}

fn lease_text(l: &LeaseRef) -> String {
    format!(
        "lease {} {} attempt {} until {}",
        l.job, l.token, l.attempt, l.expires_at
    )
}

fn report_text(r: &CrashReport) -> String {
    format!(
        "{} {} of {} expired {} → {}",
        r.job, r.token, r.holder, r.expired_at, r.to
    )
}

fn row_text(r: &ReadRow) -> String {
    format!("{} {} {} v{}", r.job, r.state, r.token, r.version)
}

/// A store answer, short.
pub(crate) fn reply_text(r: &Reply) -> String {
    match r {
        Reply::Time(t) => format!("time {t}"),
        Reply::Pruned(ids) => format!("pruned {ids:?}"),
        Reply::Job(j) => j.to_string(),
        Reply::Leases(ls) => list(ls, lease_text),
        Reply::Renewed {
            expires_at,
            cancel_requested,
        } => format!(
            "renewed until {expires_at}{}",
            if *cancel_requested {
                " (cancel requested)"
            } else {
                ""
            }
        ),
        Reply::RenewLost | Reply::ReleaseLost => "lost".into(),
        Reply::Committed => "committed".into(),
        Reply::Swept(rs) => format!("swept {}", list(rs, report_text)),
        Reply::Cancel(CancelOutcome::Cancelled) => "cancelled".into(),
        Reply::Cancel(CancelOutcome::Requested) => "cancel requested".into(),
        Reply::Cancel(CancelOutcome::AlreadyTerminal(s)) => format!("already {s}"),
        Reply::Row(None) => "no row".into(),
        Reply::Row(Some(r)) => format!("row {}", row_text(r)),
        Reply::Rows(rs) => format!("rows {}", list(rs, |r| r.job.to_string())),
        Reply::Done => "done".into(),
        Reply::Removed(true) => "removed".into(),
        Reply::Removed(false) => "no such schedule".into(),
        Reply::Schedules(ss) => format!(
            "schedules {}",
            list(ss, |s| format!("{} v{}", quote(&s.name), s.version))
        ),
        Reply::Rejected(s) => format!("rejected {}", quote(s)),
        Reply::Unavailable(s) => format!("unavailable {}", quote(s)),
        Reply::Retry(leasehold_core::RetryOutcome::Retried) => "retried".into(),
        Reply::Retry(leasehold_core::RetryOutcome::NotDead(s)) => format!("not dead: {s}"),
    }
}

/// What the model expects, short.
pub(crate) fn want_text(w: &Want) -> String {
    match w {
        Want::Exact(r) => reply_text(r),
        Want::NewJob => "a new job id".into(),
        Want::Rejected(v) => format!("a rejection {v}"),
        Want::CommittedOrLost => "committed or lost".into(),
        Want::Read(None) => "no row".into(),
        Want::Read(Some(j)) => format!("row {j}"),
        Want::List(ids) => format!("rows {}", list(ids, JobId::to_string)),
        Want::Prunable { cutoff, limit } => {
            format!("at most {limit} jobs that finished at or before {cutoff}")
        }
        Want::Unjudged => "anything".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasehold_core::{JobState, StoreTime, Token};
    use leasehold_model::history::Blob;

    #[test]
    fn variant_is_the_text_before_the_parenthesis() {
        assert_eq!(variant_of("UnknownJob(JobId(3))"), "UnknownJob");
        assert_eq!(variant_of("Input(\"bad (really)\")"), "Input");
        assert_eq!(variant_of("Conflict"), "Conflict");
    }

    #[test]
    fn long_texts_are_cut_and_blobs_shown_by_display() {
        let o = Outcome::Failed {
            error: "x".repeat(500),
            retryable: true,
        };
        let t = outcome_text(&o);
        assert!(t.len() < 120, "{t}");
        assert!(t.contains("500 bytes"), "{t}");
        let s = outcome_text(&Outcome::Succeeded(vec![1, 2, 3]));
        assert_eq!(s, format!("succeeded({})", Blob::of(&[1, 2, 3])));
        let ls: Vec<LeaseRef> = (1..=6)
            .map(|i| LeaseRef {
                job: JobId(i),
                token: Token(1),
                attempt: 1,
                expires_at: StoreTime(5),
                queue: "q".into(),
                payload: Blob::of(b""),
            })
            .collect();
        let t = reply_text(&Reply::Leases(ls));
        assert!(t.contains("… 6 in all"), "{t}");
        assert_eq!(
            reply_text(&Reply::Cancel(CancelOutcome::AlreadyTerminal(
                JobState::Succeeded
            ))),
            "already succeeded"
        );
    }
}
