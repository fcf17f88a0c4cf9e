//! Fuzzing the readers of untrusted bytes, in bounded time: the session
//! log reader (`Record::parse_line`, `log::each_record`, then the core's
//! fold, as `replay --check` runs them), the SSE parser of model answers,
//! and the providers reading mutated answers from the fake server. Inputs are arbitrary bytes and valid inputs mutated (bytes
//! flipped, cut, spliced, duplicated, junk inserted); every case must end
//! without a panic, and what comes out must stay in proportion to what
//! went in (no allocation a few bytes of input can blow up).
//!
//! quickcheck drives it with a fixed number of cases (`CASES` each), so a
//! run takes a few seconds; a failure prints the (shrunk) input.

use std::io::Write;
use std::path::PathBuf;

use quickcheck::{Arbitrary, Gen, QuickCheck, TestResult, Testable};

use revolve_core::record::{Message, Record};
use revolve_core::request::Wire;
use revolve_core::state::State;
use revolve_core::Request;
use revolve_provider::{Anthropic, OpenAi, Provider, SseEvent, SseParser};
use revolve_store::log;
use revolve_testkit::{FakeReply, FakeServer};
use revolve_view as view;

/// Cases per property.
const CASES: u64 = 1000;
/// The size quickcheck's generator works with (lengths of the byte vectors
/// and of the mutation lists).
const SIZE: usize = 300;

/// Runs `prop` on `CASES` inputs drawn from a generator seeded with
/// `seed`: the same inputs on every run.
fn check<T: Testable>(seed: u64, prop: T) {
    check_sized(seed, SIZE, prop)
}

/// [`check`] with a generator of another size.
fn check_sized<T: Testable>(seed: u64, size: usize, prop: T) {
    QuickCheck::new()
        .tests(CASES)
        .max_tests(CASES * 2)
        .rng(Gen::from_size_and_seed(size, seed))
        .quickcheck(prop);
}

/// A valid session log (the fixture every replay test reads).
fn valid_log() -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures/sessions/basic.jsonl");
    std::fs::read(path).expect("the fixture log")
}

/// A valid event stream: OpenAI chunks with text and a tool call, usage,
/// `[DONE]`; and Anthropic events.
const VALID_SSE: &str = concat!(
    "data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n",
    "data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello \\u00e9\"}}]}\n\n",
    ": keep-alive\r\n\r\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"function\":{\"name\":\"read_file\",\"arguments\":\"{\\\"pa\"}}]}}]}\n\n",
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}}\n\n",
    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\"}}\n\n",
    "event: content_block_delta\rdata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\r\r",
    "data: [DONE]\n\n",
);

/// One way to damage an input.
#[derive(Clone, Debug)]
enum Mutation {
    /// Flip the bits of `mask` in the byte at `at`.
    Flip { at: usize, mask: u8 },
    /// Remove `len` bytes from `at`.
    Cut { at: usize, len: usize },
    /// Insert these bytes at `at`.
    Insert { at: usize, bytes: Vec<u8> },
    /// Copy `len` bytes from `from` to `at`.
    Splice { from: usize, len: usize, at: usize },
    /// Keep only the first `len` bytes.
    Truncate { len: usize },
    /// Insert a byte that matters to the format (quotes, braces, line
    /// ends, a colon, a backslash, a lone UTF-8 lead byte).
    Special { at: usize, which: usize },
}

const SPECIAL: [&[u8]; 12] = [
    b"\"", b"{", b"}", b"\n", b"\r", b"\r\n", b":", b"\\", b"\xc3", b"\xff", b"\\u", b"data: ",
];

impl Arbitrary for Mutation {
    fn arbitrary(g: &mut Gen) -> Mutation {
        let at = usize::arbitrary(g);
        match u8::arbitrary(g) % 6 {
            0 => Mutation::Flip {
                at,
                mask: u8::arbitrary(g).max(1),
            },
            1 => Mutation::Cut {
                at,
                len: usize::arbitrary(g) % 64,
            },
            2 => Mutation::Insert {
                at,
                bytes: Vec::<u8>::arbitrary(g).into_iter().take(32).collect(),
            },
            3 => Mutation::Splice {
                from: usize::arbitrary(g),
                len: usize::arbitrary(g) % 256,
                at,
            },
            4 => Mutation::Truncate {
                len: usize::arbitrary(g),
            },
            _ => Mutation::Special {
                at,
                which: usize::arbitrary(g),
            },
        }
    }
}

