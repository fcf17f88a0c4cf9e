//! The sandbox of a `shell` command, applied (the decisions are
//! `revolve_core::sandbox`'s). On Linux, Landlock (through the crate its
//! maintainers publish): the rules are built before the fork, and the
//! child restricts itself between fork and exec, a prctl and one system
//! call. On macOS, `sandbox-exec` with a generated profile (untested here).
//! Elsewhere nothing is enforced, which [`probe`] says.

use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

use revolve_core::sandbox::{Mode, Policy, Support};

/// What this platform enforces.
pub fn probe() -> Support {
    imp::probe()
}

/// Confines `command` as `policy` says: reads anywhere; writes `tmp`, and
/// under `workspace-write` the tree `root` and the folders allowed, except
/// what is in `protect` (the tree's `.git`, revolve's state and config
/// roots: what revolve itself reads outside the sandbox); the network
/// closed when `close_network`. Call it on a command with nothing set but
/// its program and arguments (on macOS it is wrapped whole). An error means
/// the rules could not be built: the command must not run.
pub(crate) fn confine(
    command: &mut Command,
    policy: &Policy,
    close_network: bool,
    root: &Path,
    tmp: &Path,
    protect: &[PathBuf],
) -> io::Result<()> {
    let mut writable = vec![tmp.to_path_buf()];
    if policy.mode == Mode::WorkspaceWrite {
        writable.push(root.to_path_buf());
        writable.extend(policy.writable.iter().map(Into::into));
    }
    // Only what exists and lies in a writable folder needs guarding; a
    // link is judged by where it leads.
    let writable_real: Vec<PathBuf> = writable
        .iter()
        .map(|w| w.canonicalize().unwrap_or_else(|_| w.clone()))
        .collect();
    let mut guarded: Vec<PathBuf> = protect
        .iter()
        .filter_map(|p| p.canonicalize().ok())
        .filter(|p| writable_real.iter().any(|w| p.starts_with(w)))
        .collect();
    guarded.sort();
    guarded.dedup();
    imp::confine(command, &writable_real, &guarded, close_network)
}

/// What the shell tool's sandbox keeps from being written even where it
/// lies inside a writable folder: the `.git` of the tree `root` (its
/// config, hooks and fsmonitor are what revolve's own `git`, and the
/// user's, would run outside the sandbox), revolve's state root (logs,
/// inboxes, approvals) and config root (config, global memory).
pub fn protected(root: &Path, state_root: &Path, config_root: Option<&Path>) -> Vec<PathBuf> {
    let mut out = vec![root.join(".git"), state_root.to_path_buf()];
    out.extend(config_root.map(Path::to_path_buf));
    out
}

/// Keeps revolve's own environment from the commands it runs. Call it
/// first thing in `main`, while the process has one thread.
///
/// On Linux, `/proc/<pid>/environ` shows the bytes of the environment the
/// process started with, whatever it later removed or changed, so a
/// command could read the API key there (`cat /proc/$PPID/environ`). So:
/// * the process is made not dumpable (`PR_SET_DUMPABLE` 0): its `/proc`
///   files belong to root, and a command of the same user that is not
///   root cannot read them (a sandboxed command cannot either, root or
///   not: Landlock keeps it from the ptrace access those reads need);
/// * each API key variable (`keys`) is moved to a copy the C library
///   keeps, and its value in the starting environment overwritten with
///   zeros: `/proc/<pid>/environ` then holds `NAME=` and no key, even for
///   root and under `--sandbox off`, while revolve reads its key as
///   before.
///
/// Elsewhere nothing is done (there is no `/proc` to read).
pub fn shield_environment(keys: &[&str]) {
    #[cfg(target_os = "linux")]
    imp::shield_environment(keys);
    #[cfg(not(target_os = "linux"))]
    let _ = keys;
}

#[cfg(target_os = "linux")]
mod imp {
    use std::ffi::CString;
    use std::io;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::process::CommandExt;
    use std::path::{Path, PathBuf};
    use std::process::Command;

