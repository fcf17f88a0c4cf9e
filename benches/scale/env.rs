use super::*;

/// A temp HOME, XDG roots and working directory for the binary.
pub(crate) struct Env {
    pub(crate) bin: PathBuf,
    pub(crate) root: PathBuf,
    pub(crate) cwd: PathBuf,
}

impl Env {
    pub(crate) fn new(bin: &Path, root: &Path) -> Env {
        let cwd = root.join("work");
        std::fs::create_dir_all(&cwd).expect("creating the cwd");
        let cwd = cwd.canonicalize().expect("a canonical cwd");
        Env {
            bin: bin.to_path_buf(),
            root: root.canonicalize().expect("a canonical root"),
            cwd,
        }
    }

    pub(crate) fn sessions_dir(&self) -> PathBuf {
        let roots = Roots {
            state: self.root.join("state").join("task-agent"),
            config: self.root.join("config").join("task-agent"),
        };
        roots.sessions(&Project::from_key(self.cwd.clone()))
    }

    pub(crate) fn command(&self, args: &[&str], cwd: &Path) -> Command {
        let mut cmd = Command::new(&self.bin);
        cmd.args(args)
            .current_dir(cwd)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.root.join("home"))
            .env("XDG_STATE_HOME", self.root.join("state"))
            .env("XDG_CONFIG_HOME", self.root.join("config"))
            .env("XDG_DATA_HOME", self.root.join("data"))
            .env("XDG_CACHE_HOME", self.root.join("cache"))
            .env("GIT_CEILING_DIRECTORIES", &self.root)
            .env("REVOLVE_NO_AUTO_REFINE", "1")
            .stdin(Stdio::null());
        cmd
    }

    /// One run, stdout and stderr to /dev/null: its wall time and peak RSS
    /// (KB). Panics when it fails.
    // Reaped by `wait` (wait4), which std's `Child` does not offer.
    #[allow(clippy::zombie_processes)]
    pub(crate) fn run(&self, args: &[&str], cwd: &Path) -> (Duration, u64) {
        let t = Instant::now();
        let child = self
            .command(args, cwd)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("running revolve");
        let (code, peak) = wait(child.id());
        let took = t.elapsed();
        if code != 0 {
            let out = self.command(args, cwd).output().expect("running revolve");
            panic!(
                "revolve {args:?} exited with {code}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        (took, peak)
    }

    /// Spawn to the first request reaching `server`.
    pub(crate) fn first_request(&self, server: &Server, args: &[&str]) -> Duration {
        while server.arrivals.try_recv().is_ok() {}
        let t = Instant::now();
        let child = self
            .command(args, &self.cwd)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("running revolve");
        let arrived = server
            .arrivals
            .recv_timeout(Duration::from_secs(30))
            .expect("a request within 30 s");
        let out = child.wait_with_output().expect("waiting for revolve");
        assert!(
            out.status.success(),
            "revolve {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        arrived.duration_since(t)
    }

    /// Spawn to the REPL's first prompt (`› `) on a pseudo-terminal; the
    /// REPL is then ended with Ctrl-D.
    pub(crate) fn first_prompt(&self, url: &str) -> Duration {
        let mut cmd = self.command(&["--base-url", url], &self.cwd);
        cmd.env("TERM", "xterm");
        let t = Instant::now();
        let (mut child, mut master) = pty::spawn(&mut cmd, 80, 24).expect("running revolve");
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        let took = loop {
            let n = master.read(&mut buf).unwrap_or(0);
            assert!(
                n > 0,
                "the REPL ended before its prompt: {}",
                String::from_utf8_lossy(&seen)
            );
            seen.extend_from_slice(&buf[..n]);
            if seen.windows(4).any(|w| w == "› ".as_bytes()) {
                break t.elapsed();
            }
        };
        master.write_all(b"\x04").ok();
        // Drained until the child closes its side, so it never blocks on
        // a full terminal.
        while master.read(&mut buf).is_ok_and(|n| n > 0) {}
        child.wait().expect("waiting for revolve");
        took
    }

    /// The turns `revolve sessions` lists for `name`.
    pub(crate) fn listed_turns(&self, name: &str) -> Option<u64> {
        let out = self
            .command(&["sessions", "--json"], &self.cwd)
            .output()
            .expect("running revolve");
        let list: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        list.as_array()?
            .iter()
            .find(|s| s["name"] == name)
            .and_then(|s| s["turns"].as_u64())
    }
}

/// Waits for a child and returns its exit code (128 + the signal when a
/// signal ended it) and peak RSS in KB. std's `Child` offers no resource
/// usage, nor nix a `wait4`: the libc crate's binding, which nix re-exports.
/// `getrusage(RUSAGE_CHILDREN)` would not do: its peak is the largest of
/// every child waited for so far, not this one's.
pub(crate) fn wait(pid: u32) -> (i32, u64) {
    use nix::libc;
    use nix::sys::wait::WaitStatus;
    use nix::unistd::Pid;
    let pid = Pid::from_raw(pid as i32);
    let mut status = 0;
    // SAFETY: an all-zero `rusage` is a valid value (plain integers).
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `wait4` writes only the two out-parameters, which are valid
    // for writes and live across the call; `rusage` is the libc crate's.
    let r = unsafe { libc::wait4(pid.as_raw(), &mut status, 0, &mut usage) };
    assert_eq!(r, pid.as_raw(), "wait4: {}", io::Error::last_os_error());
    let code = match WaitStatus::from_raw(pid, status) {
        Ok(WaitStatus::Exited(_, code)) => code,
        Ok(WaitStatus::Signaled(_, signal, _)) => 128 + signal as i32,
        other => panic!("wait4: {other:?}"),
    };
    // `ru_maxrss` is in kilobytes on Linux, in bytes on macOS.
    let maxrss = u64::try_from(usage.ru_maxrss).unwrap_or(0);
    #[cfg(target_os = "macos")]
    let maxrss = maxrss / 1024;
    (code, maxrss)
}

// --- generated content ----------------------------------------------------

/// A model endpoint that notes when each request arrives and answers a
/// one-word stream.
pub(crate) struct Server {
    pub(crate) port: u16,
    pub(crate) arrivals: std::sync::mpsc::Receiver<Instant>,
}

impl Server {
    pub(crate) fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("binding");
        let port = listener.local_addr().expect("an address").port();
        let (tx, arrivals) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().expect("a clone"));
                let mut length = 0usize;
                let mut line = String::new();
                loop {
                    line.clear();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        break;
                    }
                    let lower = line.to_ascii_lowercase();
                    if let Some(v) = lower.strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap_or(0);
                    }
                    if line == "\r\n" {
                        break;
                    }
                }
                // The request is in: it reached the model.
                tx.send(Instant::now()).ok();
                let mut body = vec![0; length];
                reader.read_exact(&mut body).ok();
                let answer =
                    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"}}]}\n\n\
                              data: [DONE]\n\n";
                write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n{answer}"
                )
                .ok();
            }
        });
        Server { port, arrivals }
    }
}
