//! revolve beside Codex CLI, in one run (`REVOLVE_BENCH_ONLY=codex`; issue
//! 46, item 1: the 100 MB resume "ahead of codex in the same run").
//!
//! Both clients resume the same session — the resume part's ~100 MB
//! history of plain turns, the same questions and answers — under a
//! 128k-token window, and ask one more turn, against testkit's fake
//! server: revolve on its Chat Completions wire and on the Responses wire
//! (`--provider openai-responses`), Codex on the Responses wire (its only
//! one). Each round runs every client once against the fake as it is
//! (Nagle on) and once with `TCP_NODELAY`, interleaved, so load that
//! comes and goes falls on all of them alike; the figures are medians of
//! the rounds, wall time from spawn to exit.
//!
//! * **Codex's copy of the session.** Codex keeps a session as a JSONL
//!   "rollout" under `$CODEX_HOME/sessions/YYYY/MM/DD/`. Its records are
//!   learnt from a real one made first (two turns, `codex exec` and
//!   `codex exec resume`, against the fake): its head (session meta, the
//!   first turn with its context), then, for each turn of revolve's log,
//!   the second turn's records again with that turn's question and answer,
//!   fresh ids, the next ordinals and history sequence numbers, and token
//!   counts of 4 bytes a token. Codex writes each answer three times
//!   (the item, its completion event, the turn's end), so the same history
//!   is a file about three times as big.
//! * **Two Codex homes.** Codex keeps an index of each rollout in SQLite
//!   beside it (`thread_history_*.sqlite`), built while the session runs;
//!   a rollout it has not seen is indexed on the resume that finds it.
//!   "codex (indexed)" resumes from a home whose index an earlier resume
//!   built (one that the server refused: it left a failed turn of the same
//!   question in the rollout); "codex (new home)" from a home holding only
//!   the config and the rollout, which indexes it first.
//! * **No context limit enforced.** The fake counts 4 bytes a token and
//!   refuses nothing: told of a 128k window, Codex compacts a longer
//!   history before the turn by sending the whole of it with its summary
//!   prompt, and a server that refuses that (`context_length_exceeded`) is
//!   sent it again one item shorter, and again (seen with codex 0.171.0:
//!   a history of 80 such turns, 2 MB, took 132 requests, 168 MiB sent;
//!   100 MB holds ~8,500 items, each dropped by a request). revolve
//!   sends no request over 128k either way, so its requests are the same
//!   as in the resume part.
//! * **Nothing reaches the network or the real home**: each run has its own
//!   `HOME`, `CODEX_HOME` and `XDG_*` under the scratch folder, no variable
//!   of the caller's but `PATH`, and Codex's config turns off its update
//!   check, analytics, feedback, telemetry export, plugins and apps (with
//!   them on it looks up chatgpt.com and api.github.com at start);
//!   `--strict-config` stops it on a key that version does not know.
//!
//! Codex is found at `REVOLVE_BENCH_CODEX`, else where
//! `npm install --prefix ~/.cache/revolve-ci/codex @openai/codex@0.171.0`
//! puts its linux-x64 binary; without it the part says so in one line.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Command as Process, Output, Stdio};
use std::time::{Duration, Instant};

use revolve_testkit::{FakeOptions, FakeProtocol, FakeReply, FakeServer, Limit, Overflows};
use serde_json::{json, Value};

use super::common::Scratch;
use super::requests::{self, Home, MB, TURN};
use super::{median, ms, thousands, Config};

/// The version the figures were taken with.
const CODEX_VERSION: &str = "0.171.0";

/// Where `npm install --prefix DIR @openai/codex` puts the binary.
const CODEX_IN_NPM: &str =
    "node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex";

/// The model both clients name (the fake answers any).
const MODEL: &str = "gpt-5.6-terra";

/// The clients compared, in the order each round runs them.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Client {
    RevolveChat,
    RevolveResponses,
    CodexIndexed,
    CodexNewHome,
}

const CLIENTS: [Client; 4] = [
    Client::RevolveChat,
    Client::CodexIndexed,
    Client::RevolveResponses,
    Client::CodexNewHome,
];

