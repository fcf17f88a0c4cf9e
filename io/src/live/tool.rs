//! The tool family, executed: a tool call run here (where the tools run,
//! one line about the call and its result, what the tool changed and the
//! prompt's parts read after it fed back to the core), or an MCP call
//! passed to its server (`mcp.rs`).

use crate::{clock, interrupt};
use revolve_core::tools::Tool;
use revolve_core::{Input, ToolCommand, ToolInput, UserInput};
use revolve_tools::{self as tools, AgentInfo};

use super::{Flight, Live};
use crate::front::Front;

impl<F: Front> Live<F> {
    /// Executes one [`ToolCommand`]: the input that answers it.
    pub(super) fn execute_tool(&mut self, cmd: ToolCommand, flight: &mut Flight) -> Input {
        match cmd {
            ToolCommand::Run {
                id,
                tool,
                arguments,
                grants,
                sandbox,
            } => self.run_tool(id, &tool, &arguments, &grants, sandbox, flight),
            ToolCommand::CallMcp {
                id,
                server,
                tool,
                arguments,
                timeout_s,
            } => self.call_mcp(id, &server, &tool, &arguments, timeout_s),
            ToolCommand::Delegate { tasks } => self.delegate(tasks),
            ToolCommand::Hook(next) => self.run_hook(&next),
        }
    }

    /// Runs `task` calls as child revolves side by side (see
    /// [`crate::task`]), a line on stderr as each starts, changes tool and
    /// ends; Ctrl-C kills them all.
    fn delegate(&mut self, tasks: Vec<revolve_core::session::Delegation>) -> Input {
        let program = std::env::current_exe().unwrap_or_else(|_| "revolve".into());
        let parent = self.state().id().to_owned();
        let provider = self.state().provider().to_owned();
        let model = self.state().model().to_owned();
        let specs: Vec<crate::task::Spec> = tasks
            .iter()
            .map(|t| crate::task::Spec {
                call: t.id.clone(),
                description: t.description.clone(),
                program: program.clone(),
                args: crate::task::child_args(
                    &parent,
                    t,
                    &provider,
                    &model,
                    &self.runtime.agents.inherited,
                ),
                cwd: self.store.cwd.clone(),
                env: clock::child_seed(&t.id)
                    .map(|seed| ("REVOLVE_ID_SEED".to_owned(), seed))
                    .into_iter()
                    .collect(),
            })
            .collect();
        let front = &mut self.front;
        let mut all: Vec<crate::task::Progress> = specs
            .iter()
            .map(|s| crate::task::Progress {
                description: s.description.clone(),
                ..Default::default()
            })
            .collect();
        let mut watch = |i: usize, p: &crate::task::Progress| {
            if let Some(slot) = all.get_mut(i) {
                *slot = p.clone();
            }
            front.children(i, &all);
        };
        let ends = crate::task::run_all(
            specs,
            revolve_core::policy::PARALLEL_TASKS,
            &interrupt::pending,
            &mut watch,
        );
        let interrupted = ends.iter().any(|e| e.interrupted) || interrupt::take();
        let ends = ends
            .into_iter()
            .zip(tasks)
            .map(|(end, task)| revolve_core::session::TaskEnd {
                id: task.id,
                answer: end.answer,
                record: revolve_core::record::Delegated {
                    at: clock::now(),
                    call: end.call,
                    child: end.child,
                    log: end.log,
                    description: task.description,
                    subagent: task.subagent,
                    requests: end.requests,
                    tokens_in: end.tokens_in,
                    tokens_out: end.tokens_out,
                    cost: end.cost,
                },
            })
            .collect();
        Input::Tool(ToolInput::Delegated {
            ends,
            interrupted,
            now: clock::now(),
        })
    }

    /// Runs the hook `next` under the session's sandbox, its input written
    /// from where the session runs, and answers with how it ended.
    fn run_hook(&mut self, next: &revolve_core::hooks::Next) -> Input {
        let state = self.state();
        let transcript = self.writer.path().to_string_lossy().into_owned();
        let cwd = self.store.cwd.to_string_lossy().into_owned();
        let input = revolve_core::hooks::stdin(
            &revolve_core::hooks::Place {
                session_id: state.id(),
                transcript_path: &transcript,
                cwd: &cwd,
            },
            &next.about,
        );
        let session = state
            .name()
            .clone()
            .unwrap_or_else(|| state.id().to_owned());
        let protect = tools::sandbox::protected(
            &self.store.cwd,
            &self.store.roots.state,
            self.runtime.memory.global.parent(),
        );
        let ran = tools::hook::run(&tools::hook::Run {
            command: &next.hook.command,
            input: &input,
            timeout_s: next.hook.timeout_s,
            root: &self.store.cwd,
            session: &session,
            sandbox: &self.runtime.sandbox,
            protect: &protect,
        });
        Input::Tool(ToolInput::Hooked {
            ran,
            now: clock::now(),
        })
    }

