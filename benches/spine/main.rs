//! The spine's performance: resuming a large session log, listing a project
//! folder of many sessions, appending one message.
//!
//! `cargo bench --bench spine` runs every figure at full size (a 100 MB log,
//! 10,000 session files, 10,000 appends) and ends with a table of figures,
//! targets and PASS/FAIL. `REVOLVE_BENCH_SCALE=0.1` shrinks every size for a
//! quick run (the targets stay those of the full size). Run without
//! `--bench` (as `cargo test --all-targets` does) it is a tiny smoke run.
//!
//! Std only: `Instant` for time, a folder under `std::env::temp_dir()` that is
//! removed afterwards, `/proc/self/status` for the peak RSS. Every figure is
//! the median of several runs; the files are freshly written, so reads hit
//! the page cache (a warm start, not a cold one).
//!
//! The end-to-end `revolve sessions --all` figure needs a release binary at
//! `target/release/revolve` (`cargo build --release` first); it is skipped
//! with a note otherwise. `REVOLVE_BENCH_KEEP=1` keeps the generated files
//! (for a profiler) instead of removing them.

mod append;
#[path = "../common/mod.rs"]
mod common;
mod resume;
mod sessions;

use append::append;
use resume::resume;
use sessions::sessions;

use std::fs::File;
use std::hint::black_box;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{base_time, file_size, median, ms, peak_rss, repeat, Rng, Scratch};
use revolve_core::record::{
    Context, Failed, Header, Interrupted, Message, Renamed, Resumed, Totals,
};
use revolve_core::{Record, State};
use revolve_store::log::{self, LogWriter};
use revolve_store::paths::{Project, Roots};
use revolve_store::store::Store;
use time::{Duration as TimeDelta, OffsetDateTime};

const MB: f64 = 1024.0 * 1024.0;

fn main() {
    let config = Config::from_env();
    println!(
        "spine bench: scale {}{}",
        config.scale,
        if config.smoke {
            " (smoke run: no --bench argument)"
        } else {
            ""
        }
    );
    let scratch = Scratch::new("spine");
    let mut table = Table::default();
    resume(&config, &scratch, &mut table);
    sessions(&config, &scratch, &mut table);
    append(&config, &scratch, &mut table);
    drop(scratch);
    table.print(&config);
}

/// Sizes, scaled by `REVOLVE_BENCH_SCALE`.
struct Config {
    scale: f64,
    smoke: bool,
}

impl Config {
    fn from_env() -> Config {
        let (scale, smoke) = common::scale();
        Config { scale, smoke }
    }

    fn scaled(&self, full: f64, min: f64) -> f64 {
        (full * self.scale).max(min)
    }

    fn count(&self, full: usize, min: usize) -> usize {
        ((full as f64 * self.scale) as usize).max(min)
    }
}

// --- 1. resume ------------------------------------------------------------
fn header(id: &str, name: &str, named: bool, cwd: &str, started: OffsetDateTime) -> Header {
    Header {
        version: revolve_core::record::FORMAT_VERSION,
        id: id.into(),
        name: Some(name.into()),
        named,
        cwd: cwd.into(),
        project: cwd.into(),
        started,
        model: "gpt-4o-mini".into(),
        window: 128_000,
        provider: "openai".into(),
        continues: None,
        tool_choice: None,
    }
}

fn system_prompt(rng: &mut Rng) -> String {
    let mut s = String::from(
        "You are revolve, a terminal agent. Answer briefly; quote paths \"as is\".\n\n",
    );
    s.push_str(&text(rng, 1_500));
    s
}

/// Prose with code, paths, quotes, backslashes, tabs, newlines, non-ASCII
/// text and the odd control character, about `len` bytes long.
fn text(rng: &mut Rng, len: usize) -> String {
    const WORDS: &[&str] = &[
        "the",
        "session",
        "log",
        "is",
        "append-only",
        "and",
        "each",
        "line",
        "a",
        "record",
        "fold",
        "state",
        "resume",
        "file",
        "error",
        "function",
        "returns",
        "value",
        "we",
        "should",
        "check",
        "whether",
        "test",
        "passes",
        "config",
        "path",
        "struct",
        "field",
        "because",
        "then",
        "with",
        "without",
        "lock",
        "name",
        "turn",
        "tokens",
        "window",
    ];
    const ODD: &[&str] = &[
        "naïve",
        "café",
        "→",
        "—",
        "日本語のテキスト",
        "🙂",
        "Ωmega",
        "\"quoted\"",
        "C:\\Users\\me\\src",
        "`cargo test`",
        "ß",
        "…",
        "\t",
        "\u{1b}[31mred\u{1b}[0m",
        "'single'",
        "a/b/c.rs:42",
    ];
    let mut s = String::with_capacity(len + 32);
    while s.len() < len {
        match rng.below(100) {
            0..=2 => s.push_str("\n\n"),
            3 => s.push_str("\n```rust\nfn main() {\n    println!(\"{}\\n\", \"hi\");\n}\n```\n"),
            4..=9 => s.push_str(ODD[rng.below(ODD.len() as u64) as usize]),
            10..=12 => s.push_str(". "),
            _ => s.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]),
        }
        s.push(' ');
    }
    let mut end = len.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.truncate(end);
    s
}

// --- measuring and reporting ---------------------------------------------

/// `times` must be sorted (as `median` leaves it).
fn percentile(times: &[Duration], p: f64) -> Duration {
    let i = ((times.len() as f64 * p) as usize).min(times.len() - 1);
    times[i]
}

fn min(times: &[Duration]) -> Duration {
    times.iter().copied().min().unwrap_or_default()
}

fn max(times: &[Duration]) -> Duration {
    times.iter().copied().max().unwrap_or_default()
}

/// Resets VmHWM to the current RSS (Linux: `5` into `clear_refs`).
fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// The figures, printed as a table at the end.
#[derive(Default)]
struct Table {
    rows: Vec<(String, String, String, Option<bool>)>,
}

impl Table {
    fn row(&mut self, what: &str, value: String, target: &str, pass: Option<bool>) {
        self.rows
            .push((what.to_owned(), value, target.to_owned(), pass));
    }

    fn print(&self, config: &Config) {
        let w0 = self
            .rows
            .iter()
            .map(|r| r.0.chars().count())
            .max()
            .unwrap_or(0);
        let w1 = self
            .rows
            .iter()
            .map(|r| r.1.chars().count())
            .max()
            .unwrap_or(0);
        let w2 = self
            .rows
            .iter()
            .map(|r| r.2.chars().count())
            .max()
            .unwrap_or(0);
        println!("\n== summary (scale {})", config.scale);
        println!(
            "{:w0$}  {:w1$}  {:w2$}  RESULT",
            "FIGURE", "VALUE", "TARGET"
        );
        for (what, value, target, pass) in &self.rows {
            let result = match pass {
                Some(true) => "PASS",
                Some(false) => "FAIL",
                None => "-",
            };
            println!("{what:w0$}  {value:w1$}  {target:w2$}  {result}");
        }
        if config.scale != 1.0 {
            println!("(scaled run: the targets are for the full sizes)");
        }
    }
}