impl Client {
    fn name(self) -> &'static str {
        match self {
            Client::RevolveChat => "revolve (Chat Completions)",
            Client::RevolveResponses => "revolve (Responses)",
            Client::CodexIndexed => "codex (indexed)",
            Client::CodexNewHome => "codex (new home)",
        }
    }

    fn protocol(self) -> FakeProtocol {
        match self {
            Client::RevolveChat => FakeProtocol::OpenAi,
            _ => FakeProtocol::Responses,
        }
    }
}

/// What a client sent in one run.
#[derive(Clone, Copy, Default)]
struct Traffic {
    requests: usize,
    bytes: u64,
    largest: u64,
}

impl Traffic {
    fn of(server: &FakeServer) -> Traffic {
        let requests = server.requests();
        let sizes = requests.iter().map(|r| r.body.len() as u64);
        Traffic {
            requests: requests.len(),
            bytes: sizes.clone().sum(),
            largest: sizes.max().unwrap_or(0),
        }
    }
}

/// Every client's times and traffic, with and without `TCP_NODELAY`.
#[derive(Default)]
struct Figures {
    nagle: Vec<Duration>,
    nodelay: Vec<Duration>,
    traffic: Traffic,
}

pub(crate) fn compare(config: &Config) {
    let Some(codex) = codex_binary() else {
        println!(
            "\n== revolve beside codex: no codex binary (`npm install --prefix \
             ~/.cache/revolve-ci/codex @openai/codex@{CODEX_VERSION}`, or REVOLVE_BENCH_CODEX); \
             not measured"
        );
        return;
    };
    let Some(bin) = config.bin.clone() else {
        println!(
            "\n== revolve beside codex: no release binary (`cargo build --release` first, or \
             REVOLVE_BENCH_BIN); not measured"
        );
        return;
    };
    let scratch = Scratch::new("compact-codex");
    let version = codex_version(&codex);
    let started = Instant::now();
    let seed = Seed::make(&codex, &scratch);
    let revolve_log = scratch.path("revolve.jsonl");
    let rollout = scratch.path("rollout.jsonl");
    let target = ((100 * MB) as f64 * config.scale) as u64;
    let mut writer = RolloutWriter::create(&rollout, &seed).expect("the rollout");
    let live = requests::write_live_log(&revolve_log, target.max(64 * 1024), &mut |q, a| {
        writer.turn(q, a)
    })
    .expect("writing the logs");
    let turns = writer.finish().expect("the rollout");
    let indexed = seed.indexed_template(&codex, &scratch, &rollout);
    println!(
        "\n== revolve beside {version} ({}): the same {} turns ({:.1} MB of message text), \
         revolve's log {:.1} MB, codex's rollout {:.1} MB; under 128k, then one turn; \
         prepared in {} s",
        codex.display(),
        thousands(turns as usize),
        live as f64 / MB as f64,
        super::common::file_size(&revolve_log) as f64 / MB as f64,
        super::common::file_size(&rollout) as f64 / MB as f64,
        started.elapsed().as_secs()
    );
    let rounds = if config.smoke { 1 } else { 3 };
    let mut figures: Vec<Figures> = CLIENTS.iter().map(|_| Figures::default()).collect();
    for round in 0..rounds {
        for no_delay in [false, true] {
            for (i, &client) in CLIENTS.iter().enumerate() {
                let run = Run {
                    client,
                    no_delay,
                    bin: &bin,
                    codex: &codex,
                    seed: &seed,
                    scratch: &scratch,
                    revolve_log: &revolve_log,
                    rollout: &rollout,
                    indexed: &indexed,
                };
                let (took, traffic) = run.once();
                println!(
                    "  round {}, {}: {} {} — {} requests, {:.1} MB sent, the largest {:.1} MB",
                    round + 1,
                    if no_delay { "TCP_NODELAY" } else { "Nagle on" },
                    client.name(),
                    ms(took),
                    traffic.requests,
                    traffic.bytes as f64 / MB as f64,
                    traffic.largest as f64 / MB as f64,
                );
                let f = &mut figures[i];
                if no_delay {
                    f.nodelay.push(took);
                } else {
                    f.nagle.push(took);
                }
                f.traffic = traffic;
            }
        }
    }
    print_table(&mut figures, rounds);
}

