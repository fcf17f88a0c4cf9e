use super::*;

pub(crate) fn logs(config: &Config, bin: &Path, scratch: &Scratch, table: &mut Table) {
    let env = Env::new(bin, &scratch.path("logs"));
    let script = scratch.path("logs/script.jsonl");
    std::fs::write(&script, "{\"text\":\"ok\"}\n".repeat(100)).expect("writing the script");
    let dir = env.sessions_dir();

    for full in [10 * MB, 100 * MB, 1024 * MB] {
        let target = config.bytes(full);
        let path = dir.join("20261202-102606-000001.jsonl");
        let started = Instant::now();
        let shape = write_pruned_log(&path, target).expect("writing the log");
        let size = file_size(&path);
        let label = format!("{:.0} MB file", size as f64 / MB as f64);
        println!(
            "\n== big log, one file: {label} ({} turns, {} tool results pruned in {} prunes; \
             live history ~{:.1} MB) generated in {} s",
            shape.turns,
            shape.pruned,
            shape.prunes,
            shape.live as f64 / MB as f64,
            started.elapsed().as_secs()
        );
        let slow = size > 200 * MB;
        let p = path.to_string_lossy().into_owned();
        measure_log(
            config,
            &env,
            table,
            &label,
            "replay --check",
            slow,
            &["replay", "--check", &p],
        );
        measure_log(
            config,
            &env,
            table,
            &label,
            "replay > /dev/null",
            slow,
            &["replay", &p],
        );
        // (`replay --requests` only on the chain below: every request
        // carries the whole history so far, so the output of a session that
        // never compacted grows with the square of its length.)
        let script = script.to_string_lossy().into_owned();
        measure_log(
            config,
            &env,
            table,
            &label,
            "resume (-r FILE -p /quit)",
            slow,
            &[
                "-r",
                &p,
                "-p",
                "/quit",
                "--provider",
                "scripted",
                "--script",
                &script,
            ],
        );
        std::fs::remove_file(&path).ok();
    }

    let target = config.bytes(1024 * MB);
    let per_file = (target / 512).clamp(64 * 1024, 2 * MB);
    let started = Instant::now();
    let chain = write_chain(&dir, target, per_file).expect("writing the chain");
    let label = format!(
        "{:.0} MB chain of {} files",
        chain.bytes as f64 / MB as f64,
        chain.files.len()
    );
    println!(
        "\n== big log, a long session: {label} ({} turns; head file {:.1} MB) generated in {} s",
        chain.turns,
        file_size(chain.files.last().expect("a file")) as f64 / MB as f64,
        started.elapsed().as_secs()
    );
    let first = chain.files[0].to_string_lossy().into_owned();
    measure_log(
        config,
        &env,
        table,
        &label,
        "replay > /dev/null (whole chain)",
        true,
        &["replay", &first],
    );
    let script = script.to_string_lossy().into_owned();
    measure_log(
        config,
        &env,
        table,
        &label,
        "resume (-r FIRST -p /quit)",
        true,
        &[
            "-r",
            &first,
            "-p",
            "/quit",
            "--provider",
            "scripted",
            "--script",
            &script,
        ],
    );
    for f in &chain.files {
        std::fs::remove_file(f).ok();
    }

    // Every request carries the history so far, so `--requests` writes many
    // times the log (4 GB for the 1 GB chain, minutes): a chain a tenth
    // the size shows the same bounded memory.
    let chain = write_chain(&dir, target / 10, per_file).expect("writing the chain");
    let label = format!(
        "{:.0} MB chain of {} files",
        chain.bytes as f64 / MB as f64,
        chain.files.len()
    );
    println!("\n== a shorter long session: {label}");
    let first = chain.files[0].to_string_lossy().into_owned();
    measure_log(
        config,
        &env,
        table,
        &label,
        "replay --requests (whole chain)",
        true,
        &["replay", "--requests", &first],
    );
    for f in &chain.files {
        std::fs::remove_file(f).ok();
    }
}

pub(crate) fn measure_log(
    config: &Config,
    env: &Env,
    table: &mut Table,
    label: &str,
    what: &str,
    slow: bool,
    args: &[&str],
) {
    let runs = config.repeats(slow);
    // One untimed run (the file was just written, so the page cache holds
    // it already: a warm start either way).
    if !slow {
        env.run(args, &env.cwd);
    }
    let mut times = Vec::new();
    let mut peaks = Vec::new();
    for _ in 0..runs {
        let (took, peak) = env.run(args, &env.cwd);
        // Linux starts a child's ru_maxrss from its parent's resident size.
        if peak_rss().unwrap_or(0) >= peak {
            println!(
                "  note: the bench's own peak RSS ({} KB) may hide the child's ({peak} KB)",
                peak_rss().unwrap_or(0)
            );
        }
        times.push(took);
        peaks.push(peak);
    }
    let t = median(&mut times);
    peaks.sort_unstable();
    let peak = peaks[peaks.len() / 2];
    println!("{what}: median {} of {runs}, peak RSS {}", ms(t), mb(peak));
    table.row(&format!("{what}, {label}"), ms(t), mb(peak));
}

