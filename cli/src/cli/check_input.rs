//! Reading a history for `leasehold check`: store events, or a trace.
//!
//! Both formats are one JSON object per line; the first line tells which:
//! - store events ([`leasehold_core::Event`]) in commit order: an adapter's
//!   audit log exported by `leasehold-export`;
//! - a `leasehold replay --trace` history (records tagged by `type`): its
//!   `store_event` records are checked in commit (`seq`) order; every other
//!   record is read too, so a damaged trace is refused, then set aside.
//!
//! A line that is neither, a file that mixes the two, one that is not
//! UTF-8, and a history without a single store event are refused: every
//! error names the file, line and column. An empty history proves nothing,
//! so it must not pass.

use leasehold_core::Event;
use leasehold_model::history::Record;
use std::fmt;
use std::path::{Path, PathBuf};

/// Largest history file read (4 GiB): the file and its events are held in
/// memory.
pub const MAX_HISTORY_BYTES: u64 = 4 << 30;
/// Most bad lines reported before giving up on a file.
pub const MAX_REPORTED: usize = 20;

/// Which format a history file is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputFormat {
    /// Store events, one per line.
    Events,
    /// A `leasehold replay --trace` history.
    Trace,
}

impl fmt::Display for InputFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            InputFormat::Events => "store events",
            InputFormat::Trace => "a replay trace",
        })
    }
}

/// A history read for checking.
#[derive(Clone, Debug, PartialEq)]
pub struct HistoryInput {
    /// The format the file was in.
    pub format: InputFormat,
    /// The store events, in commit order.
    pub events: Vec<Event>,
}

