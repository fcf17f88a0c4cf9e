//! Where a running session's output goes: as text (the answer on stdout, a
//! line per tool on stderr), or as JSON events, one a line on stdout
//! (`--output-format stream-json`, for scripts that drive revolve).
//!
//! # The stream-json events
//!
//! Each line is one object, `"type"` first, the other keys sorted:
//!
//! ```json
//! {"type":"init","cwd":"/home/me/project","model":"gpt-4o-mini","name":null,"session":"20261202-100000-1a2b3c"}
//! {"type":"text","text":"The answer, a piece"}
//! {"type":"tool_call","arguments":{"path":"src/main.rs"},"id":"call_1","name":"read_file"}
//! {"type":"tool_result","id":"call_1","interrupted":false,"name":"read_file","output":"fn main() {…"}
//! {"type":"plan","steps":[{"status":"done","step":"read the code"},{"status":"in_progress","step":"fix it"}]}
//! {"type":"totals","context":876,"requests":2,"tokens_in":812,"tokens_out":64,"turns":1}
//! {"type":"done","log":"/…/sessions/….jsonl","name":null,"session":"20261202-100000-1a2b3c"}
//! {"type":"error","code":1,"message":"HTTP 500 … from http://…"}
//! ```
//!
//! With `--output-format json` nothing is printed until the run ends, and
//! then one object (as `claude -p --output-format json` prints):
//!
//! ```json
//! {"exit_code":0,"is_error":false,"name":null,"num_turns":1,"result":"The answer.","session_id":"20261202-100000-1a2b3c","subtype":"success","total_cost_usd":0.00012,"type":"result","usage":{"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"input_tokens":812,"output_tokens":64,"requests":2}}
//! ```
//!
//! `init` comes first, once the session is open (a new or a resumed one):
//! its id, name, model and working directory, before any turn runs.
//! `text` events are the answer's pieces as they stream (concatenated they
//! are the answer); `arguments` are the model's JSON (a string when it was
//! not JSON); `output` is the whole result the tool gave, before any spill
//! (a call that did not run, refused or repeated or not a tool, has both
//! events too, its `output` the error the model got); `totals` follows every turn that ended
//! (with `tokens_cached` and `tokens_cache_written`, the input tokens the
//! provider read from and wrote to its prompt cache, when it reported
//! any); the last line is `done`, or
//! `error` with the exit code when the run failed.

use std::borrow::Cow;
use std::io::{IsTerminal, Write};
use std::time::Duration;

use serde_json::{json, Value};

use revolve_core::record::ToolCall;
use revolve_core::tools::Tool;
use revolve_core::Totals;
use revolve_view as view;

use crate::error::{out, Error};

/// `--output-format`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// The answer as text on stdout, a line per tool call on stderr
    #[default]
    Text,
    /// One JSON event per line on stdout (text deltas, tool calls and results, totals, done or error)
    StreamJson,
    /// One JSON object on stdout at the end: the answer, the session, usage, cost, turns, is_error
    Json,
}

/// A session's output, in one [`Format`]. Once stdout's reader has gone
/// away nothing more is written, and [`Sink::closed`] says so.
pub struct Sink {
    format: Format,
    /// Whether stdout is a terminal (text is then rendered inert).
    tty: bool,
    closed: bool,
    /// Whether a spinner may show while waiting for the model.
    spinner: bool,
    /// The waiting line on stderr now, if one is drawn.
    drawn: Option<String>,
    /// A `tool_result` event held until its record is in the log: the
    /// call's id and the event's line.
    held: Option<(String, String)>,
    /// The answer's Markdown renderer, when stdout is a terminal or gets
    /// colour (text only).
    markdown: Option<crate::render::Markdown>,
    /// Whether stderr gets colour (tool lines dim).
    colour_err: bool,
    /// `json`: the last answer's text, and the last totals told.
    result: String,
    last_totals: Option<Totals>,
}