/// The medians, and each client's against revolve's on Chat Completions.
fn print_table(figures: &mut [Figures], rounds: usize) {
    let medians: Vec<(Duration, Duration)> = figures
        .iter_mut()
        .map(|f| (median(&mut f.nagle), median(&mut f.nodelay)))
        .collect();
    let (base_nagle, base_nodelay) = medians[0];
    println!(
        "\n| client (median of {rounds}) | fake as it is (Nagle on) | with TCP_NODELAY | \
         requests | MB sent | largest request |"
    );
    println!("|---|---|---|---|---|---|");
    for ((client, f), (nagle, nodelay)) in CLIENTS.iter().zip(figures.iter()).zip(&medians) {
        println!(
            "| {} | {} ({:.2}x revolve's) | {} ({:.2}x) | {} | {:.1} | {:.1} MB |",
            client.name(),
            ms(*nagle),
            nagle.as_secs_f64() / base_nagle.as_secs_f64(),
            ms(*nodelay),
            nodelay.as_secs_f64() / base_nodelay.as_secs_f64(),
            f.traffic.requests,
            f.traffic.bytes as f64 / MB as f64,
            f.traffic.largest as f64 / MB as f64,
        );
    }
}

/// One client's run against a fresh fake.
struct Run<'a> {
    client: Client,
    no_delay: bool,
    bin: &'a Path,
    codex: &'a Path,
    seed: &'a Seed,
    scratch: &'a Scratch,
    revolve_log: &'a Path,
    rollout: &'a Path,
    indexed: &'a Path,
}

impl Run<'_> {
    fn once(&self) -> (Duration, Traffic) {
        let server = fake(self.client.protocol(), self.no_delay, answers());
        let url = server.url();
        let took = match self.client {
            Client::RevolveChat | Client::RevolveResponses => {
                let root = self.scratch.path("revolve-run");
                std::fs::remove_dir_all(&root).ok();
                let home = Home::new(&root, self.revolve_log);
                let extra: &[&str] = match self.client {
                    Client::RevolveResponses => &["--provider", "openai-responses"],
                    _ => &[],
                };
                let took = home.resume(self.bin, &url, extra);
                std::fs::remove_dir_all(&root).ok();
                took
            }
            Client::CodexIndexed | Client::CodexNewHome => {
                let home = CodexHome::at(self.scratch, "codex-run");
                std::fs::remove_dir_all(&home.root).ok();
                if self.client == Client::CodexIndexed {
                    copy_tree(self.indexed, &home.root).expect("copying the indexed home");
                } else {
                    home.place(self.rollout, &self.seed.rollout);
                }
                home.configure(&url);
                let args = ["resume", self.seed.id.as_str(), TURN];
                let (took, out) = home.exec(self.codex, &args);
                assert!(
                    out.status.success(),
                    "codex {args:?} failed: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                took
            }
        };
        let sent = server.requests();
        assert!(
            sent.last().is_some_and(|r| r.body.contains(TURN)),
            "{}: the turn's request did not reach the fake",
            self.client.name()
        );
        (took, Traffic::of(&server))
    }
}

/// The canned answer to every request (the resume part's notes).
fn answers() -> Vec<FakeReply> {
    // not policy: more replies than any run asks for.
    vec![FakeReply::text(&requests::notes()); 5_000]
}

/// The fake, its connections kept, counting 4 bytes a token and refusing
/// nothing (see the module doc).
fn fake(protocol: FakeProtocol, no_delay: bool, replies: Vec<FakeReply>) -> FakeServer {
    let limit = Limit {
        tokens: u64::MAX,
        bytes_per_token: 4,
        says: Overflows::Responses,
        usage: true,
    };
    let options = FakeOptions {
        limit: Some(limit),
        keep_alive: true,
        no_delay,
        ..FakeOptions::default()
    };
    FakeServer::start_with_options(protocol, replies, options).expect("fake server")
}

/// `REVOLVE_BENCH_CODEX`, else the npm install under the CI cache, when
/// it is there.
fn codex_binary() -> Option<PathBuf> {
    let path = match std::env::var_os("REVOLVE_BENCH_CODEX") {
        Some(p) => PathBuf::from(p),
        None => {
            let cache = std::env::var_os("REVOLVE_CI_CACHE")
                .map(PathBuf::from)
                .or_else(|| {
                    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/revolve-ci"))
                })?;
            cache.join("codex").join(CODEX_IN_NPM)
        }
    };
    path.is_file().then_some(path)
}

