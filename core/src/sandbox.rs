//! The sandbox every `shell` command runs in: its mode, what it lets a
//! command write and reach, what to do where the platform cannot enforce
//! it, and how a failure it likely caused is told to the model.
//!
//! The shell probes what the platform enforces ([`Support`]) and applies
//! the rules (Landlock on Linux, in the child before `exec`); the decisions
//! are here.
//!
//! | mode | reads | writes | network |
//! |---|---|---|---|
//! | `read-only` | anywhere the user can | the command's own `$TMPDIR` | none, unless `--network` |
//! | `workspace-write` (default) | anywhere the user can | the working tree, `$TMPDIR`, `--writable` folders | none, unless `--network` |
//! | `off` | anywhere | anywhere | any |

use serde::Serialize;

/// How a command is confined.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Reads anywhere; writes only its own temp dir.
    ReadOnly,
    /// Writes the working tree, its temp dir and the folders allowed.
    #[default]
    WorkspaceWrite,
    /// No sandbox.
    Off,
}

impl Mode {
    /// The mode a flag or config value names.
    pub fn parse(text: &str) -> Result<Mode, String> {
        match text {
            "read-only" => Ok(Mode::ReadOnly),
            "workspace-write" => Ok(Mode::WorkspaceWrite),
            "off" => Ok(Mode::Off),
            other => Err(format!(
                "unknown sandbox mode {other:?}: use read-only, workspace-write or off"
            )),
        }
    }

    /// The name `--sandbox` takes, as the status line shows it.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::ReadOnly => "read-only",
            Mode::WorkspaceWrite => "workspace-write",
            Mode::Off => "off",
        }
    }
}

/// What the platform can enforce, as the shell found at start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Support {
    /// File-system rules (Landlock, Linux 5.13).
    pub files: bool,
    /// TCP bind and connect rules (Landlock ABI 4, Linux 6.7).
    pub network: bool,
}

/// What happens to a command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Enforcement {
    /// Confined: file rules always, network rules when `network` is
    /// closed (and the platform can close it).
    Sandboxed {
        /// Whether the network is closed to it too.
        close_network: bool,
    },
    /// Run as it is: `--sandbox off`, or a terminal user warned once.
    Unsandboxed,
    /// Not run: this is its result (pipe mode where nothing can be
    /// enforced, unless `--sandbox off`).
    Refused(String),
}

/// The sandbox of a session: what was asked, and what is enforced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    /// The mode asked for (`--sandbox`).
    pub mode: Mode,
    /// Whether commands may use the network.
    pub network: bool,
    /// Folders commands may write besides the tree and their temp dir
    /// (absolute), under `workspace-write`.
    pub writable: Vec<String>,
    /// What the platform and the mode make of a command.
    pub enforcement: Enforcement,
}

impl Policy {
    /// No sandbox: what tests of other things, and `--sandbox off`, run.
    pub fn off() -> Policy {
        Policy {
            mode: Mode::Off,
            network: true,
            writable: Vec::new(),
            enforcement: Enforcement::Unsandboxed,
        }
    }
}

impl Policy {
    /// This policy for a planning session's command: read-only where the
    /// sandbox is enforced; refused where nothing could stop a write.
    pub fn read_only(&self) -> Policy {
        let enforcement = match &self.enforcement {
            Enforcement::Sandboxed { .. } | Enforcement::Refused(_) => self.enforcement.clone(),
            Enforcement::Unsandboxed => Enforcement::Refused(
                "error: not run: this session is planning, so commands run read-only, and no \
                 sandbox enforces that here (the sandbox is off, or this system has no \
                 Landlock)"
                    .to_owned(),
            ),
        };
        Policy {
            mode: Mode::ReadOnly,
            enforcement,
            ..self.clone()
        }
    }
}

