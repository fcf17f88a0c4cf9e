//! The README and `docs/`: the two set-up commands stay the README's first
//! block, and every link resolves inside the repository. Decision: no link
//! leaves it, not even to crate docs (a URL in a code span, such as a
//! provider's base URL, is text, not a link).

use std::path::{Path, PathBuf};

use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag};

use crate::common;

/// README.md and every `docs/*.md`.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![common::repo().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(common::repo().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    assert!(docs.len() >= 10, "{docs:?}");
    pages.extend(docs);
    pages
}

/// The link targets of a Markdown page (links and images).
fn links(text: &str) -> Vec<String> {
    Parser::new(text)
        .filter_map(|event| match event {
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => {
                Some(dest_url.into_string())
            }
            _ => None,
        })
        .collect()
}

#[test]
fn every_link_resolves_inside_the_repository() {
    let root = common::repo().canonicalize().unwrap();
    let mut checked = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for target in links(&text) {
            assert!(
                !target.contains("://") && !target.starts_with("mailto:"),
                "{}: {target} leaves the repository",
                page.display()
            );
            let file = target.split('#').next().unwrap_or_default();
            if file.is_empty() {
                continue;
            }
            let at = page.parent().unwrap_or(Path::new(".")).join(file);
            let resolved = at
                .canonicalize()
                .unwrap_or_else(|e| panic!("{}: {target}: {e}", page.display()));
            assert!(
                resolved.starts_with(&root),
                "{}: {target} is outside the repository",
                page.display()
            );
            checked += 1;
        }
        // The design file that once ended the README is outside it.
        assert!(!text.contains("../shared"), "{}", page.display());
    }
    assert!(
        checked >= 13,
        "the README links each page of docs/: {checked}"
    );
}

#[test]
fn the_readme_starts_with_its_two_set_up_commands() {
    let text = std::fs::read_to_string(common::repo().join("README.md")).unwrap();
    let mut in_block = false;
    let mut block = String::new();
    for event in Parser::new(&text) {
        match event {
            Event::Start(Tag::CodeBlock(kind)) => {
                assert_eq!(kind, CodeBlockKind::Fenced("sh".into()), "the first block");
                in_block = true;
            }
            Event::Text(t) if in_block => block.push_str(&t),
            Event::End(_) if in_block => break,
            _ => {}
        }
    }
    let lines: Vec<&str> = block.lines().collect();
    assert_eq!(lines.len(), 2, "{block}");
    assert!(lines[0].contains("--provider scripted"), "{block}");
    assert_eq!(lines[1], "cargo test --workspace");
    // Install and the quick start come after them.
    let at = |what: &str| text.find(what).unwrap_or_else(|| panic!("no {what}"));
    assert!(at("cargo test --workspace") < at("## Install"));
    assert!(at("## Install") < at("### Quick start"));
}
