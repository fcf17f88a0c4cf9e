//! A run without the REPL: how PROMPT and what is piped on stdin make its
//! turns (`revolve -p 'explain' < error.log`, as `claude -p` takes them).
//! The shell reads stdin; these functions say what it reads and what the
//! turn says.

/// What a run without the REPL reads and sends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Piped {
    /// One turn: PROMPT, with the whole of stdin after it when `attach`
    /// (stdin is not a terminal): see [`turn`].
    Prompt {
        /// The PROMPT given.
        prompt: String,
        /// Whether stdin is read and attached.
        attach: bool,
    },
    /// One turn, the whole of stdin (`-p` without PROMPT): see [`turn`].
    Whole,
    /// Each stdin line is a turn (no `-p`, no PROMPT), a line starting
    /// with `/` a command.
    Lines,
}

impl Piped {
    /// What a run with this PROMPT, `-p` (`print`) and stdin (a terminal
    /// or not) reads.
    pub fn of(prompt: Option<String>, print: bool, stdin_tty: bool) -> Piped {
        match prompt {
            Some(prompt) => Piped::Prompt {
                prompt,
                attach: !stdin_tty,
            },
            None if print => Piped::Whole,
            None => Piped::Lines,
        }
    }
}

/// The one turn's text: PROMPT, then what stdin held after a blank line
/// when that is more than blanks; without PROMPT, stdin alone without its
/// last line ends. `None` when that leaves nothing to send (a `-p` run
/// with neither: a usage error).
pub fn turn(prompt: Option<&str>, stdin: &str) -> Option<String> {
    match prompt {
        Some(prompt) if stdin.trim().is_empty() => Some(prompt.to_owned()),
        Some(prompt) => Some(format!("{prompt}\n\n{stdin}")),
        None => {
            let text = stdin.trim_end_matches(['\n', '\r']);
            (!text.trim().is_empty()).then(|| text.to_owned())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{turn, Piped};

    #[test]
    fn a_prompt_is_one_turn_stdin_alone_is_one_with_p_and_lines_without() {
        assert_eq!(
            Piped::of(Some("explain".into()), true, false),
            Piped::Prompt {
                prompt: "explain".into(),
                attach: true
            }
        );
        assert_eq!(
            Piped::of(Some("explain".into()), false, true),
            Piped::Prompt {
                prompt: "explain".into(),
                attach: false
            }
        );
        assert_eq!(Piped::of(None, true, false), Piped::Whole);
        assert_eq!(Piped::of(None, false, false), Piped::Lines);
    }

    #[test]
    fn stdin_follows_the_prompt_after_a_blank_line() {
        assert_eq!(
            turn(Some("explain"), "error: x\nat y\n").as_deref(),
            Some("explain\n\nerror: x\nat y\n")
        );
        // Blanks on stdin attach nothing.
        assert_eq!(turn(Some("explain"), " \n\n").as_deref(), Some("explain"));
        assert_eq!(turn(Some("explain"), "").as_deref(), Some("explain"));
    }

    #[test]
    fn stdin_alone_loses_its_last_line_ends_and_blanks_are_nothing() {
        assert_eq!(turn(None, "fix this\r\n\n").as_deref(), Some("fix this"));
        assert_eq!(turn(None, "  indented\n").as_deref(), Some("  indented"));
        assert_eq!(turn(None, "a\n\nb\n").as_deref(), Some("a\n\nb"));
        assert_eq!(turn(None, " \n\t\n"), None);
        assert_eq!(turn(None, ""), None);
    }
}
