//! A bounded linearizability search: Wing & Gong's, with Lowe's
//! just-in-time list and memoisation ("Testing for linearizability",
//! 2017), the algorithm of Knossos's `wgl` and of Porcupine.
//!
//! The history is a list of call and return entries in history order.
//! The search walks it from the front: a call entry is *linearized* (taken
//! out of the list with its return) when the model accepts it from the
//! current state; a return entry whose call is not yet linearized means
//! the current order is a dead end, and the last linearized call is put
//! back and the walk resumes after it. Reaching the end of the list with
//! every return passed is a linearization.
//!
//! Invariants:
//! - a call with a return (`:ok`) must take effect between its invocation
//!   and its return; a call without one (`:info`, or never completed) may
//!   take effect at any point after its invocation, or never. Calls that
//!   failed (`:fail`) are the caller's to leave out: they did not happen;
//! - a configuration (set of linearized calls, model state) is explored
//!   at most once: the set is kept as a 128-bit Zobrist hash (random keys
//!   from a fixed seed), so two different sets compare equal only on a
//!   hash collision, odds about n²/2¹²⁸ for n configurations. A collision
//!   could only prune an order, never invent one: it can never turn a
//!   violation into a pass;
//! - calls without a return that do the same thing (equal ops) are
//!   interchangeable: of those, only the earliest invoked one not yet
//!   linearized may be linearized next. Any linearization using some of
//!   them can use the earliest ones instead (the k-th such point comes
//!   after k of them were invoked), so nothing is lost, and the search
//!   no longer tries every subset of a history's crashed calls;
//! - the search is bounded in configurations stored (memory), in steps
//!   and in wall time; hitting a bound answers [`Verdict::Unknown`],
//!   never a pass;
//! - a violation names the call whose return no order reaches: the
//!   history up to that return is the shortest prefix that cannot be
//!   linearized. [`minimal_window`] then narrows it from the front.

use std::collections::HashSet;
use std::fmt::Debug;
use std::hash::Hash;
use std::time::{Duration, Instant};

/// A sequential specification: the state a call leaves, or why it cannot
/// take effect.
pub trait Model {
    /// The model's state.
    type State: Clone + Eq + Hash + Debug;
    /// What one call does (its function and arguments, and result if known).
    type Op;
    /// The state after `op` from `state`, or why `op` cannot take effect
    /// there.
    fn step(&self, state: &Self::State, op: &Self::Op) -> Result<Self::State, String>;
}

/// One call as the search sees it.
#[derive(Clone, Debug)]
pub struct Call<O> {
    /// What it does.
    pub op: O,
    /// History position of its invocation.
    pub invoked: usize,
    /// History position of its return; `None` when it may never have
    /// taken effect (`:info`, or never completed). Positions are distinct
    /// across all invocations and returns, and a return comes after its
    /// invocation.
    pub returned: Option<usize>,
}

/// Bounds on one search.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Most configurations remembered (about 40-100 bytes each).
    pub max_configs: usize,
    /// Most steps (a call tried, or a dead end undone).
    pub max_steps: u64,
    /// Latest end of the search.
    pub deadline: Option<Instant>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_configs: 2_000_000,
            max_steps: 200_000_000,
            deadline: Some(Instant::now() + Duration::from_secs(60)),
        }
    }
}

/// Work a search did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Effort {
    /// Configurations remembered.
    pub configs: usize,
    /// Steps taken.
    pub steps: u64,
}

/// Where every order got stuck.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stuck<S> {
    /// The call whose return no order reaches (an index into the calls).
    pub call: usize,
    /// A few states the model could be in when the search reached that
    /// return without having linearized the call.
    pub states: Vec<S>,
    /// Why the call cannot take effect from the first of those states,
    /// when the model refuses it outright.
    pub why: Option<String>,
}

/// The answer of a search.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict<S> {
    /// Some order of the calls is legal and respects real time.
    Linearizable(Effort),
    /// No order is.
    Violation(Stuck<S>, Effort),
    /// A bound was hit first: no verdict.
    Unknown(String, Effort),
}

const NIL: usize = usize::MAX;
/// Most states a [`Stuck`] keeps.
const STATES_KEPT: usize = 4;

/// splitmix64: the Zobrist keys, from a fixed seed.
fn zobrist(n: usize) -> Vec<u128> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    (0..n)
        .map(|_| (u128::from(next()) << 64) | u128::from(next()))
        .collect()
}

/// The entry list: node 0 is the head; each other node is a call or a
/// return entry.
struct List {
    next: Vec<usize>,
    prev: Vec<usize>,
    /// Per node: (call, is a return).
    node: Vec<(usize, bool)>,
    /// Per call: its call node and return node.
    call_node: Vec<usize>,
    ret_node: Vec<usize>,
}

