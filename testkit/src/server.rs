//! The server's side: accepting connections, reading requests, answering
//! each with the next reply.

use super::*;

/// How often the idle server looks at its listener and its stop flag.
pub(crate) const POLL: Duration = Duration::from_millis(5); // not policy: the test server's
/// How long the server waits for a client to send its request.
pub(crate) const READ_TIMEOUT: Duration = Duration::from_secs(2); // not policy: the test server's
/// The largest request head the server reads.
pub(crate) const MAX_HEAD: usize = 1 << 20; // not policy: the test server's

pub(crate) struct Server {
    pub(crate) listener: TcpListener,
    pub(crate) protocol: FakeProtocol,
    pub(crate) limit: Option<Limit>,
    pub(crate) replies: Vec<FakeReply>,
    pub(crate) served: usize,
    pub(crate) requests: Arc<Mutex<Vec<Recorded>>>,
    pub(crate) stop: Arc<AtomicBool>,
}

impl Server {
    pub(crate) fn run(mut self) {
        while !self.stop.load(Ordering::SeqCst) {
            match self.listener.accept() {
                Ok((stream, _)) => {
                    // A failed connection concerns only that client; the
                    // test sees it as a client-side error.
                    let _ = self.serve(stream);
                }
                // Nothing waiting (`WouldBlock`), or a failed accept that
                // only the client would notice: look again shortly.
                Err(_) => thread::sleep(POLL),
            }
        }
    }

    pub(crate) fn serve(&mut self, mut stream: TcpStream) -> io::Result<()> {
        stream.set_nonblocking(false)?;
        stream.set_read_timeout(Some(READ_TIMEOUT))?;
        let Some(recorded) = read_request(&mut stream)? else {
            return Ok(());
        };
        let size = recorded.body.len() as u64;
        lock(&self.requests).push(recorded);
        if let Some(limit) = self.limit {
            let asked = size.div_ceil(limit.bytes_per_token.max(1));
            if asked > limit.tokens {
                let (code, body) = limit.says.answer(asked, limit.tokens);
                write_status(&mut stream, code, &body, None)?;
                stream.flush()?;
                return stream.shutdown(Shutdown::Both);
            }
        }
        let reply = self
            .replies
            .get(self.served)
            .cloned()
            .map(|reply| match self.limit {
                Some(limit) => counted(
                    reply,
                    size.div_ceil(limit.bytes_per_token.max(1)),
                    limit.usage,
                ),
                None => reply,
            });
        self.served += 1;
        match reply {
            Some(reply) => self.answer(&mut stream, reply)?,
            None => {
                let body = format!(
                    "fake server: no reply left for request {} (the script holds {})",
                    self.served,
                    self.replies.len()
                );
                write_status(&mut stream, 500, &body, None)?;
            }
        }
        stream.flush()?;
        stream.shutdown(Shutdown::Both)
    }

