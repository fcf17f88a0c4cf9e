//! The real tool-calling group: revolve against llama.cpp's own C++ server
//! (`llama-server --jinja`, built from llama-cpp-python 0.3.16's llama.cpp
//! by `.ci/llama-cpp-server`, which prints `REVOLVE_LLAMA_CPP_URL`), with
//! SmolLM2-135M and its own chat template at a context of 4,096 tokens.
//! Unlike llama-cpp-python's server (the `real_server` group), this one
//! sends the `tools` array to the model: for a template without a tool
//! format it uses its generic one, a grammar that holds each answer to
//! `{"tool_call": …}` or `{"response": …}`, and streams the calls the model
//! writes as `delta.tool_calls`.
//!
//! The model is asked plainly, one turn per run, to list the directory, to
//! read a file and to run a command; the runs pass `--tool-choice
//! required` (the setting `tool_choice` of config.json), so each turn's
//! first request obliges the tiny model to call a tool, and the requests
//! after a tool result leave it free to answer. Nothing is faked: the
//! calls are the model's, revolve runs them and sends the results back.
//! At this window revolve offers its tools in brief (log format 7), and a
//! compaction continues the session in a new file between turns.
//!
//! Between revolve and the server sits a recording proxy ([`Proxy`]), so
//! the tests see every body the server received and every byte it
//! streamed: `revolve replay --requests` must rebuild the bodies byte for
//! byte. With `REVOLVE_CAPTURE_DIR` set, each streamed answer is also
//! written there (`N.sse`), to see what the server streams.
//!
//! The tests are `#[ignore]`d and run by name (`real_tools -- --ignored`,
//! as `.ci/run` does) with `REVOLVE_LLAMA_CPP_URL` set; a test asked for
//! without a server fails, so ok means ran. The model's arguments are its
//! own: it may invent a path, or ramble inside one until its answer's
//! limit, which is why revolve sends back arguments that do not parse
//! inside an object (llama-server refused the whole next request
//! otherwise; see `tools::arguments_cut_short_…`). Later llama.cpp does not
//! serve this model's calls (docs/providers.md, "Making a model call a
//! tool").

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::Value;

use crate::common::servers::{Lease, Pool};
use crate::common::{records, TestEnv};

/// llama-server's, `.ci/llama-cpp-server start`'s (see [`Pool`]).
static SERVERS: Pool = Pool::new(
    "REVOLVE_LLAMA_CPP_URL",
    "the llama-server .ci/llama-cpp-server starts (.ci/run does)",
);

/// A free server's URL (`http://127.0.0.1:PORT/v1`), held until the
/// lease drops.
fn server() -> (String, Lease) {
    SERVERS.take()
}

/// One exchange the proxy saw: the request's path and body, the answer's
/// bytes as the server sent them (head and body).
#[derive(Clone, Debug)]
struct Exchange {
    path: String,
    body: String,
    answer: Vec<u8>,
}

/// A recording HTTP proxy on 127.0.0.1 in front of a real server: each
/// connection's request goes upstream with `Connection: close`, and the
/// answer comes back byte for byte, kept.
struct Proxy {
    url: String,
    seen: Arc<Mutex<Vec<Exchange>>>,
}

impl Proxy {
    fn start(upstream: &str) -> Proxy {
        let rest = upstream
            .strip_prefix("http://")
            .expect("an http:// server URL");
        let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
        let host = host.to_owned();
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
        let url = format!(
            "http://{}/{path}",
            listener.local_addr().expect("the proxy's address")
        );
        let seen = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&seen);
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let (host, kept) = (host.clone(), Arc::clone(&kept));
                std::thread::spawn(move || {
                    if let Some(exchange) = relay(client, &host) {
                        kept.lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push(exchange);
                    }
                });
            }
        });
        Proxy { url, seen }
    }

    fn exchanges(&self) -> Vec<Exchange> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// Relays one request from `client` to `host` and the answer back.
fn relay(mut client: TcpStream, host: &str) -> Option<Exchange> {
    let mut data = Vec::new();
    let mut buf = [0u8; 16_384];
    let head_end = loop {
        if let Some(at) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        let n = client.read(&mut buf).ok().filter(|&n| n > 0)?;
        data.extend_from_slice(&buf[..n]);
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
        let n = client.read(&mut buf).ok().filter(|&n| n > 0)?;
        body.extend_from_slice(&buf[..n]);
    }
    let path = head.split(' ').nth(1).unwrap_or_default().to_owned();
    let kept: Vec<&str> = head
        .split("\r\n")
        .filter(|l| {
            !l.to_ascii_lowercase().starts_with("connection:")
                && !l.to_ascii_lowercase().starts_with("host:")
        })
        .collect();
    let mut upstream = TcpStream::connect(host).ok()?;
    let out = format!(
        "{}\r\nhost: {host}\r\nconnection: close\r\n\r\n",
        kept.join("\r\n")
    );
    upstream.write_all(out.as_bytes()).ok()?;
    upstream.write_all(&body).ok()?;
    let mut answer = Vec::new();
    loop {
        match upstream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                answer.extend_from_slice(&buf[..n]);
                if client.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        }
    }
    drop(client);
    Some(Exchange {
        path,
        body: String::from_utf8_lossy(&body).into_owned(),
        answer,
    })
}

