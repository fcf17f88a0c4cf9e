use super::*;

pub(crate) fn resume(config: &Config, scratch: &Scratch, table: &mut Table) {
    let target_bytes = config.scaled(100.0 * MB, 64.0 * 1024.0) as u64;
    let path = scratch.path("resume/big.jsonl");
    let started = Instant::now();
    let shape = write_big_log(&path, target_bytes).expect("writing the big log");
    let size = file_size(&path);
    println!(
        "\n== 1. resume: generated {:.1} MB, {} lines ({} turns, {} messages) in {} ms",
        size as f64 / MB,
        shape.lines,
        shape.turns,
        shape.messages,
        started.elapsed().as_millis()
    );

    // Sanity: the fold sees every line and skips none.
    let (state, records, skipped) = fold(&path);
    assert_eq!(records, shape.lines, "every line is a record");
    assert_eq!(skipped, 0, "no line is skipped");
    assert_eq!(state.messages().len(), shape.messages);
    drop(state);

    let peak_reset = reset_peak_rss();
    let runs = if size as f64 > 50.0 * MB { 11 } else { 15 };
    // One untimed run to settle the page cache and the allocator, then the
    // fold, the baseline and, to see where time goes, reading alone and
    // reading + parsing into records, in turn, so that drift (this machine is
    // shared) hits all four alike.
    black_box(baseline(&path));
    let (mut fold_times, mut value_times) = (Vec::new(), Vec::new());
    let (mut read_times, mut parse_times) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let t = Instant::now();
        let (state, records, _) = fold(&path);
        fold_times.push(t.elapsed());
        black_box(records);
        drop(state); // Freeing the state is not part of a resume.

        let t = Instant::now();
        black_box(baseline(&path));
        value_times.push(t.elapsed());

        let t = Instant::now();
        black_box(read_lines(&path));
        read_times.push(t.elapsed());

        let t = Instant::now();
        black_box(parse_records(&path));
        parse_times.push(t.elapsed());
    }
    let peak = peak_rss();
    let fold_median = median(&mut fold_times);
    let value_median = median(&mut value_times);
    let ratio = fold_median.as_secs_f64() / value_median.as_secs_f64();
    let label = format!("resume {:.0} MB log", size as f64 / MB);
    println!(
        "{label}: median {} (serde_json::Value parse: {}, ratio {ratio:.2}, target <= 2.0) \
         [{runs} runs each; fold min/max {}/{}, Value min/max {}/{}]",
        ms(fold_median),
        ms(value_median),
        ms(min(&fold_times)),
        ms(max(&fold_times)),
        ms(min(&value_times)),
        ms(max(&value_times)),
    );
    println!(
        "  throughput: fold {:.0} MB/s, Value {:.0} MB/s",
        size as f64 / MB / fold_median.as_secs_f64(),
        size as f64 / MB / value_median.as_secs_f64()
    );
    let rss_note = if peak_reset {
        "peak reset before the resume runs"
    } else {
        "cumulative: /proc/self/clear_refs was not writable"
    };
    println!(
        "peak RSS after resume: {} (VmHWM, {rss_note}); file size {:.1} MB ({size} bytes)",
        peak.map_or("unknown".to_owned(), |kb| format!(
            "{:.1} MB",
            kb as f64 / 1024.0
        )),
        size as f64 / MB,
    );
    table.row(
        &format!("{label}: fold / Value ratio"),
        format!("{ratio:.2} ({} vs {})", ms(fold_median), ms(value_median)),
        "<= 2.0",
        Some(ratio <= 2.0),
    );
    table.row(
        "peak RSS after resume",
        peak.map_or("unknown".to_owned(), |kb| {
            format!("{:.1} MB", kb as f64 / 1024.0)
        }),
        "-",
        None,
    );
    table.row(
        "resume log size",
        format!("{:.1} MB", size as f64 / MB),
        "-",
        None,
    );

    let read_only = median(&mut read_times);
    let parse_only = median(&mut parse_times);
    println!(
        "  breakdown (medians of the same {runs} rounds): reading lines + UTF-8 check {}; \
         + Record::parse_line {} (parse ~{}); + State::apply = the fold (apply ~{}); \
         the baseline's Value parse ~{}",
        ms(read_only),
        ms(parse_only),
        ms(parse_only.saturating_sub(read_only)),
        ms(fold_median.saturating_sub(parse_only)),
        ms(value_median.saturating_sub(read_only)),
    );

    // Resumed the way `Live::resume` does it, which also keeps every record
    // and renders the transcript it prints.
    let few = 5;
    let peak_reset = reset_peak_rss();
    let live = median(&mut repeat(few, || {
        let (state, records) = live_resume(&path);
        let transcript = revolve_view::transcript(&records);
        black_box((state.messages().len(), records.len(), transcript.len()))
    }));
    let live_peak = peak_rss();
    let (_, records) = live_resume(&path);
    let transcript = median(&mut repeat(few, || {
        black_box(revolve_view::transcript(&records).len())
    }));
    drop(records);
    println!(
        "  as Live::resume does it (fold, keep every record, render view::transcript, not \
         printed): median {} of {few} (transcript alone {}); peak RSS {}{}",
        ms(live),
        ms(transcript),
        live_peak.map_or("unknown".to_owned(), |kb| format!(
            "{:.1} MB",
            kb as f64 / 1024.0
        )),
        if peak_reset { "" } else { " (cumulative)" }
    );
}

