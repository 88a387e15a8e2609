//! Reading crawl directories into typed, interned records.
//!
//! Workers split every snapshot's files (Parquet row groups round-robin, whole text
//! files by a salt) and turn rows into [`Record`]s, which the dataflow then routes by
//! host. Fatal problems (a page URL that cannot be parsed, a malformed cell) become an
//! [`InputError`]; merely odd rows are counted in [`OddRows`] and skipped.

pub mod crawl_dir;
pub mod page_batch;
pub mod table;
pub mod url;

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::Arc;

use arrow_array::ArrayRef;

use serde::{Deserialize, Serialize};

use crate::bits::Bits;
use crate::error::InputError;
use crate::model::{digest_hash, HostId, Micros, PageId};
use crate::placement::Placement;
use crate::state::StateRecord;
use crate::tag_table::TagTable;
use crate::url_arena::{UrlArena, UrlRef};
use crawl_dir::SnapshotInput;
pub use page_batch::{Fetch, LinkBatch, PageBatcher};
use table::{dict_value, Row, Share};
use url::{normalize_for, NormalUrl};

use crate::job::SiteKey;

/// A normalized URL with its interned ids, as records carry it.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct UrlText {
    /// Boxed: the ledger keeps one per page, and a `String`'s capacity is 8
    /// bytes more.
    pub url: Box<str>,
    pub host_start: u32,
    pub host_end: u32,
}

impl UrlText {
    pub fn host(&self) -> &str {
        &self.url[self.host_start as usize..self.host_end as usize]
    }
}

impl From<NormalUrl> for UrlText {
    fn from(n: NormalUrl) -> Self {
        UrlText {
            url: n.url.into_boxed_str(),
            host_start: n.host_start,
            host_end: n.host_end,
        }
    }
}

/// One fetched page of a snapshot.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct PageObs {
    pub host: HostId,
    pub page: PageId,
    pub url: UrlText,
    pub fetch_time: Micros,
    pub status: Option<i32>,
    /// [`digest_hash`] of the content digest, 0 when none was recorded.
    pub digest: u64,
}

/// One link row of a snapshot (self-links and unparsable ends already dropped).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct LinkObs {
    pub src_host: HostId,
    pub src: PageId,
    pub dst: PageId,
    pub dst_host: HostId,
}

/// A page named by a link, so its host's ledger learns that it exists.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Mention {
    pub host: HostId,
    pub page: PageId,
    pub url: UrlText,
}

/// Clicks of one page in one bin of a click log (`clicks.parquet`): the clicks
/// in `[time, time + 20 minutes)`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ClickObs {
    pub host: HostId,
    pub page: PageId,
    pub time: Micros,
    pub clicks: u64,
}

/// Width of a click-log bin, microseconds.
pub const CLICK_BIN: Micros = 20 * 60 * 1_000_000;

/// Everything the ledger receives, routed by [`Record::route`].
///
/// Links are by far the most numerous records, so the other variants are boxed to
/// keep a record at 40 bytes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Record {
    Page(Box<PageObs>),
    Link(LinkObs),
    Mention(Box<Mention>),
    /// Pages or mentions of hosts of one worker (see [`page_batch`]).
    Pages(Box<page_batch::PageBatch>),
    /// Links from hosts of one worker (see [`page_batch`]).
    Links(Box<page_batch::LinkBatch>),
    /// Ledger state persisted by an earlier run.
    Restore(Box<StateRecord>),
    /// A click-log row (the ECHO analysis), at the snapshot where its bin has ended.
    Click(Box<ClickObs>),
}

const _: () = assert!(std::mem::size_of::<Record>() == 40);

impl Record {
    /// The exchange routing value of the record (see [`Placement::route`]):
    /// that of its host, or a batch's worker.
    pub fn route(&self, placement: &Placement) -> u64 {
        let host = match self {
            Record::Page(p) => p.host,
            Record::Link(l) => l.src_host,
            Record::Mention(m) => m.host,
            Record::Pages(b) => return u64::from(b.to),
            Record::Links(b) => return u64::from(b.to),
            Record::Restore(s) => s.host(),
            Record::Click(c) => c.host,
        };
        placement.route(host)
    }

    /// Whether the record is a batch of pages or links (see `page_batch`).
    pub fn is_batch(&self) -> bool {
        matches!(self, Record::Pages(_) | Record::Links(_))
    }

    /// The rows of input the record stands for: a batch's pages, else one.
    pub fn rows(&self) -> u64 {
        match self {
            Record::Pages(b) => b.len() as u64,
            Record::Links(b) => b.links.len() as u64,
            _ => 1,
        }
    }
}

