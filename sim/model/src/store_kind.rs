//! Which built-in store a run simulates: named in scenario files (`store =
//! "sqlite"`) and on the command line (`--store`).

/// Which built-in store to simulate.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum StoreKind {
    /// The in-memory reference adapter (no server needed).
    Memory,
    /// `leasehold-sqlite` on a fresh file per seed.
    Sqlite,
    /// `leasehold-postgres` in a fresh schema per seed.
    Postgres,
}

impl StoreKind {
    /// The name used on the command line and in scenario files.
    pub fn name(self) -> &'static str {
        match self {
            StoreKind::Memory => "memory",
            StoreKind::Sqlite => "sqlite",
            StoreKind::Postgres => "postgres",
        }
    }
}

impl std::fmt::Display for StoreKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl StoreKind {
    /// Every built-in store, in the order the command line lists them.
    pub const ALL: [StoreKind; 3] = [StoreKind::Memory, StoreKind::Sqlite, StoreKind::Postgres];
}

impl std::str::FromStr for StoreKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        StoreKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| format!("unknown store `{s}` (expected memory, sqlite or postgres)"))
    }
}
