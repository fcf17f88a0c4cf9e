//! What a compaction and the refinement after it send: model requests and
//! their input tokens, each estimated the way core estimates a request
//! (`compact::estimate` of its body bytes, uncalibrated: 4 bytes a token,
//! which is also how testkit's limited fake server counts).
//!
//! 1. **Compaction of one window** (`REVOLVE_BENCH_ONLY=window`), in
//!    process: the core session machine (`Session`) resumed on a history of
//!    plain turns that has just reached the compaction point of a 4k, 32k
//!    and 128k window, given one more user turn; its `Summarize` commands
//!    are answered with canned notes until the turn's request goes out.
//!    Nothing of io runs: these are core's decisions.
//! 2. **Resume of a ~100 MB session under 128k** (`REVOLVE_BENCH_ONLY=resume`):
//!    the release binary (`-r FILE --window 128000 -p TURN`, automatic
//!    refinement on) against testkit's fake server with a 128k-token
//!    context, answering every request with the same notes. Its requests
//!    are sorted by what they ask for: summary pieces (the compaction), the
//!    turn, the refinement (one user message ending with
//!    `refine::PROMPT`). Wall time from spawn to exit, median of the runs.
//!    The fake keeps its connections, as real servers do; each run is
//!    done twice side by side, against the fake as it is (Nagle on, as in
//!    most servers) and with `TCP_NODELAY` ([`FakeOptions::no_delay`]):
//!    the ratio is what a reused connection loses to delayed ACKs.

use revolve_core::{ModelCommand, ModelInput, TurnContext, UserInput};
use std::path::{Path, PathBuf};
use std::process::{Command as Process, Stdio};
use std::time::{Duration, Instant};

use revolve_core::compact;
use revolve_core::record::{Context, Header, Message, Resumed, Totals};
use revolve_core::{guard, prompt, refine};
use revolve_core::{Command, Input, Record, Reply, Session, Settings, State, Usage};
use revolve_store::log::LogWriter;
use revolve_store::paths::{Project, Roots};
use revolve_testkit::{FakeOptions, FakeProtocol, FakeReply, FakeServer, Limit, Overflows};
use time::macros::datetime;
use time::Duration as TimeDelta;

use super::{median, ms, thousands, Config, Lcg};

/// The notes the canned model writes, every time (about 1,500 bytes).
pub(crate) fn notes() -> String {
    let mut s = String::from("Facts: the service listens on port 5432 on db1; ");
    while s.len() < 1_500 {
        s.push_str("src/db.rs holds the schema, the migration ran, the tests pass; ");
    }
    s
}

/// The input tokens of a request body, as core estimates them before any
/// count of the server's.
fn tokens(body_bytes: usize) -> u64 {
    compact::estimate(body_bytes, &Totals::default())
}

/// One row of the table.
pub(crate) struct Row {
    what: String,
    requests: String,
    tokens: String,
    time: String,
    refinement: String,
}

pub(crate) fn print(rows: &[Row]) {
    if rows.is_empty() {
        return;
    }
    println!("\n| what | model requests | input tokens (est.) | time | of them the refinement's |");
    println!("|---|---|---|---|---|");
    for r in rows {
        println!(
            "| {} | {} | {} | {} | {} |",
            r.what, r.requests, r.tokens, r.time, r.refinement
        );
    }
}

// --- 1. the compaction of one window, in process ---------------------------

/// The windows measured.
const WINDOWS: [u64; 3] = [4_000, 32_000, 128_000];

pub(crate) fn windows(config: &Config, rows: &mut Vec<Row>) {
    println!("\n== compaction of one window's worth of history (in process, core only)");
    let runs = if config.smoke { 1 } else { 5 };
    for window in WINDOWS {
        let mut times = Vec::with_capacity(runs);
        let mut c = compaction(window);
        times.push(c.took);
        for _ in 1..runs {
            times.push(compaction(window).took);
        }
        c.took = median(&mut times);
        let largest = c.summaries.iter().copied().max().unwrap_or(0);
        println!(
            "{}k window: a history of {} messages (~{} tokens, the compaction point is {}) \
             compacts in {} summary request(s), {} input tokens, the largest {}; the turn's \
             request after it ~{} tokens; core's time {} (median of {runs})",
            window / 1000,
            thousands(c.messages),
            thousands(c.history as usize),
            thousands(compact::point(window) as usize),
            c.summaries.len(),
            thousands(c.summaries.iter().sum::<u64>() as usize),
            thousands(largest as usize),
            thousands(c.turn as usize),
            ms(c.took),
        );
        rows.push(Row {
            what: format!(
                "compaction of one {}k window ({} messages, ~{} tokens)",
                window / 1000,
                thousands(c.messages),
                thousands(c.history as usize)
            ),
            requests: c.summaries.len().to_string(),
            tokens: thousands(c.summaries.iter().sum::<u64>() as usize),
            time: format!("{} in core (median of {runs})", ms(c.took)),
            refinement: "–".into(),
        });
    }
}

