//! The built-in tools, executed. [`run`] takes the checked [`Tool`] of a
//! `Command::RunTool { id, tool, grants }` and returns the [`Outcome`] the
//! shell feeds back as `Input::ToolDone`. Every failure is output starting
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
//! Asks the [`Approver`] first. Runs `sh -c COMMAND` in the root, stdin
//! null, in a process group of its own ([`Group`]: a watchdog kills it
//! when revolve dies, even by SIGKILL); stdout and stderr are read by two
//! threads so a full pipe cannot block the child. `cancel` is polled about
//! every 50 ms. On timeout (default 120 s, at most 3600), on `cancel()` or
//! past 64 MiB of output on one stream the output says so, with what was
//! captured. However the command ends, its whole process group is killed
//! (SIGKILL), so `sleep 1000 &` does not outlive it, and on Linux so is
//! what left the group (`setsid`) and was orphaned ([`group::reap_escaped`]).
//! If a process that escaped still holds the pipes, its later output is
//! given up on after one second. The API
//! key variables (core's `API_KEY_VARS`: `REVOLVE_API_KEY`, `OPENAI_API_KEY`,
//! `ANTHROPIC_API_KEY`, `OPENROUTER_API_KEY`) are removed from its environment, and any tool's output has their values
//! replaced by `[key]` (a command could still read its parent's
//! environment), so no key reaches the session log.
//!
//! # `request_file_grant` and `agent_info`
//!
//! A grant needs an absolute path that exists; the user is asked about its
//! canonical form, and [`Outcome::grant`] carries it back to the session. A
//! path that is already readable is not asked about. `agent_info` is the
//! pretty JSON of [`AgentInfo`] plus `working_dir`.

use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, Read};
#[cfg(unix)]
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Component, Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde::Serialize;

use revolve_core::config::API_KEY_VARS;
use revolve_core::memory::{Label, Remembered};
use revolve_core::tools::Tool;
use time::OffsetDateTime;

use crate::goal;
use crate::group::{self, Group};
use crate::memory::{self, MemoryDirs};
use crate::refine;
use crate::regular;
use revolve_core::policy::{
    BINARY_PROBE, GREP_BYTES, GREP_FILE_MAX, GREP_LINES, GREP_LINE_CHARS, GREP_SKIP, GREP_TIME,
    LIST_CAP, PATTERN_MAX, PATTERN_SIZE_MAX, READ_CAP, SHELL_DRAIN, SHELL_MAX_TIMEOUT_S,
    SHELL_STREAM_CAP, SHELL_TIMEOUT_S,
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
    /// The snapshot entries the call took before changing memory (the
    /// entry, and `project/NAME.md: created: …`), for the session's log.
    pub snapshots: std::cell::RefCell<Vec<(String, String)>>,
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
}

/// Asks the user. The implementation knows whether there is a TTY to ask
/// on or pipe-mode flags (`--allow-shell`, `--grant`) to go by.
pub trait Approver {
    /// May `command` run?
    fn approve_shell(&mut self, command: &str) -> bool;
    /// May this session read `path` (canonical, absolute)?
    fn approve_grant(&mut self, path: &Path, reason: Option<&str>) -> bool;
}

/// A tool's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The text the model gets; starts with `error:` on failure.
    pub output: String,
    /// A path the user just granted (canonical, absolute): the session must
    /// add it to its grants (`Input::ToolDone { grant, .. }`).
    pub grant: Option<String>,
    /// `cancel()` returned true and the tool stopped early. `cancel` may
    /// consume the interrupt (as `interrupt::take` does), so this is the
    /// caller's way to know.
    pub interrupted: bool,
    /// The file `read_file` read (canonical) and the hash of its whole
    /// content: the session logs it, so the file may be edited.
    pub seen: Option<(String, String)>,
    /// What a `shell` command changed in its git repository.
    pub changes: Vec<revolve_core::edit::Change>,
    /// A `shell` command ran outside git: its changes are not tracked.
    pub untracked: bool,
}

/// Runs `tool`. `grants` are the absolute paths outside the root this
/// session may read; `cancel` is polled while a long tool runs (shell, grep)
/// and stops it when it returns true.
pub fn run(
    tool: &Tool,
    grants: &[String],
    ctx: &Context,
    approver: &mut dyn Approver,
    cancel: &dyn Fn() -> bool,
) -> Outcome {
    let mut outcome = run_tool(tool, grants, ctx, approver, cancel);
    outcome.output = redact_keys(outcome.output);
    outcome
}

/// The API keys of this process, replaced by `[key]` wherever they appear:
/// removing them from a command's environment is not enough, since a
/// command can read its parent's (`/proc/$PPID/environ`), and whatever a
/// tool returns is written to the session log.
fn redact_keys(mut text: String) -> String {
    for name in API_KEY_VARS {
        if let Some(key) = std::env::var(name).ok().filter(|k| k.len() >= 8) {
            if text.contains(&key) {
                text = text.replace(&key, "[key]");
            }
        }
    }
    text
}

fn run_tool(
    tool: &Tool,
    grants: &[String],
    ctx: &Context,
    approver: &mut dyn Approver,
    cancel: &dyn Fn() -> bool,
) -> Outcome {
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
        Tool::ReadFile {
            path,
            offset,
            limit,
        } => {
            let mut outcome = Outcome::from(read_file(&scope, path, *offset, *limit));
            if !outcome.output.starts_with("error:") {
                outcome.seen = scope.resolve(path).ok().and_then(|p| {
                    let hash = crate::edit::hash_of(&p).ok().flatten()?;
                    Some((p.to_string_lossy().into_owned(), hash))
                });
            }
            outcome
        }
        Tool::ListDir { path } => Outcome::from(list_dir(&scope, path)),
        Tool::Grep { pattern, path } => grep(&scope, pattern, path.as_deref(), cancel),
        Tool::Shell { command, timeout_s } => {
            let session = ctx.info.name.as_deref().unwrap_or(&ctx.info.session_id);
            // What the command changes in its repository is found by
            // looking before and after (see [`crate::track`]).
            let before = crate::track::Before::take(&scope.root);
            let mut outcome = shell(&scope.root, session, command, *timeout_s, approver, cancel);
            match before {
                Some(before) => {
                    outcome.changes = before.changes(&crate::edit::Blobs::new(&ctx.info.state_root))
                }
                None => outcome.untracked = true,
            }
            outcome
        }
        Tool::RequestFileGrant { path, reason } => {
            request_grant(&scope, path, reason.as_deref(), approver)
        }
        Tool::AgentInfo => Outcome::from(agent_info(ctx)),
        Tool::Remember {
            label,
            content,
            replace,
        } => Outcome::text(remember(ctx, label, content, *replace)),
        Tool::GoalProgress { note, met } => Outcome::text(goal_progress(ctx, note, *met)),
        // The session opens, stages and writes edits step by step.
        Tool::EditFile { .. } | Tool::WriteFile { .. } => Outcome::text(format!(
            "error: {} runs through the session's edit steps, not as a tool",
            tool.name()
        )),
    }
}

/// `remember`: snapshots the project memory as a refinement would (so
/// `/refine undo` walks back over it), then writes the file atomically.
/// A refused write (an existing label without `replace`, deleting what is
/// not there) changes nothing and leaves no snapshot.
fn remember(ctx: &Context, label: &Label, content: &str, replace: bool) -> String {
    let dir = &ctx.memory.project;
    let current = fs::read(dir.join(label.file_name())).ok();
    let change = match revolve_core::memory::remember(label, current.as_deref(), content, replace) {
        Ok(Remembered::Written(change)) => change,
        Ok(Remembered::Unchanged) => {
            return format!(
                "unchanged: project memory {} already says exactly that",
                label.file_name()
            )
        }
        Err(refused) => return refused,
    };
    let session = ctx
        .info
        .name
        .clone()
        .unwrap_or_else(|| ctx.info.session_id.clone());
    let meta = revolve_core::memory::remember_meta(&session, ctx.messages, label, change);
    let stamp = revolve_core::refine::stamp(ctx.now);
    let _lock = match refine::lock(&ctx.info.state_root) {
        Ok(lock) => lock,
        Err(e) => return format!("error: cannot lock the memory snapshots: {e}"),
    };
    let stamp = match refine::snapshot(&ctx.info.state_root, &ctx.memory, &stamp, &meta) {
        Ok(stamp) => stamp,
        Err(e) => return format!("error: cannot snapshot the memory before writing it: {e}"),
    };
    let written = memory::write(dir, label, content, replace);
    // An entry exists exactly when memory changed.
    let finished = match written {
        Ok(_) => refine::settle(&ctx.info.state_root, &ctx.memory, &stamp),
        Err(_) => refine::discard(&ctx.info.state_root, &ctx.memory, &stamp),
    };
    if let Err(e) = finished {
        return format!("error: cannot finish the memory snapshot: {e}");
    }
    if written.is_ok() {
        for (file, what) in &meta.files {
            ctx.snapshots
                .borrow_mut()
                .push((stamp.clone(), format!("{file}: {what}")));
        }
    }
    match written {
        Ok(_) => format!(
            "{change} project memory {} ({})",
            label.file_name(),
            dir.display()
        ),
        Err(e) => e.to_string(),
    }
}

