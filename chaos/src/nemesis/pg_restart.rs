//! The restart fault: `pg_ctl restart -m immediate`, run on its own thread.

use crate::config::PgControl;
use std::process::{Command, Stdio};

/// `pg_ctl -t`: longest wait for the restarted server, in seconds.
pub const PG_CTL_TIMEOUT_SECS: u32 = 60;

/// `pg_ctl restart -m immediate`: the server stops without a checkpoint
/// (as in a crash) and recovers from its WAL on start.
pub fn pg_restart(pg: &PgControl) -> Result<(), String> {
    let mut args: Vec<String> = vec![
        "-D".into(),
        pg.data.display().to_string(),
        "-m".into(),
        "immediate".into(),
        "-w".into(),
        "-t".into(),
        PG_CTL_TIMEOUT_SECS.to_string(),
    ];
    if let Some(log) = &pg.log {
        args.push("-l".into());
        args.push(log.display().to_string());
    }
    args.push("restart".into());
    let mut cmd = match &pg.user {
        Some(user) => {
            let mut c = Command::new("runuser");
            c.arg("-u").arg(user).arg("--").arg(&pg.pg_ctl);
            c
        }
        None => Command::new(&pg.pg_ctl),
    };
    // Without `-l` the server inherits pg_ctl's output: never pipe it then,
    // or reading would wait for the server to exit.
    let captured = if pg.log.is_some() {
        Stdio::piped
    } else {
        Stdio::null
    };
    let out = cmd
        .args(&args)
        .stdin(Stdio::null())
        .stdout(captured())
        .stderr(captured())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", pg.pg_ctl.display()))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "pg_ctl restart failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout).trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}
