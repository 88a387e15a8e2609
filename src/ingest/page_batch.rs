//! Pages and links bound for one worker, sent together.
//!
//! Sent one by one, every fetched page and every page a link names was a
//! record of its own (3.4M on bench snapshot 9 with 2 workers): a box and a
//! URL string allocated by the worker that read it, then read again and freed
//! by the worker that owns its host, each a cache miss there and half of them
//! a free from another thread. A [`PageBatch`] carries up to
//! [`PageBatcher::ROWS`] of them for one worker, their URLs in one string;
//! the owner copies out only the URLs of the pages it does not know yet.
//!
//! Links, 10M on that snapshot, went one by one too: each a record pushed
//! into the input, then routed and pushed again by the exchange. A
//! [`LinkBatch`] carries up to [`PageBatcher::ROWS`] of them for one worker.

use std::sync::{Mutex, MutexGuard};

use serde::{Deserialize, Serialize};

use crate::ingest::{LinkObs, Mention, PageObs, PageRef, Record, RecordSink, UrlText};
use crate::model::{HostId, Micros, PageId};

/// Fetched pages, or pages named by links, of hosts that one worker owns.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageBatch {
    /// The worker the batch goes to.
    pub to: u32,
    pub pages: Vec<PageId>,
    pub hosts: Vec<HostId>,
    /// The pages' URLs one after another: URL `i` ends at `url_ends[i]`.
    pub urls: String,
    pub url_ends: Vec<u32>,
    /// Where each URL's site name lies in it (`UrlText`'s range).
    pub host_ranges: Vec<(u32, u32)>,
    /// Each page's fetch in a batch of fetched pages; empty in a batch of
    /// pages named by links.
    pub fetches: Vec<Fetch>,
}

/// Links whose sources' hosts one worker owns, in the order they were read.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkBatch {
    /// The worker the batch goes to.
    pub to: u32,
    pub links: Vec<LinkObs>,
}

impl LinkBatch {
    fn new(to: u32) -> LinkBatch {
        LinkBatch {
            to,
            links: Vec::new(),
        }
    }
}

/// Emptied batches that the ledger handed back once it had gathered them
/// ([`recycle_pages`], [`recycle_links`]), for the batcher's next ones.
///
/// Every batch was fresh memory: allocated by the worker that read its
/// rows, written (a page fault per 4 KiB), freed by the worker that gathered
/// it, and given back to the kernel at once (the allocator's purge delay is
/// 0 for the memory aim; see `memory::tune_allocator`). While bench snapshot
/// 9 was read after a committed 0-8 (2 workers), the batches took 74K of the
/// 262K page faults. A few spare batches, whose pages stay written, end
/// that: with them, and the batches shipped as they fill
/// (`dataflow::record_exchange`), the same reading faults 204K times.
static SPARE_PAGES: Spares<PageBatch> = Spares::new();
static SPARE_LINKS: Spares<LinkBatch> = Spares::new();

/// Spare batches of each kind kept at most: about as many as the workers of
/// a process send between two steps of the dataflow (a step every 64K rows
/// read: 16 batches a worker), so that the next ones are nearly all spares
/// (97% on bench snapshot 9 with 2 workers; 82% of the links' at 16). At
/// most 4 MiB of link batches and 15 MiB of page batches (of URLs 64 bytes
/// long), freed once the snapshot is read.
const SPARES: usize = 32;

/// Up to [`SPARES`] emptied batches of one kind, shared by a process's workers.
struct Spares<T>(Mutex<Vec<T>>);

impl<T> Spares<T> {
    const fn new() -> Self {
        Spares(Mutex::new(Vec::new()))
    }

    fn lock(&self) -> MutexGuard<'_, Vec<T>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keeps `batch`, emptied by `clear`, unless enough are kept already.
    fn give(&self, mut batch: T, clear: impl FnOnce(&mut T)) {
        let mut spare = self.lock();
        if spare.len() < SPARES {
            clear(&mut batch);
            spare.push(batch);
        }
    }

    fn take(&self) -> Option<T> {
        self.lock().pop()
    }

    fn release(&self) {
        drop(std::mem::take(&mut *self.lock()));
    }
}

/// Hands an emptied batch of pages back for the batcher to fill again.
pub fn recycle_pages(batch: PageBatch) {
    SPARE_PAGES.give(batch, PageBatch::clear);
}

/// Hands an emptied batch of links back for the batcher to fill again.
pub fn recycle_links(batch: LinkBatch) {
    SPARE_LINKS.give(batch, |b| b.links.clear());
}

