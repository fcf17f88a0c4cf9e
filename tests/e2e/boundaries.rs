//! Boundaries that hold against a hostile repository (issue 42, items 1,
//! 2, 3, 7, 14, 16, 19): what revolve reads because it sits in the tree
//! never leads out of it; revolve's own `git` runs nothing the repository
//! planted and `.git` is read-only to sandboxed commands; no device node
//! is made; metadata changes are as docs/sandbox.md says; `send` follows
//! no swapped inbox; stale temp files are swept; no command reads the key
//! from revolve's environment.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use revolve_testkit::{FakeReply, FakeServer};
use serde_json::{json, Value};

use crate::common::{records, tool_results, Run, TestEnv};

/// A key no test of the harness has: found anywhere, it leaked.
const KEY: &str = "sk-boundaries-4b1d-never-leaves-revolve";

/// Runs revolve (scripted) with one tool call a round, `calls` being
/// `(tool, arguments)`, then `Done.`; the run and the tool results.
fn calls(
    env: &TestEnv,
    calls: &[(&str, Value)],
    extra: &[&str],
    vars: &[(&str, &str)],
) -> (Run, Vec<String>) {
    let mut replies: Vec<Value> = calls
        .iter()
        .map(|(name, args)| json!({"text": "", "tool_calls": [{"name": name, "arguments": args}]}))
        .collect();
    replies.push(json!({"text": "Done."}));
    let script = env.root.join("script.jsonl");
    let text: String = replies.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(&script, text).unwrap();
    let mut args = vec![
        "--provider",
        "scripted",
        "--script",
        script.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["-p", "go"]);
    let run = env
        .spawn_env(&args, "", vars)
        .finish(Duration::from_secs(60));
    assert_eq!(run.code, Some(0), "{run:?}");
    let results = tool_results(&records(&env.only_session()))
        .into_iter()
        .map(|(_, content)| content)
        .collect();
    (run, results)
}

/// [`calls`] of `shell`, one per command, shells allowed.
fn shells(
    env: &TestEnv,
    commands: &[&str],
    extra: &[&str],
    vars: &[(&str, &str)],
) -> (Run, Vec<String>) {
    let list: Vec<(&str, Value)> = commands
        .iter()
        .map(|c| ("shell", json!({"command": c})))
        .collect();
    let mut args = vec!["--allow-shell"];
    args.extend_from_slice(extra);
    calls(env, &list, &args, vars)
}

/// `git` in `dir` as the user runs it (not revolve's).
fn git(dir: &Path, args: &[&str]) -> bool {
    Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The working directory a repository with `a.txt` committed; false (and
/// said) without git.
fn repository(env: &TestEnv) -> bool {
    crate::common::require("git");
    std::fs::write(env.cwd.join("a.txt"), "a\n").unwrap();
    std::fs::write(env.cwd.join(".gitattributes"), "a.txt filter=planted\n").unwrap();
    assert!(git(&env.cwd, &["init", "-q"]));
    assert!(git(&env.cwd, &["add", "a.txt", ".gitattributes"]));
    assert!(git(
        &env.cwd,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "start"
        ]
    ));
    true
}

/// Every file under `dir`, for a search of what was written.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            out.extend(files_under(&entry.path()));
        } else if kind.is_file() {
            out.push(entry.path());
        }
    }
    out
}

/// The files under `dir` whose bytes hold `needle`.
fn holding(dir: &Path, needle: &str) -> Vec<PathBuf> {
    files_under(dir)
        .into_iter()
        .filter(|f| {
            std::fs::read(f).is_ok_and(|b| b.windows(needle.len()).any(|w| w == needle.as_bytes()))
        })
        .collect()
}

