//! The commit `revolve --version` names: `git rev-parse` of the source's
//! HEAD (uncommitted changes are not told: a build script is not run again
//! for every edit). Without git (a source tarball, a crate) the version is
//! the package's alone.
//!
//! The script is run again when HEAD moves: HEAD itself (a checkout), and
//! where the branch's commit is kept, which is either its loose ref file
//! or, once packed, `packed-refs`. Only a file that exists is named: cargo
//! takes a missing file for a changed one and would run the script, and
//! rebuild the binary, on every build.

use std::path::Path;
use std::process::Command;

fn main() {
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    let version = env!("CARGO_PKG_VERSION");
    let commit = git(&["rev-parse", "--short=12", "HEAD"]);
    let full = match &commit {
        Some(commit) => format!("{version} ({commit})"),
        None => version.to_owned(),
    };
    println!("cargo:rustc-env=REVOLVE_VERSION={full}");
    let watch = |path: &str| {
        if Path::new(path).exists() {
            println!("cargo:rerun-if-changed={path}");
            true
        } else {
            false
        }
    };
    if let Some(p) = git(&["rev-parse", "--git-path", "HEAD"]) {
        watch(&p);
    }
    if let Some(head) = git(&["symbolic-ref", "-q", "HEAD"]) {
        let loose = git(&["rev-parse", "--git-path", &head]).is_some_and(|p| watch(&p));
        if !loose {
            // The ref is packed (a fresh clone, after `git gc`): a commit
            // writes the loose file, which this build does not watch, but
            // also moves nothing in `packed-refs`; so the loose file's
            // folder is watched, whose listing changes when it appears.
            if let Some(p) = git(&["rev-parse", "--git-path", "packed-refs"]) {
                watch(&p);
            }
            if let Some(dir) = git(&["rev-parse", "--git-path", &head]).and_then(|p| {
                Path::new(&p)
                    .parent()
                    .map(|d| d.to_string_lossy().into_owned())
            }) {
                watch(&dir);
            }
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
