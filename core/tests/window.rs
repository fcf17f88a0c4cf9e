//! The law of the window: a session never gets stuck.
//!
//! Random sessions (sizes of the user's text, of answers, of tool calls and
//! their results; windows from 2k to 1M tokens) run against a model that
//! plays a real server: it counts a request's tokens at its own bytes per
//! token (3 to 6, not always the 4 the core assumes before a count),
//! refuses a request over its context with the count and the limit (as
//! llama.cpp's and OpenAI's servers do), cuts its answer at the request's
//! `max_tokens` (marking it truncated), and reports usage or not.
//!
//! After every turn, a short next turn is answered; a request the core
//! sends once it has a count of the server never exceeds the context; and
//! a request refused before that is compacted and answered on the one
//! retry the core allows. A turn may stop as too large only when the part
//! no compaction shrinks (system prompt, tools, the user's message) does
//! not fit with a quarter of the answer's room beside it for the turn's
//! work, and the stop says which part; the next short turn is answered
//! all the same.

use quickcheck::{Arbitrary, Gen, QuickCheck, TestResult};
use revolve_core::record::{Header, Message, Record, StopReason, FORMAT_VERSION};
use revolve_core::request::Wire;
use revolve_core::{compact, Command, Input, Reply, Request, Session, Settings, Usage};
use revolve_core::{
    LogCommand, ModelCommand, ModelInput, ToolCommand, ToolInput, TurnContext, UserInput,
};
use time::macros::datetime;
use time::OffsetDateTime;

/// The seed the law runs with unless `REVOLVE_LAWS_SEED` names another.
const SEED: u64 = 0x5eed_1a35;

const NOW: OffsetDateTime = datetime!(2026-12-04 10:00 UTC);

/// One turn of a random session: what the user says, and how the model
/// answers it (tool rounds, each call's arguments and result, the text).
#[derive(Clone, Debug)]
struct Turn {
    user: usize,
    rounds: Vec<(usize, usize)>,
    answer: usize,
}

#[derive(Clone, Debug)]
struct Case {
    window: u64,
    /// The window the session starts with, when not the server's context
    /// (no window given: the provider's default, larger than the server).
    declared: Option<u64>,
    bytes_per_token: u64,
    usage: bool,
    turns: Vec<Turn>,
}

/// A size drawn from a spread of magnitudes: mostly modest, sometimes
/// larger than any window.
fn size(g: &mut Gen) -> usize {
    let scale = *g
        .choose(&[10, 100, 1_000, 5_000, 20_000, 100_000, 1_000_000])
        .unwrap_or(&100);
    usize::arbitrary(g) % scale
}

impl Arbitrary for Case {
    fn arbitrary(g: &mut Gen) -> Case {
        let window = *g
            .choose(&[2_048, 4_096, 8_192, 32_768, 128_000, 1_000_000])
            .unwrap_or(&4_096);
        let turns = (0..1 + usize::arbitrary(g) % 6)
            .map(|_| Turn {
                user: size(g),
                rounds: (0..usize::arbitrary(g) % 3)
                    .map(|_| (size(g), size(g)))
                    .collect(),
                answer: size(g),
            })
            .collect();
        Case {
            window,
            declared: (window < 128_000 && bool::arbitrary(g)).then_some(128_000),
            bytes_per_token: 3 + u64::arbitrary(g) % 4,
            usage: bool::arbitrary(g),
            turns,
        }
    }

    fn shrink(&self) -> Box<dyn Iterator<Item = Case>> {
        let case = self.clone();
        Box::new((0..self.turns.len()).map(move |i| {
            let mut smaller = case.clone();
            smaller.turns.remove(i);
            smaller
        }))
    }
}

/// The fake server's side of a run.
struct Server {
    context: u64,
    bytes_per_token: u64,
    usage: bool,
    /// Requests sent after the core had a count of this server.
    refused_after_count: usize,
    counted: bool,
    /// Whether the session has been told this server's context: from the
    /// start when it was declared, else by the first refusal (which names
    /// it). Before that, a request over it is no fault of the session's.
    limit_known: bool,
    requests: usize,
}

