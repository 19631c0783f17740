//! Jepsen operations as JSON, the form elle-cli reads: one array of
//! operation objects (or one object per line), keys without colons:
//! `{"type": "invoke", "f": "acquire", "process": 0, "index": 0, "time": 5}`.
//!
//! Invariants:
//! - the same operations as the EDN reader, field for field: `type` and
//!   `f` are strings (a leading `:` is dropped, so `":acquire"` reads as
//!   `acquire`), `process` an integer or a string (a keyword process such
//!   as `"nemesis"`), `index` and `time` integers or absent;
//! - string values stay strings ([`Value::Str`]); the checks read a
//!   string and a keyword alike where a keyword is meant (`"outcome":
//!   "succeeded"`);
//! - every error names `file:line:col`; nesting deeper than
//!   [`super::edn::MAX_DEPTH`] is refused before parsing, and at most
//!   [`super::edn::MAX_OPS`] operations are read.

use super::edn::{pos_at, Cursor, ReadError, MAX_DEPTH, MAX_OPS};
use super::{Op, OpType, Pos, Process, Value};
use std::path::Path;

/// Whether `text` looks like JSON operations rather than EDN: its first
/// map opens with a `"` key.
pub fn looks_like_json(text: &str) -> bool {
    let Some(brace) = text.find('{') else {
        return false;
    };
    let before = text[..brace].trim_start_matches(|c: char| c.is_whitespace() || c == '[');
    before.is_empty() && text[brace + 1..].trim_start().starts_with('"')
}

/// Reads a JSON history: one array of objects, or objects one after
/// another. Answers each operation with its position.
pub fn read_history(text: &str, file: &Path) -> Result<Vec<(Pos, Op)>, ReadError> {
    let err = |offset: usize, message: String| ReadError {
        file: file.to_path_buf(),
        pos: pos_at(text, offset),
        message,
    };
    check_depth(text).map_err(|(at, m)| err(at, m))?;
    let mut at = skip_blank(text, 0);
    let in_array = text[at..].starts_with('[');
    if in_array {
        at = skip_blank(text, at + 1);
    }
    let mut ops: Vec<(Pos, Op)> = Vec::new();
    let mut cursor = Cursor::default();
    // Each pass reads one value and moves past it; there are finitely many.
    for _ in 0..=text.len() {
        if at >= text.len() {
            if in_array {
                return Err(err(at, "the array of operations is not closed".into()));
            }
            break;
        }
        if in_array && text[at..].starts_with(']') {
            let after = skip_blank(text, at + 1);
            if after < text.len() {
                return Err(err(after, "text after the array of operations".into()));
            }
            break;
        }
        if ops.len() >= MAX_OPS {
            return Err(err(at, format!("more than {MAX_OPS} operations")));
        }
        let mut stream =
            serde_json::Deserializer::from_str(&text[at..]).into_iter::<serde_json::Value>();
        let value = match stream.next() {
            Some(Ok(v)) => v,
            Some(Err(e)) => {
                // serde_json counts lines and columns from `at`.
                let base = pos_at(text, at);
                let pos = Pos {
                    line: base.line + e.line().saturating_sub(1),
                    col: if e.line() <= 1 {
                        base.col + e.column().saturating_sub(1)
                    } else {
                        e.column()
                    },
                };
                return Err(ReadError {
                    file: file.to_path_buf(),
                    pos,
                    message: format!("not JSON: {e}"),
                });
            }
            None => return Err(err(at, "expected an operation object".into())),
        };
        let end = at + stream.byte_offset();
        let mut op = to_op(&value).map_err(|m| err(at, m))?;
        if op.index < 0 {
            op.index = i64::try_from(ops.len()).unwrap_or(i64::MAX);
        }
        ops.push((cursor.pos(text, at), op));
        at = skip_blank(text, end);
        if in_array {
            if text[at..].starts_with(',') {
                at = skip_blank(text, at + 1);
            } else if at < text.len() && !text[at..].starts_with(']') {
                return Err(err(at, "expected `,` or `]` after an operation".into()));
            }
        }
    }
    Ok(ops)
}

/// The first offset at or after `at` that is not whitespace.
fn skip_blank(text: &str, mut at: usize) -> usize {
    let bytes = text.as_bytes();
    while at < bytes.len() && matches!(bytes[at], b' ' | b'\t' | b'\n' | b'\r') {
        at += 1;
    }
    at
}

/// Refuses nesting deeper than [`MAX_DEPTH`] (serde_json's own limit is
/// 128 and its error would not name the operation).
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
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err((i, format!("nested more than {MAX_DEPTH} levels deep")));
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    Ok(())
}

fn name(s: &str) -> String {
    s.strip_prefix(':').unwrap_or(s).to_string()
}

fn to_value(v: &serde_json::Value) -> Value {
    use serde_json::Value as J;
    match v {
        J::Null => Value::Nil,
        J::Bool(b) => Value::Bool(*b),
        J::Number(n) => n
            .as_i64()
            .map_or_else(|| Value::Other(n.to_string()), Value::Int),
        J::String(s) => Value::Str(s.clone()),
        J::Array(items) => Value::Vector(items.iter().map(to_value).collect()),
        J::Object(m) => Value::Map(m.iter().map(|(k, v)| (name(k), to_value(v))).collect()),
    }
}

fn describe(v: &serde_json::Value) -> String {
    let mut s = v.to_string();
    if s.len() > 40 {
        let mut cut = 40;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push('…');
    }
    s
}

