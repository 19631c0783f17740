//! Depending on `leasehold-sim` (to simulate your own store) must not
//! compile the catalogue's buggy code paths into your `leasehold-core`:
//! only the `catalogue` feature (on in the `leasehold` tool) brings them.

use std::process::Command;

fn features_of(package: &str) -> String {
    let o = Command::new(env!("CARGO"))
        .args(["tree", "--offline", "-e", "features,no-dev", "-p", package])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn the_simulator_library_leaves_the_core_without_buggy_variants() {
    let tree = features_of("leasehold-sim");
    assert!(tree.contains("leasehold-core"), "{tree}");
    assert!(!tree.contains("buggy-variants"), "{tree}");
}

#[test]
fn the_leasehold_tool_carries_the_catalogue() {
    assert!(features_of("leasehold-cli").contains("buggy-variants"));
}
