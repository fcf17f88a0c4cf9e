//! File edits and rewinds, checked on random runs (model-based, like
//! `laws.rs`): a real [`Session`] takes random turns whose replies call
//! `read_file`, `write_file` and `edit_file` on a few paths, rewinds and
//! takes rewinds back, and restarts from its log. A fake shell executes its
//! commands over an in-memory file system and content store. The model the
//! runs are checked against knows only what each file held when each turn
//! began:
//!
//! - a rewind of N turns puts every file back to what it held before those
//!   turns (files they created are gone), and taking it back restores the
//!   exact bytes and the same conversation;
//! - the log folds to the live state after every step;
//! - a file changed behind the session's back refuses a rewind that would
//!   overwrite it, unless forced.

use revolve_core::{
    FileCommand, FileInput, LogCommand, ModelCommand, ModelInput, ToolCommand, ToolInput,
    TurnContext, UserCommand, UserInput,
};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

use quickcheck::{Arbitrary, Gen, QuickCheck};
use revolve_core::edit::{self, Keys, Scope};
use revolve_core::record::{Header, Message, Record, Resumed, Role, ToolCall};
use revolve_core::session::{Opened, ToolEffects};
use revolve_core::tools::Tool;
use revolve_core::{Command, Input, Reply, Session, Settings, State};
use time::macros::datetime;
use time::{Duration, OffsetDateTime};

/// Canonical path to content.
type Files = BTreeMap<String, Vec<u8>>;

/// The paths the model names (the working tree is `/w`).
const PATHS: [&str; 4] = ["a.txt", "b.txt", "new/c.txt", "d.bin"];
/// A file no call names: nothing may touch it.
const UNTOUCHED: &str = "/w/notes.md";
/// What `edit_file` looks for and puts in.
const OLD: [&str; 6] = ["alpha", "beta\n", "a", "\n", "two\n", "gamma\ndelta"];
const NEW: [&str; 5] = ["", "omega", "alpha", "beta\n", "x\ny\n"];
/// What `write_file` writes is made of.
const PIECES: [&str; 5] = ["alpha\n", "beta\n", "gamma", "two\r\n", "délta\n"];

fn canonical(shown: &str) -> String {
    format!("/w/{shown}")
}

/// Any deterministic hash will do: core treats hashes as opaque (FNV-1a).
fn hash(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("fnv:{h:016x}")
}

/// The files every run starts with: one LF text, one CRLF text, one that
/// is not UTF-8, and one no call names.
fn initial() -> Files {
    Files::from([
        (canonical("a.txt"), b"alpha\nbeta\ngamma\ndelta\n".to_vec()),
        (canonical("b.txt"), b"one\r\ntwo\r\nalpha\r\n".to_vec()),
        (canonical("d.bin"), vec![0xff, 0x00, b'a', b'\n']),
        (UNTOUCHED.to_owned(), b"mine\n".to_vec()),
    ])
}

/// One tool call a reply makes; `fail`: its write fails.
#[derive(Clone, Debug)]
enum Call {
    Read(u8),
    Write {
        path: u8,
        content: Vec<u8>,
        fail: bool,
    },
    Edit {
        path: u8,
        old: u8,
        new: u8,
        all: bool,
        fail: bool,
    },
}

#[derive(Clone, Debug)]
enum Op {
    /// The user says something; the model answers with these rounds of
    /// calls, each round's results going back to it, then with text.
    Turn(Rounds),
    /// Take back the last N turns, files and conversation.
    Rewind(u8),
    /// Take back the last rewind.
    Undo,
    /// The process ends; a new one folds the log and resumes.
    Restart,
}

impl Arbitrary for Call {
    fn arbitrary(g: &mut Gen) -> Call {
        let path = u8::arbitrary(g) % PATHS.len() as u8;
        let fail = u8::arbitrary(g) % 10 == 0;
        match u8::arbitrary(g) % 3 {
            0 => Call::Read(path),
            1 => Call::Write {
                path,
                content: (0..u8::arbitrary(g) % 4)
                    .map(|_| u8::arbitrary(g))
                    .collect(),
                fail,
            },
            _ => Call::Edit {
                path,
                old: u8::arbitrary(g),
                new: u8::arbitrary(g),
                all: bool::arbitrary(g),
                fail,
            },
        }
    }

