//! Live progress on a terminal's stderr: a running `shell` command's
//! elapsed time and its last output lines, redrawn in place below its tool
//! line and folded away when it ends. Shown only once the command ran
//! [`PROGRESS_AFTER_MS`]; never on a pipe (the caller asks only when
//! stderr is a terminal), and never on stdout.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use revolve_core::policy::{PROGRESS_AFTER_MS, PROGRESS_LINES};
use revolve_tools::Watch;
use revolve_view as view;
use unicode_width::UnicodeWidthChar;

/// How often the view is drawn again, at most.
const REDRAW: Duration = Duration::from_millis(100); // not policy: a redraw rate

/// What the view has on screen.
#[derive(Default)]
struct Drawn {
    /// Lines drawn (to erase before the next drawing).
    lines: usize,
    /// When it was last drawn.
    at: Option<Instant>,
}

/// A [`Watch`] drawing a running command's view on stderr, `columns` wide.
pub(crate) fn command_view(columns: usize) -> Watch {
    let drawn = Mutex::new(Drawn::default());
    Watch(Some(Arc::new(move |tick| {
        let mut drawn = drawn.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(bytes) = drawn.step(tick, Instant::now(), columns) {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "{bytes}");
            let _ = err.flush();
        }
    })))
}

impl Drawn {
    /// What to write for one tick at `now`: nothing (too early, or drawn
    /// less than [`REDRAW`] ago), a new view over the one on screen, or,
    /// when the command ended (`None`), the erase that folds it away.
    fn step(
        &mut self,
        tick: Option<(Duration, &str)>,
        now: Instant,
        columns: usize,
    ) -> Option<String> {
        match tick {
            Some((elapsed, tail)) => {
                if elapsed < Duration::from_millis(PROGRESS_AFTER_MS)
                    || self.at.is_some_and(|at| now.duration_since(at) < REDRAW)
                {
                    return None;
                }
                let block = view_lines(elapsed, tail, columns);
                let bytes = format!("{}{block}", erase(self.lines));
                self.lines = block.lines().count();
                self.at = Some(now);
                Some(bytes)
            }
            None => {
                let lines = std::mem::take(self).lines;
                (lines > 0).then(|| erase(lines))
            }
        }
    }
}

/// The live lines of the children of a `task` delegation on a terminal's
/// stderr: one line a child (its description, its last tool, its tokens),
/// redrawn in place as they go, and folded away once all ended (their
/// answers are the calls' results, shown after).
#[derive(Debug, Default)]
pub(crate) struct ChildLines {
    /// Lines on screen.
    drawn: usize,
}

impl ChildLines {
    /// What to write to show `lines` over the ones on screen, each inert
    /// and cut to `columns`, dim.
    pub(crate) fn draw(&mut self, lines: &[String], columns: usize) -> String {
        let mut out = erase(self.drawn);
        for line in lines {
            let line = view::inert(line);
            out.push_str(&format!(
                "\x1b[2m  {}\x1b[0m\n",
                cut(&line, columns.saturating_sub(3))
            ));
        }
        self.drawn = lines.len();
        out
    }

    /// What to write to fold the lines away.
    pub(crate) fn fold(&mut self) -> String {
        erase(std::mem::take(&mut self.drawn))
    }
}

/// Waits `wait` before a retry, unless `stop` says to give up (returns
/// false then). On a terminal's stderr the time left counts down in place
/// and is cleared when the wait ends.
pub(crate) fn countdown(wait: Duration, tty: bool, stop: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + wait;
    let mut shown = None;
    let mut err = std::io::stderr();
    let finished = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break true;
        }
        if stop() {
            break false;
        }
        let tenths = left.as_millis() / 100;
        if tty && shown != Some(tenths) {
            let _ = write!(
                err,
                "\r\x1b[2m  retrying in {:.1}s\x1b[0m\x1b[K",
                left.as_secs_f64()
            );
            let _ = err.flush();
            shown = Some(tenths);
        }
        std::thread::sleep(POLL.min(left));
    };
    if shown.is_some() {
        let _ = write!(err, "\r\x1b[K");
        let _ = err.flush();
    }
    finished
}

/// How often a countdown looks at the clock and at Ctrl-C.
const POLL: Duration = Duration::from_millis(25); // not policy: a poll interval

