//! The config file `<config>/config.json`: precedence (flag > env > config >
//! default), what `revolve config show` says about it, and a malformed file.

use revolve_testkit::{FakeReply, FakeServer};
use serde_json::Value;

use crate::common::{records, TestEnv};

/// Writes `text` as the config file of `env`.
fn write_config(env: &TestEnv, text: &str) -> std::path::PathBuf {
    let dir = env.home.join(".config/task-agent");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("config.json");
    std::fs::write(&path, text).unwrap();
    path
}

/// `config show --json` as a value, after checking its schema: `file` a
/// string, `file_found` a bool, `settings` an object whose every entry has
/// a `value` and a `source` among flag, env, config and default.
fn show_json(env: &TestEnv, args: &[&str], vars: &[(&str, &str)]) -> Value {
    let mut all = vec!["config", "show", "--json"];
    all.extend_from_slice(args);
    let run = env.run_env(&all, "", vars);
    assert_eq!(run.code, Some(0), "{run:?}");
    let doc: Value = serde_json::from_str(&run.stdout).expect("config show --json is JSON");
    assert!(doc["file"].is_string(), "{doc}");
    assert!(doc["file_found"].is_boolean(), "{doc}");
    let settings = doc["settings"].as_object().expect("settings is an object");
    let names: Vec<&str> = settings.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "allow_edits",
            "allow_mcp",
            "allow_shell",
            "api_key",
            "base_url",
            "confirm_costly",
            "effort",
            "max_calls_per_answer",
            "max_cost",
            "max_repeated_calls",
            "max_tool_rounds",
            "mcp_servers",
            "mcp_timeout_s",
            "model",
            "models",
            "permissions",
            "provider",
            "prune_result_chars",
            "retries",
            "sandbox",
            "sandbox_network",
            "sandbox_writable",
            "spill_result_chars",
            "tool_choice",
            "window"
        ]
    );
    for (name, setting) in settings {
        let source = setting["source"].as_str().expect("a source string");
        assert!(
            ["flag", "env", "config", "table", "default"].contains(&source),
            "{name}: {setting}"
        );
        assert!(setting.get("value").is_some(), "{name}: {setting}");
    }
    doc
}

/// `(value, source)` of one setting.
fn setting(doc: &Value, name: &str) -> (Value, String) {
    let s = &doc["settings"][name];
    (s["value"].clone(), s["source"].as_str().unwrap().to_owned())
}

#[test]
fn flag_beats_env_beats_config_beats_default() {
    let env = TestEnv::new("precedence");
    let doc = show_json(&env, &[], &[]);
    assert_eq!(doc["file_found"], false);
    assert_eq!(
        setting(&doc, "model"),
        ("gpt-5.6-terra".into(), "default".into())
    );

    write_config(
        &env,
        r#"{"model": "from-config", "window": 9000, "provider": "ollama", "allow_shell": true}"#,
    );
    let doc = show_json(&env, &[], &[]);
    assert_eq!(doc["file_found"], true);
    assert_eq!(
        setting(&doc, "model"),
        ("from-config".into(), "config".into())
    );
    assert_eq!(setting(&doc, "window"), (9000.into(), "config".into()));
    assert_eq!(
        setting(&doc, "provider"),
        ("ollama".into(), "config".into())
    );
    // The preset's base URL, as a default that follows the provider.
    assert_eq!(
        setting(&doc, "base_url"),
        ("http://localhost:11434/v1".into(), "default".into())
    );
    assert_eq!(setting(&doc, "allow_shell"), (true.into(), "config".into()));
    // The harness sets REVOLVE_RETRIES=0.
    assert_eq!(setting(&doc, "retries"), (0.into(), "env".into()));

    let vars = [("REVOLVE_MODEL", "from-env"), ("REVOLVE_WINDOW", "7000")];
    let doc = show_json(&env, &[], &vars);
    assert_eq!(setting(&doc, "model"), ("from-env".into(), "env".into()));
    assert_eq!(setting(&doc, "window"), (7000.into(), "env".into()));

    let doc = show_json(&env, &["--model", "from-flag"], &vars);
    assert_eq!(setting(&doc, "model"), ("from-flag".into(), "flag".into()));
    assert_eq!(setting(&doc, "window"), (7000.into(), "env".into()));
}