/// One thing wrong with a history file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HistoryError {
    /// The file.
    pub file: PathBuf,
    /// 1-based line (0 when the problem is the whole file).
    pub line: usize,
    /// 1-based column (0 when the problem is the whole file).
    pub col: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for HistoryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if self.line > 0 {
            write!(f, ":{}:{}", self.line, self.col)?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for HistoryError {}

/// Reads and parses the history in `file`.
pub fn read_history(file: &Path) -> Result<HistoryInput, Vec<HistoryError>> {
    let whole = |message: String| {
        vec![HistoryError {
            file: file.to_path_buf(),
            line: 0,
            col: 0,
            message,
        }]
    };
    let size = std::fs::metadata(file)
        .map_err(|e| whole(format!("cannot read: {e}")))?
        .len();
    if size > MAX_HISTORY_BYTES {
        return Err(whole(format!(
            "{size} bytes is above the bound of {MAX_HISTORY_BYTES} bytes a history may have"
        )));
    }
    let bytes = std::fs::read(file).map_err(|e| whole(format!("cannot read: {e}")))?;
    match std::str::from_utf8(&bytes) {
        Ok(text) => parse_history(text, file),
        Err(e) => {
            let good = &bytes[..e.valid_up_to()];
            let line = good.iter().filter(|&&b| b == b'\n').count() + 1;
            let start = good.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            let col = String::from_utf8_lossy(&good[start..]).chars().count() + 1;
            Err(vec![HistoryError {
                file: file.to_path_buf(),
                line,
                col,
                message: "not UTF-8 text".into(),
            }])
        }
    }
}

/// What one line holds.
enum Line {
    Event(Box<Event>),
    Record(Box<Record>),
}

/// Parses one non-blank line: its format by the `type` key every trace
/// record has and no store event has, then its content.
fn parse_line(line: &str) -> Result<Line, serde_json::Error> {
    let value: serde_json::Value = serde_json::from_str(line)?;
    // Parsed again from the text (not the value) so errors keep a column.
    if value.get("type").is_some_and(|t| t.is_string()) {
        serde_json::from_str(line).map(|r| Line::Record(Box::new(r)))
    } else {
        serde_json::from_str(line).map(|e| Line::Event(Box::new(e)))
    }
}

/// The message of a serde_json error without its own "at line 1 column N".
fn what(e: &serde_json::Error) -> String {
    let text = e.to_string();
    text.split(" at line ").next().unwrap_or(&text).to_string()
}

/// Parses a whole history; `file` only labels the errors.
pub fn parse_history(text: &str, file: &Path) -> Result<HistoryInput, Vec<HistoryError>> {
    let mut errors = Vec::new();
    let mut bad = |line: usize, col: usize, message: String| {
        if errors.len() < MAX_REPORTED {
            errors.push(HistoryError {
                file: file.to_path_buf(),
                line,
                col: col.max(1),
                message,
            });
        }
    };
    let mut format: Option<(InputFormat, usize)> = None;
    let mut events = Vec::new();
    let mut traced: Vec<(u64, Event)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let parsed = match parse_line(line) {
            Ok(p) => p,
            Err(e) => {
                bad(n, e.column(), what(&e));
                continue;
            }
        };
        let this = match parsed {
            Line::Event(_) => InputFormat::Events,
            Line::Record(_) => InputFormat::Trace,
        };
        match format {
            None => format = Some((this, n)),
            Some((first, at)) if first != this => {
                bad(
                    n,
                    1,
                    format!("this line is {this}, but line {at} began a history of {first}"),
                );
                continue;
            }
            Some(_) => {}
        }
        match parsed {
            Line::Event(e) => events.push(*e),
            Line::Record(r) => {
                if let Record::StoreEvent { seq, event, .. } = *r {
                    traced.push((seq, event));
                }
            }
        }
    }
    let format = format.map(|f| f.0);
    if errors.is_empty() && events.is_empty() && traced.is_empty() {
        let message = match format {
            None => "no store events: the history is empty, and an empty history proves nothing",
            Some(_) => "no store events: this trace recorded none, so there is nothing to check",
        };
        errors.push(HistoryError {
            file: file.to_path_buf(),
            line: 0,
            col: 0,
            message: message.to_string(),
        });
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    if format == Some(InputFormat::Trace) {
        // Stable: equal sequence numbers keep their file order.
        traced.sort_by_key(|t| t.0);
        events = traced.into_iter().map(|t| t.1).collect();
    }
    Ok(HistoryInput {
        format: format.unwrap_or(InputFormat::Events),
        events,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<HistoryInput, Vec<String>> {
        parse_history(text, Path::new("h.jsonl"))
            .map_err(|e| e.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn an_empty_history_is_refused() {
        for text in ["", "\n  \n"] {
            let e = parse(text).unwrap_err();
            assert_eq!(e.len(), 1);
            assert!(e[0].starts_with("h.jsonl: no store events"), "{e:?}");
        }
    }

    #[test]
    fn bad_lines_are_located_and_mixing_formats_is_refused() {
        let e =
            parse("\n{\"type\": \"client_done\", \"t\": 5}\n{\"job\": 1}\nnot json\n").unwrap_err();
        assert_eq!(e.len(), 2, "{e:?}");
        assert!(e[0].starts_with("h.jsonl:3:"), "{e:?}");
        assert!(e[1].starts_with("h.jsonl:4:"), "{e:?}");
        let e = parse("{\"type\": \"client_done\", \"t\": 5}\n").unwrap_err();
        assert!(e[0].contains("this trace recorded none"), "{e:?}");
        let event = serde_json::to_string(&enqueued(1)).unwrap();
        let e = parse(&format!(
            "{event}\n{{\"type\": \"client_done\", \"t\": 5}}\n"
        ))
        .unwrap_err();
        assert_eq!(
            e,
            vec!["h.jsonl:2:1: this line is a replay trace, but line 1 began a history of store events"]
        );
    }

    fn enqueued(job: u64) -> Event {
        use leasehold_core::{EventKind, JobId, JobState, StoreTime, Token};
        Event {
            job: JobId(job),
            token: Token(0),
            worker: None,
            from: None,
            to: JobState::Pending,
            at: StoreTime(1),
            version: 1,
            kind: EventKind::Enqueued {
                queue: "q".into(),
                max_attempts: 3,
                run_at: StoreTime(1),
            },
        }
    }

    #[test]
    fn a_trace_gives_its_store_events_in_commit_order() {
        let record = |seq: u64, job: u64| {
            serde_json::to_string(&Record::StoreEvent {
                t: 0,
                seq,
                req: None,
                event: enqueued(job),
            })
            .unwrap()
        };
        let text = format!(
            "{{\"type\": \"client_done\", \"t\": 5}}\n{}\n{}\n",
            record(2, 20),
            record(1, 10)
        );
        let h = parse(&text).unwrap();
        assert_eq!(h.format, InputFormat::Trace);
        let jobs: Vec<u64> = h.events.iter().map(|e| e.job.0).collect();
        assert_eq!(jobs, vec![10, 20]);
    }
}
