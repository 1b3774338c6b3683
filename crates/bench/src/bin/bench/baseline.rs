//! The service built from another git revision, for `--guest-only --baseline-rev REV`.
//!
//! The revision is checked out with `git worktree add --detach` into a directory of its own
//! (the working tree, its branch and its index are left alone) and built there with the
//! overrides the current build gets. The worktree is removed when the build is done, failed or
//! not.
//!
//! It builds in a target directory of its own, [`TARGET`], never the workspace's: cargo names
//! a workspace member's artifacts by its path inside the workspace, so the revision's
//! `crates/settings` and today's would share one artifact, each taken as fresh by the other
//! build (seen: today's tree then failed to build against the revision's `Settings`).
//! [`TARGET`] is kept between runs, so only the first compiles the dependencies; a new
//! worktree's files are newer than its artifacts, so the revision's own crates are always
//! built again.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Where the baselines are built, under the workspace.
pub const TARGET: &str = "target/bench-baseline";

/// A detached worktree of one revision, removed (with its administrative files in `.git`)
/// when dropped.
struct Worktree {
    /// The repository it belongs to.
    repo: PathBuf,
    /// Where it is checked out.
    path: PathBuf,
}

impl Worktree {
    /// Checks out `commit` of the repository at `repo` into a new directory under the system's
    /// temporary directory.
    fn add(repo: &Path, commit: &str) -> Result<Worktree, String> {
        let path = std::env::temp_dir().join(format!("ts-bench-baseline-{}", std::process::id()));
        git(
            repo,
            &["worktree", "add", "--quiet", "--detach"],
            &[path.as_os_str(), commit.as_ref()],
        )?;
        Ok(Worktree {
            repo: repo.to_path_buf(),
            path,
        })
    }
}

impl Drop for Worktree {
    fn drop(&mut self) {
        let removed = git(
            &self.repo,
            &["worktree", "remove", "--force"],
            &[self.path.as_os_str()],
        );
        if let Err(e) = removed {
            eprintln!(
                "bench: the baseline's worktree {} was not removed ({e}); `git worktree remove --force {0}` removes it",
                self.path.display()
            );
        }
    }
}

/// Runs `git -C repo <args> <paths>` and returns what it printed.
fn git(repo: &Path, args: &[&str], paths: &[&std::ffi::OsStr]) -> Result<String, String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(args)
        .args(paths)
        .output()
        .map_err(|e| format!("git {}: {e}", args.join(" ")))?;
    if !out.status.success() {
        return Err(format!(
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// The commit `rev` names in the repository at `repo`, as its full hash.
///
/// # Errors
/// If `rev` names no commit there.
pub fn resolve(repo: &Path, rev: &str) -> Result<String, String> {
    let spec = format!("{rev}^{{commit}}");
    git(
        repo,
        &["rev-parse", "--verify", "--quiet", "--end-of-options"],
        &[spec.as_ref()],
    )
    .map_err(|_| format!("--baseline-rev {rev}: not a commit of {}", repo.display()))
}

/// Builds the service of `commit` (a full hash, [`resolve`]) of the repository at `root` with
/// `overrides`, and copies its module to `to`.
///
/// # Errors
/// If the worktree cannot be made, or the build or the copy fails.
pub fn build(
    root: &Path,
    commit: &str,
    to: &Path,
    overrides: &[(String, String)],
) -> Result<PathBuf, String> {
    let tree = Worktree::add(root, commit)?;
    e2e::build_service_in(&tree.path, &root.join(TARGET), to, overrides)
        .map_err(|e| format!("building {commit}: {e}"))
}
