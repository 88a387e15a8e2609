//! The ledger's links of the last snapshot, in 12 bytes each.
//!
//! A link as the ledger reads it ([`LinkKey`]) is 32 bytes: two 64-bit page ids
//! and their two 64-bit host ids. Held that way, a worker's links were the
//! largest part of its ledger (357 MB for bench snapshot 9 with 1 worker), and
//! the snapshot's gathered links as many again while it folds. Here the hosts
//! are interned to 32-bit indices ([`HostIndex`], which only grows, so an index
//! means the same host in every snapshot), and the set is stored by source, as
//! columns: per link its destination (8 bytes) and the destination's host index
//! (4), per source its id, host index and where its run ends (16). A snapshot's
//! links gather as 24-byte [`Link`]s.
//!
//! The order is the one of `LinkKey`: by source, then destination (a page's id
//! determines its host, so the hosts never decide it).

use std::collections::HashMap;

use crate::ledger::LinkKey;
use crate::model::{HostId, PageId};

type FastMap<K, V> = HashMap<K, V, foldhash::fast::FixedState>;

/// The hosts named by a worker's links, as dense 32-bit indices.
#[derive(Default)]
pub struct HostIndex {
    ids: Vec<HostId>,
    index: FastMap<HostId, u32>,
    /// The host interned last: a source's links arrive together, and most of
    /// them stay on its host, so this spares most of the hash probes.
    last: Option<(HostId, u32)>,
}

impl HostIndex {
    /// The index of `host`, given one if it has none yet.
    pub fn intern(&mut self, host: HostId) -> u32 {
        if let Some((h, i)) = self.last {
            if h == host {
                return i;
            }
        }
        let next = u32::try_from(self.ids.len()).expect("fewer than 2^32 hosts per worker");
        let i = *self.index.entry(host).or_insert_with(|| {
            self.ids.push(host);
            next
        });
        self.last = Some((host, i));
        i
    }

    /// The host of index `i` (given by [`HostIndex::intern`]).
    pub fn id(&self, i: u32) -> HostId {
        self.ids[i as usize]
    }

    /// A link read from the input, with its hosts interned.
    pub fn link(&mut self, l: LinkKey) -> Link {
        let src_host = self.intern(l.src_host);
        let dst_host = if l.dst_host == l.src_host {
            src_host
        } else {
            self.intern(l.dst_host)
        };
        Link {
            src: l.src,
            dst: l.dst,
            src_host,
            dst_host,
        }
    }

    /// The link with its hosts' ids.
    pub fn key(&self, l: Link) -> LinkKey {
        LinkKey {
            src: l.src,
            dst: l.dst,
            src_host: self.id(l.src_host),
            dst_host: self.id(l.dst_host),
        }
    }
}

/// A link with its hosts as [`HostIndex`] indices (24 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Link {
    pub src: PageId,
    pub dst: PageId,
    pub src_host: u32,
    pub dst_host: u32,
}

/// A set of links stored by source (see the module's documentation).
#[derive(Default)]
pub struct LinkSet {
    srcs: Vec<PageId>,
    src_hosts: Vec<u32>,
    /// Where each source's run in `dsts` ends (its start is the previous
    /// source's end, or 0).
    ends: Vec<u32>,
    dsts: Vec<PageId>,
    dst_hosts: Vec<u32>,
}

/// One source's links in a [`LinkSet`].
#[derive(Clone, Copy)]
pub struct Outlinks<'a> {
    pub src: PageId,
    pub src_host: u32,
    /// The position of the first link in the set.
    pub start: usize,
    pub dsts: &'a [PageId],
    pub dst_hosts: &'a [u32],
}

impl<'a> Outlinks<'a> {
    pub fn links(self) -> impl Iterator<Item = Link> + 'a {
        self.dsts
            .iter()
            .zip(self.dst_hosts)
            .map(move |(&dst, &dst_host)| Link {
                src: self.src,
                dst,
                src_host: self.src_host,
                dst_host,
            })
    }
}

impl LinkSet {
    /// The set of `links`, which are sorted and free of duplicates.
    pub fn from_sorted(links: &[Link]) -> LinkSet {
        debug_assert!(
            links.windows(2).all(|w| w[0] < w[1]),
            "sorted, no duplicates"
        );
        assert!(
            u32::try_from(links.len()).is_ok(),
            "fewer than 2^32 links per worker"
        );
        let sources = 1 + links.windows(2).filter(|w| w[0].src != w[1].src).count();
        let mut set = LinkSet {
            srcs: Vec::with_capacity(sources),
            src_hosts: Vec::with_capacity(sources),
            ends: Vec::with_capacity(sources),
            dsts: Vec::with_capacity(links.len()),
            dst_hosts: Vec::with_capacity(links.len()),
        };
        for l in links {
            if set.srcs.last() != Some(&l.src) {
                if !set.dsts.is_empty() {
                    set.ends.push(set.dsts.len() as u32);
                }
                set.srcs.push(l.src);
                set.src_hosts.push(l.src_host);
            }
            set.dsts.push(l.dst);
            set.dst_hosts.push(l.dst_host);
        }
        if !set.dsts.is_empty() {
            set.ends.push(set.dsts.len() as u32);
        }
        set
    }

