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
//!
//! A file can also be written over an older one in place
//! ([`DirectFile::open_with`] without truncating): its blocks are already allocated, so
//! the disk only writes them (a 128 MB file took 0.36 s in place against
//! 0.50 s new on the bench machine, `dd` with `oflag=direct`), and the older
//! file is not unlinked (0.13 s more). The file ends where the new bytes do.
//!
//! The next run reads the file back past the page cache too
//! ([`DirectReader`]): it was written past the cache, so it is on the disk
//! only, and a buffered read of it first has the kernel put every page in the
//! cache and then copies it out. On the bench machine that cost a worker's
//! 118 MB state 0.30 s of the kernel's CPU (`cat`, the file out of the
//! cache) against 0.07 s and next to no CPU with `O_DIRECT` (`dd
//! iflag=direct`), and the restore of bench snapshot 9 ran on both cores.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread::JoinHandle;

/// The alignment `O_DIRECT` asks of a write's memory, offset and length:
/// the largest logical block size in use.
const ALIGN: usize = 4096;
/// Bytes gathered before one write.
const PIECE: usize = 4 << 20;
/// Pieces in use at most: one filled by the caller while the writer thread
/// writes the other.
const PIECES: usize = 2;

/// A new file whose bytes bypass the page cache where the system allows (see
/// the module docs). [`Write::flush`] does nothing: the bytes are written in
/// whole pieces, and the rest by [`DirectFile::finish`], which the caller
/// must call.
///
/// The pieces are written by a thread of the file's own, while the caller
/// fills the next: a direct write returns when the disk has the bytes, and
/// written in turn with the filling, the state's writing waited for the disk
/// as long as it encoded (bench snapshot 9: a worker's 130 MB state took
/// 0.6 s, at half of a core).
pub struct DirectFile {
    path: PathBuf,
    /// Whether the file was opened with `O_DIRECT`.
    direct: bool,
    /// The piece being filled.
    piece: Piece,
    /// Pieces made so far (at most [`PIECES`]).
    made: usize,
    /// Whole pieces to the writer thread.
    to_write: Option<SyncSender<Piece>>,
    /// Written pieces back from it, to be filled again.
    written: Receiver<Piece>,
    /// The writer thread; it hands back the file, or the first error.
    writer: Option<JoinHandle<io::Result<Writing>>>,
}

/// `PIECE` bytes from `start` (aligned to `ALIGN`), of which `filled` hold data.
struct Piece {
    buf: Vec<u8>,
    start: usize,
    filled: usize,
}

impl Piece {
    fn new() -> Piece {
        let buf = vec![0u8; PIECE + ALIGN];
        let start = buf.as_ptr().align_offset(ALIGN);
        assert!(start < ALIGN, "a byte buffer can be aligned");
        Piece {
            buf,
            start,
            filled: 0,
        }
    }

    /// A piece with no room, in place of one handed to the writer.
    fn empty() -> Piece {
        Piece {
            buf: Vec::new(),
            start: 0,
            filled: 0,
        }
    }

    fn bytes(&self, len: usize) -> &[u8] {
        &self.buf[self.start..self.start + len]
    }
}

/// The file as the writer thread writes it.
struct Writing {
    path: PathBuf,
    file: File,
    direct: bool,
    /// Bytes written so far: where the next write goes.
    at: u64,
}

impl Writing {
    /// Writes the first `len` bytes of `piece`, `len` a multiple of `ALIGN`
    /// if the file is direct.
    fn write(&mut self, piece: &Piece, len: usize) -> io::Result<()> {
        let bytes = piece.bytes(len);
        match self.file.write_all(bytes) {
            Err(e) if self.direct && e.raw_os_error() == Some(EINVAL) => {
                // The file system took the open but not the write: go on
                // buffered, from the end of what it took.
                self.file = open_at(&self.path, self.at)?;
                self.direct = false;
                self.file.write_all(bytes)?;
            }
            done => done?,
        }
        self.at += len as u64;
        Ok(())
    }

