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
