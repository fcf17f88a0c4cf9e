//! Hooks: commands the user configures to run at points of a session
//! (before and after a tool call, when a prompt is sent, when a turn would
//! end, …), in the shape Claude Code users already write:
//!
//! ```json
//! {"hooks": {"PreToolUse": [{"matcher": "shell|edit_file",
//!   "hooks": [{"type": "command", "command": "./check.sh", "timeout": 60}]}]}}
//! ```
//!
//! This module is the pure half: the configuration ([`Hooks::parse`]),
//! which hooks an event runs ([`Hooks::matching`]), the JSON object a hook
//! reads on its stdin ([`stdin`]), and what its answer means
//! ([`decide`]). The shell runs the command (`revolve_tools::hook`); the
//! session logs every run as a `hook` record (event, command, how it
//! ended, the decision, what it added), so replay rebuilds the requests
//! without running a hook again: what a hook changes reaches the model
//! only through records the fold reads anyway (a tool's result, a user
//! message, the system prompt).
//!
//! # What a hook's answer means
//!
//! * Exit 0: go on. Stdout that is a JSON object is read as a decision
//!   (below); any other stdout is text, which a `SessionStart` or
//!   `UserPromptSubmit` hook adds for the model and other events ignore.
//! * Exit 2: block, with stderr as the reason: a `PreToolUse` hook's call
//!   is not run and the model reads the reason as its result; a
//!   `PostToolUse` hook's reason is added to the result; a
//!   `UserPromptSubmit` hook's prompt is not sent; a `Stop` hook sends the
//!   turn on with the reason (at most [`STOP_HOOK_ROUNDS`] times a turn).
//!   Other events cannot block: the user is told the reason.
//! * Any other ending (another exit code, a timeout, output past the
//!   bound, a command not found): the user is told in one line and the
//!   session goes on as if the hook had not run.
//!
//! The JSON object: `decision` (`"block"`; `"approve"` and `"allow"` go
//! on), `reason`, `additionalContext` (also inside
//! `hookSpecificOutput`), for `PreToolUse` an updated tool input
//! (`updatedInput`, or `hookSpecificOutput.updatedInput`) and
//! `hookSpecificOutput.permissionDecision` (`"deny"` blocks with its
//! `permissionDecisionReason`), and `systemMessage`, shown to the user.
//!
//! A matcher is a regular expression matched against the whole tool name
//! (`shell`, `edit_file`, `mcp__git__log`) for `PreToolUse` and
//! `PostToolUse`, the source for `SessionStart` (`startup`, `resume`,
//! `compact`) and the trigger for `PreCompact` (`manual`, `auto`); empty,
//! absent or `*` matches all. Other events ignore it.

use std::collections::BTreeMap;

use regex_automata::meta::Regex;
use serde_json::{json, Map, Value};

mod round;
pub use round::{Got, Next, Round};

use crate::policy::{HOOK_CONTEXT_CHARS, HOOK_MAX_TIMEOUT_S, HOOK_TIMEOUT_S, STOP_HOOK_ROUNDS};

/// When a hook runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Event {
    /// A session starts or resumes, or goes on after a compaction.
    SessionStart,
    /// The user's line, before it is sent.
    UserPromptSubmit,
    /// A tool call, before it runs (after the model made it).
    PreToolUse,
    /// A tool call, after it ran, before its result is logged.
    PostToolUse,
    /// The model answered without a tool call: the turn would end.
    Stop,
    /// A compaction is about to summarize.
    PreCompact,
    /// revolve asks the user something (an approval).
    Notification,
}

impl Event {
    /// Every event, in the order the documentation lists them.
    pub const ALL: [Event; 7] = [
        Event::SessionStart,
        Event::UserPromptSubmit,
        Event::PreToolUse,
        Event::PostToolUse,
        Event::Stop,
        Event::PreCompact,
        Event::Notification,
    ];

