//! The server's side: accepting connections, reading requests, answering
//! each with the next reply.

use super::*;

/// How often the idle server looks at its listener and its stop flag.
pub(crate) const POLL: Duration = Duration::from_millis(5); // not policy: the test server's
/// How long the server waits for a client to send its request.
pub(crate) const READ_TIMEOUT: Duration = Duration::from_secs(2); // not policy: the test server's
/// How long a kept-alive connection stays open after llama-cpp-python's
/// empty stream, before the server closes it: time for a client to send
/// its next request on it.
pub(crate) const CLOSE_LAG: Duration = Duration::from_millis(100); // not policy: the test server's
/// The largest request head the server reads.
pub(crate) const MAX_HEAD: usize = 1 << 20; // not policy: the test server's

pub(crate) struct Server {
    pub(crate) listener: TcpListener,
    pub(crate) shared: Arc<Shared>,
}

/// What every connection's thread shares.
pub(crate) struct Shared {
    pub(crate) protocol: FakeProtocol,
    pub(crate) limit: Option<Limit>,
    pub(crate) keep_alive: bool,
    /// `TCP_NODELAY` on each connection ([`crate::FakeOptions::no_delay`]).
    pub(crate) no_delay: bool,
    /// llama-server's check of the history's arguments
    /// ([`crate::FakeOptions::parses_arguments`]).
    pub(crate) parses_arguments: bool,
    pub(crate) script: Mutex<Script>,
    pub(crate) requests: Arc<Mutex<Vec<Recorded>>>,
    pub(crate) connections: Arc<AtomicUsize>,
    /// Anthropic's prompt cache, when asked for.
    pub(crate) cache: Option<Mutex<PromptCache>>,
    /// What the cache reported, request by request.
    pub(crate) cached: Arc<Mutex<Vec<CacheUsage>>>,
    /// The thinking blocks answered so far (Anthropic).
    pub(crate) thoughts: Mutex<Vec<thinking::Thought>>,
    /// The thought signatures answered so far (Gemini).
    pub(crate) signatures: Mutex<Vec<String>>,
    pub(crate) stop: Arc<AtomicBool>,
}

/// The replies, and how many requests have taken one.
pub(crate) struct Script {
    pub(crate) replies: Vec<FakeReply>,
    pub(crate) served: usize,
}

/// What a request asks for, read from its body.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Asks {
    /// `"stream": true`.
    pub(crate) streamed: bool,
    /// `max_tokens`, else `max_completion_tokens`.
    pub(crate) max_tokens: Option<u64>,
}

impl Asks {
    pub(crate) fn of(body: &str) -> Asks {
        let Ok(value) = serde_json::from_str::<serde_json::Value>(body) else {
            return Asks::default();
        };
        Asks {
            streamed: value["stream"] == json!(true),
            max_tokens: value["max_tokens"]
                .as_u64()
                .or_else(|| value["max_completion_tokens"].as_u64())
                .or_else(|| value["generationConfig"]["maxOutputTokens"].as_u64())
                .or_else(|| value["max_output_tokens"].as_u64()),
        }
    }
}

impl Server {
    pub(crate) fn run(self) {
        let mut workers: Vec<JoinHandle<()>> = Vec::new();
        while !self.shared.stop.load(Ordering::SeqCst) {
            match self.listener.accept() {
                Ok((stream, _)) => {
                    self.shared.connections.fetch_add(1, Ordering::SeqCst);
                    if self.shared.keep_alive {
                        let shared = Arc::clone(&self.shared);
                        // A connection that gets no thread is dropped: the
                        // client sees it closed.
                        let worker = thread::Builder::new()
                            .name("fake-model-connection".to_owned())
                            .spawn(move || {
                                let _ = shared.serve(stream);
                            });
                        workers.extend(worker);
                        workers.retain(|w| !w.is_finished());
                    } else {
                        // A failed connection concerns only that client;
                        // the test sees it as a client-side error.
                        let _ = self.shared.serve(stream);
                    }
                }
                // Nothing waiting (`WouldBlock`), or a failed accept that
                // only the client would notice: look again shortly.
                Err(_) => thread::sleep(POLL),
            }
        }
        for worker in workers {
            // A panic in a connection's thread has nothing left to report.
            let _ = worker.join();
        }
    }
}

