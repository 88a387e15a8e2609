//! The ledger: per-host page and link histories, turned into per-snapshot deltas.
//!
//! Each worker owns the ledger of the hosts routed to it. For every snapshot it folds
//! the snapshot's records into per-page summaries (first and last seen, observations,
//! changes, alive) and compares the snapshot with the previous one, emitting only
//! what changed as differential updates: per-host fact counts (pages fetched and
//! known, links) move by their deltas, and the snapshot's events (new, gone and
//! changed pages, new and removed links, new hosts) are inserted at the snapshot and
//! retracted at the next one. Downstream work is therefore proportional to the
//! change, and the ledger's own cost to the snapshot it reads.
//!
//! Semantics the analyses rely on (see the README's input section):
//! - Known pages `K_t`: fetched at `t` or named by a link of `t`.
//! - New page at `t`: fetched at `t` and in no `K_s`, `s < t`.
//! - Alive pages: a full snapshot's alive set is what it fetched; a partial snapshot
//!   adds what it fetched to the previous alive set. A full snapshot's gone pages are
//!   the previously alive pages it did not fetch; a partial snapshot has none.
//! - Links `E_t`: a full snapshot's links are those it lists. A partial snapshot
//!   replaces the outlinks of the pages it covers (fetched, or listed as a link
//!   source) and keeps the previous outlinks of every other page.
//! - Changed page: its digest differs from its previous observation's (both known).
//! - New host: has fetched pages at `t`, and none of its pages was known before `t`.
//!
//! # Memory
//! Per known page one [`PageState`] (80 bytes, and its URL in a [`UrlArena`]), per link of the
//! last snapshot 12 bytes and per link source 16 ([`LinkSet`]), plus the snapshot
//! being processed (24 bytes a link as it gathers).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::algo::change::DomainClass;
use crate::algo::pagerank::is_main_page;
use crate::bits::Bits;
use crate::change_book::{BookRow, ChangeBook, ChangeKey};
use crate::dataflow::echo::{EchoMsg, SourceObs};
use crate::grow::{push_by_eighths, room_for};
use crate::id_map::IdMap;
use crate::ingest::page_batch::{self, Fetch, LinkBatch, PageBatch};
use crate::ingest::{ClickObs, LinkObs, Mention, OddRows, PageObs, Record, UrlText};
use crate::link_set::{self, HostIndex, Link, LinkGather, LinkSet};
use crate::model::{HostFact, HostId, HostKey, Micros, PageId, Seq, SnapshotMeta};
use crate::output::change::{GroupChangeRow, PageChangeRow, PlanInput};
use crate::output::echo::SourceKind;
use crate::page_state::PageRunBuilder;
pub use crate::page_state::PageState;
use crate::state::{PackedLinks, PartSizes, StateRecord};
use crate::url_arena::UrlArena;

/// Pages per [`StateRecord::Pages`] run at most: a run is decoded whole, and
/// front coding restarts at each (a host's pages span several runs). Runs of
/// 4,096 pages, a quarter megabyte, were allocated and freed as whole
/// blocks of memory, each going back to the kernel when freed; runs of this
/// size reuse the allocator's pages.
const PAGE_RUN: usize = 1024;

type FastMap<K, V> = HashMap<K, V, foldhash::fast::FixedState>;

/// What the ledger knows about one host.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostState {
    pub name: String,
    pub first_seen: Seq,
}

/// A link of the last snapshot; ordered by source, then destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct LinkKey {
    pub src: PageId,
    pub dst: PageId,
    pub src_host: HostId,
    pub dst_host: HostId,
}

#[cfg(test)]
impl LinkKey {
    /// The link of raw ids (tests).
    pub fn of(src: u64, src_host: u64, dst: u64, dst_host: u64) -> LinkKey {
        LinkKey {
            src: PageId(src),
            dst: PageId(dst),
            src_host: HostId(src_host),
            dst_host: HostId(dst_host),
        }
    }
}

impl From<LinkObs> for LinkKey {
    fn from(l: LinkObs) -> Self {
        LinkKey {
            src: l.src,
            dst: l.dst,
            src_host: l.src_host,
            dst_host: l.dst_host,
        }
    }
}

/// The ledger's output records, as differential data.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum LedgerOut {
    /// A counted fact of a host; the update's diff is the count.
    Fact(HostKey<HostFact>),
    /// A host's name, inserted once when the host becomes known.
    HostName(HostKey<String>),
    /// Discovery, a per-snapshot message for the per-site stage (like the next
    /// one): an on-host link between two new pages, `(src, dst)`, of a site
    /// with start edges.
    NewEdge(HostKey<(PageId, PageId)>),
    /// Discovery: an on-host link from an old page fetched now to a new page,
    /// `(src, dst)`: where the new-page closure starts.
    StartEdge(HostKey<(PageId, PageId)>),
    /// Discovery (inserted at a snapshot, retracted at the next): an old page
    /// fetched now links to a page of site `host`, which
    /// this worker's links never reached before: `host` may be a new site, and
    /// `(src, src URL)` a page covering it. Keyed by the destination site, so a
    /// join with the new sites keeps the true ones.
    OffSiteStart(HostKey<(PageId, String)>),
    /// Restored state of a downstream per-site operator (opaque bytes), emitted
    /// once at the restore epoch on the worker that owns the site.
    Restored(HostKey<Vec<u8>>),
    /// Change: a counted quantity over all pages; the update's diff is the count.
    ChangeCount(ChangeKey),
    /// Change: a row of the snapshot's `group_change`. This and the next are
    /// per-snapshot messages, never retracted: the dataflow splits them off before
    /// treating the rest as a collection. Boxed: a row is three times the size
    /// of any other variant, and every message of the ledger's output would
    /// carry that size. (The `page_change` rows, a million a snapshot, are
    /// written where they are made: see [`Ledger::advance_into`].)
    GroupChange(Box<GroupChangeRow>),
    /// Change: a page of the snapshot's revisit plan.
    PlanPage(PlanInput),
    /// RankMass: a page's rank in the last snapshot of the previous run, at the
    /// restore epoch (fixed point, see `algo::pagerank`).
    RankPrev(HostId, PageId, u64),
    /// Change, from RankMass: a page's PageRank (fixed point), its weight in the
    /// snapshot's revisit plan. Not the ledger's: the PageRank stage's output
    /// joins the plan's stream of per-snapshot messages.
    PlanWeight(PageId, u64),
    /// ECHO: a per-snapshot message of the echo stage (see `dataflow::echo`).
    Echo(EchoMsg),
}

/// The records of one epoch on one worker, sorted by kind as they arrive, so a
/// link costs its 12 bytes in a [`LinkGather`] and nothing more while the
/// epoch gathers.
///
/// A page the ledger already knows keeps no URL here: [`Ledger::gather`]
/// checks it against the ledger's as it arrives and drops it. Nearly every
/// page a snapshot names is known (on bench snapshot 9, 1.38M mentions and
/// 1.08M fetches for 1.93M known pages), and their URLs were the largest part
/// of a snapshot's records while they waited for the fold.
#[derive(Default)]
pub struct Batch {
    /// Fetches of pages the ledger did not know on arrival, with their URLs.
    pub new_fetches: Vec<PageObs>,
    /// Fetches of pages it knew, their URLs checked and dropped.
    pub known_fetches: Vec<KnownFetch>,
    /// Pages named by links that the ledger did not know on arrival.
    pub mentions: Vec<Mention>,
    /// Pages named by links that it knew, as their positions in its page
    /// map (so the fold finds them without a second hash probe).
    pub seen: Vec<u32>,
    pub links: LinkGather,
    pub restore: Vec<StateRecord>,
    pub clicks: Vec<ClickObs>,
    /// The first id collision found on arrival: the fold fails with it.
    pub collision: Option<String>,
}

/// How many links ahead [`Ledger::gather`] asks for a destination host's
/// slot in the host index.
const HOSTS_AHEAD: usize = 16;

/// How many known fetches ahead the fold asks for a page's state (see
/// `Ledger::advance_into`): enough misses in flight to keep the memory busy.
const FOLD_AHEAD: usize = 16;

/// A fetch of a page the ledger knew on arrival: 32 bytes where a
/// [`PageObs`] is 64, the URL and host it no longer needs left out. Nearly
/// every fetch is of a known page (1.06M of 1.08M on bench snapshot 9 with 1
/// worker), and the batch is held while the snapshot is read, when the run
/// peaks.
#[derive(Clone, Copy, Debug)]
pub struct KnownFetch {
    page: PageId,
    fetch_time: Micros,
    digest: u64,
    /// The HTTP status, or [`KnownFetch::NO_STATUS`]: below every status,
    /// as `None` is below every `Some`, so the fetches sort the same.
    status: i32,
    /// Where the page's state is in the ledger's page map, so the fold
    /// finds it without a second hash probe (in the room an `Option`'s tag
    /// took).
    position: u32,
}

const _: () = assert!(std::mem::size_of::<KnownFetch>() == 32);

impl KnownFetch {
    const NO_STATUS: i32 = i32::MIN;

    fn of(obs: &PageObs, position: u32) -> KnownFetch {
        KnownFetch {
            page: obs.page,
            fetch_time: obs.fetch_time,
            digest: obs.digest,
            status: obs.status.unwrap_or(Self::NO_STATUS),
            position,
        }
    }

    /// The fetch `f` of `page` from a [`PageBatch`].
    fn of_fetch(page: PageId, f: &Fetch, position: u32) -> KnownFetch {
        KnownFetch {
            page,
            fetch_time: f.fetch_time,
            digest: f.digest,
            status: f.status.unwrap_or(Self::NO_STATUS),
            position,
        }
    }

    /// The fetch as observed, of a page of host `host`, with no URL.
    fn obs(&self, host: HostId) -> PageObs {
        PageObs {
            host,
            page: self.page,
            url: UrlText::default(),
            fetch_time: self.fetch_time,
            status: (self.status != Self::NO_STATUS).then_some(self.status),
            digest: self.digest,
        }
    }
}

/// How many records of each kind a snapshot's [`Batch`] took, so that the
/// next one starts with room for as many.
#[derive(Clone, Copy, Debug, Default)]
pub struct BatchSizes {
    pub links: usize,
    pub sources: usize,
    pub new_fetches: usize,
    pub known_fetches: usize,
    pub mentions: usize,
    pub seen: usize,
}

