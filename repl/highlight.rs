//! Code in a fence, coloured by its language: syntect's default syntaxes
//! and one of its default themes, loaded once per run, on a thread of its
//! own once answers are rendered at all ([`warm`]; a piped run pays
//! nothing). A language syntect does not know is shown as it came.
//!
//! Colour never holds the text back:
//!
//! * A language's regular expressions are compiled once per process, off
//!   the path of the lines: [`warm`] compiles the common ones at the start
//!   (a fence in one of them waits for that thread, which is already at
//!   work), and the first fence in any other language starts a thread that
//!   compiles it. Until that thread is done, the fence's lines are shown
//!   as they came and kept; once it is, they are parsed (not shown again)
//!   so the parser's state is right, and the next line is coloured.
//! * Colour is paid for line by line, with the parser's state kept from
//!   line to line ([`HighlightLines`]): syntect parses with regular
//!   expressions (about 250 kB/s of code in a release build), far faster
//!   than a model streams, but slower than a long answer replayed or
//!   pasted at once. So a fence is coloured while colouring has cost at
//!   most [`SHARE`] of the time since the answer began (after a first
//!   [`ALLOWANCE`]); past that, the rest of that fence is shown plain
//!   ([`Budget`]). An answer at a model's pace is coloured whole.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use syntect::easy::HighlightLines;
use syntect::highlighting::{Theme, ThemeSet};
use syntect::parsing::SyntaxSet;

/// The syntaxes and the theme, loaded once.
static SETS: OnceLock<(SyntaxSet, Theme)> = OnceLock::new();

/// The theme: readable on dark and light backgrounds alike.
const THEME: &str = "base16-ocean.dark";

/// Starts loading the syntaxes and compiling the [`COMMON`] languages on a
/// thread of their own, so the first fence does not wait for them (about
/// 70 ms of work, measured in a release build); called when answers are
/// rendered at all. A fence in a common language waits for this thread
/// rather than showing its first lines plain.
pub(crate) fn warm() {
    let started: Vec<(String, Arc<Ready>)> = COMMON
        .iter()
        .filter_map(|token| {
            let (ready, new) = language(token, true);
            new.then(|| (token.to_string(), ready))
        })
        .collect();
    let readies: Vec<Arc<Ready>> = started.iter().map(|(_, r)| r.clone()).collect();
    let spawned = std::thread::Builder::new().spawn(move || {
        for (token, ready) in started {
            compile(&token);
            ready.set();
        }
    });
    if spawned.is_err() {
        // No thread: each compiled at its first line, as before.
        readies.iter().for_each(|r| r.set());
    }
}

/// Whether a language's expressions are compiled, and a way to wait for it.
#[derive(Default)]
struct Ready {
    done: Mutex<bool>,
    changed: Condvar,
    /// Whether a fence waits for it (a [`warm`] language) rather than
    /// showing its lines plain until it is done.
    awaited: bool,
}

impl Ready {
    fn is_set(&self) -> bool {
        self.done.lock().map(|d| *d).unwrap_or(true)
    }

    fn set(&self) {
        if let Ok(mut done) = self.done.lock() {
            *done = true;
        }
        self.changed.notify_all();
    }

    fn wait(&self) {
        let Ok(mut done) = self.done.lock() else {
            return;
        };
        while !*done {
            done = match self.changed.wait(done) {
                Ok(d) => d,
                Err(_) => return,
            };
        }
    }
}

/// The state of the language `token`, made (and, when `awaited` is false,
/// its compiling started on a thread) the first time; whether it was new.
fn language(token: &str, awaited: bool) -> (Arc<Ready>, bool) {
    static LANGUAGES: OnceLock<Mutex<HashMap<String, Arc<Ready>>>> = OnceLock::new();
    let languages = LANGUAGES.get_or_init(Default::default);
    let Ok(mut languages) = languages.lock() else {
        // Poisoned: colour as before, waiting for the expressions.
        let ready = Arc::new(Ready::default());
        ready.set();
        return (ready, false);
    };
    if let Some(ready) = languages.get(token) {
        return (ready.clone(), false);
    }
    let ready = Arc::new(Ready {
        awaited,
        ..Ready::default()
    });
    languages.insert(token.to_owned(), ready.clone());
    if !awaited {
        let (token, done) = (token.to_owned(), ready.clone());
        let spawned = std::thread::Builder::new().spawn(move || {
            compile(&token);
            done.set();
        });
        if spawned.is_err() {
            // No thread: compiled at the first line, as before.
            ready.set();
        }
    }
    (ready, true)
}

/// Compiles the expressions of `token`'s syntax that code usually
/// reaches: a few lines with comments, strings and numbers.
fn compile(token: &str) {
    let (syntaxes, theme) = sets();
    if let Some(syntax) = syntaxes.find_syntax_by_token(token) {
        let mut lines = HighlightLines::new(syntax, theme);
        for line in SAMPLE {
            let _ = lines.highlight_line(line, syntaxes);
        }
    }
}

/// The lines [`compile`] parses.
const SAMPLE: [&str; 4] = [
    "x = 1; // x\n",
    "# y \"s\" 'c' 0x1F 2.5\n",
    "/* a */ def f(a, b): return a + b\n",
    "fn main() { let s = \"t\"; }\n",
];

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
    /// A fence waits for its language to compile rather than show its
    /// first lines plain (tests that compare colours).
    pub(crate) wait: bool,
}

