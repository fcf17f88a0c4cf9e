//! `/init`: writes an AGENTS.md at the repository's root from what the
//! repository holds ([`revolve_core::init`] writes it from the facts
//! gathered here). An AGENTS.md already there is replaced only when the
//! user says so at a terminal; without one it is left as it is.

use std::path::Path;

use revolve_core::init::{self, Facts};

use crate::console::Live;

/// The most directory entries the language count looks at: a huge tree
/// is counted in part rather than walked for long.
const WALKED: usize = 50_000; // not policy: a bound on a listing's cost

/// `/init` in the REPL or a piped line: says what it wrote, or why not.
pub(crate) fn slash(live: &Live) {
    let root = live.store().project.key.clone();
    let file = root.join("AGENTS.md");
    if file.exists() {
        let question = format!(
            "{} exists; replace it? (y replaces, n keeps it) ",
            file.display()
        );
        match crate::keys::answer(&question) {
            Some(revolve_core::edit::Answer::Yes | revolve_core::edit::Answer::Always) => {}
            Some(revolve_core::edit::Answer::No) => {
                eprintln!("/init: kept {} as it is", file.display());
                return;
            }
            None => {
                eprintln!(
                    "/init: {} exists and there is no terminal to ask; kept as it is (remove it first to write a new one)",
                    file.display()
                );
                return;
            }
        }
    }
    let facts = facts(&root);
    let text = init::agents_md(&facts);
    match revolve_store::fsx::write_atomic(&file, text.as_bytes()) {
        Ok(()) => eprintln!(
            "/init: wrote {} ({} lines): the next turn reads it; edit it to say more",
            file.display(),
            text.lines().count()
        ),
        Err(e) => eprintln!("revolve: /init: cannot write {}: {e}", file.display()),
    }
}

/// What the repository at `root` holds, for AGENTS.md.
fn facts(root: &Path) -> Facts {
    let name = root.file_name().map_or_else(
        || "this project".to_owned(),
        |n| n.to_string_lossy().into_owned(),
    );
    let read = |file: &str| std::fs::read_to_string(root.join(file)).ok();
    let title = ["README.md", "README", "README.rst"]
        .iter()
        .find_map(|f| read(f))
        .and_then(|text| {
            text.lines()
                .map(|l| l.trim().trim_start_matches('#').trim())
                .find(|l| !l.is_empty())
                .map(str::to_owned)
        });
    let cargo = read("Cargo.toml").map(|text| workspace_members(&text));
    let npm = read("package.json").map(|text| {
        serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| {
                v.get("scripts")?
                    .as_object()
                    .map(|o| o.keys().cloned().collect())
            })
            .unwrap_or_default()
    });
    let make = read("Makefile")
        .or_else(|| read("makefile"))
        .map(|text| targets(&text));
    let (languages, folders) = walk(root);
    Facts {
        name,
        title,
        languages,
        folders,
        cargo,
        npm,
        make,
        python: root.join("pyproject.toml").is_file() || root.join("setup.py").is_file(),
        go: root.join("go.mod").is_file(),
    }
}

/// A Cargo.toml's workspace members (`members = ["a", "b"]`), or none.
fn workspace_members(text: &str) -> Vec<String> {
    let Some(start) = text.find("members") else {
        return Vec::new();
    };
    let rest = &text[start..];
    let (Some(open), Some(close)) = (rest.find('['), rest.find(']')) else {
        return Vec::new();
    };
    if close < open {
        return Vec::new();
    }
    rest[open + 1..close]
        .split(',')
        .map(|m| m.trim().trim_matches('"').to_owned())
        .filter(|m| !m.is_empty())
        .collect()
}

/// A Makefile's targets: `name:` at the start of a line, not a variable
/// (`:=`) nor a special target (`.PHONY`).
fn targets(text: &str) -> Vec<String> {
    let mut out: Vec<String> = text
        .lines()
        .filter_map(|l| {
            let (name, rest) = l.split_once(':')?;
            let plain = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_".contains(c));
            (plain && !rest.starts_with('=')).then(|| name.to_owned())
        })
        .collect();
    out.dedup();
    out
}

/// Names with a count of files each.
type Counts = Vec<(String, usize)>;

/// The languages (files per language) and the top-level folders (files
/// each) under `root`, hidden folders and build output left out.
fn walk(root: &Path) -> (Counts, Counts) {
    let mut languages: Vec<(String, usize)> = Vec::new();
    let mut folders: Vec<(String, usize)> = Vec::new();
    let mut seen = 0;
    let mut stack = vec![(root.to_path_buf(), None::<usize>)];
    while let Some((dir, top)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            seen += 1;
            if seen > WALKED {
                return (languages, folders);
            }
            let name = entry.file_name().to_string_lossy().into_owned();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                if init::skipped(&name) {
                    continue;
                }
                let top = top.or_else(|| {
                    folders.push((name.clone(), 0));
                    Some(folders.len() - 1)
                });
                stack.push((entry.path(), top));
            } else if kind.is_file() {
                if let Some(i) = top {
                    folders[i].1 += 1;
                }
                let ext = name.rsplit_once('.').map_or("", |(_, e)| e);
                if let Some(lang) = init::language(ext) {
                    match languages.iter_mut().find(|(l, _)| l == lang) {
                        Some((_, n)) => *n += 1,
                        None => languages.push((lang.to_owned(), 1)),
                    }
                }
            }
        }
    }
    folders.sort();
    (languages, folders)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_files_are_read_for_their_commands() {
        assert_eq!(
            workspace_members("[workspace]\nmembers = [\"core\", \"io\"]\n"),
            ["core", "io"]
        );
        assert!(workspace_members("[package]\nname = \"x\"\n").is_empty());
        assert_eq!(
            targets(".PHONY: test\nCC := gcc\nbuild: main.o\n\tcc\ntest:\n\t./t\n"),
            ["build", "test"]
        );
    }
}