impl Batch {
    /// A batch expecting about as many records as `last` (the previous
    /// epoch's), an eighth more, so that its vectors do not overshoot by
    /// doubling. The fetches were: on bench snapshot 9 with 1 worker, 1.08M
    /// of 64 bytes went past a million and doubled, 128 MB of room and the
    /// 64 MB they moved from at once, the peak while the snapshot was read.
    pub fn with_capacity(last: BatchSizes) -> Batch {
        Batch {
            links: LinkGather::with_capacity(last.links, last.sources),
            new_fetches: Vec::with_capacity(room_for(last.new_fetches)),
            known_fetches: Vec::with_capacity(room_for(last.known_fetches)),
            mentions: Vec::with_capacity(room_for(last.mentions)),
            seen: Vec::with_capacity(room_for(last.seen)),
            ..Batch::default()
        }
    }
}

/// One worker's ledger.
#[derive(Default)]
pub struct Ledger {
    pages: IdMap<PageId, PageState>,
    /// How many of `pages`' first entries are in the `pages` table's order
    /// ([`Self::table_order`]): those a restore read back (a state lists its
    /// pages so), before the pages that snapshots since added.
    table_sorted: usize,
    /// The pages' URLs (a page's state holds where its URL is).
    urls: UrlArena,
    /// Pages read back from the state, moved into `pages` at once when the
    /// restore completes (a map built at its final size moves each entry once).
    restoring: Vec<(PageId, PageState)>,
    hosts: FastMap<HostId, HostState>,
    /// `E` of the last snapshot, and the hosts its links name.
    links: LinkSet,
    link_hosts: HostIndex,
    /// Which of `links` the snapshot before did not have (ECHO sends only
    /// those: a link the worker had before cannot reveal a new page).
    fresh_links: Bits,
    /// Links read back from the state, made a [`LinkSet`] when the restore
    /// completes.
    restoring_links: LinkGather,
    /// `F`, `K` and the alive set of the last snapshot, sorted.
    fetched: Vec<PageId>,
    known: Vec<PageId>,
    alive: Vec<PageId>,
    /// Event facts emitted at the last snapshot (retracted at the next).
    events: Vec<(HostKey<HostFact>, i64)>,
    /// Whether to emit the discovery records, and the candidate coverers of new
    /// sites emitted at the last snapshot (retracted at the next; none after a
    /// restore, see [`Self::restored`]).
    pub discovery: bool,
    discovery_events: Vec<LedgerOut>,
    /// Sites that off-site links of earlier snapshots reached (never new
    /// again), a bit per [`HostIndex`] index of `link_hosts`, which never
    /// forgets a host: a hash set of host ids took a probe per off-site link.
    linked_sites: Bits,
    /// Odd rows only the ledger can see (duplicates split across workers).
    pub odd: OddRows,
    /// The change analysis' histories, when it runs.
    pub change: Option<ChangeBook>,
    /// The snapshot whose links and known pages the ledger holds.
    graph_seq: Option<Seq>,
    /// The fetches and mentions the last snapshot's batch took (none yet
    /// after a restore).
    batch_sizes: Option<BatchSizes>,
    /// Whether and how to emit the ECHO analysis' content sources.
    pub echo: Option<EchoScan>,
    /// ECHO: the main pages known, sorted (built on first use, so also after a
    /// restore), so that finding content sources costs the main pages' links,
    /// not the whole retained link set.
    mains: Option<Vec<PageId>>,
}

/// What the ledger needs to find content sources (docs/echo.md).
#[derive(Clone, Debug, Default)]
pub struct EchoScan {
    /// `D`: a page linked from a main page is a source once this old.
    pub content_age: Micros,
    /// The input's first snapshot: its pages count as old (their age is unknown).
    pub first_seq: Seq,
    /// Every snapshot's time.
    pub times: std::collections::BTreeMap<Seq, Micros>,
}

/// Where the ledger's updates of an epoch go as it makes them: handed on a
/// chunk at a time, so that they are never all held at once. (They were: one
/// vector of every RankMass node, ECHO link and change row of the snapshot,
/// 700 MB on bench snapshot 9 with 1 worker, most of its peak.) Consumers take
/// them in any order.
pub struct Updates<'a> {
    buf: Vec<(LedgerOut, i64)>,
    give: &'a mut dyn FnMut(std::vec::Drain<'_, (LedgerOut, i64)>),
}

impl<'a> Updates<'a> {
    const CHUNK: usize = 1 << 16;

    /// Updates handed to `give` a chunk at a time; call [`Updates::flush`]
    /// after the last.
    pub fn new(give: &'a mut dyn FnMut(std::vec::Drain<'_, (LedgerOut, i64)>)) -> Updates<'a> {
        Updates {
            buf: Vec::new(),
            give,
        }
    }

    /// All the updates `make` hands on, sorted (for tests and callers that
    /// want them whole).
    pub fn collect<E>(
        make: impl FnOnce(&mut Updates<'_>) -> Result<(), E>,
    ) -> Result<Vec<(LedgerOut, i64)>, E> {
        let mut all = Vec::new();
        let mut give = |chunk: std::vec::Drain<'_, (LedgerOut, i64)>| all.extend(chunk);
        let mut out = Updates::new(&mut give);
        make(&mut out)?;
        out.flush();
        all.sort_unstable();
        Ok(all)
    }

    pub fn push(&mut self, update: (LedgerOut, i64)) {
        self.buf.push(update);
        if self.buf.len() >= Self::CHUNK {
            self.flush();
        }
    }

    /// Hands on what is buffered.
    pub fn flush(&mut self) {
        if !self.buf.is_empty() {
            (self.give)(self.buf.drain(..));
        }
    }
}

impl Extend<(LedgerOut, i64)> for Updates<'_> {
    fn extend<I: IntoIterator<Item = (LedgerOut, i64)>>(&mut self, iter: I) {
        for update in iter {
            self.push(update);
        }
    }
}

/// Accumulates fact deltas of one snapshot.
///
/// Per fact, the additions to one host in a row sum in `last` before they
/// reach the map: a restore's pages come in table order (by URL within a
/// first snapshot) and its links by source, so most additions repeat the
/// host of the one before (a hash
/// probe each was 5M probes per worker for the links of bench snapshot 9).
#[derive(Default)]
struct Deltas {
    map: FastMap<HostKey<HostFact>, i64>,
    last: [Option<(HostKey<HostFact>, i64)>; HostFact::COUNT],
}

impl Deltas {
    fn add(&mut self, host: HostId, fact: HostFact, delta: i64) {
        let key = HostKey { host, key: fact };
        let last = &mut self.last[fact as usize];
        match last {
            Some((k, d)) if *k == key => *d += delta,
            _ => {
                if let Some((k, d)) = last.replace((key, delta)) {
                    *self.map.entry(k).or_default() += d;
                }
            }
        }
    }

    /// Every host's and fact's delta, zeros included.
    fn into_map(mut self) -> FastMap<HostKey<HostFact>, i64> {
        for (k, d) in self.last.into_iter().flatten() {
            *self.map.entry(k).or_default() += d;
        }
        self.map
    }
}

impl Ledger {
    /// What the ledger's largest structures hold, in MiB, for the memory
    /// trace: which of them a change to the state's layout should target.
    pub fn footprint(&self) -> String {
        let mib = |b: usize| b >> 20;
        let urls = self.urls.heap_bytes();
        let sets = (self.fetched.capacity() + self.known.capacity() + self.alive.capacity())
            * std::mem::size_of::<PageId>();
        let change = self.change.as_ref().map_or(0, |c| c.heap_bytes());
        format!(
            "{} pages: states {}, URLs {}; {} links {} (fresh {}); page sets {}; change histories {}",
            self.pages.len(),
            mib(self.pages.heap_bytes()),
            mib(urls),
            self.links.len(),
            mib(self.links.heap_bytes()),
            mib(self.fresh_links.heap_bytes()),
            mib(sets),
            mib(change),
        )
    }

    /// The record counts of the last snapshot's batch (a capacity hint for
    /// the next).
    pub fn batch_sizes(&self) -> BatchSizes {
        let last = self.batch_sizes.unwrap_or_default();
        BatchSizes {
            links: self.links.len(),
            sources: self.links.sources_len(),
            ..last
        }
    }

    /// Adds `records` to `batch`, the records of an epoch not yet folded: a
    /// link with its hosts interned, and a page this ledger knows without its
    /// URL, once it is checked against the one known.
    ///
    /// Pages and links arrive in batches ([`PageBatch`], [`LinkBatch`]),
    /// pages looked up together; a page or a mention arriving as a record of
    /// its own (as tests send them) is looked up alone.
    pub fn gather(&mut self, batch: &mut Batch, records: &mut Vec<Record>) {
        for rec in records.drain(..) {
            self.gather_one(batch, rec);
        }
    }

    /// Gathers a batch of pages or of mentions: their ids looked up a group
    /// at a time, each step's cache misses for the whole group in flight
    /// together (the page map's slots, then the entries they name, then
    /// those entries' URLs; see [`IdMap::find_each_ahead`]), and only the
    /// pages not known yet copied out of the batch, with their URLs. One at
    /// a time, each page waited on four misses in a row, and the lookups
    /// were a tenth of a new snapshot's time.
    fn gather_pages(&mut self, batch: &mut Batch, b: &PageBatch) {
        let (urls, mut i) = (&self.urls, 0);
        self.pages.find_each_ahead(
            &b.pages,
            |st| urls.prefetch(&st.url),
            |_, found| {
                if let Some((_, st)) = found {
                    note_collision(urls, st, b.url(i), &mut batch.collision);
                }
                // Under 2^32: the map holds fewer entries.
                let position = found.map(|(p, _)| p as u32);
                match (b.fetched(), position) {
                    (true, Some(p)) => push_by_eighths(
                        &mut batch.known_fetches,
                        KnownFetch::of_fetch(b.pages[i], &b.fetches[i], p),
                    ),
                    (true, None) => push_by_eighths(&mut batch.new_fetches, b.page_obs(i)),
                    (false, Some(p)) => push_by_eighths(&mut batch.seen, p),
                    (false, None) => push_by_eighths(&mut batch.mentions, b.mention(i)),
                }
                i += 1;
            },
        );
    }

    /// Gathers a batch of links.
    fn gather_links(&mut self, batch: &mut Batch, b: &LinkBatch) {
        // A link's destination host is asked for ahead when it is not its
        // source's: most are, and those need no probe (`HostIndex::link`).
        for (i, &l) in b.links.iter().enumerate() {
            if let Some(ahead) = b.links.get(i + HOSTS_AHEAD) {
                if ahead.dst_host != ahead.src_host {
                    self.link_hosts.prefetch(ahead.dst_host);
                }
            }
            batch.links.push(self.link_hosts.link(LinkKey::from(l)));
        }
    }

