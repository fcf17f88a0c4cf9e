//! The real-server group: revolve against a real model server, llama.cpp's
//! OpenAI-compatible server as PyPI's `llama-cpp-python[server]` runs it,
//! with SmolLM2-135M at a context of 4,096 tokens (`.ci/llama-server` starts
//! one and prints its `REVOLVE_LLAMA_URL`). Without `REVOLVE_LLAMA_URL` every
//! test here says so in one line on stderr and passes: plain `cargo test
//! --workspace` skips the group.
//!
//! What that server does, measured: it streams no usage; a streaming request
//! larger than its context gets 200 and an empty event stream (a request
//! without streaming gets 400 "This model's maximum context length is 4096
//! tokens…"); it has no `GET /props`, so a session given no window cannot
//! learn n_ctx from it. The model is tiny: it rambles, writes nonsense and
//! cannot be made to call a tool. So nothing here looks at the model's
//! words; every scenario checks revolve's behaviour:
//!
//! * every run exits 0 and every turn fed to it is answered (the log's
//!   chain holds, after each user message, a complete assistant answer with
//!   text: an empty one is what the server's empty stream leaves);
//! * `revolve replay --check` passes on the session;
//! * with the window declared (`--window 4096`, the server's real context),
//!   the server never refused a request: the log has no `overflowed`,
//!   `failed` or `compaction_failed` record.
//!
//! Each scenario runs once with `--window 4096` and once with no window
//! given (revolve then asks the server, which does not say). A failure
//! lists every check that failed with the evidence: revolve's stderr, the
//! log's records other than messages, and the size of every request
//! `replay --requests` rebuilds.
//!
//! The 20 KB tool result is made deterministic: the model cannot be made
//! to call `read_file`, and the same text pasted into a user message would
//! be a message larger than the window (which revolve refuses to send, by
//! design). So one run of the session answers with the scripted provider
//! (`read_file notes.txt`, a 20 KB file in the working directory), between
//! runs on the real server: the real server then gets every later request
//! of a session whose history holds that result.
//!
//! A subagent's child runs on the real server at the parent's declared
//! 4,096-token window (`a_child_at_a_4k_window_completes`): the model
//! cannot call `task` either, so a router in the test gives the parent's
//! first request to the fake server, which answers with the call, and
//! every other request (the child's, the parent's next) to the real one.
//!
//! A server answers one request at a time, so each test holds one server
//! for its whole length ([`server`]); `REVOLVE_LLAMA_URL` may list several,
//! comma-separated (`.ci/llama-server` starts one per core), and
//! `--test-threads` as many runs that many tests at once. Each test prints
//! its runs' wall times on stderr.

use std::io::{Read, Write};
use std::process::Stdio;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::servers::{Lease, Pool};
use crate::common::{Run, TestEnv, POLL};

/// llama-cpp-python's servers, `.ci/llama-server`'s (see [`Pool`]).
static SERVERS: Pool = Pool::new(
    "REVOLVE_LLAMA_URL",
    "the llama.cpp servers .ci/llama-server starts (.ci/run does)",
);

/// A free server's URL, held until the lease drops.
fn server() -> (String, Lease) {
    SERVERS.take()
}

/// The context the server runs with (`.ci/llama-server`'s `--n_ctx`).
const N_CTX: &str = "4096";

/// The longest one run may take before it is killed and counted failed.
const RUN_LIMIT: Duration = Duration::from_secs(600); // not policy: a test's bound on a hung run

/// The most tool rounds a turn may take (the model may emit junk calls).
const TOOL_ROUNDS: &str = "2";