/// One operation from a JSON object; the message says which field is
/// wrong.
fn to_op(v: &serde_json::Value) -> Result<Op, String> {
    use serde_json::Value as J;
    let J::Object(m) = v else {
        return Err(format!(
            "an operation must be an object like {{\"type\": \"invoke\", \"f\": \"acquire\", \"process\": 0}}, not {}",
            describe(v)
        ));
    };
    let take = |key: &str| {
        m.get(key)
            .or_else(|| m.get(&format!(":{key}")))
            .filter(|v| !v.is_null())
    };
    // A field missing, or of another kind than `want`.
    let wrong = |key: &str, want: &str, v: Option<&J>| match v {
        Some(other) => format!("\"{key}\" must be {want}, not {}", describe(other)),
        None => format!("the operation has no \"{key}\""),
    };
    let kind = match take("type") {
        Some(J::String(s)) => OpType::parse(&name(s)).ok_or_else(|| {
            format!("\"type\": {s:?} is not \"invoke\", \"ok\", \"fail\" or \"info\"")
        })?,
        other => return Err(wrong("type", "a string", other)),
    };
    let process = match take("process") {
        Some(J::Number(n)) => Process::Client(
            n.as_i64()
                .ok_or_else(|| format!("\"process\" must be a whole number, not {n}"))?,
        ),
        Some(J::String(s)) => Process::Named(name(s)),
        other => return Err(wrong("process", "an integer or a string", other)),
    };
    let f = match take("f") {
        Some(J::String(s)) => name(s),
        other => return Err(wrong("f", "a string", other)),
    };
    let int = |key: &str| match take(key) {
        None => Ok(None),
        Some(J::Number(n)) => n
            .as_i64()
            .map(Some)
            .ok_or_else(|| format!("\"{key}\" must be a whole number, not {n}")),
        other => Err(wrong(key, "an integer", other)),
    };
    let index = int("index")?;
    let time_ns = int("time")?;
    let value = take("value").map_or(Value::Nil, to_value);
    let fields = m.iter().map(|(k, v)| (name(k), to_value(v)));
    Ok(Op::found(kind, process, f, index, time_ns, value, fields))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Vec<(Pos, Op)>, ReadError> {
        read_history(text, Path::new("h.json"))
    }

    #[test]
    fn reads_elle_cli_arrays_and_object_lines_like_the_edn_reader() {
        let text = r#"[
  {"type": "invoke", "f": "acquire", "process": 0, "index": 0, "time": 10},
  {"type": "info", "f": "start", "process": "nemesis", "value": null},
  {"type": "ok", "f": ":acquire", "process": 0, "index": 2, "time": 20,
   "value": {"job": 1, "token": 2, "outcome": "succeeded"}, "error": ["timeout", 1]}
]"#;
        let ops = read(text).unwrap();
        assert_eq!(ops.len(), 3);
        assert_eq!(ops[1].0, Pos { line: 3, col: 3 });
        assert_eq!(ops[1].1.process, Process::Named("nemesis".into()));
        assert_eq!(ops[1].1.index, 1, "a missing index is the position");
        let ok = &ops[2].1;
        assert_eq!(
            (ok.kind, ok.f.as_str(), ok.time_ns),
            (OpType::Ok, "acquire", Some(20))
        );
        assert_eq!(ok.value.get("token"), Some(&Value::Int(2)));
        assert_eq!(
            ok.value.get("outcome").and_then(Value::as_name),
            Some("succeeded")
        );
        assert_eq!(
            ok.extra,
            vec![(
                "error".into(),
                Value::Vector(vec![Value::Str("timeout".into()), Value::Int(1)])
            )]
        );
        let lines = "{\"type\": \"invoke\", \"f\": \"acquire\", \"process\": 0}\n\
                     {\"type\": \"ok\", \"f\": \"acquire\", \"process\": 0}\n";
        assert_eq!(read(lines).unwrap().len(), 2);
        assert!(looks_like_json(text) && looks_like_json(lines));
        assert!(!looks_like_json(
            "[{:type :invoke, :f :acquire, :process 0}]"
        ));
    }

    #[test]
    fn bad_json_is_refused_with_its_line_and_column() {
        for (text, at, needle) in [
            (
                "[{\"type\": \"ok\", \"f\": \"x\", \"process\": 0},\n {\"type\": }]",
                "2:",
                "not JSON",
            ),
            ("[{\"type\": \"ok\", \"process\": 0}]", "1:2", "no \"f\""),
            (
                "[{\"type\": \"done\", \"f\": \"x\", \"process\": 0}]",
                "1:2",
                "\"done\"",
            ),
            ("[\n  5]", "2:3", "must be an object"),
            (
                "[{\"type\": \"ok\", \"f\": \"x\", \"process\": 0}",
                "1:",
                "not closed",
            ),
            ("[] 5", "1:4", "after the array"),
            (
                "[{\"type\": \"ok\", \"f\": \"x\", \"process\": 0} {}]",
                "1:",
                "`,` or `]`",
            ),
            (
                "[{\"type\": \"ok\", \"f\": \"x\", \"process\": 1.5}]",
                "1:2",
                "whole number",
            ),
            (
                "[{\"type\": \"ok\", \"f\": \"x\", \"process\": 0, \"time\": \"5\"}]",
                "1:2",
                "\"time\"",
            ),
        ] {
            let e = read(text).expect_err(text);
            let shown = e.to_string();
            assert!(
                shown.starts_with(&format!("h.json:{at}")),
                "{text:?}: {shown}"
            );
            assert!(shown.contains(needle), "{text:?}: {shown}");
        }
        let deep = "[".repeat(10_000);
        assert!(read(&deep)
            .unwrap_err()
            .message
            .contains("nested more than"));
    }
}
