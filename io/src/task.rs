//! Subagents, run: each `task` call is the revolve binary itself, run as a
//! child process (see docs/subagents.md for why):
//!
//! ```text
//! revolve -p --output-format stream-json --subagent-of PARENT:CALL
//!         --tools read_file,grep,… [--subagent NAME] [--model M]
//!         [--max-cost USD] [--plan] <the parent's inherited flags> -- PROMPT
//! ```
//!
//! * in a process group of its own (`process_group(0)`), so the
//!   terminal's Ctrl-C reaches the parent alone, which then kills every
//!   child's group (their own commands die with them: each of those has a
//!   watchdog on its parent);
//! * its stdout read line by line as stream-json events: `init` gives the
//!   child's session id, `tool_call` its last tool, `totals` its tokens,
//!   `text` its answer (the text after its last tool call), `done` its
//!   log, `error` why it failed;
//! * its stderr kept (bounded) for the message of a child that failed;
//! * once it ended, the last `totals` record of its log gives what it cost
//!   (requests, tokens, nano-dollars), which the parent logs in a
//!   `delegated` record and so adds to its own totals.
//!
//! [`run_all`] runs several side by side, at most `parallel` at once, and
//! tells a watcher how each goes. Which flags a child gets, which tools,
//! and what is left of `--max-cost` are decided before (in core and the
//! binary); this module only runs them.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use revolve_core::record::Record;

/// How often a running child and Ctrl-C are looked at.
const POLL: Duration = Duration::from_millis(50); // not policy: how often cancel is polled

/// How much of a child's stderr is kept for its error message.
const STDERR_KEPT: usize = 4096; // not policy: enough for the last lines

/// What a session needs to run children, or to be one.
#[derive(Clone, Debug, Default)]
pub struct Agents {
    /// The parent's command-line flags a child gets again.
    pub inherited: Vec<String>,
    /// Set when this session is a child: whose call it runs for.
    pub child: Option<ChildOf>,
}

/// The call a child session runs for (`--subagent-of PARENT:CALL`).
#[derive(Clone, Debug, Default)]
pub struct ChildOf {
    /// The parent session's id.
    pub parent: String,
    /// The parent's `task` call.
    pub call: String,
    /// The definition it runs under.
    pub subagent: Option<String>,
    /// The built-in tools it offers.
    pub tools: Vec<String>,
}

/// The arguments of the child for `task` (see the module doc).
pub fn child_args(
    parent: &str,
    task: &revolve_core::session::Delegation,
    provider: &str,
    model: &str,
    inherited: &[String],
) -> Vec<String> {
    let mut args = vec![
        "-p".to_owned(),
        "--output-format=stream-json".to_owned(),
        format!("--subagent-of={parent}:{}", task.id),
        format!("--tools={}", task.tools.join(",")),
        format!("--provider={provider}"),
        format!("--model={}", task.model.as_deref().unwrap_or(model)),
    ];
    if let Some(name) = &task.subagent {
        args.push(format!("--subagent={name}"));
    }
    if let Some(budget) = task.budget {
        args.push(format!("--max-cost={}", dollars(budget)));
    }
    if task.planning {
        args.push("--plan".to_owned());
    }
    args.extend(inherited.iter().cloned());
    args.push("--".to_owned());
    args.push(task.prompt.clone());
    args
}

/// One child to run.
#[derive(Clone, Debug)]
pub struct Spec {
    /// The parent's `task` call.
    pub call: String,
    /// What the call said it does (the live line).
    pub description: String,
    /// The binary (this one).
    pub program: PathBuf,
    /// Its arguments, whole (see the module doc).
    pub args: Vec<String>,
    /// Its working directory.
    pub cwd: PathBuf,
    /// Variables it gets besides this process's.
    pub env: Vec<(String, String)>,
}

/// How a child goes, for the live line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// What the call said it does.
    pub description: String,
    /// The last tool it called.
    pub last_tool: Option<String>,
    /// Its tokens in and out so far.
    pub tokens: (u64, u64),
    /// Whether it ended.
    pub ended: bool,
}