/// What one compaction sent.
struct Compaction {
    /// The history's messages and its request's estimate when it compacts.
    messages: usize,
    history: u64,
    /// The estimate of each summary request.
    summaries: Vec<u64>,
    /// The estimate of the turn's request after it.
    turn: u64,
    /// Core's own time for the whole compaction (fold excluded).
    took: Duration,
}

fn settings() -> Settings {
    Settings {
        rules: Default::default(),
        spill_chars: revolve_core::session::SPILL_CHARS,
        spill_dir: "/state/spills/s".into(),
        prune_chars: compact::PRUNE_CHARS,
        repeat_limit: guard::REPEAT_LIMIT,
        max_tool_rounds: guard::MAX_TOOL_ROUNDS,
        max_calls_per_answer: revolve_core::policy::MAX_CALLS_PER_ANSWER,
        allow_edits: false,
        allow_shell: false,
        interactive: false,
        granted: Vec::new(),
        auto_refine: false,
        bare: false,
        counts: false,
        confirm_costly: false,
        allow_mcp: false,
        mcp_timeout_s: 60,
        hooks: Default::default(),
        models: Default::default(),
        max_cost: None,
        network_off: false,
    }
}

fn header(id: &str, window: u64) -> Header {
    Header {
        version: 1,
        id: id.into(),
        name: Some("amber".into()),
        named: false,
        cwd: "/w".into(),
        project: "/w".into(),
        started: datetime!(2026-12-02 10:00 UTC),
        model: "m".into(),
        window,
        provider: "openai".into(),
        continues: None,
        tool_choice: None,
    }
}

/// A session of plain turns (a question, a 2 KB answer) grown until its
/// next request reaches the compaction point of `window`, then one more
/// user turn: the compaction it starts, answered with [`notes`].
fn compaction(window: u64) -> Compaction {
    let at = datetime!(2026-12-02 10:00 UTC);
    let mut state = State::fold(&[
        Record::Header(header("s1", window)),
        Record::Context(Context {
            at,
            system: prompt::BASE.to_owned(),
            subagents: Vec::new(),
        }),
    ]);
    let mut rng = Lcg(0x5eed_0000_0000_0042);
    let mut turn = 0;
    let history = loop {
        let estimate = tokens(state.request().body.len());
        if estimate >= compact::point(window) && turn > compact::KEEP_TURNS {
            break estimate;
        }
        turn += 1;
        state.apply(&Record::Message(Message::user(
            at,
            format!("question {turn}: what changed in src/db.rs?"),
        )));
        state.apply(&Record::Message(Message::assistant(
            at,
            super::text(2_000, &mut rng),
        )));
    };
    let messages = state.messages().len();
    let resumed = Resumed {
        at,
        model: "m".into(),
        window,
        provider: "openai".into(),
    };
    let started = Instant::now();
    let (mut session, _) = Session::resume(state, settings(), resumed);
    let notes = notes();
    let mut cmds = session
        .handle(Input::User(UserInput::Line {
            context: TurnContext::default(),
            text: "one more turn".into(),
            now: at,
        }))
        .commands;
    let mut summaries = Vec::new();
    let mut sent_turn = 0;
    loop {
        let mut next = None;
        for c in cmds {
            match c {
                Command::Model(ModelCommand::Summarize(req)) => {
                    let asked = tokens(req.body.len());
                    summaries.push(asked);
                    next = Some(Input::Model(ModelInput::Summarized {
                        reply: Reply {
                            text: notes.clone(),
                            usage: Some(Usage {
                                prompt_tokens: asked,
                                completion_tokens: (notes.len() / 4) as u64,
                                ..Default::default()
                            }),
                            ..Reply::default()
                        },
                        new_id: format!("s{}", summaries.len() + 1),
                        now: at,
                    }));
                }
                Command::Model(ModelCommand::Call(req)) => sent_turn = tokens(req.body.len()),
                _ => {}
            }
        }
        match next {
            Some(input) => cmds = session.handle(input).commands,
            None => break,
        }
    }
    Compaction {
        messages,
        history,
        summaries,
        turn: sent_turn,
        took: started.elapsed(),
    }
}

// --- 2. the resume of a ~100 MB session, the binary ------------------------