    fn shrink(&self) -> Box<dyn Iterator<Item = Call>> {
        match self {
            Call::Read(_) => quickcheck::empty_shrinker(),
            Call::Write { path, .. } | Call::Edit { path, .. } => {
                quickcheck::single_shrinker(Call::Read(*path))
            }
        }
    }
}

/// A turn's rounds of calls: up to three, of one to three calls each.
#[derive(Clone, Debug)]
struct Rounds(Vec<Vec<Call>>);

impl Arbitrary for Rounds {
    fn arbitrary(g: &mut Gen) -> Rounds {
        Rounds(
            (0..u8::arbitrary(g) % 4)
                .map(|_| {
                    (0..1 + u8::arbitrary(g) % 3)
                        .map(|_| Call::arbitrary(g))
                        .collect()
                })
                .collect(),
        )
    }

    fn shrink(&self) -> Box<dyn Iterator<Item = Rounds>> {
        Box::new(self.0.shrink().map(Rounds))
    }
}

impl Arbitrary for Op {
    fn arbitrary(g: &mut Gen) -> Op {
        match u8::arbitrary(g) % 10 {
            0..=5 => Op::Turn(Rounds::arbitrary(g)),
            6..=7 => Op::Rewind(u8::arbitrary(g)),
            8 => Op::Undo,
            _ => Op::Restart,
        }
    }

    fn shrink(&self) -> Box<dyn Iterator<Item = Op>> {
        match self {
            Op::Turn(rounds) => Box::new(rounds.shrink().map(Op::Turn)),
            Op::Rewind(n) => Box::new((n % 4 > 0).then(|| Op::Rewind(n % 4 - 1)).into_iter()),
            Op::Undo | Op::Restart => quickcheck::empty_shrinker(),
        }
    }
}

/// At most this many operations a run (the runs stay quick).
const MAX_OPS: usize = 14;

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
        window: 1_000_000,
        provider: "scripted".into(),
        continues: None,
        tool_choice: None,
    }
}