    /// The event's name in the configuration, the log and a hook's input.
    pub fn as_str(self) -> &'static str {
        match self {
            Event::SessionStart => "SessionStart",
            Event::UserPromptSubmit => "UserPromptSubmit",
            Event::PreToolUse => "PreToolUse",
            Event::PostToolUse => "PostToolUse",
            Event::Stop => "Stop",
            Event::PreCompact => "PreCompact",
            Event::Notification => "Notification",
        }
    }

    /// The event a name stands for.
    pub fn named(name: &str) -> Option<Event> {
        Event::ALL.into_iter().find(|e| e.as_str() == name)
    }

    /// Whether a hook of this event can block what it runs before.
    pub fn blocks(self) -> bool {
        matches!(
            self,
            Event::PreToolUse | Event::PostToolUse | Event::UserPromptSubmit | Event::Stop
        )
    }

    /// Whether plain (not JSON) stdout of a hook of this event is added
    /// for the model.
    fn text_is_context(self) -> bool {
        matches!(self, Event::SessionStart | Event::UserPromptSubmit)
    }
}

impl std::fmt::Display for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a hook was configured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The user's `config.json`.
    Config,
    /// The repository's hook file (run only once approved), at this path.
    Project(String),
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Config => f.write_str("config.json"),
            Origin::Project(path) => f.write_str(path),
        }
    }
}

/// One hook: a command to run at an event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hook {
    /// The event it runs at.
    pub event: Event,
    /// The command, run by `sh -c` in the working directory.
    pub command: String,
    /// Seconds before it is killed.
    pub timeout_s: u64,
    /// Where it was configured.
    pub origin: Origin,
}

/// A matcher with its hooks.
#[derive(Clone, Debug)]
struct Group {
    /// The matcher as written (`None`: matches all).
    pattern: Option<String>,
    /// The matcher compiled, anchored at both ends.
    regex: Option<Regex>,
    hooks: Vec<Hook>,
}

impl Group {
    fn matches(&self, subject: Option<&str>) -> bool {
        match (&self.regex, subject) {
            (None, _) | (Some(_), None) => true,
            (Some(re), Some(s)) => re.is_match(s),
        }
    }
}

/// The hooks configured, by event, in the order written (the config
/// file's first, then the project's).
#[derive(Clone, Debug, Default)]
pub struct Hooks {
    by_event: BTreeMap<Event, Vec<Group>>,
}

impl PartialEq for Hooks {
    fn eq(&self, other: &Hooks) -> bool {
        self.listing() == other.listing()
    }
}

impl Eq for Hooks {}

impl Hooks {
    /// Reads the `hooks` object of a config file or a project's hook
    /// file. A wrong shape is an error naming where; an event or a hook
    /// `type` this build does not know is left out, and said in the notes
    /// that come back with the hooks.
    pub fn parse(value: &Value, origin: &Origin) -> Result<(Hooks, Vec<String>), String> {
        let mut hooks = Hooks::default();
        let mut notes = Vec::new();
        let Some(events) = value.as_object() else {
            return Err(format!(
                "{origin}: \"hooks\" must be an object of events (PreToolUse, …)"
            ));
        };
        for (name, groups) in events {
            let Some(event) = Event::named(name) else {
                notes.push(format!(
                    "{origin}: hooks of the event {name:?} are not run: revolve knows {}",
                    Event::ALL.map(Event::as_str).join(", ")
                ));
                continue;
            };
            let Some(groups) = groups.as_array() else {
                return Err(format!(
                    "{origin}: hooks.{name} must be a list of {{\"matcher\", \"hooks\"}}"
                ));
            };
            for (n, group) in groups.iter().enumerate() {
                let at = format!("{origin}: hooks.{name}[{n}]");
                if let Some(group) = parse_group(event, group, origin, &at, &mut notes)? {
                    hooks.by_event.entry(event).or_default().push(group);
                }
            }
        }
        Ok((hooks, notes))
    }

    /// These hooks, then `other`'s.
    pub fn merge(mut self, other: Hooks) -> Hooks {
        for (event, groups) in other.by_event {
            self.by_event.entry(event).or_default().extend(groups);
        }
        self
    }

