//! Stdin as text: bytes that are not UTF-8 (a Latin-1 log piped in, say)
//! are read as U+FFFD instead of ending the run, and stderr says so once.

use std::io::{BufRead, Read};
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether the run has said that stdin held bytes that are not UTF-8.
static TOLD: AtomicBool = AtomicBool::new(false);

/// The whole of stdin.
pub(crate) fn read_all() -> std::io::Result<String> {
    let mut bytes = Vec::new();
    std::io::stdin().lock().read_to_end(&mut bytes)?;
    Ok(decode(bytes))
}

/// Stdin's lines, without their `\n` or `\r\n`, as [`BufRead::lines`]
/// gives them but never failing on bytes that are not UTF-8.
pub(crate) fn lines() -> impl Iterator<Item = std::io::Result<String>> {
    let mut stdin = std::io::stdin().lock();
    std::iter::from_fn(move || {
        let mut bytes = Vec::new();
        match stdin.read_until(b'\n', &mut bytes) {
            Ok(0) => None,
            Ok(_) => {
                if bytes.ends_with(b"\n") {
                    bytes.pop();
                    if bytes.ends_with(b"\r") {
                        bytes.pop();
                    }
                }
                Some(Ok(decode(bytes)))
            }
            Err(e) => Some(Err(e)),
        }
    })
}

/// `bytes` as text, lossily; the first lossy decoding of the run is said.
fn decode(bytes: Vec<u8>) -> String {
    match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => {
            if !TOLD.swap(true, Ordering::SeqCst) {
                eprintln!(
                    "revolve: stdin is not valid UTF-8: the bytes that are not are read as U+FFFD (\u{FFFD})"
                );
            }
            String::from_utf8_lossy(e.as_bytes()).into_owned()
        }
    }
}

/// Whether stdin has something to read: not a terminal, and not at its end
/// (waits for the first byte, which stays buffered for [`lines`] and
/// [`read_all`]). A read error counts as input: reading it later says why.
pub(crate) fn has_input(tty: bool) -> bool {
    if tty {
        return false;
    }
    std::io::stdin()
        .lock()
        .fill_buf()
        .map_or(true, |buf| !buf.is_empty())
}
