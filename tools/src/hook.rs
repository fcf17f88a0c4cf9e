//! A hook's command, run (what it means is `revolve_core::hooks`'s
//! decision): `sh -c COMMAND` in the working directory, in a session and
//! process group of its own ([`crate::group`], so it cannot outlive its
//! run nor revolve), under the session's sandbox, its API keys removed,
//! with the hook's input (one JSON object) on its stdin.
//!
//! The input is written to a file in a temp folder of the run's own
//! (removed after it; under the sandbox the command's `$TMPDIR`), which
//! the command's shell opens as its stdin: a pipe would need a writer
//! thread, and the group's watchdog already holds the stdin `sh` starts
//! with. `REVOLVE_PROJECT_DIR` (and `CLAUDE_PROJECT_DIR`, which hooks
//! written for Claude Code read) name the working directory.
//!
//! At its timeout, or once stdout or stderr passes
//! `revolve_core::policy::HOOK_OUTPUT_BYTES`, the whole group is killed;
//! the run says how it ended ([`Ended`]) and what it printed until then.

use super::*;
use crate::group::{self, Group};
use crate::shell::{end, Capture, SHELL_POLL};
use revolve_core::hooks::{Ended, Ran};
use revolve_core::policy::HOOK_OUTPUT_BYTES;
use revolve_core::sandbox::{Enforcement, Policy};

/// The variable naming the file a hook's stdin is read from.
const INPUT_VAR: &str = "REVOLVE_HOOK_INPUT";

/// Where and how a hook runs.
pub struct Run<'a> {
    /// The command, as configured.
    pub command: &'a str,
    /// Its input: one JSON object (`revolve_core::hooks::stdin`).
    pub input: &'a str,
    /// Seconds before it is killed.
    pub timeout_s: u64,
    /// The working directory (canonical).
    pub root: &'a Path,
    /// The session's name or id (`REVOLVE_SESSION`).
    pub session: &'a str,
    /// The session's sandbox.
    pub sandbox: &'a Policy,
    /// What stays read-only whatever the sandbox allows
    /// ([`crate::sandbox::protected`]).
    pub protect: &'a [PathBuf],
}

