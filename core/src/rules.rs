//! Permission rules: `allow` and `deny` lists of `tool(pattern)` rules
//! (config `permissions`, `--allow RULE`, `--deny RULE`), decided before a
//! call would be asked about.
//!
//! * `shell(git status)`, `shell(cargo test *)`: the command, as one
//!   whole; `*` matches any text.
//! * `edit(src/**)`, `write(docs/*.md)`: the file, relative to the working
//!   tree (or absolute outside it); `*` stays within a folder, `**` crosses
//!   folders.
//! * `grant(/usr/share/doc/**)`: the absolute path asked for.
//! * `mcp__SERVER__TOOL` (no pattern), with `*` in the name.
//! * `web_search` (no pattern): the provider's own web search tool,
//!   offered to the model on the wires that have one (issue 44; see
//!   [`Rules::web_search`]). Without it the tool is not offered.
//! * `web_fetch(domain:docs.rs)`: the host of a URL `web_fetch` reads
//!   (`*` within a name's dots and beyond: `domain:*.rust-lang.org`); a
//!   rule naming a host also lets a private address of it be reached
//!   ([`crate::web::Access`]).
//!
//! A deny rule wins over every allow rule. A shell command is read as the
//! shell will run it (`rules/shell.rs`): quotes removed, split into its
//! simple commands (separators, groups, substitutions, `sh -c` strings),
//! each seen as written, by the base name of its binary and through the
//! wrappers that run another command (`env`, `command`, `exec`, `nice`,
//! `timeout`, `sudo`, `xargs`…), its words joined by one space. A deny
//! rule denies the command when it takes **any** view of any part (or the
//! line as written); the allow rules allow it only when **every** part
//! has a view some allow rule takes, with the redirections (other than to
//! `/dev/null` or another descriptor) and a background `&` spelled out in
//! the pattern. So `git status; rm -rf ~` does not ride on `shell(git
//! status)`, and `'rm'`, `\rm`, `/bin/rm`, `env rm`, `sh -c "rm …"`,
//! `{ rm; }` all meet `shell(rm *)`. A pattern ending in ` *` takes the
//! bare command too (`shell(cargo test *)` takes `cargo test`).
//!
//! A line the reading cannot be sure of (a command word built by an
//! expansion, a here-document…) is allowed by no rule; when a deny rule
//! about `shell` exists it is [`Verdict::Unclear`]: asked about at a
//! terminal and refused without one, whatever `--allow-shell` says, as it
//! may hide what the deny rule is about.

mod shell;

use globset::{Glob, GlobBuilder, GlobMatcher};

/// What a rule holds back.
#[derive(Clone, Debug)]
pub struct Rule {
    /// As written, for the log and messages.
    pub text: String,
    tool: Glob,
    tool_matcher: GlobMatcher,
    /// `None` for a rule of a whole tool (`mcp__s__t`).
    pattern: Option<(String, GlobMatcher)>,
    /// For a shell pattern ending in ` *`, the bare command before it.
    bare: Option<GlobMatcher>,
}

impl PartialEq for Rule {
    fn eq(&self, other: &Rule) -> bool {
        self.text == other.text && self.tool == other.tool
    }
}

impl Eq for Rule {}

/// The tools a rule may name, besides `mcp__…` ones.
pub const TOOLS: [&str; 6] = ["shell", "edit", "write", "grant", "web_fetch", "web_search"];

