//! What a run leaves in `OUT/_state/` so the next run continues where it stopped.
//!
//! Each worker writes the ledger state of its hosts as bincode
//! [`StateRecord`]s to its own part file, in blocks of about a megabyte, each
//! after its length, so that a reader decodes records from memory. The next run may use any number of
//! workers: each reads the part files `j` with `j % peers == index` and routes the
//! records by host, exactly like fresh input; or, with as many workers as wrote
//! them, reads its own parts in place ([`own_parts`]). The state holds one snapshot's worth
//! of data (page summaries, the last link set), never the history.

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::bits::Bits;
use crate::byte_string::{ByteBuf, Bytes};
use crate::change_book::HistoryRecord;
use crate::direct_file::{DirectFile, DirectReader};
use crate::error::OutputError;
use crate::ledger::{HostState, LinkKey};
use crate::model::{HostFact, HostId, HostKey, PageId};
use crate::page_state::{PageRecord, PageRun};

/// Bumped whenever the state's meaning or encoding changes.
pub const STATE_VERSION: u32 = 7;
/// The oldest version this webevo still reads: version 3 stored a link per
/// [`StateRecord::Link`] record, versions 3 and 4 a page per
/// [`StateRecord::Page`] record, and version 5 a source's links per
/// [`StateRecord::Outlinks`] record, and version 6 a [`StateRecord::Links`]
/// record per block of links, which version 7 writes as
/// [`StateRecord::PackedLinks`].
const OLDEST_READABLE_VERSION: u32 = 3;
const MAGIC: &[u8; 8] = b"WEVOSTAT";

/// One persisted piece of ledger state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum StateRecord {
    Page(PageId, PageRecord),
    Host(HostId, HostState),
    /// One link (version 3; version 4 writes [`StateRecord::Outlinks`]).
    Link(LinkKey),
    /// An event fact emitted at the last snapshot, retracted at the next one.
    Event(HostKey<HostFact>, i64),
    /// A per-site analysis' history (opaque to the ledger, which hands it back
    /// at the restore epoch on the site's worker).
    Site(HostId, Vec<u8>),
    /// A page's change history (the change analysis).
    Change(HostId, PageId, HistoryRecord),
    /// A page's PageRank at the last snapshot (the RankMass analysis' warm start).
    Rank(HostId, PageId, u64),
    /// The ECHO analysis' per-host state (opaque to the ledger, like `Site`).
    Echo(HostId, Vec<u8>),
    /// One page's links of the last snapshot (new variants go last, so that
    /// older versions' records keep their encoding).
    Outlinks(Outlinks),
    /// Pages of one host, a third of the bytes of a [`StateRecord::Page`]
    /// each (version 5; see [`PageRun`]).
    Pages(PageRun),
    /// The links of consecutive sources, as columns (version 6; see
    /// [`LinkBlock`]).
    Links(LinkBlock),
    /// The same, packed (version 7; see [`PackedLinks`]).
    PackedLinks(PackedLinks),
}

/// The links of the last snapshot from consecutive sources (in the order of
/// their ids, each source's destinations sorted: the ledger's link set's
/// order), as its columns, with the hosts named once a block. A restore
/// appends the columns as they are, where [`Outlinks`] records cost an
/// allocation and a host lookup per source and a sort of each source's
/// links (listed on-host first).
///
/// Its sources need not share a host, so a restore that routes records by
/// host splits a block into [`Outlinks`] first ([`LinkBlock::outlinks`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkBlock {
    /// The hosts the block names; `src_hosts` and `dst_hosts` index it.
    pub hosts: Vec<HostId>,
    pub srcs: Vec<PageId>,
    pub src_hosts: Vec<u32>,
    /// Where each source's links end in `dsts`.
    pub ends: Vec<u32>,
    pub dsts: Vec<PageId>,
    pub dst_hosts: Vec<u32>,
}