    use landlock::{
        Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd,
        Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr, Scope, ABI,
    };
    use revolve_core::sandbox::Support;
    use rustix::fs::StatVfsMountFlags;
    use rustix::mount::{MountFlags, MountPropagationFlags};
    use rustix::thread::UnshareFlags;

    /// The newest ABI whose file rights are asked for (best effort: an
    /// older kernel enforces what it has).
    const FILES: ABI = ABI::V5;

    pub(super) fn shield_environment(keys: &[&str]) {
        // Best effort: a kernel that refuses leaves the environment to
        // the overwrite below.
        let _ =
            rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable);
        for key in keys {
            let Some(value) = std::env::var_os(key) else {
                continue;
            };
            let prefix = format!("{key}=");
            // The string the starting environment holds for `key`.
            let mut start: Option<*mut std::ffi::c_char> = None;
            // SAFETY: `environ` is a null-ended array of pointers to
            // null-ended strings, read while this process has one thread
            // (the caller's promise) so nothing changes it meanwhile.
            // Only glibc's `environ` is declared by the libc crate; on
            // another C library the key stays in the starting environment,
            // which not being dumpable already keeps from commands.
            #[cfg(target_env = "gnu")]
            #[allow(unsafe_code)]
            unsafe {
                let mut entry = libc::environ.cast_const();
                while !entry.is_null() && !(*entry).is_null() {
                    let text = std::ffi::CStr::from_ptr(*entry);
                    if text.to_bytes().starts_with(prefix.as_bytes()) {
                        start = Some(*entry);
                        break;
                    }
                    entry = entry.add(1);
                }
            }
            let Some(start) = start else {
                continue;
            };
            // The C library copies the variable to memory of its own and
            // points the environment there; the old string is no longer
            // referred to by anything.
            // SAFETY: one thread (the caller's promise), as `set_var`
            // requires.
            #[allow(unsafe_code)]
            unsafe {
                std::env::set_var(key, &value);
            }
            // SAFETY: `start` points to the string found above, which is
            // writable memory (the process's initial stack, or a copy the
            // C library made) that nothing refers to any more; only its
            // value's bytes, inside its length, are overwritten.
            #[allow(unsafe_code)]
            unsafe {
                let len = std::ffi::CStr::from_ptr(start).to_bytes().len();
                let value = start.add(prefix.len()).cast::<u8>();
                for i in 0..len - prefix.len() {
                    std::ptr::write_volatile(value.add(i), 0);
                }
            }
        }
    }
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

    /// What a writable folder grants: everything but making device nodes
    /// (`mknod` of a block or character device, which as root would
    /// reach a disk) and device ioctls. No rule grants these, so no
    /// device node can be made anywhere.
    fn write_rights() -> BitFlags<AccessFs> {
        AccessFs::from_all(FILES) & !(AccessFs::MakeChar | AccessFs::MakeBlock | AccessFs::IoctlDev)
    }

    /// How the `guarded` paths are kept read-only in the child, prepared
    /// before the fork (nothing is allocated after it).
    struct Guard {
        /// Each guarded path, with the mount flags the remount must keep
        /// (a user namespace may not drop `nosuid`, `nodev`…).
        paths: Vec<(CString, MountFlags)>,
        /// Writable folders inside a guarded path (the project's inboxes,
        /// under the state root), bound writable again after it.
        reopen: Vec<(CString, MountFlags)>,
        /// `Some((uid_map, gid_map))` when not root: a user namespace is
        /// needed to make a mount namespace.
        maps: Option<(String, String)>,
    }

    impl Guard {
        fn new(guarded: &[PathBuf], writable: &[PathBuf]) -> io::Result<Guard> {
            let prepared = |path: &Path| -> io::Result<(CString, MountFlags)> {
                let keep = rustix::fs::statvfs(path)
                    .map(|s| locked_flags(s.f_flag))
                    .unwrap_or(MountFlags::empty());
                let c = CString::new(path.as_os_str().as_bytes())
                    .map_err(|_| io::Error::other("the sandbox: a path holds a NUL byte"))?;
                Ok((c, keep))
            };
            let paths = guarded
                .iter()
                .map(|p| prepared(p))
                .collect::<io::Result<Vec<_>>>()?;
            let reopen = writable
                .iter()
                .filter(|w| guarded.iter().any(|g| w.starts_with(g) && *w != g))
                .map(|w| prepared(w))
                .collect::<io::Result<Vec<_>>>()?;
            let uid = rustix::process::geteuid();
            let maps = (!uid.is_root()).then(|| {
                let gid = rustix::process::getegid().as_raw();
                let uid = uid.as_raw();
                (format!("{uid} {uid} 1\n"), format!("{gid} {gid} 1\n"))
            });
            Ok(Guard {
                paths,
                reopen,
                maps,
            })
        }

        /// In the child: a mount namespace of its own where each guarded
        /// path is bound read-only onto itself. Any failure leaves the
        /// caller to the Landlock fallback (which never grants them).
        fn apply(&self) -> io::Result<()> {
            if self.paths.is_empty() {
                return Ok(());
            }
            let flags = match &self.maps {
                None => UnshareFlags::NEWNS,
                Some(_) => UnshareFlags::NEWUSER | UnshareFlags::NEWNS,
            };
            // SAFETY: called in the child between fork and exec, where it
            // is the only thread; the namespaces it leaves are not used
            // again by anything of this process but the command it execs.
            #[allow(unsafe_code)]
            unsafe {
                rustix::thread::unshare_unsafe(flags)?;
            }
            if let Some((uid_map, gid_map)) = &self.maps {
                {
                    write_proc(c"/proc/self/setgroups", b"deny")?;
                    write_proc(c"/proc/self/uid_map", uid_map.as_bytes())?;
                    write_proc(c"/proc/self/gid_map", gid_map.as_bytes())?;
                }
            }
            // Nothing done here reaches the parent's namespace.
            rustix::mount::mount_change(
                c"/",
                MountPropagationFlags::PRIVATE | MountPropagationFlags::REC,
            )?;
            for (path, keep) in &self.paths {
                rustix::mount::mount_bind(path.as_c_str(), path.as_c_str())?;
                rustix::mount::mount_remount(
                    path.as_c_str(),
                    MountFlags::BIND | MountFlags::RDONLY | *keep,
                    c"",
                )?;
            }
            for (path, keep) in &self.reopen {
                rustix::mount::mount_bind(path.as_c_str(), path.as_c_str())?;
                rustix::mount::mount_remount(path.as_c_str(), MountFlags::BIND | *keep, c"")?;
            }
            Ok(())
        }
    }

    /// The flags of a mount that a remount of a bind of it must repeat.
    fn locked_flags(flags: StatVfsMountFlags) -> MountFlags {
        let mut out = MountFlags::empty();
        for (has, flag) in [
            (StatVfsMountFlags::NOSUID, MountFlags::NOSUID),
            (StatVfsMountFlags::NODEV, MountFlags::NODEV),
            (StatVfsMountFlags::NOEXEC, MountFlags::NOEXEC),
            (StatVfsMountFlags::NOATIME, MountFlags::NOATIME),
            (StatVfsMountFlags::NODIRATIME, MountFlags::NODIRATIME),
            (StatVfsMountFlags::RELATIME, MountFlags::RELATIME),
        ] {
            if flags.contains(has) {
                out |= flag;
            }
        }
        out
    }

    /// Writes `bytes` to a /proc file of this process (no allocation).
    fn write_proc(path: &std::ffi::CStr, bytes: &[u8]) -> io::Result<()> {
        let fd = rustix::fs::open(
            path,
            rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )?;
        rustix::io::write(&fd, bytes)?;
        Ok(())
    }

    pub(super) fn confine(
        command: &mut Command,
        writable: &[PathBuf],
        guarded: &[PathBuf],
        close_network: bool,
    ) -> io::Result<()> {
        // Two rulesets: the writable folders whole, for a child that could
        // bind the guarded paths read-only; and the writable folders minus
        // the guarded paths (Landlock only adds rights: each folder on the
        // way to a guarded path is given its other entries, not itself),
        // for one that could not.
        let whole = ruleset(writable, &[], close_network)?;
        let mut carved = if guarded.is_empty() {
            None
        } else {
            Some(ruleset(writable, guarded, close_network)?)
        };
        let guard = Guard::new(guarded, writable)?;
        let mut whole = Some(whole);
        // SAFETY: between fork and exec the child only makes system calls
        // (unshare, open/write of its own /proc files, mount, prctl,
        // landlock_restrict_self) on data prepared before the fork, and
        // closes descriptors; nothing allocates on any path (errors are
        // bare kinds). The child has one thread, as unshare(2) needs.
        #[allow(unsafe_code)]
        unsafe {
            command.pre_exec(move || {
                let ruleset = match guard.apply() {
                    Ok(()) => whole.take(),
                    Err(_) => carved.take(),
                };
                if let Some(ruleset) = ruleset {
                    ruleset
                        .restrict_self()
                        .map_err(|_| io::Error::from(io::ErrorKind::PermissionDenied))?;
                }
                Ok(())
            });
        }
        Ok(())
    }

    /// Reads everywhere; the null devices; `writable` minus `guarded`.
    fn ruleset(
        writable: &[PathBuf],
        guarded: &[PathBuf],
        close_network: bool,
    ) -> io::Result<RulesetCreated> {
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
        let mut grants = Vec::new();
        for dir in writable {
            carve(dir, guarded, true, &mut grants);
        }
        for (path, is_dir) in grants {
            let fd = PathFd::new(&path).map_err(|e| {
                io::Error::other(format!("the sandbox cannot open {}: {e}", path.display()))
            })?;
            let rights = if is_dir {
                write_rights()
            } else {
                write_rights() & AccessFs::from_file(FILES)
            };
            created = created
                .add_rule(PathBeneath::new(fd, rights))
                .map_err(fail)?;
        }
        Ok(created)
    }

    /// The paths to grant so that all of `path` but `guarded` is
    /// writable: `path` itself when nothing guarded is in it; else each
    /// of its entries, carved the same way (links are not followed: what
    /// they lead to is granted, or not, where it lies).
    fn carve(path: &Path, guarded: &[PathBuf], is_dir: bool, out: &mut Vec<(PathBuf, bool)>) {
        if guarded.iter().any(|g| g == path) {
            return;
        }
        if !guarded.iter().any(|g| g.starts_with(path)) {
            out.push((path.to_path_buf(), is_dir));
            return;
        }
        let Ok(entries) = std::fs::read_dir(path) else {
            return;
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_symlink() {
                continue;
            }
            carve(&entry.path(), guarded, kind.is_dir(), out);
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn carving_grants_everything_but_the_guarded_paths() {
            let tmp = tempfile::Builder::new()
                .prefix("revolve-carve-")
                .tempdir()
                .unwrap();
            let dir = tmp.path().to_path_buf();
            std::fs::create_dir_all(dir.join(".git/hooks")).unwrap();
            std::fs::create_dir_all(dir.join("src/deep")).unwrap();
            std::fs::write(dir.join("README"), "").unwrap();
            std::os::unix::fs::symlink("/", dir.join("out")).unwrap();
            let mut out = Vec::new();
            carve(&dir, &[dir.join(".git")], true, &mut out);
            out.sort();
            assert_eq!(
                out,
                [(dir.join("README"), false), (dir.join("src"), true)],
                "neither the tree itself, nor .git, nor a link"
            );
            let mut out = Vec::new();
            carve(&dir, &[], true, &mut out);
            assert_eq!(out, [(dir.clone(), true)]);
        }
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
        _guarded: &[PathBuf],
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

    pub(super) fn confine(
        _: &mut Command,
        _: &[PathBuf],
        _: &[PathBuf],
        _: bool,
    ) -> io::Result<()> {
        Err(io::Error::other("no sandbox on this platform"))
    }
}
