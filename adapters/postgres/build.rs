//! sqlx does its own I/O and threads on a real tokio runtime, outside
//! madsim's control, so this adapter cannot serve a madsim simulation. A
//! `--cfg madsim` build stops in this script, without waiting for sqlx to
//! compile, with one message instead of a wall of errors.
//!
//! It also names `migrations/postgres/` as an input: `sqlx::migrate!` embeds
//! that directory's files, but cargo sees only the files it read, so a new
//! migration file would otherwise leave a stale build without it.

fn main() {
    println!("cargo::rerun-if-changed=../../migrations/postgres");
    println!("cargo::rerun-if-env-changed=CARGO_CFG_MADSIM");
    if std::env::var_os("CARGO_CFG_MADSIM").is_some() {
        println!(
            "cargo::error=leasehold-postgres cannot be built under `--cfg madsim`: sqlx does its own \
             I/O on a real tokio runtime, outside madsim's control. Inside a madsim simulation use \
             leasehold-memory, or your own Store behind madsim's network (docs/EMBEDDING.md, \
             \"Inside your madsim simulation\")."
        );
        std::process::exit(1);
    }
}