impl LinkBlock {
    /// Whether the columns fit together: as many hosts and ends as sources,
    /// ends rising to the last link (no source without links), host indices
    /// in the table. A block that
    /// passes cannot make a restore panic.
    pub fn check(&self) -> Result<(), String> {
        let n = self.srcs.len();
        let hosts = self.hosts.len();
        let bad = |what: &str| Err(format!("a link block's {what} do not fit its columns"));
        if self.src_hosts.len() != n || self.ends.len() != n {
            return bad("sources");
        }
        if self.dst_hosts.len() != self.dsts.len()
            || self.ends.last().map_or(0, |&e| e as usize) != self.dsts.len()
            || self.ends.first() == Some(&0)
            || self.ends.windows(2).any(|w| w[0] >= w[1])
        {
            return bad("ends");
        }
        if self
            .src_hosts
            .iter()
            .chain(&self.dst_hosts)
            .any(|&h| h as usize >= hosts)
        {
            return bad("host indices");
        }
        Ok(())
    }

    /// The source `i`'s host and destinations with their hosts (of a
    /// checked block).
    fn source(&self, i: usize) -> (PageId, HostId, impl Iterator<Item = (PageId, HostId)> + '_) {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        let run = start..self.ends[i] as usize;
        let dsts = self.dsts[run.clone()].iter().zip(&self.dst_hosts[run]);
        let host = |h: u32| self.hosts[h as usize];
        (
            self.srcs[i],
            host(self.src_hosts[i]),
            dsts.map(move |(&d, &h)| (d, host(h))),
        )
    }

    /// One [`Outlinks`] record per source (of a checked block), to route by
    /// host.
    pub fn outlinks(&self) -> impl Iterator<Item = Outlinks> + '_ {
        (0..self.srcs.len()).map(|i| {
            let (src, host, dsts) = self.source(i);
            Outlinks::of(src, host, dsts)
        })
    }

    /// Every link, in order (of a checked block).
    pub fn links(&self) -> impl Iterator<Item = LinkKey> + '_ {
        (0..self.srcs.len()).flat_map(|i| {
            let (src, src_host, dsts) = self.source(i);
            dsts.map(move |(dst, dst_host)| LinkKey {
                src,
                dst,
                src_host,
                dst_host,
            })
        })
    }
}

/// A [`LinkBlock`] as state version 7 stores it: its columns as one byte
/// string (bincode copies it whole, where it decoded a column's numbers one
/// by one), and the destinations' hosts only for the links that leave their
/// source's host, with a bit a link saying which. A destination on its
/// source's host is most links (88% of bench snapshot 9's), so a link costs
/// about 8.6 bytes of the state instead of 12: bench snapshot 9's state
/// shrank by 34 MB of 257, which the disk wrote at about 370 MB/s at the end
/// of every run.
///
/// The byte string, little-endian: the numbers of hosts, sources, links and
/// links that leave their host (`u32` each); the hosts (`u64`); the sources
/// (`u64`), their hosts' places (`u32`) and their ends (`u32`); the
/// destinations (`u64`); a bit a link, in `u64` words, set where the link
/// leaves its source's host; those links' hosts' places (`u32`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PackedLinks(pub LinkBlock);

impl PackedLinks {
    /// The block's byte string.
    fn encode(&self) -> Vec<u8> {
        let b = &self.0;
        let (sources, links) = (b.srcs.len(), b.dsts.len());
        let mut leaving = Bits::with_len(links);
        let mut off_hosts: Vec<u32> = Vec::new();
        let mut start = 0;
        for (&end, &src_host) in b.ends.iter().zip(&b.src_hosts) {
            let end = (end as usize).max(start).min(links);
            for (l, &h) in (start..end).zip(&b.dst_hosts[start..end]) {
                if h != src_host {
                    leaving.insert(l);
                    off_hosts.push(h);
                }
            }
            start = end;
        }
        let off_bits = leaving.words();
        let mut out = Vec::with_capacity(
            16 + 8 * (b.hosts.len() + sources + links + off_bits.len())
                + 4 * (2 * sources + off_hosts.len()),
        );
        for n in [b.hosts.len(), sources, links, off_hosts.len()] {
            out.extend_from_slice(&(n as u32).to_le_bytes());
        }
        out.extend(b.hosts.iter().flat_map(|h| h.0.to_le_bytes()));
        out.extend(b.srcs.iter().flat_map(|p| p.0.to_le_bytes()));
        out.extend(b.src_hosts.iter().flat_map(|h| h.to_le_bytes()));
        out.extend(b.ends.iter().flat_map(|e| e.to_le_bytes()));
        out.extend(b.dsts.iter().flat_map(|p| p.0.to_le_bytes()));
        out.extend(off_bits.iter().flat_map(|w| w.to_le_bytes()));
        out.extend(off_hosts.iter().flat_map(|h| h.to_le_bytes()));
        out
    }

