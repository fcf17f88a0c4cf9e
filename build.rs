//! The commit `revolve --version` names: `git rev-parse` of the source's
//! HEAD (uncommitted changes are not told: a build script is not run again
//! for every edit). Without git (a source tarball, a crate) the version is
//! the package's alone.

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
    // Built again when HEAD moves (a commit, a checkout).
    if let Some(p) = git(&["rev-parse", "--git-path", "HEAD"]) {
        println!("cargo:rerun-if-changed={p}");
    }
    if let Some(head) = git(&["symbolic-ref", "-q", "HEAD"]) {
        if let Some(p) = git(&["rev-parse", "--git-path", &head]) {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    if let Some(common) = git(&["rev-parse", "--git-common-dir"]) {
        println!("cargo:rerun-if-changed={common}/packed-refs");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