/// `GoalProgress`: a note on the standing goal, saved beside the memory.
fn goal_progress(ctx: &Context, note: &str, met: bool) -> String {
    match goal::update(&ctx.memory.project_dir, |goals| {
        goals.progress(note, met, ctx.now)
    }) {
        Ok(Ok(text) | Err(text)) => text,
        Err(e) => format!("error: cannot update the goal: {e}"),
    }
}

impl Outcome {
    fn text(output: String) -> Outcome {
        Outcome {
            output,
            grant: None,
            interrupted: false,
            seen: None,
            changes: Vec::new(),
            untracked: false,
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

// ---------------------------------------------------------------------------
// Confinement

/// The longest path a tool takes, in bytes (Linux's `PATH_MAX`): no file
/// has a longer one.
const PATH_MAX: usize = 4096; // not policy: the platform's limit

/// A path longer than [`PATH_MAX`] is refused without being echoed: an
/// error quoting megabytes of it would only fill the history.
fn too_long(raw: &str) -> Result<(), String> {
    if raw.len() > PATH_MAX {
        return Err(format!(
            "error: a path of {} bytes; a path has at most {PATH_MAX}",
            raw.len()
        ));
    }
    Ok(())
}

/// Whether the working tree is still the directory the session started
/// in: the same canonical path (no component swapped for a symlink) and
/// the same device and inode. Else the error every tool that uses it gets.
pub(crate) fn tree_unchanged(ctx: &Context) -> Result<(), String> {
    let same_path = fs::canonicalize(&ctx.root).is_ok_and(|now| now == ctx.root);
    let same_id = ctx.root_id.is_none() || FileId::of(&ctx.root) == ctx.root_id;
    if same_path && same_id {
        return Ok(());
    }
    Err(format!(
        "error: the working tree {} is no longer the directory this session started in \
         (moved, replaced or swapped for a symlink); its files are not read and no command \
         runs in it",
        ctx.root.display()
    ))
}

/// What may be read: the root and the grants, each fixed when it was
/// made. Neither is resolved again here: the root is the canonical path
/// the session started in, and a grant is the canonical path it was given
/// for, valid only while it still resolves to itself (a granted folder
/// swapped for a symlink to `/` grants nothing).
pub(crate) struct Scope {
    root: PathBuf,
    grants: Vec<PathBuf>,
}

impl Scope {
    pub(crate) fn new(root: &Path, grants: &[String]) -> Scope {
        Scope {
            root: root.to_path_buf(),
            grants: grants
                .iter()
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
                .filter(|p| fs::canonicalize(p).is_ok_and(|now| &now == p))
                .collect(),
        }
    }

    pub(crate) fn allows(&self, path: &Path) -> bool {
        path.starts_with(&self.root) || self.grants.iter().any(|g| path.starts_with(g))
    }

    /// The canonical path of `raw` if it exists and may be read; else the
    /// error the model gets.
    pub(crate) fn resolve(&self, raw: &str) -> Result<PathBuf, String> {
        too_long(raw)?;
        let joined = self.root.join(raw);
        match fs::canonicalize(&joined) {
            Ok(path) if self.allows(&path) => Ok(path),
            Ok(_) => Err(refusal(raw)),
            Err(e) if is_missing(&e) => {
                if self.allows(&lexical(&joined)) {
                    Err(format!("error: no such file: {raw}"))
                } else {
                    Err(refusal(raw))
                }
            }
            Err(e) => Err(format!("error: cannot open {raw}: {e}")),
        }
    }

    /// `path` relative to the root when inside it, else absolute.
    fn show(&self, path: &Path) -> String {
        match path.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".into(),
            Ok(rel) => rel.display().to_string(),
            Err(_) => path.display().to_string(),
        }
    }
}

pub(crate) fn refusal(raw: &str) -> String {
    format!(
        "error: {raw} is outside the working tree and not granted to this session; \
         ask with request_file_grant"
    )
}

fn is_missing(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}

/// `path` with `.` and `..` resolved by name only (no symlinks followed).
pub(crate) fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

// ---------------------------------------------------------------------------
// read_file

fn read_file(
    scope: &Scope,
    raw: &str,
    offset: Option<u64>,
    limit: Option<u64>,
) -> Result<String, String> {
    let path = scope.resolve(raw)?;
    let cannot = |e: io::Error| format!("error: cannot read {raw}: {e}");
    let meta = fs::metadata(&path).map_err(cannot)?;
    if meta.is_dir() {
        return Err(format!(
            "error: {raw} is a directory; list it with list_dir"
        ));
    }
    if !meta.is_file() {
        return Err(format!("error: {raw} is not a regular file"));
    }
    let mut file = File::open(&path).map_err(cannot)?;
    let mut head = Vec::new();
    (&mut file)
        .take(BINARY_PROBE as u64)
        .read_to_end(&mut head)
        .map_err(cannot)?;
    if head.contains(&0) {
        return Err(format!(
            "error: {raw} is a binary file; inspect it with shell (for example `xxd` or `strings`)"
        ));
    }
    let mut reader = BufReader::with_capacity(64 * 1024, io::Cursor::new(head).chain(file));

    let first = offset.unwrap_or(1).max(1);
    let mut buf = Vec::new();
    let mut line_no = 0u64; // lines consumed so far
    while line_no + 1 < first {
        if next_line(&mut reader, &mut buf, 0).map_err(cannot)? == 0 {
            return Err(format!(
                "error: offset {first} is past the end of {raw}, which has {line_no} lines"
            ));
        }
        line_no += 1;
    }

    let mut out: Vec<u8> = Vec::new();
    let mut taken = 0u64;
    // (the offset to read on with, whether the line there was cut short)
    let mut stop: Option<(u64, bool)> = None;
    while limit.is_none_or(|l| taken < l) {
        let room = READ_CAP - out.len();
        let len = next_line(&mut reader, &mut buf, room).map_err(cannot)?;
        if len == 0 {
            break;
        }
        line_no += 1;
        if len <= room {
            out.extend_from_slice(&buf);
            taken += 1;
        } else if taken == 0 {
            // One line longer than the cap: show its start.
            out.extend_from_slice(&buf);
            stop = Some((line_no + 1, true));
            break;
        } else {
            stop = Some((line_no, false));
            break;
        }
    }

    let mut text = String::from_utf8_lossy(&out).into_owned();
    if taken == 0 && stop.is_none() && limit != Some(0) {
        return if first == 1 {
            Ok(format!("[{raw} is empty]"))
        } else {
            Err(format!(
                "error: offset {first} is past the end of {raw}, which has {line_no} lines"
            ))
        };
    }
    if let Some((resume, cut_line)) = stop {
        let mut rest = 0u64;
        while next_line(&mut reader, &mut buf, 0).map_err(cannot)? > 0 {
            rest += 1;
        }
        let more = if cut_line { rest } else { rest + 1 };
        if !text.ends_with('\n') {
            text.push('\n');
        }
        if cut_line {
            text.push_str(&format!(
                "[… line {} is longer than 256 KiB and was cut; read the rest of it with shell \
                 (for example `cut -c`)]\n",
                resume - 1
            ));
        }
        if more > 0 {
            text.push_str(&format!(
                "[… file continues: {more} more lines; read on with offset={resume}]"
            ));
        }
    }
    Ok(text)
}

/// Reads one line (through its `\n`), keeping at most `keep` bytes of it in
/// `buf`; returns the line's whole length, 0 at the end of the input.
fn next_line(reader: &mut impl BufRead, buf: &mut Vec<u8>, keep: usize) -> io::Result<usize> {
    buf.clear();
    let mut total = 0;
    loop {
        let chunk = match reader.fill_buf() {
            Ok(chunk) => chunk,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok(total);
        }
        let (used, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        let room = keep.saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..used.min(room)]);
        reader.consume(used);
        total += used;
        if done {
            return Ok(total);
        }
    }
}

// ---------------------------------------------------------------------------
// list_dir

fn list_dir(scope: &Scope, raw: &str) -> Result<String, String> {
    let path = scope.resolve(raw)?;
    let cannot = |e: io::Error| format!("error: cannot list {raw}: {e}");
    if !fs::metadata(&path).map_err(cannot)?.is_dir() {
        return Err(format!(
            "error: {raw} is not a directory; read it with read_file"
        ));
    }
    // Everything there, to say how much the walk's rules left out (and to
    // report an unreadable folder as it is).
    let all = fs::read_dir(&path).map_err(cannot)?.count();
    // One level of grep's walk: ripgrep's rules (`.gitignore` in a
    // repository or not, `.ignore`, `.git/info/exclude`, hidden names
    // skipped), symlinks not followed.
    let walk = ignore::WalkBuilder::new(&path)
        .standard_filters(true)
        .git_global(false)
        .require_git(false)
        .follow_links(false)
        .max_depth(Some(1))
        .build();
    let mut entries: Vec<(String, String)> = walk
        .filter_map(Result::ok)
        .filter(|entry| entry.depth() == 1)
        .map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let line = match entry.file_type() {
                Some(t) if t.is_symlink() => match fs::read_link(entry.path()) {
                    Ok(target) => format!("{name} -> {}", target.display()),
                    Err(_) => format!("{name} -> ?"),
                },
                Some(t) if t.is_dir() => format!("{name}/"),
                _ => name.clone(),
            };
            (name, line)
        })
        .collect();
    let left_out = all.saturating_sub(entries.len());
    if entries.is_empty() && left_out == 0 {
        return Ok(format!("[{raw} is empty]"));
    }
    entries.sort();
    let total = entries.len();
    let mut text: String = entries
        .iter()
        .take(LIST_CAP)
        .map(|(_, line)| format!("{line}\n"))
        .collect();
    if total > LIST_CAP {
        text.push_str(&format!(
            "[… {} more entries not shown, {total} in all; use shell (for example `ls | tail`) \
             or grep to find what you need]\n",
            total - LIST_CAP
        ));
    }
    if left_out > 0 {
        text.push_str(&format!(
            "[{left_out} {} not shown: hidden, or ignored by .gitignore or .ignore, as grep \
             skips them; `ls -a` in shell shows everything]\n",
            if left_out == 1 { "entry" } else { "entries" }
        ));
    }
    text.pop(); // the last newline
    Ok(text)
}

