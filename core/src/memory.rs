//! Memory: markdown files loaded into the system prompt of every turn.
//!
//! This module holds the pure half: which labels are valid file names
//! ([`Label`]), the prompt section the files become ([`prompt_block`]), the
//! documents that ship with the program ([`BUILTIN`]) and which of them to
//! seed ([`to_seed`]), the templates of a new project directory, and the
//! metadata stored with every snapshot of the memory directory
//! ([`SnapshotMeta`]). Reading, writing and snapshotting the files is the
//! shell's job (`revolve_io::memory`).
//!
//! There are two memory directories: the global one, for what is true
//! everywhere, and the project one, for what one repository has taught.

use std::fmt;

/// A memory label: the name of one memory file without its `.md`.
///
/// It can only hold a name that is safe as a file name inside the memory
/// directory: 1 to 64 ASCII letters, digits, `-`, `_` and `.`, not starting
/// with `.` or `-`, not ending with `.`, without `..`, and not a name revolve
/// keeps for itself ([`RESERVED`]). So no label reaches outside the directory
/// or names a hidden file.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Label(String);

/// Labels revolve keeps for itself (compared without regard to case, for
/// file systems that do not tell `Goal` from `goal`). The standing goal lives
/// beside the memory files.
pub(crate) const RESERVED: [&str; 1] = ["goal"];

/// The longest label, in characters.
pub(crate) const MAX_LABEL: usize = 64;

impl Label {
    /// Parses a label as the model or the user wrote it. A trailing `.md` is
    /// accepted and stripped, so `notes` and `notes.md` are the same label.
    pub fn parse(raw: &str) -> Result<Label, BadLabel> {
        let name = raw.strip_suffix(".md").unwrap_or(raw);
        if name.is_empty() {
            return Err(BadLabel::Empty);
        }
        let len = name.chars().count();
        if len > MAX_LABEL {
            return Err(BadLabel::TooLong(len));
        }
        let ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
        if !name.chars().all(ok) {
            return Err(BadLabel::Characters);
        }
        if name.starts_with(['.', '-']) || name.ends_with('.') || name.contains("..") {
            return Err(BadLabel::Shape);
        }
        if let Some(r) = RESERVED.iter().find(|r| r.eq_ignore_ascii_case(name)) {
            return Err(BadLabel::Reserved(r));
        }
        Ok(Label(name.to_owned()))
    }

    /// The label itself, without `.md`.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The memory file's name: `<label>.md`.
    pub fn file_name(&self) -> String {
        format!("{}.md", self.0)
    }
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Why a label was refused. Its `Display` is a sentence the model can act
/// on; a tool result puts `error: ` in front of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BadLabel {
    /// Nothing is left once a trailing `.md` is stripped.
    Empty,
    /// More than [`MAX_LABEL`] characters; holds the count.
    TooLong(usize),
    /// A character other than ASCII letters, digits, `-`, `_` and `.`: a
    /// path separator, a space, anything else.
    Characters,
    /// A leading `.` or `-`, a trailing `.`, or `..` anywhere.
    Shape,
    /// One of the [`RESERVED`] names.
    Reserved(&'static str),
}

impl fmt::Display for BadLabel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BadLabel::Empty => f.write_str(
                "a memory label cannot be empty; use a short name such as 'build-commands'",
            ),
            BadLabel::TooLong(n) => write!(
                f,
                "a memory label has at most {MAX_LABEL} characters and this one has {n}; \
                 use a short name and put the detail in the content"
            ),
            BadLabel::Characters => f.write_str(
                "a memory label uses only ASCII letters, digits, '-', '_' and '.' (no '/', no \
                 spaces); it names one file in the memory directory, such as 'build-commands'",
            ),
            BadLabel::Shape => f.write_str(
                "a memory label cannot start with '.' or '-', end with '.' or contain '..'; \
                 use a plain name such as 'build-commands'",
            ),
            BadLabel::Reserved(name) => write!(
                f,
                "the memory label '{name}' is reserved by revolve; choose another name"
            ),
        }
    }
}

impl std::error::Error for BadLabel {}

/// Which memory directory a file is in. Global sorts before project.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    /// What is true everywhere.
    Global,
    /// What this repository has taught.
    Project,
}

impl Scope {
    /// `global` or `project`, as the prompt and the history name it.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Global => "global",
            Scope::Project => "project",
        }
    }
}

/// One memory file as read from disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryFile {
    /// Whether it is a global or a project memory file.
    pub scope: Scope,
    /// The file name, such as `verify-before-commit.md`.
    pub name: String,
    /// Its whole content.
    pub content: String,
}

