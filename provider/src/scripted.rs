//! A provider that answers from a script, for tests and offline demos.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use revolve_core::fixture::Answer;
use revolve_core::record::Thinking;
use revolve_core::{Reply, Request, ToolCall, Usage};

use super::http;
use super::{word_pieces, Provider, ProviderError};

/// One reply of a [`Scripted`] provider.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScriptedReply {
    /// The text streamed (before the error, when there is one).
    pub text: String,
    /// The tools the reply calls, in order.
    pub tool_calls: Vec<ToolCall>,
    /// The usage reported with the reply.
    pub usage: Option<Usage>,
    /// When set, the request fails with this message after streaming `text`,
    /// which becomes the error's partial text.
    pub error: Option<String>,
    /// The reply stopped at the request's length limit
    /// ([`Reply::truncated`]).
    pub truncated: bool,
    /// The thinking blocks the reply began with ([`Reply::thinking`]):
    /// a recorded session's, given again so its requests are rebuilt.
    pub thinking: Vec<Thinking>,
}

/// A provider that answers from a script: each model request of a session
/// gets the next reply.
///
/// The script is a JSON Lines file, one reply per line:
///
/// ```text
/// # comment lines and blank lines are skipped
/// {"text":"Hello there.","usage":{"prompt_tokens":12,"completion_tokens":3}}
/// {"text":"Let me look.","tool_calls":[{"id":"call_1","name":"read_file","arguments":{"path":"x"}}]}
/// {"text":"No usage on this one."}
/// {"error":"the model is overloaded"}
/// {"text":"Half an ans","error":"stream cut"}
/// {"text":"A long answer that was cu","truncated":true}
/// ```
///
/// `usage` is optional and needs both counts. `tool_calls` is optional; each
/// call needs a `name`; its `arguments` are a JSON object (sent as its
/// compact text) or a string (sent as is, so a script can send malformed
/// arguments), `{}` when left out; its `id` is `call_N_I` (reply N, call I,
/// both from 1) when left out. A line needs `text`, `error` or `tool_calls`;
/// with an `error`, the text streams first, then the request fails with it
/// as the partial text (and no calls). `"truncated": true` marks a reply
/// that stopped at the request's length limit ([`Reply::truncated`], as a
/// server's `finish_reason: "length"`); it is `false` when left out. Other
/// keys are ignored.
///
/// # Which reply answers a request
///
/// Reply N answers the Nth model request of the session: the core numbers
/// every request ([`Request::seq`]) from the session's log, counting
/// answers, failures, interruptions and compaction summaries across resumes
/// and compactions, so a resumed session continues the script where it left
/// off and a request sent again gets the same reply. A request without a
/// number (0: built outside a session) is numbered from its body instead:
/// 1 + the number of `assistant` messages + the number of `user` messages
/// directly followed by another `user` message.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scripted {
    path: PathBuf,
    replies: Vec<ScriptedReply>,
    /// `scripted`, or `replay` for answers taken from a session log.
    name: &'static str,
}