// ---------------------------------------------------------------------------
// grep

/// What a search found and passed over.
#[derive(Default)]
struct Found {
    text: String,
    shown: usize,
    left_out: usize,
    too_big: usize,
    binary: usize,
    unreadable: usize,
    files: usize,
    out_of_time: bool,
    interrupted: bool,
}

fn grep(scope: &Scope, pattern: &str, raw: Option<&str>, cancel: &dyn Fn() -> bool) -> Outcome {
    let matcher = match Matcher::new(pattern) {
        Ok(matcher) => matcher,
        Err(e) => return Outcome::text(format!("error: grep: bad pattern: {e}")),
    };
    let start = match raw {
        Some(raw) => match scope.resolve(raw) {
            Ok(path) => path,
            Err(e) => return Outcome::text(e),
        },
        None => scope.root.clone(),
    };
    // As read_file does: a FIFO would block the read and a device may never
    // end it, so a path given is a directory or a regular file.
    if let Some(raw) = raw {
        match fs::metadata(&start) {
            Ok(meta) if meta.is_dir() || meta.is_file() => {}
            Ok(_) => {
                return Outcome::text(format!(
                    "error: grep: {raw} is not a regular file or a directory"
                ))
            }
            Err(e) => return Outcome::text(format!("error: grep: cannot read {raw}: {e}")),
        }
    }
    let started = Instant::now();
    let mut found = Found::default();
    // As ripgrep walks: `.gitignore` (in a repository or not), `.ignore`,
    // `.git/info/exclude`, hidden files and folders skipped, symlinks not
    // followed, sorted; and `.git`, `target`, `node_modules` always skipped.
    let walk = ignore::WalkBuilder::new(&start)
        .standard_filters(true)
        .git_global(false)
        .require_git(false)
        .follow_links(false)
        .sort_by_file_path(|a, b| a.cmp(b))
        .filter_entry(|entry| {
            entry.depth() == 0
                || !entry.file_type().is_some_and(|t| t.is_dir())
                || !GREP_SKIP.contains(&&*entry.file_name().to_string_lossy())
        })
        .build();
    for entry in walk {
        if found.interrupted || cancel() {
            return Outcome::interrupted("error: interrupted".into());
        }
        if found.out_of_time || started.elapsed() > GREP_TIME {
            found.out_of_time = true;
            break;
        }
        let Ok(entry) = entry else {
            found.unreadable += 1;
            continue;
        };
        // Regular files only: sockets and FIFOs skipped, symlinks not read.
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        search_file(scope, entry.path(), &matcher, &mut found, &|| {
            if cancel() {
                Some(true)
            } else {
                (started.elapsed() > GREP_TIME).then_some(false)
            }
        });
    }

    if found.files == 1 && found.binary == 1 && !start.is_dir() {
        return Outcome::text(format!(
            "error: {} is a binary file; grep searches text files only",
            raw.unwrap_or_default()
        ));
    }
    let mut text = found.text;
    if found.shown == 0 && found.left_out == 0 {
        text = format!("no matches for {pattern}\n");
    }
    let mut note = |s: String| text.push_str(&format!("[{s}]\n"));
    if found.left_out > 0 {
        note(format!(
            "… {} more matching {} left out; narrow the pattern or the path",
            found.left_out,
            if found.left_out == 1 { "line" } else { "lines" }
        ));
    }
    if found.too_big > 0 {
        note(format!(
            "skipped {} over 4 MiB",
            plural(found.too_big, "file")
        ));
    }
    if found.unreadable > 0 {
        note(format!(
            "skipped {} files or directories that could not be read",
            found.unreadable
        ));
    }
    if found.out_of_time {
        note(format!(
            "stopped after {} s before searching everything; narrow the path",
            GREP_TIME.as_secs()
        ));
    }
    text.pop(); // the last newline
    Outcome::text(text)
}

/// Searches one file. `stop` is asked every 1024 lines: `Some(true)` to
/// stop as interrupted, `Some(false)` as out of time.
fn search_file(
    scope: &Scope,
    path: &Path,
    matcher: &Matcher,
    found: &mut Found,
    stop: &dyn Fn() -> Option<bool>,
) {
    found.files += 1;
    // Opened as a regular file only (a FIFO swapped in since the folder was
    // read is refused, never waited on), and read to the size limit at
    // most, whatever the size said.
    let file = match regular::read(path) {
        Ok((_, meta)) if meta.len() > GREP_FILE_MAX => {
            found.too_big += 1;
            return;
        }
        Ok((file, _)) => file,
        Err(_) => {
            found.unreadable += 1;
            return;
        }
    };
    let mut bytes = Vec::new();
    if file
        .take(GREP_FILE_MAX + 1)
        .read_to_end(&mut bytes)
        .is_err()
    {
        found.unreadable += 1;
        return;
    }
    if bytes.len() as u64 > GREP_FILE_MAX {
        found.too_big += 1;
        return;
    }
    if bytes[..bytes.len().min(BINARY_PROBE)].contains(&0) {
        found.binary += 1;
        return;
    }
    let text = String::from_utf8_lossy(&bytes);
    let shown_path = scope.show(path);
    for (i, line) in text.lines().enumerate() {
        if i % 1024 == 1023 {
            match stop() {
                Some(true) => found.interrupted = true,
                Some(false) => found.out_of_time = true,
                None => {}
            }
            if found.interrupted || found.out_of_time {
                return;
            }
        }
        if !matcher.is_match(line) {
            continue;
        }
        if found.left_out > 0 || found.shown >= GREP_LINES {
            found.left_out += 1;
            continue;
        }
        let entry = match line.char_indices().nth(GREP_LINE_CHARS) {
            Some((cut, _)) => format!(
                "{shown_path}:{}:{}[… {} more characters]\n",
                i + 1,
                &line[..cut],
                line[cut..].chars().count()
            ),
            None => format!("{shown_path}:{}:{line}\n", i + 1),
        };
        if found.text.len() + entry.len() > GREP_BYTES {
            found.left_out += 1;
        } else {
            found.text.push_str(&entry);
            found.shown += 1;
        }
    }
}