/// Varied English, from which every user line is built.
const PARAGRAPHS: [&str; 10] = [
    "The old harbour town wakes before the sun. Fishing boats leave the quay in a slow line, their engines coughing in the cold air, while the baker on the corner pulls the first loaves from an oven that has burned every night for sixty years.",
    "Bees do not see red, but they see ultraviolet, and many flowers carry patterns in that light that guide an insect to the nectar. A meadow that looks plain to us is, to a bee, covered in landing strips and painted arrows.",
    "When the railway reached the valley in 1871, the village doubled in a decade. Quarry stone went out by the wagon load, and newspapers, letters and strangers came in, so that the school had to be rebuilt twice before the century ended.",
    "A good sourdough starter needs only flour, water and patience. Feed it at the same hour each day, keep it somewhere warm, and within a week the jar will rise and fall like a slow breath, smelling faintly of apples and yoghurt.",
    "The committee met on Thursday to discuss the budget for the new library wing. Most members agreed that the reading room should face north for even light, but nobody could agree on whether the children's section belonged upstairs or down.",
    "Glaciers move, though too slowly to watch. They grind the rock beneath them into a fine flour that turns meltwater rivers milky blue, and they leave behind boulders the size of houses in fields far from any mountain.",
    "My grandmother kept every letter she ever received in shoe boxes under her bed, tied with ribbon by year. Reading them now, you can follow the whole family through wars, weddings, harvests and one long argument about a borrowed bicycle.",
    "In chess, the opening is a race to develop pieces and control the centre, the middle game a search for plans, and the endgame a matter of precise counting, where a single tempo decides whether a pawn becomes a queen.",
    "The night train crosses the border a little after two in the morning. Passengers wake to voices in the corridor, a torch, a stamp pressed into a passport, and then the slow rocking starts again through forests nobody will remember seeing.",
    "Copper roofs turn green because the metal reacts with air and rain to form a thin crust called patina. The crust protects the copper underneath, so a roof that looks old and tired may in fact be good for another hundred years.",
];

/// The user's line for turn `n`: about 2,800 bytes (about 700 tokens) of
/// the paragraphs, a different mix each turn, one line, asking for a brief
/// answer.
fn turn_line(n: usize) -> String {
    let mut line = format!("Turn {n}. Here are some notes to read.");
    let mut i = n;
    while line.len() < 2_700 {
        line.push(' ');
        line.push_str(PARAGRAPHS[i % PARAGRAPHS.len()]);
        i += 3;
    }
    line.push_str(
        " Answer briefly, in one or two sentences: what is one thing these notes mention?",
    );
    line
}

/// Lines `from..to` as stdin.
fn turn_lines(from: usize, to: usize) -> String {
    (from..to).map(|n| format!("{}\n", turn_line(n))).collect()
}

/// About 20 KB of numbered lines of the paragraphs: the file the scripted
/// run reads.
fn notes() -> String {
    let mut text = String::new();
    let mut n = 0;
    while text.len() < 20_480 {
        text.push_str(&format!("{n}: {}\n", PARAGRAPHS[n % PARAGRAPHS.len()]));
        n += 1;
    }
    text
}

/// How a run is given its window.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Window {
    /// `--window 4096`, the server's real context.
    Declared,
    /// No window given: a new session asks the server.
    Asked,
}

/// The arguments of a run on the real server.
fn real_args(url: &str, window: Option<&str>, resume: bool) -> Vec<String> {
    let mut args: Vec<String> = [
        "--provider",
        "llamacpp",
        "--base-url",
        url,
        "--model",
        "smollm2",
        "--max-tool-rounds",
        TOOL_ROUNDS,
    ]
    .map(str::to_owned)
    .to_vec();
    if let Some(w) = window {
        args.extend(["--window".to_owned(), w.to_owned()]);
    }
    if resume {
        args.push("--continue".to_owned());
    }
    args
}

/// One scenario's world and what went wrong in it so far.
struct Scenario {
    name: &'static str,
    env: TestEnv,
    started: Instant,
    problems: Vec<String>,
    /// The stderr of every run, for the evidence.
    said: Vec<String>,
}

impl Scenario {
    fn new(name: &'static str) -> Scenario {
        Scenario {
            name,
            env: TestEnv::new(name),
            started: Instant::now(),
            problems: Vec::new(),
            said: Vec::new(),
        }
    }

