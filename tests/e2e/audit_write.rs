//! Issue 27, items 6, 7, 12 and 13, end to end against the real binary:
//! which paths an edit may write and how the write lands. One test (or
//! two) per item, its number first in the test's doc; each failed before
//! its fix.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use revolve_testkit::{FakeReply, FakeServer};
use serde_json::{json, Value};

use crate::common::{records, tool_results, Run, TestEnv};

/// A fake model server answering `replies` in order.
fn serve(replies: Vec<FakeReply>) -> FakeServer {
    FakeServer::start(replies).expect("start the fake model server")
}

/// A reply calling these tools, each `(id, name, arguments)`.
fn calls(list: &[(&str, &str, Value)]) -> FakeReply {
    FakeReply::ToolCalls {
        text: String::new(),
        calls: list
            .iter()
            .map(|(id, name, args)| ((*id).to_owned(), (*name).to_owned(), args.to_string()))
            .collect(),
        usage: Some((10, list.len() as u64)),
    }
}

fn read(id: &str, path: &str) -> FakeReply {
    calls(&[(id, "read_file", json!({ "path": path }))])
}

fn edit(id: &str, path: &str, old: &str, new: &str) -> FakeReply {
    calls(&[(
        id,
        "edit_file",
        json!({ "path": path, "old_string": old, "new_string": new }),
    )])
}

fn write(id: &str, path: &str, content: &str) -> FakeReply {
    calls(&[(
        id,
        "write_file",
        json!({ "path": path, "content": content }),
    )])
}

/// The model asks for a read grant of `path` (`--grant` answers it).
fn grant(id: &str, path: &Path) -> FakeReply {
    calls(&[(id, "request_file_grant", json!({ "path": path }))])
}

/// `revolve --base-url URL ARGS`, no input, at most a minute.
fn revolve(env: &TestEnv, server: &FakeServer, args: &[&str]) -> Run {
    revolve_env(env, server, args, &[])
}

fn revolve_env(env: &TestEnv, server: &FakeServer, args: &[&str], vars: &[(&str, &str)]) -> Run {
    let url = server.url();
    let mut all = vec!["--base-url", url.as_str()];
    all.extend_from_slice(args);
    let mut running = env.spawn_open_env(&all, "", vars);
    running.close_stdin();
    let run = running.finish(Duration::from_secs(60));
    assert_eq!(run.code, Some(0), "revolve {args:?}: {run:?}");
    run
}

/// The result of tool call `id` in any session log of `env`.
fn result(env: &TestEnv, id: &str) -> String {
    env.session_files()
        .iter()
        .flat_map(|f| tool_results(&records(f)))
        .find(|(call, _)| call == id)
        .unwrap_or_else(|| panic!("no result for {id}"))
        .1
}

