//! The stdio transport: a child process, one JSON-RPC message a line on
//! its stdin and stdout, its stderr kept in a log file.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio as Pipe};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::client::{answers, from_server, Error, Transport};

/// A server process.
pub(crate) struct Stdio {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Value>,
    list_changed: bool,
}

impl Stdio {
    /// Starts `command` with `args` in `cwd`, `env` added to revolve's
    /// environment less the variables in `hidden` (API keys); its stderr
    /// appended to `stderr_log`.
    pub(crate) fn spawn(
        command: &str,
        args: &[String],
        env: &BTreeMap<String, String>,
        hidden: &[&str],
        cwd: &Path,
        stderr_log: &Path,
    ) -> Result<Stdio, Error> {
        if let Some(dir) = stderr_log.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let stderr = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(stderr_log)
            .map(Pipe::from)
            .unwrap_or_else(|_| Pipe::null());
        let mut cmd = Command::new(command);
        cmd.args(args)
            .current_dir(cwd)
            .stdin(Pipe::piped())
            .stdout(Pipe::piped())
            .stderr(stderr);
        for var in hidden {
            cmd.env_remove(var);
        }
        cmd.envs(env);
        let mut child = cmd
            .spawn()
            .map_err(|e| Error::Start(format!("{command}: {e}")))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let (tx, lines) = mpsc::channel();
        if let Some(stdout) = stdout {
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    // A line that is not JSON (a server logging to stdout)
                    // is skipped.
                    if let Ok(value) = serde_json::from_str::<Value>(&line) {
                        if tx.send(value).is_err() {
                            break;
                        }
                    }
                }
            });
        }
        Ok(Stdio {
            child,
            stdin,
            lines,
            list_changed: false,
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
                Ok(m) if answers(&m, id) => return Ok(m),
                Ok(m) => self.handle(&m),
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
        while let Ok(m) = self.lines.try_recv() {
            self.handle(&m);
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
    }
}