/// The memory section of the system prompt, or `None` when there are no
/// files. Global files come first, then project files, each sorted by file
/// name, so the bytes depend only on the files and not on the order they
/// were read in. Each file appears whole under a `## memory/<scope>/<name>`
/// header.
pub fn prompt_block(files: &[MemoryFile]) -> Option<String> {
    prompt_block_within(files, false)
}

/// [`prompt_block`], with every builtin document (`builtin: true` in its
/// front matter) given by its description alone when `brief`: a small
/// window cannot spare the ~1,500 tokens the five of them take whole, and
/// each description says its habit in a sentence. A file the user adopted
/// (the line removed) or wrote is always whole.
pub(crate) fn prompt_block_within(files: &[MemoryFile], brief: bool) -> Option<String> {
    if files.is_empty() {
        return None;
    }
    let mut sorted: Vec<&MemoryFile> = files.iter().collect();
    sorted.sort_by(|a, b| (a.scope, &a.name).cmp(&(b.scope, &b.name)));
    let mut out = String::from(PROMPT_INTRO);
    for file in sorted {
        out.push_str("\n## memory/");
        out.push_str(file.scope.as_str());
        out.push('/');
        out.push_str(&file.name);
        out.push_str("\n\n");
        match brief.then(|| builtin_description(&file.content)).flatten() {
            Some(description) => {
                out.push_str("(builtin habit, in brief for a small window) ");
                out.push_str(description);
            }
            None => out.push_str(file.content.trim_end()),
        }
        out.push('\n');
    }
    Some(out)
}

/// The `description` of a builtin document's front matter; `None` for a
/// file without front matter, without `builtin: true` or without a
/// description.
fn builtin_description(content: &str) -> Option<&str> {
    let front = content.strip_prefix("---\n")?.split_once("\n---")?.0;
    let builtin = front.lines().any(|l| {
        l.split_once(':')
            .is_some_and(|(k, v)| k.trim() == "builtin" && v.trim() == "true")
    });
    let description = front.lines().find_map(|l| {
        l.split_once(':')
            .filter(|(k, _)| k.trim() == "description")
            .map(|(_, v)| v.trim())
    })?;
    (builtin && !description.is_empty()).then_some(description)
}

const PROMPT_INTRO: &str = "# Memory\n\n\
These are the user's memory files, loaded into every turn: standing instructions and facts \
that outlive a session. Global files hold what is true everywhere, project files what this \
repository has taught. When you learn one durable fact, record it with the `remember` tool \
(one label, the whole file as content, empty content to delete); it writes project memory.\n";

/// The behaviour documents the first start writes into the global memory:
/// `(file name, content)`. Each carries `builtin: true` in its front matter,
/// the mark of a shipped default; a user adopts one by deleting that line.
pub const BUILTIN: [(&str, &str); 5] = [
    ("verify-before-commit.md", VERIFY_BEFORE_COMMIT),
    ("task-discipline.md", TASK_DISCIPLINE),
    ("worktree-isolation.md", WORKTREE_ISOLATION),
    ("read-before-edit.md", READ_BEFORE_EDIT),
    ("asking-the-user.md", ASKING_THE_USER),
];

/// A change is finished when the project's own checks pass.
pub(crate) const VERIFY_BEFORE_COMMIT: &str = "\
---
builtin: true
description: A change is finished when the project's own checks pass, not when it looks right.
---
# Verify before you commit

A change is finished when the project's own checks pass, not when it compiles or looks right.

- Find the checks the project already runs before inventing any: its CI configuration \
(.github/workflows, .ci/, a Makefile or justfile), the README's test command, the package \
scripts.
- Run what CI runs (formatter, linter, tests), with the same flags, after your last edit. A pass \
from before the final change says nothing about it.
- When a check fails, read the first error and fix its cause. Do not skip, weaken or delete a \
test, or silence a lint, to get to green unless the user asked for exactly that.
- A failure you did not cause: show that it also fails without your change (on the base commit, \
in a separate worktree), then say so plainly instead of working around it.
- If a check cannot run here (a missing toolchain, no network, a service that is down), name it \
and say why. Never report \"done\" or \"tests pass\" for something you did not see pass.
- Before committing, read `git diff --staged`: only the change belongs in it, not debug output, \
generated files or unrelated edits.
";

/// One task one file, delete when done, wait to defer.
pub(crate) const TASK_DISCIPLINE: &str = "\
---
builtin: true
description: One task, one file in the project's tasks/ folder; delete it when done; mark it waiting to defer it.
---
# Task discipline

The project's queue is the tasks/ folder of its project directory (agent_info names the \
directory). Each open task is one markdown file there.

