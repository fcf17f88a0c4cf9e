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

/// The renderer for answers on stdout, if they are rendered: on a
/// terminal (wrapped to its width, coloured unless NO_COLOR or `--color
/// never`), or anywhere with `--color always`.
pub fn markdown() -> Option<Markdown> {
    let choice = CHOICE.get().copied().unwrap_or_default();
    let tty = std::io::stdout().is_terminal();
    match (tty, choice) {
        (true, _) => Some(Markdown::new(Some(terminal_width), stdout())),
        (false, Choice::Always) => Some(Markdown::new(None, true)),
        (false, _) => None,
    }
}

/// The width of the terminal on stdout now (COLUMNS, else 80, when it
/// does not say).
pub fn terminal_width() -> usize {
    rustix::termios::tcgetwinsize(std::io::stdout())
        .ok()
        .map(|size| usize::from(size.ws_col))
        .filter(|columns| *columns > 0)
        .unwrap_or_else(crate::progress::columns)
}

/// `text` cut to `width` columns (an ellipsis shows the cut), styles
/// kept: a status row is cut, never wrapped.
pub fn cut(text: &str, width: usize) -> String {
    if shown_width(text) <= width {
        return text.to_owned();
    }
    let mut out = String::new();
    let mut used = 0;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            out.push(c);
            for c in chars.by_ref() {
                out.push(c);
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
            continue;
        }
        let cw = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if used + cw + 1 > width {
            break;
        }
        out.push(c);
        used += cw;
    }
    out.push('…');
    if out.contains('\x1b') {
        out.push_str(RESET);
    }
    out
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
pub struct Markdown {
    /// The terminal's width, read before each line (a resize applies from
    /// the next line on); `None`: lines are not wrapped.
    width: Option<fn() -> usize>,
    /// Whether styles are written; without, the layout stays (NO_COLOR).
    colour: bool,
    /// The line begun and not yet ended.
    partial: String,
    /// The code fence the answer is in: its marker, and its code so far.
    fence: Option<(String, crate::highlight::Code)>,
    /// The rows of a table held until it ends.
    table: Vec<String>,
    /// What colouring code has cost this answer.
    budget: crate::highlight::Budget,
}

impl Default for Markdown {
    /// Coloured, not wrapped.
    fn default() -> Markdown {
        Markdown::new(None, true)
    }
}

impl Markdown {
    /// A renderer that wraps to what `width` says (each line) and colours
    /// when `colour`.
    pub fn new(width: Option<fn() -> usize>, colour: bool) -> Markdown {
        Markdown {
            width,
            colour,
            partial: String::new(),
            fence: None,
            table: Vec::new(),
            budget: crate::highlight::Budget::default(),
        }
    }

    /// Colours every line of code whatever it costs (as before colour had
    /// a budget): for benches/render.rs, which measures both.
    pub fn colour_every_line(mut self) -> Markdown {
        self.budget.unlimited = true;
        self
    }

    /// Waits for a fence's language to compile rather than show its first
    /// lines plain: for tests that compare colours.
    pub fn waiting_for_colour(mut self) -> Markdown {
        self.budget.wait = true;
        self
    }

    /// A piece of the answer: the lines it completes, rendered.
    pub fn push(&mut self, text: &str) -> String {
        self.budget.begin(std::time::Instant::now());
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
        self.styled(out)
    }

    /// The output, without its styles when colour is off.
    fn styled(&self, out: String) -> String {
        if self.colour {
            out
        } else {
            strip(&out)
        }
    }

    /// The columns a line may take now; `usize::MAX` when not wrapped.
    fn columns(&self) -> usize {
        self.width.map_or(usize::MAX, |w| w().max(MIN_WIDTH))
    }

