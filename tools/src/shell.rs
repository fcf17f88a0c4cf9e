//! `shell`: `sh -c` in a session and process group of its own (see
//! [`group`]), bounded in time and output, its keys removed.

use super::*;
use crate::group::{self, Group};
use revolve_core::sandbox::{Enforcement, Policy};

/// How often the child, the clock and `cancel` are checked, at most.
pub(crate) const SHELL_POLL: Duration = Duration::from_millis(50); // not policy: how often cancel is polled

/// How much of a command's latest output a watcher is given.
const TAIL_BYTES: usize = 4096; // not policy: enough for a few lines on screen

/// The sandbox a command runs in: the session's policy, and what stays
/// read-only whatever it allows (see [`crate::sandbox::protected`]).
pub(crate) struct Confinement<'a> {
    pub(crate) policy: &'a Policy,
    pub(crate) protect: &'a [PathBuf],
}

/// How a command ended.
pub(crate) enum Ending {
    Exited(ExitStatus),
    TimedOut(u64),
    Interrupted,
    TooMuch,
    Lost(io::Error),
}

/// Runs `sh -c command` in the tree, without the API keys, with
/// `REVOLVE_SESSION` naming the session (so `revolve send` from it says who
/// a message is from), in the `sandbox` (with a `$TMPDIR` of its own,
/// removed after it, when sandboxed).
pub(crate) fn shell(
    root: &Path,
    session: &str,
    command: &str,
    secs: u64,
    sandbox: Confinement<'_>,
    cancel: &dyn Fn() -> bool,
    watch: &Watch,
) -> Outcome {
    let Confinement {
        policy: sandbox,
        protect,
    } = sandbox;
    let mut sh = group::command(command);
    let tag = group::tag();
    // Confined first, while nothing but the program is set on the command
    // (on macOS it is wrapped whole). Held to the end: dropped, the temp
    // dir is removed.
    let tmp = match confined(&mut sh, sandbox, root, protect) {
        Ok(tmp) => tmp,
        Err(refused) => return Outcome::text(refused),
    };
    sh.current_dir(root)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env(group::SESSION_VAR, session)
        .env(group::COMMAND_VAR, &tag);
    if let Some(tmp) = &tmp {
        sh.env("TMPDIR", tmp.path());
    }
    for name in API_KEY_VARS {
        sh.env_remove(name);
    }
    let (mut group, mut child) = match Group::spawn(sh) {
        Ok(started) => started,
        Err(e) => return Outcome::text(format!("error: cannot start sh: {e}")),
    };
    let (done, drained) = mpsc::channel();
    // The end of both streams as they came, for the watcher.
    let tail: Arc<Mutex<Vec<u8>>> = Arc::default();
    let stdout = Capture::start(
        child.stdout.take(),
        done.clone(),
        tail.clone(),
        SHELL_STREAM_CAP,
    );
    let stderr = Capture::start(child.stderr.take(), done, tail.clone(), SHELL_STREAM_CAP);
    let (stdout, stderr) = match (stdout, stderr) {
        (Ok(out), Ok(err)) => (out, err),
        (Err(e), _) | (_, Err(e)) => {
            end(&mut group, &mut child, &tag);
            return Outcome::text(format!("error: cannot capture the command's output: {e}"));
        }
    };

    let mut ending = wait(&mut child, secs, cancel, watch, (&stdout, &stderr), &tail);
    // However it ended, nothing it started outlives it.
    end(&mut group, &mut child, &tag);
    watch.end();

    // Both readers end at EOF, unless a background process keeps a pipe.
    let deadline = Instant::now() + SHELL_DRAIN;
    let mut open = 2;
    while open > 0 {
        let left = deadline.saturating_duration_since(Instant::now());
        match drained.recv_timeout(left) {
            Ok(()) => open -= 1,
            Err(_) => break,
        }
    }
    if matches!(ending, Ending::Exited(_)) && (stdout.overflowed() || stderr.overflowed()) {
        // A reader stopped at the cap and the command died of the broken
        // pipe before the loop above saw the overflow.
        ending = Ending::TooMuch;
    }
    let out = stdout.finish();
    let err = stderr.finish();

    let (head, interrupted) = ending.said();
    let mut text = head;
    for (label, bytes) in [("stdout", &out), ("stderr", &err)] {
        if !bytes.is_empty() {
            text.push_str(&format!("\n{label}:\n"));
            text.push_str(&String::from_utf8_lossy(bytes));
            if text.ends_with('\n') {
                text.pop();
            }
        }
    }
    let refusal = revolve_core::sandbox::refusal_note(sandbox, &text);
    if let Some(note) = &refusal {
        text.push('\n');
        text.push_str(note);
    }
    if open > 0 {
        text.push_str(
            "\n[a background process still holds the command's output open; what it writes \
             later is not shown]",
        );
    }
    Outcome {
        interrupted,
        sandbox_refused: refusal.is_some(),
        ..Outcome::text(text)
    }
}

impl Ending {
    /// The result's first line for this ending, and whether the user
    /// interrupted.
    fn said(&self) -> (String, bool) {
        match self {
            Ending::Exited(status) => (status_text(*status), false),
            Ending::TimedOut(secs) => (
                format!(
                    "error: the command timed out after {secs} s and was killed; pass a larger \
                     timeout_s (at most {SHELL_MAX_TIMEOUT_S}) if it needs longer"
                ),
                false,
            ),
            Ending::Interrupted => ("error: interrupted; the command was killed".into(), true),
            Ending::TooMuch => (
                "error: the command wrote more than 64 MiB, so it was stopped and its output cut \
                 there; redirect its output to a file and read parts of it"
                    .into(),
                false,
            ),
            Ending::Lost(e) => (
                format!("error: lost track of the command ({e}); it was killed"),
                false,
            ),
        }
    }
}

