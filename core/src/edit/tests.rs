//! The unit tests of file edits: replacing, line endings and the diff.

use super::*;
use quickcheck::quickcheck;

#[test]
fn replace_finds_one_match_and_explains_many_or_none() {
    assert_eq!(replace("a b a", "b", "c", false, "f").unwrap(), "a c a");
    let e = replace("x\ny\nx\n", "x", "z", false, "f").unwrap_err();
    assert!(e.contains("matches 2 times in f (lines 1, 3)"), "{e}");
    assert_eq!(
        replace("x\ny\nx\n", "x", "z", true, "f").unwrap(),
        "z\ny\nz\n"
    );
    let e = replace("abc", "d", "e", false, "f").unwrap_err();
    assert!(e.contains("not in f"), "{e}");
    assert!(replace("abc", "", "e", false, "f").is_err());
}

#[test]
fn crlf_files_keep_their_line_endings() {
    let text = "one\r\ntwo\r\nthree\r\n";
    assert_eq!(
        replace(text, "one\ntwo", "uno\ndos", false, "f").unwrap(),
        "uno\r\ndos\r\nthree\r\n"
    );
    assert_eq!(keep_endings(Some(text.as_bytes()), "a\nb\n"), "a\r\nb\r\n");
    assert_eq!(keep_endings(Some(b"a\nb\n"), "a\nb\n"), "a\nb\n");
    assert_eq!(keep_endings(None, "a\n"), "a\n");
}

#[test]
fn the_diff_names_the_file_and_counts_lines() {
    let d = diff("src/a.rs", Some("a\nb\n"), "a\nc\n");
    assert!(d.starts_with("--- a/src/a.rs\n+++ b/src/a.rs\n"), "{d}");
    assert_eq!(stat(&d), (1, 1));
    let d = diff("new.txt", None, "x\n");
    assert!(d.starts_with("--- /dev/null\n+++ b/new.txt\n"), "{d}");
    assert_eq!(stat(&d), (1, 0));
    // Lines that look like headers inside a hunk are lines.
    let d = diff("notes.md", Some("-- old\nkeep\n"), "++ new\nkeep\n");
    assert!(d.contains("\n--- old\n+++ new\n"), "{d}");
    assert_eq!(stat(&d), (1, 1));
}

/// The diff as similar writes it of the whole texts: what [`diff`]
/// gave before it set the shared lines aside.
fn whole(shown: &str, before: Option<&str>, after: &str) -> String {
    let old_name = if before.is_some() {
        format!("a/{shown}")
    } else {
        "/dev/null".to_owned()
    };
    similar::TextDiff::from_lines(before.unwrap_or(""), after)
        .unified_diff()
        .context_radius(3)
        .header(&old_name, &format!("b/{shown}"))
        .to_string()
}

/// Applies a unified diff (no lone `\r` in it) to `old`.
fn apply(old: &str, diff: &str) -> Option<String> {
    let old = lines_of(old);
    let mut rows: Vec<String> = Vec::new();
    for line in diff.split_inclusive('\n') {
        if line.starts_with('\\') {
            let last = rows.last_mut()?;
            last.pop();
        } else {
            rows.push(line.to_owned());
        }
    }
    let mut out = String::new();
    let mut at = 0;
    let mut rows = rows.iter().skip(2).peekable();
    while let Some(header) = rows.next() {
        let olds = header.strip_prefix("@@ -")?.split(' ').next()?;
        let (start, len) = match olds.split_once(',') {
            Some((s, l)) => (s.parse::<usize>().ok()?, l.parse::<usize>().ok()?),
            None => (olds.parse().ok()?, 1),
        };
        let start = if len == 0 { start } else { start - 1 };
        while at < start {
            out.push_str(old.get(at)?);
            at += 1;
        }
        while let Some(row) = rows.next_if(|r| !r.starts_with("@@")) {
            let (tag, text) = row.split_at(1);
            match tag {
                " " | "-" if old.get(at) != Some(&text) => return None,
                " " => {
                    out.push_str(text);
                    at += 1;
                }
                "-" => at += 1,
                "+" => out.push_str(text),
                _ => return None,
            }
        }
    }
    out.extend(old.get(at..)?.iter().copied());
    Some(out)
}