/// The terminal's width: `COLUMNS` when set, else 80.
pub(crate) fn columns() -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse().ok())
        .filter(|c| *c > 10)
        .unwrap_or(80) // not policy: the classic terminal width
}

/// Moves up over `lines` drawn lines and clears from there down.
fn erase(lines: usize) -> String {
    if lines == 0 {
        String::new()
    } else {
        format!("\x1b[{lines}F\x1b[J")
    }
}

/// The view: the time the command has run, then its last output lines
/// (inert, cut to `columns`), dim.
fn view_lines(elapsed: Duration, tail: &str, columns: usize) -> String {
    let mut out = format!("\x1b[2m  … running {:.1}s\x1b[0m\n", elapsed.as_secs_f64());
    let lines: Vec<&str> = tail
        .lines()
        .map(|l| l.rsplit('\r').next().unwrap_or(l))
        .filter(|l| !l.trim().is_empty())
        .collect();
    for line in &lines[lines.len().saturating_sub(PROGRESS_LINES)..] {
        let line = view::inert(line);
        out.push_str(&format!(
            "\x1b[2m  │ {}\x1b[0m\n",
            cut(&line, columns.saturating_sub(5))
        ));
    }
    out
}

/// `text` cut to `width` columns.
fn cut(text: &str, width: usize) -> String {
    let mut used = 0;
    let mut out = String::new();
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > width {
            break;
        }
        used += w;
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn child_lines_are_redrawn_in_place_and_folded_away() {
        let mut lines = ChildLines::default();
        let two = [
            "task 1: a · started".to_owned(),
            "task 2: b · started".to_owned(),
        ];
        assert_eq!(
            lines.draw(&two, 80),
            "\x1b[2m  task 1: a · started\x1b[0m\n\x1b[2m  task 2: b · started\x1b[0m\n"
        );
        let again = lines.draw(&two, 12);
        assert!(again.starts_with("\x1b[2F\x1b[J"), "{again:?}");
        assert!(
            again.contains("  task 1: a\x1b[0m"),
            "cut to the width: {again:?}"
        );
        assert_eq!(lines.fold(), "\x1b[2F\x1b[J");
        assert_eq!(lines.fold(), "", "nothing left to fold");
    }

    #[test]
    fn the_view_shows_time_and_the_last_lines_cut() {
        let tail = "one\ntwo\n\nthree\rTHREE\nfour is a long line indeed\n";
        let shown = view_lines(Duration::from_millis(2_345), tail, 20);
        assert_eq!(
            shown,
            "\x1b[2m  … running 2.3s\x1b[0m\n\
             \x1b[2m  │ two\x1b[0m\n\
             \x1b[2m  │ THREE\x1b[0m\n\
             \x1b[2m  │ four is a long \x1b[0m\n"
        );
        assert_eq!(erase(0), "");
        assert_eq!(erase(3), "\x1b[3F\x1b[J");
    }

    /// The bytes a whole `cargo test` run writes to the terminal, the clock
    /// pinned: nothing before half a second, a redraw at most every 100 ms,
    /// each erasing exactly the lines before it, and the view folded away
    /// at the end (escapes shown as `⎋`).
    #[test]
    fn a_running_command_draws_redraws_and_folds_away() {
        let start = Instant::now();
        let mut drawn = Drawn::default();
        let output = [
            "   Compiling revolve v0.1.0\n",
            "   Compiling revolve v0.1.0\n    Finished `test` profile\n     Running unittests\n",
            "    Finished `test` profile\n     Running unittests\ntest a ... ok\ntest b ... ok\n",
        ];
        let ticks: [(u64, Option<&str>); 7] = [
            (200, Some(output[0])),
            (600, Some(output[0])),
            (650, Some(output[1])),
            (720, Some(output[1])),
            (1_900, Some(output[2])),
            (1_950, Some(output[2])),
            (2_000, None),
        ];
        let mut screen = String::new();
        for (ms, tail) in ticks {
            let elapsed = Duration::from_millis(ms);
            let written = drawn.step(tail.map(|t| (elapsed, t)), start + elapsed, 60);
            screen.push_str(&format!(
                "at {ms} ms: {}\n",
                match written {
                    None => "(nothing)".to_owned(),
                    Some(bytes) => format!("{:?}", bytes.replace('\x1b', "⎋")),
                }
            ));
        }
        insta::assert_snapshot!(screen);
        assert_eq!(drawn.lines, 0, "nothing is left on screen");
    }
}
