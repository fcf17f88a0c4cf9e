//! Skills, in the Agent Skills format every peer now reads: a folder with a
//! `SKILL.md` whose front matter has `name` and `description`. The system
//! prompt lists each skill's name, description and path; the model reads a
//! skill's body with the `skill` tool only when it needs it, and may read
//! the folder's other files (its folder is readable for the session, as a
//! spill is). A skill is also a REPL command of the user's own: `/NAME
//! args` sends its body as the user's message ([`command_message`]).
//!
//! The shell finds the folders (`skills/` beside the global and the project
//! memory folders, and the repository's `.agents/skills/`), reads each
//! `SKILL.md` and hands the text here ([`parse`]); a skill whose front
//! matter does not parse is left out and said once.

/// The file a skill folder holds.
pub const FILE: &str = "SKILL.md";

/// The longest name the format allows.
pub(crate) const NAME_MAX: usize = 64;

/// The longest description the format allows.
pub(crate) const DESCRIPTION_MAX: usize = 1024;

/// The skills that ship with the program, `(folder name, SKILL.md)`: the
/// first start writes them into the global skill folder, as the builtin
/// memory documents are seeded (each carries `builtin: true`, written only
/// when absent, never written back once deleted). Two requests every
/// repository gets again and again, each a command too: `/review` and
/// `/commit`.
pub const BUILTIN: [(&str, &str); 2] = [("review", REVIEW), ("commit", COMMIT)];

const REVIEW: &str = "\
---
name: review
description: Review uncommitted changes (or those named) for bugs before they are committed.
builtin: true
---
Review these changes: $ARGUMENTS
When none are named above, review the working tree's uncommitted changes (`git status`, \
`git diff HEAD`).

1. Read each changed hunk with enough of its file around it to judge it.
2. Look for wrong behaviour, missed edge cases (empty, huge, concurrent, failing I/O), \
swallowed errors, secrets or debug output left in, changed behaviour without a test, and names \
or docs the change made untrue.
3. Run the project's tests or checks when it has a quick command for them.
4. Report findings most serious first, each as `path:line: what is wrong; what to do`. Say \
plainly when nothing is worth changing. Do not edit files unless asked.
";

const COMMIT: &str = "\
---
name: commit
description: Commit the current changes with a message in the repository's own style.
builtin: true
---
Commit the current changes. $ARGUMENTS

1. Look at `git status` and `git diff HEAD`; when nothing changed, say so and stop.
2. Read `git log -n 10` for the repository's message style, and follow it.
3. Leave out what should not be committed (build output, secrets, large binaries, changes \
unrelated to the rest) and say what you left out.
4. Write the message: a summary line of what changed and why, and a body only when the why is \
not plain from it.
5. Stage the files by name and commit. Never push, amend or rewrite history unless asked.
6. Show the commit (`git log -1 --stat`).
";

/// One skill, as the prompt lists it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Skill {
    /// Its name: lowercase letters, digits and `-`.
    pub name: String,
    /// What it is for, and when to use it.
    pub description: String,
    /// Its folder, absolute.
    pub dir: String,
}

/// A `SKILL.md` read: its name and description from the front matter, and
/// its body (what follows the front matter).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parsed {
    /// The name the model and the user call it by.
    pub name: String,
    /// What it is for, as the prompt lists it.
    pub description: String,
    /// Its instructions, the text after the front matter.
    pub body: String,
}

/// Parses a `SKILL.md`: `---`, `key: value` lines (values may be quoted),
/// `---`, then the body. The error says what is wrong, for a line naming
/// the file.
pub fn parse(text: &str) -> Result<Parsed, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or("it does not start with a front matter (a line ---)")?;
    let (front, body) = rest
        .split_once("\n---\n")
        .or_else(|| rest.split_once("\r\n---\r\n"))
        .or_else(|| rest.strip_suffix("\n---").map(|f| (f, "")))
        .ok_or("its front matter has no closing line ---")?;
    let mut name = None;
    let mut description = None;
    for line in front.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = unquote(value.trim());
        match key.trim() {
            "name" => name = Some(value),
            "description" => description = Some(value),
            _ => {}
        }
    }
    let name = name.ok_or("its front matter has no name")?;
    if name.is_empty()
        || name.len() > NAME_MAX
        || !name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        return Err(format!(
            "its name {name:?} is not 1 to {NAME_MAX} lowercase letters, digits and -"
        ));
    }
    let description = description
        .filter(|d| !d.is_empty())
        .ok_or("its front matter has no description")?;
    if description.chars().count() > DESCRIPTION_MAX {
        return Err(format!(
            "its description is longer than {DESCRIPTION_MAX} characters"
        ));
    }
    Ok(Parsed {
        name,
        description,
        body: body.trim().to_owned(),
    })
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

