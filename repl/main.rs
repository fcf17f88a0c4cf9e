fn main() {
    let cli = revolve::config::parse_args();
    if let Err(e) = revolve::run(cli) {
        if e.code() != 0 {
            // A server's error text may hold escape sequences: shown inert.
            eprintln!("revolve: {}", revolve_core::view::inert(&e.to_string()));
        }
        std::process::exit(e.code());
    }
}
