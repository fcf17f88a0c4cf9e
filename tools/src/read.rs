//! `read_file`: a file's text, a range of lines, bounded.

use sha2::{Digest, Sha256};

use super::*;
use revolve_core::policy::EDIT_CAP;

/// `read_file` of `path`, resolved and allowed already (`raw` as the model
/// named it, for messages), and the hash of the file's whole content when it is
/// small enough to be edited (at most [`EDIT_CAP`] bytes): the session
/// logs it as seen, so the file may be edited. The file is read once, the
/// hash taken as it goes; past the range asked for, only a file that may
/// be edited is read on (to finish its hash and count its lines), so a
/// range of a bigger file costs about the range.
pub(crate) fn read_file(
    path: &Path,
    raw: &str,
    offset: Option<u64>,
    limit: Option<u64>,
) -> Result<(String, Option<String>), String> {
    let cannot = |e: io::Error| format!("error: cannot read {raw}: {e}");
    let meta = fs::metadata(path).map_err(cannot)?;
    if meta.is_dir() {
        return Err(format!(
            "error: {raw} is a directory; list it with list_dir"
        ));
    }
    if !meta.is_file() {
        return Err(format!("error: {raw} is not a regular file"));
    }
    // Opened as a regular file only: a FIFO swapped in since the look
    // above is refused, not waited on.
    let (file, meta) = revolve_store::regular::read(path).map_err(cannot)?;
    let editable = meta.len() <= EDIT_CAP;
    let mut file = Hashing::new(file);
    let mut head = Vec::new();
    (&mut file)
        .take(BINARY_PROBE as u64)
        .read_to_end(&mut head)
        .map_err(cannot)?;
    if head.contains(&0) {
        return Err(format!(
            "error: {raw} is a binary file; inspect it with shell (for example `xxd` or `strings`)"
        ));
    }
    let mut reader = BufReader::with_capacity(64 * 1024, io::Cursor::new(head).chain(&mut file));

    let first = offset.unwrap_or(1).max(1);
    let mut buf = Vec::new();
    let mut line_no = 0u64; // lines consumed so far
    let mut consumed = 0u64; // their bytes
    while line_no + 1 < first {
        let len = next_line(&mut reader, &mut buf, 0).map_err(cannot)?;
        consumed += len as u64;
        if len == 0 {
            return Err(format!(
                "error: offset {first} is past the end of {raw}, which has {line_no} lines"
            ));
        }
        line_no += 1;
    }

    let mut out: Vec<u8> = Vec::new();
    let mut taken = 0u64;
    // (the offset to read on with, whether the line there was cut short)
    let mut stop: Option<(u64, bool)> = None;
    while limit.is_none_or(|l| taken < l) {
        let room = READ_CAP - out.len();
        let len = next_line(&mut reader, &mut buf, room).map_err(cannot)?;
        if len == 0 {
            break;
        }
        consumed += len as u64;
        line_no += 1;
        if len <= room {
            out.extend_from_slice(&buf);
            taken += 1;
        } else if taken == 0 {
            // One line longer than the cap: show its start.
            out.extend_from_slice(&buf);
            stop = Some((line_no + 1, true));
            break;
        } else {
            stop = Some((line_no, false));
            break;
        }
    }

    let mut text = String::from_utf8_lossy(&out).into_owned();
    if taken == 0 && stop.is_none() && limit != Some(0) {
        return if first == 1 {
            Ok((format!("[{raw} is empty]"), finish(&mut reader)))
        } else {
            Err(format!(
                "error: offset {first} is past the end of {raw}, which has {line_no} lines"
            ))
        };
    }
    if let Some((resume, cut_line)) = stop {
        if !text.ends_with('\n') {
            text.push('\n');
        }
        // The lines left are counted only in a file that is read on
        // anyway; a bigger one says how many bytes are left.
        let more = if editable {
            let mut rest = 0u64;
            while next_line(&mut reader, &mut buf, 0).map_err(cannot)? > 0 {
                rest += 1;
            }
            Some(if cut_line { rest } else { rest + 1 })
        } else {
            None
        };
        if cut_line {
            text.push_str(&format!(
                "[… line {} is longer than 256 KiB and was cut; read the rest of it with shell \
                 (for example `cut -c`)]\n",
                resume - 1
            ));
        }
        match more {
            Some(0) => {}
            Some(more) => text.push_str(&format!(
                "[… file continues: {more} more lines; read on with offset={resume}]"
            )),
            None => text.push_str(&format!(
                "[… file continues: {} more bytes; read on with offset={resume}]",
                meta.len().saturating_sub(consumed)
            )),
        }
    }
    let seen = if editable { finish(&mut reader) } else { None };
    Ok((text, seen))
}

/// A reader that hashes what passes through it.
struct Hashing<R> {
    inner: R,
    hasher: Sha256,
    failed: bool,
}

impl<R: Read> Hashing<R> {
    fn new(inner: R) -> Hashing<R> {
        Hashing {
            inner,
            hasher: Sha256::new(),
            failed: false,
        }
    }
}

/// Reads what `reader` has not yet, and the hash of the whole file;
/// `None` when a read failed.
fn finish<R: Read>(
    reader: &mut BufReader<io::Chain<io::Cursor<Vec<u8>>, &mut Hashing<R>>>,
) -> Option<String> {
    if io::copy(reader, &mut io::sink()).is_err() {
        return None;
    }
    let hashing = reader.get_mut().get_mut().1;
    if hashing.failed {
        return None;
    }
    Some(crate::edit::hash_digest(std::mem::take(
        &mut hashing.hasher,
    )))
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.inner.read(buf) {
            Ok(n) => {
                self.hasher.update(&buf[..n]);
                Ok(n)
            }
            Err(e) => {
                if e.kind() != io::ErrorKind::Interrupted {
                    self.failed = true;
                }
                Err(e)
            }
        }
    }
}

/// Reads one line (through its `\n`), keeping at most `keep` bytes of it in
/// `buf`; returns the line's whole length, 0 at the end of the input.
pub(crate) fn next_line(
    reader: &mut impl BufRead,
    buf: &mut Vec<u8>,
    keep: usize,
) -> io::Result<usize> {
    buf.clear();
    let mut total = 0;
    loop {
        let chunk = match reader.fill_buf() {
            Ok(chunk) => chunk,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok(total);
        }
        let (used, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        let room = keep.saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..used.min(room)]);
        reader.consume(used);
        total += used;
        if done {
            return Ok(total);
        }
    }
}
