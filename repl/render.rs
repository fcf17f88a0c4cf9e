//! Colour in a terminal: answers rendered as Markdown while they stream,
//! tool lines dim, errors red, diffs green and red. Everything here is
//! presentation; what is shown is decided elsewhere.
//!
//! # When
//! `--color auto` (the default) colours a stream that is a terminal, unless
//! `NO_COLOR` is set (<https://no-color.org>); `always` and `never` force
//! it. Without colour nothing here changes a byte: piped output is the
//! text as it came.
//!
//! # How an answer is rendered
//! Line by line, as each line completes ([`Markdown::push`]): block
//! structure (headings, lists, quotes, rules, code fences, tables) is read
//! from the start of each line, which a stream allows, and the inline
//! spans of a line (emphasis, strong, code, links, strikethrough) are
//! pulldown-cmark's. pulldown-cmark parses whole documents, so the block
//! level is this file's: a streamed answer cannot wait for its end. A table
//! is held until its last row, to align its columns. Code in a fence is
//! coloured by its language (see [`crate::highlight`]).

use std::io::IsTerminal;
use std::sync::OnceLock;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use unicode_width::UnicodeWidthStr;

/// `--color`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Choice {
    /// Colour on a terminal, unless NO_COLOR is set
    #[default]
    Auto,
    /// Colour even when piped
    Always,
    /// Never colour
    Never,
}

/// The run's choice, set once at the start ([`choose`]).
static CHOICE: OnceLock<Choice> = OnceLock::new();

/// Sets the run's `--color` (the first call wins).
pub fn choose(choice: Choice) {
    CHOICE.get_or_init(|| choice);
}

/// Whether a stream that is (`tty`) or is not a terminal gets colour.
pub fn enabled(choice: Choice, tty: bool, no_color: bool) -> bool {
    match choice {
        Choice::Always => true,
        Choice::Never => false,
        Choice::Auto => tty && !no_color,
    }
}

fn no_color() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

/// Whether stdout gets colour (and answers Markdown rendering).
pub fn stdout() -> bool {
    let choice = CHOICE.get().copied().unwrap_or_default();
    enabled(choice, std::io::stdout().is_terminal(), no_color())
}

/// Whether stderr gets colour.
pub fn stderr() -> bool {
    let choice = CHOICE.get().copied().unwrap_or_default();
    enabled(choice, std::io::stderr().is_terminal(), no_color())
}

const RESET: &str = "\x1b[0m";
const BOLD: &str = "\x1b[1m";
const DIM: &str = "\x1b[2m";
const ITALIC: &str = "\x1b[3m";
const UNDERLINE: &str = "\x1b[4m";
const STRIKE: &str = "\x1b[9m";
const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const YELLOW: &str = "\x1b[33m";
const MAGENTA: &str = "\x1b[35m";
const CYAN: &str = "\x1b[36m";
const ERROR: &str = "\x1b[1;31m";

/// `text` dimmed when `on` (tool lines, the status row).
pub fn dim(text: &str, on: bool) -> String {
    paint(text, DIM, on)
}

/// `text` in bold red when `on` (errors).
pub fn error(text: &str, on: bool) -> String {
    paint(text, ERROR, on)
}

fn paint(text: &str, style: &str, on: bool) -> String {
    if on {
        format!("{style}{text}{RESET}")
    } else {
        text.to_owned()
    }
}

/// A unified diff with added lines green, removed ones red and hunk heads
/// cyan, when `on`.
pub fn diff(text: &str, on: bool) -> String {
    if !on {
        return text.to_owned();
    }
    text.split_inclusive('\n')
        .map(|line| {
            let (body, end) = match line.strip_suffix('\n') {
                Some(body) => (body, "\n"),
                None => (line, ""),
            };
            let style = if body.starts_with("+++") || body.starts_with("---") {
                BOLD
            } else if body.starts_with('+') {
                GREEN
            } else if body.starts_with('-') {
                RED
            } else if body.starts_with("@@") {
                CYAN
            } else {
                ""
            };
            if style.is_empty() {
                line.to_owned()
            } else {
                format!("{style}{body}{RESET}{end}")
            }
        })
        .collect()
}

/// An answer's Markdown, rendered a line at a time as it streams.
#[derive(Default)]
pub struct Markdown {
    /// The line begun and not yet ended.
    partial: String,
    /// The code fence the answer is in: its marker, and its code so far.
    fence: Option<(String, crate::highlight::Code)>,
    /// The rows of a table held until it ends.
    table: Vec<String>,
}