    /// Writes each piece received, whole (`PIECE` bytes) or, the last, as
    /// far as `filled` allows, handing each back; ends at the first error or
    /// when the sender is gone.
    fn run(mut self, pieces: Receiver<Piece>, written: SyncSender<Piece>) -> io::Result<Writing> {
        for piece in pieces {
            self.write(&piece, piece.filled)?;
            // The filler may be gone (it failed or finished); the piece is
            // then dropped here.
            let _ = written.send(piece);
        }
        Ok(self)
    }
}

impl DirectFile {
    /// [`DirectFile::open_with`], direct unless `WEBEVO_BUFFERED_STATE=1`.
    pub fn open(path: &Path, truncate: bool) -> io::Result<DirectFile> {
        Self::open_with(path, direct_allowed(), truncate)
    }

    /// Creates the file at `path`, or truncates it if `truncate`, else
    /// writes it from its start over what it holds (the file is cut to the
    /// bytes written when they are finished); direct if `direct` and the
    /// system allows it.
    pub fn open_with(path: &Path, direct: bool, truncate: bool) -> io::Result<DirectFile> {
        let (file, direct) = if direct {
            open_direct(path, &write_options(truncate))?
        } else {
            (open_buffered(path, truncate)?, false)
        };
        let writing = Writing {
            path: path.to_path_buf(),
            file,
            direct,
            at: 0,
        };
        // Bounded by the pieces: no more than `PIECES` are ever made.
        let (to_write, pieces) = mpsc::sync_channel(PIECES);
        let (written_tx, written) = mpsc::sync_channel(PIECES);
        let writer = std::thread::Builder::new()
            .name("webevo:state-writer".into())
            .spawn(move || writing.run(pieces, written_tx))?;
        Ok(DirectFile {
            path: path.to_path_buf(),
            direct,
            piece: Piece::new(),
            made: 1,
            to_write: Some(to_write),
            written,
            writer: Some(writer),
        })
    }

    /// Whether the file's bytes bypass the page cache (as opened: a file
    /// system that refuses the first direct write is written buffered).
    pub fn is_direct(&self) -> bool {
        self.direct
    }

    /// Hands the piece being filled to the writer thread, and takes an empty
    /// one: a new one while fewer than [`PIECES`] are made, else the next the
    /// writer hands back.
    fn send_piece(&mut self) -> io::Result<()> {
        let next = if self.made < PIECES {
            self.made += 1;
            Piece::new()
        } else {
            match self.written.recv() {
                Ok(p) => p,
                Err(_) => return Err(self.writer_error()),
            }
        };
        let full = std::mem::replace(&mut self.piece, next);
        self.send(full)?;
        self.piece.filled = 0;
        Ok(())
    }

    /// Sends `piece` to the writer thread; its error if it has stopped.
    fn send(&mut self, piece: Piece) -> io::Result<()> {
        match self.to_write.as_ref().map(|tx| tx.send(piece)) {
            Some(Ok(())) => Ok(()),
            _ => Err(self.writer_error()),
        }
    }

    /// The writer thread's error, once it has stopped.
    fn writer_error(&mut self) -> io::Error {
        self.to_write = None;
        match self.writer.take().map(JoinHandle::join) {
            Some(Ok(Err(e))) => e,
            Some(Err(panic)) => std::panic::resume_unwind(panic),
            _ => io::Error::other(format!("the writer of {} stopped", self.path.display())),
        }
    }

    /// Writes what is left and hands back the file, not yet synced.
    pub fn finish(self) -> io::Result<File> {
        self.hand_over()?.wait()
    }

    /// Hands what is left to the writer thread and returns at once; the
    /// returned thread ends when the file is written and synced to disk. A
    /// worker's state is written faster than the disk takes it (130 MB a
    /// worker on bench snapshot 9, where two workers' states took the disk
    /// 0.5 s), so its caller goes on with other work meanwhile.
    pub fn finish_syncing(self) -> io::Result<JoinHandle<io::Result<()>>> {
        let closing = self.hand_over()?;
        std::thread::Builder::new()
            .name("webevo:state-sync".into())
            .spawn(move || closing.wait()?.sync_all())
    }

