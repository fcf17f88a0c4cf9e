//! Finding a session among many (issue 46, item 4): `--continue`,
//! `--resume NAME`, `--name NEW` and `revolve sessions` at 1,000 and
//! 100,000 sessions of one project (target: each ≤ 10 ms at 100,000).
//!
//! Re-run on a quiet machine:
//!
//! ```text
//! cargo build --release && cargo bench --bench index
//! ```
//!
//! `REVOLVE_BENCH_BIN=PATH` times another binary (say, an older build:
//! the before figure); `REVOLVE_BENCH_SCALE=0.1` shrinks the sizes to 100
//! and 10,000. Without a release binary only the library figures
//! (`Store::find`, `Store::names_in_use`, the named listing) are printed.
//! Each figure is the median of 15 runs after a first run that builds the
//! listing cache (printed apart: the cost of a cache built from nothing).
//! Run without `--bench` (as `cargo test --all-targets` does) it is a tiny
//! smoke run. With `uptime` beside it: figures taken on a loaded machine
//! are noise.

#[path = "common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{base_time, median, ms, repeat, Rng, Scratch};
use revolve_core::record::{Header, Message, Totals};
use revolve_core::Record;
use revolve_store::paths::{Project, Roots};
use revolve_store::store::Store;

const RUNS: usize = 15; // not policy: a bench's repeat count

/// A library call timed: what it found, kept from the optimiser.
type Figure<'a> = Box<dyn Fn() -> usize + 'a>;
/// A command timed: its arguments, made for each run.
type Case<'a> = Box<dyn FnMut() -> Vec<String> + 'a>;

fn main() {
    let (scale, smoke) = common::scale();
    println!(
        "index bench: scale {scale}{}",
        if smoke { " (smoke)" } else { "" }
    );
    let bin = std::env::var_os("REVOLVE_BENCH_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/revolve"));
    let bin = bin.exists().then_some(bin);
    if bin.is_none() {
        println!("no release binary: run `cargo build --release` for the command figures");
    }
    let scratch = Scratch::new("index");
    for full in [1_000, 100_000] {
        let count = ((full as f64 * scale) as usize).max(10);
        let root = scratch.path(&format!("n{count}"));
        let env = Env::new(&root);
        let started = Instant::now();
        let last_named = write_sessions(&env.store, count).expect("writing the sessions");
        println!(
            "\n== {count} sessions, written in {} ms",
            started.elapsed().as_millis()
        );
        library(&env.store, count, &last_named);
        if let Some(bin) = &bin {
            commands(&env, bin, count, &last_named);
        }
    }
}

/// The store's own calls, in this process.
fn library(store: &Store, count: usize, name: &str) {
    // The first listing builds the cache.
    let t = Instant::now();
    let listed = store.list().expect("listing").len();
    assert_eq!(listed, count, "every session is listed");
    println!("  first listing (builds the cache): {}", ms(t.elapsed()));
    let figures: [(&str, Figure); 5] = [
        (
            "Store::find(None) (--continue)",
            Box::new(|| store.find(None).map(|p| p.as_os_str().len()).unwrap_or(0)),
        ),
        (
            "Store::find(NAME) (--resume NAME)",
            Box::new(|| {
                store
                    .find(Some(name))
                    .map(|p| p.as_os_str().len())
                    .unwrap_or(0)
            }),
        ),
        (
            "Store::names_in_use, a new name asked (--name NEW)",
            Box::new(|| {
                store
                    .names_in_use()
                    .map(|n| usize::from(n.contains("fresh")))
                    .unwrap_or(0)
            }),
        ),
        (
            "Store::recent (sessions)",
            Box::new(|| {
                let shown = revolve_core::policy::SESSIONS_SHOWN;
                store
                    .recent(shown, &mut Default::default())
                    .map(|r| r.sessions.len())
                    .unwrap_or(0)
            }),
        ),
        (
            "Store::list (sessions --all)",
            Box::new(|| store.list().map(|l| l.len()).unwrap_or(0)),
        ),
    ];
    for (what, f) in figures {
        let t = median(&mut repeat(RUNS, f));
        println!("  {what}, {count} sessions: median {}", ms(t));
    }
}

