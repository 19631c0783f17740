//! The scripted-fault grammar: one sentence of a scenario's
//! `events = [...]` as a [`ScriptedFault`], parsed and written back in the
//! same words.

use crate::duration::{Dur, SignedDur};
use serde::{de, Deserialize, Deserializer, Serialize};
use std::fmt;

/// A fault at a scripted time, written as a sentence in `events = [...]`.
///
/// Forms (hosts: `store`, `client`, `worker-N`, `sweeper-N`):
/// - `crash HOST at T` and `restart HOST at T`
/// - `shutdown worker-N at T` (graceful: the worker stops claiming, gives its
///   handlers the grace time, returns unfinished leases, and its process
///   ends; a later `restart` starts a new incarnation)
/// - `partition A B FROM..TO` (both directions), `partition A -> B FROM..TO`
///   (only messages from A to B are dropped)
/// - `hold A B FROM..TO` (messages both ways delayed until TO, then
///   delivered), `hold A -> B FROM..TO` (only messages from A to B are
///   held: a late request and its late answer are held on their own
///   directions)
/// - `pause HOST for LEN at T`
/// - `skew HOST +OFFSET at T` (a step of the host's wall clock)
/// - `drift HOST PPM at T` (for example `drift worker-1 20000ppm at 0s`)
/// - `conflict HOST FROM..TO` (the store answers `Conflict`, applying
///   nothing, to every renew, release and cancel of HOST that reaches it in
///   the window: one contention the exhaustive checker's counterexamples
///   place at an exact instant)
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[allow(missing_docs)] // fields are named by the sentence forms above
pub enum ScriptedFault {
    /// The host's process dies, losing its memory.
    Crash { host: String, at: Dur },
    /// A crashed (or shut down) host starts again as a new process identity.
    Restart { host: String, at: Dur },
    /// A worker shuts down gracefully: it stops claiming, returns its
    /// unfinished leases (`Returned`, attempt refunded) and its process ends.
    Shutdown { host: String, at: Dur },
    /// Messages between `a` and `b` are dropped during `[from, to)`.
    Partition {
        a: String,
        b: String,
        from: Dur,
        to: Dur,
        oneway: bool,
    },
    /// Messages between `a` and `b` (only from `a` to `b` if `oneway`) are
    /// held during `[from, to)` and then delivered.
    Hold {
        a: String,
        b: String,
        from: Dur,
        to: Dur,
        /// Written only when set, so the recorded schedule of a two-way
        /// hold (and every history hash) reads as before the one-way form.
        #[serde(skip_serializing_if = "is_false")]
        oneway: bool,
    },
    /// The host stops running for `len`, then resumes with stale beliefs.
    Pause { host: String, at: Dur, len: Dur },
    /// The host's wall clock steps by `by`.
    Skew {
        host: String,
        at: Dur,
        by: SignedDur,
    },
    /// The host's clocks drift by `ppm` from `at` on.
    Drift { host: String, at: Dur, ppm: i64 },
    /// The store answers `Conflict` (nothing applied) to every renew,
    /// release and cancel of `host` that reaches it during `[from, to)`.
    Conflict { host: String, from: Dur, to: Dur },
}

impl ScriptedFault {
    /// When the fault starts.
    pub fn start(&self) -> Dur {
        match self {
            ScriptedFault::Crash { at, .. }
            | ScriptedFault::Restart { at, .. }
            | ScriptedFault::Shutdown { at, .. }
            | ScriptedFault::Pause { at, .. }
            | ScriptedFault::Skew { at, .. }
            | ScriptedFault::Drift { at, .. } => *at,
            ScriptedFault::Partition { from, .. }
            | ScriptedFault::Hold { from, .. }
            | ScriptedFault::Conflict { from, .. } => *from,
        }
    }

    /// The hosts it names.
    pub fn hosts(&self) -> Vec<&str> {
        match self {
            ScriptedFault::Crash { host, .. }
            | ScriptedFault::Restart { host, .. }
            | ScriptedFault::Shutdown { host, .. }
            | ScriptedFault::Pause { host, .. }
            | ScriptedFault::Skew { host, .. }
            | ScriptedFault::Drift { host, .. }
            | ScriptedFault::Conflict { host, .. } => vec![host],
            ScriptedFault::Partition { a, b, .. } | ScriptedFault::Hold { a, b, .. } => vec![a, b],
        }
    }
}

