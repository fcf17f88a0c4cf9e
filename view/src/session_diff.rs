//! What `/diff` shows of a session's edits.

use crate::inert;

/// What `/diff` shows: the diff of each edit of `edits` (the log's
/// records, in order) that still stands (its `(call, path)` among
/// `standing`), under a line naming the file, who changed it and the
/// lines counted whole; text a model or a command wrote is inert.
pub fn session_diff(edits: &[revolve_core::record::Edit], standing: &[(&str, &str)]) -> String {
    let mut out = String::new();
    let mut files: Vec<&str> = Vec::new();
    for e in edits {
        if !standing.contains(&(e.call.as_str(), e.path.as_str())) {
            continue;
        }
        if !files.contains(&e.path.as_str()) {
            files.push(&e.path);
        }
        let (added, removed) = revolve_core::edit::lines(e);
        out.push_str(&format!(
            "── {} by {} (+{added} -{removed})\n",
            e.path,
            e.by.as_str()
        ));
        let diff = inert(&e.diff);
        out.push_str(&diff);
        if !diff.ends_with('\n') {
            out.push('\n');
        }
    }
    if files.is_empty() {
        return "no changes: this session made no edit that stands\n".to_owned();
    }
    let plural = if files.len() == 1 { "" } else { "s" };
    out.push_str(&format!(
        "{} file{plural} changed by this session\n",
        files.len()
    ));
    out
}
