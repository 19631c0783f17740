//! `leasehold-export`: writes a Postgres store's audit log (`leasehold_audit`) as
//! JSONL (one `leasehold_core::Event` per line, in insertion order), the
//! input of `leasehold check`.
//!
//! ```text
//! leasehold-export [--database-url URL] [--schema NAME] > history.jsonl
//! ```
//! `--database-url` defaults to `$DATABASE_URL`.

use leasehold_postgres::PgStore;
use std::io::Write;
use std::process::ExitCode;

/// Audit rows (transactions, each with one or more events) read per round
/// trip.
const PAGE: u32 = 1_000;
/// Most pages: a bound on the export loop (10^10 audit rows).
const MAX_PAGES: usize = 10_000_000;

struct Args {
    url: String,
    schema: Option<String>,
}

fn usage() -> String {
    "usage: leasehold-export [--database-url URL] [--schema NAME] > history.jsonl".into()
}

/// The arguments, or `None` when help was asked for.
fn parse(mut argv: impl Iterator<Item = String>) -> Result<Option<Args>, String> {
    let mut url = std::env::var("DATABASE_URL").ok();
    let mut schema = None;
    while let Some(arg) = argv.next() {
        match arg.as_str() {
            "--database-url" => url = Some(argv.next().ok_or("--database-url needs a value")?),
            "--schema" => schema = Some(argv.next().ok_or("--schema needs a value")?),
            "-h" | "--help" => return Ok(None),
            other => return Err(format!("unknown argument {other:?}\n{}", usage())),
        }
    }
    let url = url.ok_or_else(|| {
        format!(
            "no database: pass --database-url or set DATABASE_URL\n{}",
            usage()
        )
    })?;
    Ok(Some(Args { url, schema }))
}

async fn export(args: Args) -> Result<u64, String> {
    let mut builder = PgStore::builder(args.url);
    if let Some(s) = args.schema {
        builder = builder.schema(s);
    }
    let store = builder.connect().await.map_err(|e| e.to_string())?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let (mut after, mut written) = (0i64, 0u64);
    for _ in 0..MAX_PAGES {
        let page = store
            .events_page(after, PAGE)
            .await
            .map_err(|e| e.to_string())?;
        for (seq, event) in &page {
            let line = serde_json::to_string(event).map_err(|e| format!("event {seq}: {e}"))?;
            writeln!(out, "{line}").map_err(|e| format!("writing: {e}"))?;
            after = *seq;
            written += 1;
        }
        if page.is_empty() {
            break;
        }
    }
    out.flush().map_err(|e| format!("writing: {e}"))?;
    Ok(written)
}

fn main() -> ExitCode {
    let args = match parse(std::env::args().skip(1)) {
        Ok(Some(a)) => a,
        Ok(None) => {
            println!("{}", usage());
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("leasehold-export: {e}");
            return ExitCode::from(2);
        }
    };
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("leasehold-export: cannot start a runtime: {e}");
            return ExitCode::from(2);
        }
    };
    match rt.block_on(export(args)) {
        Ok(n) => {
            eprintln!("leasehold-export: {n} events");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("leasehold-export: {e}");
            ExitCode::FAILURE
        }
    }
}
