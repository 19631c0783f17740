//! The SQL adapters cannot serve a madsim simulation (sqlx does its own I/O
//! on a real tokio runtime), so their build scripts stop a `--cfg madsim`
//! build with one message. This test compiles each build script with rustc
//! and runs it the way cargo does: with `CARGO_CFG_MADSIM` set (cargo sets
//! it under `RUSTFLAGS="--cfg madsim"`) it must fail with its message, and
//! without it succeed silently. (`MADSIM_CHECK_SQL_REFUSAL=1
//! scripts/test-madsim.sh` checks the same through a real cargo build.)

use std::path::{Path, PathBuf};
use std::process::Command;

fn build_script(adapter: &str, out: &Path) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let src = root.join("adapters").join(adapter).join("build.rs");
    let exe = out.join(format!("build-{adapter}"));
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let status = Command::new(rustc)
        .args(["--edition", "2021", "-o"])
        .arg(&exe)
        .arg(&src)
        .status()
        .expect("rustc runs");
    assert!(status.success(), "{} compiles", src.display());
    exe
}

#[test]
fn sql_adapters_refuse_a_madsim_build_with_one_message() {
    let dir = std::env::temp_dir().join(format!("leasehold-refuse-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for adapter in ["sqlite", "postgres"] {
        let exe = build_script(adapter, &dir);

        let madsim = Command::new(&exe)
            .env("CARGO_CFG_MADSIM", "")
            .output()
            .unwrap();
        assert!(
            !madsim.status.success(),
            "{adapter}: a madsim build must stop"
        );
        let stdout = String::from_utf8_lossy(&madsim.stdout);
        let errors: Vec<&str> = stdout
            .lines()
            .filter(|l| l.starts_with("cargo::error="))
            .collect();
        assert_eq!(errors.len(), 1, "{adapter}: one message, got {stdout}");
        let want = format!("cargo::error=leasehold-{adapter} cannot be built under `--cfg madsim`");
        assert!(errors[0].starts_with(&want), "{adapter}: {}", errors[0]);
        assert!(
            errors[0].contains("leasehold-memory"),
            "{adapter}: the message says what to use"
        );

        let normal = Command::new(&exe)
            .env_remove("CARGO_CFG_MADSIM")
            .output()
            .unwrap();
        assert!(normal.status.success(), "{adapter}: a normal build goes on");
        assert!(
            !String::from_utf8_lossy(&normal.stdout).contains("cargo::error"),
            "{adapter}: no error in a normal build"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}