fn text(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// A folder beside the working tree (outside it), with `name` in it.
fn outside(env: &TestEnv) -> PathBuf {
    let dir = env.root.join("outside");
    std::fs::create_dir_all(dir.join(".ssh")).unwrap();
    std::fs::write(dir.join("config.txt"), "safe = true\n").unwrap();
    dir
}

/// Item 6: a read grant (`request_file_grant`, `--grant`) is not a write grant: with
/// `--allow-edits` and no terminal, `edit_file` of a granted file and
/// `write_file` creating `authorized_keys` in the granted folder are both
/// refused with a result naming the path as outside the tree; nothing
/// changes.
#[test]
fn a_read_grant_does_not_let_edits_write_outside_the_tree() {
    let env = TestEnv::new("write-grant");
    let out = outside(&env);
    let config = out.join("config.txt");
    let keys = out.join(".ssh/authorized_keys");
    let server = serve(vec![
        grant("call_0", &out),
        read("call_1", config.to_str().unwrap()),
        edit("call_2", config.to_str().unwrap(), "true", "false"),
        write(
            "call_3",
            keys.to_str().unwrap(),
            "ssh-ed25519 AAAA attacker\n",
        ),
        FakeReply::text("Done."),
    ]);
    let grant = out.to_str().unwrap();
    revolve(
        &env,
        &server,
        &["--grant", grant, "--allow-edits", "-p", "go"],
    );
    // The read is allowed (that is what the grant is for).
    assert!(result(&env, "call_1").contains("safe = true"));
    for id in ["call_2", "call_3"] {
        let said = result(&env, id);
        assert!(
            said.starts_with("error: ") && said.contains("is outside the working tree"),
            "{id}: {said}"
        );
        assert!(said.contains("a grant allows reading only"), "{said}");
    }
    assert_eq!(text(&config), "safe = true\n");
    assert!(!keys.exists(), "authorized_keys was created");
}

/// Item 6: at a terminal, a write outside the tree is asked about even
/// with `--allow-edits`, the question naming the canonical path as outside
/// the working tree; `y` writes it, `n` refuses the next one.
#[test]
fn at_a_terminal_a_write_outside_the_tree_is_asked_naming_it_outside() {
    let env = TestEnv::new("write-grant-ask");
    let out = outside(&env);
    let one = out.join("one.txt");
    let two = out.join("two.txt");
    let server = serve(vec![
        grant("call_0", &out),
        write("call_1", one.to_str().unwrap(), "1\n"),
        write("call_2", two.to_str().unwrap(), "2\n"),
        FakeReply::text("Over to you."),
    ]);
    let url = server.url();
    let grant = out.to_str().unwrap();
    let mut term = env.terminal(
        &["--base-url", &url, "--grant", grant, "--allow-edits"],
        100,
        &[],
    );
    let within = Duration::from_secs(20);
    term.wait_for("› ", within);
    term.type_keys("write them\r");
    let asked = |p: &Path| {
        format!(
            "apply this change to {} (outside the working tree)?",
            p.display()
        )
    };
    term.wait_for(&format!("{} [y]es, [n]o: ", asked(&one)), within);
    // "always" is not offered; typed anyway, it is a yes for this one only.
    term.type_keys("a\r");
    term.wait_for(&asked(&two), within);
    term.type_keys("n\r");
    term.wait_for("Over to you.", within);
    term.wait_for_next("› ", within);
    term.type_keys("\x04");
    let (ok, screen) = term.finish(within);
    assert!(ok, "{screen}");
    assert_eq!(text(&one), "1\n");
    assert!(!two.exists(), "{screen}");
    assert!(result(&env, "call_1").starts_with("created "));
    assert!(result(&env, "call_2").starts_with("error: the user refused"));
}

/// Item 6: revolve's own state folder (session logs, spills, the content
/// store) is never written by a tool, even where it lies inside the
/// working tree and edits are allowed.
#[test]
fn revolves_own_state_folder_is_never_written_by_a_tool() {
    let env = TestEnv::new("write-own");
    let state = env.cwd.join("state");
    let state_var = state.to_str().unwrap().to_owned();
    let vars = [("XDG_STATE_HOME", state_var.as_str())];
    // A first session makes the sessions folder.
    let first = serve(vec![FakeReply::text("Hi.")]);
    revolve_env(&env, &first, &["-p", "hi"], &vars);
    let sessions = walk(&state)
        .into_iter()
        .find(|p| p.ends_with("sessions") && p.is_dir())
        .expect("the sessions folder");
    let planted = sessions.join("planted.jsonl");
    let rel = planted.strip_prefix(&env.cwd).unwrap().to_str().unwrap();
    let server = serve(vec![
        write("call_1", rel, "{\"type\":\"header\"}\n"),
        FakeReply::text("Done."),
    ]);
    revolve_env(&env, &server, &["--allow-edits", "-p", "plant"], &vars);
    assert!(
        !planted.exists(),
        "a tool wrote into revolve's state folder"
    );
    let logs: Vec<PathBuf> = std::fs::read_dir(&sessions)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    let said = logs
        .iter()
        .flat_map(|f| tool_results(&records(f)))
        .find(|(id, _)| id == "call_1")
        .expect("the result of call_1")
        .1;
    assert!(
        said.starts_with("error: write_file: ") && said.contains("revolve's own state folder"),
        "{said}"
    );
}

/// Every path under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            out.extend(walk(&path));
        }
        out.push(path);
    }
    out
}

/// Item 7: while a thread swaps the folder `sub` for a symlink to a folder
/// outside the tree and back, 200 `write_file`s of `sub/N.txt` land inside
/// the tree or fail; none lands outside, and every write logged as done
/// is in the tree.
#[test]
fn a_folder_swapped_for_a_symlink_never_lets_a_write_land_outside() {
    const WRITES: usize = 200; // not policy: the test's size
    const PER_REPLY: usize = 10; // not policy: the test's size
    let env = TestEnv::new("write-race");
    let out = env.root.join("outside");
    std::fs::create_dir_all(&out).unwrap();
    let sub = env.cwd.join("sub");
    let real = env.cwd.join("sub.real");
    std::fs::create_dir_all(&sub).unwrap();
    let mut replies: Vec<FakeReply> = (0..WRITES / PER_REPLY)
        .map(|r| {
            let list: Vec<(String, Value)> = (0..PER_REPLY)
                .map(|i| {
                    let n = r * PER_REPLY + i;
                    (
                        format!("call_{n}"),
                        json!({"path": format!("sub/{n}.txt"), "content": format!("{n}\n")}),
                    )
                })
                .collect();
            let borrowed: Vec<(&str, &str, Value)> = list
                .iter()
                .map(|(id, args)| (id.as_str(), "write_file", args.clone()))
                .collect();
            calls(&borrowed)
        })
        .collect();
    replies.push(FakeReply::text("Done."));
    let server = serve(replies);

    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (stop, sub, real, out) = (stop.clone(), sub.clone(), real.clone(), out.clone());
        std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                std::fs::rename(&sub, &real).unwrap();
                std::os::unix::fs::symlink(&out, &sub).unwrap();
                std::thread::sleep(Duration::from_micros(300));
                std::fs::remove_file(&sub).unwrap();
                std::fs::rename(&real, &sub).unwrap();
                std::thread::sleep(Duration::from_micros(300));
                swaps += 1;
            }
            swaps
        })
    };
    let url = server.url();
    let run = env
        .spawn(
            &["--base-url", &url, "--allow-edits", "-p", "write them"],
            "",
        )
        .finish(Duration::from_secs(180));
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(swaps > 10, "the folder was swapped {swaps} times only");

    let landed: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        landed.is_empty(),
        "{} of {WRITES} writes landed outside the tree: {landed:?}",
        landed.len()
    );
    // Every write logged as done is in the tree, holding its content.
    let log = records(&env.only_session());
    let done: Vec<&Value> = log
        .iter()
        .filter(|r| r["type"] == "written" && r["error"].is_null())
        .collect();
    println!(
        "{} of {WRITES} writes done, the rest refused, over {swaps} swaps",
        done.len()
    );
    assert!(!done.is_empty(), "no write succeeded at all");
    for w in done {
        let path = PathBuf::from(w["path"].as_str().unwrap());
        assert!(path.starts_with(&sub), "{path:?}");
        let n = path.file_stem().unwrap().to_str().unwrap();
        assert_eq!(text(&path), format!("{n}\n"), "{path:?}");
    }
}

