//! The binary's errors (the shell's [`Error`], whose exit codes `main`
//! exits with) and writing to stdout.

pub use revolve_io::error::Error;

/// Writes to stdout, turning a closed pipe into [`Error::BrokenPipe`].
pub fn out(text: &str) -> Result<(), Error> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(Error::BrokenPipe),
        Err(e) => Err(Error::Stdout(e)),
    }
}
