//! What the user reads: the status line, transcripts, session listings,
//! the slash commands' parsing and help ([`slash`]), `@path` parsing
//! ([`attach`]). Pure text from state, so every view is snapshot-tested.
//!
//! A crate of its own beside `revolve-core`: core is the session machine,
//! and nothing here decides what a session does; only the shell (`repl`,
//! `revolve-io`, the store's resume) reads it. Like core it touches
//! nothing in the world.

#![forbid(unsafe_code)]

pub mod attach;
pub mod export;
mod limits;
pub mod picker;
mod session_diff;
pub use session_diff::session_diff;
pub mod slash;

use limits::WAITING_SHOWN_AFTER_MS;

use revolve_core::compact;
use revolve_core::guard;
use revolve_core::record::{Record, Role};
use revolve_core::state::State;
pub use revolve_core::summary::{listed, listed_with, shown, Spent, Summary};
pub use revolve_core::text::{inert, tokens, when, word_pieces};
use revolve_core::text::{one_line, push_when};
use revolve_core::tools::Tool;

/// `n` in decimal, right-aligned in `width` columns.
fn push_right(out: &mut String, n: u64, width: usize) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = n;
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    out.extend(std::iter::repeat_n(
        ' ',
        width.saturating_sub(digits.len() - at),
    ));
    out.extend(digits[at..].iter().map(|d| char::from(*d)));
}

/// The `/status` line naming the project's instruction files the prompt
/// carries, root first.
pub fn instructions(paths: &[String]) -> String {
    if paths.is_empty() {
        "project instructions: none".to_owned()
    } else {
        format!("project instructions: {}", paths.join(", "))
    }
}

/// The status line shown before each prompt.
///
/// `amber · 3 turns · 12.3k in (9.8k cached) / 1.1k out · context 4.1k of 128k (3%)`
pub fn status(state: &State) -> String {
    let t = &state.totals();
    let name = state.name().as_deref().unwrap_or("(unnamed)");
    let turns = if t.turns == 1 {
        "1 turn".to_owned()
    } else {
        format!("{} turns", t.turns)
    };
    let approx = if t.estimated { "~" } else { "" };
    let pct = (u128::from(t.last_context) * 100)
        .checked_div(u128::from(state.window()))
        .unwrap_or(0);
    let in_out = if t.in_out_estimated { "~" } else { "" };
    let model = state.model();
    // The part of the input read from the provider's prompt cache, when
    // it reported one.
    let cached = if t.tokens_cached > 0 {
        format!(" ({} cached)", tokens(t.tokens_cached))
    } else {
        String::new()
    };
    let mut line = format!(
        "{name} · {model} · {turns} · {in_out}{} in{cached} / {in_out}{} out · context {approx}{} of {} ({pct}%)",
        tokens(t.tokens_in),
        tokens(t.tokens_out),
        tokens(t.last_context),
        tokens(state.window()),
    );
    if t.cost > 0 {
        line.push_str(&format!(
            " · {in_out}{}",
            revolve_core::models::dollars_text(t.cost)
        ));
    }
    if state.planning() {
        line.push_str(" · planning (/plan off ends it)");
    }
    if compact::near(t.last_context, state.window()) {
        line.push_str(&format!(
            " · compacts at {}",
            tokens(compact::point(state.window()))
        ));
    }
    line
}

/// The plan as `/status` shows it: a heading with the count done, then
/// the checklist, indented; `None` without a plan.
///
/// ```text
/// plan (1/3 done):
///   [x] read the code
///   [~] fix the bug
///   [ ] run the tests
/// ```
pub fn plan(plan: &revolve_core::plan::Plan) -> Option<String> {
    if plan.is_empty() {
        return None;
    }
    let mut out = format!("plan ({}/{} done):", plan.done(), plan.steps.len());
    for line in plan.checklist().lines() {
        out.push_str("\n  ");
        out.push_str(&inert(line));
    }
    Some(out)
}

