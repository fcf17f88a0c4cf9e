//! Subcommands that read sessions without running one.

use revolve_core::state::{self, State};
use revolve_store::log;
use revolve_store::store::{Store, Unlisted};
use revolve_view as view;

use crate::error::{out, Error};
use revolve_core::policy::CHECK_LISTS;
use revolve_io::error::ReplayFault;

/// `revolve sessions`: this directory's named sessions, or all of them.
pub(crate) fn sessions(store: &Store, all: bool, json: bool) -> Result<(), Error> {
    if !all && !json {
        return recent(store);
    }
    let mut unlisted = Unlisted::default();
    // Unnamed ones are read too: the latest (the one `-c` resumes and the
    // REPL's exit hint names) is listed even when unnamed.
    let list = store
        .list_noting(
            |_, continued| view::shown(true, continued, all),
            &mut unlisted,
        )
        .map_err(|e| Error::at(&store.sessions_dir(), "cannot list", e))?;
    note_unlisted(store, &unlisted);
    let latest = revolve_core::names::latest(&list).map(|s| s.id.clone());
    let all_unnamed = list.iter().filter(|s| !s.named).count();
    let list = view::listed_with(list, all, latest.as_deref());
    // Unnamed sessions left out.
    let unnamed = all_unnamed - list.iter().filter(|s| !s.named).count();
    let text = if json {
        let text = serde_json::to_string_pretty(&list).map_err(Error::encode)?;
        format!("{text}\n")
    } else if list.is_empty() && !all {
        format!(
            "no named sessions in this directory\n{}",
            view::left_out(unnamed)
        )
    } else if all {
        view::listing(&list)
    } else {
        format!("{}{}", view::listing(&list), view::left_out(unnamed))
    };
    // The process ends after this: freeing a hundred thousand summaries
    // one by one would take longer than printing them.
    std::mem::forget(list);
    out(&text)
}

/// `revolve sessions` as a table: the most recently active named sessions
/// (see `Store::recent`), with how many others it left out.
fn recent(store: &Store) -> Result<(), Error> {
    let mut unlisted = Unlisted::default();
    let recent = store
        .recent(revolve_core::policy::SESSIONS_SHOWN, &mut unlisted)
        .map_err(|e| Error::at(&store.sessions_dir(), "cannot list", e))?;
    note_unlisted(store, &unlisted);
    let list = view::listed_with(recent.sessions, false, recent.latest.as_deref());
    let unnamed = list.iter().filter(|s| !s.named).count() as u64;
    let unnamed = recent.unnamed.saturating_sub(unnamed);
    let older = recent
        .named
        .saturating_sub(list.iter().filter(|s| s.named).count() as u64);
    let text = if list.is_empty() {
        format!(
            "no named sessions in this directory\n{}",
            view::left_out(unnamed as usize)
        )
    } else {
        format!(
            "{}{}{}",
            view::listing(&list),
            view::older_left_out(older),
            view::left_out(unnamed as usize)
        )
    };
    out(&text)
}

/// Says on stderr, a line for each kind, which files of the sessions folder
/// a listing left out.
fn note_unlisted(store: &Store, unlisted: &Unlisted) {
    let dir = store.sessions_dir();
    if let Some((first, why)) = &unlisted.first_unreadable {
        eprintln!(
            "revolve: {} in {} cannot be read and {} not listed (the first, {first}: {why})",
            files(unlisted.unreadable, "session file"),
            dir.display(),
            if unlisted.unreadable == 1 {
                "is"
            } else {
                "are"
            },
        );
    }
    if let Some(first) = &unlisted.first_headerless {
        eprintln!(
            "revolve: {} in {} {} no session header and {} not listed (the first: {first})",
            files(unlisted.headerless, "file"),
            dir.display(),
            if unlisted.headerless == 1 {
                "holds"
            } else {
                "hold"
            },
            if unlisted.headerless == 1 {
                "is"
            } else {
                "are"
            },
        );
    }
}

/// `1 file`, `2 files`.
fn files(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// What `revolve replay` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReplayMode {
    Transcript,
    Json,
    Requests,
    Check,
}

