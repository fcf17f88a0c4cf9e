//! What the model is shown of a file, and the way back from what it writes
//! to the file's bytes.
//!
//! The model sees a file as `read_file` shows it (its *view*): the bytes
//! decoded as UTF-8, a sequence that is not UTF-8 as one U+FFFD, and every
//! API key of this process as `[key]`. Those places are *marks*: the view
//! stands there for bytes the model never sees. So the model can neither
//! learn a key nor write an undecodable byte, and what it writes back is
//! text about the view. The decision, for both tools:
//!
//! * Bytes the model did not ask to change are kept as they are: outside
//!   the text `edit_file` replaces, and on the lines `write_file` leaves as
//!   they were, every byte of the file is kept (undecodable bytes and keys
//!   included).
//! * Where the model changes text that held marks (the `old_string` of an
//!   `edit_file` match, or a block of lines `write_file` replaces), the
//!   `[key]`s of what it writes instead stand, in order, for the keys of
//!   the text replaced, and its U+FFFDs for the undecodable bytes there. A
//!   `[key]` or U+FFFD beyond those is written as that text: a key is only
//!   ever put back where the file held it, never copied to a new place or
//!   into another file.
//! * An `old_string` that holds part of a `[key]` that stands for a key is
//!   refused: the model cannot change a key it cannot see.
//! * The model's text is matched against the view, never against the
//!   bytes: how often `old_string` matches tells nothing about a key.
//!
//! Every diff of an edit is of the bytes (a changed byte is a changed
//! line, even where the view looks the same) and shows each line as the
//! view shows it ([`Keys::redact`]). The content store keeps the real
//! bytes: a rewind restores them exactly.

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;

use crate::policy::REDACTED_KEY_MIN;

/// What the model sees where the file holds an API key.
pub const KEY_SHOWN: &str = "[key]";

/// What the model sees for a sequence of bytes that is not UTF-8.
const UNDECODED: char = char::REPLACEMENT_CHARACTER;

/// The API keys of this process (the values of core's
/// [`crate::config::API_KEY_VARS`], as the shell read them): kept out of
/// everything the model, the log and the terminal get. A value shorter
/// than [`REDACTED_KEY_MIN`] is no key (it would blot out ordinary
/// text). `Debug` shows how many there are, never what they are.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Keys(Vec<String>);

impl fmt::Debug for Keys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Keys({} hidden)", self.0.len())
    }
}

impl Keys {
    /// The keys among `values`; the longest first, so a key that holds
    /// another is hidden whole. A key with a line break in it is hidden
    /// line by line too (a diff shows a file line by line).
    pub fn new(values: impl IntoIterator<Item = String>) -> Keys {
        let mut keys: Vec<String> = Vec::new();
        for value in values {
            if value.contains(['\n', '\r']) {
                keys.extend(value.split(['\n', '\r']).map(str::to_owned));
            }
            keys.push(value);
        }
        keys.retain(|k| k.len() >= REDACTED_KEY_MIN);
        keys.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        keys.dedup();
        Keys(keys)
    }

    /// Whether there is no key to hide.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The keys, longest first: for the shell's content store, which
    /// stores a content holding one without it (see `Blobs` in
    /// revolve-tools).
    pub fn values(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(String::as_str)
    }

    /// Where the keys are in `text`, in order, none overlapping.
    fn spans(&self, text: &str) -> Vec<Range<usize>> {
        let mut out = Vec::new();
        if self.0.is_empty() {
            return out;
        }
        // The next place of each key at or after `at` (None: no more).
        let mut next: Vec<Option<usize>> = self.0.iter().map(|k| text.find(k.as_str())).collect();
        let mut at = 0;
        loop {
            let mut best: Option<(usize, usize)> = None;
            for (i, key) in self.0.iter().enumerate() {
                if next[i].is_some_and(|p| p < at) {
                    next[i] = text[at..].find(key.as_str()).map(|p| p + at);
                }
                if let Some(p) = next[i] {
                    // Keys are longest first: on a tie the longer wins.
                    if best.is_none_or(|(b, _)| p < b) {
                        best = Some((p, key.len()));
                    }
                }
            }
            let Some((start, len)) = best else {
                return out;
            };
            out.push(start..start + len);
            at = start + len;
        }
    }

