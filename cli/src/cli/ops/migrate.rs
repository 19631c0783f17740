//! `leasehold migrate`: applies leasehold's migrations to the store and
//! prints the schema version; `--dry-run` prints the SQL it would apply and
//! changes nothing. A schema newer than this binary is refused.

use super::target::{Open, OpsStore, Target, TargetArgs};
use super::with_store;
use crate::cli::ExitCode;
use clap::Args;
use leasehold_sql::schema_state::{Migration, SchemaState};

/// `leasehold migrate`.
#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// The store.
    #[command(flatten)]
    pub target: TargetArgs,
    /// Print the SQL of the migrations that would be applied (each headed
    /// by `-- migration N: description`); change nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// Runs the command.
pub fn run(args: &MigrateArgs) -> ExitCode {
    // A dry run against a SQLite file that does not exist yet would apply
    // every migration: say so without creating the file.
    if args.dry_run {
        if let Ok(Target::Sqlite(path)) = args.target.target() {
            if !path.exists() {
                print_pending(&known(&Target::Sqlite(path)), &SchemaState::Missing);
                return ExitCode::Ok;
            }
        }
    }
    let dry_run = args.dry_run;
    let target = args.target.target();
    with_store(&args.target, Open::CreateFile, |store| async move {
        let result = migrate(&store, target, dry_run).await;
        (store, result)
    })
}

async fn migrate(
    store: &OpsStore,
    target: Result<Target, String>,
    dry_run: bool,
) -> Result<(), String> {
    let target = target?;
    let before = store.schema_state().await?;
    if let SchemaState::Newer { .. } = before {
        return Err(format!("{}: {before}; nothing changed", target.shown()));
    }
    if dry_run {
        print_pending(&known(&target), &before);
        return Ok(());
    }
    let applied = match store {
        OpsStore::Sqlite(s) => s.migrate().await,
        OpsStore::Postgres(s) => s.migrate().await,
    };
    applied.map_err(|e| format!("{}: migration failed: {e}", target.shown()))?;
    match store.schema_state().await? {
        SchemaState::Current { version } => {
            let pending = match before {
                SchemaState::Missing => known(&target).len(),
                SchemaState::Behind { pending, .. } => pending.len(),
                _ => 0,
            };
            println!("schema version {version} ({pending} migration(s) applied)");
            Ok(())
        }
        other => Err(format!("{}: after migrating: {other}", target.shown())),
    }
}

/// The migrations this binary carries for `target`'s kind of store.
fn known(target: &Target) -> Vec<Migration> {
    match target {
        Target::Sqlite(_) => leasehold_sqlite::schema::migrations(),
        Target::Postgres(_) => leasehold_postgres::schema::migrations(),
    }
}

/// Prints the SQL of every migration `state` still lacks.
fn print_pending(known: &[Migration], state: &SchemaState) {
    let pending: Vec<&Migration> = match state {
        SchemaState::Missing => known.iter().collect(),
        SchemaState::Behind { pending, .. } => known
            .iter()
            .filter(|m| pending.contains(&m.version))
            .collect(),
        _ => Vec::new(),
    };
    if pending.is_empty() {
        println!("-- nothing to apply: {state}");
        return;
    }
    for m in pending {
        println!("-- migration {}: {}", m.version, m.description);
        println!("{}", m.sql.trim_end());
        println!();
    }
}