/// Rows skipped as odd, not fatal; reported in the run summary.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OddRows {
    pub self_links: u64,
    pub unparsable_link_urls: u64,
    pub duplicate_links: u64,
    pub duplicate_pages: u64,
}

impl OddRows {
    pub fn add(&mut self, other: &OddRows) {
        self.self_links += other.self_links;
        self.unparsable_link_urls += other.unparsable_link_urls;
        self.duplicate_links += other.duplicate_links;
        self.duplicate_pages += other.duplicate_pages;
    }

    pub fn total(&self) -> u64 {
        self.self_links + self.unparsable_link_urls + self.duplicate_links + self.duplicate_pages
    }
}

/// Counts of what one worker read from one snapshot.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReadCounts {
    pub pages: u64,
    pub links: u64,
}

/// Which worker reads a snapshot's text pages file (see [`table::read_rows`]);
/// its links file goes to the next one, so two workers share the reading.
fn pages_salt(snap: &SnapshotInput) -> usize {
    snap.meta.seq as usize
}

/// The host of every page in this worker's share of `snap` (the same share as
/// [`read_snapshot`]'s), for placing hosts before the snapshot is read. Rows
/// that do not parse are skipped: the snapshot's read reports them.
pub fn read_page_hosts(
    snap: &SnapshotInput,
    share: &Share,
    site_key: SiteKey,
    visit: &mut dyn FnMut(HostId),
) -> Result<(), InputError> {
    table::read_rows(&snap.pages, share, pages_salt(snap), |row| {
        if let Some(url) = row
            .text(0)?
            .and_then(|raw| normalize_for(raw, site_key).ok())
        {
            visit(HostId::of(url.host()));
        }
        Ok(())
    })
}

/// Where [`read_snapshot`] hands what it reads. A closure taking records is
/// one: it gets every fetched page and every page a link names as a record
/// of its own, boxed.
pub trait RecordSink {
    fn record(&mut self, rec: Record);

    /// A fetched page, its URL lent: a sink that copies what it needs (a
    /// [`PageBatcher`]) spares the page's box and URL string.
    fn page(&mut self, page: PageRef<'_>) {
        self.record(Record::Page(Box::new(page.to_obs())))
    }

    /// A page named by a link.
    fn mention(&mut self, m: Mention) {
        self.record(Record::Mention(Box::new(m)))
    }

    /// A link.
    fn link(&mut self, l: LinkObs) {
        self.record(Record::Link(l))
    }
}

impl<F: FnMut(Record)> RecordSink for F {
    fn record(&mut self, rec: Record) {
        self(rec)
    }
}

/// A sink that drops everything, boxing nothing: what `webevo check` reads
/// into.
pub struct Discard;

impl RecordSink for Discard {
    fn record(&mut self, _: Record) {}
    fn page(&mut self, _: PageRef<'_>) {}
    fn mention(&mut self, _: Mention) {}
    fn link(&mut self, _: LinkObs) {}
}

/// A fetched page as [`read_snapshot`] lends it to a [`RecordSink`].
pub struct PageRef<'a> {
    pub host: HostId,
    pub page: PageId,
    pub url: &'a NormalUrl,
    pub fetch: Fetch,
}

impl PageRef<'_> {
    pub fn to_obs(&self) -> PageObs {
        PageObs {
            host: self.host,
            page: self.page,
            url: UrlText::from(self.url.clone()),
            fetch_time: self.fetch.fetch_time,
            status: self.fetch.status,
            digest: self.fetch.digest,
        }
    }
}