/// What `/cost` prints: the tokens in (cached and written to the cache),
/// out, and the money they cost at `prices` (the session model's, when the
/// table knows them), then the `--max-cost` limit if there is one.
///
/// ```text
/// tokens: 12300 in (9800 read from the cache, 1200 written to it), 1100 out, 5 requests
/// cost: $0.0123 at the prices of claude-sonnet-5 (per million tokens: $2 in, $0.2 cached, $2.5 cache write, $10 out)
/// limit: $5.0000 (--max-cost)
/// ```
pub fn cost(
    state: &State,
    prices: Option<revolve_core::models::Prices>,
    max_cost: Option<u64>,
) -> String {
    use revolve_core::models::{dollars_text, price_text};
    let t = &state.totals();
    let approx = if t.in_out_estimated { "~" } else { "" };
    let mut cache = Vec::new();
    if t.tokens_cached > 0 {
        cache.push(format!("{} read from the cache", t.tokens_cached));
    }
    if t.tokens_cache_written > 0 {
        cache.push(format!("{} written to it", t.tokens_cache_written));
    }
    let cache = if cache.is_empty() {
        String::new()
    } else {
        format!(" ({})", cache.join(", "))
    };
    let requests = if t.requests == 1 {
        "1 request".to_owned()
    } else {
        format!("{} requests", t.requests)
    };
    let mut out = format!(
        "tokens: {approx}{} in{cache}, {approx}{} out, {requests}\n",
        t.tokens_in, t.tokens_out
    );
    match prices {
        Some(p) => {
            // A cache write priced as plain input is not worth a word.
            let write = if p.cache_write == p.input {
                String::new()
            } else {
                format!(", {} cache write", price_text(p.cache_write))
            };
            out.push_str(&format!(
                "cost: {approx}{} at the prices of {} (per million tokens: {} in, {} cached{write}, {} out)\n",
                dollars_text(t.cost),
                state.model(),
                price_text(p.input),
                price_text(p.cached_input),
                price_text(p.output)
            ))
        }
        None => out.push_str(&format!(
            "cost: not known: the table of known models has no prices for {} (add them under \"models\" in config.json)\n",
            state.model()
        )),
    }
    if t.unpriced && prices.is_some() {
        out.push_str("  (some requests had no known price and are not in it)\n");
    }
    if let Some(max) = max_cost {
        out.push_str(&format!("limit: {} (--max-cost)\n", dollars_text(max)));
    }
    out
}

/// A session's conversation as text, the way `replay` and a resume show it.
pub fn transcript(records: &[Record]) -> String {
    let mut out = String::new();
    for record in records {
        match record {
            Record::Header(h) => {
                let name = h.name.as_deref().unwrap_or("(unnamed)");
                out.push_str(&format!(
                    "── session {name} ({}) · {} · started {} · {}\n",
                    h.id,
                    h.cwd,
                    when(h.started),
                    h.model
                ));
            }
            Record::Message(m) => message_lines(m, &mut out),
            Record::Failed(f) => out.push_str(&format!("! failed: {}\n", f.error)),
            Record::Interrupted(_) => out.push_str("! interrupted\n"),
            Record::Resumed(r) => {
                out.push_str(&format!("── resumed {} · {}\n", when(r.at), r.model))
            }
            r @ (Record::Pruned(_)
            | Record::Continued(_)
            | Record::Compacting(_)
            | Record::CompactionFailed(_)
            | Record::Compacted(_)
            | Record::Noted(_)
            | Record::Overflowed(_)
            | Record::Counted(_)
            | Record::Squeezed(_)) => compaction_lines(r, &mut out),
            r @ (Record::MemoryChanged(_)
            | Record::MemoryUndone(_)
            | Record::Edit(_)
            | Record::Rewound(_)) => change_lines(r, &mut out),
            Record::Renamed(r) => out.push_str(&format!("── renamed to {}\n", r.name)),
            Record::Refining(_) => {}
            Record::Refined(r) => out.push_str(&refined_line(r)),
            Record::Stopped(s) => out.push_str(&format!(
                "! {}
",
                guard::describe(&s.reason)
            )),
            Record::WentOn(_) => out.push_str("── went on past the tool-round cap\n"),
            Record::Planning(p) if p.on => {
                out.push_str("── planning: edits and writes refused, commands read-only\n")
            }
            Record::Planning(_) => out.push_str("── planning ended\n"),
            Record::WebSearch(w) => out.push_str(match w.max_uses {
                Some(_) => "── web search offered to the model\n",
                None => "── web search no longer offered\n",
            }),
            Record::Effort(e) => out.push_str(&format!(
                "── effort {}\n",
                e.effort.map_or("default", |e| e.as_str())
            )),
            Record::ModelChanged(m) => out.push_str(&format!(
                "── model {} (window {})\n",
                m.model,
                tokens(m.window)
            )),
            Record::McpTools(t) => {
                let names: Vec<&str> = t.tools.iter().map(|t| t.name.as_str()).collect();
                out.push_str(&format!("── MCP tools offered: {}\n", names.join(", ")));
            }
            Record::Background(b) => out.push_str(&background_line(b)),
            Record::Fetched(f) => out.push_str(&fetched_line(f)),
            Record::Delegated(d) => out.push_str(&format!(
                "── subagent {} ({}) ended: {} requests, {} in, {} out; log {}\n",
                d.subagent.as_deref().unwrap_or("task"),
                one_line(&d.description, 60),
                d.requests,
                tokens(d.tokens_in),
                tokens(d.tokens_out),
                d.log
            )),
            Record::Spawned(s) => out.push_str(&format!(
                "── subagent of session {} (call {}), tools: {}\n",
                s.parent,
                s.call,
                s.tools.join(", ")
            )),
            Record::Approved(a) => out.push_str(&approved_line(a)),
            Record::Written(w) => {
                if let Some(error) = &w.error {
                    out.push_str(&format!("! not written: {}: {error}\n", w.path));
                }
            }
            Record::Hook(h) => hook_lines(h, &mut out),
            Record::Plan(p) => {
                out.push_str(&format!(
                    "── plan ({}/{} done)\n",
                    p.steps.done(),
                    p.steps.steps.len()
                ));
                for line in p.steps.checklist().lines() {
                    out.push_str(&format!("│ {line}\n"));
                }
            }
            Record::Context(_) | Record::Totals(_) | Record::Seen(_) | Record::Rewinding(_) => {}
        }
    }
    out
}