fn settings() -> Settings {
    Settings {
        rules: Default::default(),
        spill_chars: 32_000,
        spill_dir: "/state/spills/s".into(),
        prune_chars: 100_000,
        repeat_limit: 100,
        max_tool_rounds: 10,
        max_calls_per_answer: 64,
        allow_edits: true,
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

/// A session and the world around it: its log, the file system, the
/// content store, the model's script.
struct World {
    session: Session,
    log: Vec<Record>,
    /// The log folded record by record, as each was appended (parsed back
    /// from its line).
    replayed: State,
    fs: Files,
    blobs: Files,
    now: OffsetDateTime,
    /// What the model answers to the next requests of this turn.
    script: VecDeque<Reply>,
    /// The calls whose write fails.
    failing: BTreeSet<String>,
    calls: u64,
}

impl World {
    fn new() -> World {
        let (session, cmds) = Session::start(header(), settings());
        let mut world = World {
            session,
            log: Vec::new(),
            replayed: State::default(),
            fs: initial(),
            blobs: Files::new(),
            now: datetime!(2026-12-02 10:00 UTC),
            script: VecDeque::new(),
            failing: BTreeSet::new(),
            calls: 0,
        };
        let more = world.take(cmds);
        assert!(more.is_empty());
        world.check_replay();
        world
    }

    fn state(&self) -> &State {
        self.session.state()
    }

    /// Feeds `input` and everything the shell's work on its commands
    /// gives back; the commands of the last input handled.
    fn drive(&mut self, input: Input) -> Vec<Command> {
        let mut queue = VecDeque::from([input]);
        let mut last = Vec::new();
        while let Some(input) = queue.pop_front() {
            self.now += Duration::seconds(1);
            let cmds = self.session.handle(input).commands;
            last = cmds.clone();
            queue.extend(self.take(cmds));
            // Replay equals live, step by step.
            assert!(
                &self.replayed == self.session.state(),
                "the replayed state differs from the live one"
            );
        }
        last
    }

    /// Executes commands in order, as the shell does; the inputs they give.
    fn take(&mut self, cmds: Vec<Command>) -> Vec<Input> {
        let now = self.now;
        let mut inputs = Vec::new();
        for c in cmds {
            match c {
                Command::Log(LogCommand::Append(r)) => {
                    let parsed = Record::parse_line(&r.to_line()).expect("a record parses back");
                    assert_eq!(parsed, r, "a record survives its line");
                    let note = self.replayed.apply(&parsed);
                    assert_eq!(note, None, "the live session appended {parsed:?}");
                    self.log.push(parsed);
                }
                Command::Model(ModelCommand::Call(_)) => {
                    let reply = self.script.pop_front().unwrap_or_else(|| Reply {
                        text: "done".into(),
                        ..Reply::default()
                    });
                    inputs.push(Input::Model(ModelInput::Reply { reply, now }));
                }
                Command::Tool(ToolCommand::Run { id, tool, .. }) => {
                    let Tool::ReadFile { path, .. } = tool else {
                        panic!("only read_file runs as a tool here: {tool:?}");
                    };
                    let path = canonical(&path);
                    let mut effects = ToolEffects::default();
                    let output = match self.fs.get(&path) {
                        Some(bytes) => {
                            effects.seen = Some(Box::new((path.clone(), hash(bytes))));
                            String::from_utf8_lossy(bytes).into_owned()
                        }
                        None => format!("error: no such file: {path}"),
                    };
                    inputs.push(Input::Tool(ToolInput::Done {
                        parts: None,
                        id,
                        output,
                        grant: None,
                        effects,
                        now,
                    }));
                }
                Command::File(FileCommand::Open { id, path, .. }) => {
                    let full = canonical(&path);
                    let content = self.fs.get(&full).cloned();
                    inputs.push(Input::File(FileInput::Opened {
                        id,
                        opened: Ok(Opened {
                            hash: content.as_deref().map(hash),
                            content,
                            path: full,
                            shown: path,
                            mode: Some(0o644),
                            ..Opened::default()
                        }),
                        keys: Keys::default(),
                        now,
                    }));
                }
                Command::File(FileCommand::Stage {
                    id, before, after, ..
                }) => {
                    if let Some((b, h)) = before {
                        // The hash the fake gave the file when it opened it.
                        assert_eq!(h, hash(&b));
                        self.blobs.insert(h, b);
                    }
                    let h = hash(&after);
                    self.blobs.insert(h.clone(), after);
                    inputs.push(Input::File(FileInput::Staged {
                        id,
                        answer: None,
                        after: h,
                        error: None,
                        now,
                    }));
                }
                Command::File(FileCommand::Write {
                    id, path, content, ..
                }) => {
                    let error = if self.failing.contains(&id) {
                        Some("disk full".to_owned())
                    } else {
                        self.fs.insert(path, content);
                        None
                    };
                    inputs.push(Input::File(FileInput::Wrote { id, error, now }));
                }
                Command::File(FileCommand::Restore(files)) => {
                    let paths: Vec<String> = files.iter().map(|f| f.path.clone()).collect();
                    for f in files {
                        if let Some(old) = self.fs.get(&f.path) {
                            self.blobs.insert(hash(old), old.clone());
                        }
                        match f.to {
                            Some(h) => {
                                let bytes =
                                    self.blobs.get(&h).expect("a restored content is stored");
                                self.fs.insert(f.path, bytes.clone());
                            }
                            None => {
                                self.fs.remove(&f.path);
                            }
                        }
                    }
                    // The shell says what each file holds now.
                    let on_disk = paths
                        .into_iter()
                        .map(|p| {
                            let h = self.fs.get(&p).map(|b| hash(b));
                            (p, h)
                        })
                        .collect();
                    inputs.push(Input::File(FileInput::Restored {
                        on_disk,
                        errors: Default::default(),
                        resumed: false,
                        now: self.now,
                    }));
                }
                Command::Log(LogCommand::Sync)
                | Command::User(UserCommand::Show(_))
                | Command::User(UserCommand::Refused(_)) => {}
                other => panic!("a command these runs never ask for: {other:?}"),
            }
        }
        inputs
    }

    fn call(&mut self, call: &Call) -> ToolCall {
        self.calls += 1;
        let id = format!("call_{}", self.calls);
        let shown = |p: &u8| PATHS[*p as usize % PATHS.len()];
        let (name, args) = match call {
            Call::Read(p) => ("read_file", serde_json::json!({ "path": shown(p) })),
            Call::Write {
                path,
                content,
                fail,
            } => {
                if *fail {
                    self.failing.insert(id.clone());
                }
                let content: String = content
                    .iter()
                    .map(|&i| PIECES[i as usize % PIECES.len()])
                    .collect();
                (
                    "write_file",
                    serde_json::json!({ "path": shown(path), "content": content }),
                )
            }
            Call::Edit {
                path,
                old,
                new,
                all,
                fail,
            } => {
                if *fail {
                    self.failing.insert(id.clone());
                }
                (
                    "edit_file",
                    serde_json::json!({
                        "path": shown(path),
                        "old_string": OLD[*old as usize % OLD.len()],
                        "new_string": NEW[*new as usize % NEW.len()],
                        "replace_all": all,
                    }),
                )
            }
        };
        ToolCall {
            id,
            name: name.into(),
            arguments: args.to_string(),
        }
    }

    /// A whole turn: the user's line, the model's rounds, its last word.
    fn turn(&mut self, rounds: &[Vec<Call>]) {
        for round in rounds {
            let tool_calls = round.iter().map(|c| self.call(c)).collect();
            self.script.push_back(Reply {
                thinking: Vec::new(),
                truncated: false,
                text: String::new(),
                tool_calls,
                usage: None,
            });
        }
        let now = self.now;
        self.drive(Input::User(UserInput::Line {
            context: TurnContext::default(),
            text: format!("turn at {now}"),
            now,
        }));
        assert!(self.script.is_empty(), "the turn ended early");
        assert!(!self.session.busy(), "the turn is still running");
    }

    /// What each file a rewind may touch holds now, as the shell tells it.
    fn on_disk(&self) -> BTreeMap<String, Option<String>> {
        edit::tracked_paths(self.state())
            .into_iter()
            .map(|p| {
                let h = self.fs.get(&p).map(|b| hash(b));
                (p, h)
            })
            .collect()
    }

    /// A rewind (or, with `undo`, its taking back): the rewind logged, if
    /// one was.
    fn rewind(
        &mut self,
        turns: usize,
        undo: bool,
        force: bool,
    ) -> Option<revolve_core::record::Rewound> {
        let before = self.log.len();
        let input = Input::User(UserInput::Rewind {
            turns,
            scope: Scope::Both,
            undo,
            force,
            on_disk: self.on_disk(),
            now: self.now,
        });
        self.drive(input);
        let rewound: Vec<_> = self.log[before..]
            .iter()
            .filter_map(|r| match r {
                Record::Rewound(r) => Some(r.clone()),
                _ => None,
            })
            .collect();
        assert!(rewound.len() <= 1, "one rewind logged twice: {rewound:?}");
        rewound.into_iter().next()
    }

    fn restart(&mut self) {
        self.now += Duration::seconds(1);
        let resumed = Resumed {
            at: self.now,
            model: "m".into(),
            window: 1_000_000,
            provider: String::new(),
        };
        let (session, cmds) = Session::resume(State::fold(&self.log), settings(), resumed);
        self.session = session;
        self.replayed = State::fold(&self.log);
        let more = self.take(cmds);
        assert!(
            more.is_empty(),
            "a resume with nothing pending asks for nothing"
        );
    }

    /// The whole log folds to the live state.
    fn check_replay(&self) {
        assert!(
            &State::fold(&self.log) == self.session.state(),
            "the fold of the log differs from the live state"
        );
    }
}

/// A rewind the model can take back: what it took away.
struct Stash {
    /// The files at the start of each turn it took back.
    starts: Vec<Files>,
    /// The paths each of those turns wrote.
    wrote: Vec<BTreeSet<String>>,
    /// The files and the conversation just before it.
    fs: Files,
    messages: Vec<Message>,
    /// How many turns were left after it.
    left: usize,
}

/// What the runs are checked against.
#[derive(Default)]
struct Model {
    /// The files as each turn of the conversation began.
    starts: Vec<Files>,
    /// The paths each turn wrote (a write that failed is no change).
    wrote: Vec<BTreeSet<String>>,
    /// The rewinds still standing, oldest first.
    stashes: Vec<Stash>,
}

/// Runs `ops`, checking each rewind and its taking back against the model.
fn run(ops: &[Op]) -> (World, Model) {
    let mut world = World::new();
    let mut model = Model::default();
    for op in ops.iter().take(MAX_OPS) {
        match op {
            Op::Turn(rounds) => {
                model.starts.push(world.fs.clone());
                let before = world.log.len();
                world.turn(&rounds.0);
                model.wrote.push(written(&world.log[before..]));
            }
            Op::Rewind(n) => {
                let n = 1 + usize::from(*n) % 4;
                let fs = world.fs.clone();
                let messages = (**world.state().messages()).clone();
                let got = world.rewind(n, false, false);
                let len = model.starts.len();
                let Some(r) = got else {
                    assert_eq!(len, 0, "a rewind of {n} of {len} turns refused");
                    assert_eq!(world.fs, fs, "a refused rewind changed files");
                    continue;
                };
                let k = n.min(len);
                assert_eq!(r.turns as usize, k);
                // Property B: every file holds what it held before those
                // turns; files they created are gone.
                let left = len - k;
                assert_eq!(
                    world.fs, model.starts[left],
                    "the files after a rewind of {k} turns"
                );
                // The conversation goes on from before the first of them.
                let users: Vec<usize> = messages
                    .iter()
                    .enumerate()
                    .filter(|(_, m)| m.role == Role::User)
                    .map(|(i, _)| i)
                    .collect();
                let from = users[users.len() - k];
                assert_eq!(r.from as usize, from);
                assert_eq!(world.state().messages()[..], messages[..from]);
                model.stashes.push(Stash {
                    starts: model.starts.split_off(left),
                    wrote: model.wrote.split_off(left),
                    fs,
                    messages,
                    left,
                });
            }
            Op::Undo => {
                let fs = world.fs.clone();
                let got = world.rewind(1, true, false);
                let expected = model
                    .stashes
                    .last()
                    .is_some_and(|s| s.left == model.starts.len());
                assert_eq!(got.is_some(), expected, "undo taken: {got:?}");
                if got.is_none() {
                    assert_eq!(world.fs, fs, "a refused undo changed files");
                    continue;
                }
                let stash = model.stashes.pop().expect("a stash to take back");
                // Property A: the exact bytes and the same conversation.
                assert_eq!(world.fs, stash.fs, "the files after taking a rewind back");
                assert_eq!(**world.state().messages(), stash.messages);
                model.starts.extend(stash.starts);
                model.wrote.extend(stash.wrote);
            }
            Op::Restart => world.restart(),
        }
        world.check_replay();
        assert_eq!(
            world.fs.get(UNTOUCHED).map(Vec::as_slice),
            Some(&b"mine\n"[..])
        );
    }
    (world, model)
}

/// The paths these records' edits changed on disk.
fn written(records: &[Record]) -> BTreeSet<String> {
    let mut pending = BTreeMap::new();
    let mut paths = BTreeSet::new();
    for r in records {
        match r {
            Record::Edit(e) => {
                pending.insert(e.call.clone(), e.path.clone());
            }
            Record::Written(w) if w.error.is_none() => {
                paths.extend(pending.remove(&w.call));
            }
            _ => {}
        }
    }
    paths
}

fn quickcheck(tests: u64) -> QuickCheck {
    QuickCheck::new().tests(tests).rng(Gen::new(40))
}

/// Properties A and B: every rewind in a random run puts back the files as
/// they were before its turns, and every taking back puts back the exact
/// bytes and the conversation; the log folds to the live state throughout.
#[test]
fn a_rewind_and_its_taking_back_restore_the_exact_bytes() {
    fn prop(ops: Vec<Op>) -> bool {
        run(&ops);
        true
    }
    quickcheck(80).quickcheck(prop as fn(Vec<Op>) -> bool);
}

/// Property A on its own, always reached: N turns, a rewind of them, its
/// taking back.
#[test]
fn rewinding_n_turns_then_taking_it_back_is_the_identity() {
    fn prop(turns: Vec<Rounds>, n: u8) -> bool {
        let mut ops: Vec<Op> = turns.into_iter().take(6).map(Op::Turn).collect();
        ops.push(Op::Rewind(n));
        ops.push(Op::Undo);
        let (world, model) = run(&ops);
        // Taken back whole: nothing stands, every turn is back.
        assert!(model.stashes.is_empty());
        assert_eq!(
            world
                .state()
                .messages()
                .iter()
                .filter(|m| m.role == Role::User)
                .count(),
            model.starts.len()
        );
        true
    }
    quickcheck(50).quickcheck(prop as fn(Vec<Rounds>, u8) -> bool);
}

/// Property C: a file changed behind the session's back (rewritten or
/// removed) refuses a rewind that would overwrite it, which then changes
/// nothing; forced, the rewind goes on and logs what the file held. A
/// changed file the rewind would not touch neither stops it nor is touched.
#[test]
fn a_rewind_refuses_to_overwrite_a_change_made_behind_its_back() {
    fn prop(ops: Vec<Op>, n: u8, path: u8, remove: bool, force: bool) -> bool {
        let (mut world, model) = run(&ops);
        if model.starts.is_empty() {
            return true;
        }
        let n = 1 + usize::from(n) % 4;
        let k = n.min(model.starts.len());
        let left = model.starts.len() - k;
        let touched: BTreeSet<&String> = model.wrote[left..].iter().flatten().collect();
        // Somebody else's change.
        let path = canonical(PATHS[usize::from(path) % PATHS.len()]);
        let theirs = b"somebody else's work\n".to_vec();
        let had = world.fs.get(&path).cloned();
        match (remove, &had) {
            (true, Some(_)) => {
                world.fs.remove(&path);
            }
            _ => {
                world.fs.insert(path.clone(), theirs.clone());
            }
        }
        let tampered = world.fs.clone();
        let on_disk = world.fs.get(&path).map(|b| hash(b));
        let before = world.log.len();
        let got = world.rewind(n, false, force);
        let guarded = touched.contains(&path);
        if guarded && !force {
            assert!(
                got.is_none(),
                "a rewind overwrote {path} changed behind its back"
            );
            assert_eq!(world.log.len(), before, "a refused rewind logged something");
            assert_eq!(world.fs, tampered, "a refused rewind changed files");
            world.check_replay();
            return true;
        }
        let r = got.expect("a rewind that may go on goes on");
        assert_eq!(r.forced, force);
        let mut expected = model.starts[left].clone();
        if guarded {
            // Forced: the file goes back all the same, and the record says
            // what it held (the shell stored it first).
            // (A file removed that the rewind removes needs nothing.)
            match r.files.iter().find(|f| f.path == path) {
                Some(f) => assert_eq!(f.from, on_disk),
                None => assert!(on_disk.is_none() && !expected.contains_key(&path)),
            }
            if let Some(h) = &on_disk {
                assert_eq!(world.blobs.get(h), Some(&theirs));
            }
        } else {
            // Not this rewind's file: left as they made it.
            match tampered.get(&path) {
                Some(b) => expected.insert(path.clone(), b.clone()),
                None => expected.remove(&path),
            };
            assert!(r.files.iter().all(|f| f.path != path));
        }
        assert_eq!(world.fs, expected, "the files after the rewind");
        world.check_replay();
        true
    }
    quickcheck(80).quickcheck(prop as fn(Vec<Op>, u8, u8, bool, bool) -> bool);
}