    /// Gathers one record.
    fn gather_one(&mut self, batch: &mut Batch, rec: Record) {
        // The page's position (under 2^32: the map holds fewer entries),
        // noting a collision with its URL.
        let known = |page: &PageId, url: &UrlText, collision: &mut Option<String>| {
            let (i, st) = self.pages.find(page)?;
            note_collision(&self.urls, st, &url.url, collision);
            Some(i as u32)
        };
        match rec {
            Record::Page(p) => match known(&p.page, &p.url, &mut batch.collision) {
                Some(i) => push_by_eighths(&mut batch.known_fetches, KnownFetch::of(&p, i)),
                None => push_by_eighths(&mut batch.new_fetches, *p),
            },
            Record::Mention(m) => match known(&m.page, &m.url, &mut batch.collision) {
                Some(i) => push_by_eighths(&mut batch.seen, i),
                None => push_by_eighths(&mut batch.mentions, *m),
            },
            Record::Link(l) => batch.links.push(self.link_hosts.link(LinkKey::from(l))),
            Record::Pages(b) => {
                self.gather_pages(batch, &b);
                page_batch::recycle_pages(*b);
            }
            Record::Links(b) => {
                self.gather_links(batch, &b);
                page_batch::recycle_links(*b);
            }
            Record::Restore(s) => batch.restore.push(*s),
            Record::Click(c) => batch.clicks.push(*c),
        }
    }

    /// Rebuilds the ledger from persisted state of snapshot `seq` and returns the
    /// updates that make downstream collections hold that snapshot's state (the
    /// ledger operator takes records one by one, as it reads them).
    #[cfg(test)]
    pub fn restore(&mut self, seq: Seq, records: Vec<StateRecord>) -> Vec<(LedgerOut, i64)> {
        Updates::collect(|out| {
            for rec in records {
                self.restore_record(rec, out)?;
            }
            self.restored(seq, out);
            Ok::<(), String>(())
        })
        .expect("the records decode")
    }

    /// What [`Self::state_records`] holds, for the state file's header.
    pub fn state_sizes(&self) -> PartSizes {
        PartSizes {
            pages: self.pages.len() as u64,
            links: self.links.len() as u64,
            sources: self.links.sources_len() as u64,
        }
    }

    /// Makes room for the pages and links of a part about to be restored.
    pub fn reserve_restore(&mut self, sizes: PartSizes) {
        let room = |n: u64| usize::try_from(n).unwrap_or(0);
        // An eighth more than the pages restored, as `push_by_eighths` would
        // grow to at the first new page (see `restored`).
        let pages = self.restoring.len() + room(sizes.pages);
        self.restoring
            .reserve_exact(room_for(pages) - self.restoring.len());
        // The pages and links the part holds are about to be written there:
        // mapped in one call each rather than a fault per page (the
        // restored pages and links are 150 MB a worker on bench snapshot 9).
        crate::memory::prefault_spare(&mut self.restoring, room(sizes.pages));
        self.restoring_links
            .reserve(room(sizes.links), room(sizes.sources));
    }

    /// Takes one persisted record into the ledger (at the restore epoch, before
    /// [`Self::restored`]); what it hands downstream goes to `out`.
    /// Fails on a record whose bytes do not decode.
    pub fn restore_record(
        &mut self,
        rec: StateRecord,
        out: &mut Updates<'_>,
    ) -> Result<(), String> {
        match rec {
            StateRecord::Page(id, rec) => self.restoring.push((id, rec.place(&mut self.urls))),
            StateRecord::Pages(run) => {
                let (urls, restoring) = (&mut self.urls, &mut self.restoring);
                run.decode(|id, url, (host_start, host_end), mut st| {
                    st.url = urls.push(url, host_start, host_end);
                    restoring.push((id, st));
                })?;
            }
            StateRecord::Host(id, st) => {
                out.push((
                    LedgerOut::HostName(HostKey {
                        host: id,
                        key: st.name.clone(),
                    }),
                    1,
                ));
                self.hosts.insert(id, st);
            }
            StateRecord::Link(l) => self.restoring_links.push(self.link_hosts.link(l)),
            StateRecord::Outlinks(o) => {
                for l in o.links() {
                    self.restoring_links.push(self.link_hosts.link(l));
                }
            }
            StateRecord::Links(b) | StateRecord::PackedLinks(PackedLinks(b)) => {
                b.check()?;
                self.restoring_links.append_block(&mut self.link_hosts, &b);
            }
            StateRecord::Event(k, c) => self.events.push((k, c)),
            StateRecord::Site(host, bytes) => {
                out.push((LedgerOut::Restored(HostKey { host, key: bytes }), 1))
            }
            StateRecord::Change(_, page, h) => {
                if let Some(book) = self.change.as_mut() {
                    book.restore_page(page, &h);
                }
            }
            StateRecord::Rank(host, page, rank) => {
                out.push((LedgerOut::RankPrev(host, page, rank), 1))
            }
            StateRecord::Echo(host, bytes) => {
                out.push((LedgerOut::Echo(EchoMsg::Restored(host, bytes)), 1))
            }
        }
        Ok(())
    }

    /// Completes a restore of snapshot `seq` from the records taken so far,
    /// handing `out` the updates that make downstream collections hold that
    /// snapshot's state.
    pub fn restored(&mut self, seq: Seq, out: &mut Updates<'_>) {
        self.graph_seq = Some(seq);
        let restoring = std::mem::take(&mut self.restoring);
        if self.pages.is_empty() {
            // The restored vector becomes the map's, with the room
            // `reserve_restore` left in it for the next snapshot's new pages:
            // neither a copy of every page state now nor one when the first
            // new page arrives (94 MB each a worker on bench snapshot 9 with
            // 2 workers).
            self.pages = IdMap::from_entries(restoring);
        } else {
            self.pages.reserve(restoring.len());
            self.pages.extend(restoring);
        }
        // A state written before its pages were listed in the table's
        // order, or routed from another number of workers, is in order for
        // a prefix only.
        let key = |st: &'_ PageState| (st.first_seen(), self.urls.bytes(&st.url));
        let ordered = self.pages.values().zip(self.pages.values().skip(1));
        let ordered = ordered.take_while(|(a, b)| key(a) < key(b));
        self.table_sorted = (ordered.count() + 1).min(self.pages.len());
        if let Some(book) = self.change.as_mut() {
            let hosts = &self.hosts;
            let counts = book.restored(&self.pages, &self.urls, &|h| hosts[&h].name.clone());
            out.extend(
                counts
                    .into_iter()
                    .map(|(k, c)| (LedgerOut::ChangeCount(k), c)),
            );
        }
        let mut deltas = Deltas::default();
        let (mut new_fetched, mut new_named) = (0, 0);
        // The pages of the fetched, known and alive sets, marked with the
        // sets they are in and sorted together once: three sorts of three
        // vectors grown a page at a time were two thirds of this function.
        const FETCHED: u8 = 1;
        const KNOWN: u8 = 2;
        const ALIVE: u8 = 4;
        let mut marked: Vec<(PageId, u8)> = Vec::with_capacity(self.pages.len());
        let mut counts = [0usize; 3];
        for (id, st) in self.pages.iter() {
            let new = st.first_seen() == seq;
            let mut sets = 0;
            if st.last_fetched() == Some(seq) {
                sets |= FETCHED;
                deltas.add(st.host, HostFact::Fetched, 1);
                new_fetched += new as usize;
            } else {
                new_named += new as usize;
            }
            if st.last_seen() == seq {
                sets |= KNOWN;
                deltas.add(st.host, HostFact::Known, 1);
            }
            if st.alive {
                sets |= ALIVE;
            }
            if sets != 0 {
                marked.push((*id, sets));
                for (i, count) in counts.iter_mut().enumerate() {
                    *count += usize::from(sets >> i & 1);
                }
            }
        }
        marked.sort_unstable_by_key(|&(id, _)| id);
        for (set, (flag, count)) in [
            (&mut self.fetched, (FETCHED, counts[0])),
            (&mut self.known, (KNOWN, counts[1])),
            (&mut self.alive, (ALIVE, counts[2])),
        ] {
            let before = set.len();
            set.reserve_exact(count);
            set.extend(marked.iter().filter(|m| m.1 & flag != 0).map(|m| m.0));
            if before > 0 {
                set.sort_unstable(); // never so far: a restore starts a run
            }
        }
        drop(marked);
        let mut duplicates = 0;
        self.links = std::mem::take(&mut self.restoring_links).into_set(&mut duplicates);
        for o in self.links.sources() {
            let host = self.link_hosts.id(o.src_host);
            deltas.add(host, HostFact::Link, o.dsts.len() as i64);
        }
        for (k, c) in &self.events {
            deltas.add(k.host, k.key, *c);
        }
        self.events.sort_unstable();
        // The restored snapshot's pages stand in for its batch's records:
        // the next batch's new fetches and mentions of new pages grew by
        // eighths from nothing (bench snapshot 9 after a restore: 90K
        // mentions a worker, copied some 20 times as they grew).
        self.batch_sizes = Some(BatchSizes {
            new_fetches: new_fetched,
            known_fetches: self.fetched.len() - new_fetched,
            mentions: new_named,
            // Each reader names a known page once: more than one reader, more.
            seen: self.known.len(),
            ..BatchSizes::default()
        });
        out.extend(finish(deltas));
        // A restore epoch emits no discovery records: the closure's inputs
        // are per-snapshot messages, and every site the restored links reach
        // off-site is a linked site from now on, so none is a candidate new
        // site (whatever a restore epoch held would be retracted unseen at
        // the next snapshot anyway).
        self.note_linked_sites();
    }

