//! The end-to-end harness: every test gets a clean world and runs the real
//! `revolve` binary in it.
//!
//! [`TestEnv::new`] makes a fresh directory under [`fast_dir`] (a tmpfs
//! when there is one, else the system temp dir) with
//! `home/`, the XDG roots inside it, and `work/`, the working directory (not
//! a git repository; `GIT_CEILING_DIRECTORIES` keeps git from finding one
//! above). The binary runs with a cleared environment: only `PATH`, those
//! roots, `REVOLVE_NOW` (the pinned clock, which starts at [`NOW`] in every
//! process and advances one second per reading) and `REVOLVE_ID_SEED` (the
//! test's first run 1, its next 2, …, so its session ids are the same every
//! time), so no API key, `REVOLVE_*` setting or user config leaks in. The directory is removed
//! when the env is dropped, unless the test failed (then its path is printed
//! so the logs can be read).
//!
//! What cannot be controlled at the source is redacted by the insta filters
//! of [`TestEnv::filters`] in snapshots: the temp path becomes `[TMP]`
//! (`[TMP_SLUG]` in a project slug). Snapshots show session ids as they
//! are, seeded; [`TestEnv::redact`], for other checks, still turns them
//! into `[ID]`. The one time the pinned clock does not
//! reach, a session file's modification time (the listing's last activity),
//! is pinned by the test that shows it.

#![allow(dead_code)] // the end-to-end binary and the benches each use a part of the harness

pub mod fake;
pub mod pty;
pub mod servers;

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

/// How often [`wait_until`] and the waits on a process look again.
pub const POLL: Duration = Duration::from_millis(5);

/// Waits until `done` holds, looking every [`POLL`], at most `within`;
/// returns whether it held. For a test that waits for a state (a file
/// written, a request received, a process gone) rather than for a time.
pub fn wait_until(within: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(POLL);
    }
}

/// The pinned clock every run starts from.
pub const NOW: &str = "2026-12-02T10:00:00Z";

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_revolve");

/// The repository root (for fixtures).
/// Panics unless `program` runs here: the tests that call it need a host
/// program the CI machine has (git, python3, perl, bash), and say so
/// rather than pass without running.
pub fn require(program: &str) {
    let runs = Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        runs,
        "this test needs `{program}` on PATH: install it (Debian: apt-get install {program})"
    );
}

/// Panics unless this kernel enforces Landlock: for the `#[ignore]`d
/// sandbox tests, which `.ci/run` runs by name.
pub fn require_landlock() {
    assert!(
        TestEnv::landlock(),
        "this test needs a kernel that enforces Landlock (Linux 5.13 or later, with landlock among its LSMs)"
    );
}

/// Panics unless the test runs as root: for the `#[ignore]`d tests that
/// make device nodes or give files to other owners, which `.ci/run` runs
/// by name.
pub fn require_root() {
    assert!(
        rustix::process::geteuid().is_root(),
        "this test needs root (run it with sudo, or in CI as root)"
    );
}

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A fixture file, by its path under `fixtures/`.
pub fn fixture(rel: &str) -> PathBuf {
    repo().join("fixtures").join(rel)
}

/// Where tests build their worlds: a tmpfs when there is one, else the
/// system temp dir. A kill loses nothing the page cache holds, so fsync
/// buys nothing in a test; and on a disk the suite's hundreds of
/// thousands of files made and removed slow every new one (ext4 without a
/// journal searches past recently freed inodes: half the CPU of the
/// 400-file rewind test, growing through a run).
pub fn fast_dir() -> &'static Path {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let shm = Path::new("/dev/shm");
        let probe = tempfile::Builder::new()
            .prefix("revolve-probe-")
            .tempdir_in(shm);
        if probe.is_ok_and(|probe| probe.close().is_ok()) {
            shm.to_path_buf()
        } else {
            std::env::temp_dir()
        }
    })
}

