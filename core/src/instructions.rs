//! Project instructions: the `AGENTS.md` and `CLAUDE.md` files a repository
//! carries, from its root down to the working directory, root first, as
//! Codex, opencode and Gemini CLI read `AGENTS.md` and Claude Code reads
//! `CLAUDE.md`. A folder with both contributes both, once each, unless its
//! `CLAUDE.md` only repeats its `AGENTS.md` (a copy, a link to it, or only
//! an `@AGENTS.md` import: see [`repeats`]). They go into the system
//! prompt under their paths, read before every turn like memory files, so
//! an edit reaches the next request and the log's `context` record holds
//! exactly what was read. `--bare` loads none.
//!
//! The shell finds the root (the nearest folder up from the working
//! directory that holds `.git`; outside git, the working directory alone),
//! reads each file up to [`CAP`] bytes and hands them here; [`fit`] keeps
//! them within [`CAP`] in all, cutting at a line and saying so.

use std::path::{Path, PathBuf};

/// The names a folder's instructions are read from, in order.
pub const NAMES: [&str; 2] = ["AGENTS.md", "CLAUDE.md"];

/// Whether a folder's `CLAUDE.md` (`claude`) only repeats its `AGENTS.md`
/// (`agents`): the same text, or nothing but `@AGENTS.md` imports (Claude
/// Code users keep such a file so both tools read one set of notes). It is
/// then read once, as the `AGENTS.md`.
pub fn repeats(agents: &[u8], claude: &[u8]) -> bool {
    let claude = String::from_utf8_lossy(claude);
    if String::from_utf8_lossy(agents).trim() == claude.trim() {
        return true;
    }
    let mut lines = claude.lines().map(str::trim).filter(|l| !l.is_empty());
    lines.clone().next().is_some() && lines.all(|l| matches!(l, "@AGENTS.md" | "@./AGENTS.md"))
}

/// The most the instructions take of the prompt, all files together
/// (Codex's bound for the same files).
pub const CAP: usize = 32 * 1024;

/// One file of instructions as read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Read {
    /// Its absolute path.
    pub path: String,
    /// What was read: at most [`CAP`] bytes of it.
    pub bytes: Vec<u8>,
    /// Its whole size.
    pub size: u64,
}

/// One file of instructions as the prompt carries it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Instructions {
    /// Its absolute path.
    pub path: String,
    /// What the prompt carries, with a note when it was cut.
    pub text: String,
}

/// The folders from `root` down to `cwd`, root first; `cwd` alone when it
/// is not inside `root`.
pub fn folders(root: &Path, cwd: &Path) -> Vec<PathBuf> {
    let Ok(rest) = cwd.strip_prefix(root) else {
        return vec![cwd.to_path_buf()];
    };
    let mut folder = root.to_path_buf();
    let mut out = vec![folder.clone()];
    for part in rest.components() {
        folder.push(part);
        out.push(folder.clone());
    }
    out
}

/// The files as the prompt carries them: each whole while the [`CAP`]
/// lasts, the one that reaches it cut at a line with a note, and the ones
/// after it named with a note only. An empty file is left out.
pub fn fit(files: Vec<Read>) -> Vec<Instructions> {
    let mut left = CAP;
    let mut out = Vec::new();
    for file in files {
        let text = String::from_utf8_lossy(&file.bytes);
        let text = text.trim_end();
        if text.trim().is_empty() {
            continue;
        }
        let whole = file.size <= file.bytes.len() as u64;
        let text = if whole && text.len() <= left {
            left -= text.len();
            text.to_owned()
        } else {
            let mut end = left.min(text.len());
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            // At a line, when there is one in what fits.
            if let Some(line) = text[..end].rfind('\n') {
                end = line;
            }
            // What a cut leaves is not given to a later file: each file
            // after the one cut is named only.
            left = 0;
            let kept = text[..end].trim_end();
            let note = format!(
                "[cut: {} of its {} bytes are shown, project instructions being bound to {} KiB \
                 in all; read_file {} for the rest]",
                kept.len(),
                file.size,
                CAP / 1024,
                file.path
            );
            if kept.is_empty() {
                note
            } else {
                format!("{kept}\n{note}")
            }
        };
        out.push(Instructions {
            path: file.path,
            text,
        });
    }
    out
}