    /// Whether no hook is configured.
    pub fn is_empty(&self) -> bool {
        self.by_event
            .values()
            .all(|g| g.iter().all(|g| g.hooks.is_empty()))
    }

    /// Whether some hook runs at `event` (for any subject).
    pub fn any(&self, event: Event) -> bool {
        self.by_event
            .get(&event)
            .is_some_and(|g| g.iter().any(|g| !g.hooks.is_empty()))
    }

    /// The hooks `event` runs for `subject` (the tool's name, the start's
    /// source, the compaction's trigger), in order; a command configured
    /// twice runs once.
    pub fn matching(&self, event: Event, subject: Option<&str>) -> Vec<Hook> {
        let mut out: Vec<Hook> = Vec::new();
        for group in self.by_event.get(&event).into_iter().flatten() {
            if !group.matches(subject) {
                continue;
            }
            for hook in &group.hooks {
                if !out.iter().any(|h| h.command == hook.command) {
                    out.push(hook.clone());
                }
            }
        }
        out
    }

    /// Each hook as an approval covers it: `EVENT MATCHER: COMMAND` (its
    /// timeout left out), with its command, in order.
    pub fn approval_keys(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (event, groups) in &self.by_event {
            for group in groups {
                let matcher = group.pattern.as_deref().unwrap_or("*");
                for hook in &group.hooks {
                    out.push((
                        format!("{event} {matcher}: {}", hook.command),
                        hook.command.clone(),
                    ));
                }
            }
        }
        out
    }

    /// Every hook as one line (`PreToolUse shell|edit_file: ./check.sh
    /// (60 s, config.json)`), for `revolve hooks list` and `/status`.
    pub fn listing(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (event, groups) in &self.by_event {
            for group in groups {
                for hook in &group.hooks {
                    let matcher = match &group.pattern {
                        Some(p) => format!(" {p}"),
                        None => String::new(),
                    };
                    out.push(format!(
                        "{event}{matcher}: {} ({} s, {})",
                        hook.command, hook.timeout_s, hook.origin
                    ));
                }
            }
        }
        out
    }
}

fn parse_group(
    event: Event,
    group: &Value,
    origin: &Origin,
    at: &str,
    notes: &mut Vec<String>,
) -> Result<Option<Group>, String> {
    let Some(group) = group.as_object() else {
        return Err(format!("{at} must be an object {{\"matcher\", \"hooks\"}}"));
    };
    let pattern = match group.get("matcher") {
        None | Some(Value::Null) => None,
        Some(Value::String(p)) if p.is_empty() || p == "*" => None,
        Some(Value::String(p)) => Some(p.clone()),
        Some(_) => return Err(format!("{at}.matcher must be a string")),
    };
    let regex = match &pattern {
        Some(p) => Some(
            Regex::new(&format!("^(?:{p})$"))
                .map_err(|e| format!("{at}.matcher {p:?} is not a regular expression: {e}"))?,
        ),
        None => None,
    };
    let Some(list) = group.get("hooks").and_then(Value::as_array) else {
        return Err(format!(
            "{at}.hooks must be a list of {{\"type\": \"command\", \"command\"}}"
        ));
    };
    let mut hooks = Vec::new();
    for (n, hook) in list.iter().enumerate() {
        let at = format!("{at}.hooks[{n}]");
        let kind = hook
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("command");
        if kind != "command" {
            notes.push(format!(
                "{at}: a hook of type {kind:?} is not run (revolve runs \"command\" hooks)"
            ));
            continue;
        }
        let Some(command) = hook
            .get("command")
            .and_then(Value::as_str)
            .filter(|c| !c.trim().is_empty())
        else {
            return Err(format!("{at}.command must be a non-empty string"));
        };
        let timeout_s = match hook.get("timeout") {
            None | Some(Value::Null) => HOOK_TIMEOUT_S,
            Some(t) => match t.as_u64().filter(|&t| t > 0) {
                Some(t) => t.min(HOOK_MAX_TIMEOUT_S),
                None => return Err(format!("{at}.timeout must be a number of seconds above 0")),
            },
        };
        hooks.push(Hook {
            event,
            command: command.to_owned(),
            timeout_s,
            origin: origin.clone(),
        });
    }
    Ok(Some(Group {
        pattern,
        regex,
        hooks,
    }))
}