    /// Runs revolve with `args`, feeding `stdin`, at most [`RUN_LIMIT`];
    /// prints its wall time, keeps its stderr, and counts a failed exit
    /// as a problem.
    fn run(&mut self, what: &str, args: &[String], stdin: String) -> Run {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let started = Instant::now();
        let run = run_within(&self.env, &args, stdin, RUN_LIMIT);
        eprintln!(
            "real_server: {}: {what}: {:.1} s, exit {:?}",
            self.name,
            started.elapsed().as_secs_f64(),
            run.code
        );
        self.said.push(format!("--- {what}:\n{}", run.stderr));
        if run.code != Some(0) {
            self.problems.push(format!(
                "{what}: exit {:?} (signal {:?}); revolve said: {}",
                run.code,
                run.signal,
                said_last(&run.stderr, 4)
            ));
        }
        run
    }

    /// The session's records, every file of its chain in order.
    fn log(&self) -> Vec<Value> {
        chain(&self.env)
    }

    /// Every user message of the log since record `from` is answered, and
    /// there are `expected` of them.
    fn answered(&mut self, what: &str, from: usize, expected: usize) {
        let log = self.log();
        let mut turns: Vec<Option<&'static str>> = Vec::new();
        for r in log.iter().skip(from) {
            if r["type"] != "message" {
                continue;
            }
            match r["role"].as_str() {
                Some("user") => turns.push(Some("no answer")),
                Some("assistant") if no_calls(r) => {
                    if let Some(last) = turns.last_mut() {
                        *last = if r["partial"] == true {
                            Some("a partial answer")
                        } else if r["content"].as_str().is_none_or(|c| c.trim().is_empty()) {
                            Some("an empty answer (what an empty event stream leaves)")
                        } else {
                            None
                        };
                    }
                }
                _ => {}
            }
        }
        if turns.len() != expected {
            self.problems.push(format!(
                "{what}: {} of the {expected} turns fed reached the log",
                turns.len()
            ));
        }
        for (i, why) in turns.iter().enumerate() {
            if let Some(why) = why {
                self.problems
                    .push(format!("{what}: its turn {} got {why}", i + 1));
            }
        }
    }

    /// The server refused nothing since record `from`: no `overflowed`,
    /// `failed` or `compaction_failed` record.
    fn never_refused(&mut self, what: &str, from: usize) {
        for r in self.log().iter().skip(from) {
            let kind = r["type"].as_str().unwrap_or("?");
            if matches!(kind, "overflowed" | "failed" | "compaction_failed") {
                self.problems
                    .push(format!("{what}: the log has a refusal: {}", brief(r)));
            }
        }
    }

    /// `revolve replay --check` passes on the session.
    fn replays(&mut self) {
        let check = self.env.run(&["replay", "--check"], "");
        if check.code != Some(0) || !check.stdout.contains(" 0 inconsistencies") {
            self.problems.push(format!(
                "replay --check: exit {:?}: {}{}",
                check.code,
                check.stdout.trim(),
                check.stderr.trim()
            ));
        }
    }

    /// The window the session's header or last `resumed` record says.
    /// The window the session has at the end of its log: the newest file's
    /// header, a resume, or a refusal from which it learned the server's
    /// context.
    fn window_now(&self) -> Option<u64> {
        self.log()
            .iter()
            .rev()
            .find(|r| {
                matches!(
                    r["type"].as_str(),
                    Some("header" | "resumed" | "overflowed")
                )
            })
            .and_then(|r| r["window"].as_u64())
    }

    fn window(&self) -> Option<u64> {
        self.log()
            .iter()
            .rev()
            .find(|r| r["type"] == "resumed" || (r["type"] == "header" && r["continues"].is_null()))
            .and_then(|r| r["window"].as_u64())
    }

    /// Passes, or fails with every problem and the evidence.
    fn done(self) {
        eprintln!(
            "real_server: {}: {:.1} s in all, window {:?}",
            self.name,
            self.started.elapsed().as_secs_f64(),
            self.window()
        );
        if self.problems.is_empty() {
            return;
        }
        let evidence = evidence(&self.env, &self.log(), &self.said);
        panic!(
            "{}: {} problem(s):\n  {}\n\n{evidence}",
            self.name,
            self.problems.len(),
            self.problems.join("\n  ")
        );
    }
}

