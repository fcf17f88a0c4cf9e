//! The streamable HTTP transport: every message POSTed to the server's
//! URL; the answer is JSON or an SSE stream holding it; the session id the
//! server gives (`Mcp-Session-Id`) goes with every later message.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::time::Duration;

use serde_json::Value;
use ureq::Agent;

use crate::client::{answers, from_server, Error, Transport};
use crate::oauth::Auth;

/// A server at a URL.
pub(crate) struct Http {
    agent: Agent,
    url: String,
    headers: BTreeMap<String, String>,
    session: Option<String>,
    version: Option<String>,
    list_changed: bool,
    /// The server's OAuth login, when it may need one (no `Authorization`
    /// header configured).
    auth: Option<Auth>,
}

impl Http {
    pub(crate) fn new(url: &str, headers: &BTreeMap<String, String>, auth: Option<Auth>) -> Http {
        let config = Agent::config_builder().http_status_as_error(false).build();
        Http {
            agent: Agent::new_with_config(config),
            url: url.to_owned(),
            headers: headers.clone(),
            session: None,
            version: None,
            list_changed: false,
            auth,
        }
    }

    /// POSTs `message`; the messages of the answer (none for a 202). With
    /// a login, its token goes along; one refused (401) is refreshed and
    /// the message sent again, once, before the user is asked to log in.
    fn post(&mut self, message: &Value, timeout: Duration) -> Result<Vec<Value>, Error> {
        let mut bearer = self.auth.as_mut().and_then(Auth::bearer);
        let mut again = true;
        loop {
            let response = self.send(message, timeout, bearer.as_deref())?;
            if response.status().as_u16() == 401 {
                if let Some(auth) = self.auth.as_mut() {
                    let fresh = if again && bearer.is_some() {
                        auth.after_refusal()
                    } else {
                        None
                    };
                    if fresh.is_some() {
                        bearer = fresh;
                        again = false;
                        continue;
                    }
                    return Err(Error::Login(auth.name().to_owned()));
                }
            }
            return self.read(response);
        }
    }

    /// One POST of `message`, with the token if any.
    fn send(
        &mut self,
        message: &Value,
        timeout: Duration,
        bearer: Option<&str>,
    ) -> Result<ureq::http::Response<ureq::Body>, Error> {
        let mut call = self
            .agent
            .post(&self.url)
            .config()
            .timeout_global(Some(timeout))
            .build()
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        for (name, value) in &self.headers {
            call = call.header(name.as_str(), value.as_str());
        }
        if let Some(session) = &self.session {
            call = call.header("mcp-session-id", session.as_str());
        }
        if let Some(version) = &self.version {
            call = call.header("mcp-protocol-version", version.as_str());
        }
        if let Some(token) = bearer {
            call = call.header("authorization", format!("Bearer {token}"));
        }
        call.send(message.to_string()).map_err(|e| match e {
            ureq::Error::Timeout(_) => Error::Timeout(timeout),
            e => Error::Gone(format!("{}: {e}", self.url)),
        })
    }

    /// The messages of an answer.
    fn read(&mut self, response: ureq::http::Response<ureq::Body>) -> Result<Vec<Value>, Error> {
        if let Some(session) = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
        {
            self.session = Some(session.to_owned());
        }
        let status = response.status().as_u16();
        let kind = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let mut body = response.into_body();
        if !(200..300).contains(&status) {
            let mut text = String::new();
            let _ = body
                .as_reader()
                .take(500) // not policy: how much of an error page a message quotes
                .read_to_string(&mut text);
            return Err(Error::Gone(format!("HTTP {status}: {}", text.trim())));
        }
        if status == 202 {
            return Ok(Vec::new());
        }
        // At most the bound is read: a larger answer is an error, not a
        // gigabyte in memory.
        let bound = revolve_core::policy::MCP_MESSAGE_BYTES;
        let mut bytes = Vec::new();
        body.as_reader()
            .take(bound as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| Error::Gone(format!("{}: {e}", self.url)))?;
        if bytes.len() > bound {
            return Err(Error::TooBig(bound));
        }
        if kind.starts_with("text/event-stream") {
            Ok(sse_messages(bytes.as_slice()))
        } else {
            match serde_json::from_slice::<Value>(&bytes) {
                Ok(Value::Array(all)) => Ok(all),
                Ok(one) => Ok(vec![one]),
                Err(e) => Err(Error::Protocol(format!("not JSON from {}: {e}", self.url))),
            }
        }
    }
}

/// The JSON messages of an SSE stream: each event's `data` lines joined.
fn sse_messages(reader: impl Read) -> Vec<Value> {
    let mut out = Vec::new();
    let mut data = String::new();
    for line in BufReader::new(reader).lines() {
        let Ok(line) = line else { break };
        if line.is_empty() {
            if let Ok(v) = serde_json::from_str::<Value>(&data) {
                out.push(v);
            }
            data.clear();
        } else if let Some(d) = line.strip_prefix("data:") {
            if !data.is_empty() {
                data.push('\n');
            }
            data.push_str(d.strip_prefix(' ').unwrap_or(d));
        }
    }
    if let Ok(v) = serde_json::from_str::<Value>(&data) {
        out.push(v);
    }
    out
}

impl Transport for Http {
    fn request(&mut self, message: &Value, id: u64, timeout: Duration) -> Result<Value, Error> {
        let mut answer = None;
        for m in self.post(message, timeout)? {
            if answers(&m, id) {
                answer = Some(m);
            } else {
                let (reply, changed) = from_server(&m);
                self.list_changed |= changed;
                if let Some(reply) = reply {
                    let _ = self.post(&reply, timeout);
                }
            }
        }
        answer.ok_or_else(|| Error::Protocol("the server's answer held no response".into()))
    }

    fn notify(&mut self, message: &Value) -> Result<(), Error> {
        self.post(
            message,
            Duration::from_secs(revolve_core::policy::MCP_START_TIMEOUT_S),
        )
        .map(|_| ())
    }

    fn take_list_changed(&mut self) -> bool {
        std::mem::take(&mut self.list_changed)
    }

    fn agreed(&mut self, version: &str) {
        self.version = Some(version.to_owned());
    }

    fn secrets(&self) -> Vec<String> {
        self.auth.as_ref().map(Auth::secrets).unwrap_or_default()
    }
}

impl Drop for Http {
    fn drop(&mut self) {
        // The session ends; a server that keeps none answers 405, which is
        // fine.
        if let Some(session) = &self.session {
            let _ = self
                .agent
                .delete(&self.url)
                .config()
                .timeout_global(Some(Duration::from_secs(1))) // not policy: a courtesy on the way out
                .build()
                .header("mcp-session-id", session.as_str())
                .call();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_events_are_read_whole() {
        let text = "event: message\ndata: {\"id\":1,\ndata: \"result\":{}}\n\n: comment\ndata: {\"method\":\"x\"}\n";
        let got = sse_messages(text.as_bytes());
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[1]["method"], "x");
    }
}