pub(crate) const MB: u64 = 1024 * 1024;
/// The session file's name: its header's id.
const STEM: &str = "20261202-102606-000002";

pub(crate) fn resume(config: &Config, rows: &mut Vec<Row>) {
    let Some(bin) = config.bin.clone() else {
        println!(
            "\n== resume under 128k: no release binary (`cargo build --release` first, or \
             REVOLVE_BENCH_BIN); not measured"
        );
        return;
    };
    let scratch = super::common::Scratch::new("compact-resume");
    let template = scratch.path("template.jsonl");
    let target = ((100 * MB) as f64 * config.scale) as u64;
    let started = Instant::now();
    let live = write_live_log(&template, target.max(64 * 1024), &mut |_, _| Ok(()))
        .expect("writing the log");
    let size = std::fs::metadata(&template).map(|m| m.len()).unwrap_or(0);
    println!(
        "\n== resume of a {:.1} MB session (live history {:.1} MB) under 128k, then one turn; \
         binary {}; log generated in {} s",
        size as f64 / MB as f64,
        live as f64 / MB as f64,
        bin.display(),
        started.elapsed().as_secs()
    );
    let runs = if config.smoke { 1 } else { 3 };
    let mut times = Vec::new();
    let mut quick = Vec::new();
    let mut last = None;
    for run in 0..runs {
        // The same resume against the fake with `TCP_NODELAY` (its small
        // writes go out at once), side by side: what a client loses to a
        // server that leaves Nagle on is the ratio.
        let root = scratch.path(&format!("run{run}-nodelay"));
        let (fast, _) = resume_once(&bin, &root, &template, true);
        std::fs::remove_dir_all(&root).ok();
        quick.push(fast);
        let root = scratch.path(&format!("run{run}"));
        let (took, sent) = resume_once(&bin, &root, &template, false);
        println!(
            "  run {}: {} (server with TCP_NODELAY: {}, ratio {:.2}) — {} requests: {} summary \
             pieces, {} turn, {} refinement; {} input tokens ({} of them the refinement's)",
            run + 1,
            ms(took),
            ms(fast),
            took.as_secs_f64() / fast.as_secs_f64(),
            sent.requests(),
            sent.summaries.len(),
            sent.turns.len(),
            sent.refinements.len(),
            thousands(sent.tokens() as usize),
            thousands(sent.refinements.iter().sum::<u64>() as usize),
        );
        std::fs::remove_dir_all(&root).ok();
        times.push(took);
        last = Some(sent);
    }
    let sent = last.expect("at least one run");
    let (nagle, nodelay) = (median(&mut times), median(&mut quick));
    println!(
        "  medians: {} against the fake as it is (Nagle on), {} with TCP_NODELAY: ratio {:.2} \
         (target at most 1.10)",
        ms(nagle),
        ms(nodelay),
        nagle.as_secs_f64() / nodelay.as_secs_f64()
    );
    rows.push(Row {
        what: format!(
            "resume of a {:.1} MB session under 128k + one turn (binary, automatic refinement on)",
            size as f64 / MB as f64
        ),
        requests: format!(
            "{} ({} summary, {} turn, {} refinement)",
            sent.requests(),
            sent.summaries.len(),
            sent.turns.len(),
            sent.refinements.len()
        ),
        tokens: thousands(sent.tokens() as usize),
        time: format!("{} (median of {runs})", ms(nagle)),
        refinement: format!(
            "{} requests, {} tokens",
            sent.refinements.len(),
            thousands(sent.refinements.iter().sum::<u64>() as usize)
        ),
    });
}

/// The estimated input tokens of each request the server received, by
/// what it asked for.
#[derive(Default)]
struct Sent {
    summaries: Vec<u64>,
    turns: Vec<u64>,
    refinements: Vec<u64>,
}

impl Sent {
    fn requests(&self) -> usize {
        self.summaries.len() + self.turns.len() + self.refinements.len()
    }

    fn tokens(&self) -> u64 {
        self.summaries
            .iter()
            .chain(&self.turns)
            .chain(&self.refinements)
            .sum()
    }
}