fn plural(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

// ---------------------------------------------------------------------------
// shell

/// How often the child, the clock and `cancel` are checked, at most.
const SHELL_POLL: Duration = Duration::from_millis(50); // not policy: how often cancel is polled

/// How a command ended.
enum Ending {
    Exited(ExitStatus),
    TimedOut(u64),
    Interrupted,
    TooMuch,
    Lost(io::Error),
}

/// Runs `sh -c command` in the tree, without the API keys, with
/// `REVOLVE_SESSION` naming the session (so `revolve send` from it says who
/// a message is from).
fn shell(
    root: &Path,
    session: &str,
    command: &str,
    timeout_s: Option<u64>,
    approver: &mut dyn Approver,
    cancel: &dyn Fn() -> bool,
) -> Outcome {
    if !approver.approve_shell(command) {
        return Outcome::text("error: the user did not allow this command".into());
    }
    let secs = timeout_s
        .unwrap_or(SHELL_TIMEOUT_S)
        .clamp(1, SHELL_MAX_TIMEOUT_S);
    let mut group = match Group::start() {
        Ok(group) => group,
        Err(e) => return Outcome::text(format!("error: cannot start sh: {e}")),
    };
    let mut sh = std::process::Command::new("sh");
    sh.arg("-c")
        .arg(command)
        .current_dir(root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(group.id())
        .env("REVOLVE_SESSION", session);
    for name in API_KEY_VARS {
        sh.env_remove(name);
    }
    let spawned = sh.spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => return Outcome::text(format!("error: cannot start sh: {e}")),
    };
    let (done, drained) = mpsc::channel();
    let stdout = Capture::start(child.stdout.take(), done.clone());
    let stderr = Capture::start(child.stderr.take(), done);
    let (stdout, stderr) = match (stdout, stderr) {
        (Ok(out), Ok(err)) => (out, err),
        (Err(e), _) | (_, Err(e)) => {
            end(&mut group, &mut child);
            return Outcome::text(format!("error: cannot capture the command's output: {e}"));
        }
    };

    let started = Instant::now();
    let mut pause = Duration::from_millis(1);
    let mut ending = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Ending::Exited(status),
            Ok(None) => {}
            Err(e) => break Ending::Lost(e),
        }
        if cancel() {
            break Ending::Interrupted;
        }
        if started.elapsed() >= Duration::from_secs(secs) {
            break Ending::TimedOut(secs);
        }
        if stdout.overflowed() || stderr.overflowed() {
            break Ending::TooMuch;
        }
        thread::sleep(pause);
        pause = (pause * 2).min(SHELL_POLL);
    };
    // However it ended, nothing it started outlives it.
    end(&mut group, &mut child);

    // Both readers end at EOF, unless a background process keeps a pipe.
    let deadline = Instant::now() + SHELL_DRAIN;
    let mut open = 2;
    while open > 0 {
        let left = deadline.saturating_duration_since(Instant::now());
        match drained.recv_timeout(left) {
            Ok(()) => open -= 1,
            Err(_) => break,
        }
    }
    if matches!(ending, Ending::Exited(_)) && (stdout.overflowed() || stderr.overflowed()) {
        // A reader stopped at the cap and the command died of the broken
        // pipe before the loop above saw the overflow.
        ending = Ending::TooMuch;
    }
    let out = stdout.finish();
    let err = stderr.finish();

    let (head, interrupted) = match &ending {
        Ending::Exited(status) => (
            match (status.code(), status.signal()) {
                (Some(code), _) => format!("exit status: {code}"),
                (None, Some(signal)) => format!("exit status: killed by signal {signal}"),
                (None, None) => "exit status: unknown".into(),
            },
            false,
        ),
        Ending::TimedOut(secs) => (
            format!(
                "error: the command timed out after {secs} s and was killed; pass a larger \
                 timeout_s (at most {SHELL_MAX_TIMEOUT_S}) if it needs longer"
            ),
            false,
        ),
        Ending::Interrupted => ("error: interrupted; the command was killed".into(), true),
        Ending::TooMuch => (
            "error: the command wrote more than 64 MiB, so it was stopped and its output cut \
             there; redirect its output to a file and read parts of it"
                .into(),
            false,
        ),
        Ending::Lost(e) => (
            format!("error: lost track of the command ({e}); it was killed"),
            false,
        ),
    };
    let mut text = head;
    for (label, bytes) in [("stdout", &out), ("stderr", &err)] {
        if !bytes.is_empty() {
            text.push_str(&format!("\n{label}:\n"));
            text.push_str(&String::from_utf8_lossy(bytes));
            if text.ends_with('\n') {
                text.pop();
            }
        }
    }
    if open > 0 {
        text.push_str(
            "\n[a background process still holds the command's output open; what it writes \
             later is not shown]",
        );
    }
    Outcome {
        interrupted,
        ..Outcome::text(text)
    }
}

/// One output stream, read on its own thread.
struct Capture {
    buf: Arc<Mutex<Vec<u8>>>,
    stop: Arc<AtomicBool>,
    overflow: Arc<AtomicBool>,
}

impl Capture {
    fn start(
        pipe: Option<impl Read + Send + 'static>,
        done: mpsc::Sender<()>,
    ) -> io::Result<Capture> {
        let capture = Capture {
            buf: Arc::default(),
            stop: Arc::default(),
            overflow: Arc::default(),
        };
        let (buf, stop, overflow) = (
            capture.buf.clone(),
            capture.stop.clone(),
            capture.overflow.clone(),
        );
        thread::Builder::new()
            .name("shell-output".into())
            .spawn(move || {
                if let Some(mut pipe) = pipe {
                    let mut chunk = vec![0u8; 64 * 1024];
                    loop {
                        let n = match pipe.read(&mut chunk) {
                            Ok(0) => break,
                            Ok(n) => n,
                            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                            Err(_) => break,
                        };
                        if stop.load(Ordering::SeqCst) {
                            break;
                        }
                        let mut buf = buf.lock().unwrap_or_else(|e| e.into_inner());
                        let room = SHELL_STREAM_CAP - buf.len();
                        buf.extend_from_slice(&chunk[..n.min(room)]);
                        if n > room {
                            overflow.store(true, Ordering::SeqCst);
                            break;
                        }
                    }
                }
                let _ = done.send(());
            })?;
        Ok(capture)
    }

    fn overflowed(&self) -> bool {
        self.overflow.load(Ordering::SeqCst)
    }

