//! The core's laws, checked on random runs (model-based, after indexmap's
//! `tests/quick.rs` and sled's `tests/test_log.rs`): a random sequence of
//! events, including tool rounds, spills and restarts from the log, is run
//! live; the log it appended is folded; state and request bytes must agree.

use std::collections::BTreeSet;

use quickcheck::{Arbitrary, Gen, QuickCheck};
use revolve_core::record::{
    Context, Failed, Header, Interrupted, Message, Record, Renamed, Resumed, Role, ToolCall, Totals,
};
use revolve_core::state::{requests, State};
use revolve_core::{Command, Input, Reply, Request, Session, Settings, Usage};
use time::macros::datetime;
use time::{Duration, OffsetDateTime};

#[derive(Clone, Debug)]
enum Op {
    User(String),
    /// The model answers with text and up to three tool calls (some bad).
    Reply(String, Vec<u8>, Option<(u16, u16)>),
    /// The tool in flight finishes; `big` outputs get spilled.
    ToolDone {
        big: bool,
        grant: bool,
    },
    Fail(String),
    Interrupt(String),
    Rename(u8),
    /// The process ends; a new one folds the log and resumes.
    Restart,
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
        match u8::arbitrary(g) % 16 {
            0..=3 => Op::User(text(g)),
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
                )
            }
            7..=9 => Op::ToolDone {
                big: u8::arbitrary(g) % 4 == 0,
                grant: bool::arbitrary(g),
            },
            10 => Op::Fail(text(g)),
            11 => Op::Interrupt(text(g)),
            12 => Op::Rename(u8::arbitrary(g) % 4),
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
        window: 1000,
        provider: "scripted".into(),
        continues: None,
    }
}

fn settings() -> Settings {
    Settings {
        spill_chars: 50,
        spill_dir: "/state/spills/s".into(),
    }
}

/// A run: the log it appended and the requests it sent.
struct Run {
    session: Session,
    log: Vec<Record>,
    sent: Vec<Request>,
    spilled: Vec<String>,
    /// The tool the session asked to run and that has not finished.
    running: Option<String>,
}

impl Run {
    fn take(&mut self, cmds: Vec<Command>) {
        for c in cmds {
            match c {
                Command::Append(r) => {
                    // Every record survives a trip through its line.
                    assert_eq!(Record::parse_line(&r.to_line()).unwrap(), r);
                    self.log.push(r);
                }
                Command::Call(req) => self.sent.push(req),
                Command::RunTool { id, .. } => self.running = Some(id),
                Command::Spill { path, .. } => self.spilled.push(path),
                Command::Sync | Command::Show(_) => {}
            }
        }
    }
}

fn run(ops: &[Op]) -> Run {
    let (session, cmds) = Session::start(header(), settings());
    let mut run = Run {
        session,
        log: Vec::new(),
        sent: Vec::new(),
        spilled: Vec::new(),
        running: None,
    };
    run.take(cmds);
    let mut now = datetime!(2026-12-02 10:00 UTC);
    for (i, op) in ops.iter().enumerate() {
        now += Duration::seconds(1);
        let input = match op.clone() {
            Op::User(text) => Input::User { text, now },
            Op::Reply(text, calls, usage) => {
                let usage = usage.map(|(p, c)| Usage {
                    prompt_tokens: p.into(),
                    completion_tokens: c.into(),
                });
                let tool_calls = calls
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
                Input::Reply {
                    reply: Reply {
                        text,
                        tool_calls,
                        usage,
                    },
                    now,
                }
            }
            Op::ToolDone { big, grant } => {
                let Some(id) = run.running.take() else {
                    continue;
                };
                let output = if big {
                    "0123456789".repeat(20)
                } else {
                    "ok".into()
                };
                Input::ToolDone {
                    id,
                    output,
                    grant: grant.then(|| "/etc/hosts".into()),
                    now,
                }
            }
            Op::Fail(partial) => Input::Failed {
                error: "boom".into(),
                partial,
                now,
            },
            Op::Interrupt(partial) => Input::Interrupted { partial, now },
            Op::Rename(n) => {
                let used = BTreeSet::from(["birch".to_owned()]);
                Input::Rename {
                    name: ["birch", "db", "", "a/b"][n as usize].into(),
                    used,
                    now,
                }
            }
            Op::Restart => {
                let resumed = Resumed {
                    at: now,
                    model: "m".into(),
                    window: 1000,
                    provider: String::new(),
                };
                let (session, cmds) = Session::resume(State::fold(&run.log), settings(), resumed);
                run.session = session;
                run.running = None;
                run.take(cmds);
                continue;
            }
        };
        let cmds = run.session.handle(input);
        run.take(cmds);
    }
    run
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
        // The fold of the log is the live state.
        assert!(
            &State::fold(&run.log) == run.session.state(),
            "the fold differs from the live state"
        );
        // The requests rebuilt from the log are the ones sent, byte for byte;
        // only a request still in flight is not in the log yet.
        let rebuilt = requests(&run.log);
        let in_flight = usize::from(run.session.state().awaiting);
        let sent = &run.sent[..run.sent.len() - in_flight];
        assert!(
            rebuilt == sent,
            "rebuilt {} requests, sent {} (+{in_flight} in flight)",
            rebuilt.len(),
            sent.len()
        );
        true
    }
    QuickCheck::new()
        .tests(400)
        .quickcheck(prop as fn(Vec<Op>) -> bool);
}