/// One test's world: a temp dir with a home, XDG roots and a working
/// directory.
pub struct TestEnv {
    /// The temp dir itself: removed on drop, kept when the test failed.
    dir: Option<tempfile::TempDir>,
    /// The temp dir, canonical (the binary canonicalizes its cwd).
    pub root: PathBuf,
    /// The working directory the binary runs in.
    pub cwd: PathBuf,
    /// `$HOME`.
    pub home: PathBuf,
    /// `$XDG_STATE_HOME`.
    pub state: PathBuf,
    /// The runs [`TestEnv::command`] made so far: each gets the next
    /// `REVOLVE_ID_SEED`, so a test's session ids are the same every time
    /// and two runs of one test never make the same id.
    runs: std::sync::atomic::AtomicU64,
}

impl TestEnv {
    /// A fresh world under [`fast_dir`]; `name` only makes the directory
    /// easy to recognise.
    pub fn new(name: &str) -> TestEnv {
        TestEnv::new_in(fast_dir(), name)
    }

    /// A fresh world under `parent`.
    pub fn new_in(parent: &Path, name: &str) -> TestEnv {
        let dir = tempfile::Builder::new()
            .prefix(&format!("revolve-e2e-{name}-"))
            .tempdir_in(parent)
            .expect("create the test dir");
        let root = dir.path().canonicalize().expect("canonical test dir");
        let home = root.join("home");
        let state = home.join(".local/state");
        let cwd = root.join("work");
        for dir in [&home, &state, &cwd] {
            std::fs::create_dir_all(dir).expect("create a test dir");
        }
        TestEnv {
            dir: Some(dir),
            root,
            cwd,
            home,
            state,
            runs: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Gives the signals tests send their default action in this process,
    /// once, so every child starts with it, as a user's shell starts a
    /// command in the foreground: a test run started in the background
    /// (where a shell ignores SIGINT and SIGQUIT, and `nohup` SIGHUP) would
    /// otherwise pass the ignoring on, and a revolve that rightly keeps an
    /// ignored Ctrl-C ignored would fail the tests about Ctrl-C.
    ///
    /// Done here rather than in a `pre_exec` hook: a hook makes the
    /// standard library fork this whole, many-threaded test process for
    /// every run instead of spawning with `posix_spawn`: copying its page
    /// tables thousands of times was half the end-to-end suite's system
    /// time (57 s against 27 s) and a quarter of its wall time.
    fn default_signals() {
        static DONE: std::sync::Once = std::sync::Once::new();
        DONE.call_once(|| {
            use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
            let default = SigAction::new(SigHandler::SigDfl, SaFlags::empty(), SigSet::empty());
            for signum in [
                Signal::SIGHUP,
                Signal::SIGINT,
                Signal::SIGQUIT,
                Signal::SIGTERM,
            ] {
                // SAFETY: the default disposition installs no handler, and
                // this test process sets no handler of its own for these.
                unsafe { sigaction(signum, &default) }.expect("reset a signal's disposition");
            }
        });
    }

    /// The `PATH` runs get: this process's, with the directory of the
    /// interpreter `python3` stands for put first when `python3` is a
    /// version manager's shim (pyenv's starts a dozen shell scripts before
    /// Python, about 70 ms a start on the machines here), so the tests'
    /// MCP servers and scripts start Python itself. Every other program is
    /// found as before.
    fn path() -> &'static std::ffi::OsStr {
        static PATH: std::sync::OnceLock<std::ffi::OsString> = std::sync::OnceLock::new();
        PATH.get_or_init(|| {
            let inherited = std::env::var_os("PATH").unwrap_or_default();
            let real = Command::new("python3")
                .args(["-c", "import sys; print(sys.executable)"])
                .stdin(Stdio::null())
                .stderr(Stdio::null())
                .output()
                .ok()
                .filter(|out| out.status.success())
                .map(|out| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()));
            let Some(dir) = real.as_deref().and_then(Path::parent) else {
                return inherited;
            };
            let found = std::env::split_paths(&inherited).find(|d| d.join("python3").is_file());
            if !dir.join("python3").is_file() || found.as_deref() == Some(dir) {
                // No shim, or none in front of it: PATH stays as it is.
                return inherited;
            }
            let mut dirs = vec![dir.to_path_buf()];
            dirs.extend(std::env::split_paths(&inherited));
            std::env::join_paths(dirs).unwrap_or(inherited)
        })
    }

