//! The built-in tools, executed. [`run`] takes the checked [`Tool`] of a
//! `Command::RunTool` and returns the [`Outcome`] the shell feeds back as
//! `Input::ToolDone` (or `Input::SandboxRefused`), its effects inside. Every failure is output starting
//! `error:` (one sentence the model can act on): never a panic, never an
//! `Err`. Text is returned as it is, control characters included (the
//! terminal layer renders them inert); invalid UTF-8 is decoded lossily.
//!
//! # Confinement (`read_file`, `list_dir`, `grep`)
//!
//! A path is taken relative to the working directory ([`Context::root`]) or
//! as absolute, then canonicalized, which resolves `..` and every symlink. It
//! may be read only when the canonical path is inside the canonical root, or
//! equals a granted path, or is inside a granted directory (grants are
//! canonicalized when granted). So a symlink inside the tree that
//! points outside is refused, and so is `../`. A path that does not exist is
//! `error: no such file: PATH` when it would lie inside what may be read, and
//! refused like any outside path otherwise (so probing does not reveal which
//! outside files exist).
//!
//! Neither the root nor a grant is resolved again at a tool call: the root
//! is the canonical working directory the session started in, and a tree
//! that is no longer that directory (another canonical path, or another
//! device and inode: moved, replaced, swapped for a symlink) is refused to
//! `read_file`, `list_dir`, `grep` and `shell`; a grant counts only while
//! its path still resolves to itself. So swapping the tree or a granted
//! folder for a symlink to `/` opens nothing.
//!
//! # `read_file` and `list_dir`
//!
//! `read_file` returns the file's text as it is (no line numbers); `offset`
//! is the first line (1-based), `limit` a number of lines. Output stops at
//! 256 KiB on a line boundary with a last line
//! `[… file continues: N more lines; read on with offset=K]` (a single longer
//! line is shown cut, and said so). A file with a NUL byte in its first
//! 8 KiB is refused as binary; an empty file gives `[PATH is empty]`.
//! `list_dir` prints one entry a line, sorted, directories with a trailing
//! `/`, symlinks as `name -> target`, at most 2000 with a note. It leaves
//! out what grep's walk leaves out (ripgrep's rules: hidden names, and what
//! `.gitignore`, `.ignore` or `.git/info/exclude` ignores) and says how many
//! it left out in a last line; a folder named explicitly is listed even if
//! it is hidden or ignored itself.
//!
//! # `grep`: matching here, not by the system `grep`
//!
//! The tree is walked with the `ignore` crate and lines are matched with
//! the `regex` crate, the two ripgrep is built from, so confinement, bounds
//! and output are exactly ours and do not depend on which `grep` is
//! installed. The walk is ripgrep's: sorted, `.gitignore` (in a repository
//! or not), `.ignore` and `.git/info/exclude` honoured, hidden files and
//! folders skipped, symlinks not followed, and `.git`, `target` and
//! `node_modules` always skipped below the searched path; binary files (a
//! NUL in the first 8 KiB) and files over 4 MiB are skipped. Patterns are
//! the regex crate's syntax (`(?i)`, `\b`, `\<`, `\>`, `\d`, `\p{Greek}`,
//! `[[:alpha:]]`, …), matched in time linear in the line; one it refuses is
//! an `error: grep: bad pattern: …` result. A 30 s limit bounds the whole
//! search. Output is
//! `path:line:text` (paths relative to the root; absolute for a granted
//! path outside it), text cut at 512 characters, at most 500 lines and
//! 64 KiB, then notes saying what was left out.
//!
//! # `shell`
//!
//! Runs once the core allowed it (`session::approval`): `sh -c COMMAND`
//! in the root, stdin
//! null, in a session and process group of its own, with no controlling
//! terminal (`group::Group`: a watchdog kills it when revolve dies, even
//! by SIGKILL, and it cannot join revolve's group); stdout and stderr are read by two
//! threads so a full pipe cannot block the child. `cancel` is polled about
//! every 50 ms. On timeout (default 120 s, at most 3600), on `cancel()` or
//! past 64 MiB of output on one stream the output says so, with what was
//! captured. However the command ends, its whole process group is killed
//! (SIGKILL), so `sleep 1000 &` does not outlive it, and on Linux so is
//! what left the group (`setsid`) and was orphaned (`group::reap_escaped`).
//! If a process that escaped still holds the pipes, its later output is
//! given up on after one second. The API
//! key variables (core's `API_KEY_VARS`: `REVOLVE_API_KEY`, `OPENAI_API_KEY`,
//! `ANTHROPIC_API_KEY`, `OPENROUTER_API_KEY`, `GEMINI_API_KEY`) are removed from its environment, and any tool's output has their values
//! replaced by `[key]` (a command could still read its parent's
//! environment), so no key reaches the session log.
//!
//! # `request_file_grant` and `agent_info`
//!
//! A grant needs an absolute path that exists; its canonical form goes
//! back to the session in [`Outcome::grant`], and the core grants it, asks
//! the user or refuses (`session::approval`). A path that is already
//! readable is not asked for. `agent_info` is the
//! pretty JSON of [`AgentInfo`] plus `working_dir`.

