use super::sessions::write_sessions;
use super::*;

pub(crate) fn startup(config: &Config, bin: &Path, scratch: &Scratch, table: &mut Table) {
    let count = config.count(10_000);
    let env = Env::new(bin, &scratch.path("startup"));
    write_sessions(&env, count).expect("writing the sessions");
    // 100 memory files: 50 global, 50 of the project (~1 KB each).
    let mut rng = Rng(0x3e3e_0000_0000_0005);
    let texts = Texts::new(&mut rng);
    let config_root = env.root.join("config").join("task-agent");
    let slug = revolve_store::paths::slug(&env.cwd);
    for (dir, n) in [
        (config_root.join("memory"), 50),
        (config_root.join("projects").join(&slug).join("memory"), 50),
    ] {
        std::fs::create_dir_all(&dir).expect("creating a memory dir");
        for i in 0..n {
            std::fs::write(
                dir.join(format!("note-{i:03}.md")),
                texts.pick(&mut rng, 1_000),
            )
            .expect("writing a memory file");
        }
    }
    println!("\n== startup: {count} sessions, 100 memory files");
    let server = Server::start();
    let url = format!("http://127.0.0.1:{}/v1", server.port);
    let runs = config.repeats(false);
    // Untimed: builds the listing cache, seeds the builtin memory.
    env.first_request(&server, &["-p", "hi", "--base-url", &url]);
    let mut n = 0;
    for (what, named) in [("-p hi", false), ("-p hi --name N", true)] {
        let mut times = Vec::new();
        for _ in 0..runs + 1 {
            n += 1;
            let name = format!("bench-{n}");
            let mut args = vec!["-p", "hi", "--base-url", &url, "--retries", "0"];
            if named {
                args.extend(["--name", &name]);
            }
            times.push(env.first_request(&server, &args));
        }
        startup_row(table, &format!("the first request ({what})"), count, times);
    }
    // The REPL itself in a pseudo-terminal: spawn to its first prompt. It
    // allocates a generated name (the first word no session here uses).
    let times = (0..runs + 1).map(|_| env.first_prompt(&url)).collect();
    startup_row(table, "the REPL's first prompt", count, times);
    // For scale: the same binary doing nothing but `--version`.
    let version = median(&mut repeat(runs, || env.run(&["--version"], &env.cwd)));
    println!("  (exec of `revolve --version`: median {})", ms(version));
}

/// Prints and tables the median of startup `times` to `what`, the first
/// (a warm-up) left out.
pub(crate) fn startup_row(table: &mut Table, what: &str, count: usize, mut times: Vec<Duration>) {
    times.remove(0);
    let t = median(&mut times);
    println!(
        "startup to {what}, {count} sessions + 100 memory files: \
         median {} of {} (min {}, max {})",
        ms(t),
        times.len(),
        ms(times[0]),
        ms(times[times.len() - 1])
    );
    table.row(
        &format!("startup to {what}, {count} sessions, 100 memory files"),
        ms(t),
        "-".into(),
    );
}

// --- 4. the window --------------------------------------------------------
