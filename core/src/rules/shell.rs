//! A shell command line read the way `sh` or `bash` will run it, for the
//! permission rules: the simple commands it holds, each seen as written
//! and as what it runs in the end.
//!
//! [`read`] takes quoting (`'rm'`, `"rm"`, `\rm`, `$'\x72m'`), line
//! continuations, separators (`;`, `&`, `&&`, `||`, `|`, `|&`, newlines,
//! `(`…`)`), groups and keywords (`{ … }`, `if`/`then`/`while`/`do`/`!`/
//! `time`…), assignments (`FOO=1 rm`), redirections (`>out rm`),
//! substitutions (`$(…)`, backticks, `<(…)`, `>(…)`, inside double quotes
//! too), and it looks through the wrappers that run another command:
//!
//! * transparent ones, whose inner command an allow rule may take as well:
//!   `command`, `exec`, `builtin`, `nice`, `nohup`, `timeout`, `time`,
//!   `env` without assignments or `-S`;
//! * others, whose inner command is seen by deny rules only: `env` with
//!   assignments, `sudo`, `doas`, `xargs`, `stdbuf`, `setsid`, `busybox`;
//! * command strings, read again as command lines of their own (each
//!   command in them is a part of the line): `sh -c`, `bash -c` (and dash,
//!   zsh, ksh, ash), `eval`, `env -S`, and `find … -exec … ;`.
//!
//! A path to a binary is also seen by its base name (`/bin/rm` as `rm`),
//! for deny rules; an allow rule takes it as written only, since `./git`
//! is not `git`. What it cannot be sure of makes the line
//! [`Line::unclear`]: a command word built by an expansion (`$X`, `$(…)`,
//! a glob, a brace), here-documents, `case`, arithmetic, an unmatched
//! quote, nesting deeper than [`DEPTH`]. The rules never allow such a line
//! by themselves, and deny rules still see every part that was read.

/// How deep command strings inside command strings are read (`sh -c
/// "sh -c '…'"`); deeper is unclear.
pub(crate) const DEPTH: usize = 8;

/// A command line, read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Line {
    /// Its simple commands, in substitutions and command strings too.
    pub commands: Vec<Simple>,
    /// Why the reading cannot be sure of the whole line, when it cannot.
    pub unclear: Option<String>,
    /// The closing words the compound commands open so far wait for
    /// (`fi` after `if`, `done` after `do`, `}` after `{`), innermost
    /// last: one closing nothing, or one left waiting, is unclear.
    open: Vec<&'static str>,
}

/// One simple command.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Simple {
    /// The ways to see it: as written, then through each wrapper.
    pub views: Vec<View>,
    /// What it does besides running (`>` or `<` for a redirection, `&`
    /// when it runs in the background): an allow rule must spell each out,
    /// and only its first view (as written, these included) can be
    /// allowed.
    pub controls: Vec<&'static str>,
}

/// A simple command seen one way: its words after quote removal, joined
/// by one space.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct View {
    pub text: String,
    /// Whether an allow rule taking this view allows the command (false
    /// for a base name, past assignments, under `sudo`…).
    pub allow: bool,
}

/// Reads `src` as the shell will.
pub(crate) fn read(src: &str) -> Line {
    let mut line = Line::default();
    read_into(src, 0, &mut line);
    line
}

