//! The bytes on the wire: HTTP heads, and both protocols' event streams.

use super::*;

/// Reads one request; `None` when the client left before sending it whole.
pub(crate) fn read_request(stream: &mut TcpStream) -> io::Result<Option<Recorded>> {
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = find(&data, b"\r\n\r\n") {
            break at;
        }
        if data.len() > MAX_HEAD {
            return Ok(None);
        }
        match stream.read(&mut buf) {
            Ok(0) => return Ok(None),
            Ok(n) => data.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Ok(None),
        }
    };
    let head = String::from_utf8_lossy(&data[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next().unwrap_or_default().split(' ');
    let method = request_line.next().unwrap_or_default().to_owned();
    let path = request_line.next().unwrap_or_default().to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_owned(), value.trim().to_owned()))
        .collect();
    let length = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = data.split_off(head_end + 4);
    while body.len() < length {
        match stream.read(&mut buf) {
            Ok(0) => return Ok(None),
            Ok(n) => body.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Ok(None),
        }
    }
    body.truncate(length);
    let body = String::from_utf8_lossy(&body).into_owned();
    Ok(Some(Recorded {
        method,
        path,
        headers,
        body,
    }))
}

/// One connection's writing side: an answer's head goes out as is, its
/// body in chunks after a head that said `Transfer-Encoding: chunked`.
pub(crate) struct Conn {
    pub(crate) stream: TcpStream,
    /// The answer being written ends the connection: its head says
    /// `Connection: close`, and a body without a length is close-delimited.
    pub(crate) close: bool,
    /// The answer's body goes out in chunks.
    pub(crate) chunked: bool,
    /// What the prompt cache made of the request being answered: a
    /// streamed Anthropic answer reports it as its usage.
    pub(crate) cached: Option<CacheUsage>,
    /// The thinking block a streamed Anthropic answer begins with.
    pub(crate) thinking: Option<String>,
    /// The web search a streamed answer makes before its text: the query
    /// and the results' `(title, url)`.
    pub(crate) search: Option<(String, Vec<(String, String)>)>,
}

impl Conn {
    /// Ends the answer: the last chunk of a chunked body.
    pub(crate) fn end(&mut self) -> io::Result<()> {
        if std::mem::take(&mut self.chunked) {
            self.stream.write_all(b"0\r\n\r\n")?;
        }
        self.stream.flush()
    }
}

impl Write for Conn {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if !self.chunked || buf.is_empty() {
            return self.stream.write(buf);
        }
        let mut framed = format!("{:x}\r\n", buf.len()).into_bytes();
        framed.extend_from_slice(buf);
        framed.extend_from_slice(b"\r\n");
        self.stream.write_all(&framed)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.stream.flush()
    }
}

/// How a streamed answer ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum End {
    /// It does not: the stream stops after its text pieces.
    Cut,
    /// As the model chose: `stop` (`end_turn`), or `tool_calls`
    /// (`tool_use`) after calls.
    Stop,
    /// At the request's length limit: `length` (`max_tokens`).
    Length,
}

pub(crate) fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

pub(crate) fn write_head(
    stream: &mut Conn,
    code: u16,
    content_type: &str,
    length: Option<usize>,
    retry_after: Option<u64>,
) -> io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {code} {}\r\nContent-Type: {content_type}\r\n",
        reason(code)
    );
    let chunked = length.is_none() && !stream.close;
    match length {
        Some(length) => head.push_str(&format!("Content-Length: {length}\r\n")),
        None if chunked => head.push_str("Transfer-Encoding: chunked\r\n"),
        None => {}
    }
    if let Some(secs) = retry_after {
        head.push_str(&format!("Retry-After: {secs}\r\n"));
    }
    head.push_str("Cache-Control: no-cache\r\n");
    if stream.close {
        head.push_str("Connection: close\r\n");
    }
    head.push_str("\r\n");
    stream.stream.write_all(head.as_bytes())?;
    stream.chunked = chunked;
    Ok(())
}

pub(crate) fn write_status(
    stream: &mut Conn,
    code: u16,
    body: &str,
    retry_after: Option<u64>,
) -> io::Result<()> {
    let content_type = if body.starts_with('{') {
        "application/json"
    } else {
        "text/plain; charset=utf-8"
    };
    write_head(stream, code, content_type, Some(body.len()), retry_after)?;
    stream.write_all(body.as_bytes())
}

