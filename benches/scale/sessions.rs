use super::*;

pub(crate) fn sessions(config: &Config, bin: &Path, scratch: &Scratch, table: &mut Table) {
    let count = config.count(100_000);
    let env = Env::new(bin, &scratch.path("sessions"));
    let started = Instant::now();
    let written = write_sessions(&env, count).expect("writing the sessions");
    println!(
        "\n== sessions: {count} files ({:.0} MB, {} named) generated in {} s",
        written.bytes as f64 / MB as f64,
        written.named,
        started.elapsed().as_secs()
    );
    let runs = config.repeats(false);
    for (what, args) in [
        ("revolve sessions", &["sessions"][..]),
        ("revolve sessions --all", &["sessions", "--all"][..]),
    ] {
        // The first run after writing builds the listing cache.
        let (first, _) = env.run(args, &env.cwd);
        let mut times = Vec::new();
        let mut peaks = Vec::new();
        for _ in 0..runs {
            let (t, p) = env.run(args, &env.cwd);
            times.push(t);
            peaks.push(p);
        }
        let t = median(&mut times);
        peaks.sort_unstable();
        println!(
            "{what}, {count} sessions: median {} of {runs} (warm; the first run {}), peak RSS {}",
            ms(t),
            ms(first),
            mb(peaks[peaks.len() / 2])
        );
        table.row(
            &format!("{what}, {count} sessions"),
            ms(t),
            mb(peaks[peaks.len() / 2]),
        );
    }

    // One session goes on (a resume with a turn): the next listing shows its
    // new turn count.
    let script = scratch.path("sessions/script.jsonl");
    std::fs::write(&script, "{\"text\":\"ok\"}\n".repeat(100)).expect("writing the script");
    let script = script.to_string_lossy().into_owned();
    let target = &written.last_named;
    // A first resume starts the claims journal (generated files were never
    // claimed), which makes the next listing stat every file once.
    env.run(
        &[
            "-r",
            target,
            "-p",
            "/quit",
            "--provider",
            "scripted",
            "--script",
            &script,
        ],
        &env.cwd,
    );
    env.listed_turns(target);
    let before = env.listed_turns(target);
    env.run(
        &[
            "-r",
            target,
            "-p",
            "one more",
            "--provider",
            "scripted",
            "--script",
            &script,
        ],
        &env.cwd,
    );
    let t = Instant::now();
    let after = env.listed_turns(target);
    let took = t.elapsed();
    assert_eq!(
        after,
        before.map(|n| n + 1),
        "the listing shows the resumed session's new turn"
    );
    println!(
        "revolve sessions right after `{target}` took a turn: {} (its turns {} -> {}, as listed)",
        ms(took),
        before.unwrap_or(0),
        after.unwrap_or(0)
    );
}

pub(crate) struct Written {
    pub(crate) bytes: u64,
    pub(crate) named: usize,
    pub(crate) last_named: String,
}

/// `count` small sessions (a header, a context record, 1..3 short turns),
/// three in ten named.
pub(crate) fn write_sessions(env: &Env, count: usize) -> io::Result<Written> {
    let mut rng = Rng(0xface_b00c_0000_0002);
    let texts = Texts::new(&mut rng);
    let dir = env.sessions_dir();
    std::fs::create_dir_all(&dir)?;
    let cwd = env.cwd.to_string_lossy().into_owned();
    let mut written = Written {
        bytes: 0,
        named: 0,
        last_named: String::new(),
    };
    for i in 0..count {
        let mut at = base_time() + TimeDelta::seconds(i as i64);
        let id = format!("20261202-{:06}-{:06x}", i, rng.below(1 << 24));
        let named = rng.below(10) < 3;
        let name = if named {
            written.named += 1;
            written.last_named = format!("task-{i}");
            written.last_named.clone()
        } else {
            crate_word(i)
        };
        let path = dir.join(format!("{id}.jsonl"));
        let mut w = LogWriter::create(&path)?;
        let mut h = header(&id, Some(&name), at);
        h.named = named;
        h.cwd = cwd.clone();
        h.project = cwd.clone();
        w.append(&Record::Header(h))?;
        w.append(&Record::Context(Context {
            at,
            system: texts.pick(&mut rng, 300).to_owned(),
            subagents: Vec::new(),
        }))?;
        let mut totals = Totals {
            name: Some(name.clone()),
            named,
            ..Totals::default()
        };
        for _ in 0..1 + rng.below(3) {
            at += TimeDelta::seconds(1);
            w.append(&Record::Message(Message::user(
                at,
                texts.pick(&mut rng, 120),
            )))?;
            w.append(&Record::Message(Message::assistant(
                at,
                texts.pick(&mut rng, 400),
            )))?;
            totals.turns += 1;
            totals.requests += 1;
            totals.at = Some(at);
            w.append(&Record::Totals(totals.clone()))?;
        }
        written.bytes += w.path().metadata()?.len();
    }
    Ok(written)
}

/// Generated names, as `names::allocate` hands them out (many sessions
/// share them: unnamed sessions' names repeat in real projects too).
pub(crate) fn crate_word(i: usize) -> String {
    let w = revolve_core::names::WORDS;
    match i / w.len() {
        0 => w[i].to_owned(),
        round => format!("{}-{}", w[i % w.len()], round + 1),
    }
}

// --- 3. startup -----------------------------------------------------------