impl Scripted {
    /// Reads a script file; a bad line is an error `FILE:LINE: why`.
    pub fn load(path: impl AsRef<Path>) -> Result<Scripted, String> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the script {}: {e}", path.display()))?;
        Scripted::parse(path, &text)
    }

    /// Parses a script's text; `path` names it in messages.
    pub fn parse(path: impl AsRef<Path>, text: &str) -> Result<Scripted, String> {
        let path = path.as_ref().to_owned();
        let mut replies = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = |why: String| format!("{}:{}: {why}", path.display(), i + 1);
            let wire: WireScripted =
                serde_json::from_str(line).map_err(|e| bad(format!("bad reply: {e}")))?;
            if wire.text.is_none() && wire.error.is_none() && wire.tool_calls.is_empty() {
                return Err(bad(
                    "a reply needs \"text\", \"tool_calls\" or \"error\"".to_owned()
                ));
            }
            let n = replies.len() + 1;
            let tool_calls = wire
                .tool_calls
                .into_iter()
                .enumerate()
                .map(|(i, call)| ToolCall {
                    id: call.id.unwrap_or_else(|| format!("call_{n}_{}", i + 1)),
                    name: call.name,
                    arguments: match call.arguments {
                        None | Some(Value::Null) => "{}".to_owned(),
                        Some(arguments) => http::arguments_text(&arguments),
                    },
                })
                .collect();
            replies.push(ScriptedReply {
                thinking: Vec::new(),
                text: wire.text.unwrap_or_default(),
                tool_calls,
                usage: wire.usage.map(Usage::from),
                error: wire.error,
                truncated: wire.truncated,
            });
        }
        Ok(Scripted {
            path,
            replies,
            name: "scripted",
        })
    }

    /// A script of these replies, named `path` in messages.
    pub fn new(path: impl AsRef<Path>, replies: Vec<ScriptedReply>) -> Scripted {
        Scripted {
            path: path.as_ref().to_owned(),
            replies,
            name: "scripted",
        }
    }

    /// `--provider replay:FILE`: the answers a recorded session got
    /// ([`revolve_core::fixture::answers`] of its whole chain), given again
    /// in order; `path` names the log in messages.
    pub fn replaying(path: impl AsRef<Path>, answers: Vec<Answer>) -> Scripted {
        let replies = answers
            .into_iter()
            .map(|a| match a {
                Answer::Reply(reply) => ScriptedReply {
                    text: reply.text,
                    tool_calls: reply.tool_calls,
                    usage: reply.usage,
                    error: None,
                    truncated: reply.truncated,
                    thinking: reply.thinking,
                },
                Answer::Failed { partial, error } => ScriptedReply {
                    text: partial,
                    error: Some(error),
                    ..ScriptedReply::default()
                },
                Answer::NotRecorded => ScriptedReply {
                    error: Some(revolve_core::fixture::REFINE_NOT_RECORDED.to_owned()),
                    ..ScriptedReply::default()
                },
            })
            .collect();
        Scripted {
            path: path.as_ref().to_owned(),
            replies,
            name: "replay",
        }
    }

    /// The replies, in order.
    pub fn replies(&self) -> &[ScriptedReply] {
        &self.replies
    }

    /// The file the script came from.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Provider for Scripted {
    fn complete(
        &self,
        request: &Request,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<Reply, ProviderError> {
        let script = self.path.display();
        let n = match usize::try_from(request.seq) {
            Ok(seq) if seq > 0 => seq,
            _ => request_number(&request.body.text()).map_err(|why| {
                ProviderError::new(format!("the script {script} cannot answer: {why}"), "")
            })?,
        };
        let Some(reply) = self.replies.get(n - 1) else {
            let message = format!(
                "the script {script} has no reply {n} (it holds {})",
                self.replies.len()
            );
            return Err(ProviderError::new(message, ""));
        };
        for piece in word_pieces(&reply.text) {
            on_text(piece);
        }
        match &reply.error {
            Some(error) => Err(ProviderError::new(error, reply.text.clone())),
            None => Ok(Reply {
                truncated: reply.truncated,
                text: reply.text.clone(),
                tool_calls: reply.tool_calls.clone(),
                usage: reply.usage,
                thinking: reply.thinking.clone(),
            }),
        }
    }

    fn name(&self) -> &'static str {
        self.name
    }
}

/// A script line's `usage`: both counts, strictly (a script is written by
/// hand, and a mistake in it is worth saying).
#[derive(Deserialize)]
struct WireUsage {
    prompt_tokens: u64,
    completion_tokens: u64,
    /// Of the prompt tokens, those read from a prompt cache.
    #[serde(default)]
    cache_read_tokens: u64,
    /// Of the prompt tokens, those written to a prompt cache.
    #[serde(default)]
    cache_write_tokens: u64,
}

impl From<WireUsage> for Usage {
    fn from(u: WireUsage) -> Usage {
        Usage {
            prompt_tokens: u.prompt_tokens,
            completion_tokens: u.completion_tokens,
            cache_read_tokens: u.cache_read_tokens,
            cache_write_tokens: u.cache_write_tokens,
        }
    }
}

#[derive(Deserialize)]
struct WireScripted {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    tool_calls: Vec<WireScriptedCall>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    truncated: bool,
}

#[derive(Deserialize)]
struct WireScriptedCall {
    #[serde(default)]
    id: Option<String>,
    name: String,
    #[serde(default)]
    arguments: Option<Value>,
}

/// Which request of its session this body is, from 1 (see [`Scripted`]).
fn request_number(body: &str) -> Result<usize, String> {
    let body: Value =
        serde_json::from_str(body).map_err(|e| format!("the request body is not JSON: {e}"))?;
    let messages = body
        .get("messages")
        .and_then(|m| m.as_array())
        .ok_or("the request body has no \"messages\" list")?;
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m.get("role").and_then(Value::as_str).unwrap_or(""))
        .collect();
    let answered = roles.iter().filter(|r| **r == "assistant").count();
    let failed = roles
        .windows(2)
        .filter(|w| w[0] == "user" && w[1] == "user")
        .count();
    Ok(1 + answered + failed)
}