/// Whether an assistant message calls no tool.
fn no_calls(message: &Value) -> bool {
    message["tool_calls"]
        .as_array()
        .is_none_or(|calls| calls.is_empty())
}

/// A record in one line, long strings cut.
fn brief(record: &Value) -> String {
    let mut r = record.clone();
    if let Some(map) = r.as_object_mut() {
        for v in map.values_mut() {
            if let Some(s) = v.as_str() {
                if s.len() > 200 {
                    *v = Value::String(format!("{}… ({} bytes)", cut(s, 200), s.len()));
                }
            } else if v.is_array() || v.is_object() {
                let text = v.to_string();
                if text.len() > 200 {
                    *v = Value::String(format!("{}… ({} bytes)", cut(&text, 200), text.len()));
                }
            }
        }
    }
    r.to_string()
}

/// At most `n` bytes of `s`, at a character boundary.
fn cut(s: &str, n: usize) -> &str {
    let mut end = n.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// What revolve said of its own on stderr (`revolve: …`, `window: …`,
/// `compaction…`, `! …`; not the conversation a resumed run shows again):
/// the last `n` such lines, each cut to 300 bytes, joined with ` | `.
fn said_last(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| {
            ["revolve:", "window:", "compaction", "! "]
                .iter()
                .any(|p| l.starts_with(p))
        })
        .map(|l| cut(l, 300))
        .collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}

/// What a failure shows: every run's stderr, the records other than
/// messages, each message's role and size, and the bytes of every request
/// `replay --requests` rebuilds.
fn evidence(env: &TestEnv, log: &[Value], said: &[String]) -> String {
    let mut out = String::from("stderr of each run (lines cut to 300 bytes):\n");
    for s in said {
        for line in s.lines() {
            out.push_str(&env.redact(cut(line, 300)));
            out.push('\n');
        }
    }
    out.push_str("\nthe log (messages as role and size):\n");
    for r in log {
        if r["type"] == "message" {
            let calls = r["tool_calls"].as_array().map_or(0, Vec::len);
            out.push_str(&format!(
                "  message {} {} bytes{}{}{}\n",
                r["role"].as_str().unwrap_or("?"),
                r["content"].as_str().map_or(0, str::len),
                if calls > 0 {
                    format!(", {calls} call(s)")
                } else {
                    String::new()
                },
                if r["partial"] == true {
                    ", partial"
                } else {
                    ""
                },
                if r["truncated"] == true {
                    ", truncated"
                } else {
                    ""
                },
            ));
        } else if r["type"] != "context" {
            out.push_str(&format!("  {}\n", env.redact(&brief(r))));
        }
    }
    let requests = env.run(&["replay", "--requests"], "");
    out.push_str("\nrequests (bytes, messages, max_tokens):\n");
    for (i, line) in requests.stdout.lines().enumerate() {
        let body: Value = serde_json::from_str(line).unwrap_or(Value::Null);
        out.push_str(&format!(
            "  {}: {} bytes, {} messages, max_tokens {}\n",
            i + 1,
            line.len(),
            body["messages"].as_array().map_or(0, Vec::len),
            body["max_tokens"]
        ));
    }
    out
}

/// The records of the session's chain, oldest file first (ids do not
/// sort by age here: every run's pinned clock starts at the same time).
fn chain(env: &TestEnv) -> Vec<Value> {
    let files: Vec<Vec<Value>> = env
        .session_files()
        .iter()
        .map(|f| {
            crate::common::lines(f)
                .iter()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect()
        })
        .collect();
    let header = |f: &Vec<Value>| f.first().cloned().unwrap_or(Value::Null);
    let mut next = files.iter().find(|f| header(f)["continues"].is_null());
    let mut out = Vec::new();
    while let Some(file) = next {
        out.extend(file.iter().cloned());
        let id = file
            .iter()
            .rev()
            .find(|r| r["type"] == "continued")
            .and_then(|r| r["next"].as_str().map(str::to_owned));
        next = id.and_then(|id| files.iter().find(|f| header(f)["id"] == id.as_str()));
    }
    out
}

