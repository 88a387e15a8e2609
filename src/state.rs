//! What a run leaves in `OUT/_state/` so the next run continues where it stopped.
//!
//! Each worker writes the ledger state of its hosts as a stream of bincode
//! [`StateRecord`]s to its own part file. The next run may use any number of
//! workers: each reads the part files `j` with `j % peers == index` and routes the
//! records by host, exactly like fresh input; or, with as many workers as wrote
//! them, reads its own parts in place ([`own_parts`]). The state holds one snapshot's worth
//! of data (page summaries, the last link set), never the history.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::change_book::PageHistory;
use crate::error::OutputError;
use crate::ledger::{HostState, LinkKey, PageState};
use crate::model::{HostFact, HostId, HostKey, PageId};

/// Bumped whenever the state's meaning or encoding changes.
pub const STATE_VERSION: u32 = 3;
const MAGIC: &[u8; 8] = b"WEVOSTAT";

/// One persisted piece of ledger state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum StateRecord {
    Page(PageId, PageState),
    Host(HostId, HostState),
    Link(LinkKey),
    /// An event fact emitted at the last snapshot, retracted at the next one.
    Event(HostKey<HostFact>, i64),
    /// A per-site analysis' history (opaque to the ledger, which hands it back
    /// at the restore epoch on the site's worker).
    Site(HostId, Vec<u8>),
    /// A page's change history (the change analysis).
    Change(HostId, PageId, PageHistory),
    /// A page's PageRank at the last snapshot (the RankMass analysis' warm start).
    Rank(HostId, PageId, u64),
    /// The ECHO analysis' per-host state (opaque to the ledger, like `Site`).
    Echo(HostId, Vec<u8>),
}

impl StateRecord {
    pub fn host(&self) -> HostId {
        match self {
            StateRecord::Page(_, p) => p.host,
            StateRecord::Host(h, _) => *h,
            StateRecord::Link(l) => l.src_host,
            StateRecord::Event(k, _) => k.host,
            StateRecord::Site(h, _) => *h,
            StateRecord::Change(h, _, _) => *h,
            StateRecord::Rank(h, _, _) => *h,
            StateRecord::Echo(h, _) => *h,
        }
    }
}

/// The ledger's part file of worker `index`.
pub fn part_path(state_dir: &Path, index: usize) -> PathBuf {
    state_dir.join(format!("ledger-{index:05}.bin"))
}

/// The per-site analyses' part file of worker `index`.
pub fn sites_part_path(state_dir: &Path, index: usize) -> PathBuf {
    state_dir.join(format!("sites-{index:05}.bin"))
}

/// The RankMass analysis' part file of worker `index`.
pub fn rank_part_path(state_dir: &Path, index: usize) -> PathBuf {
    state_dir.join(format!("rank-{index:05}.bin"))
}

/// The ECHO analysis' part file of worker `index`.
pub fn echo_part_path(state_dir: &Path, index: usize) -> PathBuf {
    state_dir.join(format!("echo-{index:05}.bin"))
}

