//! Keys read one at a time from the terminal, outside the line editor: an
//! approval answered by one key (`y`, `a`, `n`; Ctrl-C, Ctrl-D and Esc are
//! no), and Esc during a turn, which interrupts it as Ctrl-C does.
//!
//! During a turn the terminal is put in non-canonical mode without echo
//! (signals stay on, so Ctrl-C still raises SIGINT) and a thread reads what
//! is typed: a lone Esc interrupts the turn; anything else is kept and
//! given back to the REPL when the turn ends, whole lines as lines typed
//! ahead and the rest as the start of the next line, as the terminal's own
//! buffer would have. An approval takes the terminal from that thread for
//! as long as it asks ([`KEYS`]).

use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use rustix::event::{poll, PollFd, PollFlags, Timespec};
use rustix::termios::{
    tcgetattr, tcsetattr, InputModes, LocalModes, OptionalActions, SpecialCodeIndex, Termios,
};

use revolve_core::edit::Answer;

/// Held by whoever reads keys now: the turn's watcher while it reads, an
/// approval for as long as it asks.
static KEYS: Mutex<()> = Mutex::new(());

const ESC: u8 = 0x1b; // not policy: the Escape key's byte
const CTRL_C: u8 = 0x03; // not policy: the byte of Ctrl-C without signals
const CTRL_D: u8 = 0x04; // not policy: the byte of Ctrl-D (end of input)

/// How long the watcher waits for a key before it looks whether the turn
/// ended, and how long the rest of an escape sequence may take to follow
/// its Esc.
const POLL_NS: i64 = 30_000_000; // not policy: a poll interval (30 ms)

/// The terminal's mode, put back when dropped.
struct Mode {
    saved: Termios,
}

impl Mode {
    /// Keys one at a time, without echo; with `signals` Ctrl-C still
    /// raises SIGINT, without it Ctrl-C is a key. None when stdin is not
    /// a terminal.
    fn keys(signals: bool) -> Option<Mode> {
        let stdin = std::io::stdin();
        let saved = tcgetattr(&stdin).ok()?;
        let mut keys = saved.clone();
        keys.local_modes
            .remove(LocalModes::ICANON | LocalModes::ECHO);
        // Enter stays `\r`, apart from Ctrl-J's `\n`.
        keys.input_modes.remove(InputModes::ICRNL);
        if !signals {
            keys.local_modes.remove(LocalModes::ISIG);
        }
        keys.special_codes[SpecialCodeIndex::VMIN] = 1;
        keys.special_codes[SpecialCodeIndex::VTIME] = 0;
        tcsetattr(&stdin, OptionalActions::Now, &keys).ok()?;
        Some(Mode { saved })
    }
}

impl Drop for Mode {
    fn drop(&mut self) {
        let _ = tcsetattr(std::io::stdin(), OptionalActions::Now, &self.saved);
    }
}

/// Whether stdin has a byte within `ns` nanoseconds.
fn ready(ns: i64) -> bool {
    let stdin = std::io::stdin();
    let mut fds = [PollFd::new(&stdin, PollFlags::IN)];
    let timeout = Timespec {
        tv_sec: 0,
        tv_nsec: ns,
    };
    poll(&mut fds, Some(&timeout)).is_ok_and(|n| n > 0)
}

/// Reads what stdin holds now (at most a buffer's worth); empty at its end.
fn read_some() -> Vec<u8> {
    let mut buf = [0u8; 256];
    match rustix::io::read(std::io::stdin().as_fd(), &mut buf[..]) {
        Ok(n) => buf[..n].to_vec(),
        Err(_) => Vec::new(),
    }
}

/// An approval's answer, one key: `y` yes, `a` always, `n`, Esc, Ctrl-C
/// or Ctrl-D no; Enter and spaces are passed over (a `y` then Enter, as
/// typed before, answers once); any other key is no. None when stdin is
/// not a terminal (the caller reads a line instead).
pub(crate) fn answer(question: &str) -> Option<Answer> {
    let _keys = KEYS.lock().unwrap_or_else(|e| e.into_inner());
    let _mode = Mode::keys(false)?;
    eprint!("{question}");
    std::io::Write::flush(&mut std::io::stderr()).ok();
    let answer = loop {
        let bytes = read_some();
        let Some(&key) = bytes.first() else {
            break Answer::No;
        };
        match key {
            b'\r' | b'\n' | b' ' if bytes.len() == 1 => continue,
            b'\r' | b'\n' | b' ' => match bytes.iter().find(|b| !b" \r\n".contains(b)) {
                Some(&key) => break from_key(key),
                None => continue,
            },
            // An arrow or another key's sequence is not an answer.
            ESC if bytes.len() > 1 || ready(POLL_NS) => {
                if bytes.len() == 1 {
                    read_some();
                }
                continue;
            }
            key => break from_key(key),
        }
    };
    eprintln!(
        "{}",
        match answer {
            Answer::Yes => "yes",
            Answer::Always => "always",
            Answer::No => "no",
        }
    );
    Some(answer)
}

