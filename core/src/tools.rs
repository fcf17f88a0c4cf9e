//! The tools the model sees: their definitions (sent with every request),
//! their arguments parsed into [`Tool`], and how oversized results are cut.
//!
//! Bad arguments never reach the shell: [`parse`] turns them into an error
//! result the model can read.

use serde_json::{json, Value};

use crate::memory::Label;
use crate::record::ToolCall;

/// A tool call with its arguments checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tool {
    /// Read a file of the working tree or a granted path; `offset` is the
    /// first line (1-based), `limit` the number of lines.
    ReadFile {
        /// The file, as the model wrote it (relative to the working tree).
        path: String,
        /// The first line to read, from 1.
        offset: Option<u64>,
        /// How many lines to read.
        limit: Option<u64>,
    },
    /// List a directory of the working tree or a granted path.
    ListDir {
        /// The directory, as the model wrote it.
        path: String,
    },
    /// Search files under `path` (default: the working tree) for a regex.
    Grep {
        /// The regex, in ripgrep's syntax.
        pattern: String,
        /// The file or directory to search; none: the working tree.
        path: Option<String>,
    },
    /// Run a shell command in the working directory.
    Shell {
        /// The command line, run by `sh`.
        command: String,
        /// Seconds before it is killed ([`shell_timeout`] of what the
        /// model asked); a background command is not timed.
        timeout_s: u64,
        /// Start it and return its id at once (see `shell_output`): a dev
        /// server or a watch build that runs while the turn goes on.
        background: bool,
    },
    /// What a background command printed since the last read, and whether
    /// it ended.
    ShellOutput {
        /// The id `shell` with `background: true` returned.
        id: String,
    },
    /// Kill a background command and its whole process group.
    ShellKill {
        /// The id `shell` with `background: true` returned.
        id: String,
    },
    /// Hand a piece of work to a child session (a subagent): its final
    /// answer is the result.
    Task {
        /// A few words on what the child does, shown while it runs.
        description: String,
        /// The child's whole task: it sees nothing else of this session.
        prompt: String,
        /// The definition it runs under (`subagents/NAME.md`,
        /// `.agents/agents/NAME.md`, `.claude/agents/NAME.md`); none: the
        /// general, read-only one.
        subagent: Option<String>,
    },
    /// Ask the user to let this session read a path outside the tree.
    RequestFileGrant {
        /// The path asked for, as the model wrote it.
        path: String,
        /// Why the model wants it, shown to the user.
        reason: Option<String>,
    },
    /// Facts about this session.
    AgentInfo,
    /// Write (or, with empty content, delete) the project memory file
    /// `<label>.md`; an existing one only with `replace`.
    Remember {
        /// Which memory file, checked.
        label: Label,
        /// Its whole new content; empty deletes it.
        content: String,
        /// Whether an existing file may be replaced.
        replace: bool,
    },
    /// Record progress toward the standing goal; `met` proposes it reached.
    GoalProgress {
        /// What was done, in a line or two.
        note: String,
        /// Whether the model says the goal is reached.
        met: bool,
    },
    /// Replace exact text in a file this session read.
    EditFile {
        /// The file, as the model wrote it.
        path: String,
        /// The text to find, exactly.
        old_string: String,
        /// What it becomes.
        new_string: String,
        /// Every occurrence; else it must occur once.
        replace_all: bool,
    },
    /// Create a file, or replace one this session read, whole.
    WriteFile {
        /// The file, as the model wrote it.
        path: String,
        /// Its whole content.
        content: String,
    },
    /// Read the skill `name`: its body and the files of its folder. The
    /// model names it; the core fills in `dir` from the skills the prompt
    /// lists (empty as parsed).
    Skill {
        /// The skill's name, as the prompt lists it.
        name: String,
        /// The skill's folder.
        dir: String,
    },
    /// Set the plan, whole (see [`crate::plan`]); the session logs it and
    /// answers, nothing runs.
    UpdatePlan {
        /// The steps, checked.
        plan: crate::plan::Plan,
    },
    /// Read a web page (http or https) as Markdown, within the bounds of
    /// [`crate::policy`]; see [`crate::web`].
    WebFetch {
        /// The URL, as the model wrote it.
        url: String,
        /// What the model wants from the page: the result's head.
        prompt: Option<String>,
        /// The hosts it may reach at a private address (empty as parsed;
        /// the session fills it in when the call passed its gate).
        access: crate::web::Access,
        /// The session's fetch of the same URL within the cache's time:
        /// its bytes come from the content store, not the network.
        cached: Option<Box<crate::record::Fetched>>,
    },
}