    /// The number of links.
    pub fn len(&self) -> usize {
        self.dsts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.dsts.is_empty()
    }

    /// The sources, in order, each with its links.
    pub fn sources(&self) -> impl ExactSizeIterator<Item = Outlinks<'_>> + '_ {
        (0..self.srcs.len()).map(|i| self.source(i))
    }

    fn source(&self, i: usize) -> Outlinks<'_> {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        let end = self.ends[i] as usize;
        Outlinks {
            src: self.srcs[i],
            src_host: self.src_hosts[i],
            start,
            dsts: &self.dsts[start..end],
            dst_hosts: &self.dst_hosts[start..end],
        }
    }

    /// Every link, in order.
    pub fn iter(&self) -> impl Iterator<Item = Link> + '_ {
        self.sources().flat_map(Outlinks::links)
    }

    /// The links of `src` (none if it has none).
    pub fn outlinks(&self, src: PageId) -> Option<Outlinks<'_>> {
        self.srcs.binary_search(&src).ok().map(|i| self.source(i))
    }
}

/// Which links of a set are new: a bit per position.
#[derive(Default)]
pub struct Fresh(Vec<u64>);

impl Fresh {
    pub fn contains(&self, position: usize) -> bool {
        self.0[position / 64] & (1 << (position % 64)) != 0
    }
}

/// Compares the set `old` with the links `new` (sorted, free of duplicates):
/// calls `f(link, -1)` for each link only in `old` and `f(link, 1)` for each
/// only in `new`, in order, and returns which of `new`'s links `old` lacks.
pub fn diff(old: &LinkSet, new: &[Link], mut f: impl FnMut(Link, i64)) -> Fresh {
    let mut fresh = Fresh(vec![0; new.len().div_ceil(64)]);
    let mut mark = |j: usize, f: &mut dyn FnMut(Link, i64)| {
        fresh.0[j / 64] |= 1 << (j % 64);
        f(new[j], 1);
    };
    let mut old = old.iter().peekable();
    let mut j = 0;
    while j < new.len() {
        match old.peek() {
            Some(a) if *a < new[j] => f(old.next().expect("peeked"), -1),
            Some(a) if *a == new[j] => {
                old.next();
                j += 1;
            }
            _ => {
                mark(j, &mut f);
                j += 1;
            }
        }
    }
    old.for_each(|a| f(a, -1));
    fresh
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(src: u64, dst: u64, src_host: u64, dst_host: u64) -> LinkKey {
        LinkKey::of(src, src_host, dst, dst_host)
    }

    #[test]
    fn a_set_gives_back_its_links_in_order() {
        let mut want = vec![
            key(5, 9, 50, 90),
            key(5, 6, 50, 50),
            key(1, 2, 10, 10),
            key(1, 7, 10, 70),
            key(8, 1, 80, 10),
        ];
        let mut hosts = HostIndex::default();
        let mut links: Vec<Link> = want.iter().map(|&k| hosts.link(k)).collect();
        links.sort_unstable();
        want.sort_unstable();
        let set = LinkSet::from_sorted(&links);
        assert_eq!(set.len(), 5);
        let back: Vec<LinkKey> = set.iter().map(|l| hosts.key(l)).collect();
        assert_eq!(back, want);
        assert_eq!(set.sources().len(), 3);
        let five = set.outlinks(PageId(5)).unwrap();
        assert_eq!(five.dsts, &[PageId(6), PageId(9)]);
        assert_eq!(hosts.id(five.src_host), HostId(50));
        assert_eq!(hosts.id(five.dst_hosts[1]), HostId(90));
        assert!(set.outlinks(PageId(2)).is_none());
        assert!(LinkSet::from_sorted(&[]).is_empty());
        assert_eq!(LinkSet::from_sorted(&[]).iter().count(), 0);
    }

    #[test]
    fn diff_finds_the_removed_and_the_new() {
        let mut hosts = HostIndex::default();
        let mut link = |src, dst| hosts.link(key(src, dst, 1, 1));
        let old = LinkSet::from_sorted(&[link(1, 2), link(1, 3), link(4, 5), link(6, 7)]);
        let new = [link(1, 3), link(1, 4), link(6, 7), link(8, 9)];
        let mut seen = Vec::new();
        let fresh = diff(&old, &new, |l, d| seen.push((l.src.0, l.dst.0, d)));
        assert_eq!(seen, [(1, 2, -1), (1, 4, 1), (4, 5, -1), (8, 9, 1)]);
        let marked: Vec<bool> = (0..new.len()).map(|j| fresh.contains(j)).collect();
        assert_eq!(marked, [false, true, false, true]);
        let gone = diff(&old, &[], |_, d| assert_eq!(d, -1));
        assert!(gone.0.is_empty());
    }

    #[test]
    fn host_indices_are_stable() {
        let mut hosts = HostIndex::default();
        let a = hosts.intern(HostId(3));
        let b = hosts.intern(HostId(4));
        assert_eq!(hosts.intern(HostId(3)), a);
        assert_ne!(a, b);
        assert_eq!(hosts.id(b), HostId(4));
    }
}
