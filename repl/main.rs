//! The `revolve` executable: [`revolve::run`] with the parsed command line.

#![forbid(unsafe_code)]

fn main() {
    // Before anything else, while there is one thread: the API keys are
    // not left readable in /proc/<pid>/environ by the commands revolve runs.
    revolve_tools::sandbox::shield_environment(&revolve_core::config::API_KEY_VARS);
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