    /// What was read so far; the reader keeps nothing more.
    fn finish(self) -> Vec<u8> {
        self.stop.store(true, Ordering::SeqCst);
        std::mem::take(&mut *self.buf.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Kills the command's whole group (background children included), reaps
/// the command, then what escaped the group (see [`group`]).
fn end(group: &mut Group, child: &mut Child) {
    group.kill();
    let _ = child.kill();
    let _ = child.wait();
    group::reap_escaped();
}

// ---------------------------------------------------------------------------
// request_file_grant and agent_info

fn request_grant(
    scope: &Scope,
    raw: &str,
    reason: Option<&str>,
    approver: &mut dyn Approver,
) -> Outcome {
    if let Err(e) = too_long(raw) {
        return Outcome::text(e);
    }
    if !Path::new(raw).is_absolute() {
        return Outcome::text(format!(
            "error: request_file_grant needs an absolute path, not {raw}"
        ));
    }
    let path = match fs::canonicalize(raw) {
        Ok(path) => path,
        Err(e) if is_missing(&e) => return Outcome::text(format!("error: no such file: {raw}")),
        Err(e) => return Outcome::text(format!("error: cannot open {raw}: {e}")),
    };
    let Some(shown) = path.to_str().map(str::to_owned) else {
        return Outcome::text(format!(
            "error: {} is not valid UTF-8 and cannot be granted",
            path.display()
        ));
    };
    if scope.allows(&path) {
        return Outcome::text(format!(
            "{shown} is already readable by this session; no grant is needed"
        ));
    }
    if approver.approve_grant(&path, reason) {
        Outcome {
            output: format!("granted: {shown} (this session may now read it)"),
            grant: Some(shown),
            seen: None,
            changes: Vec::new(),
            untracked: false,
            interrupted: false,
        }
    } else {
        Outcome::text(format!("error: the user did not grant {shown}"))
    }
}

fn agent_info(ctx: &Context) -> Result<String, String> {
    #[derive(Serialize)]
    struct Shown<'a> {
        #[serde(flatten)]
        info: &'a AgentInfo,
        working_dir: &'a Path,
    }
    serde_json::to_string_pretty(&Shown {
        info: &ctx.info,
        working_dir: &ctx.root,
    })
    .map_err(|e| format!("error: cannot describe this session: {e}"))
}

// ---------------------------------------------------------------------------
// Matching: the regex crate (what ripgrep is built on), linear in the line.

/// A compiled pattern.
struct Matcher {
    regex: regex::Regex,
}

impl Matcher {
    /// `pattern` in the regex crate's syntax (Rust's, much like ripgrep's:
    /// `(?i)`, `\b`, `\<`, `\>`, `\d`, `\p{..}`, `[[:alpha:]]`, …); one
    /// it refuses, or one too large, is a clear error.
    fn new(pattern: &str) -> Result<Matcher, String> {
        if pattern.chars().count() > PATTERN_MAX {
            return Err(format!("longer than {PATTERN_MAX} characters"));
        }
        regex::RegexBuilder::new(pattern)
            .size_limit(PATTERN_SIZE_MAX)
            .dfa_size_limit(PATTERN_SIZE_MAX)
            .build()
            .map(|regex| Matcher { regex })
            .map_err(|e| match e {
                regex::Error::CompiledTooBig(_) => "too large to compile".to_owned(),
                e => {
                    let text = e.to_string();
                    let why = text.lines().last().unwrap_or("").trim();
                    format!(
                        "{} (escape ( ) [ ] {{ }} . * + ? | with a backslash to match them as text)",
                        why.strip_prefix("error: ").unwrap_or(why)
                    )
                }
            })
    }

    /// Whether the pattern matches somewhere in `line`.
    fn is_match(&self, line: &str) -> bool {
        self.regex.is_match(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    use std::os::unix::fs::symlink;
    use std::sync::atomic::AtomicUsize;

    /// A fresh directory, removed on drop.
    struct Temp(PathBuf);

    impl Temp {
        fn new() -> Temp {
            static N: AtomicUsize = AtomicUsize::new(0);
            let dir = std::env::temp_dir().join(format!(
                "revolve-tools-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::SeqCst)
            ));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).unwrap();
            Temp(fs::canonicalize(&dir).unwrap())
        }

        fn path(&self, rel: &str) -> PathBuf {
            self.0.join(rel)
        }

        fn write(&self, rel: &str, content: impl AsRef<[u8]>) -> PathBuf {
            let path = self.path(rel);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(&path, content).unwrap();
            path
        }
    }

    impl Drop for Temp {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    /// Says a fixed yes or no and records what it was asked.
    struct Fixed {
        yes: bool,
        asked: Vec<String>,
    }

    impl Approver for Fixed {
        fn approve_shell(&mut self, command: &str) -> bool {
            self.asked.push(command.into());
            self.yes
        }
        fn approve_grant(&mut self, path: &Path, reason: Option<&str>) -> bool {
            self.asked
                .push(format!("{} {}", path.display(), reason.unwrap_or("-")));
            self.yes
        }
    }

    fn fixed(yes: bool) -> Fixed {
        Fixed {
            yes,
            asked: Vec::new(),
        }
    }

    fn ctx(root: &Path) -> Context {
        let mem = root.join(".mem");
        Context {
            root: root.to_path_buf(),
            root_id: FileId::of(root),
            info: AgentInfo {
                state_root: mem.join("state"),
                ..AgentInfo::default()
            },
            memory: MemoryDirs {
                global: mem.join("global"),
                project: mem.join("project/memory"),
                project_dir: mem.join("project"),
                workspace: None,
            },
            messages: 4,
            now: time::macros::datetime!(2026-12-02 10:00 UTC),
            snapshots: Default::default(),
        }
    }

    #[test]
    fn remember_writes_project_memory_after_a_snapshot() {
        let tmp = Temp::new();
        let c = ctx(&tmp.0);
        let label = Label::parse("db").unwrap();
        let remember = |content: &str, replace| Tool::Remember {
            label: label.clone(),
            content: content.into(),
            replace,
        };
        let out = run(
            &remember("port 5432", false),
            &[],
            &c,
            &mut fixed(true),
            &|| false,
        )
        .output;
        assert!(out.starts_with("created project memory db.md"), "{out}");
        assert_eq!(
            fs::read_to_string(c.memory.project.join("db.md")).unwrap(),
            "port 5432"
        );
        let out = run(
            &remember("port 6543", false),
            &[],
            &c,
            &mut fixed(true),
            &|| false,
        )
        .output;
        assert_eq!(
            out,
            "error: memory 'db' exists; pass replace: true to overwrite it"
        );
        let out = run(
            &remember("port 6543", true),
            &[],
            &c,
            &mut fixed(true),
            &|| false,
        )
        .output;
        assert!(out.starts_with("replaced"), "{out}");
        let out = run(&remember("", false), &[], &c, &mut fixed(true), &|| false).output;
        assert!(out.starts_with("deleted"), "{out}");
        assert!(!c.memory.project.join("db.md").exists());
        // Every change left a snapshot holding the files as they were.
        let store = memory::refinements(&c.info.state_root, &c.memory.project).unwrap();
        assert_eq!(fs::read_dir(store).unwrap().count(), 3);
    }

    #[test]
    fn goal_progress_needs_an_active_goal_and_is_saved() {
        let tmp = Temp::new();
        let c = ctx(&tmp.0);
        let progress = Tool::GoalProgress {
            note: "parser done".into(),
            met: false,
        };
        let out = run(&progress, &[], &c, &mut fixed(true), &|| false).output;
        assert!(out.starts_with("error:"), "{out}");
        let mut goals = goal::load(&c.memory.project_dir).unwrap();
        goals
            .apply(
                &revolve_core::goal::GoalCommand::Set("ship it".into()),
                c.now,
            )
            .unwrap();
        goal::save(&c.memory.project_dir, &goals).unwrap();
        let out = run(&progress, &[], &c, &mut fixed(true), &|| false).output;
        assert!(!out.starts_with("error:"), "{out}");
        assert_eq!(
            goal::load(&c.memory.project_dir)
                .unwrap()
                .current
                .unwrap()
                .notes
                .len(),
            1
        );
    }

    fn run_with(root: &Path, tool: Tool, grants: &[String]) -> Outcome {
        run(&tool, grants, &ctx(root), &mut fixed(true), &|| false)
    }

    fn read(root: &Path, path: &str, grants: &[String]) -> String {
        let tool = Tool::ReadFile {
            path: path.into(),
            offset: None,
            limit: None,
        };
        run_with(root, tool, grants).output
    }

    fn read_range(root: &Path, path: &str, offset: Option<u64>, limit: Option<u64>) -> String {
        let tool = Tool::ReadFile {
            path: path.into(),
            offset,
            limit,
        };
        run_with(root, tool, &[]).output
    }

    fn grep_in(root: &Path, pattern: &str, path: Option<&str>) -> String {
        let tool = Tool::Grep {
            pattern: pattern.into(),
            path: path.map(Into::into),
        };
        run_with(root, tool, &[]).output
    }

    fn sh(root: &Path, command: &str, timeout_s: Option<u64>) -> Outcome {
        let tool = Tool::Shell {
            command: command.into(),
            timeout_s,
        };
        run_with(root, tool, &[])
    }

    fn is_refusal(out: &str) -> bool {
        out.starts_with("error: ") && out.contains("outside the working tree and not granted")
    }

    #[test]
    fn confinement_allows_the_tree_and_grants_only() {
        let t = Temp::new();
        let root = t.path("tree");
        t.write("tree/a.txt", "inside\n");
        t.write("tree/sub/b.txt", "deeper\n");
        let secret = t.write("outside/secret.txt", "secret\n");
        t.write("outside/dir/c.txt", "granted dir\n");
        symlink(&secret, root.join("link")).unwrap();
        symlink(root.join("a.txt"), root.join("inner-link")).unwrap();

        assert_eq!(read(&root, "a.txt", &[]), "inside\n");
        assert_eq!(read(&root, "./sub/../sub/b.txt", &[]), "deeper\n");
        assert_eq!(
            read(&root, root.join("a.txt").to_str().unwrap(), &[]),
            "inside\n"
        );
        assert_eq!(read(&root, "inner-link", &[]), "inside\n");

        let out = read(&root, "../outside/secret.txt", &[]);
        assert_eq!(
            out,
            "error: ../outside/secret.txt is outside the working tree and not granted to this \
             session; ask with request_file_grant"
        );
        assert!(is_refusal(&read(&root, secret.to_str().unwrap(), &[])));
        assert!(is_refusal(&read(&root, "link", &[])), "symlink out");
        assert!(is_refusal(&read(
            &root,
            "sub/../../outside/secret.txt",
            &[]
        )));
        assert!(is_refusal(&read(&root, "/etc/passwd", &[])));

        // Missing: inside says so; outside is refused like any outside path.
        assert_eq!(
            read(&root, "nope.txt", &[]),
            "error: no such file: nope.txt"
        );
        assert_eq!(read(&root, "a.txt/x", &[]), "error: no such file: a.txt/x");
        assert!(is_refusal(&read(&root, "../outside/nope.txt", &[])));

        // A granted file, and the symlink to it.
        let grant = vec![secret.display().to_string()];
        assert_eq!(read(&root, secret.to_str().unwrap(), &grant), "secret\n");
        assert_eq!(read(&root, "link", &grant), "secret\n");
        assert_eq!(read(&root, "../outside/secret.txt", &grant), "secret\n");
        assert!(is_refusal(&read(&root, "../outside/dir/c.txt", &grant)));

        // A granted directory: everything under it, not its siblings.
        let grant = vec![t.path("outside/dir").display().to_string()];
        assert_eq!(read(&root, "../outside/dir/c.txt", &grant), "granted dir\n");
        assert!(is_refusal(&read(&root, "../outside/secret.txt", &grant)));
        let listing = run_with(
            &root,
            Tool::ListDir {
                path: t.path("outside/dir").display().to_string(),
            },
            &grant,
        );
        assert_eq!(listing.output, "c.txt");
        // A grant is the canonical path it was made for: one that no longer
        // resolves to itself (here never did) grants nothing.
        let grant = vec![format!("{}/../outside/./dir", root.display())];
        assert!(is_refusal(&read(&root, "../outside/dir/c.txt", &grant)));
        // Relative grants mean nothing.
        let grant = vec!["../outside".to_string()];
        assert!(is_refusal(&read(&root, "../outside/secret.txt", &grant)));
    }

    #[test]
    fn spilled_results_are_readable_through_their_grant() {
        let t = Temp::new();
        let root = t.path("tree");
        fs::create_dir_all(&root).unwrap();
        let spill = t.write(
            "state/spills/s1/0001-call_1.txt",
            "line 1\nline 2\nline 3\n",
        );
        t.write("state/spills/s1/0002-other.txt", "not granted\n");
        let grants = vec![spill.display().to_string()];
        let out = run_with(
            &root,
            Tool::ReadFile {
                path: spill.display().to_string(),
                offset: Some(2),
                limit: Some(1),
            },
            &grants,
        );
        assert_eq!(out.output, "line 2\n");
        let other = t.path("state/spills/s1/0002-other.txt");
        assert!(is_refusal(&read(&root, other.to_str().unwrap(), &grants)));
    }

    #[test]
    fn read_file_ranges_and_errors() {
        let t = Temp::new();
        let text: String = (1..=10).map(|i| format!("line {i}\n")).collect();
        t.write("ten.txt", &text);
        assert_eq!(read_range(&t.0, "ten.txt", None, None), text);
        assert_eq!(
            read_range(&t.0, "ten.txt", Some(3), Some(2)),
            "line 3\nline 4\n"
        );
        assert_eq!(read_range(&t.0, "ten.txt", Some(0), Some(1)), "line 1\n");
        assert_eq!(
            read_range(&t.0, "ten.txt", Some(9), None),
            "line 9\nline 10\n"
        );
        assert_eq!(read_range(&t.0, "ten.txt", Some(10), Some(5)), "line 10\n");
        assert_eq!(
            read_range(&t.0, "ten.txt", Some(12), None),
            "error: offset 12 is past the end of ten.txt, which has 10 lines"
        );
        t.write("tail.txt", "a\nno newline at end");
        assert_eq!(
            read_range(&t.0, "tail.txt", Some(2), None),
            "no newline at end"
        );
        t.write("empty.txt", "");
        assert_eq!(read(&t.0, "empty.txt", &[]), "[empty.txt is empty]");
        t.write("latin1.txt", b"caf\xe9\n");
        assert_eq!(read(&t.0, "latin1.txt", &[]), "caf\u{fffd}\n");
        t.write("ctl.txt", "bell\x07 esc\x1b[31m\n");
        assert_eq!(read(&t.0, "ctl.txt", &[]), "bell\x07 esc\x1b[31m\n");

        let mut binary = b"text at first\n".to_vec();
        binary.extend([0u8, 1, 2]);
        t.write("bin.dat", binary);
        let out = read(&t.0, "bin.dat", &[]);
        assert!(out.starts_with("error: bin.dat is a binary file"), "{out}");

        fs::create_dir_all(t.path("dir")).unwrap();
        assert_eq!(
            read(&t.0, "dir", &[]),
            "error: dir is a directory; list it with list_dir"
        );
    }

    #[test]
    fn read_file_caps_output_and_says_how_to_read_on() {
        let t = Temp::new();
        // 10_000 lines of 100 bytes: about 1 MB.
        let line = format!("{}\n", "x".repeat(99));
        t.write("big.txt", line.repeat(10_000));
        let out = read(&t.0, "big.txt", &[]);
        let shown = READ_CAP / 100; // whole lines that fit
        let (body, note) = out.rsplit_once('\n').unwrap();
        assert_eq!(body.len(), shown * 100 - 1);
        assert_eq!(
            note,
            format!(
                "[… file continues: {} more lines; read on with offset={}]",
                10_000 - shown,
                shown + 1
            )
        );
        // Reading on from there continues exactly.
        let next = read_range(&t.0, "big.txt", Some(shown as u64 + 1), Some(1));
        assert_eq!(next, line);
        // A limit that fits is not cut and has no note.
        let out = read_range(&t.0, "big.txt", Some(5), Some(3));
        assert_eq!(out, line.repeat(3));

        // One line longer than the cap.
        t.write(
            "long.txt",
            format!("{}\nsecond\nthird\n", "y".repeat(READ_CAP + 10)),
        );
        let out = read(&t.0, "long.txt", &[]);
        let mut lines = out.lines();
        assert_eq!(lines.next().unwrap().len(), READ_CAP);
        assert!(lines
            .next()
            .unwrap()
            .starts_with("[… line 1 is longer than 256 KiB"));
        assert_eq!(
            lines.next().unwrap(),
            "[… file continues: 2 more lines; read on with offset=2]"
        );
    }

    #[test]
    fn list_dir_format() {
        let t = Temp::new();
        t.write("b.txt", "");
        t.write("a.txt", "");
        t.write(".hidden", "");
        fs::create_dir_all(t.path("sub/inner")).unwrap();
        symlink("a.txt", t.path("c-link")).unwrap();
        let list = |p: &str| run_with(&t.0, Tool::ListDir { path: p.into() }, &[]).output;
        assert_eq!(
            list("."),
            "a.txt\nb.txt\nc-link -> a.txt\nsub/\n[1 entry not shown: hidden, or ignored by \
             .gitignore or .ignore, as grep skips them; `ls -a` in shell shows everything]"
        );
        assert_eq!(list("sub"), "inner/");
        assert_eq!(list("sub/inner"), "[sub/inner is empty]");
        assert_eq!(
            list("a.txt"),
            "error: a.txt is not a directory; read it with read_file"
        );
        assert_eq!(list("missing"), "error: no such file: missing");
        assert!(is_refusal(&list("..")));

        for i in 0..2005 {
            t.write(&format!("many/f{i:04}"), "");
        }
        let out = list("many");
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), LIST_CAP + 1);
        assert_eq!(lines[0], "f0000");
        assert_eq!(lines[LIST_CAP - 1], "f1999");
        assert!(lines[LIST_CAP].starts_with("[… 5 more entries not shown, 2005 in all"));
    }

    #[test]
    fn list_dir_leaves_out_what_grep_skips() {
        let t = Temp::new();
        t.write(".gitignore", "dist/\n*.log\n");
        t.write(".ignore", "scratch.txt\n");
        t.write(".env", "needle\n");
        t.write("dist/bundle.js", "needle\n");
        t.write("build.log", "needle\n");
        t.write("scratch.txt", "needle\n");
        t.write("src/main.rs", "needle\n");
        t.write("src/.cache", "needle\n");
        t.write("notes.md", "needle\n");
        let list = |p: &str| run_with(&t.0, Tool::ListDir { path: p.into() }, &[]).output;
        let note = |n: usize| {
            format!(
                "[{n} entries not shown: hidden, or ignored by .gitignore or .ignore, as grep \
                 skips them; `ls -a` in shell shows everything]"
            )
        };
        // The gitignored folder and file, the `.ignore`d file and the
        // hidden ones are left out, and counted.
        assert_eq!(list("."), format!("notes.md\nsrc/\n{}", note(6)));
        assert_eq!(
            list("src"),
            "main.rs\n[1 entry not shown: hidden, or ignored by .gitignore or .ignore, as \
             grep skips them; `ls -a` in shell shows everything]"
        );
        // What grep searches is what list_dir shows.
        assert_eq!(
            grep_in(&t.0, "needle", None),
            "notes.md:1:needle\nsrc/main.rs:1:needle"
        );
        // A folder named explicitly is listed, ignored or not (as ripgrep
        // searches a path it is given).
        assert_eq!(list("dist"), "bundle.js");
        // Only hidden or ignored entries: not "empty".
        fs::remove_file(t.path("src/main.rs")).unwrap();
        assert!(list("src").starts_with("[1 entry not shown: hidden"));
    }

    #[test]
    fn grep_finds_lines_in_the_tree() {
        let t = Temp::new();
        t.write("src/main.rs", "fn main() {\n    println!(\"hello\");\n}\n");
        t.write("src/lib.rs", "pub fn hello_world() {}\n// TODO: more\n");
        t.write("notes.md", "Hello there\n");
        t.write("target/debug/out.rs", "fn hidden_in_target() {}\n");
        t.write(".git/config", "fn in_git\n");
        t.write(".cache/x.rs", "fn in_hidden_dir\n");
        t.write("node_modules/m.js", "fn in_node_modules\n");
        t.write("bin.dat", b"fn \0 binary");
        t.write(
            "big.txt",
            format!("fn big\n{}", "z".repeat(GREP_FILE_MAX as usize)),
        );
        symlink(t.path("src"), t.path("src-link")).unwrap();

        assert_eq!(
            grep_in(&t.0, "fn", None),
            "src/lib.rs:1:pub fn hello_world() {}\nsrc/main.rs:1:fn main() {\n\
             [skipped 1 file over 4 MiB]"
        );
        assert_eq!(
            grep_in(&t.0, "^fn main\\(\\) \\{$", Some("src")),
            "src/main.rs:1:fn main() {"
        );
        // A `{` that starts no count is refused, as ripgrep refuses it,
        // saying how to match it.
        assert_eq!(
            grep_in(&t.0, "main() {", Some("src")),
            "error: grep: bad pattern: unclosed counted repetition (escape ( ) [ ] { } . * + ? | with a backslash to match them as text)"
        );
        assert_eq!(
            grep_in(&t.0, "(?i)hello", Some(".")),
            "notes.md:1:Hello there\nsrc/lib.rs:1:pub fn hello_world() {}\n\
             src/main.rs:2:    println!(\"hello\");\n[skipped 1 file over 4 MiB]"
        );
        assert_eq!(
            grep_in(&t.0, r"\bhello\b", Some("src")),
            "src/main.rs:2:    println!(\"hello\");"
        );
        assert_eq!(
            grep_in(&t.0, "TODO|FIXME", Some("src/lib.rs")),
            "src/lib.rs:2:// TODO: more"
        );
        // An explicitly named skipped directory is searched.
        assert_eq!(
            grep_in(&t.0, "hidden", Some("target")),
            "target/debug/out.rs:1:fn hidden_in_target() {}"
        );
        assert_eq!(
            grep_in(&t.0, "nothing[0-9]+", None),
            "no matches for nothing[0-9]+\n[skipped 1 file over 4 MiB]"
        );
        assert_eq!(
            grep_in(&t.0, "x", Some("bin.dat")),
            "error: bin.dat is a binary file; grep searches text files only"
        );
        assert!(is_refusal(&grep_in(&t.0, "x", Some(".."))));
        let bad = grep_in(&t.0, "a(b", None);
        assert!(
            bad.starts_with("error: grep: bad pattern: unclosed group"),
            "{bad}"
        );
    }

    #[test]
    fn grep_stops_on_cancel() {
        let t = Temp::new();
        t.write("a.txt", "a\n");
        let tool = Tool::Grep {
            pattern: "a".into(),
            path: None,
        };
        let out = run(&tool, &[], &ctx(&t.0), &mut fixed(true), &|| true);
        assert_eq!(out.output, "error: interrupted");
        assert!(out.interrupted);
    }

    #[test]
    fn grep_output_is_bounded() {
        let t = Temp::new();
        t.write("many.txt", "match\n".repeat(800));
        let out = grep_in(&t.0, "match", None);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), GREP_LINES + 1);
        assert_eq!(lines[0], "many.txt:1:match");
        assert_eq!(
            lines[GREP_LINES],
            "[… 300 more matching lines left out; narrow the pattern or the path]"
        );

        t.write("many.txt", format!("{}\n", "m".repeat(400)).repeat(400));
        let out = grep_in(&t.0, "m+", None);
        assert!(out.len() <= GREP_BYTES + 200, "{}", out.len());
        assert!(out.ends_with("more matching lines left out; narrow the pattern or the path]"));
        let first = out.lines().next().unwrap();
        assert_eq!(first, format!("many.txt:1:{}", "m".repeat(400)));

        t.write("many.txt", format!("{}\n", "w".repeat(2000)));
        let out = grep_in(&t.0, "w", None);
        assert_eq!(
            out,
            format!(
                "many.txt:1:{}[… 1488 more characters]",
                "w".repeat(GREP_LINE_CHARS)
            )
        );
    }