    /// Runs `git` in the working directory with this world's home and no
    /// system config, stopping at the world's root; whether it succeeded.
    pub fn git(&self, args: &[&str]) -> bool {
        Command::new("git")
            .args(args)
            .current_dir(&self.cwd)
            .env("HOME", &self.home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CEILING_DIRECTORIES", &self.root)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    /// Whether this kernel enforces Landlock file rules, as revolve probes it;
    /// said once on stderr when not.
    pub fn landlock() -> bool {
        static FOUND: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *FOUND.get_or_init(|| {
            let files = revolve_tools::sandbox::probe().files;
            if !files {
                eprintln!(
                    "this kernel enforces no Landlock: the tests run shell commands with \
                 REVOLVE_SANDBOX=off, and the sandbox tests are skipped"
                );
            }
            files
        })
    }

    /// The `REVOLVE_ID_SEED` of the next run: 1 for a test's first run,
    /// then 2, and so on.
    fn next_seed(&self) -> u64 {
        self.runs
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            .wrapping_add(1)
    }

    /// The binary with a clean environment, in the working directory.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.args(args)
            .current_dir(&self.cwd)
            .env_clear()
            .env("PATH", TestEnv::path())
            .env("HOME", &self.home)
            .env("XDG_STATE_HOME", &self.state)
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .env("XDG_DATA_HOME", self.home.join(".local/share"))
            .env("XDG_CACHE_HOME", self.home.join(".cache"))
            .env("GIT_CEILING_DIRECTORIES", &self.root)
            .env("REVOLVE_NOW", NOW)
            // Ids seeded as the clock is pinned, one seed a run (a test's
            // own REVOLVE_ID_SEED wins).
            .env("REVOLVE_ID_SEED", self.next_seed().to_string())
            // Failures fail at once unless a test is about retrying; such a
            // test sets REVOLVE_RETRIES itself (later `env` calls win).
            .env("REVOLVE_RETRIES", "0")
            // Nor is the memory refined on its own unless a test is about
            // that (it sets REVOLVE_NO_AUTO_REFINE=false).
            .env("REVOLVE_NO_AUTO_REFINE", "true");
        if !TestEnv::landlock() {
            // Without a terminal, commands where nothing can be enforced
            // are refused (the product's rule): said once, and the tests
            // of other things run theirs unsandboxed (a test's own
            // --sandbox flag still wins).
            cmd.env("REVOLVE_SANDBOX", "off");
        }
        TestEnv::default_signals();
        cmd
    }

    /// Runs the binary with `args`, feeding `stdin`, and waits for it.
    pub fn run(&self, args: &[&str], stdin: &str) -> Run {
        self.run_env(args, stdin, &[])
    }

    /// [`TestEnv::run`] with extra environment variables.
    pub fn run_env(&self, args: &[&str], stdin: &str, vars: &[(&str, &str)]) -> Run {
        self.run_bytes(args, stdin.as_bytes(), vars)
    }

    /// [`TestEnv::run_env`] with stdin as bytes (which need not be UTF-8).
    pub fn run_bytes(&self, args: &[&str], stdin: &[u8], vars: &[(&str, &str)]) -> Run {
        let mut cmd = self.command(args);
        cmd.envs(vars.iter().copied());
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("start revolve");
        let mut pipe = child.stdin.take().expect("stdin is piped");
        let input = stdin.to_vec();
        // A writer thread, so a child that answers before reading all of its
        // input can never deadlock against us.
        let writer = std::thread::spawn(move || {
            // The child may exit without reading (a usage error): not ours
            // to report.
            let _ = pipe.write_all(&input);
        });
        let output = child.wait_with_output().expect("wait for revolve");
        writer.join().expect("stdin writer");
        Run {
            code: output.status.code(),
            signal: std::os::unix::process::ExitStatusExt::signal(&output.status),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// Runs the binary with `args` and no input; the run must succeed.
    pub fn ok(&self, args: &[&str]) -> Run {
        let run = self.run(args, "");
        assert_eq!(run.code, Some(0), "revolve {args:?} failed: {run:?}");
        run
    }

    /// Every session file (`$XDG_STATE_HOME/task-agent/projects/*/sessions/*.jsonl`),
    /// sorted by path.
    pub fn session_files(&self) -> Vec<PathBuf> {
        let projects = self.state.join("task-agent/projects");
        let mut out = Vec::new();
        for project in read_dir(&projects) {
            for file in read_dir(&project.join("sessions")) {
                if file.extension().is_some_and(|e| e == "jsonl") {
                    out.push(file);
                }
            }
        }
        out.sort();
        out
    }

    /// The one session file there must be.
    pub fn only_session(&self) -> PathBuf {
        let files = self.session_files();
        assert_eq!(files.len(), 1, "expected exactly one session: {files:?}");
        files.into_iter().next().expect("one file")
    }

    /// The temp path as `[TMP]`, its project slug (`-tmp-revolve-e2e-…`)
    /// as `[TMP_SLUG]`, and session ids as `[ID]`.
    pub fn redact(&self, text: &str) -> String {
        redact_ids(&self.redact_paths(text))
    }

    /// insta filters for what cannot be controlled at the source: the temp
    /// path as `[TMP]`, its project slug as `[TMP_SLUG]`, for
    /// `insta::with_settings!({filters => env.filters()}, { .. })`. Session
    /// ids are not redacted: `REVOLVE_ID_SEED` makes them the same every
    /// run. The patterns are leaked: a few strings per test, and `'static`
    /// is what lets the macro take them as they are.
    pub fn filters(&self) -> Vec<(&'static str, &'static str)> {
        let root = self.root.to_string_lossy();
        let slug = root.replace('/', "-");
        let leak = |text: String| -> &'static str { Box::leak(text.into_boxed_str()) };
        vec![
            (leak(regex_escape(&root)), "[TMP]"),
            (leak(regex_escape(&slug)), "[TMP_SLUG]"),
        ]
    }

    /// [`TestEnv::filters`] and times as `[TIME]` (`2026-12-02 10:00
    /// UTC`), for what a clock that is not faked stamps.
    pub fn filters_and_times(&self) -> Vec<(&'static str, &'static str)> {
        let mut filters = self.filters();
        filters.push(TIME_FILTER);
        filters
    }

    /// The startup note a first start prints on stderr, in every mode: all
    /// the builtin memory documents seeded into the global memory under the
    /// config root (the test dir holds no `.task-agent/` workspace), then
    /// the builtin skills into the global skill folder.
    pub fn seeded_note(&self) -> String {
        let memory: Vec<&str> = revolve_core::memory::BUILTIN
            .iter()
            .map(|(name, _)| *name)
            .collect();
        let skills: Vec<&str> = revolve_core::skills::BUILTIN
            .iter()
            .map(|(name, _)| *name)
            .collect();
        let config = self.home.join(".config/task-agent");
        format!(
            "seeded {} into {}\nseeded {} into {}\n",
            memory.join(", "),
            config.join("memory").display(),
            skills.join(", "),
            config.join("skills").display()
        )
    }

    fn redact_paths(&self, text: &str) -> String {
        let root = self.root.to_string_lossy();
        text.replace(&*root, "[TMP]")
            .replace(&root.replace('/', "-"), "[TMP_SLUG]")
    }
}

impl Drop for TestEnv {
    fn drop(&mut self) {
        // A passing test's files go with its `TempDir`; a failing test's
        // stay, so the logs can be read.
        if let Some(dir) = self.dir.take().filter(|_| std::thread::panicking()) {
            eprintln!("test files kept in {}", dir.keep().display());
        }
    }
}

fn read_dir(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

/// What one run of the binary gave.
#[derive(Debug)]
pub struct Run {
    /// The exit code; `None` when a signal ended the process.
    pub code: Option<i32>,
    /// The signal that ended the process, if one did.
    pub signal: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// The stderr lines.
    pub fn stderr_lines(&self) -> Vec<&str> {
        self.stderr.lines().collect()
    }

    /// stderr past the startup note of a first start, which must open it
    /// ([`TestEnv::seeded_note`]): what the run said besides.
    pub fn stderr_past_seeding(&self, env: &TestEnv) -> &str {
        let note = env.seeded_note();
        self.stderr
            .strip_prefix(&note)
            .unwrap_or_else(|| panic!("stderr does not open with {note:?}: {self:?}"))
    }

    /// [`Run::stderr_past_seeding`], line by line.
    pub fn stderr_lines_past_seeding(&self, env: &TestEnv) -> Vec<&str> {
        self.stderr_past_seeding(env).lines().collect()
    }
}

/// A file's lines, without their newlines (a torn last line included).
pub fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .expect("read the log")
        .lines()
        .map(str::to_owned)
        .collect()
}

/// A log's lines as JSON values; every line must parse.
pub fn records(path: &Path) -> Vec<Value> {
    lines(path)
        .iter()
        .enumerate()
        .map(|(i, l)| {
            serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("line {} is not JSON: {e}: {l}", i + 1))
        })
        .collect()
}

/// The `"type"` of each record.
pub fn kinds(records: &[Value]) -> Vec<String> {
    records
        .iter()
        .map(|r| r["type"].as_str().unwrap_or("?").to_owned())
        .collect()
}

/// The `(role, content)` pairs of the message records.
pub fn messages(records: &[Value]) -> Vec<(String, String)> {
    records
        .iter()
        .filter(|r| r["type"] == "message")
        .map(|r| {
            (
                r["role"].as_str().unwrap_or("?").to_owned(),
                r["content"].as_str().unwrap_or("?").to_owned(),
            )
        })
        .collect()
}

/// The `(tool_call_id, content)` of the log's tool results.
pub fn tool_results(records: &[Value]) -> Vec<(String, String)> {
    records
        .iter()
        .filter(|r| r["type"] == "message" && r["role"] == "tool")
        .map(|r| {
            (
                r["tool_call_id"].as_str().unwrap_or("?").to_owned(),
                r["content"].as_str().unwrap_or("?").to_owned(),
            )
        })
        .collect()
}

/// The `(role, content)` pairs of a request body's `messages`, the system
/// prompt left out.
pub fn request_messages(body: &str) -> Vec<(String, String)> {
    let body: Value = serde_json::from_str(body).expect("request bodies are JSON");
    body["messages"]
        .as_array()
        .expect("a messages list")
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| {
            (
                m["role"].as_str().unwrap_or("?").to_owned(),
                m["content"].as_str().unwrap_or("?").to_owned(),
            )
        })
        .collect()
}

/// `(role, content)` from string slices, for comparing with [`messages`].
pub fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(r, c)| ((*r).to_owned(), (*c).to_owned()))
        .collect()
}