impl Tool {
    /// The tool's name as the model calls it.
    pub fn name(&self) -> &'static str {
        match self {
            Tool::ReadFile { .. } => "read_file",
            Tool::ListDir { .. } => "list_dir",
            Tool::Grep { .. } => "grep",
            Tool::Shell { .. } => "shell",
            Tool::RequestFileGrant { .. } => "request_file_grant",
            Tool::AgentInfo => "agent_info",
            Tool::Remember { .. } => "remember",
            Tool::GoalProgress { .. } => "GoalProgress",
            Tool::EditFile { .. } => "edit_file",
            Tool::WriteFile { .. } => "write_file",
            Tool::Skill { .. } => "skill",
            Tool::ShellOutput { .. } => "shell_output",
            Tool::ShellKill { .. } => "shell_kill",
            Tool::Task { .. } => "task",
            Tool::UpdatePlan { .. } => "update_plan",
            Tool::WebFetch { .. } => crate::web::TOOL,
        }
    }

    /// Whether the tool cannot change anything, so a planning session
    /// (`--plan`, `/plan`) runs it, as its row of [`SPECS`] says: the
    /// readers (`read_file`, `list_dir`, `grep`, `agent_info`, `skill`), a
    /// grant to read (`request_file_grant`, still approved as ever) and
    /// `shell`, whose commands then run in the read-only sandbox (refused
    /// where none enforces it). `remember` and `GoalProgress` write the
    /// project's memory and goal, `edit_file` and `write_file` the tree:
    /// refused. MCP tools are refused too (see [`crate::mcp`]): what a
    /// server does is its own, and its `readOnlyHint` is only its word.
    /// `web_fetch` changes nothing here, but it reaches out: while planning
    /// it runs only when a permission rule allows it (its gate says so).
    pub(crate) fn changes_nothing(&self) -> bool {
        spec(self.name()).is_some_and(|s| s.changes_nothing)
    }

    /// The path of an edit (`edit_file`, `write_file`), which the session
    /// opens before deciding the change.
    pub(crate) fn edit_path(&self) -> Option<&str> {
        match self {
            Tool::EditFile { path, .. } | Tool::WriteFile { path, .. } => Some(path),
            _ => None,
        }
    }
}

/// A tool's definition: name, what it does, a JSON Schema of its arguments.
#[derive(Clone, Debug)]
pub struct Definition {
    /// The name the model calls it by.
    pub name: &'static str,
    /// What it does, as the model reads it.
    pub description: &'static str,
    /// The JSON Schema of its arguments.
    pub parameters: Value,
}

/// Every tool, in the order they are offered: one row of [`SPECS`] each.
pub fn definitions() -> Vec<Definition> {
    SPECS.iter().map(Spec::definition).collect()
}

/// The definitions offered: those named in `only`, else all of them, in
/// the order of [`definitions`]; each in [`brief`] when `brief`.
pub fn offered(only: Option<&[String]>, brief: bool) -> Vec<Definition> {
    SPECS
        .iter()
        .filter(|s| only.is_none_or(|only| only.iter().any(|name| name == s.name)))
        .map(Spec::definition)
        .map(|d| if brief { self::brief(d) } else { d })
        .collect()
}

/// A definition in brief, for a small window: its description's first
/// sentence, and its arguments' schema without their descriptions (their
/// names, types and which are required stay). The thirteen tools take
/// about 2,500 tokens whole and 1,500 in brief: at a 4,096-token window
/// the difference is a turn's room.
pub fn brief(d: Definition) -> Definition {
    Definition {
        description: first_sentence(d.description),
        parameters: undescribed(d.parameters),
        ..d
    }
}

