//! `list_dir`: one level of a directory, as grep's walk sees it.

use super::*;

pub(crate) fn list_dir(scope: &Scope, raw: &str) -> Result<String, String> {
    let path = scope.resolve(raw)?;
    let cannot = |e: io::Error| format!("error: cannot list {raw}: {e}");
    if !fs::metadata(&path).map_err(cannot)?.is_dir() {
        return Err(format!(
            "error: {raw} is not a directory; read it with read_file"
        ));
    }
    // Everything there, to say how much the walk's rules left out (and to
    // report an unreadable folder as it is).
    let all = fs::read_dir(&path).map_err(cannot)?.count();
    // One level of grep's walk: ripgrep's rules (`.gitignore` in a
    // repository or not, `.ignore`, `.git/info/exclude`, hidden names
    // skipped), symlinks not followed.
    let walk = crate::grep::walker(&path).max_depth(Some(1)).build();
    let mut entries: Vec<(String, String)> = walk
        .filter_map(Result::ok)
        .filter(|entry| entry.depth() == 1)
        .map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let line = match entry.file_type() {
                Some(t) if t.is_symlink() => match fs::read_link(entry.path()) {
                    Ok(target) => format!("{name} -> {}", target.display()),
                    Err(_) => format!("{name} -> ?"),
                },
                Some(t) if t.is_dir() => format!("{name}/"),
                _ => name.clone(),
            };
            (name, line)
        })
        .collect();
    let left_out = all.saturating_sub(entries.len());
    if entries.is_empty() && left_out == 0 {
        return Ok(format!("[{raw} is empty]"));
    }
    entries.sort();
    let total = entries.len();
    let mut text: String = entries
        .iter()
        .take(LIST_CAP)
        .map(|(_, line)| format!("{line}\n"))
        .collect();
    if total > LIST_CAP {
        text.push_str(&format!(
            "[… {} more entries not shown, {total} in all; use shell (for example `ls | tail`) \
             or grep to find what you need]\n",
            total - LIST_CAP
        ));
    }
    if left_out > 0 {
        text.push_str(&format!(
            "[{left_out} {} not shown: hidden, or ignored by .gitignore or .ignore, as grep \
             skips them; `ls -a` in shell shows everything]\n",
            if left_out == 1 { "entry" } else { "entries" }
        ));
    }
    text.pop(); // the last newline
    Ok(text)
}