/// Item 12: two sessions writing one file. Session A, at a terminal, has
/// its change of `a.txt` staged and waits for the user's answer; session B
/// reads and writes `a.txt` meanwhile. A's "yes" then finds the file
/// changed since A read it: A's write is refused with a result telling the
/// model to read the file again, and B's change stays.
#[test]
fn a_write_checks_the_file_still_holds_what_the_session_read() {
    let env = TestEnv::new("write-lost-update");
    let file = env.cwd.join("a.txt");
    std::fs::write(&file, "zero\n").unwrap();
    let a = serve(vec![
        read("call_a1", "a.txt"),
        write("call_a2", "a.txt", "from A\n"),
        FakeReply::text("A is done."),
    ]);
    let b = serve(vec![
        read("call_b1", "a.txt"),
        write("call_b2", "a.txt", "from B\n"),
        FakeReply::text("B is done."),
    ]);
    let url = a.url();
    let mut term = env.terminal(&["--base-url", &url], 100, &[]);
    let within = Duration::from_secs(20);
    term.wait_for("› ", within);
    term.type_keys("change it\r");
    term.wait_for("apply this change to a.txt?", within);
    // A waits at its question; B writes the file.
    revolve(&env, &b, &["--allow-edits", "-p", "change it too"]);
    assert_eq!(text(&file), "from B\n");
    term.type_keys("y\r");
    term.wait_for("A is done.", within);
    term.wait_for_next("› ", within);
    term.type_keys("\x04");
    let (ok, screen) = term.finish(within);
    assert!(ok, "{screen}");

    assert_eq!(text(&file), "from B\n", "B's update was lost");
    assert!(result(&env, "call_b2").starts_with("changed a.txt"));
    let said = result(&env, "call_a2");
    assert!(
        said.starts_with("error: write_file: cannot write a.txt")
            && said.contains("read it again before changing it")
            && said.ends_with("the file is unchanged"),
        "{said}"
    );
}

/// Item 13: an edit keeps the file's owner and group (where revolve may
/// set them: as root here; skipped otherwise).
#[test]
#[ignore = "needs root"]
fn an_edit_keeps_the_files_owner_and_group() {
    use std::os::unix::fs::MetadataExt;
    let env = TestEnv::new("write-owner");
    let file = env.cwd.join("a.txt");
    std::fs::write(&file, "one\n").unwrap();
    crate::common::require_root();
    std::os::unix::fs::chown(&file, Some(4242), Some(4343)).unwrap();
    let server = serve(vec![
        read("call_1", "a.txt"),
        edit("call_2", "a.txt", "one", "ONE"),
        FakeReply::text("Done."),
    ]);
    revolve(&env, &server, &["--allow-edits", "-p", "change it"]);
    assert_eq!(text(&file), "ONE\n");
    let meta = std::fs::metadata(&file).unwrap();
    assert_eq!((meta.uid(), meta.gid()), (4242, 4343));
}

/// Item 13: an edit of a file with two hard links replaces it at its one
/// name (whole or not at all); the other name keeps the old content, and
/// both the model's result and the user are told.
#[test]
fn an_edit_of_a_hard_linked_file_says_it_splits_the_links() {
    let env = TestEnv::new("write-links");
    let file = env.cwd.join("a.txt");
    let other = env.cwd.join("b.txt");
    std::fs::write(&file, "one\n").unwrap();
    std::fs::hard_link(&file, &other).unwrap();
    let server = serve(vec![
        read("call_1", "a.txt"),
        edit("call_2", "a.txt", "one", "ONE"),
        FakeReply::text("Done."),
    ]);
    let run = revolve(&env, &server, &["--allow-edits", "-p", "change it"]);
    assert_eq!(text(&file), "ONE\n");
    assert_eq!(text(&other), "one\n");
    let note = "note: a.txt had 2 hard links; the edit wrote a new file at this name, and the \
                other 1 name(s) still hold the old content";
    let said = result(&env, "call_2");
    assert!(said.starts_with(note), "{said}");
    assert!(run.stderr.contains(&format!("revolve: {note}")), "{run:?}");
}
