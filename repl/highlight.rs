//! Code in a fence, coloured by its language: syntect's default syntaxes
//! and one of its default themes, loaded once per run, on a thread of its
//! own once answers are rendered at all ([`warm`]; a piped run pays
//! nothing). A language syntect does not know is shown as it came.
//!
//! Colour is paid for line by line, and never holds the text back: syntect
//! parses with regular expressions (about 250 kB/s of code in a release
//! build), far faster than a model streams, but slower than a long answer
//! replayed or pasted at once. So a fence is coloured while colouring has
//! cost at most [`SHARE`] of the time since the answer began (after a first
//! [`ALLOWANCE`]); past that, the rest of that fence is shown plain
//! ([`Budget`]). An answer at a model's pace is coloured whole. The
//! regular expressions of common languages are compiled on the warming
//! thread too, so the first line of a fence does not wait for them.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

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
        let (syntaxes, theme) = sets();
        // A line in each, so their expressions are compiled here (syntect
        // compiles them at first use, and keeps them in the set).
        for token in COMMON {
            if let Some(syntax) = syntaxes.find_syntax_by_token(token) {
                let _ =
                    HighlightLines::new(syntax, theme).highlight_line("x = 1; // x\n", syntaxes);
            }
        }
    });
}

/// The languages whose expressions [`warm`] compiles ahead.
const COMMON: [&str; 12] = [
    "rust", "python", "js", "ts", "sh", "json", "go", "c", "cpp", "java", "toml", "diff",
];

/// Colouring may take this long in an answer before [`SHARE`] applies.
const ALLOWANCE: Duration = Duration::from_millis(40); // not policy: rendering cost, not behaviour
/// The share of an answer's time colouring may take after that.
const SHARE: f64 = 0.2; // not policy: rendering cost, not behaviour

/// What colouring an answer has cost, against the time since it began.
#[derive(Debug, Default)]
pub(crate) struct Budget {
    began: Option<Instant>,
    spent: Duration,
    /// Every line coloured, whatever it costs (benches/render.rs compares).
    pub(crate) unlimited: bool,
}

impl Budget {
    /// A budget for the next answer, unlimited if this one was.
    pub(crate) fn next(&self) -> Budget {
        Budget {
            unlimited: self.unlimited,
            ..Budget::default()
        }
    }

    /// The answer has begun (its first piece); later calls change nothing.
    pub(crate) fn begin(&mut self, now: Instant) {
        self.began.get_or_insert(now);
    }

    /// Whether another line may be coloured `now`.
    pub(crate) fn allows(&self, now: Instant) -> bool {
        let elapsed = self.began.map_or(Duration::ZERO, |b| now.duration_since(b));
        self.unlimited
            || self.spent < ALLOWANCE
            || self.spent.as_secs_f64() < elapsed.as_secs_f64() * SHARE
    }

    /// A line was coloured from `from` to `to`.
    pub(crate) fn spend(&mut self, from: Instant, to: Instant) {
        self.spent += to.duration_since(from);
    }
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
    /// A fence shown as it came (no colour wanted).
    pub(crate) fn plain() -> Code {
        Code { lines: None }
    }

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

    /// One line of the fence (without its newline), coloured while
    /// `budget` allows; once it does not, this fence is plain to its end
    /// (a line skipped would leave the parser's state wrong).
    pub(crate) fn line_within(&mut self, line: &str, budget: &mut Budget) -> String {
        if self.lines.is_none() {
            return line.to_owned();
        }
        let from = Instant::now();
        if !budget.allows(from) {
            self.lines = None;
            return line.to_owned();
        }
        let out = self.line(line);
        budget.spend(from, Instant::now());
        out
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
    fn colour_stops_past_its_share_of_the_time() {
        let start = Instant::now();
        let mut budget = Budget::default();
        budget.begin(start);
        assert!(budget.allows(start));
        budget.spend(start, start + ALLOWANCE);
        assert!(
            !budget.allows(start + ALLOWANCE),
            "over the allowance, all the time so far"
        );
        // Five times longer, and colour has had its share again.
        assert!(budget.allows(start + ALLOWANCE * 6));
        let mut rust = Code::new("rust");
        let mut spent = Budget::default();
        spent.begin(start);
        spent.spend(start, start + ALLOWANCE * 2);
        assert_eq!(rust.line_within("let x = 1;", &mut spent), "let x = 1;");
        assert_eq!(
            rust.line_within("let y = 2;", &mut budget),
            "let y = 2;",
            "plain to the end of the fence"
        );
    }

    #[test]
    fn a_known_language_is_coloured_an_unknown_one_is_not() {
        let mut rust = Code::new("rust");
        let out = rust.line("fn main() {}");
        assert!(out.contains("\x1b[38;2;"), "{out:?}");
        assert!(out.contains("main"), "{out:?}");
        let mut other = Code::new("no-such-language");
        let mut budget = Budget::default();
        budget.begin(Instant::now());
        assert!(Code::new("rust")
            .line_within("let x = 1;", &mut budget)
            .contains("\x1b["));
        assert_eq!(other.line("fn main() {}"), "fn main() {}");
        assert_eq!(Code::new("").line("x"), "x");
    }
}
