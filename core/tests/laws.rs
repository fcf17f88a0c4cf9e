//! The core's laws, checked on random runs (model-based, after indexmap's
//! `tests/quick.rs` and sled's `tests/test_log.rs`): a random sequence of
//! events, including tool rounds, spills and restarts from the log, is run
//! live; the log it appended is folded; state and request bytes must agree.

use revolve_core::{
    FileCommand, LogCommand, MemoryCommand, MemoryInput, ModelCommand, ModelInput, ToolCommand,
    ToolInput, TurnContext, UserCommand, UserInput,
};
use std::collections::BTreeSet;

use quickcheck::{Arbitrary, Gen, QuickCheck};
use revolve_core::compact::{self, Plan};
use revolve_core::models::Effort;
use revolve_core::record::{
    Context, Failed, Header, Interrupted, Message, Record, Renamed, Resumed, Role, Thinking,
    ToolCall, Totals, FORMAT_VERSION,
};
use revolve_core::state::{requests, State};
use revolve_core::{Command, Delivery, Input, Reply, Request, Session, Settings, Usage};
use time::macros::datetime;
use time::{Duration, OffsetDateTime};

/// The seed the laws run with unless `REVOLVE_LAWS_SEED` (read when the
/// tests are built) names another: a fixed one, so a failure shows again.
const SEED: u64 = 0x5eed_1a35;

/// The laws' runner: seeded ([`SEED`] or `REVOLVE_LAWS_SEED`), the seed
/// said on stderr, which the test harness shows with a failing law.
fn laws() -> QuickCheck {
    let seed = option_env!("REVOLVE_LAWS_SEED")
        .and_then(|s| s.parse().ok())
        .unwrap_or(SEED);
    eprintln!(
        "laws: seed {seed} (REVOLVE_LAWS_SEED={seed} cargo test -p revolve-core --test laws repeats this run)"
    );
    QuickCheck::new().rng(Gen::from_size_and_seed(100, seed))
}

#[derive(Clone, Debug)]
enum Op {
    /// The user's line, with 0 to 2 pictures attached.
    User(String, u8),
    /// The model answers with text and up to three tool calls (some bad),
    /// after up to two thinking blocks (Anthropic's extended thinking).
    Reply(String, Vec<u8>, Option<(u16, u16)>, u8),
    /// `/effort`: none, low, medium or high.
    Effort(u8),
    /// The tool in flight finishes; `big` 0: spilled, 1: long (prunable),
    /// else short.
    ToolDone {
        big: u8,
        grant: bool,
    },
    Fail(String),
    Interrupt(String),
    Rename(u8),
    /// The process ends; a new one folds the log and resumes.
    Restart,
    /// The user asks for `/compact`.
    Compact,
    /// The summary in flight comes back (as notes, or as a tool call
    /// instead, which small models held to a tool grammar write), or fails.
    Summary {
        ok: bool,
        calls: bool,
    },
    /// `new` messages arrive in the inbox; the shell hands over everything
    /// waiting there (taken ones too, when a crash kept them), answered at
    /// once (an idle REPL) or with the user's next line.
    Inbox {
        new: u8,
        answer: bool,
    },
    /// The user lets a turn stopped at the tool-round cap go on.
    GoOn,
    /// The memory is refined from the session, when it is idle (only
    /// [`Refining`] runs have these). `pieces` picks how each part's
    /// request is answered (usable, failed, unusable, interrupted), and
    /// with 2 a `/refine` reads a session too long for one request.
    Refine {
        auto: bool,
        pieces: u8,
    },
}

/// Runs with refinements between the other ops.
#[derive(Clone, Debug)]
struct Refining(Vec<Op>);

impl Arbitrary for Refining {
    fn arbitrary(g: &mut Gen) -> Refining {
        let mut ops = Vec::new();
        for op in Vec::<Op>::arbitrary(g) {
            ops.push(op);
            if u8::arbitrary(g) % 4 == 0 {
                ops.push(Op::Refine {
                    auto: bool::arbitrary(g),
                    pieces: u8::arbitrary(g) % 3,
                });
            }
        }
        Refining(ops)
    }

    fn shrink(&self) -> Box<dyn Iterator<Item = Refining>> {
        Box::new(self.0.shrink().map(Refining))
    }
}