impl fmt::Display for ScriptedFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScriptedFault::Crash { host, at } => write!(f, "crash {host} at {at}"),
            ScriptedFault::Restart { host, at } => write!(f, "restart {host} at {at}"),
            ScriptedFault::Shutdown { host, at } => write!(f, "shutdown {host} at {at}"),
            ScriptedFault::Partition {
                a,
                b,
                from,
                to,
                oneway,
            } => {
                let arrow = if *oneway { " ->" } else { "" };
                write!(f, "partition {a}{arrow} {b} {from}..{to}")
            }
            ScriptedFault::Hold {
                a,
                b,
                from,
                to,
                oneway,
            } => {
                let arrow = if *oneway { " ->" } else { "" };
                write!(f, "hold {a}{arrow} {b} {from}..{to}")
            }
            ScriptedFault::Pause { host, at, len } => write!(f, "pause {host} for {len} at {at}"),
            ScriptedFault::Skew { host, at, by } => write!(f, "skew {host} {by} at {at}"),
            ScriptedFault::Drift { host, at, ppm } => write!(f, "drift {host} {ppm}ppm at {at}"),
            ScriptedFault::Conflict { host, from, to } => {
                write!(f, "conflict {host} {from}..{to}")
            }
        }
    }
}

impl std::str::FromStr for ScriptedFault {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let words: Vec<&str> = s.split_whitespace().collect();
        let dur = |w: &str| w.parse::<Dur>();
        let span = |w: &str| -> Result<(Dur, Dur), String> {
            let (a, b) = w
                .split_once("..")
                .ok_or_else(|| format!("expected FROM..TO, got {w:?}"))?;
            let (from, to) = (dur(a)?, dur(b)?);
            if from >= to {
                return Err(format!("window {w:?} is empty: FROM must be before TO"));
            }
            Ok((from, to))
        };
        let h = |w: &str| w.to_string();
        let partition = |a: &str, b: &str, w: &str, oneway: bool| {
            let (from, to) = span(w)?;
            Ok(ScriptedFault::Partition {
                a: h(a),
                b: h(b),
                from,
                to,
                oneway,
            })
        };
        let hold = |a: &str, b: &str, w: &str, oneway: bool| {
            let (from, to) = span(w)?;
            Ok(ScriptedFault::Hold {
                a: h(a),
                b: h(b),
                from,
                to,
                oneway,
            })
        };
        let usage = || {
            format!(
                "cannot read fault {s:?}; expected one of: `crash HOST at T`, `restart HOST at T`, \
                 `shutdown WORKER at T`, `partition A B FROM..TO`, `partition A -> B FROM..TO`, `hold A B FROM..TO`, `hold A -> B FROM..TO`, \
                 `pause HOST for LEN at T`, `skew HOST +OFFSET at T`, `drift HOST PPMppm at T`, \
                 `conflict HOST FROM..TO`"
            )
        };
        match words.as_slice() {
            ["crash", host, "at", t] => Ok(ScriptedFault::Crash {
                host: h(host),
                at: dur(t)?,
            }),
            ["restart", host, "at", t] => Ok(ScriptedFault::Restart {
                host: h(host),
                at: dur(t)?,
            }),
            ["shutdown", host, "at", t] => Ok(ScriptedFault::Shutdown {
                host: h(host),
                at: dur(t)?,
            }),
            ["shutdown", ..] => Err(format!(
                "cannot read fault {s:?}; a graceful shutdown is written `shutdown worker-N at T`, \
                 for example `shutdown worker-2 at 40s`"
            )),
            ["partition", a, "->", b, w] => partition(a, b, w, true),
            ["partition", a, b, w] => partition(a, b, w, false),
            ["hold", a, "->", b, w] => hold(a, b, w, true),
            ["hold", a, b, _] if *a == "->" || *b == "->" => Err(format!(
                "cannot read fault {s:?}; a one-way hold is written `hold A -> B FROM..TO`, \
                 for example `hold worker-1 -> store 800ms..900ms`"
            )),
            ["hold", a, b, w] => hold(a, b, w, false),
            ["conflict", host, w] => {
                let (from, to) = span(w)?;
                Ok(ScriptedFault::Conflict {
                    host: h(host),
                    from,
                    to,
                })
            }
            ["pause", host, "for", len, "at", t] => Ok(ScriptedFault::Pause {
                host: h(host),
                at: dur(t)?,
                len: dur(len)?,
            }),
            ["skew", host, by, "at", t] => Ok(ScriptedFault::Skew {
                host: h(host),
                at: dur(t)?,
                by: by.parse()?,
            }),
            ["drift", host, ppm, "at", t] => {
                let n = ppm
                    .strip_suffix("ppm")
                    .ok_or_else(|| format!("drift {ppm:?} needs the unit ppm, like 20000ppm"))?;
                let ppm = n
                    .parse::<i64>()
                    .map_err(|_| format!("drift {n:?} is not a whole number of ppm"))?;
                Ok(ScriptedFault::Drift {
                    host: h(host),
                    at: dur(t)?,
                    ppm,
                })
            }
            _ => Err(usage()),
        }
    }
}