impl FakeReply {
    /// Whether the answer ends with its body, leaving a kept-alive
    /// connection open for the next request (a cut, stalled, hanging or
    /// endless stream, garbage and raw bytes end by closing it).
    pub(crate) fn keeps_alive(&self) -> bool {
        match self {
            FakeReply::Stream { .. }
            | FakeReply::ToolCalls { .. }
            | FakeReply::Json { .. }
            | FakeReply::Status { .. }
            | FakeReply::Models(_)
            | FakeReply::Slow { .. }
            | FakeReply::Length { .. }
            | FakeReply::Rambles { .. } => true,
            FakeReply::Delayed(_, reply)
            | FakeReply::Thinks { reply, .. }
            | FakeReply::Searches { reply, .. } => reply.keeps_alive(),
            FakeReply::CutAfter { .. }
            | FakeReply::Stall { .. }
            | FakeReply::Garbage(_)
            | FakeReply::Raw(_)
            | FakeReply::Hang
            | FakeReply::TrickleHead { .. }
            | FakeReply::Endless { .. }
            | FakeReply::Keepalive { .. } => false,
        }
    }
}

impl Shared {
    /// Serves one connection: one request, or with keep-alive request
    /// after request until the client closes it, an answer closes it, or
    /// the server stops.
    pub(crate) fn serve(&self, stream: TcpStream) -> io::Result<()> {
        stream.set_nonblocking(false)?;
        stream.set_nodelay(self.no_delay)?;
        let mut conn = Conn {
            stream,
            close: true,
            chunked: false,
            cached: None,
            thinking: None,
            search: None,
        };
        let mut first = true;
        loop {
            if !first && !self.awaits_request(&conn.stream)? {
                return Ok(());
            }
            first = false;
            conn.stream.set_read_timeout(Some(READ_TIMEOUT))?;
            let Some(recorded) = read_request(&mut conn.stream)? else {
                return Ok(());
            };
            self.respond(&mut conn, recorded)?;
            conn.end()?;
            if conn.close {
                return conn.stream.shutdown(Shutdown::Both);
            }
        }
    }

