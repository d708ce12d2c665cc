//! Advisory whole-file locks (flock(2)): one rtlab process at a time on a shared file (the
//! tracefs mount's lock, a monitor's history). Independent of the fcntl byte-range locks
//! SQLite takes on the same file.

use std::fs::File;
use std::os::fd::AsRawFd;

/// flock(2) on `file`, retried when a signal interrupts it.
pub fn flock(file: &File, operation: libc::c_int) -> Result<(), std::io::Error> {
    loop {
        // SAFETY: flock on a descriptor this `File` owns; no memory arguments.
        let rc = unsafe { libc::flock(file.as_raw_fd(), operation) };
        if rc == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Takes an exclusive lock on `file` without waiting: Ok(false) when another process holds
/// one. The lock lasts as long as the file stays open.
pub fn try_lock_exclusive(file: &File) -> Result<bool, std::io::Error> {
    match flock(file, libc::LOCK_EX | libc::LOCK_NB) {
        Ok(()) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::EWOULDBLOCK) => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_until_the_first_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, "x").unwrap();
        let first = File::open(&path).unwrap();
        let second = File::open(&path).unwrap();
        assert!(try_lock_exclusive(&first).unwrap());
        assert!(!try_lock_exclusive(&second).unwrap());
        drop(first);
        assert!(try_lock_exclusive(&second).unwrap());
    }
}
