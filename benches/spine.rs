//! The spine's performance: resuming a large session log, listing a project
//! folder of many sessions, appending one message.
//!
//! `cargo bench --bench spine` runs every figure at full size (a 100 MB log,
//! 10,000 session files, 10,000 appends) and ends with a table of figures,
//! targets and PASS/FAIL. `REVOLVE_BENCH_SCALE=0.1` shrinks every size for a
//! quick run (the targets stay those of the full size). Run without
//! `--bench` (as `cargo test --all-targets` does) it is a tiny smoke run.
//!
//! Std only: `Instant` for time, a folder under `std::env::temp_dir()` that is
//! removed afterwards, `/proc/self/status` for the peak RSS. Every figure is
//! the median of several runs; the files are freshly written, so reads hit
//! the page cache (a warm start, not a cold one).
//!
//! The end-to-end `revolve sessions --all` figure needs a release binary at
//! `target/release/revolve` (`cargo build --release` first); it is skipped
//! with a note otherwise. `REVOLVE_BENCH_KEEP=1` keeps the generated files
//! (for a profiler) instead of removing them.

mod common;

use std::fs::File;
use std::hint::black_box;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{base_time, file_size, median, ms, peak_rss, repeat, Rng, Scratch};
use revolve_core::record::{
    Context, Failed, Header, Interrupted, Message, Renamed, Resumed, Totals,
};
use revolve_core::{Record, State};
use revolve_io::log::{self, LogWriter};
use revolve_io::paths::{Project, Roots};
use revolve_io::store::Store;
use time::{Duration as TimeDelta, OffsetDateTime};

const MB: f64 = 1024.0 * 1024.0;

fn main() {
    let config = Config::from_env();
    println!(
        "spine bench: scale {}{}",
        config.scale,
        if config.smoke {
            " (smoke run: no --bench argument)"
        } else {
            ""
        }
    );
    let scratch = Scratch::new("spine");
    let mut table = Table::default();
    resume(&config, &scratch, &mut table);
    sessions(&config, &scratch, &mut table);
    append(&config, &scratch, &mut table);
    drop(scratch);
    table.print(&config);
}

/// Sizes, scaled by `REVOLVE_BENCH_SCALE`.
struct Config {
    scale: f64,
    smoke: bool,
}

impl Config {
    fn from_env() -> Config {
        let (scale, smoke) = common::scale();
        Config { scale, smoke }
    }

    fn scaled(&self, full: f64, min: f64) -> f64 {
        (full * self.scale).max(min)
    }

    fn count(&self, full: usize, min: usize) -> usize {
        ((full as f64 * self.scale) as usize).max(min)
    }
}

// --- 1. resume ------------------------------------------------------------