/// Session ids (`20261202-100000-1a2b3c`) as `[ID]`.
pub fn redact_ids(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        if is_id(&bytes[i..]) {
            out.push_str("[ID]");
            i += ID_LEN;
        } else {
            let c = text[i..].chars().next().expect("in bounds");
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

const ID_LEN: usize = "20261202-100000-1a2b3c".len();

/// A time as the transcripts and histories show it, `2026-12-02 10:00
/// UTC`, as `[TIME]`.
const TIME_FILTER: (&str, &str) = (r"\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC", "[TIME]");

/// `text` as a regex that matches it literally (for a test's own insta
/// filters).
pub fn regex_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn is_id(b: &[u8]) -> bool {
    b.len() >= ID_LEN
        && b[..8].iter().all(u8::is_ascii_digit)
        && b[8] == b'-'
        && b[9..15].iter().all(u8::is_ascii_digit)
        && b[15] == b'-'
        && b[16..22]
            .iter()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
        && !b.get(22).is_some_and(|c| c.is_ascii_hexdigit())
}

/// A child whose stdout is read as it arrives, for tests that act on a
/// running process (Ctrl-C).
pub struct Running {
    pub child: Child,
    stdin: Option<ChildStdin>,
    stdout: mpsc::Receiver<Vec<u8>>,
    seen: Vec<u8>,
    stderr: mpsc::Receiver<Vec<u8>>,
    seen_err: Vec<u8>,
}

impl TestEnv {
    /// Starts the binary with `args`, writes `stdin` and closes it, and
    /// reads its output in the background.
    pub fn spawn(&self, args: &[&str], stdin: &str) -> Running {
        let mut running = self.spawn_open(args, stdin);
        running.close_stdin();
        running
    }

    /// Like [`TestEnv::spawn`], but stdin stays open after `stdin` is
    /// written: the binary waits for more lines.
    pub fn spawn_open(&self, args: &[&str], stdin: &str) -> Running {
        self.spawn_open_env(args, stdin, &[])
    }

    /// [`TestEnv::spawn_open`] with extra environment variables, which win
    /// over the harness's own (as with [`TestEnv::run_env`]).
    pub fn spawn_open_env(&self, args: &[&str], stdin: &str, vars: &[(&str, &str)]) -> Running {
        let mut child = self
            .command(args)
            .envs(vars.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start revolve");
        let mut pipe = child.stdin.take().expect("stdin is piped");
        pipe.write_all(stdin.as_bytes()).expect("write stdin");
        let stdout = chunks(child.stdout.take().expect("stdout is piped"));
        let stderr = chunks(child.stderr.take().expect("stderr is piped"));
        Running {
            child,
            stdin: Some(pipe),
            stdout,
            seen: Vec::new(),
            stderr,
            seen_err: Vec::new(),
        }
    }
}

impl Running {
    /// Writes more input (stdin must still be open).
    pub fn write(&mut self, text: &str) {
        self.stdin
            .as_mut()
            .expect("stdin is open")
            .write_all(text.as_bytes())
            .expect("write stdin");
    }

    /// Writes one more line to stdin (which must still be open).
    pub fn type_line(&mut self, line: &str) {
        let pipe = self.stdin.as_mut().expect("stdin is still open");
        pipe.write_all(format!("{line}\n").as_bytes())
            .expect("write stdin");
    }

    /// Closes stdin: no more lines.
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Waits until stdout holds `text`, at most `within`; returns whether it
    /// does.
    pub fn wait_stdout(&mut self, text: &str, within: Duration) -> bool {
        wait_output(&self.stdout, &mut self.seen, text, within)
    }

    /// Waits until stderr holds `text`, at most `within`; returns whether it
    /// does.
    pub fn wait_stderr(&mut self, text: &str, within: Duration) -> bool {
        wait_output(&self.stderr, &mut self.seen_err, text, within)
    }

    /// What stderr held so far (all of it, after a
    /// [`Running::wait_stderr`] that returned true).
    pub fn stderr_seen(&self) -> String {
        String::from_utf8_lossy(&self.seen_err).into_owned()
    }

    /// Sends a signal (`INT`, `KILL`, …) with kill(1).
    pub fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .arg(format!("-{name}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{name} failed");
    }

    /// Waits for the process to end, at most `within` (then kills it and
    /// fails), and collects the rest of its output.
    pub fn finish(mut self, within: Duration) -> Run {
        let deadline = Instant::now() + within;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("poll the child") {
                break status;
            }
            if Instant::now() >= deadline {
                self.child.kill().ok();
                self.child.wait().ok();
                panic!("revolve did not exit within {within:?}");
            }
            std::thread::sleep(POLL);
        };
        while let Ok(bytes) = self.stdout.recv_timeout(Duration::from_secs(5)) {
            self.seen.extend(bytes);
        }
        while let Ok(bytes) = self.stderr.recv_timeout(Duration::from_secs(5)) {
            self.seen_err.extend(bytes);
        }
        Run {
            code: status.code(),
            signal: std::os::unix::process::ExitStatusExt::signal(&status),
            stdout: String::from_utf8_lossy(&self.seen).into_owned(),
            stderr: String::from_utf8_lossy(&self.seen_err).into_owned(),
        }
    }
}

impl TestEnv {
    /// [`TestEnv::spawn`] with extra environment variables, which win over
    /// the harness's own (as with [`TestEnv::run_env`]).
    pub fn spawn_env(&self, args: &[&str], stdin: &str, vars: &[(&str, &str)]) -> Running {
        let mut running = self.spawn_open_env(args, stdin, vars);
        running.close_stdin();
        running
    }
}

/// The binary on a pseudo-terminal ([`pty`]), in the test's clean
/// environment: what is typed goes to its terminal, and what the terminal
/// shows (stdout and stderr together) is collected.
pub struct Terminal {
    child: Child,
    keys: File,
    output: mpsc::Receiver<Vec<u8>>,
    /// Everything the terminal showed so far.
    pub seen: Vec<u8>,
    /// How much had been shown when keys were last typed.
    mark: usize,
}

impl TestEnv {
    /// Starts `revolve ARGS` on a terminal `columns` wide and 24 rows
    /// high, with extra environment variables.
    pub fn terminal(&self, args: &[&str], columns: u16, vars: &[(&str, &str)]) -> Terminal {
        let mut cmd = self.command(args);
        cmd.envs(vars.iter().copied());
        let (child, master) = pty::spawn(&mut cmd, columns, 24).expect("start revolve on a pty");
        let keys = master.try_clone().expect("a second handle on the pty");
        Terminal {
            child,
            keys,
            output: chunks(master),
            seen: Vec::new(),
            mark: 0,
        }
    }
}

impl Terminal {
    /// What the terminal showed so far, as text.
    pub fn screen(&self) -> String {
        String::from_utf8_lossy(&self.seen).into_owned()
    }

    /// Waits until the terminal showed `text` at least `n` times, at most
    /// `within`; panics with the screen otherwise.
    pub fn wait_for_n(&mut self, text: &str, n: usize, within: Duration) {
        let deadline = Instant::now() + within;
        while self.screen().matches(text).count() < n {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.output.recv_timeout(left) {
                Ok(bytes) => self.seen.extend(bytes),
                Err(_) => {
                    self.child.kill().ok();
                    panic!("no {text:?} (×{n}) in the terminal: {}", self.screen());
                }
            }
        }
    }

    /// Waits until the terminal showed `text`.
    pub fn wait_for(&mut self, text: &str, within: Duration) {
        self.wait_for_n(text, 1, within);
    }

    /// Waits until `done` holds of what the terminal showed since keys were
    /// last typed (and of whatever else it looks at), at most `within`;
    /// panics with the screen otherwise.
    pub fn wait_until(&mut self, within: Duration, what: &str, mut done: impl FnMut(&str) -> bool) {
        let deadline = Instant::now() + within;
        loop {
            while let Ok(bytes) = self.output.try_recv() {
                self.seen.extend(bytes);
            }
            if done(&String::from_utf8_lossy(&self.seen[self.mark..])) {
                return;
            }
            if Instant::now() >= deadline {
                self.child.kill().ok();
                panic!("{what}: not within {within:?}: {:?}", self.screen());
            }
            // More output, or a moment for what else `done` looks at.
            if let Ok(bytes) = self.output.recv_timeout(POLL) {
                self.seen.extend(bytes);
            }
        }
    }

    /// Waits until the terminal showed `text` since keys were last typed.
    pub fn wait_for_next(&mut self, text: &str, within: Duration) {
        let deadline = Instant::now() + within;
        while !String::from_utf8_lossy(&self.seen[self.mark..]).contains(text) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.output.recv_timeout(left) {
                Ok(bytes) => self.seen.extend(bytes),
                Err(_) => {
                    self.child.kill().ok();
                    panic!("{text:?} never showed: {:?}", self.screen());
                }
            }
        }
    }

    /// Types `keys` (`\r` is Enter, `\x04` Ctrl-D).
    pub fn type_keys(&mut self, keys: &str) {
        self.mark = self.seen.len();
        self.keys
            .write_all(keys.as_bytes())
            .expect("type into the terminal");
    }

    /// Types Ctrl-D (the end of input, as script(1) did when its input
    /// closed), waits for the end (at most `within`), and returns whether it
    /// succeeded with everything the terminal showed.
    pub fn finish(mut self, within: Duration) -> (bool, String) {
        // A run that already ended has no terminal left to type into.
        let _ = self.keys.write_all(b"\x04");
        let deadline = Instant::now() + within;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("poll revolve") {
                break status;
            }
            if Instant::now() >= deadline {
                self.child.kill().ok();
                self.child.wait().ok();
                panic!("revolve on a terminal did not exit within {within:?}");
            }
            std::thread::sleep(POLL);
        };
        while let Ok(bytes) = self.output.recv_timeout(Duration::from_secs(5)) {
            self.seen.extend(bytes);
        }
        (status.success(), self.screen())
    }
}