/// A choice among `rows` shown on stderr, one key at a time: Up and Down
/// move the mark, Enter takes the marked row, a digit takes that row
/// (two digits typed quickly, rows 10 on), Esc, Ctrl-C, Ctrl-D or `q`
/// cancel. `None` when stdin is not a terminal; `Some(None)` cancelled.
pub(crate) fn pick(rows: &[String]) -> Option<Option<usize>> {
    let _keys = KEYS.lock().unwrap_or_else(|e| e.into_inner());
    let _mode = Mode::keys(false)?;
    let mut marked = 0;
    let draw = |marked: usize, again: bool| {
        let mut out = String::new();
        if again {
            out.push_str(&format!("\x1b[{}A", rows.len()));
        }
        for (i, row) in rows.iter().enumerate() {
            let mark = if i == marked { '›' } else { ' ' };
            out.push_str(&format!("\r\x1b[2K{mark} {row}\n"));
        }
        eprint!("{out}");
        std::io::Write::flush(&mut std::io::stderr()).ok();
    };
    draw(marked, false);
    loop {
        let mut bytes = read_some();
        // The rest of an arrow's sequence may come a moment after its Esc.
        if bytes == [ESC] && ready(POLL_NS) {
            bytes.extend(read_some());
        }
        match bytes.as_slice() {
            [] | [ESC] | [CTRL_C, ..] | [CTRL_D, ..] | [b'q'] => return Some(None),
            [b'\r' | b'\n', ..] => return Some(Some(marked)),
            [ESC, b'[' | b'O', b'A'] | [b'k'] => marked = marked.saturating_sub(1),
            [ESC, b'[' | b'O', b'B'] | [b'j'] => marked = (marked + 1).min(rows.len() - 1),
            [d @ b'0'..=b'9', rest @ ..] => {
                let mut n = usize::from(d - b'0');
                // A second digit, typed at once or within a moment.
                let second = match rest.first() {
                    Some(&d) => Some(d),
                    None if rows.len() >= 10 && ready(POLL_NS * 10) => read_some().first().copied(),
                    None => None,
                };
                if let Some(d @ b'0'..=b'9') = second {
                    n = n * 10 + usize::from(d - b'0');
                }
                if (1..=rows.len()).contains(&n) {
                    return Some(Some(n - 1));
                }
            }
            _ => {}
        }
        draw(marked, true);
    }
}

fn from_key(key: u8) -> Answer {
    match key {
        b'y' | b'Y' => Answer::Yes,
        b'a' | b'A' => Answer::Always,
        b'n' | b'N' | ESC | CTRL_C | CTRL_D => Answer::No,
        _ => Answer::No,
    }
}

/// The keys of one turn: Esc interrupts it; what else is typed is kept.
pub(crate) struct TurnKeys {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Vec<u8>>>,
    _mode: Option<Mode>,
}

impl TurnKeys {
    /// Starts watching the keys (stdin a terminal); nothing otherwise.
    pub(crate) fn start() -> TurnKeys {
        let stop = Arc::new(AtomicBool::new(false));
        let Some(mode) = Mode::keys(true) else {
            return TurnKeys {
                stop,
                thread: None,
                _mode: None,
            };
        };
        let stopped = Arc::clone(&stop);
        let thread = std::thread::spawn(move || watch(&stopped));
        TurnKeys {
            stop,
            thread: Some(thread),
            _mode: Some(mode),
        }
    }

    /// Ends the watch: the text typed during the turn, as lines ended with
    /// Enter and the start of one more.
    pub(crate) fn finish(mut self) -> Typed {
        self.stop.store(true, Ordering::SeqCst);
        let bytes = self
            .thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default();
        Typed::of(&bytes)
    }
}

impl Drop for TurnKeys {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The watcher's loop: reads keys until told to stop.
fn watch(stop: &AtomicBool) -> Vec<u8> {
    let mut typed = Vec::new();
    while !stop.load(Ordering::SeqCst) {
        if !ready(POLL_NS) {
            continue;
        }
        let _keys = KEYS.lock().unwrap_or_else(|e| e.into_inner());
        // An approval may have taken the key meanwhile.
        if !ready(0) {
            continue;
        }
        let bytes = read_some();
        if bytes.is_empty() {
            break;
        }
        if bytes == [ESC] && !ready(POLL_NS) {
            revolve_io::interrupt::interrupt();
            continue;
        }
        typed.extend(bytes);
    }
    typed
}

/// What was typed during a turn.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Typed {
    /// Lines ended with Enter, in order.
    pub(crate) lines: Vec<String>,
    /// What was typed after the last Enter.
    pub(crate) rest: String,
}

impl Typed {
    /// Bytes read in non-canonical mode: Enter ends a line, Backspace
    /// takes back a character, escape sequences and other control keys are
    /// dropped.
    fn of(bytes: &[u8]) -> Typed {
        let text = String::from_utf8_lossy(bytes);
        let mut typed = Typed::default();
        let mut line = String::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                // `\` then Enter goes on to a new line, as in the editor.
                '\r' if line.ends_with('\\') => {
                    line.pop();
                    line.push('\n');
                }
                '\r' => typed.lines.push(std::mem::take(&mut line)),
                // Ctrl-J: a newline in the line.
                '\n' => line.push('\n'),
                '\x7f' | '\x08' => {
                    line.pop();
                }
                '\x1b' => {
                    // CSI or SS3: up to the final byte.
                    if matches!(chars.peek(), Some('[' | 'O')) {
                        chars.next();
                        for c in chars.by_ref() {
                            if ('\x40'..='\x7e').contains(&c) {
                                break;
                            }
                        }
                    }
                }
                c if c.is_control() => {}
                c => line.push(c),
            }
        }
        typed.rest = line;
        typed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_ahead_is_lines_and_the_start_of_one() {
        let typed = Typed::of(b"first\rsec\x7fcond\x1b[Aline\rone\ntwo\\\rthree\rnext");
        assert_eq!(
            typed,
            Typed {
                lines: vec![
                    "first".into(),
                    "secondline".into(),
                    "one\ntwo\nthree".into()
                ],
                rest: "next".into()
            }
        );
        assert_eq!(Typed::of(b""), Typed::default());
    }

    #[test]
    fn one_key_answers() {
        assert_eq!(from_key(b'y'), Answer::Yes);
        assert_eq!(from_key(b'A'), Answer::Always);
        assert_eq!(from_key(CTRL_C), Answer::No);
        assert_eq!(from_key(b'q'), Answer::No);
    }
}