/// Runs the binary with `args` in `env`, feeding `stdin`; kills it after
/// `within` (the run then has no exit code).
fn run_within(env: &TestEnv, args: &[&str], stdin: String, within: Duration) -> Run {
    let mut child = env
        .command(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start revolve");
    let mut pipe = child.stdin.take().expect("stdin is piped");
    let writer = std::thread::spawn(move || {
        let _ = pipe.write_all(stdin.as_bytes());
    });
    let reader = |mut from: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = from.read_to_end(&mut bytes);
            String::from_utf8_lossy(&bytes).into_owned()
        })
    };
    let stdout = reader(Box::new(child.stdout.take().expect("stdout is piped")));
    let stderr = reader(Box::new(child.stderr.take().expect("stderr is piped")));
    let deadline = Instant::now() + within;
    let mut killed = false;
    let status = loop {
        if let Some(status) = child.try_wait().expect("poll revolve") {
            break status;
        }
        if Instant::now() >= deadline {
            child.kill().ok();
            killed = true;
            break child.wait().expect("wait for revolve");
        }
        std::thread::sleep(POLL);
    };
    writer.join().ok();
    let mut stderr = stderr.join().unwrap_or_default();
    if killed {
        stderr.push_str(&format!("[killed by the test after {within:?}]\n"));
    }
    Run {
        code: status.code(),
        signal: std::os::unix::process::ExitStatusExt::signal(&status),
        stdout: stdout.join().unwrap_or_default(),
        stderr,
    }
}

/// The window flag of a first run.
fn first_window(window: Window) -> Option<&'static str> {
    match window {
        Window::Declared => Some(N_CTX),
        Window::Asked => None,
    }
}

/// Ten turns of about 700 tokens each, one piped run.
fn ten_turns(window: Window, name: &'static str) {
    let (url, _lease) = server();
    let mut s = Scenario::new(name);
    s.run(
        "ten turns",
        &real_args(&url, first_window(window), false),
        turn_lines(1, 11),
    );
    s.answered("ten turns", 0, 10);
    if window == Window::Declared {
        s.never_refused("ten turns", 0);
    }
    s.replays();
    s.done();
}

#[test]
#[ignore = "needs REVOLVE_LLAMA_URL: a llama.cpp server (.ci/run starts them and runs this group by name)"]
fn ten_turns_at_a_declared_window() {
    ten_turns(Window::Declared, "ten-declared");
}

#[test]
#[ignore = "needs REVOLVE_LLAMA_URL: a llama.cpp server (.ci/run starts them and runs this group by name)"]
fn ten_turns_with_no_window_given() {
    ten_turns(Window::Asked, "ten-asked");
}