/// The arguments of a run on the real server through `url`.
fn args(url: &str) -> Vec<String> {
    [
        "--provider",
        "llamacpp",
        "--base-url",
        url,
        "--model",
        "smollm2",
        "--window",
        "4096",
        "--tool-choice",
        "required",
        "--max-tool-rounds",
        "2",
        "--allow-shell",
    ]
    .map(str::to_owned)
    .to_vec()
}

/// The turns, asked plainly, one a line.
const TURNS: [&str; 3] = [
    "List the files in the current directory.",
    "Read the file notes.txt and tell me what it says.",
    "Run the shell command `echo hello-from-shell` and tell me its output.",
];

/// The assistant messages of the log, each with the user line it answers.
fn answers(log: &[Value]) -> Vec<(String, Value)> {
    let mut user = String::new();
    let mut out = Vec::new();
    // A compaction's record carries the turn in flight (`kept`).
    let kept = |r: &Value| r["kept"].as_array().cloned().unwrap_or_default();
    let messages = log.iter().flat_map(|r| match r["type"].as_str() {
        Some("message") => vec![r.clone()],
        Some("compacted") => kept(r),
        _ => Vec::new(),
    });
    for r in messages {
        match r["role"].as_str() {
            Some("user") => user = r["content"].as_str().unwrap_or_default().to_owned(),
            Some("assistant") => out.push((user.clone(), r.clone())),
            _ => {}
        }
    }
    out
}

/// The session's files in the order of their chain, oldest first: each
/// file's header names the file it `continues` (the test clock starts
/// anew in every run, so the names do not sort by time).
fn chain(files: Vec<std::path::PathBuf>) -> Vec<std::path::PathBuf> {
    let headers: Vec<(std::path::PathBuf, Value)> = files
        .into_iter()
        .map(|f| {
            let header = records(&f).into_iter().next().expect("a header");
            (f, header)
        })
        .collect();
    let continued = |id: &Value| headers.iter().any(|(_, h)| h["continues"] == *id);
    let mut next = headers.iter().find(|(_, h)| !continued(&h["id"]));
    let mut out = Vec::new();
    while let Some((file, header)) = next {
        out.push(file.clone());
        next = headers.iter().find(|(_, h)| h["id"] == header["continues"]);
    }
    assert_eq!(out.len(), headers.len(), "one chain: {headers:?}");
    out.reverse();
    out
}

/// Writes each streamed answer to `REVOLVE_CAPTURE_DIR/NAME-N.sse`, when
/// that is set (how the fake's shapes were captured).
fn capture(name: &str, exchanges: &[Exchange]) {
    let Some(dir) = std::env::var_os("REVOLVE_CAPTURE_DIR") else {
        return;
    };
    for (i, e) in exchanges.iter().enumerate() {
        let path = std::path::Path::new(&dir).join(format!("{name}-{}.sse", i + 1));
        std::fs::write(&path, &e.answer).expect("write a capture");
        let path = std::path::Path::new(&dir).join(format!("{name}-{}.json", i + 1));
        std::fs::write(&path, &e.body).expect("write a capture");
    }
}