#[test]
fn every_request_carries_a_well_formed_history() {
    fn prop(ops: Vec<Op>) -> bool {
        let run = run(&ops);
        // Rebuild each sent request's history from the log's prefix.
        let mut state = State::default();
        for r in &run.log {
            if state.awaiting && !matches!(r, Record::Message(m) if m.role != Role::Assistant) {
                assert!(
                    well_formed(&state.messages),
                    "a request with an unanswered tool call"
                );
            }
            state.apply(r);
        }
        // Spilled results are cut and name their file.
        for path in &run.spilled {
            assert!(state
                .messages
                .iter()
                .any(|m| m.role == Role::Tool && m.content.contains(path.as_str())));
        }
        true
    }
    QuickCheck::new()
        .tests(400)
        .quickcheck(prop as fn(Vec<Op>) -> bool);
}

#[test]
fn totals_only_grow() {
    fn prop(ops: Vec<Op>) -> bool {
        let run = run(&ops);
        let totals: Vec<&Totals> = run
            .log
            .iter()
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
    QuickCheck::new()
        .tests(300)
        .quickcheck(prop as fn(Vec<Op>) -> bool);
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
        AnyRecord(match u8::arbitrary(g) % 8 {
            0 => Record::Header(Header {
                window: u64::arbitrary(g),
                model: s(g),
                provider: s(g),
                ..header()
            }),
            1 => Record::Context(Context { at, system: s(g) }),
            2 => Record::Message(Message {
                at,
                role,
                content: s(g),
                tool_calls: calls(g),
                tool_call_id: Option::arbitrary(g),
                partial: bool::arbitrary(g),
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
                turns: u64::arbitrary(g),
                last_context: u64::arbitrary(g),
                estimated: bool::arbitrary(g),
                name: Option::arbitrary(g),
                named: bool::arbitrary(g),
            }),
            6 => Record::Resumed(Resumed {
                at,
                model: s(g),
                window: u64::arbitrary(g),
                provider: s(g),
            }),
            _ => Record::Renamed(Renamed { at, name: s(g) }),
        })
    }
}

#[test]
fn fold_never_panics() {
    fn prop(records: Vec<AnyRecord>) -> bool {
        let records: Vec<Record> = records.into_iter().map(|r| r.0).collect();
        let state = State::fold(&records);
        let _ = requests(&records);
        // A session resumed from any fold is idle and still takes a turn.
        let resumed = Resumed {
            at: OffsetDateTime::UNIX_EPOCH,
            model: "m".into(),
            window: 10,
            provider: String::new(),
        };
        let (mut s, _) = Session::resume(state, settings(), resumed);
        let _ = revolve_core::view::status(s.state());
        let _ = revolve_core::view::transcript(&records);
        let cmds = s.handle(Input::User {
            text: "hi".into(),
            now: OffsetDateTime::UNIX_EPOCH,
        });
        !s.state().open_calls.is_empty() || cmds.iter().any(|c| matches!(c, Command::Call(_)))
    }
    QuickCheck::new()
        .tests(500)
        .quickcheck(prop as fn(Vec<AnyRecord>) -> bool);
}