/// A session whose history holds a 20 KB `read_file` result: one turn on
/// the real server, one scripted turn that reads `notes.txt` (the model
/// cannot be made to call a tool), then three turns on the real server.
fn a_big_tool_result(window: Window, name: &'static str) {
    let (url, _lease) = server();
    let mut s = Scenario::new(name);
    std::fs::write(s.env.cwd.join("notes.txt"), notes()).expect("write notes.txt");
    s.run(
        "first turn",
        &real_args(&url, first_window(window), false),
        "Hello. I will show you some notes soon. Answer briefly.\n".to_owned(),
    );
    // The scripted provider answers request N with line N: the requests so
    // far are the real server's, then the read, then answers (as many as a
    // compaction in the run may also ask for).
    let sent = s
        .log()
        .iter()
        .rev()
        .find(|r| r["type"] == "totals")
        .and_then(|r| r["requests"].as_u64())
        .unwrap_or(0);
    let mut script = String::new();
    for _ in 0..sent {
        script.push_str("{\"text\": \"(the real server answered this request)\"}\n");
    }
    script.push_str(
        "{\"tool_calls\": [{\"name\": \"read_file\", \"arguments\": {\"path\": \"notes.txt\"}}]}\n",
    );
    for _ in 0..8 {
        script.push_str("{\"text\": \"I read notes.txt: numbered lines of notes.\"}\n");
    }
    let script_path = s.env.root.join("read.jsonl");
    std::fs::write(&script_path, script).expect("write the script");
    let from = s.log().len();
    s.run(
        "the scripted read",
        &[
            "--continue",
            "--provider",
            "scripted",
            "--script",
            script_path.to_str().expect("a UTF-8 path"),
            "--max-tool-rounds",
            TOOL_ROUNDS,
            // The scripted answers are not a model that can write notes:
            // this run must not compact (the real server does it later).
            "--window",
            "1000000",
        ]
        .map(str::to_owned),
        "Read notes.txt, please.\n".to_owned(),
    );
    s.answered("the scripted read", from, 1);
    let read = s
        .log()
        .iter()
        .any(|r| r["role"] == "tool" && r["content"].as_str().is_some_and(|c| c.len() > 20_000));
    if !read {
        s.problems
            .push("the scripted read: no tool result over 20,000 bytes in the log".to_owned());
    }
    let from = s.log().len();
    let mut lines = turn_lines(1, 3);
    lines.push_str("What is notes.txt about? Answer briefly.\n");
    // Back to the session's own window: 4,096 declared, or the 128,000 a
    // session given none started with (this server names none).
    let own = match window {
        Window::Declared => "4096",
        Window::Asked => "128000",
    };
    s.run(
        "three turns after",
        &real_args(&url, Some(own), true),
        lines,
    );
    s.answered("three turns after", from, 3);
    if window == Window::Declared {
        s.never_refused("the session", 0);
    }
    s.replays();
    s.done();
}

#[test]
#[ignore = "needs REVOLVE_LLAMA_URL: a llama.cpp server (.ci/run starts them and runs this group by name)"]
fn a_20kb_tool_result_at_a_declared_window() {
    a_big_tool_result(Window::Declared, "tool-declared");
}

#[test]
#[ignore = "needs REVOLVE_LLAMA_URL: a llama.cpp server (.ci/run starts them and runs this group by name)"]
fn a_20kb_tool_result_with_no_window_given() {
    a_big_tool_result(Window::Asked, "tool-asked");
}

/// Two turns under `--window 32768` (the server's context is 4,096), then
/// four more resumed: under `--window 4096`, or with no window given (the
/// session keeps the window it had: its 32,768, which the server cannot
/// hold, or the 4,096 it learned from the server's refusal when the model's
/// first answers were long enough to be refused).
fn resumed_smaller(window: Window, name: &'static str) {
    let (url, _lease) = server();
    let mut s = Scenario::new(name);
    s.run(
        "two turns at 32768",
        &real_args(&url, Some("32768"), false),
        turn_lines(1, 3),
    );
    s.answered("two turns at 32768", 0, 2);
    let from = s.log().len();
    let had = s.window_now();
    s.run(
        "four turns resumed",
        &real_args(&url, first_window(window), true),
        turn_lines(3, 7),
    );
    s.answered("four turns resumed", from, 4);
    let expected = match window {
        Window::Declared => 4096,
        // Never a window it did not have: 32,768, or what it learned.
        Window::Asked => had.unwrap_or(32768),
    };
    if window == Window::Asked && ![Some(32768), Some(4096)].contains(&had) {
        s.problems.push(format!(
            "the session had window {had:?} before its resume, neither 32768 nor the server's 4096"
        ));
    }
    if s.window() != Some(expected) {
        s.problems.push(format!(
            "the resumed session runs with window {:?}, not {expected}",
            s.window()
        ));
    }
    if window == Window::Declared {
        s.never_refused("four turns resumed", from);
    }
    s.replays();
    s.done();
}

