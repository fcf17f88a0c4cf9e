//! The standing goal's file: `goal.json` in the project directory, beside
//! the memory files. What it holds and every decision about it are in
//! `revolve_core::goal`; this module only reads and writes it.

use std::io;
use std::path::{Path, PathBuf};

use revolve_core::goal::Goals;

use crate::files;
use crate::fsx::{self, Lock};

/// The file's name inside the project directory.
pub const FILE: &str = "goal.json";

/// Where the goal file of project directory `dir` is.
pub fn path(dir: &Path) -> PathBuf {
    dir.join(FILE)
}

/// Reads `dir/goal.json`. A missing file (or directory) is no goal and no
/// history; a file that is not valid goal JSON is an
/// [`io::ErrorKind::InvalidData`] error naming the file, line and column.
pub fn load(dir: &Path) -> io::Result<Goals> {
    let path = path(dir);
    let bytes = match crate::regular::read_whole(&path, revolve_core::policy::OWN_FILE_CAP) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Goals::default()),
        Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
    };
    serde_json::from_slice(&bytes).map_err(|e| {
        // serde_json ends its message with " at line L column C"; say it once.
        let full = e.to_string();
        let suffix = format!(" at line {} column {}", e.line(), e.column());
        let what = full.strip_suffix(&suffix).unwrap_or(&full);
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{}: line {}, column {}: {what}",
                path.display(),
                e.line(),
                e.column()
            ),
        )
    })
}

/// Reads the goals, lets `change` change them, and saves them if it did and
/// it succeeded: all under a lock on the project directory's goal, so two
/// sessions of one directory never lose each other's change.
pub fn update<T>(
    dir: &Path,
    change: impl FnOnce(&mut Goals) -> Result<T, String>,
) -> io::Result<Result<T, String>> {
    files::create_dir_all(dir)?;
    let _lock = Lock::acquire(&dir.join(".goal.lock"))?;
    let mut goals = load(dir)?;
    let before = goals.clone();
    let result = change(&mut goals);
    if result.is_ok() && goals != before {
        save(dir, &goals)?;
    }
    Ok(result)
}

/// Writes `goals` to `dir/goal.json`, creating `dir` if needed. Atomic: the
/// JSON goes to a temporary file in the same directory, is flushed to disk,
/// and is renamed over the old file, so a reader sees the old goal or the
/// new one, never half of one
/// ([`fsx::write_atomic`]).
pub fn save(dir: &Path, goals: &Goals) -> io::Result<()> {
    files::create_dir_all(dir)?;
    let mut json = serde_json::to_vec_pretty(goals).map_err(io::Error::other)?;
    json.push(b'\n');
    fsx::write_atomic(&path(dir), &json)
}

#[cfg(test)]
mod tests {
    use super::*;
    use revolve_core::goal::{Ending, GoalCommand, Status};
    use std::fs;
    use time::macros::datetime;

    /// A path in a temporary directory that goes when the test ends.
    struct Temp {
        path: PathBuf,
        _dir: tempfile::TempDir,
    }

    impl std::ops::Deref for Temp {
        type Target = PathBuf;

        fn deref(&self) -> &PathBuf {
            &self.path
        }
    }

    impl AsRef<std::path::Path> for Temp {
        fn as_ref(&self) -> &std::path::Path {
            &self.path
        }
    }

    /// A fresh directory under the system temp dir (never HOME); it does not
    /// exist yet.
    fn temp(name: &str) -> Temp {
        let dir = tempfile::Builder::new()
            .prefix(&format!("revolve-goal-{name}-"))
            .tempdir()
            .unwrap();
        Temp {
            path: dir.path().join("d"),
            _dir: dir,
        }
    }

    fn sample() -> Goals {
        let t = datetime!(2026-12-02 10:00 UTC);
        let mut g = Goals::default();
        g.apply(&GoalCommand::Set("first".into()), t).unwrap();
        g.progress("one step", true, t).unwrap();
        g.apply(&GoalCommand::Done, t).unwrap();
        g.apply(&GoalCommand::Set("ship \"it\"\nwell".into()), t)
            .unwrap();
        g.progress("über", false, t).unwrap();
        g.apply(&GoalCommand::Pause, t).unwrap();
        g
    }

    #[test]
    fn missing_file_or_directory_is_no_goal() {
        let dir = temp("missing");
        assert_eq!(load(&dir).unwrap(), Goals::default());
        fs::create_dir_all(&dir).unwrap();
        assert_eq!(load(&dir).unwrap(), Goals::default());
        fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn saves_creating_the_directory_and_loads_back() {
        let root = temp("round-trip");
        let dir = root.join("projects").join("p");
        let goals = sample();
        save(&dir, &goals).unwrap();
        let loaded = load(&dir).unwrap();
        assert_eq!(loaded, goals);
        assert_eq!(loaded.history[0].ended.map(|e| e.how), Some(Ending::Done));
        assert_eq!(
            loaded.current.as_ref().map(|c| c.status),
            Some(Status::Paused)
        );

        // Overwrites, and leaves no temporary file behind.
        let mut next = loaded;
        next.apply(&GoalCommand::Clear, datetime!(2026-12-02 11:00 UTC))
            .unwrap();
        save(&dir, &next).unwrap();
        assert_eq!(load(&dir).unwrap(), next);
        let names: Vec<String> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, [FILE]);
        let text = fs::read_to_string(path(&dir)).unwrap();
        assert!(
            text.ends_with("}\n") && text.contains("\n  \"history\""),
            "{text}"
        );
        fs::remove_dir_all(&root).ok();
    }

    #[test]
    fn a_malformed_file_is_an_error_naming_file_line_and_column() {
        let dir = temp("malformed");
        fs::create_dir_all(&dir).unwrap();
        fs::write(path(&dir), "{\n  \"current\": {\n    \"text\": 7\n  }\n}\n").unwrap();
        let e = load(&dir).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        let shown = e.to_string();
        let expected = format!(
            "{}: line 3, column 13: invalid type: integer `7`, expected a string",
            path(&dir).display()
        );
        assert_eq!(shown, expected);

        fs::write(path(&dir), "{\"current\": nul").unwrap();
        let shown = load(&dir).unwrap_err().to_string();
        assert!(shown.contains("goal.json: line 1, column "), "{shown}");
        assert!(!shown.contains(" at line "), "{shown}");
        fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn save_into_an_unwritable_place_fails_cleanly() {
        let root = temp("blocked");
        fs::create_dir_all(&root).unwrap();
        // A file where the directory should be.
        let dir = root.join("not-a-dir");
        fs::write(&dir, "x").unwrap();
        assert!(save(&dir, &sample()).is_err());
        fs::remove_dir_all(&root).ok();
    }
}