impl Rule {
    /// Parses `tool(pattern)` or `mcp__server__tool`; the error says what
    /// is wrong.
    pub fn parse(text: &str) -> Result<Rule, String> {
        let text = text.trim();
        let bad = |why: &str| format!("bad permission rule {text:?}: {why}");
        let (tool, pattern) = match text.split_once('(') {
            Some((tool, rest)) => {
                let pattern = rest
                    .strip_suffix(')')
                    .ok_or_else(|| bad("it does not end with )"))?;
                if pattern.trim().is_empty() {
                    return Err(bad("its pattern is empty"));
                }
                (tool.trim(), Some(pattern.trim()))
            }
            None => (text, None),
        };
        let mcp = tool.starts_with("mcp__");
        if !mcp && !TOOLS.contains(&tool) {
            return Err(bad(
                "name shell, edit, write, grant, web_fetch (with a pattern in parentheses), web_search or an mcp__SERVER__TOOL",
            ));
        }
        if tool == "web_search" && pattern.is_some() {
            return Err(bad("web_search takes no pattern: write it alone"));
        }
        if !mcp && pattern.is_none() && tool != "web_search" {
            return Err(bad(
                "give a pattern in parentheses, such as shell(git status)",
            ));
        }
        let tool_glob = Glob::new(tool).map_err(|e| bad(&e.to_string()))?;
        let pattern = match pattern {
            None => None,
            Some(p) => {
                // A path pattern keeps `*` within a folder; a command
                // pattern's `*` is any text.
                let paths = tool != "shell" && tool != "web_fetch";
                let glob = GlobBuilder::new(p)
                    .literal_separator(paths)
                    .backslash_escape(true)
                    .build()
                    .map_err(|e| bad(&e.to_string()))?;
                Some((p.to_owned(), glob.compile_matcher()))
            }
        };
        let bare = match pattern.as_ref() {
            Some((p, _)) if tool == "shell" => p
                .strip_suffix(" *")
                .map(|b| {
                    GlobBuilder::new(b.trim_end())
                        .backslash_escape(true)
                        .build()
                })
                .transpose()
                .map_err(|e| bad(&e.to_string()))?
                .map(|g| g.compile_matcher()),
            _ => None,
        };
        Ok(Rule {
            text: text.to_owned(),
            tool_matcher: tool_glob.compile_matcher(),
            tool: tool_glob,
            pattern,
            bare,
        })
    }

    /// Whether the rule is about `tool` and its pattern takes `subject`
    /// whole.
    fn takes(&self, tool: &str, subject: &str) -> bool {
        if !self.tool_matcher.is_match(tool) {
            return false;
        }
        match &self.pattern {
            None => true,
            Some((_, glob)) => {
                glob.is_match(subject) || self.bare.as_ref().is_some_and(|b| b.is_match(subject))
            }
        }
    }

    /// Whether this allow rule allows the simple command `part`: a view
    /// an allow rule may take, the pattern spelling out each redirection
    /// and `&` (which only the view as written shows).
    fn allows(&self, part: &shell::Simple) -> bool {
        let pattern = self.pattern.as_ref().map_or("", |(p, _)| p.as_str());
        if part.controls.iter().any(|c| !pattern.contains(c)) {
            return false;
        }
        let views = if part.controls.is_empty() {
            &part.views[..]
        } else {
            &part.views[..1]
        };
        views
            .iter()
            .any(|v| v.allow && self.takes("shell", &v.text))
    }
}

/// The rules of a session.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rules {
    /// Rules whose calls run without asking.
    pub allow: Vec<Rule>,
    /// Rules whose calls are refused (they win over `allow`).
    pub deny: Vec<Rule>,
}

/// What the rules say of a call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Allowed by this rule: it runs without asking.
    Allow(String),
    /// Denied by this rule: it does not run, nor is anyone asked.
    Deny(String),
    /// No rule speaks: asked, or allowed by a flag, as before.
    Silent,
    /// A shell command read with doubt (why) while a deny rule about
    /// `shell` exists: asked at a terminal, refused without one, never
    /// run by a flag or an "always".
    Unclear(String),
}