fn mutate(mut bytes: Vec<u8>, mutations: &[Mutation]) -> Vec<u8> {
    for m in mutations {
        let n = bytes.len();
        let pos = |at: usize| if n == 0 { 0 } else { at % (n + 1) };
        match m {
            Mutation::Flip { at, mask } if n > 0 => bytes[at % n] ^= mask,
            Mutation::Flip { .. } => {}
            Mutation::Cut { at, len } => {
                let start = pos(*at);
                let end = (start + len).min(n);
                bytes.drain(start..end);
            }
            Mutation::Insert { at, bytes: new } => {
                let at = pos(*at);
                bytes.splice(at..at, new.iter().copied());
            }
            Mutation::Splice { from, len, at } if n > 0 => {
                let from = from % n;
                let piece: Vec<u8> = bytes[from..(from + len).min(n)].to_vec();
                let at = pos(*at);
                bytes.splice(at..at, piece);
            }
            Mutation::Splice { .. } => {}
            Mutation::Truncate { len } => bytes.truncate(pos(*len)),
            Mutation::Special { at, which } => {
                let at = pos(*at);
                bytes.splice(at..at, SPECIAL[which % SPECIAL.len()].iter().copied());
            }
        }
    }
    bytes
}

// ---------------------------------------------------------------------------
// The log reader

/// What reading `bytes` as a log gives, checked: no panic (a panic fails the
/// property), every record re-serializes to at most a few times its line
/// (escaping may grow a string six-fold: `\u0000`), the reasons for
/// skipped lines stay short, and the core folds the records.
fn read_log(bytes: &[u8]) -> TestResult {
    // Line by line, as `Record::parse_line` sees them.
    for line in bytes.split(|b| *b == b'\n') {
        let Ok(text) = std::str::from_utf8(line) else {
            continue;
        };
        if let Ok(record) = Record::parse_line(text) {
            let again = serde_json::to_string(&record).expect("a record serializes");
            if again.len() > 6 * text.len() + 1024 {
                return TestResult::error(format!(
                    "a {}-byte line became a {}-byte record",
                    text.len(),
                    again.len()
                ));
            }
        }
    }

    // Whole, through a file, as `replay` reads it, then folded.
    let mut file = temp_log();
    file.1.write_all(bytes).expect("write the temp log");
    drop(file.1);
    let mut records = Vec::new();
    let mut skipped = Vec::new();
    let result = log::each_record(&file.0, |_, r| records.push(r), |s| skipped.push(s));
    if let Err(e) = result {
        return TestResult::error(format!("reading failed: {e}"));
    }
    let lines = bytes.split(|b| *b == b'\n').count();
    // One line may give both: the header behind stray bytes, and the note
    // that they were skipped.
    let stray = skipped
        .iter()
        .filter(|s| s.why.ends_with("stray byte(s) before the header"))
        .count();
    if stray > 1 {
        return TestResult::error("stray bytes before more than one header");
    }
    if records.len() + skipped.len() > lines + stray {
        return TestResult::error("more records and skipped lines than lines");
    }
    for s in &skipped {
        if s.why.len() > 512 + bytes.len() {
            return TestResult::error(format!("a {}-byte reason", s.why.len()));
        }
    }
    // Folded, shown (the transcript `replay` prints, the tail a resume
    // shows, the status line) like `replay` and `--resume` do.
    let mut state = State::default();
    let mut tail = view::TranscriptTail::new(4096);
    for r in &records {
        let _ = state.apply(r);
        tail.push(r);
    }
    let _ = view::status(&state);
    let shown = view::transcript(&records);
    let tail = tail.finish();
    for (what, text) in [("transcript", &shown), ("resume tail", &tail)] {
        if text.len() > 8 * bytes.len() + 4096 {
            return TestResult::error(format!(
                "a {}-byte log gave a {}-byte {what}",
                bytes.len(),
                text.len()
            ));
        }
    }
    TestResult::passed()
}