/// A compaction's records in the transcript: what was pruned, cut,
/// counted or summarized, and the window lowered.
fn compaction_lines(record: &Record, out: &mut String) {
    match record {
        Record::Pruned(p) => out.push_str(&format!(
            "── pruned {} oversized tool result{} (compaction, step one)\n",
            p.messages.len(),
            if p.messages.len() == 1 { "" } else { "s" }
        )),
        Record::Continued(c) => out.push_str(&format!("── compacted; continues in {}\n", c.next)),
        Record::Compacting(c) if c.piece() == (0, c.cut) => out.push_str(&format!(
            "── compacting: summarizing the first {} messages\n",
            c.cut
        )),
        Record::Compacting(c) => {
            let (from, upto) = c.piece();
            out.push_str(&format!(
                "── compacting: summarizing messages {}..{upto} of the first {}\n",
                from + 1,
                c.cut
            ))
        }
        Record::CompactionFailed(f) => {
            out.push_str(&format!("── compaction failed: {}\n", f.error))
        }
        Record::Compacted(c) => {
            out.push_str(&format!(
                "── compacted from {}: {} messages summarized into working notes\n",
                c.from, c.summarized
            ));
            for line in c.notes.lines() {
                out.push_str(&format!("│ {line}\n"));
            }
            out.push_str("── the turns kept verbatim:\n");
            for m in &c.kept {
                out.push_str(&transcript(&[Record::Message(m.clone())]));
            }
        }
        // Its request's body is what `replay --requests` shows; the
        // transcript tells the refinement once, at its end.
        Record::Noted(n) => out.push_str(&format!(
            "── notes on the first {} messages, carried into the next piece\n",
            n.upto
        )),
        Record::Overflowed(o) => out.push_str(&format!(
            "! the request did not fit the server's context: {}\n── window lowered to {} tokens\n",
            o.error, o.window
        )),
        Record::Counted(c) => out.push_str(&format!(
            "── the server counted the request due: {} tokens in {} bytes\n",
            c.tokens, c.bytes
        )),
        Record::Squeezed(q) => out.push_str(&format!(
            "── cut tool result {} to fit the window; the whole of it is in {}\n",
            q.message, q.path
        )),
        _ => {}
    }
}

/// The records of a change to memory or the files: what changed, by
/// what, its diff; a rewind and what it restored.
fn change_lines(record: &Record, out: &mut String) {
    match record {
        Record::MemoryChanged(m) => {
            out.push_str(&format!(
                "── memory changed by {} (snapshot {}; /refine undo takes it back)\n",
                m.by, m.entry
            ));
            for f in &m.files {
                out.push_str(&format!("│ {f}\n"));
            }
        }
        Record::MemoryUndone(m) => {
            match &m.entry {
                Some(entry) => {
                    out.push_str(&format!("── memory undone: snapshot {entry} restored\n"))
                }
                None => out.push_str("── memory undo: nothing to undo\n"),
            }
            for f in &m.files {
                out.push_str(&format!("│ {f}\n"));
            }
        }
        Record::Edit(e) => {
            let (added, removed) = revolve_core::edit::lines(e);
            let what = match (&e.before, &e.after) {
                (None, _) => "created",
                (_, None) => "removed",
                _ => "edited",
            };
            out.push_str(&format!(
                "── {what} {} by {} (+{added} -{removed})\n",
                e.path, e.by
            ));
            for line in e.diff.lines() {
                out.push_str(&format!("│ {line}\n"));
            }
        }
        Record::Rewound(r) => {
            for (i, line) in revolve_core::edit::describe(r).lines().enumerate() {
                let lead = if i == 0 { "── " } else { "│" };
                out.push_str(&format!("{lead}{line}\n"));
            }
        }
        _ => {}
    }
}

