//! The `leasehold` command-line tool; see `leasehold --help` and
//! `scenarios/README.md`.

fn main() {
    quiet_on_closed_pipe();
    // `leasehold chaos …` drives real processes (the leasehold-chaos crate,
    // which itself depends on the simulator's checker); the rest is the
    // simulator's command line.
    if std::env::args_os().nth(1).is_some_and(|a| a == "chaos") {
        let argv = std::iter::once("leasehold chaos".into()).chain(std::env::args_os().skip(2));
        std::process::exit(leasehold_chaos::cli::main_from(argv, "leasehold chaos"));
    }
    let code = leasehold_sim::cli::main();
    std::process::exit(code as i32);
}

/// `leasehold run | head` closes stdout early; end quietly (as a process
/// killed by SIGPIPE would) instead of reporting a panic.
fn quiet_on_closed_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let text = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if text.contains("Broken pipe") {
            std::process::exit(141);
        }
        default(info);
    }));
}