impl Progress {
    /// The child's one line: `task N: DESCRIPTION · STATE · IN in, OUT
    /// out`, the state `started`, `→ TOOL` (its last tool) or `ended`.
    pub fn line(&self, n: usize) -> String {
        let state = match (&self.last_tool, self.ended) {
            (_, true) => "ended".to_owned(),
            (Some(tool), false) => format!("→ {tool}"),
            (None, false) => "started".to_owned(),
        };
        format!(
            "task {n}: {} · {state} · {} in, {} out",
            self.description, self.tokens.0, self.tokens.1
        )
    }
}

/// How a child ended.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct End {
    /// The parent's `task` call.
    pub call: String,
    /// The child's session id (empty when it never started one).
    pub child: String,
    /// Its log.
    pub log: String,
    /// Its answer, or (starting `error:`) why there is none.
    pub answer: String,
    /// Its requests, tokens in, tokens out and cost (nano-dollars), from
    /// the last totals of its log.
    pub requests: u64,
    /// Tokens in.
    pub tokens_in: u64,
    /// Tokens out.
    pub tokens_out: u64,
    /// Nano-dollars.
    pub cost: u64,
    /// Ctrl-C stopped it.
    pub interrupted: bool,
}

/// One stream-json event of a child, as far as the parent cares.
enum Event {
    Init(String),
    Tool(String),
    Text(String),
    Tokens(u64, u64),
    Done(String),
    Error(String),
    /// Its stdout closed.
    Closed,
}

/// A child running.
struct Running {
    spec: Spec,
    child: Child,
    events: mpsc::Receiver<Event>,
    stderr: thread::JoinHandle<String>,
    end: End,
    closed: bool,
}

/// Runs `specs`, at most `parallel` at once, until each ended; `cancel`
/// is polled and, once true, every running child's group is killed and
/// those not started are not; `watch` is told each child's progress by
/// its index, whenever it changes. The ends come in the order of `specs`.
pub fn run_all(
    specs: Vec<Spec>,
    parallel: usize,
    cancel: &dyn Fn() -> bool,
    watch: &mut dyn FnMut(usize, &Progress),
) -> Vec<End> {
    let mut ends: Vec<Option<End>> = vec![None; specs.len()];
    let mut waiting: VecDeque<(usize, Spec)> = specs.into_iter().enumerate().collect();
    let mut running: Vec<(usize, Running, Progress)> = Vec::new();
    let mut cancelled = false;
    loop {
        if !cancelled && cancel() {
            cancelled = true;
            for (_, r, _) in &mut running {
                kill(&mut r.child);
                r.end.interrupted = true;
            }
        }
        while !cancelled && running.len() < parallel.max(1) {
            let Some((i, spec)) = waiting.pop_front() else {
                break;
            };
            let progress = Progress {
                description: spec.description.clone(),
                ..Progress::default()
            };
            match start(spec) {
                Ok(r) => {
                    watch(i, &progress);
                    running.push((i, r, progress));
                }
                Err(end) => ends[i] = Some(*end),
            }
        }
        if cancelled {
            for (i, spec) in waiting.drain(..) {
                ends[i] = Some(End {
                    call: spec.call,
                    answer: "error: interrupted before it started".into(),
                    interrupted: true,
                    ..End::default()
                });
            }
        }
        if running.is_empty() {
            break;
        }
        let mut k = 0;
        while k < running.len() {
            let (i, r, progress) = &mut running[k];
            let changed = r.drain(progress);
            let finished = r.closed && matches!(r.child.try_wait(), Ok(Some(_)) | Err(_));
            if finished {
                progress.ended = true;
            }
            if changed || finished {
                watch(*i, progress);
            }
            if finished {
                let (i, r, _) = running.swap_remove(k);
                ends[i] = Some(r.finish());
            } else {
                k += 1;
            }
        }
        thread::sleep(POLL);
    }
    ends.into_iter().map(|e| e.unwrap_or_default()).collect()
}

