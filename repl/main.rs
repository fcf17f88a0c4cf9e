use clap::Parser;

fn main() {
    let cli = revolve::cli::Cli::parse();
    if let Err(e) = revolve::run(cli) {
        if e.code() != 0 {
            eprintln!("revolve: {e}");
        }
        std::process::exit(e.code());
    }
}
