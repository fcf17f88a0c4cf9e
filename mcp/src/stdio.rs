//! The stdio transport: a child process, one JSON-RPC message a line on
//! its stdin and stdout, the tail of its stderr kept in a log file.
//!
//! * **Bounded reads.** A line is read up to
//!   [`revolve_core::policy::MCP_MESSAGE_BYTES`]; past that nothing more of
//!   it is kept (the rest is read and dropped, so the next message is
//!   found), and the request waiting gets [`Error::TooBig`] at once.
//! * **Its stderr** is copied by a thread into `NAME.stderr.log` (`0600`,
//!   in a `0700` folder): when that file would pass
//!   [`revolve_core::policy::MCP_STDERR_LOG_BYTES`] it becomes
//!   `NAME.stderr.log.1` and a new one starts, so the tail is kept and the
//!   disk use is bounded.
//! * **It ends with revolve** (unix). The server leads a process group of
//!   its own; beside it, in that group, a *watchdog* `sh` reads a pipe only
//!   revolve holds the other end of. When the server is dropped, or
//!   revolve ends in any way (exit, panic, SIGTERM, SIGHUP, SIGKILL), the
//!   pipe closes and the watchdog kills the whole group (`kill -9 0`): the
//!   server and whatever it started (`npx` → `node`). On Linux the server
//!   also gets `PR_SET_PDEATHSIG` (SIGKILL) as a backstop; it is set from
//!   the thread that spawns it, which is the caller's of `Hub::start` (the
//!   main thread), since the signal follows the spawning *thread*. A
//!   process that leaves the group (`setsid`) escapes both.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio as Pipe};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use revolve_core::policy::{MCP_MESSAGE_BYTES, MCP_STDERR_LOG_BYTES};
use serde_json::{json, Value};

use crate::client::{answers, from_server, Error, Transport};

/// What the reader of the server's stdout passes on.
enum Incoming {
    /// A JSON message.
    Message(Value),
    /// A line over the bound began; it is being dropped.
    TooBig,
}

/// A server process.
pub(crate) struct Stdio {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Incoming>,
    list_changed: bool,
    /// The watchdog of the server's group, and the pipe that keeps it
    /// waiting (unix).
    watchdog: Option<(Child, ChildStdin)>,
}

impl Stdio {
    /// Starts `command` with `args` in `cwd`, `env` added to revolve's
    /// environment less the variables in `hidden` (API keys); the tail of
    /// its stderr kept in `stderr_log`.
    pub(crate) fn spawn(
        command: &str,
        args: &[String],
        env: &BTreeMap<String, String>,
        hidden: &[&str],
        cwd: &Path,
        stderr_log: &Path,
    ) -> Result<Stdio, Error> {
        let mut cmd = Command::new(command);
        cmd.args(args)
            .current_dir(cwd)
            .stdin(Pipe::piped())
            .stdout(Pipe::piped())
            .stderr(Pipe::piped());
        for var in hidden {
            cmd.env_remove(var);
        }
        cmd.envs(env);
        #[cfg(unix)]
        ends_with_revolve(&mut cmd);
        let mut child = cmd
            .spawn()
            .map_err(|e| Error::Start(format!("{command}: {e}")))?;
        #[cfg(unix)]
        let watchdog = watch(child.id());
        #[cfg(not(unix))]
        let watchdog = None;
        let stdin = child.stdin.take();
        if let Some(stderr) = child.stderr.take() {
            let log = stderr_log.to_owned();
            std::thread::spawn(move || keep_tail(stderr, &log, MCP_STDERR_LOG_BYTES));
        }
        let stdout = child.stdout.take();
        let (tx, lines) = mpsc::channel();
        if let Some(stdout) = stdout {
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stdout);
                let mut line = Vec::new();
                loop {
                    let read = read_line(&mut reader, &mut line, MCP_MESSAGE_BYTES, &mut || {
                        // Said once the line passes the bound, not after
                        // the server finished sending it.
                        let _ = tx.send(Incoming::TooBig);
                    });
                    match read {
                        Ok(Some(false)) => {
                            // A line that is not JSON (a server logging to
                            // stdout) is skipped.
                            if let Ok(value) = serde_json::from_slice::<Value>(&line) {
                                if tx.send(Incoming::Message(value)).is_err() {
                                    break;
                                }
                            }
                        }
                        Ok(Some(true)) => {}
                        Ok(None) | Err(_) => break,
                    }
                }
            });
        }
        Ok(Stdio {
            child,
            stdin,
            lines,
            list_changed: false,
            watchdog,
        })
    }

    fn send(&mut self, message: &Value) -> Result<(), Error> {
        let mut line = message.to_string();
        line.push('\n');
        let written = match self.stdin.as_mut() {
            Some(stdin) => stdin
                .write_all(line.as_bytes())
                .and_then(|()| stdin.flush()),
            None => return Err(self.gone()),
        };
        written.map_err(|_| self.gone())
    }

    /// What became of the process, for a message.
    fn gone(&mut self) -> Error {
        // The reader saw the end of stdout; the exit follows at once.
        for _ in 0..20 {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Error::Gone(format!("the server exited ({status})"));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Error::Gone("the server closed its output".into())
    }

    /// Handles what the server sent on its own.
    fn handle(&mut self, message: &Value) {
        let (reply, changed) = from_server(message);
        self.list_changed |= changed;
        if let Some(reply) = reply {
            let _ = self.send(&reply);
        }
    }
}

