//! `grep`: the `ignore` crate's walk and the `regex` crate's matching,
//! bounded in output and time.

use super::*;

/// What a search found and passed over.
#[derive(Default)]
pub(crate) struct Found {
    text: String,
    shown: usize,
    left_out: usize,
    too_big: usize,
    binary: usize,
    unreadable: usize,
    files: usize,
    out_of_time: bool,
    interrupted: bool,
}

pub(crate) fn grep(
    scope: &Scope,
    pattern: &str,
    raw: Option<&str>,
    cancel: &dyn Fn() -> bool,
) -> Outcome {
    let matcher = match Matcher::new(pattern) {
        Ok(matcher) => matcher,
        Err(e) => return Outcome::text(format!("error: grep: bad pattern: {e}")),
    };
    let start = match raw {
        Some(raw) => match scope.resolve(raw) {
            Ok(path) => path,
            Err(e) => return Outcome::text(e),
        },
        None => scope.root.clone(),
    };
    // As read_file does: a FIFO would block the read and a device may never
    // end it, so a path given is a directory or a regular file.
    if let Some(raw) = raw {
        match fs::metadata(&start) {
            Ok(meta) if meta.is_dir() || meta.is_file() => {}
            Ok(_) => {
                return Outcome::text(format!(
                    "error: grep: {raw} is not a regular file or a directory"
                ))
            }
            Err(e) => return Outcome::text(format!("error: grep: cannot read {raw}: {e}")),
        }
    }
    let started = Instant::now();
    let mut found = Found::default();
    // As ripgrep walks: `.gitignore` (in a repository or not), `.ignore`,
    // `.git/info/exclude`, hidden files and folders skipped, symlinks not
    // followed, sorted; and `.git`, `target`, `node_modules` always skipped.
    let walk = walker(&start)
        .sort_by_file_path(|a, b| a.cmp(b))
        .filter_entry(|entry| {
            entry.depth() == 0
                || !entry.file_type().is_some_and(|t| t.is_dir())
                || !GREP_SKIP.contains(&&*entry.file_name().to_string_lossy())
        })
        .build();
    for entry in walk {
        if found.interrupted || cancel() {
            return Outcome::interrupted("error: interrupted".into());
        }
        if found.out_of_time || started.elapsed() > GREP_TIME {
            found.out_of_time = true;
            break;
        }
        let Ok(entry) = entry else {
            found.unreadable += 1;
            continue;
        };
        // Regular files only: sockets and FIFOs skipped, symlinks not read.
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        search_file(scope, entry.path(), &matcher, &mut found, &|| {
            if cancel() {
                Some(true)
            } else {
                (started.elapsed() > GREP_TIME).then_some(false)
            }
        });
    }

    if found.files == 1 && found.binary == 1 && !start.is_dir() {
        return Outcome::text(format!(
            "error: {} is a binary file; grep searches text files only",
            raw.unwrap_or_default()
        ));
    }
    let mut text = found.text;
    if found.shown == 0 && found.left_out == 0 {
        text = format!("no matches for {pattern}\n");
    }
    let mut note = |s: String| text.push_str(&format!("[{s}]\n"));
    if found.left_out > 0 {
        note(format!(
            "… {} more matching {} left out; narrow the pattern or the path",
            found.left_out,
            if found.left_out == 1 { "line" } else { "lines" }
        ));
    }
    if found.too_big > 0 {
        note(format!(
            "skipped {} over 4 MiB",
            plural(found.too_big, "file")
        ));
    }
    if found.unreadable > 0 {
        note(format!(
            "skipped {} files or directories that could not be read",
            found.unreadable
        ));
    }
    if found.out_of_time {
        note(format!(
            "stopped after {} s before searching everything; narrow the path",
            GREP_TIME.as_secs()
        ));
    }
    text.pop(); // the last newline
    Outcome::text(text)
}

