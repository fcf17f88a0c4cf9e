//! Subcommands that read sessions without running one.

use revolve_core::state::{self, State};
use revolve_core::view;
use revolve_io::log;
use revolve_io::store::Store;

use crate::error::{out, Error};
use crate::live;

/// `revolve sessions`: this directory's named sessions, or all of them.
pub fn sessions(store: &Store, all: bool, json: bool) -> Result<(), Error> {
    let list = store
        .list()
        .map_err(|e| Error::at(&store.sessions_dir(), "cannot list", e))?;
    let list = view::listed(list, all);
    if json {
        let text =
            serde_json::to_string_pretty(&list).map_err(|e| Error::Runtime(e.to_string()))?;
        return out(&format!("{text}\n"));
    }
    if list.is_empty() && !all {
        return out(
            "no named sessions in this directory (revolve sessions --all shows unnamed ones too)\n",
        );
    }
    out(&view::listing(&list))
}

/// What `revolve replay` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplayMode {
    Transcript,
    Json,
    Requests,
    Check,
}

impl ReplayMode {
    pub fn from_flags(json: bool, requests: bool, check: bool) -> ReplayMode {
        match (json, requests, check) {
            (true, _, _) => ReplayMode::Json,
            (_, true, _) => ReplayMode::Requests,
            (_, _, true) => ReplayMode::Check,
            _ => ReplayMode::Transcript,
        }
    }
}

/// `revolve replay`: a session rebuilt from its log alone.
///
/// The transcript and the requests follow the session's whole chain of
/// files (compactions start new ones), oldest first; `--json` and `--check`
/// look at the one file named.
pub fn replay(store: &Store, needle: Option<&str>, mode: ReplayMode) -> Result<(), Error> {
    let path = live::find(store, needle)?;
    if matches!(mode, ReplayMode::Transcript | ReplayMode::Requests) {
        for file in store.chain(&path) {
            let read = read_noting(&file, true)?;
            match mode {
                ReplayMode::Transcript => out(&view::transcript(&read.records))?,
                _ => {
                    let mut text = String::new();
                    for request in state::requests(&read.records) {
                        text.push_str(&request.body);
                        text.push('\n');
                    }
                    out(&text)?;
                }
            }
        }
        return Ok(());
    }
    let read = read_noting(&path, mode != ReplayMode::Check)?;
    match mode {
        ReplayMode::Transcript | ReplayMode::Requests => Ok(()),
        ReplayMode::Json => {
            let state = State::fold(&read.records);
            let text =
                serde_json::to_string_pretty(&state).map_err(|e| Error::Runtime(e.to_string()))?;
            out(&format!("{text}\n"))
        }
        ReplayMode::Check => check(&path, read),
    }
}

/// Reads a log; with `note`, says on stderr how many lines it skipped.
fn read_noting(path: &std::path::Path, note: bool) -> Result<log::ReadLog, Error> {
    let read = log::read(path).map_err(|e| Error::at(path, "cannot read", e))?;
    if note && !read.skipped.is_empty() {
        eprintln!(
            "(skipped {} unreadable line(s) of {}; replay --check lists them)",
            read.skipped.len(),
            path.display()
        );
    }
    Ok(read)
}

/// Reports skipped lines and records that do not fit. Torn lines (a crash
/// mid-write) are reported but are not a failure.
fn check(path: &std::path::Path, read: log::ReadLog) -> Result<(), Error> {
    let mut state = State::default();
    let notes: Vec<String> = read
        .records
        .iter()
        .enumerate()
        .filter_map(|(i, r)| state.apply(r).map(|n| format!("record {}: {n}", i + 1)))
        .collect();
    let mut text = format!(
        "{}: {} records, {} skipped line(s), {} inconsistenc{}\n",
        path.display(),
        read.records.len(),
        read.skipped.len(),
        notes.len(),
        if notes.len() == 1 { "y" } else { "ies" }
    );
    for s in &read.skipped {
        text.push_str(&format!("  line {}: {}\n", s.line, s.why));
    }
    for n in &notes {
        text.push_str(&format!("  {n}\n"));
    }
    out(&text)?;
    // Torn lines are what crashes leave (one each); everything else is not.
    if notes.is_empty() && read.skipped.iter().all(|s| s.torn) {
        Ok(())
    } else {
        Err(Error::Runtime(format!(
            "{} does not replay cleanly",
            path.display()
        )))
    }
}