/// Reads this worker's share of `snap`, handing what it reads to `emit`.
pub fn read_snapshot(
    snap: &SnapshotInput,
    share: &Share,
    site_key: SiteKey,
    odd: &mut OddRows,
    emit: &mut dyn RecordSink,
) -> Result<ReadCounts, InputError> {
    let mut counts = ReadCounts::default();
    let salt = pages_salt(snap);
    // The link cache starts with the pages this share fetches, as pages
    // already named (see `UrlCache::seed`).
    let mut urls = snap.links.as_ref().map(|_| UrlCache::new(site_key));
    table::read_rows(&snap.pages, share, salt, |row| {
        let raw = row.text(0)?.ok_or("url is empty")?;
        let url = normalize_for(raw, site_key).map_err(|p| format!("page URL {raw:?}: {p}"))?;
        let fetch_time = row.time(1)?.unwrap_or(snap.meta.time);
        let status = row
            .int(2)?
            .map(|s| {
                i32::try_from(s)
                    .ok()
                    .filter(|s| (0..1000).contains(s))
                    .ok_or(format!("status {s} is not an HTTP status"))
            })
            .transpose()?;
        let digest = row.text(3)?.map(digest_hash).unwrap_or(0);
        let (host, page) = (HostId::of(url.host()), PageId::of(&url.url));
        if let Some(urls) = urls.as_mut() {
            urls.seed(raw, host, page);
        }
        emit.page(PageRef {
            host,
            page,
            url: &url,
            fetch: Fetch {
                fetch_time,
                status,
                digest,
            },
        });
        counts.pages += 1;
        Ok(())
    })?;
    let (Some(links), Some(mut urls)) = (&snap.links, urls) else {
        return Ok(counts);
    };
    table::read_rows(links, share, salt + 1, |row| {
        let count = row.int(2)?.unwrap_or(1);
        if count < 1 {
            return Err(format!("link count {count} is not positive"));
        }
        let (Some(src), Some(dst)) = (urls.cell(row, 0)?, urls.cell(row, 1)?) else {
            return Err("src and dst must not be empty".into());
        };
        let (Some(src_ids), Some(dst_ids)) = (src.ids(), dst.ids()) else {
            odd.unparsable_link_urls += 1;
            return Ok(());
        };
        if src_ids.1 == dst_ids.1 {
            odd.self_links += 1;
            return Ok(());
        }
        urls.announce(src.index, emit);
        urls.announce(dst.index, emit);
        let (src, dst) = (src_ids, dst_ids);
        emit.link(LinkObs {
            src_host: src.0,
            src: src.1,
            dst: dst.1,
            dst_host: dst.0,
        });
        counts.links += 1;
        Ok(())
    })?;
    Ok(counts)
}

/// Link endpoints of one snapshot on one worker, normalized once each.
///
/// Link tables repeat URLs heavily (a page's URL on every one of its outlinks, a
/// popular target on every page that links to it), and parsing dominates ingest,
/// so each distinct raw string is normalized once. The first accepted link that
/// names a page announces it to its host's ledger as a [`Mention`], unless
/// this share fetched the page under the same string: the pages are read
/// first, and each goes into the cache as announced ([`UrlCache::seed`]), as
/// its fetch makes it known. On bench snapshot 9 (2 workers) that spared a
/// third of the link endpoints' normalizing and of the mentions.
///
/// A lookup hashes the raw string once and hands back an index, so announcing
/// costs no second lookup. A Parquet column read with its dictionary costs one
/// lookup per distinct value of a column chunk, and then an array index per
/// row ([`DictMemo`]); the chunk's values are looked up together as it
/// arrives, a group at a time, each step's cache misses in flight at once
/// ([`UrlCache::resolve_dictionary`]). Otherwise, since link tables usually
/// list a page's outlinks together, a source equal to the previous row's costs
/// one comparison.
///
/// # Memory
/// Per distinct raw string its bytes in a [`UrlArena`], an 8-byte slot of the
/// table and 32 bytes of [`Endpoint`]: about 140 MB for the 1.38M distinct
/// URLs (81 MB of text) of bench snapshot 9 with 1 worker, a tenth of the
/// snapshot's peak, which falls while the links are read. A map from owned
/// strings to endpoints that held each normalized URL until announced was
/// 250 MB. Neither the text nor the endpoints sit in one vector: one of 81 MB
/// doubled past 64 MiB, and held both copies, 134 MB, for the moment of the
/// copy; chunks of the arena and blocks of endpoints are allocated at their
/// final size and never move.
struct UrlCache {
    /// Per distinct raw string its endpoint index, under 32 bits of the
    /// string's hash: the table grows to over a million entries, and
    /// rehashing them from their strings (a cache miss each) was 5% of
    /// reading a snapshot; a [`TagTable`] grows from its tags alone.
    seen: TagTable,
    hasher: foldhash::fast::FixedState,
    /// The raw strings (with no site marked in them: only their bytes count).
    raw: UrlArena,
    /// Endpoint `i` is `blocks[i / ENDPOINT_BLOCK][i % ENDPOINT_BLOCK]`.
    blocks: Vec<Vec<Endpoint>>,
    /// Which endpoints can be pages.
    pages: Bits,
    /// Which endpoints were announced.
    announced: Bits,
    /// Normalized URLs of endpoints not yet announced: the first link that
    /// names an endpoint usually announces it at once, so this stays small.
    pending: HashMap<u32, UrlText, foldhash::fast::FixedState>,
    /// The previous row's raw source and its index.
    last_src: Option<(String, u32)>,
    /// Per link column (source, destination), its current dictionary's entries.
    dicts: [DictMemo; 2],
    site_key: SiteKey,
}

/// A distinct raw string of a link table: where its bytes are, and the ids of
/// its page (zero for a string that cannot be a page; see `UrlCache::pages`).
#[derive(Clone, Copy)]
struct Endpoint {
    raw: UrlRef,
    host: HostId,
    page: PageId,
}

