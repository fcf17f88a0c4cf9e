//! A request body written straight from the history against the way it was
//! written before, each element built as a `serde_json::Value` first
//! (issue 46, item 2), side by side in one process: a history of 100 MB
//! (tool results and answers with newlines, quotes and tabs to escape),
//! on both wires; the figures are the medians of 5 runs of making the
//! request (which counts its length) and of writing the body to a sink.
//!
//! Re-run on a quiet machine: `cargo bench --bench body`
//! (`REVOLVE_BENCH_SCALE=0.1` for 10 MB). The whole resume it is part of:
//! `cargo build --release && REVOLVE_BENCH_ONLY=whole cargo bench --bench
//! scale` (100 MB resumed with `--window 100000000`, one request).
//! Without `--bench` it is a tiny smoke run.

mod common;

use std::hint::black_box;
use std::io;
use std::time::Instant;

use common::{base_time, median, ms, Rng};
use revolve_core::record::{Message, ToolCall};
use revolve_core::request::{AnswerLimit, Request, Wire};

const RUNS: usize = 5; // not policy: a bench's repeat count
const MB: usize = 1 << 20; // not policy: a unit

fn main() {
    let (scale, smoke) = common::scale();
    let size = ((100 * MB) as f64 * scale) as usize;
    let history = history(size);
    let bytes: usize = history.iter().map(|m| m.content.len()).sum();
    println!(
        "body bench: {} messages, {:.1} MB of text{}",
        history.len(),
        bytes as f64 / MB as f64,
        if smoke { " (smoke)" } else { "" }
    );
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let limit = Some(AnswerLimit::of("m", 8192));
        let made = median(
            &mut (0..RUNS)
                .map(|_| {
                    let t = Instant::now();
                    black_box(Request::limited(wire, "m", Some("system"), &history, limit));
                    t.elapsed()
                })
                .collect::<Vec<_>>(),
        );
        let request = Request::limited(wire, "m", Some("system"), &history, limit);
        let straight = median(
            &mut (0..RUNS)
                .map(|_| {
                    let t = Instant::now();
                    request.body.write_to(&mut io::sink()).expect("a sink");
                    t.elapsed()
                })
                .collect::<Vec<_>>(),
        );
        let valued = median(
            &mut (0..RUNS)
                .map(|_| {
                    let t = Instant::now();
                    request
                        .body
                        .write_valued_to(&mut io::sink())
                        .expect("a sink");
                    t.elapsed()
                })
                .collect::<Vec<_>>(),
        );
        println!(
            "{wire:?}: body {:.1} MB; made (and counted) in {}; written straight {}, \
             as values (before) {}: {:.2}x",
            request.body.len() as f64 / MB as f64,
            ms(made),
            ms(straight),
            ms(valued),
            valued.as_secs_f64() / straight.as_secs_f64()
        );
    }
}

/// Turns of a user line, an answer calling a tool, its result and a
/// closing answer, until `size` bytes of text.
fn history(size: usize) -> Vec<Message> {
    let mut rng = Rng(0xb0d1_0046);
    let at = base_time();
    let line = "    let x = \"quoted\";\t// a comment with a tab\n";
    let mut out = Vec::new();
    let mut total = 0;
    let mut n = 0;
    while total < size {
        n += 1;
        let result = line.repeat(1 + rng.below(400) as usize);
        let answer =
            "The test expects \"the old name\"; renaming it.\n".repeat(1 + rng.below(20) as usize);
        total += result.len() + answer.len() * 2 + 40;
        let id = format!("call_{n}");
        out.push(Message::user(at, "look at the failing test, please"));
        out.push(Message {
            tool_calls: vec![ToolCall {
                id: id.clone(),
                name: "read_file".into(),
                arguments: format!(r#"{{"path":"src/lib{n}.rs"}}"#),
            }],
            ..Message::assistant(at, answer.clone())
        });
        out.push(Message::tool(at, id, result));
        out.push(Message::assistant(at, answer));
    }
    out
}
