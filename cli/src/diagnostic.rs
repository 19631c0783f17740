//! Scenario-file errors shown as located, annotated snippets (the
//! `annotate-snippets` crate, rustc's renderer): the first line stays
//! `file:line:col: field: message`, so editors and CI annotations still
//! find it, and below it the offending line with a caret.

use annotate_snippets::{Level, Renderer, Snippet};
use leasehold_model::scenario::LoadErrors;

/// Prints `errors` on stderr, in colour when stderr is a terminal.
pub fn eprint_load_errors(errors: &LoadErrors) {
    use std::io::IsTerminal;
    eprintln!("{}", load_errors(errors, std::io::stderr().is_terminal()));
}

/// Every error of `errors`, each with the line it points at; an error
/// without a position (an unreadable file) is its one line.
pub fn load_errors(errors: &LoadErrors, colour: bool) -> String {
    let renderer = if colour {
        Renderer::styled()
    } else {
        Renderer::plain()
    };
    let mut out = String::new();
    for (i, e) in errors.0.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let first = e.to_string();
        out.push_str(&first);
        let Some(text) = (e.line > 0)
            .then(|| std::fs::read_to_string(&e.file).ok())
            .flatten()
        else {
            continue;
        };
        let Some(at) = offset(&text, e.line, e.col) else {
            continue;
        };
        let end = text[at..]
            .char_indices()
            .nth(1)
            .map_or(text.len(), |(n, _)| at + n);
        let origin = e.file.display().to_string();
        let label = e.field.as_deref().unwrap_or("here");
        let message = Level::Error.title("").snippet(
            Snippet::source(&text)
                .line_start(1)
                .origin(&origin)
                .fold(true)
                .annotation(Level::Error.span(at..end.max(at)).label(label)),
        );
        // The title line repeats `first`; keep only the snippet below it.
        let rendered = renderer.render(message).to_string();
        for line in rendered.lines().skip(1) {
            out.push('\n');
            out.push_str(line);
        }
    }
    out
}

/// The byte offset of 1-based `line` and character `col` in `text`.
fn offset(text: &str, line: usize, col: usize) -> Option<usize> {
    let start = if line == 1 {
        0
    } else {
        text.match_indices('\n').nth(line - 2).map(|(i, _)| i + 1)?
    };
    let rest = &text[start..];
    let line_len = rest.find('\n').unwrap_or(rest.len());
    let within = rest[..line_len]
        .char_indices()
        .nth(col.saturating_sub(1))
        .map_or(line_len, |(i, _)| i);
    Some(start + within)
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasehold_model::scenario::LoadError;

    #[test]
    fn the_first_line_keeps_file_line_col_and_a_caret_points_at_the_column() {
        let dir = std::env::temp_dir().join(format!("lh-diag-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("bad.toml");
        std::fs::write(
            &file,
            "[protocol]\nlease = \"5s\"\nrenew_interval = \"9s\"\n",
        )
        .unwrap();
        let e = LoadError {
            file: file.clone(),
            line: 3,
            col: 1,
            field: Some("protocol.renew_interval".into()),
            message: "must be below the lease".into(),
        };
        let out = load_errors(&LoadErrors(vec![e]), false);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[0],
            format!(
                "{}:3:1: protocol.renew_interval: must be below the lease",
                file.display()
            )
        );
        assert!(out.contains("3 | renew_interval = \"9s\""), "{out}");
        let caret = lines.iter().find(|l| l.contains('^')).expect("a caret");
        assert!(caret.contains("^ protocol.renew_interval"), "{out}");
        assert_eq!(offset("ab\ncdé\n", 2, 3), Some(5));
        assert_eq!(offset("ab\n", 9, 1), None);
        let _ = std::fs::remove_dir_all(dir);
    }
}