/// Item 1: `AGENTS.md` linked to `/proc/self/environ`, a `CLAUDE.md`
/// further down and a skill's `SKILL.md` linked to a file outside holding
/// a key: nothing of them reaches a request or a file revolve writes;
/// each is said on stderr. A link inside the tree is followed.
#[cfg(unix)]
#[test]
fn instructions_and_skills_linked_out_of_the_repository_are_not_read() {
    use std::os::unix::fs::symlink;
    let env = TestEnv::new("bound-reads");
    std::fs::create_dir_all(env.cwd.join(".git")).unwrap();
    let outside = env.root.join("outside-secret.txt");
    std::fs::write(&outside, "OUTSIDE-SECRET-7f3a\n").unwrap();
    symlink("/proc/self/environ", env.cwd.join("AGENTS.md")).unwrap();
    let deep = env.cwd.join("deep");
    std::fs::create_dir_all(&deep).unwrap();
    symlink(&outside, deep.join("CLAUDE.md")).unwrap();
    // Inside the tree: followed.
    let inner = env.cwd.join("inner");
    std::fs::create_dir_all(&inner).unwrap();
    std::fs::write(env.cwd.join("rules.txt"), "Inner rule: keep it short.\n").unwrap();
    symlink("../rules.txt", inner.join("AGENTS.md")).unwrap();
    let skill = env.cwd.join(".agents/skills/leak");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        env.root.join("skill.md"),
        "---\nname: leak\ndescription: OUTSIDE-SECRET-7f3a\n---\nOUTSIDE-SECRET-7f3a\n",
    )
    .unwrap();
    symlink(env.root.join("skill.md"), skill.join("SKILL.md")).unwrap();

    let server = FakeServer::start(vec![FakeReply::text("Fine.")]).unwrap();
    let url = server.url();
    let mut cmd = env.command(&["--base-url", &url, "-p", "hello"]);
    cmd.current_dir(&inner)
        .env("REVOLVE_API_KEY", KEY)
        .env("OPENAI_API_KEY", KEY);
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let sent = server.requests();
    assert_eq!(sent.len(), 1);
    let body = &sent[0].body;
    assert!(body.contains("Inner rule: keep it short."), "{body}");
    for secret in [KEY, "OUTSIDE-SECRET-7f3a", "REVOLVE_API_KEY=", "PATH="] {
        assert!(!body.contains(secret), "{secret} was sent: {body}");
        assert!(holding(&env.home, secret).is_empty(), "{secret} written");
    }
    assert!(
        stderr.contains("AGENTS.md") && stderr.contains("leads out of the tree"),
        "{stderr}"
    );
    assert!(
        stderr.contains("skill") && stderr.contains("SKILL.md"),
        "{stderr}"
    );

    // From deeper down, the CLAUDE.md linked out is refused the same way.
    let server = FakeServer::start(vec![FakeReply::text("Fine.")]).unwrap();
    let url = server.url();
    let mut cmd = env.command(&["--base-url", &url, "-p", "hello"]);
    cmd.current_dir(&deep).env("REVOLVE_API_KEY", KEY);
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let body = &server.requests()[0].body;
    assert!(
        !body.contains("OUTSIDE-SECRET-7f3a") && !body.contains(KEY),
        "{body}"
    );
    assert!(stderr.contains("CLAUDE.md"), "{stderr}");
}

/// Item 2: a sandboxed command can neither plant an fsmonitor or a hook
/// in `.git` nor move `.git` away, and still writes the rest of the tree,
/// new files at its top included.
#[test]
#[ignore = "needs a kernel that enforces Landlock"]
fn a_sandboxed_command_cannot_write_git() {
    let env = TestEnv::new("bound-git-ro");
    crate::common::require_landlock();
    assert!(repository(&env));
    let config = std::fs::read_to_string(env.cwd.join(".git/config")).unwrap();
    let (_, results) = shells(
        &env,
        &[
            "git config core.fsmonitor 'touch planted'; echo '[core] fsmonitor = x' >> .git/config; \
             echo 'touch planted' > .git/hooks/pre-commit; mv .git moved; \
             echo new > top.txt && echo a2 > a.txt && echo wrote",
        ],
        &[],
        &[],
    );
    assert_eq!(
        std::fs::read_to_string(env.cwd.join(".git/config")).unwrap(),
        config,
        "{results:?}"
    );
    assert!(
        !env.cwd.join(".git/hooks/pre-commit").exists(),
        "{results:?}"
    );
    assert!(!env.cwd.join("moved").exists(), "{results:?}");
    assert!(results[0].contains("wrote"), "{results:?}");
    assert_eq!(
        std::fs::read_to_string(env.cwd.join("top.txt")).unwrap(),
        "new\n"
    );
}