impl List {
    fn new<O>(calls: &[Call<O>]) -> List {
        let mut events: Vec<(usize, usize, bool)> = Vec::with_capacity(calls.len() * 2);
        for (id, c) in calls.iter().enumerate() {
            events.push((c.invoked, id, false));
            if let Some(r) = c.returned {
                events.push((r, id, true));
            }
        }
        events.sort_unstable();
        let n = events.len() + 1;
        let mut l = List {
            next: (1..=n).map(|i| if i == n { NIL } else { i }).collect(),
            prev: (0..n).map(|i| if i == 0 { NIL } else { i - 1 }).collect(),
            node: Vec::with_capacity(n),
            call_node: vec![NIL; calls.len()],
            ret_node: vec![NIL; calls.len()],
        };
        l.node.push((NIL, false));
        for (k, &(_, id, ret)) in events.iter().enumerate() {
            l.node.push((id, ret));
            if ret {
                l.ret_node[id] = k + 1;
            } else {
                l.call_node[id] = k + 1;
            }
        }
        l
    }

    fn unlink(&mut self, n: usize) {
        let (p, x) = (self.prev[n], self.next[n]);
        self.next[p] = x;
        if x != NIL {
            self.prev[x] = p;
        }
    }

    fn relink(&mut self, n: usize) {
        let (p, x) = (self.prev[n], self.next[n]);
        self.next[p] = n;
        if x != NIL {
            self.prev[x] = n;
        }
    }

    /// Takes call `id` and its return out (undone by [`List::unlift`] in
    /// stack order).
    fn lift(&mut self, id: usize) {
        self.unlink(self.call_node[id]);
        if self.ret_node[id] != NIL {
            self.unlink(self.ret_node[id]);
        }
    }

    fn unlift(&mut self, id: usize) {
        if self.ret_node[id] != NIL {
            self.relink(self.ret_node[id]);
        }
        self.relink(self.call_node[id]);
    }
}

/// Calls without a return, in classes of equal ops: per call, its class
/// and rank in it (invocation order); `NIL` for calls with a return.
fn unknown_classes<O: PartialEq>(calls: &[Call<O>]) -> (Vec<(usize, usize)>, usize) {
    let mut reps: Vec<(usize, usize)> = Vec::new(); // (representative call, size)
    let mut order: Vec<usize> = (0..calls.len())
        .filter(|&i| calls[i].returned.is_none())
        .collect();
    order.sort_by_key(|&i| calls[i].invoked);
    let mut out = vec![(NIL, NIL); calls.len()];
    for i in order {
        let class = match reps.iter().position(|&(r, _)| calls[r].op == calls[i].op) {
            Some(c) => c,
            None => {
                reps.push((i, 0));
                reps.len() - 1
            }
        };
        out[i] = (class, reps[class].1);
        reps[class].1 += 1;
    }
    (out, reps.len())
}

/// Searches for a linearization of `calls` from any of `inits` (tried in
/// turn, sharing the bounds and the memo).
pub fn search<M: Model>(
    model: &M,
    calls: &[Call<M::Op>],
    inits: &[M::State],
    limits: &Limits,
) -> Verdict<M::State>
where
    M::Op: PartialEq,
{
    let keys = zobrist(calls.len());
    let (class, classes) = unknown_classes(calls);
    // Per class: how many of its calls are linearized (always the
    // earliest invoked ones).
    let mut taken = vec![0usize; classes];
    let mut list = List::new(calls);
    let mut cache: HashSet<(u128, M::State)> = HashSet::new();
    let mut effort = Effort::default();
    // The furthest return reached: (its position, call, states there).
    let mut best: Option<(usize, usize, Vec<M::State>)> = None;
    for init in inits {
        let mut state = init.clone();
        let mut hash: u128 = 0;
        let mut stack: Vec<(usize, M::State)> = Vec::new();
        let mut entry = list.next[0];
        loop {
            effort.steps += 1;
            if effort.steps > limits.max_steps {
                return Verdict::Unknown(
                    format!("the search took more than {} steps", limits.max_steps),
                    effort,
                );
            }
            if effort.steps % 4096 == 0 && limits.deadline.is_some_and(|d| Instant::now() > d) {
                return Verdict::Unknown("the search ran out of time".into(), effort);
            }
            if entry == NIL {
                return Verdict::Linearizable(effort);
            }
            let (id, is_return) = list.node[entry];
            let (c, rank) = class[id];
            if !is_return {
                let eligible = c == NIL || taken[c] == rank;
                if let Some(Ok(next)) = eligible.then(|| model.step(&state, &calls[id].op)) {
                    let h = hash ^ keys[id];
                    if !cache.contains(&(h, next.clone())) {
                        if cache.len() >= limits.max_configs {
                            return Verdict::Unknown(
                                format!(
                                    "the search remembered {} configurations, its bound",
                                    limits.max_configs
                                ),
                                effort,
                            );
                        }
                        cache.insert((h, next.clone()));
                        effort.configs = cache.len();
                        stack.push((id, std::mem::replace(&mut state, next)));
                        hash = h;
                        if c != NIL {
                            taken[c] += 1;
                        }
                        list.lift(id);
                        entry = list.next[0];
                        continue;
                    }
                }
                entry = list.next[entry];
                continue;
            }
            // A return whose call is not linearized: a dead end.
            let at = calls[id].returned.unwrap_or(0);
            match &mut best {
                Some((p, _, states)) if *p == at => {
                    if states.len() < STATES_KEPT && !states.contains(&state) {
                        states.push(state.clone());
                    }
                }
                Some((p, _, _)) if *p > at => {}
                _ => best = Some((at, id, vec![state.clone()])),
            }
            let Some((top, before)) = stack.pop() else {
                break;
            };
            state = before;
            hash ^= keys[top];
            if class[top].0 != NIL {
                taken[class[top].0] -= 1;
            }
            list.unlift(top);
            entry = list.next[list.call_node[top]];
        }
    }
    let Some((_, call, states)) = best else {
        // Unreachable with at least one initial state: every run of the
        // loop above ends at a return or answers.
        return Verdict::Unknown("no initial state to search from".into(), effort);
    };
    let why = states
        .first()
        .and_then(|s| model.step(s, &calls[call].op).err());
    Verdict::Violation(Stuck { call, states, why }, effort)
}