#[cfg(test)]
mod tests {
    use revolve_core::request::Wire;
    use revolve_core::Message;

    use super::*;
    use crate::testing::request;

    fn reply(text: &str) -> ScriptedReply {
        ScriptedReply {
            text: text.into(),
            ..ScriptedReply::default()
        }
    }

    #[test]
    fn scripted_loads_and_answers_request_after_request() {
        let tmp = tempfile::Builder::new()
            .prefix("revolve-scripted-")
            .tempdir()
            .unwrap();
        let path = tmp.path().join("script.jsonl");
        std::fs::write(
            &path,
            "# greeting\n{\"text\":\"Hello there, you.\",\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2}}\n\n   \n{\"text\":\"Second\"}\n{\"error\":\"boom\\nbang\"}\n{\"text\":\"Half an\",\"error\":\"cut\"}\n",
        )
        .unwrap();
        let script = Scripted::load(&path).unwrap();
        // Gone before the replies are asked for: they are held, not re-read.
        tmp.close().unwrap();
        assert_eq!(script.replies().len(), 4);
        assert_eq!(script.name(), "scripted");

        let mut pieces = Vec::new();
        let reply = script
            .complete(&request(&["a"]), &mut |p| pieces.push(p.to_owned()))
            .unwrap();
        assert_eq!(reply.text, "Hello there, you.");
        assert_eq!(
            reply.usage,
            Some(Usage {
                prompt_tokens: 1,
                completion_tokens: 2,
                ..Default::default()
            })
        );
        assert_eq!(pieces, ["Hello", " there,", " you."]);

        let reply = script.complete(&request(&["a", "b"]), &mut |_| {}).unwrap();
        assert_eq!(reply, reply_of("Second"));

        let err = script
            .complete(&request(&["a", "b", "c"]), &mut |_| {})
            .unwrap_err();
        assert_eq!(err, ProviderError::new("boom bang", ""));

        let err = script
            .complete(&request(&["a", "b", "c", "d"]), &mut |_| {})
            .unwrap_err();
        assert_eq!(err, ProviderError::new("cut", "Half an"));

        let err = script
            .complete(&request(&["a", "b", "c", "d", "e"]), &mut |_| {})
            .unwrap_err();
        assert_eq!(
            err.message,
            format!("the script {} has no reply 5 (it holds 4)", path.display())
        );
    }

    fn reply_of(text: &str) -> Reply {
        Reply {
            text: text.into(),
            ..Reply::default()
        }
    }

    #[test]
    fn scripted_takes_one_reply_per_request_of_the_real_body() {
        let at = time::macros::datetime!(2026-12-02 10:00 UTC);
        let call = ToolCall {
            id: "c1".into(),
            name: "read_file".into(),
            arguments: r#"{"path":"a"}"#.into(),
        };
        let script = Scripted::new(
            "s.jsonl",
            vec![
                ScriptedReply {
                    tool_calls: vec![call.clone()],
                    ..ScriptedReply::default()
                },
                reply("read it"),
                reply("failed"),
                reply("fourth"),
            ],
        );
        let answer = |history: &[Message]| {
            let req = Request::build(Wire::OpenAi, "m", Some("sys"), history);
            script.complete(&req, &mut |_| {}).unwrap()
        };
        let mut history = vec![Message::user(at, "look")];
        let first = answer(&history);
        assert_eq!(
            (first.text.as_str(), &first.tool_calls),
            ("", &vec![call.clone()])
        );
        // The tool round: the request after the result gets reply 2.
        history.push(Message {
            tool_calls: vec![call],
            ..Message::assistant(at, "")
        });
        history.push(Message::tool(at, "c1", "contents"));
        assert_eq!(answer(&history).text, "read it");
        // Asking again (a retry, or a resumed session) gives the same reply.
        assert_eq!(answer(&history).text, "read it");
        history.push(Message::assistant(at, "read it"));
        history.push(Message::user(at, "next"));
        assert_eq!(answer(&history).text, "failed");
        // That request failed before any text: the next turn gets reply 4.
        history.push(Message::user(at, "again"));
        assert_eq!(answer(&history).text, "fourth");

        let bad = Request {
            body: "not json".into(),
            ..request(&["a"])
        };
        let err = script.complete(&bad, &mut |_| {}).unwrap_err();
        assert!(
            err.message
                .starts_with("the script s.jsonl cannot answer: the request body is not JSON"),
            "{err}"
        );
        // A numbered request is answered by its number, whatever its body.
        let numbered = Request { seq: 2, ..bad };
        assert_eq!(
            script.complete(&numbered, &mut |_| {}).unwrap().text,
            "read it"
        );
    }