impl Sink {
    /// A sink writing to this process's stdout and stderr.
    pub fn new(format: Format) -> Sink {
        let markdown = if format == Format::Text {
            crate::render::markdown()
        } else {
            None
        };
        if markdown.is_some() && crate::render::stdout() {
            crate::highlight::warm();
        }
        Sink {
            format,
            tty: std::io::stdout().is_terminal(),
            closed: false,
            spinner: false,
            drawn: None,
            held: None,
            markdown,
            colour_err: crate::render::stderr(),
            result: String::new(),
            last_totals: None,
        }
    }

    /// Lets a spinner show on stderr while waiting for the model's first
    /// token: only for text, and only when stderr is a terminal (the REPL
    /// asks; pipe mode never does).
    pub fn allow_spinner(&mut self) {
        self.spinner = self.format == Format::Text && std::io::stderr().is_terminal();
    }

    /// Whether a running command's live view may show on stderr: text on
    /// a terminal.
    pub fn live_view(&self) -> bool {
        self.format == Format::Text && std::io::stderr().is_terminal()
    }

    /// Still waiting for the first token after `elapsed`: the waiting line
    /// is drawn again when it changed.
    pub fn waiting(&mut self, elapsed: Duration) {
        if !self.spinner {
            return;
        }
        let line = view::waiting(u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX));
        if line.is_some() && line != self.drawn {
            if let Some(text) = &line {
                let mut err = std::io::stderr().lock();
                let _ = write!(err, "\r{text}\x1b[K").and_then(|()| err.flush());
            }
            self.drawn = line;
        }
    }

    /// Clears the waiting line, if one is drawn.
    pub fn stop_waiting(&mut self) {
        if self.drawn.take().is_some() {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[K").and_then(|()| err.flush());
        }
    }

    /// A line for the person watching, on stderr (over the waiting line,
    /// if one is drawn), in every format.
    pub fn notice(&mut self, text: &str) {
        self.stop_waiting();
        eprintln!("{text}");
    }

    /// Whether stdout was closed by its reader.
    pub fn closed(&self) -> bool {
        self.closed
    }

    /// A piece of the answer. In a terminal, model text is rendered inert
    /// (no escape sequence of the model's acts on the screen); piped, it
    /// goes out as it came.
    pub fn text(&mut self, text: &str) {
        self.stop_waiting();
        match self.format {
            Format::Text => {
                let text = if self.tty {
                    view::inert(text)
                } else {
                    Cow::Borrowed(text)
                };
                match &mut self.markdown {
                    Some(markdown) => {
                        let lines = markdown.push(&text);
                        if !lines.is_empty() {
                            self.write(&lines);
                        }
                    }
                    None => self.write(&text),
                }
            }
            Format::StreamJson => self.event("text", json!({"text": text})),
            Format::Json => {}
        }
    }

    /// The answer ended after `shown`: text ends it with a newline.
    pub fn answer_end(&mut self, shown: &str) {
        if self.format == Format::Json {
            // The answer of the run is the last request's text, as the
            // model's final message (what came before a tool call is not).
            shown.clone_into(&mut self.result);
            return;
        }
        if let Some(markdown) = &mut self.markdown {
            let rest = markdown.finish();
            if !rest.is_empty() {
                self.write(&rest);
            }
            return;
        }
        if self.format == Format::Text && !shown.is_empty() && !shown.ends_with('\n') {
            self.write("\n");
        }
    }

    /// A tool is about to run: one line on stderr, or a `tool_call` event.
    /// `arguments` is the JSON text the model wrote.
    pub fn tool_call(&mut self, id: &str, tool: &Tool, arguments: &str) {
        self.stop_waiting();
        match self.format {
            Format::Text | Format::Json => eprintln!(
                "{}",
                crate::render::dim(&view::tool_line(tool), self.colour_err)
            ),
            Format::StreamJson => self.event("tool_call", call_fields(id, tool.name(), arguments)),
        }
    }

    /// What a tool gave: nothing more in text (its line said it ran), a
    /// `tool_result` event in JSON. The event is held until
    /// [`Sink::logged`] says the result is in the log (log first, then
    /// show, as answers go), or until [`Sink::release`] or the next event.
    pub fn tool_result(&mut self, id: &str, tool: &Tool, output: &str, interrupted: bool) {
        if self.format == Format::StreamJson {
            self.release();
            let fields = result_fields(id, tool.name(), output, interrupted);
            self.held = Some((id.to_owned(), line("tool_result", fields)));
        }
    }

    /// A call that did not run, and the result the model got instead (in
    /// the log already): its `tool_call` and `tool_result` events in JSON;
    /// in text, a call a permission rule (`--deny`) refused, with why (a
    /// refusal of another kind is told on stderr by itself).
    pub fn not_run(&mut self, call: &ToolCall, output: &str) {
        let (id, name) = (call.id.as_str(), call.name.as_str());
        match self.format {
            Format::StreamJson => {
                self.event("tool_call", call_fields(id, name, &call.arguments));
                self.event("tool_result", result_fields(id, name, output, false));
            }
            // Others (a repeat, a refusal) are told by themselves.
            Format::Text | Format::Json if revolve_core::rules::is_denied(output) => {
                self.stop_waiting();
                let line = revolve_core::tools::parse(call)
                    .map_or_else(|_| format!("→ {name}"), |tool| view::tool_line(&tool));
                let why = output.lines().next().unwrap_or("not run");
                eprintln!(
                    "{}",
                    crate::render::dim(&format!("{line}\n  {why}"), self.colour_err)
                );
            }
            Format::Text | Format::Json => {}
        }
    }

    /// The result of the call `id` is in the log: its event is shown.
    pub fn logged(&mut self, id: &str) {
        if self.held.as_ref().is_some_and(|(held, _)| held == id) {
            self.release();
        }
    }

    /// Shows a held `tool_result` event, if any (a result that was not
    /// logged, such as an interrupted tool's, is shown once its turn's
    /// records are).
    pub fn release(&mut self) {
        if let Some((_, line)) = self.held.take() {
            self.write(&line);
        }
    }

    /// The plan the model set: the call's line and the checklist under it
    /// on stderr in text, a `plan` event in stream-json (after the call's
    /// `tool_result`), nothing in json.
    pub fn plan(&mut self, plan: &revolve_core::plan::Plan) {
        match self.format {
            Format::Text => {
                self.stop_waiting();
                let call = revolve_core::tools::Tool::UpdatePlan { plan: plan.clone() };
                let mut text = format!("{}\n", view::tool_line(&call));
                for line in plan.checklist().lines() {
                    text.push_str("  ");
                    text.push_str(&view::inert(line));
                    text.push('\n');
                }
                eprint!("{}", crate::render::dim(&text, self.colour_err));
            }
            Format::StreamJson => {
                self.release();
                self.event("plan", json!({"steps": plan.steps}));
            }
            Format::Json => {}
        }
    }

    /// A turn ended with these totals (a `totals` event in JSON).
    pub fn totals(&mut self, totals: &Totals) {
        self.last_totals = Some(totals.clone());
        if self.format == Format::StreamJson {
            let mut event = json!({"turns": totals.turns,
                              "tokens_in": totals.tokens_in, "tokens_out": totals.tokens_out,
                              "context": totals.last_context, "requests": totals.requests});
            // The prompt cache's counts, when the provider reported any.
            for (key, n) in [
                ("tokens_cached", totals.tokens_cached),
                ("tokens_cache_written", totals.tokens_cache_written),
            ] {
                if n > 0 {
                    event[key] = n.into();
                }
            }
            self.event("totals", event);
        }
    }

    /// The session is open: the first event in JSON, naming it (nothing in
    /// text).
    pub fn init(&mut self, session: &str, name: Option<&str>, model: &str, cwd: &str) {
        if self.format == Format::StreamJson {
            self.event(
                "init",
                json!({"session": session, "name": name, "model": model, "cwd": cwd}),
            );
        }
    }

    /// The run ended: a `done` event, or an `error` event with the exit
    /// code. Text says nothing here (an error goes to stderr from `main`).
    pub fn end(
        &mut self,
        result: &Result<(), Error>,
        session: &str,
        name: Option<&str>,
        log: &str,
    ) {
        if self.format == Format::Json {
            let object = result_object(
                result,
                &self.result,
                session,
                name,
                self.last_totals.as_ref(),
            );
            self.write(&format!("{object}\n"));
            return;
        }
        if self.format != Format::StreamJson {
            return;
        }
        // A result still held was never logged (its append failed).
        self.held = None;
        match result {
            Ok(()) | Err(Error::BrokenPipe) => self.event(
                "done",
                json!({"session": session, "name": name, "log": log}),
            ),
            Err(e) => self.event("error", json!({"message": e.to_string(), "code": e.code()})),
        }
    }

    /// Writes one event line, after any held one.
    fn event(&mut self, kind: &str, fields: Value) {
        self.release();
        self.write(&line(kind, fields));
    }

    fn write(&mut self, text: &str) {
        if !self.closed {
            self.closed = matches!(out(text), Err(Error::BrokenPipe));
        }
    }
}