#[test]
fn the_settings_chosen_are_the_ones_used() {
    let server = FakeServer::start(vec![
        FakeReply::text("one"),
        FakeReply::text("two"),
        FakeReply::text("three"),
    ])
    .unwrap();
    let env = TestEnv::new("precedence-used");
    write_config(
        &env,
        &format!(
            r#"{{"base_url": "{}", "model": "config-model", "window": 5000}}"#,
            server.url()
        ),
    );
    let model_of = |i: usize| -> String {
        let body: Value = serde_json::from_str(&server.requests()[i].body).unwrap();
        body["model"].as_str().unwrap().to_owned()
    };
    let run = env.run(&[], "hi\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(model_of(0), "config-model");
    let header = &records(&env.only_session())[0];
    assert_eq!(
        (&header["model"], &header["window"]),
        (&"config-model".into(), &5000.into())
    );

    let run = env.run_env(&["--name", "b"], "hi\n", &[("REVOLVE_MODEL", "env-model")]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(model_of(1), "env-model");

    let run = env.run_env(
        &["--name", "c", "--model", "flag-model"],
        "hi\n",
        &[("REVOLVE_MODEL", "env-model")],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(model_of(2), "flag-model");
}

#[test]
fn allow_shell_in_the_config_lets_a_piped_run_use_the_shell() {
    let server = FakeServer::start(vec![
        FakeReply::tool_calls("", &[("s1", "shell", r#"{"command":"touch made"}"#)]),
        FakeReply::text("Done."),
    ])
    .unwrap();
    let env = TestEnv::new("config-shell");
    write_config(
        &env,
        &format!(r#"{{"base_url": "{}", "allow_shell": true}}"#, server.url()),
    );
    let run = env.run(&[], "make a file\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(env.cwd.join("made").exists(), "{run:?}");
}

#[test]
fn a_malformed_config_is_one_line_naming_file_line_and_column() {
    let env = TestEnv::new("bad-config");
    let path = write_config(&env, "{\n  \"model\": \"m\",\n  \"window\": x\n}\n");
    for args in [&["config", "show"][..], &["-p", "hi"], &["sessions"][..]] {
        let run = env.run(args, "");
        if args[0] == "sessions" {
            // Commands that use no setting do not read the file.
            assert_eq!(run.code, Some(0), "{run:?}");
            continue;
        }
        assert_eq!(run.code, Some(2), "{args:?}: {run:?}");
        assert_eq!(run.stdout, "");
        assert_eq!(
            run.stderr,
            format!(
                "revolve: bad config file {}: line 3, column 13: expected value\n",
                path.display()
            )
        );
    }
    assert!(
        env.session_files().is_empty(),
        "a bad config starts nothing"
    );
}

#[test]
fn an_unknown_key_is_named() {
    let env = TestEnv::new("unknown-key");
    write_config(&env, r#"{"modle": "m", "api_key": "sk-secret"}"#);
    let run = env.run(&["config", "show"], "");
    assert_eq!(run.code, Some(2), "{run:?}");
    assert_eq!(run.stderr.lines().count(), 1, "{run:?}");
    assert!(run.stderr.contains("unknown field `modle`"), "{run:?}");
    assert!(run.stderr.contains("line 1, column 8"), "{run:?}");

    write_config(&env, r#"{"api_key": "sk-secret"}"#);
    let run = env.run(&["config", "show"], "");
    assert_eq!(run.code, Some(2), "{run:?}");
    assert!(run.stderr.contains("unknown field `api_key`"), "{run:?}");
    assert!(!run.stderr.contains("sk-secret"), "{run:?}");
}

#[test]
fn config_show_names_the_key_variable_never_the_key() {
    let env = TestEnv::new("show-key");
    let run = env.run_env(
        &["config", "show", "--provider", "openrouter"],
        "",
        &[("OPENROUTER_API_KEY", "sk-or-secret")],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(!run.stdout.contains("sk-or-secret"), "{run:?}");
    insta::with_settings!({filters => env.filters()}, {
        insta::assert_snapshot!("config_show_text", run.stdout);
    });
}

#[test]
fn a_resumed_session_keeps_its_model_unless_a_flag_or_variable_asks() {
    let server = FakeServer::start(vec![
        FakeReply::text("one"),
        FakeReply::text("two"),
        FakeReply::text("three"),
    ])
    .unwrap();
    let env = TestEnv::new("config-resume");
    let url = server.url();
    let run = env.run(&["--base-url", &url, "--model", "first"], "hi\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    write_config(&env, r#"{"model": "from-config", "window": 5000}"#);
    let model_of = |i: usize| -> String {
        let body: Value = serde_json::from_str(&server.requests()[i].body).unwrap();
        body["model"].as_str().unwrap().to_owned()
    };
    let run = env.run(&["--base-url", &url, "--continue"], "again\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(
        model_of(1),
        "first",
        "the config chooses for new sessions only"
    );
    let run = env.run_env(
        &["--base-url", &url, "--continue"],
        "more\n",
        &[("REVOLVE_MODEL", "from-env")],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(model_of(2), "from-env");
    let resumed: Vec<Value> = records(&env.only_session())
        .into_iter()
        .filter(|r| r["type"] == "resumed")
        .collect();
    assert_eq!(
        resumed
            .iter()
            .map(|r| (r["model"].as_str().unwrap(), r["window"].as_u64().unwrap()))
            .collect::<Vec<_>>(),
        [("first", 128000), ("from-env", 128000)]
    );
}
