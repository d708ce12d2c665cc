//! A small tmpfs for the tests of a file system that fills up (real, mounted as root).

use std::path::Path;
use std::process::Command;

/// A tmpfs of `size` mounted on a fresh temporary directory, unmounted on drop (also when
/// the test fails).
pub struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    pub fn mount(size: &str) -> Tmpfs {
        let dir = tempfile::tempdir().unwrap();
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .status()
            .expect("mount runs");
        assert!(status.success(), "mount -t tmpfs -o size={size} tmpfs {} failed", dir.path().display());
        Tmpfs { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let unmounted = Command::new("umount").arg(self.dir.path()).status().is_ok_and(|s| s.success());
        if !unmounted {
            // Still busy (a process of a failed run): detach it now, it goes when freed.
            let _ = Command::new("umount").arg("-l").arg(self.dir.path()).status();
        }
    }
}

/// Root, or a reason to skip; with CI=true a missing privilege fails the test instead.
pub fn may_mount() -> bool {
    super::root_or_skip("needs root to mount a small tmpfs")
}
