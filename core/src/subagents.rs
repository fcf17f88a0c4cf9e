//! Subagent definitions, in the shape Claude Code's agent files have: a
//! Markdown file `NAME.md` whose front matter may say `description`,
//! `tools` (a comma list, `[a, b]`, or `- a` lines; Claude Code's names
//! such as `Read`, `Bash` are taken too) and `model` (`inherit`, or none,
//! keeps the parent's), and whose body is the child's system prompt.
//!
//! The shell finds the files (`subagents/` of the project directory, then
//! the repository's `.agents/agents/` and `.claude/agents/`; the first
//! file of a name wins) and hands their text here ([`parse`]). Which
//! tools a definition allows is [`crate::agents::allowed`].

/// A subagent definition, parsed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Definition {
    /// Its name: the file's stem, or the front matter's `name`.
    pub name: String,
    /// What it is for.
    pub description: String,
    /// The tools it names, as written; `None` when it names none (then it
    /// is read-only).
    pub tools: Option<Vec<String>>,
    /// The model it asks; `None` keeps the parent's.
    pub model: Option<String>,
    /// Its system prompt: the text after the front matter.
    pub prompt: String,
}

/// The longest name a definition may have.
const NAME_MAX: usize = 64;

/// Parses the definition file of stem `stem`: an optional front matter
/// (`---`, `key: value` lines, `---`), then the prompt. A file without a
/// front matter is all prompt.
pub fn parse(stem: &str, text: &str) -> Result<Definition, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut def = Definition {
        name: stem.to_owned(),
        ..Definition::default()
    };
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        def.prompt = text.trim().to_owned();
        return valid(def);
    };
    let (front, body) = rest
        .split_once("\n---\n")
        .or_else(|| rest.split_once("\r\n---\r\n"))
        .or_else(|| rest.strip_suffix("\n---").map(|f| (f, "")))
        .ok_or("its front matter has no closing line ---")?;
    let mut listing: Option<Vec<String>> = None;
    for line in front.lines() {
        let trimmed = line.trim();
        if let (Some(list), Some(item)) = (listing.as_mut(), trimmed.strip_prefix("- ")) {
            list.push(unquote(item.trim()));
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match key.trim() {
            "name" if !unquote(value).is_empty() => def.name = unquote(value),
            "description" => def.description = unquote(value),
            "model" => {
                let model = unquote(value);
                def.model = (!model.is_empty() && model != "inherit").then_some(model);
            }
            "tools" if value.is_empty() => {
                listing = Some(Vec::new());
                continue;
            }
            "tools" => {
                let inner = value
                    .strip_prefix('[')
                    .and_then(|v| v.strip_suffix(']'))
                    .unwrap_or(value);
                def.tools = Some(
                    inner
                        .split(',')
                        .map(|t| unquote(t.trim()))
                        .filter(|t| !t.is_empty())
                        .collect(),
                );
            }
            _ => {}
        }
        if let Some(list) = listing.take() {
            def.tools = Some(list);
        }
    }
    if let Some(list) = listing {
        def.tools = Some(list);
    }
    def.prompt = body.trim().to_owned();
    valid(def)
}

fn valid(def: Definition) -> Result<Definition, String> {
    if def.name.is_empty()
        || def.name.len() > NAME_MAX
        || !def
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(format!(
            "its name {:?} is not 1 to {NAME_MAX} letters, digits, - and _",
            def.name
        ));
    }
    Ok(def)
}

/// The result of a `task` call naming a subagent no definition has.
pub fn unknown(name: &str, known: &[Definition]) -> String {
    if known.is_empty() {
        return format!(
            "error: there is no subagent named {name:?}: none is defined (subagents/NAME.md in \
             the project directory, .agents/agents/NAME.md or .claude/agents/NAME.md in the \
             repository); leave subagent out for the read-only helper"
        );
    }
    let names: Vec<&str> = known.iter().map(|d| d.name.as_str()).collect();
    format!(
        "error: there is no subagent named {name:?}; the subagents are {}",
        names.join(", ")
    )
}

/// The system prompt's block listing the subagents `task` may name, or
/// `None` when there are none.
pub fn prompt_block(known: &[Definition]) -> Option<String> {
    if known.is_empty() {
        return None;
    }
    let mut out = String::from(
        "Subagents you may name in a task call (leave subagent out for a read-only helper):\n",
    );
    for d in known {
        out.push_str(&format!("- {}: {}\n", d.name, d.description));
    }
    Some(out)
}

/// A value without the quotes around it.
fn unquote(value: &str) -> String {
    for q in ['"', '\''] {
        if let Some(inner) = value.strip_prefix(q).and_then(|v| v.strip_suffix(q)) {
            return inner.to_owned();
        }
    }
    value.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claude_code_agent_file_parses() {
        let text = "---\nname: code-reviewer\ndescription: \"Reviews code.\"\ntools: Read, Grep, Bash\nmodel: inherit\n---\nYou review code.\n";
        let def = parse("reviewer", text).unwrap();
        assert_eq!(def.name, "code-reviewer");
        assert_eq!(def.description, "Reviews code.");
        assert_eq!(
            def.tools,
            Some(vec!["Read".into(), "Grep".into(), "Bash".into()])
        );
        assert_eq!(def.model, None);
        assert_eq!(def.prompt, "You review code.");
    }

    #[test]
    fn tools_come_as_a_list_in_brackets_or_lines_and_no_front_matter_is_all_prompt() {
        let def = parse(
            "w",
            "---\ntools: [read_file, 'write_file']\nmodel: small\n---\nGo.",
        )
        .unwrap();
        assert_eq!(
            def.tools,
            Some(vec!["read_file".into(), "write_file".into()])
        );
        assert_eq!(def.model.as_deref(), Some("small"));
        let def = parse(
            "w",
            "---\ntools:\n  - grep\n  - list_dir\ndescription: x\n---\n",
        )
        .unwrap();
        assert_eq!(def.tools, Some(vec!["grep".into(), "list_dir".into()]));
        assert_eq!(def.description, "x");
        let def = parse("plain", "Just do it.\n").unwrap();
        assert_eq!(
            (def.name.as_str(), def.tools, def.prompt.as_str()),
            ("plain", None, "Just do it.")
        );
        assert!(parse("bad name", "x").unwrap_err().contains("is not 1 to"));
        assert!(parse("x", "---\nname: y\n")
            .unwrap_err()
            .contains("no closing"));
    }

    #[test]
    fn an_unknown_name_lists_the_known_ones() {
        let known = [parse("a", "A").unwrap(), parse("b", "B").unwrap()];
        assert!(unknown("c", &known).ends_with("the subagents are a, b"));
        assert!(unknown("c", &[]).contains("none is defined"));
        assert!(prompt_block(&known).unwrap().contains("- a: \n"));
        assert_eq!(prompt_block(&[]), None);
    }
}
