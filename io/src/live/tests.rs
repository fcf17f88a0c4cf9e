//! The executor against a canned model and a recording front, in a temp
//! store: what the log holds folds back into the live state and the exact
//! requests sent, the front is told of every call and when its result is
//! logged, and it is asked exactly what the core says to ask.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use revolve_core::edit::{Answer, Scope};
use revolve_core::record::{Record, ToolCall};
use revolve_core::tools::Tool;
use revolve_core::{Reply, Request, State, Totals};
use revolve_provider::{Provider, ProviderError};
use revolve_store::memory::MemoryDirs;
use revolve_store::paths::{Project, Roots};
use revolve_store::store::Store;

use super::{Live, Outcome, Runtime};
use crate::front::Front;

/// Tests that catch signals (a turn's guard) run one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// A model that answers from a list and keeps every request it was sent.
struct Canned {
    replies: Mutex<VecDeque<Reply>>,
    sent: Mutex<Vec<Request>>,
}

impl Canned {
    fn new(replies: Vec<Reply>) -> Arc<Canned> {
        Arc::new(Canned {
            replies: Mutex::new(replies.into()),
            sent: Mutex::new(Vec::new()),
        })
    }

    fn sent(&self) -> Vec<Request> {
        self.sent.lock().unwrap().clone()
    }
}

impl Provider for Canned {
    fn complete(
        &self,
        request: &Request,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<Reply, ProviderError> {
        self.sent.lock().unwrap().push(request.clone());
        let reply = self.replies.lock().unwrap().pop_front();
        let reply = reply.ok_or_else(|| ProviderError::new("no reply left", ""))?;
        // Streamed in two pieces, as a server sends it.
        let (a, b) = reply.text.split_at(reply.text.len() / 2);
        for piece in [a, b].into_iter().filter(|p| !p.is_empty()) {
            on_text(piece);
        }
        Ok(reply)
    }

    fn name(&self) -> &'static str {
        "openai"
    }
}

/// A front that writes down what it is shown and answers from a list.
#[derive(Default)]
struct Recorder {
    interactive: bool,
    answers: VecDeque<Answer>,
    events: Vec<String>,
    /// The user presses Ctrl-C while asked, then answers anyway.
    ctrl_c_when_asked: bool,
}

impl Recorder {
    fn answer(&mut self) -> Answer {
        if self.ctrl_c_when_asked {
            nix::sys::signal::raise(nix::sys::signal::Signal::SIGINT).unwrap();
        }
        self.answers.pop_front().unwrap_or(Answer::No)
    }
}

impl Front for Recorder {
    fn interactive(&self) -> bool {
        self.interactive
    }
    fn notice(&mut self, text: &str) {
        self.events.push(format!("notice {text}"));
    }
    fn text(&mut self, text: &str) {
        self.events.push(format!("text {text}"));
    }
    fn answer_end(&mut self, shown: &str) {
        self.events.push(format!("answered {shown}"));
    }
    fn tool_call(&mut self, id: &str, tool: &Tool, _: &str) {
        self.events.push(format!("call {id} {}", tool.name()));
    }
    fn tool_result(&mut self, id: &str, _: &Tool, output: &str, _: bool) {
        let first = output.lines().next().unwrap_or_default();
        self.events.push(format!("result {id} {first}"));
    }
    fn logged(&mut self, id: &str) {
        self.events.push(format!("logged {id}"));
    }
    fn not_run(&mut self, call: &ToolCall, output: &str) {
        let first = output.lines().next().unwrap_or_default();
        self.events
            .push(format!("not run {} {}: {first}", call.id, call.name));
    }
    fn settled(&mut self) {}
    fn totals(&mut self, totals: &Totals) {
        self.events.push(format!("totals {} turns", totals.turns));
    }
    fn closed(&self) -> bool {
        false
    }
    fn ask_shell(&mut self, command: &str) -> Answer {
        self.events.push(format!("shell? {command}"));
        self.answer()
    }
    fn ask_fetch(&mut self, url: &str, host: &str) -> Answer {
        self.events.push(format!("fetch? {url} ({host})"));
        self.answer()
    }
    fn ask_edit(&mut self, path: &str, diff: &str, _once: bool) -> Answer {
        let changed = diff.lines().filter(|l| l.starts_with('+')).count();
        self.events
            .push(format!("edit? {path} ({changed} + lines)"));
        self.answer()
    }
    fn ask_grant(&mut self, path: &str, reason: Option<&str>) -> bool {
        let why = reason.unwrap_or("-");
        self.events.push(format!("grant? {path} ({why})"));
        self.answer() == Answer::Yes
    }