/// The part files (ledger, per-site, rank and echo) present in `state_dir`, in name order.
pub fn part_files(state_dir: &Path) -> Result<Vec<PathBuf>, OutputError> {
    let mut parts = Vec::new();
    let entries = match std::fs::read_dir(state_dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(parts),
        Err(e) => return Err(OutputError::io(state_dir, e)),
    };
    for entry in entries {
        let entry = entry.map_err(|e| OutputError::io(state_dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let kind = ["ledger-", "sites-", "rank-", "echo-"]
            .iter()
            .any(|p| name.starts_with(p));
        if kind && name.ends_with(".bin") {
            parts.push(entry.path());
        }
    }
    parts.sort();
    Ok(parts)
}

/// The part files of worker `index` (`ledger-`, `sites-`, `rank-`, `echo-`
/// parts numbered `index`) when the state was written by as many workers as
/// `peers`: each worker then wrote exactly the hosts that route to it now, so
/// it reads its own parts in place instead of routing every record through
/// the exchange. `None` when the numbers differ (the records are then routed).
pub fn own_parts(
    state_dir: &Path,
    peers: usize,
    index: usize,
) -> Result<Option<Vec<PathBuf>>, OutputError> {
    let parts = part_files(state_dir)?;
    let name = |p: &PathBuf| p.file_name().map(|n| n.to_string_lossy().into_owned());
    let writers = parts
        .iter()
        .filter(|p| name(p).is_some_and(|n| n.starts_with("ledger-")))
        .count();
    if writers != peers {
        return Ok(None);
    }
    // `<kind>-<index>.bin`, or `<kind>-<index>-<what>.bin` (the ECHO parts).
    let writer = |n: &str| -> Option<usize> {
        let rest = n.split_once('-')?.1;
        rest.split(['-', '.']).next()?.parse().ok()
    };
    Ok(Some(
        parts
            .into_iter()
            .filter(|p| name(p).and_then(|n| writer(&n)) == Some(index))
            .collect(),
    ))
}

/// Writes state records to one part file.
pub struct StateWriter {
    path: PathBuf,
    out: BufWriter<File>,
}

impl StateWriter {
    pub fn create(path: &Path) -> Result<StateWriter, OutputError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| OutputError::io(dir, e))?;
        }
        let f = File::create(path).map_err(|e| OutputError::io(path, e))?;
        let mut out = BufWriter::with_capacity(1 << 20, f);
        out.write_all(MAGIC)
            .and_then(|_| out.write_all(&STATE_VERSION.to_le_bytes()))
            .map_err(|e| OutputError::io(path, e))?;
        Ok(StateWriter {
            path: path.to_path_buf(),
            out,
        })
    }

    pub fn write(&mut self, rec: &StateRecord) -> Result<(), OutputError> {
        bincode::serialize_into(&mut self.out, rec).map_err(|e| OutputError::Corrupt {
            path: self.path.clone(),
            problem: format!("cannot encode state: {e}"),
        })
    }

    /// Flushes and syncs the file: state must be on disk before the commit.
    pub fn finish(self) -> Result<(), OutputError> {
        let path = self.path;
        let f = self
            .out
            .into_inner()
            .map_err(|e| OutputError::io(&path, e.into_error()))?;
        f.sync_all().map_err(|e| OutputError::io(&path, e))
    }
}

/// Reads every record of a part file.
pub fn read_part(path: &Path, mut visit: impl FnMut(StateRecord)) -> Result<(), OutputError> {
    let corrupt = |problem: String| OutputError::Corrupt {
        path: path.to_path_buf(),
        problem,
    };
    let f = File::open(path).map_err(|e| OutputError::io(path, e))?;
    let len = f.metadata().map_err(|e| OutputError::io(path, e))?.len();
    let mut input = BufReader::with_capacity(1 << 20, f);
    let mut header = [0u8; 12];
    input
        .read_exact(&mut header)
        .map_err(|_| corrupt("truncated state file header".into()))?;
    if &header[..8] != MAGIC {
        return Err(corrupt("not a webevo state file".into()));
    }
    let version = u32::from_le_bytes(header[8..12].try_into().unwrap());
    if version != STATE_VERSION {
        return Err(corrupt(format!(
            "state version {version}, this webevo reads version {STATE_VERSION}: rebuild the output from the input"
        )));
    }
    let mut input = CountingReader {
        inner: input,
        read: 12,
    };
    while input.read < len {
        let rec: StateRecord = bincode::deserialize_from(&mut input)
            .map_err(|e| corrupt(format!("cannot decode state at byte {}: {e}", input.read)))?;
        visit(rec);
    }
    Ok(())
}

struct CountingReader<R> {
    inner: R,
    read: u64,
}

impl<R: Read> Read for CountingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A worker's own parts are those numbered by it, of every kind (the ECHO
    /// parts carry a further name), and only when as many workers wrote them.
    #[test]
    fn own_parts_follow_the_writers() {
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "ledger-00000.bin",
            "ledger-00001.bin",
            "sites-00001.bin",
            "rank-00000.bin",
            "echo-00001-pages.bin",
            "echo-00001-sources.bin",
            "notes.txt",
        ] {
            std::fs::write(dir.path().join(name), b"").unwrap();
        }
        let names = |peers, index| {
            own_parts(dir.path(), peers, index).unwrap().map(|v| {
                v.iter()
                    .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
            })
        };
        assert_eq!(
            names(2, 1).unwrap(),
            [
                "echo-00001-pages.bin",
                "echo-00001-sources.bin",
                "ledger-00001.bin",
                "sites-00001.bin"
            ]
        );
        assert_eq!(names(2, 0).unwrap(), ["ledger-00000.bin", "rank-00000.bin"]);
        assert_eq!(names(3, 0), None);
        assert_eq!(names(1, 0), None);
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(own_parts(empty.path(), 1, 0).unwrap(), None);
    }
}
