use serde_json::{json, Value};
use time::macros::datetime;

use super::*;
use crate::record::{Image, ToolCall};
use crate::request::{AnswerLimit, Request, Shape, Wire};

fn history() -> Vec<Message> {
    let at = datetime!(2026-12-06 17:00 UTC);
    let call = |id: &str, name: &str, args: &str| ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args.into(),
    };
    let picture = Image {
        hash: format!("sha256:{:064}", 1),
        media_type: "image/png".into(),
        width: 1,
        height: 1,
        source: "a.png".into(),
        data: "iVBO".into(),
    };
    vec![
        Message {
            images: vec![picture.clone()],
            ..Message::user(at, "look")
        },
        Message {
            tool_calls: vec![
                call("gemini_1_0", "list_dir", r#"{"path":"."}"#),
                call("gemini_1_1", "read_file", "not json"),
            ],
            thinking: vec![Thinking::ThoughtSignature {
                signature: "sig-a".into(),
                call: Some("gemini_1_0".into()),
            }],
            ..Message::assistant(at, "")
        },
        Message::tool(at, "gemini_1_0", "a.png"),
        Message {
            images: vec![picture],
            ..Message::tool(at, "gemini_1_1", "error: not json")
        },
        Message {
            thinking: vec![Thinking::ThoughtSignature {
                signature: "sig-t".into(),
                call: None,
            }],
            ..Message::assistant(at, "done")
        },
        Message::user(at, "again"),
    ]
}

fn body(shape: &Shape, model: &str) -> Value {
    let r = Request::shaped(Wire::Gemini, model, Some("sys"), history(), shape);
    serde_json::from_str(&r.body.text()).unwrap()
}

#[test]
fn contents_alternate_and_carry_calls_results_pictures_and_signatures() {
    let v = body(
        &Shape::limited(Some(AnswerLimit::of("gemini-2.5-flash", 900))),
        "gemini-2.5-flash",
    );
    let inline = json!({"inlineData": {"data": "iVBO", "mimeType": "image/png"}});
    assert_eq!(
        v["contents"],
        json!([
            {"role": "user", "parts": [{"text": "look"}, inline]},
            {"role": "model", "parts": [
                {"functionCall": {"name": "list_dir", "args": {"path": "."}}, "thoughtSignature": "sig-a"},
                {"functionCall": {"name": "read_file", "args": {}}},
            ]},
            {"role": "user", "parts": [
                {"functionResponse": {"name": "list_dir", "response": {"output": "a.png"}}},
                {"functionResponse": {"name": "read_file", "response": {"output": "error: not json"}}},
                {"text": "The image(s) of the result of tool call gemini_1_1:"},
                inline,
            ]},
            {"role": "model", "parts": [{"text": "done", "thoughtSignature": "sig-t"}]},
            {"role": "user", "parts": [{"text": "again"}]},
        ])
    );
    assert_eq!(v["systemInstruction"], json!({"parts": [{"text": "sys"}]}));
    assert_eq!(v["generationConfig"], json!({"maxOutputTokens": 900}));
    let declarations = v["tools"][0]["functionDeclarations"].as_array().unwrap();
    assert_eq!(declarations[0]["name"], "read_file");
    assert!(v.get("toolConfig").is_none());
    assert!(v.get("model").is_none(), "the model is in the URL");
    // A tool without arguments has no parameters.
    let info = declarations
        .iter()
        .find(|d| d["name"] == "agent_info")
        .unwrap();
    assert!(info.get("parameters").is_none(), "{info}");
}

#[test]
fn effort_asks_thinking_of_the_models_that_think() {
    let shape = |effort| Shape {
        effort: Some(effort),
        tool_choice: Some(ToolChoice::Required),
        ..Shape::limited(Some(AnswerLimit::of("m", 1_000)))
    };
    let v = body(&shape(Effort::Low), "gemini-2.5-pro");
    assert_eq!(
        v["generationConfig"],
        json!({"maxOutputTokens": 1_000 + 2_048, "thinkingConfig": {"thinkingBudget": 2_048}})
    );
    assert_eq!(
        v["toolConfig"],
        json!({"functionCallingConfig": {"mode": "ANY"}})
    );
    let v = body(&shape(Effort::High), "gemini-3-pro-preview");
    assert_eq!(
        v["generationConfig"]["thinkingConfig"],
        json!({"thinkingLevel": "high"})
    );
    let v = body(&shape(Effort::High), "gemini-2.0-flash");
    assert_eq!(v["generationConfig"], json!({"maxOutputTokens": 1_000}));
    for (model, yes) in [
        ("gemini-2.5-flash-lite", true),
        ("models/gemini-3.1-pro-preview", true),
        ("gemini-10-ultra", true),
        ("gemini-2.0-flash", false),
        ("gemini-1.5-pro", false),
        ("gpt-5", false),
        ("gemini-pro", false),
    ] {
        assert_eq!(thinks(model), yes, "{model}");
    }
    assert_eq!(call_id(3, 1), "gemini_3_1");
}