/// For `skip_serializing_if`: a one-way flag is written only when set.
fn is_false(b: &bool) -> bool {
    !*b
}

impl<'de> Deserialize<'de> for ScriptedFault {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_conflict_window_reads_and_writes_back_in_the_same_words() {
        let f: ScriptedFault = "conflict worker-2 810ms..813ms".parse().unwrap();
        assert_eq!(
            f,
            ScriptedFault::Conflict {
                host: "worker-2".into(),
                from: Dur::ms(810),
                to: Dur::ms(813),
            }
        );
        assert_eq!(f.to_string().parse::<ScriptedFault>().unwrap(), f);
        assert_eq!(f.start(), Dur::ms(810));
        assert_eq!(f.hosts(), vec!["worker-2"]);
        let empty = "conflict worker-2 813ms..810ms".parse::<ScriptedFault>();
        assert!(empty.unwrap_err().contains("is empty"));
    }

    #[test]
    fn a_one_way_hold_reads_and_writes_back_in_the_same_words() {
        let f: ScriptedFault = "hold worker-1 -> store 800ms..899ms".parse().unwrap();
        assert_eq!(
            f,
            ScriptedFault::Hold {
                a: "worker-1".into(),
                b: "store".into(),
                from: Dur::ms(800),
                to: Dur::ms(899),
                oneway: true,
            }
        );
        assert_eq!(f.to_string(), "hold worker-1 -> store 800ms..899ms");
        assert_eq!(f.to_string().parse::<ScriptedFault>().unwrap(), f);
        assert_eq!(f.hosts(), vec!["worker-1", "store"]);
        // The two-way form is unchanged, and records as it always did.
        let two: ScriptedFault = "hold worker-1 store 1s..2s".parse().unwrap();
        assert!(matches!(two, ScriptedFault::Hold { oneway: false, .. }));
        assert_eq!(two.to_string(), "hold worker-1 store 1s..2s");
        let json = serde_json::to_string(&two).unwrap();
        assert!(!json.contains("oneway"), "{json}");
        assert!(serde_json::to_string(&f)
            .unwrap()
            .contains("\"oneway\":true"));
    }

    #[test]
    fn a_bad_one_way_hold_says_how_to_write_it() {
        let err = "hold worker-1 -> 1s..2s"
            .parse::<ScriptedFault>()
            .unwrap_err();
        assert!(err.contains("hold A -> B FROM..TO"), "{err}");
        let err = "hold worker-1 -> store 2s..1s"
            .parse::<ScriptedFault>()
            .unwrap_err();
        assert!(err.contains("is empty"), "{err}");
        let err = "hold worker-1 -> store"
            .parse::<ScriptedFault>()
            .unwrap_err();
        assert!(err.contains("hold A -> B FROM..TO"), "{err}");
        let err = "hold worker-1 <- store 1s..2s"
            .parse::<ScriptedFault>()
            .unwrap_err();
        assert!(err.contains("`hold A -> B FROM..TO`"), "{err}");
    }
}