    /// `text` with every key replaced by `[key]`.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let spans = self.spans(text);
        if spans.is_empty() {
            return Cow::Borrowed(text);
        }
        let mut out = String::with_capacity(text.len());
        let mut last = 0;
        for span in spans {
            out.push_str(&text[last..span.start]);
            out.push_str(KEY_SHOWN);
            last = span.end;
        }
        out.push_str(&text[last..]);
        Cow::Owned(out)
    }

    /// `bytes` as the model is shown them: decoded (U+FFFD for what is
    /// not UTF-8, as `String::from_utf8_lossy`), keys as `[key]`.
    pub fn show<'a>(&self, bytes: &'a [u8]) -> Cow<'a, str> {
        match String::from_utf8_lossy(bytes) {
            Cow::Borrowed(text) => self.redact(text),
            Cow::Owned(text) => Cow::Owned(self.redact(&text).into_owned()),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// `[key]` for an API key.
    Key,
    /// U+FFFD for bytes that are not UTF-8.
    Undecoded,
}

/// A place in the view that stands for other bytes of the file.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Mark {
    kind: Kind,
    /// Where it is in the view's text.
    at: Range<usize>,
    /// The bytes of the file it stands for.
    bytes: Range<usize>,
}

/// A file's bytes as the model is shown them, and where the view stands
/// for other bytes.
#[derive(Clone, Debug)]
pub struct View<'a> {
    original: &'a [u8],
    /// Borrowed when it is the bytes themselves (UTF-8, no key): a big
    /// file is not copied.
    text: Cow<'a, str>,
    marks: Vec<Mark>,
}

impl<'a> View<'a> {
    /// The view of `bytes`: what `read_file` shows of them.
    pub fn of(bytes: &'a [u8], keys: &Keys) -> View<'a> {
        if let Ok(text) = std::str::from_utf8(bytes) {
            if keys.spans(text).is_empty() {
                return View {
                    original: bytes,
                    text: Cow::Borrowed(text),
                    marks: Vec::new(),
                };
            }
        }
        let mut text = String::with_capacity(bytes.len());
        let mut marks = Vec::new();
        let mut at = 0;
        for chunk in bytes.utf8_chunks() {
            let valid = chunk.valid();
            let mut last = 0;
            for span in keys.spans(valid) {
                text.push_str(&valid[last..span.start]);
                marks.push(Mark {
                    kind: Kind::Key,
                    at: text.len()..text.len() + KEY_SHOWN.len(),
                    bytes: at + span.start..at + span.end,
                });
                text.push_str(KEY_SHOWN);
                last = span.end;
            }
            text.push_str(&valid[last..]);
            at += valid.len();
            let invalid = chunk.invalid();
            if !invalid.is_empty() {
                marks.push(Mark {
                    kind: Kind::Undecoded,
                    at: text.len()..text.len() + UNDECODED.len_utf8(),
                    bytes: at..at + invalid.len(),
                });
                text.push(UNDECODED);
                at += invalid.len();
            }
        }
        View {
            original: bytes,
            text: Cow::Owned(text),
            marks,
        }
    }

    /// What the model is shown.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Where in the file the view's offset `p` is (`p` inside no mark).
    fn byte_at(&self, p: usize) -> usize {
        let before = self.marks.partition_point(|m| m.at.end <= p);
        match before {
            0 => p,
            n => {
                let m = &self.marks[n - 1];
                m.bytes.end + (p - m.at.end)
            }
        }
    }

    /// The file's bytes for the view's `range` (which cuts no mark).
    fn copy(&self, range: Range<usize>, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.original[self.byte_at(range.start)..self.byte_at(range.end)]);
    }

    /// The marks wholly inside the view's `range`.
    fn marks_in(&self, range: Range<usize>) -> &[Mark] {
        let from = self.marks.partition_point(|m| m.at.start < range.start);
        let to = self.marks.partition_point(|m| m.at.end <= range.end);
        &self.marks[from..to.max(from)]
    }