/// The session's sandbox for `mode` on a platform with `support`, and the
/// line to say once on stderr, if any. Without file rules a terminal user
/// is told commands run unsandboxed; without a terminal they are refused
/// (nobody watches), unless the mode is `off`. Without network rules the
/// network stays open, said once.
pub fn policy(
    mode: Mode,
    network: bool,
    writable: Vec<String>,
    support: Support,
    interactive: bool,
) -> (Policy, Option<String>) {
    let (enforcement, note) = match mode {
        Mode::Off => (
            Enforcement::Unsandboxed,
            Some("shell commands run without a sandbox (--sandbox off)".to_owned()),
        ),
        _ if !support.files && interactive => (
            Enforcement::Unsandboxed,
            Some(format!(
                "this system offers no sandbox (Landlock), so shell commands run without the \
                 {} one; --sandbox off says that is meant",
                mode.as_str()
            )),
        ),
        _ if !support.files => (
            Enforcement::Refused(format!(
                "error: not run: the {} sandbox cannot be enforced on this system (no \
                 Landlock), and without a terminal commands do not run unsandboxed; the user \
                 can allow that with --sandbox off",
                mode.as_str()
            )),
            Some(format!(
                "this system offers no sandbox (Landlock): shell commands are refused without \
                 a terminal unless --sandbox off is given (--sandbox {})",
                mode.as_str()
            )),
        ),
        _ => {
            let note = (!network && !support.network).then(|| {
                "the sandbox cannot close the network here (Landlock network rules need Linux \
                 6.7): shell commands may still reach it"
                    .to_owned()
            });
            (
                Enforcement::Sandboxed {
                    close_network: !network && support.network,
                },
                note,
            )
        }
    };
    (
        Policy {
            mode,
            network,
            writable,
            enforcement,
        },
        note,
    )
}

/// What a sandboxed command gets appended to its result when its output
/// reads like a refusal (permission denied, a read-only file system, a
/// network unreachable), whatever its exit status (`a; b` ends as `b`
/// did), so the model does not take it for the user's files or machine;
/// `None` for anything else.
pub fn refusal_note(policy: &Policy, output: &str) -> Option<String> {
    if !matches!(policy.enforcement, Enforcement::Sandboxed { .. }) {
        return None;
    }
    const SIGNS: [&str; 5] = [
        "Permission denied",
        "Operation not permitted",
        "Read-only file system",
        "Network is unreachable",
        "Could not resolve host",
    ];
    if !SIGNS.iter().any(|s| output.contains(s)) {
        return None;
    }
    let writes = match policy.mode {
        Mode::ReadOnly => "only its own $TMPDIR".to_owned(),
        _ if policy.writable.is_empty() => "only inside the working tree and $TMPDIR".to_owned(),
        _ => format!(
            "only inside the working tree, $TMPDIR and {}",
            policy.writable.join(", ")
        ),
    };
    let network = if policy.network {
        "may use the network"
    } else {
        "may not use the network"
    };
    Some(format!(
        "[the sandbox ({}) may have refused this: a command here writes {writes} and {network}. \
         Do not work around it; if the task needs more, tell the user, who can allow it \
         (--writable DIR, --network, --sandbox).]",
        policy.mode.as_str()
    ))
}

/// The Seatbelt profile (`sandbox-exec -p`, macOS) of a command that may
/// write only `writable` (absolute, canonical folders) and the devices
/// that stand for nothing, and reach no IP network when `close_network`.
/// Everything else stays as the user may (reads, processes, IPC), as the
/// Linux rules leave it.
pub fn seatbelt_profile(writable: &[String], close_network: bool) -> String {
    // SBPL strings are Scheme strings: a backslash and a quote escaped.
    let quote = |path: &str| format!("\"{}\"", path.replace('\\', "\\\\").replace('"', "\\\""));
    let mut profile = String::from("(version 1)\n(allow default)\n(deny file-write*)\n");
    for device in ["/dev/null", "/dev/zero", "/dev/tty", "/dev/dtracehelper"] {
        profile.push_str(&format!(
            "(allow file-write* (literal {}))\n",
            quote(device)
        ));
    }
    for dir in writable {
        profile.push_str(&format!("(allow file-write* (subpath {}))\n", quote(dir)));
    }
    if close_network {
        profile.push_str(
            "(deny network-outbound (remote ip))\n(deny network-inbound (local ip))\n\
             (deny network-bind (local ip))\n",
        );
    }
    profile
}

#[cfg(test)]
mod tests {
    use super::*;

    const FULL: Support = Support {
        files: true,
        network: true,
    };