/// A message's lines in the transcript: the user's quoted, the model's
/// thinking, text and calls, a tool result's first line and size.
fn message_lines(m: &revolve_core::record::Message, out: &mut String) {
    let cut = if m.partial { " [cut short]" } else { "" };
    match m.role {
        Role::User => {
            if let Some(o) = &m.origin {
                out.push_str(&format!("» message from {}:\n", o.from));
            }
            for line in m.content.lines() {
                out.push_str(&format!("> {line}\n"));
            }
        }
        Role::Assistant => {
            if m.thinking.iter().any(|t| t.thought()) {
                out.push_str(&format!("── {}\n", thought(&m.thinking)));
            }
            for line in searches(&m.thinking) {
                out.push_str(&format!("── {line}\n"));
            }
            if !m.content.is_empty() || m.tool_calls.is_empty() {
                out.push_str(&format!("{}{cut}\n", m.content));
            }
            for c in &m.tool_calls {
                out.push_str(&format!("→ {} {}\n", c.name, one_line(&c.arguments, 120)));
            }
        }
        Role::Tool => {
            let lines = m.content.lines().count();
            let first = m.content.lines().next().unwrap_or("");
            out.push_str(&format!(
                "← {} ({lines} line{}, {} chars)\n",
                one_line(first, 100),
                if lines == 1 { "" } else { "s" },
                m.content.chars().count()
            ));
        }
    }
}

/// An approval's line in the transcript: the rule that answered, or the
/// user's answer.
fn approved_line(a: &revolve_core::record::Approved) -> String {
    use revolve_core::edit::Answer;
    use revolve_core::record::Asked;
    // A command can span lines; its record's line does not.
    let path = a.path.replace('\n', " ");
    if let Some(rule) = &a.rule {
        let (what, how) = match (&a.tool, a.answer) {
            (Asked::Shell, Answer::No) => (format!("the command `{path}`"), "denied"),
            (Asked::Shell, _) => (format!("the command `{path}`"), "allowed"),
            (Asked::Grant, Answer::No) => (format!("reading {path}"), "denied"),
            (Asked::Grant, _) => (format!("reading {path}"), "allowed"),
            (_, Answer::No) => (format!("the edit of {path}"), "denied"),
            (_, _) => (format!("the edit of {path}"), "allowed"),
        };
        return format!("── the rule {rule} {how} {what}\n");
    }
    let line = match (&a.tool, a.answer) {
        (Asked::Unsandboxed, Answer::No) => {
            format!("kept the command `{path}` in the sandbox")
        }
        (Asked::Unsandboxed, _) => {
            format!("let the command `{path}` run once outside the sandbox")
        }
        (Asked::Shell, Answer::Always) => {
            format!("allowed every shell command of this session from `{path}`")
        }
        (Asked::Shell, Answer::Yes) => format!("allowed the command `{path}`"),
        (Asked::Shell, Answer::No) => format!("refused the command `{path}`"),
        (Asked::Grant, Answer::No) => format!("refused to let the session read {path}"),
        (Asked::Grant, _) => format!("let the session read {path}"),
        (Asked::Outside, Answer::No) => {
            format!("refused the edit of {path}, outside the working tree")
        }
        (Asked::Outside, _) => format!("allowed the edit of {path}, outside the working tree"),
        (_, Answer::Always) => {
            format!("allowed every edit of this session from the edit of {path}")
        }
        (_, Answer::Yes) => format!("allowed the edit of {path}"),
        (_, Answer::No) => format!("refused the edit of {path}"),
    };
    format!("── the user {line}\n")
}

/// A hook run's lines in the transcript: its event, command and decision,
/// and what it said or added.
fn hook_lines(h: &revolve_core::record::Hooked, out: &mut String) {
    let call = h.tool.as_deref().map_or(String::new(), |t| format!(" {t}"));
    let how = match (h.exit, &h.ended) {
        (Some(code), _) => format!("exit {code}"),
        (None, Some(how)) => how.replace('_', " "),
        (None, None) => "ended".to_owned(),
    };
    out.push_str(&format!(
        "── hook {}{call}: {} ({how}, {})\n",
        h.event, h.command, h.decision
    ));
    for (label, text) in [
        ("reason", &h.reason),
        ("added", &h.added),
        ("said", &h.note),
    ] {
        if let Some(text) = text {
            out.push_str(&format!(
                "│ {label}: {}\n",
                revolve_core::text::one_line(text, 200)
            ));
        }
    }
}

/// A refinement's line in the transcript.
fn refined_line(r: &revolve_core::record::Refined) -> String {
    match &r.unmade {
        Some(why) => format!(
            "── memory not refined{}: {why}\n",
            if r.auto { " on its own" } else { "" },
        ),
        None => format!(
            "── memory refined{}{}\n",
            if r.auto { " on its own" } else { "" },
            if r.entry.is_none() {
                " (nothing changed)"
            } else {
                ""
            }
        ),
    }
}

/// `revolve rewind --list` (`/rewind list` in the REPL, `repl`): the turns
/// a rewind reaches, newest first, with the files each changed, and how to
/// take them back in the form the user typed.
pub fn rewind_list(turns: &[revolve_core::edit::TurnEdits], repl: bool) -> String {
    if turns.is_empty() {
        return "no turn to rewind (since the last compaction)\n".to_owned();
    }
    let mut out = String::new();
    for t in turns {
        out.push_str(&format!("{:>3}  {}\n", t.back, one_line(&t.said, 70)));
        if t.files.is_empty() {
            out.push_str("       (no file changed)\n");
        }
        for f in &t.files {
            out.push_str(&format!("       {f}\n"));
        }
    }
    out.push_str(if repl {
        "/rewind N takes back the N newest (1 is the last)\n"
    } else {
        "--turns N takes back the N newest (1 is the last)\n"
    });
    out
}

