//! Taking a snapshot: the content changes since the last crawl, then the crawl's rows.
//!
//! Every live page of every live host is fetched; its digest is a hash of (URL, number
//! of content changes so far), so it changes exactly when the content changed. Content
//! changes are the page's own Poisson process over the interval, plus, for front pages,
//! one change whenever one of their link lists changed.

use rand::Rng;

use super::clock::{micros, seconds, Micros, MINUTE};
use super::model::{Host, OddLink, Role, Web};
use super::random::poisson;

/// Link destination standing for `mailto:someone@example.com`.
pub(crate) const MAILTO: u32 = u32::MAX;
/// Link destination standing for `javascript:void(0)`.
pub(crate) const JAVASCRIPT: u32 = u32::MAX - 1;
/// Longest crawl delay of a page after the snapshot time.
const CRAWL_SPREAD: f64 = 10.0 * MINUTE;

/// One fetched page.
pub(crate) struct PageRow {
    pub page: u32,
    pub fetch_time: Micros,
    pub status: i32,
    /// `None` for an error answer (404).
    pub digest: Option<u64>,
}

/// One distinct link found on a fetched page.
pub(crate) struct LinkRow {
    pub src: u32,
    /// A page, or [`MAILTO`] / [`JAVASCRIPT`].
    pub dst: u32,
    /// Occurrences on the page.
    pub count: u8,
}

/// The rows of one snapshot, in host order and, within a host, in page creation order.
pub(crate) struct Crawl {
    pub seq: usize,
    pub time: Micros,
    pub pages: Vec<PageRow>,
    pub links: Vec<LinkRow>,
}

impl Web {
    /// Takes snapshot `seq` at `now`; `prev` is the time of the previous snapshot.
    pub(crate) fn crawl<R: Rng>(
        &mut self,
        rng: &mut R,
        seq: usize,
        prev: Option<Micros>,
        now: Micros,
    ) -> Crawl {
        if let Some(prev) = prev {
            self.apply_changes(rng, prev, now);
        }
        self.clear_dirty();
        let crawl = self.rows(rng, seq, now);
        // Pages that answered 404 are gone from the next crawl.
        for h in &mut self.hosts {
            h.pages.retain(|&p| self.pages[p as usize].died.is_none());
        }
        crawl
    }

    /// Counts the content changes in `(prev, now]` of every page seen at `prev`. An
    /// article whose content changed also drops its links to pages that died.
    fn apply_changes<R: Rng>(&mut self, rng: &mut R, prev: Micros, now: Micros) {
        let tau = seconds(now - prev);
        for h in 0..self.hosts.len() {
            let host = &self.hosts[h];
            for &p in &host.pages {
                let page = &self.pages[p as usize];
                if page.died.is_some() || page.created > prev {
                    continue;
                }
                let lists_changed = match page.role {
                    Role::Main => host.main_dirty,
                    Role::Hub => {
                        let s = &host.sections[page.section as usize];
                        s.listing_dirty || s.ext_dirty
                    }
                    Role::Mirror => host.sections[page.section as usize].listing_dirty,
                    Role::Article => false,
                };
                let changes = poisson(rng, page.lambda * tau) as u32 + u32::from(lists_changed);
                if changes > 0 && page.role == Role::Article {
                    let start = page.out_start as usize;
                    let links = &mut self.outlinks[start..start + page.out_len as usize];
                    let mut kept = 0;
                    for i in 0..links.len() {
                        if self.pages[links[i] as usize].died.is_none() {
                            links[kept] = links[i];
                            kept += 1;
                        }
                    }
                    self.pages[p as usize].out_len = kept as u16;
                }
                self.pages[p as usize].changes += changes;
            }
        }
    }

    fn clear_dirty(&mut self) {
        for h in &mut self.hosts {
            h.main_dirty = false;
            for s in &mut h.sections {
                s.listing_dirty = false;
                s.ext_dirty = false;
            }
        }
    }

    /// The page and link rows of a crawl at `now`.
    fn rows<R: Rng>(&self, rng: &mut R, seq: usize, now: Micros) -> Crawl {
        let crawled = self.hosts.iter().map(|h| h.pages.len()).sum();
        let mut pages = Vec::with_capacity(crawled);
        // About ten links per page; this saves most reallocations of a large vector.
        let mut links =
            Vec::with_capacity(crawled * (self.params.siblings.1 + self.params.nav_hubs + 4));
        for host in self.hosts.iter().filter(|h| h.died.is_none()) {
            for &p in &host.pages {
                let page = &self.pages[p as usize];
                let fetch_time = now + micros(CRAWL_SPREAD * rng.random::<f64>());
                let (status, digest) = match page.died {
                    Some(_) => (404, None),
                    None => (200, Some(digest(page.url_hash, page.changes))),
                };
                pages.push(PageRow {
                    page: p,
                    fetch_time,
                    status,
                    digest,
                });
                if page.died.is_none() {
                    self.outlinks_of(host, p, |dst, count| {
                        links.push(LinkRow { src: p, dst, count })
                    });
                }
            }
        }
        Crawl {
            seq,
            time: now,
            pages,
            links,
        }
    }

    /// Calls `link(destination, occurrences)` once per distinct outlink of page `p` of `host`.
    fn outlinks_of(&self, host: &Host, p: u32, mut link: impl FnMut(u32, u8)) {
        let page = &self.pages[p as usize];
        let own = page.section as usize;
        let nav = host.sections.len().min(self.params.nav_hubs);
        match page.role {
            Role::Main => {
                for s in &host.sections {
                    link(s.hub, 1);
                    s.mirrors.iter().for_each(|&(m, _)| link(m, 1));
                }
                host.featured
                    .iter()
                    .chain(&host.ext)
                    .for_each(|&a| link(a, 1));
                match host.odd {
                    Some(OddLink::Mailto) => link(MAILTO, 1),
                    Some(OddLink::Javascript) => link(JAVASCRIPT, 1),
                    None => {}
                }
            }
            Role::Hub => {
                link(host.main, 1);
                (0..nav)
                    .filter(|&j| j != own)
                    .for_each(|j| link(host.sections[j].hub, 1));
                let s = &host.sections[own];
                s.listing.iter().chain(&s.ext).for_each(|&a| link(a, 1));
            }
            Role::Mirror => {
                link(host.main, 1);
                host.sections[own].listing.iter().for_each(|&a| link(a, 1));
            }
            Role::Article => {
                link(host.main, host.home_links);
                // The navigation bar; the article's own hub is linked from it too.
                for (j, s) in host.sections.iter().enumerate().take(nav) {
                    link(s.hub, if j == own { 2 } else { 1 });
                }
                if own >= nav {
                    link(host.sections[own].hub, 1);
                }
                let start = page.out_start as usize;
                for &dst in &self.outlinks[start..start + page.out_len as usize] {
                    link(dst, 1);
                }
            }
        }
    }
}

/// The content digest of a page with URL hash `url_hash` after `changes` changes.
pub(crate) fn digest(url_hash: u64, changes: u32) -> u64 {
    splitmix64(url_hash ^ splitmix64(u64::from(changes) + 1))
}

/// SplitMix64's finalizer: a stable, well-mixing 64-bit permutation.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
