//! Speed and memory at scale, measured on the release binary as a user runs
//! it (a child process per run; wall time from spawn to exit, peak RSS from
//! `wait4`'s `ru_maxrss`):
//!
//! 1. **Big logs**: `replay --check`, `replay` (transcript to /dev/null),
//!    `replay --requests` (on a chain of 100 MB) and a resume
//!    (`-r FILE -p /quit`) of
//!    * single session files of 10 MB, 100 MB and 1 GB whose big tool
//!      results were pruned in place now and then (`pruned` records of
//!      compactions whose notes never came), so the live history is a few
//!      percent of the file;
//!    * a long session of about 1 GB that compacted again and again: a chain
//!      of ~2 MB files, each ending with `continued` (its live history is
//!      one file's worth).
//! 2. **Many sessions**: `revolve sessions` and `revolve sessions --all` in a
//!    project of 100,000 session files (warm cache), and again right after
//!    one session's file changed.
//! 3. **Startup**: spawn to the first model request reaching a local server
//!    (`-p hi`, and `-p hi --name N`, which checks the name against every
//!    session's), and spawn to the REPL's first prompt on a pseudo-terminal
//!    (it allocates a generated name), with 10,000 sessions and 100 memory
//!    files.
//!
//! 4. **The window**: a resume of a 100 MB session whose history is all
//!    live (plain turns, nothing pruned) followed by one turn, against a
//!    fake server that enforces a 128k-token context and answers at once:
//!    the compaction that must come first (in pieces), the number of
//!    requests, the largest, whether any was refused, wall time and peak
//!    RSS.
//!
//! `cargo build --release && cargo bench --bench scale`. Sizes scale with
//! `REVOLVE_BENCH_SCALE` (`0.1` for a quick run); `REVOLVE_BENCH_ONLY=logs`,
//! `sessions` or `startup` runs one part; `REVOLVE_BENCH_BIN` measures
//! another binary (to compare before and after a change). Without
//! `--bench` (`cargo test --all-targets`) it is a tiny smoke run, and it
//! skips everything when there is no release binary. Files are generated
//! under the temp dir and removed afterwards (`REVOLVE_BENCH_KEEP=1` keeps
//! them). The bench process itself stays small: a child's `ru_maxrss`
//! starts from its parent's resident size at spawn on Linux.

mod common;

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{base_time, file_size, median, ms, peak_rss, repeat, Rng, Scratch};
use revolve_core::compact;
use revolve_core::record::{
    Compacted, Compacting, Context, Continued, Failed, Header, Message, Pruned, ToolCall, Totals,
};
use revolve_core::Record;
use revolve_io::log::LogWriter;
use revolve_io::paths::{Project, Roots};
use time::{Duration as TimeDelta, OffsetDateTime};

const MB: u64 = 1024 * 1024;
/// Big tool results not yet pruned that make a compaction prune them (a
/// context of ~40k tokens).
const PRUNE_AT: usize = 150 * 1024;

fn main() {
    let config = Config::from_env();
    println!(
        "scale bench: scale {}{}",
        config.scale,
        if config.smoke { " (smoke run)" } else { "" }
    );
    let Some(bin) = config.bin.clone() else {
        println!("no release binary: run `cargo build --release` first; nothing measured");
        return;
    };
    println!("binary: {}", bin.display());
    println!("load: {}", load());
    let scratch = Scratch::new("scale");
    let mut table = Table::default();
    if config.runs("logs") {
        logs(&config, &bin, &scratch, &mut table);
    }
    if config.runs("sessions") {
        sessions(&config, &bin, &scratch, &mut table);
    }
    if config.runs("startup") {
        startup(&config, &bin, &scratch, &mut table);
    }
    if config.runs("window") {
        window(&config, &bin, &scratch, &mut table);
    }
    drop(scratch);
    table.print(&config);
    println!("load: {}", load());
}

struct Config {
    scale: f64,
    smoke: bool,
    only: Option<String>,
    bin: Option<PathBuf>,
}