/// What went into a single big log.
pub(crate) struct Shape {
    pub(crate) turns: usize,
    pub(crate) pruned: usize,
    pub(crate) prunes: usize,
    /// The bytes of message text the fold keeps (after pruning).
    pub(crate) live: u64,
}

/// One session file: turns of a user message, a tool call, its result
/// (four in five of 20..120 KB, over [`compact::PRUNE_CHARS`]) and an answer;
/// whenever the big results not yet pruned pass [`PRUNE_AT`], a compaction that
/// pruned them and then failed to get its notes (`pruned`, `compacting`,
/// `compaction_failed`), so the session goes on in the same file.
pub(crate) fn write_pruned_log(path: &Path, target: u64) -> io::Result<Shape> {
    let mut rng = Rng(0x5eed_0000_0000_0009);
    let texts = Texts::new(&mut rng);
    let mut at = base_time();
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::remove_file(path).ok();
    let mut w = LogWriter::create(path)?;
    let id = stem(path);
    w.append(&Record::Header(header(&id, None, at)))?;
    w.append(&Record::Context(Context {
        at,
        system: texts.pick(&mut rng, 2_000).to_owned(),
        subagents: Vec::new(),
    }))?;
    let mut file = Turns::default();
    let mut shape = Shape {
        turns: 0,
        pruned: 0,
        prunes: 0,
        live: 0,
    };
    let mut written = 0u64;
    while written < target {
        let turn = file.turn(&mut w, &mut rng, &texts, &mut at)?;
        written += turn;
        if file.unpruned_bytes > PRUNE_AT {
            shape.pruned += file.unpruned.len();
            shape.prunes += 1;
            written += file.prune(&mut w, at, false)?;
        }
    }
    shape.turns = file.turns as usize;
    shape.live = file.live;
    Ok(shape)
}

/// The turns of one file, and what the fold will keep of them.
#[derive(Default)]
pub(crate) struct Turns {
    /// Messages in the history so far (the fold's indices).
    pub(crate) messages: u64,
    /// Big tool results not pruned yet, by index, and their bytes.
    pub(crate) unpruned: Vec<u64>,
    pub(crate) unpruned_bytes: usize,
    pub(crate) turns: u64,
    pub(crate) calls: u64,
    pub(crate) live: u64,
    pub(crate) totals: Totals,
}

impl Turns {
    /// Writes one turn; returns the bytes of text written (about the
    /// lines' size).
    pub(crate) fn turn(
        &mut self,
        w: &mut LogWriter,
        rng: &mut Rng,
        texts: &Texts,
        at: &mut OffsetDateTime,
    ) -> io::Result<u64> {
        *at += TimeDelta::seconds(20);
        let len = rng.log_uniform(100, 1_000);
        let user = texts.pick(rng, len);
        // Mostly big (a build log, a file read whole): pruned later.
        let len = if rng.below(5) == 0 {
            rng.log_uniform(500, 4_000)
        } else {
            rng.log_uniform(20_000, 120_000)
        };
        let result = texts.pick(rng, len);
        let len = rng.log_uniform(200, 3_000);
        let answer = texts.pick(rng, len);
        self.calls += 1;
        let id = format!("call_{}", self.calls);
        let call = ToolCall {
            id: id.clone(),
            name: "shell".into(),
            arguments: "{\"command\":\"cargo test --workspace\"}".into(),
        };
        w.append(&Record::Message(Message::user(*at, user)))?;
        let mut asks = Message::assistant(*at, "");
        asks.tool_calls = vec![call];
        w.append(&Record::Message(asks))?;
        w.append(&Record::Message(Message::tool(*at, id, result)))?;
        w.append(&Record::Message(Message::assistant(*at, answer)))?;
        if result.len() > compact::PRUNE_CHARS {
            self.unpruned.push(self.messages + 2);
            self.unpruned_bytes += result.len();
            self.live += compact::prune(result).len() as u64;
        } else {
            self.live += result.len() as u64;
        }
        self.messages += 4;
        self.live += (user.len() + answer.len() + 80) as u64;
        self.turns += 1;
        self.totals.at = Some(*at);
        self.totals.turns = self.turns;
        self.totals.requests += 2;
        self.totals.tokens_in += 8_000;
        self.totals.tokens_out += 400;
        self.totals.last_context = 60_000 + (self.unpruned_bytes as u64) / 4;
        w.append(&Record::Totals(self.totals.clone()))?;
        Ok((user.len() + result.len() + answer.len() + 600) as u64)
    }