/// Whether a terminal's screen ends at an empty prompt (`› `, then only
/// the line editor's cursor moves and mode switches): the line editor
/// waits for a line.
pub fn at_prompt(screen: &str) -> bool {
    let mut rest = screen;
    loop {
        rest = rest.trim_end_matches('\r');
        let Some(esc) = rest.rfind("\x1b[") else {
            break;
        };
        let tail = &rest[esc + 2..];
        let Some((last, params)) = tail.char_indices().last().map(|(i, c)| (c, &tail[..i])) else {
            break;
        };
        let csi = last.is_ascii_alphabetic()
            && params
                .chars()
                .all(|c| c.is_ascii_digit() || c == ';' || c == '?');
        if !csi {
            break;
        }
        rest = &rest[..esc];
    }
    rest.ends_with("› ")
}

/// Reads `output` into `seen` until it holds `text`, at most `within`;
/// returns whether it does.
fn wait_output(
    output: &mpsc::Receiver<Vec<u8>>,
    seen: &mut Vec<u8>,
    text: &str,
    within: Duration,
) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if String::from_utf8_lossy(seen).contains(text) {
            return true;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        match output.recv_timeout(left) {
            Ok(bytes) => seen.extend(bytes),
            Err(_) => return false,
        }
    }
}

/// What `out` produces, chunk by chunk, read on a thread of its own.
fn chunks(mut out: impl Read + Send + 'static) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = out.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    rx
}

