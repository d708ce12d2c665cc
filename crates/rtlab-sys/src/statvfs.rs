//! Free space of the file system holding an open file (`fstatvfs`), for writers that must
//! leave room for what comes after them (the raw sample writer keeps a reserve for run.json
//! and report.html).

use std::os::fd::AsRawFd;

/// Size and free space of a file system, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Space {
    /// Bytes an unprivileged process may still allocate (`f_bavail × f_frsize`): the
    /// blocks reserved for root are not counted, so a writer running as root stops early
    /// rather than late.
    pub available_bytes: u64,
    /// The file system's size (`f_blocks × f_frsize`).
    pub total_bytes: u64,
}

/// The space of the file system that holds `file`.
pub fn space_of(file: &impl AsRawFd) -> crate::Result<Space> {
    let mut stat = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: the descriptor is open for the lifetime of `file`, and `stat` is a valid,
    // writable statvfs buffer that fstatvfs fills completely on success.
    let rc = unsafe { libc::fstatvfs(file.as_raw_fd(), stat.as_mut_ptr()) };
    if rc != 0 {
        return Err(crate::SysError::last_os("fstatvfs"));
    }
    // SAFETY: fstatvfs returned 0, so it initialised the whole structure.
    let stat = unsafe { stat.assume_init() };
    // The fields are 32 bits wide on some targets.
    #[allow(clippy::useless_conversion)]
    let (fragment, available, blocks) = (u64::from(stat.f_frsize), u64::from(stat.f_bavail), u64::from(stat.f_blocks));
    Ok(Space { available_bytes: available.saturating_mul(fragment), total_bytes: blocks.saturating_mul(fragment) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_temporary_file_system_has_room() {
        let file = tempfile::tempfile().unwrap();
        let space = space_of(&file).unwrap();
        assert!(space.total_bytes > 0);
        assert!(space.available_bytes <= space.total_bytes);
    }
}
