//! Speed and memory at scale, measured on the release binary as a user runs
//! it (a child process per run; wall time from spawn to exit, peak RSS from
//! `wait4`'s `ru_maxrss`):
//!
//! 1. **Big logs**: `replay --check`, `replay` (transcript to /dev/null),
//!    `replay --requests` (on a chain of 100 MB) and a resume
//!    (`-r FILE -p /quit`) of
//!    * single session files of 10 MB, 100 MB and 1 GB whose big tool
//!      results were pruned in place now and then (`pruned` records of
//!      compactions whose notes never came), so the live history is a few
//!      percent of the file;
//!    * a long session of about 1 GB that compacted again and again: a chain
//!      of ~2 MB files, each ending with `continued` (its live history is
//!      one file's worth).
//! 2. **Many sessions**: `revolve sessions` and `revolve sessions --all` in a
//!    project of 100,000 session files (warm cache), and again right after
//!    one session's file changed.
//! 3. **Startup**: spawn to the first model request reaching a local server
//!    (`-p hi`, and `-p hi --name N`, which checks the name against every
//!    session's), and spawn to the REPL's first prompt on a pseudo-terminal
//!    (it allocates a generated name), with 10,000 sessions and 100 memory
//!    files.
//!
//! 4. **The window**: a resume of a 100 MB session whose history is all
//!    live (plain turns, nothing pruned) followed by one turn, against a
//!    fake server that enforces a 128k-token context and answers at once:
//!    the compaction that must come first (in pieces), the number of
//!    requests, the largest, whether any was refused, wall time and peak
//!    RSS.
//! 5. **The whole history in one request**: the same session resumed with
//!    `--window 100000000`, so one request carries all of it (issue 29:
//!    <= 0.5 s, peak RSS <= 1.5x the live history).
//!
//! 6. **Export**: `revolve export --format md|html` of a 100 MB session
//!    beside `replay --check` of it (time and peak RSS; the bound is 2x
//!    both), `REVOLVE_BENCH_ONLY=export`.
//!
//! `cargo build --release && cargo bench --bench scale`. Sizes scale with
//! `REVOLVE_BENCH_SCALE` (`0.1` for a quick run); `REVOLVE_BENCH_ONLY=logs`,
//! `sessions` or `startup` runs one part; `REVOLVE_BENCH_BIN` measures
//! another binary (to compare before and after a change). Without
//! `--bench` (`cargo test --all-targets`) it is a tiny smoke run, and it
//! skips everything when there is no release binary. Files are generated
//! under the temp dir and removed afterwards (`REVOLVE_BENCH_KEEP=1` keeps
//! them). The bench process itself stays small: a child's `ru_maxrss`
//! starts from its parent's resident size at spawn on Linux.

#[path = "../common/mod.rs"]
mod common;
mod env;
mod export;
mod logs;
mod sessions;
mod startup;
mod window;

/// The tests' pseudo-terminal helper (rustix; std has none).
#[path = "../../tests/common/pty.rs"]
mod pty;

use env::*;
use export::export;
use logs::logs;
use sessions::sessions;
use startup::startup;
use window::{whole, window};

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{base_time, file_size, median, ms, peak_rss, repeat, Rng, Scratch};
use revolve_core::compact;
use revolve_core::record::{
    Compacted, Compacting, Context, Continued, Failed, Header, Message, Pruned, ToolCall, Totals,
};
use revolve_core::Record;
use revolve_store::log::LogWriter;
use revolve_store::paths::{Project, Roots};
use time::{Duration as TimeDelta, OffsetDateTime};

const MB: u64 = 1024 * 1024;
/// Big tool results not yet pruned that make a compaction prune them (a
/// context of ~40k tokens).
const PRUNE_AT: usize = 150 * 1024;

fn main() {
    let config = Config::from_env();
    println!(
        "scale bench: scale {}{}",
        config.scale,
        if config.smoke { " (smoke run)" } else { "" }
    );
    let Some(bin) = config.bin.clone() else {
        println!("no release binary: run `cargo build --release` first; nothing measured");
        return;
    };
    println!("binary: {}", bin.display());
    println!("load: {}", load());
    let scratch = Scratch::new("scale");
    let mut table = Table::default();
    if config.runs("logs") {
        logs(&config, &bin, &scratch, &mut table);
    }
    if config.runs("sessions") {
        sessions(&config, &bin, &scratch, &mut table);
    }
    if config.runs("startup") {
        startup(&config, &bin, &scratch, &mut table);
    }
    if config.runs("window") {
        window(&config, &bin, &scratch, &mut table);
    }
    if config.runs("whole") {
        whole(&config, &bin, &scratch, &mut table);
    }
    if config.runs("export") {
        export(&config, &bin, &scratch, &mut table);
    }
    drop(scratch);
    table.print(&config);
    println!("load: {}", load());
}

