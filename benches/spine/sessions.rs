use super::*;

pub(crate) fn sessions(config: &Config, scratch: &Scratch, table: &mut Table) {
    let count = config.count(10_000, 10);
    let root = scratch.path("sessions");
    let cwd = root.join("work");
    std::fs::create_dir_all(&cwd).expect("creating the cwd");
    let cwd = cwd.canonicalize().expect("canonical cwd");
    let roots = Roots {
        state: root.join("state").join("task-agent"),
        config: root.join("config").join("task-agent"),
    };
    let store = Store {
        roots,
        project: Project::from_key(cwd.clone()),
        cwd: cwd.clone(),
    };
    let started = Instant::now();
    let (bytes, named) = write_sessions(&store, count).expect("writing the sessions");
    println!(
        "\n== 2. sessions: generated {count} files ({:.1} MB, {named} named) in {} ms",
        bytes as f64 / MB,
        started.elapsed().as_millis()
    );

    let listed = store.list().expect("listing").len();
    assert_eq!(listed, count, "every session is listed");
    let runs = 15;
    let lib = median(&mut repeat(runs, || {
        black_box(store.list().expect("listing").len())
    }));
    println!(
        "Store::list() over {count} sessions: median {} ({runs} runs, warm cache; target < 100 ms)",
        ms(lib)
    );
    // The I/O `log::summary` does, without parsing: the floor of reading
    // head and tail of every file, on one thread and split over two.
    let dir = store.sessions_dir();
    let floor = median(&mut repeat(runs, || black_box(head_and_tail(&dir, 0, 1))));
    let floor2 = median(&mut repeat(runs, || {
        std::thread::scope(|s| {
            let a = s.spawn(|| head_and_tail(&dir, 0, 2));
            let b = head_and_tail(&dir, 1, 2);
            black_box(a.join().expect("a thread") + b)
        })
    }));
    let read_dir = median(&mut repeat(runs, || {
        black_box(std::fs::read_dir(&dir).expect("listing").flatten().count())
    }));
    let stat = median(&mut repeat(runs, || {
        let entries = std::fs::read_dir(&dir).expect("listing").flatten();
        black_box(entries.filter_map(|e| e.metadata().ok()).count())
    }));
    println!(
        "  breakdown: read_dir alone {}, with a stat of each file {}; summary's I/O alone \
         (open, stat, read 8 KB head, seek and read 8 KB tail when larger, close) {}, split \
         over 2 threads {}; so parsing and the rest ~{}",
        ms(read_dir),
        ms(stat),
        ms(floor),
        ms(floor2),
        ms(lib.saturating_sub(floor)),
    );
    table.row(
        &format!("Store::list(), {count} sessions"),
        ms(lib),
        "< 100 ms",
        Some(lib < Duration::from_millis(100)),
    );

    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/revolve");
    if !bin.exists() {
        println!(
            "revolve sessions --all: skipped, {} does not exist (run `cargo build --release`)",
            bin.display()
        );
        table.row(
            "revolve sessions --all (binary)",
            "skipped: no release binary".into(),
            "< 100 ms",
            None,
        );
        return;
    }
    if let Some(newer) = newer_source(&bin) {
        println!(
            "  note: {} is newer than the binary; its figure may be stale",
            newer.display()
        );
    }
    let env = BinEnv::new(&bin, &root);
    // Check once that the binary sees exactly the generated sessions: a
    // heading line and one line per session.
    let lines = env.lines_listed(&cwd);
    if lines != count + 1 {
        println!(
            "  warning: the binary listed {lines} lines, expected {}; its cwd or roots differ",
            count + 1
        );
    }
    let end_to_end = median(&mut repeat(runs, || env.run(&cwd)));
    // Its fixed cost: the same command in a directory with no sessions, and
    // the `git rev-parse` it runs to find the project.
    let empty = root.join("empty");
    std::fs::create_dir_all(&empty).expect("creating an empty cwd");
    let fixed = median(&mut repeat(runs, || env.run(&empty)));
    let git = median(&mut repeat(runs, || {
        Command::new("git")
            .arg("-C")
            .arg(&empty)
            .args(["rev-parse", "--path-format=absolute", "--git-common-dir"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("running git")
    }));
    println!(
        "revolve sessions --all, {count} sessions: median {} ({runs} runs, stdout to /dev/null; \
         target < 100 ms)",
        ms(end_to_end)
    );
    println!(
        "  breakdown: same command with no sessions {} (of which `git rev-parse` ~{}); \
         listing, sorting and printing {count} sessions ~{}",
        ms(fixed),
        ms(git),
        ms(end_to_end.saturating_sub(fixed))
    );
    table.row(
        &format!("revolve sessions --all, {count} sessions"),
        ms(end_to_end),
        "< 100 ms",
        Some(end_to_end < Duration::from_millis(100)),
    );
}

/// Reads what `log::summary` reads of every `share`-th `.jsonl` file of
/// `dir` starting at `offset`, in the same calls, and parses nothing.
/// Returns the bytes read.
pub(crate) fn head_and_tail(dir: &Path, offset: usize, share: usize) -> usize {
    const PEEK: u64 = 8 * 1024;
    let mut bytes = 0;
    let entries = std::fs::read_dir(dir).expect("listing");
    for entry in entries.flatten().skip(offset).step_by(share) {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        let mut file = File::open(&path).expect("opening a session");
        let len = file.metadata().expect("stat").len();
        let mut head = Vec::with_capacity(PEEK as usize);
        (&mut file)
            .take(PEEK)
            .read_to_end(&mut head)
            .expect("reading a head");
        bytes += head.len();
        if len > PEEK {
            let mut tail = Vec::with_capacity(PEEK as usize);
            file.seek(SeekFrom::Start(len - PEEK)).expect("seeking");
            file.read_to_end(&mut tail).expect("reading a tail");
            bytes += tail.len();
        }
    }
    bytes
}

/// Writes `count` session files: most a header and 1..6 short turns (a few
/// KB), one in ten around 50 KB. Returns the bytes written and how many are
/// named.
pub(crate) fn write_sessions(store: &Store, count: usize) -> io::Result<(u64, usize)> {
    let mut rng = Rng(0xface_b00c_0000_0001);
    let cwd = store.cwd.to_string_lossy().into_owned();
    let names = [
        "amber",
        "birch",
        "cedar",
        "dune",
        "elm",
        "fern",
        "login-bug",
        "db-migrate",
    ];
    let (mut bytes, mut named_count) = (0, 0);
    for i in 0..count {
        let mut at = base_time() + TimeDelta::minutes(i as i64);
        let id = format!(
            "{}-{:06x}",
            at.format(time::macros::format_description!(
                "[year][month][day]-[hour][minute][second]"
            ))
            .expect("formatting an id"),
            rng.below(1 << 24)
        );
        let name = names[rng.below(names.len() as u64) as usize];
        let named = rng.below(10) < 3;
        named_count += usize::from(named);
        let path = store.path_of(&id);
        let mut w = LogWriter::create(&path)?;
        w.append(&Record::Header(header(&id, name, named, &cwd, at)))?;
        w.append(&Record::Context(Context {
            at,
            system: system_prompt(&mut rng),
            subagents: Vec::new(),
        }))?;
        let large = i.is_multiple_of(10);
        let turns = if large { 8 } else { 1 + rng.below(6) };
        let mut totals = Totals {
            name: Some(name.into()),
            named,
            ..Totals::default()
        };
        for _ in 0..turns {
            at += TimeDelta::seconds(20);
            let user_len = rng.log_uniform(40, 600);
            let user = text(&mut rng, user_len);
            w.append(&Record::Message(Message::user(at, user)))?;
            let answer = if large {
                let answer_len = 4_000 + rng.below(3_000) as usize;
                text(&mut rng, answer_len)
            } else {
                let answer_len = rng.log_uniform(200, 1_500);
                text(&mut rng, answer_len)
            };
            w.append(&Record::Message(Message::assistant(at, answer)))?;
            totals.at = Some(at);
            totals.turns += 1;
            totals.tokens_in += 900;
            totals.tokens_out += 120;
            totals.last_context = totals.tokens_in / 2;
            w.append(&Record::Totals(totals.clone()))?;
        }
        bytes += w.path().metadata()?.len();
    }
    Ok((bytes, named_count))
}

/// How to run the release binary against the temp root.
pub(crate) struct BinEnv {
    pub(crate) bin: PathBuf,
    pub(crate) vars: Vec<(&'static str, PathBuf)>,
}

impl BinEnv {
    pub(crate) fn new(bin: &Path, root: &Path) -> BinEnv {
        let vars = vec![
            ("HOME", root.join("home")),
            ("XDG_STATE_HOME", root.join("state")),
            ("XDG_CONFIG_HOME", root.join("config")),
            ("XDG_DATA_HOME", root.join("data")),
            ("XDG_CACHE_HOME", root.join("cache")),
        ];
        BinEnv {
            bin: bin.to_path_buf(),
            vars,
        }
    }

    pub(crate) fn command(&self, cwd: &Path) -> Command {
        let mut cmd = Command::new(&self.bin);
        cmd.args(["sessions", "--all"])
            .current_dir(cwd)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default());
        for (k, v) in &self.vars {
            cmd.env(k, v);
        }
        cmd
    }

    /// One timed run, stdout to /dev/null.
    pub(crate) fn run(&self, cwd: &Path) -> Duration {
        let t = Instant::now();
        let out = self
            .command(cwd)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .expect("running revolve");
        let took = t.elapsed();
        assert!(
            out.status.success(),
            "revolve sessions failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        took
    }

    pub(crate) fn lines_listed(&self, cwd: &Path) -> usize {
        let out = self.command(cwd).output().expect("running revolve");
        assert!(
            out.status.success(),
            "revolve sessions failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .count()
    }
}

/// A source file of the binary newer than the binary itself, if any.
pub(crate) fn newer_source(bin: &Path) -> Option<PathBuf> {
    let built = bin.metadata().and_then(|m| m.modified()).ok()?;
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut stack: Vec<PathBuf> = ["repl", "core/src", "io/src"]
        .iter()
        .map(|d| manifest.join(d))
        .collect();
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).ok()?.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs")
                && path
                    .metadata()
                    .and_then(|m| m.modified())
                    .is_ok_and(|m| m > built)
            {
                return Some(path);
            }
        }
    }
    None
}

// --- 3. append ------------------------------------------------------------