    /// Retracts the last snapshot's candidate coverers of new sites and emits
    /// those of `t`, and emits the closure's inputs of `t` as per-snapshot
    /// messages (never retracted: only the per-site stage reads them, at `t`,
    /// so a restore epoch needs none).
    ///
    /// `new_now` lists the pages fetched at `t` and first seen then, which
    /// its callers know without a probe of the page map per fetched page.
    fn emit_discovery(&mut self, t: Seq, new_now: Vec<PageId>, out: &mut Updates<'_>) {
        if !self.discovery {
            return;
        }
        debug_assert!(new_now
            .iter()
            .all(|id| self.pages[id].first_seen() == t && self.fetched.binary_search(id).is_ok()));
        out.extend(self.discovery_events.drain(..).map(|e| (e, -1)));
        // The new pages fetched now (a small part of the pages), so a link's
        // target costs a probe of a small set rather than of the page map.
        let new_now: std::collections::HashSet<PageId, foldhash::fast::FixedState> =
            new_now.into_iter().collect();
        // And a bit per bucket of ids in front of that set, eight buckets a
        // new page, set where a new page falls: most links lead to pages
        // that are not new, and a bit of a table in the cache turns nearly
        // nine in ten of them away before a probe of the set. The probes
        // are once per on-host link of a fetched source, 4.4M a worker on
        // bench snapshot 9 against 80K new pages: 31 ms without the bits,
        // 22 ms with them (standalone, a tenth of the targets new).
        let buckets = (new_now.len() * 8).next_power_of_two().max(64);
        let bucket = |p: &PageId| -> usize {
            // Ids are hashes, but tests use small ones: mixed first.
            (p.0.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - buckets.trailing_zeros())) as usize
        };
        let mut maybe_new = Bits::with_len(buckets);
        for p in &new_now {
            maybe_new.insert(bucket(p));
        }
        let mut starts = Vec::new();
        let mut new_edges = Vec::new();
        // Candidate coverers of new sites: links of old pages fetched now to sites
        // no earlier link of this worker reached (a site known before is not new).
        let mut candidates: Vec<(HostId, PageId)> = Vec::new();
        // Links are sorted by source, as `fetched` is, so whether a source was
        // fetched is found once a run of its links, by walking `fetched`
        // alongside (`fetched[..cursor]` is below the last source); and a
        // fetched source is new if `new_now` has it. Probing the page map and
        // binary-searching `fetched` per source, each a few cache misses, were
        // 4% of a new snapshot's time.
        //
        // Links are walked a source at a time, their hosts as `link_hosts`
        // indices: a source not fetched now is passed over whole, and no
        // link's hosts are looked up unless it is kept.
        let hosts = &self.link_hosts;
        let linked = &self.linked_sites;
        let mut cursor = 0;
        for o in self.links.sources() {
            let fetched = &self.fetched;
            if cursor > 0 && fetched[cursor - 1] >= o.src {
                cursor = fetched.partition_point(|p| *p < o.src);
            }
            while fetched.get(cursor).is_some_and(|p| *p < o.src) {
                cursor += 1;
            }
            if fetched.get(cursor) != Some(&o.src) {
                continue;
            }
            let new = new_now.contains(&o.src);
            for (&dst, &dst_host) in o.dsts.iter().zip(o.dst_hosts) {
                if dst_host != o.src_host {
                    if !new && !linked.contains(dst_host as usize) {
                        candidates.push((hosts.id(dst_host), o.src));
                    }
                    continue;
                }
                if !maybe_new.contains(bucket(&dst)) || !new_now.contains(&dst) {
                    continue;
                }
                let edge = HostKey {
                    host: hosts.id(o.src_host),
                    key: (o.src, dst),
                };
                if new {
                    new_edges.push(edge);
                } else {
                    starts.push(edge);
                }
            }
        }
        // A site with no start edge has no closure: its new pages' links (all
        // of a site's links at its first snapshot) need not travel.
        let mut covering_sites: Vec<HostId> = starts.iter().map(|e| e.host).collect();
        covering_sites.sort_unstable();
        covering_sites.dedup();
        new_edges.retain(|e| covering_sites.binary_search(&e.host).is_ok());
        out.extend(starts.into_iter().map(|e| (LedgerOut::StartEdge(e), 1)));
        out.extend(new_edges.into_iter().map(|e| (LedgerOut::NewEdge(e), 1)));
        candidates.sort_unstable();
        candidates.dedup();
        let events: Vec<LedgerOut> = candidates
            .into_iter()
            .map(|(site, src)| {
                LedgerOut::OffSiteStart(HostKey {
                    host: site,
                    key: (src, self.urls.get(&self.pages[&src].url).to_string()),
                })
            })
            .collect();
        out.extend(events.iter().cloned().map(|e| (e, 1)));
        self.discovery_events = events;
    }

    /// Remembers the sites the current links reach off-site.
    fn note_linked_sites(&mut self) {
        if self.discovery {
            let linked = &mut self.linked_sites;
            for o in self.links.sources() {
                for &dst_host in o.dst_hosts {
                    if dst_host != o.src_host {
                        linked.insert(dst_host as usize);
                    }
                }
            }
        }
    }

    /// Folds in snapshot `meta`, whose records are `records`, and returns the
    /// differential updates at its time. Fails on an id collision between two
    /// different URLs.
    #[cfg(test)]
    pub fn advance(
        &mut self,
        meta: &SnapshotMeta,
        records: Vec<Record>,
    ) -> Result<Vec<(LedgerOut, i64)>, String> {
        let mut batch = Batch::default();
        self.gather(&mut batch, &mut { records });
        Updates::collect(|out| self.advance_into(meta, batch, out, &mut |_| {}))
    }

    /// [`Ledger::advance`], handing the updates to `out` as it makes them, and
    /// the snapshot's `page_change` rows to `page_rows`, in page-id order.
    /// The rows go straight to their writer rather than through the dataflow,
    /// where the snapshot's rows all waited for the writer to run: 330 MB on
    /// bench snapshot 9 with 1 worker, the run's peak.
    pub fn advance_into(
        &mut self,
        meta: &SnapshotMeta,
        batch: Batch,
        out: &mut Updates<'_>,
        page_rows: &mut dyn FnMut(PageChangeRow),
    ) -> Result<(), String> {
        let t = meta.seq;
        // Every batch of the snapshot has been gathered.
        page_batch::release_spares();
        let mut deltas = Deltas::default();
        for (k, c) in std::mem::take(&mut self.events) {
            deltas.add(k.host, k.key, -c);
        }
        let mut events = Deltas::default();

        let Batch {
            mut new_fetches,
            mut known_fetches,
            mut mentions,
            seen,
            links,
            restore,
            clicks,
            collision,
        } = batch;
        assert!(
            restore.is_empty(),
            "state records arrive only at the restore epoch"
        );
        if let Some(e) = collision {
            return Err(e);
        }
        self.batch_sizes = Some(BatchSizes {
            new_fetches: new_fetches.len(),
            known_fetches: known_fetches.len(),
            mentions: mentions.len(),
            seen: seen.len(),
            ..BatchSizes::default()
        });

        // Pages: one observation per page; of duplicates keep the latest
        // fetch. A page was known on arrival or not for all its fetches, so
        // the two lists name different pages.
        new_fetches.sort_unstable_by_key(|p| (p.page, p.fetch_time, p.digest, p.status));
        known_fetches.sort_unstable_by_key(|f| (f.page, f.fetch_time, f.digest, f.status));
        for w in new_fetches.windows(2).filter(|w| w[0].page == w[1].page) {
            if w[0].url.url != w[1].url.url {
                return Err(collision_message(&w[0].url.url, &w[1].url.url));
            }
        }
        let before = new_fetches.len() + known_fetches.len();
        keep_last_per_page(&mut new_fetches, |p| p.page);
        keep_last_per_page(&mut known_fetches, |f| f.page);
        let after = new_fetches.len() + known_fetches.len();
        self.odd.duplicate_pages += (before - after) as u64;
        let mut fetched = Vec::with_capacity(after);
        // The host of each fetched page that no snapshot knew before: only
        // those pages are new now, and only their hosts can be.
        let mut new_page_hosts: Vec<HostId> = Vec::with_capacity(new_fetches.len());
        // Those pages themselves, for discovery (see `emit_discovery`).
        let mut new_now: Vec<PageId> = Vec::new();
        if self.discovery {
            new_now.reserve_exact(new_fetches.len());
        }
        // In the order of pages, as one list sorted together would be.
        // A known page's state is asked for `FOLD_AHEAD` fetches before its
        // turn: in the order of page ids they lie anywhere in the page map,
        // and waiting for each in turn was two fifths of the fold's own time.
        let mut new_fetches = new_fetches.into_iter().peekable();
        let mut known_fetches = known_fetches.into_iter();
        for f in known_fetches.as_slice().iter().take(FOLD_AHEAD) {
            self.pages.prefetch_entry(f.position as usize);
        }
        loop {
            let new_next = match (new_fetches.peek(), known_fetches.as_slice().first()) {
                (None, None) => break,
                (Some(n), Some(k)) => n.page < k.page,
                (n, _) => n.is_some(),
            };
            let (obs, st) = if new_next {
                let obs = new_fetches.next().expect("peeked");
                self.note_host(obs.host, obs.url.host(), t, out);
                new_page_hosts.push(obs.host);
                if self.discovery {
                    new_now.push(obs.page);
                }
                let st = page_entry(
                    &mut self.pages,
                    &mut self.urls,
                    obs.page,
                    obs.host,
                    &obs.url,
                    t,
                )?;
                (obs, st)
            } else {
                if let Some(ahead) = known_fetches.as_slice().get(FOLD_AHEAD) {
                    self.pages.prefetch_entry(ahead.position as usize);
                }
                let f = known_fetches.next().expect("peeked");
                let (&id, st) = self.pages.at_mut(f.position as usize);
                debug_assert_eq!(id, f.page, "a page's position never changes");
                (f.obs(st.host), st)
            };
            let page = obs.page;
            if let Some(book) = self.change.as_mut() {
                let name = &self.hosts[&obs.host].name;
                book.touch(page, st, DomainClass::of_host(name));
                book.observe(&obs, st, &self.urls, t, name);
            }
            observe(st, obs, t, &mut events);
            fetched.push(page);
        }
        // Their room goes back now, not when the fold ends (34 MB on bench
        // snapshot 9 with 1 worker, at the fold's peak).
        drop((new_fetches, known_fetches));
        crate::memory::trace(|| format!("snapshot {t}: ledger fold: pages folded"));

        // Pages named by links become known.
        mentions.sort_unstable_by_key(|m| m.page);
        mentions.dedup_by_key(|m| m.page);
        let mut known = fetched.clone();
        known.reserve(mentions.len() + seen.len());
        for m in mentions {
            self.note_host(m.host, m.url.host(), t, out);
            let st = page_entry(&mut self.pages, &mut self.urls, m.page, m.host, &m.url, t)?;
            st.seen(t);
            known.push(m.page);
        }
        // Their states lie anywhere in the page map too: each is asked for
        // `FOLD_AHEAD` pages before its turn (waiting for each was the most
        // sampled line of the fold's own code on bench snapshot 9).
        for (i, &position) in seen.iter().enumerate() {
            if let Some(&ahead) = seen.get(i + FOLD_AHEAD) {
                self.pages.prefetch_entry(ahead as usize);
            }
            let (&page, st) = self.pages.at_mut(position as usize);
            st.seen(t);
            known.push(page);
        }
        drop(seen);
        known.sort_unstable();
        known.dedup();
        // Kept to the next snapshot: not at the room reserved for every
        // mention, most of them of pages fetched too.
        known.shrink_to_fit();

        // New pages and new hosts, from the fetched pages unknown before
        // (a known page's host was seen with it): not a lookup of every
        // fetched page's state and host.
        let mut new_hosts = Vec::new();
        for &host in &new_page_hosts {
            events.add(host, HostFact::NewPage, 1);
            if self.hosts[&host].first_seen == t {
                new_hosts.push(host);
            }
        }
        drop(new_page_hosts);
        new_hosts.sort_unstable();
        new_hosts.dedup();
        for h in new_hosts {
            events.add(h, HostFact::NewHost, 1);
        }

        crate::memory::trace(|| format!("snapshot {t}: ledger fold: known pages listed"));
        self.advance_links(meta, links, &fetched, &mut deltas, &mut events);
        crate::memory::trace(|| format!("snapshot {t}: ledger fold: links compared"));

        // Fetched and known sets: count their deltas per host (the pages'
        // states looked up together; see `IdMap::find_each`).
        for (old, new, fact) in [
            (&self.fetched, &fetched, HostFact::Fetched),
            (&self.known, &known, HostFact::Known),
        ] {
            let mut changed: Vec<(PageId, i64)> = Vec::new();
            diff_sorted(old, new, |id, d| changed.push((*id, d)));
            let mut next = 0;
            self.pages
                .find_each(changed.iter().map(|(id, _)| id), |_, found| {
                    let (_, st) = found.expect("fetched and known pages are in the page map");
                    deltas.add(st.host, fact, changed[next].1);
                    next += 1;
                });
        }

        // Alive and gone pages.
        let alive = if meta.partial {
            let mut a = Vec::with_capacity(self.alive.len() + fetched.len());
            merge_union(&self.alive, &fetched, &mut a);
            a
        } else {
            diff_sorted(&self.alive, &fetched, |id, d| {
                if d < 0 {
                    let st = self.pages.get_mut(id).expect("alive pages are known");
                    if let Some(book) = self.change.as_mut() {
                        let class = DomainClass::of_host(&self.hosts[&st.host].name);
                        book.touch(*id, st, class);
                        book.gone(*id);
                    }
                    st.alive = false;
                    events.add(st.host, HostFact::GonePage, 1);
                }
            });
            fetched.clone()
        };

        self.fetched = fetched;
        self.known = known;
        self.alive = alive;
        let mut ev: Vec<(HostKey<HostFact>, i64)> = events
            .into_map()
            .into_iter()
            .filter(|(_, c)| *c != 0)
            .collect();
        ev.sort_unstable();
        for (k, c) in &ev {
            deltas.add(k.host, k.key, *c);
        }
        self.events = ev;
        out.extend(finish(deltas));
        self.emit_discovery(t, new_now, out);
        self.note_linked_sites();
        crate::memory::trace(|| format!("snapshot {t}: ledger fold: discovery facts out"));
        if let Some(book) = self.change.as_mut() {
            let hosts = &self.hosts;
            let names = |h| hosts[&h].name.clone();
            let counts = book.finish(&self.pages, &self.urls, &self.alive, &names, &mut |row| {
                let row = match row {
                    BookRow::Page(r) => return page_rows(r),
                    BookRow::Group(r) => LedgerOut::GroupChange(Box::new(r)),
                    BookRow::Plan(p) => LedgerOut::PlanPage(p),
                };
                out.push((row, 1));
            });
            out.extend(
                counts
                    .into_iter()
                    .map(|(k, c)| (LedgerOut::ChangeCount(k), c)),
            );
        }
        self.graph_seq = Some(t);
        if self.echo.is_some() {
            self.note_mains(t);
            let scan = self.echo.as_ref().expect("checked");
            self.emit_echo(scan, t, clicks, out);
        }
        Ok(())
    }

    /// Adds the main pages first seen at `t` to [`Ledger::mains`] (all known
    /// ones on first use).
    fn note_mains(&mut self, t: Seq) {
        let (pages, urls) = (&self.pages, &self.urls);
        let is_main = |id: &PageId| is_main_page(urls.get(&pages[id].url));
        match &mut self.mains {
            None => {
                let mut all: Vec<PageId> = pages.keys().filter(|id| is_main(id)).copied().collect();
                all.sort_unstable();
                self.mains = Some(all);
            }
            Some(mains) => {
                let new = self
                    .known
                    .iter()
                    .filter(|id| pages[*id].first_seen() == t && is_main(id));
                mains.extend(new);
                mains.sort_unstable();
                mains.dedup();
            }
        }
    }

    /// ECHO: this worker's content sources at `t` (each host's main page and the
    /// pages on its host it links to that are at least `D` old), the outlinks of
    /// those fetched at `t`, and the snapshot's click rows. A main page counts
    /// once it has outlinks; a page is old when first seen at the input's first
    /// snapshot, whose pages' ages are unknown.
    fn emit_echo(&self, scan: &EchoScan, t: Seq, clicks: Vec<ClickObs>, out: &mut Updates<'_>) {
        let time = |seq: Seq| scan.times[&seq];
        let now = time(t);
        let old = |p: &PageState| {
            p.first_seen() == scan.first_seq || now - time(p.first_seen()) >= scan.content_age
        };
        let hosts = &self.link_hosts;
        let outlinks = |page: PageId| {
            let run = self.links.outlinks(page);
            run.into_iter()
                .flat_map(|o| o.links())
                .map(|l| hosts.key(l))
        };
        let mut sources: Vec<(PageId, SourceKind)> = Vec::new();
        for &src in self.mains.as_deref().unwrap_or_default() {
            let mut out = outlinks(src).peekable();
            if out.peek().is_none() {
                continue;
            }
            sources.push((src, SourceKind::Main));
            for l in out {
                if l.dst_host == l.src_host && l.dst != src && old(&self.pages[&l.dst]) {
                    sources.push((l.dst, SourceKind::Linked));
                }
            }
        }
        // A page linked from its main page and a main page itself is the main page.
        sources.sort_unstable();
        sources.dedup_by_key(|s| s.0);
        for (page, kind) in sources {
            let st = &self.pages[&page];
            let crawled =
                (st.last_fetched() == Some(t)).then(|| st.last_fetch_time().unwrap_or(now));
            // Only the source's new links can reveal a new page: a link this
            // worker had at the last snapshot named its destination then.
            let run = self.links.outlinks(page).filter(|_| crawled.is_some());
            if let Some(o) = run {
                let fresh = |(k, _): &(usize, Link)| self.fresh_links.contains(o.start + k);
                for (_, l) in o.links().enumerate().filter(fresh) {
                    out.push((
                        LedgerOut::Echo(EchoMsg::Link {
                            dst_host: hosts.id(l.dst_host),
                            dst: l.dst,
                            src_host: hosts.id(l.src_host),
                            src: page,
                        }),
                        1,
                    ));
                }
            }
            out.push((
                LedgerOut::Echo(EchoMsg::Source(Box::new(SourceObs {
                    host: st.host,
                    page,
                    url: self.urls.text(&st.url),
                    kind,
                    first_seen: time(st.first_seen()),
                    crawled,
                }))),
                1,
            ));
        }
        out.extend(
            clicks
                .into_iter()
                .map(|c| (LedgerOut::Echo(EchoMsg::Click(c)), 1)),
        );
    }

    /// The first snapshot at which this worker's ledger knew `page`, if it does.
    pub fn first_seen(&self, page: PageId) -> Option<Seq> {
        self.pages.get(&page).map(|st| st.first_seen())
    }

    /// RankMass: the nodes of snapshot `t`'s graph on this worker, the known
    /// pages and the link sources, each as `(host, page, source)`: `source`
    /// is its place among the link set's sources for
    /// [`Ledger::rank_outlinks`] (`u32::MAX`: it has no outlinks).
    /// Destinations on other workers' hosts become nodes there (see
    /// `dataflow::pagerank`).
    ///
    /// The PageRank stage on the same worker reads the graph here when the
    /// ledger has folded `t` (the run reads no snapshot before the last is
    /// done, so the ledger is still at `t`). Sent to it as chunks of nodes with
    /// their outlinks, the graph was a copy of the links at 16 bytes each
    /// (180 MB on bench snapshot 9 with 1 worker) held while the stage built
    /// its own arrays from it: the peak of the whole run.
    pub fn rank_nodes(&self, t: Seq) -> Vec<(HostId, PageId, u32)> {
        assert_eq!(
            self.graph_seq,
            Some(t),
            "the ledger holds the graph of the snapshot PageRank reads"
        );
        let mut nodes = Vec::with_capacity(self.known.len() + self.links.sources_len() / 8);
        let host = |id: &PageId| self.pages[id].host;
        let mut sources = self.links.sources().enumerate().peekable();
        for &id in &self.known {
            let mut listed = false;
            while let Some((s, o)) = sources.next_if(|(_, o)| o.src <= id) {
                nodes.push((host(&o.src), o.src, s as u32));
                listed |= o.src == id;
            }
            if !listed {
                nodes.push((host(&id), id, u32::MAX));
            }
        }
        nodes.extend(sources.map(|(s, o)| (host(&o.src), o.src, s as u32)));
        nodes
    }

    /// RankMass: the outlinks of the link set's source number `source` other
    /// than to itself, as `(destination, its host)`.
    pub fn rank_outlinks(&self, source: u32) -> impl Iterator<Item = (PageId, HostId)> + '_ {
        let o = self.links.source(source as usize);
        o.dsts
            .iter()
            .zip(o.dst_hosts)
            .filter(move |(&dst, _)| dst != o.src)
            .map(|(&dst, &host)| (dst, self.link_hosts.id(host)))
    }

    /// The URL of each of `pages` (`None` for a page it does not know), in
    /// order, a group at a time with their cache misses in flight together:
    /// the page map's slots, then its entries, then the URLs' bytes (see
    /// [`IdMap::find_each_ahead`]). The tables that list pages by URL look
    /// up millions a snapshot, and one at a time they were most of the time
    /// of making their rows.
    pub fn urls_of<'a>(
        &'a self,
        pages: impl IntoIterator<Item = &'a PageId>,
        out: &mut Vec<Option<&'a str>>,
    ) {
        self.pages.find_each_ahead(
            pages,
            |st| self.urls.prefetch(&st.url),
            |_, found| out.push(found.map(|(_, st)| self.urls.get(&st.url))),
        );
    }

    /// The URL of a page this worker's ledger knows.
    pub fn url_of(&self, page: PageId) -> Option<&str> {
        self.pages.get(&page).map(|st| self.urls.get(&st.url))
    }

    /// The name of a host of this worker (a host's name never changes).
    pub fn host_name(&self, host: HostId) -> Option<&str> {
        self.hosts.get(&host).map(|h| h.name.as_str())
    }

    /// Replaces the link set and records link deltas and events.
    fn advance_links(
        &mut self,
        meta: &SnapshotMeta,
        links: LinkGather,
        fetched: &[PageId],
        deltas: &mut Deltas,
        events: &mut Deltas,
    ) {
        let mut links = links.into_set(&mut self.odd.duplicate_links);
        crate::memory::trace(|| format!("snapshot {}: ledger fold: link set sorted", meta.seq));
        if meta.partial {
            // Keep the outlinks of pages this snapshot did not cover.
            let mut covered: Vec<PageId> = links.sources().map(|o| o.src).collect();
            covered.extend_from_slice(fetched);
            covered.sort_unstable();
            covered.dedup();
            links = links.with_kept(&self.links, &covered);
        }
        let hosts = &self.link_hosts;
        self.fresh_links = link_set::diff(&self.links, &links, |l, d| {
            let host = hosts.id(l.src_host);
            deltas.add(host, HostFact::Link, d);
            let event = if d > 0 {
                HostFact::NewLink
            } else {
                HostFact::RemovedLink
            };
            events.add(host, event, 1);
        });
        self.links = links;
    }

    fn note_host(&mut self, host: HostId, name: &str, t: Seq, out: &mut Updates<'_>) {
        self.hosts.entry(host).or_insert_with(|| {
            out.push((
                LedgerOut::HostName(HostKey {
                    host,
                    key: name.to_string(),
                }),
                1,
            ));
            HostState {
                name: name.to_string(),
                first_seen: t,
            }
        });
    }

    /// The state records that let a later run continue from here, the pages
    /// in `order` (that of [`Self::table_order`]).
    pub fn state_records<'a>(&'a self, order: &'a [u32]) -> impl Iterator<Item = StateRecord> + 'a {
        let hosts = self
            .hosts
            .iter()
            .map(|(h, s)| StateRecord::Host(*h, s.clone()));
        // Runs of one host's pages, front-coded in the table's order (`PageRun`).
        let mut rest = order.iter().map(|&i| self.pages.at(i as usize)).peekable();
        let pages = std::iter::from_fn(move || {
            let &(_, first) = rest.peek()?;
            let mut run = PageRunBuilder::new(first.host, PAGE_RUN);
            while run.len() < PAGE_RUN {
                let Some((id, st)) = rest.next_if(|(_, st)| st.host == first.host) else {
                    break;
                };
                run.push(*id, st, self.urls.bytes(&st.url));
            }
            Some(StateRecord::Pages(run.finish()))
        });
        let links =
            (self.links.blocks(&self.link_hosts)).map(|b| StateRecord::PackedLinks(PackedLinks(b)));
        let events = self.events.iter().map(|(k, c)| StateRecord::Event(*k, *c));
        let changes = self.change.iter().flat_map(move |book| {
            book.histories()
                .map(move |(id, h)| StateRecord::Change(self.pages[id].host, *id, h))
        });
        hosts.chain(pages).chain(links).chain(events).chain(changes)
    }

    /// The positions of the known pages (in the order of [`Self::pages`]) in
    /// the order of the `pages` table and of the state: by the snapshot
    /// that first knew them, then by the bytes of their URLs.
    ///
    /// A restored ledger's first pages are in that order already (the state
    /// lists them so), and the pages known since came after all of them, so
    /// only those are sorted and they follow: the rows of the last `pages`
    /// table keep their places, which lets its writer copy the columns that
    /// cannot change ([`crate::output::pages_table`]). In plain URL order
    /// the new pages were merged in among the old, and every column was
    /// encoded anew every run.
    pub fn table_order(&self) -> Vec<u32> {
        let n = self.pages.len();
        let k = self.table_sorted.min(n);
        let first_seen = |i: usize| self.pages.at(i).1.first_seen();
        let after = k == 0 || (k..n).all(|i| first_seen(i) > first_seen(k - 1));
        let start = if after { k } else { 0 };
        let mut order: Vec<u32> = (0..start as u32).collect();
        order.extend(self.order_by_first_seen_and_url(start..n));
        order
    }

    /// The positions `range` by the snapshot that first knew their pages,
    /// then by the bytes of their URLs.
    fn order_by_first_seen_and_url(&self, range: std::ops::Range<usize>) -> Vec<u32> {
        let mut by_seen: Vec<(Seq, u32)> = range
            .map(|i| (self.pages.at(i).1.first_seen(), i as u32))
            .collect();
        by_seen.sort_unstable();
        let url = |i: u32| self.urls.bytes(&self.pages.at(i as usize).1.url);
        let mut order = Vec::with_capacity(by_seen.len());
        for group in by_seen.chunk_by(|a, b| a.0 == b.0) {
            let by_url = crate::str_sort::order_by_bytes(group.len(), |j| url(group[j].1));
            order.extend(by_url.into_iter().map(|j| group[j as usize].1));
        }
        order
    }

    /// The state, URL (its bytes, which its caller checks as text a block of
    /// URLs at a time rather than one by one) and host name of the pages at
    /// `order`'s positions (of [`Self::pages`]), in that order. A host's name
    /// is looked up once a run of its pages: in table order a host's pages
    /// of one first snapshot come together.
    pub fn pages_at<'a>(
        &'a self,
        order: &'a [u32],
    ) -> impl Iterator<Item = (&'a PageState, &'a [u8], &'a str)> + 'a {
        let mut host: Option<(HostId, &str)> = None;
        order.iter().map(move |&i| {
            let st = self.pages.at(i as usize).1;
            let name = match host {
                Some((h, name)) if h == st.host => name,
                _ => {
                    let name = self.hosts[&st.host].name.as_str();
                    host = Some((st.host, name));
                    name
                }
            };
            (st, self.urls.bytes(&st.url), name)
        })
    }

    /// Every known page's state, URL and host name.
    pub fn pages(&self) -> impl Iterator<Item = (&PageState, &str, &str)> + '_ {
        self.pages
            .values()
            .map(|p| (p, self.urls.get(&p.url), self.hosts[&p.host].name.as_str()))
    }
}