    pub(crate) fn answer(&self, stream: &mut TcpStream, reply: FakeReply) -> io::Result<()> {
        let words = |text: &str| -> Vec<String> {
            word_pieces(text).into_iter().map(str::to_owned).collect()
        };
        match reply {
            FakeReply::Stream { chunks, usage } => self.stream(stream, &chunks, &[], usage, true),
            FakeReply::ToolCalls { text, calls, usage } => {
                self.stream(stream, &words(&text), &calls, usage, true)
            }
            FakeReply::Json { text, usage } => {
                let body = match self.protocol {
                    FakeProtocol::OpenAi => {
                        let usage =
                            usage.map_or(String::new(), |(p, c)| format!(",{}", usage_field(p, c)));
                        format!(
                            r#"{{"id":"x","object":"chat.completion","choices":[{{"index":0,"message":{{"role":"assistant","content":{}}},"finish_reason":"stop"}}]{usage}}}"#,
                            json_string(&text)
                        )
                    }
                    FakeProtocol::Anthropic => {
                        let mut message = json!({
                            "id": "msg_fake",
                            "type": "message",
                            "role": "assistant",
                            "model": "fake",
                            "content": [{"type": "text", "text": text}],
                            "stop_reason": "end_turn",
                            "stop_sequence": null,
                        });
                        if let Some((p, c)) = usage {
                            message["usage"] = json!({"input_tokens": p, "output_tokens": c});
                        }
                        message.to_string()
                    }
                };
                write_head(stream, 200, "application/json", Some(body.len()), None)?;
                stream.write_all(body.as_bytes())
            }
            FakeReply::Status {
                code,
                body,
                retry_after,
            } => write_status(stream, code, &body, retry_after),
            FakeReply::CutAfter { chunks } => self.stream(stream, &chunks, &[], None, false),
            FakeReply::Stall { chunks } => {
                self.stream(stream, &chunks, &[], None, false)?;
                self.stall(stream)
            }
            FakeReply::Garbage(body) => {
                write_head(stream, 200, "text/event-stream", None, None)?;
                stream.write_all(body.as_bytes())
            }
            FakeReply::Raw(bytes) => stream.write_all(bytes.as_bytes()),
            FakeReply::Delayed(wait, reply) => {
                let deadline = Instant::now() + wait;
                while Instant::now() < deadline && !self.stop.load(Ordering::SeqCst) {
                    thread::sleep(POLL);
                }
                self.answer(stream, *reply)
            }
            FakeReply::Models(ids) => {
                let body = match self.protocol {
                    FakeProtocol::OpenAi => {
                        let data: Vec<_> = ids
                            .iter()
                            .map(|id| json!({"id": id, "object": "model", "created": 0, "owned_by": "fake"}))
                            .collect();
                        json!({"object": "list", "data": data})
                    }
                    FakeProtocol::Anthropic => {
                        let data: Vec<_> = ids
                            .iter()
                            .map(|id| json!({"type": "model", "id": id, "display_name": id,
                                             "created_at": "2026-01-01T00:00:00Z"}))
                            .collect();
                        json!({"data": data, "has_more": false,
                               "first_id": ids.first(), "last_id": ids.last()})
                    }
                }
                .to_string();
                write_head(stream, 200, "application/json", Some(body.len()), None)?;
                stream.write_all(body.as_bytes())
            }
            FakeReply::Hang => self.stall(stream),
            FakeReply::Slow { chunks, every } => {
                write_head(stream, 200, "text/event-stream", None, None)?;
                self.text_start(stream)?;
                for piece in &chunks {
                    thread::sleep(every);
                    self.text_piece(stream, piece)?;
                }
                self.text_end(stream)
            }
            FakeReply::Keepalive { chunks, every } => {
                write_head(stream, 200, "text/event-stream", None, None)?;
                self.text_start(stream)?;
                for piece in &chunks {
                    self.text_piece(stream, piece)?;
                }
                let empty = match self.protocol {
                    FakeProtocol::OpenAi => format!(": ping\n\ndata: {}\n\n", chunk("{}")),
                    FakeProtocol::Anthropic => {
                        let delta = json!({"type": "text_delta", "text": ""});
                        let data =
                            json!({"type": "content_block_delta", "index": 0, "delta": delta});
                        format!(
                            ": ping\n\nevent: ping\ndata: {{\"type\":\"ping\"}}\n\n\
                             event: content_block_delta\ndata: {data}\n\n"
                        )
                    }
                };
                while !self.stop.load(Ordering::SeqCst) {
                    // A write error is the client hanging up: the end.
                    if stream
                        .write_all(empty.as_bytes())
                        .and_then(|()| stream.flush())
                        .is_err()
                    {
                        return Ok(());
                    }
                    let deadline = Instant::now() + every;
                    while Instant::now() < deadline && !self.stop.load(Ordering::SeqCst) {
                        thread::sleep(POLL.min(every));
                    }
                }
                Ok(())
            }
            FakeReply::Endless { piece } => {
                write_head(stream, 200, "text/event-stream", None, None)?;
                self.text_start(stream)?;
                // Written in batches: one event per write would make the
                // server, not the client, the slow side.
                let mut batch = Vec::new();
                while batch.len() < 64 * 1024 {
                    batch.extend_from_slice(self.piece_event(&piece).as_bytes());
                }
                let mut sent = 0;
                while sent < ENDLESS_CAP && !self.stop.load(Ordering::SeqCst) {
                    // A write error is the client hanging up: the end.
                    if stream.write_all(&batch).is_err() {
                        return Ok(());
                    }
                    sent += batch.len();
                }
                Ok(())
            }
        }
    }

