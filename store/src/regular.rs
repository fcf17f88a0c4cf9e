//! Opening a file that must be a regular file, without ever waiting on it.
//!
//! A name revolve reads can be something else: a FIFO called `x.jsonl` in
//! the sessions folder, or a device (`/dev/zero`) given to `grep`. Opening a
//! FIFO waits for a writer, and reading a device may never end. So files
//! are opened non-blocking (on unix: a FIFO opens at once, and on a regular
//! file the flag changes nothing) and their type is read from the open
//! handle, so no swap between a check and the open can slip past it;
//! anything but a regular file is refused with [`io::ErrorKind::InvalidInput`].

use std::fs::{File, Metadata, OpenOptions};
use std::io;
use std::path::Path;

/// Opens `path` with `options` if it is a regular file (symlinks
/// followed), with its metadata; anything else is an error naming its kind.
pub fn open(path: &Path, options: &mut OpenOptions) -> io::Result<(File, Metadata)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // The flag's bits fit an `int`, as `open(2)` takes them.
        options.custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
    }
    let file = options.open(path)?;
    let meta = file.metadata()?;
    if meta.is_file() {
        Ok((file, meta))
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("not a regular file ({})", kind(&meta)),
        ))
    }
}

/// Opens `path` for reading if it is a regular file (see [`open`]).
pub fn read(path: &Path) -> io::Result<(File, Metadata)> {
    open(path, OpenOptions::new().read(true))
}

/// The whole of `path` if it is a regular file (see [`open`]) of at most
/// `cap` bytes: a bigger one (or one that grows past `cap` while read) is
/// an [`io::ErrorKind::InvalidData`] error, never read on. For revolve's
/// own files (config, goal, memory, index): whatever a link or a swap put
/// at their name, a start never waits on it nor reads without end.
pub(crate) fn read_whole(path: &Path, cap: u64) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let (file, meta) = read(path)?;
    let too_big = || {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("over {cap} bytes, more than such a file holds"),
        )
    };
    if meta.len() > cap {
        return Err(too_big());
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(cap + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(too_big());
    }
    Ok(bytes)
}

/// [`read_whole`] as text; bytes that are not UTF-8 are an
/// [`io::ErrorKind::InvalidData`] error.
pub fn read_text(path: &Path, cap: u64) -> io::Result<String> {
    String::from_utf8(read_whole(path, cap)?).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        )
    })
}

/// What a file that is not a regular one is, in a few words.
pub(crate) fn kind(meta: &Metadata) -> &'static str {
    if meta.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let kind = meta.file_type();
        if kind.is_fifo() {
            return "a FIFO";
        }
        if kind.is_char_device() {
            return "a character device";
        }
        if kind.is_block_device() {
            return "a block device";
        }
        if kind.is_socket() {
            return "a socket";
        }
    }
    "not a file"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_open_and_a_fifo_does_not_wait() {
        let tmp = tempfile::Builder::new()
            .prefix("revolve-regular-")
            .tempdir()
            .unwrap();
        let dir = tmp.path().to_path_buf();
        std::fs::write(dir.join("file"), "text").unwrap();
        let (_, meta) = read(&dir.join("file")).unwrap();
        assert_eq!(meta.len(), 4);
        let refused = |path: &Path| read(path).map(|_| ()).unwrap_err().to_string();
        assert_eq!(refused(&dir), "not a regular file (a directory)");
        #[cfg(unix)]
        {
            let fifo = dir.join("fifo");
            let made = std::process::Command::new("mkfifo").arg(&fifo).status();
            assert!(made.unwrap().success(), "mkfifo");
            // A blocking open would wait here for a writer forever.
            assert_eq!(refused(&fifo), "not a regular file (a FIFO)");
            assert_eq!(
                refused(Path::new("/dev/null")),
                "not a regular file (a character device)"
            );
        }
    }

    #[test]
    fn read_whole_stops_at_its_cap_and_never_waits() {
        let tmp = tempfile::Builder::new()
            .prefix("revolve-whole-")
            .tempdir()
            .unwrap();
        let dir = tmp.path().to_path_buf();
        let file = dir.join("file");
        std::fs::write(&file, "12345").unwrap();
        assert_eq!(read_whole(&file, 5).unwrap(), b"12345");
        let err = read_whole(&file, 4).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert_eq!(err.to_string(), "over 4 bytes, more than such a file holds");
        #[cfg(unix)]
        {
            let zero = dir.join("zero");
            std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
            let err = read_whole(&zero, 4).unwrap_err();
            assert_eq!(err.to_string(), "not a regular file (a character device)");
        }
    }
}