    /// Waits on an idle kept-alive connection for the client's next
    /// request; `false` when the client closed it or the server stops.
    fn awaits_request(&self, stream: &TcpStream) -> io::Result<bool> {
        stream.set_read_timeout(Some(POLL))?;
        let mut byte = [0u8; 1];
        while !self.stop.load(Ordering::SeqCst) {
            match stream.peek(&mut byte) {
                Ok(0) => return Ok(false),
                Ok(_) => return Ok(true),
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock
                            | io::ErrorKind::TimedOut
                            | io::ErrorKind::Interrupted
                    ) => {}
                Err(_) => return Ok(false),
            }
        }
        Ok(false)
    }

    /// llama-server's refusal of a history holding a call whose arguments
    /// do not parse as JSON, when it plays that server.
    fn unparsed_arguments(&self, body: &str) -> Option<String> {
        if !self.parses_arguments || self.protocol != FakeProtocol::OpenAi {
            return None;
        }
        let body: serde_json::Value = serde_json::from_str(body).ok()?;
        body["messages"]
            .as_array()?
            .iter()
            .filter_map(|m| m["tool_calls"].as_array())
            .flatten()
            .filter_map(|c| c["function"]["arguments"].as_str())
            .find_map(|a| serde_json::from_str::<serde_json::Value>(a).err())
            .map(|e| {
                format!("Failed to parse tool call arguments as JSON: [json.exception.parse_error.101] {e}")
            })
    }

    /// Answers one request: refused or cut as the limit says, else with
    /// the next reply of the script.
    fn respond(&self, conn: &mut Conn, recorded: Recorded) -> io::Result<()> {
        let size = recorded.body.len() as u64;
        let asks = Asks::of(&recorded.body);
        conn.cached = None;
        conn.thinking = None;
        if self.protocol == FakeProtocol::Responses {
            if let Err(message) = responses::check(&recorded.body, &lock(&self.thoughts)) {
                lock(&self.requests).push(recorded);
                let body = serde_json::json!({"error": {"message": message,
                    "type": "invalid_request_error", "param": "input", "code": null}});
                return write_status(conn, 400, &body.to_string(), None);
            }
        }
        if self.protocol == FakeProtocol::Anthropic {
            if let Err(message) = thinking::check(&recorded.body, &lock(&self.thoughts)) {
                lock(&self.requests).push(recorded);
                let body = serde_json::json!({"type": "error", "error": {
                    "type": "invalid_request_error", "message": message}});
                return write_status(conn, 400, &body.to_string(), None);
            }
        }
        if self.protocol == FakeProtocol::Gemini {
            if recorded.path.contains(":countTokens") {
                let per = self.limit.map_or(4, |l| l.bytes_per_token);
                let body = gemini::count(&recorded.body, per);
                lock(&self.requests).push(recorded);
                return write_status(conn, 200, &body, None);
            }
            if let Err(message) = gemini::check(&recorded.body, &lock(&self.signatures)) {
                lock(&self.requests).push(recorded);
                let body = gemini::error(400, &message, "INVALID_ARGUMENT");
                return write_status(conn, 400, &body, None);
            }
        }
        if let Some(message) = self.unparsed_arguments(&recorded.body) {
            lock(&self.requests).push(recorded);
            let body = serde_json::json!({"error": {"code": 500, "message": message, "type": "server_error"}});
            return write_status(conn, 500, &body.to_string(), None);
        }
        if let (Some(cache), FakeProtocol::Anthropic) = (&self.cache, self.protocol) {
            match lock(cache).usage(&recorded.body) {
                Ok(usage) => {
                    lock(&self.cached).push(usage);
                    conn.cached = Some(usage);
                }
                Err(message) => {
                    lock(&self.requests).push(recorded);
                    let body = serde_json::json!({"type": "error", "error": {
                        "type": "invalid_request_error", "message": message}});
                    return write_status(conn, 400, &body.to_string(), None);
                }
            }
        }
        lock(&self.requests).push(recorded);
        conn.close = !self.keep_alive;
        let mut prompt = None;
        if let Some(limit) = self.limit {
            let asked = size.div_ceil(limit.bytes_per_token.max(1));
            prompt = Some(asked);
            if asked > limit.tokens {
                match limit.says {
                    Overflows::Truncates => prompt = Some(limit.tokens),
                    Overflows::LlamaCppPython if asks.streamed => {
                        // As uvicorn sends it: kept alive, an empty chunked
                        // body, and then the connection closed all the same.
                        write_head(conn, 200, "text/event-stream", None, None)?;
                        conn.end()?;
                        if !conn.close {
                            thread::sleep(CLOSE_LAG);
                        }
                        conn.close = true;
                        return Ok(());
                    }
                    says => {
                        let (code, body) = says.answer_to(asked, limit.tokens, asks.max_tokens);
                        return write_status(conn, code, &body, None);
                    }
                }
            }
        }
        let (reply, served, held) = {
            let mut script = lock(&self.script);
            let reply = script.replies.get(script.served).cloned();
            script.served += 1;
            (reply, script.served, script.replies.len())
        };
        let Some(reply) = reply else {
            let body = format!(
                "fake server: no reply left for request {served} (the script holds {held})"
            );
            return write_status(conn, 500, &body, None);
        };
        let reply = match reply {
            FakeReply::Rambles { piece } => self.ramble(&piece, prompt, asks.max_tokens),
            reply => reply,
        };
        let reply = match (self.limit, prompt) {
            (Some(limit), Some(prompt)) => counted(reply, prompt, limit.usage),
            _ => reply,
        };
        conn.close |= !reply.keeps_alive();
        self.answer(conn, reply)
    }

    /// What a [`FakeReply::Rambles`] of `piece` sends, after a prompt of
    /// `prompt` tokens (under a limit) asking for at most `max_tokens`.
    fn ramble(&self, piece: &str, prompt: Option<u64>, max_tokens: Option<u64>) -> FakeReply {
        let room = self
            .limit
            .zip(prompt)
            .map(|(limit, prompt)| limit.tokens.saturating_sub(prompt));
        let budget = match (max_tokens, room) {
            (Some(max), Some(room)) => max.min(room),
            (Some(max), None) => max,
            (None, Some(room)) => room,
            (None, None) => RAMBLE_WORDS,
        };
        let mut chunks = Vec::new();
        let tokens = match self.limit {
            _ if piece.is_empty() => 0,
            Some(limit) => {
                let per = limit.bytes_per_token.max(1);
                let mut bytes = 0u64;
                while bytes + piece.len() as u64 <= budget.saturating_mul(per) {
                    chunks.push(piece.to_owned());
                    bytes += piece.len() as u64;
                }
                bytes.div_ceil(per)
            }
            None => {
                chunks = vec![piece.to_owned(); usize::try_from(budget).unwrap_or(usize::MAX)];
                budget
            }
        };
        FakeReply::Length {
            chunks,
            usage: Some((10, tokens)),
        }
    }

    pub(crate) fn answer(&self, stream: &mut Conn, reply: FakeReply) -> io::Result<()> {
        let words = |text: &str| -> Vec<String> {
            word_pieces(text).into_iter().map(str::to_owned).collect()
        };
        match reply {
            FakeReply::Thinks { thinking, reply } => {
                if self.protocol != FakeProtocol::OpenAi {
                    let calls = match reply.as_ref() {
                        FakeReply::ToolCalls { calls, .. } => {
                            calls.iter().map(|(id, _, _)| id.clone()).collect()
                        }
                        _ => Vec::new(),
                    };
                    lock(&self.thoughts).push(thinking::Thought {
                        signature: thinking::signature(&thinking),
                        thinking: thinking.clone(),
                        calls,
                    });
                    stream.thinking = Some(thinking);
                }
                self.answer(stream, *reply)
            }
            FakeReply::Searches {
                query,
                results,
                reply,
            } => {
                if self.protocol != FakeProtocol::OpenAi {
                    stream.search = Some((query, results));
                }
                self.answer(stream, *reply)
            }
            FakeReply::Stream { chunks, usage } => {
                self.stream(stream, &chunks, &[], usage, End::Stop)
            }
            FakeReply::ToolCalls { text, calls, usage } => {
                self.stream(stream, &words(&text), &calls, usage, End::Stop)
            }
            FakeReply::Length { chunks, usage } => {
                self.stream(stream, &chunks, &[], usage, End::Length)
            }
            // Resolved by `respond`, which knows the request.
            FakeReply::Rambles { piece } => {
                let reply = self.ramble(&piece, None, None);
                self.answer(stream, reply)
            }
            FakeReply::Json { text, usage } => self.whole(stream, &text, usage),
            FakeReply::Status {
                code,
                body,
                retry_after,
            } => write_status(stream, code, &body, retry_after),
            FakeReply::CutAfter { chunks } => self.stream(stream, &chunks, &[], None, End::Cut),
            FakeReply::Stall { chunks } => {
                self.stream(stream, &chunks, &[], None, End::Cut)?;
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
            FakeReply::Models(ids) => self.models(stream, &ids),
            FakeReply::Hang => self.stall(stream),
            FakeReply::TrickleHead { every } => self.trickle_head(stream, every),
            FakeReply::Slow { chunks, every } => {
                write_head(stream, 200, "text/event-stream", None, None)?;
                self.text_start(stream)?;
                for piece in &chunks {
                    thread::sleep(every);
                    self.text_piece(stream, piece)?;
                }
                self.text_end(stream)
            }
            FakeReply::Keepalive { chunks, every } => self.keepalive(stream, &chunks, every),
            FakeReply::Endless { piece } => self.endless(stream, &piece),
        }
    }

    /// A whole (not streamed) text answer in this protocol's JSON.
    fn whole(&self, stream: &mut Conn, text: &str, usage: Option<(u64, u64)>) -> io::Result<()> {
        let body = match self.protocol {
            FakeProtocol::OpenAi => {
                let usage = usage.map_or(String::new(), |(p, c)| format!(",{}", usage_field(p, c)));
                format!(
                    r#"{{"id":"x","object":"chat.completion","choices":[{{"index":0,"message":{{"role":"assistant","content":{}}},"finish_reason":"stop"}}]{usage}}}"#,
                    json_string(text)
                )
            }
            FakeProtocol::Responses => {
                let output = [responses::message(text)];
                responses::response("completed", &output, usage).to_string()
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
            FakeProtocol::Gemini => gemini::whole(text, usage),
        };
        write_head(stream, 200, "application/json", Some(body.len()), None)?;
        stream.write_all(body.as_bytes())
    }

    /// The list of models, as this protocol's server lists them.
    fn models(&self, stream: &mut Conn, ids: &[String]) -> io::Result<()> {
        let body = match self.protocol {
            FakeProtocol::OpenAi | FakeProtocol::Responses => {
                let data: Vec<_> = ids
                    .iter()
                    .map(
                        |id| json!({"id": id, "object": "model", "created": 0, "owned_by": "fake"}),
                    )
                    .collect();
                json!({"object": "list", "data": data})
            }
            FakeProtocol::Anthropic => {
                let data: Vec<_> = ids
                    .iter()
                    .map(|id| {
                        json!({"type": "model", "id": id, "display_name": id,
                                     "created_at": "2026-01-01T00:00:00Z"})
                    })
                    .collect();
                json!({"data": data, "has_more": false,
                       "first_id": ids.first(), "last_id": ids.last()})
            }
            FakeProtocol::Gemini => serde_json::from_str(&gemini::models(ids)).unwrap_or_default(),
        }
        .to_string();
        write_head(stream, 200, "application/json", Some(body.len()), None)?;
        stream.write_all(body.as_bytes())
    }

    /// A status line and a header that never end, a byte each `every`.
    fn trickle_head(&self, stream: &mut Conn, every: Duration) -> io::Result<()> {
        let head = b"HTTP/1.1 200 OK\r\nx-trickle: ";
        for i in 0.. {
            let byte = head.get(i).copied().unwrap_or(b'a');
            let deadline = Instant::now() + every;
            while Instant::now() < deadline {
                if self.stop.load(Ordering::SeqCst) {
                    return Ok(());
                }
                thread::sleep(POLL.min(every));
            }
            // A write error is the client hanging up: the end.
            if stream
                .write_all(&[byte])
                .and_then(|()| stream.flush())
                .is_err()
            {
                return Ok(());
            }
        }
        Ok(())
    }

    /// `chunks`, then an empty event each `every` until the server stops.
    fn keepalive(&self, stream: &mut Conn, chunks: &[String], every: Duration) -> io::Result<()> {
        write_head(stream, 200, "text/event-stream", None, None)?;
        self.text_start(stream)?;
        for piece in chunks {
            self.text_piece(stream, piece)?;
        }
        let empty = match self.protocol {
            FakeProtocol::OpenAi => format!(": ping\n\ndata: {}\n\n", chunk("{}")),
            FakeProtocol::Responses => {
                let data = json!({"type": "response.output_text.delta",
                    "item_id": "msg_fake", "output_index": 0, "content_index": 0,
                    "delta": ""});
                format!(": ping\n\nevent: response.output_text.delta\ndata: {data}\n\n")
            }
            FakeProtocol::Anthropic => {
                let delta = json!({"type": "text_delta", "text": ""});
                let data = json!({"type": "content_block_delta", "index": 0, "delta": delta});
                format!(
                    ": ping\n\nevent: ping\ndata: {{\"type\":\"ping\"}}\n\n\
                     event: content_block_delta\ndata: {data}\n\n"
                )
            }
            FakeProtocol::Gemini => format!(": ping\n\n{}", gemini::piece("")),
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

    /// `piece` over and over, up to [`ENDLESS_CAP`] bytes.
    fn endless(&self, stream: &mut Conn, piece: &str) -> io::Result<()> {
        write_head(stream, 200, "text/event-stream", None, None)?;
        self.text_start(stream)?;
        // Written in batches: one event per write would make the
        // server, not the client, the slow side.
        let mut batch = Vec::new();
        while batch.len() < 64 * 1024 {
            batch.extend_from_slice(self.piece_event(piece).as_bytes());
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

    /// What opens a streamed text answer.
    pub(crate) fn text_start(&self, stream: &mut Conn) -> io::Result<()> {
        match self.protocol {
            FakeProtocol::OpenAi => {
                write_event(stream, &chunk(r#"{"role":"assistant","content":""}"#))
            }
            FakeProtocol::Responses => {
                let mut events = responses::Events::new(stream);
                events.start()?;
                events.text_start(0)
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
            // Gemini's stream has no opening event.
            FakeProtocol::Gemini => Ok(()),
        }
    }

    /// One text piece of a streamed answer, as its SSE event.
    pub(crate) fn piece_event(&self, piece: &str) -> String {
        match self.protocol {
            FakeProtocol::OpenAi => format!(
                "data: {}\n\n",
                chunk(&format!(r#"{{"content":{}}}"#, json_string(piece)))
            ),
            FakeProtocol::Responses => {
                let data = json!({"type": "response.output_text.delta", "item_id": "msg_fake",
                    "output_index": 0, "content_index": 0, "delta": piece});
                format!("event: response.output_text.delta\ndata: {data}\n\n")
            }
            FakeProtocol::Anthropic => {
                let delta = json!({"type": "text_delta", "text": piece});
                let data = json!({"type": "content_block_delta", "index": 0, "delta": delta});
                format!("event: content_block_delta\ndata: {data}\n\n")
            }
            FakeProtocol::Gemini => gemini::piece(piece),
        }
    }

    pub(crate) fn text_piece(&self, stream: &mut Conn, piece: &str) -> io::Result<()> {
        stream.write_all(self.piece_event(piece).as_bytes())?;
        stream.flush()
    }

    /// What ends a streamed text answer.
    pub(crate) fn text_end(&self, stream: &mut Conn) -> io::Result<()> {
        match self.protocol {
            FakeProtocol::OpenAi => {
                write_event(
                    stream,
                    r#"{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
                )?;
                write_event(stream, "[DONE]")
            }
            FakeProtocol::Responses => {
                let mut events = responses::Events::new(stream);
                events.end(&[], None, End::Stop)
            }
            FakeProtocol::Anthropic => {
                write_named(stream, "content_block_stop", json!({"index": 0}))?;
                let delta = json!({"delta": {"stop_reason": "end_turn", "stop_sequence": null}});
                write_named(stream, "message_delta", delta)?;
                write_named(stream, "message_stop", json!({}))
            }
            FakeProtocol::Gemini => {
                stream.write_all(gemini::end("STOP", None, None).as_bytes())?;
                stream.flush()
            }
        }
    }

    /// A streamed answer: text pieces, then tool calls and the end `end`
    /// says, or nothing more when it is a cut.
    pub(crate) fn stream(
        &self,
        stream: &mut Conn,
        chunks: &[String],
        calls: &[(String, String, String)],
        usage: Option<(u64, u64)>,
        end: End,
    ) -> io::Result<()> {
        write_head(stream, 200, "text/event-stream", None, None)?;
        match self.protocol {
            FakeProtocol::OpenAi => openai_stream(stream, chunks, calls, usage, end),
            FakeProtocol::Anthropic => anthropic_stream(stream, chunks, calls, usage, end),
            FakeProtocol::Gemini => {
                let signature = {
                    let mut given = lock(&self.signatures);
                    let signature = gemini::signature_of(given.len());
                    given.push(signature.clone());
                    signature
                };
                gemini::stream(stream, chunks, calls, usage, end, &signature)
            }
            FakeProtocol::Responses => responses::stream(stream, chunks, calls, usage, end),
        }
    }

    /// Waits, sending nothing, until the client hangs up or the server stops.
    pub(crate) fn stall(&self, conn: &mut Conn) -> io::Result<()> {
        conn.flush()?;
        let stream = &mut conn.stream;
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