/// `/goal …` and `revolve goal …`: the standing goal of the project
/// directory `dir`, changed and saved (a command that changes nothing saves
/// nothing). The text is what the user is told.
pub fn goal(dir: &std::path::Path, args: &str) -> Result<String, Error> {
    let cmd = revolve_core::goal::parse(args).map_err(Error::Usage)?;
    let now = revolve_io::clock::now();
    revolve_io::goal::update(dir, |goals| goals.apply(&cmd, now))
        .map_err(|e| Error::Runtime(e.to_string()))?
        .map_err(Error::Usage)
}

/// `revolve goal --json [ARGS]`: the change ARGS ask for, if any, then the
/// goals as `goal.json` holds them (see [`revolve_core::goal::Goals`]).
pub fn goal_json(dir: &std::path::Path, args: &str) -> Result<(), Error> {
    if !args.trim().is_empty() {
        goal(dir, args)?;
    }
    let goals = revolve_io::goal::load(dir).map_err(|e| Error::Runtime(e.to_string()))?;
    json_out(&goals)
}

/// Pretty JSON and a newline on stdout.
fn json_out(value: &impl serde::Serialize) -> Result<(), Error> {
    let text = serde_json::to_string_pretty(value).map_err(|e| Error::Runtime(e.to_string()))?;
    out(&format!("{text}\n"))
}

/// `revolve init`: the project directory, created if missing; prints what
/// was created.
pub fn init(store: &Store) -> Result<(), Error> {
    let dirs = revolve_io::memory::MemoryDirs::locate(&store.cwd, &store.project, &store.roots);
    match revolve_io::memory::ensure_project_dir(&dirs) {
        Ok(Some(created)) => {
            let mut text = String::from("created:\n");
            for path in created {
                text.push_str(&format!("  {}\n", path.display()));
            }
            out(&text)
        }
        Ok(None) => out(&format!(
            "the project directory {} exists; nothing created\n",
            dirs.project_dir.display()
        )),
        Err(e) => Err(Error::at(&dirs.project_dir, "cannot create", e)),
    }
}

/// `/refine history` and `revolve memory history`.
pub fn memory_history(
    store: &Store,
    dirs: &revolve_io::memory::MemoryDirs,
    diff: bool,
) -> Result<String, Error> {
    let state = &store.roots.state;
    let entries =
        revolve_io::refine::entries(state, dirs).map_err(|e| Error::Runtime(e.to_string()))?;
    let diffs = if diff {
        revolve_io::refine::diffs(state, dirs, &entries)
            .map_err(|e| Error::Runtime(e.to_string()))?
    } else {
        Default::default()
    };
    Ok(revolve_core::refine::history(&entries, &diffs))
}

/// `revolve memory history --json`: the changes, newest first (see
/// [`revolve_core::refine::HistoryEntry`]); with `diff`, each file's diff.
pub fn memory_history_json(
    store: &Store,
    dirs: &revolve_io::memory::MemoryDirs,
    diff: bool,
) -> Result<String, Error> {
    let state = &store.roots.state;
    let entries =
        revolve_io::refine::entries(state, dirs).map_err(|e| Error::Runtime(e.to_string()))?;
    let diffs = if diff {
        revolve_io::refine::diffs(state, dirs, &entries)
            .map_err(|e| Error::Runtime(e.to_string()))?
    } else {
        Default::default()
    };
    let list = revolve_core::refine::history_entries(&entries, &diffs, diff);
    let text = serde_json::to_string_pretty(&list).map_err(|e| Error::Runtime(e.to_string()))?;
    Ok(format!("{text}\n"))
}

