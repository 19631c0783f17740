//! A brute-force mutex linearizability check shared by the tests: every
//! order of the calls is enumerated outright (depth first, a prefix
//! dropped as soon as the lock refuses it), with no memo and no symmetry
//! rule, so it shares nothing with `jepsen::linearize` but the question.

/// One call: an acquire or release, its invocation, and its return
/// (`None`: it may take effect any time after invoking, or never).
#[derive(Clone, Debug)]
pub struct BruteCall {
    /// `:acquire` (else `:release`).
    pub acquire: bool,
    /// Position of the invocation.
    pub invoked: usize,
    /// Position of the `:ok` return.
    pub returned: Option<usize>,
}

/// Whether some order of all returned calls and any of the others,
/// respecting real time, is legal for a mutex starting `held`. Gives up
/// (answers `None`) after `budget` orders tried.
pub fn brute(calls: &[BruteCall], held: bool, budget: u64) -> Option<bool> {
    fn go(calls: &[BruteCall], used: &mut [bool], held: bool, budget: &mut u64) -> Option<bool> {
        if *budget == 0 {
            return None;
        }
        *budget -= 1;
        if calls
            .iter()
            .zip(used.iter())
            .all(|(c, &u)| u || c.returned.is_none())
        {
            return Some(true);
        }
        for i in 0..calls.len() {
            if used[i] {
                continue;
            }
            // Real time: no unplaced returned call returned before i began.
            let blocked = calls
                .iter()
                .zip(used.iter())
                .any(|(c, &u)| !u && c.returned.is_some_and(|r| r < calls[i].invoked));
            if blocked || calls[i].acquire == held {
                continue;
            }
            used[i] = true;
            let ok = go(calls, used, !held, budget);
            used[i] = false;
            if ok != Some(false) {
                return ok;
            }
        }
        Some(false)
    }
    let mut budget = budget;
    go(calls, &mut vec![false; calls.len()], held, &mut budget)
}