    fn confirm(&mut self, question: &str) -> bool {
        self.events.push(format!("confirm? {question}"));
        self.answer() == Answer::Yes
    }
}

/// A store and a working tree in a temp dir.
struct World {
    _dir: tempfile::TempDir,
    cwd: PathBuf,
    store: Store,
}

impl World {
    fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let cwd = root.join("work");
        std::fs::create_dir_all(&cwd).unwrap();
        let store = Store {
            roots: Roots {
                state: root.join("state"),
                config: root.join("config"),
            },
            project: Project::from_key(cwd.clone()),
            cwd: cwd.clone(),
        };
        World {
            _dir: dir,
            cwd,
            store,
        }
    }

    fn store(&self) -> Store {
        Store {
            roots: self.store.roots.clone(),
            project: Project::from_key(self.cwd.clone()),
            cwd: self.cwd.clone(),
        }
    }

    fn runtime(&self, provider: Arc<Canned>, allow_shell: bool) -> Runtime {
        let store = self.store();
        Runtime {
            agents: Default::default(),
            provider,
            model: Some("m".into()),
            window: Some(100_000),
            settings: revolve_core::Settings {
                spill_chars: 100_000,
                // Filled in when the session opens.
                spill_dir: String::new(),
                prune_chars: 50_000,
                repeat_limit: 3,
                max_tool_rounds: 10,
                max_calls_per_answer: 64,
                allow_edits: false,
                allow_shell,
                interactive: false,
                rules: Default::default(),
                granted: Vec::new(),
                auto_refine: false,
                bare: true,
                counts: false,
                confirm_costly: true,
                allow_mcp: false,
                mcp_timeout_s: revolve_core::policy::MCP_TIMEOUT_S,
                hooks: Default::default(),
                models: Default::default(),
                max_cost: None,
                network_off: false,
            },
            memory: MemoryDirs::locate(&store.cwd, &store.project, &store.roots),
            created_project_dir: false,
            tree: revolve_tools::FileId::of(&self.cwd),
            sandbox: revolve_core::sandbox::Policy::off(),
            sandbox_note: None,
            mcp: Default::default(),
            tool_choice: None,
        }
    }

    fn start(&self, provider: &Arc<Canned>, front: Recorder) -> Live<Recorder> {
        let runtime = self.runtime(Arc::clone(provider), false);
        Live::start(self.store(), runtime, front, None, false).unwrap()
    }
}

fn call(id: &str, name: &str, arguments: &str) -> Reply {
    Reply {
        thinking: Vec::new(),
        truncated: false,
        text: String::new(),
        tool_calls: vec![ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        }],
        usage: None,
    }
}

fn say(text: &str) -> Reply {
    Reply {
        text: text.into(),
        ..Reply::default()
    }
}

fn records(path: &Path) -> Vec<Record> {
    let read = revolve_store::log::read(path).unwrap();
    assert!(read.skipped.is_empty(), "{:?}", read.skipped);
    read.records
}

#[test]
fn the_log_folds_into_the_live_state_and_the_requests_sent() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let world = World::new();
    std::fs::write(world.cwd.join("notes.txt"), "the port is 8080\n").unwrap();
    let model = Canned::new(vec![
        call("c1", "read_file", r#"{"path":"notes.txt"}"#),
        say("It is 8080."),
        say("Yes."),
    ]);
    let mut live = world.start(&model, Recorder::default());
    assert_eq!(live.turn("which port?").unwrap(), Outcome::Done);
    assert_eq!(live.turn("sure?").unwrap(), Outcome::Done);

    let logged = records(live.path());
    assert_eq!(&State::fold(&logged), live.state());
    let rebuilt: Vec<String> = revolve_core::state::requests(&logged)
        .into_iter()
        .map(|r| r.body.text())
        .collect();
    let sent: Vec<String> = model.sent().into_iter().map(|r| r.body.text()).collect();
    assert_eq!(sent.len(), 3);
    assert_eq!(rebuilt, sent);
    assert!(sent[1].contains("the port is 8080"), "{}", sent[1]);
}