struct Config {
    scale: f64,
    smoke: bool,
    only: Option<String>,
    bin: Option<PathBuf>,
}

impl Config {
    fn from_env() -> Config {
        let (scale, smoke) = common::scale();
        let bin = std::env::var_os("REVOLVE_BENCH_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/revolve")
            });
        Config {
            scale,
            smoke,
            only: std::env::var("REVOLVE_BENCH_ONLY").ok(),
            bin: bin.is_file().then_some(bin),
        }
    }

    fn runs(&self, part: &str) -> bool {
        self.only.as_deref().is_none_or(|o| o == part)
    }

    fn bytes(&self, full: u64) -> u64 {
        ((full as f64 * self.scale) as u64).max(64 * 1024)
    }

    fn count(&self, full: usize) -> usize {
        ((full as f64 * self.scale) as usize).max(10)
    }

    /// Timed runs of one measurement: fewer for the slow ones.
    fn repeats(&self, slow: bool) -> usize {
        match (self.smoke, slow) {
            (true, _) => 1,
            (false, true) => 3,
            (false, false) => 11,
        }
    }
}

// --- 1. big logs ----------------------------------------------------------
fn header(id: &str, name: Option<&str>, started: OffsetDateTime) -> Header {
    Header {
        version: revolve_core::record::FORMAT_VERSION,
        id: id.into(),
        name: name.map(str::to_owned),
        named: name.is_some(),
        cwd: "/home/me/src/app".into(),
        project: "/home/me/src/app".into(),
        started,
        model: "gpt-4o-mini".into(),
        window: 128_000,
        provider: "openai".into(),
        continues: None,
        tool_choice: None,
    }
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Pre-generated prose (code, quotes, escapes, non-ASCII text), sliced at
/// random offsets: generating a gigabyte word by word would dominate the
/// bench.
struct Texts {
    pool: String,
}

impl Texts {
    fn new(rng: &mut Rng) -> Texts {
        const WORDS: &[&str] = &[
            "the",
            "session",
            "log",
            "is",
            "append-only",
            "and",
            "each",
            "line",
            "record",
            "fold",
            "state",
            "resume",
            "file",
            "error",
            "returns",
            "value",
            "check",
            "test",
            "passes",
            "naïve",
            "café",
            "→",
            "日本語",
            "🙂",
            "\"quoted\"",
            "C:\\Users\\me",
            "`cargo test`",
            "\t",
            "\u{1b}[31mred\u{1b}[0m",
            "a/b/c.rs:42",
            "\n",
            "\n\n",
            "{",
            "}",
        ];
        let mut pool = String::with_capacity(256 * 1024);
        while pool.len() < 256 * 1024 {
            pool.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
            pool.push(' ');
        }
        Texts { pool }
    }

    /// About `len` bytes (at most the pool), from a random offset.
    fn pick(&self, rng: &mut Rng, len: usize) -> &str {
        let len = len.min(self.pool.len() / 2);
        let mut start = rng.below((self.pool.len() - len) as u64) as usize;
        while !self.pool.is_char_boundary(start) {
            start -= 1;
        }
        let mut end = start + len;
        while !self.pool.is_char_boundary(end) {
            end -= 1;
        }
        &self.pool[start..end]
    }
}

// --- reporting ------------------------------------------------------------

fn mb(kb: u64) -> String {
    format!("{:.1} MB", kb as f64 / 1024.0)
}

/// The load average, as `uptime` shows it.
fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

#[derive(Default)]
struct Table {
    rows: Vec<(String, String, String)>,
}

impl Table {
    fn row(&mut self, what: &str, time: String, rss: String) {
        self.rows.push((what.to_owned(), time, rss));
    }

    fn print(&self, config: &Config) {
        let w = self
            .rows
            .iter()
            .map(|r| r.0.chars().count())
            .max()
            .unwrap_or(0);
        println!("\n== summary (scale {}; medians)", config.scale);
        println!("{:w$}  {:>10}  {:>10}", "FIGURE", "TIME", "PEAK RSS");
        for (what, time, rss) in &self.rows {
            println!("{what:w$}  {time:>10}  {rss:>10}");
        }
    }
}