/// Starts one child; the end to give when it cannot start.
fn start(spec: Spec) -> Result<Running, Box<End>> {
    let mut command = Command::new(&spec.program);
    command
        .args(&spec.args)
        .current_dir(&spec.cwd)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        command.process_group(0);
    }
    let mut child = command.spawn().map_err(|e| {
        Box::new(End {
            call: spec.call.clone(),
            answer: format!("error: the subagent did not start: {e}"),
            ..End::default()
        })
    })?;
    let (tx, events) = mpsc::channel();
    let stdout = child.stdout.take();
    let read = thread::Builder::new()
        .name("subagent-events".into())
        .spawn(move || {
            if let Some(stdout) = stdout {
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    if let Some(event) = parse(&line) {
                        if tx.send(event).is_err() {
                            return;
                        }
                    }
                }
            }
            let _ = tx.send(Event::Closed);
        });
    let stderr = child.stderr.take();
    let kept = thread::Builder::new()
        .name("subagent-stderr".into())
        .spawn(move || {
            let mut kept = Vec::new();
            if let Some(mut stderr) = stderr {
                let mut chunk = [0u8; 4096];
                while let Ok(n) = stderr.read(&mut chunk) {
                    if n == 0 {
                        break;
                    }
                    kept.extend_from_slice(&chunk[..n]);
                    let over = kept.len().saturating_sub(STDERR_KEPT);
                    kept.drain(..over);
                }
            }
            String::from_utf8_lossy(&kept).into_owned()
        });
    let (Ok(_), Ok(stderr)) = (read, kept) else {
        kill(&mut child);
        return Err(Box::new(End {
            call: spec.call.clone(),
            answer: "error: the subagent's output could not be read".into(),
            ..End::default()
        }));
    };
    let end = End {
        call: spec.call.clone(),
        ..End::default()
    };
    Ok(Running {
        spec,
        child,
        events,
        stderr,
        end,
        closed: false,
    })
}

impl Running {
    /// Takes the events that came; whether `progress` changed.
    fn drain(&mut self, progress: &mut Progress) -> bool {
        let mut changed = false;
        while let Ok(event) = self.events.try_recv() {
            match event {
                Event::Init(id) => self.end.child = id,
                Event::Tool(name) => {
                    // The answer is what it says after its last call.
                    self.end.answer.clear();
                    progress.last_tool = Some(name);
                    changed = true;
                }
                Event::Text(text) => self.end.answer.push_str(&text),
                Event::Tokens(i, o) => {
                    progress.tokens = (i, o);
                    changed = true;
                }
                Event::Done(log) => self.end.log = log,
                Event::Error(message) => {
                    self.end.answer = format!("error: the subagent failed: {message}")
                }
                Event::Closed => self.closed = true,
            }
        }
        changed
    }

    /// The end, once it exited: its answer, and its totals from its log.
    fn finish(mut self) -> End {
        let status = self.child.wait();
        let stderr = self.stderr.join().unwrap_or_default();
        let mut end = std::mem::take(&mut self.end);
        if end.log.is_empty() && !end.child.is_empty() {
            end.log = find_log(&stderr).unwrap_or_default();
        }
        if let Some(totals) = last_totals(Path::new(&end.log)) {
            end.requests = totals.requests;
            end.tokens_in = totals.tokens_in;
            end.tokens_out = totals.tokens_out;
            end.cost = totals.cost;
        }
        if end.interrupted {
            end.answer = "error: interrupted; the subagent was stopped".into();
        } else if end.answer.trim().is_empty() || !status.as_ref().is_ok_and(|s| s.success()) {
            let said = stderr.trim().lines().last().unwrap_or("").to_owned();
            if !end.answer.starts_with("error:") {
                end.answer = match (&status, said.is_empty()) {
                    (Ok(s), true) => format!("error: the subagent ended ({s}) without an answer"),
                    (Ok(s), false) => format!("error: the subagent ended ({s}): {said}"),
                    (Err(e), _) => format!("error: lost track of the subagent: {e}"),
                };
            }
        }
        let _ = &self.spec;
        end
    }
}

/// Kills a child's whole group (it leads it), then reaps it.
fn kill(child: &mut Child) {
    #[cfg(unix)]
    if let Ok(pid) = i32::try_from(child.id()) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    let _ = child.kill();
}

/// One stream-json line, as an event the parent cares about.
fn parse(line: &str) -> Option<Event> {
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    let text = |key: &str| v[key].as_str().unwrap_or_default().to_owned();
    Some(match v["type"].as_str()? {
        "init" => Event::Init(text("session")),
        "tool_call" => Event::Tool(text("name")),
        "text" => Event::Text(text("text")),
        "totals" => Event::Tokens(
            v["tokens_in"].as_u64().unwrap_or(0),
            v["tokens_out"].as_u64().unwrap_or(0),
        ),
        "done" => Event::Done(text("log")),
        "error" => Event::Error(text("message")),
        _ => return None,
    })
}