// Unsafe only at the sites that say `#[allow(unsafe_code)]`, each with a
// `SAFETY:` comment.
#![deny(unsafe_code)]

use std::fs;
use std::io::{self, BufRead, BufReader, Read};
#[cfg(unix)]
use std::os::unix::process::ExitStatusExt;
use std::path::{Component, Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde::Serialize;

use revolve_core::config::API_KEY_VARS;
use revolve_core::edit::Keys;
use revolve_core::memory::{Label, Remembered};
use revolve_core::session::{MemoryWrite, ToolEffects};
use revolve_core::tools::Tool;
use time::OffsetDateTime;

use revolve_store::goal;
use revolve_store::memory::{self, MemoryDirs};
use revolve_store::refine;
use revolve_store::regular;
#[cfg(unix)]
pub mod background;
pub mod edit;
#[cfg(unix)]
mod group;
mod track;

pub mod fetch;
mod grant;
mod grep;
#[cfg(unix)]
pub mod hook;
mod list;
pub mod picture;
mod read;
mod remember;
pub mod sandbox;
mod scope;
mod shell;
mod skill;

use grant::*;
use grep::*;
use list::*;
use read::*;
use remember::*;
pub(crate) use scope::*;
use shell::*;
use skill::*;

use revolve_core::policy::{
    BINARY_PROBE, GREP_BYTES, GREP_FILE_MAX, GREP_LINES, GREP_LINE_CHARS, GREP_SKIP, GREP_TIME,
    LIST_CAP, PATTERN_MAX, PATTERN_SIZE_MAX, READ_CAP, SHELL_DRAIN, SHELL_MAX_TIMEOUT_S,
    SHELL_STREAM_CAP,
};

/// What the tools need to know about where they run.
#[derive(Clone, Debug)]
pub struct Context {
    /// The working directory, canonical: the tree the tools may read.
    pub root: PathBuf,
    /// The identity the working tree had when the session started
    /// ([`FileId::of`] the root then): a tree that is no longer the same
    /// directory (moved away, or swapped for a symlink) is refused.
    pub root_id: Option<FileId>,
    /// What `agent_info` tells.
    pub info: AgentInfo,
    /// Where memory and the goal live (`remember`, `GoalProgress`).
    pub memory: MemoryDirs,
    /// How many messages the session holds (for snapshot metadata).
    pub messages: u64,
    /// The time of the call, from the shell's clock.
    pub now: OffsetDateTime,
    /// The sandbox `shell` commands run in.
    pub sandbox: revolve_core::sandbox::Policy,
    /// Who watches a `shell` command as it runs (nobody by default).
    pub watch: Watch,
    /// The wire the session's requests speak: how large a picture
    /// `read_file` reads may go out (issue 44).
    pub wire: revolve_core::request::Wire,
}

/// Someone watching a running `shell` command: told, as often as the
/// command is polled, how long it has run and the end of what it wrote so
/// far (stdout and stderr as they came), and told once when it ended. How
/// and when it is shown is the watcher's business.
#[derive(Clone, Default)]
pub struct Watch(pub Option<std::sync::Arc<WatchFn>>);

/// What a [`Watch`] calls: `Some((elapsed, tail))` while the command runs,
/// `None` once it ended.
pub(crate) type WatchFn = dyn Fn(Option<(std::time::Duration, &str)>) + Send + Sync;

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Watch(watched)"
        } else {
            "Watch(none)"
        })
    }
}

