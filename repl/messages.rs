//! Names as addresses: `revolve send` queues a message in a running
//! session's inbox; `revolve attach` follows a running session's log as it
//! is written and sends what the user types. Neither writes the session's
//! log: the session itself logs what it takes from its inbox.

use std::io::{IsTerminal, Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use revolve_core::record::Record;
use revolve_io::{clock, interrupt};
use revolve_store::inbox::Inbox;
use revolve_store::registry::Running;
use revolve_store::store::Store;
use revolve_view as view;

use crate::error::{out, Error};

/// The running session `name` of this directory, or one clear error: no
/// such session, one that is not running, one of another directory.
pub(crate) fn running(store: &Store, name: &str) -> Result<Running, Error> {
    if let Some(r) = store
        .running()
        .into_iter()
        .find(|r| r.name.as_deref() == Some(name))
    {
        return Ok(r);
    }
    let elsewhere = revolve_store::registry::running(&store.roots.running(&store.project))
        .into_iter()
        .find(|r| r.name.as_deref() == Some(name));
    if let Some(r) = elsewhere {
        return Err(Error::Usage(format!(
            "session '{name}' runs in another directory ({}); its name is an address there",
            r.cwd
        )));
    }
    let known = store
        .list()
        .map_err(|e| Error::at(&store.sessions_dir(), "cannot list", e))?
        .into_iter()
        .any(|s| s.name.as_deref() == Some(name));
    if known {
        Err(Error::NotRunning(name.to_owned()))
    } else {
        Err(Error::Usage(format!(
            "no session '{name}' in {} (revolve sessions lists them)",
            store.cwd.display()
        )))
    }
}

/// `revolve send NAME TEXT`: queues the message for the running session.
pub(crate) fn send(
    store: &Store,
    name: &str,
    words: Vec<String>,
    from: Option<String>,
) -> Result<(), Error> {
    running(store, name)?;
    let text = if words.is_empty() {
        crate::stdin::read_all().map_err(Error::Stdin)?
    } else {
        words.join(" ")
    };
    let text = text.trim_end_matches('\n');
    if text.trim().is_empty() {
        return Err(Error::Usage("nothing to send: the message is empty".into()));
    }
    let from = from
        .or_else(|| std::env::var("REVOLVE_SESSION").ok())
        .filter(|f| !f.trim().is_empty())
        .unwrap_or_else(|| "send".to_owned());
    eprintln!("{}", queue(store, name, &from, text)?);
    Ok(())
}

/// Queues `text` from `from` in the inbox of `name`, a session of this
/// directory found running; says what was done (`revolve send` and the
/// REPL's `/send`).
pub(crate) fn queue(store: &Store, name: &str, from: &str, text: &str) -> Result<String, Error> {
    let inbox = Inbox::of(&store.roots, &store.project, &store.cwd, name);
    let seq = inbox
        .send(from, text, clock::now())
        .map_err(|e| Error::at(inbox.dir(), "cannot queue the message in", e))?;
    Ok(format!(
        "queued for {name} (message {seq}); it takes it before its next turn"
    ))
}

/// The names of this directory's running sessions but `own` (the
/// addresses the REPL's `/send` completes), sorted.
pub(crate) fn others(store: &Store, own: Option<&str>) -> Vec<String> {
    let mut names: Vec<String> = store
        .running()
        .into_iter()
        .filter_map(|r| r.name)
        .filter(|n| Some(n.as_str()) != own)
        .collect();
    names.sort();
    names.dedup();
    names
}

/// How often attach looks for new lines and checks the session still runs.
const POLL: Duration = Duration::from_millis(100); // not policy: a poll interval

/// `revolve attach NAME`: the conversation so far, then every record as the
/// session writes it; each line typed goes to the session's inbox. Ctrl-D
/// detaches; the session ending ends the attach.
pub(crate) fn attach(store: &Store, name: &str) -> Result<(), Error> {
    let session = running(store, name)?;
    let inbox = Inbox::of(&store.roots, &store.project, &store.cwd, name);
    let path = store.path_of(&session.id);
    let tty = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    let ended = Arc::new(AtomicBool::new(false));
    eprintln!(
        "attached to {name} ({}); what you type is sent to it, Ctrl-D detaches",
        path.display()
    );
    let mut follow = Follow::new(store.clone(), path);
    // The conversation so far, then the follower.
    let shown = follow.poll()?;
    print_inert(&shown, tty)?;
    let mut editor = if tty {
        Some(
            rustyline::DefaultEditor::new()
                .map_err(Error::terminal("cannot start the line editor"))?,
        )
    } else {
        None
    };
    // Printed as it comes, over the prompt if need be (rustyline's external
    // printer would redraw the prompt, but then a pasted line waits in its
    // buffer for the next key).
    let printer = |text: String| {
        out(&text).ok();
    };
    let waker = interrupt::Waker::this_thread();
    {
        let ended = Arc::clone(&ended);
        let name = name.to_owned();
        let running_dir = store.roots.running(&store.project);
        std::thread::spawn(move || loop {
            std::thread::sleep(POLL);
            match follow.poll() {
                Ok(text) if !text.is_empty() => printer(inert(&text, tty)),
                Ok(_) => {}
                Err(e) => printer(format!("revolve: {e}\n")),
            }
            let id = follow.id();
            if !revolve_store::registry::is_running(&running_dir, &id) {
                // Whatever it wrote last, then the end.
                if let Ok(text) = follow.poll() {
                    printer(inert(&text, tty));
                }
                printer(format!("── {name} stopped running; detached\n"));
                ended.store(true, Ordering::SeqCst);
                if tty {
                    waker.wake();
                } else {
                    std::process::exit(0);
                }
                return;
            }
        });
    }
    match editor.as_mut() {
        Some(editor) => loop {
            match editor.readline(&format!("{name}› ")) {
                Ok(line) => send_line(&inbox, name, &line)?,
                Err(rustyline::error::ReadlineError::Interrupted) => {
                    if ended.load(Ordering::SeqCst) {
                        return Ok(());
                    }
                }
                Err(rustyline::error::ReadlineError::Eof) => break,
                Err(e) => return Err(Error::terminal("cannot read the terminal")(e)),
            }
        },
        None => {
            for line in crate::stdin::lines() {
                let line = line.map_err(Error::Stdin)?;
                send_line(&inbox, name, &line)?;
            }
        }
    }
    eprintln!("detached from {name}; it goes on running");
    Ok(())
}

fn send_line(inbox: &Inbox, name: &str, line: &str) -> Result<(), Error> {
    if line.trim().is_empty() {
        return Ok(());
    }
    inbox
        .send("attach", line, clock::now())
        .map_err(|e| Error::at(inbox.dir(), "cannot queue the message in", e))?;
    eprintln!("(sent to {name})");
    Ok(())
}

fn inert(text: &str, tty: bool) -> String {
    if tty {
        view::inert(text).into_owned()
    } else {
        text.to_owned()
    }
}

fn print_inert(text: &str, tty: bool) -> Result<(), Error> {
    out(&inert(text, tty))
}

/// Reads a session's log as it grows, across the files a compaction
/// starts: each call renders the complete lines written since the last.
struct Follow {
    store: Store,
    path: PathBuf,
    offset: u64,
    /// The start of a line not yet complete.
    pending: Vec<u8>,
    /// The first read shows only the end of a long conversation.
    first: bool,
}

/// How much of the conversation attach shows first, at most.
const FIRST_SHOWS_BYTES: usize = revolve_core::policy::ATTACH_SHOWS_BYTES;

impl Follow {
    fn new(store: Store, path: PathBuf) -> Follow {
        Follow {
            store,
            path,
            offset: 0,
            pending: Vec::new(),
            first: true,
        }
    }

    /// The id of the file followed now.
    fn id(&self) -> String {
        self.path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    fn poll(&mut self) -> Result<String, Error> {
        let mut tail = view::TranscriptTail::new(if self.first {
            FIRST_SHOWS_BYTES
        } else {
            usize::MAX
        });
        self.first = false;
        loop {
            let next = self.read_new(&mut tail)?;
            match next {
                Some(next) => {
                    // Compacted: the session goes on in the next file.
                    self.path = self.store.path_of(&next);
                    self.offset = 0;
                    self.pending.clear();
                }
                None => break,
            }
        }
        Ok(tail.finish())
    }

    /// Renders the new complete lines; the next file's id when the session
    /// went on in one.
    fn read_new(&mut self, tail: &mut view::TranscriptTail) -> Result<Option<String>, Error> {
        let mut file = match revolve_store::regular::read(&self.path) {
            Ok((f, _)) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::at(&self.path, "cannot read", e)),
        };
        let mut bytes = Vec::new();
        file.seek(SeekFrom::Start(self.offset))
            .and_then(|_| file.read_to_end(&mut bytes))
            .map_err(|e| Error::at(&self.path, "cannot read", e))?;
        self.offset += bytes.len() as u64;
        self.pending.extend_from_slice(&bytes);
        let Some(end) = self.pending.iter().rposition(|&b| b == b'\n') else {
            return Ok(None);
        };
        let complete: Vec<u8> = self.pending.drain(..=end).collect();
        let mut next = None;
        for line in complete.split(|&b| b == b'\n') {
            let Ok(line) = std::str::from_utf8(line) else {
                continue;
            };
            if let Ok(record) = Record::parse_line(line) {
                if let Record::Continued(c) = &record {
                    next = Some(c.next.clone());
                }
                tail.push(&record);
            }
        }
        Ok(next.filter(|n| self.store.path_of(n).is_file()))
    }
}