    /// Sends the last whole piece to the writer thread and lets it end.
    fn hand_over(mut self) -> io::Result<Closing> {
        let filled = self.piece.filled;
        let whole = if self.direct {
            filled / ALIGN * ALIGN
        } else {
            filled
        };
        // The tail past the last whole block, written once the writer is done.
        let tail = self.piece.bytes(filled)[whole..].to_vec();
        if whole > 0 {
            self.piece.filled = whole;
            let last = std::mem::replace(&mut self.piece, Piece::empty());
            self.send(last)?;
        }
        self.to_write = None;
        match self.writer.take() {
            Some(writer) => Ok(Closing {
                path: std::mem::take(&mut self.path),
                tail,
                writer,
            }),
            None => Err(io::Error::other("the writer thread is gone")),
        }
    }
}

/// A [`DirectFile`] whose writer thread has every whole piece.
struct Closing {
    path: PathBuf,
    /// The bytes past the last whole block of a direct file.
    tail: Vec<u8>,
    writer: JoinHandle<io::Result<Writing>>,
}

impl Closing {
    /// Waits for the writer thread, then writes the tail through an ordinary
    /// handle, and cuts the file where the bytes end (a file written over a
    /// longer one holds its bytes past them).
    fn wait(self) -> io::Result<File> {
        let writing = match self.writer.join() {
            Ok(done) => done?,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        let mut file = writing.file;
        if !self.tail.is_empty() {
            if writing.direct {
                file = open_at(&self.path, writing.at)?;
            }
            file.write_all(&self.tail)?;
        }
        file.set_len(writing.at + self.tail.len() as u64)?;
        Ok(file)
    }
}

impl Write for DirectFile {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let p = &mut self.piece;
        let n = data.len().min(PIECE - p.filled);
        let at = p.start + p.filled;
        p.buf[at..at + n].copy_from_slice(&data[..n]);
        p.filled += n;
        if p.filled == PIECE {
            self.send_piece()?;
        }
        Ok(n)
    }

    /// Does nothing (see [`DirectFile`]).
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A file read from its start past the page cache where the system allows
/// (see the module docs), or buffered where it refuses `O_DIRECT` or
/// `WEBEVO_BUFFERED_STATE=1` asks.
///
/// A thread of the reader's own reads the file a piece at a time ahead of the
/// caller, so the disk's reads overlap the caller's decoding in either mode
/// (a restore decodes as it reads: read in turn, each waited for the other).
pub struct DirectReader {
    path: PathBuf,
    direct: bool,
    /// The piece being read by the caller, and how far.
    piece: Piece,
    at: usize,
    /// Whether the reader thread has handed over the file's last piece.
    ended: bool,
    /// Pieces filled by the reader thread, in the file's order.
    filled: Receiver<io::Result<Piece>>,
    /// Read pieces back to it, to be filled again.
    to_fill: Option<SyncSender<Piece>>,
    reader: Option<JoinHandle<()>>,
}

impl DirectReader {
    /// [`DirectReader::open_with`], direct unless `WEBEVO_BUFFERED_STATE=1`.
    pub fn open(path: &Path) -> io::Result<DirectReader> {
        Self::open_with(path, direct_allowed())
    }

    /// Opens the file at `path` for reading from its start; direct if
    /// `direct` and the system allows it.
    pub fn open_with(path: &Path, direct: bool) -> io::Result<DirectReader> {
        let (file, direct) = if direct {
            open_direct(path, OpenOptions::new().read(true))?
        } else {
            (File::open(path)?, false)
        };
        let filling = Filling {
            path: path.to_path_buf(),
            file,
            direct,
            at: 0,
        };
        // Bounded by the pieces: `PIECES` are made, and go round.
        let (filled_tx, filled) = mpsc::sync_channel(PIECES);
        let (to_fill, empty) = mpsc::sync_channel(PIECES);
        for _ in 0..PIECES {
            to_fill.send(Piece::new()).expect("the channel has room");
        }
        let reader = std::thread::Builder::new()
            .name("webevo:state-reader".into())
            .spawn(move || filling.run(empty, filled_tx))?;
        Ok(DirectReader {
            path: path.to_path_buf(),
            direct,
            piece: Piece::empty(),
            at: 0,
            ended: false,
            filled,
            to_fill: Some(to_fill),
            reader: Some(reader),
        })
    }

    /// Whether the file is read past the page cache (as opened: a file
    /// system that refuses the first direct read is read buffered).
    pub fn is_direct(&self) -> bool {
        self.direct
    }

