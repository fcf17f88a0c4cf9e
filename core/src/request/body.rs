//! A request's body: the JSON around the messages, and the messages
//! turned into their wire's elements as the body is written or read, so
//! the whole body is never in memory; its length counted once.

use super::*;

/// A request's body, written when it is sent: the JSON before the
/// messages' first element and after their last (small; keys sorted, as
/// everywhere), and the messages, each turned into its element as it is
/// written, straight into the connection. The whole body is never in
/// memory: the history is the state's own. Its length is counted once,
/// when it is made, by writing it to a counter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Body {
    pub(super) head: String,
    pub(super) tail: String,
    pub(super) elements: Elements,
    len: usize,
    /// The bytes of its pictures' base64 and how many there are.
    pictures: (usize, usize),
}

/// The `messages` array's elements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Elements {
    /// Chat Completions: the system prompt, then one element per message;
    /// `limited` bodies (version 2 on) give a calling answer empty text.
    OpenAi {
        system: Option<String>,
        history: Shared,
        limited: bool,
        objects: bool,
    },
    /// Messages: runs of consecutive messages of one role, each one
    /// element; the runs numbered in `marked` get a cache breakpoint on
    /// their last block; with `thinking`, assistant messages begin with
    /// their thinking blocks.
    Anthropic {
        history: Shared,
        marked: [Option<usize>; 2],
        thinking: bool,
    },
    /// Gemini: runs of consecutive messages of one role, each one
    /// `contents` element (see [`gemini`]); with `vouch`, a step's first
    /// call without a signature gets Gemini 3's stand-in.
    Gemini { history: Shared, vouch: bool },
    /// Responses: each message's `input` items (see
    /// [`responses::items`]).
    Responses { history: Shared },
    /// None: a body given whole ([`Body::from`] a text).
    Whole,
}

/// Counts what is written, keeping nothing.
struct Count(usize);

impl io::Write for Count {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Where the messages go in the JSON around them.
const PLACE: &str = r#""messages":[]"#;

/// Where a Gemini body's `contents` go.
const GEMINI_PLACE: &str = r#""contents":[]"#;
/// Where the Responses wire's items go.
const INPUT_PLACE: &str = r#""input":[]"#;

impl Body {
    pub(super) fn of(
        wire: Wire,
        model: &str,
        system: Option<&str>,
        history: Shared,
        shape: &Shape,
    ) -> Body {
        let (mut outer, elements) = match wire {
            Wire::OpenAi => (
                openai_outer(model, shape),
                Elements::OpenAi {
                    system: system.map(str::to_owned),
                    history,
                    limited: shape.limit.is_some(),
                    objects: shape.objects,
                },
            ),
            Wire::Anthropic => {
                let n = Runs::new(history.get(), [None, None], false).count();
                let marked = if shape.cache.breakpoints {
                    [n.checked_sub(1), n.checked_sub(3)]
                } else {
                    [None, None]
                };
                let outer = anthropic_outer(model, system, shape);
                let thinking = shape.thinking.is_some();
                (
                    outer,
                    Elements::Anthropic {
                        history,
                        marked,
                        thinking,
                    },
                )
            }
            Wire::Gemini => {
                let outer = gemini::outer(model, system, shape);
                let vouch = gemini::validates(model);
                return Body::around(&outer, Elements::Gemini { history, vouch });
            }
            Wire::Responses => (
                responses::outer(model, system, shape),
                Elements::Responses { history },
            ),
        };
        // The Responses wire says its limit as `max_output_tokens`.
        if let (Some(limit), false) = (shape.limit, wire == Wire::Responses) {
            outer[limit.field] = json!(limit.tokens);
        }
        if let (Wire::Anthropic, Some(think)) = (wire, shape.thinking) {
            let answer = shape
                .limit
                .map_or(u64::from(ANTHROPIC_MAX_TOKENS), |l| l.tokens);
            outer["max_tokens"] = json!(answer.saturating_add(think.budget()));
        }
        Body::around(&outer, elements)
    }