/// What `--resume` does with a file: fold every record into the state.
pub(crate) fn fold(path: &Path) -> (State, usize, usize) {
    let mut state = State::default();
    let (mut records, mut skipped) = (0, 0);
    log::each_record(
        path,
        |_, r| {
            state.apply(&r);
            records += 1;
        },
        |_| skipped += 1,
    )
    .expect("reading the log");
    (state, records, skipped)
}

/// `Live::resume`: the fold, and every record kept for the transcript.
pub(crate) fn live_resume(path: &Path) -> (State, Vec<Record>) {
    let mut state = State::default();
    let mut records = Vec::new();
    log::each_record(
        path,
        |_, r| {
            state.apply(&r);
            records.push(r);
        },
        |_| {},
    )
    .expect("reading the log");
    (state, records)
}

/// The baseline: the same lines, each parsed into a `serde_json::Value`,
/// read the same way `each_record` reads them.
pub(crate) fn baseline(path: &Path) -> usize {
    let mut n = 0;
    each_line(path, |line| {
        let value: serde_json::Value = serde_json::from_str(line).expect("valid JSON");
        black_box(&value);
        n += 1;
    });
    n
}

/// Reading alone: lines and their UTF-8 check.
pub(crate) fn read_lines(path: &Path) -> usize {
    let mut bytes = 0;
    each_line(path, |line| bytes += line.len());
    bytes
}

/// Reading and parsing into records, without folding.
pub(crate) fn parse_records(path: &Path) -> usize {
    let mut n = 0;
    each_line(path, |line| {
        black_box(Record::parse_line(line).expect("a record"));
        n += 1;
    });
    n
}

/// `each_record`'s reading loop, with `line` called on each non-blank line.
pub(crate) fn each_line(path: &Path, mut line: impl FnMut(&str)) {
    let file = File::open(path).expect("opening the log");
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        if reader.read_until(b'\n', &mut buf).expect("reading the log") == 0 {
            break;
        }
        let text = std::str::from_utf8(&buf).expect("UTF-8");
        if !text.trim().is_empty() {
            line(text);
        }
    }
}

/// What went into the big log.
pub(crate) struct Shape {
    pub(crate) lines: usize,
    pub(crate) turns: usize,
    pub(crate) messages: usize,
}

/// A header, a context record, then turns (a user message, an assistant
/// answer of 200 B..20 KB, a totals record), with now and then a failure, an
/// interruption, a resume or a rename, until the file holds `target` bytes.
pub(crate) fn write_big_log(path: &Path, target: u64) -> io::Result<Shape> {
    let mut rng = Rng(0x5eed_1234_abcd_ef01);
    let mut at = base_time();
    let mut w = LogWriter::create(path)?;
    let cwd = "/home/me/src/app";
    w.append(&Record::Header(header(
        "20261202-102606-1a2b3c",
        "amber",
        false,
        cwd,
        at,
    )))?;
    w.append(&Record::Context(Context {
        at,
        system: system_prompt(&mut rng),
        subagents: Vec::new(),
    }))?;
    let mut shape = Shape {
        lines: 2,
        turns: 0,
        messages: 0,
    };
    let mut totals = Totals {
        name: Some("amber".into()),
        ..Totals::default()
    };
    let mut since_check = 0u64;
    loop {
        at += TimeDelta::seconds(5 + rng.below(120) as i64);
        let user_len = rng.log_uniform(40, 2_000);
        let user = text(&mut rng, user_len);
        since_check += user.len() as u64;
        w.append(&Record::Message(Message::user(at, user)))?;
        shape.lines += 1;
        shape.messages += 1;
        at += TimeDelta::seconds(1 + rng.below(30) as i64);
        match rng.below(100) {
            0 => {
                w.append(&Record::Failed(Failed {
                    at,
                    error: "HTTP 503 from http://127.0.0.1:8080/v1/chat/completions".into(),
                }))?;
                shape.lines += 1;
                continue;
            }
            1 => {
                w.append(&Record::Interrupted(Interrupted { at, unsent: false }))?;
                shape.lines += 1;
                continue;
            }
            _ => {}
        }
        let answer_len = rng.log_uniform(200, 20_000);
        let answer = text(&mut rng, answer_len);
        since_check += answer.len() as u64;
        w.append(&Record::Message(Message::assistant(at, answer)))?;
        shape.lines += 1;
        shape.messages += 1;
        shape.turns += 1;
        totals.at = Some(at);
        totals.turns += 1;
        totals.tokens_in += 800 + rng.below(4_000);
        totals.tokens_out += 50 + rng.below(2_000);
        totals.last_context = 1_000 + rng.below(100_000);
        totals.estimated = rng.below(10) == 0;
        w.append(&Record::Totals(totals.clone()))?;
        shape.lines += 1;
        if shape.turns.is_multiple_of(500) {
            w.append(&Record::Resumed(Resumed {
                at,
                model: "gpt-4o-mini".into(),
                window: 128_000,
                provider: "openai".into(),
            }))?;
            shape.lines += 1;
        }
        if shape.turns == 1_000 {
            w.append(&Record::Renamed(Renamed {
                at,
                name: "login-bug".into(),
                generated: false,
            }))?;
            totals.name = Some("login-bug".into());
            totals.named = true;
            shape.lines += 1;
        }
        // Checking the size costs a stat; do it every ~256 KB of text.
        if since_check > 256 * 1024 {
            since_check = 0;
            if w.path().metadata()?.len() >= target {
                break;
            }
        }
    }
    Ok(shape)
}

// --- 2. sessions ----------------------------------------------------------