fn read_into(src: &str, depth: usize, line: &mut Line) {
    if depth > DEPTH {
        unclear(line, "command strings nest too deep");
        return;
    }
    let mut lexer = Lexer {
        chars: src.chars().collect(),
        at: 0,
        tokens: Vec::new(),
        nested: Vec::new(),
        unclear: None,
    };
    lexer.run();
    if let Some(why) = lexer.unclear.take() {
        unclear(line, &why);
    }
    for inner in std::mem::take(&mut lexer.nested) {
        read_into(&inner, depth + 1, line);
    }
    // Each command string pairs its own compound commands.
    let outer = std::mem::take(&mut line.open);
    let mut words: Vec<Word> = Vec::new();
    let mut controls = Controls::default();
    let mut tokens = lexer.tokens.into_iter().peekable();
    // What came last: whether a command may end here (`a ;`, not `;`
    // alone, nor `a && ;`), and whether one must follow (`a &&`).
    let mut may_end = false;
    let mut must_follow = false;
    // Parentheses open now: sh refuses a script where they do not pair.
    let mut groups: usize = 0;
    while let Some(token) = tokens.next() {
        match &token {
            Token::Separator(Sep::Open) => groups += 1,
            Token::Separator(Sep::Close) if groups == 0 => {
                unclear(line, "a `)` that closes nothing");
            }
            Token::Separator(Sep::Close) => groups -= 1,
            _ => {}
        }
        let empty = words.is_empty() && controls.kinds.is_empty();
        match &token {
            Token::Word(_) | Token::Redirect(_) => must_follow = false,
            Token::Separator(Sep::Newline | Sep::Open) => {}
            Token::Separator(Sep::Close) => must_follow = false,
            Token::Separator(Sep::Semicolon | Sep::Joins) | Token::Background => {
                if empty && !may_end {
                    unclear(line, "a separator with no command before it");
                }
            }
        }
        may_end = match &token {
            Token::Separator(Sep::Close) => true,
            Token::Separator(_) | Token::Background => false,
            _ => true,
        };
        if let Token::Separator(Sep::Joins) = token {
            must_follow = true;
        }
        match token {
            Token::Word(w) => {
                controls.kinds.extend(&w.substituted);
                words.push(w);
            }
            Token::Redirect(op) => {
                // Its target is no word of the command.
                let target = match tokens.peek() {
                    Some(Token::Word(_)) => match tokens.next() {
                        Some(Token::Word(w)) => {
                            controls.kinds.extend(&w.substituted);
                            w.text
                        }
                        _ => String::new(),
                    },
                    _ => String::new(),
                };
                // Copying a descriptor or writing to /dev/null changes
                // nothing.
                let dup = op.ends_with('&') && (target == "-" || target.parse::<u32>().is_ok());
                if !dup && target != "/dev/null" {
                    let reads = op.starts_with('<') && op != "<>";
                    controls.kinds.push(if reads { "<" } else { ">" });
                    controls.text.push_str(&format!(" {op} {target}"));
                }
            }
            Token::Background => {
                controls.kinds.push("&");
                controls.text.push_str(" &");
                finish(std::mem::take(&mut words), &mut controls, depth, line);
            }
            Token::Separator(_) => finish(std::mem::take(&mut words), &mut controls, depth, line),
        }
    }
    if must_follow && words.is_empty() {
        unclear(line, "no command after `&&`, `||` or `|`");
    }
    if groups > 0 {
        unclear(line, "a `(` that is not closed");
    }
    finish(words, &mut controls, depth, line);
    if let Some(waits) = line.open.last() {
        let why = format!("a compound command that no `{waits}` closes");
        unclear(line, &why);
    }
    line.open = outer;
}

/// The redirections and `&` of the simple command being read.
#[derive(Default)]
struct Controls {
    kinds: Vec<&'static str>,
    /// As written after its words (` > out`, ` &`).
    text: String,
}

fn unclear(line: &mut Line, why: &str) {
    if line.unclear.is_none() {
        line.unclear = Some(why.to_owned());
    }
}

/// A word after quote removal.
#[derive(Clone, Debug, Default)]
struct Word {
    text: String,
    /// Whether any of it was quoted or escaped.
    quoted: bool,
    /// Whether an expansion builds part of it (`$X`, `$(…)`, `` `…` ``).
    dynamic: bool,
    /// Whether it holds an unquoted glob or brace (`*`, `?`, `[`, `{`).
    glob: bool,
    /// Whether it is an assignment (`NAME=…` with the name unquoted).
    assign: bool,
    /// The substitutions in it (`$(`, `` ` ``, `<(`, `>(`): each a
    /// control an allow rule must spell out.
    substituted: Vec<&'static str>,
}