/// `text` up to the end of its first sentence (a `.` or `;` before a
/// space); all of it when it has one sentence.
fn first_sentence(text: &str) -> &str {
    let ends = text
        .char_indices()
        .zip(text.chars().skip(1))
        .find(|((_, c), next)| matches!(c, '.' | ';') && next.is_whitespace());
    match ends {
        Some(((at, '.'), _)) => &text[..=at],
        Some(((at, _), _)) => &text[..at],
        None => text,
    }
}

/// A JSON Schema without the `description` of its properties, at any
/// depth (a property named `description` stays).
fn undescribed(schema: Value) -> Value {
    match schema {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(k, v)| k != "description" || !v.is_string())
                .map(|(k, v)| (k, undescribed(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(undescribed).collect()),
        other => other,
    }
}

/// Every built-in tool's name, in the order they are offered.
pub fn names() -> Vec<&'static str> {
    SPECS.iter().map(|s| s.name).collect()
}

/// A built-in tool as the model is told of it, and what the session needs
/// to know of it before it runs: one row of [`SPECS`] (ripgrep's flag
/// definitions are kept the same way). A new tool is a new row, a
/// variant of [`Tool`] and an arm of [`parse`].
struct Spec {
    /// The name the model calls it by ([`Tool::name`]).
    name: &'static str,
    /// What it does, as the model reads it.
    description: &'static str,
    /// Its arguments, in the order the schema lists them.
    params: &'static [Param],
    /// Whether it cannot change anything, so a planning session (`--plan`,
    /// `/plan`) runs it (see [`Tool::changes_nothing`]).
    changes_nothing: bool,
}

/// One argument of a tool.
struct Param {
    /// The argument's name.
    name: &'static str,
    /// Whether the model must give it.
    required: bool,
    /// What it holds.
    kind: Kind,
}

