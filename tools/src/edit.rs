//! File edits, executed: opening the file an edit names (confined as
//! `read_file` is), the content store that keeps every version an edit or
//! a rewind replaced, atomic writes that keep a file's mode, and restores.
//!
//! # How a write lands
//!
//! The path an edit writes is the canonical one [`open`] found. On unix
//! the write never goes by that path again: its folder is opened from `/`
//! one component at a time, none followed if it is a symlink
//! ([`at::open_dir`]), and the temp file is created, filled, given the
//! file's mode and owner, and renamed over the file relative to that
//! folder handle (`openat`, `renameat`): a folder swapped for a symlink
//! meanwhile makes the write fail, never land elsewhere. Under an
//! exclusive lock on that folder ([`write_checked`]), the file's content
//! is hashed again and compared with what the session last saw, so two
//! sessions writing one file cannot both be told their change was made.
//! A file with several hard links is replaced at its one name (the
//! others keep the old content); core tells the model and the user.
//! Elsewhere the write is the plain temp file and rename by path.
//!
//! # The content store
//!
//! `<state>/blobs/<first two hex digits>/<sha256 hex>`, one file per
//! content (0600, written by temp file and rename, never rewritten): the
//! content before and after every edit, and what a rewind overwrote. A
//! hash is `sha256:` and 64 hex digits.
//!
//! A content that holds one of this process's API keys is stored sealed
//! (`<sha256 hex>.sealed`): each key replaced by a mark naming the key's
//! own hash, never the key. Reading it puts the keys of the environment
//! back and checks the hash; with that key no longer set, the content
//! cannot be had and says so. Blobs no session file names any more are
//! removed by [`prune`], which the shell runs at most once a day.

use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use revolve_core::record::Restore;
use revolve_core::session::Opened;

use crate::Context;
use revolve_core::policy::{BLOB_PRUNE_EVERY_S, EDIT_CAP};
#[cfg(not(unix))]
use revolve_store::regular;

/// The hash naming `bytes` in the content store.
pub fn hash(bytes: &[u8]) -> String {
    hash_digest(Sha256::new_with_prefix(bytes))
}

/// The hash naming what `hasher` was fed.
pub(crate) fn hash_digest(hasher: Sha256) -> String {
    let digest = hasher.finalize();
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for b in digest {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// The hash of what the canonical `path` holds now; `None` when there is
/// no such file.
pub fn hash_of(path: &Path) -> io::Result<Option<String>> {
    // A regular file only: whatever else is there (a FIFO) is an error,
    // never waited on; and reached through no symlink (a folder swapped
    // for one since the path was resolved leads nowhere else).
    let (mut file, _) = match read_nofollow(path) {
        Ok(opened) => opened,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(Some(hash(&bytes)))
}

/// The content store under a state root.
#[derive(Clone, Debug)]
pub struct Blobs {
    dir: PathBuf,
}

impl Blobs {
    /// The store under `state_root`, its folder made on first write.
    pub fn new(state_root: &Path) -> Blobs {
        Blobs {
            dir: state_root.join("blobs"),
        }
    }

    fn path(&self, hash: &str) -> io::Result<PathBuf> {
        let hex = hash
            .strip_prefix("sha256:")
            .filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("not a content hash: {hash}"),
                )
            })?;
        Ok(self.dir.join(&hex[..2]).join(hex))
    }

    /// Whether the store holds `hash` (by name; [`Blobs::get`] checks
    /// the bytes).
    pub fn has(&self, hash: &str) -> bool {
        self.path(hash)
            .is_ok_and(|p| p.is_file() || sealed_path(&p).is_file())
    }

    /// Stores `bytes`; their hash.
    pub fn put(&self, bytes: &[u8]) -> io::Result<String> {
        let hash = hash(bytes);
        self.put_as(&hash, bytes)?;
        Ok(hash)
    }

    /// Stores `bytes` under `hash`, which the caller took of these very
    /// bytes ([`open`] did, and shell tracking): not hashed again.
    pub(crate) fn put_as(&self, hash: &str, bytes: &[u8]) -> io::Result<()> {
        let path = self.path(hash)?;
        let sealed = seal(bytes, &crate::keys());
        let path = match sealed {
            Some(_) => sealed_path(&path),
            None => path,
        };
        if path.exists() {
            return Ok(());
        }
        let dir = path.parent().unwrap_or(&self.dir);
        revolve_store::files::create_dir_all(dir)?;
        revolve_store::fsx::write_atomic(&path, sealed.as_deref().unwrap_or(bytes))
    }

    /// The content stored under `hash`.
    pub fn get(&self, hash: &str) -> io::Result<Vec<u8>> {
        let path = self.path(hash)?;
        let sealed = sealed_path(&path);
        if !path.exists() && sealed.is_file() {
            let bytes = unseal(&fs::read(&sealed)?, &crate::keys()).map_err(|mark| {
                io::Error::new(
                    io::ErrorKind::NotFound,
                    format!(
                        "content {hash} held an API key that is not set now (key {mark}); set it again to restore this content"
                    ),
                )
            })?;
            if self::hash(&bytes) != hash {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "content store file {} does not hold {hash}",
                        sealed.display()
                    ),
                ));
            }
            return Ok(bytes);
        }
        let bytes = fs::read(&path).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "content {hash} is not in the store ({}): {e}",
                    path.display()
                ),
            )
        })?;
        if self::hash(&bytes) != hash {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("content store file {} does not hold {hash}", path.display()),
            ));
        }
        Ok(bytes)
    }
}