impl Config {
    fn from_env() -> Config {
        let (scale, smoke) = common::scale();
        let bin = std::env::var_os("REVOLVE_BENCH_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/revolve")
            });
        Config {
            scale,
            smoke,
            only: std::env::var("REVOLVE_BENCH_ONLY").ok(),
            bin: bin.is_file().then_some(bin),
        }
    }

    fn runs(&self, part: &str) -> bool {
        self.only.as_deref().is_none_or(|o| o == part)
    }

    fn bytes(&self, full: u64) -> u64 {
        ((full as f64 * self.scale) as u64).max(64 * 1024)
    }

    fn count(&self, full: usize) -> usize {
        ((full as f64 * self.scale) as usize).max(10)
    }

    /// Timed runs of one measurement: fewer for the slow ones.
    fn repeats(&self, slow: bool) -> usize {
        match (self.smoke, slow) {
            (true, _) => 1,
            (false, true) => 3,
            (false, false) => 11,
        }
    }
}

// --- 1. big logs ----------------------------------------------------------

fn logs(config: &Config, bin: &Path, scratch: &Scratch, table: &mut Table) {
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

fn measure_log(
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
struct Shape {
    turns: usize,
    pruned: usize,
    prunes: usize,
    /// The bytes of message text the fold keeps (after pruning).
    live: u64,
}

/// One session file: turns of a user message, a tool call, its result
/// (four in five of 20..120 KB, over [`compact::PRUNE_CHARS`]) and an answer;
/// whenever the big results not yet pruned pass [`PRUNE_AT`], a compaction that
/// pruned them and then failed to get its notes (`pruned`, `compacting`,
/// `compaction_failed`), so the session goes on in the same file.
fn write_pruned_log(path: &Path, target: u64) -> io::Result<Shape> {
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
struct Turns {
    /// Messages in the history so far (the fold's indices).
    messages: u64,
    /// Big tool results not pruned yet, by index, and their bytes.
    unpruned: Vec<u64>,
    unpruned_bytes: usize,
    turns: u64,
    calls: u64,
    live: u64,
    totals: Totals,
}

impl Turns {
    /// Writes one turn; returns the bytes of text written (about the
    /// lines' size).
    fn turn(
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
    fn prune(&mut self, w: &mut LogWriter, at: OffsetDateTime, succeeds: bool) -> io::Result<u64> {
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
struct Chain {
    files: Vec<PathBuf>,
    bytes: u64,
    turns: u64,
}

/// A session that compacted every `per_file` bytes: each file after the
/// first starts with `compacted` (notes and the last three turns kept), and
/// each but the last ends with `pruned`, `compacting` and `continued`.
fn write_chain(dir: &Path, target: u64, per_file: u64) -> io::Result<Chain> {
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
            }))?;
        }
        w.append(&Record::Context(Context {
            at,
            system: texts.pick(&mut rng, 2_000).to_owned(),
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

fn sessions(config: &Config, bin: &Path, scratch: &Scratch, table: &mut Table) {
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

struct Written {
    bytes: u64,
    named: usize,
    last_named: String,
}

/// `count` small sessions (a header, a context record, 1..3 short turns),
/// three in ten named.
fn write_sessions(env: &Env, count: usize) -> io::Result<Written> {
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
fn crate_word(i: usize) -> String {
    let w = revolve_core::names::WORDS;
    match i / w.len() {
        0 => w[i].to_owned(),
        round => format!("{}-{}", w[i % w.len()], round + 1),
    }
}

// --- 3. startup -----------------------------------------------------------

fn startup(config: &Config, bin: &Path, scratch: &Scratch, table: &mut Table) {
    let count = config.count(10_000);
    let env = Env::new(bin, &scratch.path("startup"));
    write_sessions(&env, count).expect("writing the sessions");
    // 100 memory files: 50 global, 50 of the project (~1 KB each).
    let mut rng = Rng(0x3e3e_0000_0000_0005);
    let texts = Texts::new(&mut rng);
    let config_root = env.root.join("config").join("task-agent");
    let slug = revolve_io::paths::slug(&env.cwd);
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
fn startup_row(table: &mut Table, what: &str, count: usize, mut times: Vec<Duration>) {
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

/// A model endpoint that notes when each request arrives and answers a
/// one-word stream.
struct Server {
    port: u16,
    arrivals: std::sync::mpsc::Receiver<Instant>,
}

impl Server {
    fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("binding");
        let port = listener.local_addr().expect("an address").port();
        let (tx, arrivals) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().expect("a clone"));
                let mut length = 0usize;
                let mut line = String::new();
                loop {
                    line.clear();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        break;
                    }
                    let lower = line.to_ascii_lowercase();
                    if let Some(v) = lower.strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap_or(0);
                    }
                    if line == "\r\n" {
                        break;
                    }
                }
                // The request is in: it reached the model.
                tx.send(Instant::now()).ok();
                let mut body = vec![0; length];
                reader.read_exact(&mut body).ok();
                let answer =
                    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"}}]}\n\n\
                              data: [DONE]\n\n";
                write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n{answer}"
                )
                .ok();
            }
        });
        Server { port, arrivals }
    }
}

// --- 4. the window --------------------------------------------------------

fn window(config: &Config, bin: &Path, scratch: &Scratch, table: &mut Table) {
    use revolve_testkit::{FakeProtocol, FakeReply, FakeServer, Limit, Overflows};
    let env = Env::new(bin, &scratch.path("window"));
    let path = env.sessions_dir().join("20261202-102606-000002.jsonl");
    let target = config.bytes(100 * MB);
    let started = Instant::now();
    let live = write_live_log(&path, target).expect("writing the log");
    let label = format!(
        "{:.0} MB all-live session",
        file_size(&path) as f64 / MB as f64
    );
    println!(
        "\n== the window: {label} (live history {:.1} MB) generated in {} s",
        live as f64 / MB as f64,
        started.elapsed().as_secs()
    );
    let tokens = 128_000;
    let limit = Limit {
        tokens,
        bytes_per_token: 4,
        says: Overflows::OpenAi,
        usage: true,
    };
    let notes =
        "Facts: the service listens on port 5432 on db1; the last turn asked for a summary.";
    let replies = vec![FakeReply::text(notes); 5_000];
    let server =
        FakeServer::start_limited(FakeProtocol::OpenAi, replies, Some(limit)).expect("fake server");
    let url = server.url();
    let p = path.to_string_lossy().into_owned();
    let (took, peak) = env.run(
        &[
            "-r",
            &p,
            "--base-url",
            &url,
            "--window",
            "128000",
            "-p",
            "one more turn",
        ],
        &env.cwd,
    );
    let sent = server.requests();
    let largest = sent.iter().map(|r| r.body.len()).max().unwrap_or(0);
    let refused = sent
        .iter()
        .filter(|r| (r.body.len() as u64).div_ceil(4) > tokens)
        .count();
    println!(
        "resume + one turn: {}, peak RSS {}; {} requests, the largest {} KB (~{} tokens), {refused} refused",
        ms(took),
        mb(peak),
        sent.len(),
        largest / 1024,
        largest / 4
    );
    println!(
        "  peak RSS is {:.1}x the live history",
        (peak * 1024) as f64 / live.max(1) as f64
    );
    table.row(
        &format!(
            "{label}: resume + one turn under 128k ({} requests, {refused} refused)",
            sent.len()
        ),
        ms(took),
        mb(peak),
    );
    std::fs::remove_file(&path).ok();
}

/// A session of plain turns (a question, a long answer), nothing pruned:
/// its whole history is live. Returns the bytes of message text.
fn write_live_log(path: &Path, target: u64) -> io::Result<u64> {
    let mut rng = Rng(0x5eed_0000_0000_0016);
    let words = [
        "the",
        "service",
        "listens",
        "on",
        "port",
        "5432",
        "and",
        "db1",
        "holds",
        "the",
        "schema",
        "migration",
        "ran",
        "in",
        "src/db.rs",
        "tests",
        "pass",
        "after",
        "fix",
    ];
    let mut at = base_time();
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::remove_file(path).ok();
    let mut w = LogWriter::create(path)?;
    w.append(&Record::Header(header(&stem(path), None, at)))?;
    let (mut written, mut live) = (0u64, 0u64);
    let mut turn = 0u64;
    while written < target {
        let question = format!("question {turn}: what changed in src/db.rs?");
        let mut answer = String::with_capacity(24 * 1024);
        while answer.len() < 24 * 1024 {
            answer.push_str(words[rng.below(words.len() as u64) as usize]);
            answer.push(' ');
        }
        for m in [Message::user(at, question), Message::assistant(at, answer)] {
            live += m.content.len() as u64;
            let r = Record::Message(m);
            written += r.to_line().len() as u64 + 1;
            w.append(&r)?;
        }
        at += TimeDelta::seconds(1);
        turn += 1;
    }
    w.append(&Record::Totals(Totals {
        at: Some(at),
        turns: turn,
        requests: turn,
        ..Totals::default()
    }))?;
    w.sync()?;
    Ok(live)
}

// --- running the binary ---------------------------------------------------

/// A temp HOME, XDG roots and working directory for the binary.
struct Env {
    bin: PathBuf,
    root: PathBuf,
    cwd: PathBuf,
}

impl Env {
    fn new(bin: &Path, root: &Path) -> Env {
        let cwd = root.join("work");
        std::fs::create_dir_all(&cwd).expect("creating the cwd");
        let cwd = cwd.canonicalize().expect("a canonical cwd");
        Env {
            bin: bin.to_path_buf(),
            root: root.canonicalize().expect("a canonical root"),
            cwd,
        }
    }

    fn sessions_dir(&self) -> PathBuf {
        let roots = Roots {
            state: self.root.join("state").join("task-agent"),
            config: self.root.join("config").join("task-agent"),
        };
        roots.sessions(&Project::from_key(self.cwd.clone()))
    }

    fn command(&self, args: &[&str], cwd: &Path) -> Command {
        let mut cmd = Command::new(&self.bin);
        cmd.args(args)
            .current_dir(cwd)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.root.join("home"))
            .env("XDG_STATE_HOME", self.root.join("state"))
            .env("XDG_CONFIG_HOME", self.root.join("config"))
            .env("XDG_DATA_HOME", self.root.join("data"))
            .env("XDG_CACHE_HOME", self.root.join("cache"))
            .env("GIT_CEILING_DIRECTORIES", &self.root)
            .env("REVOLVE_NO_AUTO_REFINE", "1")
            .stdin(Stdio::null());
        cmd
    }

    /// One run, stdout and stderr to /dev/null: its wall time and peak RSS
    /// (KB). Panics when it fails.
    // Reaped by `wait` (wait4), which std's `Child` does not offer.
    #[allow(clippy::zombie_processes)]
    fn run(&self, args: &[&str], cwd: &Path) -> (Duration, u64) {
        let t = Instant::now();
        let child = self
            .command(args, cwd)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("running revolve");
        let (code, peak) = wait(child.id());
        let took = t.elapsed();
        if code != 0 {
            let out = self.command(args, cwd).output().expect("running revolve");
            panic!(
                "revolve {args:?} exited with {code}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        (took, peak)
    }

    /// Spawn to the first request reaching `server`.
    fn first_request(&self, server: &Server, args: &[&str]) -> Duration {
        while server.arrivals.try_recv().is_ok() {}
        let t = Instant::now();
        let child = self
            .command(args, &self.cwd)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("running revolve");
        let arrived = server
            .arrivals
            .recv_timeout(Duration::from_secs(30))
            .expect("a request within 30 s");
        let out = child.wait_with_output().expect("waiting for revolve");
        assert!(
            out.status.success(),
            "revolve {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        arrived.duration_since(t)
    }

    /// Spawn to the REPL's first prompt (`› `) on a pseudo-terminal; the
    /// REPL is then ended with Ctrl-D.
    fn first_prompt(&self, url: &str) -> Duration {
        let mut cmd = self.command(&["--base-url", url], &self.cwd);
        cmd.env("TERM", "xterm");
        let t = Instant::now();
        let (mut child, mut master) = pty::spawn(&mut cmd, 80, 24).expect("running revolve");
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        let took = loop {
            let n = master.read(&mut buf).unwrap_or(0);
            assert!(
                n > 0,
                "the REPL ended before its prompt: {}",
                String::from_utf8_lossy(&seen)
            );
            seen.extend_from_slice(&buf[..n]);
            if seen.windows(4).any(|w| w == "› ".as_bytes()) {
                break t.elapsed();
            }
        };
        master.write_all(b"\x04").ok();
        // Drained until the child closes its side, so it never blocks on
        // a full terminal.
        while master.read(&mut buf).is_ok_and(|n| n > 0) {}
        child.wait().expect("waiting for revolve");
        took
    }

    /// The turns `revolve sessions` lists for `name`.
    fn listed_turns(&self, name: &str) -> Option<u64> {
        let out = self
            .command(&["sessions", "--json"], &self.cwd)
            .output()
            .expect("running revolve");
        let list: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        list.as_array()?
            .iter()
            .find(|s| s["name"] == name)
            .and_then(|s| s["turns"].as_u64())
    }
}

/// The tests' pseudo-terminal helper (rustix; std has none).
#[path = "../tests/common/pty.rs"]
mod pty;

/// Waits for a child and returns its exit code (128 + the signal when a
/// signal ended it) and peak RSS in KB. std's `Child` offers no resource
/// usage, nor nix a `wait4`: the libc crate's binding, which nix re-exports.
/// `getrusage(RUSAGE_CHILDREN)` would not do: its peak is the largest of
/// every child waited for so far, not this one's.
fn wait(pid: u32) -> (i32, u64) {
    use nix::libc;
    use nix::sys::wait::WaitStatus;
    use nix::unistd::Pid;
    let pid = Pid::from_raw(pid as i32);
    let mut status = 0;
    // SAFETY: an all-zero `rusage` is a valid value (plain integers).
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `wait4` writes only the two out-parameters, which are valid
    // for writes and live across the call; `rusage` is the libc crate's.
    let r = unsafe { libc::wait4(pid.as_raw(), &mut status, 0, &mut usage) };
    assert_eq!(r, pid.as_raw(), "wait4: {}", io::Error::last_os_error());
    let code = match WaitStatus::from_raw(pid, status) {
        Ok(WaitStatus::Exited(_, code)) => code,
        Ok(WaitStatus::Signaled(_, signal, _)) => 128 + signal as i32,
        other => panic!("wait4: {other:?}"),
    };
    // `ru_maxrss` is in kilobytes on Linux, in bytes on macOS.
    let maxrss = u64::try_from(usage.ru_maxrss).unwrap_or(0);
    #[cfg(target_os = "macos")]
    let maxrss = maxrss / 1024;
    (code, maxrss)
}

// --- generated content ----------------------------------------------------

fn header(id: &str, name: Option<&str>, started: OffsetDateTime) -> Header {
    Header {
        version: revolve_core::record::FORMAT_VERSION,
        id: id.into(),
        name: name.map(str::to_owned),
        named: name.is_some(),
        cwd: "/home/me/src/app".into(),
        project: "/home/me/src/app".into(),
        started,
        model: "gpt-4o-mini".into(),
        window: 128_000,
        provider: "openai".into(),
        continues: None,
    }
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Pre-generated prose (code, quotes, escapes, non-ASCII text), sliced at
/// random offsets: generating a gigabyte word by word would dominate the
/// bench.
struct Texts {
    pool: String,
}

impl Texts {
    fn new(rng: &mut Rng) -> Texts {
        const WORDS: &[&str] = &[
            "the",
            "session",
            "log",
            "is",
            "append-only",
            "and",
            "each",
            "line",
            "record",
            "fold",
            "state",
            "resume",
            "file",
            "error",
            "returns",
            "value",
            "check",
            "test",
            "passes",
            "naïve",
            "café",
            "→",
            "日本語",
            "🙂",
            "\"quoted\"",
            "C:\\Users\\me",
            "`cargo test`",
            "\t",
            "\u{1b}[31mred\u{1b}[0m",
            "a/b/c.rs:42",
            "\n",
            "\n\n",
            "{",
            "}",
        ];
        let mut pool = String::with_capacity(256 * 1024);
        while pool.len() < 256 * 1024 {
            pool.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
            pool.push(' ');
        }
        Texts { pool }
    }

    /// About `len` bytes (at most the pool), from a random offset.
    fn pick(&self, rng: &mut Rng, len: usize) -> &str {
        let len = len.min(self.pool.len() / 2);
        let mut start = rng.below((self.pool.len() - len) as u64) as usize;
        while !self.pool.is_char_boundary(start) {
            start -= 1;
        }
        let mut end = start + len;
        while !self.pool.is_char_boundary(end) {
            end -= 1;
        }
        &self.pool[start..end]
    }
}

// --- reporting ------------------------------------------------------------

fn mb(kb: u64) -> String {
    format!("{:.1} MB", kb as f64 / 1024.0)
}

/// The load average, as `uptime` shows it.
fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

#[derive(Default)]
struct Table {
    rows: Vec<(String, String, String)>,
}

impl Table {
    fn row(&mut self, what: &str, time: String, rss: String) {
        self.rows.push((what.to_owned(), time, rss));
    }

    fn print(&self, config: &Config) {
        let w = self
            .rows
            .iter()
            .map(|r| r.0.chars().count())
            .max()
            .unwrap_or(0);
        println!("\n== summary (scale {}; medians)", config.scale);
        println!("{:w$}  {:>10}  {:>10}", "FIGURE", "TIME", "PEAK RSS");
        for (what, time, rss) in &self.rows {
            println!("{what:w$}  {time:>10}  {rss:>10}");
        }
    }
}