/// The OpenAI chunks of an answer (see the module doc).
pub(crate) fn openai_stream(
    stream: &mut Conn,
    chunks: &[String],
    calls: &[(String, String, String)],
    usage: Option<(u64, u64)>,
    end: End,
) -> io::Result<()> {
    write_event(stream, &chunk(r#"{"role":"assistant","content":""}"#))?;
    for piece in chunks {
        write_event(
            stream,
            &chunk(&format!(r#"{{"content":{}}}"#, json_string(piece))),
        )?;
    }
    if end == End::Cut {
        return Ok(());
    }
    for (index, (id, name, arguments)) in calls.iter().enumerate() {
        let call = json!({"index": index, "id": id, "type": "function",
                          "function": {"name": name, "arguments": ""}});
        write_event(stream, &chunk(&json!({"tool_calls": [call]}).to_string()))?;
        for piece in fragments(arguments) {
            let call = json!({"index": index, "function": {"arguments": piece}});
            write_event(stream, &chunk(&json!({"tool_calls": [call]}).to_string()))?;
        }
    }
    let reason = match end {
        End::Length => "length",
        _ if calls.is_empty() => "stop",
        _ => "tool_calls",
    };
    write_event(
        stream,
        &format!(
            r#"{{"id":"x","object":"chat.completion.chunk","choices":[{{"index":0,"delta":{{}},"finish_reason":"{reason}"}}]}}"#
        ),
    )?;
    if let Some((prompt, completion)) = usage {
        write_event(stream, &usage_chunk(prompt, completion))?;
    }
    write_event(stream, "[DONE]")
}

/// The Anthropic events of an answer (see the module doc).
pub(crate) fn anthropic_stream(
    stream: &mut Conn,
    chunks: &[String],
    calls: &[(String, String, String)],
    usage: Option<(u64, u64)>,
    end: End,
) -> io::Result<()> {
    let mut message = json!({
        "id": "msg_fake", "type": "message", "role": "assistant", "model": "fake",
        "content": [], "stop_reason": null, "stop_sequence": null,
    });
    if let Some(cached) = stream.cached {
        message["usage"] = json!({
            "input_tokens": cached.input,
            "cache_read_input_tokens": cached.read,
            "cache_creation_input_tokens": cached.written,
            "output_tokens": 1,
        });
    } else if let Some((prompt, _)) = usage {
        message["usage"] = json!({"input_tokens": prompt, "output_tokens": 1});
    }
    write_named(stream, "message_start", json!({"message": message}))?;
    let mut index = 0;
    if let Some(thinking) = stream.thinking.take() {
        let block = json!({"type": "thinking", "thinking": ""});
        write_named(
            stream,
            "content_block_start",
            json!({"index": 0, "content_block": block}),
        )?;
        for piece in word_pieces(&thinking) {
            let delta = json!({"type": "thinking_delta", "thinking": piece});
            write_named(
                stream,
                "content_block_delta",
                json!({"index": 0, "delta": delta}),
            )?;
        }
        let delta =
            json!({"type": "signature_delta", "signature": crate::thinking::signature(&thinking)});
        write_named(
            stream,
            "content_block_delta",
            json!({"index": 0, "delta": delta}),
        )?;
        write_named(stream, "content_block_stop", json!({"index": 0}))?;
        index = 1;
    }
    if let Some((query, results)) = stream.search.take() {
        index = anthropic_search(stream, index, &query, &results)?;
    }
    if !chunks.is_empty() {
        let block = json!({"type": "text", "text": ""});
        write_named(
            stream,
            "content_block_start",
            json!({"index": index, "content_block": block}),
        )?;
        write_named(stream, "ping", json!({}))?;
        for piece in chunks {
            let delta = json!({"type": "text_delta", "text": piece});
            write_named(
                stream,
                "content_block_delta",
                json!({"index": index, "delta": delta}),
            )?;
        }
    }
    if end == End::Cut {
        return Ok(());
    }
    if !chunks.is_empty() {
        write_named(stream, "content_block_stop", json!({"index": index}))?;
        index += 1;
    }
    for (id, name, arguments) in calls {
        let block = json!({"type": "tool_use", "id": id, "name": name, "input": {}});
        write_named(
            stream,
            "content_block_start",
            json!({"index": index, "content_block": block}),
        )?;
        for piece in std::iter::once("").chain(fragments(arguments)) {
            let delta = json!({"type": "input_json_delta", "partial_json": piece});
            write_named(
                stream,
                "content_block_delta",
                json!({"index": index, "delta": delta}),
            )?;
        }
        write_named(stream, "content_block_stop", json!({"index": index}))?;
        index += 1;
    }
    let reason = match end {
        End::Length => "max_tokens",
        _ if calls.is_empty() => "end_turn",
        _ => "tool_use",
    };
    let mut delta = json!({"delta": {"stop_reason": reason, "stop_sequence": null}});
    if let Some((_, completion)) = usage {
        delta["usage"] = json!({"output_tokens": completion});
    }
    write_named(stream, "message_delta", delta)?;
    write_named(stream, "message_stop", json!({}))
}

/// A web search's two blocks from `index` (see [`crate::FakeReply::Searches`]);
/// the index after them.
fn anthropic_search(
    stream: &mut Conn,
    index: u64,
    query: &str,
    results: &[(String, String)],
) -> io::Result<u64> {
    let id = format!("srvtoolu_fake_{index}");
    let block = json!({"type": "server_tool_use", "id": id, "name": "web_search", "input": {}});
    write_named(
        stream,
        "content_block_start",
        json!({"index": index, "content_block": block}),
    )?;
    let input = json!({"query": query}).to_string();
    for piece in fragments(&input) {
        let delta = json!({"type": "input_json_delta", "partial_json": piece});
        write_named(
            stream,
            "content_block_delta",
            json!({"index": index, "delta": delta}),
        )?;
    }
    write_named(stream, "content_block_stop", json!({"index": index}))?;
    let content: Vec<serde_json::Value> = results
        .iter()
        .map(|(title, url)| {
            json!({"type": "web_search_result", "title": title, "url": url,
                "encrypted_content": crate::thinking::signature(url), "page_age": "December 1, 2026"})
        })
        .collect();
    let block = json!({"type": "web_search_tool_result", "tool_use_id": id, "content": content});
    write_named(
        stream,
        "content_block_start",
        json!({"index": index + 1, "content_block": block}),
    )?;
    write_named(stream, "content_block_stop", json!({"index": index + 1}))?;
    Ok(index + 2)
}

/// `text` in three pieces at character boundaries (two for two
/// characters); fewer only when it is shorter.
pub(crate) fn fragments(text: &str) -> Vec<&str> {
    let ends: Vec<usize> = text.char_indices().map(|(i, _)| i).skip(1).collect();
    let n = ends.len() + 1;
    let cuts: Vec<usize> = [n / 3, 2 * n / 3]
        .into_iter()
        .filter(|&k| k > 0 && k < n)
        .map(|k| ends[k - 1])
        .collect();
    let mut pieces = Vec::new();
    let mut start = 0;
    for cut in cuts {
        if cut > start {
            pieces.push(&text[start..cut]);
            start = cut;
        }
    }
    if start < text.len() {
        pieces.push(&text[start..]);
    }
    pieces
}

/// An Anthropic event: `event: NAME` and the data with `type: NAME`.
pub(crate) fn write_named(
    stream: &mut Conn,
    name: &str,
    mut data: serde_json::Value,
) -> io::Result<()> {
    data["type"] = json!(name);
    stream.write_all(format!("event: {name}\ndata: {data}\n\n").as_bytes())?;
    stream.flush()
}

pub(crate) fn write_event(stream: &mut Conn, data: &str) -> io::Result<()> {
    stream.write_all(format!("data: {data}\n\n").as_bytes())?;
    stream.flush()
}

pub(crate) fn chunk(delta: &str) -> String {
    format!(
        r#"{{"id":"x","object":"chat.completion.chunk","choices":[{{"index":0,"delta":{delta}}}]}}"#
    )
}

pub(crate) fn usage_chunk(prompt: u64, completion: u64) -> String {
    format!(
        r#"{{"id":"x","object":"chat.completion.chunk","choices":[],{}}}"#,
        usage_field(prompt, completion)
    )
}

pub(crate) fn usage_field(prompt: u64, completion: u64) -> String {
    format!(
        r#""usage":{{"prompt_tokens":{prompt},"completion_tokens":{completion},"total_tokens":{}}}"#,
        prompt + completion
    )
}

pub(crate) fn json_string(text: &str) -> String {
    // A `str` always serializes; the fallback only keeps this panic-free.
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".to_owned())
}

pub(crate) fn reason(code: u16) -> &'static str {
    match code {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        529 => "Overloaded",
        _ => "Status",
    }
}