    #[test]
    fn grep_survives_pathological_patterns() {
        let t = Temp::new();
        let line = format!("{}!\n", "a".repeat(5000));
        t.write("a.txt", line.repeat(20));
        let started = Instant::now();
        for pattern in [
            "(a*)*[bc]",
            "(a|a)*[bc]",
            "((a+)+)+[bc]$",
            "(a|aa)+[bc]",
            "(.*)*[xz](.*)*[yz]",
            "^(a?){25}a{25}$",
            "(?:a?){1000}[xy]",
        ] {
            let out = grep_in(&t.0, pattern, None);
            assert_eq!(out, format!("no matches for {pattern}"));
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{:?}",
            started.elapsed()
        );
        let out = grep_in(&t.0, "(a{1000}){1000}", None);
        assert!(
            out.starts_with("error: grep: bad pattern: too large"),
            "{out}"
        );
    }

    #[test]
    fn patterns_are_the_regex_crates() {
        let is = |pattern: &str, line: &str| {
            Matcher::new(pattern)
                .unwrap_or_else(|e| panic!("{pattern}: {e}"))
                .is_match(line)
        };
        assert!(is("^ab*c$", "abbbc") && !is("^ab*c$", "xac"));
        assert!(is(r"\bfoo\b", "a foo b") && !is(r"\bfoo\b", "afoob"));
        assert!(is(r"\<foo", "a foo") && !is(r"foo\>", "food"));
        assert!(is("(?i)HeLLo", "say hello") && is("[[:digit:]][[:alpha:]]", "9z"));
        assert!(is(r"\p{Greek}+", "λόγος") && is(r"\x41", "A"));
        // Case folding of the whole pattern, not its first character only.
        assert!(is("(?i)straße", "STRASSE") || is("(?i)ÉCOLE", "école"));
        for bad in ["*a", "a(b", "[abc", r"a\q", "x{3,1}", "\\"] {
            assert!(Matcher::new(bad).is_err(), "{bad} should be refused");
        }
    }