/// Three turns, each asking plainly for one tool, each a run of its own
/// continuing the session (`--continue`): in each, the model's first
/// answer calls a tool of revolve's (obliged by `tool_choice`), revolve
/// runs every call and the next request carries each result back as a
/// `tool` message; a turn ends in words, or by revolve's own guards (its
/// tool rounds used up, a call repeated: the 135M model rarely knows when
/// to stop), never by a refusal of the server's; the log replays, and
/// `replay --requests` rebuilds every body the server received, byte for
/// byte, the turns' first requests with `"tool_choice":"required"`.
#[test]
#[ignore = "needs llama-server (.ci/llama-cpp-server start; REVOLVE_LLAMA_CPP_URL)"]
fn the_model_calls_tools_and_reads_their_results() {
    let (url, _lease) = server();
    let proxy = Proxy::start(&url);
    let env = TestEnv::new("real-tools");
    std::fs::write(
        env.cwd.join("notes.txt"),
        "The meeting moved to Thursday at 10.\n",
    )
    .unwrap();
    let args = args(&proxy.url);
    let mut runs = Vec::new();
    for (i, turn) in TURNS.iter().enumerate() {
        let started = Instant::now();
        let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
        if i > 0 {
            args.push("--continue");
        }
        let run = env.run(&args, &format!("{turn}\n"));
        eprintln!(
            "real_tools: turn {} took {:.1} s, exit {:?}: {}",
            i + 1,
            started.elapsed().as_secs_f64(),
            run.code,
            run.stderr.lines().last().unwrap_or_default()
        );
        let ended = run.code == Some(0)
            || (run.code == Some(1) && run.stderr.contains("revolve: stopped the turn"));
        assert!(ended, "turn {}: {run:?}", i + 1);
        runs.push(run);
    }
    let exchanges: Vec<Exchange> = proxy
        .exchanges()
        .into_iter()
        .filter(|e| e.path.ends_with("/chat/completions"))
        .collect();
    capture("tools", &exchanges);
    // A compaction at this window continues the session in a new file:
    // the chain's files, oldest first.
    let files = chain(env.session_files());
    let log: Vec<Value> = files.iter().flat_map(|f| records(f)).collect();
    for r in &log {
        assert!(
            !["failed", "overflowed", "compaction_failed"]
                .contains(&r["type"].as_str().unwrap_or("")),
            "the server refused a request: {r}\n{runs:?}"
        );
    }
    let compactings: Vec<&Value> = log.iter().filter(|r| r["type"] == "compacting").collect();
    let bare = compactings.iter().filter(|r| r["bare"] == true).count();
    eprintln!(
        "real_tools: {} summary request(s), {bare} asked again without tools",
        compactings.len()
    );

    // Each turn's first answer calls a tool revolve has; every call got a
    // result.
    // The tools offered: the first body's.
    let first: Value = serde_json::from_str(&exchanges.first().expect("a request").body).unwrap();
    let names: Vec<&str> = first["tools"]
        .as_array()
        .expect("tools offered")
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    let answers = answers(&log);
    let mut calls = Vec::new();
    for turn in TURNS {
        let (_, first) = answers
            .iter()
            .find(|(user, _)| user == turn)
            .unwrap_or_else(|| panic!("no answer to {turn:?}: {runs:?}"));
        let made = first["tool_calls"].as_array().cloned().unwrap_or_default();
        assert!(
            !made.is_empty(),
            "{turn:?} was answered without a call: {first}"
        );
        for call in made {
            let name = call["name"].as_str().unwrap_or_default().to_owned();
            assert!(names.contains(&name.as_str()), "an unknown tool: {call}");
            calls.push((
                turn,
                name,
                call["id"].as_str().unwrap_or_default().to_owned(),
            ));
        }
    }
    let results = crate::common::tool_results(&log);
    for (turn, name, id) in &calls {
        assert!(
            results.iter().any(|(r, _)| r == id),
            "{turn:?}: the call {name} {id} got no result: {results:?}"
        );
    }
    eprintln!("real_tools: the model called {calls:?}");

    // The results went back to the server: a later request carries each
    // as a `tool` message answering its call.
    let bodies: Vec<Value> = exchanges
        .iter()
        .map(|e| serde_json::from_str(&e.body).expect("a JSON body"))
        .collect();
    for (_, name, id) in &calls {
        assert!(
            bodies
                .iter()
                .any(|b| b["messages"].as_array().is_some_and(|m| m
                    .iter()
                    .any(|m| m["role"] == "tool" && m["tool_call_id"] == *id))),
            "the result of {name} {id} was never sent back"
        );
    }
    // Each turn's first request obliges a call; the ones after a result
    // do not (nor the one-token requests that count a body's tokens, nor
    // a compaction's, which may offer the tools for the prompt cache but
    // asks for notes).
    for b in bodies
        .iter()
        .filter(|b| b["stream"] == true && b.get("tools").is_some())
    {
        let last = b["messages"].as_array().and_then(|m| m.last()).cloned();
        let after_user = last.is_some_and(|m| {
            m["role"] == "user"
                && !m
                    .to_string()
                    .contains("The conversation above is about to be compacted")
        });
        assert_eq!(
            b.get("tool_choice").and_then(Value::as_str),
            after_user.then_some("required"),
            "{}",
            b["messages"].as_array().map_or(0, Vec::len)
        );
    }

    // Replay: each file clean; the newest rebuilds every body the server
    // received, byte for byte, its chain's included.
    for file in &files {
        let file = file.to_str().expect("a UTF-8 path");
        let check = env.ok(&["replay", "--check", file]);
        assert!(
            check
                .stdout
                .contains(" 0 skipped line(s), 0 inconsistencies"),
            "{check:?}"
        );
    }
    let newest = files.last().expect("a session file");
    let newest = newest.to_str().expect("a UTF-8 path");
    let sent: String = exchanges.iter().map(|e| format!("{}\n", e.body)).collect();
    let rebuilt = env.ok(&["replay", "--requests", newest]).stdout;
    if rebuilt != sent {
        let (rebuilt, sent): (Vec<&str>, Vec<&str>) =
            (rebuilt.lines().collect(), sent.lines().collect());
        let at = (0..rebuilt.len().max(sent.len()))
            .find(|&i| rebuilt.get(i) != sent.get(i))
            .unwrap_or_default();
        let (a, b) = (rebuilt.get(at).unwrap_or(&""), sent.get(at).unwrap_or(&""));
        let byte = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
        let around = |t: &str| {
            t.get(byte.saturating_sub(200)..(byte + 200).min(t.len()))
                .unwrap_or(t)
                .to_owned()
        };
        panic!(
            "replay --requests rebuilt {} bodies, {} were sent; body {} differs at byte {byte}:\nrebuilt …{}…\nsent    …{}…",
            rebuilt.len(),
            sent.len(),
            at + 1,
            around(a),
            around(b)
        );
    }
}
