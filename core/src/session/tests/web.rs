//! `web_fetch` in the session: its gate (rules, plan mode, the network
//! turned off, the user), what the allowed call carries (the hosts it may
//! reach privately, the session's cache) and its `fetched` record.

use super::*;
use crate::edit::Answer;
use crate::record::Fetched;

const URL: &str = "http://127.0.0.1:8080/page";

fn with(settings: Settings) -> Session {
    Session::start(header(), settings).0
}

fn fetch_call(s: &mut Session, id: &str, url: &str) -> Vec<Command> {
    user(s, "read it");
    reply(
        s,
        "",
        &[(
            id,
            "web_fetch",
            &format!(r#"{{"url":"{url}","prompt":"the version"}}"#),
        )],
    )
}

fn results(cmds: &[Command]) -> Vec<String> {
    cmds.iter()
        .filter_map(|c| match c {
            Command::Log(LogCommand::Append(Record::Message(m))) if m.role == Role::Tool => {
                Some(m.content.clone())
            }
            _ => None,
        })
        .collect()
}

fn appended(cmds: &[Command]) -> Vec<Record> {
    cmds.iter()
        .filter_map(|c| match c {
            Command::Log(LogCommand::Append(r)) => Some(r.clone()),
            _ => None,
        })
        .collect()
}

fn run_of(cmds: &[Command]) -> Option<&Tool> {
    cmds.iter().find_map(|c| match c {
        Command::Tool(ToolCommand::Run { tool, .. }) => Some(tool),
        _ => None,
    })
}

fn rules(allow: &[&str], deny: &[&str]) -> crate::rules::Rules {
    let own = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    crate::rules::Rules::parse(&own(allow), &own(deny)).unwrap()
}

#[test]
fn without_a_rule_or_a_terminal_a_fetch_is_refused_with_the_rule_to_give() {
    let mut s = start();
    let cmds = fetch_call(&mut s, "c1", URL);
    assert_eq!(results(&cmds), [super::super::fetching::REFUSED]);
    let shown = cmds.iter().any(|c| {
        matches!(c, Command::User(UserCommand::Show(t))
            if t.contains("--allow 'web_fetch(domain:127.0.0.1)'"))
    });
    assert!(shown, "{cmds:?}");
}

#[test]
fn an_allow_rule_runs_it_naming_the_host_and_is_logged() {
    let mut s = with(Settings {
        rules: rules(&["web_fetch(domain:127.0.0.1)"], &[]),
        ..settings()
    });
    let cmds = fetch_call(&mut s, "c1", URL);
    let approved = cmds.iter().any(|c| {
        matches!(c, Command::Log(LogCommand::Append(Record::Approved(a)))
            if a.path == "127.0.0.1" && a.rule.as_deref() == Some("web_fetch(domain:127.0.0.1)")
                && a.answer == Answer::Yes)
    });
    assert!(approved, "{cmds:?}");
    match run_of(&cmds) {
        Some(Tool::WebFetch {
            url,
            prompt,
            access,
            cached,
        }) => {
            assert_eq!(url, URL);
            assert_eq!(prompt.as_deref(), Some("the version"));
            assert!(access.names("127.0.0.1"));
            assert!(!access.names("10.0.0.1"));
            assert!(cached.is_none());
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_deny_rule_the_network_off_and_plan_mode_refuse_it() {
    let mut s = with(Settings {
        rules: rules(&["web_fetch(domain:*)"], &["web_fetch(domain:127.*)"]),
        ..settings()
    });
    let cmds = fetch_call(&mut s, "c1", URL);
    assert_eq!(
        results(&cmds),
        [crate::rules::denied("web_fetch(domain:127.*)")]
    );

    let mut s = with(Settings {
        rules: rules(&["web_fetch(domain:127.0.0.1)"], &[]),
        network_off: true,
        ..settings()
    });
    let cmds = fetch_call(&mut s, "c1", URL);
    assert_eq!(results(&cmds), [super::super::fetching::NETWORK_OFF]);

    let mut s = with(Settings {
        interactive: true,
        ..settings()
    });
    s.state.planning = true;
    let cmds = fetch_call(&mut s, "c1", URL);
    assert_eq!(results(&cmds), [super::super::fetching::PLANNING]);

    // While planning, a rule still lets it run.
    let mut s = with(Settings {
        rules: rules(&["web_fetch(domain:127.0.0.1)"], &[]),
        ..settings()
    });
    s.state.planning = true;
    let cmds = fetch_call(&mut s, "c1", URL);
    assert!(run_of(&cmds).is_some(), "{cmds:?}");
}

#[test]
fn a_url_that_is_not_http_is_refused_before_anyone_is_asked() {
    let mut s = with(Settings {
        interactive: true,
        ..settings()
    });
    let cmds = fetch_call(&mut s, "c1", "file:///etc/passwd");
    let results = results(&cmds);
    assert_eq!(results.len(), 1);
    assert!(results[0].contains("only http and https"), "{results:?}");
    assert!(!kinds(&cmds).contains(&"ask-fetch"));
}

#[test]
fn always_for_a_host_is_remembered_and_the_page_is_cached() {
    let mut s = with(Settings {
        interactive: true,
        ..settings()
    });
    let cmds = fetch_call(&mut s, "c1", URL);
    assert!(
        cmds.contains(&Command::User(UserCommand::AskFetch {
            id: "c1".into(),
            url: URL.into(),
            host: "127.0.0.1".into(),
        })),
        "{cmds:?}"
    );
    let cmds = s
        .handle(Input::User(UserInput::Answered {
            id: "c1".into(),
            answer: Answer::Always,
            now: datetime!(2026-12-02 10:02 UTC),
        }))
        .commands;
    let mut log = appended(&cmds);
    match run_of(&cmds) {
        // The user saw the host: it is named.
        Some(Tool::WebFetch { access, .. }) => assert!(access.names("127.0.0.1")),
        other => panic!("{other:?}"),
    }
    let page = Fetched {
        at: datetime!(2026-12-02 10:02 UTC),
        call: String::new(),
        url: URL.into(),
        final_url: URL.into(),
        status: 200,
        content_type: "text/html".into(),
        hash: "sha256:ab".into(),
        bytes: 10,
        cut: false,
        redirects: 0,
        cached: None,
    };
    let cmds = s
        .handle(Input::Tool(ToolInput::Done {
            parts: None,
            id: "c1".into(),
            output: "page".into(),
            grant: None,
            effects: ToolEffects {
                fetched: Some(Box::new(page.clone())),
                ..Default::default()
            },
            now: datetime!(2026-12-02 10:03 UTC),
        }))
        .commands;
    let logged = cmds.iter().any(|c| {
        matches!(c, Command::Log(LogCommand::Append(Record::Fetched(f)))
            if f.call == "c1" && f.hash == "sha256:ab")
    });
    assert!(logged, "{cmds:?}");
    log.extend(appended(&cmds));
    assert!(s.state.web_always.contains("127.0.0.1"));
    // The next fetch of the host is not asked, and takes the cache.
    reply(&mut s, "done", &[]);
    let cmds = fetch_call(&mut s, "c2", URL);
    assert!(!kinds(&cmds).contains(&"ask-fetch"), "{cmds:?}");
    match run_of(&cmds) {
        Some(Tool::WebFetch { cached, access, .. }) => {
            assert_eq!(cached.as_ref().map(|c| c.hash.as_str()), Some("sha256:ab"));
            assert!(access.names("127.0.0.1"));
        }
        other => panic!("{other:?}"),
    }
    // A resumed session remembers both.
    let folded = State::fold(
        &std::iter::once(Record::Header(header()))
            .chain(log)
            .collect::<Vec<_>>(),
    );
    assert!(folded.web_always.contains("127.0.0.1"));
    assert!(folded.fetched.contains_key(URL));
}