/// Reaps the child `pid` if it has ended (`wait4` with `WNOHANG`): its exit
/// status and its peak resident memory in KiB (`ru_maxrss`, the kernel's
/// own high-water mark for that process alone, unlike
/// `getrusage(RUSAGE_CHILDREN)`, which is the largest of every child waited
/// for). `None` while it runs. std's `Child` offers no resource usage, nor
/// nix a `wait4`: this is the libc crate's binding, which nix re-exports.
#[cfg(unix)]
pub fn reap_measured(pid: u32) -> Option<(std::process::ExitStatus, u64)> {
    use nix::libc;
    use std::os::unix::process::ExitStatusExt;
    let mut status = 0;
    // SAFETY: an all-zero `rusage` is a valid value (plain integers).
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `wait4` writes only the two out-parameters, which are valid
    // for writes and live across the call.
    let r = unsafe { libc::wait4(pid as libc::pid_t, &mut status, libc::WNOHANG, &mut usage) };
    assert!(r >= 0, "wait4: {}", std::io::Error::last_os_error());
    if r == 0 {
        return None;
    }
    // `ru_maxrss` is in kilobytes on Linux, in bytes on macOS.
    let maxrss = u64::try_from(usage.ru_maxrss).unwrap_or(0);
    #[cfg(target_os = "macos")]
    let maxrss = maxrss / 1024;
    Some((std::process::ExitStatus::from_raw(status), maxrss))
}

/// This process's own peak resident memory so far, in KiB
/// (`getrusage(RUSAGE_SELF)`).
#[cfg(unix)]
pub fn own_peak_kib() -> u64 {
    use nix::sys::resource::{getrusage, UsageWho};
    let usage = getrusage(UsageWho::RUSAGE_SELF).expect("getrusage");
    let maxrss = u64::try_from(usage.max_rss()).unwrap_or(0);
    // Kilobytes on Linux, bytes on macOS.
    #[cfg(target_os = "macos")]
    let maxrss = maxrss / 1024;
    maxrss
}