/// A temp file unique to this case: its path, which removes the file when
/// dropped, and the file open for writing.
fn temp_log() -> (tempfile::TempPath, std::fs::File) {
    let (file, path) = tempfile::Builder::new()
        .prefix("revolve-fuzz-")
        .suffix(".jsonl")
        .tempfile()
        .expect("create a temp log")
        .into_parts();
    (path, file)
}

#[test]
fn fuzz_the_log_reader_with_arbitrary_bytes() {
    fn prop(bytes: Vec<u8>) -> TestResult {
        read_log(&bytes)
    }
    check(1, prop as fn(Vec<u8>) -> TestResult);
}

#[test]
fn fuzz_the_log_reader_with_arbitrary_text_lines() {
    fn prop(lines: Vec<String>) -> TestResult {
        // Lines that start like records, so the typed parsing is reached.
        let text: String = lines
            .iter()
            .enumerate()
            .map(|(i, l)| match i % 3 {
                0 => format!("{{\"type\":\"message\",{l}\n"),
                1 => format!("{{\"type\":\"{l}\"}}\n"),
                _ => format!("{l}\n"),
            })
            .collect();
        read_log(text.as_bytes())
    }
    // Smaller: a list of strings of the full size is slow to generate.
    check_sized(2, 60, prop as fn(Vec<String>) -> TestResult);
}

#[test]
fn fuzz_the_log_reader_with_mutated_logs() {
    let valid = valid_log();
    assert!(!read_log(&valid).is_failure());
    fn prop(mutations: Vec<Mutation>) -> TestResult {
        read_log(&mutate(valid_log(), &mutations))
    }
    check(3, prop as fn(Vec<Mutation>) -> TestResult);
}

// ---------------------------------------------------------------------------
// The SSE parser

/// Parses `bytes` fed in pieces of the given sizes (cycled); checks the
/// events do not depend on the pieces and that their data is at most three
/// times the input (each invalid byte may become a 3-byte U+FFFD).
fn parse_sse(bytes: &[u8], pieces: &[u8]) -> TestResult {
    let whole = feed(bytes, &[]);
    let pieced = feed(bytes, pieces);
    if whole != pieced {
        return TestResult::error("the events depend on how the bytes were cut");
    }
    let out: usize = whole
        .iter()
        .map(|e| e.data.len() + e.event.as_ref().map_or(0, String::len))
        .sum();
    if out > 3 * bytes.len() {
        return TestResult::error(format!("{} bytes gave {out} bytes of events", bytes.len()));
    }
    TestResult::passed()
}

fn feed(bytes: &[u8], pieces: &[u8]) -> Vec<SseEvent> {
    let mut parser = SseParser::new();
    let mut events = Vec::new();
    if pieces.is_empty() {
        events.extend(parser.feed(bytes));
    } else {
        let mut rest = bytes;
        for size in pieces.iter().cycle() {
            if rest.is_empty() {
                break;
            }
            let n = (*size as usize).max(1).min(rest.len());
            events.extend(parser.feed(&rest[..n]));
            rest = &rest[n..];
        }
    }
    events.extend(parser.finish());
    events
}

#[test]
fn fuzz_the_sse_parser_with_arbitrary_bytes() {
    fn prop(bytes: Vec<u8>, pieces: Vec<u8>) -> TestResult {
        parse_sse(&bytes, &pieces)
    }
    check(4, prop as fn(Vec<u8>, Vec<u8>) -> TestResult);
}

#[test]
fn fuzz_the_sse_parser_with_mutated_streams() {
    fn prop(mutations: Vec<Mutation>, pieces: Vec<u8>) -> TestResult {
        parse_sse(&mutate(VALID_SSE.as_bytes().to_vec(), &mutations), &pieces)
    }
    check(5, prop as fn(Vec<Mutation>, Vec<u8>) -> TestResult);
}

/// A line far longer than the parser keeps: the event that ends it holds
/// at most [`SseParser::MAX_LINE`] bytes, however much was sent.
#[test]
fn an_endless_sse_line_is_kept_bounded() {
    let mut parser = SseParser::new();
    assert!(parser.feed(b"data: ").is_empty());
    let block = vec![b'x'; 1 << 20];
    for _ in 0..(SseParser::MAX_LINE >> 20) + 4 {
        assert!(parser.feed(&block).is_empty());
    }
    let events = parser.feed(b"\n\n");
    assert_eq!(events.len(), 1);
    assert!(events[0].data.len() <= SseParser::MAX_LINE);
    assert!(events[0].data.len() >= SseParser::MAX_LINE - 8);
}

