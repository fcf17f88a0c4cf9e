//! `revolve sessions`, naming and resuming by name.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use revolve_testkit::{FakeReply, FakeServer};
use serde_json::Value;
use time::macros::datetime;
use time::OffsetDateTime;

use crate::common::{lines, pairs, records, request_messages, TestEnv};

fn names(json: &str) -> Vec<Value> {
    let list: Value = serde_json::from_str(json).expect("sessions --json is JSON");
    list.as_array()
        .expect("a JSON array")
        .iter()
        .map(|s| s["name"].clone())
        .collect()
}

/// Pins a file's modification time, which the listing reports as the last
/// activity (the one value the pinned clock does not reach).
fn touch(path: &Path, at: OffsetDateTime) {
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_modified(SystemTime::from(at)).unwrap();
}

#[test]
fn named_sessions_are_listed_and_resumed_by_name() {
    let server = FakeServer::start(vec![
        FakeReply::text("Unnamed answer."),
        FakeReply::text("Db answer."),
        FakeReply::text("Db again."),
        FakeReply::text("By path."),
    ])
    .unwrap();
    let url = server.url();
    let env = TestEnv::new("sessions");

    assert_eq!(env.run(&["--base-url", &url], "hi\n").code, Some(0));
    let listed = env.ok(&["sessions"]);
    assert_eq!(
        listed.stdout,
        "no named sessions in this directory\n1 unnamed session not shown: revolve sessions --all lists it\n"
    );
    let unnamed = env.only_session();

    let run = env.run(&["--base-url", &url, "--name", "db"], "hello db\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    let files = env.session_files();
    assert_eq!(files.len(), 2);
    let db = files.iter().find(|f| **f != unnamed).unwrap().clone();
    let header = &records(&db)[0];
    assert_eq!(
        (&header["name"], &header["named"]),
        (&"db".into(), &true.into())
    );

    let table = env.ok(&["sessions"]).stdout;
    let rows: Vec<&str> = table.lines().collect();
    assert_eq!(rows.len(), 3, "a heading, one row, the unnamed: {table}");
    assert!(rows[0].starts_with("NAME "), "{table}");
    assert!(rows[1].starts_with("db "), "{table}");
    assert_eq!(
        rows[2],
        "1 unnamed session not shown: revolve sessions --all lists it"
    );

    let table = env.ok(&["sessions", "--all"]).stdout;
    let mut first_words: Vec<&str> = table
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    first_words.sort();
    assert_eq!(first_words, ["-", "db"], "{table}");

    assert_eq!(names(&env.ok(&["sessions", "--json"]).stdout), ["db"]);
    let all = env.ok(&["sessions", "--all", "--json"]).stdout;
    let mut all_names = names(&all);
    all_names.sort_by_key(|n| n.to_string());
    assert_eq!(all_names, [Value::from("db"), Value::Null]);
    let list: Value = serde_json::from_str(&all).unwrap();
    for s in list.as_array().unwrap() {
        assert!(Path::new(s["path"].as_str().unwrap()).is_file(), "{s}");
        assert_eq!(s["turns"], 1, "{s}");
    }

    // A name is one session's.
    let run = env.run(&["--base-url", &url, "--name", "db"], "another\n");
    assert_eq!(run.code, Some(2), "{run:?}");
    assert_eq!(
        run.stderr,
        "revolve: cannot name the session 'db': another session of this directory has that name \
         (resume it with --resume db)\n"
    );
    assert_eq!(env.session_files().len(), 2, "no file for a refused name");
    assert_eq!(server.requests().len(), 2);

    let before = lines(&unnamed);
    let run = env.run(&["--base-url", &url, "--resume", "db"], "more\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "Db again.\n");
    assert_eq!(
        request_messages(&server.requests()[2].body),
        pairs(&[
            ("user", "hello db"),
            ("assistant", "Db answer."),
            ("user", "more")
        ])
    );
    let recs = records(&db);
    assert!(recs.iter().any(|r| r["type"] == "resumed"));
    assert_eq!(recs.last().unwrap()["turns"], 2);
    assert_eq!(lines(&unnamed), before, "the other session is untouched");
    let transcript = env.ok(&["replay", "db"]).stdout;
    assert!(transcript.starts_with("── session db ("), "{transcript}");
    assert!(transcript.ends_with("> more\nDb again.\n"), "{transcript}");

    // A path resumes that file, whatever its name.
    let path = unnamed.to_str().unwrap();
    let run = env.run(&["--base-url", &url, "--resume", path], "by path\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "By path.\n");
    assert_eq!(
        request_messages(&server.requests()[3].body),
        pairs(&[
            ("user", "hi"),
            ("assistant", "Unnamed answer."),
            ("user", "by path")
        ])
    );
    assert_eq!(env.session_files().len(), 2);
}

#[test]
fn a_slash_name_line_in_a_pipe_names_the_session() {
    let server = FakeServer::start(vec![FakeReply::text("Named by a line.")]).unwrap();
    let env = TestEnv::new("slash-name");
    let run = env.run(&["--base-url", &server.url()], "/name api\nhello\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "Named by a line.\n");
    assert_eq!(
        run.stderr_past_seeding(&env),
        "this session is now named 'api'\n"
    );
    assert_eq!(names(&env.ok(&["sessions", "--json"]).stdout), ["api"]);
    let recs = records(&env.only_session());
    assert_eq!(recs[1]["type"], "renamed");
    assert_eq!(recs.last().unwrap()["name"], "api");
}

#[test]
fn sessions_table() {
    let server = FakeServer::start(vec![
        FakeReply::text("One."),
        FakeReply::text("Two."),
        FakeReply::text("Three."),
        FakeReply::text("Four."),
    ])
    .unwrap();
    let url = server.url();
    let env = TestEnv::new("table");
    for (args, input) in [
        (vec!["--name", "db"], "a\n"),
        (vec![], "b\n"),
        (vec!["--name", "login-bug"], "c\nd\n"),
    ] {
        let mut all = vec!["--base-url", url.as_str()];
        all.extend(args);
        assert_eq!(env.run(&all, input).code, Some(0));
    }
    let files = env.session_files();
    assert_eq!(files.len(), 3);
    // Newest activity first: login-bug, then the unnamed one, then db.
    for file in &files {
        let at = match records(file)[0]["name"].as_str() {
            Some("db") => datetime!(2026-12-02 10:05 UTC),
            None => datetime!(2026-12-02 10:07 UTC),
            _ => datetime!(2026-12-02 10:09 UTC),
        };
        touch(file, at);
    }
    // Touched behind revolve's back (no session claimed the files), which
    // the listing cache does not look for (see `Store::list`): dropped.
    let cache = files[0].parent().unwrap().join(".index");
    std::fs::remove_file(cache).unwrap();

    let named = env.ok(&["sessions"]).stdout;
    let all = env.ok(&["sessions", "--all"]).stdout;
    let json = env.ok(&["sessions", "--all", "--json"]).stdout;
    insta::with_settings!({filters => env.filters()}, {
        insta::assert_snapshot!("sessions_table", named);
        insta::assert_snapshot!("sessions_table_all", all);
    });
    insta::with_settings!({filters => env.filters()}, {
        insta::assert_snapshot!("sessions_json_all", json);
    });
}

/// Three named sessions of one turn each, alpha, beta and gamma, in a
/// new environment named `label`: the environment, the model server (for
/// more runs) and the folder of the session files.
fn three_named(label: &str) -> (TestEnv, FakeServer, PathBuf) {
    let server = FakeServer::start(vec![
        FakeReply::text("One."),
        FakeReply::text("Two."),
        FakeReply::text("Three."),
    ])
    .unwrap();
    let url = server.url();
    // On the system temp dir, not tmpfs: the tests change the folder by
    // hand right after a listing, and on a file system whose times are
    // coarse (tmpfs here) a change within the tick of a journaled one
    // hides behind it (see `made_since` in store/src/store/scan.rs).
    let env = TestEnv::new_in(&std::env::temp_dir(), label);
    for name in ["alpha", "beta", "gamma"] {
        let run = env.run(&["--base-url", url.as_str(), "--name", name], "hi\n");
        assert_eq!(run.code, Some(0), "{run:?}");
    }
    let dir = env.session_files()[0].parent().unwrap().to_path_buf();
    (env, server, dir)
}

/// The listing's index (`.index` beside the sessions, followed through the
/// claims journal) is built again from the files when it is damaged,
/// deleted, or stale: files copied in or removed by hand are seen.
#[test]
fn the_index_is_built_again_when_damaged_deleted_or_stale() {
    let (env, server, dir) = three_named("index");
    let url = server.url();
    let index = dir.join(".index");
    let listed = |env: &TestEnv| {
        let mut names: Vec<String> = names(&env.ok(&["sessions", "--json"]).stdout)
            .into_iter()
            .map(|n| n.as_str().unwrap_or("").to_owned())
            .collect();
        names.sort();
        names
    };
    assert_eq!(listed(&env), ["alpha", "beta", "gamma"]);
    let files = env.session_files();
    assert!(index.is_file(), "a listing writes the index");

    // Damaged: garbage in place of the index.
    std::fs::write(&index, b"revolve listing cache\0garbage").unwrap();
    assert_eq!(listed(&env), ["alpha", "beta", "gamma"]);
    // Deleted.
    std::fs::remove_file(&index).unwrap();
    assert_eq!(listed(&env), ["alpha", "beta", "gamma"]);
    assert!(index.is_file(), "written again");

    // Stale: a session removed behind its back, and one copied in as a
    // new file with another id and name.
    let beta = files
        .iter()
        .find(|f| records(f)[0]["name"] == "beta")
        .unwrap()
        .clone();
    let gamma = files
        .iter()
        .find(|f| records(f)[0]["name"] == "gamma")
        .unwrap();
    std::fs::remove_file(&beta).unwrap();
    let copied = std::fs::read_to_string(gamma)
        .unwrap()
        .replace("\"gamma\"", "\"delta\"");
    let id = records(gamma)[0]["id"].as_str().unwrap().to_owned();
    let copied = copied.replace(&id, "20261202-100000-c0ffee");
    std::fs::write(dir.join("20261202-100000-c0ffee.jsonl"), copied).unwrap();
    assert_eq!(listed(&env), ["alpha", "delta", "gamma"]);
    let resumed = env.run(
        &["--base-url", url.as_str(), "-r", "delta", "-p", "/quit"],
        "",
    );
    assert_eq!(resumed.code, Some(0), "{resumed:?}");
}

/// `--resume NAME`, `--continue`, a name in use and `revolve sessions`
/// answer from the index's head and tables without reading it whole; when
/// it is damaged, cut short, deleted or stale they give the right answer
/// all the same, and the index is written again.
#[test]
fn the_quick_answers_are_right_whatever_became_of_the_index() {
    let (env, server, dir) = three_named("quick-index");
    let url = server.url();
    let index = dir.join(".index");
    let table = |env: &TestEnv| {
        let out = env.ok(&["sessions"]).stdout;
        let mut names: Vec<String> = out
            .lines()
            .skip(1)
            .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
            .collect();
        names.sort();
        names
    };
    assert_eq!(table(&env), ["alpha", "beta", "gamma"]);
    let whole = std::fs::read(&index).expect("a listing writes the index");
    let file_of = |name: &str| {
        env.session_files()
            .into_iter()
            .find(|f| records(f)[0]["name"] == name)
            .unwrap()
    };
    let beta = file_of("beta");
    let quit = ["--base-url", url.as_str(), "-p", "/quit"];
    let mut middle = whole.clone();
    let at = whole.len() / 2;
    middle[at] ^= 0x55;
    let damages: [(&str, Option<Vec<u8>>); 4] = [
        ("as written", Some(whole.clone())),
        ("damaged in the middle", Some(middle)),
        ("cut short", Some(whole[..whole.len() - 7].to_vec())),
        ("deleted", None),
    ];
    for (what, bytes) in damages {
        match &bytes {
            Some(bytes) => std::fs::write(&index, bytes).unwrap(),
            None => std::fs::remove_file(&index).unwrap(),
        }
        // Resumed by name: the file of that name.
        let run = env.run(&[&["-r", "beta"][..], &quit].concat(), "");
        assert_eq!(run.code, Some(0), "{what}: {run:?}");
        assert!(run.stderr.contains("resumed beta"), "{what}: {run:?}");
        // A name in use is refused.
        let run = env.run(
            &["--base-url", url.as_str(), "--name", "gamma", "-p", "x"],
            "",
        );
        assert_ne!(run.code, Some(0), "{what}: {run:?}");
        assert!(
            run.stderr
                .contains("another session of this directory has that name"),
            "{what}: {run:?}"
        );
        assert_eq!(table(&env), ["alpha", "beta", "gamma"], "{what}");
        // `--continue`: the one resumed last.
        let run = env.run(&[&["-c"][..], &quit].concat(), "");
        assert!(run.stderr.contains("resumed beta"), "{what}: {run:?}");
        env.ok(&["sessions", "--all"]);
        let now = std::fs::read(&index).expect("written again");
        if what != "as written" {
            assert_ne!(Some(now), bytes, "{what}: written again");
        }
    }
    // Stale: beta removed behind revolve's back, delta copied in.
    std::fs::remove_file(&beta).unwrap();
    let gamma = file_of("gamma");
    let id = records(&gamma)[0]["id"].as_str().unwrap().to_owned();
    let copied = std::fs::read_to_string(&gamma)
        .unwrap()
        .replace("\"gamma\"", "\"delta\"")
        .replace(&id, "20261202-100000-c0ffee");
    std::fs::write(dir.join("20261202-100000-c0ffee.jsonl"), copied).unwrap();
    let run = env.run(&[&["-c"][..], &quit].concat(), "");
    assert!(run.stderr.contains("resumed delta"), "{run:?}");
    assert_eq!(table(&env), ["alpha", "delta", "gamma"]);
    let run = env.run(&[&["-r", "beta"][..], &quit].concat(), "");
    assert_ne!(run.code, Some(0), "beta is gone: {run:?}");
}

/// `revolve sessions` shows the 50 most recently active named sessions
/// and counts the older ones; `--all` lists them all.
#[test]
fn sessions_shows_the_newest_named_and_counts_the_rest() {
    let server = FakeServer::start(vec![FakeReply::text("One.")]).unwrap();
    let env = TestEnv::new("sessions-many");
    let run = env.run(
        &["--base-url", server.url().as_str(), "--name", "s0"],
        "hi\n",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    let first = env.only_session();
    let dir = first.parent().unwrap().to_path_buf();
    let text = std::fs::read_to_string(&first).unwrap();
    let id = records(&first)[0]["id"].as_str().unwrap().to_owned();
    let base = datetime!(2026-12-02 10:00 UTC);
    touch(&first, base);
    for i in 1..60 {
        let path = dir.join(format!("20261202-1000{i:02}-c0ffee.jsonl"));
        let copy = text
            .replace("\"s0\"", &format!("\"s{i}\""))
            .replace(&id, &format!("20261202-1000{i:02}-c0ffee"));
        std::fs::write(&path, copy).unwrap();
        touch(&path, base + time::Duration::minutes(i));
    }
    let out = env.ok(&["sessions"]).stdout;
    let rows: Vec<&str> = out.lines().skip(1).take(50).collect();
    assert_eq!(
        rows.first().unwrap().split_whitespace().next(),
        Some("s59"),
        "{out}"
    );
    assert_eq!(
        rows.last().unwrap().split_whitespace().next(),
        Some("s10"),
        "{out}"
    );
    assert!(
        out.ends_with("\n10 older named sessions not shown: revolve sessions --all lists them\n"),
        "{out}"
    );
    // Asked again, from the index's head alone: the same.
    assert_eq!(env.ok(&["sessions"]).stdout, out);
    let all = env.ok(&["sessions", "--all"]).stdout;
    assert_eq!(all.lines().count(), 61, "{all}");
}
