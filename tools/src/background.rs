//! Background shell commands (`shell` with `background: true`,
//! `shell_output`, `shell_kill`, the REPL's `/shells`).
//!
//! A background command starts as `shell` starts one: `sh -c` in a
//! session and process group of its own with the watchdog beside it (see
//! [`crate::group`]), in the session's sandbox, without the API keys. Its
//! stdout and stderr, as they come, go straight to one file under the
//! session's spill folder (`<state>/projects/<slug>/spills/<session>/`),
//! so revolve holds no buffer that grows: `shell_output` reads the file
//! from where the last read stopped, returns up to
//! [`BACKGROUND_READ_BYTES`] as it is and, past that, its head and tail
//! with the file's path and the byte range to read (the output "spilled").
//! A monitor thread per command notes when it exits (its group is then
//! killed: nothing it started outlives it, as with `shell`) and kills it
//! when its file passes [`BACKGROUND_FILE_CAP`].
//!
//! At most [`BACKGROUND_SHELLS`] run at once per session; one more is
//! refused with a note. [`end_all`] kills every command of a session with
//! its group (the session's end), and the watchdog does it if revolve dies.
//!
//! The registry is this process's (a `static`): the ids (`bg1`, `bg2`, …)
//! count per session, the session being known by its name (which a
//! compaction's fresh file keeps), else its id.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;

use revolve_core::policy::{
    BACKGROUND_FILE_CAP, BACKGROUND_READ_BYTES, BACKGROUND_SHELLS, DIR_MODE, FILE_MODE,
};
use revolve_core::record::BackgroundEvent;
use revolve_core::sandbox::Enforcement;

use crate::group::{self, Group};
use crate::shell::{Confinement, SHELL_POLL};
use crate::{Outcome, API_KEY_VARS};

/// A background command as `/shells` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listed {
    /// Its id (`bg1`, …).
    pub id: String,
    /// The command line.
    pub command: String,
    /// How it ended, or `None` while it runs.
    pub ended: Option<String>,
    /// The file holding its output.
    pub file: PathBuf,
    /// How many bytes it has written.
    pub bytes: u64,
}

/// One background command.
struct Job {
    command: String,
    file: PathBuf,
    /// Where the last read stopped.
    read_to: u64,
    live: Arc<Mutex<Live>>,
    /// Its sandbox's temp dir, removed when the job is dropped.
    _tmp: Option<tempfile::TempDir>,
}

/// What the monitor thread and the callers share.
struct Live {
    group: Group,
    child: Option<Child>,
    tag: String,
    /// How it ended, once it did.
    ended: Option<String>,
    /// Its end was told to the model (a read or a kill said it).
    told: bool,
}

/// The jobs, by session and id; and the count of ids each session used.
#[derive(Default)]
struct Registry {
    jobs: BTreeMap<(String, String), Job>,
    counts: BTreeMap<String, u64>,
}

static REGISTRY: Mutex<Option<Registry>> = Mutex::new(None);

fn registry<T>(f: impl FnOnce(&mut Registry) -> T) -> T {
    let mut guard = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    f(guard.get_or_insert_with(Registry::default))
}