/// Item 2: an fsmonitor and a filter driver planted in `.git/config` (as
/// a command with no sandbox could) do not run when revolve tracks what a
/// shell command changed, under each sandbox mode.
#[test]
fn a_planted_fsmonitor_does_not_run_from_change_tracking() {
    for mode in ["workspace-write", "read-only", "off"] {
        let env = TestEnv::new("bound-fsmonitor");
        if !repository(&env) {
            return;
        }
        let ran = env.root.join("ran");
        let plant = format!("touch {}", ran.display());
        assert!(git(&env.cwd, &["config", "core.fsmonitor", &plant]));
        assert!(git(
            &env.cwd,
            &["config", "filter.planted.clean", &format!("{plant}; cat")]
        ));
        assert!(git(
            &env.cwd,
            &["config", "core.hooksPath", env.root.to_str().unwrap()]
        ));
        let (_, results) = shells(
            &env,
            &["touch -d 2001-01-01 a.txt; echo done"],
            &["--sandbox", mode],
            &[],
        );
        assert!(results[0].contains("done"), "{mode}: {results:?}");
        assert!(!ran.exists(), "{mode}: the planted program ran");
    }
}

/// Item 2: under `--sandbox read-only`, `edit_file` and `write_file`
/// cannot plant in `.git` either; and what is planted there does not run
/// from revolve's own `git`.
#[test]
fn edit_and_write_refuse_git_under_read_only() {
    let env = TestEnv::new("bound-edit-git");
    if !repository(&env) {
        return;
    }
    let ran = env.root.join("ran");
    let config = std::fs::read_to_string(env.cwd.join(".git/config")).unwrap();
    let (_, results) = calls(
        &env,
        &[
            ("read_file", json!({"path": ".git/config"})),
            (
                "edit_file",
                json!({"path": ".git/config", "old_string": "[core]", "new_string": format!("[core]\n\tfsmonitor = touch {}", ran.display())}),
            ),
            (
                "write_file",
                json!({"path": ".git/hooks/post-checkout", "content": format!("#!/bin/sh\ntouch {}\n", ran.display())}),
            ),
            ("shell", json!({"command": "echo b > a.txt; echo done"})),
        ],
        &["--sandbox", "read-only", "--allow-edits", "--allow-shell"],
        &[],
    );
    assert_eq!(
        std::fs::read_to_string(env.cwd.join(".git/config")).unwrap(),
        config
    );
    assert!(
        !env.cwd.join(".git/hooks/post-checkout").exists(),
        "{results:?}"
    );
    for refused in &results[1..3] {
        assert!(
            refused.contains("is in the repository's .git folder"),
            "{results:?}"
        );
    }
    assert!(!ran.exists(), "the planted program ran");
}

/// Item 3: no device node can be made in the tree (as root `mknod` would
/// otherwise reach a disk); a FIFO still can.
#[cfg(target_os = "linux")]
#[test]
#[ignore = "needs root and a kernel that enforces Landlock"]
fn no_device_node_can_be_made_in_the_tree() {
    let env = TestEnv::new("bound-mknod");
    crate::common::require_landlock();
    crate::common::require_root();
    let (_, results) = shells(
        &env,
        &["mknod blk b 7 0; mknod chr c 1 3; mknod \"$TMPDIR/chr\" c 1 3; mkfifo fifo && echo fifo-ok"],
        &[],
        &[],
    );
    assert!(!env.cwd.join("blk").exists(), "{results:?}");
    assert!(!env.cwd.join("chr").exists(), "{results:?}");
    assert!(results[0].contains("fifo-ok"), "{results:?}");
    assert!(
        results[0].contains("Operation not permitted") || results[0].contains("Permission denied"),
        "{results:?}"
    );
}