    /// `new`, the model's text for the view's text holding `marks`, as
    /// bytes: its `[key]`s and U+FFFDs stand, in order, for the marks of
    /// the same kind; the rest is written as it is.
    fn fill(&self, new: &str, marks: &[Mark], out: &mut Vec<u8>) {
        if marks.is_empty() {
            out.extend_from_slice(new.as_bytes());
            return;
        }
        let mut keys = marks.iter().filter(|m| m.kind == Kind::Key);
        let mut undecoded = marks.iter().filter(|m| m.kind == Kind::Undecoded);
        let mut last = 0;
        let mut at = 0;
        while at < new.len() {
            let rest = &new[at..];
            let (kind, len) = if rest.starts_with(KEY_SHOWN) {
                (Kind::Key, KEY_SHOWN.len())
            } else if rest.starts_with(UNDECODED) {
                (Kind::Undecoded, UNDECODED.len_utf8())
            } else {
                at += rest.chars().next().map_or(1, char::len_utf8);
                continue;
            };
            let mark = match kind {
                Kind::Key => keys.next(),
                Kind::Undecoded => undecoded.next(),
            };
            if let Some(m) = mark {
                out.extend_from_slice(&new.as_bytes()[last..at]);
                out.extend_from_slice(&self.original[m.bytes.clone()]);
                last = at + len;
            }
            at += len;
        }
        out.extend_from_slice(&new.as_bytes()[last..]);
    }

    /// `edit_file`: the file's bytes with the model's `old` replaced by
    /// `new` where it matches the view (once, or every match with `all`;
    /// see [`super::replace`] for line endings and the errors); every
    /// other byte kept.
    pub fn replace(&self, old: &str, new: &str, all: bool, shown: &str) -> Result<Vec<u8>, String> {
        let (starts, old, new) = super::matches(&self.text, old, new, all, shown)?;
        let mut out = Vec::with_capacity(self.original.len());
        let mut last = 0;
        for start in starts {
            let end = start + old.len();
            let cut = self.marks[self.marks.partition_point(|m| m.at.end <= start)..]
                .iter()
                .take_while(|m| m.at.start < end)
                .any(|m| m.at.start < start || m.at.end > end);
            if cut {
                return Err(format!(
                    "error: edit_file: old_string holds part of a {KEY_SHOWN} in {shown}, which \
                     stands for an API key; include the whole {KEY_SHOWN} or none of it"
                ));
            }
            self.copy(last..start, &mut out);
            self.fill(&new, self.marks_in(start..end), &mut out);
            last = end;
        }
        self.copy(last..self.text.len(), &mut out);
        Ok(out)
    }

