//! `leasehold-chaos`: the chaos orchestrator (also `leasehold chaos`); see
//! `leasehold-chaos --help` and the crate docs.

fn main() {
    let code = leasehold_chaos::cli::main_from(std::env::args_os(), "leasehold-chaos");
    std::process::exit(code);
}
