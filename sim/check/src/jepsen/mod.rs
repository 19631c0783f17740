//! Jepsen-format histories: lease histories written from a simulator
//! history (`leasehold export --format jepsen`), and lease and lock
//! histories read and checked (`leasehold check --format jepsen`),
//! whoever wrote them.
//!
//! A Jepsen history is a sequence of operations, each an EDN map with
//! `:type` (`:invoke`, `:ok`, `:fail`, `:info`), `:process`, `:f`,
//! `:value`, `:time` (nanoseconds since the test started) and `:index`
//! (position in the history), the shape Elle and Knossos-based tools
//! read. `docs/JEPSEN.md` gives the mapping of lease operations onto it:
//! `:acquire` (a claim), `:renew`, `:release` and `:sweep`, each with the
//! job and fencing token in its `:value`; `:enqueue` and `:cancel` from the
//! client; faults as `:nemesis` operations.
//!
//! - [`export`] turns a simulator [`leasehold_model::history::History`] into operations;
//! - [`edn`] writes operations as EDN and reads them back, and [`json`]
//!   reads elle-cli's JSON form; every error located at `file:line:col`;
//! - [`calls`] pairs client invocations with their completions;
//! - [`check`] checks what a history of lease calls shows on its own
//!   (I1, I2), from real-time order alone;
//! - [`linearize`] is a bounded linearizability search (Wing–Gong/Lowe),
//!   generic over a [`linearize::Model`]; [`mutex`] checks lock histories
//!   without values against Knossos's mutex, and [`lease`] lease histories
//!   against a lease model with tokens and expiry on the store's clock.
//!
//! None of it shares code with the lease core or the simulator's checker.

pub mod calls;
pub mod check;
pub mod edn;
pub mod export;
pub mod json;
pub mod lease;
pub mod linearize;
pub mod mutex;

use std::path::Path;

/// Reads a history in EDN or in elle-cli's JSON, whichever `text` is (see
/// [`json::looks_like_json`]).
pub fn read_history(text: &str, file: &Path) -> Result<Vec<(Pos, Op)>, edn::ReadError> {
    if json::looks_like_json(text) {
        json::read_history(text, file)
    } else {
        edn::read_history(text, file)
    }
}

/// What an operation record says: a call began, or how it ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpType {
    /// The call began.
    Invoke,
    /// It took effect.
    Ok,
    /// It definitely had no effect.
    Fail,
    /// Unknown: it may or may not have taken effect.
    Info,
}

impl OpType {
    /// The keyword name (without the colon).
    pub fn name(self) -> &'static str {
        match self {
            OpType::Invoke => "invoke",
            OpType::Ok => "ok",
            OpType::Fail => "fail",
            OpType::Info => "info",
        }
    }

    /// The type named `name`, if any.
    pub fn parse(name: &str) -> Option<OpType> {
        Some(match name {
            "invoke" => OpType::Invoke,
            "ok" => OpType::Ok,
            "fail" => OpType::Fail,
            "info" => OpType::Info,
            _ => return None,
        })
    }
}

/// Who performed an operation.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Process {
    /// A client process (one worker, sweeper or client incarnation).
    Client(i64),
    /// A keyword process such as `:nemesis`.
    Named(String),
}

/// An EDN value, as much of EDN as lease histories use.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// `nil`.
    Nil,
    /// `true` or `false`.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A string.
    Str(String),
    /// A keyword, without its colon.
    Key(String),
    /// A vector (or list).
    Vector(Vec<Value>),
    /// A map with keyword keys, in written order.
    Map(Vec<(String, Value)>),
    /// Any other EDN value (floats, sets, symbols, tagged values), as text.
    Other(String),
}

impl Value {
    /// The entry `key` of a map.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Map(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The integer, if this is one.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(n) => Some(*n),
            _ => None,
        }
    }

    /// The keyword or string text, if this is one.
    pub fn as_name(&self) -> Option<&str> {
        match self {
            Value::Key(s) | Value::Str(s) => Some(s),
            _ => None,
        }
    }
}

/// One operation of a history.
#[derive(Clone, Debug, PartialEq)]
pub struct Op {
    /// `:index`.
    pub index: i64,
    /// `:time`, nanoseconds since the test started.
    pub time_ns: Option<i64>,
    /// `:type`.
    pub kind: OpType,
    /// `:process`.
    pub process: Process,
    /// `:f`, without its colon.
    pub f: String,
    /// `:value`.
    pub value: Value,
    /// Any other fields (`:worker`, `:error`, ...), in written order.
    pub extra: Vec<(String, Value)>,
}

/// The keys of an operation's own fields; a reader keeps every other key
/// in [`Op::extra`].
pub const OWN_KEYS: [&str; 6] = ["type", "process", "f", "index", "time", "value"];

impl Op {
    /// An operation as a reader found it, with every field it had (those
    /// not among [`OWN_KEYS`] are kept in [`Op::extra`], in order); without
    /// `:index` it is -1 until the reader fills it in from the position.
    fn found(
        kind: OpType,
        process: Process,
        f: String,
        index: Option<i64>,
        time_ns: Option<i64>,
        value: Value,
        fields: impl IntoIterator<Item = (String, Value)>,
    ) -> Op {
        let extra = fields
            .into_iter()
            .filter(|(k, _)| !OWN_KEYS.contains(&k.as_str()))
            .collect();
        Op {
            index: index.unwrap_or(-1),
            time_ns,
            kind,
            process,
            f,
            value,
            extra,
        }
    }
}

/// Where an operation sits in a file: 1-based line and column.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Pos {
    /// Line, from 1.
    pub line: usize,
    /// Column in characters, from 1.
    pub col: usize,
}

impl std::fmt::Display for Pos {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.line, self.col)
    }
}