#[test]
fn schemas_keep_what_the_api_takes() {
    let given = json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "url": {"type": "string", "format": "uri", "description": "where"},
            "when": {"type": "string", "format": "date-time"},
            "n": {"type": ["integer", "null"], "exclusiveMinimum": 0, "format": "int64"},
            "mode": {"const": "fast"},
            "kind": {"enum": ["a", "b"]},
            "levels": {"enum": [1, 2]},
            "tags": {"type": "array", "items": {"type": "string", "$ref": "#/x"}},
            "either": {"oneOf": [{"type": "string"}, {"type": "object", "properties": {}}]},
            "empty": {"type": "object", "properties": {}, "required": ["x"]},
        },
        "required": ["url"],
        "$defs": {"x": {}},
    });
    assert_eq!(
        schema(&given),
        json!({
            "type": "object",
            "properties": {
                "url": {"type": "string", "description": "where"},
                "when": {"type": "string", "format": "date-time"},
                "n": {"type": "integer", "nullable": true, "format": "int64"},
                "mode": {"enum": ["fast"]},
                "kind": {"enum": ["a", "b"]},
                "levels": {},
                "tags": {"type": "array", "items": {"type": "string"}},
                "either": {"anyOf": [{"type": "string"}, {"type": "object"}]},
                "empty": {"type": "object"},
            },
            "required": ["url"],
        })
    );
    assert_eq!(schema(&json!(true)), json!({}));
}

#[test]
fn a_count_asks_the_same_request() {
    let shape = Shape::limited(Some(AnswerLimit::of("m", 100)));
    let r = Request::shaped(
        Wire::Gemini,
        "gemini-2.5-flash",
        Some("sys"),
        history(),
        &shape,
    );
    let count = r.body.counting("gemini-2.5-flash").unwrap();
    let v: Value = serde_json::from_str(&count.text()).unwrap();
    let mut sent: Value = serde_json::from_str(&r.body.text()).unwrap();
    sent["model"] = json!("models/gemini-2.5-flash");
    assert_eq!(v, json!({"generateContentRequest": sent}));
    assert_eq!(count.len(), count.text().len());
    let openai = Request::shaped(Wire::OpenAi, "m", None, history(), &shape);
    assert!(openai.body.counting("m").is_none());
    // Written straight and built as values, the same bytes.
    let mut valued = Vec::new();
    r.body.write_valued_to(&mut valued).unwrap();
    assert_eq!(String::from_utf8(valued).unwrap(), r.body.text());
}

#[test]
fn gemini_3_gets_a_stand_in_for_an_unsigned_step() {
    let at = datetime!(2026-12-06 17:00 UTC);
    let calls = vec![
        ToolCall {
            id: "call_1".into(),
            name: "list_dir".into(),
            arguments: "{}".into(),
        },
        ToolCall {
            id: "call_2".into(),
            name: "list_dir".into(),
            arguments: "{}".into(),
        },
    ];
    let history = [
        Message::user(at, "look"),
        Message {
            tool_calls: calls,
            ..Message::assistant(at, "")
        },
        Message::tool(at, "call_1", "a"),
        Message::tool(at, "call_2", "b"),
    ];
    let parts = |model: &str| {
        let r = Request::shaped(
            Wire::Gemini,
            model,
            None,
            &history[..],
            &Shape::limited(None),
        );
        let v: Value = serde_json::from_str(&r.body.text()).unwrap();
        v["contents"][1]["parts"].clone()
    };
    let three = parts("gemini-3-flash-preview");
    assert_eq!(three[0]["thoughtSignature"], STAND_IN);
    assert!(three[1].get("thoughtSignature").is_none());
    assert!(!parts("gemini-2.5-pro").to_string().contains(STAND_IN));
    // A signed step keeps its own.
    assert!(!body(&Shape::limited(None), "gemini-3-pro-preview")
        .to_string()
        .contains(STAND_IN));
}

#[test]
fn signatures_never_reach_the_messages_wire() {
    let r = Request::shaped(
        Wire::Anthropic,
        "claude",
        None,
        history(),
        &Shape {
            thinking: Some(crate::request::Think::of("claude", Effort::Low)),
            ..Shape::limited(None)
        },
    );
    assert!(!r.body.text().contains("sig-"), "{}", r.body);
    let r = Request::shaped(Wire::OpenAi, "m", None, history(), &Shape::limited(None));
    assert!(!r.body.text().contains("sig-"), "{}", r.body);
}