    /// The block a byte string holds, its columns fitting together
    /// ([`LinkBlock::check`]).
    fn decode(bytes: &[u8]) -> Result<LinkBlock, String> {
        let mut rest = bytes;
        let mut take = |n: usize, width: usize| -> Result<&[u8], String> {
            let len = n
                .checked_mul(width)
                .filter(|&len| len <= rest.len())
                .ok_or("a packed link block is cut short")?;
            let (head, tail) = rest.split_at(len);
            rest = tail;
            Ok(head)
        };
        let u32s = |b: &[u8]| -> Vec<u32> {
            b.chunks_exact(4)
                .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
                .collect()
        };
        let u64s = |b: &[u8]| -> Vec<u64> {
            b.chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
                .collect()
        };
        let counts = u32s(take(4, 4)?);
        let [hosts, sources, links, off] = [0, 1, 2, 3].map(|i| counts[i] as usize);
        let hosts = u64s(take(hosts, 8)?).into_iter().map(HostId).collect();
        let srcs = u64s(take(sources, 8)?).into_iter().map(PageId).collect();
        let src_hosts = u32s(take(sources, 4)?);
        let ends = u32s(take(sources, 4)?);
        let dsts = u64s(take(links, 8)?).into_iter().map(PageId).collect();
        let leaving = Bits::from_words(u64s(take(links.div_ceil(64), 8)?));
        let off_hosts = u32s(take(off, 4)?);
        if !rest.is_empty() {
            return Err("a packed link block has bytes past its columns".into());
        }
        let words = leaving.words();
        let set = words.iter().map(|w| w.count_ones() as usize).sum::<usize>();
        let spare = links % 64 != 0 && words.last().is_some_and(|w| w >> (links % 64) != 0);
        if set != off || spare {
            return Err("a packed link block's bits do not count its off-host links".into());
        }
        let mut block = LinkBlock {
            hosts,
            srcs,
            src_hosts,
            ends,
            dsts,
            dst_hosts: Vec::with_capacity(links),
        };
        // Ends that do not rise to the last link fail the check below;
        // clamped here, they cannot make this loop panic.
        let mut off_hosts = off_hosts.into_iter();
        let mut start = 0;
        for (&end, &src_host) in block.ends.iter().zip(&block.src_hosts) {
            let end = (end as usize).max(start).min(links);
            block.dst_hosts.extend((start..end).map(|l| {
                if leaving.contains(l) {
                    off_hosts.next().unwrap_or(u32::MAX)
                } else {
                    src_host
                }
            }));
            start = end;
        }
        block.dst_hosts.resize(links, u32::MAX);
        block.check()?;
        Ok(block)
    }
}

impl Serialize for PackedLinks {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Bytes(&self.encode()).serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for PackedLinks {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<PackedLinks, D::Error> {
        let ByteBuf(bytes) = Deserialize::deserialize(deserializer)?;
        PackedLinks::decode(&bytes)
            .map(PackedLinks)
            .map_err(serde::de::Error::custom)
    }
}

/// The links of the last snapshot from one source page, as the state stores
/// them: the source once, and the destinations on its own host (most of them)
/// without their host. Half the bytes of a [`StateRecord::Link`] per link.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outlinks {
    pub src_host: HostId,
    pub src: PageId,
    pub on_host: Vec<PageId>,
    pub off_host: Vec<(PageId, HostId)>,
}

impl Outlinks {
    /// Groups links sorted by source into one record per source.
    pub fn group(links: &[LinkKey]) -> impl Iterator<Item = Outlinks> + '_ {
        links.chunk_by(|a, b| a.src == b.src).map(|run| {
            let dsts = run.iter().map(|l| (l.dst, l.dst_host));
            Outlinks::of(run[0].src, run[0].src_host, dsts)
        })
    }

    /// The record of page `src` on host `src_host`, linking to `dsts`
    /// (destinations with their hosts).
    pub fn of(
        src: PageId,
        src_host: HostId,
        dsts: impl Iterator<Item = (PageId, HostId)>,
    ) -> Outlinks {
        let mut out = Outlinks {
            src_host,
            src,
            on_host: Vec::new(),
            off_host: Vec::new(),
        };
        for (dst, dst_host) in dsts {
            if dst_host == src_host {
                out.on_host.push(dst);
            } else {
                out.off_host.push((dst, dst_host));
            }
        }
        out
    }

    /// The links again (on-host destinations first).
    pub fn links(&self) -> impl Iterator<Item = LinkKey> + '_ {
        let link = move |dst, dst_host| LinkKey {
            src: self.src,
            dst,
            src_host: self.src_host,
            dst_host,
        };
        let on = self.on_host.iter().map(move |&d| link(d, self.src_host));
        on.chain(self.off_host.iter().map(move |&(d, h)| link(d, h)))
    }
}