    /// `text` (styled) after `first` on its first line and `hang` on the
    /// others, wrapped to the width, into `out`.
    fn wrapped(&self, first: &str, hang: usize, text: &str, out: &mut String) {
        let room = self.columns().saturating_sub(hang).max(MIN_WIDTH / 2);
        for (i, line) in wrap(text, room).iter().enumerate() {
            if i == 0 {
                out.push_str(first);
            } else {
                out.push_str(&" ".repeat(hang));
            }
            out.push_str(line);
            out.push('\n');
        }
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
        // The next answer has a budget of its own.
        self.budget = self.budget.next();
        self.styled(out)
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
                out.push_str(&code.line_within(line, &mut self.budget));
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
            let code = if self.colour {
                crate::highlight::Code::new(lang)
            } else {
                crate::highlight::Code::plain()
            };
            self.fence = Some((ticks, code));
            return;
        }
        if let Some((level, text)) = heading(trimmed) {
            let style = match level {
                1 => format!("{BOLD}{UNDERLINE}{MAGENTA}"),
                2 => format!("{BOLD}{MAGENTA}"),
                _ => BOLD.to_owned(),
            };
            let text = format!("{style}{}{RESET}", inline(text, &style));
            self.wrapped(indent, indent.width(), &text, out);
            return;
        }
        if is_rule(trimmed) {
            let rule = "─".repeat(RULE.min(self.columns().saturating_sub(indent.width())));
            out.push_str(&format!("{indent}{DIM}{rule}{RESET}\n"));
            return;
        }
        if let Some(text) = trimmed.strip_prefix('>') {
            let text = text.strip_prefix(' ').unwrap_or(text);
            let bar = format!("{indent}{DIM}│{RESET} ");
            let text = format!("{ITALIC}{}{RESET}", inline(text, ITALIC));
            let hang = indent.width() + 2;
            let room = self.columns().saturating_sub(hang).max(MIN_WIDTH / 2);
            for line in wrap(&text, room) {
                out.push_str(&bar);
                out.push_str(&line);
                out.push('\n');
            }
            return;
        }
        if let Some((bullet, text)) = list_item(trimmed) {
            let first = format!("{indent}{YELLOW}{bullet}{RESET} ");
            let hang = indent.width() + bullet.width() + 1;
            self.wrapped(&first, hang, &inline(text, ""), out);
            return;
        }
        self.wrapped(indent, indent.width(), &inline(trimmed, ""), out);
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
        let aligns: Vec<Align> = if headed {
            rows[1].iter().map(|c| Align::of(c)).collect()
        } else {
            Vec::new()
        };
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
        fit(&mut widths, self.columns());
        for (i, row) in rendered.iter().enumerate() {
            if headed && i == 1 {
                let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
                out.push_str(&format!("{DIM}{}{RESET}\n", rule.join("─┼─")));
                continue;
            }
            // Each cell wrapped to its column: a row takes as many lines
            // as its tallest cell.
            let cells: Vec<Vec<String>> = widths
                .iter()
                .enumerate()
                .map(|(c, width)| row.get(c).map_or_else(Vec::new, |(s, _)| wrap(s, *width)))
                .collect();
            let height = cells.iter().map(Vec::len).max().unwrap_or(0).max(1);
            for l in 0..height {
                let mut line = String::new();
                for (c, width) in widths.iter().enumerate() {
                    if c > 0 {
                        line.push_str(&format!(" {DIM}│{RESET} "));
                    }
                    let shown = cells[c].get(l).map_or("", String::as_str);
                    let gap = width.saturating_sub(shown_width(shown));
                    let (before, after) = match aligns.get(c).copied().unwrap_or_default() {
                        Align::Left => (0, gap),
                        Align::Right => (gap, 0),
                        Align::Centre => (gap / 2, gap - gap / 2),
                    };
                    line.push_str(&" ".repeat(before));
                    line.push_str(shown);
                    if c + 1 < columns {
                        line.push_str(&" ".repeat(after));
                    }
                }
                out.push_str(line.trim_end_matches(' '));
                out.push('\n');
            }
        }
    }
}

/// The narrowest a wrapped line is made, whatever the terminal says.
const MIN_WIDTH: usize = 20; // not policy: layout
/// A rule's length at most.
const RULE: usize = 40; // not policy: layout
/// The narrowest a table column is shrunk to.
const MIN_COLUMN: usize = 3; // not policy: layout

/// A table column's alignment, from its delimiter cell (`:--`, `:-:`, `--:`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Align {
    #[default]
    Left,
    Centre,
    Right,
}