impl Watch {
    fn tick(&self, elapsed: std::time::Duration, tail: &str) {
        if let Some(watch) = &self.0 {
            watch(Some((elapsed, tail)));
        }
    }

    fn end(&self) {
        if let Some(watch) = &self.0 {
            watch(None);
        }
    }
}

/// A file's identity: its device and inode (on unix; elsewhere none is
/// known and only the canonical path is compared).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileId {
    dev: u64,
    ino: u64,
}

impl FileId {
    /// The identity of what `path` names now (symlinks followed).
    pub fn of(path: &Path) -> Option<FileId> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            fs::metadata(path).ok().map(|m| FileId {
                dev: m.dev(),
                ino: m.ino(),
            })
        }
        #[cfg(not(unix))]
        {
            let _ = path;
            None
        }
    }
}

/// Facts about this session, as `agent_info` returns them (pretty JSON, with
/// the working directory added as `working_dir`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct AgentInfo {
    /// The session id.
    pub session_id: String,
    /// The session's name, if it has one.
    pub name: Option<String>,
    /// The session log file.
    pub log_path: PathBuf,
    /// The project key (the repository's main work tree, or the directory).
    pub project_key: PathBuf,
    /// The project directory (memory, tasks, goal).
    pub project_dir: PathBuf,
    /// Whether this session created the project directory.
    pub created_project_dir: bool,
    /// The state root.
    pub state_root: PathBuf,
    /// The config root.
    pub config_root: PathBuf,
    /// The project's instruction files in this session's prompt
    /// (`AGENTS.md`, else `CLAUDE.md`), root first.
    pub project_instructions: Vec<String>,
}

/// A tool's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The text the model gets; starts with `error:` on failure.
    pub output: String,
    /// The path (canonical, absolute) a `request_file_grant` asks for:
    /// whether it is granted is the core's decision (`Input::ToolDone {
    /// grant, .. }`); `output` is empty then.
    pub grant: Option<String>,
    /// `cancel()` returned true and the tool stopped early. `cancel` may
    /// consume the interrupt (as `interrupt::take` does), so this is the
    /// caller's way to know.
    pub interrupted: bool,
    /// A `shell` command's output reads like the sandbox refused it.
    pub sandbox_refused: bool,
    /// What the tool did besides its output, which the session logs
    /// before its result: the file `read_file` read whole (so it may be
    /// edited), what a `shell` command changed in its git repository or
    /// that it ran outside one, the memory change `remember` made.
    pub effects: ToolEffects,
}

/// `read_file` of a picture (told by its first bytes): its image part,
/// made ready for the session's wire, in the result's effects, and a line
/// saying so as its text; `None` when the file is no picture.
fn read_picture(path: &Path, raw: &str, ctx: &Context) -> Option<Outcome> {
    let mut head = [0u8; 16];
    let n = {
        let (mut file, _) = revolve_store::regular::read(path).ok()?;
        io::Read::read(&mut file, &mut head).ok()?
    };
    if !picture::is_picture(&head[..n]) {
        return None;
    }
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) => return Some(Outcome::text(format!("error: cannot read {raw}: {e}"))),
    };
    let blobs = edit::Blobs::new(&ctx.info.state_root);
    Some(match picture::prepare(&bytes, raw, ctx.wire, &blobs) {
        Ok(image) => {
            let mut outcome =
                Outcome::text(picture::described(&image, picture::dimensions(&bytes)));
            outcome.effects.image = Some(Box::new(image));
            outcome
        }
        Err(line) => Outcome::text(format!("error: {line}")),
    })
}

