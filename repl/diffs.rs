//! `/diff`: the changes this session's edits made, from its log's `edit`
//! records (not `git diff`: a change revolve did not make is not in it),
//! each as the unified diff logged with it, in order; a rewound edit is
//! left out.

use revolve_core::record::Record;

use crate::console::Live;

/// The text `/diff` shows (coloured by the caller on a terminal).
pub(crate) fn session(live: &Live) -> Result<String, String> {
    let standing: Vec<(&str, &str)> = live
        .state()
        .edits()
        .iter()
        .filter(|e| !e.rewound)
        .map(|e| (e.call.as_str(), e.path.as_str()))
        .collect();
    if standing.is_empty() {
        return Ok("no changes: this session made no edit that stands\n".to_owned());
    }
    let mut records = Vec::new();
    // A compacted session's edits are in the files before this one too.
    let store = live.store();
    for file in store.chain(&store.head(live.path())) {
        let read = revolve_store::log::read(&file)
            .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
        records.extend(read.records);
    }
    let edits: Vec<revolve_core::record::Edit> = records
        .into_iter()
        .filter_map(|r| match r {
            Record::Edit(e) => Some(e),
            _ => None,
        })
        .collect();
    Ok(revolve_view::session_diff(&edits, &standing))
}