/// Where a hook runs: what every hook's input holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Place<'a> {
    /// The session's id.
    pub session_id: &'a str,
    /// The session's log file.
    pub transcript_path: &'a str,
    /// The working directory.
    pub cwd: &'a str,
}

/// What an event is about: the fields of a hook's input besides
/// [`Place`], and the subject its matcher is matched against.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum About {
    /// The session starts (`startup`), resumes (`resume`) or goes on in a
    /// new file after a compaction (`compact`).
    SessionStart {
        /// `startup`, `resume` or `compact`.
        source: String,
    },
    /// The user's line.
    UserPromptSubmit {
        /// The line as the user wrote it.
        prompt: String,
    },
    /// A tool call about to run.
    PreToolUse {
        /// The tool's name.
        tool: String,
        /// Its arguments (a JSON object; not JSON: the text as a string).
        input: Value,
    },
    /// A tool call that ran.
    PostToolUse {
        /// The tool's name.
        tool: String,
        /// Its arguments.
        input: Value,
        /// Its result, as the model will read it.
        output: String,
    },
    /// The turn would end.
    Stop {
        /// Whether a `Stop` hook already sent this turn on.
        active: bool,
    },
    /// A compaction is about to summarize.
    PreCompact {
        /// `manual` (`/compact`) or `auto`.
        trigger: String,
    },
    /// The user is asked something.
    Notification {
        /// What the user is told.
        message: String,
    },
}

impl About {
    /// The event this is about.
    pub fn event(&self) -> Event {
        match self {
            About::SessionStart { .. } => Event::SessionStart,
            About::UserPromptSubmit { .. } => Event::UserPromptSubmit,
            About::PreToolUse { .. } => Event::PreToolUse,
            About::PostToolUse { .. } => Event::PostToolUse,
            About::Stop { .. } => Event::Stop,
            About::PreCompact { .. } => Event::PreCompact,
            About::Notification { .. } => Event::Notification,
        }
    }

    /// What a matcher is matched against: the tool, the source, the
    /// trigger; none for the other events.
    pub fn subject(&self) -> Option<&str> {
        match self {
            About::PreToolUse { tool, .. } | About::PostToolUse { tool, .. } => Some(tool),
            About::SessionStart { source } => Some(source),
            About::PreCompact { trigger } => Some(trigger),
            _ => None,
        }
    }

    /// The tool's name, for a tool's events.
    pub fn tool(&self) -> Option<&str> {
        match self {
            About::PreToolUse { tool, .. } | About::PostToolUse { tool, .. } => Some(tool),
            _ => None,
        }
    }
}

/// A tool call's arguments as a hook reads them: the JSON object the
/// model wrote, or its text as a string when it is not one.
pub fn tool_input(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(v @ Value::Object(_)) => v,
        _ if arguments.trim().is_empty() => json!({}),
        _ => Value::String(arguments.to_owned()),
    }
}

/// The JSON object a hook reads on its stdin, one line (Claude Code's
/// field names: `session_id`, `transcript_path`, `cwd`,
/// `hook_event_name`, then the event's own: `source`, `prompt`,
/// `tool_name` and `tool_input`, `tool_response`, `stop_hook_active`,
/// `trigger`, `message`).
pub fn stdin(place: &Place<'_>, about: &About) -> String {
    let mut o = Map::new();
    o.insert("session_id".into(), json!(place.session_id));
    o.insert("transcript_path".into(), json!(place.transcript_path));
    o.insert("cwd".into(), json!(place.cwd));
    o.insert("hook_event_name".into(), json!(about.event().as_str()));
    match about {
        About::SessionStart { source } => {
            o.insert("source".into(), json!(source));
        }
        About::UserPromptSubmit { prompt } => {
            o.insert("prompt".into(), json!(prompt));
        }
        About::PreToolUse { tool, input } => {
            o.insert("tool_name".into(), json!(tool));
            o.insert("tool_input".into(), input.clone());
        }
        About::PostToolUse {
            tool,
            input,
            output,
        } => {
            o.insert("tool_name".into(), json!(tool));
            o.insert("tool_input".into(), input.clone());
            o.insert("tool_response".into(), json!(output));
        }
        About::Stop { active } => {
            o.insert("stop_hook_active".into(), json!(active));
        }
        About::PreCompact { trigger } => {
            o.insert("trigger".into(), json!(trigger));
        }
        About::Notification { message } => {
            o.insert("message".into(), json!(message));
        }
    }
    Value::Object(o).to_string()
}