/// `/refine undo` and `revolve memory undo`.
pub fn memory_undo(store: &Store, dirs: &revolve_io::memory::MemoryDirs) -> Result<String, Error> {
    match revolve_io::refine::undo(&store.roots.state, dirs)
        .map_err(|e| Error::Runtime(format!("cannot undo: {e}")))?
    {
        None => Ok("nothing to undo\n".to_owned()),
        Some(lines) if lines.is_empty() => {
            Ok("undone (the files already matched the snapshot)\n".to_owned())
        }
        Some(lines) => Ok(format!(
            "undone:\n{}",
            lines
                .iter()
                .map(|l| format!("    {l}\n"))
                .collect::<String>()
        )),
    }
}

/// `revolve memory show`: where each memory file is, then the files as
/// the system prompt holds them.
pub fn memory_show(dirs: &revolve_io::memory::MemoryDirs) -> Result<String, Error> {
    use revolve_core::memory::Scope;
    let files = revolve_io::memory::load(dirs).map_err(|e| Error::Runtime(e.to_string()))?;
    let Some(block) = revolve_core::memory::prompt_block(&files) else {
        return Ok(format!(
            "no memory files (global: {}, project: {})\n",
            dirs.global.display(),
            dirs.project.display()
        ));
    };
    let mut text = String::from("memory files, global then project:\n");
    for f in &files {
        let dir = if f.scope == Scope::Global {
            &dirs.global
        } else {
            &dirs.project
        };
        text.push_str(&format!("  {}\n", dir.join(&f.name).display()));
    }
    text.push('\n');
    text.push_str(&block);
    text.push('\n');
    Ok(text)
}

/// `revolve replay --against PROVIDER`: every request the session's chain
/// recorded, sent again (with `model` in place of the recorded model when
/// given), and a diff per request between the recorded answer and the new
/// one. A refinement's request is not in the log and is skipped. Exits 1
/// when any answer differs.
pub fn replay_against(
    store: &Store,
    needle: Option<&str>,
    provider: std::sync::Arc<dyn revolve_io::provider::Provider>,
    model: Option<String>,
) -> Result<(), Error> {
    use revolve_core::fixture::{self, Answer};
    let path = live::find(store, needle)?;
    let mut records = Vec::new();
    let mut requests = Vec::new();
    for file in store.chain(&path) {
        let read = read_noting(&file, true)?;
        requests.extend(state::requests(&read.records));
        records.extend(read.records);
    }
    let answers: Vec<Answer> = fixture::answers(&records)
        .into_iter()
        .filter(|a| *a != Answer::NotRecorded)
        .collect();
    if answers.len() != requests.len() {
        return Err(Error::Runtime(format!(
            "{}: {} requests but {} answers; the log is not whole (revolve replay --check tells more)",
            path.display(),
            requests.len(),
            answers.len()
        )));
    }
    let total = requests.len();
    let mut differ = 0;
    for (i, (mut request, recorded)) in requests.into_iter().zip(answers).enumerate() {
        if let Some(model) = &model {
            request.body = with_model(&request.body, model);
        }
        let new = match provider.complete(&request, &mut |_| {}) {
            Ok(reply) => Answer::Reply(reply),
            Err(e) => Answer::Failed {
                partial: e.partial,
                error: e.message,
            },
        };
        let head = format!("── request {} of {total} (#{})", i + 1, request.seq);
        match fixture::diff(&recorded, &new) {
            None => out(&format!("{head}: same\n"))?,
            Some(diff) => {
                differ += 1;
                out(&format!("{head}: differs\n{}", view::inert(&diff)))?;
            }
        }
    }
    if differ > 0 {
        return Err(Error::Runtime(format!(
            "{differ} of {total} answers differ from the recording"
        )));
    }
    out(&format!("all {total} answers are the same as recorded\n"))
}

/// A request body with another model.
fn with_model(body: &str, model: &str) -> String {
    match serde_json::from_str::<serde_json::Value>(body) {
        Ok(mut value) if value.get("model").is_some() => {
            value["model"] = serde_json::Value::from(model);
            value.to_string()
        }
        _ => body.to_owned(),
    }
}