impl ReplayMode {
    pub(crate) fn from_flags(json: bool, requests: bool, check: bool) -> ReplayMode {
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
/// look at the one file named. Every mode streams: a record is read, folded
/// and written out before the next is read, so a log of any size needs the
/// memory of its folded state (the live history), not of the file.
pub(crate) fn replay(store: &Store, needle: Option<&str>, mode: ReplayMode) -> Result<(), Error> {
    let path = store.find(needle)?;
    match mode {
        ReplayMode::Transcript | ReplayMode::Requests => {
            let mut stdout = Stdout::new();
            for file in store.chain(&path) {
                let mut rebuild = state::Rebuild::default();
                let skipped = each_noting(&file, |record| match mode {
                    // A child's requests follow the request that asked
                    // for it (its `delegated` record), read from its log.
                    ReplayMode::Requests => match (&record, rebuild.push(&record)) {
                        (_, Some(request)) => stdout.body(&request.body),
                        (revolve_core::Record::Delegated(d), None) if !d.log.is_empty() => {
                            child_requests(std::path::Path::new(&d.log), &mut stdout)
                        }
                        _ => true,
                    },
                    _ => stdout.write(&view::transcript(std::slice::from_ref(&record))),
                })?;
                note_skipped(&file, skipped);
                stdout.done()?;
            }
            Ok(())
        }
        ReplayMode::Json => {
            let mut state = State::default();
            let skipped = each_noting(&path, |record| {
                state.apply(&record);
                true
            })?;
            note_skipped(&path, skipped);
            let text = serde_json::to_string_pretty(&state).map_err(Error::encode)?;
            out(&format!("{text}\n"))
        }
        ReplayMode::Check => check(store, &path),
    }
}

/// The requests of a child's log (see docs/subagents.md), written as the
/// parent's are; a child's log that cannot be read is said on stderr.
fn child_requests(log: &std::path::Path, stdout: &mut Stdout) -> bool {
    let mut rebuild = state::Rebuild::default();
    let mut reading = true;
    let read = each_noting(log, |record| {
        reading = match rebuild.push(&record) {
            Some(request) => stdout.body(&request.body),
            None => true,
        };
        reading
    });
    match read {
        Ok(skipped) => note_skipped(log, skipped),
        Err(e) => eprintln!("revolve: the subagent's requests are left out: {e}"),
    }
    reading
}

/// Stdout through a buffer, remembering the first failure (a closed pipe
/// ends the replay quietly, as [`out`] does).
struct Stdout {
    writer: std::io::BufWriter<std::io::StdoutLock<'static>>,
    failed: Option<std::io::Error>,
}

impl Stdout {
    fn new() -> Stdout {
        Stdout {
            writer: std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock()),
            failed: None,
        }
    }

    /// Writes `text`; whether the reader still reads.
    fn write(&mut self, text: &str) -> bool {
        use std::io::Write;
        if self.failed.is_none() {
            if let Err(e) = self.writer.write_all(text.as_bytes()) {
                self.failed = Some(e);
            }
        }
        self.failed.is_none()
    }

    /// Writes a request's body as it is sent, and a newline.
    fn body(&mut self, body: &revolve_core::request::Body) -> bool {
        if self.failed.is_none() {
            if let Err(e) = body.write_to(&mut self.writer) {
                self.failed = Some(e);
            }
        }
        self.write("\n")
    }

    /// Flushes, and turns a failure into the binary's error.
    fn done(&mut self) -> Result<(), Error> {
        use std::io::Write;
        if self.failed.is_none() {
            self.failed = self.writer.flush().err();
        }
        match self.failed.take() {
            None => Ok(()),
            Some(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(Error::BrokenPipe),
            Some(e) => Err(Error::Stdout(e)),
        }
    }
}

/// Streams a log's records to `record` (which says whether to go on);
/// returns how many lines were skipped.
fn each_noting(
    path: &std::path::Path,
    mut record: impl FnMut(revolve_core::Record) -> bool,
) -> Result<usize, Error> {
    let mut skipped = 0;
    log::each_record_while(path, |_, r| record(r), |_| skipped += 1)
        .map_err(|e| Error::at(path, "cannot read", e))?;
    Ok(skipped)
}

/// Says on stderr how many lines of `path` were skipped.
fn note_skipped(path: &std::path::Path, skipped: usize) {
    if skipped > 0 {
        eprintln!(
            "(skipped {skipped} unreadable line(s) of {}; replay --check lists them)",
            path.display()
        );
    }
}

/// Reports skipped lines and records that do not fit, streaming the file.
/// Torn lines (a crash mid-write) are reported but are not a failure.
fn check(store: &Store, path: &std::path::Path) -> Result<(), Error> {
    // Memory records are checked against the snapshot store of this
    // directory's memory.
    let dirs = revolve_store::memory::MemoryDirs::locate(&store.cwd, &store.project, &store.roots);
    let entries = revolve_store::refine::entries(&store.roots.state, &dirs).unwrap_or_default();
    // Edits and rewinds are checked against the content store.
    let blobs = revolve_tools::edit::Blobs::new(&store.roots.state);
    let mut state = State::default();
    let (mut records, mut notes, mut skipped) = (0usize, 0usize, 0usize);
    let (mut note_lines, mut skip_lines) = (String::new(), String::new());
    let mut all_torn = true;
    log::each_record(
        path,
        |_, r| {
            records += 1;
            let memory = revolve_core::refine::check_record(&r, &entries);
            let missing = revolve_core::edit::hashes(&r)
                .into_iter()
                .find(|h| !blobs.has(h))
                .map(|h| format!("content {h} is not in the content store"));
            let fold = state.apply(&r).map(|n| n.to_string());
            if let Some(n) = fold.or(memory).or(missing) {
                notes += 1;
                if notes <= CHECK_LISTS {
                    note_lines.push_str(&format!("  record {records}: {n}\n"));
                }
            }
        },
        |s| {
            skipped += 1;
            all_torn &= s.torn;
            if skipped <= CHECK_LISTS {
                skip_lines.push_str(&format!("  line {}: {}\n", s.line, s.why));
            }
        },
    )
    .map_err(|e| Error::at(path, "cannot read", e))?;
    if state.pending_rewind().is_some() {
        notes += 1;
        if notes <= CHECK_LISTS {
            note_lines.push_str(&format!(
                "  record {records}: a rewind logged as planned but not as done (a run \
                 stopped during it; the next start looks at its files and logs what it finds)\n"
            ));
        }
    }
    let more = |n: usize, what: &str| {
        if n > CHECK_LISTS {
            format!("  … and {} more {what}\n", n - CHECK_LISTS)
        } else {
            String::new()
        }
    };
    let text = format!(
        "{}: {records} records, {skipped} skipped line(s), {notes} inconsistenc{}\n{skip_lines}{}{note_lines}{}",
        path.display(),
        if notes == 1 { "y" } else { "ies" },
        more(skipped, "skipped lines"),
        more(notes, "inconsistencies"),
    );
    out(&text)?;
    // A file with nothing in it, or no header, is no session at all.
    if records == 0 && skipped == 0 {
        return Err(Error::Replay {
            path: path.to_owned(),
            fault: ReplayFault::Empty,
        });
    }
    if state.header().is_none() {
        return Err(Error::Replay {
            path: path.to_owned(),
            fault: ReplayFault::NoHeader,
        });
    }
    // Torn lines are what crashes leave (one each); everything else is not.
    if notes == 0 && all_torn {
        Ok(())
    } else {
        Err(Error::Replay {
            path: path.to_owned(),
            fault: ReplayFault::NotClean,
        })
    }
}

/// `/goal …` and `revolve goal …`: the standing goal of the project
/// directory `dir`, changed and saved (a command that changes nothing saves
/// nothing). The text is what the user is told.
pub(crate) fn goal(dir: &std::path::Path, args: &str) -> Result<String, Error> {
    let cmd = revolve_core::goal::parse(args).map_err(Error::Usage)?;
    let now = revolve_io::clock::now();
    revolve_store::goal::update(dir, |goals| goals.apply(&cmd, now))
        .map_err(Error::store)?
        .map_err(Error::Usage)
}

/// `revolve goal --json [ARGS]`: the change ARGS ask for, if any, then the
/// goals as `goal.json` holds them (see [`revolve_core::goal::Goals`]).
pub(crate) fn goal_json(dir: &std::path::Path, args: &str) -> Result<(), Error> {
    if !args.trim().is_empty() {
        goal(dir, args)?;
    }
    let goals = revolve_store::goal::load(dir).map_err(Error::store)?;
    json_out(&goals)
}

/// Pretty JSON and a newline on stdout.
fn json_out(value: &impl serde::Serialize) -> Result<(), Error> {
    let text = serde_json::to_string_pretty(value).map_err(Error::encode)?;
    out(&format!("{text}\n"))
}

/// `revolve init`: the project directory, created if missing, or what it
/// misses of `memory/`, `tasks/` and `subagents/` (with their templates)
/// when it exists; prints what was created.
pub(crate) fn init(store: &Store) -> Result<(), Error> {
    let dirs = revolve_store::memory::MemoryDirs::locate(&store.cwd, &store.project, &store.roots);
    let made = revolve_store::memory::ensure_project_dir(&dirs).and_then(|created| match created {
        Some(created) => Ok(Some(created)),
        None => revolve_store::memory::complete_project_dir(&dirs),
    });
    match made {
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
pub(crate) fn memory_history(
    store: &Store,
    dirs: &revolve_store::memory::MemoryDirs,
    diff: bool,
) -> Result<String, Error> {
    let (entries, diffs) = history(store, dirs, diff)?;
    Ok(revolve_core::refine::history(&entries, &diffs))
}

/// This project's memory changes, newest first, and their diffs when
/// `diff` (none otherwise).
fn history(
    store: &Store,
    dirs: &revolve_store::memory::MemoryDirs,
    diff: bool,
) -> Result<
    (
        Vec<revolve_core::refine::Entry>,
        revolve_store::refine::Diffs,
    ),
    Error,
> {
    let state = &store.roots.state;
    let entries = revolve_store::refine::entries(state, dirs).map_err(Error::store)?;
    let diffs = if diff {
        revolve_store::refine::diffs(state, dirs, &entries).map_err(Error::store)?
    } else {
        Default::default()
    };
    Ok((entries, diffs))
}

/// `revolve memory history --json`: the changes, newest first (see
/// [`revolve_core::refine::HistoryEntry`]); with `diff`, each file's diff.
pub(crate) fn memory_history_json(
    store: &Store,
    dirs: &revolve_store::memory::MemoryDirs,
    diff: bool,
) -> Result<String, Error> {
    let (entries, diffs) = history(store, dirs, diff)?;
    let list = revolve_core::refine::history_entries(&entries, &diffs, diff);
    let text = serde_json::to_string_pretty(&list).map_err(Error::encode)?;
    Ok(format!("{text}\n"))
}

/// `/refine undo` and `revolve memory undo`.
pub(crate) fn memory_undo(
    store: &Store,
    dirs: &revolve_store::memory::MemoryDirs,
) -> Result<String, Error> {
    let done = revolve_store::refine::undo(&store.roots.state, dirs)
        .map_err(Error::memory("cannot undo"))?;
    Ok(undo_text(done.as_deref()))
}

/// What an undo did, as the user reads it: the files it put back or
/// removed, or that there was nothing to undo.
pub(crate) fn undo_text(done: Option<&[String]>) -> String {
    match done {
        None => "nothing to undo\n".to_owned(),
        Some([]) => "undone (the files already matched the snapshot)\n".to_owned(),
        Some(lines) => format!(
            "undone:\n{}",
            lines
                .iter()
                .map(|l| format!("    {l}\n"))
                .collect::<String>()
        ),
    }
}

/// `revolve memory show`: where each memory file is, then the files as
/// the system prompt holds them.
pub(crate) fn memory_show(dirs: &revolve_store::memory::MemoryDirs) -> Result<String, Error> {
    use revolve_core::memory::Scope;
    let files = revolve_store::memory::load(dirs).map_err(Error::store)?;
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
pub(crate) fn replay_against(
    store: &Store,
    needle: Option<&str>,
    provider: std::sync::Arc<dyn revolve_provider::Provider>,
    model: Option<String>,
) -> Result<(), Error> {
    use revolve_core::fixture::{self, Answer};
    let path = store.find(needle)?;
    let mut records = Vec::new();
    let mut requests = Vec::new();
    // Held whole: every request goes to a model again, which is the cost
    // that matters here.
    for file in store.chain(&path) {
        let read = log::read(&file).map_err(|e| Error::at(&file, "cannot read", e))?;
        note_skipped(&file, read.skipped.len());
        // A refinement's answer is not in the log: its requests are not
        // asked again.
        let mut rebuild = state::Rebuild::default();
        for record in &read.records {
            if let Some(request) = rebuild.push(record) {
                if !matches!(record, revolve_core::Record::Refining(_)) {
                    requests.push(request);
                }
            }
        }
        records.extend(read.records);
    }
    let answers: Vec<Answer> = fixture::answers(&records)
        .into_iter()
        .filter(|a| *a != Answer::NotRecorded)
        .collect();
    if answers.len() != requests.len() {
        return Err(Error::Replay {
            path: path.to_owned(),
            fault: ReplayFault::NotWhole {
                requests: requests.len(),
                answers: answers.len(),
            },
        });
    }
    let total = requests.len();
    let mut differ = 0;
    for (i, (mut request, recorded)) in requests.into_iter().zip(answers).enumerate() {
        if let Some(model) = &model {
            request.body = request.body.with_model(model);
            // Gemini names the model in the URL, not the body.
            request.model.clone_from(model);
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
        return Err(Error::Replay {
            path: path.to_owned(),
            fault: ReplayFault::Differ { differ, total },
        });
    }
    out(&format!("all {total} answers are the same as recorded\n"))
}
