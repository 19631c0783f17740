//! Which shard of a fanned-out run this machine is: `--shard I/N`, or the
//! environment a CI matrix or a Kubernetes Indexed Job sets.
//!
//! Resolution, first match wins:
//! 1. `--shard I/N` (1-based);
//! 2. `LEASEHOLD_SHARD=I/N` (1-based; a CI matrix sets it);
//! 3. `JOB_COMPLETION_INDEX=K` (0-based, as Kubernetes sets it in an
//!    Indexed Job's pods) with `LEASEHOLD_SHARDS=N`: shard K+1 of N.
//!
//! Invariant: a shard that is named is always in range. An index out of
//! range, a count of zero, `JOB_COMPLETION_INDEX` without
//! `LEASEHOLD_SHARDS` or the reverse is an error, never a silent run of
//! everything or of nothing.

use std::fmt;
use std::str::FromStr;

/// `--shard I/N`: this machine is shard I (1-based) of N.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// This shard, from 1.
    pub index: u64,
    /// How many shards.
    pub count: u64,
}

impl Shard {
    /// The whole run on one machine.
    pub const ALL: Shard = Shard { index: 1, count: 1 };
}

/// `text` (spaces around it allowed) as a whole number, or the error
/// `bad` writes.
fn whole(text: &str, bad: impl FnOnce() -> String) -> Result<u64, String> {
    text.trim().parse().map_err(|_| bad())
}

impl FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Shard, String> {
        let (i, n) = s
            .split_once('/')
            .ok_or_else(|| format!("shard {s:?} must look like I/N, for example 2/4"))?;
        let index = whole(i, || format!("shard index {i:?} is not a number"))?;
        let count = whole(n, || format!("shard count {n:?} is not a number"))?;
        if count == 0 || index == 0 || index > count {
            return Err(format!("shard {s:?}: need 1 <= I <= N"));
        }
        Ok(Shard { index, count })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// The 1-based shard variable a CI matrix sets.
pub const ENV_SHARD: &str = "LEASEHOLD_SHARD";
/// The shard count that goes with [`ENV_K8S_INDEX`].
pub const ENV_SHARDS: &str = "LEASEHOLD_SHARDS";
/// The 0-based index Kubernetes sets in every pod of an Indexed Job.
pub const ENV_K8S_INDEX: &str = "JOB_COMPLETION_INDEX";

/// A resolved shard and where it came from (for the run's first line).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// The shard.
    pub shard: Shard,
    /// `--shard`, or the variables that named it.
    pub source: String,
}

/// This machine's shard: the flag, else the environment read through
/// `env` (unset and empty variables are `None`); `None` when nothing names
/// one (the whole run).
pub fn resolve(
    flag: Option<Shard>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Option<Resolved>, String> {
    if let Some(shard) = flag {
        return Ok(Some(Resolved {
            shard,
            source: "--shard".into(),
        }));
    }
    let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    if let Some(v) = var(ENV_SHARD) {
        let shard = v
            .trim()
            .parse::<Shard>()
            .map_err(|e| format!("{ENV_SHARD}={v:?}: {e}"))?;
        return Ok(Some(Resolved {
            shard,
            source: format!("{ENV_SHARD}={}", v.trim()),
        }));
    }
    match (var(ENV_K8S_INDEX), var(ENV_SHARDS)) {
        (None, None) => Ok(None),
        (Some(k), None) => Err(format!(
            "{ENV_K8S_INDEX}={k} is set (a Kubernetes Indexed Job) but {ENV_SHARDS} is not: \
             set {ENV_SHARDS} to the Job's completions, or set {ENV_SHARD}=I/N"
        )),
        (None, Some(n)) => Err(format!(
            "{ENV_SHARDS}={n} is set but {ENV_K8S_INDEX} is not: a shard count needs an index \
             (use {ENV_SHARD}=I/N outside Kubernetes)"
        )),
        (Some(k), Some(n)) => {
            let index = whole(&k, || {
                format!("{ENV_K8S_INDEX}={k:?} is not a whole number")
            })?;
            let count = whole(&n, || format!("{ENV_SHARDS}={n:?} is not a whole number"))?;
            if count == 0 {
                return Err(format!("{ENV_SHARDS}=0: need at least one shard"));
            }
            if index >= count {
                return Err(format!(
                    "{ENV_K8S_INDEX}={index} is out of range for {ENV_SHARDS}={count} \
                     (Kubernetes counts from 0: 0..={})",
                    count - 1
                ));
            }
            Ok(Some(Resolved {
                shard: Shard {
                    index: index + 1,
                    count,
                },
                source: format!("{ENV_K8S_INDEX}={index}, {ENV_SHARDS}={count}"),
            }))
        }
    }
}

/// [`resolve`] over the process environment.
pub fn from_process(flag: Option<Shard>) -> Result<Option<Resolved>, String> {
    resolve(flag, |name| std::env::var(name).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn parses_and_rejects_shards() {
        assert_eq!("2/4".parse(), Ok(Shard { index: 2, count: 4 }));
        for bad in ["0/4", "5/4", "1/0", "x/2", "3"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
    }

    #[test]
    fn the_flag_wins_over_the_environment() {
        let r = resolve(
            Some(Shard { index: 1, count: 2 }),
            env(&[(ENV_SHARD, "2/2"), (ENV_K8S_INDEX, "9")]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(r.shard, Shard { index: 1, count: 2 });
        assert_eq!(r.source, "--shard");
    }

    #[test]
    fn kubernetes_counts_from_zero() {
        let r = resolve(None, env(&[(ENV_K8S_INDEX, "0"), (ENV_SHARDS, "3")]))
            .unwrap()
            .unwrap();
        assert_eq!(r.shard, Shard { index: 1, count: 3 });
        let r = resolve(None, env(&[(ENV_K8S_INDEX, "2"), (ENV_SHARDS, "3")]))
            .unwrap()
            .unwrap();
        assert_eq!(r.shard, Shard { index: 3, count: 3 });
    }

    #[test]
    fn leasehold_shard_wins_over_kubernetes() {
        let r = resolve(
            None,
            env(&[(ENV_SHARD, "2/5"), (ENV_K8S_INDEX, "0"), (ENV_SHARDS, "3")]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(r.shard, Shard { index: 2, count: 5 });
    }

    #[test]
    fn out_of_range_and_half_settings_are_errors() {
        for pairs in [
            vec![(ENV_K8S_INDEX, "3"), (ENV_SHARDS, "3")],
            vec![(ENV_K8S_INDEX, "0"), (ENV_SHARDS, "0")],
            vec![(ENV_K8S_INDEX, "-1"), (ENV_SHARDS, "3")],
            vec![(ENV_K8S_INDEX, "1")],
            vec![(ENV_SHARDS, "4")],
            vec![(ENV_SHARD, "5/4")],
            vec![(ENV_SHARD, "0/4")],
            vec![(ENV_SHARD, "two")],
        ] {
            let e = resolve(None, env(&pairs)).unwrap_err();
            assert!(
                e.contains("LEASEHOLD_SHARD") || e.contains(ENV_K8S_INDEX),
                "{e}"
            );
        }
    }

    #[test]
    fn nothing_set_is_the_whole_run() {
        assert_eq!(resolve(None, env(&[])).unwrap(), None);
        assert_eq!(resolve(None, env(&[(ENV_SHARD, " ")])).unwrap(), None);
    }
}