/// Starts `command` in the background for `session`; its output goes to
/// a file in `spills`. The outcome names its id, or says why it did not
/// start.
pub(crate) fn start(
    root: &Path,
    session: &str,
    command: &str,
    sandbox: Confinement<'_>,
    spills: &Path,
) -> Outcome {
    let running = registry(|r| {
        r.jobs
            .iter()
            .filter(|((s, _), job)| s == session && job.ended().is_none())
            .count()
    });
    if running >= BACKGROUND_SHELLS {
        return Outcome::text(format!(
            "error: {running} background commands are running, the most a session may have; \
             stop one with shell_kill first"
        ));
    }
    let id = registry(|r| {
        let n = r.counts.entry(session.to_owned()).or_default();
        *n += 1;
        format!("bg{n}")
    });
    let file = spills.join(format!("shell-{id}.log"));
    let out = match open_output(spills, &file) {
        Ok(out) => out,
        Err(e) => {
            return Outcome::text(format!(
                "error: not started: cannot make its output file {}: {e}",
                file.display()
            ))
        }
    };
    let mut sh = group::command(command);
    let tag = group::tag();
    let tmp = match &sandbox.policy.enforcement {
        Enforcement::Refused(why) => return Outcome::text(why.clone()),
        Enforcement::Unsandboxed => None,
        Enforcement::Sandboxed { close_network } => {
            let tmp = match tempfile::Builder::new().prefix("revolve-tmp-").tempdir() {
                Ok(tmp) => tmp,
                Err(e) => {
                    return Outcome::text(format!(
                        "error: not started: cannot make the command's temp dir: {e}"
                    ))
                }
            };
            if let Err(e) = crate::sandbox::confine(
                &mut sh,
                sandbox.policy,
                *close_network,
                root,
                tmp.path(),
                sandbox.protect,
            ) {
                return Outcome::text(format!("error: not started: {e}"));
            }
            Some(tmp)
        }
    };
    let err = match out.try_clone() {
        Ok(err) => err,
        Err(e) => return Outcome::text(format!("error: not started: {e}")),
    };
    sh.current_dir(root)
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err))
        .env(group::SESSION_VAR, session)
        .env(group::COMMAND_VAR, &tag);
    if let Some(tmp) = &tmp {
        sh.env("TMPDIR", tmp.path());
    }
    for name in API_KEY_VARS {
        sh.env_remove(name);
    }
    let (group, child) = match Group::spawn(sh) {
        Ok(started) => started,
        Err(e) => return Outcome::text(format!("error: cannot start sh: {e}")),
    };
    let live = Arc::new(Mutex::new(Live {
        group,
        child: Some(child),
        tag,
        ended: None,
        told: false,
    }));
    monitor(live.clone(), file.clone());
    registry(|r| {
        r.jobs.insert(
            (session.to_owned(), id.clone()),
            Job {
                command: command.to_owned(),
                file: file.clone(),
                read_to: 0,
                live,
                _tmp: tmp,
            },
        )
    });
    let mut outcome = Outcome::text(format!(
        "started {id} in the background; read its output with shell_output(id: \"{id}\"), \
         stop it with shell_kill(id: \"{id}\"); it is killed when the session ends"
    ));
    outcome.effects.background = Some((
        id,
        BackgroundEvent::Started {
            command: command.to_owned(),
            file: file.to_string_lossy().into_owned(),
        },
    ));
    outcome
}

/// What the command `id` of `session` printed since the last read, and
/// whether it ended.
pub(crate) fn output(session: &str, id: &str) -> Outcome {
    let found = registry(|r| {
        let job = r.jobs.get_mut(&(session.to_owned(), id.to_owned()))?;
        // Its end is read before its file, so what it printed before it
        // ended is all in the file.
        let ended = job.ended();
        let (text, from, to) = read_since(&job.file, job.read_to);
        job.read_to = to;
        let newly = ended.is_some() && !std::mem::replace(&mut job.lock().told, true);
        Some((text, from, to, ended, newly, job.file.clone()))
    });
    let Some((text, from, to, ended, newly, file)) = found else {
        return unknown(session, id);
    };
    let bytes = to - from;
    let spilled = text.len() > BACKGROUND_READ_BYTES;
    let mut out = match &ended {
        Some(status) => format!("{id} ended ({status})"),
        None => format!("{id} is running"),
    };
    match bytes {
        0 => out.push_str("; nothing new since the last read"),
        _ if spilled => {
            let note = format!(
                "; the whole of bytes {from}..{to} is in {}: read parts of it with shell \
                 (tail -c, sed -n)",
                file.display()
            );
            out.push_str(&format!("; {bytes} new bytes:\n"));
            out.push_str(&revolve_core::tools::cut(
                &text,
                BACKGROUND_READ_BYTES / 2,
                BACKGROUND_READ_BYTES / 4,
                &note,
            ));
        }
        _ => {
            out.push_str(&format!("; {bytes} new bytes:\n"));
            out.push_str(&text);
        }
    }
    let mut outcome = Outcome::text(out);
    outcome.effects.background = Some(match ended {
        Some(status) if newly => (id.to_owned(), BackgroundEvent::Ended { status }),
        _ => (id.to_owned(), BackgroundEvent::Read { bytes, spilled }),
    });
    outcome
}