    /// The body of `elements` in `outer` (which holds an empty `messages`).
    pub(super) fn around(outer: &Value, elements: Elements) -> Body {
        let outer = outer.to_string();
        // Sorted keys put `messages` after only the answer's limit, a
        // number, `contents` first, and `input` after only `include`,
        // fixed words: the first place is the body's own.
        let place = match elements {
            Elements::Gemini { .. } => GEMINI_PLACE,
            Elements::Responses { .. } => INPUT_PLACE,
            _ => PLACE,
        };
        let at = outer
            .find(place)
            .map_or(outer.len(), |i| i + place.len() - 1);
        let pictures = match &elements {
            Elements::OpenAi { history, .. }
            | Elements::Anthropic { history, .. }
            | Elements::Gemini { history, .. }
            | Elements::Responses { history } => history
                .get()
                .iter()
                .flat_map(|m| &m.images)
                .fold((0, 0), |(bytes, n), i| (bytes + i.data.len(), n + 1)),
            Elements::Whole => (0, 0),
        };
        let mut body = Body {
            head: outer[..at].to_owned(),
            tail: outer[at..].to_owned(),
            elements,
            len: 0,
            pictures,
        };
        let mut count = Count(0);
        // Writing to a counter cannot fail.
        let _ = body.write_to(&mut count);
        body.len = count.0;
        body
    }

    /// The same body sent again to another model (`replay --against
    /// --model`): its `model` replaced.
    pub fn with_model(&self, model: &str) -> Body {
        let outer = format!("{}{}", self.head, self.tail);
        match serde_json::from_str::<Value>(&outer) {
            Ok(mut value) if value.get("model").is_some() => {
                value["model"] = Value::from(model);
                Body::around(&value, self.elements.clone())
            }
            _ => self.clone(),
        }
    }

    /// A Gemini body as a `countTokens` body (`POST
    /// {base}/models/{model}:countTokens`): the same request as its
    /// `generateContentRequest`, naming `models/{model}`, so the system
    /// instruction and the tools are counted with the contents. `None` on
    /// the other wires.
    pub fn counting(&self, model: &str) -> Option<Body> {
        if !matches!(self.elements, Elements::Gemini { .. }) {
            return None;
        }
        let outer = format!("{}{}", self.head, self.tail);
        let mut request: Value = serde_json::from_str(&outer).ok()?;
        request["model"] = Value::from(format!("models/{model}"));
        let wrapped = json!({ "generateContentRequest": request });
        Some(Body::around(&wrapped, self.elements.clone()))
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Its size as the estimates of tokens weigh it: its length with each
    /// picture's base64 counted as [`crate::policy::IMAGE_WEIGHT_BYTES`]
    /// (a picture costs tokens by its tiles, not its text). The length
    /// itself when it has no picture.
    pub fn weight(&self) -> usize {
        let (bytes, n) = self.pictures;
        (self.len - bytes.min(self.len)) + n * crate::policy::IMAGE_WEIGHT_BYTES
    }

    /// Whether it has no byte (never, for a body made here).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Writes it to `w`, as [`Body::reader`] reads it.
    pub fn write_to(&self, w: &mut dyn io::Write) -> io::Result<()> {
        io::copy(&mut self.reader(), w).map(drop)
    }

    /// A reader of its bytes: the part before the messages, then each
    /// element as it is made, then the part after.
    pub fn reader(&self) -> BodyReader<'_> {
        BodyReader {
            body: self,
            elements: None,
            stage: Stage::Head,
            buf: Vec::new(),
            at: 0,
        }
    }

    /// The whole body in memory, for tests and the rare paths that must
    /// edit it (a stream that came back empty is asked again unstreamed).
    pub fn text(&self) -> String {
        let mut bytes = Vec::with_capacity(self.len);
        // Writing to memory cannot fail; serde_json writes UTF-8 only.
        let _ = self.write_to(&mut bytes);
        String::from_utf8(bytes).unwrap_or_default()
    }

    /// Writes it to `w` as bodies were written before [`elements`]: each
    /// element built as a [`Value`] first. The same bytes as
    /// [`Body::write_to`], slower; for `benches/body.rs`, which compares.
    #[doc(hidden)]
    pub fn write_valued_to(&self, w: &mut dyn io::Write) -> io::Result<()> {
        w.write_all(self.head.as_bytes())?;
        for (i, value) in self.elements().enumerate() {
            if i > 0 {
                w.write_all(b",")?;
            }
            serde_json::to_writer(&mut *w, &value).map_err(io::Error::other)?;
        }
        w.write_all(self.tail.as_bytes())
    }

    /// The elements' writer, from the first.
    fn cursor(&self) -> Cursor<'_> {
        match &self.elements {
            Elements::OpenAi {
                system,
                history,
                limited,
                objects,
            } => Cursor::OpenAi {
                system: system.as_deref(),
                history: history.get(),
                next: 0,
                limited: *limited,
                objects: *objects,
                images_due: None,
            },
            Elements::Anthropic {
                history,
                marked,
                thinking,
            } => Cursor::Anthropic(Runs::new(history.get(), *marked, *thinking)),
            Elements::Gemini { history, vouch } => {
                Cursor::Gemini(gemini::Contents::new(history.get(), *vouch))
            }
            Elements::Responses { history } => Cursor::Responses {
                history: history.get(),
                next: 0,
            },
            Elements::Whole => Cursor::Done,
        }
    }

