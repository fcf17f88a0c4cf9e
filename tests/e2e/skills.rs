//! Skills end to end (issue 31): found in `skills/` beside the global and
//! the project memory folders and in the repository's `.agents/skills/`,
//! listed in the prompt by name, description and folder; read through the
//! `skill` tool, whose folder the model may then read; a malformed one said
//! once and left out; `/NAME ARGS` sends a skill as the user's message;
//! nothing with `--bare`; replay rebuilds every request.

use std::path::{Path, PathBuf};

use revolve_testkit::{FakeReply, FakeServer};
use serde_json::Value;

use crate::common::{records, request_messages, TestEnv};

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The global skills folder (beside the global memory folder).
fn global_skills(env: &TestEnv) -> PathBuf {
    env.home.join(".config/task-agent/skills")
}

/// A `release` skill in the global folder with a resource beside it, a
/// `review` skill in the repository's `.agents/skills/`, and a broken one.
fn skills(env: &TestEnv) -> (PathBuf, PathBuf) {
    let release = global_skills(env).join("release");
    write(
        &release.join("SKILL.md"),
        "---\nname: release\ndescription: Cut a release: tag, changelog, publish.\n---\n\
         Release version $ARGUMENTS: follow checklist.md.\n",
    );
    write(&release.join("checklist.md"), "1. bump\n2. tag\n");
    let review = env.cwd.join(".agents/skills/review");
    write(
        &review.join("SKILL.md"),
        "---\nname: review\ndescription: \"Review a diff: risks first.\"\n---\nReview the diff.\n",
    );
    write(
        &env.cwd.join(".agents/skills/broken/SKILL.md"),
        "no front matter here\n",
    );
    std::fs::create_dir_all(env.cwd.join(".git")).unwrap();
    (release, review)
}

fn system(body: &str) -> String {
    let body: Value = serde_json::from_str(body).unwrap();
    body["messages"][0]["content"].as_str().unwrap().to_owned()
}

fn replays(env: &TestEnv, server: &FakeServer) {
    let check = env.run(&["replay", "--check"], "");
    assert!(check.stdout.contains(" 0 inconsistencies"), "{check:?}");
    let sent: String = server
        .requests()
        .iter()
        .map(|r| format!("{}\n", r.body))
        .collect();
    let rebuilt = env.run(&["replay", "--requests"], "");
    assert!(rebuilt.stdout == sent, "replay --requests differs");
}

