//! The session and process group a `shell` command runs in, so that
//! nothing it starts outlives it, nor revolve.
//!
//! * Each command is the leader of a session of its own (`setsid` in the
//!   child before `exec`), so its group is its own and it has no
//!   controlling terminal: nothing it starts can join revolve's process
//!   group (`setpgid` across sessions is refused), nor get the terminal's
//!   Ctrl-C meant for revolve.
//! * Before running the command, its `sh` starts a *watchdog* in the same
//!   group: a background `read` of a pipe only revolve holds the other end
//!   of. When revolve ends in any way, SIGKILL included, the pipe closes and
//!   the watchdog kills its whole group (`kill -9 0`), the command and its
//!   background children with it. The command itself does not get the
//!   pipe: its stdin is `/dev/null`.
//! * When the command ends (exit, timeout, Ctrl-C, too much output),
//!   [`Group::kill`] kills the whole group: `sleep 1000 &` does not outlive
//!   the command.
//! * On Linux revolve is also a *child subreaper* (`PR_SET_CHILD_SUBREAPER`):
//!   a process that left the group (`setsid`, `set -m`) and lost its parent
//!   becomes revolve's child instead of init's, and [`reap_escaped`] kills
//!   and reaps such children after every command. This reads
//!   `/proc/self/task/*/children`; without it, nothing is reaped. A process
//!   that left the group while revolve itself is SIGKILLed still escapes
//!   (only a PID namespace or a cgroup would hold it).
//! * Every process a command starts inherits two variables: the
//!   command's own tag (`REVOLVE_COMMAND`, this process's pid and a
//!   count) and the session's id (`REVOLVE_SESSION`, for `revolve
//!   send`). When the command ends, revolve (on Linux) looks through
//!   `/proc/*/environ` for processes carrying its tag, and when the
//!   session ends, for any tag of this process's commands, and kills
//!   them (not by session id: another revolve may run a session of the
//!   same id): a grandchild that forked, called `setsid` and is still held by
//!   a living parent (so not yet orphaned to revolve) goes too. A process
//!   that empties its own environment is beyond this.

use std::collections::BTreeSet;
use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Mutex;

use rustix::process::{kill_process_group, Pid, Signal};

/// The sessions of commands running now, in this process (tests run
/// several at once): [`reap_escaped`] leaves their members alone. Held
/// while a command is spawned and while escaped children are looked for,
/// so a command just started is never taken for one.
static RUNNING: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

/// What the command's `sh` runs first: the watchdog, reading the pipe on
/// its stdin (kept as fd 3 for it alone), then the command (`$1`) with
/// stdin `/dev/null`.
const WRAPPER: &str =
    "exec 3<&0 </dev/null; { read _ <&3; kill -9 0; } & exec 3<&-; exec sh -c \"$1\"";

/// The variable naming the command a process was started for.
pub(crate) const COMMAND_VAR: &str = "REVOLVE_COMMAND";

/// The variable naming the session a process was started for.
pub(crate) const SESSION_VAR: &str = "REVOLVE_SESSION";

/// A tag no other command of any running revolve has: this process's
/// pid and a count.
pub(crate) fn tag() -> String {
    let n = TAGS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{}-{n}", std::process::id())
}

/// How many tags [`tag`] handed out.
static TAGS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Kills every process but this one whose environment holds
/// `var=value`, looking again until none is left (one may fork while it
/// is looked for), and reaps those that were this process's children.
/// Linux only (`/proc`); elsewhere the group and the watchdog do what
/// they can.
pub(crate) fn kill_tagged(var: &str, value: &str) {
    kill_carrying(&format!("{var}={value}"), true);
}

/// Kills every process, as [`kill_tagged`] does, that carries a command
/// tag of this process ([`tag`]: `REVOLVE_COMMAND=<pid>-<n>`), whichever
/// command it was: what this revolve's commands left behind, and nothing
/// of another revolve's, even one that runs a session of the same id.
pub(crate) fn kill_own_commands() {
    // No command was started, so no process carries a tag of this one:
    // a session that ran none does not read every process's environment
    // at its end (a tenth of a new session's time, with a few hundred
    // processes on the machine).
    if TAGS.load(std::sync::atomic::Ordering::Relaxed) == 0 {
        return;
    }
    kill_carrying(&format!("{COMMAND_VAR}={}-", std::process::id()), false);
}