const CALLS: [(&str, &str); 5] = [
    ("read_file", r#"{"path":"a.rs"}"#),
    ("shell", r#"{"command":"make"}"#),
    ("request_file_grant", r#"{"path":"/etc/hosts"}"#),
    ("nope", "{}"),
    ("read_file", "{broken"),
];

impl Arbitrary for Op {
    fn arbitrary(g: &mut Gen) -> Op {
        let text = |g: &mut Gen| {
            let words = ["hi", "", "über", "line\nbreak", "\"quoted\"", "x"];
            let n = usize::arbitrary(g) % 3;
            (0..n)
                .map(|_| *g.choose(&words).unwrap())
                .collect::<Vec<_>>()
                .join(" ")
        };
        match u8::arbitrary(g) % 22 {
            21 => Op::Effort(u8::arbitrary(g) % 4),
            20 => Op::GoOn,
            18..=19 => Op::Inbox {
                new: u8::arbitrary(g) % 3,
                answer: bool::arbitrary(g),
            },
            0..=3 => Op::User(
                text(g),
                u8::arbitrary(g) % 6 / 2 * u8::from(bool::arbitrary(g)),
            ),
            4..=6 => {
                let n = usize::arbitrary(g) % 4;
                let calls = (0..n).map(|_| u8::arbitrary(g)).collect();
                Op::Reply(
                    text(g),
                    if bool::arbitrary(g) {
                        calls
                    } else {
                        Vec::new()
                    },
                    Option::arbitrary(g),
                    u8::arbitrary(g) % 3,
                )
            }
            7..=9 => Op::ToolDone {
                big: u8::arbitrary(g) % 4,
                grant: bool::arbitrary(g),
            },
            10 => Op::Fail(text(g)),
            11 => Op::Interrupt(text(g)),
            12 => Op::Rename(u8::arbitrary(g) % 4),
            13 => Op::Compact,
            14..=15 => Op::Summary {
                ok: u8::arbitrary(g) % 4 != 0,
                calls: u8::arbitrary(g) % 4 == 0,
            },
            _ => Op::Restart,
        }
    }
}

fn header() -> Header {
    Header {
        version: 1,
        id: "s".into(),
        name: Some("amber".into()),
        named: false,
        cwd: "/w".into(),
        project: "/w".into(),
        started: datetime!(2026-12-02 10:00 UTC),
        model: "m".into(),
        window: 100_000,
        provider: "scripted".into(),
        continues: None,
        tool_choice: None,
    }
}

/// The repeat guard's limit in these runs.
const REPEAT_LIMIT: u32 = 2;
/// The tool-round cap in these runs: low, so random runs reach it.
const MAX_TOOL_ROUNDS: u32 = 2;

fn settings() -> Settings {
    Settings {
        rules: Default::default(),
        spill_chars: 7_000,
        spill_dir: "/state/spills/s".into(),
        prune_chars: 100,
        repeat_limit: REPEAT_LIMIT,
        max_tool_rounds: MAX_TOOL_ROUNDS,
        max_calls_per_answer: revolve_core::policy::MAX_CALLS_PER_ANSWER,
        allow_edits: false,
        allow_shell: true,
        interactive: false,
        // `--grant /etc`: the grants the ops ask for are granted.
        granted: vec!["/etc".into()],
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

/// A run: the files it appended to and the requests it sent.
struct Run {
    session: Session,
    /// The session's files, the current one last.
    files: Vec<Vec<Record>>,
    sent: Vec<Request>,
    spilled: Vec<String>,
    /// The tool the session asked to run and that has not finished.
    running: Option<String>,
    /// Whether a summary request is in flight (its `compacting` record is
    /// logged already, so it counts as rebuilt).
    summarizing: bool,
    /// The numbers of the messages in the inbox (on disk: a restart keeps
    /// them).
    inbox: Vec<u64>,
    /// The last number the inbox gave.
    queued: u64,
}

impl Run {
    fn take(&mut self, cmds: Vec<Command>) {
        for c in cmds {
            match c {
                Command::Log(LogCommand::Append(r)) => {
                    // Every record survives a trip through its line; a
                    // message's pictures are named by hash, their bytes put
                    // back from the content store (which the shell filled
                    // when it made them), as the store's reader does.
                    let mut back = Record::parse_line(&r.to_line()).unwrap();
                    for image in back.images_mut() {
                        assert!(image.data.is_empty(), "no picture's bytes in the log");
                        image.data = blob(&image.hash);
                    }
                    assert_eq!(back, r);
                    self.log_mut().push(r);
                }
                Command::Model(ModelCommand::Call(req))
                | Command::Model(ModelCommand::Refine(req)) => self.sent.push(req),
                Command::Model(ModelCommand::Summarize(req)) => {
                    self.sent.push(req);
                    self.summarizing = true;
                }
                Command::Log(LogCommand::StartFile(h)) => self.files.push(vec![Record::Header(h)]),
                Command::Tool(ToolCommand::Run { id, .. })
                | Command::Tool(ToolCommand::CallMcp { id, .. }) => self.running = Some(id),
                Command::File(FileCommand::Spill { path, .. }) => self.spilled.push(path),
                // The generated answers make no `task` calls.
                Command::Tool(ToolCommand::Delegate { .. })
                | Command::Log(LogCommand::Sync)
                | Command::User(UserCommand::Show(_))
                | Command::User(UserCommand::Refused(_))
                | Command::Memory(MemoryCommand::Snapshot { .. })
                | Command::Memory(MemoryCommand::Undo)
                | Command::File(FileCommand::Open { .. })
                | Command::File(FileCommand::Stage { .. })
                | Command::File(FileCommand::Write { .. })
                | Command::File(FileCommand::Restore(_))
                | Command::User(UserCommand::Ask { .. })
                | Command::User(UserCommand::AskGrant { .. })
                | Command::User(UserCommand::AskFetch { .. })
                | Command::User(UserCommand::AskOutside { .. })
                | Command::Model(ModelCommand::Count(_))
                // No hook is configured here.
                | Command::Tool(ToolCommand::Hook(_))
                | Command::User(UserCommand::Confirm(_)) => {}
            }
        }
    }

    /// A refinement, driven as the shell drives one: the memory files and
    /// the session's text go in; each request the core sends is answered
    /// as `how` picks (usable changes with their usage, a failure, an
    /// answer that is no JSON, an interruption), a costly one is allowed,
    /// and the snapshot asked for is taken.
    fn refine(&mut self, auto: bool, how: u8, now: OffsetDateTime) {
        use revolve_core::memory::{MemoryFile, Scope};
        let files = vec![MemoryFile {
            scope: Scope::Project,
            name: "notes.md".into(),
            content: "port 5432\n".into(),
        }];
        let mut chain: Vec<String> = self
            .session
            .state()
            .messages()
            .iter()
            .map(revolve_core::refine::block)
            .collect();
        if how % 3 == 2 {
            // Longer than one request holds: read in parts.
            chain.extend((0..2).map(|i| format!("[user]\n{}\n", "y".repeat(150_000 + i))));
        }
        let mut cmds = self
            .session
            .handle(Input::User(UserInput::Refine {
                auto,
                files,
                chain,
                now,
            }))
            .commands;
        let mut part = 0u8;
        loop {
            let mut next = None;
            for c in &cmds {
                match c {
                    Command::Model(ModelCommand::Refine(_)) => {
                        part += 1;
                        next = Some(match how.wrapping_add(part) % 4 {
                            0 => Input::Model(ModelInput::RefineFailed {
                                error: "HTTP 500".into(),
                                now,
                            }),
                            1 => Input::Model(ModelInput::RefineReply {
                                reply: Reply {
                                    text: "not json".into(),
                                    ..Reply::default()
                                },
                                now,
                            }),
                            2 if part > 1 => Input::User(UserInput::Interrupted {
                                partial: String::new(),
                                now,
                            }),
                            _ => Input::Model(ModelInput::RefineReply {
                                reply: Reply {
                                    text: format!(
                                        r#"{{"files":[{{"file":"project/notes.md","content":"port {part}\n","change":"the port"}}]}}"#
                                    ),
                                    usage: Some(Usage {
                                        prompt_tokens: 40,
                                        completion_tokens: 7,
                                        ..Default::default()
                                    }),
                                    ..Reply::default()
                                },
                                now,
                            }),
                        });
                    }
                    Command::User(UserCommand::Confirm(_)) => {
                        next = Some(Input::User(UserInput::Confirmed { yes: true, now }))
                    }
                    Command::Memory(MemoryCommand::Snapshot { entry, .. }) => {
                        next = Some(Input::Memory(MemoryInput::Changed {
                            entry: entry.clone(),
                            now,
                        }))
                    }
                    _ => {}
                }
            }
            self.take(cmds);
            let Some(input) = next else { break };
            cmds = self.session.handle(input).commands;
        }
    }

    fn log(&self) -> &[Record] {
        self.files.last().expect("a run has a file")
    }

    fn log_mut(&mut self) -> &mut Vec<Record> {
        self.files.last_mut().expect("a run has a file")
    }
}

fn run(ops: &[Op]) -> Run {
    run_in(ops, 100_000, &[8_000, 6_000])
}

/// [`run`] under a declared `window`, with the two long tool outputs this
/// many characters long.
fn run_in(ops: &[Op], window: u64, long: &[usize; 2]) -> Run {
    run_as(ops, Header { window, ..header() }, long)
}

/// [`run_in`] of a session that starts with this header.
fn run_as(ops: &[Op], header: Header, long: &[usize; 2]) -> Run {
    let window = header.window;
    // On the Responses wire, thinking is OpenAI's reasoning items.
    let reasoning = header.provider == "openai-responses";
    let (session, cmds) = Session::start(header, settings());
    let mut run = Run {
        session,
        files: vec![Vec::new()],
        sent: Vec::new(),
        spilled: Vec::new(),
        running: None,
        summarizing: false,
        inbox: Vec::new(),
        queued: 0,
    };
    run.take(cmds);
    let mut now = datetime!(2026-12-02 10:00 UTC);
    for (i, op) in ops.iter().enumerate() {
        now += Duration::seconds(1);
        let input = match op.clone() {
            Op::User(text, pictures) => Input::User(UserInput::Line {
                context: TurnContext {
                    images: (0..pictures).map(|k| picture(i, k)).collect(),
                    ..TurnContext::default()
                },
                text,
                now,
            }),
            Op::Effort(n) => Input::User(UserInput::Effort {
                effort: [
                    None,
                    Some(Effort::Low),
                    Some(Effort::Medium),
                    Some(Effort::High),
                ][usize::from(n % 4)],
                now,
            }),
            Op::Reply(text, calls, usage, thinking) => {
                let signed = thinking >= 2;
                let mut thinking: Vec<Thinking> = (0..thinking)
                    .map(|k| match k {
                        _ if reasoning => Thinking::Reasoning {
                            item: serde_json::json!({
                                "id": format!("rs_{i}_{k}"),
                                "summary": [{"type": "summary_text", "text": format!("think {i} \"{text}\"")}],
                                "encrypted_content": format!("gAAA{i}{k}=="),
                            })
                            .as_object()
                            .cloned()
                            .unwrap_or_default(),
                        },
                        0 => Thinking::Thinking {
                            thinking: format!("think {i} \"{text}\""),
                            signature: format!("sig{i}=="),
                        },
                        _ => Thinking::RedactedThinking {
                            data: format!("data{i}/+"),
                        },
                    })
                    .collect();
                let usage = usage.map(|(p, c)| Usage {
                    prompt_tokens: p.into(),
                    completion_tokens: c.into(),
                    ..Default::default()
                });
                let tool_calls: Vec<ToolCall> = calls
                    .iter()
                    .enumerate()
                    .map(|(j, k)| {
                        let (name, args) = CALLS[*k as usize % CALLS.len()];
                        ToolCall {
                            id: format!("call_{i}_{j}"),
                            name: name.into(),
                            arguments: args.into(),
                        }
                    })
                    .collect();
                // Gemini's signature, on the first call or on the text.
                if signed {
                    thinking.push(Thinking::ThoughtSignature {
                        signature: format!("gsig{i}/+="),
                        call: tool_calls.first().map(|c| c.id.clone()),
                    });
                }
                Input::Model(ModelInput::Reply {
                    reply: Reply {
                        thinking,
                        truncated: false,
                        text,
                        tool_calls,
                        usage,
                    },
                    now,
                })
            }
            Op::ToolDone { big, grant } => {
                let Some(id) = run.running.take() else {
                    continue;
                };
                let output = match big {
                    0 => "0123456789".repeat(long[0] / 10),
                    1 => "0123456789".repeat(long[1] / 10),
                    _ => "ok".into(),
                };
                // A short result of a read is sometimes a picture's.
                let image = (big == 3 && !grant).then(|| Box::new(picture(i, 9)));
                Input::Tool(ToolInput::Done {
                    parts: None,
                    id,
                    output,
                    grant: grant.then(|| "/etc/hosts".into()),
                    effects: revolve_core::session::ToolEffects {
                        image,
                        ..Default::default()
                    },
                    now,
                })
            }
            Op::Fail(partial) => Input::Model(ModelInput::Failed {
                error: "boom".into(),
                partial,
                now,
            }),
            Op::Interrupt(partial) => {
                run.summarizing = false;
                Input::User(UserInput::Interrupted { partial, now })
            }
            Op::Compact => Input::User(UserInput::Compact { now }),
            Op::GoOn => Input::User(UserInput::GoOn {
                parts: Default::default(),
                now,
            }),
            Op::Refine { auto, pieces } => {
                if run.session.busy() {
                    continue;
                }
                run.refine(auto, pieces, now);
                continue;
            }
            Op::Inbox { new, answer } => {
                for _ in 0..new {
                    run.queued += 1;
                    run.inbox.push(run.queued);
                }
                let messages = run
                    .inbox
                    .iter()
                    .map(|&seq| Delivery {
                        seq,
                        from: "alice".into(),
                        text: format!("note {seq}"),
                    })
                    .collect();
                // An idle REPL takes them and asks at once; otherwise they
                // go with the user's next line.
                let input = if answer {
                    Input::User(UserInput::Inbox {
                        messages,
                        parts: Default::default(),
                        now,
                    })
                } else {
                    Input::User(UserInput::Line {
                        context: TurnContext {
                            inbox: messages,
                            ..TurnContext::default()
                        },
                        text: "and this".into(),
                        now,
                    })
                };
                let cmds = run.session.handle(input).commands;
                run.take(cmds);
                // The shell settles: what the log holds leaves the inbox.
                let delivered = run.session.state().totals().delivered;
                run.inbox.retain(|&seq| seq > delivered);
                continue;
            }
            Op::Summary { ok, calls } => {
                if !run.summarizing {
                    continue;
                }
                if ok && calls {
                    // Asked again with no tools, or no notes: a summary
                    // request sent says which.
                    run.summarizing = false;
                    let call = ToolCall {
                        id: "n1".into(),
                        name: "shell".into(),
                        arguments: r#"{"command":"ls"}"#.into(),
                    };
                    Input::Model(ModelInput::Summarized {
                        reply: Reply {
                            text: "let me look".into(),
                            tool_calls: vec![call],
                            ..Reply::default()
                        },
                        new_id: format!("s{}", run.files.len() + 1),
                        now,
                    })
                } else if ok {
                    run.summarizing = false;
                    let new_id = format!("s{}", run.files.len() + 1);
                    let usage = Some(Usage {
                        prompt_tokens: 9,
                        completion_tokens: 3,
                        ..Default::default()
                    });
                    Input::Model(ModelInput::Summarized {
                        reply: Reply {
                            text: "Facts: port 5432".into(),
                            usage,
                            ..Reply::default()
                        },
                        new_id,
                        now,
                    })
                } else {
                    run.summarizing = false;
                    Input::Model(ModelInput::SummaryFailed {
                        error: "HTTP 500".into(),
                        now,
                    })
                }
            }
            Op::Rename(n) => {
                let used = BTreeSet::from(["birch".to_owned()]);
                Input::User(UserInput::Rename {
                    name: ["birch", "db", "", "a/b"][n as usize].into(),
                    used,
                    now,
                })
            }
            Op::Restart => {
                let resumed = Resumed {
                    at: now,
                    model: "m".into(),
                    window,
                    provider: String::new(),
                };
                let (session, cmds) = Session::resume(State::fold(run.log()), settings(), resumed);
                run.session = session;
                run.running = None;
                run.summarizing = false;
                run.take(cmds);
                continue;
            }
        };
        let cmds = run.session.handle(input).commands;
        run.take(cmds);
    }
    run
}

/// A picture as the shell makes one (issue 44): the `k`th of op `i`.
fn picture(i: usize, k: u8) -> revolve_core::record::Image {
    let hash = format!("sha256:{:064x}", i * 16 + usize::from(k));
    revolve_core::record::Image {
        data: blob(&hash),
        hash,
        media_type: "image/png".into(),
        width: 4,
        height: 3,
        source: format!("p{i}-{k}.png"),
    }
}

/// The content store's base64 of the picture named `hash` (a function of
/// the hash, as the store's content is).
fn blob(hash: &str) -> std::sync::Arc<str> {
    format!(
        "iVBORw0K{}+/=",
        hash.trim_start_matches("sha256:").trim_start_matches('0')
    )
    .into()
}

/// Whether every tool call in a history is answered before the next
/// assistant or user message, and every result answers a call.
fn well_formed(history: &[Message]) -> bool {
    let mut open: Vec<&str> = Vec::new();
    for m in history {
        match m.role {
            Role::Tool => {
                let Some(i) = open
                    .iter()
                    .position(|id| Some(*id) == m.tool_call_id.as_deref())
                else {
                    return false;
                };
                open.remove(i);
            }
            Role::User | Role::Assistant if !open.is_empty() => return false,
            Role::Assistant => open = m.tool_calls.iter().map(|c| c.id.as_str()).collect(),
            Role::User => {}
        }
    }
    true
}

#[test]
fn replay_equals_live() {
    fn prop(ops: Vec<Op>) -> bool {
        let run = run(&ops);
        // The fold of the current file is the live state.
        assert!(
            &State::fold(run.log()) == run.session.state(),
            "the fold differs from the live state"
        );
        // The requests rebuilt from the files are the ones sent, byte for
        // byte, summaries included; only a call still in flight is not in a
        // file yet (a summary is, from its `compacting` record on).
        let rebuilt: Vec<Request> = run.files.iter().flat_map(requests).collect();
        let state = run.session.state();
        let in_flight = usize::from(state.awaiting() && state.compacting().is_none());
        // The session numbers its requests by what its log says was sent.
        assert_eq!(
            state.totals().requests as usize,
            rebuilt.len(),
            "requests counted"
        );
        // Every request sent carries its number in the session.
        for (i, r) in run.sent.iter().enumerate() {
            assert_eq!(r.seq, i as u64 + 1, "request {i} is numbered");
        }
        let sent = &run.sent[..run.sent.len() - in_flight];
        assert!(
            rebuilt == sent,
            "rebuilt {} requests, sent {} (+{in_flight} in flight)",
            rebuilt.len(),
            sent.len()
        );
        true
    }
    laws().tests(400).quickcheck(prop as fn(Vec<Op>) -> bool);
}

/// [`replay_equals_live`]'s checks for a run of a header of its own: the
/// fold of the current file is the live state, and the requests rebuilt
/// from the files are the ones sent (a call still in flight aside), each
/// on `wire` when one is named.
fn replays_as_sent(run: &Run, wire: Option<revolve_core::request::Wire>) -> bool {
    assert!(
        &State::fold(run.log()) == run.session.state(),
        "the fold differs from the live state"
    );
    let rebuilt: Vec<Request> = run.files.iter().flat_map(requests).collect();
    let state = run.session.state();
    let in_flight = usize::from(state.awaiting() && state.compacting().is_none());
    let sent = &run.sent[..run.sent.len() - in_flight];
    if let Some(wire) = wire {
        assert!(
            sent.iter().all(|r| r.wire == wire),
            "a request not on {wire:?}"
        );
    }
    assert!(
        rebuilt == sent,
        "rebuilt {} requests, sent {} (+{in_flight} in flight)",
        rebuilt.len(),
        sent.len()
    );
    true
}

/// [`replay_equals_live`] for an Anthropic session of this build's format,
/// whose effort turns extended thinking on and off and whose answers bring
/// thinking blocks: the bodies rebuilt carry them exactly as sent.
#[test]
fn replay_equals_live_with_thinking() {
    fn prop(ops: Vec<Op>) -> bool {
        // A model that thinks adaptively, until a restart names "m" (which
        // thinks on a budget).
        let header = Header {
            version: FORMAT_VERSION,
            provider: "anthropic".into(),
            model: "claude-sonnet-5".into(),
            ..header()
        };
        replays_as_sent(&run_as(&ops, header, &[8_000, 6_000]), None)
    }
    laws().tests(400).quickcheck(prop as fn(Vec<Op>) -> bool);
}

/// [`replay_equals_live`] for a Gemini session (issue 45), whose answers
/// bring thought signatures (and Anthropic's blocks, which Gemini bodies
/// leave out) and whose effort asks thinking: the bodies rebuilt carry
/// every signature on its part, exactly as sent.
#[test]
fn replay_equals_live_on_gemini() {
    fn prop(ops: Vec<Op>) -> bool {
        let header = Header {
            version: FORMAT_VERSION,
            provider: "gemini".into(),
            model: "gemini-3-flash-preview".into(),
            ..header()
        };
        replays_as_sent(
            &run_as(&ops, header, &[8_000, 6_000]),
            Some(revolve_core::request::Wire::Gemini),
        )
    }
    laws().tests(400).quickcheck(prop as fn(Vec<Op>) -> bool);
}

/// [`replay_equals_live`] on OpenAI's Responses wire (issue 45), a
/// reasoning model's session whose answers bring reasoning items and
/// whose effort changes: the bodies rebuilt carry the items (and the
/// cache key, the effort, the limit) exactly as sent.
#[test]
fn replay_equals_live_on_the_responses_wire() {
    fn prop(ops: Vec<Op>) -> bool {
        let header = Header {
            version: FORMAT_VERSION,
            provider: "openai-responses".into(),
            model: "gpt-5".into(),
            ..header()
        };
        replays_as_sent(
            &run_as(&ops, header, &[8_000, 6_000]),
            Some(revolve_core::request::Wire::Responses),
        )
    }
    laws().tests(300).quickcheck(prop as fn(Vec<Op>) -> bool);
}

#[test]
fn inbox_messages_are_taken_once_in_order_and_never_lost() {
    fn prop(ops: Vec<Op>) -> bool {
        let run = run(&ops);
        // Every delivered message, across all the files (the kept turns a
        // compaction copies are not new messages).
        let taken: Vec<u64> = run
            .files
            .iter()
            .flatten()
            .filter_map(|r| match r {
                Record::Message(m) => m.origin.as_ref().map(|o| o.seq),
                _ => None,
            })
            .collect();
        assert!(
            taken.windows(2).all(|w| w[0] < w[1]),
            "taken twice or out of order: {taken:?}"
        );
        // Nothing queued is lost: each message is in the log or still waits.
        for seq in 1..=run.queued {
            assert!(
                taken.contains(&seq) ^ run.inbox.contains(&seq),
                "message {seq} lost or both taken and waiting"
            );
        }
        assert_eq!(
            run.session.state().totals().delivered,
            taken.last().copied().unwrap_or(0)
        );
        true
    }
    laws().tests(400).quickcheck(prop as fn(Vec<Op>) -> bool);
}

#[test]
fn a_recording_gives_one_answer_per_request() {
    fn prop(ops: Vec<Op>) -> bool {
        let run = run(&ops);
        let rebuilt: Vec<Request> = run.files.iter().flat_map(requests).collect();
        // A chain is folded as one (a summary's answer is in the next
        // file); a summary in flight has its request rebuilt and a
        // placeholder answer, a request in flight neither.
        let answers = revolve_core::fixture::answers(run.files.iter().flatten());
        assert_eq!(answers.len(), rebuilt.len(), "one answer per request");
        true
    }
    laws().tests(400).quickcheck(prop as fn(Vec<Op>) -> bool);
}

#[test]
fn every_request_carries_a_well_formed_history() {
    fn prop(ops: Vec<Op>) -> bool {
        let run = run(&ops);
        // Rebuild each sent request's history from each file's prefixes.
        for file in &run.files {
            let mut state = State::default();
            for r in file {
                if state.awaiting() && !matches!(r, Record::Message(m) if m.role != Role::Assistant)
                {
                    assert!(
                        well_formed(state.messages()),
                        "a request with an unanswered tool call"
                    );
                }
                state.apply(r);
            }
        }
        // Spilled results are cut and name their file (unless a compaction
        // summarized them away since).
        let lines: Vec<String> = run.files.iter().flatten().map(Record::to_line).collect();
        for path in &run.spilled {
            assert!(lines.iter().any(|l| l.contains(path.as_str())));
        }
        true
    }
    laws().tests(400).quickcheck(prop as fn(Vec<Op>) -> bool);
}

/// Under small windows and results up to 60k characters, every request that
/// goes out, summaries and their pieces included, is estimated under the
/// window's compaction point (so its answer has room), and a turn is stopped as too large only when no tool result
/// in its history could be cut any further. Replay still equals live.
#[test]
fn every_request_fits_the_window() {
    fn prop(ops: Vec<Op>, size: u8) -> bool {
        let window = [9_000, 12_000, 20_000][usize::from(size) % 3];
        let run = run_in(&ops, window, &[60_000, 14_000]);
        let state = run.session.state();
        for file in &run.files {
            let mut totals = Totals::default();
            let mut rebuild = revolve_core::state::Rebuild::default();
            let mut folded = State::default();
            for r in file {
                // Summaries (and their pieces) too.
                if let Some(req) = rebuild.push(r) {
                    let tokens = compact::estimate(req.body.len(), &totals);
                    assert!(
                        compact::fits(tokens, window),
                        "a request of about {tokens} tokens under a window of {window}"
                    );
                }
                folded.apply(r);
                totals = folded.totals().clone();
                if let Record::Stopped(s) = r {
                    if matches!(s.reason, revolve_core::record::StopReason::TooLarge { .. }) {
                        assert!(
                            folded.messages().iter().all(|m| m.role != Role::Tool
                                || !compact::squeezable(
                                    &m.content,
                                    compact::SQUEEZE_HEAD + compact::SQUEEZE_TAIL
                                )),
                            "stopped as too large with a result left to cut"
                        );
                    }
                }
            }
        }
        assert!(
            &State::fold(run.log()) == state,
            "the fold differs from the live state"
        );
        true
    }
    laws()
        .tests(200)
        .quickcheck(prop as fn(Vec<Op>, u8) -> bool);
}

/// Within a turn, no call is run once it was made [`REPEAT_LIMIT`] times in
/// a row (its result is the guard's error, or the turn stopped), and no turn
/// takes more than [`MAX_TOOL_ROUNDS`] rounds before it stops or goes on.
#[test]
fn misbehaving_models_are_bounded() {
    fn prop(ops: Vec<Op>) -> bool {
        let run = run(&ops);
        for file in &run.files {
            let mut state = State::default();
            let mut results = std::collections::HashMap::new();
            for r in file {
                state.apply(r);
                assert!(
                    state.turn_rounds() <= u64::from(MAX_TOOL_ROUNDS),
                    "{} rounds in a turn",
                    state.turn_rounds()
                );
                if let Record::Message(m) = r {
                    if let Some(id) = &m.tool_call_id {
                        results.insert(id.clone(), m.content.clone());
                    }
                }
            }
            // Runs of identical calls, turn by turn.
            let mut run_of: Vec<&ToolCall> = Vec::new();
            for m in state.messages().iter() {
                match m.role {
                    Role::User => run_of.clear(),
                    Role::Assistant => {
                        for c in &m.tool_calls {
                            let same = run_of
                                .last()
                                .is_some_and(|l| revolve_core::guard::same_call(l, c));
                            if !same {
                                run_of.clear();
                            }
                            run_of.push(c);
                            if run_of.len() >= REPEAT_LIMIT as usize {
                                if let Some(result) = results.get(&c.id) {
                                    assert!(
                                        result.starts_with("error: not run")
                                            || result.starts_with("error: interrupted"),
                                        "a repeated call ran: {result}"
                                    );
                                }
                            }
                        }
                    }
                    Role::Tool => {}
                }
            }
        }
        true
    }
    laws().tests(400).quickcheck(prop as fn(Vec<Op>) -> bool);
}

#[test]
fn totals_only_grow() {
    fn prop(ops: Vec<Op>) -> bool {
        let run = run(&ops);
        let totals: Vec<&Totals> = run
            .files
            .iter()
            .flatten()
            .filter_map(|r| {
                if let Record::Totals(t) = r {
                    Some(t)
                } else {
                    None
                }
            })
            .collect();
        totals.windows(2).all(|w| {
            w[1].turns >= w[0].turns
                && w[1].turns <= w[0].turns + 1
                && w[1].tokens_in >= w[0].tokens_in
                && w[1].tokens_out >= w[0].tokens_out
        })
    }
    laws().tests(300).quickcheck(prop as fn(Vec<Op>) -> bool);
}

/// Refinements between turns, compactions and restarts: the fold still
/// gives the live state, where an automatic refinement starts reading
/// included, and that point is never past the history's end.
#[test]
fn replay_equals_live_with_refinements() {
    fn prop(ops: Refining) -> bool {
        let run = run(&ops.0);
        let state = run.session.state();
        assert!(
            &State::fold(run.log()) == state,
            "the fold differs from the live state"
        );
        assert!(state.messages_at_refine() <= state.messages().len());
        // Every refinement counts its requests: each one logged as it
        // went out, and `refined` says how many; one that sent none
        // counts one, as it always has.
        let mut logged = 0u64;
        let mut unsent = 0u64;
        for record in run.files.iter().flatten() {
            match record {
                Record::Refining(_) => logged += 1,
                Record::Refined(r) => {
                    assert_eq!(r.pieces, logged, "refined counts its requests");
                    unsent += u64::from(logged == 0);
                    logged = 0;
                }
                _ => {}
            }
        }
        // The requests rebuilt from the files are the ones sent, byte for
        // byte, refinements included, each numbered in the session.
        let rebuilt: Vec<Request> = run.files.iter().flat_map(requests).collect();
        let in_flight = usize::from(state.awaiting() && state.compacting().is_none());
        let sent = &run.sent[..run.sent.len() - in_flight];
        assert!(
            rebuilt == sent,
            "rebuilt {} requests, sent {} (+{in_flight} in flight)",
            rebuilt.len(),
            sent.len()
        );
        // A recording gives one answer per request (a refinement's is not
        // recorded), and one for each refinement that sent none.
        let answers = revolve_core::fixture::answers(run.files.iter().flatten());
        assert_eq!(answers.len() as u64, rebuilt.len() as u64 + unsent);
        let mut seqs: Vec<u64> = run.sent.iter().map(|r| r.seq).collect();
        seqs.dedup();
        assert_eq!(
            seqs.len(),
            run.sent.len(),
            "each request has its own number"
        );
        state.totals().requests == rebuilt.len() as u64 + unsent
    }
    laws().tests(400).quickcheck(prop as fn(Refining) -> bool);
}

/// Any record at all, in any order, including nonsense ones.
#[derive(Clone, Debug)]
struct AnyRecord(Record);

impl Arbitrary for AnyRecord {
    fn arbitrary(g: &mut Gen) -> AnyRecord {
        let at = OffsetDateTime::UNIX_EPOCH + Duration::seconds(i64::from(u32::arbitrary(g)));
        let s = |g: &mut Gen| String::arbitrary(g);
        let role = *g
            .choose(&[Role::User, Role::Assistant, Role::Tool])
            .unwrap();
        let calls = |g: &mut Gen| -> Vec<ToolCall> {
            Vec::<(String, String)>::arbitrary(g)
                .into_iter()
                .take(3)
                .map(|(id, name)| ToolCall {
                    id,
                    name,
                    arguments: s(g),
                })
                .collect()
        };
        AnyRecord(match u8::arbitrary(g) % 10 {
            0 => Record::Header(Header {
                window: u64::arbitrary(g),
                model: s(g),
                provider: s(g),
                ..header()
            }),
            1 => Record::Context(Context {
                at,
                system: s(g),
                subagents: Vec::new(),
            }),
            2 => Record::Message(Message {
                thinking: Vec::new(),
                images: Vec::new(),
                at,
                role,
                content: s(g),
                tool_calls: calls(g),
                tool_call_id: Option::arbitrary(g),
                partial: bool::arbitrary(g),
                truncated: bool::arbitrary(g),
                origin: Option::<(String, u64)>::arbitrary(g)
                    .map(|(from, seq)| revolve_core::record::Origin { from, seq }),
            }),
            3 => Record::Failed(Failed { at, error: s(g) }),
            4 => Record::Interrupted(Interrupted {
                at,
                unsent: bool::arbitrary(g),
            }),
            5 => Record::Totals(Totals {
                at: Some(at),
                tokens_in: u64::arbitrary(g),
                tokens_out: u64::arbitrary(g),
                tokens_cached: u64::arbitrary(g),
                tokens_cache_written: u64::arbitrary(g),
                cost: u64::arbitrary(g),
                unpriced: bool::arbitrary(g),
                turns: u64::arbitrary(g),
                last_context: u64::arbitrary(g),
                estimated: bool::arbitrary(g),
                name: Option::arbitrary(g),
                named: bool::arbitrary(g),
                requests: u64::arbitrary(g),
                delivered: u64::arbitrary(g),
                cal_bytes: u64::arbitrary(g),
                cal_tokens: u64::arbitrary(g),
                in_out_estimated: bool::arbitrary(g),
            }),
            6 => Record::Resumed(Resumed {
                at,
                model: s(g),
                window: u64::arbitrary(g),
                provider: s(g),
            }),
            7 => Record::Refining(revolve_core::record::Refining {
                at,
                auto: bool::arbitrary(g),
                part: u64::arbitrary(g),
                of: u64::arbitrary(g),
                body: s(g),
            }),
            8 => Record::Refined(revolve_core::record::Refined {
                at,
                auto: bool::arbitrary(g),
                entry: Option::arbitrary(g),
                pieces: u64::arbitrary(g),
                unmade: Option::<bool>::arbitrary(g).map(|_| s(g)),
            }),
            _ => Record::Renamed(Renamed {
                at,
                name: s(g),
                generated: bool::arbitrary(g),
            }),
        })
    }
}

#[test]
fn fold_never_panics() {
    fn prop(records: Vec<AnyRecord>) -> bool {
        let records: Vec<Record> = records.into_iter().map(|r| r.0).collect();
        let state = State::fold(&records);
        let _ = requests(&records);
        // A session resumed from any fold is idle and still takes a turn,
        // or says its request cannot fit the window (10 tokens here).
        let resumed = Resumed {
            at: OffsetDateTime::UNIX_EPOCH,
            model: "m".into(),
            window: 10,
            provider: String::new(),
        };
        let (mut s, _) = Session::resume(state, settings(), resumed);
        let _ = revolve_view::status(s.state());
        let _ = revolve_view::transcript(&records);
        let cmds = s
            .handle(Input::User(UserInput::Line {
                context: TurnContext::default(),
                text: "hi".into(),
                now: OffsetDateTime::UNIX_EPOCH,
            }))
            .commands;
        !s.state().open_calls().is_empty()
            || cmds.iter().any(|c| {
                matches!(
                    c,
                    Command::Model(ModelCommand::Call(_))
                        | Command::Model(ModelCommand::Summarize(_))
                        | Command::Log(LogCommand::Append(Record::Stopped(_)))
                )
            })
    }
    laws()
        .tests(500)
        .quickcheck(prop as fn(Vec<AnyRecord>) -> bool);
}

/// A random history of whole turns: user, then assistant rounds with tool
/// calls answered by results, short or long.
#[derive(Clone, Debug)]
struct History(Vec<Message>);

impl Arbitrary for History {
    fn arbitrary(g: &mut Gen) -> History {
        let at = OffsetDateTime::UNIX_EPOCH;
        let mut messages = Vec::new();
        let mut id = 0;
        for _ in 0..usize::arbitrary(g) % 12 {
            messages.push(Message::user(at, "u"));
            for _ in 0..usize::arbitrary(g) % 3 {
                let calls: Vec<ToolCall> = (0..1 + usize::arbitrary(g) % 3)
                    .map(|_| {
                        id += 1;
                        ToolCall {
                            id: format!("c{id}"),
                            name: "shell".into(),
                            arguments: "{}".into(),
                        }
                    })
                    .collect();
                messages.push(Message {
                    tool_calls: calls.clone(),
                    ..Message::assistant(at, "")
                });
                for c in calls {
                    let size = *g.choose(&[2, 300, 6_000, 20_000]).unwrap();
                    messages.push(Message::tool(at, c.id, "r".repeat(size)));
                }
            }
            if bool::arbitrary(g) {
                messages.push(Message::assistant(at, "a"));
            }
        }
        History(messages)
    }
}

#[test]
fn a_plan_keeps_three_turns_and_prunes_only_what_it_may() {
    fn prop(history: History, threshold: u16) -> bool {
        let messages = &history.0;
        let threshold = usize::from(threshold);
        let plan = Plan::of(messages, threshold);
        let turns = compact::turns(messages);
        // Exactly the last three turns are kept verbatim (all, when fewer).
        let expected = if turns.len() > compact::KEEP_TURNS {
            turns[turns.len() - 3].start
        } else {
            0
        };
        assert_eq!(plan.cut, expected);
        // The cut is on a turn boundary: nothing kept answers a call that was
        // cut away, and nothing cut away waits for a result kept.
        assert!(plan.cut == 0 || messages[plan.cut].role == Role::User);
        assert!(well_formed(&messages[plan.cut..]));
        // Only results, only before the cut, only over the threshold.
        for &i in &plan.prune {
            assert!(i < plan.cut && messages[i].role == Role::Tool);
            assert!(messages[i].content.chars().count() > threshold);
        }
        // Pruning is idempotent: once pruned, nothing more to prune.
        let mut pruned = messages.clone();
        for &i in &plan.prune {
            pruned[i].content = compact::prune(&pruned[i].content);
        }
        assert!(Plan::of(&pruned, threshold).prune.is_empty());
        assert_eq!(Plan::of(&pruned, threshold).cut, plan.cut);
        true
    }
    laws()
        .tests(500)
        .quickcheck(prop as fn(History, u16) -> bool);
}

/// `/compact` of a random history under a random small window: when the
/// part before the cut does not fit one request, it is summarized in
/// pieces that together cover every message before the cut exactly once
/// (unless one round of tool results alone cannot fit, which fails it),
/// each cut where no call is parted from its result, each request under the
/// window, each carrying the notes so far; the notes of the last piece
/// start the new file. Replay rebuilds every piece's request.
#[test]
fn a_summary_in_pieces_covers_the_part_before_the_cut_once() {
    fn prop(history: History, size: u8) -> bool {
        let window = [9_000u64, 12_000, 30_000][usize::from(size) % 3];
        let at = OffsetDateTime::UNIX_EPOCH;
        let mut records = vec![Record::Header(Header { window, ..header() })];
        records.extend(history.0.iter().cloned().map(Record::Message));
        let state = State::fold(&records);
        if state.awaiting() || !state.open_calls().is_empty() {
            return true;
        }
        let mut log = records.clone();
        let (mut session, _) = Session::resume(
            state,
            Settings {
                prune_chars: compact::PRUNE_CHARS,
                ..settings()
            },
            Resumed {
                at,
                model: "m".into(),
                window,
                provider: String::new(),
            },
        );
        let mut cmds = session
            .handle(Input::User(UserInput::Compact { now: at }))
            .commands;
        let mut pieces: Vec<(u64, u64, u64)> = Vec::new();
        let mut sent = Vec::new();
        let mut notes_seen = Vec::new();
        let mut finished = false;
        let mut new_file: Vec<Record> = Vec::new();
        for round in 0..200 {
            let mut summary = None;
            for c in cmds.drain(..) {
                match c {
                    Command::Log(LogCommand::Append(r)) => {
                        if let Record::Compacting(c) = &r {
                            let (from, upto) = c.piece();
                            pieces.push((from, upto, c.cut));
                        }
                        if finished {
                            new_file.push(r);
                        } else {
                            log.push(r);
                        }
                    }
                    Command::Model(ModelCommand::Summarize(req)) => summary = Some(req),
                    Command::Log(LogCommand::StartFile(_)) => finished = true,
                    _ => {}
                }
            }
            let Some(req) = summary else { break };
            let tokens = compact::estimate(req.body.len(), session.state().totals());
            assert!(compact::fits(tokens, window), "a piece of {tokens} tokens");
            if pieces.len() > 1 {
                let last = notes_seen.last().expect("notes before a later piece");
                assert!(
                    req.body.text().contains(last),
                    "a piece without the notes so far"
                );
            }
            sent.push(req);
            let notes = format!("Facts: piece {round} port 5432");
            notes_seen.push(notes.clone());
            cmds = session
                .handle(Input::Model(ModelInput::Summarized {
                    reply: Reply {
                        text: notes,
                        ..Reply::default()
                    },
                    new_id: format!("s{round}"),
                    now: at,
                }))
                .commands;
        }
        // A round too big for any request fails the compaction, saying so;
        // otherwise the pieces tile 0..cut, in order.
        if let Some(&(_, _, cut)) = pieces.first().filter(|_| finished) {
            let mut next = 0;
            for &(from, upto, c) in &pieces {
                assert_eq!((from, c), (next, cut), "{pieces:?}");
                assert!(upto > from, "{pieces:?}");
                let i = usize::try_from(upto).unwrap();
                assert!(
                    i == usize::try_from(cut).unwrap() || history.0[i].role != Role::Tool,
                    "a piece parts a call from its result: {pieces:?}"
                );
                next = upto;
            }
            assert_eq!(next, cut, "{pieces:?}");
            // Replay rebuilds each piece's request, byte for byte.
            let mut rebuild = revolve_core::state::Rebuild::default();
            let rebuilt: Vec<Request> = log
                .iter()
                .filter_map(|r| {
                    let request = rebuild.push(r);
                    matches!(r, Record::Compacting(_))
                        .then_some(request)
                        .flatten()
                })
                .collect();
            assert_eq!(rebuilt.len(), sent.len());
            assert!(rebuilt == sent, "a piece's request is not rebuilt");
            match new_file.first() {
                Some(Record::Compacted(c)) => assert_eq!(Some(&c.notes), notes_seen.last()),
                other => panic!("the new file starts with {other:?}"),
            }
        }
        true
    }
    laws()
        .tests(150)
        .quickcheck(prop as fn(History, u8) -> bool);
}