    /// `write_file`: the bytes for `new`, the model's whole text for the
    /// file whose view this is. Lines the model kept as the view shows
    /// them keep their bytes; in each block of lines it changed, its
    /// `[key]`s and U+FFFDs stand for the marks of the lines it replaced.
    pub fn rewrite(&self, new: &str) -> Vec<u8> {
        if self.marks.is_empty() {
            return new.as_bytes().to_vec();
        }
        let olds = super::line_ranges(self.text.as_bytes());
        let news = super::line_ranges(new.as_bytes());
        let old_lines: Vec<&[u8]> = olds
            .iter()
            .map(|r| &self.text.as_bytes()[r.clone()])
            .collect();
        let new_lines: Vec<&[u8]> = news.iter().map(|r| &new.as_bytes()[r.clone()]).collect();
        let ops = super::line_ops(&old_lines, &new_lines, super::DIFF_LINES);
        // The view's offset where old line `i` starts, and the same of new.
        let old_at = |i: usize| olds.get(i).map_or(self.text.len(), |r| r.start);
        let new_at = |i: usize| news.get(i).map_or(new.len(), |r| r.start);
        let mut out = Vec::with_capacity(self.original.len());
        // A block of changed lines not written yet: its old and new lines.
        let mut block: Option<(Range<usize>, Range<usize>)> = None;
        let flush = |block: &mut Option<(Range<usize>, Range<usize>)>, out: &mut Vec<u8>| {
            if let Some((o, n)) = block.take() {
                let marks = self.marks_in(old_at(o.start)..old_at(o.end));
                self.fill(&new[new_at(n.start)..new_at(n.end)], marks, out);
            }
        };
        for op in ops {
            let (tag, o, n) = op.as_tag_tuple();
            if tag == similar::DiffTag::Equal {
                flush(&mut block, &mut out);
                self.copy(old_at(o.start)..old_at(o.end), &mut out);
            } else {
                block = Some(match block {
                    Some((bo, bn)) => (bo.start..o.end, bn.start..n.end),
                    None => (o, n),
                });
            }
        }
        flush(&mut block, &mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys() -> Keys {
        Keys::new(["sk-secret-1234".to_owned(), "short".to_owned()])
    }

    #[test]
    fn keys_are_hidden_and_short_values_are_no_keys() {
        let k = keys();
        assert_eq!(format!("{k:?}"), "Keys(1 hidden)");
        assert_eq!(k.redact("a=sk-secret-1234 short"), "a=[key] short");
        assert_eq!(
            k.show(b"k=sk-secret-1234\xe9\n"),
            "k=[key]\u{fffd}\n",
            "decoded as read_file decodes"
        );
        // A key holding another is hidden whole.
        let nested = Keys::new(["abcdefgh".to_owned(), "abcdefghijkl".to_owned()]);
        assert_eq!(nested.redact("x abcdefghijkl abcdefgh"), "x [key] [key]");
        // A key over two lines, as a diff shows it.
        let split = Keys::new(["first-half\nsecond-half".to_owned()]);
        assert_eq!(split.redact("k=first-half\nsecond-half\n"), "k=[key]\n");
        assert_eq!(
            split.redact("+k=first-half\n+second-half\n"),
            "+k=[key]\n+[key]\n"
        );
    }

    #[test]
    fn the_view_is_what_read_file_shows() {
        let bytes = b"caf\xe9 sk-secret-1234\n\xff\xfeend";
        let v = View::of(bytes, &keys());
        assert_eq!(v.text(), keys().show(bytes));
        assert_eq!(v.marks.len(), 4, "\\xff and \\xfe are one U+FFFD each");
        // Nothing changed: the same bytes.
        assert_eq!(v.rewrite(v.text()), bytes);
        assert_eq!(v.replace("end", "end", false, "f").unwrap(), bytes);
    }

    #[test]
    fn an_edit_keeps_every_byte_it_was_not_asked_to_change() {
        let bytes = b"caf\xe9 au lait\nna\xefve\n";
        let v = View::of(bytes, &Keys::default());
        assert_eq!(
            v.replace("au lait", "noir", false, "f").unwrap(),
            b"caf\xe9 noir\nna\xefve\n"
        );
        // The model's U+FFFD in the text it replaces stands for the byte.
        assert_eq!(
            v.replace("caf\u{fffd} au", "th\u{fffd} \u{fffd}", false, "f")
                .unwrap(),
            b"th\xe9 \xef\xbf\xbd lait\nna\xefve\n",
            "the second U+FFFD stands for nothing the text held: written as it is"
        );
        // A replace_all over lines holding such bytes.
        let v = View::of(b"\xe9 a\n\xe9 a\n", &Keys::default());
        assert_eq!(v.replace("a", "b", true, "f").unwrap(), b"\xe9 b\n\xe9 b\n");
    }

    #[test]
    fn a_key_survives_the_redacted_text_written_back() {
        let bytes = b"url=x\nkey=sk-secret-1234\n";
        let v = View::of(bytes, &keys());
        assert_eq!(v.text(), "url=x\nkey=[key]\n");
        // write_file of the view with another line changed.
        assert_eq!(
            v.rewrite("url=y\nkey=[key]\n"),
            b"url=y\nkey=sk-secret-1234\n"
        );
        // The key's own line changed: its [key] is the key still.
        assert_eq!(
            v.rewrite("url=x\nkey=[key] # prod\n"),
            b"url=x\nkey=sk-secret-1234 # prod\n"
        );
        // A [key] somewhere new is text, never a copy of the key.
        assert_eq!(
            v.rewrite("url=[key]\nkey=[key]\n"),
            b"url=[key]\nkey=sk-secret-1234\n"
        );
        // edit_file whose old and new hold [key].
        assert_eq!(
            v.replace("key=[key]\n", "api_key=[key]\n", false, "f")
                .unwrap(),
            b"url=x\napi_key=sk-secret-1234\n"
        );
        // A [key] the model adds beyond the ones it replaced is text.
        assert_eq!(
            v.replace("key=[key]", "a=[key]\nb=[key]", false, "f")
                .unwrap(),
            b"url=x\na=sk-secret-1234\nb=[key]\n"
        );
        // Removing the key is the model's to ask.
        assert_eq!(v.rewrite("url=x\n"), b"url=x\n");
        // Part of a [key] is refused; matching never looks at the key.
        let e = v.replace("[ke", "x", false, "f").unwrap_err();
        assert!(e.contains("part of a [key]"), "{e}");
        let e = v.replace("sk-secret", "x", false, "f").unwrap_err();
        assert!(e.contains("not in f"), "{e}");
    }

    #[test]
    fn a_literal_key_text_in_a_file_stays_text() {
        let bytes = b"doc: [key] is shown\n";
        let v = View::of(bytes, &keys());
        assert!(v.marks.is_empty());
        assert_eq!(
            v.rewrite("doc: [key] is hidden\n"),
            b"doc: [key] is hidden\n"
        );
    }
}