impl StateRecord {
    /// Calls `f` with the host of each source the record holds: its one
    /// host ([`StateRecord::host`]), or each source's of a [`LinkBlock`],
    /// whose sources need not share one.
    pub fn each_host(&self, mut f: impl FnMut(HostId)) {
        match self {
            StateRecord::Links(b) | StateRecord::PackedLinks(PackedLinks(b)) => b
                .src_hosts
                .iter()
                .filter_map(|&h| b.hosts.get(h as usize))
                .for_each(|&h| f(h)),
            rec => f(rec.host()),
        }
    }

    pub fn host(&self) -> HostId {
        match self {
            StateRecord::Page(_, p) => p.state.host,
            StateRecord::Host(h, _) => *h,
            StateRecord::Link(l) => l.src_host,
            StateRecord::Event(k, _) => k.host,
            StateRecord::Site(h, _) => *h,
            StateRecord::Change(h, _, _) => *h,
            StateRecord::Rank(h, _, _) => *h,
            StateRecord::Echo(h, _) => *h,
            StateRecord::Outlinks(o) => o.src_host,
            StateRecord::Pages(run) => run.host,
            // Routed only once split (`LinkBlock::outlinks`); see
            // `each_host`.
            StateRecord::Links(b) | StateRecord::PackedLinks(PackedLinks(b)) => b
                .src_hosts
                .first()
                .and_then(|&h| b.hosts.get(h as usize))
                .copied()
                .unwrap_or(HostId(0)), // an empty block names no host
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

/// What a ledger part holds, in its header (since version 5), so that a
/// restore allocates its largest vectors once: growing them as records
/// arrived copied each several times, a quarter of a restore's time on
/// bench snapshot 9. Zero where not known (other parts, older versions).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PartSizes {
    pub pages: u64,
    pub links: u64,
    pub sources: u64,
}

impl PartSizes {
    const BYTES: usize = 24;

    fn encode(&self) -> [u8; Self::BYTES] {
        let mut out = [0u8; Self::BYTES];
        for (chunk, x) in out
            .chunks_mut(8)
            .zip([self.pages, self.links, self.sources])
        {
            chunk.copy_from_slice(&x.to_le_bytes());
        }
        out
    }

    /// The sizes, none above `bytes`: every page, link and source of a part
    /// takes at least a byte of it, so a damaged header cannot make a
    /// restore reserve more memory than the file could fill.
    pub fn at_most(self, bytes: u64) -> PartSizes {
        PartSizes {
            pages: self.pages.min(bytes),
            links: self.links.min(bytes),
            sources: self.sources.min(bytes),
        }
    }

    fn decode(bytes: &[u8; Self::BYTES]) -> PartSizes {
        let x = |i: usize| u64::from_le_bytes(bytes[i * 8..i * 8 + 8].try_into().unwrap());
        PartSizes {
            pages: x(0),
            links: x(1),
            sources: x(2),
        }
    }
}

/// Records are encoded into blocks of about this many bytes, each written
/// after its length (since version 4), so that the reader decodes from memory.
const BLOCK_BYTES: usize = 1 << 20;

/// Writes state records to one part file.
pub struct StateWriter {
    path: PathBuf,
    file: DirectFile,
    block: Vec<u8>,
}

impl StateWriter {
    /// A part file with no sizes in its header.
    pub fn create(path: &Path) -> Result<StateWriter, OutputError> {
        Self::with_sizes(path, PartSizes::default())
    }

    /// A part file whose header tells a reader what it holds.
    pub fn with_sizes(path: &Path, sizes: PartSizes) -> Result<StateWriter, OutputError> {
        Self::open(path, sizes, None)
    }

    /// [`StateWriter::with_sizes`], written over the file `spare` moved to
    /// `path` if there is one: a file of an older state that no committed
    /// state refers to ([`crate::output::commit::SPARE_STATE`]). Its blocks
    /// are allocated already, and it needs no unlinking: bench snapshot 9's
    /// two 128 MB parts were each unlinked in 0.1 s, and `dd` wrote 128 MB
    /// in place in 0.36 s against 0.50 s new.
    pub fn over_spare(
        path: &Path,
        sizes: PartSizes,
        spare: &Path,
    ) -> Result<StateWriter, OutputError> {
        Self::open(path, sizes, Some(spare))
    }

    fn open(
        path: &Path,
        sizes: PartSizes,
        spare: Option<&Path>,
    ) -> Result<StateWriter, OutputError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| OutputError::io(dir, e))?;
        }
        // Without a spare (none kept, or another run's worker count), a new file.
        let over = spare.is_some_and(|spare| std::fs::rename(spare, path).is_ok());
        let mut file = DirectFile::open(path, !over).map_err(|e| OutputError::io(path, e))?;
        file.write_all(MAGIC)
            .and_then(|_| file.write_all(&STATE_VERSION.to_le_bytes()))
            .and_then(|_| file.write_all(&sizes.encode()))
            .map_err(|e| OutputError::io(path, e))?;
        Ok(StateWriter {
            path: path.to_path_buf(),
            file,
            block: Vec::with_capacity(BLOCK_BYTES + (BLOCK_BYTES >> 2)),
        })
    }

    pub fn write(&mut self, rec: &StateRecord) -> Result<(), OutputError> {
        bincode::serialize_into(&mut self.block, rec).map_err(|e| OutputError::Corrupt {
            path: self.path.clone(),
            problem: format!("cannot encode state: {e}"),
        })?;
        if self.block.len() >= BLOCK_BYTES {
            self.flush_block()?;
        }
        Ok(())
    }

    fn flush_block(&mut self) -> Result<(), OutputError> {
        if self.block.is_empty() {
            return Ok(());
        }
        let len = u32::try_from(self.block.len()).map_err(|_| OutputError::Corrupt {
            path: self.path.clone(),
            problem: "a state record of 4 GiB or more".into(),
        })?;
        self.file
            .write_all(&len.to_le_bytes())
            .and_then(|_| self.file.write_all(&self.block))
            .map_err(|e| OutputError::io(&self.path, e))?;
        self.block.clear();
        Ok(())
    }

    /// Flushes the file and has it written and synced on threads of its own,
    /// so that the disk writes while the caller goes on (a worker's ledger
    /// state is a hundred megabytes or more: the disk took two workers'
    /// 0.5 s of a bench snapshot's finish, and their sync 0.8 s when it was
    /// written through the page cache). The caller must [`Syncing::wait`]
    /// before the commit.
    pub fn finish_syncing(mut self) -> Result<Syncing, OutputError> {
        self.flush_block()?;
        let path = &self.path;
        let thread = self
            .file
            .finish_syncing()
            .map_err(|e| OutputError::io(path, e))?;
        Ok(Syncing {
            path: self.path,
            thread,
        })
    }
}