    /// What the tools need to know about where they run, now.
    pub(super) fn tool_context(&self) -> tools::Context {
        let info = AgentInfo {
            session_id: self.state().id().to_owned(),
            name: self.state().name().clone(),
            log_path: self.writer.path().to_path_buf(),
            project_key: self.store.project.key.clone(),
            project_dir: self.runtime.memory.project_dir.clone(),
            created_project_dir: self.runtime.created_project_dir,
            state_root: self.store.roots.state.clone(),
            config_root: self.store.roots.config.clone(),
            project_instructions: self.instructions(),
        };
        tools::Context {
            root: self.store.cwd.clone(),
            root_id: self.runtime.tree,
            info,
            memory: self.runtime.memory.clone(),
            messages: self.state().messages().len() as u64,
            now: clock::now(),
            sandbox: self.runtime.sandbox.clone(),
            watch: self.front.watch(),
            wire: revolve_core::request::Wire::of(self.state().provider()),
        }
    }

    /// The file `path` names read as `read_file` reads it (the working tree
    /// and the `--grant` paths only), for an `@path` in the user's line:
    /// its text, or, for a picture, its image part made ready for this
    /// session's wire; the error the model would get when it cannot be (a
    /// picture that cannot be read: `error: image PATH: why, left out`).
    pub fn attachment(&self, path: &str) -> Result<Attachment, String> {
        let tool = Tool::ReadFile {
            path: path.to_owned(),
            offset: None,
            limit: None,
        };
        let outcome = tools::run(
            &tool,
            &self.runtime.settings.granted,
            &self.tool_context(),
            &|| false,
        );
        if outcome.output.starts_with("error:") {
            Err(outcome.output)
        } else if let Some(image) = outcome.effects.image {
            Ok(Attachment::Image(*image))
        } else {
            Ok(Attachment::Text(outcome.output))
        }
    }

    /// The picture at `path` (`--image FILE`: any file the user names,
    /// not only the tree's) made ready for this session's wire; the one
    /// line to tell when it is not a picture or cannot be read.
    pub fn image_file(
        &self,
        path: &std::path::Path,
    ) -> Result<revolve_core::record::Image, String> {
        let source = path.display().to_string();
        let bytes = revolve_store::regular::read(path)
            .and_then(|(mut file, _)| {
                let mut bytes = Vec::new();
                std::io::Read::read_to_end(&mut file, &mut bytes).map(|_| bytes)
            })
            .map_err(|e| format!("image {source}: cannot read it: {e}, left out"))?;
        let blobs = tools::edit::Blobs::new(&self.store.roots.state);
        tools::picture::prepare(
            &bytes,
            &source,
            revolve_core::request::Wire::of(self.state().provider()),
            &blobs,
        )
    }

    /// Runs a tool here (tools are quick or watch Ctrl-C themselves) and
    /// shows one line about it on stderr. The prompt parts are read again
    /// after it, since a tool may have changed memory or the goal, and
    /// travel with its result.
    fn run_tool(
        &mut self,
        id: String,
        tool: &Tool,
        arguments: &str,
        grants: &[String],
        sandbox: revolve_core::session::Sandboxing,
        flight: &mut Flight,
    ) -> Input {
        self.front.tool_call(&id, tool, arguments);
        flight.run(&id, None);
        if matches!(tool, Tool::Shell { .. }) {
            if let Some(note) = self.runtime.sandbox_note.take() {
                eprintln!("revolve: {note}");
            }
        }
        let mut ctx = self.tool_context();
        match sandbox {
            revolve_core::session::Sandboxing::Session => {}
            revolve_core::session::Sandboxing::ReadOnly => ctx.sandbox = ctx.sandbox.read_only(),
            revolve_core::session::Sandboxing::Off => {
                ctx.sandbox = revolve_core::sandbox::Policy::off()
            }
        }
        let had_project_dir = self.runtime.memory.project_dir.exists();
        let outcome = tools::run(tool, grants, &ctx, &interrupt::pending);
        // `remember` makes the project directory whole when there is none
        // (a `--bare` session): `agent_info` says this session created it.
        if matches!(tool, Tool::Remember { .. })
            && !had_project_dir
            && self.runtime.memory.project_dir.exists()
        {
            self.runtime.created_project_dir = true;
        }
        if outcome.grant.is_some() {
            // The core grants, asks or refuses: the result it logs is shown.
            flight.run(&id, Some(tool.clone()));
        } else {
            self.front
                .tool_result(&id, tool, &outcome.output, outcome.interrupted);
        }
        if outcome.interrupted || interrupt::take() {
            return Input::User(UserInput::Interrupted {
                partial: String::new(),
                now: clock::now(),
            });
        }
        let parts = Some(self.prompt_parts());
        // What the tool did besides its output travels inside its result:
        // the core logs it before the result.
        if outcome.sandbox_refused {
            return Input::Tool(ToolInput::SandboxRefused {
                id,
                output: outcome.output,
                effects: outcome.effects,
                parts,
                now: clock::now(),
            });
        }
        Input::Tool(ToolInput::Done {
            id,
            output: outcome.output,
            grant: outcome.grant,
            effects: outcome.effects,
            parts,
            now: clock::now(),
        })
    }
}

/// What an `@path` of the user's line attaches ([`Live::attachment`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Attachment {
    /// A text file's content, as `read_file` gives it.
    Text(String),
    /// A picture, ready to go out with the line.
    Image(revolve_core::record::Image),
}