/// Item 7, as docs/sandbox.md says: Landlock does not govern metadata, so
/// a sandboxed command can change the mode, times and extended
/// attributes of a file it may read outside the tree; it cannot write it.
#[cfg(target_os = "linux")]
#[test]
#[ignore = "needs a kernel that enforces Landlock"]
fn metadata_changes_outside_the_tree_are_as_documented() {
    use std::os::unix::fs::PermissionsExt;
    let env = TestEnv::new("bound-metadata");
    crate::common::require_landlock();
    let outside = env.root.join("outside.txt");
    std::fs::write(&outside, "kept\n").unwrap();
    std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o644)).unwrap();
    let path = outside.display();
    let (_, results) = shells(
        &env,
        &[&format!(
            "chmod 600 {path} && echo chmod-ok; touch -d 2001-01-01 {path} && echo touch-ok; \
             echo changed > {path} || echo write-refused"
        )],
        &[],
        &[],
    );
    let meta = std::fs::metadata(&outside).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600, "{results:?}");
    assert!(
        results[0].contains("chmod-ok") && results[0].contains("touch-ok"),
        "{results:?}"
    );
    assert!(results[0].contains("write-refused"), "{results:?}");
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "kept\n");
}

/// Item 19: a command walking up from its shell to every ancestor's
/// `/proc/<pid>/environ` finds no key, in any sandbox mode: not even
/// reversed (which the output's redaction would not catch).
#[cfg(target_os = "linux")]
#[test]
fn no_command_reads_the_key_from_revolves_environment() {
    let walk = "p=$$; while [ \"$p\" -gt 1 ]; do \
                tr '\\0' '\\n' < /proc/$p/environ 2>/dev/null | grep -a 'API_KEY' | rev; \
                p=$(awk '/^PPid:/{print $2}' /proc/$p/status); done; echo walked";
    let reversed: String = KEY.chars().rev().collect();
    for mode in ["workspace-write", "read-only", "off"] {
        let env = TestEnv::new("bound-environ");
        let (run, results) = shells(
            &env,
            &[walk],
            &["--sandbox", mode],
            &[("REVOLVE_API_KEY", KEY), ("OPENAI_API_KEY", KEY)],
        );
        assert!(results[0].contains("walked"), "{mode}: {results:?}");
        assert!(
            !results[0].contains(&reversed) && !results[0].contains("[key]"),
            "{mode}: {results:?}"
        );
        let log = std::fs::read_to_string(env.only_session()).unwrap();
        assert!(!log.contains(&reversed) && !log.contains(KEY), "{mode}");
        assert!(!run.stdout.contains(&reversed), "{mode}");
    }
}