    /// A compaction's first step (`pruned`) and its summary request
    /// (`compacting`); the notes fail unless `succeeds`. Returns about the
    /// bytes written.
    pub(crate) fn prune(
        &mut self,
        w: &mut LogWriter,
        at: OffsetDateTime,
        succeeds: bool,
    ) -> io::Result<u64> {
        let messages = std::mem::take(&mut self.unpruned);
        self.unpruned_bytes = 0;
        let n = messages.len() as u64;
        w.append(&Record::Pruned(Pruned {
            at,
            messages,
            estimate: 30_000,
            keep: 0,
        }))?;
        let cut = self.messages.saturating_sub(12);
        w.append(&Record::Compacting(Compacting {
            at,
            cut,
            from: 0,
            upto: 0,
            bare: false,
        }))?;
        if !succeeds {
            w.append(&Record::CompactionFailed(Failed {
                at,
                error: "HTTP 503 from http://127.0.0.1:8080/v1/chat/completions".into(),
            }))?;
        }
        Ok(200 + n * 8)
    }
}

/// A long session's files, oldest first.
pub(crate) struct Chain {
    pub(crate) files: Vec<PathBuf>,
    pub(crate) bytes: u64,
    pub(crate) turns: u64,
}

/// A session that compacted every `per_file` bytes: each file after the
/// first starts with `compacted` (notes and the last three turns kept), and
/// each but the last ends with `pruned`, `compacting` and `continued`.
pub(crate) fn write_chain(dir: &Path, target: u64, per_file: u64) -> io::Result<Chain> {
    let mut rng = Rng(0xc4a1_0000_0000_0001);
    let texts = Texts::new(&mut rng);
    let mut at = base_time();
    std::fs::create_dir_all(dir)?;
    let mut chain = Chain {
        files: Vec::new(),
        bytes: 0,
        turns: 0,
    };
    let mut prev: Option<String> = None;
    let mut carried = Totals::default();
    // Ids made one at a time: this process stays small (a child's peak
    // RSS starts from its parent's).
    for i in 0..100_000 {
        let id = format!("20261202-1{i:05}-{i:06x}");
        let path = dir.join(format!("{id}.jsonl"));
        std::fs::remove_file(&path).ok();
        let mut w = LogWriter::create(&path)?;
        let mut h = header(&id, Some("long-haul"), at);
        h.continues = prev.clone();
        w.append(&Record::Header(h))?;
        let mut file = Turns {
            totals: carried.clone(),
            turns: carried.turns,
            calls: chain.turns,
            ..Turns::default()
        };
        if let Some(from) = &prev {
            let kept: Vec<Message> = (0..3)
                .flat_map(|_| {
                    [
                        Message::user(at, texts.pick(&mut rng, 300)),
                        Message::assistant(at, texts.pick(&mut rng, 1_500)),
                    ]
                })
                .collect();
            file.messages = 1 + kept.len() as u64;
            w.append(&Record::Compacted(Compacted {
                at,
                from: from.clone(),
                summarized: 200,
                notes: texts.pick(&mut rng, 4_000).to_owned(),
                kept,
                totals: carried.clone(),
                pending: false,
                refined_at: None,
                turns_at_refine: 0,
                turn_rounds: 0,
                start_context: Vec::new(),
            }))?;
        }
        w.append(&Record::Context(Context {
            at,
            system: texts.pick(&mut rng, 2_000).to_owned(),
            subagents: Vec::new(),
        }))?;
        let mut written = 0;
        while written < per_file {
            written += file.turn(&mut w, &mut rng, &texts, &mut at)?;
            if file.unpruned_bytes > PRUNE_AT {
                written += file.prune(&mut w, at, false)?;
            }
        }
        chain.turns = file.turns;
        carried = file.totals.clone();
        chain.bytes += written;
        chain.files.push(path);
        if chain.bytes >= target {
            break;
        }
        file.prune(&mut w, at, true)?;
        let next = format!(
            "20261202-1{:05}-{:06x}",
            chain.files.len(),
            chain.files.len()
        );
        w.append(&Record::Continued(Continued {
            at,
            next: next.clone(),
        }))?;
        prev = Some(id);
    }
    chain.bytes = chain.files.iter().map(|f| file_size(f)).sum();
    Ok(chain)
}

// --- 2. many sessions -----------------------------------------------------