/// A window of a violation: calls that cannot be linearized from any
/// state of the model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window {
    /// The calls in it (indices into the calls searched), in invocation
    /// order.
    pub calls: Vec<usize>,
    /// Whether it holds from any state (`false`: only from the initial
    /// state, the whole prefix).
    pub from_any_state: bool,
    /// History position it starts at: calls returned before it are out;
    /// calls without a return invoked before it are in (they may take
    /// effect inside it).
    pub start: usize,
}

/// Narrows a violation at `stuck` to the shortest window that cannot be
/// linearized from any of `any` (every state the model has): the calls
/// still open or completed after some position `a`, and invoked before
/// the stuck call's return; calls still open at that return count as
/// `:info`. Tries `a` from the stuck call's invocation backwards, at most
/// `max_tries` windows within `limits`; falls back to the whole prefix.
pub fn minimal_window<M: Model>(
    model: &M,
    calls: &[Call<M::Op>],
    stuck: usize,
    any: &[M::State],
    limits: &Limits,
    max_tries: usize,
) -> Window
where
    M::Op: Clone + PartialEq,
{
    let end = calls[stuck].returned.unwrap_or(usize::MAX);
    let in_prefix = |c: &Call<M::Op>| c.invoked < end;
    // Candidate starts: the stuck call's invocation, then each return
    // before it, latest first.
    let mut starts: Vec<usize> = calls
        .iter()
        .filter_map(|c| c.returned)
        .filter(|&r| r < calls[stuck].invoked)
        .collect();
    starts.sort_unstable_by(|a, b| b.cmp(a));
    starts.insert(0, calls[stuck].invoked);
    if !any.is_empty() {
        for &a in starts.iter().take(max_tries) {
            let ids: Vec<usize> = (0..calls.len())
                .filter(|&i| in_prefix(&calls[i]) && calls[i].returned.is_none_or(|r| r >= a))
                .collect();
            let sub: Vec<Call<M::Op>> = ids
                .iter()
                .map(|&i| Call {
                    op: calls[i].op.clone(),
                    invoked: calls[i].invoked,
                    returned: calls[i].returned.filter(|&r| r <= end),
                })
                .collect();
            match search(model, &sub, any, limits) {
                Verdict::Violation(..) => {
                    return Window {
                        calls: ids,
                        from_any_state: true,
                        start: a,
                    }
                }
                Verdict::Linearizable(_) => continue,
                Verdict::Unknown(..) => break,
            }
        }
    }
    Window {
        calls: (0..calls.len()).filter(|&i| in_prefix(&calls[i])).collect(),
        from_any_state: false,
        start: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A register of small integers.
    #[derive(Clone, Debug, PartialEq)]
    enum Reg {
        Write(u8),
        Read(u8),
    }
    struct Register;
    impl Model for Register {
        type State = u8;
        type Op = Reg;
        fn step(&self, s: &u8, op: &Reg) -> Result<u8, String> {
            match op {
                Reg::Write(v) => Ok(*v),
                Reg::Read(v) if v == s => Ok(*s),
                Reg::Read(v) => Err(format!("read {v}, but the register holds {s}")),
            }
        }
    }
    fn call(op: Reg, invoked: usize, returned: Option<usize>) -> Call<Reg> {
        Call {
            op,
            invoked,
            returned,
        }
    }

    #[test]
    fn concurrent_calls_may_take_effect_in_either_order() {
        // write 1 [0,3] overlaps read 1 [1,2]: the write goes first.
        let calls = [
            call(Reg::Write(1), 0, Some(3)),
            call(Reg::Read(1), 1, Some(2)),
        ];
        let v = search(&Register, &calls, &[0], &Limits::default());
        assert!(matches!(v, Verdict::Linearizable(_)), "{v:?}");
    }

    #[test]
    fn real_time_order_is_respected_and_the_stuck_call_named() {
        // write 1 returns before read 0 is invoked: the read is stale.
        let calls = [
            call(Reg::Write(1), 0, Some(1)),
            call(Reg::Read(0), 2, Some(3)),
        ];
        let Verdict::Violation(stuck, _) = search(&Register, &calls, &[0], &Limits::default())
        else {
            panic!("a stale read passed");
        };
        assert_eq!(stuck.call, 1);
        assert_eq!(stuck.states, vec![1]);
        assert_eq!(
            stuck.why.as_deref(),
            Some("read 0, but the register holds 1")
        );
    }

    #[test]
    fn an_unknown_call_may_take_effect_late_or_never() {
        // write 1 crashed (no return): a later read may see 1 or 0.
        for seen in [0, 1] {
            let calls = [
                call(Reg::Write(1), 0, None),
                call(Reg::Read(seen), 1, Some(2)),
                call(Reg::Read(seen), 3, Some(4)),
            ];
            let v = search(&Register, &calls, &[0], &Limits::default());
            assert!(matches!(v, Verdict::Linearizable(_)), "{seen}: {v:?}");
        }
        // But once seen, it cannot be unseen.
        let calls = [
            call(Reg::Write(1), 0, None),
            call(Reg::Read(1), 1, Some(2)),
            call(Reg::Read(0), 3, Some(4)),
        ];
        let v = search(&Register, &calls, &[0], &Limits::default());
        assert!(
            matches!(v, Verdict::Violation(ref s, _) if s.call == 2),
            "{v:?}"
        );
    }

    #[test]
    fn hitting_a_bound_is_unknown_not_a_pass() {
        let calls: Vec<Call<Reg>> = (0..20)
            .map(|i| call(Reg::Write((i % 3) as u8), i, Some(100 + i)))
            .collect();
        for limits in [
            Limits {
                max_configs: 10,
                ..Limits::default()
            },
            Limits {
                max_steps: 5,
                ..Limits::default()
            },
            Limits {
                deadline: Some(Instant::now()),
                max_steps: u64::MAX,
                max_configs: usize::MAX,
            },
        ] {
            // A read nobody wrote forces the whole space to be explored.
            let mut calls = calls.clone();
            calls.push(call(Reg::Read(9), 200, Some(201)));
            let v = search(&Register, &calls, &[0], &limits);
            assert!(matches!(v, Verdict::Unknown(..)), "{limits:?}: {v:?}");
        }
    }

    #[test]
    fn many_equal_crashed_calls_do_not_blow_the_search_up() {
        // 80 crashed writes of two values: 2^80 subsets, but equal ones
        // are interchangeable; the impossible read is refuted quickly.
        let mut calls: Vec<Call<Reg>> = (0..80)
            .map(|i| call(Reg::Write(1 + (i % 2) as u8), i, None))
            .collect();
        calls.push(call(Reg::Read(1), 100, Some(101)));
        calls.push(call(Reg::Read(3), 102, Some(103)));
        let v = search(&Register, &calls, &[0], &Limits::default());
        let Verdict::Violation(stuck, effort) = v else {
            panic!("{v:?}");
        };
        assert_eq!(stuck.call, 81);
        assert!(effort.configs < 20_000, "{effort:?}");
        // And a possible read still passes.
        calls.pop();
        calls.push(call(Reg::Read(2), 102, Some(103)));
        let v = search(&Register, &calls, &[0], &Limits::default());
        assert!(matches!(v, Verdict::Linearizable(_)), "{v:?}");
    }

    #[test]
    fn the_window_drops_calls_before_a_state_the_violation_does_not_need() {
        let calls = [
            call(Reg::Write(5), 0, Some(1)),
            call(Reg::Read(5), 2, Some(3)),
            call(Reg::Write(1), 4, Some(5)),
            call(Reg::Read(0), 6, Some(7)),
        ];
        let Verdict::Violation(stuck, _) = search(&Register, &calls, &[0], &Limits::default())
        else {
            panic!("not caught");
        };
        assert_eq!(stuck.call, 3);
        let w = minimal_window(
            &Register,
            &calls,
            stuck.call,
            &[0, 1, 5],
            &Limits::default(),
            10,
        );
        assert_eq!(
            w,
            Window {
                calls: vec![2, 3],
                from_any_state: true,
                start: 5
            }
        );
    }
}