    /// Hands the piece read to the reader thread and takes the next filled
    /// one; false at the end of the file.
    fn next_piece(&mut self) -> io::Result<bool> {
        if self.ended {
            return Ok(false);
        }
        let read = std::mem::replace(&mut self.piece, Piece::empty());
        if !read.buf.is_empty() {
            if let Some(tx) = &self.to_fill {
                // The thread is gone only after the file's last piece or an
                // error, which `filled` still holds.
                let _ = tx.send(read);
            }
        }
        match self.filled.recv() {
            Ok(Ok(piece)) => {
                // A piece short of whole is the file's last.
                self.ended = piece.filled < PIECE;
                self.piece = piece;
                self.at = 0;
                Ok(true)
            }
            Ok(Err(e)) => {
                self.ended = true;
                Err(e)
            }
            Err(_) => {
                self.ended = true;
                Err(io::Error::other(format!(
                    "the reader of {} stopped",
                    self.path.display()
                )))
            }
        }
    }
}

impl Read for DirectReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.at == self.piece.filled {
            if out.is_empty() || !self.next_piece()? {
                return Ok(0);
            }
        }
        let n = out.len().min(self.piece.filled - self.at);
        out[..n].copy_from_slice(&self.piece.bytes(self.piece.filled)[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

impl Drop for DirectReader {
    /// Stops the reader thread: it ends at its next piece, once no empty
    /// piece can come back and no filled one can be handed over.
    fn drop(&mut self) {
        self.to_fill = None;
        let (_, closed) = mpsc::sync_channel(0);
        drop(std::mem::replace(&mut self.filled, closed));
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }
}

/// The file as the reader thread reads it.
struct Filling {
    path: PathBuf,
    file: File,
    direct: bool,
    /// Bytes read so far: where the next read starts (a multiple of
    /// `PIECE` until the last piece).
    at: u64,
}

impl Filling {
    /// Fills `piece` from the file, whole unless the file ends first.
    fn fill(&mut self, piece: &mut Piece) -> io::Result<()> {
        piece.filled = 0;
        while piece.filled < PIECE {
            let start = piece.start + piece.filled;
            let room = &mut piece.buf[start..piece.start + PIECE];
            let n = match self.file.read(room) {
                Err(e) if self.direct && e.raw_os_error() == Some(EINVAL) => {
                    // The file system took the open but not the read.
                    self.go_on_buffered()?;
                    continue;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                read => read?,
            };
            if n == 0 {
                break;
            }
            piece.filled += n;
            self.at += n as u64;
            if self.direct && n % ALIGN != 0 {
                // A direct read short of a block: as a rule the file's end.
                // The next read would start off a block, so whatever is left
                // (nothing, then) comes through an ordinary handle.
                self.go_on_buffered()?;
            }
        }
        Ok(())
    }

    /// Reads on through an ordinary handle, from where the reads stopped.
    fn go_on_buffered(&mut self) -> io::Result<()> {
        let mut file = File::open(&self.path)?;
        file.seek(SeekFrom::Start(self.at))?;
        self.file = file;
        self.direct = false;
        Ok(())
    }

    /// Fills each empty piece received and hands it over, until the file's
    /// last piece (one short of whole) or an error is handed over, or the
    /// caller is gone.
    fn run(mut self, empty: Receiver<Piece>, filled: SyncSender<io::Result<Piece>>) {
        for mut piece in empty {
            let done = match self.fill(&mut piece) {
                Ok(()) => {
                    let last = piece.filled < PIECE;
                    if filled.send(Ok(piece)).is_err() {
                        return;
                    }
                    last
                }
                Err(e) => {
                    let _ = filled.send(Err(e));
                    true
                }
            };
            if done {
                return;
            }
        }
    }
}

/// An ordinary handle that continues the file at byte `at`.
fn open_at(path: &Path, at: u64) -> io::Result<File> {
    let mut file = OpenOptions::new().write(true).open(path)?;
    file.seek(SeekFrom::Start(at))?;
    Ok(file)
}

/// An ordinary handle on a new file, or one written over from its start
/// unless `truncate`.
fn open_buffered(path: &Path, truncate: bool) -> io::Result<File> {
    write_options(truncate).open(path)
}

/// How a file to be written is opened: made if absent, cut if `truncate`.
fn write_options(truncate: bool) -> OpenOptions {
    let mut options = OpenOptions::new();
    options.write(true).create(true).truncate(truncate);
    options
}

#[cfg(target_os = "linux")]
const EINVAL: i32 = libc::EINVAL;
#[cfg(not(target_os = "linux"))]
const EINVAL: i32 = 22;

/// The file at `path` opened with `options` and `O_DIRECT` where the file
/// system takes it, else with `options` alone; and which it is.
#[cfg(target_os = "linux")]
fn open_direct(path: &Path, options: &OpenOptions) -> io::Result<(File, bool)> {
    use std::os::unix::fs::OpenOptionsExt;
    match options.clone().custom_flags(libc::O_DIRECT).open(path) {
        Ok(file) => Ok((file, true)),
        Err(e) if e.raw_os_error() == Some(EINVAL) => Ok((options.open(path)?, false)),
        Err(e) => Err(e),
    }
}

#[cfg(not(target_os = "linux"))]
fn open_direct(path: &Path, options: &OpenOptions) -> io::Result<(File, bool)> {
    Ok((options.open(path)?, false))
}

/// Whether state files may bypass the page cache: unless
/// `WEBEVO_BUFFERED_STATE=1` asks for the cache.
fn direct_allowed() -> bool {
    std::env::var_os("WEBEVO_BUFFERED_STATE").is_none_or(|v| v != "1")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes of a file over two pieces, and the lengths of it to try: around
    /// the alignment and the piece, a file ending with a whole piece, all.
    fn sample() -> (Vec<u8>, [usize; 10]) {
        let data: Vec<u8> = (0..PIECE * 2 + 3 * ALIGN + 17)
            .map(|i| (i * 7 % 251) as u8)
            .collect();
        let n = data.len();
        let lens = [
            0,
            1,
            ALIGN - 1,
            ALIGN,
            ALIGN + 1,
            PIECE - 1,
            PIECE,
            PIECE + 5,
            2 * PIECE,
            n,
        ];
        (data, lens)
    }

    /// Every byte arrives, in order, for lengths around the alignment and the
    /// piece, written in writes of odd sizes; buffered as well as direct;
    /// finished here or on a thread.
    #[test]
    fn writes_every_byte() {
        let dir = tempfile::tempdir().unwrap();
        let (data, lens) = sample();
        for (direct, len) in [false, true].into_iter().flat_map(|d| lens.map(|n| (d, n))) {
            let path = dir.path().join(format!("f{len}-{direct}"));
            let mut f = DirectFile::open_with(&path, direct, true).unwrap();
            if !direct {
                assert!(!f.is_direct());
            }
            for chunk in data[..len].chunks(1000 + len % 9) {
                f.write_all(chunk).unwrap();
            }
            if len % 2 == 0 {
                f.finish().unwrap().sync_all().unwrap();
            } else {
                f.finish_syncing().unwrap().join().unwrap().unwrap();
            }
            let mut back = Vec::new();
            File::open(&path).unwrap().read_to_end(&mut back).unwrap();
            assert!(back == data[..len], "{len} bytes, direct {direct}");
        }
    }

    /// A reader hands back every byte, in order, for lengths around the
    /// alignment and the piece (a file that ends with a whole piece
    /// included), read in reads of odd sizes; buffered as well as direct;
    /// and then reads nothing more.
    #[test]
    fn reads_every_byte() {
        let dir = tempfile::tempdir().unwrap();
        let (data, lens) = sample();
        for (direct, len) in [false, true].into_iter().flat_map(|d| lens.map(|n| (d, n))) {
            let path = dir.path().join(format!("f{len}"));
            if !path.exists() {
                std::fs::write(&path, &data[..len]).unwrap();
            }
            let mut r = DirectReader::open_with(&path, direct).unwrap();
            if !direct {
                assert!(!r.is_direct());
            }
            let mut back = Vec::new();
            let mut buf = vec![0u8; 1000 + len % 9];
            loop {
                let n = r.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                back.extend_from_slice(&buf[..n]);
            }
            assert!(back == data[..len], "{len} bytes, direct {direct}");
            assert_eq!(r.read(&mut buf).unwrap(), 0, "{len} bytes, direct {direct}");
        }
    }

    /// What a [`DirectFile`] writes, a [`DirectReader`] reads back whole
    /// (`read_exact` over the pieces' seams, `read_to_end`).
    #[test]
    fn reads_back_what_was_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let data: Vec<u8> = (0..PIECE + 2 * ALIGN + 3)
            .map(|i| (i % 241) as u8)
            .collect();
        let mut f = DirectFile::open(&path, true).unwrap();
        f.write_all(&data).unwrap();
        f.finish().unwrap().sync_all().unwrap();
        let mut r = DirectReader::open(&path).unwrap();
        let mut head = vec![0u8; PIECE - 10];
        r.read_exact(&mut head).unwrap();
        let mut across = [0u8; 20];
        r.read_exact(&mut across).unwrap();
        let mut rest = Vec::new();
        r.read_to_end(&mut rest).unwrap();
        assert!(head == data[..PIECE - 10]);
        assert!(across == data[PIECE - 10..PIECE + 10]);
        assert!(rest == data[PIECE + 10..]);
    }

    /// A reader dropped before the end stops its thread (the drop returns),
    /// whether its thread was ahead or not; a missing file is an error at
    /// the open.
    #[test]
    fn a_reader_stops_when_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![5u8; 4 * PIECE + 1]).unwrap();
        for direct in [false, true] {
            drop(DirectReader::open_with(&path, direct).unwrap());
            let mut r = DirectReader::open_with(&path, direct).unwrap();
            let mut some = [0u8; 10];
            r.read_exact(&mut some).unwrap();
            assert_eq!(some, [5u8; 10]);
            drop(r);
        }
        let missing = DirectReader::open(&dir.path().join("none"));
        assert_eq!(
            missing.err().map(|e| e.kind()),
            Some(io::ErrorKind::NotFound)
        );
    }

    /// The writer thread's error reaches the caller, from a later write or
    /// from `finish` or `finish_syncing`'s thread, whichever comes first; a
    /// full disk here.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_failed_write_is_an_error() {
        for len in [ALIGN, PIECE, 3 * PIECE + 5] {
            let mut f = DirectFile::open_with(Path::new("/dev/full"), false, true).unwrap();
            let data = vec![1u8; len];
            let failed = match f.write_all(&data) {
                Err(e) => e,
                Ok(()) if len == ALIGN => (f.finish_syncing().unwrap().join().unwrap())
                    .expect_err("/dev/full takes no bytes"),
                Ok(()) => f.finish().expect_err("/dev/full takes no bytes"),
            };
            assert_eq!(failed.kind(), io::ErrorKind::StorageFull, "{len} bytes");
        }
    }