impl Transport for Stdio {
    fn request(&mut self, message: &Value, id: u64, timeout: Duration) -> Result<Value, Error> {
        self.send(message)?;
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(Incoming::Message(m)) if answers(&m, id) => return Ok(m),
                Ok(Incoming::Message(m)) => self.handle(&m),
                Ok(Incoming::TooBig) => return Err(Error::TooBig(MCP_MESSAGE_BYTES)),
                Err(RecvTimeoutError::Timeout) => {
                    let _ = self.send(
                        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": id, "reason": "timed out"}}),
                    );
                    return Err(Error::Timeout(timeout));
                }
                Err(RecvTimeoutError::Disconnected) => return Err(self.gone()),
            }
        }
    }

    fn notify(&mut self, message: &Value) -> Result<(), Error> {
        self.send(message)
    }

    fn take_list_changed(&mut self) -> bool {
        while let Ok(incoming) = self.lines.try_recv() {
            if let Incoming::Message(m) = incoming {
                self.handle(&m);
            }
        }
        std::mem::take(&mut self.list_changed)
    }
}

impl Drop for Stdio {
    fn drop(&mut self) {
        // Closing stdin asks the server to end; it is killed in any case.
        self.stdin.take();
        let _ = self.child.kill();
        let _ = self.child.wait();
        // The watchdog's pipe closes: it kills what is left of the group
        // (the server's own children), then itself.
        if let Some((mut watchdog, pipe)) = self.watchdog.take() {
            drop(pipe);
            let _ = watchdog.wait();
        }
    }
}

/// Reads one line of `reader` into `line` (without its newline), keeping
/// at most `bound` bytes: `Some(false)` for a line whole, `Some(true)` for
/// one that passed the bound (the rest read and dropped; `over` called
/// once, when it passed), `None` at the end.
fn read_line(
    reader: &mut impl BufRead,
    line: &mut Vec<u8>,
    bound: usize,
    over: &mut dyn FnMut(),
) -> std::io::Result<Option<bool>> {
    line.clear();
    let mut any = false;
    let mut dropped = false;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok(any.then_some(dropped));
        }
        any = true;
        let newline = buf.iter().position(|&b| b == b'\n');
        let chunk = &buf[..newline.unwrap_or(buf.len())];
        let keep = chunk.len().min(bound.saturating_sub(line.len()));
        line.extend_from_slice(&chunk[..keep]);
        if keep < chunk.len() && !dropped {
            dropped = true;
            over();
        }
        let used = newline.map_or(buf.len(), |i| i + 1);
        reader.consume(used);
        if newline.is_some() {
            return Ok(Some(dropped));
        }
    }
}

/// Copies `from` into the log at `path` until it ends, keeping the tail:
/// when the log would pass `bound` bytes it becomes `PATH.1` (replacing
/// the one before) and a new log starts. The log and its folder are made
/// private (`0600` in `0700`). Without a log, what comes is read and
/// dropped, so the server never blocks on its stderr.
fn keep_tail(mut from: impl Read, path: &Path, bound: u64) {
    let mut buf = vec![0u8; 8192]; // not policy: a copy buffer
    let mut log = open_log(path, false);
    let mut size = log
        .as_ref()
        .and_then(|f| f.metadata().ok())
        .map_or(0, |m| m.len());
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let mut rest = &buf[..n];
        while !rest.is_empty() {
            if size >= bound {
                let old = PathBuf::from(format!("{}.1", path.display()));
                let _ = std::fs::rename(path, &old);
                log = open_log(path, true);
                size = 0;
            }
            let room = usize::try_from(bound - size).unwrap_or(usize::MAX);
            let (now, later) = rest.split_at(rest.len().min(room));
            if let Some(file) = log.as_mut() {
                let _ = file.write_all(now);
            }
            size += now.len() as u64;
            rest = later;
        }
    }
}

