//! Counts in a summary line: each `(name, count)` worded by the caller,
//! joined with commas (`3 acquire, 2 release`).

/// Each of `counts` as `each` words it, joined with `", "`; empty when
/// there are none.
pub fn joined<T>(counts: impl IntoIterator<Item = T>, each: impl FnMut(T) -> String) -> String {
    counts.into_iter().map(each).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::joined;
    use std::collections::BTreeMap;

    #[test]
    fn counts_are_worded_in_order_and_joined() {
        let counts = BTreeMap::from([("release", 2), ("acquire", 3)]);
        assert_eq!(
            joined(&counts, |(k, n)| format!("{n} {k}")),
            "3 acquire, 2 release"
        );
        assert_eq!(joined(&BTreeMap::<&str, u8>::new(), |_| unreachable!()), "");
    }
}