/// A text of lines from a few, LF or CRLF, the last maybe unended.
#[derive(Clone, Debug)]
struct Text(String);

impl quickcheck::Arbitrary for Text {
    fn arbitrary(g: &mut quickcheck::Gen) -> Text {
        let pieces = ["a\n", "b\n", "c\r\n", "d\n", "a", "é\n", "\n"];
        let n = usize::arbitrary(g) % 30;
        let mut text: String = (0..n)
            .map(|_| *g.choose(&pieces).unwrap())
            .filter(|p| p.ends_with('\n'))
            .collect();
        if bool::arbitrary(g) {
            text.push_str(g.choose(&pieces).unwrap());
        }
        Text(text)
    }

    fn shrink(&self) -> Box<dyn Iterator<Item = Text>> {
        let lines: Vec<String> = lines_of(&self.0).iter().map(|l| (*l).to_owned()).collect();
        Box::new(lines.shrink().map(|l| Text(l.concat())))
    }
}

quickcheck! {
    /// The diff, shared lines set aside or not, line by line or in one
    /// block, takes the old text to the new one.
    fn a_diff_applies(old: Text, new: Text, limit: u8) -> bool {
        let limit = usize::from(limit % 8) * 4;
        let d = diff_within("f", Some(&old.0), &new.0, limit);
        apply(&old.0, &d).as_deref() == Some(new.0.as_str())
    }

    /// Within the limit, of texts whose lines are all different, it is
    /// the diff of the whole texts: setting the shared lines aside
    /// changes nothing, whatever ends the lines (`\n`, `\r\n`, a lone
    /// `\r`, nothing at the end). (Where equal lines repeat, similar
    /// may slide a change along them differently in a part than in the
    /// whole; the diff is as good, and still applies.)
    fn a_diff_is_that_of_the_whole_texts(old: Vec<(u8, u8)>, new: Vec<(u8, u8)>, open: bool) -> bool {
        let text = |lines: &[(u8, u8)]| {
            let mut lines: Vec<(u8, u8)> = lines.iter().map(|&(n, e)| (n % 40, e % 4)).collect();
            lines.sort_unstable();
            lines.dedup_by_key(|l| l.0);
            let mut text: String = lines
                .iter()
                .map(|&(n, e)| format!("{n}{}", ["\n", "\r\n", "\r", "\n"][usize::from(e)]))
                .collect();
            if open {
                text.pop();
            }
            text
        };
        let (old, new) = (text(&old), text(&new));
        diff("f", Some(&old), &new) == whole("f", Some(&old), &new)
    }
}

#[test]
fn a_diff_of_a_big_file_keeps_its_line_numbers_and_a_huge_one_is_one_block() {
    let old: String = (0..100_000).map(|i| format!("line {i}\n")).collect();
    let new = old.replace("line 50000\n", "line 50000 changed\n");
    let d = diff("f", Some(&old), &new);
    assert_eq!(d, whole("f", Some(&old), &new));
    assert!(d.contains("@@ -49998,7 +49998,7 @@\n"), "{d}");
    // Every line changed: one block, under the cap.
    let new: String = old.lines().map(|l| format!("{l}!\n")).collect();
    let d = diff("f", Some(&old), &new);
    assert!(d.starts_with("--- a/f\n+++ b/f\n@@ -1,100000 +1,100000 @@\n-line 0\n-line 1\n"));
    assert!(d.len() <= DIFF_CAP + 100 && d.ends_with("in the content store]\n"));
    assert_eq!(diff("f", Some("same\n"), "same\n"), "");
    assert_eq!(diff_within("f", Some("a\nb"), "a\nb", 0), "");
    assert_eq!(diff("f", None, ""), "");
}