enum Token {
    Word(Word),
    Redirect(&'static str),
    Background,
    Separator(Sep),
}

/// What separates commands.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Sep {
    /// `;`
    Semicolon,
    /// A newline.
    Newline,
    /// `&&`, `||`, `|`, `|&`: a command must follow.
    Joins,
    /// `(`
    Open,
    /// `)`
    Close,
}

/// Reserved words that begin or join a command list: the command follows.
const LEADING: [&str; 9] = [
    "if", "then", "else", "elif", "do", "while", "until", "!", "{",
];
/// Reserved words that end one: nothing runs by them.
const CLOSING: [&str; 4] = ["fi", "done", "}", "esac"];

/// Ends a simple command: its views and parts go to `line`.
fn finish(words: Vec<Word>, controls: &mut Controls, depth: usize, line: &mut Line) {
    let Controls {
        kinds: controls,
        text: written,
    } = std::mem::take(controls);
    let mut rest = &words[..];
    // Keywords (unquoted) lead into the command.
    let mut negated = false;
    while let Some(w) = rest.first() {
        if !w.quoted && LEADING.contains(&w.text.as_str()) {
            negated |= w.text == "!";
            match w.text.as_str() {
                "if" => line.open.push("fi"),
                "do" => line.open.push("done"),
                "{" => line.open.push("}"),
                _ => {}
            }
            rest = &rest[1..];
        } else {
            break;
        }
    }
    // A `!` with no pipeline after it: sh refuses it, bash runs nothing;
    // neither is a command a rule can vouch for.
    if negated && rest.is_empty() {
        unclear(line, "`!` with no command after it");
    }
    if let Some(w) = rest.first().filter(|w| !w.quoted) {
        match w.text.as_str() {
            c if CLOSING.contains(&c) => {
                if line.open.last() == Some(&c) {
                    line.open.pop();
                } else {
                    unclear(line, &format!("`{c}` that closes nothing"));
                }
                rest = &rest[1..];
            }
            // `for x in a b`, `select`: a header, nothing runs.
            "for" | "select" => rest = &[],
            "case" | "[[" | "((" | "coproc" => unclear(line, &format!("`{}`", w.text)),
            // A function's body runs under the name it defines, which a
            // rule for another command would then let through.
            "function" => unclear(line, "`function`"),
            _ => {}
        }
    }
    if rest.is_empty() {
        if !controls.is_empty() {
            line.commands.push(Simple {
                views: vec![View {
                    text: written.trim_start().to_owned(),
                    allow: true,
                }],
                controls,
            });
        }
        return;
    }
    let mut simple = Simple {
        views: vec![View {
            text: join(rest) + &written,
            allow: true,
        }],
        controls,
    };
    let assigned = rest.iter().take_while(|w| w.assign).count();
    see(&rest[assigned..], assigned == 0, depth, &mut simple, line);
    line.commands.push(simple);
}

fn join(words: &[Word]) -> String {
    let texts: Vec<&str> = words.iter().map(|w| w.text.as_str()).collect();
    texts.join(" ")
}