/// A `background` record as the transcript shows it.
fn background_line(b: &revolve_core::record::Background) -> String {
    use revolve_core::record::BackgroundEvent;
    match &b.event {
        BackgroundEvent::Started { command, .. } => {
            format!(
                "── background {} started: {}\n",
                b.id,
                one_line(command, 100)
            )
        }
        BackgroundEvent::Read { bytes, spilled } => format!(
            "── background {} read: {bytes} bytes{}\n",
            b.id,
            if *spilled {
                " (cut; the whole in its file)"
            } else {
                ""
            }
        ),
        BackgroundEvent::Ended { status } => format!("── background {} ended: {status}\n", b.id),
    }
}

/// A `fetched` record as the transcript shows it: `── fetched URL
/// (HTTP 200, text/html, 1234 bytes)`, with the final URL after
/// redirects and whether it came from the session's cache.
fn fetched_line(f: &revolve_core::record::Fetched) -> String {
    let mut out = format!("── fetched {}", one_line(&f.url, 120));
    if f.final_url != f.url {
        out.push_str(&format!(" → {}", one_line(&f.final_url, 120)));
    }
    let kind = if f.content_type.is_empty() {
        "no type"
    } else {
        f.content_type.as_str()
    };
    out.push_str(&format!(" (HTTP {}, {kind}, {} bytes", f.status, f.bytes));
    if f.cut {
        out.push_str(", cut");
    }
    if f.cached.is_some() {
        out.push_str(", from the session's cache");
    }
    out.push_str(")\n");
    out
}

/// The line shown when a tool starts: `→ shell cargo test`.
pub fn tool_line(tool: &Tool) -> String {
    let what = match tool {
        Tool::ReadFile { path, .. } | Tool::ListDir { path } => path.clone(),
        Tool::Grep { pattern, path } => format!("{pattern} {}", path.as_deref().unwrap_or(".")),
        Tool::Shell { command, .. } => command.clone(),
        Tool::RequestFileGrant { path, .. } => path.clone(),
        Tool::AgentInfo => String::new(),
        Tool::Remember { label, content, .. } if content.is_empty() => format!("{label} (delete)"),
        Tool::Remember { label, .. } => label.to_string(),
        Tool::GoalProgress { note, met } => {
            format!("{note}{}", if *met { " (proposes met)" } else { "" })
        }
        Tool::EditFile { path, .. } | Tool::WriteFile { path, .. } => path.clone(),
        Tool::Skill { name, .. } => name.clone(),
        Tool::ShellOutput { id } | Tool::ShellKill { id } => id.clone(),
        Tool::Task {
            description,
            subagent,
            ..
        } => match subagent {
            Some(name) => format!("{name}: {description}"),
            None => description.clone(),
        },
        Tool::UpdatePlan { plan } => plan.summary().unwrap_or_default(),
        Tool::WebFetch { url, .. } => url.clone(),
    };
    format!("→ {} {}", tool.name(), one_line(&what, 120))
}

/// The line shown on stderr while waiting for a model's first token, or
/// `None` while the wait is still too short to show: a spinner frame that
/// turns every 100 ms, and the seconds waited to the tenth.
pub fn waiting(elapsed_ms: u64) -> Option<String> {
    const FRAMES: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
    if elapsed_ms < WAITING_SHOWN_AFTER_MS {
        return None;
    }
    let tenths = elapsed_ms / 100;
    let frame = FRAMES[(tenths % FRAMES.len() as u64) as usize];
    Some(format!(
        "{frame} waiting for the model {}.{}s",
        tenths / 10,
        tenths % 10
    ))
}

/// The end of a transcript within a byte budget, built record by record, so
/// resuming a huge session shows its last exchanges without holding the
/// whole conversation as text.
#[derive(Debug)]
pub struct TranscriptTail {
    budget: usize,
    parts: std::collections::VecDeque<String>,
    bytes: usize,
    dropped: usize,
}

impl TranscriptTail {
    /// A tail that keeps at most about `budget` bytes (always the last
    /// record, whatever its size).
    pub fn new(budget: usize) -> TranscriptTail {
        TranscriptTail {
            budget,
            parts: Default::default(),
            bytes: 0,
            dropped: 0,
        }
    }

    /// Adds one record's part of the transcript.
    pub fn push(&mut self, record: &Record) {
        let part = transcript(std::slice::from_ref(record));
        if part.is_empty() {
            return;
        }
        self.bytes += part.len();
        self.parts.push_back(part);
        while self.bytes > self.budget && self.parts.len() > 1 {
            if let Some(old) = self.parts.pop_front() {
                self.bytes -= old.len();
                self.dropped += 1;
            }
        }
    }