/// The name of the sealed form of the blob at `path`.
fn sealed_path(path: &Path) -> PathBuf {
    path.with_extension("sealed")
}

/// The mark a key is stored as: its own hash's first 16 hex digits,
/// between NUL bytes and a word no text holds by chance.
fn mark(key: &str) -> Vec<u8> {
    let hash = hash(key.as_bytes());
    let mut out = b"\0revolve-key:".to_vec();
    out.extend_from_slice(&hash.as_bytes()[7..23]);
    out.push(0);
    out
}

/// `bytes` with every key replaced by its [`mark`]; `None` when it holds
/// none.
fn seal(bytes: &[u8], keys: &revolve_core::edit::Keys) -> Option<Vec<u8>> {
    let mut out: Option<Vec<u8>> = None;
    for key in keys.values() {
        let from = out.as_deref().unwrap_or(bytes);
        if let Some(replaced) = replace_all(from, key.as_bytes(), &mark(key)) {
            out = Some(replaced);
        }
    }
    out
}

/// [`seal`] undone with `keys`; a mark no key of `keys` has is the error.
fn unseal(bytes: &[u8], keys: &revolve_core::edit::Keys) -> Result<Vec<u8>, String> {
    let mut out = bytes.to_vec();
    for key in keys.values() {
        if let Some(replaced) = replace_all(&out, &mark(key), key.as_bytes()) {
            out = replaced;
        }
    }
    let prefix = b"\0revolve-key:";
    match out.windows(prefix.len()).position(|w| w == prefix) {
        Some(at) => {
            let start = at + prefix.len();
            let end = (start + 16).min(out.len());
            Err(String::from_utf8_lossy(&out[start..end]).into_owned())
        }
        None => Ok(out),
    }
}

/// `bytes` with every `from` replaced by `to`; `None` when there is none.
fn replace_all(bytes: &[u8], from: &[u8], to: &[u8]) -> Option<Vec<u8>> {
    if from.is_empty() || bytes.len() < from.len() {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    let mut found = false;
    while at < bytes.len() {
        if bytes[at..].starts_with(from) {
            out.extend_from_slice(to);
            at += from.len();
            found = true;
        } else {
            out.push(bytes[at]);
            at += 1;
        }
    }
    found.then_some(out)
}

/// [`prune`] when the last one was [`BLOB_PRUNE_EVERY_S`] or more ago (a
/// stamp file, `blobs/.pruned`, says when); `None` when it was not due.
pub fn prune_due(state_root: &Path, sessions_root: &Path) -> io::Result<Option<usize>> {
    let stamp = state_root.join("blobs").join(".pruned");
    let every = std::time::Duration::from_secs(BLOB_PRUNE_EVERY_S);
    let recent = fs::metadata(&stamp)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|at| at.elapsed().ok())
        .is_some_and(|age| age < every);
    if recent || !state_root.join("blobs").is_dir() {
        return Ok(None);
    }
    revolve_store::fsx::write_atomic(&stamp, b"")?;
    prune(state_root, sessions_root, every).map(Some)
}