#[test]
#[ignore = "needs REVOLVE_LLAMA_URL: a llama.cpp server (.ci/run starts them and runs this group by name)"]
fn resumed_from_32768_at_a_declared_4096() {
    resumed_smaller(Window::Declared, "resumed-declared");
}

#[test]
#[ignore = "needs REVOLVE_LLAMA_URL: a llama.cpp server (.ci/run starts them and runs this group by name)"]
fn resumed_from_32768_with_no_window_given() {
    resumed_smaller(Window::Asked, "resumed-asked");
}

/// A router on 127.0.0.1 between revolve and two servers: the first
/// request that offers the `task` tool (a parent's: a child is never
/// offered it) goes to `first`, every other request to `rest`. Each
/// connection's request goes on with `Connection: close` and its answer
/// comes back byte for byte. Returns the router's URL and the number of
/// requests each way so far (`first`, `rest`).
fn router(first: &str, rest: &str) -> (String, std::sync::Arc<Mutex<(usize, usize)>>) {
    use std::net::{TcpListener, TcpStream};
    fn host(url: &str) -> String {
        let rest = url.strip_prefix("http://").expect("an http:// server URL");
        rest.split_once('/').map_or(rest, |(h, _)| h).to_owned()
    }
    fn relay(mut client: TcpStream, first: &str, rest: &str, counts: &Mutex<(usize, usize)>) {
        let mut data = Vec::new();
        let mut buf = [0u8; 16_384];
        let head_end = loop {
            if let Some(at) = data.windows(4).position(|w| w == b"\r\n\r\n") {
                break at;
            }
            match client.read(&mut buf) {
                Ok(n) if n > 0 => data.extend_from_slice(&buf[..n]),
                _ => return,
            }
        };
        let head = String::from_utf8_lossy(&data[..head_end]).into_owned();
        let length = head
            .lines()
            .filter_map(|l| l.split_once(':'))
            .find(|(n, _)| n.trim().eq_ignore_ascii_case("content-length"))
            .and_then(|(_, v)| v.trim().parse::<usize>().ok())
            .unwrap_or(0);
        let mut body = data.split_off(head_end + 4);
        while body.len() < length {
            match client.read(&mut buf) {
                Ok(n) if n > 0 => body.extend_from_slice(&buf[..n]),
                _ => return,
            }
        }
        let offers_task = String::from_utf8_lossy(&body).contains(r#""name":"task""#);
        let to = {
            let mut counts = counts.lock().unwrap_or_else(|e| e.into_inner());
            if offers_task && counts.0 == 0 {
                counts.0 += 1;
                first
            } else {
                counts.1 += 1;
                rest
            }
        };
        let kept: Vec<&str> = head
            .split("\r\n")
            .filter(|l| {
                let l = l.to_ascii_lowercase();
                !l.starts_with("connection:") && !l.starts_with("host:")
            })
            .collect();
        let Ok(mut upstream) = TcpStream::connect(to) else {
            return;
        };
        let out = format!(
            "{}\r\nhost: {to}\r\nconnection: close\r\n\r\n",
            kept.join("\r\n")
        );
        if upstream.write_all(out.as_bytes()).is_err() || upstream.write_all(&body).is_err() {
            return;
        }
        while let Ok(n) = upstream.read(&mut buf) {
            if n == 0 || client.write_all(&buf[..n]).is_err() {
                break;
            }
        }
    }
    let (first, rest) = (host(first), host(rest));
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind the router");
    let url = format!("http://{}/v1", listener.local_addr().expect("its address"));
    let counts = std::sync::Arc::new(Mutex::new((0, 0)));
    let seen = std::sync::Arc::clone(&counts);
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let (first, rest, seen) = (first.clone(), rest.clone(), std::sync::Arc::clone(&seen));
            std::thread::spawn(move || relay(client, &first, &rest, &seen));
        }
    });
    (url, counts)
}