    /// The text, with a first line saying how much was left out.
    pub fn finish(self) -> String {
        let mut out = String::with_capacity(self.bytes + 100);
        if self.dropped > 0 {
            out.push_str(&format!(
                "(… {} earlier entries not shown; `revolve replay` shows the whole conversation)\n",
                self.dropped
            ));
        }
        out.extend(self.parts);
        out
    }
}

/// The line `revolve sessions` ends with when it left unnamed sessions
/// out: how many, and how to list them (nothing when none was).
pub fn left_out(unnamed: usize) -> String {
    match unnamed {
        0 => String::new(),
        1 => "1 unnamed session not shown: revolve sessions --all lists it\n".to_owned(),
        n => format!("{n} unnamed sessions not shown: revolve sessions --all lists them\n"),
    }
}

/// The line `revolve sessions` says when it showed only the most recent
/// named sessions: how many older ones it left out (nothing when none).
pub fn older_left_out(named: u64) -> String {
    match named {
        0 => String::new(),
        1 => "1 older named session not shown: revolve sessions --all lists it\n".to_owned(),
        n => format!("{n} older named sessions not shown: revolve sessions --all lists them\n"),
    }
}

/// The listing table, one session a line, in the order given (see
/// [`listed`]).
pub fn listing(sessions: &[Summary]) -> String {
    if sessions.is_empty() {
        return "no sessions in this directory\n".to_owned();
    }
    // A subagent's session is shown as `└ task` under its parent's.
    let label = |s: &Summary| match (&s.parent, s.name.as_deref()) {
        (Some(_), name) => format!("└ {}", name.unwrap_or("task")),
        (None, name) => name.unwrap_or("-").to_owned(),
    };
    let width = sessions
        .iter()
        .map(|s| label(s).chars().count())
        .max()
        .unwrap_or(4);
    let width = width.max(4);
    let mut out = format!(
        "{:width$}  {:22}  {:20}  {:>5}  LAST ACTIVITY\n",
        "NAME", "ID", "STARTED", "TURNS"
    );
    out.reserve(sessions.len() * (width + 80));
    // Written in place, column by column: a listing can have a hundred
    // thousand lines, and formatting them took most of its time (`write!`
    // of the turns alone, 15 ms of 100,000).
    let pad = |out: &mut String, text: &str, width: usize| {
        out.push_str(text);
        let used = text.chars().count();
        out.extend(std::iter::repeat_n(' ', width.saturating_sub(used)));
    };
    for s in sessions {
        match (&s.parent, s.name.as_deref()) {
            (None, name) => pad(&mut out, name.unwrap_or("-"), width),
            _ => pad(&mut out, &label(s), width),
        }
        out.push_str("  ");
        pad(&mut out, &s.id, 22);
        out.push_str("  ");
        push_when(&mut out, s.started);
        out.push_str("  ");
        push_right(&mut out, s.turns, 5);
        out.push_str("  ");
        push_when(&mut out, s.last_activity);
        out.push('\n');
    }
    out
}

/// One line per web search an answer made (issue 44): its query and the
/// results' titles and URLs (Anthropic's `server_tool_use` with the
/// `web_search_tool_result` that answers it; a Responses
/// `web_search_call`, with its sources when the server gave them).
pub fn searches(blocks: &[revolve_core::record::Thinking]) -> Vec<String> {
    use revolve_core::record::Thinking;
    use serde_json::Value;
    let text = |v: &Value| v.as_str().unwrap_or("").to_owned();
    let line = |query: String, found: Vec<String>| {
        let query = one_line(&query, 120);
        match found.is_empty() {
            true => format!("searched the web for \"{query}\""),
            false => format!("searched the web for \"{query}\": {}", found.join(" · ")),
        }
    };
    let mut lines = Vec::new();
    for b in blocks {
        match b {
            Thinking::ServerToolUse { block } => {
                let id = block.get("id").cloned().unwrap_or(Value::Null);
                let results = blocks.iter().find_map(|r| match r {
                    Thinking::WebSearchToolResult { block: r }
                        if r.get("tool_use_id") == Some(&id) =>
                    {
                        r.get("content").and_then(Value::as_array).cloned()
                    }
                    _ => None,
                });
                let found = results
                    .unwrap_or_default()
                    .iter()
                    .map(|r| format!("{} <{}>", one_line(&text(&r["title"]), 80), text(&r["url"])))
                    .collect();
                let query = block
                    .get("input")
                    .map_or(String::new(), |i| text(&i["query"]));
                lines.push(line(query, found));
            }
            Thinking::WebSearchCall { item } => {
                let action = item.get("action").cloned().unwrap_or(Value::Null);
                let found = action["sources"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|s| format!("<{}>", text(&s["url"])))
                    .collect();
                lines.push(line(text(&action["query"]), found));
            }
            _ => {}
        }
    }
    lines
}