/// Removes the blobs older than `min_age` that no session file under
/// `sessions_root` names (by its `sha256:` hash, anywhere in the file),
/// and says how many went. A folder or file that cannot be read keeps
/// every blob: nothing is removed on a guess.
pub fn prune(
    state_root: &Path,
    sessions_root: &Path,
    min_age: std::time::Duration,
) -> io::Result<usize> {
    let dir = state_root.join("blobs");
    if !dir.is_dir() {
        return Ok(0);
    }
    let mut named = std::collections::HashSet::new();
    let mut stack = vec![sessions_root.to_path_buf()];
    while let Some(folder) = stack.pop() {
        let entries = match fs::read_dir(&folder) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        for entry in entries {
            let entry = entry?;
            let kind = entry.file_type()?;
            let path = entry.path();
            if kind.is_dir() {
                stack.push(path);
            } else if kind.is_file() && path.extension().is_some_and(|e| e == "jsonl") {
                let text = fs::read(&path)?;
                let prefix = b"sha256:";
                let mut at = 0;
                while let Some(found) = text[at..].windows(prefix.len()).position(|w| w == prefix) {
                    let start = at + found + prefix.len();
                    let hex = &text[start..(start + 64).min(text.len())];
                    if hex.len() == 64 && hex.iter().all(u8::is_ascii_hexdigit) {
                        named.insert(String::from_utf8_lossy(hex).into_owned());
                    }
                    at = start;
                }
            }
        }
    }
    let mut removed = 0;
    for shard in fs::read_dir(&dir)? {
        let shard = shard?;
        if !shard.file_type()?.is_dir() {
            continue;
        }
        for blob in fs::read_dir(shard.path())? {
            let blob = blob?;
            let name = blob.file_name().to_string_lossy().into_owned();
            let hex = name.strip_suffix(".sealed").unwrap_or(&name);
            // Temp files of a write under way and anything else: left.
            if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                continue;
            }
            let young = blob
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|at| at.elapsed().ok())
                .is_none_or(|age| age < min_age);
            if !young && !named.contains(hex) && fs::remove_file(blob.path()).is_ok() {
                removed += 1;
            }
        }
    }
    Ok(removed)
}

/// Opens the file an edit names: confined like `read_file` (inside the
/// working tree or a grant; `..` and symlinks resolved first), a regular
/// file if it exists, its folder existing if it does not. Says whether it
/// is outside the working tree, under `state` (revolve's own files) or in
/// the tree's `.git`: core decides what that allows.
pub fn open(ctx: &Context, grants: &[String], raw: &str, state: &Path) -> Result<Opened, String> {
    let mut opened = open_confined(ctx, grants, raw)?;
    let path = Path::new(&opened.path);
    let state = fs::canonicalize(state).unwrap_or_else(|_| state.to_path_buf());
    opened.outside = !path.starts_with(&ctx.root);
    opened.own = path.starts_with(&state);
    opened.git = path.starts_with(ctx.root.join(".git"));
    Ok(opened)
}

fn open_confined(ctx: &Context, grants: &[String], raw: &str) -> Result<Opened, String> {
    crate::tree_unchanged(ctx)?;
    let scope = crate::Scope::new(&ctx.root, grants);
    let path = match scope.resolve(raw) {
        Ok(path) => path,
        Err(e) if e.starts_with("error: no such file") => {
            // A new file: its folder must exist and may be written.
            let joined = ctx.root.join(raw);
            let name = joined
                .file_name()
                .filter(|n| *n != "..")
                .ok_or_else(|| format!("error: {raw} names no file"))?
                .to_owned();
            let parent = joined.parent().unwrap_or(Path::new("/"));
            let dir = match fs::canonicalize(parent) {
                Ok(dir) if scope.allows(&dir) => dir,
                Ok(_) => return Err(crate::refusal(raw)),
                Err(_) if scope.allows(&crate::lexical(parent)) => {
                    return Err(format!(
                    "error: the folder of {raw} does not exist; create it first (shell: mkdir -p)"
                ))
                }
                Err(_) => return Err(crate::refusal(raw)),
            };
            if !dir.is_dir() {
                return Err(format!("error: the folder of {raw} is not a directory"));
            }
            // A dangling symlink: writing would replace the link with a
            // file (and a rewind would then remove it as revolve's own).
            let at = dir.join(&name);
            if at.symlink_metadata().is_ok() {
                let target = fs::read_link(&at).unwrap_or_default();
                if !scope.allows(&crate::lexical(&dir.join(&target))) {
                    return Err(crate::refusal(raw));
                }
                return Err(format!(
                    "error: {raw} is a symlink to {}, which does not exist; write that path \
                     instead",
                    target.display()
                ));
            }
            return Ok(Opened {
                path: utf8(&dir.join(name), raw)?,
                shown: raw.to_owned(),
                ..Opened::default()
            });
        }
        Err(e) => return Err(e),
    };
    // Read through the folder handle too: the file read is the one at the
    // canonical path, whatever was swapped since it was resolved.
    let (file, meta) =
        read_nofollow(&path).map_err(|e| format!("error: cannot open {raw}: {e}"))?;
    if meta.len() > EDIT_CAP {
        return Err(format!(
            "error: {raw} is {} bytes; files over {EDIT_CAP} bytes are not edited",
            meta.len()
        ));
    }
    let mut content = Vec::with_capacity(meta.len() as usize);
    io::Read::read_to_end(&mut &file, &mut content)
        .map_err(|e| format!("error: cannot read {raw}: {e}"))?;
    Ok(Opened {
        path: utf8(&path, raw)?,
        shown: raw.to_owned(),
        hash: Some(hash(&content)),
        content: Some(content),
        mode: mode_of(&meta),
        links: links_of(&meta),
        ..Opened::default()
    })
}