/// The prompt block of the instructions, or `None` when there are none.
pub fn prompt_block(files: &[Instructions]) -> Option<String> {
    if files.is_empty() {
        return None;
    }
    let mut block = String::from(
        "Project instructions: the repository's own AGENTS.md (or CLAUDE.md) files, from its \
         root down to the working directory; a deeper file is more specific. Follow them.",
    );
    for file in files {
        block.push_str(&format!("\n\n## {}\n\n{}", file.path, file.text));
    }
    Some(block)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(path: &str, text: &str) -> Read {
        Read {
            path: path.into(),
            bytes: text.as_bytes().to_vec(),
            size: text.len() as u64,
        }
    }

    #[test]
    fn a_claude_md_that_only_repeats_agents_md_is_read_once() {
        let agents = b"Use tabs.\n";
        assert!(repeats(agents, b"Use tabs.\n"));
        assert!(repeats(agents, b"Use tabs."));
        assert!(repeats(agents, b"@AGENTS.md\n"));
        assert!(repeats(agents, b"\n@./AGENTS.md\n\n"));
        assert!(!repeats(agents, b"@AGENTS.md\nAlso: never push.\n"));
        assert!(!repeats(agents, b"Never push.\n"));
        assert!(!repeats(agents, b"  \n"));
    }

    #[test]
    fn folders_run_from_the_root_down() {
        assert_eq!(
            folders(Path::new("/r"), Path::new("/r/a/b")),
            vec![
                PathBuf::from("/r"),
                PathBuf::from("/r/a"),
                PathBuf::from("/r/a/b")
            ]
        );
        assert_eq!(
            folders(Path::new("/r"), Path::new("/r")),
            vec![PathBuf::from("/r")]
        );
        assert_eq!(
            folders(Path::new("/r"), Path::new("/elsewhere")),
            vec![PathBuf::from("/elsewhere")]
        );
    }

    #[test]
    fn files_are_kept_whole_within_the_cap_and_cut_at_a_line_past_it() {
        let small = read("/r/AGENTS.md", "Use tabs.\n");
        let line = "x".repeat(99) + "\n";
        let big_text = line.repeat(CAP / 100 + 10);
        let big = read("/r/a/AGENTS.md", &big_text);
        let after = read("/r/a/b/CLAUDE.md", "Never push.");
        let empty = read("/r/a/b/c/AGENTS.md", " \n");
        let out = fit(vec![small, big, after, empty]);
        assert_eq!(out.len(), 3);
        assert_eq!(out[0].text, "Use tabs.");
        let (kept, note) = out[1].text.rsplit_once('\n').unwrap();
        assert!(kept.lines().all(|l| l.len() == 99), "cut at a line");
        assert!(kept.len() <= CAP - "Use tabs.".len());
        assert!(
            note.starts_with(&format!(
                "[cut: {} of its {} bytes",
                kept.len(),
                big_text.len()
            )),
            "{note}"
        );
        assert!(note.ends_with("read_file /r/a/AGENTS.md for the rest]"));
        assert!(
            out[2].text.starts_with("[cut: 0 of its 11 bytes"),
            "{}",
            out[2].text
        );
        let total: usize = out.iter().map(|f| f.text.len()).sum();
        assert!(total < CAP + 600, "{total}");
    }

    #[test]
    fn a_file_read_only_in_part_says_so() {
        let file = Read {
            path: "/r/AGENTS.md".into(),
            bytes: b"head\nmore".to_vec(),
            size: 1_000_000,
        };
        let out = fit(vec![file]);
        assert!(out[0]
            .text
            .starts_with("head\n[cut: 4 of its 1000000 bytes"));
    }

    #[test]
    fn the_block_names_each_file() {
        assert_eq!(prompt_block(&[]), None);
        let block = prompt_block(&fit(vec![
            read("/r/AGENTS.md", "Root rules."),
            read("/r/a/AGENTS.md", "Deeper rules."),
        ]))
        .unwrap();
        assert!(
            block.contains("## /r/AGENTS.md\n\nRoot rules.\n\n## /r/a/AGENTS.md\n\nDeeper rules.")
        );
    }
}