#[test]
fn an_overlapping_match_is_no_reversible_edit() {
    // " \0" -> "   ": the new text starts at two places, so the reverse
    // edit is ambiguous; the property below skips such cases.
    let edited = replace(" \0", "\0", "  ", false, "f").unwrap();
    assert_eq!(edited, "   ");
    assert_eq!(replace(&edited, "  ", "\0", false, "f").unwrap(), "\0 ");
}

quickcheck! {
    /// An edit applied to any text, then undone by the reverse edit,
    /// gives the text back.
    fn an_edit_then_its_reverse_is_the_identity(pre: String, old: String, new: String, post: String) -> bool {
        if old.is_empty() || new.is_empty() || old == new || (pre.clone() + &old + &new + &post).contains('\r') {
            return true;
        }
        let text = format!("{pre}{old}{post}");
        // Only a match that is unique, overlaps counted, makes a reversible
        // edit (in "   " the two spaces start at two places).
        let places = |hay: &str, needle: &str| {
            hay.char_indices().filter(|(i, _)| hay[*i..].starts_with(needle)).count()
        };
        if places(&text, &old) != 1 {
            return true;
        }
        let Ok(edited) = replace(&text, &old, &new, false, "f") else { return false };
        if places(&edited, &new) != 1 {
            return true;
        }
        replace(&edited, &new, &old, false, "f").as_deref() == Ok(text.as_str())
    }
}

#[test]
fn the_counts_are_of_the_whole_change_not_of_the_cut_diff() {
    // Issue 27 item 14: a replace_all of every line of a big file said
    // `+0 -11878`, counted from the diff cut at DIFF_CAP.
    let old: String = (0..200_000).map(|i| format!("line {i}\n")).collect();
    let new = old.replace("line", "row");
    let d = diff_bytes("f", Some(old.as_bytes()), new.as_bytes(), &Keys::default());
    assert!(d.text.ends_with("in the content store]\n"), "cut");
    assert!(d.text.len() <= DIFF_CAP + 200);
    assert_eq!((d.added, d.removed), (200_000, 200_000));
    // Line by line too: one added, one removed, one changed.
    let d = diff_bytes("f", Some(b"a\nb\nc\n"), b"a\nB\nc\nd\n", &Keys::default());
    assert_eq!((d.added, d.removed), (2, 1));
    assert_eq!(stat(&d.text), (2, 1));
}

#[test]
fn a_diff_is_of_bytes_and_shows_lines_as_the_model_sees_them() {
    let keys = Keys::new(["sk-secret-1234".to_owned()]);
    // Issue 27 item 11: a byte changed where the decoded line looks the
    // same is a changed line.
    let d = diff_bytes("f", Some(b"caf\xe9\n"), "caf\u{fffd}\n".as_bytes(), &keys);
    assert_eq!((d.added, d.removed), (1, 1), "{}", d.text);
    assert!(
        d.text.contains("-caf\u{fffd}\n+caf\u{fffd}\n"),
        "{}",
        d.text
    );
    // Issue 27 item 1: a key in a context line (or a changed one) is
    // shown as [key].
    let before = b"a\nk=sk-secret-1234\nb\n";
    let after = b"a\nk=sk-secret-1234\nc\n";
    let d = diff_bytes("f", Some(before), after, &keys);
    assert!(!d.text.contains("secret"), "{}", d.text);
    assert!(d.text.contains(" k=[key]\n-b\n+c\n"), "{}", d.text);
    let d = diff_bytes("f", None, b"new sk-secret-1234\n", &keys);
    assert_eq!(
        d.text,
        "--- /dev/null\n+++ b/f\n@@ -0,0 +1 @@\n+new [key]\n"
    );
}
