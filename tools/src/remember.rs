//! `remember` and `GoalProgress`: the tools that write memory and the goal.

use super::*;

/// `remember`: snapshots the project memory as a refinement would (so
/// `/refine undo` walks back over it), then writes the file atomically.
/// A refused write (an existing label without `replace`, deleting what is
/// not there) changes nothing and leaves no snapshot.
/// The result, and the snapshot entry taken when memory changed (it
/// travels to the session inside the tool's result).
pub(crate) fn remember(
    ctx: &Context,
    label: &Label,
    content: &str,
    replace: bool,
) -> (String, Option<MemoryWrite>) {
    let dir = &ctx.memory.project;
    let current = fs::read(dir.join(label.file_name())).ok();
    let change = match revolve_core::memory::remember(label, current.as_deref(), content, replace) {
        Ok(Remembered::Written(change)) => change,
        Ok(Remembered::Unchanged) => {
            return no_write(format!(
                "unchanged: project memory {} already says exactly that",
                label.file_name()
            ))
        }
        Err(refused) => return no_write(refused),
    };
    // A session that finds no project directory (a `--bare` one) makes it
    // whole first, as the first session in the project would have: its
    // memory folder alone would leave later sessions without `tasks/` or
    // `subagents/`, since no session fills in a folder that exists.
    if let Err(e) = memory::ensure_project_dir(&ctx.memory) {
        return no_write(format!(
            "error: cannot create the project directory {}: {e}",
            ctx.memory.project_dir.display()
        ));
    }
    let session = ctx
        .info
        .name
        .clone()
        .unwrap_or_else(|| ctx.info.session_id.clone());
    let meta = revolve_core::memory::remember_meta(&session, ctx.messages, label, change);
    let stamp = revolve_core::refine::stamp(ctx.now);
    let _lock = match refine::lock(&ctx.info.state_root) {
        Ok(lock) => lock,
        Err(e) => return no_write(format!("error: cannot lock the memory snapshots: {e}")),
    };
    let stamp = match refine::snapshot(&ctx.info.state_root, &ctx.memory, &stamp, &meta) {
        Ok(stamp) => stamp,
        Err(e) => {
            return no_write(format!(
                "error: cannot snapshot the memory before writing it: {e}"
            ))
        }
    };
    let written = memory::write(dir, label, content, replace);
    // An entry exists exactly when memory changed.
    let finished = match written {
        Ok(_) => refine::settle(&ctx.info.state_root, &ctx.memory, &stamp),
        Err(_) => refine::discard(&ctx.info.state_root, &ctx.memory, &stamp),
    };
    if let Err(e) = finished {
        return no_write(format!("error: cannot finish the memory snapshot: {e}"));
    }
    match written {
        Ok(_) => (
            format!(
                "{change} project memory {} ({})",
                label.file_name(),
                dir.display()
            ),
            Some(MemoryWrite {
                entry: stamp,
                files: meta
                    .files
                    .iter()
                    .map(|(file, what)| format!("{file}: {what}"))
                    .collect(),
            })
            .filter(|w| !w.files.is_empty()),
        ),
        Err(e) => (e.to_string(), None),
    }
}

fn no_write(output: String) -> (String, Option<MemoryWrite>) {
    (output, None)
}

/// `GoalProgress`: a note on the standing goal, saved beside the memory.
pub(crate) fn goal_progress(ctx: &Context, note: &str, met: bool) -> String {
    match goal::update(&ctx.memory.project_dir, |goals| {
        goals.progress(note, met, ctx.now)
    }) {
        Ok(Ok(text) | Err(text)) => text,
        Err(e) => format!("error: cannot update the goal: {e}"),
    }
}