/// Dictionary values looked up together (see [`UrlCache::resolve_dictionary`]):
/// enough misses in flight to keep the memory busy, few enough that a group's
/// lines stay in the cache from its first step to its last.
const RESOLVE_GROUP: usize = 64;

/// How many rows ahead a link column's dictionary entry not seen before has
/// its slot of the seen table asked for: a URL new to the cache probes the
/// table where it would go, a cache miss that was four fifths of its lookup.
const CELL_AHEAD: usize = 8;

/// Endpoints a block holds: 2 MiB of them.
const ENDPOINT_BLOCK: usize = 1 << 16;

/// A link cell's endpoint: its index, and the ids of its page if it can be
/// one (24 bytes, where an `Option` of the ids made it 32).
#[derive(Clone, Copy)]
struct Resolved {
    host: HostId,
    page: PageId,
    index: u32,
    is_page: bool,
}

impl Resolved {
    const UNSEEN: Resolved = Resolved {
        host: HostId(0),
        page: PageId(0),
        index: u32::MAX,
        is_page: false,
    };

    /// The ids of the endpoint's page, or `None` if it cannot be a page.
    fn ids(&self) -> Option<(HostId, PageId)> {
        self.is_page.then_some((self.host, self.page))
    }

    /// Whether this is [`Resolved::UNSEEN`]: no endpoint looked up yet.
    fn is_unseen(&self) -> bool {
        self.index == Resolved::UNSEEN.index
    }
}

/// The endpoints of one dictionary's entries, looked up on first use.
#[derive(Default)]
struct DictMemo {
    /// The dictionary, held so that its identity (the `Arc`) stays unique
    /// while the memo refers to it.
    values: Option<ArrayRef>,
    /// Per entry its endpoint, or [`Resolved::UNSEEN`]. The ids are copied
    /// here from the endpoint: a row then reads one entry of an array the
    /// size of the dictionary, where reading the endpoint it names was a
    /// second, dependent load, from blocks of every endpoint of the share
    /// (tens of megabytes), that missed the cache.
    entries: Vec<Resolved>,
    /// Per entry its tag (see [`UrlCache::tag`]), kept from the lookup of
    /// the dictionary: an unseen entry is looked up again when a row names
    /// it, and its table slot asked for [`CELL_AHEAD`] rows before.
    tags: Vec<u32>,
}

impl UrlCache {
    fn new(site_key: SiteKey) -> UrlCache {
        UrlCache {
            seen: TagTable::new(),
            hasher: Default::default(),
            raw: UrlArena::default(),
            blocks: Vec::new(),
            pages: Bits::default(),
            announced: Bits::default(),
            pending: HashMap::default(),
            last_src: None,
            dicts: Default::default(),
            site_key,
        }
    }

    /// Endpoint `i` (a function of the blocks alone, so that the table's
    /// closures can borrow them beside the table).
    fn endpoint(blocks: &[Vec<Endpoint>], i: u32) -> &Endpoint {
        let i = i as usize;
        &blocks[i / ENDPOINT_BLOCK][i % ENDPOINT_BLOCK]
    }

    /// The tag `raw` is kept under in `seen`.
    fn tag(&self, raw: &str) -> u32 {
        (self.hasher.hash_one(raw) >> 32) as u32
    }

    /// The index of `raw`, normalizing it on first sight.
    fn lookup(&mut self, raw: &str) -> u32 {
        self.lookup_tagged(raw, self.tag(raw))
    }

    /// The index of `raw`, whose tag is `tag`, if it has one.
    fn find_tagged(&self, raw: &str, tag: u32) -> Option<u32> {
        let (arena, blocks) = (&self.raw, &self.blocks);
        self.seen.find(tag, |i| {
            arena.bytes(&Self::endpoint(blocks, i).raw) == raw.as_bytes()
        })
    }

    /// [`lookup`](Self::lookup) of `raw`, whose tag is `tag`.
    fn lookup_tagged(&mut self, raw: &str, tag: u32) -> u32 {
        if let Some(i) = self.find_tagged(raw, tag) {
            return i;
        }
        let i = self.next_index();
        let ids = normalize_for(raw, self.site_key).ok().map(|n| {
            let url = UrlText::from(n);
            let ids = (HostId::of(url.host()), PageId::of(&url.url));
            self.pending.insert(i, url);
            ids
        });
        self.push(raw, tag, ids)
    }

    /// The index the next endpoint gets.
    fn next_index(&self) -> u32 {
        let count = self
            .blocks
            .last()
            .map_or(0, |b| (self.blocks.len() - 1) * ENDPOINT_BLOCK + b.len());
        u32::try_from(count).expect("under 2^32 distinct URLs a share")
    }