/// The page's state, created when first known; fails on an id collision.
fn page_entry<'a>(
    pages: &'a mut IdMap<PageId, PageState>,
    urls: &mut UrlArena,
    page: PageId,
    host: HostId,
    url: &UrlText,
    t: Seq,
) -> Result<&'a mut PageState, String> {
    let st = pages.get_or_insert_with(page, || {
        PageState::new(urls.push(&url.url, url.host_start, url.host_end), host, t)
    });
    if urls.bytes(&st.url) != url.url.as_bytes() {
        return Err(collision_message(urls.get(&st.url), &url.url));
    }

    Ok(st)
}

/// Notes in `collision`, unless it holds one already, that `url` has the
/// id of the known page `st` but is not its URL.
fn note_collision(urls: &UrlArena, st: &PageState, url: &str, collision: &mut Option<String>) {
    if collision.is_none() && urls.bytes(&st.url) != url.as_bytes() {
        *collision = Some(collision_message(urls.get(&st.url), url));
    }
}

fn collision_message(a: &str, b: &str) -> String {
    format!("URL id collision: {a:?} and {b:?} hash to the same 64-bit id; please report this")
}

/// Folds one observation into a page's state.
/// Keeps the last of each page's run in `v`, sorted by page.
fn keep_last_per_page<T>(v: &mut Vec<T>, page: impl Fn(&T) -> PageId) {
    v.reverse();
    v.dedup_by_key(|x| page(x));
    v.reverse();
}

