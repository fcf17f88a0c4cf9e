//! The unit tests of the session log: finding the header, the format version, and how lines are written and read.

use super::*;
use time::macros::datetime;

fn at() -> OffsetDateTime {
    datetime!(2026-12-02 10:26:06 UTC)
}

#[test]
fn a_header_is_found_past_stray_bytes() {
    let line = serde_json::to_string(&Record::Header(test_header())).unwrap();
    let damaged = [b"\xff\x00".as_slice(), line.as_bytes(), b"\n"].concat();
    assert_eq!(
        Record::header_past_garbage(&damaged),
        Some((2, test_header()))
    );
    // Nothing stray, nothing to find: the line parses as it is.
    assert_eq!(Record::header_past_garbage(line.as_bytes()), None);
    let message = serde_json::to_string(&Record::Message(Message::user(at(), &line))).unwrap();
    assert_eq!(Record::header_past_garbage(message.as_bytes()), None);
    assert_eq!(Record::header_past_garbage(b"xx{\"type\":\"header\""), None);
}

#[test]
fn a_header_of_a_newer_version_is_not_writable() {
    assert_eq!(test_header().writable(), Ok(()));
    let newer = Header {
        version: FORMAT_VERSION + 6,
        ..test_header()
    };
    assert_eq!(
        newer.writable(),
        Err(format!(
            "written by a newer revolve (log format version {}; this build writes version \
             {FORMAT_VERSION}): not appending to it (replay still reads it)",
            FORMAT_VERSION + 6
        ))
    );
}

#[test]
fn type_is_written_first_and_lines_round_trip() {
    let records = [
        Record::Message(Message::user(at(), "hi \"there\"\n")),
        Record::Totals(Totals {
            at: Some(at()),
            turns: 3,
            ..Totals::default()
        }),
        Record::Interrupted(Interrupted {
            at: at(),
            unsent: false,
        }),
        Record::Stopped(Stopped {
            at: at(),
            reason: StopReason::Repeated {
                tool: "read_file".into(),
                times: 4,
            },
        }),
        Record::Stopped(Stopped {
            at: at(),
            reason: StopReason::ToolRounds { limit: 100 },
        }),
        Record::WentOn(WentOn { at: at() }),
    ];
    for r in records {
        let line = r.to_line();
        assert!(line.starts_with("{\"type\":\""), "{line}");
        assert_eq!(Record::parse_line(&line).unwrap(), r);
    }
}

#[test]
fn a_stop_line_is_flat() {
    let r = Record::Stopped(Stopped {
        at: at(),
        reason: StopReason::ToolRounds { limit: 100 },
    });
    assert_eq!(
        r.to_line(),
        r#"{"type":"stopped","at":"2026-12-02T10:26:06Z","reason":"tool_rounds","limit":100}"#
    );
}

#[test]
fn message_line_is_flat() {
    let r = Record::Message(Message::assistant(at(), "ok"));
    assert_eq!(
        r.to_line(),
        r#"{"type":"message","at":"2026-12-02T10:26:06Z","role":"assistant","content":"ok"}"#
    );
}

#[test]
fn type_need_not_come_first() {
    let line = r#"{"at":"2026-12-02T10:26:06Z","type":"interrupted"}"#;
    assert_eq!(
        Record::parse_line(line).unwrap(),
        Record::Interrupted(Interrupted {
            at: at(),
            unsent: false
        })
    );
}