/// Kills the command `id` of `session` with its whole group.
pub(crate) fn kill(session: &str, id: &str) -> Outcome {
    let found = registry(|r| {
        let job = r.jobs.get(&(session.to_owned(), id.to_owned()))?;
        let mut live = job.lock();
        let before = live.ended.clone();
        live.stop("killed");
        let told = std::mem::replace(&mut live.told, true);
        Some((before, told, live.ended.clone().unwrap_or_default()))
    });
    match found {
        None => unknown(session, id),
        Some((Some(status), true, _)) => {
            Outcome::text(format!("{id} had already ended ({status})"))
        }
        Some((before, _, status)) => {
            let text = match before {
                Some(status) => format!("{id} had already ended ({status})"),
                None => format!("killed {id} and everything it started"),
            };
            let mut outcome = Outcome::text(text);
            outcome.effects.background = Some((id.to_owned(), BackgroundEvent::Ended { status }));
            outcome
        }
    }
}

/// The background commands of `session`, in the order they started.
pub fn list(session: &str) -> Vec<Listed> {
    let mut listed: Vec<(u64, Listed)> = registry(|r| {
        r.jobs
            .iter()
            .filter(|((s, _), _)| s == session)
            .map(|((_, id), job)| {
                let n = id.trim_start_matches("bg").parse().unwrap_or(u64::MAX);
                let bytes = std::fs::metadata(&job.file).map_or(0, |m| m.len());
                (
                    n,
                    Listed {
                        id: id.clone(),
                        command: job.command.clone(),
                        ended: job.ended(),
                        file: job.file.clone(),
                        bytes,
                    },
                )
            })
            .collect()
    });
    listed.sort_by_key(|(n, _)| *n);
    listed.into_iter().map(|(_, l)| l).collect()
}

/// Kills the background command `id` of `session` for the user
/// (`/shells kill ID`): how it ended, or `None` when there is none.
pub fn kill_for_user(session: &str, id: &str) -> Option<String> {
    registry(|r| {
        let job = r.jobs.get(&(session.to_owned(), id.to_owned()))?;
        let mut live = job.lock();
        live.stop("killed by the user");
        live.ended.clone()
    })
}

/// Kills every background command of `session` (all of this process's
/// with `None`) with its group, and forgets them: the ids and how each
/// ended, of those still running.
pub fn end_all(session: Option<&str>) -> Vec<(String, String)> {
    let jobs: Vec<((String, String), Job)> = registry(|r| {
        let keys: Vec<_> = r
            .jobs
            .keys()
            .filter(|(s, _)| session.is_none_or(|session| s == session))
            .cloned()
            .collect();
        keys.into_iter()
            .filter_map(|k| r.jobs.remove(&k).map(|j| (k, j)))
            .collect()
    });
    let mut ended = Vec::new();
    for ((_, id), job) in jobs {
        let mut live = job.lock();
        if live.ended.is_none() {
            live.stop("killed at the session's end");
            ended.push((id, live.ended.clone().unwrap_or_default()));
        }
    }
    ended
}

impl Job {
    fn lock(&self) -> std::sync::MutexGuard<'_, Live> {
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn ended(&self) -> Option<String> {
        self.lock().ended.clone()
    }
}