/// The log at `path`, opened to append (emptied when `fresh`), `0600` in a
/// `0700` folder whatever they were.
fn open_log(path: &Path, fresh: bool) -> Option<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.create(true);
    if fresh {
        options.write(true).truncate(true);
    } else {
        options.append(true);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
        options.mode(revolve_core::policy::FILE_MODE);
        if let Some(dir) = path.parent() {
            let _ = std::fs::DirBuilder::new()
                .recursive(true)
                .mode(revolve_core::policy::DIR_MODE)
                .create(dir);
            let _ = std::fs::set_permissions(
                dir,
                std::fs::Permissions::from_mode(revolve_core::policy::DIR_MODE),
            );
        }
        let file = options.open(path).ok()?;
        let _ = file.set_permissions(std::fs::Permissions::from_mode(
            revolve_core::policy::FILE_MODE,
        ));
        Some(file)
    }
    #[cfg(not(unix))]
    {
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        options.open(path).ok()
    }
}

/// Makes the server the leader of a process group of its own and, on
/// Linux, killed when the thread that spawns it ends (`PR_SET_PDEATHSIG`).
#[cfg(unix)]
fn ends_with_revolve(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    cmd.process_group(0);
    #[cfg(target_os = "linux")]
    // SAFETY: between fork and exec only `prctl(2)` runs, a single system
    // call that is async-signal-safe and allocates nothing.
    #[allow(unsafe_code)]
    unsafe {
        cmd.pre_exec(|| {
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))?;
            Ok(())
        });
    }
}

/// Starts the watchdog of the group `group` (the server's pid): an `sh` in
/// that group that waits for its stdin to close, then kills the group.
/// `None` when it cannot start (the server already gone).
#[cfg(unix)]
fn watch(group: u32) -> Option<(Child, ChildStdin)> {
    use std::os::unix::process::CommandExt;
    let mut child = Command::new("sh")
        .arg("-c")
        .arg("read _; kill -9 0")
        .stdin(Pipe::piped())
        .stdout(Pipe::null())
        .stderr(Pipe::null())
        .process_group(i32::try_from(group).ok()?)
        .spawn()
        .ok()?;
    let pipe = child.stdin.take()?;
    Some((child, pipe))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_over_the_bound_is_cut_said_once_and_the_next_line_read_whole() {
        let text = format!("{}\n{{\"a\":1}}\nlast", "x".repeat(100));
        let mut reader = BufReader::with_capacity(7, text.as_bytes());
        let mut line = Vec::new();
        let mut said = 0;
        let mut over = || said += 1;
        assert_eq!(
            read_line(&mut reader, &mut line, 10, &mut over).unwrap(),
            Some(true)
        );
        assert_eq!(line.len(), 10);
        assert_eq!(
            read_line(&mut reader, &mut line, 10, &mut over).unwrap(),
            Some(false)
        );
        assert_eq!(line, b"{\"a\":1}");
        assert_eq!(
            read_line(&mut reader, &mut line, 10, &mut over).unwrap(),
            Some(false)
        );
        assert_eq!(line, b"last");
        assert_eq!(
            read_line(&mut reader, &mut line, 10, &mut over).unwrap(),
            None
        );
        assert_eq!(said, 1);
    }

    #[test]
    fn the_stderr_log_keeps_the_tail_within_twice_the_bound_and_is_private() {
        let tmp = tempfile::Builder::new()
            .prefix("revolve-mcp-log-")
            .tempdir()
            .unwrap();
        let dir = tmp.path().to_path_buf();
        let log = dir.join("mcp/s.stderr.log");
        let text: String = (0..2000).map(|i| format!("line {i}\n")).collect();
        keep_tail(text.as_bytes(), &log, 1000);
        let now = std::fs::read_to_string(&log).unwrap();
        let before = std::fs::read_to_string(format!("{}.1", log.display())).unwrap();
        assert!(now.len() <= 1000 && before.len() <= 1000);
        assert!(now.ends_with("line 1999\n"), "{now}");
        assert!(format!("{before}{now}").contains("line 1900\n"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&log), 0o600);
            assert_eq!(mode(&dir.join("mcp")), 0o700);
        }
    }
}
