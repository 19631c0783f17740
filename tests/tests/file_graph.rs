//! No circle of files inside any workspace crate: if file A imports a name
//! that file B defines, and B (through any chain) imports one that A
//! defines, the two are one concept split in two, or two concepts tangled.
//!
//! Each crate's `src/` is read as text: every `use` tree and every inline
//! `crate::`/`super::`/`self::` path is resolved to the file that defines
//! the name, following `pub use` re-exports, and the strongly connected
//! components of the resulting file graph must all be single files.
//! Test modules (`#[cfg(test)]` to the end of a file) are left out: a
//! test may reach anywhere.

mod source_tree;

use source_tree::rust_files;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A token of Rust source with comments, strings and characters removed.
#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    Path, // `::`
    Open,
    Close,
    Comma,
    Semi,
    Star,
    Other(char),
}

fn tokens(src: &str) -> Vec<Tok> {
    let c: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        if ch == '/' && c.get(i + 1) == Some(&'/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && c.get(i + 1) == Some(&'*') {
            i += 2;
            while i + 1 < c.len() && !(c[i] == '*' && c[i + 1] == '/') {
                i += 1;
            }
            i += 2;
        } else if ch == 'r' && matches!(c.get(i + 1), Some('"') | Some('#')) && {
            let mut j = i + 1;
            while c.get(j) == Some(&'#') {
                j += 1;
            }
            c.get(j) == Some(&'"')
        } {
            // A raw string: r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while c[j] == '#' {
                hashes += 1;
                j += 1;
            }
            j += 1;
            loop {
                if j >= c.len() {
                    break;
                }
                if c[j] == '"' && (0..hashes).all(|k| c.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            i = j;
        } else if ch == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
        } else if ch == '\'' {
            // A char literal ('a', '\n') or a lifetime ('a): skip both.
            if c.get(i + 2) == Some(&'\'') {
                i += 3;
            } else if c.get(i + 1) == Some(&'\\') {
                i += 2;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else {
                i += 1;
                while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                    i += 1;
                }
            }
        } else if ch.is_alphabetic() || ch == '_' {
            let s = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            out.push(Tok::Ident(c[s..i].iter().collect()));
        } else if ch.is_ascii_digit() {
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_' || c[i] == '.') {
                i += 1;
            }
        } else {
            i += 1;
            out.push(match ch {
                ':' if c.get(i) == Some(&':') => {
                    i += 1;
                    Tok::Path
                }
                '{' => Tok::Open,
                '}' => Tok::Close,
                ',' => Tok::Comma,
                ';' => Tok::Semi,
                '*' => Tok::Star,
                c if c.is_whitespace() => continue,
                c => Tok::Other(c),
            });
        }
    }
    out
}

/// One file's module: what it defines, its child modules, what it
/// re-exports (`pub use`: name → path) and every path it names.
#[derive(Default, Debug)]
struct File {
    defs: BTreeSet<String>,
    children: BTreeSet<String>,
    reexports: BTreeMap<String, Vec<String>>,
    paths: Vec<Vec<String>>,
}

/// The paths of a `use` tree starting at `toks[*i]`, each with the name it
/// binds (`as` renames included); stops after the tree.
fn use_tree(toks: &[Tok], i: &mut usize, prefix: &[String], out: &mut Vec<(Vec<String>, String)>) {
    let mut path = prefix.to_vec();
    // Bounded by the token count: each step consumes a token.
    while *i < toks.len() {
        match &toks[*i] {
            Tok::Ident(s) if s == "as" => {
                *i += 1;
                if let Some(Tok::Ident(alias)) = toks.get(*i) {
                    out.push((path.clone(), alias.clone()));
                    *i += 1;
                }
                return;
            }
            Tok::Ident(s) => {
                path.push(s.clone());
                *i += 1;
                if toks.get(*i) == Some(&Tok::Path) {
                    *i += 1;
                    continue;
                }
                let name = if s == "self" {
                    path.pop();
                    path.last().cloned().unwrap_or_default()
                } else {
                    s.clone()
                };
                if toks.get(*i) == Some(&Tok::Ident("as".into())) {
                    continue;
                }
                out.push((path, name));
                return;
            }
            Tok::Star => {
                *i += 1;
                out.push((path.clone(), "*".into()));
                return;
            }
            Tok::Open => {
                *i += 1;
                while *i < toks.len() && toks[*i] != Tok::Close {
                    use_tree(toks, i, &path, out);
                    if toks.get(*i) == Some(&Tok::Comma) {
                        *i += 1;
                    }
                }
                *i += 1;
                return;
            }
            Tok::Path => *i += 1, // a leading `::`
            _ => return,
        }
    }
}

const DEF_KEYWORDS: [&str; 8] = [
    "fn", "struct", "enum", "trait", "const", "static", "type", "union",
];