impl Server {
    fn tokens(&self, request: &Request) -> u64 {
        (request.body.len() as u64).div_ceil(self.bytes_per_token)
    }

    fn limit(request: &Request) -> u64 {
        let body: serde_json::Value = serde_json::from_str(&request.body.text()).unwrap();
        body["max_tokens"]
            .as_u64()
            .or_else(|| body["max_completion_tokens"].as_u64())
            .unwrap_or(u64::MAX)
    }

    /// The answer to `request`: refused when over the context, else
    /// `text` cut at the request's limit.
    fn answer(&mut self, request: &Request, text: String, calls: Vec<(usize, usize)>) -> Input {
        self.requests += 1;
        let tokens = self.tokens(request);
        if tokens >= self.context {
            if self.counted && self.limit_known {
                self.refused_after_count += 1;
            }
            // What a refusal gives is a count too, and the limit.
            self.counted = true;
            self.limit_known = true;
            return Input::Model(ModelInput::Overflowed {
                error: format!(
                    "This model's maximum context length is {} tokens. However, your messages resulted in {tokens} tokens.",
                    self.context
                ),
                limit: Some(self.context),
                asked: Some(tokens),
                now: NOW,
            });
        }
        self.counted |= self.usage;
        let most = Server::limit(request)
            .min(self.context - tokens)
            .saturating_mul(self.bytes_per_token);
        let truncated = text.len() as u64 > most;
        let text: String = text.chars().take(most as usize).collect();
        let tool_calls = if truncated {
            Vec::new()
        } else {
            calls
                .iter()
                .enumerate()
                .map(|(i, (args, _))| revolve_core::record::ToolCall {
                    id: format!("c{}-{i}", self.requests),
                    name: "shell".into(),
                    arguments:
                        serde_json::json!({"command": format!("echo {}", "a".repeat(*args))})
                            .to_string(),
                })
                .collect()
        };
        let completion = (text.len() as u64).div_ceil(self.bytes_per_token);
        Input::Model(ModelInput::Reply {
            reply: Reply {
                thinking: Vec::new(),
                text,
                tool_calls,
                usage: self.usage.then_some(Usage {
                    prompt_tokens: tokens,
                    completion_tokens: completion,
                    ..Default::default()
                }),
                truncated,
            },
            now: NOW,
        })
    }
}

fn settings() -> Settings {
    Settings {
        rules: Default::default(),
        spill_chars: 32_000,
        spill_dir: "/state/spills/s".into(),
        prune_chars: 16_000,
        repeat_limit: 3,
        max_tool_rounds: 100,
        max_calls_per_answer: 64,
        allow_edits: false,
        allow_shell: true,
        interactive: false,
        granted: Vec::new(),
        auto_refine: false,
        bare: true,
        counts: true,
        confirm_costly: false,
        allow_mcp: false,
        mcp_timeout_s: 60,
        hooks: Default::default(),
        models: Default::default(),
        max_cost: None,
        network_off: false,
    }
}

fn header(window: u64) -> Header {
    Header {
        version: FORMAT_VERSION,
        id: "s0".into(),
        name: Some("amber".into()),
        named: false,
        cwd: "/w".into(),
        project: "/w".into(),
        started: NOW,
        model: "m".into(),
        window,
        provider: "llamacpp".into(),
        continues: None,
        tool_choice: None,
    }
}

/// How one turn ended.
#[derive(Debug, PartialEq)]
enum End {
    Answered,
    TooLarge { fixed_named: bool },
    Other(String),
}