    /// Adds `raw`, tagged `tag` and not in the cache, with the ids of its
    /// page (`None` if it cannot be one); returns its index.
    fn push(&mut self, raw: &str, tag: u32, ids: Option<(HostId, PageId)>) -> u32 {
        let i = self.next_index();
        if ids.is_some() {
            self.pages.insert(i as usize);
        }
        let (host, page) = ids.unwrap_or((HostId(0), PageId(0)));
        if self.blocks.last().is_none_or(|b| b.len() == ENDPOINT_BLOCK) {
            let mut block = Vec::with_capacity(ENDPOINT_BLOCK);
            // Filled before the next is made: mapped whole now (2 MB).
            crate::memory::prefault_spare(&mut block, ENDPOINT_BLOCK);
            self.blocks.push(block);
        }
        let raw = self.raw.push(raw, 0, 0);
        let block = self.blocks.last_mut().expect("a block has room");
        block.push(Endpoint { raw, host, page });
        self.seen.insert(tag, i);
        i
    }

    /// Adds the raw URL `raw` of a page this share fetched, whose ids are
    /// `host` and `page`, as announced: its fetch makes the page known, so a
    /// mention would tell its ledger nothing, and a link naming the page by
    /// the same string needs no normalizing of its own.
    fn seed(&mut self, raw: &str, host: HostId, page: PageId) {
        let tag = self.tag(raw);
        if self.find_tagged(raw, tag).is_none() {
            let i = self.push(raw, tag, Some((host, page)));
            self.announced.insert(i as usize);
        }
    }

    /// Looks up every value of the dictionary `values` of link column `col`
    /// into its memo, [`RESOLVE_GROUP`] at a time: first the home slot of each
    /// value of the group is fetched, then the endpoint each slot names, then
    /// that endpoint's bytes, and only then is each compared, so that a
    /// group's misses of each step overlap instead of following one another.
    /// A value not seen before stays unseen here, and is normalized when a
    /// row first names it, as is one that is not text (for that row to
    /// report): a value's normalized URL waits for the row that announces it
    /// in `pending`, which stays a few entries so (a dictionary's worth of
    /// new values made it a table that missed the cache).
    fn resolve_dictionary(&mut self, col: usize, values: &ArrayRef) {
        let mut entries = std::mem::take(&mut self.dicts[col].entries);
        let mut tags = std::mem::take(&mut self.dicts[col].tags);
        let mut group: Vec<(usize, &str, u32)> = Vec::with_capacity(RESOLVE_GROUP);
        let mut keys = 0..values.len();
        loop {
            group.clear();
            group.extend(
                keys.by_ref()
                    .filter_map(|k| {
                        dict_value(values, k)
                            .ok()
                            .map(|raw| (k, raw, self.tag(raw)))
                    })
                    .take(RESOLVE_GROUP),
            );
            if group.is_empty() {
                break;
            }
            group
                .iter()
                .for_each(|&(_, _, tag)| self.seen.prefetch(tag));
            let mut firsts = [None; RESOLVE_GROUP];
            for (first, &(_, _, tag)) in firsts.iter_mut().zip(&group) {
                *first = self.seen.candidates(tag).next();
            }
            for &i in firsts.iter().flatten() {
                crate::prefetch::prefetch(Self::endpoint(&self.blocks, i));
            }
            for &i in firsts.iter().flatten() {
                self.raw.prefetch(&Self::endpoint(&self.blocks, i).raw);
            }
            for &(k, raw, tag) in &group {
                entries[k] = self
                    .find_tagged(raw, tag)
                    .map_or(Resolved::UNSEEN, |i| self.resolved(i));
                tags[k] = tag;
            }
        }
        self.dicts[col].entries = entries;
        self.dicts[col].tags = tags;
    }

    /// The endpoint of text cell `col` (0: source, 1: destination) of a link
    /// row; `None` for an empty cell.
    fn cell(&mut self, row: &Row, col: usize) -> Result<Option<Resolved>, String> {
        if let Some((values, key)) = row.dict_key(col) {
            let memo = &mut self.dicts[col];
            if !memo.values.as_ref().is_some_and(|v| Arc::ptr_eq(v, values)) {
                memo.values = Some(values.clone());
                memo.entries.clear();
                memo.entries.resize(values.len(), Resolved::UNSEEN);
                memo.tags.clear();
                memo.tags.resize(values.len(), 0);
                self.resolve_dictionary(col, values);
            }
            let memo = &self.dicts[col];
            if let Some(ahead) = row.dict_key_ahead(col, CELL_AHEAD) {
                if memo.entries.get(ahead).is_some_and(Resolved::is_unseen) {
                    self.seen.prefetch(memo.tags[ahead]);
                }
            }
            let known = memo.entries[key];
            if !known.is_unseen() {
                return Ok(Some(known));
            }
            let tag = memo.tags[key];
            let i = self.lookup_tagged(dict_value(values, key)?, tag);
            let resolved = self.resolved(i);
            self.dicts[col].entries[key] = resolved;
            return Ok(Some(resolved));
        }
        Ok(match row.text(col)? {
            None => None,
            Some(raw) => {
                let i = if col == 0 {
                    self.lookup_src(raw)
                } else {
                    self.lookup(raw)
                };
                Some(self.resolved(i))
            }
        })
    }