    /// What opens a streamed text answer.
    pub(crate) fn text_start(&self, stream: &mut TcpStream) -> io::Result<()> {
        match self.protocol {
            FakeProtocol::OpenAi => {
                write_event(stream, &chunk(r#"{"role":"assistant","content":""}"#))
            }
            FakeProtocol::Anthropic => {
                let message = json!({
                    "id": "msg_fake", "type": "message", "role": "assistant", "model": "fake",
                    "content": [], "stop_reason": null, "stop_sequence": null,
                });
                write_named(stream, "message_start", json!({"message": message}))?;
                let block = json!({"type": "text", "text": ""});
                write_named(
                    stream,
                    "content_block_start",
                    json!({"index": 0, "content_block": block}),
                )
            }
        }
    }

    /// One text piece of a streamed answer, as its SSE event.
    pub(crate) fn piece_event(&self, piece: &str) -> String {
        match self.protocol {
            FakeProtocol::OpenAi => format!(
                "data: {}\n\n",
                chunk(&format!(r#"{{"content":{}}}"#, json_string(piece)))
            ),
            FakeProtocol::Anthropic => {
                let delta = json!({"type": "text_delta", "text": piece});
                let data = json!({"type": "content_block_delta", "index": 0, "delta": delta});
                format!("event: content_block_delta\ndata: {data}\n\n")
            }
        }
    }

    pub(crate) fn text_piece(&self, stream: &mut TcpStream, piece: &str) -> io::Result<()> {
        stream.write_all(self.piece_event(piece).as_bytes())?;
        stream.flush()
    }

    /// What ends a streamed text answer.
    pub(crate) fn text_end(&self, stream: &mut TcpStream) -> io::Result<()> {
        match self.protocol {
            FakeProtocol::OpenAi => {
                write_event(
                    stream,
                    r#"{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
                )?;
                write_event(stream, "[DONE]")
            }
            FakeProtocol::Anthropic => {
                write_named(stream, "content_block_stop", json!({"index": 0}))?;
                let delta = json!({"delta": {"stop_reason": "end_turn", "stop_sequence": null}});
                write_named(stream, "message_delta", delta)?;
                write_named(stream, "message_stop", json!({}))
            }
        }
    }

    /// A streamed answer: text pieces, then tool calls and the end when
    /// `complete`; otherwise it stops after the text pieces.
    pub(crate) fn stream(
        &self,
        stream: &mut TcpStream,
        chunks: &[String],
        calls: &[(String, String, String)],
        usage: Option<(u64, u64)>,
        complete: bool,
    ) -> io::Result<()> {
        write_head(stream, 200, "text/event-stream", None, None)?;
        match self.protocol {
            FakeProtocol::OpenAi => openai_stream(stream, chunks, calls, usage, complete),
            FakeProtocol::Anthropic => anthropic_stream(stream, chunks, calls, usage, complete),
        }
    }

    /// Waits, sending nothing, until the client hangs up or the server stops.
    pub(crate) fn stall(&self, stream: &mut TcpStream) -> io::Result<()> {
        stream.flush()?;
        stream.set_read_timeout(Some(Duration::from_millis(10)))?;
        let mut byte = [0u8; 1];
        while !self.stop.load(Ordering::SeqCst) {
            match stream.read(&mut byte) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) => {}
                Err(_) => break,
            }
        }
        Ok(())
    }
}