/// A state file being written and synced to disk (see
/// [`StateWriter::finish_syncing`]).
pub struct Syncing {
    path: PathBuf,
    thread: std::thread::JoinHandle<std::io::Result<()>>,
}

impl Syncing {
    /// Waits until the file is on disk.
    pub fn wait(self) -> Result<(), OutputError> {
        let path = &self.path;
        match self.thread.join() {
            Ok(synced) => synced.map_err(|e| OutputError::io(path, e)),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
}

/// An open part file, past its header.
struct Part<R> {
    input: R,
    len: u64,
    version: u32,
    sizes: PartSizes,
    /// Bytes read so far.
    at: u64,
}

fn corrupt(path: &Path, problem: String) -> OutputError {
    OutputError::Corrupt {
        path: path.to_path_buf(),
        problem,
    }
}

/// The part file at `path`, read through `input` (from its start).
fn open_part<R: Read>(path: &Path, mut input: R) -> Result<Part<R>, OutputError> {
    let len = std::fs::metadata(path)
        .map_err(|e| OutputError::io(path, e))?
        .len();
    let truncated = || corrupt(path, "truncated state file header".into());
    let mut header = [0u8; 12];
    input.read_exact(&mut header).map_err(|_| truncated())?;
    if &header[..8] != MAGIC {
        return Err(corrupt(path, "not a webevo state file".into()));
    }
    let version = u32::from_le_bytes(header[8..12].try_into().unwrap());
    if !(OLDEST_READABLE_VERSION..=STATE_VERSION).contains(&version) {
        return Err(corrupt(path, format!(
            "state version {version}, this webevo reads versions {OLDEST_READABLE_VERSION} to {STATE_VERSION}: rebuild the output from the input"
        )));
    }
    let mut part = Part {
        input,
        len,
        version,
        sizes: PartSizes::default(),
        at: 12,
    };
    if version >= 5 {
        let mut sizes = [0u8; PartSizes::BYTES];
        part.input.read_exact(&mut sizes).map_err(|_| truncated())?;
        part.sizes = PartSizes::decode(&sizes);
        part.at += PartSizes::BYTES as u64;
    }
    Ok(part)
}

/// The part file at `path` opened for its header alone.
fn open_header(path: &Path) -> Result<Part<File>, OutputError> {
    open_part(
        path,
        File::open(path).map_err(|e| OutputError::io(path, e))?,
    )
}

/// What the header of a part file says it holds (all zero before version 5).
pub fn part_sizes(path: &Path) -> Result<PartSizes, OutputError> {
    Ok(open_header(path)?.sizes)
}

/// [`part_sizes`], none above the file's length in bytes (a room a restore
/// can reserve).
pub fn part_room(path: &Path) -> Result<PartSizes, OutputError> {
    let part = open_header(path)?;
    Ok(part.sizes.at_most(part.len))
}

/// Reads every record of a part file, past the page cache where the system
/// allows: the state was written past it ([`DirectFile`]), so the file is on
/// the disk alone, and a buffered read of it cost the kernel more CPU than
/// the disk took time (see [`crate::direct_file`]). The reader's thread
/// reads ahead while the records are decoded.
pub fn read_part(path: &Path, mut visit: impl FnMut(StateRecord)) -> Result<(), OutputError> {
    let corrupt = |problem: String| corrupt(path, problem);
    let reader = DirectReader::open(path).map_err(|e| OutputError::io(path, e))?;
    let Part {
        mut input,
        len,
        version,
        mut at,
        ..
    } = open_part(path, reader)?;
    if version == 3 {
        return read_stream(input, len, visit, corrupt);
    }
    let mut block = Vec::new();
    while at < len {
        let mut len_bytes = [0u8; 4];
        input
            .read_exact(&mut len_bytes)
            .map_err(|_| corrupt(format!("truncated state block at byte {at}")))?;
        let n = u32::from_le_bytes(len_bytes) as usize;
        block.resize(n, 0);
        input
            .read_exact(&mut block)
            .map_err(|_| corrupt(format!("truncated state block at byte {at}")))?;
        let mut rest: &[u8] = &block;
        while !rest.is_empty() {
            let rec: StateRecord = bincode::deserialize_from(&mut rest).map_err(|e| {
                let pos = at + 4 + (n - rest.len()) as u64;
                corrupt(format!("cannot decode state at byte {pos}: {e}"))
            })?;
            visit(rec);
        }
        at += 4 + n as u64;
    }
    Ok(())
}

/// Reads a version-3 part: records back to back, without blocks.
fn read_stream(
    input: impl Read,
    len: u64,
    mut visit: impl FnMut(StateRecord),
    corrupt: impl Fn(String) -> OutputError,
) -> Result<(), OutputError> {
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

    fn link(src: u64, src_host: u64, dst: u64, dst_host: u64) -> LinkKey {
        LinkKey::of(src, src_host, dst, dst_host)
    }

    /// Grouping sorted links by source and expanding the groups gives the
    /// same links, one record per source.
    #[test]
    fn outlinks_round_trip() {
        let mut links = vec![
            link(1, 10, 2, 10),
            link(1, 10, 3, 11),
            link(1, 10, 4, 10),
            link(5, 10, 1, 10),
            link(7, 12, 1, 10),
            link(7, 12, 9, 12),
        ];
        links.sort_unstable();
        let groups: Vec<Outlinks> = Outlinks::group(&links).collect();
        assert_eq!(groups.len(), 3);
        assert_eq!(groups[0].on_host, [PageId(2), PageId(4)]);
        assert_eq!(groups[0].off_host, [(PageId(3), HostId(11))]);
        let mut back: Vec<LinkKey> = groups.iter().flat_map(|g| g.links()).collect();
        back.sort_unstable();
        assert_eq!(back, links);
    }

    /// A link block's columns must fit together; one that does gives its
    /// links back, one `Outlinks` per source.
    #[test]
    fn link_blocks_check_their_columns() {
        let block = LinkBlock {
            hosts: vec![HostId(10), HostId(11)],
            srcs: vec![PageId(1), PageId(5)],
            src_hosts: vec![0, 1],
            ends: vec![2, 3],
            dsts: vec![PageId(2), PageId(3), PageId(1)],
            dst_hosts: vec![0, 1, 0],
        };
        block.check().unwrap();
        let want = vec![link(1, 10, 2, 10), link(1, 10, 3, 11), link(5, 11, 1, 10)];
        assert_eq!(block.links().collect::<Vec<_>>(), want);
        let outlinks: Vec<Outlinks> = block.outlinks().collect();
        assert_eq!(outlinks, Outlinks::group(&want).collect::<Vec<_>>());
        let mut hosts = Vec::new();
        StateRecord::Links(block.clone()).each_host(|h| hosts.push(h));
        assert_eq!(hosts, [HostId(10), HostId(11)], "each source's host");
        let bad = [
            LinkBlock {
                src_hosts: vec![0],
                ..block.clone()
            },
            LinkBlock {
                ends: vec![2, 4],
                ..block.clone()
            },
            LinkBlock {
                ends: vec![3, 2],
                ..block.clone()
            },
            LinkBlock {
                ends: vec![3, 3],
                ..block.clone()
            },
            LinkBlock {
                ends: vec![0, 3],
                ..block.clone()
            },
            LinkBlock {
                dst_hosts: vec![0, 2, 0],
                ..block.clone()
            },
            LinkBlock {
                hosts: vec![HostId(10)],
                ..block.clone()
            },
        ];
        for b in bad {
            assert!(b.check().is_err(), "{b:?}");
        }
        assert!(LinkBlock::default().check().is_ok());
    }

    /// A packed block gives back the block it packed, in fewer bytes; bytes
    /// that do not fit together are an error, not a panic or another block.
    #[test]
    fn packed_link_blocks_round_trip_and_check_their_bytes() {
        // 40 sources of 1 to 150 links on 5 hosts, every fifth link off its
        // source's host.
        let mut block = LinkBlock {
            hosts: (0..5).map(|h| HostId(100 + h)).collect(),
            ..LinkBlock::default()
        };
        for i in 0..40u32 {
            block.srcs.push(PageId(u64::from(i) * 3));
            block.src_hosts.push(i % 5);
            for j in 0..1 + i * 7 % 150 {
                block.dsts.push(PageId(u64::from(i * 1000 + j)));
                let off = j % 5 == 0;
                block
                    .dst_hosts
                    .push(if off { (i + 1 + j) % 5 } else { i % 5 });
            }
            block.ends.push(block.dsts.len() as u32);
        }
        block.dst_hosts[3] = (block.src_hosts[0] + 1) % 5; // off its host
        block.check().unwrap();
        let packed = PackedLinks(block.clone());
        let bytes = bincode::serialize(&StateRecord::PackedLinks(packed.clone())).unwrap();
        let unpacked = bincode::serialize(&StateRecord::Links(block.clone())).unwrap();
        assert!(
            bytes.len() * 5 < unpacked.len() * 4,
            "{} {}",
            bytes.len(),
            unpacked.len()
        );
        let back: StateRecord = bincode::deserialize(&bytes).unwrap();
        assert_eq!(back, StateRecord::PackedLinks(packed.clone()));
        let empty = PackedLinks::default();
        assert_eq!(
            PackedLinks::decode(&empty.encode()).unwrap(),
            LinkBlock::default()
        );

        let raw = packed.encode();
        let (hosts, sources, links) = (5, 40, block.dsts.len());
        let bits_at = 16 + 8 * hosts + 16 * sources + 8 * links;
        let mut bad: Vec<Vec<u8>> = [0, 3, 16, bits_at, raw.len() - 1]
            .iter()
            .map(|&cut| raw[..cut].to_vec())
            .collect();
        bad.push([&raw[..], &[0]].concat()); // a byte too many
        let mut flipped = raw.clone();
        flipped[bits_at] ^= 2; // a link's bit: one off-host host too many or few
        bad.push(flipped);
        let mut spare = raw.clone();
        let last_word = bits_at + 8 * (links.div_ceil(64) - 1);
        spare[last_word + 7] |= 0x80; // a bit past the last link
        assert_ne!(links % 64, 0);
        bad.push(spare);
        let mut ends = raw.clone();
        let ends_at = 16 + 8 * hosts + 12 * sources;
        ends[ends_at..ends_at + 4].copy_from_slice(&0u32.to_le_bytes()); // a source without links
        bad.push(ends);
        let mut host = raw.clone();
        let src_hosts_at = 16 + 8 * hosts + 8 * sources;
        host[src_hosts_at..src_hosts_at + 4].copy_from_slice(&5u32.to_le_bytes()); // no such host
        bad.push(host);
        for (i, b) in bad.iter().enumerate() {
            assert!(PackedLinks::decode(b).is_err(), "case {i}");
        }
    }

    /// Records written over several blocks read back in order, and a file cut
    /// short is an error, not fewer records.
    #[test]
    fn blocks_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger-00000.bin");
        let records: Vec<StateRecord> = (0..60_000u64)
            .map(|i| {
                StateRecord::Outlinks(Outlinks {
                    src_host: HostId(i % 7),
                    src: PageId(i),
                    on_host: (0..i % 5).map(PageId).collect(),
                    off_host: vec![(PageId(i + 1), HostId(3)); (i % 2) as usize],
                })
            })
            .collect();
        let sizes = PartSizes {
            pages: 1,
            links: 1 << 40,
            sources: 60_000,
        };
        let mut w = StateWriter::with_sizes(&path, sizes).unwrap();
        for r in &records {
            w.write(r).unwrap();
        }
        w.finish_syncing().unwrap().wait().unwrap();
        let size = std::fs::metadata(&path).unwrap().len();
        assert!(size > 2 * BLOCK_BYTES as u64, "{size}");
        let mut read = Vec::new();
        read_part(&path, |r| read.push(r)).unwrap();
        assert_eq!(read, records);
        assert_eq!(part_sizes(&path).unwrap(), sizes);
        let room = part_room(&path).unwrap();
        assert_eq!((room.pages, room.sources), (1, 60_000));
        assert_eq!(room.links, std::fs::metadata(&path).unwrap().len());

        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 10]).unwrap();
        let err = read_part(&path, |_| {}).unwrap_err().to_string();
        assert!(err.contains("truncated state block"), "{err}");
    }

    /// A version-3 part file (one record per link) still reads.
    #[test]
    fn reads_versions_3_and_4() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger-00000.bin");
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&3u32.to_le_bytes());
        let old = [link(1, 10, 2, 10), link(1, 10, 3, 11)];
        for l in old {
            bytes.extend(bincode::serialize(&StateRecord::Link(l)).unwrap());
        }
        std::fs::write(&path, bytes).unwrap();
        let mut read = Vec::new();
        read_part(&path, |r| read.push(r)).unwrap();
        assert_eq!(read, old.map(StateRecord::Link));
        assert_eq!(part_sizes(&path).unwrap(), PartSizes::default());

        // Version 4: blocks, and no sizes in the header.
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&4u32.to_le_bytes());
        let block: Vec<u8> = old
            .iter()
            .flat_map(|&l| bincode::serialize(&StateRecord::Link(l)).unwrap())
            .collect();
        bytes.extend_from_slice(&(block.len() as u32).to_le_bytes());
        bytes.extend(block);
        std::fs::write(&path, bytes).unwrap();
        let mut read = Vec::new();
        read_part(&path, |r| read.push(r)).unwrap();
        assert_eq!(read, old.map(StateRecord::Link));
        assert_eq!(part_sizes(&path).unwrap(), PartSizes::default());

        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&2u32.to_le_bytes());
        std::fs::write(&path, bytes).unwrap();
        let err = read_part(&path, |_| {}).unwrap_err().to_string();
        assert!(err.contains("state version 2"), "{err}");
    }

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
