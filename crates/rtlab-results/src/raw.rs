//! Raw sample files (`samples/*.bin` of a results directory): the format, and reading it.
//! `rtlab-probe` writes them from its sampling threads' rings.
//!
//! File format (documented in docs/raw-samples.md), little-endian:
//! - header, 16 bytes: magic `RTLABRAW`, u16 format version (1), u16 record size (24),
//!   u32 reserved (0);
//! - records, 24 bytes each: u64 `expected_ns` (the programmed absolute CLOCK_MONOTONIC
//!   expiry), i64 `value_ns` (the sample, e.g. timer latency), u32 `cpu`, u32 `flags`
//!   (bit 0: this wake-up overran, i.e. later expiries were skipped).

use crate::ResultsError;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

pub const MAGIC: &[u8; 8] = b"RTLABRAW";
pub const FORMAT_VERSION: u16 = 1;
pub const HEADER_SIZE: usize = 16;
pub const RECORD_SIZE: usize = 24;
/// Flag bit: the wake-up of this sample overran one or more later expiries.
pub const FLAG_OVERRUN: u32 = 1;

/// One raw sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RawSample {
    pub expected_ns: u64,
    pub value_ns: i64,
    pub cpu: u32,
    pub flags: u32,
}

impl RawSample {
    pub fn overran(&self) -> bool {
        self.flags & FLAG_OVERRUN != 0
    }

    /// The record as written: 24 bytes, little-endian.
    pub fn to_bytes(self) -> [u8; RECORD_SIZE] {
        let mut b = [0u8; RECORD_SIZE];
        b[0..8].copy_from_slice(&self.expected_ns.to_le_bytes());
        b[8..16].copy_from_slice(&self.value_ns.to_le_bytes());
        b[16..20].copy_from_slice(&self.cpu.to_le_bytes());
        b[20..24].copy_from_slice(&self.flags.to_le_bytes());
        b
    }

    /// A record as read.
    pub fn from_bytes(b: &[u8; RECORD_SIZE]) -> Self {
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        Self { expected_ns: u64_at(0), value_ns: u64_at(8) as i64, cpu: u32_at(16), flags: u32_at(20) }
    }
}

/// The 16-byte file header.
pub fn header() -> [u8; HEADER_SIZE] {
    let mut h = [0u8; HEADER_SIZE];
    h[0..8].copy_from_slice(MAGIC);
    h[8..10].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    h[10..12].copy_from_slice(&(RECORD_SIZE as u16).to_le_bytes());
    h
}

/// Reads a raw sample file, checking header and record alignment.
pub struct RawReader {
    reader: BufReader<File>,
    path: PathBuf,
}

impl RawReader {
    pub fn open(path: &Path) -> Result<Self, ResultsError> {
        let io = |source| ResultsError::RawIo { path: path.to_path_buf(), source };
        let file = File::open(path).map_err(io)?;
        let length = file.metadata().map_err(io)?.len();
        let mut reader = BufReader::with_capacity(1 << 20, file);
        let mut h = [0u8; HEADER_SIZE];
        let bad = |reason: String| ResultsError::RawFormat { path: path.to_path_buf(), reason };
        reader.read_exact(&mut h).map_err(|_| bad("shorter than the 16-byte header".into()))?;
        if &h[0..8] != MAGIC {
            return Err(bad("not an rtlab raw sample file (bad magic)".into()));
        }
        let version = u16::from_le_bytes([h[8], h[9]]);
        let record = u16::from_le_bytes([h[10], h[11]]) as usize;
        if version != FORMAT_VERSION || record != RECORD_SIZE {
            return Err(bad(format!("unsupported format version {version} / record size {record}")));
        }
        if !(length - HEADER_SIZE as u64).is_multiple_of(RECORD_SIZE as u64) {
            return Err(bad(format!(
                "truncated: {} bytes after the header is not a whole number of {RECORD_SIZE}-byte records",
                length - HEADER_SIZE as u64
            )));
        }
        Ok(Self { reader, path: path.to_path_buf() })
    }

    /// The next sample, None at the end of the file.
    pub fn next_sample(&mut self) -> Result<Option<RawSample>, ResultsError> {
        let mut b = [0u8; RECORD_SIZE];
        match self.reader.read_exact(&mut b) {
            Ok(()) => Ok(Some(RawSample::from_bytes(&b))),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(None),
            Err(source) => Err(ResultsError::RawIo { path: self.path.clone(), source }),
        }
    }
}

/// Convenience for tests and small files: every sample of a file.
pub fn read_all(path: &Path) -> Result<Vec<RawSample>, ResultsError> {
    let mut reader = RawReader::open(path)?;
    let mut samples = Vec::new();
    while let Some(s) = reader.next_sample()? {
        samples.push(s);
    }
    Ok(samples)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_foreign_and_truncated_files() {
        let dir = tempfile::tempdir().unwrap();
        let foreign = dir.path().join("f.bin");
        std::fs::write(&foreign, b"hello world, not raw samples").unwrap();
        assert!(matches!(RawReader::open(&foreign), Err(ResultsError::RawFormat { .. })));
        let truncated = dir.path().join("t.bin");
        let mut bytes = header().to_vec();
        bytes.extend_from_slice(&[0u8; RECORD_SIZE + 5]);
        std::fs::write(&truncated, bytes).unwrap();
        let err = RawReader::open(&truncated).err().unwrap().to_string();
        assert!(err.contains("truncated"), "{err}");
    }
}