/// The path as core holds it, which must be the very path: one that is
/// not UTF-8 would be written as another (its bytes decoded lossily).
fn utf8(path: &Path, raw: &str) -> Result<String, String> {
    path.to_str().map(str::to_owned).ok_or_else(|| {
        format!(
            "error: {raw} leads to {}, a path that is not UTF-8; edit it with shell",
            path.display()
        )
    })
}

/// Opens the regular file at the canonical `path` without following a
/// symlink anywhere on the way (on unix; elsewhere, by path).
fn read_nofollow(path: &Path) -> io::Result<(fs::File, fs::Metadata)> {
    #[cfg(unix)]
    {
        let (dir, name) = at::split(path)?;
        let dir = at::open_dir(dir)?;
        match at::open_file(&dir, name)? {
            Some(file) => {
                let meta = file.metadata()?;
                Ok((file, meta))
            }
            None => Err(io::Error::new(io::ErrorKind::NotFound, "no such file")),
        }
    }
    #[cfg(not(unix))]
    regular::read(path)
}

#[cfg(unix)]
fn links_of(meta: &fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::nlink(meta)
}

#[cfg(not(unix))]
fn links_of(_: &fs::Metadata) -> u64 {
    1
}

#[cfg(unix)]
fn mode_of(meta: &fs::Metadata) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt;
    Some(meta.permissions().mode() & 0o7777)
}

#[cfg(not(unix))]
fn mode_of(_: &fs::Metadata) -> Option<u32> {
    None
}

/// Stores the contents of an edit: the one before (when the file exists)
/// and the one after; the hash of the one after.
pub fn stage(blobs: &Blobs, before: Option<(&[u8], &str)>, after: &[u8]) -> io::Result<String> {
    if let Some((before, hash)) = before {
        blobs.put_as(hash, before)?;
    }
    blobs.put(after)
}

/// What a write expects to find at the file before replacing it.
#[derive(Clone, Copy, Debug)]
pub enum Expect<'a> {
    /// Whatever is there (a rewind's restore, which checked before).
    Any,
    /// The content of this hash (`None`: no file), as the session last
    /// saw it; else the write is refused and nothing changes.
    Holds(Option<&'a str>),
}

/// Writes a user's file whole or not at all, with `mode` (the file's own,
/// kept; 0644 for a new file) and its owner and group kept where allowed,
/// relative to a folder handle no symlink swap redirects, and only if the
/// file holds what `expect` says, checked under an exclusive lock on the
/// folder held through the rename (see the module doc).
pub fn write_checked(
    path: &Path,
    bytes: &[u8],
    mode: Option<u32>,
    expect: Expect<'_>,
) -> io::Result<()> {
    #[cfg(unix)]
    {
        at::write(path, bytes, mode, expect)
    }
    #[cfg(not(unix))]
    {
        if let Expect::Holds(want) = expect {
            check(hash_of(path)?.as_deref(), want)?;
        }
        write_atomic(path, bytes, mode)
    }
}