- One task, one file. Name it for the outcome (fix-login-timeout.md) and say in its first lines \
what done looks like.
- Keep the task's notes in its file as you go: what was tried, what was learned, what is next, \
so that a fresh session can continue from the file alone.
- Work on one task at a time. Something found along the way that is not part of it becomes a new \
file, not a detour.
- Before starting new work, read the folder: an open task may already cover it or block it.
- When a task is done, with its done condition checked rather than assumed, delete its file. The \
commit is the record; a finished task left in the queue is noise for the next session.
- To defer a task, neither delete it nor leave it looking active: put `wait: <what it waits \
for>` (a date, another task, an answer from the user) on its first line, and take it up again \
when that is met.
";

/// One writer per working tree; never touch somebody else's uncommitted work.
pub(crate) const WORKTREE_ISOLATION: &str = "\
---
builtin: true
description: One writer per working tree; never discard, overwrite or commit somebody else's uncommitted work.
---
# Worktree isolation

A working tree has one writer at a time. The user and other agents may be working in this \
repository right now, in this tree or in another worktree of it.

- Before editing, run `git status` and note what is already modified or untracked. Those changes \
are somebody's unfinished work unless you made them in this session.
- Never discard or rewrite uncommitted work you did not make: no `git checkout -- <path>`, \
`git restore`, `git reset --hard`, `git clean`, `git stash`, forced checkout or branch switch, \
and no rewriting a file in a way that drops someone else's edits.
- Never commit somebody else's uncommitted changes. In a shared tree, stage your own paths by \
name, never with `git add -A` or `git commit -a`.
- To work in parallel, give each writer its own worktree (`git worktree add ../<name> -b \
<branch>`) and bring work together through branches, not by copying files between trees.
- Do not switch the branch of a tree that is not yours: the other writer's next command would \
run against code it did not expect.
- If the files you need are being changed by someone else, stop and say so rather than editing \
over them.
";

/// Read the real path first, then make the smallest change that works.
pub(crate) const READ_BEFORE_EDIT: &str = "\
---
builtin: true
description: Read the real file at the path you will write, then make the smallest change that works.
---
# Read before you edit

- Read the file you are about to change, at the path you will write, in this session: not a \
file with the same name elsewhere, not what you remember from earlier, not what it probably says.
- Read enough around the change to know its callers, its tests and its conventions (naming, \
error handling, formatting). Search for every use before you rename something or change a \
signature.
- Files change under you. If other work has happened since you read a file, read it again \
before writing it.
- Make the smallest change that works: fix the cause, touch only what the task needs, keep the \
style you found. Unrelated cleanups, reformatting and renames are a separate change, made when \
asked for.
- Edit the lines that need it rather than rewriting the whole file; a rewrite silently drops \
whatever you did not notice.
- Read the result back, or its diff, before you call it done.
";

/// Decide the judgment calls, ask for what only the user knows.
pub(crate) const ASKING_THE_USER: &str = "\
---
builtin: true
description: Decide the judgment calls yourself; ask the user only for what only the user knows.
---
# Asking the user

The user's attention is the scarcest thing in a session; spend it on what only they can answer.

- Decide the judgment calls yourself: names, structure, which of two reasonable approaches, how \
to test. Choose, say in one line what you chose and why, and keep going. A visible decision is \
easy to change.
- Ask for what only the user knows: what they meant when a request has two real readings, \
credentials and accounts, priorities between goals that conflict, facts about systems you \
cannot see, and permission for anything destructive, irreversible or seen by other people \
(deleting data, force-pushing, sending messages, spending money).
- Before asking, look: the code, the docs, the history, the memory files. Do not ask what a \
command can tell you.
- Ask once, with everything at once: a short list of concrete questions, each with the answer \
you would pick, so that a word is enough to reply.
- While an answer is pending, do the parts that do not depend on it.
- If you could not do what was asked, say so plainly and say what you tried; never present a \
substitute as the thing requested.
";

/// Which builtin documents to write now: those absent from the directory
/// (not in `present`, the file names found there) and never handed over
/// before (not in `seeded`, the directory's `.seeded` list). So an edited
/// file is never overwritten, because it is present, and a deleted one is
/// never written back, because it was seeded. Names come in [`BUILTIN`]
/// order.
pub fn to_seed(seeded: &[String], present: &[String]) -> Vec<&'static str> {
    to_seed_of(&BUILTIN, seeded, present)
}