#[test]
fn a_tool_result_is_followed_by_its_logging_and_an_answer_streams() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let world = World::new();
    std::fs::write(world.cwd.join("a.txt"), "alpha\n").unwrap();
    let model = Canned::new(vec![
        call("c1", "read_file", r#"{"path":"a.txt"}"#),
        say("Read it."),
    ]);
    let mut live = world.start(&model, Recorder::default());
    live.turn("read a.txt").unwrap();
    assert_eq!(
        live.front().events,
        [
            // The first reply is a call without text.
            "answered ",
            "call c1 read_file",
            "result c1 alpha",
            "logged c1",
            "text Read",
            "text  it.",
            "answered Read it.",
            "totals 1 turns",
        ]
    );
}

#[test]
fn a_shell_command_is_asked_at_a_terminal_and_the_answer_logged() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let world = World::new();
    let model = Canned::new(vec![
        call("c1", "shell", r#"{"command":"echo hi > made.txt"}"#),
        say("Refused, then."),
    ]);
    let front = Recorder {
        interactive: true,
        answers: VecDeque::from([Answer::No]),
        ..Recorder::default()
    };
    let mut live = world.start(&model, front);
    live.turn("make a file").unwrap();
    let events = &live.front().events;
    let asked = events.iter().position(|e| e == "shell? echo hi > made.txt");
    let told = events
        .iter()
        .position(|e| e == "not run c1 shell: error: the user did not allow this command");
    assert!(asked.is_some() && told > asked, "{events:?}");
    assert!(!world.cwd.join("made.txt").exists());
    let logged = records(live.path());
    let approved: Vec<_> = logged
        .iter()
        .filter_map(|r| match r {
            Record::Approved(a) => Some((a.call.as_str(), a.answer, a.tool.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(approved, [("c1", Answer::No, "shell")]);
    // The model is told, and the fold agrees with what ran.
    let told = "error: the user did not allow this command";
    assert!(
        model.sent()[1].body.text().contains(told),
        "{}",
        model.sent()[1].body
    );
    assert_eq!(&State::fold(&logged), live.state());
}

#[test]
fn without_a_terminal_nobody_is_asked() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let world = World::new();
    let model = Canned::new(vec![
        call("c1", "shell", r#"{"command":"echo hi > made.txt"}"#),
        call("c2", "write_file", r#"{"path":"new.txt","content":"x\n"}"#),
        say("Neither ran."),
    ]);
    let mut live = world.start(&model, Recorder::default());
    live.turn("make files").unwrap();
    let asked: Vec<_> = live
        .front()
        .events
        .iter()
        .filter(|e| e.contains('?'))
        .cloned()
        .collect();
    assert!(asked.is_empty(), "{asked:?}");
    // The person watching is told which flags would have allowed them.
    let notices: Vec<_> = live
        .front()
        .events
        .iter()
        .filter(|e| e.starts_with("notice"))
        .cloned()
        .collect();
    assert!(
        notices.iter().any(|n| n.contains("--allow-shell")),
        "{notices:?}"
    );
    // Both calls are answered with an error the model reads.
    let results: Vec<_> = live
        .state()
        .messages()
        .iter()
        .filter(|m| m.tool_call_id.is_some())
        .map(|m| m.content.clone())
        .collect();
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(
        results.iter().all(|r| r.starts_with("error:")),
        "{results:?}"
    );
    assert!(!world.cwd.join("made.txt").exists());
    assert!(!world.cwd.join("new.txt").exists());
}

#[test]
fn an_edit_allowed_at_the_terminal_is_written_and_rewound() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let world = World::new();
    let model = Canned::new(vec![
        call(
            "c1",
            "write_file",
            r#"{"path":"new.txt","content":"one\ntwo\n"}"#,
        ),
        say("Written."),
    ]);
    let front = Recorder {
        interactive: true,
        answers: VecDeque::from([Answer::Yes]),
        ..Recorder::default()
    };
    let mut live = world.start(&model, front);
    live.turn("write new.txt").unwrap();
    assert!(live
        .front()
        .events
        .contains(&"edit? new.txt (3 + lines)".to_owned()));
    let file = world.cwd.join("new.txt");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "one\ntwo\n");

    assert_eq!(live.rewind(1, Scope::Both, false, false).unwrap(), Ok(()));
    assert!(!file.exists(), "a file the session created is removed");
    assert_eq!(live.state().messages().len(), 0);
    assert_eq!(live.rewind(0, Scope::Both, true, false).unwrap(), Ok(()));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "one\ntwo\n");
    assert_eq!(&State::fold(&records(live.path())), live.state());
}

#[test]
fn a_resumed_session_goes_on_from_its_log() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let world = World::new();
    let model = Canned::new(vec![say("First."), say("Second.")]);
    let mut live = world.start(&model, Recorder::default());
    live.turn("one").unwrap();
    let path = live.path().to_path_buf();
    let before = live.state().clone();
    drop(live);

    let runtime = world.runtime(Arc::clone(&model), false);
    let mut live =
        Live::resume_at(world.store(), &path, runtime, Recorder::default(), false).unwrap();
    assert_eq!(live.state().messages(), before.messages());
    live.turn("two").unwrap();
    let sent = model.sent();
    assert!(sent[1].body.text().contains("First."), "{}", sent[1].body);
    assert_eq!(&State::fold(&records(&path)), live.state());
}

#[test]
fn a_call_that_does_not_run_is_shown_with_the_result_the_model_got() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let world = World::new();
    let model = Canned::new(vec![
        call("c1", "no_such_tool", "{}"),
        call("c2", "shell", r#"{"command":"true"}"#),
        say("Done."),
    ]);
    let mut live = world.start(&model, Recorder::default());
    live.turn("go").unwrap();
    let shown: Vec<_> = live
        .front()
        .events
        .iter()
        .filter(|e| e.starts_with("not run") || e.starts_with("logged"))
        .cloned()
        .collect();
    assert_eq!(shown.len(), 4, "{shown:?}");
    assert!(
        shown[0].starts_with("not run c1 no_such_tool: error:"),
        "{shown:?}"
    );
    assert_eq!(shown[1], "logged c1");
    assert_eq!(
        shown[2],
        "not run c2 shell: error: the user did not allow this command"
    );
    assert_eq!(shown[3], "logged c2");
}

#[test]
fn a_repeated_call_under_a_reused_id_is_shown_as_not_run() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let world = World::new();
    std::fs::write(world.cwd.join("a.txt"), "alpha\n").unwrap();
    // A server that gives no ids: every first call is `call_0`.
    let read = || call("call_0", "read_file", r#"{"path":"a.txt"}"#);
    let model = Canned::new(vec![read(), read(), read(), say("Stopped.")]);
    let mut live = world.start(&model, Recorder::default());
    live.turn("read it again and again").unwrap();
    let calls: Vec<_> = live
        .front()
        .events
        .iter()
        .filter(|e| e.starts_with("call ") || e.starts_with("not run"))
        .cloned()
        .collect();
    assert_eq!(calls.len(), 3, "{calls:?}");
    assert_eq!(
        calls[..2],
        ["call call_0 read_file", "call call_0 read_file"]
    );
    assert!(
        calls[2].starts_with("not run call_0 read_file: error:"),
        "{calls:?}"
    );
}

#[test]
fn a_grant_asked_at_a_terminal_shows_the_result_the_core_gave() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let world = World::new();
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().canonicalize().unwrap().join("secret.txt");
    std::fs::write(&secret, "the secret\n").unwrap();
    let shown = secret.to_str().unwrap().to_owned();
    let ask = serde_json::json!({"path": shown, "reason": "to compare"}).to_string();
    let read = serde_json::json!({"path": shown}).to_string();
    let model = Canned::new(vec![
        call("g1", "request_file_grant", &ask),
        call("r1", "read_file", &read),
        say("Read."),
    ]);
    let front = Recorder {
        interactive: true,
        answers: VecDeque::from([Answer::Yes]),
        ..Recorder::default()
    };
    let mut live = world.start(&model, front);
    live.turn("compare").unwrap();
    let events = &live.front().events;
    let asked = format!("grant? {shown} (to compare)");
    let result = format!("result g1 granted: {shown} (this session may now read it)");
    let at = |e: &str| events.iter().position(|x| x == e);
    assert!(at(&asked).is_some(), "{events:?}");
    assert!(at(&result) > at(&asked), "{events:?}");
    assert!(at("logged g1") > at(&result), "{events:?}");
    assert!(at("result r1 the secret").is_some(), "{events:?}");
    assert_eq!(&State::fold(&records(live.path())), live.state());
}

