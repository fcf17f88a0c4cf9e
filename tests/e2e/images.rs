//! Pictures end to end (issue 44 item 1), against the fake model server on
//! both wires: `@path` of a picture in the REPL, `--image` with `-p`,
//! `read_file` of a PNG, a 6000 × 6000 PNG scaled under the wire's limit,
//! a model the table marks without vision refused before any request, a
//! truncated PNG told in one line while the turn goes on; and every
//! request rebuilt by `replay --requests` byte for byte.

use std::io::Cursor;
use std::time::Duration;

use base64::Engine;
use image::{DynamicImage, ImageFormat};
use revolve_testkit::{FakeReply, FakeServer};
use serde_json::Value;

use crate::common::{self, TestEnv};

#[derive(Clone, Copy, Debug)]
enum Wire {
    OpenAi,
    Anthropic,
}

impl Wire {
    fn serve(self, replies: Vec<FakeReply>) -> FakeServer {
        match self {
            Wire::OpenAi => FakeServer::start(replies),
            Wire::Anthropic => FakeServer::start_anthropic(replies),
        }
        .expect("start the fake model server")
    }

    fn flags(self, server: &FakeServer) -> Vec<String> {
        let mut flags = vec!["--base-url".to_owned(), server.url()];
        if let Wire::Anthropic = self {
            flags.extend(["--provider".to_owned(), "anthropic".to_owned()]);
        }
        flags
    }
}

/// A `w` × `h` PNG with a gradient (so it does not compress to nothing).
fn png(w: u32, h: u32) -> Vec<u8> {
    // Pixel by pixel through `from_fn`, unoptimised, a 6000 px picture
    // took seconds; the same bytes made row by row take a tenth of that.
    let mut bytes = Vec::with_capacity(w as usize * h as usize);
    for y in 0..h {
        bytes.extend((0..w).map(|x| ((x ^ y) % 251) as u8));
    }
    let picture = image::GrayImage::from_raw(w, h, bytes).expect("w × h bytes");
    let mut out = Vec::new();
    DynamicImage::ImageLuma8(picture)
        .write_to(&mut Cursor::new(&mut out), ImageFormat::Png)
        .unwrap();
    out
}