/// Frees the spare batches: once a snapshot is read, so that they do not
/// sit through the stages after it.
pub fn release_spares() {
    SPARE_PAGES.release();
    SPARE_LINKS.release();
}

/// What a snapshot's fetch of a page observed, besides its URL.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fetch {
    pub fetch_time: Micros,
    pub status: Option<i32>,
    pub digest: u64,
}

impl PageBatch {
    fn new(to: u32) -> PageBatch {
        PageBatch {
            to,
            ..PageBatch::default()
        }
    }

    pub fn len(&self) -> usize {
        self.pages.len()
    }

    /// Empties the batch, keeping its room.
    fn clear(&mut self) {
        self.pages.clear();
        self.hosts.clear();
        self.urls.clear();
        self.url_ends.clear();
        self.host_ranges.clear();
        self.fetches.clear();
    }

    pub fn is_empty(&self) -> bool {
        self.pages.is_empty()
    }

    /// Whether the batch holds fetched pages (else pages named by links).
    pub fn fetched(&self) -> bool {
        !self.fetches.is_empty()
    }

    /// The URL of page `i`.
    pub fn url(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.url_ends[i - 1] };
        &self.urls[start as usize..self.url_ends[i] as usize]
    }

    fn url_text(&self, i: usize) -> UrlText {
        let (host_start, host_end) = self.host_ranges[i];
        UrlText {
            url: self.url(i).into(),
            host_start,
            host_end,
        }
    }

    /// Fetched page `i` as a record of its own.
    pub fn page_obs(&self, i: usize) -> PageObs {
        let f = self.fetches[i];
        PageObs {
            host: self.hosts[i],
            page: self.pages[i],
            url: self.url_text(i),
            fetch_time: f.fetch_time,
            status: f.status,
            digest: f.digest,
        }
    }

    /// Named page `i` as a record of its own.
    pub fn mention(&self, i: usize) -> Mention {
        Mention {
            host: self.hosts[i],
            page: self.pages[i],
            url: self.url_text(i),
        }
    }
}

/// Gathers the fetched pages, the pages named by links and the links that a
/// worker reads into a batch per worker they go to, and hands every full
/// batch, and every other record at once, to `send`.
pub struct PageBatcher<'a, S: FnMut(Record)> {
    owner: &'a dyn Fn(HostId) -> usize,
    send: S,
    /// Pages a batch holds at most.
    rows: usize,
    fetched: Vec<PageBatch>,
    named: Vec<PageBatch>,
    links: Vec<LinkBatch>,
    /// The last link's source host and its worker: a links table lists a
    /// source's links together, so most links skip the placement's lookup.
    last_source: Option<(HostId, usize)>,
}

impl<'a, S: FnMut(Record)> PageBatcher<'a, S> {
    /// Pages a batch holds at most: a few hundred kilobytes of URLs, sent
    /// long before the reading of a snapshot ends. Batches of 1024 pages
    /// gained nothing over records one by one on bench snapshot 9 (2
    /// workers); 2048 and 4096 the same.
    pub const ROWS: usize = 4096;

    /// Pages of one kind a batcher holds at most over all its batches, so
    /// that its memory does not grow with the number of workers: with many,
    /// each batch holds fewer pages.
    const HELD: usize = 1 << 14;

    /// A batcher for `peers` workers; `owner` names the worker of a host.
    pub fn new(peers: usize, owner: &'a dyn Fn(HostId) -> usize, send: S) -> Self {
        let rows = (Self::HELD / peers.max(1)).clamp(64, Self::ROWS);
        let batches = || (0..peers as u32).map(|to| Self::empty(to, rows)).collect();
        PageBatcher {
            owner,
            send,
            rows,
            fetched: batches(),
            named: batches(),
            links: (0..peers as u32)
                .map(|to| Self::empty_links(to, rows))
                .collect(),
            last_source: None,
        }
    }

    /// An empty batch of links for worker `to`: a spare one, or a new one
    /// with room for `rows`.
    fn empty_links(to: u32, rows: usize) -> LinkBatch {
        match SPARE_LINKS.take() {
            Some(batch) if batch.links.capacity() >= rows => LinkBatch { to, ..batch },
            _ => LinkBatch {
                to,
                links: Vec::with_capacity(rows),
            },
        }
    }