    #[test]
    fn grep_walks_as_ripgrep_does() {
        let t = Temp::new();
        t.write(".gitignore", "dist/\n*.log\n");
        t.write(".ignore", "vendor/\n");
        t.write("src/a.rs", "needle in src\n");
        t.write("dist/bundle.js", "needle in dist\n");
        t.write("vendor/x.rs", "needle in vendor\n");
        t.write("build.log", "needle in a log\n");
        t.write(".hidden/h.rs", "needle hidden\n");
        t.write(".env", "needle in a dotfile\n");
        t.write("target/t.rs", "needle in target\n");
        t.write("bin.dat", "needle\0binary\n");
        let out = grep_in(&t.0, "needle", None);
        assert_eq!(out, "src/a.rs:1:needle in src", "{out}");
        // A path given is searched, whatever the ignore files say of it.
        let out = grep_in(&t.0, "needle", Some("dist/bundle.js"));
        assert_eq!(out, "dist/bundle.js:1:needle in dist", "{out}");
    }

    #[test]
    fn shell_reports_status_and_both_streams() {
        let t = Temp::new();
        let out = sh(&t.0, "echo out; echo err >&2; exit 3", None);
        assert_eq!(out.output, "exit status: 3\nstdout:\nout\nstderr:\nerr");
        assert_eq!(sh(&t.0, "true", None).output, "exit status: 0");
        assert_eq!(
            sh(&t.0, "printf 'no newline'", None).output,
            "exit status: 0\nstdout:\nno newline"
        );
        assert_eq!(
            sh(&t.0, "pwd", None).output,
            format!("exit status: 0\nstdout:\n{}", t.0.display())
        );
        assert_eq!(
            sh(&t.0, "cat", None).output,
            "exit status: 0",
            "stdin is null"
        );
        assert_eq!(
            sh(&t.0, "printf '\\377x'", None).output,
            "exit status: 0\nstdout:\n\u{fffd}x"
        );
        assert_eq!(
            sh(&t.0, "kill -9 $$", None).output,
            "exit status: killed by signal 9"
        );
    }