/// `sh` confined as `sandbox` says, with a temp dir of its own (held by
/// the caller to the command's end: dropped, it is removed); `None` when
/// unsandboxed; the refusal's text when the command must not run.
fn confined(
    sh: &mut std::process::Command,
    sandbox: &Policy,
    root: &Path,
    protect: &[PathBuf],
) -> Result<Option<tempfile::TempDir>, String> {
    match &sandbox.enforcement {
        Enforcement::Refused(why) => Err(why.clone()),
        Enforcement::Unsandboxed => Ok(None),
        Enforcement::Sandboxed { close_network } => {
            let tmp = tempfile::Builder::new()
                .prefix("revolve-tmp-")
                .tempdir()
                .map_err(|e| format!("error: not run: cannot make the command's temp dir: {e}"))?;
            crate::sandbox::confine(sh, sandbox, *close_network, root, tmp.path(), protect)
                .map_err(|e| format!("error: not run: {e}"))?;
            Ok(Some(tmp))
        }
    }
}

/// Waits for the command to end, or to be stopped: the user's cancel, its
/// time, or output past the cap; the watcher sees the output's tail as it
/// goes.
fn wait(
    child: &mut std::process::Child,
    secs: u64,
    cancel: &dyn Fn() -> bool,
    watch: &Watch,
    (stdout, stderr): (&Capture, &Capture),
    tail: &Mutex<Vec<u8>>,
) -> Ending {
    let started = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ending::Exited(status),
            Ok(None) => {}
            Err(e) => return Ending::Lost(e),
        }
        if cancel() {
            return Ending::Interrupted;
        }
        if started.elapsed() >= Duration::from_secs(secs) {
            return Ending::TimedOut(secs);
        }
        if stdout.overflowed() || stderr.overflowed() {
            return Ending::TooMuch;
        }
        if watch.0.is_some() {
            let tail = tail.lock().unwrap_or_else(|e| e.into_inner());
            watch.tick(started.elapsed(), &String::from_utf8_lossy(&tail));
        }
        thread::sleep(pause);
        pause = (pause * 2).min(SHELL_POLL);
    }
}

/// A command's exit status as its result's first line says it.
pub(crate) fn status_text(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit status: {code}"),
        (None, Some(signal)) => format!("exit status: killed by signal {signal}"),
        (None, None) => "exit status: unknown".into(),
    }
}

/// One output stream, read on its own thread.
pub(crate) struct Capture {
    buf: Arc<Mutex<Vec<u8>>>,
    stop: Arc<AtomicBool>,
    overflow: Arc<AtomicBool>,
}

impl Capture {
    /// Reads `pipe` on a thread of its own, keeping at most `cap` bytes
    /// (past it, [`Capture::overflowed`] and the reading stops); what it
    /// reads also goes to the end of `tail`, which keeps its last
    /// [`TAIL_BYTES`].
    pub(crate) fn start(
        pipe: Option<impl Read + Send + 'static>,
        done: mpsc::Sender<()>,
        tail: Arc<Mutex<Vec<u8>>>,
        cap: usize,
    ) -> io::Result<Capture> {
        let capture = Capture {
            buf: Arc::default(),
            stop: Arc::default(),
            overflow: Arc::default(),
        };
        let (buf, stop, overflow) = (
            capture.buf.clone(),
            capture.stop.clone(),
            capture.overflow.clone(),
        );
        thread::Builder::new()
            .name("shell-output".into())
            .spawn(move || {
                if let Some(mut pipe) = pipe {
                    let mut chunk = vec![0u8; 64 * 1024];
                    loop {
                        let n = match pipe.read(&mut chunk) {
                            Ok(0) => break,
                            Ok(n) => n,
                            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                            Err(_) => break,
                        };
                        if stop.load(Ordering::SeqCst) {
                            break;
                        }
                        {
                            let mut tail = tail.lock().unwrap_or_else(|e| e.into_inner());
                            let kept = &chunk[n.saturating_sub(TAIL_BYTES)..n];
                            tail.extend_from_slice(kept);
                            let over = tail.len().saturating_sub(TAIL_BYTES);
                            tail.drain(..over);
                        }
                        let mut buf = buf.lock().unwrap_or_else(|e| e.into_inner());
                        let room = cap - buf.len();
                        buf.extend_from_slice(&chunk[..n.min(room)]);
                        if n > room {
                            overflow.store(true, Ordering::SeqCst);
                            break;
                        }
                    }
                }
                let _ = done.send(());
            })?;
        Ok(capture)
    }

    pub(crate) fn overflowed(&self) -> bool {
        self.overflow.load(Ordering::SeqCst)
    }

    /// What was read so far; the reader keeps nothing more.
    pub(crate) fn finish(self) -> Vec<u8> {
        self.stop.store(true, Ordering::SeqCst);
        std::mem::take(&mut *self.buf.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Kills the command's whole group (background children included), reaps
/// the command, then what escaped the group, then whatever still carries
/// the command's `tag` (see [`group`]).
pub(crate) fn end(group: &mut Group, child: &mut Child, tag: &str) {
    group.kill();
    let _ = child.kill();
    let _ = child.wait();
    group::reap_escaped();
    group::kill_tagged(group::COMMAND_VAR, tag);
}
