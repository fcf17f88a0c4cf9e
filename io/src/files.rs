//! How revolve makes its own files and folders, and says what failed.
//!
//! Errors name the operation and the path (`cannot create
//! /…/running/x.lock: File too large (os error 27)`), so a full or
//! read-only state directory is never reported as a bare OS error.

use std::io;
use std::path::Path;

/// `e` with the operation (`what`, e.g. "cannot create") and `path` in
/// front, of the same kind.
pub fn at(what: &str, path: &Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{what} {}: {e}", path.display()))
}

/// [`at`] as a closure for `map_err`.
pub fn ctx<'a>(what: &'a str, path: &'a Path) -> impl FnOnce(io::Error) -> io::Error + 'a {
    move |e| at(what, path, e)
}