/// The binary's commands, each a process of its own.
fn commands(env: &Env, bin: &Path, count: usize, name: &str) {
    let script = env.root.join("script.jsonl");
    std::fs::write(&script, "{\"text\":\"ok\"}\n".repeat(RUNS * 4)).expect("a script");
    let script = script.to_string_lossy().into_owned();
    let quit = ["-p", "/quit", "--provider", "scripted", "--script", &script];
    let mut n = 0;
    let mut new_name = || {
        n += 1;
        format!("fresh-{n}")
    };
    let cases: [(&str, Case); 5] = [
        ("revolve -c", Box::new(|| args(&["-c"], &quit))),
        ("revolve -r NAME", Box::new(|| args(&["-r", name], &quit))),
        (
            "revolve --name NEW",
            Box::new(move || args(&["--name", &new_name()], &quit)),
        ),
        ("revolve sessions", Box::new(|| args(&["sessions"], &[]))),
        (
            "revolve sessions --all",
            Box::new(|| args(&["sessions", "--all"], &[])),
        ),
    ];
    for (what, mut make) in cases {
        let first = env.run(bin, &make());
        let mut times: Vec<Duration> = (0..RUNS).map(|_| env.run(bin, &make())).collect();
        println!(
            "  {what}, {count} sessions: median {} (first run {})",
            ms(median(&mut times)),
            ms(first)
        );
    }
}

fn args(front: &[&str], back: &[&str]) -> Vec<String> {
    front.iter().chain(back).map(|s| s.to_string()).collect()
}

/// A temp HOME and XDG roots, and the store the binary sees in `cwd`.
struct Env {
    root: PathBuf,
    cwd: PathBuf,
    store: Store,
}

impl Env {
    fn new(root: &Path) -> Env {
        std::fs::create_dir_all(root).expect("the root");
        let root = root.canonicalize().expect("a canonical root");
        let cwd = root.join("work");
        std::fs::create_dir_all(&cwd).expect("the cwd");
        let store = Store {
            roots: Roots {
                state: root.join("state").join("task-agent"),
                config: root.join("config").join("task-agent"),
            },
            project: Project::from_key(cwd.clone()),
            cwd: cwd.clone(),
        };
        Env { root, cwd, store }
    }

    /// One run's wall time; panics when it fails.
    fn run(&self, bin: &Path, args: &[String]) -> Duration {
        let t = Instant::now();
        let status = Command::new(bin)
            .args(args)
            .current_dir(&self.cwd)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.root.join("home"))
            .env("XDG_STATE_HOME", self.root.join("state"))
            .env("XDG_CONFIG_HOME", self.root.join("config"))
            .env("GIT_CEILING_DIRECTORIES", &self.root)
            .env("REVOLVE_NO_AUTO_REFINE", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("running revolve");
        let took = t.elapsed();
        assert!(status.success(), "revolve {args:?} failed: {status}");
        took
    }
}

/// `count` small sessions (a header, one turn, totals), three in ten
/// named; the name of the last named one.
fn write_sessions(store: &Store, count: usize) -> std::io::Result<String> {
    let mut rng = Rng(0x1de5_0000_0046);
    let dir = store.sessions_dir();
    std::fs::create_dir_all(&dir)?;
    let cwd = store.cwd.to_string_lossy().into_owned();
    let mut last_named = String::new();
    for i in 0..count {
        let at = base_time() + time::Duration::seconds(i as i64);
        let id = format!("20261202-{i:06}-{:06x}", rng.below(1 << 24));
        let named = rng.below(10) < 3;
        let name = if named {
            last_named = format!("task-{i}");
            last_named.clone()
        } else {
            format!("word-{i}")
        };
        let header = Header {
            version: revolve_core::record::FORMAT_VERSION,
            id: id.clone(),
            name: Some(name.clone()),
            named,
            cwd: cwd.clone(),
            project: cwd.clone(),
            started: at,
            model: "m".into(),
            window: 100_000,
            provider: "scripted".into(),
            continues: None,
            tool_choice: None,
        };
        let totals = Totals {
            turns: 1,
            requests: 1,
            at: Some(at),
            name: Some(name),
            named,
            ..Totals::default()
        };
        let lines: Vec<String> = [
            Record::Header(header),
            Record::Message(Message::user(at, "look at the failing test")),
            Record::Message(Message::assistant(at, "It expects the old name.")),
            Record::Totals(totals),
        ]
        .iter()
        .map(|r| r.to_line() + "\n")
        .collect();
        std::fs::write(dir.join(format!("{id}.jsonl")), lines.concat())?;
    }
    Ok(last_named)
}