#[test]
fn skills_are_listed_read_through_the_tool_and_their_files_are_readable() {
    let env = TestEnv::new("skills");
    let (release, review) = skills(&env);
    let checklist = release.join("checklist.md");
    let server = FakeServer::start(vec![
        FakeReply::tool_calls("", &[("s1", "skill", r#"{"name":"release"}"#)]),
        FakeReply::tool_calls(
            "",
            &[(
                "r1",
                "read_file",
                &serde_json::json!({"path": checklist}).to_string(),
            )],
        ),
        FakeReply::tool_calls("", &[("s2", "skill", r#"{"name":"nope"}"#)]),
        FakeReply::text("Done."),
    ])
    .unwrap();
    let url = server.url();
    let run = env.run(&["--base-url", &url], "release it\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    let prompt = system(&server.requests()[0].body);
    assert!(
        prompt.contains(&format!(
            "\n- release: Cut a release: tag, changelog, publish. ({})",
            release.display()
        )),
        "{prompt}"
    );
    assert!(
        prompt.contains(&format!(
            "\n- review: Review a diff: risks first. ({})",
            review.display()
        )),
        "{prompt}"
    );
    assert!(!prompt.contains("broken"), "{prompt}");
    assert_eq!(
        run.stderr.matches("broken/SKILL.md left out").count(),
        1,
        "said once: {run:?}"
    );
    let results: Vec<(String, String)> = request_messages(&server.requests()[3].body)
        .into_iter()
        .filter(|(role, _)| role == "tool")
        .collect();
    let skill = &results[0].1;
    assert!(
        skill.starts_with(&format!("Skill release ({}):", release.display())),
        "{skill}"
    );
    assert!(skill.contains("Release version $ARGUMENTS: follow checklist.md."));
    assert!(
        skill.contains(&format!("- {}", checklist.display())),
        "{skill}"
    );
    assert!(results[1].1.contains("1. bump"), "{}", results[1].1);
    assert_eq!(
        results[2].1,
        "error: there is no skill 'nope'; the skills are: review, commit, release"
    );
    replays(&env, &server);
}

#[test]
fn a_skill_is_a_command_of_ones_own_and_bare_has_none() {
    let env = TestEnv::new("skill-command");
    skills(&env);
    let server = FakeServer::start(vec![FakeReply::text("Released.")]).unwrap();
    let url = server.url();
    let run = env.run(&["--base-url", &url], "/help\n/release 1.2.0\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        run.stderr
            .contains("/release     Cut a release: tag, changelog, publish."),
        "{run:?}"
    );
    let sent = request_messages(&server.requests()[0].body);
    assert_eq!(
        sent.last().unwrap(),
        &(
            "user".to_owned(),
            "Release version 1.2.0: follow checklist.md.".to_owned()
        )
    );
    let log = records(&env.only_session());
    assert!(log
        .iter()
        .any(|r| r["role"] == "user"
            && r["content"] == "Release version 1.2.0: follow checklist.md."));

    let env = TestEnv::new("skill-bare");
    skills(&env);
    let server = FakeServer::start(vec![FakeReply::text("Hi.")]).unwrap();
    let url = server.url();
    let run = env.run(&["--base-url", &url, "--bare"], "/release 1.2.0\nhello\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run.stderr.contains("unknown command /release"), "{run:?}");
    let prompt = system(&server.requests()[0].body);
    assert!(!prompt.contains("Skills ("), "{prompt}");
    assert!(
        !global_skills(&env).join(".seeded").exists()
            && !global_skills(&env).join("commit").exists(),
        "--bare seeds no skill"
    );
}

/// The builtin skills (`/review`, `/commit`) are seeded as the builtin
/// memory documents are: written at the first start with `builtin: true`,
/// listed in `.seeded`, named once on stderr; an edited one is kept, a
/// deleted one never written back; each is a command too.
#[test]
fn builtin_skills_are_seeded_once_and_never_written_back() {
    let env = TestEnv::new("skill-builtin");
    let server = FakeServer::start(vec![
        FakeReply::text("Looks fine."),
        FakeReply::text("Hi."),
        FakeReply::text("Hi again."),
    ])
    .unwrap();
    let url = server.url();
    let run = env.run(
        &["--base-url", &url],
        "/review the parser only
",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run.stderr.starts_with(&env.seeded_note()), "{run:?}");
    let folder = global_skills(&env);
    assert_eq!(
        std::fs::read_to_string(folder.join(".seeded")).unwrap(),
        "review\ncommit\n"
    );
    for (name, text) in revolve_core::skills::BUILTIN {
        let on_disk = std::fs::read_to_string(folder.join(name).join("SKILL.md")).unwrap();
        assert_eq!(on_disk, text, "{name}");
        assert!(on_disk.contains("\nbuiltin: true\n"), "{name}");
    }
    let prompt = system(&server.requests()[0].body);
    assert!(
        prompt.contains(&format!(
            "\n- commit: Commit the current changes with a message in the repository's own \
             style. ({})",
            folder.join("commit").display()
        )),
        "{prompt}"
    );
    let sent = request_messages(&server.requests()[0].body);
    let message = &sent.last().unwrap().1;
    assert!(
        message.starts_with("Review these changes: the parser only\n"),
        "{message}"
    );

    // Edited, deleted: kept as they are, nothing written back, no note.
    write(
        &folder.join("review/SKILL.md"),
        "---\nname: review\ndescription: Mine.\n---\nMine.\n",
    );
    std::fs::remove_dir_all(folder.join("commit")).unwrap();
    for _ in 0..2 {
        let run = env.run(&["--base-url", &url], "hello\n");
        assert_eq!(run.code, Some(0), "{run:?}");
        assert!(!run.stderr.contains("seeded"), "{run:?}");
    }
    assert!(
        !folder.join("commit").exists(),
        "a deleted skill is never written back"
    );
    assert_eq!(
        std::fs::read_to_string(folder.join("review/SKILL.md")).unwrap(),
        "---\nname: review\ndescription: Mine.\n---\nMine.\n"
    );
    let prompt = system(&server.requests()[2].body);
    assert!(prompt.contains("\n- review: Mine. ("), "{prompt}");
    assert!(!prompt.contains("- commit:"), "{prompt}");
}

/// Tab at the prompt completes `/` commands, a skill's among them: `/rel`
/// Tab becomes `/release `, and the line sends the skill; `/re` Tab Tab
/// lists the builtin commands and the skills that start so.
#[cfg(unix)]
#[test]
fn tab_completes_commands_and_skills_at_the_prompt() {
    use std::time::Duration;
    let env = TestEnv::new("skill-tab");
    skills(&env);
    let server = FakeServer::start(vec![FakeReply::text("Released.")]).unwrap();
    let url = server.url();
    let mut term = env.terminal(&["--base-url", &url], 100, &[]);
    let within = Duration::from_secs(10);
    term.wait_for("› ", within);
    term.type_keys("/re\t\t");
    term.wait_for_next("/review", within);
    let listed = term.screen();
    for name in ["/refine", "/release", "/review", "/rewind"] {
        assert!(listed.contains(name), "{name}: {listed}");
    }
    // Clear the line (Ctrl-U), then complete one.
    term.type_keys("\x15/rel\t1.2.0\r");
    term.wait_until(within, "the prompt after the answer", |s| {
        s.find("Released.").is_some_and(|i| s[i..].contains("› "))
    });
    term.type_keys("\x04");
    let (ok, screen) = term.finish(within);
    assert!(ok, "{screen}");
    let sent = request_messages(&server.requests()[0].body);
    assert_eq!(
        sent.last().unwrap().1,
        "Release version 1.2.0: follow checklist.md."
    );
}