/// What an argument holds, with the text that tells the model.
enum Kind {
    /// A string.
    Text(&'static str),
    /// A whole number from 0.
    Count(&'static str),
    /// A boolean.
    Flag(&'static str),
    /// One of a few strings, which say themselves.
    OneOf(&'static [&'static str]),
    /// A list of objects with these fields.
    List(&'static [Param]),
}

const fn text(name: &'static str, description: &'static str) -> Param {
    Param {
        name,
        required: false,
        kind: Kind::Text(description),
    }
}

const fn count(name: &'static str, description: &'static str) -> Param {
    Param {
        name,
        required: false,
        kind: Kind::Count(description),
    }
}

const fn flag(name: &'static str, description: &'static str) -> Param {
    Param {
        name,
        required: false,
        kind: Kind::Flag(description),
    }
}

impl Param {
    /// The same argument, which the model must give.
    const fn required(self) -> Param {
        Param {
            required: true,
            ..self
        }
    }

    /// Its JSON Schema.
    fn schema(&self) -> Value {
        match self.kind {
            Kind::Text(d) => json!({"type": "string", "description": d}),
            Kind::Count(d) => json!({"type": "integer", "minimum": 0, "description": d}),
            Kind::Flag(d) => json!({"type": "boolean", "description": d}),
            Kind::OneOf(values) => json!({"type": "string", "enum": values}),
            Kind::List(fields) => json!({"type": "array", "items": object(fields)}),
        }
    }
}

/// The JSON Schema of an object with `fields`.
fn object(fields: &[Param]) -> Value {
    let properties: serde_json::Map<String, Value> = fields
        .iter()
        .map(|p| (p.name.to_owned(), p.schema()))
        .collect();
    let required: Vec<&str> = fields
        .iter()
        .filter(|p| p.required)
        .map(|p| p.name)
        .collect();
    json!({"type": "object", "properties": properties, "required": required})
}

impl Spec {
    fn definition(&self) -> Definition {
        Definition {
            name: self.name,
            description: self.description,
            parameters: object(self.params),
        }
    }
}

/// The row of the built-in tool `name`.
fn spec(name: &str) -> Option<&'static Spec> {
    SPECS.iter().find(|s| s.name == name)
}

const PATH: &str = "path, relative to the working directory or absolute";
const SHELL_ID: &str = "the id shell returned";

/// Every built-in tool, in the order they are offered.
const SPECS: &[Spec] = &[
    Spec {
        name: "read_file",
        description: "Read a text file of the working tree (or a path granted to this session). \
                      Large files: pass offset and limit to read a range of lines.",
        params: &[
            text("path", PATH).required(),
            count("offset", "first line to read, 1-based"),
            count("limit", "how many lines to read"),
        ],
        changes_nothing: true,
    },
    Spec {
        name: "list_dir",
        description: "List the entries of a directory of the working tree (or a granted path); \
                      hidden and gitignored entries are left out, as grep leaves them out.",
        params: &[text("path", "directory path").required()],
        changes_nothing: true,
    },
    Spec {
        name: "grep",
        description: "Search files for a regular expression; prints path:line:text for each \
                      match, bounded in size.",
        params: &[
            text("pattern", "regular expression").required(),
            text(
                "path",
                "file or directory to search (default: the working directory)",
            ),
        ],
        changes_nothing: true,
    },
    Spec {
        name: "shell",
        description: "Run a shell command (sh -c) in the working directory and return its exit \
                      status, stdout and stderr. The user may have to approve it. With \
                      background true it starts the command (a server, a watch build) and \
                      returns its id at once: read it with shell_output, stop it with \
                      shell_kill; it is killed when the session ends.",
        params: &[
            text("command", "the command line").required(),
            count(
                "timeout_s",
                "seconds before the command is killed (default 120)",
            ),
            flag("background", "start it and return its id at once"),
        ],
        // Its commands then run in the read-only sandbox (refused where
        // none enforces it).
        changes_nothing: true,
    },
    Spec {
        name: "shell_output",
        description: "What a background shell command printed since the last read, and \
                      whether it ended (with its exit status).",
        params: &[text("id", SHELL_ID).required()],
        changes_nothing: true,
    },
    Spec {
        name: "shell_kill",
        description: "Kill a background shell command and everything it started.",
        params: &[text("id", SHELL_ID).required()],
        changes_nothing: true,
    },
    Spec {
        name: "edit_file",
        description: "Replace exact text in a file of the working tree (or a granted path). \
                      Read the file first: a file this session has not read, or that changed \
                      since, is refused. old_string must match once (whitespace included) \
                      unless replace_all is true. The user may have to approve the change.",
        params: &[
            text("path", PATH).required(),
            text("old_string", "the exact text to replace").required(),
            text("new_string", "the text to put in its place").required(),
            flag("replace_all", "replace every match"),
        ],
        changes_nothing: false,
    },
    Spec {
        name: "write_file",
        description: "Create a file, or replace a whole file this session has read, in the \
                      working tree (or a granted path). The folder must exist. The user may \
                      have to approve the change.",
        params: &[
            text("path", PATH).required(),
            text("content", "the whole new content").required(),
        ],
        changes_nothing: false,
    },
    Spec {
        name: "request_file_grant",
        description: "Ask the user to let this session read a path outside the working tree.",
        params: &[
            text("path", "absolute path").required(),
            text("reason", "why you need it"),
        ],
        // A grant to read, still approved as ever.
        changes_nothing: true,
    },
    Spec {
        name: "remember",
        description: "Save one durable fact or habit to this project's memory, which is loaded \
                      into every later session. One label per file; content is the whole file \
                      (markdown); empty content deletes it. An existing label is refused unless \
                      replace is true.",
        params: &[
            text(
                "label",
                "file name without .md: letters, digits, '-', '_', '.'",
            )
            .required(),
            text("content", "the whole file; empty to delete it").required(),
            flag("replace", "overwrite an existing file"),
        ],
        changes_nothing: false,
    },
    Spec {
        name: "GoalProgress",
        description: "Record what just advanced the user's standing goal, when it happens. \
                      Set met to true to propose that the objective is reached; only the user \
                      ends it.",
        params: &[
            text("note", "what advanced, in one line").required(),
            flag("met", "propose the objective reached"),
        ],
        changes_nothing: false,
    },
    Spec {
        name: "skill",
        description: "Read a skill the prompt lists: its instructions and files.",
        params: &[text("name", "its name").required()],
        changes_nothing: true,
    },
    Spec {
        name: "task",
        description: "Hand a self-contained piece of work to a subagent: a child session \
                      with its own window that sees only your prompt, may use only the tools \
                      its definition allows (read-only by default) and answers once; its \
                      answer is the result. Several task calls in one answer run side by side.",
        params: &[
            text("description", "three to five words on what it does").required(),
            text("prompt", "the whole task: the child sees nothing else").required(),
            text(
                "subagent",
                "the subagent definition to run (default: a read-only helper)",
            ),
        ],
        changes_nothing: true,
    },
    Spec {
        name: "agent_info",
        description: "This session's id and name, its log file, the project key and directory, \
                      and the state and config roots.",
        params: &[],
        changes_nothing: true,
    },
    Spec {
        name: "update_plan",
        description: "Keep a visible plan for work of several steps: give the whole list each \
                      time, each step pending, in_progress (one at a time) or done. The user \
                      sees it; it survives compaction.",
        params: &[Param {
            name: "steps",
            required: true,
            kind: Kind::List(&[
                text("step", "what the step is, one line").required(),
                Param {
                    name: "status",
                    required: true,
                    kind: Kind::OneOf(&["pending", "in_progress", "done"]),
                },
            ]),
        }],
        changes_nothing: true,
    },
    Spec {
        name: crate::web::TOOL,
        description: "Read a web page (http or https) as Markdown: a library's current docs, \
                      an issue, a changelog. Bounded in size and time; a long page is cut, the \
                      whole kept in a file you can read_file. The user may have to approve \
                      the site; private and local addresses need the user's rule.",
        params: &[
            text("url", "the http:// or https:// URL").required(),
            text(
                "prompt",
                "what you want from the page (shown with its text)",
            ),
        ],
        // It changes nothing here but reaches out: while planning it runs
        // only when a permission rule allows it (its gate says so).
        changes_nothing: true,
    },
];

/// How long a shell command may run: the model's `timeout_s`, else
/// [`policy::SHELL_TIMEOUT_S`], within 1 to [`policy::SHELL_MAX_TIMEOUT_S`]
/// seconds.
pub fn shell_timeout(asked: Option<u64>) -> u64 {
    asked
        .unwrap_or(crate::policy::SHELL_TIMEOUT_S)
        .clamp(1, crate::policy::SHELL_MAX_TIMEOUT_S)
}

/// Checks a call's name and arguments. The error is the text of the result
/// the model gets (starting `error:`).
pub fn parse(call: &ToolCall) -> Result<Tool, String> {
    use arguments::*;
    let tool = match call.name.as_str() {
        "read_file" => args::<Read>(call).map(|a| Tool::ReadFile {
            path: a.path,
            offset: a.offset,
            limit: a.limit,
        }),
        "list_dir" => args::<Path>(call).map(|a| Tool::ListDir { path: a.path }),
        "grep" => args::<Grep>(call).map(|a| Tool::Grep {
            pattern: a.pattern,
            path: a.path,
        }),
        "shell" => args::<Shell>(call).map(|a| Tool::Shell {
            command: a.command,
            timeout_s: shell_timeout(a.timeout_s),
            background: a.background,
        }),
        "shell_output" => args::<Id>(call).map(|a| Tool::ShellOutput { id: a.id }),
        "shell_kill" => args::<Id>(call).map(|a| Tool::ShellKill { id: a.id }),
        "task" => args::<Task>(call).map(|a| Tool::Task {
            description: a.description,
            prompt: a.prompt,
            subagent: a.subagent.filter(|s| !s.trim().is_empty()),
        }),
        "request_file_grant" => args::<Grant>(call).map(|a| Tool::RequestFileGrant {
            path: a.path,
            reason: a.reason,
        }),
        "agent_info" => args::<Value>(call).map(|_| Tool::AgentInfo),
        "skill" => args::<Skill>(call).map(|a| Tool::Skill {
            name: a.name,
            dir: String::new(),
        }),
        "remember" => args::<Remember>(call).and_then(|a| {
            let label = Label::parse(&a.label).map_err(|e| format!("error: remember: {e}"))?;
            Ok(Tool::Remember {
                label,
                content: a.content,
                replace: a.replace,
            })
        }),
        "GoalProgress" => args::<Progress>(call).map(|a| Tool::GoalProgress {
            note: a.note,
            met: a.met,
        }),
        "update_plan" => crate::plan::parse(if call.arguments.trim().is_empty() {
            "{}"
        } else {
            &call.arguments
        })
        .map(|plan| Tool::UpdatePlan { plan }),
        "edit_file" => args::<Edit>(call).map(|a| Tool::EditFile {
            path: a.path,
            old_string: a.old_string,
            new_string: a.new_string,
            replace_all: a.replace_all,
        }),
        "write_file" => args::<Write>(call).map(|a| Tool::WriteFile {
            path: a.path,
            content: a.content,
        }),
        "web_fetch" => args::<Fetch>(call).and_then(|a| {
            crate::web::checked(a.url.trim()).map_err(|e| format!("error: web_fetch: {e}"))?;
            Ok(Tool::WebFetch {
                url: a.url.trim().to_owned(),
                prompt: a.prompt.filter(|p| !p.trim().is_empty()),
                access: crate::web::Access::default(),
                cached: None,
            })
        }),
        other => Err(format!(
            "error: there is no tool named {other:?}; the tools are {}",
            names().join(", ")
        )),
    }?;
    nonempty(call, tool)
}

/// `tool` unless an argument it cannot do without is empty (the error
/// names it).
fn nonempty(call: &ToolCall, tool: Tool) -> Result<Tool, String> {
    match &tool {
        Tool::ReadFile { path, .. }
        | Tool::ListDir { path }
        | Tool::RequestFileGrant { path, .. }
        | Tool::EditFile { path, .. }
        | Tool::WriteFile { path, .. }
            if path.is_empty() =>
        {
            Err(format!("error: {}: path is empty", call.name))
        }
        Tool::Shell { command, .. } if command.trim().is_empty() => {
            Err("error: shell: command is empty".into())
        }
        Tool::Grep { pattern, .. } if pattern.is_empty() => {
            Err("error: grep: pattern is empty".into())
        }
        Tool::Task { prompt, .. } if prompt.trim().is_empty() => {
            Err("error: task: prompt is empty".into())
        }
        Tool::EditFile { old_string, .. } if old_string.is_empty() => Err(
            "error: edit_file: old_string is empty; to write a whole file use write_file".into(),
        ),
        _ => Ok(tool),
    }
}

/// Characters kept from the start of a cut result.
pub const HEAD_CHARS: usize = 4096;
/// Characters kept from the end of a cut result.
pub const TAIL_CHARS: usize = 1024;

/// The first [`HEAD_CHARS`] and last [`TAIL_CHARS`] characters of `text`,
/// with one line between them saying how many characters are gone and, in
/// `note`, where the rest is. Text that short enough is returned whole.
/// The user message a `!COMMAND` the user ran adds to the conversation:
/// the command, then its output cut as a tool result's is (head and
/// tail).
pub fn ran_message(command: &str, output: &str) -> String {
    format!(
        "I ran this shell command myself:\n$ {command}\n{}",
        head_tail(output.trim_end(), "")
    )
}

pub(crate) fn head_tail(text: &str, note: &str) -> String {
    if text.chars().count() <= HEAD_CHARS + TAIL_CHARS {
        return text.to_owned();
    }
    cut(text, HEAD_CHARS, TAIL_CHARS, note)
}

/// The first `head` and last `tail` characters of `text` with the line
/// between them, always (an empty middle says `0 characters cut`).
pub fn cut(text: &str, head: usize, tail: usize, note: &str) -> String {
    let total = text.chars().count();
    let head = head.min(total);
    let tail = tail.min(total - head);
    let head_end = text.char_indices().nth(head).map_or(text.len(), |(i, _)| i);
    let tail_start = text
        .char_indices()
        .nth(total - tail)
        .map_or(text.len(), |(i, _)| i);
    let gone = total - head - tail;
    format!(
        "{}\n[… {gone} characters cut{note} …]\n{}",
        &text[..head_end],
        &text[tail_start..]
    )
}

/// The arguments of each built-in tool, as the model sends them.
mod arguments {
    use serde::Deserialize;

    use crate::record::ToolCall;

    pub(super) fn args<'a, T: Deserialize<'a>>(call: &'a ToolCall) -> Result<T, String> {
        let text = if call.arguments.trim().is_empty() {
            "{}"
        } else {
            call.arguments.as_str()
        };
        serde_json::from_str(text)
            .map_err(|e| format!("error: bad arguments for {}: {e}", call.name))
    }
    #[derive(Deserialize)]
    pub(super) struct Path {
        pub(super) path: String,
    }
    #[derive(Deserialize)]
    pub(super) struct Read {
        pub(super) path: String,
        pub(super) offset: Option<u64>,
        pub(super) limit: Option<u64>,
    }
    #[derive(Deserialize)]
    pub(super) struct Grep {
        pub(super) pattern: String,
        pub(super) path: Option<String>,
    }
    #[derive(Deserialize)]
    pub(super) struct Shell {
        pub(super) command: String,
        pub(super) timeout_s: Option<u64>,
        #[serde(default)]
        pub(super) background: bool,
    }
    #[derive(Deserialize)]
    pub(super) struct Id {
        pub(super) id: String,
    }
    #[derive(Deserialize)]
    pub(super) struct Task {
        pub(super) description: String,
        pub(super) prompt: String,
        pub(super) subagent: Option<String>,
    }
    #[derive(Deserialize)]
    pub(super) struct Remember {
        pub(super) label: String,
        pub(super) content: String,
        #[serde(default)]
        pub(super) replace: bool,
    }
    #[derive(Deserialize)]
    pub(super) struct Progress {
        pub(super) note: String,
        #[serde(default)]
        pub(super) met: bool,
    }
    #[derive(Deserialize)]
    pub(super) struct Edit {
        pub(super) path: String,
        pub(super) old_string: String,
        pub(super) new_string: String,
        #[serde(default)]
        pub(super) replace_all: bool,
    }
    #[derive(Deserialize)]
    pub(super) struct Write {
        pub(super) path: String,
        pub(super) content: String,
    }
    #[derive(Deserialize)]
    pub(super) struct Grant {
        pub(super) path: String,
        pub(super) reason: Option<String>,
    }
    #[derive(Deserialize)]
    pub(super) struct Skill {
        pub(super) name: String,
    }
    #[derive(Deserialize)]
    pub(super) struct Fetch {
        pub(super) url: String,
        pub(super) prompt: Option<String>,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, args: &str) -> ToolCall {
        ToolCall {
            id: "c".into(),
            name: name.into(),
            arguments: args.into(),
        }
    }

    #[test]
    fn parses_good_calls_and_explains_bad_ones() {
        assert_eq!(
            parse(&call("read_file", r#"{"path":"a.rs","limit":3}"#)),
            Ok(Tool::ReadFile {
                path: "a.rs".into(),
                offset: None,
                limit: Some(3)
            })
        );
        assert_eq!(parse(&call("agent_info", "")), Ok(Tool::AgentInfo));
        let e = parse(&call("read_file", r#"{"limit":3}"#)).unwrap_err();
        assert!(
            e.starts_with("error: bad arguments for read_file: missing field `path`"),
            "{e}"
        );
        let e = parse(&call("shell", r#"{"command":5}"#)).unwrap_err();
        assert!(e.contains("invalid type"), "{e}");
        let e = parse(&call("rm_rf", "{}")).unwrap_err();
        assert!(e.contains("no tool named \"rm_rf\""), "{e}");
        assert!(parse(&call("read_file", "{not json")).is_err());
        assert!(parse(&call("list_dir", r#"{"path":""}"#)).is_err());
    }

    #[test]
    fn the_shell_definition_names_the_timeout_policy() {
        let shell = definitions()
            .into_iter()
            .find(|d| d.name == "shell")
            .unwrap();
        let said = format!("(default {})", crate::policy::SHELL_TIMEOUT_S);
        assert!(
            shell.parameters.to_string().contains(&said),
            "{}",
            shell.parameters
        );
    }

    #[test]
    fn brief_definitions_keep_a_sentence_and_the_arguments_shape() {
        let whole = offered(None, false);
        let brief = offered(None, true);
        assert_eq!(whole.len(), brief.len());
        for (w, b) in whole.iter().zip(&brief) {
            assert_eq!(w.name, b.name);
            assert!(
                w.description.starts_with(b.description),
                "{}",
                b.description
            );
            assert!(!b.description.is_empty() && !b.description.contains("  "));
            assert_eq!(w.parameters["required"], b.parameters["required"]);
            for (name, property) in b.parameters["properties"].as_object().unwrap() {
                assert_eq!(property.get("description"), None, "{} {name}", b.name);
                assert_eq!(property["type"], w.parameters["properties"][name]["type"]);
            }
        }
        let read = &brief[0];
        assert_eq!(
            read.description,
            "Read a text file of the working tree (or a path granted to this session)."
        );
        assert_eq!(first_sentence("Search files; bounded."), "Search files");
        assert_eq!(first_sentence("One sentence"), "One sentence");
        assert_eq!(first_sentence("e.g.x. Then"), "e.g.x.");
        // Thirteen tools whole take about 2,500 tokens; in brief, at most
        // two thirds of the bytes.
        let bytes = |ds: &[Definition]| -> usize {
            ds.iter()
                .map(|d| d.description.len() + d.parameters.to_string().len())
                .sum()
        };
        assert!(
            bytes(&brief) * 3 < bytes(&whole) * 2,
            "{} {}",
            bytes(&brief),
            bytes(&whole)
        );
    }

    #[test]
    fn definitions_match_parse() {
        for d in definitions() {
            assert_eq!(d.parameters["type"], "object");
            // Every defined tool is known to parse (it may still want args).
            let r = parse(&call(d.name, "{}"));
            assert!(
                !matches!(&r, Err(e) if e.contains("no tool named")),
                "{}",
                d.name
            );
        }
    }

    /// Every definition as the model receives it, pinned: the table they
    /// are made from changes no byte of a request.
    #[test]
    fn the_definitions_are_pinned() {
        let all: Vec<Value> = definitions()
            .iter()
            .map(|d| json!({"name": d.name, "description": d.description, "parameters": d.parameters}))
            .collect();
        insta::assert_snapshot!(
            "definitions",
            serde_json::to_string_pretty(&all).expect("JSON values serialize")
        );
    }

    /// Every row parses into the tool of its name, and its row says
    /// whether a planning session runs it: the writers of memory, goal
    /// and tree are refused, the rest run.
    #[test]
    fn each_row_is_its_tool_and_says_whether_it_changes_anything() {
        let calls = [
            ("read_file", r#"{"path":"a"}"#, true),
            ("list_dir", r#"{"path":"a"}"#, true),
            ("grep", r#"{"pattern":"a"}"#, true),
            ("shell", r#"{"command":"ls"}"#, true),
            ("shell_output", r#"{"id":"1"}"#, true),
            ("shell_kill", r#"{"id":"1"}"#, true),
            (
                "edit_file",
                r#"{"path":"a","old_string":"x","new_string":"y"}"#,
                false,
            ),
            ("write_file", r#"{"path":"a","content":"x"}"#, false),
            ("request_file_grant", r#"{"path":"/a"}"#, true),
            ("remember", r#"{"label":"a","content":"x"}"#, false),
            ("GoalProgress", r#"{"note":"x"}"#, false),
            ("skill", r#"{"name":"a"}"#, true),
            ("task", r#"{"description":"a","prompt":"x"}"#, true),
            ("agent_info", "{}", true),
            (
                "update_plan",
                r#"{"steps":[{"step":"a","status":"done"}]}"#,
                true,
            ),
            ("web_fetch", r#"{"url":"https://example.com/"}"#, true),
        ];
        let named: Vec<&str> = calls.iter().map(|(name, _, _)| *name).collect();
        assert_eq!(named, names(), "one call of each row, in order");
        for (name, args, changes_nothing) in calls {
            let tool = parse(&call(name, args)).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(tool.name(), name);
            assert_eq!(tool.changes_nothing(), changes_nothing, "{name}");
        }
    }

    #[test]
    fn head_tail_keeps_both_ends_on_char_boundaries() {
        let text = "é".repeat(10_000);
        let cut = head_tail(&text, "; see /tmp/x");
        let lines: Vec<&str> = cut.split('\n').collect();
        assert_eq!(lines[0].chars().count(), HEAD_CHARS);
        assert_eq!(lines[1], "[… 4880 characters cut; see /tmp/x …]");
        assert_eq!(lines[2].chars().count(), TAIL_CHARS);
        assert_eq!(head_tail("short", ""), "short");
    }
}
