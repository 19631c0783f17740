//! Jepsen operations as EDN text: written one map per line (as Jepsen's
//! `history.edn`), read back either that way or as one vector of maps.
//!
//! Reading uses the `clojure-reader` crate for the EDN grammar. Around it:
//! a nesting limit checked before parsing (the crate recurses once per
//! level, so a file of ten thousand `[` would otherwise overflow the
//! stack), and positions: every error names `file:line:col`.

use super::{Op, OpType, Pos, Process, Value};
use clojure_reader::edn::Edn;
use std::fmt::{self, Write};
use std::path::{Path, PathBuf};

/// Deepest nesting of vectors, maps, lists and sets accepted.
pub const MAX_DEPTH: usize = 64;
/// Most operations read from one file.
pub const MAX_OPS: usize = 10_000_000;

/// What is wrong with a Jepsen history file, and where.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct ReadError {
    /// The file.
    pub file: PathBuf,
    /// Where in it.
    pub pos: Pos,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file.display(), self.pos, self.message)
    }
}

// ---------------------------------------------------------------- writing

/// Writes `v` as EDN.
pub fn write_value(out: &mut String, v: &Value) {
    match v {
        Value::Nil => out.push_str("nil"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(n) => {
            let _ = write!(out, "{n}");
        }
        Value::Str(s) => write_str(out, s),
        Value::Key(k) => {
            out.push(':');
            out.push_str(k);
        }
        Value::Vector(items) => {
            out.push('[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                write_value(out, x);
            }
            out.push(']');
        }
        Value::Map(entries) => write_map(out, entries.iter().map(|(k, v)| (k.as_str(), v))),
        Value::Other(text) => write_str(out, text),
    }
}

fn write_map<'a>(out: &mut String, entries: impl Iterator<Item = (&'a str, &'a Value)>) {
    out.push('{');
    for (i, (k, v)) in entries.enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push(':');
        out.push_str(k);
        out.push(' ');
        write_value(out, v);
    }
    out.push('}');
}

/// A string with the escapes every EDN reader knows (`\" \\ \n \r \t`);
/// other control characters, which have no such escape, become U+FFFD.
fn write_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The history as EDN, one operation map per line, fields in Jepsen's
/// usual order: `:type :f :value :time :process :index`, then the rest.
pub fn write_history(ops: &[Op]) -> String {
    let mut out = String::with_capacity(ops.len() * 96);
    for op in ops {
        let kind = Value::Key(op.kind.name().into());
        let f = Value::Key(op.f.clone());
        let time = op.time_ns.map_or(Value::Nil, Value::Int);
        let process = match &op.process {
            Process::Client(n) => Value::Int(*n),
            Process::Named(k) => Value::Key(k.clone()),
        };
        let index = Value::Int(op.index);
        let head = [
            ("type", &kind),
            ("f", &f),
            ("value", &op.value),
            ("time", &time),
            ("process", &process),
            ("index", &index),
        ];
        let rest = op.extra.iter().map(|(k, v)| (k.as_str(), v));
        write_map(&mut out, head.into_iter().chain(rest));
        out.push('\n');
    }
    out
}

// ---------------------------------------------------------------- reading

/// Reads a history: EDN maps one after another, or one vector of maps.
/// Answers each operation with its position.
pub fn read_history(text: &str, file: &Path) -> Result<Vec<(Pos, Op)>, ReadError> {
    let err = |offset: usize, message: String| ReadError {
        file: file.to_path_buf(),
        pos: pos_at(text, offset),
        message,
    };
    check_depth(text).map_err(|(at, m)| err(at, m))?;
    let mut ops = Vec::new();
    let mut cursor = Cursor::default();
    let mut at = skip_blank(text, 0);
    // One vector around the whole history: read its elements one by one,
    // so each operation keeps its own position.
    let closing = if text[at..].starts_with('[') {
        at = skip_blank(text, at + 1);
        Some(']')
    } else {
        None
    };
    // Each pass reads one form and moves past it; there are finitely many.
    for _ in 0..=text.len() {
        if at >= text.len() {
            if closing.is_some() {
                return Err(err(at, "the vector of operations is not closed".into()));
            }
            break;
        }
        if closing.is_some_and(|c| text[at..].starts_with(c)) {
            let after = skip_blank(text, at + 1);
            if after < text.len() {
                return Err(err(after, "text after the vector of operations".into()));
            }
            break;
        }
        if ops.len() >= MAX_OPS {
            return Err(err(at, format!("more than {MAX_OPS} operations")));
        }
        let (edn, rest) = clojure_reader::edn::read(&text[at..]).map_err(|e| {
            let off = at + e.ptr.unwrap_or(text.len() - at);
            err(off, format!("not EDN: {}", describe(&e.code)))
        })?;
        let mut op = to_op(&edn).map_err(|m| err(at, m))?;
        if op.index < 0 {
            // No :index: its position in the history, as Jepsen reindexes.
            op.index = i64::try_from(ops.len()).unwrap_or(i64::MAX);
        }
        ops.push((cursor.pos(text, at), op));
        at = skip_blank(text, text.len() - rest.len());
    }
    Ok(ops)
}

