//! The system prompt. Compiled in, so it can only be added to: habits a user
//! may want removed belong in memory files, not here.

use crate::goal::{self, Goals};
use crate::instructions::{self, Instructions};
use crate::memory::{self, MemoryFile};
use crate::skills::{self, Skill};
use crate::subagents::{self, Definition};

/// The base prompt every session starts from: only what is true for every
/// project and user (who the model is, where its answers are read). Habits,
/// such as when to ask the user, are memory files the user may remove
/// (`asking-the-user.md`).
pub const BASE: &str = "You are revolve, a coding agent working in the user's terminal. \
Answer directly and concisely.";

/// The window, in tokens, under which the builtin memory documents are
/// given in brief: at 16k their ~1,500 tokens whole are a tenth of it, at
/// 4k (Ollama's default) more than a third, which left a first turn no
/// room beside the tools. Under it revolve's own tools are offered in
/// brief too (`tools::brief`, logs of version 7 on).
pub(crate) const BRIEF_BELOW: u64 = 16_384;

/// What the system prompt is built from besides the base: read fresh by
/// the shell before every turn and after every tool, so a change made
/// between requests (by a tool, by hand, by undo) reaches the next one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Parts {
    /// The project's instructions, root first (none with `--bare`).
    pub instructions: Vec<Instructions>,
    /// The memory files, global then project (none with `--bare`).
    pub memory: Vec<MemoryFile>,
    /// The standing goal and its notes.
    pub goals: Goals,
    /// The skills found, each name once (none with `--bare`).
    pub skills: Vec<Skill>,
    /// The subagent definitions a `task` call may name (none in a child,
    /// which has no `task` tool).
    pub subagents: Vec<Definition>,
    /// A child's part: the prompt of the definition it runs under, or the
    /// general helper's ([`CHILD`]); `None` in a session of its own.
    pub role: Option<String>,
}

/// What every subagent is told before its definition's prompt.
pub const CHILD: &str = "You are a subagent: another agent handed you one task. You cannot ask anyone anything; what would need the user's approval is refused. When done, answer once, completely: your answer is all the other agent sees of your work.";

/// The system prompt for a session working in `cwd` with a `window` of
/// tokens (0: not known): the base, then the project's instructions, then
/// the memory files, then the skills, then the standing goal when one is
/// active. Under [`BRIEF_BELOW`] tokens the builtin memory documents are
/// given by their descriptions ([`memory::prompt_block_within`]).
pub fn system(cwd: &str, parts: &Parts, window: u64) -> String {
    let brief = window > 0 && window < BRIEF_BELOW;
    let mut prompt = format!("{BASE}\n\nWorking directory: {cwd}");
    let role = parts
        .role
        .as_ref()
        .map(|role| format!("{CHILD}\n\n{role}").trim_end().to_owned());
    for block in [
        role,
        instructions::prompt_block(&parts.instructions),
        memory::prompt_block_within(&parts.memory, brief),
        skills::prompt_block(&parts.skills),
        subagents::prompt_block(&parts.subagents),
        goal::prompt_block(&parts.goals),
    ]
    .into_iter()
    .flatten()
    {
        prompt.push_str("\n\n");
        prompt.push_str(&block);
    }
    prompt
}