    /// [`lookup`](Self::lookup) for a link's source, remembering the last one.
    fn lookup_src(&mut self, raw: &str) -> u32 {
        if let Some((last, i)) = &self.last_src {
            if last == raw {
                return *i;
            }
        }
        let i = self.lookup(raw);
        match &mut self.last_src {
            Some((last, j)) => {
                last.clear();
                last.push_str(raw);
                *j = i;
            }
            None => self.last_src = Some((raw.to_string(), i)),
        }
        i
    }

    /// Endpoint `i` with its ids.
    fn resolved(&self, i: u32) -> Resolved {
        let e = Self::endpoint(&self.blocks, i);
        Resolved {
            host: e.host,
            page: e.page,
            index: i,
            is_page: self.pages.contains(i as usize),
        }
    }

    /// Announces the page of endpoint `i` if it was not yet.
    fn announce(&mut self, i: u32, emit: &mut dyn RecordSink) {
        if !self.announced.insert(i as usize) {
            return;
        }
        if let (Some((host, page)), Some(url)) = (self.resolved(i).ids(), self.pending.remove(&i)) {
            emit.mention(Mention { host, page, url });
        }
    }
}

/// Reads this worker's share of the click log, handing each row with at least one
/// click to `emit`. A URL that cannot be a page, or a negative count, is an error
/// naming the row.
pub fn read_clicks(
    file: &crawl_dir::InputFile,
    share: &Share,
    site_key: SiteKey,
    emit: &mut dyn FnMut(ClickObs),
) -> Result<(), InputError> {
    table::read_rows(file, share, 0, |row| {
        let text = row.text(0)?.ok_or("url is empty")?;
        let url = normalize_for(text, site_key).map_err(|p| format!("click URL {text:?}: {p}"))?;
        let time = row.time(1)?.ok_or("time is empty")?;
        let clicks = row.int(2)?.ok_or("clicks is empty")?;
        let clicks = u64::try_from(clicks).map_err(|_| format!("clicks {clicks} is negative"))?;
        if clicks > 0 {
            let url = UrlText::from(url);
            emit(ClickObs {
                host: HostId::of(url.host()),
                page: PageId::of(&url.url),
                time,
                clicks,
            });
        }
        Ok(())
    })
}

/// The trust vector of `trust.parquet`: each listed page's weight, in units of
/// `2^-40` of the largest weight (a positive weight is at least one unit).
/// Weights of a URL listed twice add up.
pub type TrustWeights = HashMap<PageId, u64>;

/// Reads the whole trust file (every process does: it names pages, not links,
/// and is small next to a snapshot). A URL that cannot be a page, or a weight
/// that is negative or not a number, is an error naming the row.
pub fn read_trust(
    file: &crawl_dir::InputFile,
    site_key: SiteKey,
) -> Result<TrustWeights, InputError> {
    let mut raw: HashMap<PageId, f64> = HashMap::new();
    table::read_rows(file, &Share::dealt(0, 1), 0, |row| {
        let text = row.text(0)?.ok_or("url is empty")?;
        let url = normalize_for(text, site_key).map_err(|p| format!("trust URL {text:?}: {p}"))?;
        let w = row.float(1)?.ok_or("weight is empty")?;
        if !(w.is_finite() && w >= 0.0) {
            return Err(format!("weight {w} is not a finite number >= 0"));
        }
        *raw.entry(PageId::of(&url.url)).or_default() += w;
        Ok(())
    })?;
    let max = raw.values().copied().fold(0.0f64, f64::max);
    if !max.is_finite() {
        return Err(InputError::file(
            &file.path,
            "the weights add up to more than a double holds",
        ));
    }
    Ok(raw
        .into_iter()
        .filter(|(_, w)| *w > 0.0)
        .map(|(p, w)| (p, ((w / max * TRUST_UNIT as f64).round() as u64).max(1)))
        .collect())
}

