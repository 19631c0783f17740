//! Property tests of the Jepsen history reader and checker on hostile
//! input: whatever the bytes, they answer operations or a located error,
//! and never panic.

use leasehold_check::jepsen::{check::check, edn::read_history};
use proptest::prelude::*;
use std::path::Path;

/// A well-formed history to mutate.
const HISTORY: &str = r#"{:type :invoke, :f :acquire, :value {:queue "q", :max 1}, :time 0, :process 0, :index 0}
{:type :ok, :f :acquire, :value {:job 1, :token 1}, :time 5, :process 0, :index 1, :node "worker-1"}
{:type :invoke, :f :release, :value {:job 1, :token 1, :outcome :succeeded}, :time 9, :process 0, :index 2}
{:type :info, :f :crash, :value "crash worker-1 at 5s", :time 9, :process :nemesis, :index 3}
{:type :fail, :f :release, :value {:job 1, :token 1, :outcome :succeeded}, :time 12, :process 0, :index 4, :error "lost"}
[{:type :invoke, :f :sweep, :process 3}] ; a comment
"#;

/// Pieces of EDN and of the operation shape, so random text reaches deep
/// into the grammar and the checker instead of failing on the first byte.
fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("{".to_string()),
        Just("}".to_string()),
        Just("[".to_string()),
        Just("]".to_string()),
        Just("(".to_string()),
        Just(")".to_string()),
        Just("#{".to_string()),
        Just(":type :invoke".to_string()),
        Just(":type :ok".to_string()),
        Just(":type :info".to_string()),
        Just(":f :acquire".to_string()),
        Just(":f :release".to_string()),
        Just(":f :sweep".to_string()),
        Just(":process 0".to_string()),
        Just(":process :nemesis".to_string()),
        Just(":value {:job 1 :token 2}".to_string()),
        Just(":value [{:job 1 :token 1}]".to_string()),
        Just("\"str\\\"ing\"".to_string()),
        Just("\\a".to_string()),
        Just("; comment\n".to_string()),
        Just("\n".to_string()),
        Just("-9223372036854775808".to_string()),
        Just("99999999999999999999".to_string()),
        Just("1.5".to_string()),
        Just("#tag".to_string()),
        Just("nil".to_string()),
        "[ -~]{0,4}",
        "\\PC{0,2}",
    ]
}

fn assert_located(text: &str) {
    let file = Path::new("fuzz.edn");
    match read_history(text, file) {
        Ok(ops) => {
            // The checker may answer violations or bad input; it must not panic,
            // and every error it names is inside the file.
            if let Err(errors) = check(&ops, file) {
                for e in errors {
                    assert!(e.pos.line >= 1 && e.pos.col >= 1, "{e}");
                    assert!(e.pos.line <= text.lines().count() + 1, "{e}");
                }
            }
        }
        Err(e) => {
            assert!(e.pos.line >= 1 && e.pos.col >= 1, "{e}");
            assert!(e.pos.line <= text.lines().count() + 1, "{e}");
            assert!(e.to_string().starts_with("fuzz.edn:"), "{e}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2_000, ..ProptestConfig::default() })]

    #[test]
    fn any_text_reads_or_fails_with_a_position(text in "\\PC{0,200}") {
        assert_located(&text);
    }

    #[test]
    fn edn_shaped_text_reads_or_fails_with_a_position(parts in proptest::collection::vec(token(), 0..60)) {
        assert_located(&parts.join(" "));
    }

    #[test]
    fn a_mutated_history_reads_or_fails_with_a_position(
        at in 0usize..HISTORY.len(),
        cut in 0usize..8,
        insert in token(),
    ) {
        let mut at = at;
        while !HISTORY.is_char_boundary(at) { at -= 1; }
        let mut end = (at + cut).min(HISTORY.len());
        while !HISTORY.is_char_boundary(end) { end -= 1; }
        let text = format!("{}{}{}", &HISTORY[..at], insert, &HISTORY[end..]);
        assert_located(&text);
    }
}

#[test]
fn the_unmutated_history_is_read_whole() {
    // The last line is a vector after maps: a form that is not an operation.
    let e = read_history(HISTORY, Path::new("h.edn")).unwrap_err();
    assert_eq!((e.pos.line, e.pos.col), (6, 1), "{e}");
    let clean: String = HISTORY.lines().take(5).collect::<Vec<_>>().join("\n");
    let ops = read_history(&clean, Path::new("h.edn")).unwrap();
    assert_eq!(ops.len(), 5);
    let s = check(&ops, Path::new("h.edn")).unwrap();
    assert!(s.findings.is_empty(), "{:?}", s.findings);
}