/// `--output-format json`'s one object: `result` (the last answer's
/// text, or the error's message), `is_error`, `session_id`, `name`,
/// `num_turns`, `usage` and `total_cost_usd` (of the session so far, from
/// the last totals; null when the model's prices are not known).
fn result_object(
    result: &Result<(), Error>,
    answer: &str,
    session: &str,
    name: Option<&str>,
    totals: Option<&Totals>,
) -> Value {
    let totals = totals.cloned().unwrap_or_default();
    let (is_error, text, code) = match result {
        Ok(()) | Err(Error::BrokenPipe) => (false, answer.to_owned(), 0),
        Err(e) => (true, e.to_string(), e.code()),
    };
    let cost = if totals.unpriced && totals.cost == 0 {
        Value::Null
    } else {
        // Nano-dollars to dollars, for a script to read as a number.
        json!(totals.cost as f64 / 1e9) // not policy: a unit
    };
    json!({
        "type": "result",
        "subtype": if is_error { "error" } else { "success" },
        "is_error": is_error,
        "exit_code": code,
        "result": text,
        "session_id": session,
        "name": name,
        "num_turns": totals.turns,
        "usage": {
            "input_tokens": totals.tokens_in,
            "output_tokens": totals.tokens_out,
            "cache_read_input_tokens": totals.tokens_cached,
            "cache_creation_input_tokens": totals.tokens_cache_written,
            "requests": totals.requests,
        },
        "total_cost_usd": cost,
    })
}

/// A `tool_call` event's fields: `arguments` as the model's JSON, or the
/// string it wrote when that is not JSON.
fn call_fields(id: &str, name: &str, arguments: &str) -> Value {
    let arguments = serde_json::from_str::<Value>(arguments)
        .unwrap_or_else(|_| Value::String(arguments.to_owned()));
    json!({"id": id, "name": name, "arguments": arguments})
}

/// A `tool_result` event's fields.
fn result_fields(id: &str, name: &str, output: &str, interrupted: bool) -> Value {
    json!({"id": id, "name": name, "output": output, "interrupted": interrupted})
}

/// One event line: `"type"` first, then the fields (sorted).
fn line(kind: &str, fields: Value) -> String {
    let fields = fields.to_string();
    let rest = fields
        .strip_prefix('{')
        .filter(|r| *r != "}")
        .map_or_else(|| "}".to_owned(), |r| format!(",{r}"));
    format!("{{\"type\":\"{kind}\"{rest}\n")
}
