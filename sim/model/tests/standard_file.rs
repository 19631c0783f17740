//! `benches/scenarios/standard.toml` is `builtin::standard` written as a
//! scenario file, so that binaries of different commits measure the same
//! settings (docs/PERFORMANCE.md). A change to either must change both.

use leasehold_model::builtin;
use leasehold_model::scenario::load_str;
use std::path::Path;

#[test]
fn the_standard_file_has_the_settings_of_the_builtin() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../benches/scenarios/standard.toml");
    let text = std::fs::read_to_string(&path).expect("benches/scenarios/standard.toml");
    let mut file = load_str(&text, &path, "standard")
        .map_err(|e| e.0)
        .expect("the file loads");
    let builtin = builtin::standard();
    // What only a file has: how many seeds `run` takes, and from which.
    assert_eq!((file.seeds, file.first_seed), (20, 1));
    file.seeds = builtin.seeds;
    file.first_seed = builtin.first_seed;
    file.description = builtin.description.clone();
    assert_eq!(file, builtin);
}