fn read_file(src: &str) -> File {
    // Test modules to the end of the file are not part of the structure.
    let src = src.split("#[cfg(test)]").next().unwrap_or_default();
    let toks = tokens(src);
    let mut f = File::default();
    // Names the file's own code mentions (outside `use` statements): a
    // re-exported name that is also used here is an import as well.
    let mut mentioned = BTreeSet::new();
    let mut i = 0;
    while i < toks.len() {
        let Tok::Ident(word) = &toks[i] else {
            i += 1;
            continue;
        };
        let next = toks.get(i + 1);
        if word == "use" {
            let public = i >= 1 && toks[i - 1] == Tok::Ident("pub".into())
                || i >= 4
                    && toks[i - 1] == Tok::Other(')')
                    && toks[i - 4] == Tok::Ident("pub".into());
            let mut j = i + 1;
            let mut uses = Vec::new();
            use_tree(&toks, &mut j, &[], &mut uses);
            for (path, name) in uses {
                // A re-export hands a name on: it is followed when a
                // path is resolved, and is no import of its own.
                if public && name != "*" {
                    f.reexports.insert(name, path);
                } else {
                    f.paths.push(path);
                }
            }
            i = j;
            continue;
        }
        if word == "mod" {
            if let (Some(Tok::Ident(name)), Some(Tok::Semi)) = (next, toks.get(i + 2)) {
                f.children.insert(name.clone());
                i += 3;
                continue;
            }
        }
        mentioned.insert(word.clone());
        if word == "macro_rules" {
            if let Some(Tok::Ident(name)) = toks.get(i + 2) {
                f.defs.insert(name.clone());
            }
        }
        if DEF_KEYWORDS.contains(&word.as_str()) {
            if let Some(Tok::Ident(name)) = next {
                if !DEF_KEYWORDS.contains(&name.as_str()) && name != "unsafe" {
                    f.defs.insert(name.clone());
                }
            }
        }
        if matches!(word.as_str(), "crate" | "super" | "self")
            && next == Some(&Tok::Path)
            && (i == 0 || toks[i - 1] != Tok::Path)
        {
            let mut path = vec![word.clone()];
            let mut j = i + 1;
            while toks.get(j) == Some(&Tok::Path) {
                match toks.get(j + 1) {
                    Some(Tok::Ident(s)) => path.push(s.clone()),
                    _ => break,
                }
                j += 2;
            }
            f.paths.push(path);
            i = j;
            continue;
        }
        i += 1;
    }
    for (name, path) in &f.reexports {
        if mentioned.contains(name) {
            f.paths.push(path.clone());
        }
    }
    f
}

/// One crate's files by module path (`[]` is the crate root).
struct Crate {
    files: BTreeMap<Vec<String>, (String, File)>,
}

impl Crate {
    fn read(src: &Path, root: &Path) -> Crate {
        let mut paths = Vec::new();
        rust_files(src, &mut paths);
        let mut files = BTreeMap::new();
        for p in paths {
            let rel = p.strip_prefix(src).expect("below src");
            let mut module: Vec<String> = rel
                .with_extension("")
                .iter()
                .map(|s| s.to_string_lossy().into_owned())
                .collect();
            if matches!(
                module.last().map(String::as_str),
                Some("mod" | "lib" | "main")
            ) {
                module.pop();
            }
            // Binaries are crates of their own.
            if module.first().map(String::as_str) == Some("bin") || rel == Path::new("main.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&p).expect("readable source");
            let name = p.strip_prefix(root).unwrap_or(&p).display().to_string();
            files.insert(module, (name, read_file(&text)));
        }
        Crate { files }
    }

    /// The file that defines `path` seen from `from`, following re-exports
    /// (at most `depth` more hops).
    fn resolve(&self, from: &[String], path: &[String], depth: u32) -> Option<Vec<String>> {
        let first = path.first()?;
        let mut module: Vec<String> = match first.as_str() {
            "crate" => vec![],
            "self" => from.to_vec(),
            "super" => from[..from.len().checked_sub(1)?].to_vec(),
            s if self.files.contains_key(&[from, &[s.to_owned()]].concat()) => from.to_vec(),
            _ => return None, // another crate, std, or a local name
        };
        let mut rest = if first == "crate" || first == "self" || first == "super" {
            &path[1..]
        } else {
            path
        };
        while rest.first().map(String::as_str) == Some("super") {
            module.pop();
            rest = &rest[1..];
        }
        for (k, seg) in rest.iter().enumerate() {
            let child = [module.clone(), vec![seg.clone()]].concat();
            if self.files.contains_key(&child) {
                module = child;
                continue;
            }
            let (_, file) = self.files.get(&module)?;
            if file.defs.contains(seg) || depth == 0 {
                return Some(module);
            }
            if let Some(target) = file.reexports.get(seg) {
                let target = [target.clone(), rest[k + 1..].to_vec()].concat();
                return self.resolve(&module, &target, depth - 1).or(Some(module));
            }
            return Some(module);
        }
        Some(module)
    }

    /// Edges between different files: importer → definer.
    fn edges(&self) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
        let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
        for (module, (_, file)) in &self.files {
            for path in &file.paths {
                if let Some(to) = self.resolve(module, path, 8) {
                    // A module's own children (declared with `mod`) are
                    // its parts, and the crate root only declares.
                    if &to != module && !to.is_empty() {
                        edges.entry(module.clone()).or_default().insert(to);
                    }
                }
            }
        }
        edges
    }
}