/// A log path a failed child named on stderr, if any.
fn find_log(stderr: &str) -> Option<String> {
    stderr
        .split_whitespace()
        .find(|w| w.ends_with(".jsonl"))
        .map(str::to_owned)
}

/// The last `totals` record of the log at `path`.
fn last_totals(path: &Path) -> Option<revolve_core::Totals> {
    if path.as_os_str().is_empty() {
        return None;
    }
    let log = revolve_store::log::read(path).ok()?;
    log.records.into_iter().rev().find_map(|r| match r {
        Record::Totals(t) => Some(t),
        _ => None,
    })
}

/// `nanos` nano-dollars as `--max-cost` takes them (`0.000001500`).
pub fn dollars(nanos: u64) -> String {
    format!("{}.{:09}", nanos / 1_000_000_000, nanos % 1_000_000_000) // not policy: a unit
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn sh(call: &str, script: &str) -> Spec {
        Spec {
            call: call.into(),
            description: format!("run {call}"),
            program: "sh".into(),
            args: vec!["-c".into(), script.into()],
            cwd: std::env::temp_dir(),
            env: Vec::new(),
        }
    }

    #[test]
    fn children_run_side_by_side_and_their_answers_come_in_order() {
        let script = |n: u32| {
            format!(
                "echo '{{\"type\":\"init\",\"session\":\"k{n}\"}}'; \
                 echo '{{\"type\":\"text\",\"text\":\"looking\"}}'; \
                 echo '{{\"type\":\"tool_call\",\"name\":\"grep\",\"id\":\"x\"}}'; sleep 0.5; \
                 echo '{{\"type\":\"text\",\"text\":\"answer {n}\"}}'; \
                 echo '{{\"type\":\"totals\",\"tokens_in\":{n}0,\"tokens_out\":{n}}}'"
            )
        };
        let specs = (1..=3).map(|n| sh(&format!("c{n}"), &script(n))).collect();
        let started = Instant::now();
        let mut seen = Vec::new();
        let ends = run_all(specs, 3, &|| false, &mut |i, p| seen.push((i, p.clone())));
        assert!(
            started.elapsed() < Duration::from_millis(1400),
            "{:?}",
            started.elapsed()
        );
        let answers: Vec<&str> = ends.iter().map(|e| e.answer.as_str()).collect();
        assert_eq!(answers, ["answer 1", "answer 2", "answer 3"]);
        assert_eq!(ends[1].child, "k2");
        assert_eq!(ends[2].call, "c3");
        assert!(seen
            .iter()
            .any(|(i, p)| *i == 1 && p.last_tool.as_deref() == Some("grep")));
        assert!(seen.iter().any(|(i, p)| *i == 2 && p.tokens == (30, 3)));
        assert_eq!(seen.iter().filter(|(_, p)| p.ended).count(), 3);
    }

    #[test]
    fn a_cancel_kills_every_group_and_a_failure_says_why() {
        let started = Instant::now();
        let specs = vec![
            sh("c1", "sleep 30 & sleep 30"),
            sh("c2", "sleep 30"),
            sh("c3", "sleep 30"),
        ];
        let cancel = move || started.elapsed() > Duration::from_millis(300);
        let ends = run_all(specs, 2, &cancel, &mut |_, _| {});
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        assert!(ends.iter().all(|e| e.interrupted), "{ends:?}");
        assert_eq!(ends[2].answer, "error: interrupted before it started");
        let ends = run_all(
            vec![sh("c1", "echo oops >&2; exit 3")],
            1,
            &|| false,
            &mut |_, _| {},
        );
        assert!(ends[0].answer.contains(": oops"), "{:?}", ends[0].answer);
    }

    #[test]
    fn dollars_are_written_as_max_cost_reads_them() {
        assert_eq!(dollars(1_500), "0.000001500");
        assert_eq!(dollars(2_000_000_001), "2.000000001");
    }
}
