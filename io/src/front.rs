//! The person at the other end of a running session, as the shell sees
//! them: what they are shown as the session runs (the answer, tool calls
//! and their results, totals), and what they are asked. The binary's
//! terminal (or its JSON event stream) is one [`Front`]; a test's recorder
//! is another. How these look is the front's business; when they are
//! shown, and whether anybody is asked at all, is not (the core decides,
//! [`crate::live`] executes), and the executor writes nothing to the
//! terminal itself: its notices (a resume's transcript, a refusal, a file
//! it could not read, a refinement's progress) go through
//! [`Front::notice`] too.

use std::time::Duration;

use revolve_core::edit::Answer;
use revolve_core::record::ToolCall;
use revolve_core::tools::Tool;
use revolve_core::Totals;

/// Where a [`crate::live::Live`] session shows what happens and asks what
/// needs allowing.
pub trait Front {
    /// Whether a person can be asked (a terminal); the core asks only
    /// then, and refuses what it would have asked otherwise.
    fn interactive(&self) -> bool;

    /// A line (or lines) for the person watching, not for a script
    /// reading the output: a notice, a refusal, a resume's transcript.
    fn notice(&mut self, text: &str);

    /// A piece of the answer, as it streams.
    fn text(&mut self, text: &str);

    /// The answer that streamed ended after `shown`.
    fn answer_end(&mut self, shown: &str);

    /// Still waiting for the model's first token after `elapsed`.
    fn waiting(&mut self, _elapsed: Duration) {}

    /// The wait for the model is over.
    fn stop_waiting(&mut self) {}

    /// Who watches a `shell` command while it runs (see
    /// [`revolve_tools::Watch`]): nobody, unless the front shows it.
    fn watch(&self) -> revolve_tools::Watch {
        revolve_tools::Watch::default()
    }

    /// A tool is about to run; `arguments` is the JSON text the model
    /// wrote.
    fn tool_call(&mut self, id: &str, tool: &Tool, arguments: &str);

    /// What the tool gave (before any spill), or that it was interrupted.
    /// Its record may not be in the log yet: [`Front::logged`] follows
    /// once it is (or [`Front::settled`], when it never will be).
    fn tool_result(&mut self, id: &str, tool: &Tool, output: &str, interrupted: bool);

    /// The result of the call `id` is in the log.
    fn logged(&mut self, id: &str);

    /// A call the model made that did not run, with the result the model
    /// gets instead, which is in the log already: refused, repeated, not a
    /// tool, cut off by a stop or by Ctrl-C; and, as a resume answers
    /// them, the calls a crash left without a result.
    fn not_run(&mut self, call: &ToolCall, output: &str);

    /// Everything the last input led to is done and logged.
    fn settled(&mut self);

    /// A turn ended with these totals.
    fn totals(&mut self, totals: &Totals);

    /// The model set the plan (`update_plan`), logged already: shown as
    /// a checklist (nothing by default).
    fn plan(&mut self, _plan: &revolve_core::plan::Plan) {}

    /// Whether whoever reads the output has gone away (a closed pipe): the
    /// session stops after the input in hand.
    fn closed(&self) -> bool;

    /// May the shell command run: this once, every time this session, or
    /// not. Asked only when [`Front::interactive`].
    fn ask_shell(&mut self, command: &str) -> Answer;

    /// May the change shown by `diff` be made to `path` (as core names
    /// it): this once, every time this session (unless `once`: a write
    /// outside the working tree is allowed one at a time), or not. Asked
    /// only when [`Front::interactive`].
    fn ask_edit(&mut self, path: &str, diff: &str, once: bool) -> Answer;

    /// May the session read `path` (canonical, outside the working tree),
    /// for the model's `reason`: yes or no. Asked only when
    /// [`Front::interactive`].
    fn ask_grant(&mut self, path: &str, reason: Option<&str>) -> bool;

    /// May `web_fetch` read `url`: this once, every page of `host` this
    /// session, or not. Asked only when [`Front::interactive`].
    fn ask_fetch(&mut self, url: &str, host: &str) -> Answer;

    /// Asks the user a yes-or-no `question` (a costly compaction or
    /// refinement); only asked at a terminal.
    fn confirm(&mut self, question: &str) -> bool;
}
