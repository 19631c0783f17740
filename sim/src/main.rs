//! The `leasehold` command-line tool.

fn main() {
    eprintln!("leasehold: the CLI is not built yet");
    std::process::exit(2);
}
