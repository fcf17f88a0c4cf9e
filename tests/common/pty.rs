//! A pseudo-terminal for a child process, from rustix (std has none): the
//! one pty helper of the tests, also used by `benches/scale/`. Works on
//! Linux and macOS; nothing is skipped when a tool is missing, because no
//! tool is run.

use std::fs::File;
use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};

use rustix::fs::{Mode, OFlags};
use rustix::io::FdFlags;
use rustix::pty::OpenptFlags;
use rustix::termios::Winsize;

/// Spawns `cmd` on a new pseudo-terminal `columns` wide and `rows` high:
/// its stdin, stdout and stderr are the terminal, in a session of its own
/// that the terminal controls (so Ctrl-C typed is its SIGINT, as in a
/// user's terminal). Returns the child and the terminal's other side: what
/// is written to it is typed, what is read from it is what the terminal
/// shows. Reading it fails (EIO on Linux) or ends (macOS) once every
/// process holding the terminal has ended. Dropping every handle on it
/// hangs the terminal up (SIGHUP).
pub fn spawn(cmd: &mut Command, columns: u16, rows: u16) -> io::Result<(Child, File)> {
    let (master, slave) = open(columns, rows)?;
    let io = |fd: &OwnedFd| fd.try_clone().map(Stdio::from);
    cmd.stdin(io(&slave)?)
        .stdout(io(&slave)?)
        .stderr(io(&slave)?);
    // SAFETY: between fork and exec only `setsid` and `ioctl`, both
    // async-signal-safe system calls; fd 0 is the terminal by then (std
    // sets up the child's stdio before it runs this).
    unsafe {
        cmd.pre_exec(|| {
            rustix::process::setsid()?;
            rustix::process::ioctl_tiocsctty(BorrowedFd::borrow_raw(0))?;
            Ok(())
        });
    }
    let child = cmd.spawn();
    // Only the child holds the terminal's side now (`cmd` let go of its
    // copies too): reading `master` ends when the child, and whatever it
    // started, is gone.
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    drop(slave);
    let child = child?;
    Ok((child, File::from(master)))
}

/// A (master, slave) pair, both close-on-exec, the slave `columns` × `rows`.
fn open(columns: u16, rows: u16) -> io::Result<(OwnedFd, OwnedFd)> {
    #[cfg(any(target_os = "linux", target_os = "freebsd", target_os = "netbsd"))]
    let flags = OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC;
    #[cfg(not(any(target_os = "linux", target_os = "freebsd", target_os = "netbsd")))]
    let flags = OpenptFlags::RDWR | OpenptFlags::NOCTTY;
    let master = rustix::pty::openpt(flags)?;
    rustix::io::fcntl_setfd(&master, FdFlags::CLOEXEC)?;
    rustix::pty::grantpt(&master)?;
    rustix::pty::unlockpt(&master)?;
    let name = rustix::pty::ptsname(&master, Vec::new())?;
    let slave = rustix::fs::open(
        name.as_c_str(),
        OFlags::RDWR | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    rustix::termios::tcsetwinsize(
        &slave,
        Winsize {
            ws_row: rows,
            ws_col: columns,
            ws_xpixel: 0,
            ws_ypixel: 0,
        },
    )?;
    Ok((master, slave))
}
