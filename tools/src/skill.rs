//! `skill`: a skill's body and the files of its folder. The core has found
//! the folder among the skills the prompt lists; the folder is readable for
//! the session, so the model reads the files named here with `read_file`.

use super::*;

/// How many of a skill folder's files are named, at most.
const FILES_SHOWN: usize = 200; // not policy: a listing's length, the rest said in a line

/// How deep into a skill folder files are named.
const DEPTH: usize = 4; // not policy: skills keep resources a level or two down

pub(crate) fn skill(name: &str, dir: &str) -> String {
    let folder = Path::new(dir);
    let path = folder.join(revolve_core::skills::FILE);
    let text = match regular::read(&path) {
        Ok((file, _)) => {
            let mut bytes = Vec::new();
            if let Err(e) = file.take(READ_CAP as u64).read_to_end(&mut bytes) {
                return format!("error: cannot read {}: {e}", path.display());
            }
            String::from_utf8_lossy(&bytes).into_owned()
        }
        Err(e) => return format!("error: cannot read {}: {e}", path.display()),
    };
    let body = match revolve_core::skills::parse(&text) {
        Ok(parsed) => parsed.body,
        Err(e) => return format!("error: {} is not a skill: {e}", path.display()),
    };
    let mut files = Vec::new();
    let mut more = 0usize;
    list(folder, folder, 0, &mut files, &mut more);
    files.sort();
    let mut out = format!("Skill {name} ({dir}):\n\n{body}\n");
    if files.is_empty() {
        out.push_str("\nIts folder holds no other file.");
    } else {
        out.push_str("\nFiles in its folder (read them with read_file):\n");
        for f in &files {
            out.push_str(&format!("- {}\n", folder.join(f).display()));
        }
        if more > 0 {
            out.push_str(&format!("… and {more} more\n"));
        }
    }
    redact_keys(out)
}

/// The regular files under `dir` (not following links), relative to `top`,
/// but `SKILL.md` at the top.
fn list(top: &Path, dir: &Path, depth: usize, out: &mut Vec<PathBuf>, more: &mut usize) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let path = entry.path();
        if kind.is_dir() && depth + 1 < DEPTH {
            list(top, &path, depth + 1, out, more);
        } else if kind.is_file() {
            let rel = path.strip_prefix(top).unwrap_or(&path).to_path_buf();
            if rel == Path::new(revolve_core::skills::FILE) {
                continue;
            }
            if out.len() < FILES_SHOWN {
                out.push(rel);
            } else {
                *more += 1;
            }
        }
    }
}