/// [`to_seed`] of any list of shipped defaults `(name, content)`: the
/// builtin skills are seeded the same way ([`crate::skills::BUILTIN`]).
pub fn to_seed_of(
    builtin: &[(&'static str, &'static str)],
    seeded: &[String],
    present: &[String],
) -> Vec<&'static str> {
    builtin
        .iter()
        .map(|(name, _)| *name)
        .filter(|name| !seeded.iter().any(|s| s == name) && !present.iter().any(|p| p == name))
        .collect()
}

/// `memory/project.md` in a new project directory.
pub const PROJECT_MEMORY_TEMPLATE: &str = "\
# This project

This file is this repository's own memory. Whatever is written here is loaded into every turn \
of every session working in the repository, so it is the place for what a newcomer would need \
on day one and what nobody should have to find out twice: how to build, test and run it, where \
things live, the conventions its maintainers hold to, and the traps someone already fell into. \
Keep it short and current: replace this paragraph with those facts, add other files beside it \
for separate topics, or delete it.
";

/// `subagents/README` in a new project directory.
pub const SUBAGENTS_README: &str = "\
Role documents
==============

Each markdown file in this folder describes one subagent role, such as reviewer.md or \
docs-writer.md. An agent that takes a role reads its document first and keeps to it.

A role document has a header and a body. The header is front matter naming the role, the \
files it owns and its lane, that is, what it may change and what it must leave alone:

    ---
    name: docs-writer
    description: keeps the user documentation in step with the code
    files: docs/**, README.md
    lane: writes only the files above; reads anything; never commits
    ---

The body is the brief, in plain prose: what the role is for, what a finished piece of work \
looks like, which checks it runs before it reports, and what it hands back (a report, a branch, \
a list of findings). Write it for a capable colleague who has not seen this project's history.
";

/// What a snapshot was taken for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SnapshotKind {
    /// A refinement the user asked for (`/refine`).
    Manual,
    /// A refinement that ran on its own.
    Automatic,
    /// A `remember` call.
    Remember,
}

impl SnapshotKind {
    /// `manual`, `automatic` or `remember`, as `meta.cfg` and the history
    /// write it.
    pub fn as_str(self) -> &'static str {
        match self {
            SnapshotKind::Manual => "manual",
            SnapshotKind::Automatic => "automatic",
            SnapshotKind::Remember => "remember",
        }
    }

    fn parse(s: &str) -> Option<SnapshotKind> {
        [
            SnapshotKind::Manual,
            SnapshotKind::Automatic,
            SnapshotKind::Remember,
        ]
        .into_iter()
        .find(|k| k.as_str() == s)
    }
}

/// What is stored with a snapshot of the memory directory, as `meta.cfg`
/// beside the copied `files/`.
///
/// # Format
///
/// One `key = value` per line; blank lines and lines starting with `#` are
/// skipped, and so are unknown keys, so a later version may add some.
///
/// ```text
/// # revolve memory snapshot
/// session = refine-check
/// messages = 4
/// kind = manual
/// file = worktree-preferences.md
/// change = added the lint table constraint
/// undone = false
/// ```
///
/// * `session`: the name (or id) of the session that took it. Required.
/// * `messages`: how many messages that session held. Required.
/// * `kind`: `manual`, `automatic` or `remember`. Required.
/// * `file` then `change`: a file the rewrite changed and the sentence
///   naming what changed, one pair per file, in order. A `file` without a
///   `change` has an empty sentence.
/// * `undone`: `true` once an undo has restored this snapshot. Defaults to
///   `false`.
///
/// A value is written bare unless that would lose something: one that is
/// empty, starts or ends with whitespace, starts with `"` or holds a control
/// character (a newline, say) is written as a JSON string literal. A reader
/// trims the value and decodes it as JSON if it starts with `"`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotMeta {
    /// The id of the session that made the change.
    pub session: String,
    /// How many messages that session had then.
    pub messages: u64,
    /// What made it: a refinement (manual or automatic) or `remember`.
    pub kind: SnapshotKind,
    /// `(file name, sentence)` per changed file.
    pub files: Vec<(String, String)>,
    /// Whether an undo took it back since.
    pub undone: bool,
    /// A rewrite (or an undo, with `undone`) is under way.
    pub pending: bool,
}

impl SnapshotMeta {
    /// The `meta.cfg` text.
    pub fn to_cfg(&self) -> String {
        let mut out = String::from("# revolve memory snapshot\n");
        let mut line = |key: &str, value: &str| {
            out.push_str(key);
            out.push_str(" = ");
            out.push_str(&encode_value(value));
            out.push('\n');
        };
        line("session", &self.session);
        line("messages", &self.messages.to_string());
        line("kind", self.kind.as_str());
        for (file, change) in &self.files {
            line("file", file);
            line("change", change);
        }
        line("undone", if self.undone { "true" } else { "false" });
        if self.pending {
            line("pending", "true");
        }
        out
    }

    /// Reads a `meta.cfg`. The error says which line is wrong and why.
    pub fn parse_cfg(text: &str) -> Result<SnapshotMeta, String> {
        let mut session = None;
        let mut messages = None;
        let mut kind = None;
        let mut files: Vec<(String, String)> = Vec::new();
        // Whether the last `file` already has its `change`.
        let mut changed = true;
        let mut undone = false;
        let mut pending = false;
        for (i, raw) in text.lines().enumerate() {
            let n = i + 1;
            let trimmed = raw.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let Some((key, value)) = raw.split_once('=') else {
                return Err(format!("line {n}: expected `key = value`"));
            };
            let value = decode_value(value).map_err(|e| format!("line {n}: {e}"))?;
            match key.trim() {
                "session" => session = Some(value),
                "messages" => {
                    let count = value
                        .parse()
                        .map_err(|_| format!("line {n}: messages is not a count: {value:?}"))?;
                    messages = Some(count);
                }
                "kind" => {
                    let k = SnapshotKind::parse(&value).ok_or_else(|| {
                        format!("line {n}: kind is manual, automatic or remember, not {value:?}")
                    })?;
                    kind = Some(k);
                }
                "file" => {
                    files.push((value, String::new()));
                    changed = false;
                }
                "change" => match files.last_mut() {
                    Some(last) if !changed => {
                        last.1 = value;
                        changed = true;
                    }
                    _ => return Err(format!("line {n}: a change needs a file line before it")),
                },
                "pending" => pending = value == "true",
                "undone" => {
                    undone = match value.as_str() {
                        "true" => true,
                        "false" => false,
                        _ => {
                            return Err(format!("line {n}: undone is true or false, not {value:?}"))
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(SnapshotMeta {
            session: session.ok_or("no session line")?,
            messages: messages.ok_or("no messages line")?,
            kind: kind.ok_or("no kind line")?,
            files,
            undone,
            pending,
        })
    }
}

/// A value as `meta.cfg` writes it: bare when reading it back gives the
/// same string, a JSON string literal otherwise.
fn encode_value(value: &str) -> String {
    let bare = !value.is_empty()
        && value.trim() == value
        && !value.starts_with('"')
        && !value.chars().any(char::is_control);
    if bare {
        value.to_owned()
    } else {
        // Serializing a string cannot fail.
        serde_json::to_string(value).unwrap_or_default()
    }
}

fn decode_value(raw: &str) -> Result<String, String> {
    let value = raw.trim();
    if value.starts_with('"') {
        serde_json::from_str(value).map_err(|e| format!("bad quoted value: {e}"))
    } else {
        Ok(value.to_owned())
    }
}

/// What a `remember` call does to the file its label names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Remembered {
    /// The file already holds exactly that: nothing is written, and no
    /// snapshot is taken.
    Unchanged,
    /// The file is `created`, `replaced` or `deleted`.
    Written(&'static str),
}

/// Decides a `remember` call from what the file holds now (`None`: it does
/// not exist). The error is the tool result the model reads.
pub fn remember(
    label: &Label,
    current: Option<&[u8]>,
    content: &str,
    replace: bool,
) -> Result<Remembered, String> {
    if replace && current == Some(content.as_bytes()) {
        return Ok(Remembered::Unchanged);
    }
    match (content.is_empty(), current.is_some()) {
        (true, false) => Err(format!("error: there is no memory '{label}' to delete")),
        // Deleting changes what exists, as overwriting does: it needs
        // `replace` too, so no call wipes a memory by accident.
        (true, true) if !replace => Err(format!(
            "error: memory '{label}' exists; pass replace: true with empty content to delete it"
        )),
        (true, true) => Ok(Remembered::Written("deleted")),
        (false, true) if !replace => Err(format!(
            "error: memory '{label}' exists; pass replace: true to overwrite it"
        )),
        (false, true) => Ok(Remembered::Written("replaced")),
        (false, false) => Ok(Remembered::Written("created")),
    }
}

/// The snapshot metadata of a `remember` call that writes (`verb` from
/// [`remember`]): the project file and the call as its sentence.
pub fn remember_meta(session: &str, messages: u64, label: &Label, verb: &str) -> SnapshotMeta {
    let verb = if verb == "replaced" { "updated" } else { verb };
    SnapshotMeta {
        session: session.to_owned(),
        messages,
        kind: SnapshotKind::Remember,
        files: vec![(
            format!("project/{}", label.file_name()),
            format!("{verb}: remember {label}"),
        )],
        undone: false,
        pending: false,
    }
}

#[cfg(test)]
mod tests;