/// Searches one file. `stop` is asked every 1024 lines: `Some(true)` to
/// stop as interrupted, `Some(false)` as out of time.
pub(crate) fn search_file(
    scope: &Scope,
    path: &Path,
    matcher: &Matcher,
    found: &mut Found,
    stop: &dyn Fn() -> Option<bool>,
) {
    found.files += 1;
    // Opened as a regular file only (a FIFO swapped in since the folder was
    // read is refused, never waited on), and read to the size limit at
    // most, whatever the size said.
    let file = match regular::read(path) {
        Ok((_, meta)) if meta.len() > GREP_FILE_MAX => {
            found.too_big += 1;
            return;
        }
        Ok((file, _)) => file,
        Err(_) => {
            found.unreadable += 1;
            return;
        }
    };
    let mut bytes = Vec::new();
    if file
        .take(GREP_FILE_MAX + 1)
        .read_to_end(&mut bytes)
        .is_err()
    {
        found.unreadable += 1;
        return;
    }
    if bytes.len() as u64 > GREP_FILE_MAX {
        found.too_big += 1;
        return;
    }
    if bytes[..bytes.len().min(BINARY_PROBE)].contains(&0) {
        found.binary += 1;
        return;
    }
    let text = String::from_utf8_lossy(&bytes);
    let shown_path = scope.show(path);
    for (i, line) in text.lines().enumerate() {
        if i % 1024 == 1023 {
            match stop() {
                Some(true) => found.interrupted = true,
                Some(false) => found.out_of_time = true,
                None => {}
            }
            if found.interrupted || found.out_of_time {
                return;
            }
        }
        if !matcher.is_match(line) {
            continue;
        }
        if found.left_out > 0 || found.shown >= GREP_LINES {
            found.left_out += 1;
            continue;
        }
        let entry = match line.char_indices().nth(GREP_LINE_CHARS) {
            Some((cut, _)) => format!(
                "{shown_path}:{}:{}[… {} more characters]\n",
                i + 1,
                &line[..cut],
                line[cut..].chars().count()
            ),
            None => format!("{shown_path}:{}:{line}\n", i + 1),
        };
        if found.text.len() + entry.len() > GREP_BYTES {
            found.left_out += 1;
        } else {
            found.text.push_str(&entry);
            found.shown += 1;
        }
    }
}

pub(crate) fn plural(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

// Matching: the regex crate (what ripgrep is built on), linear in the line.

/// A compiled pattern.
pub(crate) struct Matcher {
    regex: regex::Regex,
}

impl Matcher {
    /// `pattern` in the regex crate's syntax (Rust's, much like ripgrep's:
    /// `(?i)`, `\b`, `\<`, `\>`, `\d`, `\p{..}`, `[[:alpha:]]`, …); one
    /// it refuses, or one too large, is a clear error.
    pub(crate) fn new(pattern: &str) -> Result<Matcher, String> {
        if pattern.chars().count() > PATTERN_MAX {
            return Err(format!("longer than {PATTERN_MAX} characters"));
        }
        regex::RegexBuilder::new(pattern)
            .size_limit(PATTERN_SIZE_MAX)
            .dfa_size_limit(PATTERN_SIZE_MAX)
            .build()
            .map(|regex| Matcher { regex })
            .map_err(|e| match e {
                regex::Error::CompiledTooBig(_) => "too large to compile".to_owned(),
                e => {
                    let text = e.to_string();
                    let why = text.lines().last().unwrap_or("").trim();
                    format!(
                        "{} (escape ( ) [ ] {{ }} . * + ? | with a backslash to match them as text)",
                        why.strip_prefix("error: ").unwrap_or(why)
                    )
                }
            })
    }

    /// Whether the pattern matches somewhere in `line`.
    pub(crate) fn is_match(&self, line: &str) -> bool {
        self.regex.is_match(line)
    }
}

/// The walk grep and list_dir share, as ripgrep walks: `.gitignore` (in a
/// repository or not), `.ignore`, `.git/info/exclude`, hidden names
/// skipped, symlinks not followed.
pub(crate) fn walker(start: &Path) -> ignore::WalkBuilder {
    let mut walk = ignore::WalkBuilder::new(start);
    walk.standard_filters(true)
        .git_global(false)
        .require_git(false)
        .follow_links(false);
    walk
}