#[test]
fn ctrl_c_at_a_question_ends_the_turn_whatever_was_answered() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let asks = [
        call("c1", "shell", r#"{"command":"echo hi > made.txt"}"#),
        call("c1", "write_file", r#"{"path":"made.txt","content":"x\n"}"#),
        call("c1", "request_file_grant", r#"{"path":"/"}"#),
    ];
    for ask in asks {
        let world = World::new();
        let name = ask.tool_calls[0].name.clone();
        let model = Canned::new(vec![ask, say("Never asked for.")]);
        let front = Recorder {
            interactive: true,
            answers: VecDeque::from([Answer::Yes]),
            ctrl_c_when_asked: true,
            ..Recorder::default()
        };
        let mut live = world.start(&model, front);
        assert_eq!(live.turn("go").unwrap(), Outcome::Interrupted, "{name}");
        assert!(!world.cwd.join("made.txt").exists(), "{name}");
        assert_eq!(model.sent().len(), 1, "{name}");
        let logged = records(live.path());
        assert!(
            !logged.iter().any(|r| matches!(r, Record::Approved(_))),
            "{name}: the answer is not taken"
        );
        let result = live
            .state()
            .messages()
            .iter()
            .find(|m| m.tool_call_id.is_some());
        assert!(
            result.is_some_and(|m| m.content.starts_with("error: interrupted")),
            "{name}: {result:?}"
        );
        assert_eq!(&State::fold(&logged), live.state(), "{name}");
    }
}

#[test]
fn a_logged_result_is_shown_by_how_its_call_ran() {
    use super::{Flight, Logged};
    let read = Tool::ReadFile {
        path: "a".into(),
        offset: None,
        limit: None,
    };
    let mut flight = Flight::default();
    // Shown run: its result was shown as it ran, once.
    flight.run("c1", None);
    assert_eq!(flight.logged("c1"), Logged::Shown);
    assert_eq!(flight.logged("c1"), Logged::NotRun, "forgotten once logged");
    // Core decides the result (an edit, a grant): shown once logged.
    flight.run("c2", Some(read.clone()));
    assert_eq!(flight.logged("c2"), Logged::Result(read));
    assert_eq!(flight.logged("c2"), Logged::NotRun);
    // Another call's result is of one that did not run; the call in
    // flight stays.
    flight.run("c3", None);
    assert_eq!(flight.logged("c4"), Logged::NotRun);
    assert_eq!(flight.logged("c3"), Logged::Shown);
}

#[test]
fn what_later_commands_did_wins_and_nothing_erases_nothing() {
    use super::Did;
    let mut did = Did::default();
    did.then(Did {
        refused: Some("first".into()),
        undone: Some(vec!["a.md: restored".into()]),
    });
    did.then(Did::default());
    did.then(Did {
        refused: Some("second".into()),
        undone: None,
    });
    assert_eq!(
        did,
        Did {
            refused: Some("second".into()),
            undone: Some(vec!["a.md: restored".into()]),
        }
    );
}

#[test]
fn a_refusal_is_returned_to_the_command_that_was_refused_only() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let world = World::new();
    let model = Canned::new(vec![say("Hello.")]);
    let mut live = world.start(&model, Recorder::default());
    // Nothing to take back yet: core refuses, and says why.
    let refused = live.rewind(1, Scope::Both, false, false).unwrap();
    assert!(refused.is_err(), "{refused:?}");
    // The refusal went with that command: the next one starts clean.
    live.turn("hi").unwrap();
    assert_eq!(live.rewind(1, Scope::Both, false, false).unwrap(), Ok(()));
    // Nothing to undo in the memory: no files.
    assert_eq!(live.undo_memory().unwrap(), None);
}
