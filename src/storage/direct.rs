//! Shard files written with O_DIRECT: the bytes go from one aligned buffer to the disk
//! without a copy into the page cache, which otherwise costs more CPU than the rest of a PUT
//! after MD5 (1.5 bytes cached per byte stored, for 6+3 parity).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// O_DIRECT wants buffers, offsets and lengths aligned to the logical block size.
const ALIGN: usize = 4096;
/// Bytes gathered before each write to the disk.
const BUFFER: usize = 512 * 1024;

/// A file being written sequentially, through an aligned buffer, with O_DIRECT when the
/// filesystem supports it (it falls back to ordinary buffered writes, e.g. on tmpfs).
pub struct DirectFile {
    file: File,
    direct: bool,
    /// Backing storage; `start` is where its aligned part begins.
    raw: Vec<u8>,
    start: usize,
    /// Bytes in the buffer not yet written.
    filled: usize,
    /// Bytes appended so far: the file's final length.
    length: u64,
}

impl DirectFile {
    /// Creates a new file (it must not exist).
    pub fn create(path: &Path) -> std::io::Result<Self> {
        let open = |flags| {
            OpenOptions::new()
                .write(true)
                .create_new(true)
                .custom_flags(flags)
                .open(path)
        };
        let (file, direct) = match open(libc::O_DIRECT) {
            Ok(file) => (file, true),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => (open(0)?, false),
            Err(e) => return Err(e),
        };
        let raw = vec![0u8; BUFFER + ALIGN];
        let start = raw.as_ptr().align_offset(ALIGN);
        Ok(Self {
            file,
            direct,
            raw,
            start,
            filled: 0,
            length: 0,
        })
    }

    /// Appends bytes, writing every full buffer.
    pub fn append(&mut self, mut bytes: &[u8]) -> std::io::Result<()> {
        while !bytes.is_empty() {
            let take = (BUFFER - self.filled).min(bytes.len());
            let at = self.start + self.filled;
            self.raw[at..at + take].copy_from_slice(&bytes[..take]);
            self.filled += take;
            self.length += take as u64;
            bytes = &bytes[take..];
            if self.filled == BUFFER {
                self.flush_buffer(BUFFER)?;
            }
        }
        Ok(())
    }

    fn flush_buffer(&mut self, len: usize) -> std::io::Result<()> {
        self.file
            .write_all(&self.raw[self.start..self.start + len])?;
        self.filled = 0;
        Ok(())
    }

    /// Writes what is left and makes the file durable (fdatasync).
    pub fn finish(mut self) -> std::io::Result<()> {
        if self.filled > 0 {
            if self.direct {
                // The last write is padded to the alignment, then the file cut to its length.
                let padded = self.filled.next_multiple_of(ALIGN);
                let (from, to) = (self.start + self.filled, self.start + padded);
                self.raw[from..to].fill(0);
                self.flush_buffer(padded)?;
                self.file.set_len(self.length)?;
            } else {
                self.flush_buffer(self.filled)?;
            }
        }
        self.file.sync_data()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_hold_exactly_what_was_appended() {
        let dir = tempfile::tempdir().unwrap();
        for len in [
            0,
            1,
            4095,
            4096,
            4097,
            BUFFER - 1,
            BUFFER,
            BUFFER + 1,
            3 * BUFFER + 17,
        ] {
            let path = dir.path().join(format!("f{len}"));
            let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            let mut file = DirectFile::create(&path).unwrap();
            // Odd piece sizes, as checksum + shard pairs arrive.
            for piece in data.chunks(16 + 174_763) {
                let (a, b) = piece.split_at(piece.len().min(16));
                file.append(a).unwrap();
                file.append(b).unwrap();
            }
            file.finish().unwrap();
            assert_eq!(std::fs::read(&path).unwrap(), data, "length {len}");
        }
        assert!(
            DirectFile::create(&dir.path().join("f0")).is_err(),
            "files are new"
        );
    }
}