/// How a hook's command ended, as the shell saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ended {
    /// It exited with this code.
    Exited(i32),
    /// A signal killed it (not revolve).
    Killed(i32),
    /// It ran past its timeout, in seconds, and was killed with its group.
    TimedOut(u64),
    /// It wrote more than the bound and was killed with its group.
    Cut(usize),
    /// It could not be started at all (why).
    Failed(String),
}

/// A hook's run as the shell saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ran {
    /// How it ended.
    pub ended: Ended,
    /// Its stdout (at most the bound, decoded lossily).
    pub stdout: String,
    /// Its stderr (likewise).
    pub stderr: String,
}

/// What a hook decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Go on.
    Go,
    /// Block (see the module doc for what that does at each event).
    Block,
}

impl Decision {
    /// The word the log holds.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Go => "go",
            Decision::Block => "block",
        }
    }
}

/// What a hook's answer means for the session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// Go on or block.
    pub decision: Decision,
    /// Why it blocked, for the model (or, for a prompt, the user).
    pub reason: Option<String>,
    /// Text the hook adds for the model.
    pub added: Option<String>,
    /// The tool input a `PreToolUse` hook rewrote (a JSON object).
    pub input: Option<Value>,
    /// One line for the user: an error, a timeout, a message the hook
    /// asked to show.
    pub note: Option<String>,
}

impl Verdict {
    fn go() -> Verdict {
        Verdict {
            decision: Decision::Go,
            reason: None,
            added: None,
            input: None,
            note: None,
        }
    }
}

/// What `hook`'s run means (see the module doc).
pub fn decide(hook: &Hook, ran: &Ran) -> Verdict {
    let event = hook.event;
    let name = crate::text::one_line(&hook.command, 60);
    let first = |text: &str| crate::text::one_line(text.trim(), 200);
    let mut v = Verdict::go();
    match &ran.ended {
        Ended::Exited(0) => read_stdout(event, &ran.stdout, &mut v),
        Ended::Exited(2) => {
            let why = ran.stderr.trim();
            let why = if why.is_empty() {
                format!("blocked by the hook `{name}`")
            } else {
                bounded(why)
            };
            if event.blocks() {
                v.decision = Decision::Block;
                v.reason = Some(why);
            } else {
                v.note = Some(format!("{event} hook `{name}`: {}", first(&why)));
            }
        }
        Ended::Exited(127) => {
            v.note = Some(format!(
                "{event} hook `{name}`: command not found ({}); going on without it",
                first(&ran.stderr)
            ))
        }
        Ended::Exited(code) => {
            let why = first(&ran.stderr);
            v.note = Some(if why.is_empty() {
                format!("{event} hook `{name}` failed (exit {code}); going on")
            } else {
                format!("{event} hook `{name}` failed (exit {code}): {why}; going on")
            })
        }
        Ended::Killed(signal) => {
            v.note = Some(format!(
                "{event} hook `{name}` was killed by signal {signal}; going on"
            ))
        }
        Ended::TimedOut(secs) => {
            v.note = Some(format!(
                "{event} hook `{name}` timed out after {secs} s and was killed; going on without it"
            ))
        }
        Ended::Cut(bytes) => {
            v.note = Some(format!(
                "{event} hook `{name}` wrote more than {bytes} bytes and was stopped; its output is ignored"
            ))
        }
        Ended::Failed(why) => {
            v.note = Some(format!(
                "{event} hook `{name}` could not start: {}; going on",
                first(why)
            ))
        }
    }
    v
}

