//! Server-sent events: an incremental parser of `text/event-stream` bodies.

/// One server-sent event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, when the event had one.
    pub event: Option<String>,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
}

/// An incremental parser of a `text/event-stream` body.
///
/// Feed it bytes as they arrive, in pieces of any size; it returns every
/// event completed so far. It follows the WHATWG rules: lines end in `\n`,
/// `\r\n` or `\r` (also when split between two pieces); a field's value
/// drops one space after the colon; `:` starts a comment; a blank line ends
/// an event; an event without `data` is not dispatched; `id` and `retry` are
/// ignored; a leading byte-order mark is dropped. Invalid UTF-8 becomes
/// U+FFFD. It never panics and keeps at most [`SseParser::MAX_LINE`] bytes of
/// one line and of one event's data (the excess is dropped).
#[derive(Clone, Debug, Default)]
pub struct SseParser {
    line: Vec<u8>,
    after_cr: bool,
    started: bool,
    event: Option<String>,
    data: String,
    has_data: bool,
}

impl SseParser {
    /// The longest line, and the most data of one event, kept in bytes.
    pub const MAX_LINE: usize = revolve_core::policy::SSE_MAX_LINE;

    /// A parser at the start of a stream.
    pub fn new() -> SseParser {
        SseParser::default()
    }

    /// Takes the next bytes of the stream; returns the events they complete.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let mut events = Vec::new();
        for &b in bytes {
            if self.after_cr {
                self.after_cr = false;
                if b == b'\n' {
                    continue;
                }
            }
            match b {
                b'\n' | b'\r' => {
                    self.after_cr = b == b'\r';
                    let line = std::mem::take(&mut self.line);
                    if let Some(event) = self.line_end(&line) {
                        events.push(event);
                    }
                }
                _ if self.line.len() < Self::MAX_LINE => self.line.push(b),
                _ => {}
            }
        }
        events
    }

    /// Ends the stream: returns the last event if its lines were complete but
    /// the blank line after them never came. A line cut off without its end
    /// is dropped.
    pub fn finish(&mut self) -> Option<SseEvent> {
        self.line.clear();
        self.after_cr = false;
        self.dispatch()
    }

    /// Handles one complete line; returns an event at a blank line.
    fn line_end(&mut self, raw: &[u8]) -> Option<SseEvent> {
        let mut line = String::from_utf8_lossy(raw);
        if !self.started {
            self.started = true;
            if let Some(rest) = line.strip_prefix('\u{feff}') {
                line = rest.to_owned().into();
            }
        }
        if line.is_empty() {
            return self.dispatch();
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_ref(), ""),
        };
        match field {
            "data" => {
                if self.data.len() + value.len() < Self::MAX_LINE {
                    if self.has_data {
                        self.data.push('\n');
                    }
                    self.data.push_str(value);
                }
                self.has_data = true;
            }
            "event" => self.event = Some(value.to_owned()),
            _ => {}
        }
        None
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = self.event.take();
        if !std::mem::take(&mut self.has_data) {
            return None;
        }
        Some(SseEvent {
            event,
            data: std::mem::take(&mut self.data),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(input: &[u8], piece: usize) -> Vec<SseEvent> {
        let mut parser = SseParser::new();
        let mut events: Vec<SseEvent> = input
            .chunks(piece.max(1))
            .flat_map(|c| parser.feed(c))
            .collect();
        events.extend(parser.finish());
        events
    }

    fn data(events: &[SseEvent]) -> Vec<&str> {
        events.iter().map(|e| e.data.as_str()).collect()
    }

    #[test]
    fn sse_fields_comments_and_line_ends() {
        let input = "\u{feff}data: a\n\n: comment\ndata:b\ndata:  c\r\n\r\nevent: error\rdata\r\rid: 7\nretry: 10\nevent: x\n\ndata: [DONE]\n";
        for piece in [1, 2, 3, 7, 1000] {
            let events = parse_all(input.as_bytes(), piece);
            assert_eq!(data(&events), ["a", "b\n c", "", "[DONE]"], "piece {piece}");
            assert_eq!(events[0].event, None);
            assert_eq!(events[2].event.as_deref(), Some("error"));
            assert_eq!(
                events[3].event, None,
                "an event without data resets the type"
            );
        }
    }

    #[test]
    fn sse_drops_a_cut_line_but_keeps_complete_lines() {
        assert_eq!(data(&parse_all(b"data: x\n\ndata: {\"par", 4)), ["x"]);
        assert_eq!(data(&parse_all(b"data: y\n", 4)), ["y"]);
        let mut parser = SseParser::new();
        assert_eq!(parser.feed(b"data: a\r"), []);
        assert_eq!(
            data(&parser.feed(b"\n\r\n")),
            ["a"],
            "CRLF split between pieces"
        );
    }

    #[test]
    fn sse_survives_garbage() {
        let mut inputs: Vec<Vec<u8>> = vec![
            vec![0xff, 0xfe, b'\n', b'\n', 0x80, b':', b'\r'],
            b"data\xff: \xc3\n\n".to_vec(),
            b"\r\r\r\n\n\n::::\n:\n".to_vec(),
            (0..=255u8).cycle().take(5000).collect(),
        ];
        let mut seed = 0x2545_f491_u32;
        for _ in 0..50 {
            let mut bytes = Vec::new();
            for _ in 0..300 {
                seed ^= seed << 13;
                seed ^= seed >> 17;
                seed ^= seed << 5;
                bytes.push(b"data: \r\n:{}x\xff"[(seed % 13) as usize]);
            }
            inputs.push(bytes);
        }
        for input in &inputs {
            for piece in [1, 5, 64] {
                let events = parse_all(input, piece);
                assert_eq!(
                    events,
                    parse_all(input, input.len()),
                    "pieces must not matter"
                );
            }
        }
        let events = parse_all(b"data\xff: \xc3\n\n", 1);
        assert!(events.is_empty(), "the field name with U+FFFD is not data");
        assert_eq!(data(&parse_all(b"data: \xc3\n\n", 1)), ["\u{fffd}"]);
    }
}
