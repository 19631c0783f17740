//! The `leasehold` command-line tool; see `leasehold --help` and
//! `scenarios/README.md`.

/// A simulated run allocates and frees at every step (records, messages,
/// rows); mimalloc does that in far fewer instructions than glibc's malloc
/// (docs/PERFORMANCE.md, "Simulator speed"), and its version 2
/// (`cli/Cargo.toml`) spends far less time in the kernel than version 3. It
/// changes no history: nothing the simulator runs depends on where an
/// allocation lands.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    quiet_on_closed_pipe();
    std::process::exit(leasehold_cli::main());
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