#[test]
fn unknown_and_garbled_lines_are_told_apart() {
    assert!(matches!(
        Record::parse_line(r#"{"type":"heartbeat","n":1}"#),
        Err(LineError::Unknown(k)) if k == "heartbeat"
    ));
    assert!(matches!(
        Record::parse_line(r#"{"type":"message","at":"2026-12-02T10:2"#),
        Err(LineError::Torn)
    ));
    assert!(matches!(
        Record::parse_line(r#"{"type":"message","at":"2026-12-02T10:26:06Z"}"#),
        Err(LineError::Malformed(_))
    ));
    assert!(matches!(
        Record::parse_line("not json"),
        Err(LineError::Malformed(_))
    ));
    assert!(matches!(
        Record::parse_line(r#"{"type":"heart"#),
        Err(LineError::Torn)
    ));
}

#[test]
fn older_totals_without_new_fields_still_read() {
    let r = Record::parse_line(r#"{"type":"totals","turns":2}"#).unwrap();
    assert_eq!(
        r,
        Record::Totals(Totals {
            turns: 2,
            ..Totals::default()
        })
    );
}

#[test]
fn word_fields_read_and_write_the_words_of_the_log() {
    // Lines as older builds wrote them, and words a newer build may write:
    // each reads into its variant (or the catch-all) and is written back
    // byte for byte.
    let lines = [
        r#"{"type":"approved","at":"2026-12-02T10:26:06Z","call":"c1","path":"/w/a.rs","answer":"always"}"#,
        r#"{"type":"approved","at":"2026-12-02T10:26:06Z","call":"c1","path":"/w/../b","answer":"yes","tool":"outside"}"#,
        r#"{"type":"approved","at":"2026-12-02T10:26:06Z","call":"c1","path":"ls","answer":"no","tool":"shell","rule":"shell(ls)"}"#,
        r#"{"type":"approved","at":"2026-12-02T10:26:06Z","call":"c1","path":"make","answer":"yes","tool":"unsandboxed"}"#,
        r#"{"type":"approved","at":"2026-12-02T10:26:06Z","call":"c1","path":"/srv","answer":"yes","tool":"grant"}"#,
        r#"{"type":"approved","at":"2026-12-02T10:26:06Z","call":"c1","path":"","answer":"always","tool":"mcp__git__log"}"#,
        r#"{"type":"approved","at":"2026-12-02T10:26:06Z","call":"c1","path":"x","answer":"always","tool":"browser"}"#,
        r#"{"type":"edit","at":"2026-12-02T10:26:06Z","call":"c1","path":"/w/a.rs","by":"edit_file","after":"sha256:1","diff":""}"#,
        r#"{"type":"edit","at":"2026-12-02T10:26:06Z","call":"c1","path":"/w/a.rs","by":"write_file","after":"sha256:1","diff":""}"#,
        r#"{"type":"edit","at":"2026-12-02T10:26:06Z","call":"c1","path":"/w/a.rs","by":"shell","before":"sha256:1","diff":"","written":true}"#,
        r#"{"type":"edit","at":"2026-12-02T10:26:06Z","call":"c1","path":"/w/a.rs","by":"patch","after":"sha256:1","diff":""}"#,
        r#"{"type":"memory_changed","at":"2026-12-02T10:26:06Z","entry":"e","by":"refine","files":[]}"#,
        r#"{"type":"memory_changed","at":"2026-12-02T10:26:06Z","entry":"e","by":"auto-refine","files":[]}"#,
        r#"{"type":"memory_changed","at":"2026-12-02T10:26:06Z","entry":"e","by":"remember","files":[]}"#,
        r#"{"type":"memory_changed","at":"2026-12-02T10:26:06Z","entry":"e","by":"import","files":[]}"#,
    ];
    let mut read = Vec::new();
    for line in lines {
        let record = Record::parse_line(line).unwrap();
        assert_eq!(record.to_line(), line);
        read.push(record);
    }
    let tools: Vec<Asked> = read
        .iter()
        .filter_map(|r| match r {
            Record::Approved(a) => Some(a.tool.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        tools,
        [
            Asked::Edit,
            Asked::Outside,
            Asked::Shell,
            Asked::Unsandboxed,
            Asked::Grant,
            Asked::Tool("mcp__git__log".into()),
            Asked::Tool("browser".into()),
        ]
    );
    let by: Vec<String> = read
        .iter()
        .filter_map(|r| match r {
            Record::Edit(e) => Some(format!("{:?}", e.by)),
            Record::MemoryChanged(m) => Some(format!("{:?}", m.by)),
            _ => None,
        })
        .collect();
    assert_eq!(
        by,
        [
            "EditFile",
            "WriteFile",
            "Shell",
            "Other(\"patch\")",
            "Refine",
            "AutoRefine",
            "Remember",
            "Other(\"import\")",
        ]
    );
}
