//! Writing a large new file past the page cache.
//!
//! A worker's ledger state is a file of a hundred megabytes or more, written
//! once per run and read once by the next. Written through the page cache,
//! the kernel first copies it into fresh cache pages: on the bench machines
//! that copy ran at 360-700 MB/s, a third of a new snapshot's finish on bench
//! snapshot 9, and the file's later sync wrote it again. With `O_DIRECT`
//! (Linux) the disk reads the bytes from this process' buffer: the same
//! 250 MB took 0.17-0.21 s there, against 0.38-0.73 s buffered and before any
//! sync. The bytes go in aligned pieces; the tail that does not fill a block
//! is appended through an ordinary handle. Where the file system refuses
//! `O_DIRECT` (tmpfs, some network file systems), or `WEBEVO_BUFFERED_STATE=1`
//! asks, every write is buffered.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The alignment `O_DIRECT` asks of a write's memory, offset and length:
/// the largest logical block size in use.
const ALIGN: usize = 4096;
/// Bytes gathered before one write.
const PIECE: usize = 4 << 20;

/// A new file whose bytes bypass the page cache where the system allows (see
/// the module docs). [`Write::flush`] does nothing: the bytes are written in
/// whole pieces, and the rest by [`DirectFile::finish`], which the caller
/// must call.
pub struct DirectFile {
    path: PathBuf,
    file: File,
    /// Whether `file` was opened with `O_DIRECT`.
    direct: bool,
    /// `PIECE` bytes from `start`, which is aligned to `ALIGN`.
    buf: Vec<u8>,
    start: usize,
    filled: usize,
}

impl DirectFile {
    /// Creates (or truncates) the file at `path`, direct unless
    /// `WEBEVO_BUFFERED_STATE=1`.
    pub fn create(path: &Path) -> io::Result<DirectFile> {
        let buffered = std::env::var_os("WEBEVO_BUFFERED_STATE").is_some_and(|v| v == "1");
        Self::create_with(path, !buffered)
    }

    /// Creates (or truncates) the file at `path`, direct if `direct` and the
    /// system allows it.
    pub fn create_with(path: &Path, direct: bool) -> io::Result<DirectFile> {
        let (file, direct) = if direct {
            open_direct(path)?
        } else {
            (File::create(path)?, false)
        };
        let buf = vec![0u8; PIECE + ALIGN];
        let start = buf.as_ptr().align_offset(ALIGN);
        assert!(start < ALIGN, "a byte buffer can be aligned");
        Ok(DirectFile {
            path: path.to_path_buf(),
            file,
            direct,
            buf,
            start,
            filled: 0,
        })
    }

    /// Whether the file's bytes bypass the page cache.
    pub fn is_direct(&self) -> bool {
        self.direct
    }

    /// Writes the first `len` bytes of the piece, `len` a multiple of
    /// `ALIGN` if the file is direct.
    fn write_piece(&mut self, len: usize) -> io::Result<()> {
        let piece = &self.buf[self.start..self.start + len];
        match self.file.write_all(piece) {
            Err(e) if self.direct && e.raw_os_error() == Some(EINVAL) => {
                // The file system took the open but not the write: go on
                // buffered, from the end of what it took.
                self.file = append(&self.path)?;
                self.direct = false;
                self.file.write_all(piece)
            }
            done => done,
        }
    }

    /// Writes what is left and hands back the file, not yet synced.
    pub fn finish(mut self) -> io::Result<File> {
        let whole = if self.direct {
            self.filled / ALIGN * ALIGN
        } else {
            self.filled
        };
        if whole > 0 {
            self.write_piece(whole)?;
        }
        if whole < self.filled {
            self.file = append(&self.path)?;
            let tail = &self.buf[self.start + whole..self.start + self.filled];
            self.file.write_all(tail)?;
        }
        Ok(self.file)
    }
}

impl Write for DirectFile {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let n = data.len().min(PIECE - self.filled);
        let at = self.start + self.filled;
        self.buf[at..at + n].copy_from_slice(&data[..n]);
        self.filled += n;
        if self.filled == PIECE {
            self.write_piece(PIECE)?;
            self.filled = 0;
        }
        Ok(n)
    }

    /// Does nothing (see [`DirectFile`]).
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// An ordinary handle that continues the file at its end.
fn append(path: &Path) -> io::Result<File> {
    OpenOptions::new().append(true).open(path)
}

#[cfg(target_os = "linux")]
const EINVAL: i32 = libc::EINVAL;
#[cfg(not(target_os = "linux"))]
const EINVAL: i32 = 22;

#[cfg(target_os = "linux")]
fn open_direct(path: &Path) -> io::Result<(File, bool)> {
    use std::os::unix::fs::OpenOptionsExt;
    let direct = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_DIRECT)
        .open(path);
    match direct {
        Ok(file) => Ok((file, true)),
        Err(e) if e.raw_os_error() == Some(EINVAL) => Ok((File::create(path)?, false)),
        Err(e) => Err(e),
    }
}

#[cfg(not(target_os = "linux"))]
fn open_direct(path: &Path) -> io::Result<(File, bool)> {
    Ok((File::create(path)?, false))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    /// Every byte arrives, in order, for lengths around the alignment and the
    /// piece, written in writes of odd sizes; buffered as well as direct.
    #[test]
    fn writes_every_byte() {
        let dir = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..PIECE * 2 + 3 * ALIGN + 17)
            .map(|i| (i * 7 % 251) as u8)
            .collect();
        let lens = [
            0,
            1,
            ALIGN - 1,
            ALIGN,
            ALIGN + 1,
            PIECE,
            PIECE + 5,
            data.len(),
        ];
        for (direct, len) in [false, true].into_iter().flat_map(|d| lens.map(|n| (d, n))) {
            let path = dir.path().join(format!("f{len}-{direct}"));
            let mut f = DirectFile::create_with(&path, direct).unwrap();
            if !direct {
                assert!(!f.is_direct());
            }
            for chunk in data[..len].chunks(1000 + len % 9) {
                f.write_all(chunk).unwrap();
            }
            f.finish().unwrap().sync_all().unwrap();
            let mut back = Vec::new();
            File::open(&path).unwrap().read_to_end(&mut back).unwrap();
            assert!(back == data[..len], "{len} bytes, direct {direct}");
        }
    }

    /// A file of the same name is replaced, not partly overwritten.
    #[test]
    fn truncates_an_older_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![9u8; 3 * ALIGN]).unwrap();
        let mut f = DirectFile::create(&path).unwrap();
        f.write_all(b"new").unwrap();
        f.finish().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
    }
}