fn resume(config: &Config, scratch: &Scratch, table: &mut Table) {
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
    assert_eq!(state.messages.len(), shape.messages);
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
        let transcript = revolve_core::view::transcript(&records);
        black_box((state.messages.len(), records.len(), transcript.len()))
    }));
    let live_peak = peak_rss();
    let (_, records) = live_resume(&path);
    let transcript = median(&mut repeat(few, || {
        black_box(revolve_core::view::transcript(&records).len())
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
fn fold(path: &Path) -> (State, usize, usize) {
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
fn live_resume(path: &Path) -> (State, Vec<Record>) {
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
fn baseline(path: &Path) -> usize {
    let mut n = 0;
    each_line(path, |line| {
        let value: serde_json::Value = serde_json::from_str(line).expect("valid JSON");
        black_box(&value);
        n += 1;
    });
    n
}

/// Reading alone: lines and their UTF-8 check.
fn read_lines(path: &Path) -> usize {
    let mut bytes = 0;
    each_line(path, |line| bytes += line.len());
    bytes
}

/// Reading and parsing into records, without folding.
fn parse_records(path: &Path) -> usize {
    let mut n = 0;
    each_line(path, |line| {
        black_box(Record::parse_line(line).expect("a record"));
        n += 1;
    });
    n
}

/// `each_record`'s reading loop, with `line` called on each non-blank line.
fn each_line(path: &Path, mut line: impl FnMut(&str)) {
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
struct Shape {
    lines: usize,
    turns: usize,
    messages: usize,
}

/// A header, a context record, then turns (a user message, an assistant
/// answer of 200 B..20 KB, a totals record), with now and then a failure, an
/// interruption, a resume or a rename, until the file holds `target` bytes.
fn write_big_log(path: &Path, target: u64) -> io::Result<Shape> {
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

fn sessions(config: &Config, scratch: &Scratch, table: &mut Table) {
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
fn head_and_tail(dir: &Path, offset: usize, share: usize) -> usize {
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
fn write_sessions(store: &Store, count: usize) -> io::Result<(u64, usize)> {
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
struct BinEnv {
    bin: PathBuf,
    vars: Vec<(&'static str, PathBuf)>,
}

impl BinEnv {
    fn new(bin: &Path, root: &Path) -> BinEnv {
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

    fn command(&self, cwd: &Path) -> Command {
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
    fn run(&self, cwd: &Path) -> Duration {
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

    fn lines_listed(&self, cwd: &Path) -> usize {
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
fn newer_source(bin: &Path) -> Option<PathBuf> {
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

fn append(config: &Config, scratch: &Scratch, table: &mut Table) {
    let n = config.count(10_000, 100);
    let n_sync = config.count(1_000, 20);
    let mut rng = Rng(0xa99e_0d00_0000_0003);
    let at = base_time();
    // Typical user messages of about 200 bytes as a line, built beforehand.
    let messages: Vec<Record> = (0..64)
        .map(|_| {
            let len = 110 + rng.below(40) as usize;
            Record::Message(Message::user(at, text(&mut rng, len)))
        })
        .collect();
    let line_len = messages
        .iter()
        .map(|r| r.to_line().len() + 1)
        .sum::<usize>()
        / messages.len();

    let path = scratch.path("append/a.jsonl");
    let mut w = LogWriter::create(&path).expect("creating the log");
    w.append(&Record::Header(header("a", "amber", false, "/w", at)))
        .expect("appending");
    let mut times = Vec::with_capacity(n);
    for i in 0..n {
        let r = &messages[i % messages.len()];
        let t = Instant::now();
        w.append(r).expect("appending");
        times.push(t.elapsed());
    }
    let no_sync = median(&mut times);
    let p99 = percentile(&times, 0.99);
    let mean = times.iter().sum::<Duration>() / n as u32;
    println!(
        "\n== 3. append\nappend one ~{line_len} B user message, no fsync: median {} \
         (p99 {}, mean {}, {n} appends timed one by one; target < 0.2 ms)",
        ms(no_sync),
        ms(p99),
        ms(mean)
    );

    let mut times = Vec::with_capacity(n_sync);
    for i in 0..n_sync {
        let r = &messages[i % messages.len()];
        let t = Instant::now();
        w.append(r).expect("appending");
        w.sync().expect("syncing");
        times.push(t.elapsed());
    }
    let synced = median(&mut times);
    println!(
        "append + sync() (fdatasync) each: median {} (p99 {}, {n_sync} appends)",
        ms(synced),
        ms(percentile(&times, 0.99))
    );
    table.row(
        &format!("append ~{line_len} B message, no fsync"),
        ms(no_sync),
        "< 0.2 ms",
        Some(no_sync < Duration::from_micros(200)),
    );
    table.row("append + fsync", ms(synced), "-", None);
}

// --- generated content ----------------------------------------------------

fn header(id: &str, name: &str, named: bool, cwd: &str, started: OffsetDateTime) -> Header {
    Header {
        version: revolve_core::record::FORMAT_VERSION,
        id: id.into(),
        name: Some(name.into()),
        named,
        cwd: cwd.into(),
        project: cwd.into(),
        started,
        model: "gpt-4o-mini".into(),
        window: 128_000,
        provider: "openai".into(),
        continues: None,
    }
}

fn system_prompt(rng: &mut Rng) -> String {
    let mut s = String::from(
        "You are revolve, a terminal agent. Answer briefly; quote paths \"as is\".\n\n",
    );
    s.push_str(&text(rng, 1_500));
    s
}

/// Prose with code, paths, quotes, backslashes, tabs, newlines, non-ASCII
/// text and the odd control character, about `len` bytes long.
fn text(rng: &mut Rng, len: usize) -> String {
    const WORDS: &[&str] = &[
        "the",
        "session",
        "log",
        "is",
        "append-only",
        "and",
        "each",
        "line",
        "a",
        "record",
        "fold",
        "state",
        "resume",
        "file",
        "error",
        "function",
        "returns",
        "value",
        "we",
        "should",
        "check",
        "whether",
        "test",
        "passes",
        "config",
        "path",
        "struct",
        "field",
        "because",
        "then",
        "with",
        "without",
        "lock",
        "name",
        "turn",
        "tokens",
        "window",
    ];
    const ODD: &[&str] = &[
        "naïve",
        "café",
        "→",
        "—",
        "日本語のテキスト",
        "🙂",
        "Ωmega",
        "\"quoted\"",
        "C:\\Users\\me\\src",
        "`cargo test`",
        "ß",
        "…",
        "\t",
        "\u{1b}[31mred\u{1b}[0m",
        "'single'",
        "a/b/c.rs:42",
    ];
    let mut s = String::with_capacity(len + 32);
    while s.len() < len {
        match rng.below(100) {
            0..=2 => s.push_str("\n\n"),
            3 => s.push_str("\n```rust\nfn main() {\n    println!(\"{}\\n\", \"hi\");\n}\n```\n"),
            4..=9 => s.push_str(ODD[rng.below(ODD.len() as u64) as usize]),
            10..=12 => s.push_str(". "),
            _ => s.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]),
        }
        s.push(' ');
    }
    let mut end = len.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.truncate(end);
    s
}

// --- measuring and reporting ---------------------------------------------

/// `times` must be sorted (as `median` leaves it).
fn percentile(times: &[Duration], p: f64) -> Duration {
    let i = ((times.len() as f64 * p) as usize).min(times.len() - 1);
    times[i]
}

fn min(times: &[Duration]) -> Duration {
    times.iter().copied().min().unwrap_or_default()
}

fn max(times: &[Duration]) -> Duration {
    times.iter().copied().max().unwrap_or_default()
}

/// Resets VmHWM to the current RSS (Linux: `5` into `clear_refs`).
fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// The figures, printed as a table at the end.
#[derive(Default)]
struct Table {
    rows: Vec<(String, String, String, Option<bool>)>,
}

impl Table {
    fn row(&mut self, what: &str, value: String, target: &str, pass: Option<bool>) {
        self.rows
            .push((what.to_owned(), value, target.to_owned(), pass));
    }

    fn print(&self, config: &Config) {
        let w0 = self
            .rows
            .iter()
            .map(|r| r.0.chars().count())
            .max()
            .unwrap_or(0);
        let w1 = self
            .rows
            .iter()
            .map(|r| r.1.chars().count())
            .max()
            .unwrap_or(0);
        let w2 = self
            .rows
            .iter()
            .map(|r| r.2.chars().count())
            .max()
            .unwrap_or(0);
        println!("\n== summary (scale {})", config.scale);
        println!(
            "{:w0$}  {:w1$}  {:w2$}  RESULT",
            "FIGURE", "VALUE", "TARGET"
        );
        for (what, value, target, pass) in &self.rows {
            let result = match pass {
                Some(true) => "PASS",
                Some(false) => "FAIL",
                None => "-",
            };
            println!("{what:w0$}  {value:w1$}  {target:w2$}  {result}");
        }
        if config.scale != 1.0 {
            println!("(scaled run: the targets are for the full sizes)");
        }
    }
}