/// The prompt block listing the skills, or `None` when there are none.
pub fn prompt_block(skills: &[Skill]) -> Option<String> {
    if skills.is_empty() {
        return None;
    }
    let mut block = String::from(
        "Skills (when a task matches one, call the skill tool with its name and follow it; \
         its folder's files are readable):",
    );
    for skill in skills {
        block.push_str(&format!(
            "\n- {}: {} ({})",
            skill.name, skill.description, skill.dir
        ));
    }
    Some(block)
}

/// The user's message a `/NAME args` command sends: the skill's body with
/// `$ARGUMENTS` replaced by the arguments, or the arguments appended after
/// a blank line when the body does not mention them.
pub fn command_message(body: &str, args: &str) -> String {
    if body.contains("$ARGUMENTS") {
        body.replace("$ARGUMENTS", args)
    } else if args.is_empty() {
        body.to_owned()
    } else {
        format!("{body}\n\n{args}")
    }
}

/// The skill named `name` among `skills`.
pub fn find<'a>(skills: &'a [Skill], name: &str) -> Option<&'a Skill> {
    skills.iter().find(|s| s.name == name)
}

/// The result the model gets for a `skill` call naming none of `skills`.
pub fn unknown(skills: &[Skill], name: &str) -> String {
    if skills.is_empty() {
        return format!("error: there is no skill '{name}': this session has no skills");
    }
    let names: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
    format!(
        "error: there is no skill '{name}'; the skills are: {}",
        names.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_skills_parse_are_marked_and_take_their_folders_name() {
        for (folder, text) in BUILTIN {
            let parsed = parse(text).unwrap_or_else(|e| panic!("{folder}: {e}"));
            assert_eq!(parsed.name, folder);
            assert!(text.contains("\nbuiltin: true\n"), "{folder}");
            assert!(parsed.body.contains("$ARGUMENTS"), "{folder}");
            assert!(
                parsed.description.len() <= 100,
                "{folder}: a short description"
            );
        }
    }

    #[test]
    fn a_skill_md_parses_and_bad_front_matter_says_why() {
        let ok = parse(
            "---\nname: release\ndescription: \"Cut a release: tag, changelog, publish.\"\nlicense: MIT\n---\n# Release\n\nSteps.\n",
        )
        .unwrap();
        assert_eq!(ok.name, "release");
        assert_eq!(ok.description, "Cut a release: tag, changelog, publish.");
        assert_eq!(ok.body, "# Release\n\nSteps.");
        assert!(parse("# no front matter")
            .unwrap_err()
            .contains("front matter"));
        assert!(parse("---\nname: x\n").unwrap_err().contains("closing"));
        assert!(parse("---\ndescription: d\n---\n")
            .unwrap_err()
            .contains("no name"));
        assert!(parse("---\nname: Bad_Name\ndescription: d\n---\n")
            .unwrap_err()
            .contains("lowercase"));
        assert!(parse("---\nname: ok\n---\nbody")
            .unwrap_err()
            .contains("no description"));
    }

    #[test]
    fn a_command_fills_in_its_arguments() {
        assert_eq!(
            command_message("Review $ARGUMENTS carefully.", "src/lib.rs"),
            "Review src/lib.rs carefully."
        );
        assert_eq!(
            command_message("Review.", "src/lib.rs"),
            "Review.\n\nsrc/lib.rs"
        );
        assert_eq!(command_message("Review.", ""), "Review.");
    }

    #[test]
    fn the_block_lists_each_skill_and_an_unknown_name_lists_them_all() {
        assert_eq!(prompt_block(&[]), None);
        let skills = vec![Skill {
            name: "release".into(),
            description: "Cut a release.".into(),
            dir: "/r/.agents/skills/release".into(),
        }];
        let block = prompt_block(&skills).unwrap();
        assert!(block.ends_with("\n- release: Cut a release. (/r/.agents/skills/release)"));
        assert_eq!(
            unknown(&skills, "x"),
            "error: there is no skill 'x'; the skills are: release"
        );
    }
}