/// The largest trust weight, in [`TrustWeights`] units.
pub const TRUST_UNIT: u64 = 1 << 40;

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use arrow_array::types::Int16Type;
    use arrow_array::{ArrayRef, DictionaryArray, Int64Array, RecordBatch, StringArray};
    use arrow_schema::{DataType, Field, Schema};
    use parquet::arrow::ArrowWriter;
    use parquet::file::properties::WriterProperties;

    use super::*;
    use crate::ingest::crawl_dir::CrawlDir;

    /// Link rows: sources in runs, destinations repeating across row groups,
    /// self-links, a URL that cannot be a page, and a host of its own.
    fn links() -> Vec<(String, String)> {
        let mut rows = Vec::new();
        for s in 0..1000 {
            for d in 0..12 {
                let dst = match (s * 7 + d) % 15 {
                    0 => "mailto:x@y.z".to_string(),
                    2 => format!("http://a.com/p{}", (s * 13) % 1000),
                    1 => format!("http://a.com/p{s}"),
                    k if k % 4 == 0 => format!("http://other{k}.org/"),
                    k => format!("http://a.com/p{}", k * 3),
                };
                rows.push((format!("http://a.com/p{s}"), dst));
            }
        }
        rows
    }

    fn write_links(path: &Path, rows: &[(String, String)], how: &str) {
        let strings = |f: fn(&(String, String)) -> &str| -> ArrayRef {
            let col: Vec<&str> = rows.iter().map(f).collect();
            if how == "int16 dictionary" {
                Arc::new(col.into_iter().collect::<DictionaryArray<Int16Type>>())
            } else {
                Arc::new(StringArray::from(col))
            }
        };
        let text = if how == "int16 dictionary" {
            DataType::Dictionary(Box::new(DataType::Int16), Box::new(DataType::Utf8))
        } else {
            DataType::Utf8
        };
        let schema = Arc::new(Schema::new(vec![
            Field::new("src", text.clone(), false),
            Field::new("dst", text, false),
            Field::new("count", DataType::Int64, false),
        ]));
        let counts: ArrayRef = Arc::new(Int64Array::from(vec![1; rows.len()]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![strings(|r| &r.0), strings(|r| &r.1), counts],
        )
        .unwrap();
        let props = WriterProperties::builder().set_max_row_group_row_count(Some(3000));
        let props = match how {
            "plain" => props.set_dictionary_enabled(false),
            // The dictionary outgrows its page within a chunk: later pages are plain.
            "dictionary falling back" => props
                .set_dictionary_page_size_limit(200)
                .set_data_page_row_count_limit(10)
                .set_write_batch_size(10),
            _ => props,
        };
        let f = std::fs::File::create(path).unwrap();
        let mut w = ArrowWriter::try_new(f, schema, Some(props.build())).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
    }

    /// What one worker of `peers` reads of a crawl with one snapshot, as text.
    fn read(root: &Path, index: usize, peers: usize) -> (Vec<String>, OddRows) {
        let crawl = CrawlDir::open(root).unwrap();
        let mut out = Vec::new();
        let mut odd = OddRows::default();
        let share = Share::dealt(index, peers);
        read_snapshot(
            &crawl.snapshots[0],
            &share,
            SiteKey::Host,
            &mut odd,
            &mut |r| out.push(format!("{r:?}")),
        )
        .unwrap();
        out.sort();
        (out, odd)
    }

    /// Snapshot 0 of a crawl at `root`, with `pages` as its pages table;
    /// its directory, for the links table.
    fn snapshot_zero(root: &Path, pages: &str) -> std::path::PathBuf {
        let snap = root.join("snapshots/0");
        std::fs::create_dir_all(&snap).unwrap();
        std::fs::write(
            snap.join("snapshot.json"),
            r#"{"time": "2024-01-01T00:00:00Z"}"#,
        )
        .unwrap();
        std::fs::write(snap.join("pages.tsv"), pages).unwrap();
        snap
    }

    fn crawl(dir: &Path, how: &str) -> std::path::PathBuf {
        let root = dir.join(how);
        let snap = snapshot_zero(&root, "url\nhttp://a.com/p0\n");
        if how == "tsv" {
            let mut text = "src\tdst\n".to_string();
            for (s, d) in links() {
                text.push_str(&format!("{s}\t{d}\n"));
            }
            std::fs::write(snap.join("links.tsv"), text).unwrap();
        } else {
            write_links(&snap.join("links.parquet"), &links(), how);
        }
        root
    }

    /// Links read through their Parquet dictionaries give the same records
    /// and odd-row counts as plain Parquet and TSV, whatever the encoding of
    /// the file's pages and on every share of the row groups.
    #[test]
    fn dictionary_reading_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let (tsv, tsv_odd) = read(&crawl(dir.path(), "tsv"), 0, 1);
        assert!(tsv.len() > 10_000, "{}", tsv.len());
        assert!(tsv_odd.self_links > 0 && tsv_odd.unparsable_link_urls > 0);
        for how in [
            "dictionary",
            "plain",
            "dictionary falling back",
            "int16 dictionary",
        ] {
            let root = crawl(dir.path(), how);
            let (all, odd) = read(&root, 0, 1);
            let first_difference = all.iter().zip(&tsv).find(|(a, b)| a != b);
            assert!(
                all == tsv,
                "{how}: {} records against {}; first difference {first_difference:?}",
                all.len(),
                tsv.len()
            );
            assert_eq!(
                (odd.self_links, odd.unparsable_link_urls),
                (tsv_odd.self_links, tsv_odd.unparsable_link_urls),
                "{how}"
            );
            // Two shares read disjoint row groups; together, the same links.
            let links = |v: Vec<String>| -> Vec<String> {
                v.into_iter().filter(|r| r.starts_with("Link")).collect()
            };
            let mut two = links(read(&root, 0, 2).0);
            two.extend(links(read(&root, 1, 2).0));
            two.sort();
            assert!(two == links(all), "{how}: two shares differ from one");
        }
    }

    /// More distinct endpoints than a block of the cache holds, with URLs
    /// that cannot be pages and two spellings of one page among them: the
    /// links and mentions read are those of normalizing every cell on its
    /// own, each raw string mentioned once, at its first accepted link, and
    /// none that the pages table lists as it is (fetched, so known), while
    /// another spelling of a fetched page is still mentioned.
    #[test]
    fn links_and_mentions_match_normalizing_every_cell() {
        let mut rows = Vec::new();
        for s in 0..(ENDPOINT_BLOCK + 5000) {
            let src = format!("http://s{}.example/p{s}", s % 97);
            let dst = match s % 11 {
                0 => format!("mailto:u{s}@example.org"),
                1 => src.clone(),
                2 => format!("HTTP://S{}.EXAMPLE/p{}", (s + 1) % 97, s + 1),
                _ => format!("http://d.example/q{}", s / 3),
            };
            rows.push((src, dst));
        }
        // Every fifth source fetched, and one destination under another
        // spelling than its links'.
        let fetched: Vec<String> = (0..ENDPOINT_BLOCK + 5000)
            .step_by(5)
            .map(|s| format!("http://s{}.example/p{s}", s % 97))
            .chain(["HTTP://D.EXAMPLE/q7".to_string()])
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let snap = snapshot_zero(dir.path(), &format!("url\n{}\n", fetched.join("\n")));
        write_links(&snap.join("links.parquet"), &rows, "plain");
        let (got, odd) = read(dir.path(), 0, 1);
        let (pages, got): (Vec<String>, Vec<String>) =
            got.into_iter().partition(|r| r.starts_with("Page("));
        assert_eq!(pages.len(), fetched.len());

        let ids = |raw: &str| {
            normalize_for(raw, SiteKey::Host).ok().map(|n| {
                let url = UrlText::from(n);
                (HostId::of(url.host()), PageId::of(&url.url), url)
            })
        };
        let mut want = Vec::new();
        let mut mentioned: std::collections::HashSet<String> = fetched.iter().cloned().collect();
        let (mut self_links, mut unparsable) = (0, 0);
        for (s, d) in &rows {
            let (Some(src), Some(dst)) = (ids(s), ids(d)) else {
                unparsable += 1;
                continue;
            };
            if src.1 == dst.1 {
                self_links += 1;
                continue;
            }
            for (raw, (host, page, url)) in [(s, &src), (d, &dst)] {
                if mentioned.insert(raw.clone()) {
                    let url = url.clone();
                    let m = Mention {
                        host: *host,
                        page: *page,
                        url,
                    };
                    want.push(format!("{:?}", Record::Mention(Box::new(m))));
                }
            }
            let link = LinkObs {
                src_host: src.0,
                src: src.1,
                dst: dst.1,
                dst_host: dst.0,
            };
            want.push(format!("{:?}", Record::Link(link)));
        }
        want.sort();
        assert!(mentioned.len() > ENDPOINT_BLOCK, "{}", mentioned.len());
        // The other spelling is mentioned; the sources fetched are not.
        assert!(want.iter().any(|r| r.contains("http://d.example/q7")));
        assert!(!want
            .iter()
            .any(|r| r.starts_with("Mention") && r.contains("/p5\"")));
        assert!(self_links > 0 && unparsable > 0);
        assert_eq!(
            (odd.self_links, odd.unparsable_link_urls),
            (self_links, unparsable)
        );
        let first_difference = got.iter().zip(&want).find(|(a, b)| a != b);
        assert!(
            got == want,
            "{} records against {}; first difference {first_difference:?}",
            got.len(),
            want.len()
        );
    }
}