/// The one line a transcript gives an answer's thinking (its text stays
/// in the log, not shown): how much there was, and how many blocks the
/// server encrypted.
pub fn thought(blocks: &[revolve_core::record::Thinking]) -> String {
    use revolve_core::record::Thinking;
    let chars: usize = blocks
        .iter()
        .map(|b| match b {
            Thinking::RedactedThinking { .. } => 0,
            other => other.text().chars().count(),
        })
        .sum();
    let redacted = blocks
        .iter()
        .filter(|b| {
            matches!(
                b,
                Thinking::RedactedThinking { .. } | Thinking::ThoughtSignature { .. }
            )
        })
        .count();
    match redacted {
        0 => format!("thought ({chars} chars, kept in the log)"),
        n => format!(
            "thought ({chars} chars and {n} redacted block{}, kept in the log)",
            if n == 1 { "" } else { "s" }
        ),
    }
}

#[cfg(test)]
mod tests {
    use time::OffsetDateTime;

    use super::*;
    use revolve_core::record::{Message, Thinking, Totals};

    #[test]
    fn the_plan_and_its_records_read_as_checklists() {
        let p = revolve_core::plan::parse(
            r#"{"steps":[{"step":"read the code","status":"done"},{"step":"fix \u001b[31mit","status":"in_progress"},{"step":"test","status":"pending"}]}"#,
        )
        .unwrap();
        assert_eq!(
            plan(&p).unwrap(),
            "plan (1/3 done):\n  [x] read the code\n  [~] fix ^[[31mit\n  [ ] test"
        );
        assert_eq!(plan(&revolve_core::plan::Plan::default()), None);
        let at = time::macros::datetime!(2026-12-05 10:00 UTC);
        let record = Record::Plan(revolve_core::record::PlanSet {
            at,
            call: Some("call_1".into()),
            steps: p,
        });
        assert_eq!(
            transcript(&[record]),
            "── plan (1/3 done)\n│ [x] read the code\n│ [~] fix \u{1b}[31mit\n│ [ ] test\n"
        );
    }

    #[test]
    fn a_transcript_says_an_answer_thought_without_its_text() {
        let at = time::macros::datetime!(2026-12-05 10:00 UTC);
        let m = Message {
            thinking: vec![
                Thinking::Thinking {
                    thinking: "Look first.".into(),
                    signature: "c2ln".into(),
                },
                Thinking::RedactedThinking {
                    data: "ZW5j".into(),
                },
            ],
            ..Message::assistant(at, "Done.")
        };
        assert_eq!(
            transcript(&[Record::Message(m)]),
            "── thought (11 chars and 1 redacted block, kept in the log)\nDone.\n"
        );
    }

    #[test]
    fn the_status_says_the_cached_input_when_there_is_some() {
        let at = time::macros::datetime!(2026-12-02 10:00 UTC);
        let header = Record::Header(revolve_core::Header {
            version: revolve_core::record::FORMAT_VERSION,
            id: "s".into(),
            name: Some("amber".into()),
            named: true,
            cwd: "/w".into(),
            project: "/w".into(),
            started: at,
            model: "claude-sonnet-4-6".into(),
            window: 200_000,
            provider: String::new(),
            continues: None,
            tool_choice: None,
        });
        let mut totals = Totals {
            tokens_in: 12_300,
            tokens_out: 1_100,
            turns: 3,
            last_context: 4_100,
            ..Totals::default()
        };
        let state = State::fold(&[header.clone(), Record::Totals(totals.clone())]);
        let plain = status(&state);
        assert_eq!(
            plain,
            "amber · claude-sonnet-4-6 · 3 turns · 12.3k in / 1.1k out · context 4.1k of 200k (2%)"
        );
        totals.tokens_cached = 9_800;
        let state = State::fold(&[header, Record::Totals(totals)]);
        assert_eq!(
            status(&state),
            "amber · claude-sonnet-4-6 · 3 turns · 12.3k in (9.8k cached) / 1.1k out · context 4.1k of 200k (2%)"
        );
    }

    #[test]
    fn an_answer_is_told_as_what_it_allowed() {
        use revolve_core::edit::Answer;
        let approved = |tool: &str, path: &str, answer| {
            Record::Approved(revolve_core::record::Approved {
                at: time::macros::datetime!(2026-12-02 10:00 UTC),
                call: "c".into(),
                path: path.into(),
                answer,
                tool: tool.into(),
                rule: None,
            })
        };
        let shown = transcript(&[
            approved("shell", "make\ntest", Answer::Yes),
            approved("shell", "rm -r build", Answer::No),
            approved("shell", "ls", Answer::Always),
            approved("grant", "/srv/notes.txt", Answer::Yes),
            approved("grant", "/etc/shadow", Answer::No),
            approved("", "/w/a.txt", Answer::Yes),
            approved("", "/w/b.txt", Answer::Always),
            approved("", "/w/c.txt", Answer::No),
        ]);
        assert_eq!(
            shown,
            "── the user allowed the command `make test`\n\
             ── the user refused the command `rm -r build`\n\
             ── the user allowed every shell command of this session from `ls`\n\
             ── the user let the session read /srv/notes.txt\n\
             ── the user refused to let the session read /etc/shadow\n\
             ── the user allowed the edit of /w/a.txt\n\
             ── the user allowed every edit of this session from the edit of /w/b.txt\n\
             ── the user refused the edit of /w/c.txt\n"
        );
    }

