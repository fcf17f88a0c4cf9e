//! What the binary says about a session's whereabouts: how to come back
//! to it when the REPL ends, and what a resume without the REPL shows.

use revolve_core::State;

/// The session's address: its name, or its id when it has none.
pub(crate) fn address(state: &State) -> String {
    state
        .name()
        .clone()
        .unwrap_or_else(|| state.id().to_owned())
}

/// The line the REPL ends with: how to resume the session.
pub(crate) fn exit_hint(address: &str) -> String {
    format!("to come back to this session: revolve -r {address}")
}

/// The one line a resume without the REPL shows of the past (the REPL
/// shows the conversation again; a script gets this instead).
pub(crate) fn resumed_line(state: &State) -> String {
    let address = address(state);
    let turns = state.totals().turns;
    let plural = if turns == 1 { "" } else { "s" };
    format!("resumed {address}: {turns} turn{plural} (revolve replay {address} shows them)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hint_names_the_resume_command() {
        assert_eq!(
            exit_hint("amber"),
            "to come back to this session: revolve -r amber"
        );
    }
}