/// A parent on the real server whose first answer is a `task` call (the
/// model cannot be made to call a tool: the router gives that one request
/// to the test's fake server, which answers with the call), and a child
/// that runs on the real server at the parent's declared 4,096-token
/// window: both complete, the child's answer is the call's result, and
/// both logs replay.
#[test]
#[ignore = "needs REVOLVE_LLAMA_URL: a llama.cpp server (.ci/run starts them and runs this group by name)"]
fn a_child_at_a_4k_window_completes() {
    let (url, _lease) = server();
    let mut s = Scenario::new("task-4k");
    let dir = s.env.cwd.join(".agents/agents");
    std::fs::create_dir_all(&dir).expect("make .agents/agents");
    std::fs::write(
        dir.join("reader.md"),
        "---\ndescription: Reads and sums up text.\n---\nYou sum up the text you are given in two sentences.\n",
    )
    .expect("write the definition");
    let call = serde_json::json!({
        "description": "sum up the text",
        "prompt": turn_line(1),
        "subagent": "reader",
    })
    .to_string();
    let fake = revolve_testkit::FakeServer::start(vec![revolve_testkit::FakeReply::tool_calls(
        "",
        &[("call_task", "task", &call)],
    )])
    .expect("start the fake server");
    let (routed, counts) = router(&fake.url(), &url);
    s.run(
        "a parent and its child",
        &real_args(&routed, Some(N_CTX), false),
        "Have the text summed up by a subagent, then answer briefly.\n".to_owned(),
    );
    let (to_fake, to_real) = *counts.lock().unwrap_or_else(|e| e.into_inner());
    if to_fake != 1 || to_real < 2 {
        s.problems.push(format!(
            "the requests: {to_fake} to the fake (1 expected), {to_real} to the real server (the child's and the parent's next: 2 or more expected)"
        ));
    }
    let files = s.env.session_files();
    let logs: Vec<Vec<Value>> = files.iter().map(|f| crate::common::records(f)).collect();
    let child = logs
        .iter()
        .position(|l| l.iter().any(|r| r["type"] == "spawned"));
    let parent = logs
        .iter()
        .position(|l| l.iter().any(|r| r["type"] == "delegated"));
    match (parent, child) {
        (Some(p), Some(c)) => {
            let (parent, child) = (&logs[p], &logs[c]);
            if child[0]["window"] != 4096 {
                s.problems.push(format!(
                    "the child's window is {}, not 4096",
                    child[0]["window"]
                ));
            }
            let answered = child.iter().any(|r| {
                r["type"] == "message"
                    && r["role"] == "assistant"
                    && no_calls(r)
                    && r["content"].as_str().is_some_and(|c| !c.trim().is_empty())
            });
            if !answered {
                s.problems.push("the child gave no answer".to_owned());
            }
            let result = parent
                .iter()
                .find(|r| r["type"] == "message" && r["role"] == "tool")
                .and_then(|r| r["content"].as_str())
                .unwrap_or_default();
            if result.trim().is_empty() || result.starts_with("error:") {
                s.problems
                    .push(format!("the task call's result: {:?}", cut(result, 300)));
            }
            for (what, log) in [("the parent", parent), ("the child", child)] {
                for r in log {
                    let kind = r["type"].as_str().unwrap_or("?");
                    if matches!(kind, "overflowed" | "failed" | "compaction_failed") {
                        s.problems
                            .push(format!("{what}'s log has a refusal: {}", brief(r)));
                    }
                }
            }
            for (what, file) in [("the parent", &files[p]), ("the child", &files[c])] {
                let path = file.to_str().expect("a UTF-8 path");
                let check = s.env.run(&["replay", "--check", path], "");
                if check.code != Some(0) || !check.stdout.contains(" 0 inconsistencies") {
                    s.problems.push(format!(
                        "replay --check of {what}: {}{}",
                        check.stdout.trim(),
                        check.stderr.trim()
                    ));
                }
            }
            s.answered("a parent and its child", 0, 1);
        }
        _ => s.problems.push(format!(
            "no parent with a delegated record and child with a spawned one among {} log(s)",
            files.len()
        )),
    }
    s.done();
}