    #[test]
    fn scripted_tool_calls() {
        let script = Scripted::parse(
            "s.jsonl",
            concat!(
                r#"{"text":"Looking.","tool_calls":[{"id":"call_1","name":"read_file","arguments":{"path":"x","limit":3}},"#,
                r#"{"name":"shell","arguments":"{\"command\": \"ls\"}"},{"name":"agent_info"}]}"#,
                "\n",
                r#"{"tool_calls":[{"name":"list_dir","arguments":"not json"}]}"#,
            ),
        )
        .unwrap();
        let calls: Vec<(&str, &str, &str)> = script.replies()[0]
            .tool_calls
            .iter()
            .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
            .collect();
        assert_eq!(
            calls,
            [
                ("call_1", "read_file", r#"{"limit":3,"path":"x"}"#),
                ("call_1_2", "shell", r#"{"command": "ls"}"#),
                ("call_1_3", "agent_info", "{}"),
            ]
        );
        let mut pieces = Vec::new();
        let reply = script
            .complete(&request(&["a"]), &mut |p| pieces.push(p.to_owned()))
            .unwrap();
        assert_eq!(
            (reply.text.as_str(), reply.tool_calls.len()),
            ("Looking.", 3)
        );
        assert_eq!(pieces, ["Looking."]);
        let second = &script.replies()[1];
        assert_eq!(second.text, "");
        assert_eq!(
            (
                second.tool_calls[0].id.as_str(),
                second.tool_calls[0].arguments.as_str()
            ),
            ("call_2_1", "not json")
        );
    }

    #[test]
    fn scripted_marks_a_truncated_reply() {
        let script = Scripted::parse(
            "s.jsonl",
            "{\"text\":\"cut sho\",\"truncated\":true}\n{\"text\":\"whole\",\"truncated\":false}\n",
        )
        .unwrap();
        let reply = script.complete(&request(&["a"]), &mut |_| {}).unwrap();
        assert_eq!((reply.text.as_str(), reply.truncated), ("cut sho", true));
        let reply = script.complete(&request(&["a", "b"]), &mut |_| {}).unwrap();
        assert!(!reply.truncated);
        // A replayed session gives the mark again.
        let replayed = Scripted::replaying(
            "log.jsonl",
            vec![Answer::Reply(Reply {
                text: "x".into(),
                truncated: true,
                ..Reply::default()
            })],
        );
        assert!(
            replayed
                .complete(&request(&["a"]), &mut |_| {})
                .unwrap()
                .truncated
        );
    }

    #[test]
    fn scripted_bad_lines_name_file_and_line() {
        let err = Scripted::parse("s.jsonl", "{\"text\":\"ok\"}\n# c\n{\"text\":\n").unwrap_err();
        assert!(err.starts_with("s.jsonl:3: bad reply: "), "{err}");
        let err = Scripted::parse(
            "s.jsonl",
            "\n{\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2},\"tool_calls\":[]}",
        )
        .unwrap_err();
        assert_eq!(
            err,
            "s.jsonl:2: a reply needs \"text\", \"tool_calls\" or \"error\""
        );
        let err = Scripted::parse(
            "s.jsonl",
            "{\"text\":\"a\",\"usage\":{\"prompt_tokens\":1}}",
        )
        .unwrap_err();
        assert!(
            err.starts_with("s.jsonl:1: bad reply: missing field `completion_tokens`"),
            "{err}"
        );
        let err = Scripted::parse("s.jsonl", "{\"tool_calls\":[{\"id\":\"x\"}]}").unwrap_err();
        assert!(
            err.starts_with("s.jsonl:1: bad reply: missing field `name`"),
            "{err}"
        );
        let err = Scripted::parse("s.jsonl", "{\"text\":5}").unwrap_err();
        assert!(err.starts_with("s.jsonl:1: "), "{err}");
        let err = Scripted::load("/nonexistent/revolve/script.jsonl").unwrap_err();
        assert!(
            err.starts_with("cannot read the script /nonexistent/revolve/script.jsonl: "),
            "{err}"
        );
    }
}
