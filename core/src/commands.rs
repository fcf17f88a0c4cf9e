//! Claude Code's custom slash commands: a `.claude/commands/NAME.md` of
//! the repository or of `~/.claude/commands/` (sub-folders only sort them:
//! `frontend/component.md` is `/component`) is offered as `/NAME ARGS` in
//! the REPL. Its front matter (optional) gives `description`,
//! `argument-hint` and `allowed-tools`; its body is the message sent, with
//! `$ARGUMENTS` replaced by all the arguments and `$1` … `$9` by each.
//! `allowed-tools` grants nothing: revolve's permission rules decide, as
//! for any turn. A name a builtin command has is no command (said once).

/// One command of the user's own.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserCommand {
    /// The name it is called by: the file's name without `.md`.
    pub name: String,
    /// What it does (its front matter's `description`, else its body's
    /// first line).
    pub description: String,
    /// The arguments it takes, as its `argument-hint` shows them.
    pub argument_hint: Option<String>,
    /// Its `allowed-tools`, as written (shown, not granted).
    pub allowed_tools: Option<String>,
    /// Its body: the message template.
    pub body: String,
    /// Its file, absolute.
    pub path: String,
}

/// Whether `name` can be a command's name: letters, digits, `-`, `_`,
/// `:` and `.`, not starting with `.`.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_:.".contains(c))
}

/// The command named `name` from its file's `text` at `path`.
pub fn parse(name: &str, path: &str, text: &str) -> UserCommand {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let front_and_body = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .and_then(|rest| {
            rest.split_once("\n---\n")
                .or_else(|| rest.split_once("\r\n---\r\n"))
                .or_else(|| rest.strip_suffix("\n---").map(|f| (f, "")))
        });
    let (front, body) = front_and_body.unwrap_or(("", text));
    let mut command = UserCommand {
        name: name.to_owned(),
        body: body.trim().to_owned(),
        path: path.to_owned(),
        ..UserCommand::default()
    };
    for line in front.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = unquote(value.trim());
        match key.trim() {
            "description" => command.description = value,
            "argument-hint" => command.argument_hint = Some(value),
            "allowed-tools" => command.allowed_tools = Some(value),
            _ => {}
        }
    }
    if command.description.is_empty() {
        command.description = crate::text::one_line(
            command
                .body
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or(""),
            80,
        );
    }
    command
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

/// The message `/NAME args` sends: `$ARGUMENTS` replaced by `args`, `$1`
/// … `$9` by its words (a missing one by nothing); a body that mentions
/// neither gets the arguments after a blank line.
pub fn message(body: &str, args: &str) -> String {
    let words: Vec<&str> = args.split_whitespace().collect();
    let positional = (1..=9).any(|i| body.contains(&format!("${i}")));
    if !body.contains("$ARGUMENTS") && !positional {
        return if args.is_empty() {
            body.to_owned()
        } else {
            format!("{body}\n\n{args}")
        };
    }
    let mut out = body.replace("$ARGUMENTS", args);
    // From $9 down, so `$1` never eats the start of a `$10`-like text.
    for i in (1..=9).rev() {
        out = out.replace(&format!("${i}"), words.get(i - 1).copied().unwrap_or(""));
    }
    out
}

/// The command named `name` among `commands` (the first found wins).
pub fn find<'a>(commands: &'a [UserCommand], name: &str) -> Option<&'a UserCommand> {
    commands.iter().find(|c| c.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_and_arguments() {
        let c = parse(
            "fix-issue",
            "/r/.claude/commands/fix-issue.md",
            "---\ndescription: Fix an issue\nargument-hint: [number] [priority]\nallowed-tools: Bash(git:*)\n---\nFix issue #$1 with priority $2. All: $ARGUMENTS\n",
        );
        assert_eq!(c.description, "Fix an issue");
        assert_eq!(c.argument_hint.as_deref(), Some("[number] [priority]"));
        assert_eq!(c.allowed_tools.as_deref(), Some("Bash(git:*)"));
        assert_eq!(
            message(&c.body, "123 high"),
            "Fix issue #123 with priority high. All: 123 high"
        );
        assert_eq!(message(&c.body, "7"), "Fix issue #7 with priority . All: 7");
    }

    #[test]
    fn without_front_matter_the_first_line_describes_it() {
        let c = parse(
            "optimize",
            "/h/.claude/commands/optimize.md",
            "Analyze this code for performance issues.\n",
        );
        assert_eq!(c.description, "Analyze this code for performance issues.");
        assert_eq!(
            message(&c.body, ""),
            "Analyze this code for performance issues."
        );
        assert_eq!(
            message(&c.body, "src/lib.rs"),
            "Analyze this code for performance issues.\n\nsrc/lib.rs"
        );
        assert!(valid_name("fix-issue") && !valid_name(".hidden") && !valid_name("a b"));
    }
}
