//! What the two SQL dialects write differently in the statements this
//! crate writes once: placeholders, byte-order comparison of text, and
//! row locks.

/// How one SQL dialect writes what the shared statements leave open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dialect {
    /// `$1, $2, …` (true) or `?, ?, …` (false).
    numbered: bool,
    /// What follows a text column so that it compares byte by byte, as
    /// every store orders names.
    byte_order: &'static str,
    /// What follows a `SELECT` whose rows stay locked to the transaction.
    row_lock: &'static str,
    /// What follows a `SELECT` whose rows stay locked to the transaction,
    /// passing over the rows another transaction holds.
    skip_locked: &'static str,
}

/// PostgreSQL: numbered placeholders, the `"C"` collation for byte order,
/// `FOR UPDATE` row locks (`SKIP LOCKED` where a scan passes held rows by).
pub const POSTGRES: Dialect = Dialect {
    numbered: true,
    byte_order: " COLLATE \"C\"",
    row_lock: " FOR UPDATE",
    skip_locked: " FOR UPDATE SKIP LOCKED",
};

/// SQLite: `?` placeholders; text compares byte by byte already (the
/// `BINARY` collation); no row locks (a write transaction holds the whole
/// file from `BEGIN IMMEDIATE`).
pub const SQLITE: Dialect = Dialect {
    numbered: false,
    byte_order: "",
    row_lock: "",
    skip_locked: "",
};

impl Dialect {
    /// The `n`th placeholder of a statement (from 1).
    pub fn placeholder(self, n: usize) -> String {
        if self.numbered {
            format!("${n}")
        } else {
            "?".to_string()
        }
    }

    /// Placeholders `from..=to`, comma separated.
    pub fn placeholders(self, from: usize, to: usize) -> String {
        (from..=to)
            .map(|n| self.placeholder(n))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The ids in placeholder `n`, bound as a JSON array of integers in
    /// text, as a set to follow `IN`: one statement text for any number
    /// of ids.
    pub fn json_ids(self, n: usize) -> String {
        if self.numbered {
            format!("(SELECT json_array_elements_text(${n}::json)::bigint)")
        } else {
            "(SELECT value FROM json_each(?))".to_string()
        }
    }

    /// What follows a text column so that it compares byte by byte.
    pub fn byte_order(self) -> &'static str {
        self.byte_order
    }

    /// What follows a `SELECT` whose rows stay locked to the transaction
    /// (nothing where the transaction locks more already).
    pub fn row_lock(self) -> &'static str {
        self.row_lock
    }

    /// What follows a `SELECT` whose rows stay locked to the transaction,
    /// a row another transaction holds passed over instead of waited for
    /// (nothing where the transaction locks more already).
    pub fn skip_locked(self) -> &'static str {
        self.skip_locked
    }
}

#[cfg(test)]
mod tests {
    use super::{POSTGRES, SQLITE};

    #[test]
    fn placeholders_are_numbered_only_on_postgres() {
        assert_eq!(POSTGRES.placeholders(2, 4), "$2, $3, $4");
        assert_eq!(SQLITE.placeholders(2, 4), "?, ?, ?");
        assert_eq!(POSTGRES.placeholders(1, 0), "");
    }
}