fn describe(code: &clojure_reader::error::Code) -> String {
    use clojure_reader::error::Code;
    match code {
        Code::UnexpectedEOF => "unexpected end of text".into(),
        Code::UnmatchedDelimiter(c) => format!("unmatched {c:?}"),
        Code::HashMapDuplicateKey => "a map names the same key twice".into(),
        Code::NoFloatFeature | Code::InvalidNumber => {
            "not a whole number in range (fractions and floats are not read)".into()
        }
        other => format!("{other:?}"),
    }
}

/// The first offset at or after `at` that is not whitespace, a comma or
/// a `;` comment.
fn skip_blank(text: &str, mut at: usize) -> usize {
    let bytes = text.as_bytes();
    while at < bytes.len() {
        match bytes[at] {
            b' ' | b'\t' | b'\n' | b'\r' | b',' => at += 1,
            b';' => at = text[at..].find('\n').map_or(text.len(), |n| at + n),
            _ => break,
        }
    }
    at
}

/// Refuses nesting deeper than [`MAX_DEPTH`], before the recursive parse
/// sees it. Strings, comments and character literals are skipped, so
/// brackets inside them do not count.
fn check_depth(text: &str) -> Result<(), (usize, String)> {
    let bytes = text.as_bytes();
    let (mut depth, mut i) = (0usize, 0usize);
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
            }
            b';' => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'\\' => i += 1,
            b'[' | b'(' | b'{' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err((i, format!("nested more than {MAX_DEPTH} levels deep")));
                }
            }
            b']' | b')' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    Ok(())
}

/// Positions of increasing offsets in one text, each found from the last
/// (linear in the text overall, where [`pos_at`] for each would be
/// quadratic).
#[derive(Clone, Debug, Default)]
pub struct Cursor {
    /// Offset reached.
    off: usize,
    /// Its 0-based line.
    line: usize,
    /// Its 0-based column, in characters.
    col: usize,
}

impl Cursor {
    /// The position of byte `offset`, at or after the last one asked.
    pub fn pos(&mut self, text: &str, offset: usize) -> Pos {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        if offset < self.off {
            return pos_at(text, offset);
        }
        for c in text[self.off..offset].chars() {
            if c == '\n' {
                self.line += 1;
                self.col = 0;
            } else {
                self.col += 1;
            }
        }
        self.off = offset;
        Pos {
            line: self.line + 1,
            col: self.col + 1,
        }
    }
}

/// The line and column (in characters) of byte `offset`.
pub fn pos_at(text: &str, offset: usize) -> Pos {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    Pos {
        line: before.matches('\n').count() + 1,
        col: before[line_start..].chars().count() + 1,
    }
}

fn to_value(e: &Edn<'_>) -> Value {
    match e {
        Edn::Nil => Value::Nil,
        Edn::Bool(b) => Value::Bool(*b),
        Edn::Int(n) => Value::Int(*n),
        Edn::Str(s) => Value::Str(s.to_string()),
        Edn::Key(k) => Value::Key(k.to_string()),
        Edn::Vector(v) | Edn::List(v) => Value::Vector(v.iter().map(to_value).collect()),
        Edn::Map(m) => {
            let mut entries = Vec::with_capacity(m.len());
            for (k, v) in m {
                match k {
                    Edn::Key(k) => entries.push((k.to_string(), to_value(v))),
                    other => return Value::Other(format!("{other}")),
                }
            }
            Value::Map(entries)
        }
        other => Value::Other(format!("{other}")),
    }
}

/// One operation from an EDN map; the message says which field is wrong.
fn to_op(e: &Edn<'_>) -> Result<Op, String> {
    let Edn::Map(m) = e else {
        return Err("an operation must be a map like {:type :invoke, :f :acquire, ...}".into());
    };
    let mut fields: Vec<(String, Value)> = Vec::with_capacity(m.len());
    for (k, v) in m {
        let Edn::Key(k) = k else {
            return Err(format!("operation keys must be keywords, not {k}"));
        };
        fields.push((k.to_string(), to_value(v)));
    }
    let take = |name: &str| fields.iter().find(|(k, _)| k == name).map(|(_, v)| v);
    let kind = match take("type") {
        Some(Value::Key(k)) => OpType::parse(k)
            .ok_or_else(|| format!(":type :{k} is not :invoke, :ok, :fail or :info"))?,
        Some(other) => return Err(format!(":type must be a keyword, not {other:?}")),
        None => return Err("the operation has no :type".into()),
    };
    let process = match take("process") {
        Some(Value::Int(n)) => Process::Client(*n),
        Some(Value::Key(k)) => Process::Named(k.clone()),
        Some(other) => {
            return Err(format!(
                ":process must be an integer or a keyword, not {other:?}"
            ))
        }
        None => return Err("the operation has no :process".into()),
    };
    let f = match take("f") {
        Some(Value::Key(k)) => k.clone(),
        Some(other) => return Err(format!(":f must be a keyword, not {other:?}")),
        None => return Err("the operation has no :f".into()),
    };
    let index = match take("index") {
        Some(Value::Int(n)) => Some(*n),
        None | Some(Value::Nil) => None,
        Some(other) => return Err(format!(":index must be an integer, not {other:?}")),
    };
    let time_ns = match take("time") {
        Some(Value::Int(n)) => Some(*n),
        None | Some(Value::Nil) => None,
        Some(other) => return Err(format!(":time must be an integer, not {other:?}")),
    };
    let value = take("value").cloned().unwrap_or(Value::Nil);
    Ok(Op::found(kind, process, f, index, time_ns, value, fields))
}

