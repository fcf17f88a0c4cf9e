//! The `revolve` executable: [`revolve::run`] with the parsed command line.

#![forbid(unsafe_code)]

fn main() {
    let cli = revolve::config::parse_args();
    if let Err(e) = revolve::run(cli) {
        if e.code() != 0 {
            // A server's error message can be in it: control characters
            // are shown, never acted on.
            let line = format!("revolve: {}", revolve_view::inert(&e.to_string()));
            eprintln!(
                "{}",
                revolve::render::error(&line, revolve::render::stderr())
            );
        }
        std::process::exit(e.code());
    }
}