impl Live {
    /// Kills the group (if it still runs) and reaps the command; `how` is
    /// its end unless it had one.
    fn stop(&mut self, how: &str) {
        self.group.kill();
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        group::reap_escaped();
        group::kill_tagged(group::COMMAND_VAR, &self.tag);
        if self.ended.is_none() {
            self.ended = Some(how.to_owned());
        }
    }
}

/// Watches a command: when it exits, its end is noted and its group
/// killed; when its file passes the cap, it is killed.
fn monitor(live: Arc<Mutex<Live>>, file: PathBuf) {
    let spawned = thread::Builder::new()
        .name("background-shell".into())
        .spawn(move || loop {
            {
                let mut live = live.lock().unwrap_or_else(|e| e.into_inner());
                let Some(child) = live.child.as_mut() else {
                    return;
                };
                match child.try_wait() {
                    Ok(Some(status)) => {
                        let how = crate::shell::status_text(status);
                        live.stop(&how);
                        return;
                    }
                    Ok(None) => {}
                    Err(e) => {
                        live.stop(&format!("lost track of it ({e}); killed"));
                        return;
                    }
                }
                if std::fs::metadata(&file).is_ok_and(|m| m.len() > BACKGROUND_FILE_CAP) {
                    live.stop(&format!(
                        "killed: it wrote more than {} MiB",
                        BACKGROUND_FILE_CAP >> 20
                    ));
                    return;
                }
            }
            thread::sleep(SHELL_POLL);
        });
    // Without its monitor a command still ends with the session.
    drop(spawned);
}

/// The file's text from `from` to its end now (lossy UTF-8), and the two
/// offsets.
fn read_since(file: &Path, from: u64) -> (String, u64, u64) {
    let Ok(mut f) = File::open(file) else {
        return (String::new(), from, from);
    };
    if f.seek(SeekFrom::Start(from)).is_err() {
        return (String::new(), from, from);
    }
    let mut bytes = Vec::new();
    // Bounded by the cap the monitor keeps (a read just past it ends there).
    let _ = f.take(BACKGROUND_FILE_CAP).read_to_end(&mut bytes);
    let to = from + bytes.len() as u64;
    (String::from_utf8_lossy(&bytes).into_owned(), from, to)
}

/// Makes the spill folder and the output file, private to the user.
fn open_output(spills: &Path, file: &Path) -> std::io::Result<File> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(DIR_MODE)
            .create(spills)?;
        OpenOptions::new()
            .create(true)
            .append(true)
            .mode(FILE_MODE)
            .open(file)
    }
    #[cfg(not(unix))]
    {
        let _ = (DIR_MODE, FILE_MODE);
        std::fs::create_dir_all(spills)?;
        OpenOptions::new().create(true).append(true).open(file)
    }
}

