//! Secret files (the station's key, the monitor's bearer token) read as ssh reads its keys:
//! opened once without following a symbolic link, judged by that descriptor (a regular
//! file, owned by the reader or root, no group or other permission bits), then read.

use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

/// Larger than any key or token; a bigger file is not one.
pub const MAX_SECRET_BYTES: u64 = 4096;

/// Why a secret file was refused; the messages say what to do.
#[derive(Debug, thiserror::Error)]
pub enum SecretFileError {
    #[error("is a symbolic link: give the file itself")]
    SymbolicLink,
    #[error("cannot read it: {0}")]
    Io(#[from] std::io::Error),
    #[error("is not a regular file")]
    NotRegular,
    #[error("is owned by uid {owner}, neither you (uid {euid}) nor root: another user could change it")]
    Owner { owner: u32, euid: u32 },
    #[error("can be read or changed by other users (mode {mode:04o}): chmod 600 it")]
    Mode { mode: u32 },
    #[error("holds more than {MAX_SECRET_BYTES} bytes: not a key")]
    TooLarge,
}

/// The bytes of the secret file at `path`, after the checks of the module documentation.
pub fn read_private_file(path: &Path) -> Result<Vec<u8>, SecretFileError> {
    let mut file =
        std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC).open(path).map_err(
            |e| if e.raw_os_error() == Some(libc::ELOOP) { SecretFileError::SymbolicLink } else { e.into() },
        )?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(SecretFileError::NotRegular);
    }
    // SAFETY: geteuid has no arguments and cannot fail.
    let euid = unsafe { libc::geteuid() };
    if meta.uid() != euid && meta.uid() != 0 {
        return Err(SecretFileError::Owner { owner: meta.uid(), euid });
    }
    if meta.mode() & 0o077 != 0 {
        return Err(SecretFileError::Mode { mode: meta.mode() & 0o7777 });
    }
    let mut bytes = Vec::new();
    (&mut file).take(MAX_SECRET_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_SECRET_BYTES {
        return Err(SecretFileError::TooLarge);
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn private(dir: &Path, name: &str, text: &[u8], mode: u32) -> std::path::PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        path
    }

    #[test]
    fn only_a_private_regular_file_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let good = private(dir.path(), "good", b"a secret\n", 0o600);
        assert_eq!(read_private_file(&good).unwrap(), b"a secret\n");
        assert_eq!(read_private_file(&private(dir.path(), "ro", b"k", 0o400)).unwrap(), b"k");
        for mode in [0o640, 0o604, 0o660, 0o644] {
            let path = private(dir.path(), &format!("m{mode:o}"), b"k", mode);
            assert!(matches!(read_private_file(&path), Err(SecretFileError::Mode { mode: m }) if m == mode));
        }
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&good, &link).unwrap();
        assert!(matches!(read_private_file(&link), Err(SecretFileError::SymbolicLink)));
        assert!(matches!(read_private_file(dir.path()), Err(SecretFileError::NotRegular)));
        assert!(matches!(read_private_file(&dir.path().join("missing")), Err(SecretFileError::Io(_))));
        let big = private(dir.path(), "big", &vec![b'k'; MAX_SECRET_BYTES as usize + 1], 0o600);
        assert!(matches!(read_private_file(&big), Err(SecretFileError::TooLarge)));
        // SAFETY: geteuid has no arguments and cannot fail.
        if unsafe { libc::geteuid() } == 0 {
            std::os::unix::fs::chown(&good, Some(65534), None).unwrap();
            assert!(matches!(read_private_file(&good), Err(SecretFileError::Owner { owner: 65534, .. })));
        }
    }
}
