//! Tools end to end, against a fake model server speaking either wire
//! protocol: tool rounds and how they go back to the model, requests rebuilt
//! from the log, spilled results and their grant, `--grant` and
//! `--allow-shell` without a terminal, bad calls from the model, failed
//! requests and retries, Ctrl-C, SIGTERM and SIGKILL while a tool runs, and
//! the transcript of a session with tools.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use revolve_testkit::{FakeReply, FakeServer, Recorded};
use serde_json::{json, Value};

use crate::common::fake::{assert_log_whole, assert_replays_as_sent, revolve_on};
use crate::common::{kinds, messages, pairs, records, regex_escape, tool_results, Run, TestEnv};

// ---------------------------------------------------------------------------
// Helpers

/// The wire protocol a test speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wire {
    OpenAi,
    Anthropic,
}

impl Wire {
    /// A fake model server speaking this protocol.
    fn serve(self, replies: Vec<FakeReply>) -> FakeServer {
        match self {
            Wire::OpenAi => FakeServer::start(replies),
            Wire::Anthropic => FakeServer::start_anthropic(replies),
        }
        .expect("start the fake model server")
    }

    /// The flags that send revolve's requests to `server`.
    fn flags(self, server: &FakeServer) -> Vec<String> {
        let mut flags = Vec::new();
        if self == Wire::Anthropic {
            flags.extend(["--provider".to_owned(), "anthropic".to_owned()]);
        }
        flags.extend(["--base-url".to_owned(), server.url()]);
        flags
    }

    /// The path every request goes to.
    fn endpoint(self) -> &'static str {
        match self {
            Wire::OpenAi => "/v1/chat/completions",
            Wire::Anthropic => "/v1/messages",
        }
    }

    /// A tool call id as this provider spells them.
    fn id(self, n: u32) -> String {
        match self {
            Wire::OpenAi => format!("call_{n}"),
            Wire::Anthropic => format!("toolu_0{n}"),
        }
    }
}

/// Runs revolve against `server` with `extra` flags, feeding `stdin`.
fn revolve(env: &TestEnv, wire: Wire, server: &FakeServer, extra: &[&str], stdin: &str) -> Run {
    revolve_env(env, wire, server, extra, stdin, &[])
}

/// [`revolve`] with extra environment variables.
fn revolve_env(
    env: &TestEnv,
    wire: Wire,
    server: &FakeServer,
    extra: &[&str],
    stdin: &str,
    vars: &[(&str, &str)],
) -> Run {
    revolve_on(env, &wire.flags(server), extra, stdin, vars)
}

/// A streamed answer with tool calls `(id, name, arguments)` and this usage.
fn calls(text: &str, list: &[(&str, &str, &str)], usage: (u64, u64)) -> FakeReply {
    match FakeReply::tool_calls(text, list) {
        FakeReply::ToolCalls { text, calls, .. } => FakeReply::ToolCalls {
            text,
            calls,
            usage: Some(usage),
        },
        other => other,
    }
}

/// A streamed text answer with this usage.
fn text(answer: &str, usage: (u64, u64)) -> FakeReply {
    match FakeReply::text(answer) {
        FakeReply::Stream { chunks, .. } => FakeReply::Stream {
            chunks,
            usage: Some(usage),
        },
        other => other,
    }
}

fn bodies(server: &FakeServer) -> Vec<String> {
    server.requests().into_iter().map(|r| r.body).collect()
}

fn json_body(r: &Recorded) -> Value {
    serde_json::from_str(&r.body).expect("request bodies are JSON")
}

/// One entry of a request's history, whatever the wire.
#[derive(Clone, Debug, PartialEq)]
enum Item {
    /// Text of a user or assistant message.
    Text(String, String),
    /// A tool call: id, name, arguments (as JSON; a string when the model's
    /// text was not JSON).
    Call(String, String, Value),
    /// A tool result: the id of the call it answers, its content.
    Result(String, String),
}

/// The history a request body carries, the system prompt left out.
fn history(wire: Wire, body: &str) -> Vec<Item> {
    let body: Value = serde_json::from_str(body).expect("request bodies are JSON");
    let mut items = Vec::new();
    for m in body["messages"].as_array().expect("a messages list") {
        let role = m["role"].as_str().unwrap_or("?").to_owned();
        match wire {
            Wire::OpenAi => match role.as_str() {
                "system" => {}
                "tool" => items.push(Item::Result(
                    m["tool_call_id"].as_str().unwrap_or("?").to_owned(),
                    m["content"].as_str().unwrap_or("?").to_owned(),
                )),
                _ => {
                    if let Some(t) = m["content"].as_str().filter(|t| !t.is_empty()) {
                        items.push(Item::Text(role.clone(), t.to_owned()));
                    }
                    for c in m["tool_calls"].as_array().into_iter().flatten() {
                        assert_eq!(c["type"], "function", "{c}");
                        let raw = c["function"]["arguments"].as_str().unwrap_or("?");
                        let args = serde_json::from_str(raw).unwrap_or_else(|_| json!(raw));
                        items.push(Item::Call(
                            c["id"].as_str().unwrap_or("?").to_owned(),
                            c["function"]["name"].as_str().unwrap_or("?").to_owned(),
                            args,
                        ));
                    }
                }
            },
            Wire::Anthropic => {
                for block in m["content"].as_array().expect("content blocks") {
                    items.push(match block["type"].as_str() {
                        Some("text") => {
                            Item::Text(role.clone(), block["text"].as_str().unwrap().to_owned())
                        }
                        Some("tool_use") => {
                            assert_eq!(role, "assistant", "{block}");
                            Item::Call(
                                block["id"].as_str().unwrap().to_owned(),
                                block["name"].as_str().unwrap().to_owned(),
                                block["input"].clone(),
                            )
                        }
                        Some("tool_result") => {
                            assert_eq!(role, "user", "{block}");
                            Item::Result(
                                block["tool_use_id"].as_str().unwrap().to_owned(),
                                block["content"].as_str().unwrap().to_owned(),
                            )
                        }
                        _ => panic!("an unexpected block {block}"),
                    });
                }
            }
        }
    }
    items
}

/// The `(call id, content)` of every tool result of a history.
fn results(items: &[Item]) -> Vec<(String, String)> {
    items
        .iter()
        .filter_map(|i| match i {
            Item::Result(id, content) => Some((id.clone(), content.clone())),
            _ => None,
        })
        .collect()
}

/// Every tool call of the history is answered, once, before any later text,
/// and every result answers a call made before it.
fn assert_answered(items: &[Item]) {
    let mut open: Vec<&str> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        match item {
            Item::Text(..) => assert!(
                open.is_empty(),
                "item {i}: text while {open:?} wait for results: {items:#?}"
            ),
            Item::Call(id, ..) => open.push(id),
            Item::Result(id, _) => {
                let at = open.iter().position(|o| o == id);
                let at = at.unwrap_or_else(|| panic!("item {i}: a result for no open call"));
                open.remove(at);
            }
        }
    }
    assert!(open.is_empty(), "{open:?} are never answered: {items:#?}");
}

/// `(id, name, arguments)` from string slices.
fn triples(list: &[(&str, &str, &str)]) -> Vec<(String, String, String)> {
    list.iter()
        .map(|(a, b, c)| ((*a).to_owned(), (*b).to_owned(), (*c).to_owned()))
        .collect()
}

/// The `(id, name, arguments)` of the tool calls logged, in order.
fn logged_calls(recs: &[Value]) -> Vec<(String, String, String)> {
    recs.iter()
        .filter(|r| r["type"] == "message")
        .flat_map(|r| r["tool_calls"].as_array().cloned().unwrap_or_default())
        .map(|c| {
            (
                c["id"].as_str().unwrap_or("?").to_owned(),
                c["name"].as_str().unwrap_or("?").to_owned(),
                c["arguments"].as_str().unwrap_or("?").to_owned(),
            )
        })
        .collect()
}

fn last_of<'a>(recs: &'a [Value], kind: &str) -> &'a Value {
    recs.iter()
        .rev()
        .find(|r| r["type"] == kind)
        .unwrap_or_else(|| panic!("no {kind} record"))
}

/// The refusal a path outside the tree and the grants gets.
fn outside(raw: &str) -> String {
    format!(
        "error: {raw} is outside the working tree and not granted to this session; \
         ask with request_file_grant"
    )
}

/// A file of the working tree.
fn write(env: &TestEnv, rel: &str, content: &str) -> PathBuf {
    let path = env.cwd.join(rel);
    std::fs::write(&path, content).expect("write a test file");
    path
}

/// A file outside the working tree (but inside the test's temp dir).
fn write_outside(env: &TestEnv, rel: &str, content: &str) -> PathBuf {
    let path = env.root.join("outside").join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).expect("create a test dir");
    std::fs::write(&path, content).expect("write a test file");
    path
}

fn str_of(path: &Path) -> &str {
    path.to_str().expect("test paths are UTF-8")
}

const NOTES: &str = "hello from the notes\nsecond line\n";

// ---------------------------------------------------------------------------
// 1. A tool round trip

