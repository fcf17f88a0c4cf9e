//! Code in a fence, coloured by its language: syntect's default syntaxes
//! and one of its default themes, loaded once per run, on a thread of its
//! own once answers are rendered at all ([`warm`]; a piped run pays
//! nothing). A
//! language syntect does not know is shown as it came.

use std::sync::OnceLock;

use syntect::easy::HighlightLines;
use syntect::highlighting::{Theme, ThemeSet};
use syntect::parsing::SyntaxSet;

/// The syntaxes and the theme, loaded at the first fence.
static SETS: OnceLock<(SyntaxSet, Theme)> = OnceLock::new();

/// The theme: readable on dark and light backgrounds alike.
const THEME: &str = "base16-ocean.dark";

/// Loads the syntaxes on a thread of their own, so the first fence does not
/// wait for them (about 70 ms of work, measured in a release build); called
/// when answers are rendered at all.
pub(crate) fn warm() {
    std::thread::spawn(|| {
        sets();
    });
}

fn sets() -> &'static (SyntaxSet, Theme) {
    SETS.get_or_init(|| {
        let syntaxes = SyntaxSet::load_defaults_newlines();
        let mut themes = ThemeSet::load_defaults().themes;
        let theme = themes.remove(THEME).unwrap_or_default();
        (syntaxes, theme)
    })
}

/// The lines of one fence, coloured with the state of the lines before
/// (a comment or string that spans lines stays coloured).
pub(crate) struct Code {
    lines: Option<HighlightLines<'static>>,
}

impl Code {
    /// A fence in `lang` (its info string's first word: `rust`, `py`, …).
    pub(crate) fn new(lang: &str) -> Code {
        let token = lang.split_whitespace().next().unwrap_or("");
        if token.is_empty() {
            return Code { lines: None };
        }
        let (syntaxes, theme) = sets();
        let lines = syntaxes
            .find_syntax_by_token(token)
            .map(|syntax| HighlightLines::new(syntax, theme));
        Code { lines }
    }

    /// One line of the fence (without its newline), coloured.
    pub(crate) fn line(&mut self, line: &str) -> String {
        let Some(lines) = &mut self.lines else {
            return line.to_owned();
        };
        let with_newline = format!("{line}\n");
        match lines.highlight_line(&with_newline, &sets().0) {
            Ok(ranges) => {
                let mut out = syntect::util::as_24_bit_terminal_escaped(&ranges, false);
                if out.ends_with('\n') {
                    out.pop();
                }
                out.push_str("\x1b[0m");
                out
            }
            Err(_) => line.to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_language_is_coloured_an_unknown_one_is_not() {
        let mut rust = Code::new("rust");
        let out = rust.line("fn main() {}");
        assert!(out.contains("\x1b[38;2;"), "{out:?}");
        assert!(out.contains("main"), "{out:?}");
        let mut other = Code::new("no-such-language");
        assert_eq!(other.line("fn main() {}"), "fn main() {}");
        assert_eq!(Code::new("").line("x"), "x");
    }
}