/// Kills the processes whose environment holds `entry` (the whole
/// variable when `whole`, else its start).
fn kill_carrying(entry: &str, whole: bool) {
    #[cfg(target_os = "linux")]
    {
        let entry = entry.as_bytes();
        let own = std::process::id();
        for _ in 0..16 {
            let Ok(dir) = std::fs::read_dir("/proc") else {
                return;
            };
            let found: Vec<Pid> = dir
                .flatten()
                .filter_map(|e| {
                    let pid: u32 = e.file_name().to_str()?.parse().ok()?;
                    let environ = std::fs::read(e.path().join("environ")).ok()?;
                    let carries = |kv: &[u8]| {
                        if whole {
                            kv == entry
                        } else {
                            kv.starts_with(entry)
                        }
                    };
                    (pid != own && environ.split(|b| *b == 0).any(carries))
                        .then(|| Pid::from_raw(i32::try_from(pid).ok()?))
                        .flatten()
                })
                .collect();
            if found.is_empty() {
                break;
            }
            for pid in found {
                let _ = rustix::process::kill_process(pid, Signal::KILL);
            }
            reap_escaped();
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (entry, whole);
}

/// The command's session and group, watched.
pub(crate) struct Group {
    /// The command's pid: its session's and group's id.
    id: i32,
    /// The watchdog's pipe: closed, it kills the group.
    watch: Option<ChildStdin>,
}

/// `sh -c script`, to be started by [`Group::spawn`]: the caller adds the
/// directory, output pipes and environment.
pub(crate) fn command(script: &str) -> Command {
    let mut sh = Command::new("sh");
    sh.arg("-c").arg(WRAPPER).arg("sh").arg(script);
    sh
}

impl Group {
    /// Starts `command` (from [`command`]) as the leader of a new session,
    /// its watchdog beside it. On Linux, also makes this process a child
    /// subreaper (once).
    pub(crate) fn spawn(mut command: Command) -> io::Result<(Group, Child)> {
        #[cfg(target_os = "linux")]
        become_subreaper();
        command.stdin(Stdio::piped());
        // SAFETY: between fork and exec only `setsid(2)` runs, a single
        // system call that is async-signal-safe and allocates nothing.
        #[allow(unsafe_code)]
        unsafe {
            command.pre_exec(|| {
                rustix::process::setsid()?;
                Ok(())
            });
        }
        let mut running = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
        let mut child = command.spawn()?;
        let watch = child.stdin.take();
        let Ok(id) = i32::try_from(child.id()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(io::Error::other("a pid out of range"));
        };
        running.insert(id);
        Ok((Group { id, watch }, child))
    }

    /// Kills every process of the group (SIGKILL). Call it before the
    /// command is reaped (or while the watchdog lives), so the group id
    /// cannot have been reused.
    pub(crate) fn kill(&mut self) {
        if self.watch.is_none() {
            return;
        }
        if let Some(pid) = Pid::from_raw(self.id).filter(|_| self.id > 1) {
            let _ = kill_process_group(pid, Signal::KILL);
        }
        self.watch = None;
        RUNNING
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.id);
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Makes this process the reaper of its orphaned descendants (once).
#[cfg(target_os = "linux")]
fn become_subreaper() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
    });
}

/// Kills and reaps the children this process adopted that escaped their
/// command's session or group: those in a session and group that are
/// neither this process's own nor a running command's (a finished
/// command's watchdog among them). Children this process started itself
/// share its group and session and are left alone. Their own children, adopted in turn, go in the next round.
pub(crate) fn reap_escaped() {
    #[cfg(target_os = "linux")]
    for _ in 0..16 {
        let running = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
        let escaped = escaped_children(&running);
        if escaped.is_empty() {
            break;
        }
        for pid in escaped {
            let _ = rustix::process::kill_process(pid, Signal::KILL);
            let _ = rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::empty());
        }
    }
}

#[cfg(target_os = "linux")]
fn escaped_children(running: &BTreeSet<i32>) -> Vec<Pid> {
    // Group and session ids are read from `/proc/<pid>/stat`, not from
    // `getpgrp`/`getsid`/`getpgid`: those answer 0 when the leader lives
    // outside this PID namespace (a container), and rustix's wrappers take
    // that 0 for a non-zero `Pid`.
    let Some(own) = group_and_session("self") else {
        return Vec::new();
    };
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    let mut found = BTreeSet::new();
    for task in tasks.flatten() {
        let Ok(text) = std::fs::read_to_string(task.path().join("children")) else {
            continue;
        };
        found.extend(
            text.split_whitespace()
                .filter_map(|p| p.parse::<i32>().ok()),
        );
    }
    found
        .into_iter()
        .filter(|&pid| {
            // A process that cannot be looked at (gone meanwhile) is left.
            group_and_session(&pid.to_string()).is_some_and(|(group, session)| {
                (session != own.1 || group != own.0)
                    && !running.contains(&session)
                    && !running.contains(&group)
            })
        })
        .filter_map(Pid::from_raw)
        .collect()
}

/// The process group and session of `/proc/<pid>`, `pid` being a number
/// or `self`.
#[cfg(target_os = "linux")]
fn group_and_session(pid: &str) -> Option<(i32, i32)> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// The group and session fields of a `/proc/<pid>/stat` line: the 5th and
/// 6th, counted after the command name, which is in parentheses and may
/// itself hold spaces and parentheses.
#[cfg(any(test, target_os = "linux"))]
fn parse_stat(line: &str) -> Option<(i32, i32)> {
    let rest = &line[line.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace().skip(2); // state, ppid
    let group = fields.next()?.parse().ok()?;
    let session = fields.next()?.parse().ok()?;
    Some((group, session))
}

#[cfg(test)]
mod tests {
    use super::parse_stat;

    #[test]
    fn stat_fields_are_found_past_a_command_name_with_spaces_and_parentheses() {
        let line = "4242 (we (ird) name) S 1 4240 4239 34816 4242 4194560 0 0";
        assert_eq!(parse_stat(line), Some((4240, 4239)));
    }

    #[test]
    fn a_leader_outside_the_namespace_reads_as_zero_and_does_not_panic() {
        assert_eq!(parse_stat("7 (sh) S 0 0 0 0 -1"), Some((0, 0)));
        assert_eq!(parse_stat("7 (sh) S"), None);
        assert_eq!(parse_stat("garbage"), None);
    }
}
