//! The browser's way back: a listener on 127.0.0.1 that takes the
//! redirect to `/callback` (RFC 8252 §7.3), and the PKCE verifier and the
//! state, drawn from the operating system's randomness.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use base64::Engine;
use revolve_core::mcp::oauth::{self as rules, Callback};
use sha2::{Digest, Sha256};

use crate::limits::{CALLBACK_POLL_MS, CALLBACK_READ_S, CALLBACK_REQUEST_BYTES};

/// A PKCE pair and a state.
pub(crate) struct Secrets {
    /// 32 random bytes, base64url: 43 characters (RFC 7636 §4.1).
    pub verifier: String,
    /// `BASE64URL(SHA256(verifier))`.
    pub challenge: String,
    /// 16 random bytes, base64url.
    pub state: String,
}

impl Secrets {
    /// Draws them from the OS.
    pub(crate) fn draw() -> Result<Secrets, String> {
        let mut bytes = [0u8; 48]; // not policy: 32 bytes of verifier, 16 of state
        getrandom::fill(&mut bytes).map_err(|e| format!("the system gave no random bytes: {e}"))?;
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let verifier = b64.encode(&bytes[..32]);
        let challenge = b64.encode(Sha256::digest(verifier.as_bytes()));
        Ok(Secrets {
            verifier,
            challenge,
            state: b64.encode(&bytes[32..]),
        })
    }
}

/// The listener: on `port` when it is free (the port a client was
/// registered with), else on one the system picks.
pub(crate) fn listen(port: Option<u16>) -> Result<(TcpListener, String), String> {
    let listener = port
        .and_then(|p| TcpListener::bind(("127.0.0.1", p)).ok())
        .map_or_else(|| TcpListener::bind(("127.0.0.1", 0)), Ok)
        .map_err(|e| format!("cannot listen on 127.0.0.1 for the browser's redirect: {e}"))?;
    let port = listener
        .local_addr()
        .map_err(|e| format!("cannot listen on 127.0.0.1: {e}"))?
        .port();
    let uri = format!("http://127.0.0.1:{port}{}", rules::CALLBACK_PATH);
    Ok((listener, uri))
}

/// The port a redirect URI names, when it is this listener's kind.
pub(crate) fn port_of(redirect_uri: &str) -> Option<u16> {
    redirect_uri
        .strip_prefix("http://127.0.0.1:")?
        .strip_suffix(rules::CALLBACK_PATH)?
        .parse()
        .ok()
}

/// Waits at most `wait` for the browser to bring the code back with
/// `state`; every other request to the listener gets a 404. A wrong
/// state ends the wait: the redirect is not one this login started.
pub(crate) fn code(listener: &TcpListener, state: &str, wait: Duration) -> Result<String, String> {
    listener
        .set_nonblocking(true)
        .map_err(|e| format!("the loopback listener: {e}"))?;
    let deadline = Instant::now() + wait;
    loop {
        match listener.accept() {
            Ok((stream, _)) => {
                let Some(target) = request_target(&stream) else {
                    continue;
                };
                match rules::callback(&target, state) {
                    Callback::Code(code) => {
                        page(
                            stream,
                            "200 OK",
                            "revolve is logged in. You can close this page.",
                        );
                        return Ok(code);
                    }
                    Callback::Refused(why) => {
                        page(stream, "400 Bad Request", "revolve was not logged in.");
                        return Err(format!(
                            "the authorization server refused: {}",
                            revolve_core::text::inert(&why)
                        ));
                    }
                    Callback::WrongState => {
                        page(
                            stream,
                            "400 Bad Request",
                            "This redirect does not carry the state revolve sent; it was refused.",
                        );
                        return Err(
                            "the redirect came back with a state revolve did not send: refused (run the login again)"
                                .to_owned(),
                        );
                    }
                    Callback::Elsewhere => page(stream, "404 Not Found", "Not here."),
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if Instant::now() >= deadline {
                    return Err(format!(
                        "the browser did not come back within {} s",
                        wait.as_secs()
                    ));
                }
                std::thread::sleep(Duration::from_millis(CALLBACK_POLL_MS));
            }
            Err(e) => return Err(format!("the loopback listener: {e}")),
        }
    }
}

/// The request line's target (`/callback?…`) of a GET, read within
/// bounds of size and time.
fn request_target(stream: &TcpStream) -> Option<String> {
    stream.set_nonblocking(false).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(CALLBACK_READ_S)))
        .ok()?;
    let mut reader = BufReader::new(stream.take(CALLBACK_REQUEST_BYTES));
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    // The headers are read (and dropped) so the browser sees an answer,
    // not a reset.
    let mut header = String::new();
    while reader.read_line(&mut header).ok()? > 2 {
        header.clear();
    }
    let mut parts = line.split_whitespace();
    (parts.next()? == "GET").then_some(())?;
    parts.next().map(str::to_owned)
}

fn page(mut stream: TcpStream, status: &str, text: &str) {
    let body = format!("<!doctype html><title>revolve</title><p>{text}</p>\n");
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verifier_and_challenge_are_as_rfc_7636_says() {
        let s = Secrets::draw().unwrap();
        assert_eq!(s.verifier.len(), 43);
        assert!(s
            .verifier
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        assert_eq!(
            s.challenge,
            b64.encode(Sha256::digest(s.verifier.as_bytes()))
        );
        assert_ne!(Secrets::draw().unwrap().verifier, s.verifier);
        // RFC 7636 appendix B's example.
        let v = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        assert_eq!(
            b64.encode(Sha256::digest(v.as_bytes())),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }

    #[test]
    fn the_listener_takes_the_code_and_refuses_a_wrong_state() {
        for (state, expect) in [("s1", Ok("abc".to_owned())), ("other", Err(()))] {
            let (listener, uri) = listen(None).unwrap();
            let port = port_of(&uri).unwrap();
            let browser = std::thread::spawn(move || {
                let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
                write!(s, "GET /favicon.ico HTTP/1.1\r\nhost: x\r\n\r\n").unwrap();
                let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
                write!(
                    s,
                    "GET /callback?code=abc&state={state} HTTP/1.1\r\nhost: x\r\n\r\n"
                )
                .unwrap();
                let mut answer = String::new();
                s.read_to_string(&mut answer).unwrap();
                answer
            });
            let got = code(&listener, "s1", Duration::from_secs(10));
            let answer = browser.join().unwrap();
            match expect {
                Ok(c) => {
                    assert_eq!(got, Ok(c));
                    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
                }
                Err(()) => {
                    assert!(got.unwrap_err().contains("state"));
                    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
                }
            }
        }
    }
}