/// `codex --version`'s line.
fn codex_version(codex: &Path) -> String {
    Process::new(codex)
        .arg("--version")
        .env_clear()
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "codex".into())
}

// --- Codex's home ----------------------------------------------------------

/// A home for Codex under the scratch folder: `HOME`, with `CODEX_HOME` at
/// `.codex`, and a working directory beside it (the same for every run, as
/// the rollout names it).
struct CodexHome {
    root: PathBuf,
    cwd: PathBuf,
}

impl CodexHome {
    fn at(scratch: &Scratch, name: &str) -> CodexHome {
        let cwd = scratch.path("codex-work");
        std::fs::create_dir_all(&cwd).expect("codex's cwd");
        CodexHome {
            root: scratch.path(name),
            cwd,
        }
    }

    fn codex_home(&self) -> PathBuf {
        self.root.join(".codex")
    }

    /// `config.toml`: the fake at `url` as the provider, a 128k window,
    /// nothing that reaches the network (see the module doc).
    fn configure(&self, url: &str) {
        let config = format!(
            r#"model = "{MODEL}"
model_provider = "fake"
model_context_window = 128000
check_for_update_on_startup = false

[model_providers.fake]
name = "fake"
base_url = "{url}"
wire_api = "responses"

[analytics]
enabled = false

[feedback]
enabled = false

[otel]
exporter = "none"

[features]
plugins = false
apps = false
remote_plugin = false
plugin_sharing = false
daemon_auto_start = false
tool_suggest = false
"#
        );
        std::fs::create_dir_all(self.codex_home()).expect("CODEX_HOME");
        std::fs::write(self.codex_home().join("config.toml"), config).expect("config.toml");
    }

    /// A copy of `rollout` at `rel` under `CODEX_HOME`.
    fn place(&self, rollout: &Path, rel: &Path) {
        let to = self.codex_home().join(rel);
        std::fs::create_dir_all(to.parent().expect("a folder")).expect("the sessions folder");
        std::fs::copy(rollout, &to).expect("copying the rollout");
    }