fn observe(st: &mut PageState, obs: PageObs, t: Seq, events: &mut Deltas) {
    if st.fetched(t, obs.fetch_time, obs.status, obs.digest) {
        events.add(st.host, HostFact::ChangedPage, 1);
    }
}

fn finish(deltas: Deltas) -> impl Iterator<Item = (LedgerOut, i64)> {
    deltas
        .into_map()
        .into_iter()
        .filter(|(_, d)| *d != 0)
        .map(|(k, d)| (LedgerOut::Fact(k), d))
}

/// Calls `f(x, -1)` for `x` only in `old` and `f(x, +1)` for `x` only in `new`;
/// both slices sorted and free of duplicates.
pub fn diff_sorted<T: Ord>(old: &[T], new: &[T], mut f: impl FnMut(&T, i64)) {
    let (mut i, mut j) = (0, 0);
    while i < old.len() && j < new.len() {
        match old[i].cmp(&new[j]) {
            std::cmp::Ordering::Less => {
                f(&old[i], -1);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                f(&new[j], 1);
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                i += 1;
                j += 1;
            }
        }
    }
    old[i..].iter().for_each(|x| f(x, -1));
    new[j..].iter().for_each(|x| f(x, 1));
}

/// Sorted union of two sorted, duplicate-free slices.
fn merge_union<T: Ord + Copy>(a: &[T], b: &[T], out: &mut Vec<T>) {
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => {
                out.push(a[i]);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                out.push(b[j]);
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                out.push(a[i]);
                i += 1;
                j += 1;
            }
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::url::normalize;
    use crate::page_state::PageRecord;

    fn page(url: &str, digest: u64) -> Record {
        let u = UrlText::from(normalize(url).unwrap());
        Record::Page(Box::new(PageObs {
            host: HostId::of(u.host()),
            page: PageId::of(&u.url),
            url: u,
            fetch_time: 0,
            status: Some(200),
            digest,
        }))
    }

    fn link(src: &str, dst: &str) -> Vec<Record> {
        let (s, d) = (
            UrlText::from(normalize(src).unwrap()),
            UrlText::from(normalize(dst).unwrap()),
        );
        let mention = |u: &UrlText| {
            Record::Mention(Box::new(Mention {
                host: HostId::of(u.host()),
                page: PageId::of(&u.url),
                url: u.clone(),
            }))
        };
        vec![
            mention(&s),
            mention(&d),
            Record::Link(LinkObs {
                src_host: HostId::of(s.host()),
                src: PageId::of(&s.url),
                dst: PageId::of(&d.url),
                dst_host: HostId::of(d.host()),
            }),
        ]
    }

    fn meta(seq: Seq, partial: bool) -> SnapshotMeta {
        SnapshotMeta {
            seq,
            time: seq as i64,
            partial,
        }
    }

    /// The facts of `host` accumulated from all updates so far.
    fn facts(acc: &FastMap<LedgerOut, i64>, host: &str) -> Vec<(HostFact, i64)> {
        let h = HostId::of(host);
        let mut v: Vec<_> = acc
            .iter()
            .filter_map(|(o, c)| match o {
                LedgerOut::Fact(k) if k.host == h && *c != 0 => Some((k.key, *c)),
                _ => None,
            })
            .collect();
        v.sort();
        v
    }

    fn snapshots() -> Vec<(SnapshotMeta, Vec<Record>)> {
        let s0 = [
            vec![page("http://a.com/", 1), page("http://a.com/x", 2)],
            link("http://a.com/", "http://a.com/x"),
        ]
        .concat();
        let s1 = [
            vec![page("http://a.com/", 3), page("http://a.com/y", 4)],
            link("http://a.com/", "http://a.com/y"),
            link("http://a.com/y", "http://b.com/"),
        ]
        .concat();
        // Partial: only the main page, without links; a.com/y keeps its outlink.
        let s2 = vec![page("http://a.com/", 3)];
        let s3 = vec![page("http://a.com/", 5)];
        vec![
            (meta(0, false), s0),
            (meta(1, false), s1),
            (meta(2, true), s2),
            (meta(3, false), s3),
        ]
    }

    fn accumulate(acc: &mut FastMap<LedgerOut, i64>, updates: Vec<(LedgerOut, i64)>) {
        for (o, d) in updates {
            *acc.entry(o).or_default() += d;
        }
    }

    #[test]
    fn counts_follow_the_definitions() {
        use HostFact::*;
        let mut l = Ledger::default();
        let mut acc = FastMap::default();
        let snaps = snapshots();
        let expected: [&[(HostFact, i64)]; 4] = [
            &[
                (Fetched, 2),
                (Known, 2),
                (Link, 1),
                (NewPage, 2),
                (NewLink, 1),
                (NewHost, 1),
            ],
            &[
                (Fetched, 2),
                (Known, 2),
                (Link, 2),
                (NewPage, 1),
                (GonePage, 1),
                (ChangedPage, 1),
                (NewLink, 2),
                (RemovedLink, 1),
            ],
            // Partial: a.com/ is covered and lost its outlink; a.com/y kept its own.
            &[(Fetched, 1), (Known, 1), (Link, 1), (RemovedLink, 1)],
            // Full again: a.com/y is gone, and with it the outlink it kept.
            &[
                (Fetched, 1),
                (Known, 1),
                (GonePage, 1),
                (ChangedPage, 1),
                (RemovedLink, 1),
            ],
        ];
        for ((m, recs), want) in snaps.into_iter().zip(expected) {
            accumulate(&mut acc, l.advance(&m, recs).unwrap());
            assert_eq!(facts(&acc, "a.com"), want, "snapshot {}", m.seq);
        }
        assert_eq!(facts(&acc, "b.com"), vec![]);
    }

    #[test]
    fn restoring_state_continues_exactly() {
        let snaps = snapshots();
        for split in 1..snaps.len() {
            let mut whole = Ledger::default();
            let mut want = FastMap::default();
            for (m, recs) in snaps.clone() {
                accumulate(&mut want, whole.advance(&m, recs).unwrap());
            }
            let mut first = Ledger::default();
            for (m, recs) in snaps[..split].iter().cloned() {
                first.advance(&m, recs).unwrap();
            }
            // A new ledger from the persisted records, as the next run builds it.
            let order = first.table_order();
            let state: Vec<StateRecord> = first.state_records(&order).collect();
            assert!(state.iter().any(|r| matches!(r, StateRecord::Pages(_))));
            assert!(state
                .iter()
                .any(|r| matches!(r, StateRecord::PackedLinks(_))));
            // As a file holds it: each record through its bytes.
            let state: Vec<StateRecord> = state
                .iter()
                .map(|r| bincode::deserialize(&bincode::serialize(r).unwrap()).unwrap())
                .collect();
            // The same state as version 6 wrote it: its link blocks unpacked.
            let version_6: Vec<StateRecord> = state
                .iter()
                .map(|r| match r {
                    StateRecord::PackedLinks(PackedLinks(b)) => StateRecord::Links(b.clone()),
                    r => r.clone(),
                })
                .collect();
            // As version 4 wrote it: a record per page, and (as version 5
            // also did) one per source's links.
            let version_4: Vec<StateRecord> = state
                .iter()
                .flat_map(|r| match r {
                    StateRecord::Pages(run) => {
                        let mut pages = Vec::new();
                        run.decode(|id, url, (host_start, host_end), state| {
                            let url = UrlText {
                                url: url.into(),
                                host_start,
                                host_end,
                            };
                            pages.push(StateRecord::Page(id, PageRecord { url, state }));
                        })
                        .unwrap();
                        pages
                    }
                    StateRecord::PackedLinks(PackedLinks(b)) => {
                        b.outlinks().map(StateRecord::Outlinks).collect()
                    }
                    r => vec![r.clone()],
                })
                .collect();
            want.retain(|_, c| *c != 0);
            for state in [state, version_6, version_4] {
                let mut second = Ledger::default();
                let mut got = FastMap::default();
                accumulate(&mut got, second.restore(snaps[split - 1].0.seq, state));
                for (m, recs) in snaps[split..].iter().cloned() {
                    accumulate(&mut got, second.advance(&m, recs).unwrap());
                }
                got.retain(|_, c| *c != 0);
                assert_eq!(got, want, "split after {split} snapshots");
            }
        }
    }

    /// The `pages` table's order, with a whole run's pages in the order
    /// they came and with a restored run's (in the table's order, then the
    /// new ones): both the order a sort by first snapshot and URL gives; a
    /// state lists its pages in it, and a restored run keeps the restored
    /// pages first.
    #[test]
    fn table_order_is_by_first_snapshot_then_url() {
        let by_sort = |l: &Ledger| {
            let keys: Vec<(Seq, &str)> = l.pages().map(|(s, u, _)| (s.first_seen(), u)).collect();
            let mut order: Vec<u32> = (0..keys.len() as u32).collect();
            order.sort_by_key(|&i| keys[i as usize]);
            order
        };
        // Pages that come out of table order, new ones in every snapshot.
        let snaps = [
            [
                vec![page("http://z.com/", 1), page("http://m.com/a", 1)],
                vec![page("http://a.com/", 1)],
                link("http://z.com/", "http://a.com/q"),
            ]
            .concat(),
            [
                vec![page("http://b.com/", 1), page("http://m.com/", 1)],
                vec![page("http://a.com/", 2)],
                link("http://b.com/", "http://c.com/x"),
                link("http://m.com/", "http://a.com/b"),
            ]
            .concat(),
            vec![page("http://y.com/", 1), page("http://a.com/q", 1)],
        ];
        let snaps: Vec<(SnapshotMeta, Vec<Record>)> = snaps
            .into_iter()
            .enumerate()
            .map(|(t, r)| (meta(t as Seq, false), r))
            .collect();
        for split in 1..snaps.len() {
            let mut first = Ledger::default();
            for (m, recs) in snaps[..split].iter().cloned() {
                first.advance(&m, recs).unwrap();
            }
            assert_ne!(
                by_sort(&first),
                (0..first.pages.len() as u32).collect::<Vec<_>>()
            );
            assert_eq!(first.table_order(), by_sort(&first), "split {split}");
            let order = first.table_order();
            let state: Vec<StateRecord> = first.state_records(&order).collect();
            let mut second = Ledger::default();
            second.restore(snaps[split - 1].0.seq, state);
            assert_eq!(second.table_sorted, second.pages.len(), "split {split}");
            assert!(second.pages.len() > 1);
            let kept = second.pages.len();
            for (m, recs) in snaps[split..].iter().cloned() {
                second.advance(&m, recs).unwrap();
            }
            let order = second.table_order();
            assert_eq!(order, by_sort(&second), "split {split}");
            assert!(order[..kept]
                .iter()
                .enumerate()
                .all(|(i, &p)| i == p as usize));
        }
        // A state whose pages are out of order is in order for a prefix.
        let mut l = Ledger::default();
        for (m, recs) in snaps.iter().cloned() {
            l.advance(&m, recs).unwrap();
        }
        let mut order = l.table_order();
        order.swap(1, 2);
        let mut restored = Ledger::default();
        restored.restore(9, l.state_records(&order).collect());
        assert_eq!(restored.table_sorted, 2);
        assert_eq!(restored.table_order(), by_sort(&restored));
    }

    /// The graph PageRank reads: the known pages and the link sources (a
    /// partial snapshot keeps an uncovered page's outlinks, so its source
    /// is a node though the snapshot did not name it), each with its
    /// outlinks.
    #[test]
    fn the_rank_graph_is_the_known_pages_and_the_link_sources() {
        let id = |u: &str| PageId::of(&normalize(u).unwrap().url);
        let expected: [&[(&str, &[&str])]; 4] = [
            &[
                ("http://a.com/", &["http://a.com/x"]),
                ("http://a.com/x", &[]),
            ],
            &[
                ("http://a.com/", &["http://a.com/y"]),
                ("http://a.com/y", &["http://b.com/"]),
                ("http://b.com/", &[]),
            ],
            &[
                ("http://a.com/", &[]),
                ("http://a.com/y", &["http://b.com/"]),
            ],
            &[("http://a.com/", &[])],
        ];
        let mut l = Ledger::default();
        for ((m, recs), want) in snapshots().into_iter().zip(expected) {
            l.advance(&m, recs).unwrap();
            let mut got: Vec<(PageId, Vec<PageId>)> = l
                .rank_nodes(m.seq)
                .into_iter()
                .map(|(host, page, source)| {
                    assert_eq!(host, l.pages[&page].host);
                    let mut out: Vec<PageId> = match source {
                        u32::MAX => Vec::new(),
                        s => l.rank_outlinks(s).map(|o| o.0).collect(),
                    };
                    out.sort();
                    (page, out)
                })
                .collect();
            got.sort();
            let mut want: Vec<(PageId, Vec<PageId>)> = want
                .iter()
                .map(|(p, out)| {
                    let mut out: Vec<PageId> = out.iter().map(|u| id(u)).collect();
                    out.sort();
                    (id(p), out)
                })
                .collect();
            want.sort();
            assert_eq!(got, want, "snapshot {}", m.seq);
        }
    }

    #[test]
    fn id_collisions_are_reported() {
        let mut l = Ledger::default();
        let mut p = page("http://a.com/", 1);
        if let Record::Page(obs) = &mut p {
            obs.page = PageId::of("http://a.com/other");
        }
        let other = page("http://a.com/other", 1);
        let err = l.advance(&meta(0, false), vec![p, other]).unwrap_err();
        assert!(err.contains("collision"), "{err}");
    }

    /// A page the ledger knows is checked on arrival, and its URL dropped:
    /// a fetch or a mention of another URL with its id is still an error,
    /// and one of the same URL folds as if it had kept it.
    #[test]
    fn id_collisions_with_known_pages_are_reported_on_arrival() {
        let with_id_of = |mut r: Record, of: &str| {
            match &mut r {
                Record::Page(obs) => obs.page = PageId::of(of),
                Record::Mention(m) => m.page = PageId::of(of),
                _ => unreachable!(),
            }
            r
        };
        let mut l = Ledger::default();
        l.advance(&meta(0, false), vec![page("http://a.com/", 1)])
            .unwrap();
        let fetch = with_id_of(page("http://a.com/other", 1), "http://a.com/");
        let err = l.advance(&meta(1, false), vec![fetch]).unwrap_err();
        assert!(err.contains("collision"), "{err}");

        let mut l = Ledger::default();
        l.advance(&meta(0, false), vec![page("http://a.com/", 1)])
            .unwrap();
        let mention = link("http://a.com/other", "http://b.com/").remove(0);
        let mention = with_id_of(mention, "http://a.com/");
        let err = l.advance(&meta(1, false), vec![mention]).unwrap_err();
        assert!(err.contains("collision"), "{err}");

        // Known pages fetched and named again: their URLs dropped on
        // arrival, the state as it would be with them.
        let mut l = Ledger::default();
        let mut again = vec![page("http://a.com/", 2)];
        again.extend(link("http://a.com/", "http://a.com/x"));
        l.advance(&meta(0, false), again.clone()).unwrap();
        let mut batch = Batch::default();
        l.gather(&mut batch, &mut again.clone());
        assert!(batch.new_fetches.is_empty() && batch.known_fetches.len() == 1);
        assert!(batch.mentions.is_empty() && batch.seen.len() == 2);
        l.advance(&meta(1, false), again).unwrap();
        let st = &l.pages[&PageId::of("http://a.com/")];
        assert_eq!(
            (l.urls.get(&st.url), st.last_seen(), st.observations),
            ("http://a.com/", 1, 2)
        );
        assert_eq!(l.pages[&PageId::of("http://a.com/x")].last_seen(), 1);
    }

    /// `urls_of` gives what `url_of` gives page by page, unknown pages
    /// included, over several lookup groups.
    #[test]
    fn urls_of_is_url_of_in_turn() {
        let mut l = Ledger::default();
        let mut records = Vec::new();
        for i in 0..100 {
            records.extend(link(
                &format!("http://a{}.com/", i % 7),
                &format!("http://b.com/{i}"),
            ));
        }
        l.advance(&meta(0, false), records).unwrap();
        // Known pages in no order, over several groups, and one unknown.
        let pages: Vec<PageId> = (0..100)
            .rev()
            .map(|i| PageId::of(&format!("http://b.com/{i}")))
            .chain([PageId(12345)])
            .collect();
        let mut got = Vec::new();
        l.urls_of(&pages, &mut got);
        let want: Vec<Option<&str>> = pages.iter().map(|&p| l.url_of(p)).collect();
        assert_eq!(got, want);
        assert_eq!(got[0], Some("http://b.com/99"));
        assert_eq!(got[100], None);
    }

    /// Pages fetched twice in a snapshot, known ones and new ones, keep their
    /// latest fetch: the state and updates are those of a snapshot that held
    /// only the latest fetches, in any order of arrival, and the duplicates
    /// are counted.
    #[test]
    fn duplicate_fetches_keep_the_latest() {
        let at = |url: &str, time: Micros, digest: u64| {
            let Record::Page(mut p) = page(url, digest) else {
                unreachable!()
            };
            p.fetch_time = time;
            Record::Page(p)
        };
        let s0 = vec![at("http://a.com/", 1, 1), at("http://b.com/", 1, 1)];
        let twice = vec![
            at("http://a.com/", 20, 3),
            at("http://c.com/", 30, 4),
            at("http://b.com/", 10, 1),
            at("http://a.com/", 10, 2),
            at("http://c.com/", 5, 1),
        ];
        let latest = vec![
            at("http://a.com/", 20, 3),
            at("http://b.com/", 10, 1),
            at("http://c.com/", 30, 4),
        ];
        let run = |s1: Vec<Record>| {
            let mut l = Ledger::default();
            l.advance(&meta(0, false), s0.clone()).unwrap();
            let mut updates = l.advance(&meta(1, false), s1).unwrap();
            updates.sort_by_key(|u| format!("{u:?}"));
            let order = l.table_order();
            let state: Vec<String> = l.state_records(&order).map(|r| format!("{r:?}")).collect();
            (updates, state, l.odd.duplicate_pages)
        };
        let (updates, state, duplicates) = run(twice.clone());
        assert_eq!(duplicates, 2);
        let mut reversed = twice;
        reversed.reverse();
        for ((u, st, d), want) in [(run(latest), 0), (run(reversed), 2)] {
            assert_eq!(format!("{u:?}"), format!("{updates:?}"));
            assert_eq!(st, state);
            assert_eq!(d, want);
        }
        let mut l = Ledger::default();
        l.advance(&meta(0, false), s0.clone()).unwrap();
        l.advance(
            &meta(1, false),
            vec![at("http://a.com/", 10, 2), at("http://a.com/", 20, 3)],
        )
        .unwrap();
        assert_eq!(
            l.pages[&PageId::of("http://a.com/")].last_fetch_time(),
            Some(20)
        );
    }

    /// The next batch starts with room for the last one's records (the
    /// restored sets' sizes after a restore), and grows by eighths past it.
    #[test]
    fn a_batch_starts_with_the_last_ones_room() {
        let mut l = Ledger::default();
        let mut records = vec![page("http://a.com/", 1), page("http://b.com/", 1)];
        records.extend(link("http://a.com/", "http://a.com/x"));
        records.extend(link("http://b.com/", "http://c.com/"));
        let records_0 = records.clone();
        l.advance(&meta(0, false), records.clone()).unwrap();
        let sizes = l.batch_sizes();
        // Snapshot 0 knows no page: every mention is of a new page.
        assert_eq!(
            (
                sizes.new_fetches,
                sizes.known_fetches,
                sizes.mentions,
                sizes.seen,
                sizes.links,
                sizes.sources
            ),
            (2, 0, 4, 0, 2, 2)
        );
        let batch = Batch::with_capacity(sizes);
        assert!(batch.new_fetches.capacity() >= 2 && batch.mentions.capacity() >= 4);
        l.advance(&meta(1, false), records).unwrap();
        assert_eq!((l.batch_sizes().mentions, l.batch_sizes().seen), (0, 4));

        let mut restored = Ledger::default();
        restored.restore(1, l.state_records(&l.table_order()).collect());
        let sizes = restored.batch_sizes();
        assert_eq!(
            (
                sizes.new_fetches,
                sizes.known_fetches,
                sizes.mentions,
                sizes.seen,
                sizes.links
            ),
            (0, 2, 0, 4, 2)
        );
        // Restored at snapshot 0, whose pages were all new: its two fetched
        // pages and the two only linked to stand in for its new fetches and
        // its mentions of new pages.
        let mut first = Ledger::default();
        first.advance(&meta(0, false), records_0).unwrap();
        let mut restored = Ledger::default();
        restored.restore(0, first.state_records(&first.table_order()).collect());
        let sizes = restored.batch_sizes();
        assert_eq!(
            (
                sizes.new_fetches,
                sizes.known_fetches,
                sizes.mentions,
                sizes.seen
            ),
            (2, 0, 2, 4)
        );
    }

    /// `records` with their pages and mentions in batches (one worker's, as
    /// `PageBatcher` sends them, a few pages a batch).
    fn batched(records: Vec<Record>) -> Vec<Record> {
        let mut out = Vec::new();
        let owner = |_| 0;
        let mut batcher = crate::ingest::PageBatcher::new(1, &owner, |r| out.push(r));
        for rec in records {
            crate::ingest::RecordSink::record(&mut batcher, rec);
        }
        batcher.flush();
        drop(batcher);
        out
    }

    /// A ledger that takes its pages and mentions in batches folds every
    /// snapshot to the same updates and the same state as one that takes
    /// them a record each, and reports a collision on arrival the same way.
    #[test]
    fn batched_pages_fold_as_records_do() {
        let snapshot = |t: u64| {
            let mut records = Vec::new();
            for i in 0..5000u64 {
                if !(i + t).is_multiple_of(3) {
                    let url = format!("http://h{}.example/p{i}", i % 13);
                    records.push(page(&url, (i * t) % 5));
                }
                if i % 2 == 0 {
                    let src = format!("http://h{}.example/p{i}", i % 13);
                    let dst = format!("http://h{}.example/p{}", (i + 1) % 7, (i * 7 + t) % 9000);
                    records.extend(link(&src, &dst));
                }
            }
            records
        };
        let (mut one, mut many) = (Ledger::default(), Ledger::default());
        for t in 0..3 {
            let mut a = one.advance(&meta(t, false), snapshot(t)).unwrap();
            let mut b = many.advance(&meta(t, false), batched(snapshot(t))).unwrap();
            assert!(
                b.len() > 40,
                "snapshot {t} moves the hosts' facts: {}",
                b.len()
            );
            a.sort();
            b.sort();
            assert_eq!(a, b, "snapshot {t}");
        }
        let records = |l: &Ledger| {
            format!(
                "{:?}",
                l.state_records(&l.table_order()).collect::<Vec<_>>()
            )
        };
        assert_eq!(records(&one), records(&many));

        let mut fetch = page("http://h1.example/other", 1);
        if let Record::Page(obs) = &mut fetch {
            obs.page = PageId::of("http://h1.example/p1");
        }
        let err = many
            .advance(&meta(3, false), batched(vec![fetch]))
            .unwrap_err();
        assert!(err.contains("collision"), "{err}");
    }
}
