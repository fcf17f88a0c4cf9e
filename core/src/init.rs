//! `/init`: the AGENTS.md written from what the repository holds. It is a
//! summary the shell gathers the facts of (file names and the build
//! files' contents) and this module writes, not a model turn: it costs
//! nothing, says only what the files show, and is the same every time
//! for the same tree. The user (or the model, in a turn after) edits it.

/// What the shell found in the repository.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Facts {
    /// The repository folder's name.
    pub name: String,
    /// The README's first line of text (its title), if there is one.
    pub title: Option<String>,
    /// Files per language, as found by their extensions.
    pub languages: Vec<(String, usize)>,
    /// The top-level folders (not hidden, not build output), with how
    /// many files each holds.
    pub folders: Vec<(String, usize)>,
    /// `Cargo.toml` is there; with the workspace's members if it has any.
    pub cargo: Option<Vec<String>>,
    /// `package.json`'s script names, when there is one.
    pub npm: Option<Vec<String>>,
    /// The `Makefile`'s targets, when there is one.
    pub make: Option<Vec<String>>,
    /// `pyproject.toml` or `setup.py` is there.
    pub python: bool,
    /// `go.mod` is there.
    pub go: bool,
}

/// The language a file of this extension is written in, for the
/// languages line; `None` for anything else (data, text, images).
pub fn language(extension: &str) -> Option<&'static str> {
    Some(match extension {
        "rs" => "Rust",
        "py" => "Python",
        "js" | "mjs" | "cjs" | "jsx" => "JavaScript",
        "ts" | "tsx" => "TypeScript",
        "go" => "Go",
        "c" | "h" => "C",
        "cc" | "cpp" | "cxx" | "hpp" => "C++",
        "java" => "Java",
        "kt" => "Kotlin",
        "rb" => "Ruby",
        "sh" | "bash" => "Shell",
        "swift" => "Swift",
        "cs" => "C#",
        "php" => "PHP",
        _ => return None,
    })
}

/// Whether a top-level folder is build output or a dependency cache,
/// not part of the layout.
pub fn skipped(folder: &str) -> bool {
    folder.starts_with('.')
        || matches!(
            folder,
            "target" | "node_modules" | "dist" | "build" | "__pycache__" | "venv" | "vendor"
        )
}

/// The most folders and languages the file lists.
const LISTED: usize = 12;

/// The AGENTS.md for `facts`.
pub fn agents_md(facts: &Facts) -> String {
    let mut out = format!("# {}\n\n", facts.name);
    if let Some(title) = &facts.title {
        out.push_str(&format!("{title}\n\n"));
    }
    out.push_str(
        "Notes for coding agents (read by revolve, Codex and others; written by revolve's /init \
         from the files found: edit freely).\n\n",
    );
    if !facts.languages.is_empty() {
        let mut langs = facts.languages.clone();
        langs.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let list: Vec<String> = langs
            .iter()
            .take(LISTED)
            .map(|(l, n)| format!("{l} ({n} file{})", if *n == 1 { "" } else { "s" }))
            .collect();
        out.push_str(&format!("## Languages\n\n{}\n\n", list.join(", ")));
    }
    let commands = commands(facts);
    if !commands.is_empty() {
        out.push_str("## Build and test\n\n");
        for (command, what) in commands {
            out.push_str(&format!("- `{command}`: {what}\n"));
        }
        out.push('\n');
    }
    if !facts.folders.is_empty() {
        out.push_str("## Layout\n\n");
        for (folder, files) in facts.folders.iter().take(LISTED) {
            let plural = if *files == 1 { "" } else { "s" };
            out.push_str(&format!("- `{folder}/` ({files} file{plural})\n"));
        }
        out.push('\n');
    }
    out.push_str(
        "## Conventions\n\n- Run the tests above before saying a change is done.\n\
         - Keep changes small and in the style of the code around them.\n",
    );
    out
}

/// The build and test commands the build files show, with what each
/// does.
fn commands(facts: &Facts) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Some(members) = &facts.cargo {
        out.push(("cargo build".to_owned(), "build (Cargo.toml)".to_owned()));
        let what = if members.is_empty() {
            "run the tests".to_owned()
        } else {
            format!("run the tests of the workspace ({})", members.join(", "))
        };
        let command = if members.is_empty() {
            "cargo test"
        } else {
            "cargo test --workspace"
        };
        out.push((command.to_owned(), what));
    }
    if let Some(scripts) = &facts.npm {
        out.push((
            "npm install".to_owned(),
            "install the dependencies (package.json)".to_owned(),
        ));
        for script in scripts {
            let command = match script.as_str() {
                "test" | "start" => format!("npm {script}"),
                _ => format!("npm run {script}"),
            };
            out.push((command, format!("the package's `{script}` script")));
        }
    }
    if let Some(targets) = &facts.make {
        for target in targets.iter().take(LISTED) {
            out.push((format!("make {target}"), "a Makefile target".to_owned()));
        }
    }
    if facts.python {
        out.push((
            "pip install -e .".to_owned(),
            "install the package (pyproject.toml or setup.py)".to_owned(),
        ));
        out.push(("python -m pytest".to_owned(), "run the tests".to_owned()));
    }
    if facts.go {
        out.push(("go build ./...".to_owned(), "build (go.mod)".to_owned()));
        out.push(("go test ./...".to_owned(), "run the tests".to_owned()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rust_and_npm_repository() {
        let facts = Facts {
            name: "demo".into(),
            title: Some("A demo tool.".into()),
            languages: vec![("TypeScript".into(), 3), ("Rust".into(), 10)],
            folders: vec![("src".into(), 10), ("web".into(), 3)],
            cargo: Some(vec![]),
            npm: Some(vec!["build".into(), "test".into()]),
            make: None,
            python: false,
            go: false,
        };
        let text = agents_md(&facts);
        assert!(text.starts_with("# demo\n\nA demo tool.\n\n"), "{text}");
        assert!(
            text.contains("## Languages\n\nRust (10 files), TypeScript (3 files)\n"),
            "{text}"
        );
        assert!(text.contains("- `cargo test`: run the tests\n"), "{text}");
        assert!(
            text.contains("- `npm run build`: the package's `build` script\n"),
            "{text}"
        );
        assert!(
            text.contains("- `npm test`: the package's `test` script\n"),
            "{text}"
        );
        assert!(text.contains("- `src/` (10 files)\n"), "{text}");
        assert!(!text.contains("make "), "{text}");
    }

    #[test]
    fn nothing_found_still_names_the_project() {
        let text = agents_md(&Facts {
            name: "empty".into(),
            ..Facts::default()
        });
        assert!(text.starts_with("# empty\n"));
        assert!(!text.contains("## Build and test"));
    }
}
