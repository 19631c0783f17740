//! The `leasehold` command-line tool; see `leasehold --help` and
//! `scenarios/README.md`.

fn main() {
    let code = leasehold_sim::cli::main();
    std::process::exit(code as i32);
}