    #[test]
    fn modes_parse_and_print_back() {
        for mode in [Mode::ReadOnly, Mode::WorkspaceWrite, Mode::Off] {
            assert_eq!(Mode::parse(mode.as_str()), Ok(mode));
        }
        assert!(Mode::parse("strict")
            .unwrap_err()
            .contains("read-only, workspace-write or off"));
        assert_eq!(Mode::default(), Mode::WorkspaceWrite);
    }

    #[test]
    fn what_is_enforced_where() {
        let (p, note) = policy(Mode::WorkspaceWrite, false, vec![], FULL, false);
        assert_eq!(
            p.enforcement,
            Enforcement::Sandboxed {
                close_network: true
            }
        );
        assert_eq!(note, None);
        let (p, _) = policy(Mode::ReadOnly, true, vec![], FULL, false);
        assert_eq!(
            p.enforcement,
            Enforcement::Sandboxed {
                close_network: false
            }
        );
        // No network rules: open, said once.
        let old = Support {
            files: true,
            network: false,
        };
        let (p, note) = policy(Mode::WorkspaceWrite, false, vec![], old, false);
        assert_eq!(
            p.enforcement,
            Enforcement::Sandboxed {
                close_network: false
            }
        );
        assert!(note.unwrap().contains("cannot close the network"));
        // No Landlock: a terminal runs unsandboxed, told; a pipe refuses.
        let none = Support::default();
        let (p, note) = policy(Mode::WorkspaceWrite, false, vec![], none, true);
        assert_eq!(p.enforcement, Enforcement::Unsandboxed);
        assert!(note.unwrap().contains("no sandbox"));
        let (p, _) = policy(Mode::ReadOnly, false, vec![], none, false);
        assert!(
            matches!(p.enforcement, Enforcement::Refused(ref why) if why.contains("--sandbox off"))
        );
        // Off is off everywhere, and said.
        for support in [FULL, none] {
            let (p, note) = policy(Mode::Off, false, vec![], support, false);
            assert_eq!(p.enforcement, Enforcement::Unsandboxed);
            assert!(note.is_some());
        }
    }

    #[test]
    fn a_seatbelt_profile_denies_writes_but_where_allowed() {
        let profile = seatbelt_profile(&["/Users/me/repo".into(), "/tmp/a \"b\\".into()], true);
        assert_eq!(
            profile,
            "(version 1)\n(allow default)\n(deny file-write*)\n\
             (allow file-write* (literal \"/dev/null\"))\n\
             (allow file-write* (literal \"/dev/zero\"))\n\
             (allow file-write* (literal \"/dev/tty\"))\n\
             (allow file-write* (literal \"/dev/dtracehelper\"))\n\
             (allow file-write* (subpath \"/Users/me/repo\"))\n\
             (allow file-write* (subpath \"/tmp/a \\\"b\\\\\"))\n\
             (deny network-outbound (remote ip))\n(deny network-inbound (local ip))\n\
             (deny network-bind (local ip))\n"
        );
        assert!(!seatbelt_profile(&[], false).contains("network"));
    }

    #[test]
    fn planning_is_read_only_or_refused() {
        let (p, _) = policy(Mode::WorkspaceWrite, false, vec![], FULL, false);
        let planning = p.read_only();
        assert_eq!(planning.mode, Mode::ReadOnly);
        assert_eq!(planning.enforcement, p.enforcement);
        assert!(matches!(
            Policy::off().read_only().enforcement,
            Enforcement::Refused(ref why) if why.contains("planning")
        ));
    }

    #[test]
    fn a_refusal_is_named_only_for_a_sandboxed_command_whose_output_reads_like_one() {
        let (p, _) = policy(
            Mode::WorkspaceWrite,
            false,
            vec!["/data".into()],
            FULL,
            false,
        );
        let denied = "touch: cannot touch '/etc/x': Permission denied";
        let note = refusal_note(&p, denied).unwrap();
        assert!(note.contains("workspace-write"), "{note}");
        assert!(note.contains("$TMPDIR and /data"), "{note}");
        assert!(note.contains("may not use the network"), "{note}");
        assert_eq!(refusal_note(&p, "error: no such file"), None);
        assert_eq!(refusal_note(&Policy::off(), denied), None);
    }
}