/// Runs one user turn to its end, the model answering with `turn`'s
/// rounds and text.
fn run_turn(session: &mut Session, server: &mut Server, files: &mut u64, turn: &Turn) -> End {
    let mut rounds = turn.rounds.clone().into_iter();
    let mut queue: Vec<Command> = session
        .handle(Input::User(UserInput::Line {
            context: TurnContext::default(),
            text: "u".repeat(turn.user.max(1)),
            now: NOW,
        }))
        .commands;
    let mut end = None;
    let mut steps = 0;
    while !queue.is_empty() {
        steps += 1;
        if steps > 10_000 {
            return End::Other("more than 10,000 steps".into());
        }
        let command = queue.remove(0);
        let input = match command {
            Command::Model(ModelCommand::Call(request)) => {
                let (text, calls) = match rounds.next() {
                    Some(round) => (String::new(), vec![round]),
                    None => ("t".repeat(turn.answer.max(1)), Vec::new()),
                };
                let input = server.answer(&request, text, calls);
                if matches!(input, Input::Model(ModelInput::Reply { ref reply, .. }) if reply.tool_calls.is_empty())
                {
                    end = Some(End::Answered);
                }
                input
            }
            Command::Model(ModelCommand::Summarize(request)) => {
                match server.answer(&request, "notes ".repeat(40), vec![]) {
                    Input::Model(ModelInput::Reply { reply, now }) => {
                        *files += 1;
                        Input::Model(ModelInput::Summarized {
                            reply,
                            new_id: format!("s{files}"),
                            now,
                        })
                    }
                    overflow => overflow,
                }
            }
            // The server counts for free (llama.cpp): its count, and a
            // count is what later estimates are calibrated from.
            Command::Model(ModelCommand::Count(request)) => {
                server.counted = true;
                Input::Model(ModelInput::Counted {
                    tokens: Some(server.tokens(&request)),
                    now: NOW,
                })
            }
            Command::Tool(ToolCommand::Run { id, .. }) => {
                let size = turn.rounds.first().map_or(10, |r| r.1);
                Input::Tool(ToolInput::Done {
                    parts: None,
                    id,
                    output: "r".repeat(size.max(1)),
                    grant: None,
                    effects: Default::default(),
                    now: NOW,
                })
            }
            Command::Log(LogCommand::Append(Record::Stopped(stopped))) => {
                end = Some(match stopped.reason {
                    StopReason::TooLarge { largest, .. } => End::TooLarge {
                        fixed_named: largest.is_some(),
                    },
                    other => End::Other(format!("{other:?}")),
                });
                continue;
            }
            Command::Log(LogCommand::Append(Record::Failed(f))) => {
                end = Some(End::Other(format!("failed: {}", f.error)));
                continue;
            }
            Command::Log(LogCommand::Append(Record::CompactionFailed(f))) => {
                end = Some(End::Other(format!("compaction failed: {}", f.error)));
                continue;
            }
            _ => continue,
        };
        let mut next = session.handle(input).commands;
        next.extend(queue);
        queue = next;
    }
    end.unwrap_or_else(|| End::Other("the turn ended without an answer".into()))
}

fn never_stuck(case: Case) -> TestResult {
    let (mut session, _) = Session::start(header(case.declared.unwrap_or(case.window)), settings());
    let mut server = Server {
        context: case.window,
        bytes_per_token: case.bytes_per_token,
        usage: case.usage,
        refused_after_count: 0,
        counted: false,
        limit_known: case.declared.is_none(),
        requests: 0,
    };
    let mut files = 0;
    let short = Turn {
        user: 20,
        rounds: Vec::new(),
        answer: 20,
    };
    for (i, turn) in case.turns.iter().enumerate() {
        match run_turn(&mut session, &mut server, &mut files, turn) {
            End::Answered => {}
            // Too large is allowed only when the part no compaction
            // shrinks is what does not fit, and is said.
            End::TooLarge { fixed_named: true } => {}
            other => {
                return TestResult::error(format!("turn {i} of {case:?}: {other:?}"));
            }
        }
        // A short next turn is answered, unless its fixed part (system
        // prompt, tools, the message) with the answer's room does not fit
        // the server's context, as the server counts it (with the 1/16
        // margin an estimate carries): then the stop must say which part.
        let end = run_turn(&mut session, &mut server, &mut files, &short);
        let too_big = || {
            let fixed = Request::limited(
                Wire::OpenAi,
                "m",
                session.state().system().as_deref(),
                &[Message::user(NOW, "u".repeat(short.user))],
                session.state().answer_limit(),
            );
            let tokens = server.tokens(&fixed);
            tokens + tokens.div_ceil(16) + compact::room(case.window) >= case.window
        };
        if end == (End::TooLarge { fixed_named: true }) && too_big() {
            continue;
        }
        if end != End::Answered {
            return TestResult::error(format!(
                "the short turn after turn {i} of {case:?}: {end:?}"
            ));
        }
    }
    if server.refused_after_count > 0 {
        return TestResult::error(format!(
            "{} request(s) over the context after the server's count: {case:?}",
            server.refused_after_count
        ));
    }
    TestResult::passed()
}