    /// An empty batch of pages for worker `to`: a spare one, or a new one
    /// with room for `rows`.
    fn empty(to: u32, rows: usize) -> PageBatch {
        if let Some(batch) = SPARE_PAGES.take().filter(|b| b.pages.capacity() >= rows) {
            return PageBatch { to, ..batch };
        }
        PageBatch {
            to,
            pages: Vec::with_capacity(rows),
            hosts: Vec::with_capacity(rows),
            // Bench URLs are 50-60 bytes.
            urls: String::with_capacity(rows * 64),
            url_ends: Vec::with_capacity(rows),
            host_ranges: Vec::with_capacity(rows),
            fetches: Vec::new(),
        }
    }

    /// Adds a page of host `host` to the batch of its worker, fetched by
    /// `fetch` or named by a link; sends the batch once full.
    fn push(&mut self, host: HostId, page: PageId, url: (&str, u32, u32), fetch: Option<Fetch>) {
        let w = (self.owner)(host);
        let batch = match fetch {
            Some(_) => &mut self.fetched[w],
            None => &mut self.named[w],
        };
        batch.pages.push(page);
        batch.hosts.push(host);
        batch.urls.push_str(url.0);
        let end = u32::try_from(batch.urls.len()).expect("a batch's URLs stay far under 4 GiB");
        batch.url_ends.push(end);
        batch.host_ranges.push((url.1, url.2));
        if let Some(f) = fetch {
            if batch.fetches.capacity() == 0 {
                batch.fetches.reserve_exact(self.rows);
            }
            batch.fetches.push(f);
        }
        if batch.len() == self.rows {
            let full = std::mem::replace(batch, Self::empty(w as u32, self.rows));
            (self.send)(Record::Pages(Box::new(full)));
        }
    }

    /// Sends every batch not yet sent.
    pub fn flush(&mut self) {
        for batch in self.fetched.iter_mut().chain(&mut self.named) {
            if !batch.is_empty() {
                let full = std::mem::replace(batch, PageBatch::new(batch.to));
                (self.send)(Record::Pages(Box::new(full)));
            }
        }
        for batch in &mut self.links {
            if !batch.links.is_empty() {
                let full = std::mem::replace(batch, LinkBatch::new(batch.to));
                (self.send)(Record::Links(Box::new(full)));
            }
        }
    }
}

