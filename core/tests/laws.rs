//! The core's laws, checked on random runs (model-based, after indexmap's
//! `tests/quick.rs` and sled's `tests/test_log.rs`): a random sequence of
//! events, including restarts from the log, is run live; the log it appended
//! is folded; state and request bytes must agree.

use std::collections::BTreeSet;

use quickcheck::{Arbitrary, Gen, QuickCheck};
use revolve_core::record::{
    Context, Failed, Header, Message, Record, Renamed, Resumed, Role, Stamp, Totals,
};
use revolve_core::state::{requests, State};
use revolve_core::{Command, Input, Reply, Request, Session, Usage};
use time::macros::datetime;
use time::{Duration, OffsetDateTime};

#[derive(Clone, Debug)]
enum Op {
    User(String),
    Reply(String, Option<(u16, u16)>),
    Fail(String),
    Interrupt(String),
    Rename(u8),
    /// The process ends; a new one folds the log and resumes.
    Restart,
}

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
        match u8::arbitrary(g) % 12 {
            0..=3 => Op::User(text(g)),
            4..=6 => Op::Reply(text(g), Option::arbitrary(g)),
            7 => Op::Fail(text(g)),
            8 => Op::Interrupt(text(g)),
            9 => Op::Rename(u8::arbitrary(g) % 4),
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

/// A run: the log it appended and the requests it sent.
struct Run {
    session: Session,
    log: Vec<Record>,
    sent: Vec<Request>,
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
                Command::Sync | Command::Show(_) => {}
            }
        }
    }
}

fn run(ops: &[Op]) -> Run {
    let (session, cmds) = Session::start(header());
    let mut run = Run {
        session,
        log: Vec::new(),
        sent: Vec::new(),
    };
    run.take(cmds);
    let mut now = datetime!(2026-12-02 10:00 UTC);
    for op in ops {
        now += Duration::seconds(1);
        let input = match op.clone() {
            Op::User(text) => Input::User { text, now },
            Op::Reply(text, usage) => {
                let usage = usage.map(|(p, c)| Usage {
                    prompt_tokens: p.into(),
                    completion_tokens: c.into(),
                });
                Input::Reply {
                    reply: Reply { text, usage },
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
                let (session, cmds) = Session::resume(State::fold(&run.log), "m".into(), 1000, now);
                run.session = session;
                run.take(cmds);
                continue;
            }
        };
        let cmds = run.session.handle(input);
        run.take(cmds);
    }
    run
}

#[test]
fn replay_equals_live() {
    fn prop(ops: Vec<Op>) -> bool {
        let run = run(&ops);
        // The fold of the log is the live state.
        assert_eq!(&State::fold(&run.log), run.session.state());
        // The requests rebuilt from the log are the ones sent, byte for byte;
        // only a request still in flight is not in the log yet.
        let rebuilt = requests(&run.log);
        let answered = run.sent.len() - usize::from(run.session.busy());
        assert_eq!(rebuilt, run.sent[..answered]);
        // Histories sent to the model alternate cleanly: no assistant message
        // without a user message before it.
        for req in &run.sent {
            assert!(!req.body.contains(
                "\"messages\":[{\"role\":\"system\",\"content\":\"x\"},{\"role\":\"assistant\""
            ));
        }
        true
    }
    QuickCheck::new()
        .tests(500)
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
            w[1].turns == w[0].turns + 1
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
        let role = if bool::arbitrary(g) {
            Role::User
        } else {
            Role::Assistant
        };
        AnyRecord(match u8::arbitrary(g) % 8 {
            0 => Record::Header(Header {
                window: u64::arbitrary(g),
                model: s(g),
                ..header()
            }),
            1 => Record::Context(Context { at, system: s(g) }),
            2 => Record::Message(Message {
                at,
                role,
                content: s(g),
                partial: bool::arbitrary(g),
            }),
            3 => Record::Failed(Failed { at, error: s(g) }),
            4 => Record::Interrupted(Stamp { at }),
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
        // A session resumed from any fold still takes a turn.
        let (mut s, _) = Session::resume(state, "m".into(), 10, OffsetDateTime::UNIX_EPOCH);
        let _ = revolve_core::view::status(s.state());
        let _ = revolve_core::view::transcript(&records);
        let cmds = s.handle(Input::User {
            text: "hi".into(),
            now: OffsetDateTime::UNIX_EPOCH,
        });
        cmds.iter().any(|c| matches!(c, Command::Call(_)))
    }
    QuickCheck::new()
        .tests(500)
        .quickcheck(prop as fn(Vec<AnyRecord>) -> bool);
}
