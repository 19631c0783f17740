//! Finds where a dotted field path (`protocol.renew_interval`, `events[2]`)
//! sits in a scenario file's text, so `validate()` problems get a line and
//! column like parse errors do.
//!
//! The text is read a second time into a tree of [`toml::Spanned`] nodes
//! that keeps only positions, never values.

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use std::fmt;
use toml::Spanned;

/// Most nested tables or arrays the locator descends into.
const MAX_DEPTH: usize = 32;

/// A position-only view of a TOML document.
#[derive(Debug, Default)]
pub struct SpanTree {
    root: Vec<(Spanned<String>, Spanned<Node>)>,
}

#[derive(Debug)]
enum Node {
    Table(Vec<(Spanned<String>, Spanned<Node>)>),
    Array(Vec<Spanned<Node>>),
    Leaf,
}

/// One step of a dotted path.
#[derive(Debug, PartialEq, Eq)]
enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

/// A line and column, both 1-based; columns count characters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineCol {
    /// Line, from 1.
    pub line: usize,
    /// Column, from 1.
    pub col: usize,
}

/// The line and column of byte `offset` in `text`.
pub fn line_col(text: &str, offset: usize) -> LineCol {
    let offset = floor_char_boundary(text, offset.min(text.len()));
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let col = before[line_start..].chars().count() + 1;
    LineCol { line, col }
}

fn floor_char_boundary(text: &str, mut i: usize) -> usize {
    // At most three steps back: a UTF-8 character is at most four bytes.
    for _ in 0..4 {
        if text.is_char_boundary(i) {
            return i;
        }
        i -= 1;
    }
    i
}

impl SpanTree {
    /// Reads the positions of every key and array element; `None` when the
    /// text is not valid TOML (the real parse reports that error).
    pub fn parse(text: &str) -> Option<SpanTree> {
        let node: Node = toml::from_str(text).ok()?;
        match node {
            Node::Table(root) => Some(SpanTree { root }),
            _ => None,
        }
    }

    /// The byte offset of the deepest part of `path` present in the file:
    /// the key itself, or its nearest ancestor when the key was left to its
    /// default. `None` when not even the first key is in the file.
    pub fn locate(&self, path: &str) -> Option<usize> {
        let steps = split_path(path);
        let mut table = &self.root;
        let mut array: Option<&Vec<Spanned<Node>>> = None;
        let mut found = None;
        for step in steps.iter().take(MAX_DEPTH) {
            let node = match (step, array) {
                (Step::Key(k), None) => {
                    let Some((key, value)) = table.iter().find(|(key, _)| key.get_ref() == k)
                    else {
                        break;
                    };
                    found = Some(key.span().start);
                    value
                }
                (Step::Index(i), Some(items)) => {
                    let Some(item) = items.get(*i) else { break };
                    found = Some(item.span().start);
                    item
                }
                _ => break,
            };
            array = None;
            match node.get_ref() {
                Node::Table(t) => table = t,
                Node::Array(items) => array = Some(items),
                Node::Leaf => {}
            }
        }
        found
    }
}

fn split_path(path: &str) -> Vec<Step<'_>> {
    let mut out = Vec::new();
    for part in path.split('.') {
        let (key, mut rest) = part.split_once('[').map_or((part, ""), |(k, r)| (k, r));
        if !key.is_empty() {
            out.push(Step::Key(key));
        }
        // `a[1][2]`: every `]` closes one index.
        for _ in 0..MAX_DEPTH {
            let Some((n, tail)) = rest.split_once(']') else {
                break;
            };
            if let Ok(i) = n.trim_start_matches('[').parse() {
                out.push(Step::Index(i));
            }
            rest = tail;
        }
    }
    out
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

macro_rules! leaf {
    ($($name:ident: $t:ty),*) => {
        $(fn $name<E: de::Error>(self, _: $t) -> Result<Node, E> { Ok(Node::Leaf) })*
    };
}

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any TOML value")
    }
    leaf!(visit_bool: bool, visit_i64: i64, visit_u64: u64, visit_f64: f64, visit_str: &str);
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut out = Vec::new();
        while let Some(key) = map.next_key::<Spanned<String>>()? {
            let value = map.next_value::<Spanned<Node>>()?;
            out.push((key, value));
        }
        Ok(Node::Table(out))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut out = Vec::new();
        while let Some(item) = seq.next_element::<Spanned<Node>>()? {
            out.push(item);
        }
        Ok(Node::Array(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "name = \"x\"\n\n[protocol]\nlease = \"10s\"\n  renew_interval = \"12s\"\n\n[workload]\nrun_time = [\"1s\", \"2s\"]\n\nevents = [\n  \"crash worker-1 at 1s\",\n  \"crash worker-9 at 2s\",\n]\n";

    fn at(path: &str) -> Option<LineCol> {
        let tree = SpanTree::parse(DOC).expect("valid toml");
        tree.locate(path).map(|o| line_col(DOC, o))
    }

    #[test]
    fn finds_keys_in_tables_and_array_elements() {
        assert_eq!(at("name"), Some(LineCol { line: 1, col: 1 }));
        assert_eq!(
            at("protocol.renew_interval"),
            Some(LineCol { line: 5, col: 3 })
        );
        assert_eq!(at("workload.run_time"), Some(LineCol { line: 8, col: 1 }));
    }

    #[test]
    fn falls_back_to_the_nearest_present_ancestor() {
        let lease = at("protocol.lease").unwrap();
        assert_eq!(lease.line, 4);
        assert!(at("protocol.sweep_interval").is_some());
        assert_eq!(at("topology.workers"), None);
    }

    #[test]
    fn splits_indexed_paths() {
        assert_eq!(
            split_path("workload.queues[2]"),
            vec![Step::Key("workload"), Step::Key("queues"), Step::Index(2)]
        );
    }

    #[test]
    fn line_col_counts_characters() {
        assert_eq!(line_col("ab\ncé d", 7), LineCol { line: 2, col: 4 });
    }
}