/// What the checks' unit tests read their histories with.
#[cfg(test)]
pub(crate) mod test_history {
    use super::{read_history, Op, Pos};
    use std::path::Path;

    /// The file every test history is said to come from.
    pub(crate) const FILE: &str = "h.edn";

    /// The operations of EDN history `text`, which must read.
    pub(crate) fn ops(text: &str) -> Vec<(Pos, Op)> {
        read_history(text, Path::new(FILE)).expect("EDN")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Vec<(Pos, Op)>, ReadError> {
        read_history(text, Path::new("h.edn"))
    }

    #[test]
    fn reads_maps_one_per_line_or_in_a_vector_with_positions() {
        let lines = "{:type :invoke, :f :acquire, :value nil, :process 0, :index 0}\n\
                     {:type :ok, :f :acquire, :value {:job 1, :token 1}, :process 0, :index 1, :worker \"w\"}\n";
        let ops = read(lines).unwrap();
        assert_eq!(ops.len(), 2);
        assert_eq!(ops[1].0, Pos { line: 2, col: 1 });
        assert_eq!(ops[1].1.kind, OpType::Ok);
        assert_eq!(ops[1].1.value.get("token"), Some(&Value::Int(1)));
        assert_eq!(
            ops[1].1.extra,
            vec![("worker".into(), Value::Str("w".into()))]
        );
        let vector = format!("; a comment\n[{}]\n", lines.replace('\n', "\n "));
        let again = read(&vector).unwrap();
        assert_eq!(again.len(), 2);
        assert_eq!(again[0].0, Pos { line: 2, col: 2 });
        assert_eq!(again[1].1, ops[1].1);
    }

    #[test]
    fn written_histories_read_back() {
        let op = Op {
            index: 3,
            time_ns: Some(5_000_000),
            kind: OpType::Info,
            process: Process::Named("nemesis".into()),
            f: "crash".into(),
            value: Value::Str("crash \"worker-1\"\tat 5s\u{1}".into()),
            extra: vec![(
                "worker".into(),
                Value::Vector(vec![Value::Int(1), Value::Nil]),
            )],
        };
        let text = write_history(&[op.clone(), op.clone()]);
        assert_eq!(text.lines().count(), 2);
        let back = read(&text).unwrap();
        let mut want = op;
        want.value = Value::Str("crash \"worker-1\"\tat 5s\u{FFFD}".into());
        assert_eq!(back[1].1, want);
    }

    #[test]
    fn bad_text_is_refused_with_its_line_and_column() {
        for (text, at, needle) in [
            (
                "{:type :ok, :process 0, :f :x}\n{:type :invoke :f",
                "2:",
                "not EDN",
            ),
            ("{:type :ok, :process 0}", "1:1", "no :f"),
            (
                "{:type :done, :process 0, :f :acquire}",
                "1:1",
                ":type :done",
            ),
            ("\n\n  [1 2]", "3:4", "must be a map"),
            ("[{:type :ok :process 0 :f :x}", "1:", "not closed"),
            ("[] 5", "1:4", "after the vector"),
            (
                "{:type :ok, :process 0, :f :x, :time 1.5}",
                "1:",
                "whole number",
            ),
            ("{:a 1 :a 2}", "1:", "same key twice"),
            ("{:type :ok, :process \"p\", :f :x}", "1:1", ":process"),
        ] {
            let e = read(text).expect_err(text);
            let shown = e.to_string();
            assert!(
                shown.starts_with(&format!("h.edn:{at}")),
                "{text:?}: {shown}"
            );
            assert!(shown.contains(needle), "{text:?}: {shown}");
        }
    }

    #[test]
    fn the_cursor_agrees_with_pos_at() {
        let text = "ab\nçd\n\n  [x]\né";
        let mut c = Cursor::default();
        for off in 0..=text.len() {
            if text.is_char_boundary(off) {
                assert_eq!(c.pos(text, off), pos_at(text, off), "{off}");
            }
        }
        assert_eq!(c.pos(text, 1), pos_at(text, 1), "backwards");
    }

    #[test]
    fn deep_nesting_is_refused_before_parsing() {
        let deep = "[".repeat(100_000);
        let e = read(&deep).unwrap_err();
        assert!(e.message.contains("nested more than"), "{e}");
        assert_eq!(e.pos.col, MAX_DEPTH + 1);
        // Brackets inside strings, comments and characters do not count.
        let fine = format!(
            "{{:type :ok, :process 0, :f :x, :value \"{}\" :c \\[}} ; {}",
            "[".repeat(100),
            "{".repeat(100)
        );
        assert!(read(&fine).is_ok(), "{:?}", read(&fine));
    }
}
