//! The sandbox of a `shell` command, applied (the decisions are
//! `revolve_core::sandbox`'s). On Linux, Landlock (through the crate its
//! maintainers publish): the rules are built before the fork, and the
//! child restricts itself between fork and exec, a prctl and one system
//! call. On macOS, `sandbox-exec` with a generated profile (untested here).
//! Elsewhere nothing is enforced, which [`probe`] says.

use std::io;
use std::path::Path;
use std::process::Command;

use revolve_core::sandbox::{Mode, Policy, Support};

/// What this platform enforces.
pub fn probe() -> Support {
    imp::probe()
}

/// Confines `command` as `policy` says: reads anywhere; writes `tmp`, and
/// under `workspace-write` the tree `root` and the folders allowed; the
/// network closed when `close_network`. Call it on a command with nothing
/// set but its program and arguments (on macOS it is wrapped whole). An
/// error means the rules could not be built: the command must not run.
pub(crate) fn confine(
    command: &mut Command,
    policy: &Policy,
    close_network: bool,
    root: &Path,
    tmp: &Path,
) -> io::Result<()> {
    let mut writable = vec![tmp.to_path_buf()];
    if policy.mode == Mode::WorkspaceWrite {
        writable.push(root.to_path_buf());
        writable.extend(policy.writable.iter().map(Into::into));
    }
    imp::confine(command, &writable, close_network)
}

#[cfg(target_os = "linux")]
mod imp {
    use std::io;
    use std::os::unix::process::CommandExt;
    use std::path::PathBuf;
    use std::process::Command;

    use landlock::{
        Access, AccessFs, AccessNet, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
        RulesetAttr, RulesetCreatedAttr, Scope, ABI,
    };
    use revolve_core::sandbox::Support;

    /// The newest ABI whose file rights are asked for (best effort: an
    /// older kernel enforces what it has).
    const FILES: ABI = ABI::V5;
    /// Network rules came with ABI 4, scopes (abstract unix sockets)
    /// with 6.
    const NETWORK: ABI = ABI::V4;
    const SCOPES: ABI = ABI::V6;

    /// Files any command may read and write whatever the mode: the
    /// devices that stand for nothing.
    const DEVICES: [&str; 3] = ["/dev/null", "/dev/zero", "/dev/full"];

    pub(super) fn probe() -> Support {
        let files = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessFs::from_all(ABI::V1))
            .and_then(|r| r.create())
            .is_ok();
        let network = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessNet::from_all(NETWORK))
            .and_then(|r| r.create())
            .is_ok();
        Support { files, network }
    }

    pub(super) fn confine(
        command: &mut Command,
        writable: &[PathBuf],
        close_network: bool,
    ) -> io::Result<()> {
        let fail = |e: landlock::RulesetError| io::Error::other(format!("the sandbox: {e}"));
        let mut ruleset = Ruleset::default()
            .handle_access(AccessFs::from_all(FILES))
            .map_err(fail)?;
        if close_network {
            ruleset = ruleset
                .handle_access(AccessNet::from_all(NETWORK))
                .map_err(fail)?
                .scope(Scope::AbstractUnixSocket)
                .map_err(fail)?;
            let _ = SCOPES;
        }
        let mut created = ruleset.create().map_err(fail)?;
        let read = AccessFs::from_read(FILES);
        let top = PathFd::new("/").map_err(|e| io::Error::other(format!("the sandbox: {e}")))?;
        created = created
            .add_rule(PathBeneath::new(top, read))
            .map_err(fail)?;
        for device in DEVICES {
            // A device this system lacks is simply not there to write.
            if let Ok(fd) = PathFd::new(device) {
                created = created
                    .add_rule(PathBeneath::new(fd, AccessFs::from_file(FILES)))
                    .map_err(fail)?;
            }
        }
        for dir in writable {
            let fd = PathFd::new(dir).map_err(|e| {
                io::Error::other(format!("the sandbox cannot open {}: {e}", dir.display()))
            })?;
            created = created
                .add_rule(PathBeneath::new(fd, AccessFs::from_all(FILES)))
                .map_err(fail)?;
        }
        let mut created = Some(created);
        // SAFETY: between fork and exec the child only calls prctl(2) and
        // landlock_restrict_self(2) through the crate, and closes the
        // ruleset's descriptor; nothing allocates on either path (the
        // error is a bare kind).
        #[allow(unsafe_code)]
        unsafe {
            command.pre_exec(move || {
                if let Some(ruleset) = created.take() {
                    ruleset
                        .restrict_self()
                        .map_err(|_| io::Error::from(io::ErrorKind::PermissionDenied))?;
                }
                Ok(())
            });
        }
        Ok(())
    }
}

/// macOS: the command runs under `sandbox-exec` with a generated Seatbelt
/// profile (`revolve_core::sandbox::seatbelt_profile`). Not built or run by
/// this project's CI (Linux only): untested.
#[cfg(target_os = "macos")]
mod imp {
    use std::io;
    use std::path::{Path, PathBuf};
    use std::process::Command;

    use revolve_core::sandbox::Support;

    const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

    pub(super) fn probe() -> Support {
        let present = Path::new(SANDBOX_EXEC).exists();
        Support {
            files: present,
            network: present,
        }
    }

    /// Wraps `command` (nothing set on it but its program and arguments)
    /// in `sandbox-exec -p PROFILE`.
    pub(super) fn confine(
        command: &mut Command,
        writable: &[PathBuf],
        close_network: bool,
    ) -> io::Result<()> {
        // Seatbelt sees real paths (/tmp is /private/tmp).
        let writable: Vec<String> = writable
            .iter()
            .map(|p| p.canonicalize().unwrap_or_else(|_| p.clone()))
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        let profile = revolve_core::sandbox::seatbelt_profile(&writable, close_network);
        let mut wrapped = Command::new(SANDBOX_EXEC);
        wrapped
            .arg("-p")
            .arg(profile)
            .arg(command.get_program())
            .args(command.get_args());
        *command = wrapped;
        Ok(())
    }
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
mod imp {
    use std::io;
    use std::path::PathBuf;
    use std::process::Command;

    use revolve_core::sandbox::Support;

    pub(super) fn probe() -> Support {
        Support::default()
    }

    pub(super) fn confine(_: &mut Command, _: &[PathBuf], _: bool) -> io::Result<()> {
        Err(io::Error::other("no sandbox on this platform"))
    }
}
