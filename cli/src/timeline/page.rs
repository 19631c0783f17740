//! What the page shows: plain data, built from a history by `build` and
//! drawn by `render` and `draw`.

/// Most lanes drawn per section (the rest are summarised).
pub const MAX_LANES: usize = 400;

/// What the page shows.
#[derive(Clone, Debug, Default)]
pub struct Timeline {
    /// Page title (scenario and seed).
    pub title: String,
    /// Lines of text above the drawing (settings, outcome, replay command).
    pub notes: Vec<String>,
    /// Simulated length of the run, in ms of true time.
    pub end_ms: u64,
    /// One lane per job.
    pub jobs: Vec<JobLane>,
    /// One lane per host, with its clock.
    pub clocks: Vec<ClockLane>,
    /// Fault intervals, each drawn on the lanes of the hosts it concerns.
    pub faults: Vec<FaultSpan>,
    /// Violations, marked on their job's lane.
    pub marks: Vec<Mark>,
    /// Held and late messages.
    pub arrows: Vec<Arrow>,
}

/// A job's lane.
#[derive(Clone, Debug, Default)]
pub struct JobLane {
    /// Label, like `job 7`.
    pub label: String,
    /// Leases in true time.
    pub leases: Vec<LeaseBar>,
    /// Point events (enqueue, cancel, terminal state) at true times.
    pub ticks: Vec<(u64, String)>,
}

/// One lease: `worker` held `token` from `from_ms` to `to_ms` (true time).
#[derive(Clone, Debug)]
pub struct LeaseBar {
    /// Holder.
    pub worker: String,
    /// Fencing token.
    pub token: u64,
    /// Grant, true ms.
    pub from_ms: u64,
    /// End (release, reclaim or end of run), true ms.
    pub to_ms: u64,
    /// How it ended (`succeeded`, `swept`, `lost`, …).
    pub end: String,
    /// Until when the holder believed it held the lease, if known.
    pub believed_until_ms: Option<u64>,
}

/// A host's lane: its clock as samples of (true ms, offset of its wall
/// clock in ms), and the worker identity it runs under, if any.
#[derive(Clone, Debug, Default)]
pub struct ClockLane {
    /// Host name.
    pub host: String,
    /// The worker identity it runs under (its colour), if a worker.
    pub worker: Option<String>,
    /// Samples in true-time order.
    pub offsets: Vec<(u64, i64)>,
}

/// A fault interval.
#[derive(Clone, Debug)]
pub struct FaultSpan {
    /// The fault's sentence.
    pub label: String,
    /// Start, true ms.
    pub from_ms: u64,
    /// End, true ms (equal to `from_ms` for instant faults).
    pub to_ms: u64,
    /// Hosts it concerns.
    pub hosts: Vec<String>,
}

/// A violation mark.
#[derive(Clone, Debug)]
pub struct Mark {
    /// True ms.
    pub at_ms: u64,
    /// Text (invariant and message).
    pub label: String,
    /// The job lane it belongs to (its label, like `job 7`), if any.
    pub job: Option<String>,
}

/// A message that arrived late: sent by `from` at `sent_ms`, delivered to
/// `to` at `delivered_ms`.
#[derive(Clone, Debug)]
pub struct Arrow {
    /// Sender host.
    pub from: String,
    /// Receiver host.
    pub to: String,
    /// Sent, true ms.
    pub sent_ms: u64,
    /// Delivered, true ms.
    pub delivered_ms: u64,
    /// Whether a hold between the two hosts kept it (else: just late).
    pub held: bool,
    /// What it carried, like `renew job 3 t2`.
    pub label: String,
}