// ---------------------------------------------------------------------------
// The providers' stream handling, over a real connection

/// A complete OpenAI answer: text, a tool call in fragments, usage, end.
const OPENAI_STREAM: &str = concat!(
    "data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n",
    "data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello \\u00e9\"}}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"type\":\"function\",\"function\":{\"name\":\"read_file\",\"arguments\":\"\"}}]}}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"path\\\":\"}}]}}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"a.txt\\\"}\"}}]}}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}}\n\n",
    "data: [DONE]\n\n",
);

/// A complete Anthropic answer: a text block, a tool_use block, the end.
const ANTHROPIC_STREAM: &str = concat!(
    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n",
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    "event: ping\ndata: {\"type\":\"ping\"}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi \\u00e9\"}}\n\n",
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"read_file\",\"input\":{}}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"path\\\":\\\"a\\\"}\"}}\n\n",
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
    "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":5}}\n\n",
    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
);

/// Streams per protocol: each a mutation of the valid one.
const STREAMS: usize = 250;

/// Mutated answers, served over a socket one after another, read by the
/// provider: every one ends in a reply or an error, never a panic; a reply
/// holds no more than the stream did, an error is one line.
fn fuzz_provider(
    seed: u64,
    valid: &str,
    serve: fn(Vec<FakeReply>) -> FakeServer,
    make: fn(String) -> Box<dyn Provider>,
) {
    let mut gen = Gen::from_size_and_seed(40, seed);
    let bodies: Vec<String> = (0..STREAMS)
        .map(|_| {
            let mutations = Vec::<Mutation>::arbitrary(&mut gen);
            String::from_utf8_lossy(&mutate(valid.as_bytes().to_vec(), &mutations)).into_owned()
        })
        .collect();
    let server = serve(bodies.iter().cloned().map(FakeReply::Garbage).collect());
    let provider = make(server.url());
    let at = time::macros::datetime!(2026-12-05 12:00 UTC);
    let request = Request::build(Wire::OpenAi, "m", None, &[Message::user(at, "hi")]);
    let mut replies = 0;
    let mut i = 0;
    while i < bodies.len() {
        let mut shown = 0;
        let result = provider.complete(&request, &mut |t| shown += t.len());
        // A stream that brought nothing is asked again unstreamed, once:
        // that request took the next body, which answered.
        let sent = server.requests().len();
        assert!(
            sent == i + 1 || sent == i + 2,
            "stream {i}: {sent} requests"
        );
        i = sent - 1;
        let body = bodies.get(i).map_or("", String::as_str);
        i += 1;
        match result {
            Ok(reply) => {
                replies += 1;
                let held = reply.text.len()
                    + reply
                        .tool_calls
                        .iter()
                        .map(|c| c.id.len() + c.name.len() + c.arguments.len())
                        .sum::<usize>();
                assert!(
                    held <= 3 * body.len() + 64,
                    "stream {i}: {held} bytes from {body:?}"
                );
                assert_eq!(shown, reply.text.len(), "stream {i}");
            }
            Err(e) => {
                assert!(!e.message.contains('\n'), "stream {i}: {e}");
                assert!(e.message.len() < 1024, "stream {i}: {e}");
                assert!(e.partial.len() <= 3 * body.len(), "stream {i}");
            }
        }
    }
    // The mutations leave some answers whole.
    assert!(replies > 0);
}

#[test]
fn fuzz_the_openai_stream_handling() {
    fuzz_provider(
        7,
        OPENAI_STREAM,
        |r| FakeServer::start(r).unwrap(),
        |url| Box::new(OpenAi::new(url, None)),
    );
}

#[test]
fn fuzz_the_anthropic_stream_handling() {
    fuzz_provider(
        8,
        ANTHROPIC_STREAM,
        |r| FakeServer::start_anthropic(r).unwrap(),
        |url| Box::new(Anthropic::new(url, None)),
    );
}