impl Rules {
    /// Parses the `allow` and `deny` lists.
    pub fn parse(allow: &[String], deny: &[String]) -> Result<Rules, String> {
        let all = |list: &[String]| {
            list.iter()
                .map(|r| Rule::parse(r))
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(Rules {
            allow: all(allow)?,
            deny: all(deny)?,
        })
    }

    /// Whether there is no rule at all.
    pub fn is_empty(&self) -> bool {
        self.allow.is_empty() && self.deny.is_empty()
    }

    /// Whether the provider's web search tool is offered: an allow rule
    /// names `web_search` and no deny rule does.
    pub fn web_search(&self) -> bool {
        matches!(self.decide("web_search", ""), Verdict::Allow(_))
    }

    /// What the rules say of a call of `tool` on `subject` (the command of
    /// a `shell` call, the path of an `edit`, `write` or `grant`; empty for
    /// an MCP tool). A deny rule wins.
    pub fn decide(&self, tool: &str, subject: &str) -> Verdict {
        if tool == "shell" {
            return self.decide_shell(subject);
        }
        if let Some(rule) = self.deny.iter().find(|r| r.takes(tool, subject)) {
            return Verdict::Deny(rule.text.clone());
        }
        match self.allow.iter().find(|r| r.takes(tool, subject)) {
            Some(rule) => Verdict::Allow(rule.text.clone()),
            None => Verdict::Silent,
        }
    }

    /// [`Rules::decide`] for a shell command: read as the shell will run
    /// it; deny on any view of any part, allow when every part is.
    fn decide_shell(&self, command: &str) -> Verdict {
        let line = shell::read(command);
        let raw = command.trim();
        let denied = self.deny.iter().find(|r| {
            r.takes("shell", raw)
                || line
                    .commands
                    .iter()
                    .flat_map(|c| &c.views)
                    .any(|v| r.takes("shell", &v.text))
        });
        if let Some(rule) = denied {
            return Verdict::Deny(rule.text.clone());
        }
        if let Some(why) = line.unclear {
            return if self.deny.iter().any(|r| r.tool_matcher.is_match("shell")) {
                Verdict::Unclear(why)
            } else {
                Verdict::Silent
            };
        }
        let mut first = None;
        for part in &line.commands {
            match self.allow.iter().find(|r| r.allows(part)) {
                Some(rule) => {
                    first.get_or_insert(rule);
                }
                None => return Verdict::Silent,
            }
        }
        match first {
            Some(rule) => Verdict::Allow(rule.text.clone()),
            None => Verdict::Silent,
        }
    }
}

/// The result of a call refused because it could not be read with
/// certainty while a deny rule stands (and nobody could be asked).
pub fn unclear(why: &str) -> String {
    format!(
        "error: not run: this command cannot be checked against the user's deny rules ({why}); \
         write it without that"
    )
}

/// The result of a call a deny rule refused.
pub fn denied(rule: &str) -> String {
    format!("error: not run: the user's permission rule {rule} denies this call")
}

/// Whether a tool result is one [`denied`] wrote: the front shows such a
/// call, since the user's own rule refused it.
pub fn is_denied(result: &str) -> bool {
    result.starts_with("error: not run: the user's permission rule ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use quickcheck::{quickcheck, TestResult};

    fn rules(allow: &[&str], deny: &[&str]) -> Rules {
        let own = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        Rules::parse(&own(allow), &own(deny)).unwrap()
    }

    #[test]
    fn rules_parse_and_say_what_is_wrong() {
        for good in [
            "shell(git status)",
            "edit(src/**)",
            "write(docs/*.md)",
            "grant(/usr/share/doc/**)",
            "mcp__git__*",
        ] {
            assert!(Rule::parse(good).is_ok(), "{good}");
        }
        for (bad, why) in [
            ("shell", "give a pattern"),
            ("shell(git status", "does not end with )"),
            ("shell()", "pattern is empty"),
            ("bash(ls)", "name shell, edit"),
        ] {
            let err = Rule::parse(bad).unwrap_err();
            assert!(err.contains(why), "{bad}: {err}");
        }
    }

    #[test]
    fn shell_rules_take_one_simple_command() {
        let r = rules(
            &["shell(git status)", "shell(cargo test *)"],
            &["shell(rm *)"],
        );
        assert_eq!(
            r.decide("shell", "git status"),
            Verdict::Allow("shell(git status)".into())
        );
        assert_eq!(
            r.decide("shell", "  git status "),
            Verdict::Allow("shell(git status)".into())
        );
        assert_eq!(
            r.decide("shell", "cargo test -p core"),
            Verdict::Allow("shell(cargo test *)".into())
        );
        for riding in [
            "git status; touch x",
            "git status && rm -rf ~",
            "git status | sh",
            "git status\ntouch x",
            "cargo test $(rm -rf ~)",
            "cargo test `rm -rf ~`",
            "cargo test > /etc/passwd",
            "git status &",
        ] {
            assert_ne!(
                r.decide("shell", riding),
                Verdict::Allow("shell(git status)".into()),
                "{riding:?}"
            );
            assert!(
                !matches!(r.decide("shell", riding), Verdict::Allow(_)),
                "{riding:?}"
            );
        }
        assert_eq!(r.decide("shell", "git log"), Verdict::Silent);
        for denied in [
            "rm -rf ~",
            "echo hi; rm -rf ~",
            "echo $(rm -rf ~)",
            "true && rm x",
        ] {
            assert_eq!(
                r.decide("shell", denied),
                Verdict::Deny("shell(rm *)".into()),
                "{denied:?}"
            );
        }
    }

    /// The spellings of `rm` a hostile command may use (issue 42, item 5),
    /// shared with the end-to-end test: each is denied by `shell(rm *)`,
    /// even under `shell(*)`.
    fn rm_spellings() -> Vec<String> {
        serde_json::from_str(include_str!("../../fixtures/rules/rm-spellings.json")).unwrap()
    }

    #[test]
    fn every_spelling_of_a_denied_command_is_denied() {
        let r = rules(&["shell(*)"], &["shell(rm *)"]);
        let spellings = rm_spellings();
        assert_eq!(spellings.len(), 40);
        for spelling in spellings {
            assert_eq!(
                r.decide("shell", &spelling),
                Verdict::Deny("shell(rm *)".into()),
                "{spelling:?}"
            );
        }
        for more in [
            "find . -name x -exec rm {} \\;",
            "cat <(rm x)",
            "echo \"$(rm x)\"",
            "x=$(rm y)",
            "2>/dev/null rm x",
            "while true; do rm x; done",
            "! rm x",
            "env -S 'rm x'",
            "busybox rm x",
        ] {
            assert_eq!(
                r.decide("shell", more),
                Verdict::Deny("shell(rm *)".into()),
                "{more:?}"
            );
        }
        let push = rules(&[], &["shell(git push *)"]);
        for spelling in ["git  push", "git\tpush origin", "git push", "'git' push -f"] {
            assert_eq!(
                push.decide("shell", spelling),
                Verdict::Deny("shell(git push *)".into()),
                "{spelling:?}"
            );
        }
        // What cannot be read with certainty is not run on a flag.
        for doubt in ["$X -rf x", "$(echo rm) x", "r? x", "cat <<E\nhello\nE"] {
            assert!(
                matches!(r.decide("shell", doubt), Verdict::Unclear(_)),
                "{doubt:?}"
            );
        }
        assert_eq!(
            rules(&["shell(*)"], &[]).decide("shell", "$X"),
            Verdict::Silent
        );
        // Look-alikes are not denied.
        for fine in ["echo rm x", "rmdir x", "grep -r 'rm -rf' .", "git rm x"] {
            assert!(
                matches!(r.decide("shell", fine), Verdict::Allow(_)),
                "{fine:?}"
            );
        }
    }

    #[test]
    fn allow_rules_take_every_part_and_the_bare_command() {
        let r = rules(
            &["shell(cargo test *)", "shell(git status)", "shell(grep *)"],
            &[],
        );
        let allowed = |c: &str| matches!(r.decide("shell", c), Verdict::Allow(_));
        for yes in [
            "cargo test",
            "cargo  test -p x",
            "'cargo' test",
            "git status && cargo test",
            "git status | grep x",
            "cargo test 2>&1",
            "cargo test > /dev/null",
            "timeout 60 cargo test",
            "env cargo test",
            "{ git status; }",
        ] {
            assert!(allowed(yes), "{yes:?}");
        }
        for no in [
            "cargo testing",
            "git status; ls",
            "./git status",
            "PATH=. git status",
            "LD_PRELOAD=x.so git status",
            "sudo git status",
            "git status > out",
            "git status &",
            "sh -c 'git status'",
            "cargo test $(ls)",
            "grep x <(ls)",
            "echo x | xargs git status",
        ] {
            assert!(!allowed(no), "{no:?}");
        }
    }

    #[test]
    fn path_rules_keep_star_within_a_folder() {
        let r = rules(
            &[
                "edit(src/**)",
                "write(docs/*.md)",
                "grant(/usr/share/doc/**)",
            ],
            &["edit(src/secret/**)"],
        );
        assert_eq!(
            r.decide("edit", "src/a/b.rs"),
            Verdict::Allow("edit(src/**)".into())
        );
        assert_eq!(
            r.decide("edit", "src/secret/k.rs"),
            Verdict::Deny("edit(src/secret/**)".into())
        );
        assert_eq!(
            r.decide("write", "docs/a.md"),
            Verdict::Allow("write(docs/*.md)".into())
        );
        assert_eq!(r.decide("write", "docs/deep/a.md"), Verdict::Silent);
        assert_eq!(
            r.decide("edit", "docs/a.md"),
            Verdict::Silent,
            "a rule is one tool's"
        );
        assert_eq!(
            r.decide("grant", "/usr/share/doc/git/README"),
            Verdict::Allow("grant(/usr/share/doc/**)".into())
        );
        let mcp = rules(&["mcp__git__*"], &["mcp__git__push"]);
        assert_eq!(
            mcp.decide("mcp__git__log", ""),
            Verdict::Allow("mcp__git__*".into())
        );
        assert_eq!(
            mcp.decide("mcp__git__push", ""),
            Verdict::Deny("mcp__git__push".into())
        );
    }

    /// Deny always wins: whatever allows a call, a deny rule taking it
    /// denies it.
    #[test]
    fn deny_always_wins() {
        fn law(command: String) -> TestResult {
            if command.trim().is_empty() {
                return TestResult::discard();
            }
            let word = command
                .split_whitespace()
                .next()
                .unwrap_or("x")
                .replace(['*', '?', '[', ']', '{', '}', '\\', '(', ')'], "");
            if word.is_empty() {
                return TestResult::discard();
            }
            let r = rules(&["shell(*)"], &[&format!("shell({word}*)")]);
            TestResult::from_bool(
                matches!(r.decide("shell", &command), Verdict::Deny(_))
                    || !command.trim_start().starts_with(&word),
            )
        }
        quickcheck(law as fn(String) -> TestResult);
    }

    /// An allow rule never lets a separator through: a command made of an
    /// allowed one, a separator and anything is never allowed by it.
    #[test]
    fn an_allowed_command_never_carries_another() {
        fn law(tail: String, sep: usize) -> TestResult {
            if tail.trim().is_empty() {
                // "git status\n" is git status alone.
                return TestResult::discard();
            }
            if tail.lines().all(|l| {
                let l = l.trim();
                l.is_empty() || l.starts_with('#')
            }) {
                // "git status;# a note": a comment runs nothing.
                return TestResult::discard();
            }
            let seps = [";", "&&", "||", "|", "\n", "&", "$(", "`"];
            let command = format!("git status{}{tail}", seps[sep % seps.len()]);
            let r = rules(&["shell(git status*)"], &[]);
            TestResult::from_bool(!matches!(r.decide("shell", &command), Verdict::Allow(_)))
        }
        // Seeded, as the laws are (its shrunk failures are kept below).
        quickcheck::QuickCheck::new()
            .rng(quickcheck::Gen::from_size_and_seed(100, 0x5eed_1a35))
            .quickcheck(law as fn(String, usize) -> TestResult);
    }

    /// The law's shrunk failures: `git status;!` and `git status;(` were
    /// allowed by `shell(git status*)` (a `!` alone was read as nothing, an
    /// unclosed `(` as no group).
    #[test]
    fn a_lone_negation_after_an_allowed_command_is_not_allowed() {
        let r = rules(&["shell(git status*)"], &[]);
        for command in [
            "git status;!",
            "git status && !",
            "git status\n!",
            "git status;(",
        ] {
            assert!(
                !matches!(r.decide("shell", command), Verdict::Allow(_)),
                "{command}"
            );
        }
    }

    /// A closing word with no opener (`git status;}`, found by the law
    /// unseeded) is a syntax error sh stops at, not nothing; an opener
    /// left open too; and a function's body runs under the name it
    /// defines, so `function` is unclear. A group that pairs stays allowed.
    #[test]
    fn compound_commands_pair_or_are_unclear() {
        let r = rules(&["shell(git status*)"], &[]);
        for command in [
            "git status;}",
            "git status;fi",
            "git status\ndone",
            "git status; { git status",
            "git status; if git status; then git status",
            "git status; function git { rm -rf ~; }; git status",
            "git status; if git status; then git status; done",
        ] {
            assert!(
                !matches!(r.decide("shell", command), Verdict::Allow(_)),
                "{command}"
            );
        }
        for command in ["{ git status; }", "git status; { git status; }"] {
            assert!(
                matches!(r.decide("shell", command), Verdict::Allow(_)),
                "{command}"
            );
        }
    }
}
