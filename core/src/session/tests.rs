//! The unit tests of the turn state machine: turns, tools, compaction and the window.

use super::*;
use super::{
    FileCommand, FileInput, LogCommand, MemoryCommand, ModelCommand, ModelInput, ToolCommand,
    ToolInput, TurnContext, UserCommand, UserInput,
};
use crate::compact;
use crate::guard::{self, StopReason};
use crate::record::{Role, ToolCall};
use crate::tools::Tool;
use time::macros::datetime;

use crate::record::test_header as header;
use crate::record::{FixedKind, Header, Stopped};
use crate::request::Request;

fn settings() -> Settings {
    Settings {
        rules: Default::default(),
        spill_chars: 100,
        spill_dir: "/state/spills/s1".into(),
        prune_chars: compact::PRUNE_CHARS,
        repeat_limit: guard::REPEAT_LIMIT,
        max_tool_rounds: guard::MAX_TOOL_ROUNDS,
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

fn start() -> Session {
    Session::start(header(), settings()).0
}

/// The user's line, with the prompt's parts the session holds (as a
/// shell that read them unchanged would send).
fn user(s: &mut Session, text: &str) -> Vec<Command> {
    let parts = s.parts.clone();
    s.handle(Input::User(UserInput::Line {
        context: TurnContext {
            parts,
            ..TurnContext::default()
        },
        text: text.into(),
        now: datetime!(2026-12-02 10:01 UTC),
    }))
    .commands
}

fn reply(s: &mut Session, text: &str, calls: &[(&str, &str, &str)]) -> Vec<Command> {
    let tool_calls = calls
        .iter()
        .map(|(id, name, args)| ToolCall {
            id: (*id).into(),
            name: (*name).into(),
            arguments: (*args).into(),
        })
        .collect();
    let usage = Some(Usage {
        prompt_tokens: 10,
        completion_tokens: 2,
        ..Default::default()
    });
    s.handle(Input::Model(ModelInput::Reply {
        reply: Reply {
            thinking: Vec::new(),
            truncated: false,
            text: text.into(),
            tool_calls,
            usage,
        },
        now: datetime!(2026-12-02 10:02 UTC),
    }))
    .commands
}

fn done(s: &mut Session, id: &str, output: &str, grant: Option<&str>) -> Vec<Command> {
    let grant = grant.map(str::to_owned);
    s.handle(Input::Tool(ToolInput::Done {
        parts: None,
        id: id.into(),
        output: output.into(),
        grant,
        effects: Default::default(),
        now: datetime!(2026-12-02 10:03 UTC),
    }))
    .commands
}

fn kinds(cmds: &[Command]) -> Vec<&'static str> {
    cmds.iter()
        .map(|c| match c {
            Command::Log(LogCommand::Append(Record::Header(_))) => "header",
            Command::Log(LogCommand::Append(Record::Context(_))) => "context",
            Command::Log(LogCommand::Append(Record::Message(m))) if m.role == Role::Tool => {
                "result"
            }
            Command::Log(LogCommand::Append(Record::Message(_))) => "message",
            Command::Log(LogCommand::Append(Record::Totals(_))) => "totals",
            Command::Log(LogCommand::Append(Record::Failed(_))) => "failed",
            Command::Log(LogCommand::Append(Record::Interrupted(_))) => "interrupted",
            Command::Log(LogCommand::Append(Record::Pruned(_))) => "pruned",
            Command::Log(LogCommand::Append(Record::Continued(_))) => "continued",
            Command::Log(LogCommand::Append(Record::Compacted(_))) => "compacted",
            Command::Log(LogCommand::Append(Record::Compacting(_))) => "compacting",
            Command::Log(LogCommand::Append(Record::CompactionFailed(_))) => "compaction-failed",
            Command::Log(LogCommand::Append(Record::Stopped(_))) => "stopped",
            Command::Log(LogCommand::Append(Record::WentOn(_))) => "went-on",
            Command::Log(LogCommand::Append(_)) => "other",
            Command::Log(LogCommand::Sync) => "sync",
            Command::Model(ModelCommand::Call(_)) => "call",
            Command::Tool(ToolCommand::Run { .. }) => "run",
            Command::Tool(ToolCommand::Delegate { .. }) => "delegate",
            Command::File(FileCommand::Spill { .. }) => "spill",
            Command::Model(ModelCommand::Summarize(_)) => "summarize",
            Command::Model(ModelCommand::Refine(_)) => "refine",
            Command::Model(ModelCommand::Count(_)) => "count",
            Command::User(UserCommand::Confirm(_)) => "confirm",
            Command::Log(LogCommand::StartFile(_)) => "start-file",
            Command::Memory(MemoryCommand::Snapshot { .. }) => "snapshot",
            Command::Memory(MemoryCommand::Undo) => "undo",
            Command::File(FileCommand::Open { .. }) => "open",
            Command::File(FileCommand::Stage { .. }) => "stage",
            Command::File(FileCommand::Write { .. }) => "write",
            Command::File(FileCommand::Restore(_)) => "restore",
            Command::User(UserCommand::Ask { .. }) => "ask",
            Command::Tool(ToolCommand::CallMcp { .. }) => "call-mcp",
            Command::Tool(ToolCommand::Hook(_)) => "hook",
            Command::User(UserCommand::AskGrant { .. }) => "ask-grant",
            Command::User(UserCommand::AskFetch { .. }) => "ask-fetch",
            Command::User(UserCommand::AskOutside { .. }) => "ask-outside",
            Command::User(UserCommand::Show(_)) => "show",
            Command::User(UserCommand::Refused(_)) => "refused",
        })
        .collect()
}

#[test]
fn a_turn_appends_then_calls_then_ends() {
    let (mut s, cmds) = Session::start(header(), settings());
    assert_eq!(kinds(&cmds), ["header"]);
    assert_eq!(kinds(&user(&mut s, "hi")), ["message", "context", "call"]);
    assert_eq!(kinds(&user(&mut s, "again")), ["show"]);
    assert_eq!(
        kinds(&reply(&mut s, "yo", &[])),
        ["message", "totals", "sync"]
    );
    let t = &s.state().totals;
    assert_eq!(
        (
            t.tokens_in,
            t.tokens_out,
            t.turns,
            t.last_context,
            t.estimated
        ),
        (10, 2, 1, 12, false)
    );
    // The prompt did not change, so the second turn writes no context.
    assert_eq!(kinds(&user(&mut s, "more")), ["message", "call"]);
}

#[test]
fn tools_run_one_at_a_time_in_order_and_bad_calls_get_error_results() {
    let mut s = start();
    user(&mut s, "look");
    let calls = [
        ("c1", "read_file", r#"{"path":"a"}"#),
        ("c2", "nope", "{}"),
        ("c3", "list_dir", r#"{"path":"."}"#),
    ];
    let cmds = reply(&mut s, "", &calls);
    assert_eq!(kinds(&cmds), ["message", "totals", "run"]);
    assert!(
        matches!(&cmds[2], Command::Tool(ToolCommand::Run { id, tool: Tool::ReadFile { .. }, .. }) if id == "c1")
    );
    assert_eq!(
        s.state().totals.turns,
        0,
        "a tool round does not end the turn"
    );
    // c1 done; c2 is unknown and answered at once; c3 runs.
    let cmds = done(&mut s, "c1", "text", None);
    assert_eq!(kinds(&cmds), ["result", "result", "run"]);
    assert!(
        matches!(&cmds[1], Command::Log(LogCommand::Append(Record::Message(m))) if m.content.contains("no tool named"))
    );
    assert_eq!(kinds(&done(&mut s, "c9", "x", None)), ["show"]);
    assert_eq!(kinds(&done(&mut s, "c3", "a\nb", None)), ["result", "call"]);
    assert_eq!(
        kinds(&reply(&mut s, "done", &[])),
        ["message", "totals", "sync"]
    );
    assert_eq!(s.state().totals.turns, 1);
    assert_eq!(s.state().totals.tokens_in, 20);
}

fn result_of<'a>(cmds: &'a [Command], id: &str) -> Option<&'a str> {
    cmds.iter().find_map(|c| match c {
        Command::Log(LogCommand::Append(Record::Message(m)))
            if m.tool_call_id.as_deref() == Some(id) =>
        {
            Some(m.content.as_str())
        }
        _ => None,
    })
}

#[test]
fn a_call_repeated_three_times_is_refused_and_a_fourth_ends_the_turn() {
    let mut s = start();
    user(&mut s, "read a");
    let args = r#"{"path":"a"}"#;
    for id in ["c1", "c2"] {
        let cmds = reply(&mut s, "", &[(id, "read_file", args)]);
        assert!(
            matches!(cmds.last(), Some(Command::Tool(ToolCommand::Run { .. }))),
            "{id}"
        );
        done(&mut s, id, "x", None);
    }
    // The third: not run, an error result, and the next request goes out.
    let cmds = reply(&mut s, "", &[("c3", "read_file", r#"{ "path": "a" }"#)]);
    assert_eq!(
        kinds(&cmds),
        ["message", "totals", "result", "call"],
        "{cmds:?}"
    );
    assert!(result_of(&cmds, "c3").unwrap().contains("3 times in a row"));
    // The fourth, with another call after it: both answered, turn ended.
    let cmds = reply(
        &mut s,
        "",
        &[("c4", "read_file", args), ("c5", "list_dir", "{}")],
    );
    assert_eq!(
        kinds(&cmds),
        ["message", "totals", "result", "result", "stopped", "totals", "sync"]
    );
    assert!(result_of(&cmds, "c5")
        .unwrap()
        .starts_with("error: not run"));
    assert!(!s.busy());
    assert_eq!(s.state().totals.turns, 1);
    let Some(Command::Log(LogCommand::Append(Record::Stopped(stop)))) = cmds.get(4) else {
        panic!("{cmds:?}");
    };
    assert_eq!(
        stop.reason,
        StopReason::Repeated {
            tool: "read_file".into(),
            times: 4
        }
    );
    // A new turn starts the count again.
    user(&mut s, "again");
    let cmds = reply(&mut s, "", &[("c6", "read_file", args)]);
    assert!(matches!(
        cmds.last(),
        Some(Command::Tool(ToolCommand::Run { .. }))
    ));
}

#[test]
fn distinct_calls_are_never_refused() {
    let mut s = start();
    user(&mut s, "read");
    for i in 0..10 {
        let id = format!("c{i}");
        let args = format!(r#"{{"path":"f{}"}}"#, i % 2);
        let cmds = reply(&mut s, "", &[(&id, "read_file", &args)]);
        assert!(
            matches!(cmds.last(), Some(Command::Tool(ToolCommand::Run { .. }))),
            "{i}"
        );
        done(&mut s, &id, "x", None);
    }
}

#[test]
fn the_tool_round_cap_ends_the_turn_and_go_on_resets_it() {
    let mut s = Session::start(
        header(),
        Settings {
            max_tool_rounds: 2,
            ..settings()
        },
    )
    .0;
    user(&mut s, "work");
    reply(&mut s, "", &[("a", "read_file", r#"{"path":"1"}"#)]);
    let cmds = done(&mut s, "a", "x", None);
    assert!(matches!(
        cmds.last(),
        Some(Command::Model(ModelCommand::Call(_)))
    ));
    reply(&mut s, "", &[("b", "read_file", r#"{"path":"2"}"#)]);
    let cmds = done(&mut s, "b", "x", None);
    assert_eq!(kinds(&cmds), ["result", "stopped", "totals", "sync"]);
    assert!(!s.busy());
    let Some(Command::Log(LogCommand::Append(Record::Stopped(stop)))) = cmds.get(1) else {
        panic!("{cmds:?}");
    };
    assert_eq!(stop.reason, StopReason::ToolRounds { limit: 2 });
    assert!(guard::describe(&stop.reason).contains("--max-tool-rounds 2"));
    // Going on sends the request the cap held back, with two rounds more.
    let cmds = s
        .handle(Input::User(UserInput::GoOn {
            parts: Default::default(),
            now: datetime!(2026-12-02 10:04 UTC),
        }))
        .commands;
    assert_eq!(kinds(&cmds), ["went-on", "call"]);
    assert_eq!(s.state().turn_rounds, 0);
    reply(&mut s, "", &[("c", "read_file", r#"{"path":"3"}"#)]);
    let cmds = done(&mut s, "c", "x", None);
    assert!(matches!(
        cmds.last(),
        Some(Command::Model(ModelCommand::Call(_)))
    ));
    reply(&mut s, "done", &[]);
    let cmds = s
        .handle(Input::User(UserInput::GoOn {
            parts: Default::default(),
            now: datetime!(2026-12-02 10:05 UTC),
        }))
        .commands;
    assert_eq!(kinds(&cmds), ["show"], "nothing to go on with");
}

#[test]
fn only_the_first_calls_of_an_answer_run() {
    let mut s = Session::start(
        header(),
        Settings {
            max_calls_per_answer: 2,
            ..settings()
        },
    )
    .0;
    user(&mut s, "work");
    let calls = [
        ("a", "read_file", r#"{"path":"1"}"#),
        ("b", "read_file", r#"{"path":"2"}"#),
        ("c", "read_file", r#"{"path":"3"}"#),
        ("d", "read_file", r#"{"path":"4"}"#),
    ];
    let cmds = reply(&mut s, "", &calls);
    assert!(matches!(cmds.last(), Some(Command::Tool(ToolCommand::Run { id, .. })) if id == "a"));
    let cmds = done(&mut s, "a", "x", None);
    assert!(matches!(cmds.last(), Some(Command::Tool(ToolCommand::Run { id, .. })) if id == "b"));
    // The last two are refused, in order, and the next request goes out.
    let cmds = done(&mut s, "b", "x", None);
    assert_eq!(kinds(&cmds), ["result", "result", "result", "call"]);
    let results: Vec<(&str, &str)> = s.state().messages[s.state().messages.len() - 2..]
        .iter()
        .map(|m| (m.tool_call_id.as_deref().unwrap_or(""), m.content.as_str()))
        .collect();
    for (id, (got, content)) in ["c", "d"].iter().zip(&results) {
        assert_eq!(got, id);
        assert!(
            content.starts_with("error: not run: this answer made 4 tool calls"),
            "{content}"
        );
    }
    // A later answer has its own count.
    let cmds = reply(&mut s, "", &[("e", "read_file", r#"{"path":"5"}"#)]);
    assert!(matches!(cmds.last(), Some(Command::Tool(ToolCommand::Run { id, .. })) if id == "e"));
}

#[test]
fn big_results_are_spilled_and_granted_to_this_run_only() {
    let mut s = start();
    user(&mut s, "run it");
    reply(
        &mut s,
        "",
        &[("call/1", "shell", r#"{"command":"yes | head -c 5000"}"#)],
    );
    let big = "y\n".repeat(2500);
    let cmds = done(&mut s, "call/1", &big, None);
    assert_eq!(kinds(&cmds), ["spill", "result", "call"]);
    let Command::File(FileCommand::Spill { path, content }) = &cmds[0] else {
        unreachable!()
    };
    assert_eq!(path, "/state/spills/s1/0001-1-call_1.txt");
    assert_eq!(content, &big);
    let shown = &s.state().messages.last().unwrap().content;
    assert!(shown.contains(path) && shown.len() < big.len(), "{shown}");
    assert!(s.grants().contains(path));
    // The next tool run carries the grant.
    reply(
        &mut s,
        "",
        &[("c2", "read_file", &format!(r#"{{"path":"{path}"}}"#))],
    );
    // A resumed session does not have it.
    let resumed = Resumed {
        at: datetime!(2026-12-02 11:00 UTC),
        model: "m".into(),
        window: 1000,
        provider: String::new(),
    };
    let (r, _) = Session::resume(s.state().clone(), settings(), resumed);
    assert!(r.grants().is_empty());
}

#[test]
fn grants_from_the_user_reach_later_tool_runs() {
    // `--grant /etc`: a request inside it is granted without asking.
    let up_front = Settings {
        granted: vec!["/etc".into()],
        ..settings()
    };
    let mut s = Session::start(header(), up_front).0;
    user(&mut s, "read /etc/hosts");
    reply(
        &mut s,
        "",
        &[("g", "request_file_grant", r#"{"path":"/etc/hosts"}"#)],
    );
    let cmds = done(&mut s, "g", "", Some("/etc/hosts"));
    assert_eq!(
        result_of(&cmds, "g"),
        Some(approval::granted("/etc/hosts").as_str())
    );
    let cmds = reply(
        &mut s,
        "",
        &[("r", "read_file", r#"{"path":"/etc/hosts"}"#)],
    );
    assert!(
        matches!(&cmds[2], Command::Tool(ToolCommand::Run { grants, .. }) if grants == &["/etc/hosts".to_owned()])
    );
}

#[test]
fn an_interrupted_stream_keeps_what_arrived() {
    let mut s = start();
    user(&mut s, "hi");
    let cmds = s
        .handle(Input::User(UserInput::Interrupted {
            partial: "Hel".into(),
            now: datetime!(2026-12-02 10:01 UTC),
        }))
        .commands;
    assert_eq!(kinds(&cmds), ["message", "interrupted", "totals", "sync"]);
    let last = s.state().messages.last().unwrap();
    assert!(last.partial && last.content == "Hel");
    assert!(!s.busy());
}

#[test]
fn interrupting_tools_answers_every_open_call_and_sends_nothing() {
    let mut s = start();
    user(&mut s, "go");
    reply(
        &mut s,
        "",
        &[
            ("a", "shell", r#"{"command":"sleep 100"}"#),
            ("b", "agent_info", "{}"),
        ],
    );
    let cmds = s
        .handle(Input::User(UserInput::Interrupted {
            partial: String::new(),
            now: datetime!(2026-12-02 10:05 UTC),
        }))
        .commands;
    assert_eq!(
        kinds(&cmds),
        ["result", "result", "interrupted", "totals", "sync"]
    );
    assert!(
        matches!(&cmds[2], Command::Log(LogCommand::Append(Record::Interrupted(i))) if i.unsent)
    );
    assert!(!s.busy());
    assert_eq!(kinds(&user(&mut s, "next")), ["message", "call"]);
}

#[test]
fn resume_closes_what_a_crash_left_open() {
    let mut s = start();
    user(&mut s, "hi");
    let resumed = Resumed {
        at: datetime!(2026-12-02 11:00 UTC),
        model: "m2".into(),
        window: 50,
        provider: "anthropic".into(),
    };
    let (r, cmds) = Session::resume(s.state().clone(), settings(), resumed.clone());
    assert_eq!(kinds(&cmds), ["interrupted", "totals", "sync", "other"]);
    assert_eq!(r.state().totals.turns, 1);
    assert!(!r.busy());
    assert_eq!(
        (
            r.state().model.as_str(),
            r.state().window,
            r.state().provider.as_str()
        ),
        ("m2", 50, "anthropic")
    );

    let mut s = start();
    user(&mut s, "hi");
    reply(&mut s, "", &[("a", "shell", r#"{"command":"make"}"#)]);
    let (r, cmds) = Session::resume(s.state().clone(), settings(), resumed);
    assert_eq!(
        kinds(&cmds),
        ["result", "interrupted", "totals", "sync", "other"]
    );
    assert!(!r.busy());
}

/// A session with `turns` complete turns whose last answer read
/// `context` tokens, with a 30,000-character tool result in turn one.
fn long_session(turns: usize, context: u64) -> Session {
    let mut s = start();
    s.state.window = 128_000;
    for i in 0..turns {
        user(&mut s, &format!("question {i}"));
        if i == 0 {
            reply(&mut s, "", &[("big", "shell", r#"{"command":"make"}"#)]);
            s.settings.spill_chars = usize::MAX;
            done(&mut s, "big", &"log line\n".repeat(3_000), None);
        }
        let read = if i + 1 == turns { context } else { 100 };
        let usage = Some(Usage {
            prompt_tokens: read,
            completion_tokens: 0,
            ..Default::default()
        });
        let reply = Reply {
            thinking: Vec::new(),
            truncated: false,
            text: format!("answer {i}"),
            tool_calls: Vec::new(),
            usage,
        };
        let _ = s
            .handle(Input::Model(ModelInput::Reply {
                reply,
                now: datetime!(2026-12-02 10:02 UTC),
            }))
            .commands;
    }
    s
}

#[test]
fn pruning_alone_can_make_room() {
    // Due at 115,200 of 128,000; the big result is worth about 6,000
    // tokens, which brings 110,000 + room under the window... not quite:
    // 110,000 is below the point already, so read it as 118,000.
    let mut s = long_session(5, 118_000);
    let cmds = user(&mut s, "next");
    assert_eq!(
        kinds(&cmds),
        ["message", "pruned", "show", "call"],
        "{cmds:#?}"
    );
    let pruned = s
        .state()
        .messages
        .iter()
        .find(|m| m.tool_call_id.as_deref() == Some("big"))
        .unwrap();
    assert!(pruned.content.contains("characters cut by compaction"));
    assert!(s.state().totals.last_context < 115_200);
}

#[test]
fn summarizing_moves_the_session_to_a_new_file() {
    let mut s = long_session(5, 127_000);
    let cmds = user(&mut s, "next");
    assert_eq!(
        kinds(&cmds),
        [
            "message",
            "pruned",
            "show",
            "compacting",
            "show",
            "summarize"
        ],
        "{cmds:#?}"
    );
    let Command::Model(ModelCommand::Summarize(req)) = &cmds[5] else {
        unreachable!()
    };
    assert!(req.body.text().contains("question 0") && !req.body.text().contains("question 2"));
    assert!(req.body.text().contains("Keep verbatim"));
    assert!(s.busy());
    assert_eq!(kinds(&user(&mut s, "again")), ["show"]);
    let now = datetime!(2026-12-02 10:05 UTC);
    let cmds = s
        .handle(Input::Model(ModelInput::Summarized {
            reply: Reply {
                text: "Facts: port 5432".into(),
                usage: None,
                ..Reply::default()
            },
            new_id: "s2".into(),
            now,
        }))
        .commands;
    assert_eq!(
        kinds(&cmds),
        [
            "continued",
            "sync",
            "start-file",
            "compacted",
            "show",
            "context",
            "call"
        ],
        "{cmds:#?}"
    );
    let Command::Log(LogCommand::StartFile(h)) = &cmds[2] else {
        unreachable!()
    };
    assert_eq!(
        (h.id.as_str(), h.continues.as_deref(), h.name.as_deref()),
        ("s2", Some("s1"), Some("amber"))
    );
    let m = &s.state().messages;
    assert!(m[0].content.contains("Facts: port 5432"));
    let users: Vec<&str> = m
        .iter()
        .filter(|m| m.role == Role::User)
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(
        &users[1..],
        ["question 2", "question 3", "question 4", "next"]
    );
    let Command::Model(ModelCommand::Call(req)) = &cmds[6] else {
        unreachable!()
    };
    assert!(
        req.body.text().contains("Facts: port 5432") && !req.body.text().contains("question 1")
    );
    assert_eq!(s.state().totals.turns, 5);
}

#[test]
fn a_failed_summary_changes_nothing_and_the_turn_goes_on() {
    let mut s = long_session(5, 127_000);
    user(&mut s, "next");
    let before = s.state().messages.len();
    let now = datetime!(2026-12-02 10:05 UTC);
    let cmds = s
        .handle(Input::Model(ModelInput::SummaryFailed {
            error: "HTTP 500".into(),
            now,
        }))
        .commands;
    assert_eq!(kinds(&cmds), ["compaction-failed", "show", "call"]);
    assert_eq!(s.state().messages.len(), before);
}

/// A summary answer that calls `shell` instead of writing notes.
fn calling_notes(now: time::OffsetDateTime) -> Input {
    let call = ToolCall {
        id: "c".into(),
        name: "shell".into(),
        arguments: "{}".into(),
    };
    Input::Model(ModelInput::Summarized {
        reply: Reply {
            text: "let me check".into(),
            tool_calls: vec![call],
            ..Reply::default()
        },
        new_id: "s2".into(),
        now,
    })
}

#[test]
fn notes_that_call_a_tool_are_asked_again_bare_then_are_no_notes() {
    // A session of five turns whose last read filled the window, logged
    // as it goes, with every request sent.
    let head = Record::Header(Header {
        window: 128_000,
        ..header()
    });
    let mut records = vec![head];
    let mut sent: Vec<String> = Vec::new();
    let mut take = |cmds: Vec<Command>, records: &mut Vec<Record>| {
        for c in &cmds {
            match c {
                Command::Log(LogCommand::Append(r)) => records.push(r.clone()),
                Command::Model(ModelCommand::Call(r) | ModelCommand::Summarize(r)) => {
                    sent.push(r.body.text())
                }
                _ => {}
            }
        }
        cmds
    };
    let mut s = Session::new(State::fold(&records), settings());
    for i in 0..5 {
        take(user(&mut s, &format!("question {i}")), &mut records);
        let usage = Some(Usage {
            prompt_tokens: if i == 4 { 127_000 } else { 100 },
            ..Default::default()
        });
        let reply = Reply {
            text: format!("answer {i}"),
            usage,
            ..Reply::default()
        };
        let at = datetime!(2026-12-02 10:02 UTC);
        take(
            s.handle(Input::Model(ModelInput::Reply { reply, now: at }))
                .commands,
            &mut records,
        );
    }
    let first = take(user(&mut s, "next"), &mut records);
    let asked = summarize_request(&first).expect("a summary request");
    assert!(asked.body.text().contains(r#""tools":["#));
    let now = datetime!(2026-12-02 10:05 UTC);
    // The model calls a tool: the same piece again, one transcript, no tools.
    let again = take(s.handle(calling_notes(now)).commands, &mut records);
    assert_eq!(
        kinds(&again),
        ["compacting", "show", "summarize"],
        "{again:#?}"
    );
    assert!(matches!(&again[0], Command::Log(LogCommand::Append(Record::Compacting(c))) if c.bare));
    let bare = summarize_request(&again).unwrap().body.text();
    assert!(
        !bare.contains(r#""tools""#) && bare.contains("question 0"),
        "{bare}"
    );
    let rebuilt: Vec<String> = crate::state::requests(&records)
        .into_iter()
        .map(|r| r.body.text())
        .collect();
    assert!(rebuilt == sent, "the rebuilt requests differ");
    assert_eq!(s.state().totals.requests, sent.len() as u64);
    // A second call is no notes: the session goes on uncompacted.
    let cmds = s.handle(calling_notes(now)).commands;
    assert_eq!(kinds(&cmds), ["compaction-failed", "show", "call"]);
    assert!(matches!(&cmds[1], Command::User(UserCommand::Show(t)) if t.contains("called a tool")));
}

#[test]
fn manual_compaction() {
    let now = datetime!(2026-12-02 10:05 UTC);
    let mut s = long_session(2, 100);
    assert_eq!(
        kinds(&s.handle(Input::User(UserInput::Compact { now })).commands),
        ["show"],
        "two turns: nothing to do"
    );
    let mut s = long_session(5, 100);
    let cmds = s.handle(Input::User(UserInput::Compact { now })).commands;
    assert_eq!(
        kinds(&cmds),
        ["pruned", "show", "compacting", "show", "summarize"]
    );
    let cmds = s
        .handle(Input::Model(ModelInput::Summarized {
            reply: Reply {
                text: "notes".into(),
                usage: None,
                ..Reply::default()
            },
            new_id: "s2".into(),
            now,
        }))
        .commands;
    assert_eq!(
        kinds(&cmds),
        [
            "continued",
            "sync",
            "start-file",
            "compacted",
            "show",
            "totals",
            "sync"
        ]
    );
    assert!(!s.busy());
    // Interrupting a /compact leaves everything as it was.
    let mut s = long_session(5, 100);
    let _ = s.handle(Input::User(UserInput::Compact { now })).commands;
    let cmds = s
        .handle(Input::User(UserInput::Interrupted {
            partial: String::new(),
            now,
        }))
        .commands;
    assert_eq!(kinds(&cmds), ["compaction-failed", "show"]);
    assert!(!s.busy());
}

#[test]
fn rename_is_validated() {
    let now = datetime!(2026-12-02 10:01 UTC);
    let mut s = start();
    let used = BTreeSet::from(["birch".to_owned()]);
    assert_eq!(
        kinds(
            &s.handle(Input::User(UserInput::Rename {
                name: "birch".into(),
                used: used.clone(),
                now
            }))
            .commands
        ),
        ["show"]
    );
    assert_eq!(
        kinds(
            &s.handle(Input::User(UserInput::Rename {
                name: "db".into(),
                used,
                now
            }))
            .commands
        ),
        ["other", "show"]
    );
    assert_eq!(s.state().name.as_deref(), Some("db"));
}

#[test]
fn a_shell_call_is_asked_about_refused_without_a_terminal_and_always_is_remembered() {
    let shell = [("c1", "shell", r#"{"command":"ls"}"#)];
    // No terminal, no --allow-shell: refused, the user told the flag.
    let quiet = Settings {
        allow_shell: false,
        interactive: false,
        ..settings()
    };
    let mut s = Session::start(header(), quiet).0;
    user(&mut s, "list");
    let cmds = reply(&mut s, "", &shell);
    assert!(cmds
        .iter()
        .any(|c| matches!(c, Command::User(UserCommand::Show(t)) if t.contains("--allow-shell"))));
    assert_eq!(result_of(&cmds, "c1"), Some(approval::REFUSED));
    assert!(!kinds(&cmds).contains(&"run"));

    // At a terminal: asked; "always" runs it, is logged, and the next
    // command of the session is not asked about; the fold remembers it.
    let asking = Settings {
        allow_shell: false,
        interactive: true,
        ..settings()
    };
    let mut s = Session::start(header(), asking.clone()).0;
    user(&mut s, "list");
    let cmds = reply(&mut s, "", &shell);
    assert_eq!(kinds(&cmds).last(), Some(&"ask"));
    let cmds = s
        .handle(Input::User(UserInput::Answered {
            id: "c1".into(),
            answer: crate::edit::Answer::Always,
            now: datetime!(2026-12-02 10:00 UTC),
        }))
        .commands;
    assert_eq!(kinds(&cmds), ["other", "run"]);
    let folded = State::fold(
        &std::iter::once(Record::Header(header()))
            .chain(cmds.iter().filter_map(|c| match c {
                Command::Log(LogCommand::Append(r)) => Some(r.clone()),
                _ => None,
            }))
            .collect::<Vec<_>>(),
    );
    assert!(folded.shell_always);
    done(&mut s, "c1", "a\nb\n", None);
    let cmds = reply(&mut s, "", &[("c2", "shell", r#"{"command":"pwd"}"#)]);
    assert_eq!(kinds(&cmds).last(), Some(&"run"));

    // "no" is the call's result, logged.
    let mut s = Session::start(header(), asking).0;
    user(&mut s, "list");
    reply(&mut s, "", &shell);
    let cmds = s
        .handle(Input::User(UserInput::Answered {
            id: "c1".into(),
            answer: crate::edit::Answer::No,
            now: datetime!(2026-12-02 10:00 UTC),
        }))
        .commands;
    assert_eq!(result_of(&cmds, "c1"), Some(approval::REFUSED));
}

#[test]
fn a_grant_is_asked_about_at_a_terminal_and_refused_without_one() {
    let grant = [(
        "g",
        "request_file_grant",
        r#"{"path":"/srv/notes.txt","reason":"the notes"}"#,
    )];
    let asked = |s: &mut Session| {
        user(s, "read the notes");
        reply(s, "", &grant);
        done(s, "g", "", Some("/srv/notes.txt"))
    };
    // No terminal, no --grant: refused, the user told the flag; nothing
    // outside a --grant path is granted by it.
    let quiet = Settings {
        granted: vec!["/srv/other".into()],
        ..settings()
    };
    let mut s = Session::start(header(), quiet).0;
    let cmds = asked(&mut s);
    assert!(cmds
        .iter()
        .any(|c| matches!(c, Command::User(UserCommand::Show(t)) if t.contains("--grant"))));
    assert_eq!(
        result_of(&cmds, "g"),
        Some(approval::not_granted("/srv/notes.txt").as_str())
    );
    assert!(s.grants().is_empty());

    // At a terminal: asked with the model's reason; the answer is logged,
    // "always" as yes (a grant is this once, and not remembered).
    let asking = Settings {
        interactive: true,
        ..settings()
    };
    let mut s = Session::start(header(), asking.clone()).0;
    let cmds = asked(&mut s);
    assert_eq!(
        cmds.last(),
        Some(&Command::User(UserCommand::AskGrant {
            id: "g".into(),
            path: "/srv/notes.txt".into(),
            reason: Some("the notes".into()),
        }))
    );
    let cmds = s
        .handle(Input::User(UserInput::Answered {
            id: "g".into(),
            answer: crate::edit::Answer::Always,
            now: datetime!(2026-12-02 10:00 UTC),
        }))
        .commands;
    let approved: Vec<_> = cmds
        .iter()
        .filter_map(|c| match c {
            Command::Log(LogCommand::Append(Record::Approved(a))) => Some(a.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(approved.len(), 1);
    assert_eq!(
        (
            approved[0].answer,
            approved[0].tool.as_str(),
            approved[0].path.as_str()
        ),
        (crate::edit::Answer::Yes, approval::GRANT, "/srv/notes.txt")
    );
    assert_eq!(
        result_of(&cmds, "g"),
        Some(approval::granted("/srv/notes.txt").as_str())
    );
    assert!(s.grants().contains("/srv/notes.txt"));
    let folded = State::fold(
        &std::iter::once(Record::Header(header()))
            .chain(cmds.iter().filter_map(|c| match c {
                Command::Log(LogCommand::Append(r)) => Some(r.clone()),
                _ => None,
            }))
            .collect::<Vec<_>>(),
    );
    assert!(!folded.shell_always && !folded.edits_always);
    // Nor does an "always" for a grant that a log holds turn edits on.
    let always = Record::Approved(crate::record::Approved {
        at: datetime!(2026-12-02 10:00 UTC),
        call: "g".into(),
        path: "/srv/notes.txt".into(),
        answer: crate::edit::Answer::Always,
        tool: approval::GRANT.into(),
        rule: None,
    });
    let folded = State::fold(&[Record::Header(header()), always]);
    assert!(!folded.shell_always && !folded.edits_always);

    // "no" is the call's result.
    let mut s = Session::start(header(), asking.clone()).0;
    asked(&mut s);
    let cmds = s
        .handle(Input::User(UserInput::Answered {
            id: "g".into(),
            answer: crate::edit::Answer::No,
            now: datetime!(2026-12-02 10:00 UTC),
        }))
        .commands;
    assert_eq!(
        result_of(&cmds, "g"),
        Some(approval::not_granted("/srv/notes.txt").as_str())
    );
    assert!(s.grants().is_empty());

    // Ctrl-C while the question is open ends the call; a later call under
    // the same id is its own (here a shell command, asked about as one).
    let ask_shell = Settings {
        allow_shell: false,
        ..asking
    };
    let mut s = Session::start(header(), ask_shell).0;
    asked(&mut s);
    let _ = s
        .handle(Input::User(UserInput::Interrupted {
            partial: String::new(),
            now: datetime!(2026-12-02 10:00 UTC),
        }))
        .commands;
    user(&mut s, "list");
    let cmds = reply(&mut s, "", &[("g", "shell", r#"{"command":"ls"}"#)]);
    assert_eq!(kinds(&cmds).last(), Some(&"ask"));
    let cmds = s
        .handle(Input::User(UserInput::Answered {
            id: "g".into(),
            answer: crate::edit::Answer::Yes,
            now: datetime!(2026-12-02 10:00 UTC),
        }))
        .commands;
    assert_eq!(kinds(&cmds), ["other", "run"]);
    assert!(s.grants().is_empty());
}

// ---------------------------------------------------------------------------
// Small windows: the answer's room on the wire, summaries that always
// progress, and a stop that names what is too big.

/// A session at a 4,096-token window, as local models run.
fn small(window: u64) -> Session {
    let mut s = start();
    s.state.window = window;
    s
}

fn summarize_request(cmds: &[Command]) -> Option<&Request> {
    cmds.iter().find_map(|c| match c {
        Command::Model(ModelCommand::Summarize(r)) => Some(r),
        _ => None,
    })
}

fn call_request(cmds: &[Command]) -> Option<&Request> {
    cmds.iter().find_map(|c| match c {
        Command::Model(ModelCommand::Call(r)) => Some(r),
        _ => None,
    })
}

#[test]
fn every_request_says_how_long_its_answer_may_be() {
    let mut s = small(4_096);
    let cmds = user(&mut s, "hello");
    let body: serde_json::Value =
        serde_json::from_str(&call_request(&cmds).unwrap().body.text()).unwrap();
    // The provider of the test header speaks Chat Completions.
    assert_eq!(body["max_tokens"], compact::room(4_096), "{body}");
    // A version-1 file rebuilds its requests as they were sent: no limit.
    let mut old = small(4_096);
    if let Some(h) = old.state.header.as_mut() {
        h.version = 1;
    }
    let cmds = user(&mut old, "hello");
    let body: serde_json::Value =
        serde_json::from_str(&call_request(&cmds).unwrap().body.text()).unwrap();
    assert!(body.get("max_tokens").is_none(), "{body}");
}

#[test]
fn requests_tell_the_prompt_cache_from_version_3_only_for_the_openai_preset() {
    let body = |s: &mut Session| -> serde_json::Value {
        let cmds = user(s, "hello");
        serde_json::from_str(&call_request(&cmds).unwrap().body.text()).unwrap()
    };
    let mut s = small(4_096);
    s.state.provider = "openai".into();
    let id = s.state.header.as_ref().unwrap().id.clone();
    assert_eq!(body(&mut s)["prompt_cache_key"], id.as_str());
    // Other Chat Completions servers get nothing new.
    let mut local = small(4_096);
    local.state.provider = "ollama".into();
    assert!(body(&mut local).get("prompt_cache_key").is_none());
    // Anthropic's requests carry breakpoints.
    let mut claude = small(4_096);
    claude.state.provider = "anthropic".into();
    assert!(body(&mut claude).to_string().contains("cache_control"));
    // A version-2 file rebuilds its requests as they were sent: unmarked.
    for provider in ["openai", "anthropic"] {
        let mut old = small(4_096);
        old.state.provider = provider.into();
        if let Some(h) = old.state.header.as_mut() {
            h.version = 2;
        }
        let text = body(&mut old).to_string();
        assert!(
            !text.contains("cache_control") && !text.contains("prompt_cache_key"),
            "{text}"
        );
    }
}

#[test]
fn an_answer_larger_than_the_window_is_squeezed_and_the_turn_goes_on() {
    let (mut s, mut log) = Session::start(
        Header {
            window: 4_096,
            ..header()
        },
        settings(),
    );
    let mut keep = |cmds: Vec<Command>| {
        log.extend(cmds.iter().cloned());
        cmds
    };
    keep(user(&mut s, "write it"));
    // One answer of 6 MB: far larger than the window.
    let huge = format!("{{\"command\":\"echo {}\"}}", "x".repeat(6 << 20));
    keep(reply(&mut s, "", &[("w", "shell", &huge)]));
    // Its request goes out all the same: the call cut to head and tail,
    // the whole of it in a spill file this run may read.
    let cmds = keep(done(&mut s, "w", "error: the command was too long", None));
    let spilled = cmds.iter().find_map(|c| match c {
        Command::File(FileCommand::Spill { content, .. }) => Some(content.len()),
        _ => None,
    });
    assert!(spilled.is_some_and(|n| n > 6 << 20), "{:?}", kinds(&cmds));
    let call = call_request(&cmds).unwrap_or_else(|| panic!("{:?}", kinds(&cmds)));
    assert!(compact::fits(
        compact::estimate(call.body.len(), &s.state.totals),
        4_096
    ));
    assert!(call.body.text().contains("to fit the context window"));
    // The log has the call whole; folding it cuts the call the same way.
    let records: Vec<Record> = log
        .into_iter()
        .filter_map(|c| match c {
            Command::Log(LogCommand::Append(r)) => Some(r),
            _ => None,
        })
        .collect();
    let folded = State::fold(&records);
    assert_eq!(folded.request().body, call.body);
}

#[test]
fn a_system_prompt_larger_than_the_window_is_named_and_later_turns_are_not_stuck() {
    let mut s = small(4_096);
    s.parts.memory = vec![crate::memory::MemoryFile {
        scope: crate::memory::Scope::Global,
        name: "big.md".into(),
        content: "remember this well. ".repeat(1_000),
    }];
    let cmds = user(&mut s, "hello");
    let line = cmds
        .iter()
        .find_map(|c| match c {
            Command::Log(LogCommand::Append(Record::Stopped(st))) => {
                Some(guard::describe(&st.reason))
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("{cmds:#?}"));
    assert!(line.contains("the system prompt alone"), "{line}");
    assert!(line.contains("--bare"), "{line}");
    // With the memory gone (edited by the user), the next turn goes out.
    s.parts.memory.clear();
    let cmds = user(&mut s, "hello again");
    assert!(call_request(&cmds).is_some(), "{cmds:#?}");
}

#[test]
fn a_message_larger_than_the_window_is_named_and_the_next_turn_is_answered() {
    let mut s = small(4_096);
    let cmds = user(&mut s, &"paste ".repeat(10_000));
    assert!(
        cmds.iter().any(|c| matches!(
            c,
            Command::Log(LogCommand::Append(Record::Stopped(Stopped {
                reason: StopReason::TooLarge {
                    largest: Some((FixedKind::Message, _)),
                    ..
                },
                ..
            })))
        )),
        "{cmds:#?}"
    );
    // The next, short turn: the big message is summarized (cut for the
    // summary), and once the notes are in, the request goes out.
    let cmds = user(&mut s, "short question");
    let summary = summarize_request(&cmds).unwrap_or_else(|| panic!("{cmds:#?}"));
    assert!(compact::fits(
        compact::estimate(summary.body.len(), &s.state.totals),
        4_096
    ));
    let cmds = s
        .handle(Input::Model(ModelInput::Summarized {
            reply: Reply {
                text: "Facts: the user pasted a long text".into(),
                ..Reply::default()
            },
            new_id: "s2".into(),
            now: datetime!(2026-12-02 10:05 UTC),
        }))
        .commands;
    let call = call_request(&cmds).unwrap_or_else(|| panic!("{cmds:#?}"));
    assert!(compact::fits(
        compact::estimate(call.body.len(), &s.state.totals),
        4_096
    ));
}

#[test]
fn a_compaction_of_many_pieces_says_its_cost_first() {
    // Forty turns of 1,000 tokens under a large window, then resumed
    // under 4k: the part to summarize takes many pieces.
    let mut s = small(1_000_000);
    for i in 0..40 {
        user(&mut s, &format!("question {i} {}", "q".repeat(2_000)));
        reply(&mut s, &format!("answer {i} {}", "a".repeat(2_000)), &[]);
    }
    let mut s2 = Session::new(s.state.clone(), settings());
    s2.state.window = 4_096;
    let cmds = user(&mut s2, "next");
    let shown: Vec<&str> = cmds
        .iter()
        .filter_map(|c| match c {
            Command::User(UserCommand::Show(text)) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert!(
        shown
            .iter()
            .any(|l| l.starts_with("compaction: this sends about ") && l.contains("input tokens")),
        "{shown:#?}"
    );
}

#[test]
fn a_costly_compaction_is_asked_about_at_a_terminal() {
    let grown = || {
        let mut s = small(1_000_000);
        for i in 0..40 {
            user(&mut s, &format!("question {i} {}", "q".repeat(2_000)));
            reply(&mut s, &format!("answer {i} {}", "a".repeat(2_000)), &[]);
        }
        let mut s = Session::new(
            s.state.clone(),
            Settings {
                confirm_costly: true,
                interactive: true,
                ..settings()
            },
        );
        s.state.window = 4_096;
        s
    };
    let now = datetime!(2026-12-02 10:05 UTC);
    // Yes: the compaction runs, in pieces.
    let mut s = grown();
    let cmds = user(&mut s, "next");
    assert!(
        kinds(&cmds).ends_with(&["show", "confirm"]),
        "{:?}",
        kinds(&cmds)
    );
    assert!(s.busy());
    let cmds = s
        .handle(Input::User(UserInput::Confirmed { yes: true, now }))
        .commands;
    assert!(kinds(&cmds).contains(&"summarize"), "{:?}", kinds(&cmds));
    // Each piece says which it is, of about how many (issue 32).
    let said: Vec<&String> = cmds
        .iter()
        .filter_map(|c| match c {
            Command::User(UserCommand::Show(text)) => Some(text),
            _ => None,
        })
        .collect();
    assert!(
        said.iter()
            .any(|t| t.starts_with("compaction: piece 1 of about ")),
        "{said:?}"
    );
    // No: nothing is summarized; the turn goes on as far as it fits.
    let mut s = grown();
    user(&mut s, "next");
    let cmds = s
        .handle(Input::User(UserInput::Confirmed { yes: false, now }))
        .commands;
    let k = kinds(&cmds);
    assert!(
        !k.contains(&"summarize") && !k.contains(&"confirm"),
        "{k:?}"
    );
    assert!(!s.busy(), "the turn ended: {k:?}");
}

#[test]
fn a_counted_record_is_read_back_and_calibrates_the_fold() {
    let counted = Record::Counted(crate::record::Counted {
        at: datetime!(2026-12-04 10:00 UTC),
        bytes: 15_008,
        tokens: 2_322,
    });
    let line = counted.to_line();
    assert_eq!(Record::parse_line(&line).unwrap(), counted, "{line}");
    let folded = State::fold(&[Record::Header(header()), counted]);
    assert_eq!(
        (folded.totals.cal_bytes, folded.totals.cal_tokens),
        (15_008, 2_322)
    );
    // The very request counted is its count, no margin.
    assert_eq!(compact::estimate(15_008, &folded.totals), 2_322);
}

/// A count the server answered, or did not (tokens 0, format 7 on), is a
/// request sent: replay rebuilds it where its `counted` record is, as the
/// request due then, unstreamed for one token.
#[test]
fn replay_rebuilds_a_count_request_at_its_record() {
    let at = datetime!(2026-12-04 10:00 UTC);
    let head = Record::Header(Header {
        window: 4_096,
        ..header()
    });
    let user = Record::Message(Message::user(at, "hello"));
    let due = State::fold(&[head.clone(), user.clone()]).request();
    let count = due.counting().expect("the Chat Completions wire counts");
    for tokens in [0, 2_322] {
        let counted = Record::Counted(crate::record::Counted {
            at,
            bytes: due.body.len() as u64,
            tokens,
        });
        let answer = Record::Message(Message::assistant(at, "hi"));
        let log = [head.clone(), user.clone(), counted, answer];
        let rebuilt: Vec<String> = crate::state::requests(&log)
            .iter()
            .map(|r| r.body.text())
            .collect();
        assert_eq!(rebuilt, [count.text(), due.body.text()], "{tokens}");
        assert!(count.text().contains(r#""max_tokens":1"#));
    }
    // A count of none calibrates nothing.
    let none = Record::Counted(crate::record::Counted {
        at,
        bytes: 15_008,
        tokens: 0,
    });
    let folded = State::fold(&[head, none]);
    assert_eq!((folded.totals.cal_bytes, folded.totals.cal_tokens), (0, 0));
}

/// A `write_file` of `path` in a session with `allow_edits`, at a
/// terminal or not, opened as the shell found it; the commands after.
fn write_opened(interactive: bool, opened: Opened) -> (Session, Vec<Command>) {
    let settings = Settings {
        allow_edits: true,
        interactive,
        ..settings()
    };
    let mut s = Session::start(header(), settings).0;
    user(&mut s, "write it");
    let args = format!(r#"{{"path":"{}","content":"x\n"}}"#, opened.shown);
    let cmds = reply(&mut s, "", &[("w1", "write_file", &args)]);
    assert_eq!(kinds(&cmds).last(), Some(&"open"));
    let cmds = s
        .handle(Input::File(FileInput::Opened {
            id: "w1".into(),
            opened: Ok(opened),
            keys: Default::default(),
            now: datetime!(2026-12-02 10:03 UTC),
        }))
        .commands;
    (s, cmds)
}

#[test]
fn a_write_outside_the_tree_is_asked_at_a_terminal_and_refused_without_one() {
    let outside = |path: &str| Opened {
        path: path.into(),
        shown: path.into(),
        outside: true,
        ..Opened::default()
    };
    // Without a terminal, --allow-edits does not reach outside the tree.
    let (_, cmds) = write_opened(false, outside("/granted/k"));
    let said = result_of(&cmds, "w1").unwrap();
    assert!(said.contains("is outside the working tree"), "{said}");
    assert!(!kinds(&cmds).contains(&"stage"));
    // At a terminal it is asked about, the question naming it outside.
    let (mut s, cmds) = write_opened(true, outside("/granted/k"));
    let asked = cmds.iter().find_map(|c| match c {
        Command::File(FileCommand::Stage {
            shown, ask, once, ..
        }) => Some((shown.clone(), *ask, *once)),
        _ => None,
    });
    assert_eq!(
        asked,
        Some(("/granted/k (outside the working tree)".into(), true, true))
    );
    // "always" there is a yes for this write only, logged as such.
    let cmds = s
        .handle(Input::File(FileInput::Staged {
            id: "w1".into(),
            answer: Some(crate::edit::Answer::Always),
            after: "sha256:after".into(),
            error: None,
            now: datetime!(2026-12-02 10:04 UTC),
        }))
        .commands;
    let approved = cmds.iter().find_map(|c| match c {
        Command::Log(LogCommand::Append(Record::Approved(a))) => Some(a.clone()),
        _ => None,
    });
    let approved = approved.expect("an approved record");
    assert_eq!(
        (approved.answer, approved.tool.as_str()),
        (crate::edit::Answer::Yes, "outside")
    );
    assert!(!s.state().edits_always);
    // Revolve's own files: refused even at a terminal.
    let own = Opened {
        path: "/state/spills/s1/1.txt".into(),
        shown: "/state/spills/s1/1.txt".into(),
        outside: true,
        own: true,
        ..Opened::default()
    };
    let (_, cmds) = write_opened(true, own);
    let said = result_of(&cmds, "w1").unwrap();
    assert!(said.contains("revolve's own state folder"), "{said}");
}

#[test]
fn an_unnamed_session_gets_an_address_that_stays_unlisted() {
    let now = datetime!(2026-12-02 10:01 UTC);
    let unnamed = Header {
        name: None,
        named: false,
        ..header()
    };
    let mut s = Session::start(unnamed, settings()).0;
    assert_eq!(s.state().name, None);
    let used = BTreeSet::from(["amber".to_owned()]);
    let cmds = s
        .handle(Input::User(UserInput::Address {
            used: used.clone(),
            now,
        }))
        .commands;
    assert_eq!(kinds(&cmds), ["other", "show"]);
    assert_eq!(s.state().name.as_deref(), Some("birch"));
    assert!(!s.state().named, "a generated name is not listed");
    // A session with a name keeps it.
    assert!(s
        .handle(Input::User(UserInput::Address { used, now }))
        .commands
        .is_empty());
    assert_eq!(s.state().name.as_deref(), Some("birch"));
    // The fold gives the same.
    let records: Vec<Record> = cmds
        .iter()
        .filter_map(|c| match c {
            Command::Log(LogCommand::Append(r)) => Some(r.clone()),
            _ => None,
        })
        .collect();
    assert!(matches!(&records[..], [Record::Renamed(r)] if r.generated));
}

fn mcp_session(settings: Settings) -> Session {
    let mut s = Session::start(header(), settings).0;
    let tools = crate::mcp::offered(&[(
        "ev".into(),
        vec![crate::mcp::Listed {
            name: "echo".into(),
            description: Some("echoes".into()),
            input_schema: serde_json::json!({"type": "object"}),
        }],
    )]);
    let now = datetime!(2026-12-02 10:00 UTC);
    let cmds = s.handle(offer_mcp(tools.clone(), now)).commands;
    assert!(matches!(
        &cmds[..],
        [Command::Log(LogCommand::Append(Record::McpTools(_)))]
    ));
    // The same list again is not logged again.
    assert!(s.handle(offer_mcp(tools, now)).commands.is_empty());
    s
}

#[test]
fn mcp_tools_are_offered_and_called_when_allowed() {
    let mut s = mcp_session(Settings {
        allow_mcp: true,
        ..settings()
    });
    let cmds = user(&mut s, "echo");
    let Some(Command::Model(ModelCommand::Call(request))) = cmds.last() else {
        panic!("{:?}", kinds(&cmds))
    };
    assert!(
        request.body.text().contains("\"name\":\"mcp__ev__echo\""),
        "{}",
        request.body
    );
    let cmds = reply(
        &mut s,
        "",
        &[("c1", "mcp__ev__echo", r#"{"message":"hi"}"#)],
    );
    match cmds.last() {
        Some(Command::Tool(ToolCommand::CallMcp {
            server,
            tool,
            arguments,
            timeout_s,
            ..
        })) => {
            assert_eq!((server.as_str(), tool.as_str()), ("ev", "echo"));
            assert_eq!(
                (arguments.as_str(), *timeout_s),
                (r#"{"message":"hi"}"#, 60)
            );
        }
        other => panic!("{other:?}"),
    }
    let cmds = done(&mut s, "c1", &"y".repeat(500), None);
    // Through the same spill as every result.
    assert!(kinds(&cmds).contains(&"spill"), "{:?}", kinds(&cmds));
}

#[test]
fn mcp_calls_are_refused_without_a_terminal_asked_at_one_and_ruled() {
    // Pipe mode, no flag: refused, the user told which flag allows it.
    let mut s = mcp_session(settings());
    user(&mut s, "echo");
    let cmds = reply(&mut s, "", &[("c1", "mcp__ev__echo", "{}")]);
    assert!(cmds
        .iter()
        .any(|c| matches!(c, Command::User(UserCommand::Show(t)) if t.contains("--allow-mcp"))));
    assert!(cmds.iter().any(|c| matches!(c,
        Command::Log(LogCommand::Append(Record::Message(m))) if m.content == crate::mcp::REFUSED)));
    // A terminal: asked; "always" is remembered for the tool.
    let mut s = mcp_session(Settings {
        interactive: true,
        ..settings()
    });
    user(&mut s, "echo");
    let cmds = reply(&mut s, "", &[("c1", "mcp__ev__echo", "{}")]);
    assert!(
        matches!(cmds.last(), Some(Command::User(UserCommand::Ask { command, .. })) if command == "mcp__ev__echo")
    );
    let cmds = s
        .handle(Input::User(UserInput::Answered {
            id: "c1".into(),
            answer: crate::edit::Answer::Always,
            now: datetime!(2026-12-02 10:03 UTC),
        }))
        .commands;
    assert!(
        matches!(
            cmds.last(),
            Some(Command::Tool(ToolCommand::CallMcp { .. }))
        ),
        "{:?}",
        kinds(&cmds)
    );
    assert!(s.state().mcp_always.contains("mcp__ev__echo"));
    // A rule: allowed in pipe mode, logged with the rule; a deny rule wins.
    let rules = crate::rules::Rules::parse(&["mcp__ev__*".into()], &[]).unwrap();
    let mut s = mcp_session(Settings {
        rules,
        ..settings()
    });
    user(&mut s, "echo");
    let cmds = reply(&mut s, "", &[("c1", "mcp__ev__echo", "{}")]);
    assert!(cmds.iter().any(|c| matches!(c,
        Command::Log(LogCommand::Append(Record::Approved(a))) if a.rule.as_deref() == Some("mcp__ev__*"))));
    assert!(matches!(
        cmds.last(),
        Some(Command::Tool(ToolCommand::CallMcp { .. }))
    ));
    let rules = crate::rules::Rules::parse(&[], &["mcp__ev__echo".into()]).unwrap();
    let mut s = mcp_session(Settings {
        rules,
        allow_mcp: true,
        ..settings()
    });
    user(&mut s, "echo");
    let cmds = reply(&mut s, "", &[("c1", "mcp__ev__echo", "{}")]);
    assert!(!cmds
        .iter()
        .any(|c| matches!(c, Command::Tool(ToolCommand::CallMcp { .. }))));
    // A tool no server offers is an error result, never a call.
    let cmds = reply(&mut s, "", &[("c2", "mcp__ev__nope", "{}")]);
    assert!(cmds.iter().any(|c| matches!(c,
        Command::Log(LogCommand::Append(Record::Message(m))) if m.content.contains("no tool named \"mcp__ev__nope\""))));
}

#[test]
fn the_offered_mcp_tools_are_rebuilt_by_replay() {
    let mut s = mcp_session(Settings {
        allow_mcp: true,
        ..settings()
    });
    let mut records = vec![Record::Header(header())];
    let mut sent = Vec::new();
    let mut take = |cmds: Vec<Command>, records: &mut Vec<Record>| {
        for c in cmds {
            match c {
                Command::Log(LogCommand::Append(r)) => records.push(r),
                Command::Model(ModelCommand::Call(r)) => sent.push(r.body.text()),
                _ => {}
            }
        }
    };
    records.push(Record::McpTools(crate::record::McpTools {
        at: datetime!(2026-12-02 10:00 UTC),
        tools: s.state().mcp_tools.clone(),
    }));
    take(user(&mut s, "echo"), &mut records);
    take(
        reply(&mut s, "", &[("c1", "mcp__ev__echo", "{}")]),
        &mut records,
    );
    take(done(&mut s, "c1", "hi", None), &mut records);
    // Not while a request is in flight.
    let none = s
        .handle(offer_mcp(Vec::new(), datetime!(2026-12-02 10:04 UTC)))
        .commands;
    assert!(none.is_empty());
    take(reply(&mut s, "done", &[]), &mut records);
    // The list changes: a record, and the next request offers no MCP tool.
    take(
        s.handle(offer_mcp(Vec::new(), datetime!(2026-12-02 10:04 UTC)))
            .commands,
        &mut records,
    );
    take(user(&mut s, "again"), &mut records);
    take(reply(&mut s, "ok", &[]), &mut records);
    let rebuilt: Vec<String> = crate::state::requests(&records)
        .into_iter()
        .map(|r| r.body.text())
        .collect();
    assert!(rebuilt == sent, "the rebuilt requests differ");
    let offers = |b: &String| b.contains(r#""description":"echoes""#);
    assert!(offers(&sent[0]) && offers(&sent[1]) && !offers(&sent[2]));
}

#[test]
fn model_switches_are_logged_and_keep_the_window_of_an_unknown_model() {
    let mut s = start();
    let window = s.state().window;
    let now = datetime!(2026-12-02 10:05 UTC);
    let cmds = s
        .handle(Input::User(UserInput::Model {
            model: "my-model".into(),
            now,
        }))
        .commands;
    assert!(matches!(
        &cmds[0],
        Command::Log(LogCommand::Append(Record::ModelChanged(m))) if m.model == "my-model" && m.window == window
    ));
    assert_eq!(s.state().model, "my-model");
    // The same model again, or no name: nothing logged.
    for model in ["my-model", " ", "two words"] {
        let cmds = s
            .handle(Input::User(UserInput::Model {
                model: model.into(),
                now,
            }))
            .commands;
        assert!(
            cmds.iter()
                .all(|c| matches!(c, Command::User(UserCommand::Show(_)))),
            "{model}: {cmds:?}"
        );
    }
    // A known model brings its window.
    let mut s = Session::start(
        header(),
        Settings {
            models: crate::models::Table::shipped(),
            ..settings()
        },
    )
    .0;
    let _ = s
        .handle(Input::User(UserInput::Model {
            model: "claude-sonnet-4-5".into(),
            now,
        }))
        .commands;
    assert_eq!(s.state().window, 200_000);
}

#[test]
fn what_a_tool_did_travels_in_its_result_and_is_logged_before_it_in_order() {
    let mut s = start();
    user(&mut s, "run");
    reply(&mut s, "", &[("c1", "shell", r#"{"command":"touch a"}"#)]);
    let effects = ToolEffects {
        changes: vec![crate::edit::Change {
            path: "/work/a".into(),
            before: None,
            after: Some("sha256:a".into()),
            diff: Default::default(),
        }],
        untracked: true,
        seen: Some(Box::new(("/work/b".into(), "sha256:b".into()))),
        memory: Some(MemoryWrite {
            entry: "e1".into(),
            files: vec!["project/x.md: created: x".into()],
        }),
        background: None,
        image: None,
        fetched: None,
    };
    let done = |s: &mut Session, id: &str| {
        s.handle(Input::Tool(ToolInput::Done {
            parts: None,
            id: id.into(),
            output: "ok".into(),
            grant: None,
            effects: effects.clone(),
            now: datetime!(2026-12-02 10:03 UTC),
        }))
        .commands
    };
    let cmds = done(&mut s, "c1");
    let logged: Vec<&str> = cmds
        .iter()
        .map(|c| match c {
            Command::Log(LogCommand::Append(Record::Edit(e)))
                if e.by == crate::record::EditBy::Shell && e.call == "c1" =>
            {
                "edit"
            }
            Command::User(UserCommand::Show(t)) if t.contains("not in a git repository") => {
                "untracked"
            }
            Command::Log(LogCommand::Append(Record::Seen(seen))) if seen.path == "/work/b" => {
                "seen"
            }
            Command::Log(LogCommand::Append(Record::MemoryChanged(m)))
                if m.by == crate::record::ChangedBy::Remember =>
            {
                "memory"
            }
            Command::Log(LogCommand::Append(Record::Message(m))) if m.role == Role::Tool => {
                "result"
            }
            _ => "next",
        })
        .collect();
    assert_eq!(
        logged,
        ["edit", "untracked", "seen", "memory", "result", "next"]
    );
    // Outside git is told once a run; a result for no call running logs
    // none of its changes.
    reply(&mut s, "", &[("c2", "shell", r#"{"command":"touch a"}"#)]);
    let cmds = done(&mut s, "c2");
    assert!(!cmds
        .iter()
        .any(|c| matches!(c, Command::User(UserCommand::Show(t)) if t.contains("not in a git repository"))));
    let stale = done(&mut s, "c9");
    assert!(!stale
        .iter()
        .any(|c| matches!(c, Command::Log(LogCommand::Append(Record::Edit(_))))));
}

/// The MCP tools the servers offer now, as a line with nothing in it
/// carries them.
fn offer_mcp(tools: Vec<crate::mcp::McpTool>, now: time::OffsetDateTime) -> Input {
    Input::User(UserInput::Line {
        text: String::new(),
        context: TurnContext {
            mcp_tools: Some(tools),
            ..TurnContext::default()
        },
        now,
    })
}

#[test]
fn task_calls_go_out_together_and_their_children_come_back_in_order() {
    let mut s = start();
    user(&mut s, "split it");
    let task = |d: &str| format!(r#"{{"description":"{d}","prompt":"do {d}"}}"#);
    let (a, b) = (task("a"), task("b"));
    let cmds = reply(
        &mut s,
        "",
        &[
            ("c1", "task", &a),
            ("c2", "task", &b),
            ("c3", "agent_info", "{}"),
        ],
    );
    let tasks = cmds
        .iter()
        .find_map(|c| match c {
            Command::Tool(ToolCommand::Delegate { tasks }) => Some(tasks.clone()),
            _ => None,
        })
        .expect("one delegation");
    let ids: Vec<&str> = tasks.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["c1", "c2"], "the task calls at the front, together");
    assert_eq!(
        tasks[0].tools,
        crate::agents::READ_ONLY_TOOLS.map(String::from)
    );
    assert!(s.busy());
    let end = |id: &str, answer: &str| TaskEnd {
        id: id.into(),
        answer: answer.into(),
        record: crate::record::Delegated {
            at: datetime!(2026-12-02 10:03 UTC),
            call: id.into(),
            child: format!("kid-{id}"),
            log: format!("/logs/kid-{id}.jsonl"),
            description: String::new(),
            subagent: None,
            requests: 2,
            tokens_in: 100,
            tokens_out: 10,
            cost: 7,
        },
    };
    let requests = s.state().totals().requests;
    let cmds = s
        .handle(Input::Tool(ToolInput::Delegated {
            ends: vec![end("c1", "found a"), end("c2", "found b")],
            interrupted: false,
            now: datetime!(2026-12-02 10:04 UTC),
        }))
        .commands;
    let k = kinds(&cmds);
    assert_eq!(&k[..4], ["other", "result", "other", "result"], "{k:?}");
    assert_eq!(k[4], "run", "then the next call, agent_info: {k:?}");
    assert_eq!(
        s.state().totals().requests,
        requests + 4,
        "the children's requests count"
    );
    assert_eq!(s.state().agents().delegated.len(), 2);
}

#[test]
fn a_child_refuses_the_tools_it_was_not_given() {
    let mut s = start();
    s.spawned(crate::record::Spawned {
        at: datetime!(2026-12-02 10:00 UTC),
        parent: "p".into(),
        call: "c0".into(),
        subagent: None,
        tools: vec!["read_file".into()],
    });
    user(&mut s, "go");
    let cmds = reply(
        &mut s,
        "",
        &[("c1", "write_file", r#"{"path":"x","content":"y"}"#)],
    );
    let refused = cmds.iter().find_map(|c| match c {
        Command::Log(LogCommand::Append(Record::Message(m))) if m.role == Role::Tool => {
            Some(m.content.clone())
        }
        _ => None,
    });
    assert!(
        refused.is_some_and(|r| r.starts_with("error: write_file is not among")),
        "{cmds:?}"
    );
}

// ---------------------------------------------------------------------------
// Hooks and the plan (issue 43)

fn hooked(config: serde_json::Value) -> Session {
    hooked_with(config, settings())
}

/// A session with the hooks of `config` and the rest of `settings`.
fn hooked_with(config: serde_json::Value, settings: Settings) -> Session {
    let (hooks, _) = crate::hooks::Hooks::parse(&config, &crate::hooks::Origin::Config).unwrap();
    Session::start(header(), Settings { hooks, ..settings }).0
}

fn hook_ran(s: &mut Session, code: i32, stdout: &str, stderr: &str) -> Vec<Command> {
    s.handle(Input::Tool(ToolInput::Hooked {
        ran: crate::hooks::Ran {
            ended: crate::hooks::Ended::Exited(code),
            stdout: stdout.into(),
            stderr: stderr.into(),
        },
        now: datetime!(2026-12-02 10:04 UTC),
    }))
    .commands
}

#[test]
fn a_pre_tool_use_hook_runs_before_the_call_and_its_block_is_the_result() {
    let mut s = hooked(serde_json::json!({"PreToolUse": [{"matcher": "shell",
        "hooks": [{"command": "./no-rm.sh"}]}]}));
    user(&mut s, "clean");
    let cmds = reply(&mut s, "", &[("c1", "shell", r#"{"command":"rm -rf x"}"#)]);
    assert_eq!(kinds(&cmds)[2..], ["hook"]);
    let cmds = hook_ran(&mut s, 2, "", "no rm");
    assert_eq!(kinds(&cmds), ["other", "result", "call"]);
    assert_eq!(
        result_of(&cmds, "c1"),
        Some("error: not run: a PreToolUse hook blocked this call: no rm")
    );
    // A rewritten input is what runs; the call itself stays as made.
    reply(&mut s, "", &[("c2", "shell", r#"{"command":"echo a"}"#)]);
    let cmds = hook_ran(&mut s, 0, r#"{"updatedInput":{"command":"echo b"}}"#, "");
    let run = cmds.iter().find_map(|c| match c {
        Command::Tool(ToolCommand::Run {
            tool, arguments, ..
        }) => Some((tool.clone(), arguments.clone())),
        _ => None,
    });
    let (tool, arguments) = run.expect("the call runs");
    assert_eq!(arguments, r#"{"command":"echo b"}"#);
    assert!(matches!(tool, Tool::Shell { command, .. } if command == "echo b"));
    // Its result does not run the hooks again.
    let cmds = done(&mut s, "c2", "b", None);
    assert_eq!(kinds(&cmds), ["result", "call"]);
}

/// A shell call a `PreToolUse` hook rewrote, refused by the sandbox, at
/// a terminal: the user is asked about the rewritten command, and a yes
/// runs that outside, not the model's.
#[test]
fn a_rewritten_command_the_sandbox_refused_is_asked_about_and_run_outside_as_rewritten() {
    let mut s = hooked_with(
        serde_json::json!({"PreToolUse": [{"matcher": "shell",
            "hooks": [{"command": "./safer.sh"}]}]}),
        Settings {
            interactive: true,
            ..settings()
        },
    );
    user(&mut s, "clean");
    reply(
        &mut s,
        "",
        &[("c1", "shell", r#"{"command":"rm -rf build"}"#)],
    );
    let rewritten = r#"{"command":"trash build"}"#;
    hook_ran(&mut s, 0, &format!(r#"{{"updatedInput":{rewritten}}}"#), "");
    let cmds = s
        .handle(Input::Tool(ToolInput::SandboxRefused {
            id: "c1".into(),
            output: "trash: Read-only file system".into(),
            effects: ToolEffects::default(),
            parts: None,
            now: datetime!(2026-12-02 10:05 UTC),
        }))
        .commands;
    let asked = cmds.iter().find_map(|c| match c {
        Command::User(UserCommand::AskOutside { command, .. }) => Some(command.clone()),
        _ => None,
    });
    assert_eq!(asked.as_deref(), Some("trash build"), "{cmds:?}");
    let cmds = s
        .handle(Input::User(UserInput::Outside {
            id: "c1".into(),
            yes: true,
            now: datetime!(2026-12-02 10:06 UTC),
        }))
        .commands;
    let run = cmds.iter().find_map(|c| match c {
        Command::Tool(ToolCommand::Run {
            tool,
            arguments,
            sandbox,
            ..
        }) => Some((tool.clone(), arguments.clone(), *sandbox)),
        _ => None,
    });
    let (tool, arguments, sandbox) = run.expect("it runs again outside");
    assert_eq!(arguments, rewritten);
    assert!(matches!(tool, Tool::Shell { command, .. } if command == "trash build"));
    assert_eq!(sandbox, Sandboxing::Off);
}

/// A `write_file` whose content a `PreToolUse` hook rewrote: the file
/// opened is staged with the rewritten content, not the model's.
#[test]
fn a_rewritten_write_is_staged_as_rewritten() {
    let mut s = hooked_with(
        serde_json::json!({"PreToolUse": [{"matcher": "write_file",
            "hooks": [{"command": "./redact.sh"}]}]}),
        Settings {
            allow_edits: true,
            ..settings()
        },
    );
    user(&mut s, "write it");
    reply(
        &mut s,
        "",
        &[(
            "w1",
            "write_file",
            r#"{"path":"a.txt","content":"key=sk-1\n"}"#,
        )],
    );
    let cmds = hook_ran(
        &mut s,
        0,
        r#"{"updatedInput":{"path":"a.txt","content":"key=[redacted]\n"}}"#,
        "",
    );
    assert_eq!(kinds(&cmds).last(), Some(&"open"), "{cmds:?}");
    let cmds = s
        .handle(Input::File(FileInput::Opened {
            id: "w1".into(),
            opened: Ok(Opened {
                path: "/work/a.txt".into(),
                shown: "a.txt".into(),
                ..Opened::default()
            }),
            keys: Default::default(),
            now: datetime!(2026-12-02 10:05 UTC),
        }))
        .commands;
    let staged = cmds.iter().find_map(|c| match c {
        Command::File(FileCommand::Stage { after, .. }) => Some(after.clone()),
        _ => None,
    });
    assert_eq!(
        staged.as_deref(),
        Some(&b"key=[redacted]\n"[..]),
        "{cmds:?}"
    );
}

#[test]
fn a_stop_hook_sends_the_turn_on_until_the_bound() {
    let mut s = hooked(serde_json::json!({"Stop": [{"hooks": [{"command": "./more.sh"}]}]}));
    user(&mut s, "go");
    for round in 0..crate::policy::STOP_HOOK_ROUNDS {
        let cmds = reply(&mut s, "done?", &[]);
        assert_eq!(kinds(&cmds), ["message", "totals", "hook"], "{round}");
        let cmds = hook_ran(
            &mut s,
            0,
            r#"{"decision":"block","reason":"tests fail"}"#,
            "",
        );
        assert_eq!(kinds(&cmds), ["other", "message", "call"]);
    }
    let cmds = reply(&mut s, "done.", &[]);
    assert_eq!(kinds(&cmds), ["message", "totals", "show", "sync"]);
    assert!(!s.busy());
    // A new line starts the count again.
    user(&mut s, "again");
    assert_eq!(kinds(&reply(&mut s, "ok", &[]))[2..], ["hook"]);
    assert_eq!(kinds(&hook_ran(&mut s, 0, "", "")), ["other", "sync"]);
}

#[test]
fn update_plan_is_logged_answered_and_held_in_the_prompt_while_open() {
    let mut s = start();
    user(&mut s, "plan");
    let cmds = reply(
        &mut s,
        "",
        &[(
            "p1",
            "update_plan",
            r#"{"steps":[{"step":"a","status":"in_progress"}]}"#,
        )],
    );
    assert!(cmds.iter().any(|c| matches!(c,
        Command::Log(LogCommand::Append(Record::Plan(p))) if p.call.as_deref() == Some("p1"))));
    assert_eq!(
        result_of(&cmds, "p1"),
        Some("Plan updated (0/1 done):\n[~] a")
    );
    // The next request's system prompt holds the open plan.
    let system = cmds.iter().rev().find_map(|c| match c {
        Command::Log(LogCommand::Append(Record::Context(c))) => Some(c.system.clone()),
        _ => None,
    });
    assert!(system.unwrap().ends_with("[~] a"));
    assert_eq!(s.state().plan().steps.len(), 1);
}

/// A `task` call whose arguments do not parse cannot be delegated: it
/// gets its error as result like any such call, after its `PreToolUse`
/// hooks ran once, not again on the way of every call.
#[test]
fn a_task_call_that_does_not_parse_runs_its_hooks_once() {
    let mut s = hooked(serde_json::json!({
        "PreToolUse": [{"matcher": "task", "hooks": [{"command": "./pre.sh"}]}]}));
    user(&mut s, "split it");
    let cmds = reply(&mut s, "", &[("c1", "task", r#"{"description":7}"#)]);
    assert_eq!(kinds(&cmds)[2..], ["hook"]);
    let cmds = hook_ran(&mut s, 0, "", "");
    assert_eq!(kinds(&cmds), ["other", "result", "call"], "{cmds:?}");
    assert!(
        result_of(&cmds, "c1").is_some_and(|r| r.starts_with("error:")),
        "{cmds:?}"
    );
}

#[test]
fn task_calls_run_their_pre_and_post_tool_use_hooks_like_any_tool() {
    let mut s = hooked(serde_json::json!({
        "PreToolUse": [{"matcher": "task", "hooks": [{"command": "./pre.sh"}]}],
        "PostToolUse": [{"matcher": "task", "hooks": [{"command": "./post.sh"}]}]}));
    user(&mut s, "split it");
    let task = |d: &str| format!(r#"{{"description":"{d}","prompt":"do {d}"}}"#);
    let (a, b, c) = (task("a"), task("b"), task("c"));
    let cmds = reply(
        &mut s,
        "",
        &[("c1", "task", &a), ("c2", "task", &b), ("c3", "task", &c)],
    );
    assert_eq!(kinds(&cmds)[2..], ["hook"], "c1's PreToolUse first");
    // c1 rewritten, c2 blocked, c3 as made.
    let cmds = hook_ran(
        &mut s,
        0,
        r#"{"updatedInput":{"description":"a","prompt":"do A"}}"#,
        "",
    );
    assert_eq!(kinds(&cmds), ["other", "hook"], "then c2's");
    // A blocked call ends the run that goes out together.
    let cmds = hook_ran(&mut s, 2, "", "no b");
    let tasks = cmds
        .iter()
        .find_map(|c| match c {
            Command::Tool(ToolCommand::Delegate { tasks }) => Some(tasks.clone()),
            _ => None,
        })
        .expect("the unblocked calls before the blocked one start");
    let started: Vec<(&str, &str)> = tasks
        .iter()
        .map(|t| (t.id.as_str(), t.prompt.as_str()))
        .collect();
    assert_eq!(started, [("c1", "do A")], "the rewritten prompt runs");
    let end = |id: &str, answer: &str| TaskEnd {
        id: id.into(),
        answer: answer.into(),
        record: crate::record::Delegated {
            at: datetime!(2026-12-02 10:03 UTC),
            call: id.into(),
            child: format!("kid-{id}"),
            log: format!("/logs/kid-{id}.jsonl"),
            description: String::new(),
            subagent: None,
            requests: 1,
            tokens_in: 10,
            tokens_out: 1,
            cost: 0,
        },
    };
    let cmds = s
        .handle(Input::Tool(ToolInput::Delegated {
            ends: vec![end("c1", "found a")],
            interrupted: false,
            now: datetime!(2026-12-02 10:04 UTC),
        }))
        .commands;
    assert_eq!(kinds(&cmds), ["other", "hook"], "the child's PostToolUse");
    let cmds = hook_ran(&mut s, 0, r#"{"additionalContext":"checked"}"#, "");
    let result = result_of(&cmds, "c1").expect("c1's result").to_owned();
    assert!(
        result.starts_with("found a") && result.contains("checked"),
        "{result}"
    );
    assert_eq!(
        result_of(&cmds, "c2"),
        Some("error: not run: a PreToolUse hook blocked this call: no b")
    );
    assert_eq!(kinds(&cmds).last(), Some(&"hook"), "c3's PreToolUse");
    let cmds = hook_ran(&mut s, 0, "", "");
    let tasks = cmds.iter().find_map(|c| match c {
        Command::Tool(ToolCommand::Delegate { tasks }) => Some(tasks.clone()),
        _ => None,
    });
    let ids: Vec<String> = tasks
        .expect("c3 starts")
        .iter()
        .map(|t| t.id.clone())
        .collect();
    assert_eq!(ids, ["c3"]);
}

#[test]
fn a_task_call_that_cannot_be_delegated_keeps_the_front_checked() {
    // c1 does not parse: it goes the way of every call as its hooks left
    // it (they ran once, with the front's), and c2, whose hooks ran
    // beside it, still goes out without running them again.
    let mut s = hooked(serde_json::json!({
        "PreToolUse": [{"matcher": "task", "hooks": [{"command": "./pre.sh"}]}]}));
    user(&mut s, "split it");
    let b = r#"{"description":"b","prompt":"do b"}"#;
    let cmds = reply(&mut s, "", &[("c1", "task", "not json"), ("c2", "task", b)]);
    assert_eq!(kinds(&cmds)[2..], ["hook"], "c1's PreToolUse");
    assert_eq!(
        kinds(&hook_ran(&mut s, 0, "", "")),
        ["other", "hook"],
        "c2's"
    );
    let cmds = hook_ran(&mut s, 0, "", "");
    assert!(
        result_of(&cmds, "c1").is_some_and(|r| r.starts_with("error:")),
        "{cmds:?}"
    );
    let ids: Vec<String> = cmds
        .iter()
        .find_map(|c| match c {
            Command::Tool(ToolCommand::Delegate { tasks }) => {
                Some(tasks.iter().map(|t| t.id.clone()).collect())
            }
            _ => None,
        })
        .expect("c2 starts, its hooks not run again");
    assert_eq!(ids, ["c2"]);
}

mod web;
