//! Text helpers every other module may use: times, token counts, text
//! made safe for a terminal or flattened onto one line. A leaf: it imports
//! nothing from the crate, so no module reaches itself back through it.

use std::borrow::Cow;

use time::OffsetDateTime;

/// A time as the user reads it: `2026-12-02 10:26 UTC`. (Written out by
/// hand: a listing formats tens of thousands of them.)
pub fn when(t: OffsetDateTime) -> String {
    let mut out = String::with_capacity(20);
    push_when(&mut out, t);
    out
}

/// [`when`], written at the end of `out` (a listing writes a hundred
/// thousand of them: no allocation, no formatting machinery).
pub fn push_when(out: &mut String, t: OffsetDateTime) {
    let t = t.to_offset(time::UtcOffset::UTC);
    let year = t.year();
    if (0..10_000).contains(&year) {
        push_digits(out, year as u32, 4);
    } else {
        out.push_str(&format!("{year:04}"));
    }
    out.push('-');
    push_digits(out, u32::from(u8::from(t.month())), 2);
    out.push('-');
    push_digits(out, u32::from(t.day()), 2);
    out.push(' ');
    push_digits(out, u32::from(t.hour()), 2);
    out.push(':');
    push_digits(out, u32::from(t.minute()), 2);
    out.push_str(" UTC");
}

/// `n`'s last `width` decimal digits, zero-padded.
fn push_digits(out: &mut String, n: u32, width: u32) {
    for i in (0..width).rev() {
        let digit = n / 10u32.pow(i) % 10;
        out.push(char::from(b'0' + digit as u8));
    }
}

/// A token count in a few characters: `812`, `12.3k`, `128k`, `1.3M`
/// (one decimal below a hundred of the unit, none above).
pub fn tokens(n: u64) -> String {
    let (unit, suffix) = match n {
        0..=999 => return n.to_string(),
        1_000..=999_499 => (1_000u64, "k"),
        _ => (1_000_000, "M"),
    };
    // u128: no overflow for any u64 count.
    let (n, unit) = (u128::from(n), u128::from(unit));
    let tenths = (n * 10 + unit / 2) / unit;
    if tenths % 10 == 0 || tenths >= 1000 {
        format!("{}{suffix}", (n + unit / 2) / unit)
    } else {
        format!("{}.{}{suffix}", tenths / 10, tenths % 10)
    }
}

/// Text from a model or a tool made safe for a terminal: escape sequences
/// and other control characters (all but newline and tab) become visible
/// `^X` / `\u{..}` notation instead of acting on the screen.
pub fn inert(text: &str) -> Cow<'_, str> {
    let unsafe_char = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            c if !unsafe_char(c) => out.push(c),
            c if (c as u32) < 0x20 => {
                out.push('^');
                out.push(char::from(b'@' + c as u8));
            }
            c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        }
    }
    Cow::Owned(out)
}

/// Text on one line, at most `max` characters, with `…` where it was cut.
pub fn one_line(text: &str, max: usize) -> String {
    let flat = flat(text);
    match flat.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &flat[..i]),
        None => flat,
    }
}

/// `text` cut before every whitespace run that follows a non-space, so each
/// piece is a word with the whitespace before it; the pieces concatenated
/// are `text`.
pub fn word_pieces(text: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut after_space = true;
    for (i, c) in text.char_indices() {
        let space = c.is_whitespace();
        if space && !after_space && i > start {
            pieces.push(&text[start..i]);
            start = i;
        }
        after_space = space;
    }
    if start < text.len() {
        pieces.push(&text[start..]);
    }
    pieces
}

/// Text on one line: every control character (newlines, tabs) is a space.
pub fn flat(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// Whitespace runs collapsed to one space, trimmed.
pub fn squeezed(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