/// Runs `tool`. `grants` are the absolute paths outside the root this
/// session may read; `cancel` is polled while a long tool runs (shell, grep)
/// and stops it when it returns true.
pub fn run(tool: &Tool, grants: &[String], ctx: &Context, cancel: &dyn Fn() -> bool) -> Outcome {
    let mut outcome = run_tool(tool, grants, ctx, cancel);
    outcome.output = redact_keys(outcome.output);
    outcome
}

/// Ends what the session's commands left running: every process that
/// carries the tag of a command this process ran (see the `group`
/// module; Linux only). Not the session's id: another revolve may run a
/// session of the same id (a resumed copy, tests with a pinned clock), and
/// its commands are not this one's to end.
pub fn end_session(session: &str) {
    let _ = session;
    #[cfg(unix)]
    {
        background::end_all(None);
        group::kill_own_commands();
    }
}

/// The key a session's background commands are known by: its name (which
/// a compaction's fresh file keeps), else its id.
pub fn background_key(info: &AgentInfo) -> &str {
    info.name.as_deref().unwrap_or(&info.session_id)
}

/// Where a session's spilled output goes: `spills/<session>/` beside the
/// `sessions/` folder of its log (the system's temp dir when the log's
/// place is not known).
fn spill_dir(info: &AgentInfo) -> PathBuf {
    match info.log_path.parent().and_then(Path::parent) {
        Some(project) if !project.as_os_str().is_empty() => {
            project.join("spills").join(&info.session_id)
        }
        _ => std::env::temp_dir()
            .join("revolve-spills")
            .join(&info.session_id),
    }
}

/// The API keys of this process (core's `API_KEY_VARS`), as core hides
/// them ([`Keys`]): from tool output here, and from what an edit shows.
pub fn keys() -> Keys {
    Keys::new(
        API_KEY_VARS
            .iter()
            .filter_map(|name| std::env::var(name).ok()),
    )
}

/// The API keys of this process, replaced by `[key]` wherever they appear:
/// removing them from a command's environment is not enough, since a
/// command can read its parent's (`/proc/$PPID/environ`), and whatever a
/// tool returns is written to the session log.
fn redact_keys(text: String) -> String {
    match keys().redact(&text) {
        std::borrow::Cow::Borrowed(_) => text,
        std::borrow::Cow::Owned(hidden) => hidden,
    }
}

fn run_tool(tool: &Tool, grants: &[String], ctx: &Context, cancel: &dyn Fn() -> bool) -> Outcome {
    let scope = Scope::new(&ctx.root, grants);
    let uses_tree = matches!(
        tool,
        Tool::ReadFile { .. } | Tool::ListDir { .. } | Tool::Grep { .. } | Tool::Shell { .. }
    );
    if uses_tree {
        if let Err(e) = tree_unchanged(ctx) {
            return Outcome::text(e);
        }
    }
    match tool {
        Tool::WebFetch {
            url,
            prompt,
            access,
            cached,
        } => fetch::run(
            fetch::Call {
                url,
                prompt: prompt.as_deref(),
                access,
                cached: cached.as_deref(),
            },
            &ctx.info.state_root,
            ctx.now,
        ),
        Tool::ReadFile {
            path,
            offset,
            limit,
        } => read(&scope, path, (*offset, *limit), ctx),
        Tool::ListDir { path } => Outcome::from(list_dir(&scope, path)),
        Tool::Grep { pattern, path } => grep(&scope, pattern, path.as_deref(), cancel),
        #[cfg(unix)]
        Tool::Shell {
            command,
            background: true,
            ..
        } => background::start(
            &scope.root,
            background_key(&ctx.info),
            command,
            Confinement {
                policy: &ctx.sandbox,
                protect: &protected(&scope, ctx),
            },
            &spill_dir(&ctx.info),
        ),
        #[cfg(unix)]
        Tool::ShellOutput { id } => background::output(background_key(&ctx.info), id),
        #[cfg(unix)]
        Tool::ShellKill { id } => background::kill(background_key(&ctx.info), id),
        #[cfg(not(unix))]
        Tool::ShellOutput { .. } | Tool::ShellKill { .. } => {
            Outcome::text("error: background commands need a unix system".into())
        }
        Tool::Shell {
            command, timeout_s, ..
        } => tracked_shell(&scope, command, *timeout_s, ctx, cancel),
        Tool::RequestFileGrant { path, .. } => request_grant(&scope, path),
        Tool::AgentInfo => Outcome::from(agent_info(ctx)),
        Tool::Remember {
            label,
            content,
            replace,
        } => {
            let (output, memory) = remember(ctx, label, content, *replace);
            let mut outcome = Outcome::text(output);
            outcome.effects.memory = memory;
            outcome
        }
        Tool::GoalProgress { note, met } => Outcome::text(goal_progress(ctx, note, *met)),
        Tool::Skill { name, dir } => Outcome::text(skill(name, dir)),
        // The session opens, stages and writes edits step by step, and
        // sets the plan itself.
        Tool::EditFile { .. } | Tool::WriteFile { .. } | Tool::UpdatePlan { .. } => {
            Outcome::text(format!(
                "error: {} runs through the session's edit steps, not as a tool",
                tool.name()
            ))
        }
        // A child session, which the shell runs (see `revolve_io::task`).
        Tool::Task { .. } => {
            Outcome::text("error: task runs a child session, not as a tool here".into())
        }
    }
}

