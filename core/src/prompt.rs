//! The system prompt. Compiled in, so it can only be added to: habits a user
//! may want removed belong in memory files, not here.

/// The base prompt every session starts from.
pub const BASE: &str = "You are revolve, a coding agent working in the user's terminal. \
Answer directly and concisely. When you are unsure about something only the user knows, ask; \
decide the judgment calls yourself and say what you decided.";

/// The system prompt for a session working in `cwd`.
pub fn system(cwd: &str) -> String {
    format!("{BASE}\n\nWorking directory: {cwd}")
}