/// Item 14: with the state root inside the tree (revolve run from the
/// home folder, say), a sandboxed command cannot write it; and an inbox
/// swapped for a symlink (as a command with no sandbox could) is not
/// followed by `revolve send`: it fails saying so, and nothing is written
/// where the link leads.
#[cfg(unix)]
#[test]
fn send_follows_no_swapped_inbox_and_the_state_is_read_only_to_commands() {
    let env = TestEnv::new("bound-inbox");
    let state = env.cwd.join(".state");
    let state_s = state.to_str().unwrap().to_owned();
    let vars = [("XDG_STATE_HOME", state_s.as_str())];
    if TestEnv::landlock() {
        let script = env.root.join("script.jsonl");
        let call = json!({"text": "", "tool_calls": [{"name": "shell", "arguments": {"command": "touch \"$XDG_STATE_HOME/task-agent/planted\" && echo wrote; for d in \"$XDG_STATE_HOME\"/task-agent/projects/*/inbox; do touch \"$d/letter\" && echo inbox-ok; done; echo done"}}]});
        std::fs::write(&script, format!("{call}\n{}\n", json!({"text": "Done."}))).unwrap();
        let run = env
            .spawn_env(
                &[
                    "--provider",
                    "scripted",
                    "--script",
                    script.to_str().unwrap(),
                    "--allow-shell",
                    "-p",
                    "go",
                ],
                "",
                &vars,
            )
            .finish(Duration::from_secs(60));
        assert_eq!(run.code, Some(0), "{run:?}");
        assert!(
            !state.join("task-agent/planted").exists(),
            "the state root was written"
        );
        // The project's inboxes stay writable (`revolve send` from a command).
        let log = files_under(&state.join("task-agent/projects"))
            .into_iter()
            .find(|f| f.extension().is_some_and(|e| e == "jsonl"))
            .expect("a session log");
        let results = tool_results(&records(&log));
        assert!(
            results[0].1.contains("inbox-ok") && !results[0].1.contains("wrote"),
            "{results:?}"
        );
    }

    // A session named bob, waiting for its next line.
    let script = env.root.join("bob.jsonl");
    std::fs::write(
        &script,
        format!(
            "{}\n{}\n",
            json!({"text": "Hi."}),
            json!({"text": "Again."})
        ),
    )
    .unwrap();
    let mut bob = env.spawn_open_env(
        &[
            "--name",
            "bob",
            "--provider",
            "scripted",
            "--script",
            script.to_str().unwrap(),
        ],
        "hello\n",
        &vars,
    );
    let projects = state.join("task-agent/projects");
    let running = || {
        std::fs::read_dir(&projects).is_ok_and(|mut ps| {
            ps.any(|p| {
                p.is_ok_and(|p| {
                    std::fs::read_dir(p.path().join("running")).is_ok_and(|mut locks| {
                        locks.any(|l| {
                            l.is_ok_and(|l| {
                                std::fs::read_to_string(l.path())
                                    .is_ok_and(|t| t.contains("\"name\":\"bob\""))
                            })
                        })
                    })
                })
            })
        })
    };
    assert!(
        crate::common::wait_until(Duration::from_secs(20), running),
        "bob never ran"
    );
    let sent = env.run_env(&["send", "bob", "first"], "", &vars);
    assert_eq!(sent.code, Some(0), "{sent:?}");
    let project = std::fs::read_dir(&projects)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let inbox = project
        .join("inbox")
        .join(env.cwd.to_string_lossy().replace('/', "-"))
        .join("bob");
    assert!(inbox.is_dir());
    let elsewhere = env.root.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::rename(&inbox, env.root.join("kept-inbox")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &inbox).unwrap();
    let sent = env.run_env(&["send", "bob", "second"], "", &vars);
    assert_ne!(sent.code, Some(0), "{sent:?}");
    assert!(sent.stderr.contains("the inbox was swapped"), "{sent:?}");
    assert_eq!(sent.stderr.lines().count(), 1, "{sent:?}");
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    bob.close_stdin();
    let run = bob.finish(Duration::from_secs(30));
    assert_eq!(run.code, Some(0), "{run:?}");
}

/// Item 16: temp files a write killed between its temp file and its
/// rename left in the memory folders (a refinement's memory write) are
/// removed when revolve next starts; one of a process still running, and
/// the memory files, are kept.
#[test]
fn stale_temp_files_are_swept_at_start() {
    let env = TestEnv::new("bound-sweep");
    let slug = env.cwd.to_string_lossy().replace('/', "-");
    let memory = env
        .home
        .join(".config/task-agent/projects")
        .join(&slug)
        .join("memory");
    let global = env.home.join(".config/task-agent/memory");
    std::fs::create_dir_all(&memory).unwrap();
    std::fs::create_dir_all(&global).unwrap();
    // A pid no process has: above the kernel's largest.
    let dead = 4_194_305;
    let stale = [
        memory.join(format!(".notes.md.{dead}-0.tmp")),
        global.join(format!(".habits.md.{dead}-2.tmp")),
    ];
    for path in &stale {
        std::fs::write(path, "half a rewrite").unwrap();
    }
    let live = memory.join(format!(".notes.md.{}-0.tmp", std::process::id()));
    std::fs::write(&live, "being written").unwrap();
    std::fs::write(memory.join("notes.md"), "kept\n").unwrap();
    let script = env.root.join("script.jsonl");
    std::fs::write(&script, format!("{}\n", json!({"text": "Hi."}))).unwrap();
    let run = env.run(
        &[
            "--provider",
            "scripted",
            "--script",
            script.to_str().unwrap(),
            "-p",
            "hi",
        ],
        "",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    for path in &stale {
        assert!(!path.exists(), "{} was left", path.display());
    }
    assert!(live.exists(), "a running process's temp file was removed");
    assert_eq!(
        std::fs::read_to_string(memory.join("notes.md")).unwrap(),
        "kept\n"
    );
}