    fn elements(&self) -> Box<dyn Iterator<Item = Value> + '_> {
        match &self.elements {
            Elements::OpenAi {
                system,
                history,
                limited,
                objects,
            } => {
                let system = system
                    .as_deref()
                    .map(|system| json!({"role": "system", "content": system}));
                let (limited, objects) = (*limited, *objects);
                let history = history.get();
                Box::new(
                    system
                        .into_iter()
                        .chain(history.iter().enumerate().flat_map(move |(i, m)| {
                            let images = tool_images(history, i).map(openai_tool_images);
                            std::iter::once(openai_message(m, limited, objects)).chain(images)
                        })),
                )
            }
            Elements::Anthropic {
                history,
                marked,
                thinking,
            } => Box::new(Runs::new(history.get(), *marked, *thinking)),
            Elements::Gemini { history, vouch } => {
                Box::new(gemini::Contents::new(history.get(), *vouch))
            }
            Elements::Responses { history } => {
                let history = history.get();
                Box::new((0..history.len()).flat_map(move |i| responses::items(history, i)))
            }
            Elements::Whole => Box::new(std::iter::empty()),
        }
    }
}

/// A body given whole: a fixture, or a body edited as text.
impl From<String> for Body {
    fn from(text: String) -> Body {
        Body {
            len: text.len(),
            head: text,
            tail: String::new(),
            elements: Elements::Whole,
            pictures: (0, 0),
        }
    }
}

impl From<&str> for Body {
    fn from(text: &str) -> Body {
        Body::from(text.to_owned())
    }
}

impl PartialEq<String> for Body {
    fn eq(&self, other: &String) -> bool {
        self.len == other.len() && self.text() == *other
    }
}

impl PartialEq<Body> for String {
    fn eq(&self, other: &Body) -> bool {
        other == self
    }
}

impl fmt::Display for Body {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text())
    }
}

impl Serialize for Body {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text())
    }
}

/// Where a [`BodyReader`] is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stage {
    Head,
    Elements { first: bool },
    Tail,
    Done,
}

/// Writes a body's elements one at a time (see [`elements`]).
enum Cursor<'a> {
    OpenAi {
        system: Option<&'a str>,
        history: &'a [Message],
        /// The next message (the system prompt goes before the first).
        next: usize,
        limited: bool,
        objects: bool,
        /// A run of tool results just written whose images go next, in a
        /// user message of their own (see [`tool_images`]).
        images_due: Option<&'a [Message]>,
    },
    Anthropic(Runs<'a>),
    /// Written as values: Gemini bodies are rarer than the others.
    Gemini(gemini::Contents<'a>),
    Responses {
        history: &'a [Message],
        /// The next message whose items are written.
        next: usize,
    },
    Done,
}

impl Cursor<'_> {
    /// The next element written into `out`; false after the last.
    fn write_next(&mut self, out: &mut Vec<u8>) -> bool {
        match self {
            Cursor::OpenAi {
                system,
                history,
                next,
                limited,
                objects,
                images_due,
            } => {
                if let Some(system) = system.take() {
                    elements::openai_system(out, system);
                    return true;
                }
                if let Some(results) = images_due.take() {
                    elements::openai_tool_images(out, results);
                    return true;
                }
                let Some(m) = history.get(*next) else {
                    return false;
                };
                *images_due = tool_images(history, *next);
                *next += 1;
                elements::openai_message(out, m, *limited, *objects);
                true
            }
            Cursor::Anthropic(runs) => runs.write_next(out),
            Cursor::Gemini(contents) => contents.next().is_some_and(|element| {
                // Writing to memory cannot fail.
                let _ = serde_json::to_writer(&mut *out, &element);
                true
            }),
            Cursor::Responses { history, next } => {
                while *next < history.len() {
                    *next += 1;
                    if responses::write_items(out, history, *next - 1) {
                        return true;
                    }
                }
                false
            }
            Cursor::Done => false,
        }
    }
}

/// Reads a [`Body`], making each element when the one before is read.
pub struct BodyReader<'a> {
    body: &'a Body,
    elements: Option<Cursor<'a>>,
    stage: Stage,
    buf: Vec<u8>,
    at: usize,
}