fn unknown(session: &str, id: &str) -> Outcome {
    let ids: Vec<String> = list(session).into_iter().map(|l| l.id).collect();
    Outcome::text(if ids.is_empty() {
        format!("error: there is no background command {id:?}; none was started")
    } else {
        format!(
            "error: there is no background command {id:?}; the ids are {}",
            ids.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use revolve_core::sandbox::Policy;
    use std::time::{Duration, Instant};

    fn begin(session: &str, command: &str, dir: &Path) -> Outcome {
        let policy = Policy::off();
        start(
            dir,
            session,
            command,
            Confinement {
                policy: &policy,
                protect: &[],
            },
            &dir.join("spills"),
        )
    }

    /// Reads `id` until `done` holds of what was read so far, or 10 s;
    /// the reads, and the last alone.
    fn read_until(session: &str, id: &str, done: impl Fn(&str) -> bool) -> (String, String) {
        let started = Instant::now();
        let mut all = String::new();
        loop {
            let last = output(session, id).output;
            all.push_str(&last);
            all.push('\n');
            if done(&all) || started.elapsed() > Duration::from_secs(10) {
                return (all, last);
            }
            thread::sleep(Duration::from_millis(50));
        }
    }

    #[test]
    fn a_command_runs_on_is_read_since_the_last_read_and_is_killed_with_its_group() {
        let dir = tempfile::tempdir().unwrap();
        let session = "bg-test-read";
        let started = begin(
            session,
            "echo one; sleep 0.3; echo two; sleep 60 & wait",
            dir.path(),
        );
        assert!(
            started.output.starts_with("started bg1"),
            "{}",
            started.output
        );
        assert!(matches!(
            started.effects.background,
            Some((ref id, BackgroundEvent::Started { .. })) if id == "bg1"
        ));
        let (read, _) = read_until(session, "bg1", |t| t.contains("two"));
        assert!(read.contains("one\n"), "{read}");
        assert!(read.contains("bg1 is running"), "{read}");
        // Nothing new: said so.
        let again = output(session, "bg1");
        assert!(again.output.contains("nothing new"), "{}", again.output);
        assert!(matches!(
            again.effects.background,
            Some((_, BackgroundEvent::Read { bytes: 0, .. }))
        ));
        let killed = kill(session, "bg1");
        assert_eq!(killed.output, "killed bg1 and everything it started");
        assert!(matches!(
            killed.effects.background,
            Some((_, BackgroundEvent::Ended { .. }))
        ));
        let after = output(session, "bg1");
        assert!(
            after.output.starts_with("bg1 ended (killed)"),
            "{}",
            after.output
        );
        // The end was told once: the read after it is a read.
        assert!(matches!(
            after.effects.background,
            Some((_, BackgroundEvent::Read { .. }))
        ));
        let listed = list(session);
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].ended.as_deref(), Some("killed"));
        assert!(output(session, "bg7").output.contains("the ids are bg1"));
    }

    #[test]
    fn an_exit_is_noted_once_and_a_long_read_spills_to_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let session = "bg-test-spill";
        let bytes = BACKGROUND_READ_BYTES * 3;
        begin(
            session,
            &format!("head -c {bytes} /dev/zero | tr '\\0' x; exit 3"),
            dir.path(),
        );
        // Read once it ended, so the one read has it all.
        let started = Instant::now();
        while list(session)[0].ended.is_none() && started.elapsed() < Duration::from_secs(10) {
            thread::sleep(Duration::from_millis(20));
        }
        let read = output(session, "bg1").output;
        assert!(
            read.starts_with("bg1 ended (exit status: 3)"),
            "{}",
            &read[..200]
        );
        assert!(
            read.contains(&format!("{bytes} new bytes")),
            "{}",
            &read[..200]
        );
        let file = dir.path().join("spills/shell-bg1.log");
        assert!(
            read.contains(&format!(
                "the whole of bytes 0..{bytes} is in {}",
                file.display()
            )),
            "spilled: {}",
            read.len()
        );
        assert!(read.len() < BACKGROUND_READ_BYTES * 2, "{}", read.len());
        assert_eq!(std::fs::metadata(&file).unwrap().len(), bytes as u64);
    }

    #[test]
    fn a_session_has_a_bounded_count_and_its_end_kills_them_all() {
        let dir = tempfile::tempdir().unwrap();
        let session = "bg-test-bound";
        for n in 1..=BACKGROUND_SHELLS {
            let started = begin(session, "sleep 60", dir.path());
            assert!(
                started.output.starts_with(&format!("started bg{n}")),
                "{}",
                started.output
            );
        }
        let refused = begin(session, "sleep 60", dir.path());
        assert!(
            refused.output.contains("stop one with shell_kill"),
            "{}",
            refused.output
        );
        assert!(refused.effects.background.is_none());
        let ended = end_all(Some(session));
        assert_eq!(ended.len(), BACKGROUND_SHELLS);
        assert!(ended
            .iter()
            .all(|(_, how)| how == "killed at the session's end"));
        assert!(list(session).is_empty());
    }
}