/// Adds the views of the command `words` (past assignments) to `simple`,
/// through wrappers; `allow` says whether an allow rule may take them.
fn see(words: &[Word], allow: bool, depth: usize, simple: &mut Simple, line: &mut Line) {
    let Some(first) = words.first() else {
        return;
    };
    if depth > DEPTH {
        unclear(line, "wrappers nest too deep");
        return;
    }
    if first.dynamic || first.glob {
        unclear(
            line,
            &format!("the command word {:?} is built by an expansion", first.text),
        );
    }
    let text = join(words);
    let view = |text: String, allow: bool| View { text, allow };
    if !simple
        .views
        .iter()
        .any(|v| v.text == text && v.allow == allow)
    {
        simple.views.push(view(text, allow));
    }
    let base = first.text.rsplit('/').next().unwrap_or("");
    if base != first.text && !base.is_empty() {
        let mut by_name = base.to_owned();
        for w in &words[1..] {
            by_name.push(' ');
            by_name.push_str(&w.text);
        }
        simple.views.push(view(by_name, false));
    }
    let args = &words[1..];
    let inner = |skip: usize| &args[skip.min(args.len())..];
    match base {
        "command" | "exec" | "builtin" | "nice" | "nohup" | "time" => {
            let takes = match base {
                "exec" => &["-a"][..],
                "nice" => &["-n", "--adjustment"][..],
                _ => &[][..],
            };
            let skip = options(args, takes);
            see(inner(skip), allow, depth + 1, simple, line);
        }
        "timeout" => {
            let skip = options(args, &["-s", "-k", "--signal", "--kill-after"]);
            // Then the duration.
            see(inner(skip + 1), allow, depth + 1, simple, line);
        }
        "env" => see_env(args, allow, depth, simple, line),
        "sudo" | "doas" => {
            let skip = options(
                args,
                &[
                    "-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T", "-R",
                ],
            );
            let assigned = inner(skip).iter().take_while(|w| w.assign).count();
            see(inner(skip + assigned), false, depth + 1, simple, line);
        }
        "xargs" => {
            let skip = options(
                args,
                &["-I", "-L", "-n", "-P", "-s", "-d", "-E", "-a", "--arg-file"],
            );
            see(inner(skip), false, depth + 1, simple, line);
        }
        "stdbuf" => {
            let skip = options(args, &["-i", "-o", "-e"]);
            see(inner(skip), false, depth + 1, simple, line);
        }
        "setsid" | "busybox" => {
            let skip = options(args, &[]);
            see(inner(skip), false, depth + 1, simple, line);
        }
        "sh" | "bash" | "dash" | "zsh" | "ksh" | "ash" | "mksh" | "posh" => {
            see_shell(args, depth, line)
        }
        "eval" => read_into(&join(args), depth + 1, line),
        "find" => see_find(args, depth, line),
        _ => {}
    }
}

/// `env [OPTIONS] [NAME=VALUE…] COMMAND…`: the command it runs (allowed as
/// a prefix only when `env` neither sets nor unsets anything), or the string
/// of `-S` read as a line of its own.
fn see_env(args: &[Word], allow: bool, depth: usize, simple: &mut Simple, line: &mut Line) {
    let inner = |skip: usize| &args[skip.min(args.len())..];
    let mut skip = 0;
    let mut plain = true;
    while let Some(w) = args.get(skip) {
        let t = w.text.as_str();
        if t == "--" {
            skip += 1;
            break;
        }
        if t == "-S" || t == "--split-string" || t.starts_with("-S") {
            let s = if t.len() > 2 && !t.starts_with("--") {
                t[2..].to_owned()
            } else {
                skip += 1;
                args.get(skip).map(|w| w.text.clone()).unwrap_or_default()
            };
            let mut rest = s;
            for w in inner(skip + 1) {
                rest.push(' ');
                rest.push_str(&w.text);
            }
            read_into(&rest, depth + 1, line);
            return;
        }
        if let Some(s) = t.strip_prefix("--split-string=") {
            read_into(s, depth + 1, line);
            return;
        }
        if !t.starts_with('-') || t == "-" {
            break;
        }
        plain = false;
        skip += 1;
        if ["-u", "-C", "--unset", "--chdir"].contains(&t) {
            skip += 1;
        }
    }
    let assigned = inner(skip).iter().take_while(|w| w.assign).count();
    let plain = plain && assigned == 0;
    see(
        inner(skip + assigned),
        allow && plain,
        depth + 1,
        simple,
        line,
    );
}

/// A shell run with arguments: the string of its `-c`, read as a line of
/// its own.
fn see_shell(args: &[Word], depth: usize, line: &mut Line) {
    let mut skip = 0;
    let mut string = false;
    while let Some(w) = args.get(skip) {
        let t = w.text.as_str();
        if t == "--" || t == "-" {
            skip += 1;
            break;
        }
        if t.starts_with("--") {
            skip += 1;
            continue;
        }
        if !(t.starts_with('-') || t.starts_with('+')) {
            break;
        }
        skip += 1;
        if t.contains('c') && t.starts_with('-') {
            string = true;
        }
        if t.ends_with('o') || t.ends_with('O') {
            skip += 1;
        }
    }
    if string {
        match args.get(skip) {
            Some(s) => read_into(&s.text, depth + 1, line),
            None => unclear(line, "`-c` without a command string"),
        }
    }
}