/// Strongly connected components with more than one node (Tarjan).
fn circles<N: Ord + Clone>(edges: &BTreeMap<N, BTreeSet<N>>) -> Vec<Vec<N>> {
    struct St<N> {
        index: BTreeMap<N, usize>,
        low: BTreeMap<N, usize>,
        on: BTreeSet<N>,
        stack: Vec<N>,
        out: Vec<Vec<N>>,
    }
    fn visit<N: Ord + Clone>(n: &N, e: &BTreeMap<N, BTreeSet<N>>, s: &mut St<N>) {
        let i = s.index.len();
        s.index.insert(n.clone(), i);
        s.low.insert(n.clone(), i);
        s.stack.push(n.clone());
        s.on.insert(n.clone());
        for m in e.get(n).into_iter().flatten() {
            if !s.index.contains_key(m) {
                visit(m, e, s);
                let l = s.low[m].min(s.low[n]);
                s.low.insert(n.clone(), l);
            } else if s.on.contains(m) {
                let l = s.index[m].min(s.low[n]);
                s.low.insert(n.clone(), l);
            }
        }
        if s.low[n] == s.index[n] {
            let mut comp = Vec::new();
            while let Some(m) = s.stack.pop() {
                s.on.remove(&m);
                let done = &m == n;
                comp.push(m);
                if done {
                    break;
                }
            }
            if comp.len() > 1 {
                s.out.push(comp);
            }
        }
    }
    let mut s = St {
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        on: BTreeSet::new(),
        stack: Vec::new(),
        out: Vec::new(),
    };
    for n in edges.keys() {
        if !s.index.contains_key(n) {
            visit(n, edges, &mut s);
        }
    }
    s.out
}

/// Every workspace member's manifest folder.
fn member_dirs() -> (PathBuf, Vec<PathBuf>) {
    let o = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--offline",
            "--no-deps",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let m: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let root = PathBuf::from(m["workspace_root"].as_str().expect("root"));
    let dirs = m["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .filter_map(|p| p["manifest_path"].as_str())
        .map(|p| Path::new(p).parent().expect("folder").to_path_buf())
        .collect();
    (root, dirs)
}

fn circles_of(src: &Path, root: &Path) -> Vec<Vec<String>> {
    let krate = Crate::read(src, root);
    circles(&krate.edges())
        .into_iter()
        .map(|c| c.iter().map(|m| krate.files[m].0.clone()).collect())
        .collect()
}

#[test]
fn no_crate_has_a_circle_of_files() {
    let (root, dirs) = member_dirs();
    let mut found = Vec::new();
    let mut read = 0;
    for dir in dirs {
        let src = dir.join("src");
        read += usize::from(src.is_dir());
        found.extend(circles_of(&src, &root));
    }
    assert!(read >= 10, "only {read} crates read");
    assert!(found.is_empty(), "circles of files: {found:#?}");
}

/// The reader sees a circle when there is one: two files of a planted
/// crate that take names from each other, one through a re-export.
#[test]
fn a_planted_circle_is_seen() {
    let dir = std::env::temp_dir().join(format!("file-graph-{}", std::process::id()));
    let src = dir.join("src");
    std::fs::create_dir_all(src.join("a")).expect("temp dir");
    std::fs::write(src.join("lib.rs"), "pub mod a;\npub mod b;\n").expect("write");
    std::fs::write(src.join("a/mod.rs"), "mod inner;\npub use inner::Thing;\n").expect("write");
    std::fs::write(
        src.join("a/inner.rs"),
        "use crate::b::helper;\npub struct Thing;\n",
    )
    .expect("write");
    std::fs::write(
        src.join("b.rs"),
        "// crate::a::nothing in a comment\npub fn helper(_: crate::a::Thing) {}\n",
    )
    .expect("write");
    let found = circles_of(&src, &dir);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(found.len(), 1, "{found:?}");
    let mut names = found[0].clone();
    names.sort();
    assert_eq!(names, ["src/a/inner.rs", "src/b.rs"]);
}
