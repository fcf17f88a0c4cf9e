//! A refinement driven through the core: what it logs, says and asks for.

use crate::session::{
    LogCommand, MemoryCommand, MemoryInput, ModelCommand, ModelInput, ToolInput, TurnContext,
    UserCommand, UserInput,
};
use time::macros::datetime;
use time::OffsetDateTime;

use super::super::{Command, Input, MemoryWrite, Reply, Session, Settings, Usage};
use crate::memory::{MemoryFile, Scope};
use crate::record::test_header as header;
use crate::record::{Record, Refined, Refining, ToolCall};
use crate::state::{requests, State};

const NOW: OffsetDateTime = datetime!(2026-12-02 10:05 UTC);

fn settings() -> Settings {
    Settings {
        rules: Default::default(),
        spill_chars: 100,
        spill_dir: "/state/spills/s1".into(),
        prune_chars: crate::compact::PRUNE_CHARS,
        repeat_limit: crate::guard::REPEAT_LIMIT,
        max_tool_rounds: crate::guard::MAX_TOOL_ROUNDS,
        max_calls_per_answer: crate::policy::MAX_CALLS_PER_ANSWER,
        allow_edits: false,
        allow_shell: true,
        interactive: false,
        granted: Vec::new(),
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

/// A session after one turn, and the records it logged.
fn after_a_turn(settings: Settings) -> (Session, Vec<Record>) {
    let (mut s, cmds) = Session::start(header(), settings);
    let mut log = appended(&cmds);
    let cmds = s
        .handle(Input::User(UserInput::Line {
            context: TurnContext::default(),
            text: "the port is 6543 now".into(),
            now: NOW,
        }))
        .commands;
    log.extend(appended(&cmds));
    let cmds = s
        .handle(Input::Model(ModelInput::Reply {
            reply: Reply {
                text: "noted".into(),
                ..Reply::default()
            },
            now: NOW,
        }))
        .commands;
    log.extend(appended(&cmds));
    (s, log)
}

fn appended(cmds: &[Command]) -> Vec<Record> {
    cmds.iter()
        .filter_map(|c| match c {
            Command::Log(LogCommand::Append(r)) => Some(r.clone()),
            _ => None,
        })
        .collect()
}

fn shown(cmds: &[Command]) -> Vec<&str> {
    cmds.iter()
        .filter_map(|c| match c {
            Command::User(UserCommand::Show(s)) => Some(s.as_str()),
            _ => None,
        })
        .collect()
}

fn sent(cmds: &[Command]) -> Option<&crate::Request> {
    cmds.iter().find_map(|c| match c {
        Command::Model(ModelCommand::Refine(r)) => Some(r),
        _ => None,
    })
}

fn files() -> Vec<MemoryFile> {
    vec![MemoryFile {
        scope: Scope::Project,
        name: "db.md".into(),
        content: "port 5432\n".into(),
    }]
}

fn refine(s: &mut Session, chain: Vec<String>) -> Vec<Command> {
    s.handle(Input::User(UserInput::Refine {
        auto: false,
        files: files(),
        chain,
        now: NOW,
    }))
    .commands
}

fn answer(s: &mut Session, text: &str) -> Vec<Command> {
    s.handle(Input::Model(ModelInput::RefineReply {
        reply: Reply {
            text: text.into(),
            usage: Some(Usage {
                prompt_tokens: 300,
                completion_tokens: 20,
                ..Usage::default()
            }),
            ..Reply::default()
        },
        now: NOW,
    }))
    .commands
}

fn ended(cmds: &[Command]) -> Option<Refined> {
    appended(cmds).into_iter().find_map(|r| match r {
        Record::Refined(r) => Some(r),
        _ => None,
    })
}

const CHANGE: &str =
    r#"{"files":[{"file":"project/db.md","content":"port 6543\n","change":"the port moved"}]}"#;

#[test]
fn each_request_is_logged_before_it_goes_out_and_the_change_is_snapshotted() {
    let (mut s, mut log) = after_a_turn(settings());
    let cmds = refine(&mut s, vec!["[user]\nthe port is 6543 now\n".into()]);
    log.extend(appended(&cmds));
    let request = sent(&cmds).expect("the refinement's request").clone();
    let [Record::Refining(Refining { part, of, body, .. })] = &appended(&cmds)[..] else {
        panic!("one refining record: {cmds:?}");
    };
    assert_eq!((*part, *of), (1, 1));
    assert_eq!(*body, request.body.text());
    assert_eq!(request.seq, 2, "numbered after the turn's request");
    assert!(body.contains("the port is 6543 now"), "{body}");
    assert!(body.contains("port 5432"), "the memory files: {body}");

    // A usable answer: its spend counts, and the core asks for the writes.
    let tokens_in = s.state().totals.tokens_in;
    let cmds = answer(&mut s, CHANGE);
    log.extend(appended(&cmds));
    let Some(Command::Memory(MemoryCommand::Snapshot {
        entry, by, changes, ..
    })) = cmds
        .iter()
        .find(|c| matches!(c, Command::Memory(MemoryCommand::Snapshot { .. })))
    else {
        panic!("a snapshot: {cmds:?}");
    };
    assert_eq!(
        (entry.as_str(), by.as_str()),
        ("20261202T100500Z", "refine")
    );
    assert_eq!(changes.len(), 1);
    assert_eq!(
        s.state().totals.tokens_in,
        tokens_in + 300,
        "the refinement's tokens count"
    );

    let cmds = s
        .handle(Input::Memory(MemoryInput::Changed {
            entry: entry.clone(),
            now: NOW,
        }))
        .commands;
    log.extend(appended(&cmds));
    assert_eq!(
        shown(&cmds),
        [
            "refinement: memory changed (/refine undo takes it back)",
            "    project/db.md — updated: the port moved"
        ]
    );
    assert!(matches!(appended(&cmds)[0], Record::MemoryChanged(_)));
    let refined = ended(&cmds).expect("refined");
    assert_eq!(
        (refined.entry.as_deref(), refined.pieces),
        (Some("20261202T100500Z"), 1)
    );
    assert_eq!(cmds.last(), Some(&Command::Log(LogCommand::Sync)));

    // The log gives it all back: the state, and the requests sent.
    assert_eq!(&State::fold(&log), s.state());
    assert_eq!(s.state().totals.requests, 2);
    let rebuilt = requests(&log);
    assert_eq!(rebuilt.len(), 2);
    assert_eq!(rebuilt[1], request);
}

#[test]
fn a_failed_or_unusable_single_request_changes_nothing_and_says_why() {
    let (mut s, _) = after_a_turn(settings());
    refine(&mut s, vec!["[user]\nhi\n".into()]);
    let cmds = s
        .handle(Input::Model(ModelInput::RefineFailed {
            error: "HTTP 500".into(),
            now: NOW,
        }))
        .commands;
    assert_eq!(
        shown(&cmds),
        ["refinement failed (HTTP 500); memory unchanged"]
    );
    let refined = ended(&cmds).expect("refined");
    assert_eq!((refined.entry, refined.pieces), (None, 1));

    refine(&mut s, vec!["[user]\nhi\n".into()]);
    let cmds = answer(&mut s, "not json");
    assert!(
        shown(&cmds)[0].starts_with("refinement: the answer was not usable ("),
        "{cmds:?}"
    );
    assert!(ended(&cmds).is_some_and(|r| r.entry.is_none()));

    refine(&mut s, vec!["[user]\nhi\n".into()]);
    let cmds = answer(&mut s, r#"{"files": []}"#);
    assert_eq!(shown(&cmds), ["refinement: nothing to change"]);
    assert!(ended(&cmds).is_some_and(|r| r.entry.is_none() && r.pieces == 1));
    assert_eq!(s.state().totals.requests, 4);
}

#[test]
fn an_interrupted_request_ends_the_refinement_not_a_turn() {
    let (mut s, _) = after_a_turn(settings());
    refine(&mut s, vec!["[user]\nhi\n".into()]);
    let cmds = s
        .handle(Input::User(UserInput::Interrupted {
            partial: String::new(),
            now: NOW,
        }))
        .commands;
    assert_eq!(shown(&cmds), ["refinement interrupted; memory unchanged"]);
    assert!(
        !appended(&cmds)
            .iter()
            .any(|r| matches!(r, Record::Interrupted(_))),
        "{cmds:?}"
    );
    assert!(ended(&cmds).is_some());
}

/// A session longer than one request: read in parts, a failed part
/// changes nothing of its own, and a costly one is asked about first.
#[test]
fn a_long_session_is_read_in_parts_and_a_costly_one_asked_about() {
    let chain: Vec<String> = (0..6)
        .map(|i| format!("[user]\n{}\n", "x".repeat(200_000 + i)))
        .collect();
    let (mut s, _) = after_a_turn(Settings {
        confirm_costly: true,
        interactive: true,
        ..settings()
    });
    let cmds = refine(&mut s, chain.clone());
    assert!(
        matches!(cmds.last(), Some(Command::User(UserCommand::Confirm(q))) if q.starts_with("refine now, sending 6 model requests?")),
        "{cmds:?}"
    );
    assert!(sent(&cmds).is_none(), "nothing sent before the answer");
    let cmds = s
        .handle(Input::User(UserInput::Confirmed {
            yes: false,
            now: NOW,
        }))
        .commands;
    assert_eq!(shown(&cmds), ["refinement declined; memory unchanged"]);
    let refined = ended(&cmds).expect("refined");
    assert_eq!(refined.pieces, 0);

    let (mut s, mut log) = after_a_turn(settings());
    let cmds = refine(&mut s, chain);
    log.extend(appended(&cmds));
    assert!(
        shown(&cmds)[1].contains("the model reads it in 6 parts"),
        "{cmds:?}"
    );
    let mut seqs = vec![sent(&cmds).expect("part 1").seq];
    let cmds = s
        .handle(Input::Model(ModelInput::RefineFailed {
            error: "HTTP 500".into(),
            now: NOW,
        }))
        .commands;
    log.extend(appended(&cmds));
    assert_eq!(
        shown(&cmds),
        ["refinement (part 1 of 6) failed (HTTP 500); that part changes nothing"]
    );
    seqs.push(sent(&cmds).expect("part 2").seq);
    let mut cmds = answer(&mut s, CHANGE);
    log.extend(appended(&cmds));
    for _ in 3..=6 {
        seqs.push(sent(&cmds).expect("the next part").seq);
        cmds = answer(&mut s, r#"{"files": []}"#);
        log.extend(appended(&cmds));
    }
    assert_eq!(seqs, [2, 3, 4, 5, 6, 7]);
    assert!(
        matches!(&cmds[..], [.., Command::Memory(MemoryCommand::Snapshot { changes, .. })] if changes.len() == 1),
        "{cmds:?}"
    );
    assert_eq!(s.state().totals.requests, 7);
    assert_eq!(requests(&log).len(), 7);
}

/// With no one at a terminal, a costly refinement is not sent: one line
/// says what it would send and how to allow it, and it ends with nothing
/// read; without `confirm_costly` it runs.
#[test]
fn a_costly_refinement_without_a_terminal_stops_and_says_how_to_allow_it() {
    let chain: Vec<String> = (0..6)
        .map(|i| format!("[user]\n{}\n", "x".repeat(200_000 + i)))
        .collect();
    let (mut s, _) = after_a_turn(Settings {
        confirm_costly: true,
        interactive: false,
        ..settings()
    });
    let cmds = refine(&mut s, chain.clone());
    assert!(sent(&cmds).is_none(), "nothing sent: {cmds:?}");
    assert!(
        !cmds
            .iter()
            .any(|c| matches!(c, Command::User(UserCommand::Confirm(_)))),
        "no one to ask: {cmds:?}"
    );
    let said = shown(&cmds);
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].starts_with(
            "stopped before a costly refinement: it would send about 6 model requests"
        ) && said[0].contains("--yes")
            && said[0].contains("\"confirm_costly\": false"),
        "{said:?}"
    );
    assert_eq!(ended(&cmds).expect("refined").pieces, 0);
    assert!(!s.busy());

    let (mut s, _) = after_a_turn(Settings {
        confirm_costly: false,
        interactive: false,
        ..settings()
    });
    let cmds = refine(&mut s, chain);
    assert!(sent(&cmds).is_some(), "{cmds:?}");
}

/// `remember`'s change rides in its result and is logged before it.
#[test]
fn a_memory_change_a_tool_made_is_logged_before_its_result() {
    let (mut s, _) = after_a_turn(settings());
    let _ = s
        .handle(Input::User(UserInput::Line {
            context: TurnContext::default(),
            text: "remember it".into(),
            now: NOW,
        }))
        .commands;
    let _ = s
        .handle(Input::Model(ModelInput::Reply {
            reply: Reply {
                tool_calls: vec![ToolCall {
                    id: "c1".into(),
                    name: "remember".into(),
                    arguments: r#"{"label":"db","content":"port 6543"}"#.into(),
                }],
                ..Reply::default()
            },
            now: NOW,
        }))
        .commands;
    let cmds = s
        .handle(Input::Tool(ToolInput::Done {
            parts: None,
            id: "c1".into(),
            output: "created project memory db.md".into(),
            grant: None,
            effects: crate::session::ToolEffects {
                memory: Some(MemoryWrite {
                    entry: "20261202T100500Z".into(),
                    files: vec!["project/db.md: created: db".into()],
                }),
                ..Default::default()
            },
            now: NOW,
        }))
        .commands;
    let records = appended(&cmds);
    let Record::MemoryChanged(m) = &records[0] else {
        panic!("memory_changed first: {records:?}");
    };
    assert_eq!(
        (m.entry.as_str(), m.by.as_str(), &m.files[..]),
        (
            "20261202T100500Z",
            "remember",
            &["project/db.md: created: db".to_owned()][..]
        )
    );
    assert!(
        matches!(&records[1], Record::Message(r) if r.tool_call_id.as_deref() == Some("c1")),
        "{records:?}"
    );
}

/// Files written before `refining` existed count a refinement's requests
/// by its `refined` record, and rebuild none of them.
#[test]
fn older_files_count_a_refinement_by_its_refined_record() {
    let (_, mut log) = after_a_turn(settings());
    log.push(Record::Refined(Refined {
        at: NOW,
        auto: false,
        entry: None,
        pieces: 3,
        unmade: None,
    }));
    let state = State::fold(&log);
    assert_eq!(state.totals.requests, 4);
    assert_eq!(requests(&log).len(), 1);
    let answers = crate::fixture::answers(&log);
    assert_eq!(answers.len(), 4);
    assert!(answers[1..]
        .iter()
        .all(|a| *a == crate::fixture::Answer::NotRecorded));
}