    #[test]
    fn shell_output_arrives_whole() {
        let t = Temp::new();
        // 2 MB on stdout and 1 MB on stderr at once: neither pipe may block.
        let out = sh(
            &t.0,
            "head -c 1000000 /dev/zero | tr '\\0' e >&2 & head -c 2000000 /dev/zero | tr '\\0' o; wait",
            None,
        )
        .output;
        let (stdout, stderr) = out.split_once("\nstderr:\n").unwrap();
        let stdout = stdout.strip_prefix("exit status: 0\nstdout:\n").unwrap();
        assert_eq!(stdout.len(), 2_000_000);
        assert!(stdout.bytes().all(|b| b == b'o'));
        assert_eq!(stderr.len(), 1_000_000);
    }

    #[test]
    fn shell_kills_a_command_past_the_safety_cap() {
        let t = Temp::new();
        let out = sh(&t.0, "yes", None).output;
        assert!(
            out.starts_with("error: the command wrote more than 64 MiB, so it was stopped"),
            "{}",
            &out[..200]
        );
        let stdout = out.split_once("\nstdout:\n").unwrap().1;
        assert_eq!(stdout.len(), SHELL_STREAM_CAP - 1); // the last newline trimmed
    }

    #[test]
    fn shell_times_out_and_kills_the_group() {
        let t = Temp::new();
        let started = Instant::now();
        let out = sh(
            &t.0,
            "echo started; sleep 30 & sleep 30; echo never",
            Some(1),
        );
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        assert!(
            out.output
                .starts_with("error: the command timed out after 1 s and was killed"),
            "{}",
            out.output
        );
        assert!(out.output.ends_with("\nstdout:\nstarted"), "{}", out.output);
        assert!(!out.interrupted);
    }

    #[test]
    fn shell_stops_on_cancel_and_on_refusal() {
        let t = Temp::new();
        let started = Instant::now();
        let cancel = || started.elapsed() > Duration::from_millis(200);
        let tool = Tool::Shell {
            command: "sleep 30".into(),
            timeout_s: None,
        };
        let out = run(&tool, &[], &ctx(&t.0), &mut fixed(true), &cancel);
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(
            out.output.starts_with("error: interrupted"),
            "{}",
            out.output
        );
        assert!(out.interrupted);

        let mut no = fixed(false);
        let tool = Tool::Shell {
            command: "touch made".into(),
            timeout_s: None,
        };
        let out = run(&tool, &[], &ctx(&t.0), &mut no, &|| false);
        assert_eq!(out.output, "error: the user did not allow this command");
        assert_eq!(no.asked, ["touch made"]);
        assert!(!t.path("made").exists());
    }

    #[test]
    fn shell_does_not_wait_for_background_processes_and_kills_them() {
        let t = Temp::new();
        let started = Instant::now();
        let out = sh(
            &t.0,
            "echo now; (sleep 5; echo later) & echo $! > bg.pid",
            None,
        );
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(out.output, "exit status: 0\nstdout:\nnow");
        assert!(!alive(&t.path("bg.pid")), "the background child was killed");
    }

    #[test]
    fn shell_kills_background_children_when_the_command_ends() {
        let t = Temp::new();
        let out = sh(&t.0, "sleep 1000 & echo $! > bg.pid", None);
        assert_eq!(out.output, "exit status: 0");
        assert!(!alive(&t.path("bg.pid")));
    }

    /// Linux only: reaping what left the group reads
    /// `/proc/self/task/*/children`, so the test is skipped without it.
    #[cfg(target_os = "linux")]
    #[test]
    fn shell_kills_a_setsid_child_at_the_timeout_and_at_the_end() {
        let me = std::process::id();
        if !Path::new(&format!("/proc/{me}/task/{me}/children")).exists() {
            eprintln!("skipped: no /proc/PID/task/TID/children here");
            return;
        }
        let t = Temp::new();
        let out = sh(
            &t.0,
            "setsid sleep 1000 & echo $! > s.pid; sleep 30",
            Some(1),
        );
        assert!(
            out.output.starts_with("error: the command timed out"),
            "{}",
            out.output
        );
        assert!(!alive(&t.path("s.pid")), "setsid escaped the timeout kill");
        let out = sh(&t.0, "setsid sleep 1000 & echo $! > e.pid", None);
        assert_eq!(out.output, "exit status: 0");
        assert!(!alive(&t.path("e.pid")), "setsid outlived the command");
    }

    /// Whether the process whose pid `file` holds still runs (a zombie
    /// does not count), asked of ps(1); waits up to 2 s for it to end.
    fn alive(file: &Path) -> bool {
        let pid = fs::read_to_string(file).unwrap().trim().to_owned();
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            let out = std::process::Command::new("ps")
                .args(["-o", "stat=", "-p", &pid])
                .output()
                .unwrap();
            let stat = String::from_utf8_lossy(&out.stdout).trim().to_owned();
            if stat.is_empty() || stat.starts_with('Z') {
                return false;
            }
            if Instant::now() >= deadline {
                return true;
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn request_file_grant_asks_the_user() {
        let t = Temp::new();
        let root = t.path("tree");
        t.write("tree/a.txt", "");
        let file = t.write("outside/f.txt", "granted\n");
        let raw = format!("{}/../outside/f.txt", root.display());
        let ask = |yes: bool, path: &str| {
            let mut approver = fixed(yes);
            let tool = Tool::RequestFileGrant {
                path: path.into(),
                reason: Some("to compare".into()),
            };
            let out = run(&tool, &[], &ctx(&root), &mut approver, &|| false);
            (out, approver.asked)
        };

        let (out, asked) = ask(true, &raw);
        let canonical = file.display().to_string();
        assert_eq!(
            out.output,
            format!("granted: {canonical} (this session may now read it)")
        );
        assert_eq!(out.grant.as_deref(), Some(canonical.as_str()));
        assert_eq!(asked, [format!("{canonical} to compare")]);
        assert_eq!(
            read(&root, &raw, std::slice::from_ref(&canonical)),
            "granted\n"
        );

        let (out, _) = ask(false, &raw);
        assert_eq!(
            out.output,
            format!("error: the user did not grant {canonical}")
        );
        assert_eq!(out.grant, None);

        let (out, asked) = ask(true, "../outside/f.txt");
        assert_eq!(
            out.output,
            "error: request_file_grant needs an absolute path, not ../outside/f.txt"
        );
        assert!(asked.is_empty());

        let (out, asked) = ask(true, "/no/such/path");
        assert_eq!(out.output, "error: no such file: /no/such/path");
        assert!(asked.is_empty());

        let (out, asked) = ask(true, root.join("a.txt").to_str().unwrap());
        assert!(out
            .output
            .ends_with("is already readable by this session; no grant is needed"));
        assert_eq!(out.grant, None);
        assert!(asked.is_empty());
    }

    #[test]
    fn agent_info_is_json() {
        let t = Temp::new();
        let mut context = ctx(&t.0);
        context.info = AgentInfo {
            session_id: "s-1".into(),
            name: Some("amber".into()),
            log_path: "/state/projects/p/sessions/s-1.jsonl".into(),
            project_key: "/repo".into(),
            project_dir: "/repo/.task-agent/projects/repo".into(),
            created_project_dir: true,
            state_root: "/state".into(),
            config_root: "/config".into(),
        };
        let out = run(&Tool::AgentInfo, &[], &context, &mut fixed(false), &|| {
            false
        });
        let value: serde_json::Value = serde_json::from_str(&out.output).unwrap();
        assert_eq!(value["session_id"], "s-1");
        assert_eq!(value["name"], "amber");
        assert_eq!(value["log_path"], "/state/projects/p/sessions/s-1.jsonl");
        assert_eq!(value["created_project_dir"], true);
        assert_eq!(value["working_dir"], t.0.display().to_string());
        assert!(
            out.output.contains("\n  \"project_key\": \"/repo\""),
            "pretty"
        );
    }
}