impl Markdown {
    /// A piece of the answer: the lines it completes, rendered.
    pub fn push(&mut self, text: &str) -> String {
        self.partial.push_str(text);
        let Some(end) = self.partial.rfind('\n') else {
            return String::new();
        };
        let rest = self.partial.split_off(end + 1);
        let done = std::mem::replace(&mut self.partial, rest);
        let mut out = String::new();
        for line in done.lines() {
            self.line(line, &mut out);
        }
        out
    }

    /// The answer ended: the rest, rendered and ended with a newline when
    /// anything was left.
    pub fn finish(&mut self) -> String {
        let mut out = String::new();
        let partial = std::mem::take(&mut self.partial);
        if !partial.is_empty() {
            self.line(&partial, &mut out);
        }
        self.flush_table(&mut out);
        self.fence = None;
        out
    }

    /// Renders one whole line (without its newline) into `out`.
    fn line(&mut self, line: &str, out: &mut String) {
        let trimmed = line.trim_start();
        let indent = &line[..line.len() - trimmed.len()];
        if let Some((marker, code)) = &mut self.fence {
            if trimmed.starts_with(marker.as_str())
                && trimmed.trim_end().chars().all(|c| marker.starts_with(c))
            {
                out.push_str(&format!("{DIM}{line}{RESET}\n"));
                self.fence = None;
            } else {
                out.push_str(&code.line(line));
                out.push('\n');
            }
            return;
        }
        if trimmed.starts_with('|') {
            self.table.push(trimmed.trim_end().to_owned());
            return;
        }
        self.flush_table(out);
        if let Some(marker) = ["```", "~~~"].iter().find(|m| trimmed.starts_with(**m)) {
            let ticks = trimmed
                .chars()
                .take_while(|c| marker.starts_with(*c))
                .collect::<String>();
            let lang = trimmed[ticks.len()..].trim();
            out.push_str(&format!("{DIM}{line}{RESET}\n"));
            self.fence = Some((ticks, crate::highlight::Code::new(lang)));
            return;
        }
        if let Some((level, text)) = heading(trimmed) {
            let style = match level {
                1 => format!("{BOLD}{UNDERLINE}{MAGENTA}"),
                2 => format!("{BOLD}{MAGENTA}"),
                _ => BOLD.to_owned(),
            };
            out.push_str(&format!("{indent}{style}{}{RESET}\n", inline(text, &style)));
            return;
        }
        if is_rule(trimmed) {
            out.push_str(&format!("{indent}{DIM}{}{RESET}\n", "─".repeat(40)));
            return;
        }
        if let Some(text) = trimmed.strip_prefix('>') {
            let text = text.strip_prefix(' ').unwrap_or(text);
            out.push_str(&format!(
                "{indent}{DIM}│{RESET} {ITALIC}{}{RESET}\n",
                inline(text, ITALIC)
            ));
            return;
        }
        if let Some((bullet, text)) = list_item(trimmed) {
            out.push_str(&format!(
                "{indent}{YELLOW}{bullet}{RESET} {}\n",
                inline(text, "")
            ));
            return;
        }
        out.push_str(indent);
        out.push_str(&inline(trimmed, ""));
        out.push('\n');
    }

    /// Renders the table held, if any: columns aligned, the header bold,
    /// the delimiter row a rule.
    fn flush_table(&mut self, out: &mut String) {
        if self.table.is_empty() {
            return;
        }
        let rows: Vec<Vec<String>> = std::mem::take(&mut self.table)
            .iter()
            .map(|r| cells(r))
            .collect();
        let delimiter = |r: &Vec<String>| {
            !r.is_empty()
                && r.iter().all(|c| {
                    let c = c.trim();
                    !c.is_empty() && c.chars().all(|ch| matches!(ch, '-' | ':'))
                })
        };
        let headed = rows.get(1).is_some_and(delimiter);
        let rendered: Vec<Vec<(String, usize)>> = rows
            .iter()
            .enumerate()
            .map(|(i, row)| {
                if headed && i == 1 {
                    return Vec::new();
                }
                row.iter()
                    .map(|c| {
                        let shown = if headed && i == 0 {
                            format!("{BOLD}{}{RESET}", inline(c, BOLD))
                        } else {
                            inline(c, "")
                        };
                        (shown, plain(c).width())
                    })
                    .collect()
            })
            .collect();
        let columns = rendered.iter().map(Vec::len).max().unwrap_or(0);
        let mut widths = vec![0; columns];
        for row in &rendered {
            for (i, (_, w)) in row.iter().enumerate() {
                widths[i] = widths[i].max(*w);
            }
        }
        for (i, row) in rendered.iter().enumerate() {
            if headed && i == 1 {
                let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
                out.push_str(&format!("{DIM}{}{RESET}\n", rule.join("─┼─")));
                continue;
            }
            let mut line = String::new();
            for (c, width) in widths.iter().enumerate() {
                if c > 0 {
                    line.push_str(&format!(" {DIM}│{RESET} "));
                }
                let (shown, w) = row.get(c).map_or(("", 0), |(s, w)| (s.as_str(), *w));
                line.push_str(shown);
                if c + 1 < columns {
                    line.push_str(&" ".repeat(width - w));
                }
            }
            out.push_str(&line);
            out.push('\n');
        }
    }
}

