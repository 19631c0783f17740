//! Why the model expects an answer, kept as the facts it is made of and
//! written out only when the answer differs from it.
//!
//! Every planned request carried its note as text, written whether or not
//! it was read: a row described for every renew, release and cancel, a
//! count formatted for every claim and sweep. Nearly every answer agrees
//! with the model, so the text is now made only for a message.
//!
//! Invariant: [`Note::text`] writes exactly what the plan would have
//! written when it was made. A row note names the request's own job; the
//! judge describes its row from the `pre` copy it already holds
//! (`Replay::touched_rows`), taken from the model the plan read, before any
//! change, so the description is the same as at plan time. (The row type is
//! the model's; this file takes its description as a function, so that the
//! model, which makes notes, is not also imported here.)

use leasehold_core::{JobId, StoreTime, Token};
use leasehold_model::history::Op;
use std::borrow::Cow;

/// A plan's note (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Note {
    /// Said as it is.
    Text(Cow<'static, str>),
    /// The row of the request's job as it stood before the request (the
    /// model's `Row::describe`), then `then`.
    Row {
        /// The request's job.
        job: JobId,
        /// What follows the description.
        then: Then,
    },
    /// A claim's: how many jobs were due in its queue, and, for a limited
    /// queue, how many ran of how many allowed.
    Due {
        /// Due jobs.
        due: usize,
        /// Running, and the queue's limit.
        running: Option<(u32, u32)>,
    },
    /// A sweep's: how many leases had expired at `now`.
    Expired {
        /// Expired leases.
        expired: usize,
        /// The sweep's store time.
        now: StoreTime,
    },
}

/// What follows a row's description in a [`Note::Row`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Then {
    /// Nothing.
    Nothing,
    /// The request repeats the release the row last committed.
    Repeat,
    /// The token's release with this outcome committed before a later one.
    CommittedBefore(Token),
}

impl Note {
    /// The row of `job`, described (see [`Note::Row`]).
    pub(crate) fn row(job: JobId) -> Note {
        Note::Row {
            job,
            then: Then::Nothing,
        }
    }

    /// The note as text, for the request `op`; `describe` says how a job's
    /// row stood before it (`None`: not known to the model).
    pub(crate) fn text(&self, op: &Op, describe: impl Fn(JobId) -> Option<String>) -> String {
        match self {
            Note::Text(t) => t.to_string(),
            Note::Row { job, then } => {
                let ctx =
                    describe(*job).unwrap_or_else(|| format!("{job} is unknown to the model"));
                match then {
                    Then::Nothing => ctx,
                    Then::Repeat => format!("{ctx}: a repeat of the committed release"),
                    Then::CommittedBefore(token) => {
                        format!("{ctx}; {token}'s release with this outcome committed before")
                    }
                }
            }
            Note::Due { due, running } => {
                let queue = match op {
                    Op::Claim { queue, .. } => queue.as_str(),
                    _ => "?",
                };
                let mut note = format!("{due} due in {queue}");
                if let Some((running, l)) = running {
                    note.push_str(&format!(", {running} of {l} allowed running"));
                }
                note
            }
            Note::Expired { expired, now } => format!("{expired} leases expired at {now}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Note, Then};
    use leasehold_core::{JobId, Millis, StoreTime, Token, WorkerId};
    use leasehold_model::history::Op;

    /// How the judge describes rows here: job 1 is known, no other.
    fn pre(job: JobId) -> Option<String> {
        (job == JobId(1)).then(|| "job-1 is pending (t0, attempt 0/3), due @5ms".to_string())
    }

    /// A row note is the description of the row as it stood before the
    /// request, then its suffix: the text the plan used to write.
    #[test]
    fn a_row_note_describes_the_row_before_the_request() {
        let said = pre(JobId(1)).expect("known");
        let op = Op::Cancel { job: JobId(1) };
        let text = |then| {
            Note::Row {
                job: JobId(1),
                then,
            }
            .text(&op, pre)
        };
        assert_eq!(Note::row(JobId(1)).text(&op, pre), said);
        assert_eq!(
            text(Then::Repeat),
            format!("{said}: a repeat of the committed release")
        );
        assert_eq!(
            text(Then::CommittedBefore(Token(2))),
            format!("{said}; t2's release with this outcome committed before")
        );
        assert_eq!(
            Note::row(JobId(9)).text(&op, pre),
            "job-9 is unknown to the model"
        );
    }

    /// A claim's note names the claim's own queue, and its limit if any.
    #[test]
    fn a_claims_note_names_its_queue_and_limit() {
        let op = Op::Claim {
            worker: WorkerId::new("w"),
            queue: "mail".into(),
            lease: Millis(1_000),
            max: 4,
        };
        let none = |_| None;
        let due = |due, running| Note::Due { due, running }.text(&op, none);
        assert_eq!(due(0, None), "0 due in mail");
        assert_eq!(
            due(2, Some((1, 3))),
            "2 due in mail, 1 of 3 allowed running"
        );
        let swept = Note::Expired {
            expired: 2,
            now: StoreTime(50),
        };
        assert_eq!(swept.text(&op, none), "2 leases expired at @50ms");
        assert_eq!(Note::Text("as said".into()).text(&op, none), "as said");
    }
}