impl Budget {
    /// A budget for the next answer, unlimited if this one was.
    pub(crate) fn next(&self) -> Budget {
        Budget {
            unlimited: self.unlimited,
            wait: self.wait,
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

/// The most of a fence kept while its language compiles: past it, the
/// fence is shown plain to its end.
const HELD_MAX: usize = 8 * 1024; // not policy: rendering cost, not behaviour

/// The lines of one fence, coloured with the state of the lines before
/// (a comment or string that spans lines stays coloured).
pub(crate) struct Code {
    state: State,
}

enum State {
    /// Shown as it came.
    Plain,
    /// The language compiles on another thread: the lines so far, shown
    /// plain, kept to be parsed once it is done.
    Waiting {
        token: String,
        ready: Arc<Ready>,
        held: Vec<String>,
        size: usize,
    },
    /// Coloured line by line.
    Colour(Box<HighlightLines<'static>>),
}

impl Code {
    /// A fence shown as it came (no colour wanted).
    pub(crate) fn plain() -> Code {
        Code {
            state: State::Plain,
        }
    }

    /// A fence in `lang` (its info string's first word: `rust`, `py`, …).
    pub(crate) fn new(lang: &str) -> Code {
        let token = lang.split_whitespace().next().unwrap_or("");
        if token.is_empty() {
            return Code::plain();
        }
        let (ready, _) = language(token, false);
        Code {
            state: State::Waiting {
                token: token.to_owned(),
                ready,
                held: Vec::new(),
                size: 0,
            },
        }
    }

    /// One line of the fence (without its newline), coloured while
    /// `budget` allows; once it does not, this fence is plain to its end
    /// (a line skipped would leave the parser's state wrong). Shown as it
    /// came while its language compiles (see the module doc).
    pub(crate) fn line_within(&mut self, line: &str, budget: &mut Budget) -> String {
        if matches!(self.state, State::Plain) {
            return line.to_owned();
        }
        let from = Instant::now();
        if !budget.allows(from) {
            self.state = State::Plain;
            return line.to_owned();
        }
        if !self.start(budget.wait) {
            if let State::Waiting { held, size, .. } = &mut self.state {
                *size += line.len() + 1;
                if *size > HELD_MAX {
                    self.state = State::Plain;
                } else {
                    held.push(line.to_owned());
                }
            }
            return line.to_owned();
        }
        let out = self.line(line);
        budget.spend(from, Instant::now());
        out
    }

    /// One line of the fence (without its newline), coloured (waiting for
    /// its language to compile).
    pub(crate) fn line(&mut self, line: &str) -> String {
        self.start(true);
        let State::Colour(lines) = &mut self.state else {
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

    /// Moves a waiting fence on once its language is compiled (or at once,
    /// with `wait` or for a language [`warm`] compiles): the lines kept
    /// parsed, so the next is coloured in the right state. Whether the
    /// fence is coloured from here.
    fn start(&mut self, wait: bool) -> bool {
        let State::Waiting {
            token, ready, held, ..
        } = &mut self.state
        else {
            return matches!(self.state, State::Colour(_));
        };
        if wait || ready.awaited {
            ready.wait();
        } else if !ready.is_set() {
            return false;
        }
        let (syntaxes, theme) = sets();
        let Some(syntax) = syntaxes.find_syntax_by_token(token) else {
            self.state = State::Plain;
            return false;
        };
        let mut lines = HighlightLines::new(syntax, theme);
        for line in held.iter() {
            if lines
                .highlight_line(&format!("{line}\n"), syntaxes)
                .is_err()
            {
                self.state = State::Plain;
                return false;
            }
        }
        self.state = State::Colour(Box::new(lines));
        true
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
    fn a_fence_shows_its_lines_plain_until_its_language_is_compiled() {
        let ready = Arc::new(Ready::default());
        let mut waiting = Code {
            state: State::Waiting {
                token: "ruby".into(),
                ready: ready.clone(),
                held: Vec::new(),
                size: 0,
            },
        };
        let mut budget = Budget {
            unlimited: true,
            ..Budget::default()
        };
        // Not compiled: at once, as it came.
        assert_eq!(waiting.line_within("=begin", &mut budget), "=begin");
        assert_eq!(waiting.line_within("a comment", &mut budget), "a comment");
        ready.set();
        // Compiled: coloured, in the state the lines before left (still
        // in the comment they began).
        let mut whole = Code::new("ruby");
        whole.line("=begin");
        whole.line("a comment");
        let expected = whole.line("the same comment");
        assert!(expected.contains("\x1b[38;2;"), "{expected:?}");
        assert_eq!(
            waiting.line_within("the same comment", &mut budget),
            expected
        );
        // A fence longer than what is kept while waiting stays plain.
        let mut long = Code {
            state: State::Waiting {
                token: "ruby".into(),
                ready: Arc::new(Ready::default()),
                held: Vec::new(),
                size: 0,
            },
        };
        let line = "x".repeat(1000);
        for _ in 0..HELD_MAX / 1000 + 1 {
            long.line_within(&line, &mut budget);
        }
        assert!(matches!(long.state, State::Plain));
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