/// `# Title` → (1, "Title").
fn heading(line: &str) -> Option<(usize, &str)> {
    let level = line.chars().take_while(|c| *c == '#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let rest = &line[level..];
    if rest.is_empty() {
        return Some((level, ""));
    }
    let text = rest.strip_prefix(' ')?;
    Some((level, text.trim_end().trim_end_matches('#').trim_end()))
}

/// `---`, `***`, `___` (three or more, spaces allowed).
fn is_rule(line: &str) -> bool {
    let chars: Vec<char> = line.chars().filter(|c| !c.is_whitespace()).collect();
    chars.len() >= 3 && ['-', '*', '_'].iter().any(|m| chars.iter().all(|c| c == m))
}

/// `- item`, `* item`, `+ item` → ("•", "item"); `3. item` → ("3.", "item").
fn list_item(line: &str) -> Option<(String, &str)> {
    for bullet in ["- ", "* ", "+ "] {
        if let Some(text) = line.strip_prefix(bullet) {
            let text = match text.strip_prefix("[ ] ") {
                Some(t) => return Some(("☐".into(), t)),
                None => text,
            };
            if let Some(t) = text
                .strip_prefix("[x] ")
                .or_else(|| text.strip_prefix("[X] "))
            {
                return Some(("☑".into(), t));
            }
            return Some(("•".into(), text));
        }
    }
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    if (1..=9).contains(&digits) {
        let rest = &line[digits..];
        for end in [". ", ") "] {
            if let Some(text) = rest.strip_prefix(end) {
                return Some((line[..digits + 1].to_owned(), text));
            }
        }
    }
    None
}

/// A table row's cells, without the outer pipes (`\|` stays in its cell).
fn cells(row: &str) -> Vec<String> {
    let inner = row.strip_prefix('|').unwrap_or(row);
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    let mut cells = vec![String::new()];
    let mut escaped = false;
    for c in inner.chars() {
        match c {
            '|' if !escaped => cells.push(String::new()),
            _ => {
                if let Some(last) = cells.last_mut() {
                    last.push(c);
                }
            }
        }
        escaped = c == '\\';
    }
    cells.into_iter().map(|c| c.trim().to_owned()).collect()
}

/// A line's inline spans, styled; `outer` is the style around it, put
/// back after each span ends.
fn inline(text: &str, outer: &str) -> String {
    let mut out = String::new();
    let mut stack: Vec<&str> = Vec::new();
    let restore = |stack: &[&str], out: &mut String| {
        out.push_str(RESET);
        out.push_str(outer);
        for style in stack {
            out.push_str(style);
        }
    };
    let mut links: Vec<String> = Vec::new();
    for event in Parser::new_ext(text, Options::ENABLE_STRIKETHROUGH) {
        match event {
            Event::Text(t) => out.push_str(&t),
            Event::Code(c) => {
                out.push_str(CYAN);
                out.push_str(&c);
                restore(&stack, &mut out);
            }
            Event::Start(Tag::Emphasis) => {
                stack.push(ITALIC);
                out.push_str(ITALIC);
            }
            Event::Start(Tag::Strong) => {
                stack.push(BOLD);
                out.push_str(BOLD);
            }
            Event::Start(Tag::Strikethrough) => {
                stack.push(STRIKE);
                out.push_str(STRIKE);
            }
            Event::Start(Tag::Link { dest_url, .. }) => {
                stack.push(UNDERLINE);
                out.push_str(UNDERLINE);
                links.push(dest_url.into_string());
            }
            Event::End(TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough) => {
                stack.pop();
                restore(&stack, &mut out);
            }
            Event::End(TagEnd::Link) => {
                stack.pop();
                restore(&stack, &mut out);
                if let Some(url) = links.pop() {
                    out.push_str(&format!(" {DIM}({url}){RESET}{outer}"));
                    for style in &stack {
                        out.push_str(style);
                    }
                }
            }
            Event::Html(t) | Event::InlineHtml(t) => out.push_str(&t),
            Event::SoftBreak | Event::HardBreak => out.push(' '),
            _ => {}
        }
    }
    // A line pulldown-cmark reads as a block of its own (an indented
    // `    code` line, say) keeps its text.
    if out.is_empty() && !text.trim().is_empty() {
        return text.to_owned();
    }
    out
}

/// A cell's text as shown, without styles (for its width).
fn plain(text: &str) -> String {
    let styled = inline(text, "");
    let mut out = String::with_capacity(styled.len());
    let mut chars = styled.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for c in chars.by_ref() {
                if c == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rendering with styles shown as `<b>`, `<i>`, … for reading.
    fn shown(text: &str) -> String {
        let mut md = Markdown::default();
        let mut out = md.push(text);
        out.push_str(&md.finish());
        out.replace(RESET, "</>")
            .replace(BOLD, "<b>")
            .replace(DIM, "<dim>")
            .replace(ITALIC, "<i>")
            .replace(UNDERLINE, "<u>")
            .replace(STRIKE, "<s>")
            .replace(RED, "<red>")
            .replace(GREEN, "<green>")
            .replace(YELLOW, "<yellow>")
            .replace(MAGENTA, "<magenta>")
            .replace(CYAN, "<cyan>")
    }

    #[test]
    fn the_choice() {
        assert!(enabled(Choice::Auto, true, false));
        assert!(!enabled(Choice::Auto, true, true));
        assert!(!enabled(Choice::Auto, false, false));
        assert!(enabled(Choice::Always, false, true));
        assert!(!enabled(Choice::Never, true, false));
    }

    #[test]
    fn blocks_and_inlines() {
        insta::assert_snapshot!(shown(
            "# Title\n## Sub *it*\nSome **bold** and `code` and [a link](http://x).\n\
             - one\n- two\n  1. nested\n> quoted _text_\n---\n~~gone~~\n"
        ));
    }

    #[test]
    fn a_table_is_aligned_once_whole() {
        let mut md = Markdown::default();
        assert_eq!(md.push("| a | long header |\n|---|:-:|\n"), "");
        assert_eq!(md.push("| wide cell | x |\n"), "");
        let out = md.push("after\n");
        insta::assert_snapshot!(out
            .replace(RESET, "</>")
            .replace(BOLD, "<b>")
            .replace(DIM, "<dim>"));
    }

    #[test]
    fn a_fence_keeps_its_lines() {
        let out = shown("```\nlet *x* = 1;\n# not a heading\n```\nafter *it*\n");
        assert!(out.contains("let *x* = 1;"), "{out}");
        assert!(out.contains("# not a heading"), "{out}");
        assert!(out.ends_with("after <i>it</>\n"), "{out}");
    }

    #[test]
    fn pieces_make_the_same_lines_as_the_whole() {
        let text = "# Head\nSome **bold** text\n| a | b |\n|---|---|\n| 1 | 2 |\n```rust\nfn main() {}\n```\nend";
        let whole = shown(text);
        let mut md = Markdown::default();
        let mut pieces = String::new();
        for c in text.chars() {
            pieces.push_str(&md.push(&c.to_string()));
        }
        pieces.push_str(&md.finish());
        let whole_raw = {
            let mut md = Markdown::default();
            let mut s = md.push(text);
            s.push_str(&md.finish());
            s
        };
        assert_eq!(pieces, whole_raw);
        assert!(whole.ends_with("end\n"), "{whole}");
    }

    #[test]
    fn diffs_are_coloured_only_when_on() {
        let d = "--- a\n+++ b\n@@ -1 +1 @@\n-old\n+new\n same\n";
        assert_eq!(diff(d, false), d);
        let on = diff(d, true);
        assert!(on.contains(&format!("{RED}-old{RESET}\n")), "{on:?}");
        assert!(on.contains(&format!("{GREEN}+new{RESET}\n")), "{on:?}");
        assert!(on.ends_with(" same\n"), "{on:?}");
    }
}
