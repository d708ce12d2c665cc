// Embeds the git commit so `--version` and run.json name the exact build.
//
// git runs in this crate's directory (not the build's working directory, which
// `cargo install` places elsewhere), and is asked where HEAD and the branch's ref live, so
// the commit is also refreshed in a linked worktree (where `.git` is a file). Outside a
// checkout (a source tarball) the commit is "unknown", unless the packager sets
// RTLAB_COMMIT.
use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=RTLAB_COMMIT");
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into());
    let dir = Path::new(&manifest_dir);
    let given = std::env::var("RTLAB_COMMIT").ok().filter(|c| !c.trim().is_empty());
    let commit = given.or_else(|| git(dir, &["rev-parse", "--short=12", "HEAD"])).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=RTLAB_COMMIT={commit}");

    // What moves when a commit is made or checked out: HEAD, the branch it names, and
    // packed-refs (where the branch lives after `git gc`).
    let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
    if let Some(branch) = git(dir, &["symbolic-ref", "-q", "HEAD"]) {
        watched.push(branch);
    }
    for name in watched {
        if let Some(path) = git(dir, &["rev-parse", "--path-format=absolute", "--git-path", &name]) {
            if Path::new(&path).exists() {
                println!("cargo:rerun-if-changed={path}");
            }
        }
    }
}

/// The trimmed output of a successful git command run in `dir`.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}