impl BodyReader<'_> {
    /// The next piece into `buf`; false at the end.
    fn refill(&mut self) -> io::Result<bool> {
        self.buf.clear();
        self.at = 0;
        match self.stage {
            Stage::Head => {
                self.buf.extend_from_slice(self.body.head.as_bytes());
                self.stage = Stage::Elements { first: true };
            }
            Stage::Elements { first } => {
                let body = self.body;
                let cursor = self.elements.get_or_insert_with(|| body.cursor());
                if !first {
                    self.buf.push(b',');
                }
                if cursor.write_next(&mut self.buf) {
                    self.stage = Stage::Elements { first: false };
                } else {
                    self.buf.clear();
                    self.buf.extend_from_slice(self.body.tail.as_bytes());
                    self.stage = Stage::Tail;
                }
            }
            Stage::Tail => {
                self.stage = Stage::Done;
                return Ok(false);
            }
            Stage::Done => return Ok(false),
        }
        Ok(true)
    }
}

impl io::Read for BodyReader<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.at == self.buf.len() {
            if !self.refill()? {
                return Ok(0);
            }
        }
        let n = out.len().min(self.buf.len() - self.at);
        out[..n].copy_from_slice(&self.buf[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// The runs of the history the Messages API gets as one message each:
/// results are the user's, and consecutive messages of one role merge (the
/// API wants the roles to alternate); a message with no block is left out.
/// The runs numbered in `marked` get a breakpoint on their last block.
///
/// The four breakpoints the API allows go on the parts that do not change
/// from one request to the next: the last tool, the system prompt, the
/// last block of the run that ended the previous request (the one before
/// the latest answer, so this request reads what that one wrote, however
/// many blocks the answer and its results added), and the last block of
/// this request (so the next one reads it). Breakpoints on prefixes
/// shorter than the model's least cacheable length are ignored by the
/// server, not refused.
struct Runs<'a> {
    history: &'a [Message],
    next: usize,
    run: usize,
    marked: [Option<usize>; 2],
    thinking: bool,
}

impl<'a> Runs<'a> {
    fn new(history: &'a [Message], marked: [Option<usize>; 2], thinking: bool) -> Runs<'a> {
        Runs {
            history,
            next: 0,
            run: 0,
            marked,
            thinking,
        }
    }

    /// A message's role on the wire, `None` when it has no block.
    fn role(m: &Message) -> Option<&'static str> {
        match m.role {
            Role::User if m.origin.is_none() && m.content.is_empty() && m.images.is_empty() => None,
            Role::User | Role::Tool => Some("user"),
            Role::Assistant if m.content.is_empty() && m.tool_calls.is_empty() => None,
            Role::Assistant => Some("assistant"),
        }
    }

    /// The end of the run of `role` starting at `from`.
    fn end(&self, from: usize, role: &str) -> usize {
        let mut end = from;
        while let Some(m) = self.history.get(end) {
            match Runs::role(m) {
                Some(r) if r != role => break,
                _ => end += 1,
            }
        }
        end
    }
}

impl<'a> Runs<'a> {
    /// The next run: its role, its messages, and whether it is marked.
    fn span(&mut self) -> Option<(&'static str, &'a [Message], bool)> {
        let (start, role) = self.history[self.next..]
            .iter()
            .enumerate()
            .find_map(|(i, m)| Runs::role(m).map(|r| (self.next + i, r)))?;
        let end = self.end(start, role);
        self.next = end;
        let marked = self.marked.contains(&Some(self.run));
        self.run += 1;
        Some((role, &self.history[start..end], marked))
    }

    /// The next run written into `out`; false after the last.
    fn write_next(&mut self, out: &mut Vec<u8>) -> bool {
        let thinking = self.thinking;
        self.span()
            .map(|(role, messages, marked)| {
                elements::anthropic_run(out, role, messages, thinking, marked)
            })
            .is_some()
    }
}

/// The runs as values: the way bodies were written before
/// [`elements`] (kept to hold the two equal, and for the bench).
impl Iterator for Runs<'_> {
    type Item = Value;

    fn next(&mut self) -> Option<Value> {
        let (role, messages, marked) = self.span()?;
        let mut blocks: Vec<Value> = messages
            .iter()
            .flat_map(|m| anthropic_blocks(m, self.thinking))
            .collect();
        if marked {
            if let Some(last) = blocks.last_mut() {
                last["cache_control"] = breakpoint();
            }
        }
        Some(json!({"role": role, "content": blocks}))
    }
}