/// Runs the hook; never fails: a command that cannot start is
/// [`Ended::Failed`].
pub fn run(hook: &Run<'_>) -> Ran {
    let failed = |why: String| Ran {
        ended: Ended::Failed(why),
        stdout: String::new(),
        stderr: String::new(),
    };
    let tmp = match tempfile::Builder::new().prefix("revolve-hook-").tempdir() {
        Ok(tmp) => tmp,
        Err(e) => return failed(format!("cannot make its temp dir: {e}")),
    };
    let input = tmp.path().join("input.json");
    if let Err(e) = fs::write(&input, hook.input) {
        return failed(format!("cannot write its input: {e}"));
    }
    let script = format!("exec <\"${INPUT_VAR}\" || exit 126\n{}", hook.command);
    let mut sh = group::command(&script);
    let tag = group::tag();
    match &hook.sandbox.enforcement {
        Enforcement::Refused(why) => return failed(revolve_core::text::one_line(why, 200)),
        Enforcement::Unsandboxed => {}
        Enforcement::Sandboxed { close_network } => {
            if let Err(e) = crate::sandbox::confine(
                &mut sh,
                hook.sandbox,
                *close_network,
                hook.root,
                tmp.path(),
                hook.protect,
            ) {
                return failed(format!("cannot confine it: {e}"));
            }
            sh.env("TMPDIR", tmp.path());
        }
    }
    sh.current_dir(hook.root)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env(INPUT_VAR, &input)
        .env("REVOLVE_PROJECT_DIR", hook.root)
        .env("CLAUDE_PROJECT_DIR", hook.root)
        .env(group::SESSION_VAR, hook.session)
        .env(group::COMMAND_VAR, &tag);
    for name in API_KEY_VARS {
        sh.env_remove(name);
    }
    let (mut group, mut child) = match Group::spawn(sh) {
        Ok(started) => started,
        Err(e) => return failed(format!("cannot start sh: {e}")),
    };
    let (done, drained) = mpsc::channel();
    let tail: Arc<Mutex<Vec<u8>>> = Arc::default();
    let stdout = Capture::start(
        child.stdout.take(),
        done.clone(),
        tail.clone(),
        HOOK_OUTPUT_BYTES,
    );
    let stderr = Capture::start(child.stderr.take(), done, tail, HOOK_OUTPUT_BYTES);
    let (stdout, stderr) = match (stdout, stderr) {
        (Ok(out), Ok(err)) => (out, err),
        (Err(e), _) | (_, Err(e)) => {
            end(&mut group, &mut child, &tag);
            return failed(format!("cannot capture its output: {e}"));
        }
    };
    let started = Instant::now();
    let mut pause = Duration::from_millis(1);
    let mut ended = loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                break match (status.code(), status.signal()) {
                    (Some(code), _) => Ended::Exited(code),
                    (None, Some(signal)) => Ended::Killed(signal),
                    (None, None) => Ended::Failed("it ended in an unknown way".into()),
                }
            }
            Ok(None) => {}
            Err(e) => break Ended::Failed(format!("lost track of it: {e}")),
        }
        if started.elapsed() >= Duration::from_secs(hook.timeout_s) {
            break Ended::TimedOut(hook.timeout_s);
        }
        if stdout.overflowed() || stderr.overflowed() {
            break Ended::Cut(HOOK_OUTPUT_BYTES);
        }
        thread::sleep(pause);
        pause = (pause * 2).min(SHELL_POLL);
    };
    end(&mut group, &mut child, &tag);
    // Both readers end at EOF, unless something that escaped keeps a pipe.
    let deadline = Instant::now() + SHELL_DRAIN;
    let mut open = 2;
    while open > 0 {
        match drained.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(()) => open -= 1,
            Err(_) => break,
        }
    }
    if stdout.overflowed() || stderr.overflowed() {
        // It died of the broken pipe before the loop saw the overflow.
        ended = Ended::Cut(HOOK_OUTPUT_BYTES);
    }
    Ran {
        ended,
        stdout: redact_keys(String::from_utf8_lossy(&stdout.finish()).into_owned()),
        stderr: redact_keys(String::from_utf8_lossy(&stderr.finish()).into_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use revolve_core::sandbox::Mode;

    fn policy(mode: Mode) -> Policy {
        revolve_core::sandbox::policy(mode, false, Vec::new(), crate::sandbox::probe(), false).0
    }

    fn ran(dir: &Path, command: &str, timeout_s: u64, mode: Mode) -> Ran {
        run(&Run {
            command,
            input: r#"{"hook_event_name":"PreToolUse","tool_name":"shell"}"#,
            timeout_s,
            root: dir,
            session: "s1",
            sandbox: &policy(mode),
            protect: &[],
        })
    }

    #[test]
    fn a_hook_reads_its_input_on_stdin_and_answers_by_exit_code() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let r = ran(&root, "cat; echo; echo why >&2; exit 2", 10, Mode::Off);
        assert_eq!(r.ended, Ended::Exited(2));
        assert!(r.stdout.contains(r#""tool_name":"shell""#), "{r:?}");
        assert_eq!(r.stderr, "why\n");
        let r = ran(&root, "pwd; echo $CLAUDE_PROJECT_DIR", 10, Mode::Off);
        assert_eq!(
            r.stdout,
            format!("{}\n{}\n", root.display(), root.display())
        );
        let r = ran(&root, "./no-such-hook.sh", 10, Mode::Off);
        assert_eq!(r.ended, Ended::Exited(127), "{r:?}");
    }

    #[test]
    fn a_hanging_hook_is_killed_with_its_group_at_its_timeout() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let marker = root.join("left");
        let command = format!("(sleep 2; touch {}) & sleep 30", marker.display());
        let started = Instant::now();
        let r = ran(&root, &command, 1, Mode::Off);
        assert_eq!(r.ended, Ended::TimedOut(1));
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        // Alive, the child would touch the marker 2 s after the hook
        // began; the hook ran at least its 1 s timeout, so 1.5 s more is
        // half a second past it, however slow the machine.
        thread::sleep(Duration::from_millis(1_500));
        assert!(!marker.exists(), "a child of the hook outlived it");
    }

    #[test]
    fn a_flood_is_cut_at_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let r = ran(&root, "yes flood", 30, Mode::Off);
        assert_eq!(r.ended, Ended::Cut(HOOK_OUTPUT_BYTES));
        assert!(r.stdout.len() <= HOOK_OUTPUT_BYTES, "{}", r.stdout.len());
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_hook_runs_under_the_sessions_sandbox() {
        if !crate::sandbox::probe().files {
            // Without Landlock the sandbox cannot be enforced: without a
            // terminal the policy refuses, and so the hook does not run.
            let dir = tempfile::tempdir().unwrap();
            let r = ran(dir.path(), "true", 10, Mode::ReadOnly);
            assert!(matches!(r.ended, Ended::Failed(_)), "{r:?}");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let r = ran(&root, "cat >/dev/null; echo x > made", 10, Mode::ReadOnly);
        assert_ne!(r.ended, Ended::Exited(0), "{r:?}");
        assert!(!root.join("made").exists());
        let r = ran(&root, "echo x > made", 10, Mode::WorkspaceWrite);
        assert_eq!(r.ended, Ended::Exited(0), "{r:?}");
        assert!(root.join("made").exists());
    }
}