/// One run in a fresh home, on a copy of `template`: its wall time and its
/// requests.
fn resume_once(bin: &Path, root: &Path, template: &Path, no_delay: bool) -> (Duration, Sent) {
    let home = Home::new(root, template);
    let limit = Limit {
        tokens: 128_000,
        bytes_per_token: 4,
        says: Overflows::OpenAi,
        usage: true,
    };
    // not policy: more replies than any run asks for.
    let replies = vec![FakeReply::text(&notes()); 5_000];
    // Connections kept between requests, as real servers keep them.
    let options = FakeOptions {
        limit: Some(limit),
        keep_alive: true,
        no_delay,
        ..FakeOptions::default()
    };
    let server = FakeServer::start_with_options(FakeProtocol::OpenAi, replies, options)
        .expect("fake server");
    let took = home.resume(bin, &server.url(), &[]);
    let mut sent = Sent::default();
    for r in server.requests() {
        let asked = tokens(r.body.len());
        let body: serde_json::Value = serde_json::from_str(&r.body).expect("a JSON body");
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let last = messages
            .last()
            .and_then(|m| m["content"].as_str())
            .unwrap_or("");
        let users = messages.iter().filter(|m| m["role"] != "system").count();
        if users == 1 && last.ends_with(refine::PROMPT) {
            sent.refinements.push(asked);
        } else if last.starts_with(compact::SUMMARY_PROMPT) {
            sent.summaries.push(asked);
        } else {
            sent.turns.push(asked);
        }
    }
    (took, sent)
}

/// A fresh home for one revolve run: its roots under `root`, a working
/// directory, and a copy of the session log where revolve lists it.
pub(crate) struct Home {
    root: PathBuf,
    cwd: PathBuf,
    log: PathBuf,
}

impl Home {
    pub(crate) fn new(root: &Path, template: &Path) -> Home {
        let cwd = root.join("work");
        std::fs::create_dir_all(&cwd).expect("creating the cwd");
        let (root, cwd) = (
            root.canonicalize().expect("a canonical root"),
            cwd.canonicalize().expect("a canonical cwd"),
        );
        let roots = Roots {
            state: root.join("state").join("task-agent"),
            config: root.join("config").join("task-agent"),
        };
        let sessions = roots.sessions(&Project::from_key(cwd.clone()));
        std::fs::create_dir_all(&sessions).expect("the sessions folder");
        let log = sessions.join(format!("{STEM}.jsonl"));
        std::fs::copy(template, &log).expect("copying the log");
        Home { root, cwd, log }
    }

    /// `revolve -r LOG --base-url URL --window 128000 -p TURN --yes` and
    /// `extra`, in this home with nothing of the caller's environment but
    /// `PATH`: its wall time from spawn to exit. Panics when it fails.
    pub(crate) fn resume(&self, bin: &Path, url: &str, extra: &[&str]) -> Duration {
        let file = self.log.to_string_lossy().into_owned();
        let mut args = vec![
            "-r",
            &file,
            "--base-url",
            url,
            "--window",
            "128000",
            "-p",
            TURN,
            // Costly, and no terminal to ask: allowed up front.
            "--yes",
        ];
        args.extend_from_slice(extra);
        let root = &self.root;
        let t = Instant::now();
        let out = Process::new(bin)
            .args(&args)
            .current_dir(&self.cwd)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", root.join("home"))
            .env("XDG_STATE_HOME", root.join("state"))
            .env("XDG_CONFIG_HOME", root.join("config"))
            .env("XDG_DATA_HOME", root.join("data"))
            .env("XDG_CACHE_HOME", root.join("cache"))
            .env("GIT_CEILING_DIRECTORIES", root)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .expect("running revolve");
        let took = t.elapsed();
        assert!(
            out.status.success(),
            "revolve {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        took
    }
}

/// The turn every resume asks for.
pub(crate) const TURN: &str = "one more turn";

/// A session of plain turns (a question, a 24 KB answer), nothing pruned:
/// its whole history is live, as in the scale bench's window part. Each
/// turn's question and answer also go to `each` (another client's copy of
/// the same session). Returns the bytes of message text.
pub(crate) fn write_live_log(
    path: &Path,
    target: u64,
    each: &mut dyn FnMut(&str, &str) -> std::io::Result<()>,
) -> std::io::Result<u64> {
    let mut rng = Lcg(0x5eed_0000_0000_0016);
    let mut at = datetime!(2026-12-02 10:26:06 UTC);
    let mut w = LogWriter::create(path)?;
    w.append(&Record::Header(Header {
        started: at,
        ..header(STEM, 128_000)
    }))?;
    let (mut written, mut live, mut turn) = (0u64, 0u64, 0u64);
    while written < target {
        let question = format!("question {turn}: what changed in src/db.rs?");
        let answer = super::text(24 * 1024, &mut rng);
        each(&question, &answer)?;
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

/// The release binary the resume runs: `REVOLVE_BENCH_BIN`, else this
/// checkout's `target/release/revolve`, when it exists.
pub(crate) fn binary() -> Option<PathBuf> {
    let bin = std::env::var_os("REVOLVE_BENCH_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/revolve"));
    bin.is_file().then_some(bin)
}