impl<S: FnMut(Record)> RecordSink for PageBatcher<'_, S> {
    fn record(&mut self, rec: Record) {
        match rec {
            Record::Page(p) => {
                let fetch = Fetch {
                    fetch_time: p.fetch_time,
                    status: p.status,
                    digest: p.digest,
                };
                let url = (&*p.url.url, p.url.host_start, p.url.host_end);
                self.push(p.host, p.page, url, Some(fetch));
            }
            Record::Mention(m) => self.mention(*m),
            Record::Link(l) => self.link(l),
            rec => (self.send)(rec),
        }
    }

    fn link(&mut self, l: LinkObs) {
        let w = match self.last_source {
            Some((host, w)) if host == l.src_host => w,
            _ => {
                let w = (self.owner)(l.src_host);
                self.last_source = Some((l.src_host, w));
                w
            }
        };
        let batch = &mut self.links[w];
        batch.links.push(l);
        if batch.links.len() == self.rows {
            let full = std::mem::replace(batch, Self::empty_links(w as u32, self.rows));
            (self.send)(Record::Links(Box::new(full)));
        }
    }

    fn page(&mut self, p: PageRef<'_>) {
        let url = (p.url.url.as_str(), p.url.host_start, p.url.host_end);
        self.push(p.host, p.page, url, Some(p.fetch));
    }

    fn mention(&mut self, m: Mention) {
        let url = (&*m.url.url, m.url.host_start, m.url.host_end);
        self.push(m.host, m.page, url, None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> UrlText {
        let host_start = 7;
        let host_end = 7 + s[7..].find('/').unwrap_or(s.len() - 7) as u32;
        UrlText {
            url: s.into(),
            host_start,
            host_end,
        }
    }

    fn page(s: &str, t: Micros) -> Record {
        let url = url(s);
        Record::Page(Box::new(PageObs {
            host: HostId::of(url.host()),
            page: PageId::of(&url.url),
            url,
            fetch_time: t,
            status: (t % 2 == 0).then_some(200),
            digest: t as u64,
        }))
    }

    fn mention(s: &str) -> Record {
        let url = url(s);
        Record::Mention(Box::new(Mention {
            host: HostId::of(url.host()),
            page: PageId::of(&url.url),
            url,
        }))
    }

    /// Every page, mention and link comes back out of the batches, in its
    /// order, in a batch for its host's (a link's source's) worker and of
    /// its kind; the other records pass through as they came. Batches are
    /// handed back as they arrive, so most are spare ones filled again,
    /// which must hold nothing of their last rows.
    #[test]
    fn batches_give_back_every_record_at_its_worker() {
        let owner = |h: HostId| (h.0 % 3) as usize;
        let mut records = Vec::new();
        for i in 0..30_000 {
            let host = i % 7;
            records.push(page(&format!("http://h{host}.example/p{i}"), i as Micros));
            records.push(mention(&format!("http://h{host}.example/q{i}")));
            if i % 3 == 0 {
                records.push(Record::Link(crate::ingest::LinkObs {
                    src_host: HostId(i as u64 % 5),
                    src: PageId(i as u64),
                    dst_host: HostId(2),
                    dst: PageId(0),
                }));
            }
            if i % 1000 == 0 {
                records.push(Record::Click(Box::new(crate::ingest::ClickObs {
                    host: HostId(1),
                    page: PageId(i as u64),
                    time: 0,
                    clicks: 1,
                })));
            }
        }
        // Per worker, the pages and the mentions in the order they came.
        let mut got: Vec<Vec<Record>> = vec![Vec::new(); 3];
        let mut got_links: Vec<Vec<LinkObs>> = vec![Vec::new(); 3];
        let mut passed = Vec::new();
        // Each batch is read out and handed back as the ledger does, so
        // that later batches are spare ones filled again.
        let receive = |rec: Record| match rec {
            Record::Links(b) => {
                assert!(b.links.len() <= 4096);
                assert!(b.links.iter().all(|l| owner(l.src_host) == b.to as usize));
                got_links[b.to as usize].extend(&b.links);
                recycle_links(*b);
            }
            Record::Pages(b) => {
                assert!(b.len() <= 4096);
                for i in 0..b.len() {
                    assert_eq!(owner(b.hosts[i]), b.to as usize);
                    let rec = if b.fetched() {
                        Record::Page(Box::new(b.page_obs(i)))
                    } else {
                        Record::Mention(Box::new(b.mention(i)))
                    };
                    got[b.to as usize].push(rec);
                }
                recycle_pages(*b);
            }
            rec => passed.push(rec),
        };
        let mut batcher = PageBatcher::new(3, &owner, receive);
        // Half the pages lent as `read_snapshot` lends them.
        for (k, rec) in records.clone().into_iter().enumerate() {
            match rec {
                Record::Page(p) if k % 4 == 0 => {
                    let url = crate::ingest::url::NormalUrl {
                        url: p.url.url.to_string(),
                        host_start: p.url.host_start,
                        host_end: p.url.host_end,
                    };
                    batcher.page(PageRef {
                        host: p.host,
                        page: p.page,
                        url: &url,
                        fetch: Fetch {
                            fetch_time: p.fetch_time,
                            status: p.status,
                            digest: p.digest,
                        },
                    });
                }
                rec => batcher.record(rec),
            }
        }
        batcher.flush();
        drop(batcher);
        let mut want: Vec<Vec<Record>> = vec![Vec::new(); 3];
        let mut want_links: Vec<Vec<LinkObs>> = vec![Vec::new(); 3];
        let mut want_passed = Vec::new();
        for rec in records {
            match &rec {
                Record::Page(p) => want[owner(p.host)].push(rec),
                Record::Mention(m) => want[owner(m.host)].push(rec),
                Record::Link(l) => want_links[owner(l.src_host)].push(*l),
                _ => want_passed.push(rec),
            }
        }
        assert_eq!(passed, want_passed, "every other record passed through");
        assert_eq!(got_links, want_links, "links by worker, in their order");
        let kind = |r: &Record| matches!(r, Record::Page(_));
        for w in 0..3 {
            for fetched in [true, false] {
                let got: Vec<_> = got[w].iter().filter(|r| kind(r) == fetched).collect();
                let want: Vec<_> = want[w].iter().filter(|r| kind(r) == fetched).collect();
                assert_eq!(got, want, "worker {w}, fetched {fetched}");
            }
        }
    }

    /// With many workers a batch holds fewer pages, so that the pages a
    /// reading worker holds do not grow with their number.
    #[test]
    fn many_workers_make_small_batches() {
        let owner = |h: HostId| (h.0 % 64) as usize;
        let rows = |peers| PageBatcher::new(peers, &owner, |_: Record| {}).rows;
        assert_eq!((rows(1), rows(2), rows(4)), (4096, 4096, 4096));
        assert_eq!((rows(64), rows(1024)), (256, 64));
    }
}