/// `find … -exec COMMAND… ;` (and `-execdir`, `-ok`, `-okdir`): each
/// command it runs, a command of the line of its own.
fn see_find(args: &[Word], depth: usize, line: &mut Line) {
    let mut i = 0;
    while i < args.len() {
        let t = args[i].text.as_str();
        if ["-exec", "-execdir", "-ok", "-okdir"].contains(&t) {
            let end = args[i + 1..]
                .iter()
                .position(|w| w.text == ";" || w.text == "+")
                .map_or(args.len(), |p| i + 1 + p);
            let mut part = Simple::default();
            see(&args[i + 1..end], true, depth + 1, &mut part, line);
            part.views.retain(|v| !v.text.is_empty());
            if !part.views.is_empty() {
                // Its first view is the command as written.
                part.views[0].allow = true;
                line.commands.push(part);
            }
            i = end;
        }
        i += 1;
    }
}

/// How many leading words of `args` are options (and their values, for
/// the options in `takes`), `--` included.
fn options(args: &[Word], takes: &[&str]) -> usize {
    let mut skip = 0;
    while let Some(w) = args.get(skip) {
        let t = w.text.as_str();
        if t == "--" {
            return skip + 1;
        }
        if !t.starts_with('-') || t == "-" {
            break;
        }
        skip += 1;
        if takes.contains(&t) {
            skip += 1;
        }
    }
    skip
}

struct Lexer {
    chars: Vec<char>,
    at: usize,
    tokens: Vec<Token>,
    /// The command lines inside substitutions, read after this one.
    nested: Vec<String>,
    unclear: Option<String>,
}