/// The request's messages (the system prompt left out), each picture's
/// base64 cut to its length, for a snapshot.
fn cut(body: &str) -> Value {
    fn walk(v: &mut Value) {
        match v {
            Value::Object(map) => {
                for (key, value) in map.iter_mut() {
                    match value {
                        Value::String(s) if key == "url" && s.starts_with("data:") => {
                            let (head, data) = s.split_once(',').unwrap();
                            *s = format!("{head},<{} base64 chars>", data.len());
                        }
                        Value::String(s) if key == "data" => {
                            *s = format!("<{} base64 chars>", s.len());
                        }
                        other => walk(other),
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(walk),
            _ => {}
        }
    }
    let body: Value = serde_json::from_str(body).unwrap();
    let mut messages: Vec<Value> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .cloned()
        .collect();
    messages.iter_mut().for_each(walk);
    Value::from(messages)
}

/// Every picture's bytes in a request body, decoded from base64.
fn pictures(body: &str) -> Vec<Vec<u8>> {
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(map) => {
                for (key, value) in map {
                    match value {
                        Value::String(s) if key == "url" && s.starts_with("data:") => {
                            out.push(s.split_once(',').unwrap().1.to_owned())
                        }
                        Value::String(s) if key == "data" => out.push(s.clone()),
                        other => walk(other, out),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|i| walk(i, out)),
            _ => {}
        }
    }
    let mut found = Vec::new();
    walk(&serde_json::from_str(body).unwrap(), &mut found);
    found
        .iter()
        .map(|b| base64::engine::general_purpose::STANDARD.decode(b).unwrap())
        .collect()
}

/// `replay --requests` gives back every body the server received.
fn assert_replays(env: &TestEnv, server: &FakeServer) {
    let sent: String = server
        .requests()
        .iter()
        .map(|r| format!("{}\n", r.body))
        .collect();
    assert_eq!(env.ok(&["replay", "--requests"]).stdout, sent);
}

#[test]
fn an_at_picture_goes_as_an_image_part_on_both_wires() {
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let env = TestEnv::new("images-at");
        let shot = png(40, 30);
        // Told by its bytes, not its name.
        std::fs::write(env.cwd.join("shot.dat"), &shot).unwrap();
        let server = wire.serve(vec![FakeReply::text("A gradient.")]);
        let flags = wire.flags(&server);
        let args: Vec<&str> = flags.iter().map(String::as_str).collect();
        let mut term = env.terminal(&args, 100, &[("ANTHROPIC_API_KEY", "sk-ant-test")]);
        for line in ["what is in @shot.dat?\r", "/quit\r"] {
            term.wait_for_next("\u{203a} ", Duration::from_secs(20));
            term.type_keys(line);
        }
        let (ok, shown) = term.finish(Duration::from_secs(30));
        assert!(ok, "{shown:?}");
        assert!(
            shown.contains("attached shot.dat (image/png, 40×30)"),
            "{wire:?}: {shown:?}"
        );
        let requests = server.requests();
        assert_eq!(requests.len(), 1, "{wire:?}");
        insta::assert_snapshot!(
            format!("at_picture_{wire:?}"),
            serde_json::to_string_pretty(&cut(&requests[0].body)).unwrap()
        );
        // The bytes sent are the file's, kept once in the content store.
        assert_eq!(pictures(&requests[0].body), vec![shot.clone()]);
        let log = common::records(&env.only_session());
        let image = log
            .iter()
            .find_map(|r| r["images"].get(0).cloned())
            .expect("the message names its picture");
        let hash = image["hash"].as_str().unwrap();
        let hex = hash.strip_prefix("sha256:").unwrap();
        let blob = env.state.join("task-agent/blobs").join(&hex[..2]).join(hex);
        assert_eq!(std::fs::read(&blob).unwrap(), shot, "{wire:?}");
        assert!(image.get("data").is_none(), "no base64 in the log: {image}");
        assert_replays(&env, &server);
    }
}

#[test]
fn a_6000_px_png_is_scaled_under_the_limit() {
    let env = TestEnv::new("images-big");
    std::fs::write(env.cwd.join("big.png"), png(6000, 6000)).unwrap();
    for (wire, edge) in [(Wire::Anthropic, 1568), (Wire::OpenAi, 2048)] {
        let server = wire.serve(vec![FakeReply::text("Big.")]);
        let mut args: Vec<String> = wire.flags(&server);
        args.extend(["-p", "--image", "big.png", "describe it"].map(String::from));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let run = env.run_env(&args, "", &[("ANTHROPIC_API_KEY", "sk-ant-test")]);
        assert_eq!(run.code, Some(0), "{run:?}");
        assert_eq!(run.stdout, "Big.\n");
        let requests = server.requests();
        let sent = pictures(&requests[0].body);
        assert_eq!(sent.len(), 1);
        let scaled = image::load_from_memory(&sent[0]).unwrap();
        assert_eq!((scaled.width(), scaled.height()), (edge, edge), "{wire:?}");
    }
}

#[test]
fn a_model_without_vision_is_refused_before_any_request() {
    let env = TestEnv::new("images-blind");
    std::fs::write(env.cwd.join("a.png"), png(8, 8)).unwrap();
    let server = Wire::OpenAi.serve(vec![FakeReply::text("Never.")]);
    let url = server.url();
    let args = [
        "--base-url",
        &url,
        "--model",
        "o3-mini",
        "-p",
        "--image",
        "a.png",
        "what is it?",
    ];
    let run = env.run(&args, "");
    assert_eq!(run.stdout, "", "{run:?}");
    let refusal: Vec<&str> = run
        .stderr_lines()
        .into_iter()
        .filter(|l| l.contains("does not take images"))
        .collect();
    assert_eq!(refusal.len(), 1, "{run:?}");
    assert!(
        refusal[0].starts_with("o3-mini does not take images") && refusal[0].contains("/model"),
        "{refusal:?}"
    );
    assert_eq!(server.requests().len(), 0, "nothing was sent");
}

#[test]
fn a_truncated_png_is_told_and_the_turn_goes_on() {
    let env = TestEnv::new("images-cut");
    let whole = png(64, 64);
    std::fs::write(env.cwd.join("cut.png"), &whole[..whole.len() / 2]).unwrap();
    let server = Wire::OpenAi.serve(vec![FakeReply::text("Text only.")]);
    let url = server.url();
    let args = ["--base-url", &url, "-p", "--image", "cut.png", "look"];
    let run = env.run(&args, "");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "Text only.\n");
    let told: Vec<&str> = run
        .stderr_lines()
        .into_iter()
        .filter(|l| l.contains("cut.png"))
        .collect();
    assert_eq!(told.len(), 1, "{run:?}");
    assert!(
        told[0].starts_with("revolve: image cut.png: cannot decode it")
            && told[0].ends_with(", left out"),
        "{told:?}"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert!(pictures(&requests[0].body).is_empty());
    assert_eq!(
        common::request_messages(&requests[0].body)
            .last()
            .unwrap()
            .1,
        "look"
    );
    assert_replays(&env, &server);
}

#[test]
fn read_file_of_a_png_gives_the_model_the_picture() {
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let env = TestEnv::new("images-read");
        let chart = png(20, 10);
        std::fs::write(env.cwd.join("chart.png"), &chart).unwrap();
        let id = match wire {
            Wire::OpenAi => "call_1",
            Wire::Anthropic => "toolu_01",
        };
        let server = wire.serve(vec![
            FakeReply::tool_calls("", &[(id, "read_file", r#"{"path":"chart.png"}"#)]),
            FakeReply::text("A chart."),
        ]);
        let mut args: Vec<String> = wire.flags(&server);
        args.extend(["-p", "look at chart.png"].map(String::from));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let run = env.run_env(&args, "", &[("ANTHROPIC_API_KEY", "sk-ant-test")]);
        assert_eq!(run.code, Some(0), "{run:?}");
        assert_eq!(run.stdout, "A chart.\n");
        let requests = server.requests();
        assert_eq!(requests.len(), 2, "{wire:?}");
        assert_eq!(pictures(&requests[1].body), vec![chart.clone()], "{wire:?}");
        let messages = cut(&requests[1].body);
        let tail: Vec<Value> = messages
            .as_array()
            .unwrap()
            .iter()
            .rev()
            .take(2)
            .rev()
            .cloned()
            .collect();
        insta::assert_snapshot!(
            format!("read_file_picture_{wire:?}"),
            serde_json::to_string_pretty(&tail).unwrap()
        );
        assert_replays(&env, &server);
    }
}