#[test]
fn a_session_never_gets_stuck() {
    // Seeded as the laws are (core/tests/laws.rs): the same 60 sessions on
    // every run, another set with REVOLVE_LAWS_SEED at build time.
    let seed = option_env!("REVOLVE_LAWS_SEED")
        .and_then(|s| s.parse().ok())
        .unwrap_or(SEED);
    eprintln!("never stuck: seed {seed} (REVOLVE_LAWS_SEED={seed} cargo test -p revolve-core --test window repeats this run)");
    QuickCheck::new()
        .rng(Gen::from_size_and_seed(100, seed))
        .tests(60)
        .quickcheck(never_stuck as fn(Case) -> TestResult);
}

/// The issue's case: a 4,096-token window, ten turns of about 700 tokens,
/// a model that rambles to its limit and sends no usage.
#[test]
fn ten_turns_of_700_tokens_at_4k_without_usage() {
    let turns = (0..10)
        .map(|_| Turn {
            user: 2_800,
            rounds: Vec::new(),
            answer: 1_000_000,
        })
        .collect();
    let result = never_stuck(Case {
        window: 4_096,
        declared: None,
        bytes_per_token: 4,
        usage: false,
        turns,
    });
    assert!(!result.is_failure() && !result.is_error(), "{result:?}");
}

/// The same with a 20 KB tool result in every turn.
#[test]
fn a_20kb_tool_result_at_4k() {
    let turns = (0..5)
        .map(|_| Turn {
            user: 2_800,
            rounds: vec![(40, 20_000)],
            answer: 2_000,
        })
        .collect();
    let result = never_stuck(Case {
        window: 4_096,
        declared: None,
        bytes_per_token: 4,
        usage: true,
        turns,
    });
    assert!(!result.is_failure() && !result.is_error(), "{result:?}");
}

/// A case the law found: at a 2,048-token window a tool call whose
/// arguments take a quarter of the window, then an answer that rambles.
#[test]
fn a_long_call_at_2k_then_a_rambling_answer() {
    let result = never_stuck(Case {
        window: 2_048,
        declared: None,
        bytes_per_token: 4,
        usage: true,
        turns: vec![Turn {
            user: 227,
            rounds: vec![(0, 285), (2_339, 1)],
            answer: 16_606,
        }],
    });
    assert!(!result.is_failure() && !result.is_error(), "{result:?}");
}

/// The CI run of stop 49: no window given (128,000 assumed) and a server
/// that names its smaller context, while the part no compaction shrinks is
/// over three quarters of it. The named limit was thrown away as below the
/// floor, the window went only to nine tenths of the refused size, and the
/// retry was refused again: the turn failed. The named limit is the
/// window; the request is compacted to it and answered. (The law found
/// this case once its sessions could start above the server's context.)
#[test]
fn a_named_limit_under_a_large_fixed_part() {
    let result = never_stuck(Case {
        window: 2_048,
        declared: Some(128_000),
        bytes_per_token: 3,
        usage: true,
        turns: vec![Turn {
            user: 8,
            rounds: vec![(5_428, 11_240), (104, 2_915)],
            answer: 9,
        }],
    });
    assert!(!result.is_failure() && !result.is_error(), "{result:?}");
}