/// Reads the stdout of a hook that exited 0 into `v`.
fn read_stdout(event: Event, stdout: &str, v: &mut Verdict) {
    let text = stdout.trim();
    let Ok(Value::Object(o)) = serde_json::from_str::<Value>(text) else {
        if event.text_is_context() && !text.is_empty() {
            v.added = Some(bounded(text));
        }
        return;
    };
    let specific = o.get("hookSpecificOutput").and_then(Value::as_object);
    let field = |name: &str| {
        o.get(name)
            .or_else(|| specific.and_then(|s| s.get(name)))
            .filter(|v| !v.is_null())
    };
    let text = |name: &str| field(name).and_then(Value::as_str).map(str::trim);
    let denied = text("permissionDecision") == Some("deny");
    if (text("decision") == Some("block") || denied) && event.blocks() {
        v.decision = Decision::Block;
        let why = text("reason")
            .or_else(|| text("permissionDecisionReason"))
            .filter(|r| !r.is_empty())
            .unwrap_or("blocked by a hook");
        v.reason = Some(bounded(why));
    }
    if let Some(added) = text("additionalContext").filter(|t| !t.is_empty()) {
        v.added = Some(bounded(added));
    }
    if event == Event::PreToolUse {
        v.input = field("updatedInput").filter(|i| i.is_object()).cloned();
    }
    if let Some(message) = text("systemMessage").filter(|t| !t.is_empty()) {
        v.note = Some(crate::text::one_line(message, 200));
    }
}

/// `text` at most [`HOOK_CONTEXT_CHARS`] characters, with a line saying
/// what was cut.
fn bounded(text: &str) -> String {
    match text.char_indices().nth(HOOK_CONTEXT_CHARS) {
        None => text.to_owned(),
        Some((i, _)) => format!(
            "{}\n[… cut: a hook adds at most {HOOK_CONTEXT_CHARS} characters]",
            &text[..i]
        ),
    }
}

/// What a tool's result says when a `PreToolUse` hook blocked the call.
pub fn blocked_result(reason: &str) -> String {
    format!("error: not run: a PreToolUse hook blocked this call: {reason}")
}

/// A tool's result with what `PostToolUse` hooks added (a block's reason
/// or their context) after it.
pub fn after_result(result: &str, added: &[String]) -> String {
    if added.is_empty() {
        return result.to_owned();
    }
    let mut out = result.to_owned();
    for a in added {
        out.push_str("\n\n[PostToolUse hook]\n");
        out.push_str(a);
    }
    out
}

/// A user's line with what `UserPromptSubmit` hooks added after it.
pub fn with_context(prompt: &str, added: &[String]) -> String {
    let mut out = prompt.to_owned();
    for a in added {
        out.push_str("\n\n[UserPromptSubmit hook]\n");
        out.push_str(a);
    }
    out
}

/// The user message that sends a turn on after a `Stop` hook blocked its
/// end.
pub fn stop_message(reason: &str) -> String {
    format!("[Stop hook] The turn is not over: {reason}")
}

/// Whether a `Stop` hook may send a turn on once more, after `rounds`
/// times already.
pub fn stop_may_go_on(rounds: u32) -> bool {
    rounds < STOP_HOOK_ROUNDS
}

/// What the user is told when `Stop` hooks would send a turn on again
/// past the bound.
pub fn stop_bounded_note() -> String {
    format!(
        "Stop hooks sent this turn on {STOP_HOOK_ROUNDS} times; it ends here (the bound: \
         STOP_HOOK_ROUNDS)"
    )
}

/// The system prompt's block of what `SessionStart` hooks added.
pub fn start_block(added: &[String]) -> Option<String> {
    if added.is_empty() {
        return None;
    }
    Some(format!(
        "## Session start context (from hooks)\n\n{}",
        added.join("\n\n")
    ))
}

#[cfg(test)]
mod tests;
