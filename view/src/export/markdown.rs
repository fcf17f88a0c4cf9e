//! An exported session as Markdown: the user's messages quoted, the
//! answers as the model wrote them, each tool call folded (`<details>`,
//! which GitHub and most viewers render) with its arguments and its result
//! cut, and each edit's diff in a `diff` block.

use super::{Cut, Item};

/// Appends `item` as Markdown to `out`.
pub fn item(item: &Item, out: &mut String) {
    match item {
        Item::Start { title, about } => {
            out.push_str(&format!(
                "# Session {}\n\n{}\n",
                one_line(title),
                one_line(about)
            ));
        }
        Item::System(cut) => {
            out.push_str("\n<details><summary>system prompt</summary>\n\n");
            fenced(out, "text", cut);
            out.push_str("\n</details>\n");
        }
        Item::User {
            turn,
            at,
            from,
            text,
        } => {
            out.push_str(&format!("\n---\n\n### {turn}. You"));
            if let Some(from) = from {
                out.push_str(&format!(" (a message from {})", one_line(from)));
            }
            out.push_str(" · ");
            revolve_core::text::push_when(out, *at);
            out.push_str("\n\n");
            for line in text.lines() {
                out.push_str("> ");
                out.push_str(line);
                out.push('\n');
            }
            if text.is_empty() {
                out.push_str(">\n");
            }
        }
        Item::Answer {
            text,
            thinking,
            cut,
            ..
        } => {
            out.push('\n');
            if let Some(thinking) = thinking {
                out.push_str("<details><summary>thinking</summary>\n\n");
                for line in thinking.lines() {
                    out.push_str("> ");
                    out.push_str(line);
                    out.push('\n');
                }
                out.push_str("\n</details>\n\n");
            }
            out.push_str(text.trim_end());
            out.push('\n');
            if let Some(cut) = cut {
                out.push_str(&format!("\n*({cut})*\n"));
            }
        }
        Item::Call {
            name,
            brief,
            arguments,
            result,
            error,
            diffs,
        } => {
            out.push_str(&format!(
                "\n<details><summary>{}{} <code>{}</code>{}</summary>\n\n",
                if *error { "✗ " } else { "→ " },
                escaped(name),
                escaped(brief),
                if result.is_none() { " (no result)" } else { "" }
            ));
            if !arguments.head.is_empty() {
                fenced(out, "json", arguments);
            }
            if let Some(result) = result {
                out.push('\n');
                fenced(out, "text", result);
            }
            out.push_str("\n</details>\n");
            for (path, diff) in diffs {
                out.push_str(&format!("\nEdit of `{}`:\n\n", path.replace('`', "'")));
                fenced(
                    out,
                    "diff",
                    &Cut {
                        head: diff.clone(),
                        omitted: 0,
                        tail: String::new(),
                    },
                );
            }
        }
        Item::Note { event, text, more } => {
            let word = event.map_or("note", |e| e.word());
            out.push_str(&format!("\n> **{word}:** {}\n", one_line(text)));
            if let Some(more) = more {
                out.push_str("\n<details><summary>details</summary>\n\n");
                fenced(out, "text", more);
                out.push_str("\n</details>\n");
            }
        }
    }
}

/// `cut` in a fenced block of `lang`, its fence longer than any run of
/// backticks inside, the gap marked on a line of its own.
fn fenced(out: &mut String, lang: &str, cut: &Cut) {
    let longest = longest_run(&cut.head).max(longest_run(&cut.tail));
    let fence = "`".repeat((longest + 1).max(3));
    out.push_str(&fence);
    out.push_str(lang);
    out.push('\n');
    out.push_str(&cut.head);
    if !cut.head.ends_with('\n') {
        out.push('\n');
    }
    if cut.omitted > 0 {
        out.push_str(&cut.gap());
        out.push('\n');
        out.push_str(&cut.tail);
        if !cut.tail.ends_with('\n') {
            out.push('\n');
        }
    }
    out.push_str(&fence);
    out.push('\n');
}

/// The longest run of backticks in `text`.
fn longest_run(text: &str) -> usize {
    // Most texts hold no fence at all: one fast search says so.
    if !text.contains("```") {
        return 0;
    }
    let (mut best, mut run) = (0, 0);
    for b in text.bytes() {
        if b == b'`' {
            run += 1;
            best = best.max(run);
        } else {
            run = 0;
        }
    }
    best
}

/// Text on one line (for headings and notes).
fn one_line(text: &str) -> String {
    revolve_core::text::flat(text)
}

/// `<`, `>` and `&` escaped, for the text of an HTML `<summary>`.
fn escaped(text: &str) -> String {
    super::html::escaped(&revolve_core::text::flat(text))
}
