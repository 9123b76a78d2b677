//! Build script: records the git commit the `strata` binary is built from.
//!
//! Owns: the `STRATA_GIT_COMMIT` compile-time variable that `strata --version` and the bench
//! report print, so a benchmark's output names the code that produced it, not whatever the
//! checkout points at when the output is read. Must not: fail the build. Outside a git checkout
//! (a source tarball, no `git` installed) the commit is "unknown"; setting `STRATA_GIT_COMMIT`
//! in the environment overrides it. Uncommitted changes are not detected.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    Some(text.trim().to_owned()).filter(|s| !s.is_empty())
}

fn main() {
    println!("cargo:rerun-if-env-changed=STRATA_GIT_COMMIT");
    let commit = match std::env::var("STRATA_GIT_COMMIT") {
        Ok(given) if !given.is_empty() => given,
        _ => {
            // Rebuild when HEAD moves: HEAD itself (a checkout), the branch it names (a commit),
            // and packed-refs (where a branch's ref may live instead).
            if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
                println!("cargo:rerun-if-changed={dir}/HEAD");
                println!("cargo:rerun-if-changed={dir}/packed-refs");
                if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
                    println!("cargo:rerun-if-changed={dir}/{branch}");
                }
            }
            git(&["rev-parse", "--short=7", "HEAD"]).unwrap_or_else(|| "unknown".to_owned())
        }
    };
    println!("cargo:rustc-env=STRATA_GIT_COMMIT={commit}");
}