impl Lexer {
    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.at + ahead).copied()
    }

    fn unsure(&mut self, why: &str) {
        if self.unclear.is_none() {
            self.unclear = Some(why.to_owned());
        }
    }

    fn run(&mut self) {
        let mut word: Option<Word> = None;
        while let Some(c) = self.peek(0) {
            match c {
                ' ' | '\t' => {
                    self.end(&mut word);
                    self.at += 1;
                }
                '\n' | ';' | '(' | ')' => {
                    self.end(&mut word);
                    if c == ';' && self.peek(1) == Some(';') {
                        self.unsure("`;;`");
                    }
                    self.tokens.push(Token::Separator(match c {
                        '\n' => Sep::Newline,
                        ';' => Sep::Semicolon,
                        '(' => Sep::Open,
                        _ => Sep::Close,
                    }));
                    self.at += 1;
                }
                '#' if word.is_none() => {
                    while self.peek(0).is_some_and(|c| c != '\n') {
                        self.at += 1;
                    }
                }
                '&' => {
                    self.end(&mut word);
                    match self.peek(1) {
                        Some('&') => {
                            self.tokens.push(Token::Separator(Sep::Joins));
                            self.at += 2;
                        }
                        Some('>') => {
                            self.at += 2;
                            let op = if self.peek(0) == Some('>') {
                                self.at += 1;
                                "&>>"
                            } else {
                                "&>"
                            };
                            self.tokens.push(Token::Redirect(op));
                        }
                        _ => {
                            self.tokens.push(Token::Background);
                            self.at += 1;
                        }
                    }
                }
                '|' => {
                    self.end(&mut word);
                    self.at += if matches!(self.peek(1), Some('|' | '&')) {
                        2
                    } else {
                        1
                    };
                    self.tokens.push(Token::Separator(Sep::Joins));
                }
                '<' | '>' => {
                    if self.peek(1) == Some('(') {
                        // A process substitution: a word naming a pipe.
                        self.at += 1;
                        let w = word.get_or_insert_with(Word::default);
                        w.substituted.push(if c == '<' { "<(" } else { ">(" });
                        self.substitution(w);
                        continue;
                    }
                    // `2>`: the digits name a descriptor, not a word.
                    if word
                        .as_ref()
                        .is_some_and(|w| !w.quoted && w.text.chars().all(|c| c.is_ascii_digit()))
                    {
                        word = None;
                    }
                    self.end(&mut word);
                    self.redirect(c);
                }
                _ => self.word_char(&mut word),
            }
        }
        self.end(&mut word);
    }

    fn end(&mut self, word: &mut Option<Word>) {
        if let Some(w) = word.take() {
            self.tokens.push(Token::Word(w));
        }
    }

    fn redirect(&mut self, c: char) {
        self.at += 1;
        let op = match (c, self.peek(0)) {
            ('<', Some('<')) if self.peek(1) == Some('<') => "<<<",
            ('<', Some('<')) => {
                self.unsure("a here-document");
                "<<"
            }
            ('<', Some('&')) => "<&",
            ('<', Some('>')) => "<>",
            ('<', _) => "<",
            (_, Some('>')) => ">>",
            (_, Some('&')) => ">&",
            (_, Some('|')) => ">|",
            _ => ">",
        };
        self.at += op.len() - 1;
        self.tokens.push(Token::Redirect(op));
    }

    /// One character of a word, or a quoted or expanded stretch.
    fn word_char(&mut self, word: &mut Option<Word>) {
        let c = self.chars[self.at];
        let w = word.get_or_insert_with(Word::default);
        match c {
            '\\' => {
                self.at += 1;
                match self.peek(0) {
                    Some('\n') => self.at += 1,
                    Some(e) => {
                        w.text.push(e);
                        w.quoted = true;
                        self.at += 1;
                    }
                    None => {}
                }
            }
            '\'' => {
                self.at += 1;
                w.quoted = true;
                match self.chars[self.at..].iter().position(|&c| c == '\'') {
                    Some(n) => {
                        w.text.extend(&self.chars[self.at..self.at + n]);
                        self.at += n + 1;
                    }
                    None => {
                        self.unsure("an unmatched '");
                        w.text.extend(&self.chars[self.at..]);
                        self.at = self.chars.len();
                    }
                }
            }
            '"' => {
                self.at += 1;
                w.quoted = true;
                self.double_quoted(w);
            }
            '$' => self.dollar(w),
            '`' => self.backticks(w),
            '=' if !w.quoted
                && !w.dynamic
                && !w.assign
                && !w.text.is_empty()
                && !w.text.starts_with(|c: char| c.is_ascii_digit())
                && w.text
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_') =>
            {
                w.assign = true;
                w.text.push(c);
                self.at += 1;
            }
            _ => {
                if matches!(c, '*' | '?' | '[' | '{') {
                    w.glob = true;
                }
                w.text.push(c);
                self.at += 1;
            }
        }
    }

    fn double_quoted(&mut self, w: &mut Word) {
        while let Some(c) = self.peek(0) {
            match c {
                '"' => {
                    self.at += 1;
                    return;
                }
                '\\' => {
                    match self.peek(1) {
                        Some('\n') => {}
                        Some(e @ ('$' | '`' | '"' | '\\')) => w.text.push(e),
                        Some(e) => {
                            w.text.push('\\');
                            w.text.push(e);
                        }
                        None => w.text.push('\\'),
                    }
                    self.at += 2;
                }
                '$' => self.dollar(w),
                '`' => self.backticks(w),
                _ => {
                    w.text.push(c);
                    self.at += 1;
                }
            }
        }
        self.unsure("an unmatched \"");
    }

    /// `$…` at `self.at`.
    fn dollar(&mut self, w: &mut Word) {
        match self.peek(1) {
            Some('(') if self.peek(2) == Some('(') => {
                self.unsure("arithmetic");
                self.at += 1;
                w.text.push('$');
                self.substitution(w);
            }
            Some('(') => {
                self.at += 1;
                w.text.push('$');
                w.substituted.push("$(");
                self.substitution(w);
            }
            Some('{') => {
                w.dynamic = true;
                let start = self.at;
                match self.closing(self.at + 1, '{', '}') {
                    Some(end) => {
                        let inside: String = self.chars[start..=end].iter().collect();
                        if inside.contains("$(") || inside.contains('`') {
                            self.unsure("a substitution inside ${…}");
                        }
                        w.text.push_str(&inside);
                        self.at = end + 1;
                    }
                    None => {
                        self.unsure("an unmatched ${");
                        self.at = self.chars.len();
                    }
                }
            }
            Some('\'') => {
                self.at += 2;
                w.quoted = true;
                self.ansi_c(w);
            }
            Some(c) if c.is_ascii_alphanumeric() || "_@*#?$!-".contains(c) => {
                w.dynamic = true;
                w.text.push('$');
                self.at += 1;
                if c.is_ascii_alphabetic() || c == '_' {
                    while self
                        .peek(0)
                        .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
                    {
                        w.text.push(self.chars[self.at]);
                        self.at += 1;
                    }
                } else {
                    w.text.push(c);
                    self.at += 1;
                }
            }
            _ => {
                w.text.push('$');
                self.at += 1;
            }
        }
    }

    /// `(…)` at `self.at`: its inside is a command line of its own; the
    /// word it stands in is built by it.
    fn substitution(&mut self, w: &mut Word) {
        w.dynamic = true;
        match self.closing(self.at, '(', ')') {
            Some(end) => {
                let inside: String = self.chars[self.at + 1..end].iter().collect();
                w.text.push('(');
                w.text.push_str(&inside);
                w.text.push(')');
                self.nested.push(inside);
                self.at = end + 1;
            }
            None => {
                self.unsure("an unmatched (");
                let inside: String = self.chars[self.at + 1..].iter().collect();
                self.nested.push(inside);
                self.at = self.chars.len();
            }
        }
    }

    /// The index of the `close` matching the `open` at `from`, past
    /// quotes and escapes.
    fn closing(&self, from: usize, open: char, close: char) -> Option<usize> {
        let mut depth = 0;
        let mut i = from;
        while let Some(&c) = self.chars.get(i) {
            match c {
                '\\' => i += 1,
                '\'' => {
                    i += self.chars[i + 1..].iter().position(|&c| c == '\'')? + 1;
                }
                '"' => {
                    let mut j = i + 1;
                    loop {
                        match self.chars.get(j)? {
                            '\\' => j += 1,
                            '"' => break,
                            _ => {}
                        }
                        j += 1;
                    }
                    i = j;
                }
                _ if c == open => depth += 1,
                _ if c == close => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(i);
                    }
                }
                _ => {}
            }
            i += 1;
        }
        None
    }

    fn backticks(&mut self, w: &mut Word) {
        w.dynamic = true;
        w.substituted.push("`");
        self.at += 1;
        let mut inside = String::new();
        loop {
            match self.peek(0) {
                None => {
                    self.unsure("an unmatched `");
                    break;
                }
                Some('`') => {
                    self.at += 1;
                    break;
                }
                Some('\\') if matches!(self.peek(1), Some('`' | '\\' | '$')) => {
                    inside.push(self.chars[self.at + 1]);
                    self.at += 2;
                }
                Some(c) => {
                    inside.push(c);
                    self.at += 1;
                }
            }
        }
        w.text.push('`');
        w.text.push_str(&inside);
        w.text.push('`');
        self.nested.push(inside);
    }

    /// `$'…'` after its `$'`: bash's escapes.
    fn ansi_c(&mut self, w: &mut Word) {
        while let Some(c) = self.peek(0) {
            self.at += 1;
            match c {
                '\'' => return,
                '\\' => {
                    let Some(e) = self.peek(0) else { break };
                    self.at += 1;
                    let simple = match e {
                        'a' => Some('\x07'),
                        'b' => Some('\x08'),
                        'e' | 'E' => Some('\x1b'),
                        'f' => Some('\x0c'),
                        'n' => Some('\n'),
                        'r' => Some('\r'),
                        't' => Some('\t'),
                        'v' => Some('\x0b'),
                        '\\' | '\'' | '"' | '?' => Some(e),
                        _ => None,
                    };
                    if let Some(s) = simple {
                        w.text.push(s);
                        continue;
                    }
                    let (radix, most) = match e {
                        'x' => (16, 2),
                        'u' => (16, 4),
                        'U' => (16, 8),
                        '0'..='7' => {
                            self.at -= 1;
                            (8, 3)
                        }
                        _ => {
                            self.unsure("an escape in $'…'");
                            w.text.push(e);
                            continue;
                        }
                    };
                    let digits: String = self.chars[self.at..]
                        .iter()
                        .take(most)
                        .take_while(|c| c.is_digit(radix))
                        .collect();
                    self.at += digits.len();
                    match u32::from_str_radix(&digits, radix)
                        .ok()
                        .and_then(char::from_u32)
                    {
                        Some(ch) => w.text.push(ch),
                        None => self.unsure("an escape in $'…'"),
                    }
                }
                _ => w.text.push(c),
            }
        }
        self.unsure("an unmatched $'");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn views(src: &str) -> Vec<Vec<String>> {
        read(src)
            .commands
            .iter()
            .map(|c| c.views.iter().map(|v| v.text.clone()).collect())
            .collect()
    }

    #[test]
    fn quotes_and_escapes_are_removed() {
        assert_eq!(views("'rm' -rf x"), [["rm -rf x"]]);
        assert_eq!(views("\\rm x"), [["rm x"]]);
        assert_eq!(views("r\"\"m  x\t y"), [["rm x y"]]);
        assert_eq!(views("$'\\x72m' x"), [["rm x"]]);
        assert_eq!(views("r\\\nm x"), [["rm x"]]);
    }

    #[test]
    fn separators_substitutions_and_wrappers_make_parts_and_views() {
        assert_eq!(
            views("a; b && c || d | e & f\ng"),
            [
                vec!["a"],
                vec!["b"],
                vec!["c"],
                vec!["d"],
                vec!["e &", "e"],
                vec!["f"],
                vec!["g"]
            ]
        );
        assert_eq!(views("echo $(rm x)")[0], ["rm x"]);
        assert_eq!(views("echo \"`rm x`\"")[0], ["rm x"]);
        assert_eq!(
            views("FOO=1 /bin/rm x"),
            [["FOO=1 /bin/rm x", "/bin/rm x", "rm x"]]
        );
        assert_eq!(
            views("env -i timeout 5 rm x"),
            [["env -i timeout 5 rm x", "timeout 5 rm x", "rm x"]]
        );
        assert_eq!(views("sh -c 'bash -c \"rm x\"'")[0], ["rm x"]);
        assert_eq!(
            views("find . -exec rm {} \\; -print"),
            [vec!["rm {}"], vec!["find . -exec rm {} ; -print"]]
        );
        let line = read("2>/dev/null ls 2>&1 > out &");
        assert_eq!(line.commands[0].controls, [">", "&"]);
        assert_eq!(line.commands[0].views[0].text, "ls > out &");
        assert_eq!(line.commands[0].views[1].text, "ls");
    }

    #[test]
    fn what_cannot_be_known_is_unclear() {
        for src in [
            "$X -rf /",
            "$(echo rm) x",
            "r? x",
            "{rm,x}",
            "cat <<EOF\nx\nEOF",
            "case x in x) rm;; esac",
            "echo 'x",
            "echo $((1+2))",
        ] {
            assert!(read(src).unclear.is_some(), "{src:?}");
        }
        let mut deep = "rm x".to_owned();
        for _ in 0..=DEPTH {
            deep = format!("sh -c '{}'", deep.replace('\'', "'\\''"));
        }
        assert!(read(&deep).unclear.is_some());
        for src in ["git status", "ls -la | grep x > out", "echo \"$HOME\""] {
            assert_eq!(read(src).unclear, None, "{src:?}");
        }
    }
}
