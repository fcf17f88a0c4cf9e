fn main() {
    let cli = revolve::config::parse_args();
    if let Err(e) = revolve::run(cli) {
        if e.code() != 0 {
            eprintln!("revolve: {e}");
        }
        std::process::exit(e.code());
    }
}