impl Align {
    fn of(cell: &str) -> Align {
        let cell = cell.trim();
        match (cell.starts_with(':'), cell.ends_with(':') && cell.len() > 1) {
            (true, true) => Align::Centre,
            (false, true) => Align::Right,
            _ => Align::Left,
        }
    }
}

/// Shrinks the widest columns until the table (with ` │ ` between
/// columns) fits in `room`, none below [`MIN_COLUMN`].
fn fit(widths: &mut [usize], room: usize) {
    let between = 3 * widths.len().saturating_sub(1);
    loop {
        let total: usize = widths.iter().sum::<usize>() + between;
        if total <= room {
            return;
        }
        let Some((i, widest)) = widths.iter().copied().enumerate().max_by_key(|(_, w)| *w) else {
            return;
        };
        if widest <= MIN_COLUMN {
            return;
        }
        widths[i] = widest - 1;
    }
}

/// `text`'s width on screen: escape sequences take none.
fn shown_width(text: &str) -> usize {
    let mut width = 0;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            width += unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        }
    }
    width
}

/// `text` without its escape sequences (colour off, layout kept).
fn strip(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// `text` (styled) in lines of at most `width` columns, cut at spaces; a
/// word wider than a line is cut where it must. A style open at a cut is
/// closed at the end of the line and opened again on the next.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    if shown_width(text) <= width {
        return vec![text.to_owned()];
    }
    let mut lines = Vec::new();
    let mut line = String::new();
    let mut used = 0;
    // The styles set since the last reset, to open again after a cut.
    let mut open: Vec<String> = Vec::new();
    let mut space = false;
    let cut = |line: &mut String, used: &mut usize, open: &[String], lines: &mut Vec<String>| {
        if !open.is_empty() {
            line.push_str(RESET);
        }
        lines.push(std::mem::take(line));
        *line = open.concat();
        *used = 0;
    };
    for word in text.split(' ') {
        if word.is_empty() {
            space = true;
            continue;
        }
        let w = shown_width(word);
        if used > 0 && used + usize::from(space) + w > width {
            cut(&mut line, &mut used, &open, &mut lines);
        } else if used > 0 && space {
            line.push(' ');
            used += 1;
        }
        space = true;
        let mut chars = word.chars();
        while let Some(c) = chars.next() {
            if c == '\x1b' {
                let mut seq = String::from(c);
                for c in chars.by_ref() {
                    seq.push(c);
                    if c.is_ascii_alphabetic() {
                        break;
                    }
                }
                if seq == RESET {
                    open.clear();
                } else {
                    open.push(seq.clone());
                }
                line.push_str(&seq);
                continue;
            }
            let cw = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
            if used > 0 && used + cw > width {
                cut(&mut line, &mut used, &open, &mut lines);
            }
            line.push(c);
            used += cw;
        }
    }
    match lines.last_mut() {
        Some(last) if used == 0 => last.push_str(line.trim_start_matches(&*open.concat())),
        _ => lines.push(line),
    }
    lines
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
        let mut md = Markdown::default().waiting_for_colour();
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
        let mut md = Markdown::default().waiting_for_colour();
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
    fn a_code_line_shows_as_it_arrives_before_its_fence_closes() {
        let mut md = Markdown::default().waiting_for_colour();
        let out = md.push("Here:\n```rust\nfn ma");
        assert!(strip(&out).contains("```rust"), "{out:?}");
        assert!(!out.contains("fn ma"), "a line shows once whole: {out:?}");
        let first = md.push("in() {\n");
        // Coloured, and out before the rest of the fence came.
        assert!(first.contains("\x1b[38;2;"), "{first:?}");
        assert_eq!(strip(&first), "fn main() {\n");
        let second = md.push("    let x = 1;\n");
        assert_eq!(strip(&second), "    let x = 1;\n");
        let rest = md.push("}\n```\nafter\n");
        assert_eq!(strip(&rest), "}\n```\nafter\n");
        assert_eq!(md.finish(), "");
    }

    #[test]
    fn pieces_make_the_same_lines_as_the_whole() {
        let text = "# Head\nSome **bold** text\n| a | b |\n|---|---|\n| 1 | 2 |\n```rust\nfn main() {}\n```\nend";
        let whole = shown(text);
        let mut md = Markdown::default().waiting_for_colour();
        let mut pieces = String::new();
        for c in text.chars() {
            pieces.push_str(&md.push(&c.to_string()));
        }
        pieces.push_str(&md.finish());
        let whole_raw = {
            let mut md = Markdown::default().waiting_for_colour();
            let mut s = md.push(text);
            s.push_str(&md.finish());
            s
        };
        assert_eq!(pieces, whole_raw);
        assert!(whole.ends_with("end\n"), "{whole}");
    }

    fn w40() -> usize {
        40
    }

    fn w60() -> usize {
        60
    }

    fn w80() -> usize {
        80
    }

    /// The rendering at `width` without colour, and the widest line.
    fn at(width: fn() -> usize, text: &str) -> (String, usize) {
        let mut md = Markdown::new(Some(width), false);
        let mut out = md.push(text);
        out.push_str(&md.finish());
        let widest = out.lines().map(shown_width).max().unwrap_or(0);
        (out, widest)
    }

    const LONG: &str = "A paragraph that goes on for a while, as answers do, with \
        words like internationalisation and `code spans` that must never be \
        broken in the middle when the terminal is narrow.\n\
        - a list item that is long enough to wrap onto a second line under \
        its own text, not under the bullet\n\
        > a quote that is also long enough to need a second line in the end\n";

    const TABLE: &str = "| name | what it does | lines |\n|:-----|:------:|------:|\n\
        | store.rs | keeps the sessions and their index, read at every start | 512 |\n\
        | log.rs | writes each record with one call | 30 |\n";

    #[test]
    fn lines_wrap_at_the_width_on_word_boundaries() {
        for (width, name) in [(w40 as fn() -> usize, "40"), (w60, "60"), (w80, "80")] {
            let (out, widest) = at(width, LONG);
            assert!(widest <= width(), "{name}: {out}");
            for word in ["internationalisation", "paragraph", "terminal"] {
                assert!(out.contains(word), "{name}: {word} broken: {out}");
            }
            insta::assert_snapshot!(format!("wrapped_{name}"), out);
        }
    }

    #[test]
    fn a_wide_table_fits_and_keeps_its_alignment() {
        for (width, name) in [(w60 as fn() -> usize, "60"), (w80, "80")] {
            let (out, widest) = at(width, TABLE);
            assert!(widest <= width(), "{name}: {out}");
            insta::assert_snapshot!(format!("table_{name}"), out);
        }
        // Right-aligned numbers end in one column.
        let (out, _) = at(w80, TABLE);
        let ends: Vec<usize> = out
            .lines()
            .filter(|l| l.ends_with(" 512") || l.ends_with(" 30") || l.ends_with("lines"))
            .map(shown_width)
            .collect();
        assert_eq!(ends.len(), 3, "{out}");
        assert!(ends.iter().all(|e| *e == ends[0]), "{out}");
    }

    #[test]
    fn without_colour_the_layout_stays() {
        let mut coloured = Markdown::new(Some(w40), true).waiting_for_colour();
        let mut with = coloured.push(LONG);
        with.push_str(&coloured.finish());
        let (without, _) = at(w40, LONG);
        assert!(with.contains("\x1b["), "{with}");
        assert!(!without.contains('\x1b'), "{without}");
        assert_eq!(strip(&with), without);
    }

    #[test]
    fn a_row_is_cut_not_wrapped() {
        let row = "amber · gpt-5.6-terra · 12 turns · 1.2M in / 30k out · context 80k of 922k (9%)";
        let cut60 = cut(row, 60);
        assert_eq!(shown_width(&cut60), 60, "{cut60}");
        assert!(cut60.ends_with('…'), "{cut60}");
        assert_eq!(cut(row, 200), row);
        let styled = cut(&format!("{DIM}{row}{RESET}"), 30);
        assert_eq!(shown_width(&styled), 30);
        assert!(styled.ends_with(RESET), "{styled:?}");
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