    /// A file of the same name is replaced, not partly overwritten.
    #[test]
    fn truncates_an_older_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![9u8; 3 * ALIGN]).unwrap();
        let mut f = DirectFile::open(&path, true).unwrap();
        f.write_all(b"new").unwrap();
        f.finish().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
    }

    /// A file written over an older one holds exactly the new bytes, whether
    /// the older was longer, shorter or absent; buffered as well as direct.
    #[test]
    fn an_overwritten_file_ends_with_its_new_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let lens = [0, 3, ALIGN, ALIGN + 9, PIECE + 2 * ALIGN + 5];
        for direct in [false, true] {
            for (i, (old, new)) in lens.iter().flat_map(|&o| lens.map(|n| (o, n))).enumerate() {
                let path = dir.path().join(format!("f{i}-{direct}"));
                if old > 0 {
                    std::fs::write(&path, vec![0xAB; old]).unwrap();
                }
                let data: Vec<u8> = (0..new).map(|k| (k * 13 % 251) as u8).collect();
                let mut f = DirectFile::open_with(&path, direct, false).unwrap();
                f.write_all(&data).unwrap();
                if i % 2 == 0 {
                    f.finish().unwrap();
                } else {
                    f.finish_syncing().unwrap().join().unwrap().unwrap();
                }
                let back = std::fs::read(&path).unwrap();
                assert!(
                    back == data,
                    "{old} bytes overwritten by {new}, direct {direct}"
                );
            }
        }
    }
}