/// `read_file`: a picture as an image part, else the lines asked for
/// (`range`: the first line and how many). A file read is seen (its
/// whole content's hash, taken as it is read), so it may be edited.
fn read(scope: &Scope, path: &str, range: (Option<u64>, Option<u64>), ctx: &Context) -> Outcome {
    let resolved = scope.resolve(path);
    if let Some(outcome) = resolved
        .as_ref()
        .ok()
        .and_then(|p| read_picture(p, path, ctx))
    {
        return outcome;
    }
    let (offset, limit) = range;
    let read = resolved
        .as_ref()
        .map_err(Clone::clone)
        .and_then(|p| read_file(p, path, offset, limit));
    match (resolved, read) {
        (Ok(p), Ok((text, hash))) => {
            let mut outcome = Outcome::text(text);
            outcome.effects.seen =
                hash.map(|hash| Box::new((p.to_string_lossy().into_owned(), hash)));
            outcome
        }
        (_, read) => Outcome::from(read.map(|(text, _)| text)),
    }
}

/// `shell` in the foreground, with what the command changes in its
/// repository, found by looking before and after (see [`crate::track`]).
fn tracked_shell(
    scope: &Scope,
    command: &str,
    timeout_s: u64,
    ctx: &Context,
    cancel: &dyn Fn() -> bool,
) -> Outcome {
    let session = ctx.info.name.as_deref().unwrap_or(&ctx.info.session_id);
    let before = crate::track::Before::take(&scope.root);
    let mut outcome = shell(
        &scope.root,
        session,
        command,
        timeout_s,
        Confinement {
            policy: &ctx.sandbox,
            protect: &protected(scope, ctx),
        },
        cancel,
        &ctx.watch,
    );
    match before {
        Some(before) => {
            let tracked = before.changes(&crate::edit::Blobs::new(&ctx.info.state_root));
            if let Some(note) = tracked.note() {
                outcome.output.push_str(&note);
            }
            outcome.effects.changes = tracked.changes;
        }
        None => outcome.effects.untracked = true,
    }
    outcome
}

/// What a shell command may not write even where the sandbox lets it
/// write: the repository's `.git`, revolve's state and its config.
fn protected(scope: &Scope, ctx: &Context) -> Vec<PathBuf> {
    crate::sandbox::protected(
        &scope.root,
        Path::new(&ctx.info.state_root),
        ctx.memory.global.parent(),
    )
}

impl Outcome {
    fn text(output: String) -> Outcome {
        Outcome {
            output,
            grant: None,
            interrupted: false,
            sandbox_refused: false,
            effects: ToolEffects::default(),
        }
    }

    fn interrupted(output: String) -> Outcome {
        Outcome {
            interrupted: true,
            ..Outcome::text(output)
        }
    }
}

impl From<Result<String, String>> for Outcome {
    fn from(result: Result<String, String>) -> Outcome {
        Outcome::text(result.unwrap_or_else(|error| error))
    }
}

#[cfg(test)]
mod tests;
