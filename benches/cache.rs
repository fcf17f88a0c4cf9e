//! What the prompt cache saves (`cargo bench --bench cache`): a 20-turn
//! session with tools (each turn reads a file, then answers) run by the real
//! binary in pipe mode on the Anthropic wire, against the fake server with
//! Anthropic's prompt cache ([`revolve_testkit::cache`]: breakpoints, the
//! 20-block look-back, 1024 tokens least). The figures are the server's own
//! counts: the share of input tokens read from cache, written to it, and
//! the bill relative to no caching at Anthropic's multipliers (a read costs
//! 0.1 of an input token, a write 1.25), and revolve's own totals from its
//! log, which must say the same. Run without `--bench` it is a smoke
//! run of 3 turns.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

use common::Scratch;
use revolve_testkit::{CacheUsage, FakeOptions, FakeProtocol, FakeReply, FakeServer};

fn main() {
    let (_, smoke) = common::scale();
    let turns = if smoke { 3 } else { 20 };
    let scratch = Scratch::new("cache");
    let home = scratch.path("home");
    let work = scratch.path("work");
    std::fs::create_dir_all(&home).expect("home");
    std::fs::create_dir_all(&work).expect("work");
    let notes: String = (0..40)
        .map(|i| format!("line {i}: the database listens on port 5432 of host db{i}\n"))
        .collect();
    std::fs::write(work.join("notes.txt"), &notes).expect("notes");

    let mut replies = Vec::new();
    for turn in 0..turns {
        replies.push(FakeReply::ToolCalls {
            text: String::new(),
            calls: vec![(
                format!("toolu_{turn}"),
                "read_file".into(),
                r#"{"path":"notes.txt"}"#.into(),
            )],
            usage: Some((0, 20)),
        });
        replies.push(FakeReply::Stream {
            chunks: vec![format!("Turn {turn}: port 5432.")],
            usage: Some((0, 10)),
        });
    }
    let options = FakeOptions {
        keep_alive: true,
        prompt_cache: Some(1024),
        ..FakeOptions::default()
    };
    let server = FakeServer::start_with_options(FakeProtocol::Anthropic, replies, options)
        .expect("the fake server");
    let input: String = (0..turns)
        .map(|t| format!("question {t}: which port does the database use?\n"))
        .collect();
    let mut child = Command::new(env!("CARGO_BIN_EXE_revolve"))
        .args(["--provider", "anthropic", "--base-url", &server.url()])
        .args(["--model", "claude-sonnet-4-5", "--retries", "0"])
        .current_dir(&work)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("XDG_STATE_HOME", home.join(".local/state"))
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("ANTHROPIC_API_KEY", "sk-ant-bench")
        .env("REVOLVE_NO_AUTO_REFINE", "true")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("revolve");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("writing the questions");
    let out = child.wait_with_output().expect("revolve ran");
    assert!(
        out.status.success(),
        "revolve failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let usages = server.cache_usage();
    assert_eq!(usages.len(), 2 * turns, "one count per request");
    let sum = usages
        .iter()
        .fold(CacheUsage::default(), |a, u| CacheUsage {
            input: a.input + u.input,
            read: a.read + u.read,
            written: a.written + u.written,
        });
    let total = sum.total() as f64;
    let billed = sum.input as f64 + 0.1 * sum.read as f64 + 1.25 * sum.written as f64;
    println!(
        "prompt cache over {turns} turns with tools: {} requests, {} input tokens",
        usages.len(),
        sum.total()
    );
    println!(
        "  read from cache {:.1}%, written {:.1}%, uncached {:.1}%; billed as {:.1}% of no caching",
        100.0 * sum.read as f64 / total,
        100.0 * sum.written as f64 / total,
        100.0 * sum.input as f64 / total,
        100.0 * billed / total
    );
    let hits = usages.iter().skip(1).filter(|u| u.read > 0).count();
    println!(
        "  requests after the first that read from cache: {hits} of {}",
        usages.len() - 1
    );
    // revolve's own totals, from its log: the same counts, as it kept them.
    let totals = last_totals(&home.join(".local/state"));
    let read = |key: &str| totals[key].as_u64().unwrap_or(0);
    println!(
        "  revolve's totals: {} input tokens, {} read from cache ({:.1}%), {} written",
        read("tokens_in"),
        read("tokens_cached"),
        100.0 * read("tokens_cached") as f64 / read("tokens_in").max(1) as f64,
        read("tokens_cache_written"),
    );
    assert_eq!(
        (
            read("tokens_in"),
            read("tokens_cached"),
            read("tokens_cache_written")
        ),
        (sum.total(), sum.read, sum.written),
        "revolve's totals are the server's counts"
    );
}

/// The last `totals` record of the one session log under `state`.
fn last_totals(state: &std::path::Path) -> serde_json::Value {
    let mut dirs = vec![state.to_path_buf()];
    let mut last = None;
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("the state folder").flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "jsonl")
                && path.parent().is_some_and(|p| p.ends_with("sessions"))
            {
                let text = std::fs::read_to_string(&path).expect("the log");
                last = text
                    .lines()
                    .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                    .rfind(|r| r["type"] == "totals");
            }
        }
    }
    last.expect("a totals record in the session log")
}