    /// `codex exec --strict-config --skip-git-repo-check ARGS` here, with
    /// nothing of the caller's environment but `PATH`: its wall time from
    /// spawn to exit, and its output.
    fn exec(&self, codex: &Path, args: &[&str]) -> (Duration, Output) {
        let root = &self.root;
        let t = Instant::now();
        let out = Process::new(codex)
            .args(["exec", "--strict-config", "--skip-git-repo-check"])
            .args(args)
            .current_dir(&self.cwd)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", root)
            .env("CODEX_HOME", self.codex_home())
            .env("XDG_STATE_HOME", root.join("state"))
            .env("XDG_CONFIG_HOME", root.join("config"))
            .env("XDG_DATA_HOME", root.join("data"))
            .env("XDG_CACHE_HOME", root.join("cache"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .expect("running codex");
        (t.elapsed(), out)
    }
}

/// A folder copied whole (files and folders only).
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

// --- the rollout -------------------------------------------------------------

/// What a real Codex session of two turns teaches: the session's id, its
/// rollout's place under `CODEX_HOME`, the records up to the end of the
/// first turn, and those of the second.
struct Seed {
    id: String,
    rollout: PathBuf,
    head: Vec<Value>,
    turn: Vec<Value>,
}

impl Seed {
    fn make(codex: &Path, scratch: &Scratch) -> Seed {
        let server = fake(
            FakeProtocol::Responses,
            true,
            vec![FakeReply::text("ok, noted."); 2],
        );
        let home = CodexHome::at(scratch, "codex-seed");
        home.configure(&server.url());
        let (_, out) = home.exec(codex, &["hello there"]);
        assert!(
            out.status.success(),
            "codex exec failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let sessions = home.codex_home().join("sessions");
        let path = find_rollout(&sessions).expect("codex wrote no rollout");
        let records = read_records(&path);
        let id = records[0]["payload"]["id"]
            .as_str()
            .expect("the session's id")
            .to_owned();
        let (_, out) = home.exec(codex, &["resume", &id, "again"]);
        assert!(
            out.status.success(),
            "codex exec resume failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let records = read_records(&path);
        let ends: Vec<usize> = records
            .iter()
            .enumerate()
            .filter(|(_, r)| r["type"] == "event_msg" && r["payload"]["type"] == "task_complete")
            .map(|(i, _)| i)
            .collect();
        assert_eq!(ends.len(), 2, "two turns in the seed's rollout");
        let turn = records[ends[0] + 1..=ends[1]]
            .iter()
            .filter(|r| kept_in_turn(r))
            .cloned()
            .collect();
        Seed {
            rollout: path
                .strip_prefix(home.codex_home())
                .expect("under CODEX_HOME")
                .to_owned(),
            id,
            head: records[..=ends[0]].to_vec(),
            turn,
        }
    }

    /// A home at the runs' place whose index of `rollout` Codex built, by
    /// a resume the server refused; moved aside as the runs' template.
    fn indexed_template(&self, codex: &Path, scratch: &Scratch, rollout: &Path) -> PathBuf {
        let refusal = json!({"error": {"message": "refused: the bench builds the index",
            "type": "invalid_request_error", "param": null, "code": "invalid_value"}});
        let refusals = vec![
            FakeReply::Status {
                code: 400,
                body: refusal.to_string(),
                retry_after: None,
            };
            16
        ];
        let server = fake(FakeProtocol::Responses, true, refusals);
        let home = CodexHome::at(scratch, "codex-run");
        home.place(rollout, &self.rollout);
        home.configure(&server.url());
        // It fails, as the server refuses it: its index is what is wanted.
        home.exec(codex, &["resume", &self.id, TURN]);
        let template = scratch.path("codex-indexed");
        std::fs::rename(&home.root, &template).expect("moving the indexed home aside");
        template
    }
}

/// The records a turn of the session repeats (a resumed process's
/// settings, and anything else, are left out).
fn kept_in_turn(r: &Value) -> bool {
    match r["type"].as_str().unwrap_or("") {
        "turn_context" | "token_usage_record" => true,
        "response_item" => {
            r["payload"]["type"] == "message"
                && matches!(r["payload"]["role"].as_str(), Some("user" | "assistant"))
        }
        "event_msg" => matches!(
            r["payload"]["type"].as_str(),
            Some("task_started" | "item_completed" | "token_count" | "task_complete")
        ),
        _ => false,
    }
}

/// The one `rollout-*.jsonl` under `dir`.
fn find_rollout(dir: &Path) -> Option<PathBuf> {
    for entry in std::fs::read_dir(dir).ok()? {
        let path = entry.ok()?.path();
        if path.is_dir() {
            if let Some(found) = find_rollout(&path) {
                return Some(found);
            }
        } else if path.extension().is_some_and(|e| e == "jsonl") {
            return Some(path);
        }
    }
    None
}

fn read_records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("reading the rollout")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON record"))
        .collect()
}

/// Writes a rollout: the seed's head, then one turn of the seed's shape
/// per question and answer.
struct RolloutWriter {
    out: BufWriter<std::fs::File>,
    /// The seed's second turn, as JSON text.
    turn: String,
    /// The ids in it, each made new in every turn.
    ids: Vec<String>,
    ordinal: u64,
    /// Turns written, and the history sequence numbers each takes.
    turns: u64,
    sequences: u64,
    /// The input tokens of the first request, and the history since.
    base_tokens: u64,
    history: u64,
    /// The tokens of every request so far (in, out).
    thread: (u64, u64),
}

impl RolloutWriter {
    fn create(path: &Path, seed: &Seed) -> std::io::Result<RolloutWriter> {
        let mut out = BufWriter::new(std::fs::File::create(path)?);
        for r in &seed.head {
            writeln!(out, "{r}")?;
        }
        let mut ids = Vec::new();
        for r in &seed.turn {
            collect_ids(r, &seed.id, &mut ids);
        }
        let first = |kind: &str| seed.head.iter().rev().find(|r| r["type"] == kind);
        let base_tokens = first("token_usage_record")
            .and_then(|r| r["payload"]["usage"]["input_tokens"].as_u64())
            .unwrap_or(0);
        let sequences = seed
            .turn
            .iter()
            .filter(|r| r["type"] == "response_item")
            .count() as u64;
        Ok(RolloutWriter {
            out,
            turn: serde_json::to_string(&seed.turn).expect("JSON"),
            ids,
            ordinal: seed
                .head
                .last()
                .and_then(|r| r["ordinal"].as_u64())
                .unwrap_or(0)
                + 1,
            turns: 0,
            sequences,
            base_tokens,
            history: 0,
            thread: (0, 0),
        })
    }

    fn turn(&mut self, question: &str, answer: &str) -> std::io::Result<()> {
        let mut text = self.turn.clone();
        for (k, id) in self.ids.iter().enumerate() {
            text = text.replace(
                &format!("\"{id}\""),
                &format!("\"{}\"", fresh_id(id, k, self.turns)),
            );
        }
        let mut records: Vec<Value> = serde_json::from_str(&text).expect("JSON");
        self.history += (question.len() + answer.len()) as u64;
        let input = self.base_tokens + self.history / 4;
        let shift = self.sequences * (self.turns + 1);
        for r in &mut records {
            r["ordinal"] = json!(self.ordinal);
            self.ordinal += 1;
            for key in [
                "history_sequence",
                "sampled_through_sequence",
                "user_input_order",
            ] {
                if let Some(n) = r["metadata"][key].as_u64() {
                    r["metadata"][key] = json!(n + shift);
                }
            }
            fill(r, question, answer);
            let output = r["payload"]["usage"]["output_tokens"].as_u64().unwrap_or(0);
            if r["type"] == "token_usage_record" {
                self.thread = (self.thread.0 + input, self.thread.1 + output);
                usage(&mut r["payload"]["usage"], input, output);
                usage(&mut r["payload"]["turn_token_usage"], input, output);
                usage(
                    &mut r["payload"]["thread_token_usage"],
                    self.thread.0,
                    self.thread.1,
                );
            }
            if r["payload"]["info"].is_object() {
                let info = &mut r["payload"]["info"];
                let output = info["last_token_usage"]["output_tokens"]
                    .as_u64()
                    .unwrap_or(0);
                usage(&mut info["last_token_usage"], input, output);
                usage(&mut info["total_token_usage"], self.thread.0, self.thread.1);
            }
            serde_json::to_writer(&mut self.out, r)?;
            self.out.write_all(b"\n")?;
        }
        self.turns += 1;
        Ok(())
    }

    /// Flushes; the turns written.
    fn finish(mut self) -> std::io::Result<u64> {
        self.out.flush()?;
        self.out.get_ref().sync_all()?;
        Ok(self.turns)
    }
}

/// A question or an answer put where the turn's records hold its text.
fn fill(r: &mut Value, question: &str, answer: &str) {
    let kind = (
        r["type"].as_str().unwrap_or("").to_owned(),
        r["payload"]["type"].as_str().unwrap_or("").to_owned(),
    );
    let p = &mut r["payload"];
    match (kind.0.as_str(), kind.1.as_str()) {
        ("response_item", _) => {
            let text = if p["role"] == "user" {
                question
            } else {
                answer
            };
            p["content"][0]["text"] = json!(text);
        }
        ("event_msg", "item_completed") => {
            let text = if p["item"]["type"] == "UserMessage" {
                question
            } else {
                answer
            };
            p["item"]["content"][0]["text"] = json!(text);
        }
        ("event_msg", "task_complete") => p["last_agent_message"] = json!(answer),
        _ => {}
    }
}

/// A usage object's counts set to `input` and `output`.
fn usage(u: &mut Value, input: u64, output: u64) {
    if u.is_object() {
        u["input_tokens"] = json!(input);
        u["output_tokens"] = json!(output);
        u["total_tokens"] = json!(input + output);
    }
}

/// The ids a turn's records hold (turns, items, messages, revisions,
/// responses), the session's own left out.
fn collect_ids(v: &Value, session: &str, ids: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            for (key, value) in map {
                let named = matches!(
                    key.as_str(),
                    "id" | "message_id" | "turn_id" | "root_turn_id" | "revision" | "response_id"
                );
                match value.as_str() {
                    Some(s) if named && s != session && !ids.iter().any(|i| i == s) => {
                        ids.push(s.to_owned());
                    }
                    _ => collect_ids(value, session, ids),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|i| collect_ids(i, session, ids)),
        _ => {}
    }
}

/// The `k`th id of turn `turn`: its prefix (`msg_`, `retained_`, …) kept,
/// then a UUID of its own.
fn fresh_id(id: &str, k: usize, turn: u64) -> String {
    let prefix = id.rfind('_').map_or("", |i| &id[..=i]);
    format!("{prefix}0199{k:04x}-0000-7000-8000-{turn:012x}")
}
