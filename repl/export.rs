//! `revolve export` and `/export`: a session's chain of logs streamed out
//! as Markdown, one HTML page or JSON (the text is `revolve-view`'s
//! [`export`](revolve_view::export)). Records are read, turned into text
//! and written one at a time, so a log of any size exports in the memory
//! of its largest record; the HTML chart is folded first, in a pass that
//! parses only the few kinds of line it needs.

use std::io::Write;
use std::path::{Path, PathBuf};

use revolve_core::edit::Keys;
use revolve_store::log;
use revolve_store::store::Store;
use revolve_view::export::{self, html, markdown, Chart, Format, Items, CHART_KINDS};

use crate::error::Error;

/// `revolve export [NAME] --format F [-o FILE]`: the session `needle`
/// (the latest without one) to `to`, or to stdout.
pub(crate) fn export(
    store: &Store,
    needle: Option<&str>,
    format: Format,
    to: Option<&Path>,
) -> Result<(), Error> {
    let path = store.find(needle)?;
    let chain = store.chain(&path);
    match to {
        None => {
            let stdout = std::io::stdout().lock();
            let mut w = std::io::BufWriter::with_capacity(1 << 16, stdout);
            match stream(&chain, format, &revolve_tools::keys(), &mut w)
                .and_then(|()| w.flush().map_err(Failure::Write))
            {
                Ok(()) => Ok(()),
                Err(Failure::Write(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                    Err(Error::BrokenPipe)
                }
                Err(Failure::Write(e)) => Err(Error::Stdout(e)),
                Err(Failure::Read(file, e)) => Err(Error::at(&file, "cannot read", e)),
            }
        }
        Some(to) => to_file(&chain, format, to).map(|_| ()),
    }
}

/// Writes the export of the session whose chain is `chain` to the file
/// `to` (through a `.part` file beside it, renamed when whole); its size.
pub(crate) fn to_file(chain: &[PathBuf], format: Format, to: &Path) -> Result<u64, Error> {
    let mut part = to.as_os_str().to_owned();
    part.push(".part");
    let part = PathBuf::from(part);
    let file = std::fs::File::create(&part).map_err(|e| Error::at(&part, "cannot create", e))?;
    let mut w = std::io::BufWriter::with_capacity(1 << 16, file);
    let written = stream(chain, format, &revolve_tools::keys(), &mut w)
        .and_then(|()| w.flush().map_err(Failure::Write))
        .and_then(|()| w.get_ref().metadata().map_err(Failure::Write));
    let written = match written {
        Ok(meta) => meta.len(),
        Err(e) => {
            let _ = std::fs::remove_file(&part);
            return Err(match e {
                Failure::Write(e) => Error::at(to, "cannot write", e),
                Failure::Read(file, e) => Error::at(&file, "cannot read", e),
            });
        }
    };
    drop(w);
    std::fs::rename(&part, to).map_err(|e| Error::at(to, "cannot write", e))?;
    Ok(written)
}

/// Why an export stopped.
enum Failure {
    /// A log could not be read.
    Read(PathBuf, std::io::Error),
    /// The output could not be written.
    Write(std::io::Error),
}

/// The export of `chain` in `format`, written to `w` record by record.
fn stream(
    chain: &[PathBuf],
    format: Format,
    keys: &Keys,
    w: &mut dyn Write,
) -> Result<(), Failure> {
    if format == Format::Json {
        return json(chain, keys, w);
    }
    let mut chart = Chart::default();
    if format == Format::Html {
        for file in chain {
            log::each_record_of(file, &CHART_KINDS, |r| chart.push(&r))
                .map_err(|e| Failure::Read(file.clone(), e))?;
        }
        let title = chart.title().unwrap_or("session").to_owned();
        let start = html::start(&keys.redact(&title), &chart, &keys.redact(&chart.figures()));
        w.write_all(start.as_bytes()).map_err(Failure::Write)?;
    }
    let item = match format {
        Format::Html => html::item,
        _ => markdown::item,
    };
    let mut items = Items::new(keys.clone(), format.bound());
    let mut text = String::new();
    let mut failed = None;
    for file in chain {
        let mut skipped = 0usize;
        log::each_record_while(
            file,
            |_, record| {
                text.clear();
                for it in items.push(&record) {
                    item(&it, &mut text);
                }
                match w.write_all(text.as_bytes()) {
                    Ok(()) => true,
                    Err(e) => {
                        failed = Some(e);
                        false
                    }
                }
            },
            |_| skipped += 1,
        )
        .map_err(|e| Failure::Read(file.clone(), e))?;
        if let Some(e) = failed.take() {
            return Err(Failure::Write(e));
        }
        note_skipped(file, skipped);
    }
    text.clear();
    for it in items.finish() {
        item(&it, &mut text);
    }
    if format == Format::Html {
        text.push_str(&html::end());
    }
    w.write_all(text.as_bytes()).map_err(Failure::Write)
}

/// The records of `chain` as one JSON array, a record a line, keys hidden.
fn json(chain: &[PathBuf], keys: &Keys, w: &mut dyn Write) -> Result<(), Failure> {
    let mut first = true;
    let mut failed = None;
    w.write_all(b"[").map_err(Failure::Write)?;
    for file in chain {
        let mut skipped = 0usize;
        log::each_record_while(
            file,
            |_, record| {
                let line = record.to_line();
                let sep: &[u8] = if first { b"\n" } else { b",\n" };
                first = false;
                match w
                    .write_all(sep)
                    .and_then(|()| w.write_all(keys.redact(&line).as_bytes()))
                {
                    Ok(()) => true,
                    Err(e) => {
                        failed = Some(e);
                        false
                    }
                }
            },
            |_| skipped += 1,
        )
        .map_err(|e| Failure::Read(file.clone(), e))?;
        if let Some(e) = failed.take() {
            return Err(Failure::Write(e));
        }
        note_skipped(file, skipped);
    }
    w.write_all(b"\n]\n").map_err(Failure::Write)
}

/// Says on stderr how many lines of `file` were not exported.
fn note_skipped(file: &Path, skipped: usize) {
    if skipped > 0 {
        eprintln!(
            "revolve: export: skipped {skipped} unreadable line(s) of {} (replay --check lists them)",
            file.display()
        );
    }
}

/// `/export [md|html|json] [FILE]`: the running session written to FILE
/// (default: its name or id, with the format's extension, in the working
/// directory); what the user is told.
pub(crate) fn slash(store: &Store, log: &Path, title: &str, args: &str) -> Result<String, String> {
    let mut words = args.split_whitespace();
    let mut format = Format::Markdown;
    let mut file = None;
    for word in words.by_ref() {
        match Format::parse(word) {
            Some(f) if file.is_none() => format = f,
            _ if file.is_none() => file = Some(word.to_owned()),
            _ => return Err(format!("/export: one file only ({word} is a second one)")),
        }
    }
    let file = file.unwrap_or_else(|| format!("{title}.{}", format.extension()));
    let to = store.cwd.join(&file);
    let chain = store.chain(log);
    match to_file(&chain, format, &to) {
        Ok(size) => Ok(format!(
            "exported this session as {} to {} ({})",
            format.extension(),
            to.display(),
            export::size(size)
        )),
        Err(e) => Err(format!("/export: {e}")),
    }
}