/// The error of a file that no longer holds what the session saw.
fn check(now: Option<&str>, want: Option<&str>) -> io::Result<()> {
    if now == want {
        return Ok(());
    }
    let what = match (want, now) {
        (None, _) => "it was created meanwhile (by another session or program)",
        (Some(_), None) => "it was removed meanwhile (by another session or program)",
        (Some(_), Some(_)) => {
            "it changed on disk since this session read it (another session or program wrote it)"
        }
    };
    Err(io::Error::other(format!(
        "{what}; read it again before changing it"
    )))
}

/// Writes a user's file whole or not at all ([`revolve_store::fsx`]: temp file
/// beside it, fsynced, renamed over it, folder fsynced), with `mode` (the
/// file's own, kept) or, for a new file, 0644 as an editor under the usual
/// umask makes it. By path: [`write_checked`] is the edit's write.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: Option<u32>) -> io::Result<()> {
    revolve_store::fsx::write_atomic_with(path, |file| {
        file.write_all(bytes)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            file.set_permissions(fs::Permissions::from_mode(
                mode.unwrap_or(revolve_core::policy::NEW_FILE_MODE),
            ))?;
        }
        #[cfg(not(unix))]
        let _ = mode;
        Ok(())
    })
}

/// Puts each file back as a rewind decided: what it holds now is stored
/// first (so nothing is lost, forced or not), then the content `to` is
/// written (keeping the file's mode), or the file removed. Goes on past a
/// failure; the errors, one per file that failed, with its path (the
/// caller hashes the files after, and core decides from what they hold).
pub fn restore(blobs: &Blobs, files: &[Restore]) -> Vec<(String, String)> {
    let mut errors = Vec::new();
    for f in files {
        let path = Path::new(&f.path);
        let done = (|| -> io::Result<()> {
            // What is there now is stored first, and its mode kept: one
            // open of a regular file gives both (a FIFO is refused).
            let mode = match read_nofollow(path) {
                Ok((mut file, meta)) => {
                    let mut now = Vec::new();
                    file.read_to_end(&mut now)?;
                    blobs.put(&now)?;
                    mode_of(&meta)
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => None,
                Err(e) => return Err(e),
            };
            match &f.to {
                Some(hash) => write_checked(path, &blobs.get(hash)?, mode, Expect::Any),
                None => match remove_nofollow(path) {
                    Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
                    _ => Ok(()),
                },
            }
        })();
        if let Err(e) = done {
            errors.push((f.path.clone(), format!("cannot restore it: {e}")));
        }
    }
    errors
}

/// Removes the file at the canonical `path` through its folder handle
/// (on unix), so a folder swapped for a symlink removes nothing elsewhere.
fn remove_nofollow(path: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        let (dir, name) = at::split(path)?;
        let dir = at::open_dir(dir)?;
        rustix::fs::unlinkat(&dir, name, rustix::fs::AtFlags::empty())?;
        Ok(())
    }
    #[cfg(not(unix))]
    fs::remove_file(path)
}

/// Files reached through folder handles (`openat`), never by path.
#[cfg(unix)]
mod at {
    use std::ffi::OsStr;
    use std::fs::File;
    use std::io::{self, Read, Write};
    use std::os::fd::OwnedFd;
    use std::path::{Component, Path};

    use rustix::fs::{self as rfs, AtFlags, FileType, FlockOperation, Mode, OFlags};
    use rustix::io::Errno;

    use super::{check, hash, Expect};
    use revolve_core::policy::{EDIT_CAP, NEW_FILE_MODE};

