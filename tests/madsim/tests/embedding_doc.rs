//! docs/EMBEDDING.md's madsim and turmoil sections show exactly the examples that
//! tests/madsim_user.rs and tests/turmoil_user.rs compile and run.

use std::path::Path;

fn read(rel: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The first fenced Rust block after the heading `## {heading}`.
fn doc_block(heading: &str) -> String {
    let doc = read("../../docs/EMBEDDING.md");
    let at = doc
        .find(&format!("\n## {heading}\n"))
        .unwrap_or_else(|| panic!("docs/EMBEDDING.md has no section `## {heading}`"));
    let rest = &doc[at..];
    let open = rest.find("```rust").expect("a rust block in the section");
    let body = &rest[open..];
    let body = &body[body.find('\n').expect("a fence line") + 1..];
    body[..body.find("\n```").expect("a closing fence")].to_string()
}

/// The lines of a test file between `// EMBEDDING.md: begin` and
/// `// EMBEDDING.md: end`.
fn marked(file: &str) -> String {
    const BEGIN: &str = "// EMBEDDING.md: begin\n";
    let text = read(file);
    let begin = text.find(BEGIN).expect("a begin marker") + BEGIN.len();
    let end = text.find("\n// EMBEDDING.md: end").expect("an end marker");
    text[begin..end].to_string()
}

#[test]
fn embedding_madsim_section_is_the_compiled_example() {
    assert_eq!(
        doc_block("Inside your madsim simulation"),
        marked("tests/madsim_user.rs"),
        "docs/EMBEDDING.md's madsim example and tests/madsim_user.rs differ"
    );
}

#[test]
fn embedding_turmoil_section_is_the_compiled_example() {
    assert_eq!(
        doc_block("Inside your turmoil simulation"),
        marked("tests/turmoil_user.rs"),
        "docs/EMBEDDING.md's turmoil example and tests/turmoil_user.rs differ"
    );
}
