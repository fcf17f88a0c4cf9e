//! `@path` in a user's line: the files of the tree attached to the
//! message. Which words are mentions and how the message carries the
//! files is decided here; the shell reads them (confined as `read_file`
//! is) and the message is logged whole, attachments included, so replay
//! sends the same bytes.

/// The paths a line mentions: each word that starts with `@` and has a
/// path after it, without trailing punctuation (`@src/a.rs,` is
/// `src/a.rs`), each once, in order. An `@` inside a word (an address)
/// is no mention.
pub fn mentions(line: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in line.split_whitespace() {
        let Some(path) = word.strip_prefix('@') else {
            continue;
        };
        let path = path.trim_end_matches([',', '.', ';', ':', '!', '?', ')', '"', '\'']);
        if path.is_empty() || path.starts_with('@') {
            continue;
        }
        if !out.iter().any(|p| p == path) {
            out.push(path.to_owned());
        }
    }
    out
}

/// The message with `files` (a mentioned path and what reading it gave)
/// attached after the user's text, each in a `<file>` block.
pub fn message(text: &str, files: &[(String, String)]) -> String {
    let mut out = text.to_owned();
    for (path, content) in files {
        let content = content.strip_suffix('\n').unwrap_or(content);
        out.push_str(&format!("\n\n<file path=\"{path}\">\n{content}\n</file>"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_are_words_starting_with_at() {
        assert_eq!(
            mentions("look at @src/a.rs, and @b.md. mail me@x.org @ @@x @src/a.rs"),
            ["src/a.rs", "b.md"]
        );
        assert!(mentions("no mention here").is_empty());
    }

    #[test]
    fn files_follow_the_text() {
        let files = [("a.rs".to_owned(), "fn a() {}\n".to_owned())];
        assert_eq!(
            message("explain @a.rs", &files),
            "explain @a.rs\n\n<file path=\"a.rs\">\nfn a() {}\n</file>"
        );
        assert_eq!(message("hi", &[]), "hi");
    }
}