    /// The folder and the name of a canonical absolute `path`.
    pub(super) fn split(path: &Path) -> io::Result<(&Path, &OsStr)> {
        match (path.parent(), path.file_name()) {
            (Some(dir), Some(name)) if path.is_absolute() => Ok((dir, name)),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("not an absolute path to a file: {}", path.display()),
            )),
        }
    }

    /// Opens the folder `dir` (absolute, canonical) from `/`, one
    /// component at a time, following no symlink: a component that is
    /// one now (swapped since `dir` was resolved) is an error.
    pub(super) fn open_dir(dir: &Path) -> io::Result<OwnedFd> {
        let flags = OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC;
        let mut fd = rfs::open("/", flags, Mode::empty())?;
        for part in dir.components() {
            match part {
                Component::RootDir => {}
                Component::Normal(name) => {
                    fd = rfs::openat(&fd, name, flags | OFlags::NOFOLLOW, Mode::empty()).map_err(
                        |e| match e {
                            Errno::LOOP | Errno::NOTDIR => io::Error::new(
                                io::ErrorKind::InvalidInput,
                                format!(
                                    "{} is no longer the folder it was (a symlink or not a \
                                     folder now); nothing was written",
                                    dir.display()
                                ),
                            ),
                            e => e.into(),
                        },
                    )?;
                }
                _ => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("not a canonical path: {}", dir.display()),
                    ))
                }
            }
        }
        Ok(fd)
    }

    /// Opens `name` in `dir` for reading if it is a regular file, without
    /// following a symlink or waiting on a FIFO; `None` if there is none.
    pub(super) fn open_file(dir: &OwnedFd, name: &OsStr) -> io::Result<Option<File>> {
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd = match rfs::openat(dir, name, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(None),
            Err(Errno::LOOP) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "not a regular file (a symlink)",
                ))
            }
            Err(e) => return Err(e.into()),
        };
        let stat = rfs::fstat(&fd)?;
        if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a regular file",
            ));
        }
        Ok(Some(File::from(fd)))
    }

    /// [`super::write_checked`] on unix.
    pub(super) fn write(
        path: &Path,
        bytes: &[u8],
        mode: Option<u32>,
        expect: Expect<'_>,
    ) -> io::Result<()> {
        let (dir_path, name) = split(path)?;
        let dir = open_dir(dir_path)?;
        // Held until `dir` is closed, after the rename: another revolve
        // writing a file of this folder waits, then sees this content.
        rfs::flock(&dir, FlockOperation::LockExclusive)?;
        let now = open_file(&dir, name)?;
        let owner = match &now {
            Some(file) => Some(rfs::fstat(file)?),
            None => None,
        };
        if let Expect::Holds(want) = expect {
            let held = match now {
                Some(file) => {
                    // Larger than an edit may be: not what was seen.
                    let mut content = Vec::new();
                    file.take(EDIT_CAP + 1).read_to_end(&mut content)?;
                    Some(hash(&content))
                }
                None => None,
            };
            check(held.as_deref(), want)?;
        }
        let tmp = temp_name(name);
        let create =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = rfs::openat(&dir, &tmp, create, Mode::from_raw_mode(0o600))?;
        let mut file = File::from(fd);
        let done = (|| -> io::Result<()> {
            file.write_all(bytes)?;
            if let Some(st) = &owner {
                // Keep the owner and group where allowed: not root (or
                // not a member of the group), the file stays the writer's.
                match rfs::fchown(
                    &file,
                    Some(rustix::fs::Uid::from_raw(st.st_uid)),
                    Some(rustix::fs::Gid::from_raw(st.st_gid)),
                ) {
                    Ok(()) | Err(Errno::PERM) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            // After the chown, which clears set-id bits.
            rfs::fchmod(
                &file,
                Mode::from_raw_mode(mode.unwrap_or(NEW_FILE_MODE) as _),
            )?;
            file.sync_all()?;
            rfs::renameat(&dir, &tmp, &dir, name)?;
            Ok(())
        })();
        if done.is_err() {
            rfs::unlinkat(&dir, &tmp, AtFlags::empty()).ok();
        }
        done?;
        // Best effort, as for revolve's own files.
        rfs::fsync(&dir).ok();
        Ok(())
    }

    /// A hidden temp name beside `name`, unique across processes.
    fn temp_name(name: &OsStr) -> String {
        let beside = revolve_store::fsx::temp_sibling(Path::new(name));
        beside.to_string_lossy().into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh, empty temp folder for one test: its guard, which removes
    /// it when dropped, and its path.
    fn temp(name: &str) -> (tempfile::TempDir, PathBuf) {
        let tmp = tempfile::Builder::new()
            .prefix(&format!("revolve-edit-{name}-"))
            .tempdir()
            .unwrap();
        let dir = tmp.path().to_path_buf();
        (tmp, dir)
    }

    #[test]
    fn the_store_gives_back_exact_bytes_and_checks_them() {
        let (_tmp, dir) = temp("store");
        let blobs = Blobs::new(&dir);
        let h = blobs.put(b"one\r\ntwo\xff").unwrap();
        assert!(h.starts_with("sha256:") && h.len() == 71, "{h}");
        assert_eq!(blobs.get(&h).unwrap(), b"one\r\ntwo\xff");
        assert_eq!(blobs.put(b"one\r\ntwo\xff").unwrap(), h);
        assert!(blobs.get("sha256:00").is_err());
        assert!(blobs.get("../../etc/passwd").is_err());
    }

    #[cfg(unix)]
    #[test]
    fn a_write_keeps_the_mode_and_a_restore_puts_back_and_removes() {
        use std::os::unix::fs::PermissionsExt;
        let (_tmp, dir) = temp("write");
        let blobs = Blobs::new(&dir.join("state"));
        let file = dir.join("run.sh");
        fs::write(&file, "echo a\n").unwrap();
        fs::set_permissions(&file, fs::Permissions::from_mode(0o755)).unwrap();
        let before = blobs.put(b"echo a\n").unwrap();
        write_atomic(&file, b"echo b\n", Some(0o755)).unwrap();
        assert_eq!(fs::read(&file).unwrap(), b"echo b\n");
        assert_eq!(
            fs::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o755
        );
        let created = dir.join("new.txt");
        fs::write(&created, "x").unwrap();
        let errors = restore(
            &blobs,
            &[
                Restore {
                    path: file.to_string_lossy().into_owned(),
                    from: None,
                    to: Some(before),
                },
                Restore {
                    path: created.to_string_lossy().into_owned(),
                    from: None,
                    to: None,
                },
            ],
        );
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(fs::read(&file).unwrap(), b"echo a\n");
        assert_eq!(
            fs::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o755
        );
        assert!(!created.exists());
        // What was overwritten is in the store.
        assert_eq!(blobs.get(&hash(b"echo b\n")).unwrap(), b"echo b\n");
        let leftovers: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty());
    }

    #[cfg(unix)]
    #[test]
    fn a_checked_write_refuses_a_file_that_changed_and_follows_no_swapped_folder() {
        let (_tmp, dir) = temp("checked");
        let file = dir.join("a.txt");
        fs::write(&file, "one\n").unwrap();
        let seen = hash(b"one\n");
        // Changed since it was seen: refused, unchanged.
        fs::write(&file, "other\n").unwrap();
        let e = write_checked(&file, b"mine\n", None, Expect::Holds(Some(&seen))).unwrap_err();
        assert!(e.to_string().contains("read it again"), "{e}");
        assert_eq!(fs::read(&file).unwrap(), b"other\n");
        // Created since it was seen absent: refused too.
        let e = write_checked(&file, b"mine\n", None, Expect::Holds(None)).unwrap_err();
        assert!(e.to_string().contains("created meanwhile"), "{e}");
        // As seen: written.
        let now = hash(b"other\n");
        write_checked(&file, b"mine\n", None, Expect::Holds(Some(&now))).unwrap();
        assert_eq!(fs::read(&file).unwrap(), b"mine\n");
        // A folder swapped for a symlink to elsewhere: the write fails
        // and nothing lands there.
        let sub = dir.join("sub");
        let away = dir.join("away");
        fs::create_dir_all(&away).unwrap();
        std::os::unix::fs::symlink(&away, &sub).unwrap();
        let e = write_checked(&sub.join("b.txt"), b"x", None, Expect::Holds(None)).unwrap_err();
        assert!(e.to_string().contains("no longer the folder it was"), "{e}");
        assert_eq!(fs::read_dir(&away).unwrap().count(), 0);
        // Nor is a symlink at the file's own name written through.
        let link = dir.join("link.txt");
        std::os::unix::fs::symlink(away.join("t.txt"), &link).unwrap();
        assert!(write_checked(&link, b"x", None, Expect::Holds(None)).is_err());
        assert_eq!(fs::read_dir(&away).unwrap().count(), 0);
        let leftovers = fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .count();
        assert_eq!(leftovers, 0);
    }

    #[cfg(unix)]
    #[test]
    #[ignore = "needs root"]
    fn a_checked_write_keeps_the_owner_where_allowed() {
        use std::os::unix::fs::MetadataExt;
        let (_tmp, dir) = temp("owner");
        let file = dir.join("a.txt");
        fs::write(&file, "one\n").unwrap();
        std::os::unix::fs::chown(&file, Some(4242), Some(4343))
            .expect("this test needs root (run it with sudo, or in CI as root)");
        write_checked(&file, b"two\n", Some(0o640), Expect::Any).unwrap();
        let meta = fs::metadata(&file).unwrap();
        assert_eq!(
            (meta.uid(), meta.gid(), meta.mode() & 0o777),
            (4242, 4343, 0o640)
        );
    }
}
