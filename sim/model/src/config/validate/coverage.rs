//! The check of the scenario's `[coverage]` table: every declared name is
//! a built-in situation, declared once.

use super::Bad;
use crate::config::SimConfig;
use crate::situation;

/// Every problem with the scenario's coverage declarations.
pub(super) fn coverage(cfg: &SimConfig, bad: &mut Bad) {
    let expects = &cfg.coverage.expects;
    // The list cannot name more situations than exist without repeating one.
    if expects.len() > situation::BUILTIN.len() {
        bad(
            "coverage.expects",
            format!(
                "{} names, more than the {} situations there are",
                expects.len(),
                situation::BUILTIN.len()
            ),
        );
        return;
    }
    for (i, name) in expects.iter().enumerate() {
        let path = format!("coverage.expects[{i}]");
        if situation::builtin(name).is_none() {
            bad(
                &path,
                format!("unknown situation {name:?} (docs/COVERAGE.md lists them)"),
            );
        } else if expects[..i].contains(name) {
            bad(&path, format!("situation {name:?} is declared twice"));
        }
    }
}