    #[test]
    fn the_listing_lines_up_as_format_would() {
        let at = time::macros::datetime!(2026-12-02 10:00:59 UTC);
        let summary = |name: Option<&str>, id: &str, turns: u64, minutes: i64| Summary {
            id: id.into(),
            name: name.map(str::to_owned),
            named: name.is_some(),
            started: at,
            turns,
            last_activity: at + time::Duration::minutes(minutes),
            path: String::new(),
            continued: None,
            spent: Spent::default(),
            parent: None,
        };
        let sessions = [
            summary(Some("amber"), "20261202-100059-a1b2c3", 3, 5),
            summary(
                Some("léa-ü"),
                "id-longer-than-twenty-two-characters",
                123_456,
                70,
            ),
            summary(None, "x", 0, 60 * 24 * 400),
            summary(Some("a-rather-long-session-name"), "y", u64::MAX, -5),
        ];
        let width = 26;
        let mut expected = format!(
            "{:width$}  {:22}  {:20}  {:>5}  LAST ACTIVITY\n",
            "NAME", "ID", "STARTED", "TURNS"
        );
        for s in &sessions {
            let t = |t: OffsetDateTime| {
                format!(
                    "{:04}-{:02}-{:02} {:02}:{:02} UTC",
                    t.year(),
                    u8::from(t.month()),
                    t.day(),
                    t.hour(),
                    t.minute()
                )
            };
            expected.push_str(&format!(
                "{:width$}  {:22}  {:20}  {:>5}  {}\n",
                s.name.as_deref().unwrap_or("-"),
                s.id,
                t(s.started),
                s.turns,
                t(s.last_activity)
            ));
        }
        assert_eq!(listing(&sessions), expected);
        assert_eq!(when(at), "2026-12-02 10:00 UTC");
    }

    #[test]
    fn transcript_tail_keeps_the_end_within_budget() {
        let at = time::macros::datetime!(2026-12-02 10:00 UTC);
        let records: Vec<Record> = (0..100)
            .map(|i| Record::Message(Message::user(at, format!("message {i}"))))
            .collect();
        let mut whole = TranscriptTail::new(usize::MAX);
        let mut tail = TranscriptTail::new(60);
        for r in &records {
            whole.push(r);
            tail.push(r);
        }
        assert_eq!(whole.finish(), transcript(&records));
        let tail = tail.finish();
        assert!(
            tail.starts_with("(… 96 earlier entries not shown;"),
            "{tail}"
        );
        assert!(tail.ends_with("> message 98\n> message 99\n"), "{tail}");
    }

    #[test]
    fn the_waiting_line_turns_and_counts() {
        assert_eq!(waiting(0), None);
        assert_eq!(waiting(299), None);
        assert_eq!(
            waiting(300).as_deref(),
            Some("⠸ waiting for the model 0.3s")
        );
        assert_eq!(
            waiting(12_345).as_deref(),
            Some("⠸ waiting for the model 12.3s")
        );
        assert_ne!(waiting(1_000), waiting(1_100));
    }

    #[test]
    fn escape_sequences_are_rendered_inert() {
        assert_eq!(inert("plain\ttext\n"), "plain\ttext\n");
        assert_eq!(
            inert("\x1b[2J\x1b]0;pwned\x07 ok\r"),
            "^[[2J^[]0;pwned^G ok^M"
        );
        assert_eq!(inert("c1 \u{9b}31m"), "c1 \\u{9b}31m");
        // Trojan Source: bidi controls and invisible characters show.
        assert_eq!(
            inert("rm -rf ~ \u{202e}txt.exe\u{202c} \u{2067}x\u{2069}\u{200b}\u{feff}\u{e0041}"),
            "rm -rf ~ <U+202E>txt.exe<U+202C> <U+2067>x<U+2069><U+200B><U+FEFF><U+E0041>"
        );
        assert_eq!(
            inert("emoji \u{1f468}\u{200d}\u{1f469}"),
            "emoji \u{1f468}\u{200d}\u{1f469}"
        );
    }

    #[test]
    fn token_counts_read_short() {
        let cases = [
            (0, "0"),
            (812, "812"),
            (1000, "1k"),
            (12_345, "12.3k"),
            (128_000, "128k"),
            (99_949, "99.9k"),
            (999_499, "999k"),
            (999_500, "1M"),
            (1_250_000, "1.3M"),
        ];
        for (n, s) in cases {
            assert_eq!(tokens(n), s, "{n}");
        }
    }
}