fn round_trip(wire: Wire) {
    let env = TestEnv::new("round-trip");
    write(&env, "notes.txt", NOTES);
    let id = wire.id(1);
    let server = wire.serve(vec![
        calls(
            "",
            &[(&id, "read_file", r#"{"path":"notes.txt"}"#)],
            (100, 5),
        ),
        text("The notes say hello.", (150, 4)),
    ]);
    let (key_var, key) = match wire {
        Wire::OpenAi => ("OPENAI_API_KEY", "sk-test-openai-0123"),
        Wire::Anthropic => ("ANTHROPIC_API_KEY", "sk-ant-test-0123"),
    };
    let run = revolve_env(
        &env,
        wire,
        &server,
        &[],
        "what do my notes say?\n",
        &[(key_var, key)],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "The notes say hello.\n", "only the answer text");
    assert_eq!(
        run.stderr_past_seeding(&env),
        "→ read_file notes.txt\n",
        "one line per tool"
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for r in &requests {
        assert_eq!(
            (r.method.as_str(), r.path.as_str()),
            ("POST", wire.endpoint())
        );
        match wire {
            Wire::OpenAi => {
                let bearer = format!("Bearer {key}");
                assert_eq!(r.header("authorization"), Some(bearer.as_str()));
                assert_eq!(r.header("x-api-key"), None);
                assert_eq!(r.header("anthropic-version"), None);
            }
            Wire::Anthropic => {
                assert_eq!(r.header("x-api-key"), Some(key));
                assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
                assert_eq!(r.header("authorization"), None);
            }
        }
    }

    // The second request carries the call and its result in the protocol's
    // own shape.
    let second = json_body(&requests[1]);
    // The system prompt as logged: the base, the working directory and the
    // seeded memory files.
    let system = records(&env.only_session())
        .into_iter()
        .find(|r| r["type"] == "context")
        .map(|r| r["system"].as_str().unwrap().to_owned())
        .unwrap();
    assert!(system.starts_with(&format!(
        "{}\n\nWorking directory: {}",
        revolve_core::prompt::BASE,
        env.cwd.display()
    )));
    match wire {
        Wire::OpenAi => {
            assert_eq!(
                second["messages"],
                json!([
                    {"role": "system", "content": system},
                    {"role": "user", "content": "what do my notes say?"},
                    {"role": "assistant", "content": "", "tool_calls": [
                        {"id": id, "type": "function",
                         "function": {"name": "read_file", "arguments": "{\"path\":\"notes.txt\"}"}}
                    ]},
                    {"role": "tool", "tool_call_id": id, "content": NOTES},
                ])
            );
            assert_eq!(second["tools"][0]["function"]["name"], "read_file");
        }
        Wire::Anthropic => {
            // Four cache breakpoints: the last tool, the system prompt, the
            // end of the previous request (the first message) and the end
            // of this one.
            let mark = json!({"type": "ephemeral"});
            assert_eq!(
                second["system"],
                json!([{"type": "text", "text": system, "cache_control": mark}])
            );
            assert_eq!(
                second["messages"],
                json!([
                    {"role": "user", "content": [
                        {"type": "text", "text": "what do my notes say?", "cache_control": mark}
                    ]},
                    {"role": "assistant", "content": [
                        {"type": "tool_use", "id": id, "name": "read_file", "input": {"path": "notes.txt"}}
                    ]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": id, "content": NOTES, "cache_control": mark}
                    ]},
                ])
            );
            let tools = second["tools"].as_array().unwrap();
            assert_eq!(tools.last().unwrap()["cache_control"], mark);
            assert!(tools[..tools.len() - 1]
                .iter()
                .all(|t| t.get("cache_control").is_none()));
            assert_eq!(
                second["max_tokens"], 32_000,
                "the room the default model's 1M window (from the model table) keeps: the cap"
            );
            assert_eq!(second["tools"][0]["name"], "read_file");
            assert_eq!(second["tools"][0]["input_schema"]["type"], "object");
        }
    }
    assert_eq!(second["stream"], true);

    let file = env.only_session();
    let log = std::fs::read_to_string(&file).unwrap();
    assert!(!log.contains(key), "the key is in the session file");
    let recs = records(&file);
    assert_eq!(
        kinds(&recs),
        [
            "header", "message", "context", "message", "totals", "seen", "message", "message",
            "totals"
        ]
    );
    assert_eq!(recs[0]["provider"], format!("{wire:?}").to_lowercase());
    let call = &recs[3];
    assert_eq!(
        (&call["role"], &call["content"]),
        (&json!("assistant"), &json!(""))
    );
    assert_eq!(
        call["tool_calls"],
        json!([{"id": id, "name": "read_file", "arguments": "{\"path\":\"notes.txt\"}"}])
    );
    assert_eq!(recs[4]["turns"], 0, "a tool round does not end the turn");
    // The file read is logged with its hash, so it may be edited.
    assert!(recs[5]["path"].as_str().unwrap().ends_with("/notes.txt"));
    assert!(recs[5]["hash"].as_str().unwrap().starts_with("sha256:"));
    let result = &recs[6];
    assert_eq!(
        (&result["role"], &result["tool_call_id"], &result["content"]),
        (&json!("tool"), &json!(id), &json!(NOTES))
    );
    assert_eq!(
        messages(&recs).last().unwrap(),
        &("assistant".to_owned(), "The notes say hello.".to_owned())
    );
    let totals = recs.last().unwrap();
    assert_eq!(totals["turns"], 1);
    assert_eq!(totals["tokens_in"], 250, "the usage of both requests");
    assert_eq!(totals["tokens_out"], 9);
    assert_eq!(totals["last_context"], 154, "the last request's reading");
    assert_eq!(totals["estimated"], false);
}

#[test]
fn a_tool_round_trip_on_the_openai_wire() {
    round_trip(Wire::OpenAi);
}

#[test]
fn a_tool_round_trip_on_the_anthropic_wire() {
    round_trip(Wire::Anthropic);
}

// ---------------------------------------------------------------------------
// 2. Requests rebuilt from the log

fn replay_rebuilds_tool_rounds(wire: Wire) {
    let env = TestEnv::new("replay-tools");
    write(&env, "notes.txt", NOTES);
    let id = |n| wire.id(n);
    let (c1, c2, c3, c4, c5, c6) = (id(1), id(2), id(3), id(4), id(5), id(6));
    let server = wire.serve(vec![
        // Turn one: text and two calls, then a second round, then the answer.
        calls(
            "Looking.",
            &[
                (&c1, "read_file", r#"{"path":"notes.txt","limit":1}"#),
                (&c2, "list_dir", r#"{"path":"."}"#),
            ],
            (10, 2),
        ),
        calls("", &[(&c3, "grep", r#"{"pattern":"hel+o"}"#)], (20, 1)),
        text("Found it.", (30, 2)),
        // Turn two: a command whose output is spilled, then text.
        calls(
            "",
            &[(&c4, "shell", r#"{"command":"seq 1 3000"}"#)],
            (35, 1),
        ),
        text("Sure.", (40, 1)),
        // Turn three, resumed: calls that fail, then the answer.
        calls(
            "",
            &[
                (&c5, "no_such_tool", "{}"),
                (&c6, "read_file", r#"{"path":"missing.txt"}"#),
            ],
            (50, 2),
        ),
        text("Done.", (60, 1)),
    ]);
    let spill = ["--allow-shell", "--spill-result-chars", "2000"];
    let first = revolve(&env, wire, &server, &spill, "first\nsecond\n");
    assert_eq!(first.code, Some(0), "{first:?}");
    assert_eq!(first.stdout, "Looking.\nFound it.\nSure.\n");
    let third = revolve(&env, wire, &server, &["--continue"], "third\n");
    assert_eq!(third.code, Some(0), "{third:?}");
    assert_eq!(third.stdout, "Done.\n");

    let sent = bodies(&server);
    assert_eq!(sent.len(), 7);
    // Every request's history is well formed, and tool results went out.
    for body in &sent {
        assert_answered(&history(wire, body));
    }
    assert_eq!(
        results(&history(wire, &sent[2])),
        [
            (c1.clone(), "hello from the notes\n".to_owned()),
            (c2.clone(), "notes.txt".to_owned()),
            (c3.clone(), "notes.txt:1:hello from the notes".to_owned()),
        ]
    );

    let spilled = &results(&history(wire, &sent[4]))[3].1;
    assert!(spilled.contains("the whole output is in "), "{spilled}");

    assert_replays_as_sent(&env, &sent);
}

#[test]
fn replay_requests_rebuilds_tool_rounds_on_the_openai_wire() {
    replay_rebuilds_tool_rounds(Wire::OpenAi);
}

#[test]
fn replay_requests_rebuilds_tool_rounds_on_the_anthropic_wire() {
    replay_rebuilds_tool_rounds(Wire::Anthropic);
}

/// A session may go on with the other wire: every request is rebuilt in
/// the protocol it was sent in, tool rounds included.
#[test]
fn replay_requests_follows_a_switch_of_wire() {
    let env = TestEnv::new("switch-wire");
    write(&env, "notes.txt", NOTES);
    let openai = Wire::OpenAi.serve(vec![
        calls(
            "",
            &[("call_1", "read_file", r#"{"path":"notes.txt"}"#)],
            (10, 1),
        ),
        text("Read.", (20, 1)),
    ]);
    let run = revolve(&env, Wire::OpenAi, &openai, &[], "read my notes\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    let anthropic = Wire::Anthropic.serve(vec![
        calls("", &[("toolu_02", "list_dir", r#"{"path":"."}"#)], (30, 1)),
        text("Listed.", (40, 1)),
    ]);
    let run = revolve(
        &env,
        Wire::Anthropic,
        &anthropic,
        &["--continue", "--model", "claude-test"],
        "and the folder?\n",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    let sent = anthropic.requests();
    let items = history(Wire::Anthropic, &sent[1].body);
    assert_answered(&items);
    assert_eq!(
        results(&items),
        [
            ("call_1".to_owned(), NOTES.to_owned()),
            ("toolu_02".to_owned(), "notes.txt".to_owned()),
        ],
        "the OpenAI round goes to Anthropic in its shape"
    );
    assert_eq!(json_body(&sent[1])["model"], "claude-test");

    let mut all = bodies(&openai);
    all.extend(bodies(&anthropic));
    let expected: String = all.iter().map(|b| format!("{b}\n")).collect();
    assert_eq!(env.ok(&["replay", "--requests"]).stdout, expected);
}

// ---------------------------------------------------------------------------
// 3. Spilled results

/// How many numbers the spilling command prints: about 2 MB.
const SEQ_TO: u32 = 300_000;

/// What `shell` returns for `seq 1 SEQ_TO`.
fn seq_output() -> String {
    let numbers: Vec<String> = (1..=SEQ_TO).map(|n| n.to_string()).collect();
    format!("exit status: 0\nstdout:\n{}", numbers.join("\n"))
}

/// Starts a session with one plain turn and returns its id, so that a test
/// knows where the session's spills will go before the model asks for them.
fn start_session(env: &TestEnv, wire: Wire) -> String {
    let server = wire.serve(vec![text("Hi.", (5, 1))]);
    let run = revolve(env, wire, &server, &[], "hello\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    let recs = records(&env.only_session());
    recs[0]["id"].as_str().expect("an id").to_owned()
}

/// Where the session `id` spills the `n`th tool result of its second
/// request (the one after `start_session`'s turn), for call `call`:
/// `$XDG_STATE_HOME/task-agent/projects/<slug>/spills/<id>/0002-<n>-<call>.txt`.
fn spill_path(env: &TestEnv, id: &str, n: usize, call: &str) -> PathBuf {
    let slug = env.cwd.to_string_lossy().replace('/', "-");
    env.state
        .join("task-agent/projects")
        .join(slug)
        .join("spills")
        .join(id)
        .join(format!("0002-{n}-{call}.txt"))
}

/// The path a spilled result names.
fn named_spill(result: &str) -> &str {
    let start = result
        .find("the whole output is in ")
        .unwrap_or_else(|| panic!("no spill note in {result}"))
        + "the whole output is in ".len();
    let len = result[start..].find(", read it").expect("the note goes on");
    &result[start..start + len]
}

/// `--spill-result-chars 1000` and a command printing about 2 MB: the model
/// gets the head, the tail and the path, the file holds everything, this run
/// reads it with an offset and a limit, a resumed run may not. A first plain
/// turn creates the session, so that the test knows its id, and with it the
/// spill's path, when it writes the model's replies.
fn a_big_result_is_spilled(wire: Wire) {
    let env = TestEnv::new("spill");
    let id = start_session(&env, wire);
    let (c1, c2, c3) = (wire.id(1), wire.id(2), wire.id(3));
    let spill = spill_path(&env, &id, 1, &c1);
    let spill_str = str_of(&spill).to_owned();
    assert!(!spill.starts_with(&env.cwd), "spills are outside the tree");

    let read_middle = json!({"path": spill_str, "offset": 150_002, "limit": 3}).to_string();
    let server = wire.serve(vec![
        calls(
            "",
            &[(&c1, "shell", &format!(r#"{{"command":"seq 1 {SEQ_TO}"}}"#))],
            (10, 1),
        ),
        calls("", &[(&c2, "read_file", &read_middle)], (20, 1)),
        text("Read it.", (30, 2)),
    ]);
    let run = revolve(
        &env,
        wire,
        &server,
        &[
            "--continue",
            "--allow-shell",
            "--spill-result-chars",
            "1000",
        ],
        "count, then read the middle\n",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "Read it.\n");

    // The whole output is on disk.
    let whole = std::fs::read_to_string(&spill).expect("the spill file exists");
    let expected = seq_output();
    assert!(expected.len() > 1_900_000, "about 2 MB");
    assert!(
        whole == expected,
        "the spill file holds {} bytes, not the {} of the output",
        whole.len(),
        expected.len()
    );

    // The model got the head, the tail and the path, nothing near 2 MB.
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let shown = results(&history(wire, &requests[1].body));
    assert_eq!(shown.len(), 1);
    let (call, shown) = &shown[0];
    assert_eq!(call, &c1);
    assert!(
        shown.starts_with("exit status: 0\nstdout:\n1\n2\n3\n"),
        "{shown}"
    );
    assert!(shown.ends_with(&format!("\n{SEQ_TO}")), "{shown}");
    assert_eq!(named_spill(shown), spill_str, "the note names the spill");
    assert!(
        shown.contains(&format!(" of {} in total", expected.chars().count())),
        "{shown}"
    );
    assert!(
        shown.chars().count() < 1000 + spill_str.len() + 150,
        "{} characters shown",
        shown.chars().count()
    );
    assert!(!shown.contains("\n150000\n"), "the middle is not shown");

    // The read on the spilled path was allowed, with offset and limit.
    let read = results(&history(wire, &requests[2].body));
    assert_eq!(
        read.last().unwrap(),
        &(c2.clone(), "150000\n150001\n150002\n".to_owned())
    );
    let recs = records(&env.only_session());
    let logged = tool_results(&recs);
    assert_eq!(
        logged[0],
        (c1.clone(), shown.clone()),
        "the log has what was sent"
    );
    assert_eq!(logged[1].1, "150000\n150001\n150002\n");

    // A resumed session does not have the grant.
    let server = wire.serve(vec![
        calls(
            "",
            &[(&c3, "read_file", &json!({"path": spill_str}).to_string())],
            (40, 1),
        ),
        text("Cannot.", (50, 1)),
    ]);
    let run = revolve(&env, wire, &server, &["--continue"], "read it again\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "Cannot.\n");
    let read = results(&history(wire, &server.requests()[1].body));
    assert_eq!(read.last().unwrap(), &(c3.clone(), outside(&spill_str)));
    assert_eq!(env.ok(&["replay", "--check"]).code, Some(0));
}

#[test]
fn a_big_result_is_spilled_on_the_openai_wire() {
    a_big_result_is_spilled(Wire::OpenAi);
}

#[test]
fn a_big_result_is_spilled_on_the_anthropic_wire() {
    a_big_result_is_spilled(Wire::Anthropic);
}

/// How many `x` there are on lines made of nothing else.
fn xs(text: &str) -> usize {
    text.lines()
        .filter(|l| !l.is_empty() && l.bytes().all(|b| b == b'x'))
        .map(str::len)
        .sum()
}

/// The model is told the rest of a spilled result is "readable with
/// `read_file` and an offset", but the offset counts lines and a read stops
/// at 256 KiB: the rest of one long line can only be reached with `shell`,
/// which a run without `--allow-shell` does not have.
#[test]
#[ignore = "limit: read_file reads lines; a single spilled line over 256 KiB is read to its end with shell (README)"]
fn a_spilled_long_line_can_be_read_to_its_end() {
    let wire = Wire::OpenAi;
    let env = TestEnv::new("spill-line");
    let id = start_session(&env, wire);
    let spill = spill_path(&env, &id, 1, "c1");
    let spill_str = str_of(&spill).to_owned();
    let command = "head -c 2000000 /dev/zero | tr '\\0' x";
    // The model reads the spill with every offset the tool offers: line by
    // line from the first, as far as it goes.
    let reads: Vec<String> = (1..=3)
        .map(|offset| json!({"path": spill_str, "offset": offset, "limit": 1}).to_string())
        .collect();
    let server = wire.serve(vec![
        calls(
            "",
            &[("c1", "shell", &json!({ "command": command }).to_string())],
            (10, 1),
        ),
        calls(
            "",
            &[
                ("c2", "read_file", &reads[0]),
                ("c3", "read_file", &reads[1]),
                ("c4", "read_file", &reads[2]),
            ],
            (10, 3),
        ),
        text("Read.", (10, 1)),
    ]);
    let run = revolve(
        &env,
        wire,
        &server,
        &[
            "--continue",
            "--allow-shell",
            "--spill-result-chars",
            "1000",
        ],
        "make a long line\n",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    let whole = std::fs::read_to_string(&spill).unwrap();
    assert_eq!(xs(&whole), 2_000_000, "the spill is whole");
    // What the reads returned, spilled again when long: count the x's the
    // model could reach.
    let recs = records(&env.only_session());
    let mut reached = 0;
    for (id, content) in tool_results(&recs).iter().skip(1) {
        let text = if content.contains("the whole output is in ") {
            std::fs::read_to_string(named_spill(content)).unwrap()
        } else {
            content.clone()
        };
        eprintln!("{id}: {} x's and {:?}", xs(&text), text.replace('x', ""));
        reached += xs(&text);
    }
    assert_eq!(
        reached, 2_000_000,
        "the model reached {reached} of 2000000 x's"
    );
}

/// A call id is only part of a spill file's name: one with slashes and
/// dots cannot put the file anywhere but the session's spill folder.
#[test]
fn a_call_id_cannot_steer_a_spill_out_of_its_folder() {
    let wire = Wire::Anthropic;
    let env = TestEnv::new("spill-id");
    let evil = "../../../../work/escaped";
    let server = wire.serve(vec![
        calls(
            "",
            &[(evil, "shell", r#"{"command":"seq 1 3000"}"#)],
            (10, 1),
        ),
        text("Done.", (10, 1)),
    ]);
    let run = revolve(
        &env,
        wire,
        &server,
        &["--allow-shell", "--spill-result-chars", "100"],
        "go\n",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    let recs = records(&env.only_session());
    let id = recs[0]["id"].as_str().unwrap();
    let (call, shown) = &tool_results(&recs)[0];
    assert_eq!(call, evil, "the id goes back to the model as it was");
    let named = PathBuf::from(named_spill(shown));
    assert_eq!(
        named,
        // The call came from the session's first request.
        spill_path(&env, id, 1, "x").with_file_name("0001-1-____________work_escaped.txt"),
        "{shown}"
    );
    assert!(named.is_file());
    let names: Vec<String> = std::fs::read_dir(&env.cwd)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.is_empty(), "written into the tree: {names:?}");
}

/// A spill is revolve's own write, not the tool's: when it fails, the
/// model should still get a result (the head and tail, or an error saying
/// the output could not be kept) and the turn go on. Instead the run stops
/// with exit 1 and `cannot create …/spills/<id>: Not a directory`, the
/// command's output is lost, and the call is left without a result until a
/// resume answers it with "interrupted before shell finished; it may or may
/// not have run", although it did run.
#[test]
fn a_spill_that_cannot_be_written_still_answers_the_call() {
    let wire = Wire::OpenAi;
    let env = TestEnv::new("spill-fails");
    let id = start_session(&env, wire);
    // The session's spill folder cannot be made: a file has its name.
    let folder = spill_path(&env, &id, 1, "c1");
    let folder = folder.parent().unwrap();
    std::fs::create_dir_all(folder.parent().unwrap()).unwrap();
    std::fs::write(folder, "in the way").unwrap();
    let server = wire.serve(vec![
        calls(
            "",
            &[("c1", "shell", r#"{"command":"seq 1 3000"}"#)],
            (10, 1),
        ),
        text("Done.", (10, 1)),
    ]);
    let run = revolve(
        &env,
        wire,
        &server,
        &["--continue", "--allow-shell", "--spill-result-chars", "100"],
        "go\n",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "Done.\n");
    let recs = records(&env.only_session());
    let (call, result) = tool_results(&recs).pop().expect("a result");
    assert_eq!(call, "c1");
    assert!(
        result.starts_with("exit status: 0\nstdout:\n1\n") || result.starts_with("error: "),
        "{result}"
    );
    assert_eq!(recs.last().unwrap()["turns"], 2);
}

// ---------------------------------------------------------------------------
// 4. Grants and shell approval without a terminal

/// Asks for a grant of `secret`, then reads it, then answers; returns the
/// run and the two tool results.
fn grant_then_read(env: &TestEnv, secret: &Path, extra: &[&str]) -> (Run, Vec<(String, String)>) {
    let wire = Wire::OpenAi;
    let path = json!({"path": str_of(secret), "reason": "to compare"}).to_string();
    let read = json!({"path": str_of(secret)}).to_string();
    let server = wire.serve(vec![
        calls("", &[("g1", "request_file_grant", &path)], (10, 1)),
        calls("", &[("r1", "read_file", &read)], (10, 1)),
        text("Done.", (10, 1)),
    ]);
    let run = revolve(env, wire, &server, extra, "compare with the other file\n");
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "{run:?}");
    let found = results(&history(wire, &requests[2].body));
    (run, found)
}

#[test]
fn grants_without_a_terminal_need_the_grant_flag() {
    let env = TestEnv::new("grant-refused");
    let secret = write_outside(&env, "secret.txt", "the secret\n");
    let shown = str_of(&secret);
    let (run, found) = grant_then_read(&env, &secret, &[]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "Done.\n");
    assert!(
        run.stderr.contains(&format!(
            "revolve: refused to grant {shown} (pass --grant PATH"
        )),
        "{run:?}"
    );
    assert_eq!(
        found,
        [
            (
                "g1".to_owned(),
                format!("error: the user did not grant {shown}")
            ),
            ("r1".to_owned(), outside(shown)),
        ]
    );
    let log = std::fs::read_to_string(env.only_session()).unwrap();
    assert!(!log.contains("the secret"), "the file was read");
}

#[test]
fn at_a_terminal_a_grant_is_asked_with_its_reason_and_the_answer_logged() {
    let env = TestEnv::new("grant-asked");
    let secret = write_outside(&env, "secret.txt", "the secret\n");
    let other = write_outside(&env, "other.txt", "the other\n");
    let shown = str_of(&secret).to_owned();
    let ask = |file: &Path, id: &str| {
        let args = json!({"path": str_of(file), "reason": "to \u{1b}[2Jcompare"}).to_string();
        calls("", &[(id, "request_file_grant", &args)], (10, 1))
    };
    let read = json!({"path": str_of(&secret)}).to_string();
    let server = Wire::OpenAi.serve(vec![
        ask(&secret, "g1"),
        calls("", &[("r1", "read_file", &read)], (10, 1)),
        ask(&other, "g2"),
        text("Done.", (10, 1)),
    ]);
    let url = server.url();
    let mut term = env.terminal(&["--base-url", &url], 100, &[]);
    let within = Duration::from_secs(10);
    term.wait_for("› ", within);
    term.type_keys("compare the files\r");
    // The model's reason is shown inert: its escape sequence does nothing.
    term.wait_for(
        &format!("let this session read {shown} (to ^[[2Jcompare)? [y]es, [n]o: "),
        within,
    );
    term.type_keys("y\r");
    term.wait_for(
        &format!("let this session read {} (", str_of(&other)),
        within,
    );
    term.type_keys("n\r");
    term.wait_for("Done.", within);
    term.wait_for_next("› ", within);
    term.type_keys("\x04");
    let (ok, screen) = term.finish(within);
    assert!(ok, "{screen}");

    let results = tool_results(&records(&env.only_session()));
    let result = |id: &str| {
        results
            .iter()
            .find(|(call, _)| call == id)
            .map(|(_, text)| text.clone())
            .unwrap_or_default()
    };
    assert_eq!(
        result("g1"),
        format!("granted: {shown} (this session may now read it)")
    );
    assert_eq!(result("r1"), "the secret\n");
    assert_eq!(
        result("g2"),
        format!("error: the user did not grant {}", str_of(&other))
    );
    let approved: Vec<(String, String, String)> = records(&env.only_session())
        .into_iter()
        .filter(|r| r["type"] == "approved")
        .map(|r| {
            let field = |k: &str| r[k].as_str().unwrap_or_default().to_owned();
            (field("call"), field("answer"), field("tool"))
        })
        .collect();
    assert_eq!(
        approved,
        [
            ("g1".into(), "yes".into(), "grant".into()),
            ("g2".into(), "no".into(), "grant".into())
        ]
    );
}

#[test]
fn the_grant_flag_allows_a_file_or_its_folder() {
    let env = TestEnv::new("grant-allowed");
    let secret = write_outside(&env, "docs/secret.txt", "the secret\n");
    let shown = str_of(&secret);
    let folder = secret.parent().unwrap().to_owned();
    for granted in [&secret, &folder] {
        let (run, found) = grant_then_read(&env, &secret, &["--grant", str_of(granted)]);
        assert_eq!(run.code, Some(0), "--grant {granted:?}: {run:?}");
        assert_eq!(run.stdout, "Done.\n");
        assert!(!run.stderr.contains("refused"), "{run:?}");
        assert_eq!(
            found,
            [
                (
                    "g1".to_owned(),
                    format!("granted: {shown} (this session may now read it)")
                ),
                ("r1".to_owned(), "the secret\n".to_owned()),
            ],
            "--grant {granted:?}"
        );
    }
    // A grant is for the path asked about; another file of a granted folder
    // still needs its own request.
    let other = write_outside(&env, "docs/other.txt", "other\n");
    let (run, found) = grant_then_read(&env, &other, &["--grant", str_of(&folder)]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(found[1], ("r1".to_owned(), "other\n".to_owned()));
    // A folder grants what is inside it, not a sibling sharing its prefix.
    let sibling = write_outside(&env, "docs2/secret.txt", "the secret\n");
    let (run, found) = grant_then_read(&env, &sibling, &["--grant", str_of(&folder)]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let shown = str_of(&sibling);
    assert_eq!(
        found,
        [
            (
                "g1".to_owned(),
                format!("error: the user did not grant {shown}")
            ),
            ("r1".to_owned(), outside(shown)),
        ]
    );
}

#[test]
fn shell_without_allow_shell_is_refused_and_the_session_goes_on() {
    let wire = Wire::OpenAi;
    let env = TestEnv::new("shell-refused");
    let server = wire.serve(vec![
        calls(
            "",
            &[("s1", "shell", r#"{"command":"touch made-by-shell"}"#)],
            (10, 1),
        ),
        text("It was not allowed.", (10, 4)),
        text("Still here.", (10, 2)),
    ]);
    let run = revolve(&env, wire, &server, &[], "make a file\nand then?\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "It was not allowed.\nStill here.\n");
    assert!(
        run.stderr.contains("pass --allow-shell"),
        "the user is told why: {run:?}"
    );
    assert!(!env.cwd.join("made-by-shell").exists(), "the command ran");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        results(&history(wire, &requests[1].body)),
        [(
            "s1".to_owned(),
            "error: the user did not allow this command".to_owned()
        )]
    );
    let recs = records(&env.only_session());
    assert_eq!(recs.last().unwrap()["turns"], 2);
}

// ---------------------------------------------------------------------------
// 5. Bad calls from the model

fn bad_calls_get_error_results(wire: Wire) {
    let env = TestEnv::new("bad-calls");
    write(&env, "notes.txt", NOTES);
    let secret = write_outside(&env, "secret.txt", "the secret\n");
    std::os::unix::fs::symlink(&secret, env.cwd.join("link")).unwrap();
    let bad = [
        ("b1", "delete_everything", "{}"),
        ("b2", "read_file", r#"{"path": "#),
        ("b3", "read_file", r#"{"offset":2}"#),
        ("b4", "read_file", r#"{"path":"../outside/secret.txt"}"#),
        ("b5", "read_file", r#"{"path":"link"}"#),
        ("b6", "read_file", r#"{"path":"missing.txt"}"#),
        ("b7", "list_dir", r#"{"path":"/"}"#),
        ("b8", "shell", r#"{"command":5}"#),
        ("b9", "read_file", r#"{"path":""}"#),
        ("b10", "request_file_grant", r#"{"path":"notes.txt"}"#),
        ("b11", "grep", r#"{"pattern":"(unclosed"}"#),
        ("b12", "grep", r#"{"pattern":"secret","path":"link"}"#),
        ("b13", "list_dir", r#"{"path":"notes.txt"}"#),
    ];
    let server = wire.serve(vec![
        calls("Trying.", &bad, (10, 13)),
        text("All of them failed.", (20, 4)),
    ]);
    let run = revolve(&env, wire, &server, &["--allow-shell"], "try things\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "Trying.\nAll of them failed.\n");

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let items = history(wire, &requests[1].body);
    assert_answered(&items);
    let found = results(&items);
    let ids: Vec<&str> = found.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, bad.map(|b| b.0), "one result per call, in order");
    for (id, content) in &found {
        assert!(content.starts_with("error: "), "{id}: {content}");
    }
    let of = |id: &str| &found.iter().find(|(i, _)| i == id).unwrap().1;
    assert!(
        of("b1").starts_with(
            "error: there is no tool named \"delete_everything\"; the tools are read_file, "
        ),
        "{}",
        of("b1")
    );
    assert!(
        of("b2").starts_with("error: bad arguments for read_file: "),
        "{}",
        of("b2")
    );
    assert!(
        of("b3").starts_with("error: bad arguments for read_file: missing field `path`"),
        "{}",
        of("b3")
    );
    assert_eq!(of("b4"), &outside("../outside/secret.txt"));
    assert_eq!(of("b5"), &outside("link"));
    assert_eq!(of("b6"), "error: no such file: missing.txt");
    assert_eq!(of("b7"), &outside("/"));
    assert!(
        of("b8").starts_with("error: bad arguments for shell: invalid type"),
        "{}",
        of("b8")
    );
    assert_eq!(of("b9"), "error: read_file: path is empty");
    assert_eq!(
        of("b10"),
        "error: request_file_grant needs an absolute path, not notes.txt"
    );
    assert!(
        of("b11").starts_with("error: grep: bad pattern: "),
        "{}",
        of("b11")
    );
    assert_eq!(of("b12"), &outside("link"));
    assert_eq!(
        of("b13"),
        "error: notes.txt is not a directory; read it with read_file"
    );

    let file = env.only_session();
    let log = std::fs::read_to_string(&file).unwrap();
    assert!(!log.contains("the secret"), "a refused file was read");
    let recs = records(&file);
    assert_eq!(
        logged_calls(&recs),
        triples(&bad),
        "calls are logged as made"
    );
    assert_eq!(tool_results(&recs), found);
    assert_eq!(recs.last().unwrap()["turns"], 1, "the turn completed");
    assert_eq!(env.ok(&["replay", "--check"]).code, Some(0));
    let expected: String = bodies(&server).iter().map(|b| format!("{b}\n")).collect();
    assert_eq!(env.ok(&["replay", "--requests"]).stdout, expected);
}

#[test]
fn bad_calls_get_error_results_on_the_openai_wire() {
    bad_calls_get_error_results(Wire::OpenAi);
}

#[test]
fn bad_calls_get_error_results_on_the_anthropic_wire() {
    bad_calls_get_error_results(Wire::Anthropic);
}

// ---------------------------------------------------------------------------
// 6. Failed requests

fn a_429_is_retried(wire: Wire) {
    let env = TestEnv::new("retry-429");
    let server = wire.serve(vec![
        FakeReply::Status {
            code: 429,
            body: "slow down".into(),
            retry_after: Some(0),
        },
        text("Made it.", (10, 2)),
    ]);
    // REVOLVE_RETRIES over the harness's 0, or --retries over both.
    let run = match wire {
        Wire::OpenAi => revolve_env(
            &env,
            wire,
            &server,
            &[],
            "hello\n",
            &[("REVOLVE_RETRIES", "2")],
        ),
        Wire::Anthropic => revolve_env(
            &env,
            wire,
            &server,
            &["--retries", "2"],
            "hello\n",
            &[("REVOLVE_RETRIES", "0")],
        ),
    };
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "Made it.\n");
    let err = run.stderr_lines_past_seeding(&env);
    assert_eq!(err.len(), 1, "{run:?}");
    assert!(
        err[0].starts_with("revolve: retrying in 0 s (attempt 2 of 3): ") && err[0].contains("429"),
        "{run:?}"
    );
    let sent = bodies(&server);
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0], sent[1], "the same request, sent again");

    let recs = records(&env.only_session());
    assert_eq!(
        kinds(&recs),
        ["header", "message", "context", "message", "totals"]
    );
    assert_eq!(
        messages(&recs),
        pairs(&[("user", "hello"), ("assistant", "Made it.")])
    );
    // What was retried is one request in the log.
    assert_eq!(
        env.ok(&["replay", "--requests"]).stdout,
        format!("{}\n", sent[1])
    );
}

#[test]
fn a_429_is_retried_on_the_openai_wire() {
    a_429_is_retried(Wire::OpenAi);
}

#[test]
fn a_429_is_retried_on_the_anthropic_wire() {
    a_429_is_retried(Wire::Anthropic);
}

/// The harness's `REVOLVE_RETRIES=0` holds unless a test overrides it: the
/// same 429 without the override fails at once.
#[test]
fn without_retries_a_429_fails_at_once() {
    let env = TestEnv::new("no-retry");
    let wire = Wire::OpenAi;
    let server = wire.serve(vec![
        FakeReply::Status {
            code: 429,
            body: "slow down".into(),
            retry_after: Some(0),
        },
        text("Never.", (10, 1)),
    ]);
    let run = revolve(&env, wire, &server, &[], "hello\n");
    assert_eq!(run.code, Some(1), "{run:?}");
    assert_eq!(server.requests().len(), 1);
    assert!(!run.stderr.contains("retrying"), "{run:?}");
}

#[test]
fn retries_run_out_and_fail_with_one_line() {
    let env = TestEnv::new("retry-503");
    let wire = Wire::OpenAi;
    let busy = FakeReply::Status {
        code: 503,
        body: "overloaded".into(),
        retry_after: Some(0),
    };
    let server = wire.serve(vec![busy; 5]);
    let run = revolve_env(
        &env,
        wire,
        &server,
        &[],
        "hello\nnever sent\n",
        &[("REVOLVE_RETRIES", "1")],
    );
    assert_eq!(run.code, Some(1), "{run:?}");
    assert_eq!(run.stdout, "");
    assert_eq!(server.requests().len(), 2, "sent once, then once again");
    let err = run.stderr_lines_past_seeding(&env);
    assert_eq!(err.len(), 2, "a notice, then the error: {run:?}");
    assert!(
        err[0].starts_with("revolve: retrying in 0 s (attempt 2 of 2): "),
        "{run:?}"
    );
    let url = format!("{}/chat/completions", server.url());
    assert!(
        err[1].starts_with("revolve: ")
            && err[1].contains("503")
            && err[1].contains(&url)
            && err[1].ends_with("(after 2 attempts)"),
        "{run:?}"
    );
    let recs = records(&env.only_session());
    assert_eq!(
        kinds(&recs),
        ["header", "message", "context", "failed", "totals"]
    );
    assert_eq!(
        last_of(&recs, "failed")["error"],
        err[1]["revolve: ".len()..]
    );
}

#[test]
fn a_cut_anthropic_stream_keeps_the_partial_answer() {
    let env = TestEnv::new("cut-anthropic");
    let wire = Wire::Anthropic;
    let server = wire.serve(vec![
        FakeReply::CutAfter {
            chunks: vec!["Half".into(), " an".into(), " answer".into()],
        },
        text("Whole.", (30, 1)),
    ]);
    // Text was shown, so the failure is final even with retries left.
    let run = revolve_env(
        &env,
        wire,
        &server,
        &[],
        "tell me\n",
        &[("REVOLVE_RETRIES", "2")],
    );
    assert_eq!(run.code, Some(1), "{run:?}");
    assert_eq!(run.stdout, "Half an answer\n", "what streamed was shown");
    let err = run.stderr_lines_past_seeding(&env);
    assert_eq!(err.len(), 1, "{run:?}");
    assert!(err[0].contains(&server.url()), "{run:?}");
    assert_eq!(server.requests().len(), 1, "shown text is never sent twice");

    let recs = records(&env.only_session());
    assert_eq!(
        kinds(&recs),
        ["header", "message", "context", "message", "failed", "totals"]
    );
    let partial = &recs[3];
    assert_eq!(
        (&partial["role"], &partial["content"], &partial["partial"]),
        (&json!("assistant"), &json!("Half an answer"), &json!(true))
    );

    // The partial answer is part of what the model gets next.
    let run = revolve(&env, wire, &server, &["--continue"], "go on\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(
        history(wire, &server.requests()[1].body),
        [
            Item::Text("user".into(), "tell me".into()),
            Item::Text("assistant".into(), "Half an answer".into()),
            Item::Text("user".into(), "go on".into()),
        ]
    );
}

/// A stream that breaks in the middle of a tool call: the text before it,
/// then the call's start and a fragment of its arguments, then nothing.
fn cut_in_a_call(wire: Wire) -> FakeReply {
    let events: Vec<(&str, Value)> = match wire {
        Wire::OpenAi => {
            let chunk = |delta: Value| {
                json!({"id": "x", "object": "chat.completion.chunk",
                       "choices": [{"index": 0, "delta": delta}]})
            };
            vec![
                ("", chunk(json!({"role": "assistant", "content": ""}))),
                ("", chunk(json!({"content": "Let me look."}))),
                (
                    "",
                    chunk(
                        json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                        "function": {"name": "read_file", "arguments": ""}}]}),
                    ),
                ),
                (
                    "",
                    chunk(json!({"tool_calls": [{"index": 0,
                        "function": {"arguments": "{\"pa"}}]})),
                ),
            ]
        }
        Wire::Anthropic => vec![
            (
                "message_start",
                json!({"message": {"usage": {"input_tokens": 10}}}),
            ),
            (
                "content_block_start",
                json!({"index": 0, "content_block": {"type": "text", "text": ""}}),
            ),
            (
                "content_block_delta",
                json!({"index": 0, "delta": {"type": "text_delta", "text": "Let me look."}}),
            ),
            ("content_block_stop", json!({"index": 0})),
            (
                "content_block_start",
                json!({"index": 1, "content_block":
                    {"type": "tool_use", "id": "toolu_01", "name": "read_file", "input": {}}}),
            ),
            (
                "content_block_delta",
                json!({"index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"pa"}}),
            ),
        ],
    };
    let body: String = events
        .into_iter()
        .map(|(name, mut data)| {
            if name.is_empty() {
                format!("data: {data}\n\n")
            } else {
                data["type"] = json!(name);
                format!("event: {name}\ndata: {data}\n\n")
            }
        })
        .collect();
    FakeReply::Garbage(body)
}

/// A stream cut inside a tool call keeps the text as a partial answer and
/// drops the half-made call, so no call is left without a result.
fn a_stream_cut_inside_a_tool_call(wire: Wire) {
    let env = TestEnv::new("cut-call");
    let server = wire.serve(vec![cut_in_a_call(wire), text("Again.", (20, 1))]);
    let run = revolve(&env, wire, &server, &[], "look\n");
    assert_eq!(run.code, Some(1), "{run:?}");
    assert_eq!(run.stdout, "Let me look.\n");
    assert_eq!(run.stderr_lines_past_seeding(&env).len(), 1, "{run:?}");
    assert!(run.stderr.contains(&server.url()), "{run:?}");
    assert!(!run.stderr.contains("→ read_file"), "the call ran: {run:?}");

    let recs = records(&env.only_session());
    assert_eq!(
        kinds(&recs),
        ["header", "message", "context", "message", "failed", "totals"]
    );
    let partial = &recs[3];
    assert_eq!(
        (&partial["content"], &partial["partial"]),
        (&json!("Let me look."), &json!(true))
    );
    assert!(logged_calls(&recs).is_empty(), "a half-made call is logged");

    let run = revolve(&env, wire, &server, &["--continue"], "again\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    let items = history(wire, &server.requests()[1].body);
    assert_answered(&items);
    assert_eq!(
        items,
        [
            Item::Text("user".into(), "look".into()),
            Item::Text("assistant".into(), "Let me look.".into()),
            Item::Text("user".into(), "again".into()),
        ]
    );
    assert_eq!(env.ok(&["replay", "--check"]).code, Some(0));
}

#[test]
fn a_stream_cut_inside_a_tool_call_on_the_openai_wire() {
    a_stream_cut_inside_a_tool_call(Wire::OpenAi);
}

#[test]
fn a_stream_cut_inside_a_tool_call_on_the_anthropic_wire() {
    a_stream_cut_inside_a_tool_call(Wire::Anthropic);
}

/// An overload reported inside an Anthropic stream, before any text, is
/// sent again like a 529.
#[test]
fn an_overload_inside_an_anthropic_stream_is_retried() {
    let env = TestEnv::new("overloaded");
    let wire = Wire::Anthropic;
    let overloaded = json!({"type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"}});
    let server = wire.serve(vec![
        FakeReply::Garbage(format!("event: error\ndata: {overloaded}\n\n")),
        text("Fine now.", (10, 2)),
    ]);
    let run = revolve_env(
        &env,
        wire,
        &server,
        &[],
        "hello\n",
        &[("REVOLVE_RETRIES", "1")],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "Fine now.\n");
    assert_eq!(run.stderr_lines_past_seeding(&env).len(), 1, "{run:?}");
    assert!(
        run.stderr.contains("retrying") && run.stderr.contains("Overloaded"),
        "{run:?}"
    );
    let sent = bodies(&server);
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0], sent[1]);
    let recs = records(&env.only_session());
    assert_eq!(
        messages(&recs),
        pairs(&[("user", "hello"), ("assistant", "Fine now.")])
    );
}

/// A command that runs past its `timeout_s` is killed and its result says
/// so; the turn goes on.
#[test]
fn a_command_past_its_timeout_is_killed() {
    let env = TestEnv::new("timeout");
    let wire = Wire::OpenAi;
    let server = wire.serve(vec![
        calls(
            "",
            &[(
                "s1",
                "shell",
                r#"{"command":"echo started; sleep 20","timeout_s":1}"#,
            )],
            (10, 1),
        ),
        text("It hung.", (10, 2)),
    ]);
    let started = Instant::now();
    let run = revolve(&env, wire, &server, &["--allow-shell"], "run it\n");
    assert!(started.elapsed() < Duration::from_secs(10), "not killed");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "It hung.\n");
    let found = results(&history(wire, &server.requests()[1].body));
    let (call, content) = &found[0];
    assert_eq!(call, "s1");
    assert!(
        content.starts_with("error: the command timed out after 1 s and was killed")
            && content.ends_with("\nstdout:\nstarted"),
        "what it printed is kept: {content}"
    );
}

// ---------------------------------------------------------------------------
// 7. Ctrl-C while a tool runs

/// The log's records so far, leniently: a line being written is left out.
fn records_so_far(env: &TestEnv) -> Vec<Value> {
    let Some(file) = env.session_files().into_iter().next() else {
        return Vec::new();
    };
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Whether process `pid` is still running (a zombie is not). Where there
/// is no `/proc` (macOS), whether the pid exists at all (`kill(pid, 0)`),
/// which counts a zombie as running: stricter, never looser.
fn alive(pid: u32) -> bool {
    if !Path::new("/proc/self/stat").exists() {
        return nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), None).is_ok();
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // `pid (comm) STATE …`; comm may hold spaces and parentheses.
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z')),
        Err(_) => false,
    }
}

/// Waits until `done` holds, at most `within`; fails with `what` else.
fn wait_until(within: Duration, what: &str, done: impl FnMut() -> bool) {
    assert!(
        common::wait_until(within, done),
        "{what}: not within {within:?}"
    );
}

/// `signal` (`INT` or `TERM`) while a shell command runs, ending with
/// `code` and this last line on stderr.
fn signal_while_a_shell_command_runs(wire: Wire, signal: &str, code: i32, last: &str) {
    let env = TestEnv::new("signal-tool");
    write(&env, "notes.txt", NOTES);
    // The command leaves a background process in its group, and says which.
    let command = "sleep 30 & echo $! > bg.pid; wait";
    let shell_args = json!({ "command": command }).to_string();
    let (s1, r2) = (wire.id(1), wire.id(2));
    let server = wire.serve(vec![calls(
        "",
        &[
            (&s1, "shell", &shell_args),
            (&r2, "read_file", r#"{"path":"notes.txt"}"#),
        ],
        (10, 2),
    )]);
    let flags = wire.flags(&server);
    let mut args: Vec<&str> = flags.iter().map(String::as_str).collect();
    args.push("--allow-shell");
    let started = Instant::now();
    let child = env.spawn(&args, "wait a while\nnever sent\n");
    let within = Duration::from_secs(10);
    let pid_file = env.cwd.join("bg.pid");
    wait_until(within, "the command started", || {
        let logged = records_so_far(&env)
            .iter()
            .any(|r| r["tool_calls"].is_array());
        let pid = std::fs::read_to_string(&pid_file).unwrap_or_default();
        logged && pid.ends_with('\n')
    });
    let bg: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(alive(bg), "the background sleep runs");
    child.signal(signal);
    let run = child.finish(within);
    assert_eq!(run.code, Some(code), "{run:?}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the command was not stopped"
    );
    assert_eq!(run.stdout, "");
    assert_eq!(
        run.stderr_lines_past_seeding(&env),
        [format!("→ shell {command}").as_str(), last],
        "the second call never ran"
    );
    assert_eq!(
        server.requests().len(),
        1,
        "nothing sent after the interrupt"
    );
    wait_until(Duration::from_secs(2), "the whole group was killed", || {
        !alive(bg)
    });

    let recs = records(&env.only_session());
    assert_eq!(
        kinds(&recs),
        [
            "header",
            "message",
            "context",
            "message",
            "totals",
            "message",
            "message",
            "interrupted",
            "totals"
        ]
    );
    let found = tool_results(&recs);
    assert_eq!(
        found.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>(),
        [s1.as_str(), r2.as_str()],
        "every open call is answered"
    );
    for (id, content) in &found {
        assert!(
            content.starts_with("error: ") && content.contains("interrupted"),
            "{id}: {content}"
        );
    }
    assert_eq!(recs[7]["unsent"], true);
    assert_eq!(recs[8]["turns"], 1);

    assert_log_whole(&env);

    // The next turn sends a well-formed history: every call is answered.
    let next = wire.serve(vec![text("Resumed.", (20, 1))]);
    let run = revolve(&env, wire, &next, &["--continue"], "what happened?\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "Resumed.\n");
    let items = history(wire, &next.requests()[0].body);
    assert_answered(&items);
    assert_eq!(
        items,
        [
            Item::Text("user".into(), "wait a while".into()),
            Item::Call(s1.clone(), "shell".into(), json!({ "command": command })),
            Item::Call(r2.clone(), "read_file".into(), json!({"path": "notes.txt"})),
            Item::Result(s1.clone(), found[0].1.clone()),
            Item::Result(r2.clone(), found[1].1.clone()),
            Item::Text("user".into(), "what happened?".into()),
        ]
    );
    // The request that was never sent is not rebuilt either.
    let mut sent = bodies(&server);
    sent.extend(bodies(&next));
    let expected: String = sent.iter().map(|b| format!("{b}\n")).collect();
    assert_eq!(env.ok(&["replay", "--requests"]).stdout, expected);
}

const INTERRUPTED: &str = "revolve: interrupted";

#[test]
fn ctrl_c_while_a_shell_command_runs_on_the_openai_wire() {
    signal_while_a_shell_command_runs(Wire::OpenAi, "INT", 130, INTERRUPTED);
}

#[test]
fn ctrl_c_while_a_shell_command_runs_on_the_anthropic_wire() {
    signal_while_a_shell_command_runs(Wire::Anthropic, "INT", 130, INTERRUPTED);
}

/// SIGTERM ends the turn the way Ctrl-C does, then stops revolve.
#[test]
fn sigterm_while_a_shell_command_runs() {
    let last = "revolve: stopped by a signal; the turn is logged as interrupted";
    signal_while_a_shell_command_runs(Wire::OpenAi, "TERM", 143, last);
}

/// A SIGKILL while a tool runs leaves its call without a result; the next
/// run answers it before anything else, so the history stays well formed.
#[test]
fn a_crash_while_a_tool_runs_is_closed_by_the_next_run() {
    let env = TestEnv::new("kill-tool");
    let wire = Wire::Anthropic;
    // One process that the test can stop afterwards (a SIGKILL leaves the
    // command's own process group running).
    let command = "echo $$ > sh.pid; exec sleep 30";
    let shell_args = json!({ "command": command }).to_string();
    let server = wire.serve(vec![calls(
        "On it.",
        &[("toolu_01", "shell", &shell_args)],
        (10, 1),
    )]);
    let flags = wire.flags(&server);
    let mut args: Vec<&str> = flags.iter().map(String::as_str).collect();
    args.push("--allow-shell");
    let child = env.spawn(&args, "wait\n");
    let within = Duration::from_secs(10);
    let pid_file = env.cwd.join("sh.pid");
    wait_until(within, "the command started", || {
        std::fs::read_to_string(&pid_file).is_ok_and(|p| p.ends_with('\n'))
    });
    child.signal("KILL");
    let run = child.finish(within);
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    std::process::Command::new("kill")
        .args(["-KILL", pid.trim()])
        .status()
        .ok();
    assert_eq!((run.code, run.signal), (None, Some(9)), "{run:?}");
    let file = env.only_session();
    assert_eq!(
        kinds(&records(&file))[2..],
        ["context", "message", "totals"],
        "the call is logged, its result never came"
    );

    let next = wire.serve(vec![text("Recovered.", (20, 1))]);
    let run = revolve(&env, wire, &next, &["--continue"], "still there?\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "Recovered.\n");
    let items = history(wire, &next.requests()[0].body);
    assert_answered(&items);
    assert_eq!(
        items,
        [
            Item::Text("user".into(), "wait".into()),
            Item::Text("assistant".into(), "On it.".into()),
            Item::Call(
                "toolu_01".into(),
                "shell".into(),
                json!({ "command": command })
            ),
            Item::Result(
                "toolu_01".into(),
                "error: interrupted before shell finished; it may or may not have run".into()
            ),
            Item::Text("user".into(), "still there?".into()),
        ]
    );
    let recs = records(&file);
    assert_eq!(
        kinds(&recs)[5..],
        [
            "message",
            "interrupted",
            "totals",
            "resumed",
            "message",
            "message",
            "totals"
        ]
    );
    assert_eq!(recs[6]["unsent"], true);
    assert_eq!(recs.last().unwrap()["turns"], 2);
    assert_log_whole(&env);
    let mut sent = bodies(&server);
    sent.extend(bodies(&next));
    let expected: String = sent.iter().map(|b| format!("{b}\n")).collect();
    assert_eq!(env.ok(&["replay", "--requests"]).stdout, expected);
}

/// Starts a turn whose request is refused with a 429 asking for a 30 s
/// wait, presses Ctrl-C during the wait, and returns the run, the number of
/// requests the server got and the log.
fn interrupt_a_retry_wait(name: &str) -> (Run, usize, Vec<Value>) {
    let env = TestEnv::new(name);
    let wire = Wire::OpenAi;
    let server = wire.serve(vec![
        FakeReply::Status {
            code: 429,
            body: "slow down".into(),
            retry_after: Some(30),
        },
        text("Too late.", (10, 2)),
    ]);
    let flags = wire.flags(&server);
    let args: Vec<&str> = flags.iter().map(String::as_str).collect();
    let started = Instant::now();
    let mut child = env.spawn_env(&args, "hello\n", &[("REVOLVE_RETRIES", "3")]);
    let within = Duration::from_secs(10);
    // The notice is printed as the wait begins.
    assert!(
        child.wait_stderr("revolve: retrying in 30 s", within),
        "the wait never began"
    );
    assert_eq!(server.requests().len(), 1);
    child.signal("INT");
    let run = child.finish(within);
    assert!(started.elapsed() < Duration::from_secs(10), "waited it out");
    assert_eq!(env.ok(&["replay", "--check"]).code, Some(0));
    (run, server.requests().len(), records(&env.only_session()))
}

/// Ctrl-C while revolve waits to send a request again ends the turn at
/// once, without sending it.
#[test]
fn ctrl_c_during_a_retry_wait() {
    let (run, sent, recs) = interrupt_a_retry_wait("ctrl-c-retry");
    assert_eq!(run.code, Some(130), "{run:?}");
    assert_eq!(sent, 1, "not sent again");
    let lines = run.stderr_lines();
    // The seeding notes of a first start (memory, skills) open it.
    let seeded = lines
        .iter()
        .take_while(|l| l.starts_with("seeded "))
        .count();
    assert_eq!(seeded, 2, "{run:?}");
    let rest = &lines[seeded..];
    let (last, before) = rest.split_last().map(|(l, b)| (*l, b.to_vec())).unwrap();
    assert_eq!(last, "revolve: interrupted", "{run:?}");
    // The notice (Ctrl-C was sent once it showed).
    assert_eq!(before.len(), 1, "{run:?}");
    assert!(
        before[0].starts_with("revolve: retrying in 30 s (attempt 2 of 4): HTTP 429"),
        "{run:?}"
    );
    assert_eq!(messages(&recs), pairs(&[("user", "hello")]));
    let end = &kinds(&recs)[3..];
    // How the turn is logged depends on a race; see the test below.
    assert!(
        end == ["interrupted", "totals"] || end == ["failed", "totals"],
        "{end:?}"
    );
    assert_eq!(recs.last().unwrap()["turns"], 1);
}

/// The same, logged as the user ended it. The main thread and the retry's
/// wait (on the request's worker thread) both watch the Ctrl-C flag: when
/// the wait notices first, it gives up and returns the 429, which reaches
/// the main thread as `Input::Failed` before its own poll, so the turn is
/// logged as `failed` with the 429 (and a resume shows `! failed: HTTP 429
/// …`) although stderr says `interrupted` and the exit is 130. When the
/// main thread notices first, `interrupt::take` clears the flag and the
/// abandoned worker sleeps out `Retry-After` and sends the request again,
/// which in the REPL (where the process lives on) is a request the user
/// cancelled. Which goes first varies from run to run, so this tries 40
/// times.
#[test]
fn ctrl_c_during_a_retry_wait_is_logged_as_interrupted() {
    for attempt in 0..40 {
        let (run, _, recs) = interrupt_a_retry_wait("ctrl-c-retry-log");
        assert_eq!(run.code, Some(130), "{run:?}");
        assert_eq!(
            kinds(&recs)[3..],
            ["interrupted", "totals"],
            "attempt {attempt}: {:?}",
            recs[3]
        );
    }
}

/// The API keys are removed from the environment of shell commands, so no
/// command can print one into the session log.
#[test]
fn shell_commands_do_not_see_the_api_keys() {
    let env = TestEnv::new("shell-keys");
    let wire = Wire::OpenAi;
    let command =
        r#"echo "[$OPENAI_API_KEY|$ANTHROPIC_API_KEY|$REVOLVE_API_KEY|$OPENROUTER_API_KEY|$HOME]""#;
    let server = wire.serve(vec![
        calls(
            "",
            &[("s1", "shell", &json!({ "command": command }).to_string())],
            (10, 1),
        ),
        text("Nothing.", (10, 1)),
    ]);
    let run = revolve_env(
        &env,
        wire,
        &server,
        &["--allow-shell"],
        "print the keys\n",
        &[
            ("OPENAI_API_KEY", "sk-openai-secret"),
            ("ANTHROPIC_API_KEY", "sk-ant-secret"),
            ("REVOLVE_API_KEY", "sk-revolve-secret"),
            ("OPENROUTER_API_KEY", "sk-or-secret"),
        ],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    let found = results(&history(wire, &server.requests()[1].body));
    assert_eq!(
        found,
        [(
            "s1".to_owned(),
            format!("exit status: 0\nstdout:\n[||||{}]", env.home.display())
        )],
        "the rest of the environment is kept"
    );
    let log = std::fs::read_to_string(env.only_session()).unwrap();
    assert!(!log.contains("secret"), "a key is in the log");
}

/// Every key variable's value is redacted from what a tool returns, the
/// OpenRouter key as much as the others: a file that holds one is read back
/// with `[key]` in its place, and the key is in no request and not in the log.
#[test]
fn tool_output_has_every_api_key_redacted() {
    let env = TestEnv::new("redact-keys");
    let wire = Wire::OpenAi;
    std::fs::write(
        env.cwd.join("leak.txt"),
        "or=sk-or-v1-secret42\nant=sk-ant-secret42\n",
    )
    .unwrap();
    let args = json!({ "path": "leak.txt" }).to_string();
    let server = wire.serve(vec![
        calls("", &[("r1", "read_file", &args)], (10, 1)),
        text("Read.", (10, 1)),
    ]);
    let run = revolve_env(
        &env,
        wire,
        &server,
        &[],
        "read leak.txt\n",
        &[
            ("OPENROUTER_API_KEY", "sk-or-v1-secret42"),
            ("ANTHROPIC_API_KEY", "sk-ant-secret42"),
        ],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    let found = results(&history(wire, &server.requests()[1].body));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].1.contains("or=[key]"), "{found:?}");
    assert!(found[0].1.contains("ant=[key]"), "{found:?}");
    let log = std::fs::read_to_string(env.only_session()).unwrap();
    assert!(!log.contains("secret42"), "a key is in the log");
}

// ---------------------------------------------------------------------------
// 8. The transcript of a session with tools

/// insta filters for `path` as `[SPILL]` in a transcript: where it is
/// whole, where a one-line view cut it (`prefix…`), and in the character
/// count of the tool result that holds it, `result` (counted as if
/// `[SPILL]` stood there), so the snapshot does not depend on how long the
/// temp dir's path is. They go ahead of [`TestEnv::filters`], which would
/// take the path apart.
fn spill_filters(path: &str, result: &str) -> Vec<(String, String)> {
    const NAME: &str = "[SPILL]";
    let shorter = path.chars().count() - NAME.chars().count();
    let chars = result.chars().count();
    let half = &path[..path.len() / 2];
    vec![
        (
            format!("{}[^\"\\s…]*…", regex_escape(half)),
            format!("{NAME}…"),
        ),
        (regex_escape(path), NAME.to_owned()),
        // `← FIRST LINE (N lines, M chars)`: the spilled result names the
        // path once.
        (
            format!(r"(← exit status: 0 \(\d+ lines?, ){chars}( chars\))"),
            format!("${{1}}{}${{2}}", chars - shorter),
        ),
    ]
}

#[test]
fn the_transcript_of_a_session_with_tools() {
    let wire = Wire::OpenAi;
    let env = TestEnv::new("transcript");
    write(&env, "notes.txt", NOTES);
    let id = start_session(&env, wire);
    let spill = spill_path(&env, &id, 1, "c1");
    let spill_str = str_of(&spill).to_owned();
    let read_middle = format!(r#"{{"offset":150002,"limit":3,"path":"{spill_str}"}}"#);
    let server = wire.serve(vec![
        calls(
            "I will count.",
            &[("c1", "shell", &format!(r#"{{"command":"seq 1 {SEQ_TO}"}}"#))],
            (10, 1),
        ),
        calls(
            "",
            &[
                ("c2", "read_file", &read_middle),
                ("c3", "list_dir", r#"{"path":"."}"#),
                ("c4", "frobnicate", "{}"),
            ],
            (20, 3),
        ),
        text("The middle is 150000.", (30, 4)),
    ]);
    let run = revolve(
        &env,
        wire,
        &server,
        &[
            "--continue",
            "--allow-shell",
            "--spill-result-chars",
            "1000",
        ],
        "count to 300000 and read the middle\n",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(spill.is_file(), "the result was spilled to {spill_str}");

    let transcript = env.ok(&["replay"]).stdout;
    let results = tool_results(&records(&env.only_session()));
    let (_, spilled) = results.iter().find(|(id, _)| id == "c1").unwrap();
    let spill = spill_filters(&spill_str, spilled);
    let filters = spill
        .iter()
        .map(|(from, to)| (from.as_str(), to.as_str()))
        .chain(env.filters());
    insta::with_settings!({filters => filters}, {
        insta::assert_snapshot!("tools_transcript", transcript);
    });
}

/// A model that rambled inside a call until its answer's limit leaves
/// arguments that are not JSON. llama.cpp's `llama-server` parses every
/// call of the history and refused the next request whole (HTTP 500, met
/// with SmolLM2): revolve sends such arguments inside an object, so the
/// turn goes on, the model sees what it wrote, and replay rebuilds it.
#[test]
fn arguments_cut_short_do_not_make_llama_server_refuse_the_turn() {
    let env = TestEnv::new("tools-cut-arguments");
    let cut = r#"{"path": "current_dir/master/master/mas"#;
    let options = revolve_testkit::FakeOptions {
        parses_arguments: true,
        ..revolve_testkit::FakeOptions::default()
    };
    let server = FakeServer::start_with_options(
        revolve_testkit::FakeProtocol::OpenAi,
        vec![
            calls("", &[("call_1", "list_dir", cut)], (10, 5)),
            text("Sorry, I meant the current directory.", (20, 5)),
        ],
        options,
    )
    .unwrap();
    let url = server.url();
    let run = env.run(
        &[
            "--provider",
            "llamacpp",
            "--base-url",
            &url,
            "--model",
            "smollm2",
            "--window",
            "4096",
        ],
        "List the files here.\n",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run.stdout.contains("Sorry, I meant"), "{run:?}");
    let sent: Vec<String> = server
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .map(|r| r.body)
        .collect();
    assert_eq!(sent.len(), 2, "{sent:?}");
    let second: Value = serde_json::from_str(&sent[1]).unwrap();
    let arguments = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|m| m["tool_calls"][0]["function"]["arguments"].as_str())
        .unwrap_or_else(|| panic!("the call sent back: {second}"));
    assert_eq!(
        serde_json::from_str::<Value>(arguments).unwrap(),
        json!({ "unparsed_arguments": cut })
    );
    // The log keeps what the model wrote; the call's result says why it
    // was not run.
    let log = records(&env.only_session());
    assert_eq!(logged_calls(&log)[0].2, cut);
    assert!(
        tool_results(&log)[0].1.starts_with("error: bad arguments"),
        "{log:?}"
    );
    let sent: String = sent.iter().map(|b| format!("{b}\n")).collect();
    assert_eq!(env.ok(&["replay", "--requests"]).stdout, sent);
}
