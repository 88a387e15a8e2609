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

use crate::bits::Bits;
use crate::grow::room_for;
use crate::ledger::LinkKey;
use crate::model::{HostId, PageId};
use crate::prefetch::prefetch;
use crate::state::LinkBlock;

/// Links a [`LinkBlock`] of the state holds (a block ends with the source
/// that reaches this many): 8K links, 100 KB of block, whose vectors the
/// allocator hands out again for the next block (blocks of 64K links, each
/// vector fresh memory from the kernel, cost more page faults than the
/// block saved).
pub const LINK_BLOCK: u32 = 1 << 13;

/// The hosts named by a worker's links, as dense 32-bit indices.
#[derive(Default)]
pub struct HostIndex {
    ids: Vec<HostId>,
    /// Open addressing, linear probing: per slot a host and its index, an
    /// index of `u32::MAX` when empty; at most half full. A table of its
    /// own rather than a `HashMap` so that a batch of links can ask for
    /// their slots ahead ([`HostIndex::prefetch`]): 12% of bench snapshot
    /// 9's links leave their source's host, for any of 28K hosts, and each
    /// such probe of the map missed the cache (2% of the run's CPU). Nor a
    /// [`TagTable`](crate::tag_table::TagTable), which can be prefetched
    /// too but keeps a tag where this keeps the host: its match must then
    /// read the host from `ids`, a second miss (lookups took 1.0-1.5% of
    /// the samples with it, 0.6-1.0% with this).
    slots: Vec<(HostId, u32)>,
    /// The host interned last: a source's links arrive together, and most of
    /// them stay on its host, so this spares most of the probes.
    last: Option<(HostId, u32)>,
}

const EMPTY_SLOT: (HostId, u32) = (HostId(0), u32::MAX);

impl HostIndex {
    /// The index of `host`, given one if it has none yet.
    pub fn intern(&mut self, host: HostId) -> u32 {
        if let Some((h, i)) = self.last {
            if h == host {
                return i;
            }
        }
        let i = self.lookup(host);
        self.last = Some((host, i));
        i
    }

    /// Where the search for `host` starts: the top bits of its id mixed
    /// (ids are hashes, but tests use small ones), as many as the slots need.
    fn home(&self, host: HostId) -> usize {
        let bits = self.slots.len().trailing_zeros();
        (host.0.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - bits)) as usize
    }

    /// Asks the processor for `host`'s first slot, ahead of its lookup.
    #[inline]
    pub fn prefetch(&self, host: HostId) {
        if !self.slots.is_empty() {
            crate::prefetch::prefetch(&self.slots[self.home(host)]);
        }
    }

    /// [`HostIndex::intern`] without the last host.
    fn lookup(&mut self, host: HostId) -> u32 {
        if self.ids.len() * 2 >= self.slots.len() {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut at = self.home(host);
        loop {
            let (h, i) = self.slots[at];
            if i == u32::MAX {
                let i = u32::try_from(self.ids.len()).expect("fewer than 2^32 hosts per worker");
                self.ids.push(host);
                self.slots[at] = (host, i);
                return i;
            }
            if h == host {
                return i;
            }
            at = (at + 1) & mask;
        }
    }

    /// Doubles the slots (at least 1,024), placing every host again.
    fn grow(&mut self) {
        let n = (self.slots.len() * 2).max(1024);
        self.slots = vec![EMPTY_SLOT; n];
        let mask = n - 1;
        for (i, &host) in self.ids.iter().enumerate() {
            let mut at = self.home(host);
            while self.slots[at].1 != u32::MAX {
                at = (at + 1) & mask;
            }
            self.slots[at] = (host, i as u32);
        }
    }

    /// The host of index `i` (given by [`HostIndex::intern`]).
    pub fn id(&self, i: u32) -> HostId {
        self.ids[i as usize]
    }

    /// A link read from the input, with its hosts interned.
    pub fn link(&mut self, l: LinkKey) -> Link {
        let src_host = self.intern(l.src_host);
        // Another host leaves `last` to the source, whose next link follows.
        let dst_host = if l.dst_host == l.src_host {
            src_host
        } else {
            self.lookup(l.dst_host)
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
    #[cfg(test)]
    pub fn from_sorted(links: &[Link]) -> LinkSet {
        debug_assert!(
            links.windows(2).all(|w| w[0] < w[1]),
            "sorted, no duplicates"
        );
        let mut gather = LinkGather::default();
        links.iter().for_each(|&l| gather.push(l));
        gather.into_set(&mut 0)
    }

    /// An empty set with room for `links` links from `sources` sources.
    fn with_capacity(links: usize, sources: usize) -> LinkSet {
        LinkSet {
            srcs: Vec::with_capacity(sources),
            src_hosts: Vec::with_capacity(sources),
            ends: Vec::with_capacity(sources),
            dsts: Vec::with_capacity(links),
            dst_hosts: Vec::with_capacity(links),
        }
    }

    /// Puts the runs of a gathered set (each a source's links, unsorted; a
    /// source may have several runs, in any order) in the order of their
    /// sources, a source's runs in the order they came and joined as one.
    ///
    /// In place (see [`permute`]), with 4 bytes per link for where it goes.
    /// A sorted copy held beside the gathered links was the ledger fold's
    /// peak (120 MB on bench snapshot 9 with 1 worker), since a snapshot's
    /// sources arrive in the order of their URLs, not of their ids.
    fn sort_runs(&mut self) {
        let runs = self.srcs.len();
        let len = self.dsts.len();
        let ends = &self.ends;
        let start = |r: usize| if r == 0 { 0 } else { ends[r - 1] };
        // Stable: a source's runs stay in the order they came.
        let mut order: Vec<u32> = (0..runs as u32).collect();
        order.sort_by_key(|&r| self.srcs[r as usize]);
        // Where each run goes.
        let mut to = vec![0u32; runs];
        let mut next = 0u32;
        for &r in &order {
            let r = r as usize;
            to[r] = next;
            next += ends[r] - start(r);
        }
        // Where each link goes.
        let mut dest: Vec<u32> = Vec::with_capacity(len);
        for (r, &to) in to.iter().enumerate() {
            dest.extend(to..to + (ends[r] - start(r)));
        }
        drop(to);
        permute(
            &mut dest,
            &mut self.dsts,
            &mut self.dst_hosts,
            PERMUTE_BUCKET,
        );
        drop(dest);
        let mut srcs = Vec::with_capacity(runs);
        let mut src_hosts = Vec::with_capacity(runs);
        let mut run_ends = Vec::with_capacity(runs);
        let mut end = 0u32;
        for &r in &order {
            let r = r as usize;
            end += ends[r] - start(r);
            if srcs.last() == Some(&self.srcs[r]) {
                *run_ends.last_mut().expect("a run is open") = end;
            } else {
                srcs.push(self.srcs[r]);
                src_hosts.push(self.src_hosts[r]);
                run_ends.push(end);
            }
        }
        self.srcs = srcs;
        self.src_hosts = src_hosts;
        self.ends = run_ends;
    }

    /// The links of `self`, and those of `old`'s sources not in `covered`
    /// (sorted): a partial snapshot keeps the outlinks of the pages it did
    /// not cover.
    pub fn with_kept(self, old: &LinkSet, covered: &[PageId]) -> LinkSet {
        let mut set = LinkSet::default();
        let mut push = |o: Outlinks<'_>| set.append(o.src, o.src_host, o.dsts, o.dst_hosts);
        let mut kept = old
            .sources()
            .filter(|o| covered.binary_search(&o.src).is_err())
            .peekable();
        for o in self.sources() {
            while let Some(k) = kept.next_if(|k| k.src < o.src) {
                push(k);
            }
            push(o);
        }
        kept.for_each(&mut push);
        set
    }

    /// Appends links of `src`: to its run if it is the last source, else as
    /// a new one (the set is sorted once the sources come in order, each
    /// once, with sorted links).
    fn append(&mut self, src: PageId, src_host: u32, dsts: &[PageId], dst_hosts: &[u32]) {
        if self.srcs.last() != Some(&src) {
            self.srcs.push(src);
            self.src_hosts.push(src_host);
            self.ends.push(0);
        }
        self.dsts.extend_from_slice(dsts);
        self.dst_hosts.extend_from_slice(dst_hosts);
        *self.ends.last_mut().expect("a run is open") = self.dsts.len() as u32;
    }

    /// The state's blocks of the set's links ([`LinkBlock`]): consecutive
    /// sources, [`LINK_BLOCK`] links or a little more a block.
    pub fn blocks<'a>(&'a self, hosts: &'a HostIndex) -> impl Iterator<Item = LinkBlock> + 'a {
        // A host's place in the block being made, by its index in `hosts`
        // (`u32::MAX`: none yet): an array access a link, not a hash probe.
        let mut local: Vec<u32> = vec![u32::MAX; hosts.ids.len()];
        let mut next = 0;
        std::iter::from_fn(move || {
            if next == self.srcs.len() {
                return None;
            }
            let first = next;
            let start = if first == 0 { 0 } else { self.ends[first - 1] };
            next += self.ends[first..].partition_point(|&e| e - start < LINK_BLOCK);
            next = (next + 1).min(self.srcs.len());
            // The block's hosts, by their indices in `hosts`.
            let mut named: Vec<u32> = Vec::new();
            let mut place = |h: u32| {
                let l = &mut local[h as usize];
                if *l == u32::MAX {
                    *l = named.len() as u32;
                    named.push(h);
                }
                *l
            };
            let end = self.ends[next - 1];
            let run = start as usize..end as usize;
            let src_hosts = self.src_hosts[first..next]
                .iter()
                .map(|&h| place(h))
                .collect();
            let dst_hosts = self.dst_hosts[run.clone()]
                .iter()
                .map(|&h| place(h))
                .collect();
            named.iter().for_each(|&h| local[h as usize] = u32::MAX);
            Some(LinkBlock {
                hosts: named.iter().map(|&h| hosts.id(h)).collect(),
                srcs: self.srcs[first..next].to_vec(),
                src_hosts,
                ends: self.ends[first..next].iter().map(|&e| e - start).collect(),
                dsts: self.dsts[run].to_vec(),
                dst_hosts,
            })
        })
    }

    /// The bytes the set holds.
    pub fn heap_bytes(&self) -> usize {
        (self.srcs.capacity() + self.dsts.capacity()) * std::mem::size_of::<PageId>()
            + (self.src_hosts.capacity() + self.ends.capacity() + self.dst_hosts.capacity()) * 4
    }

    /// The number of sources.
    pub fn sources_len(&self) -> usize {
        self.srcs.len()
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

    /// Source number `i`, with its links.
    pub fn source(&self, i: usize) -> Outlinks<'_> {
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

/// A snapshot's links as they arrive, gathered straight into a set's layout
/// and then sorted into a [`LinkSet`] where they lie.
///
/// Gathered as 24-byte [`Link`]s and then copied into the set, a snapshot's
/// links cost 36 bytes each while the ledger folded them (240 MB gathered
/// and 150 MB of new set on bench snapshot 9 with 1 worker). Here a link
/// costs its 12 bytes and a run of links from one source 16, and the set is
/// made in place: link tables list a page's outlinks together, so the runs
/// arrive as the set's sources, and runs out of order are sorted where they
/// lie (see `LinkSet::sort_runs`).
#[derive(Default)]
pub struct LinkGather {
    set: LinkSet,
}

impl LinkGather {
    /// Room for about `links` links from `sources` sources, so that the
    /// largest vectors need not overshoot by doubling.
    pub fn with_capacity(links: usize, sources: usize) -> LinkGather {
        LinkGather {
            set: LinkSet::with_capacity(room_for(links), room_for(sources)),
        }
    }

    pub fn len(&self) -> usize {
        self.set.dsts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.set.dsts.is_empty()
    }

    /// Appends the links of a checked [`LinkBlock`] (see
    /// [`LinkBlock::check`]), its hosts interned in `hosts`.
    pub fn append_block(&mut self, hosts: &mut HostIndex, block: &LinkBlock) {
        let local: Vec<u32> = block.hosts.iter().map(|&h| hosts.intern(h)).collect();
        let set = &mut self.set;
        let base = u32::try_from(set.dsts.len()).expect("fewer than 2^32 links per worker");
        set.srcs.extend_from_slice(&block.srcs);
        set.src_hosts
            .extend(block.src_hosts.iter().map(|&h| local[h as usize]));
        set.ends.extend(block.ends.iter().map(|&e| base + e));
        set.dsts.extend_from_slice(&block.dsts);
        set.dst_hosts
            .extend(block.dst_hosts.iter().map(|&h| local[h as usize]));
    }

    /// Room for `links` more links from `sources` more sources, exactly,
    /// its memory mapped now (see [`crate::memory::prefault_spare`]): a
    /// restore fills it at once.
    pub fn reserve(&mut self, links: usize, sources: usize) {
        fn room<T>(v: &mut Vec<T>, n: usize) {
            v.reserve_exact(n);
            crate::memory::prefault_spare(v, n);
        }
        let set = &mut self.set;
        room(&mut set.dsts, links);
        room(&mut set.dst_hosts, links);
        room(&mut set.srcs, sources);
        room(&mut set.src_hosts, sources);
        room(&mut set.ends, sources);
    }

    pub fn push(&mut self, l: Link) {
        self.set.append(l.src, l.src_host, &[l.dst], &[l.dst_host]);
    }

    /// The set of the gathered links; adds the number of duplicates dropped
    /// to `duplicates`.
    pub fn into_set(self, duplicates: &mut u64) -> LinkSet {
        let mut set = self.set;
        assert!(
            u32::try_from(set.dsts.len()).is_ok(),
            "fewer than 2^32 links per worker"
        );
        if !set.srcs.windows(2).all(|w| w[0] < w[1]) {
            set.sort_runs();
        }
        // Sort and deduplicate each source's links, moving them down over
        // the duplicates dropped before them.
        let mut scratch: Vec<(PageId, u32)> = Vec::new();
        let (mut start, mut write) = (0usize, 0usize);
        for i in 0..set.srcs.len() {
            let end = set.ends[i] as usize;
            let run = start..end;
            let sorted = set.dsts[run.clone()].windows(2).all(|w| w[0] < w[1]);
            if sorted {
                set.dsts.copy_within(run.clone(), write);
                set.dst_hosts.copy_within(run, write);
                write += end - start;
            } else if end - start <= SMALL_RUN {
                set.dsts.copy_within(run.clone(), write);
                set.dst_hosts.copy_within(run, write);
                let kept = sort_dedup_small(
                    &mut set.dsts[write..write + end - start],
                    &mut set.dst_hosts[write..write + end - start],
                );
                *duplicates += (end - start - kept) as u64;
                write += kept;
            } else {
                scratch.clear();
                scratch.extend(
                    set.dsts[run.clone()]
                        .iter()
                        .copied()
                        .zip(set.dst_hosts[run].iter().copied()),
                );
                scratch.sort_unstable();
                scratch.dedup_by_key(|l| l.0);
                *duplicates += (end - start - scratch.len()) as u64;
                for &(dst, host) in &scratch {
                    set.dsts[write] = dst;
                    set.dst_hosts[write] = host;
                    write += 1;
                }
            }
            set.ends[i] = write as u32;
            start = end;
        }
        set.dsts.truncate(write);
        set.dst_hosts.truncate(write);
        set
    }
}

/// Runs of at most this many links are sorted where they lie
/// ([`sort_dedup_small`]); longer ones through a scratch vector of pairs.
const SMALL_RUN: usize = 32;

/// Sorts `dsts` (with `hosts` alongside) by insertion, drops the repeats of
/// a destination, and returns how many links are left at the front. A
/// source's links arrive in the order of their URLs, so nearly every run
/// needs sorting by id, and most runs are short (ten links on average on
/// bench snapshot 9): zipping each into a scratch vector of pairs and back
/// cost more than the sort.
fn sort_dedup_small(dsts: &mut [PageId], hosts: &mut [u32]) -> usize {
    for i in 1..dsts.len() {
        let (d, h) = (dsts[i], hosts[i]);
        let mut j = i;
        while j > 0 && dsts[j - 1] > d {
            dsts[j] = dsts[j - 1];
            hosts[j] = hosts[j - 1];
            j -= 1;
        }
        dsts[j] = d;
        hosts[j] = h;
    }
    let mut kept = dsts.len().min(1);
    for i in 1..dsts.len() {
        if dsts[i] != dsts[kept - 1] {
            dsts[kept] = dsts[i];
            hosts[kept] = hosts[i];
            kept += 1;
        }
    }
    kept
}

/// Destinations per bucket of [`permute`]'s first pass (a power of two):
/// 128K links' destinations, ids and hosts are 2 MiB, which the second
/// pass scatters within the outer cache. Fewer, larger buckets leave the
/// first pass fewer places to write to: a standalone run of both passes on
/// 5M links of bench-like runs (one core of the AMD EPYC) took 53 ms with
/// buckets of 32K links, 45 ms of 64K, 38 ms of 128K and 256K, 44-48 ms
/// of 512K (all with the first pass' prefetch).
const PERMUTE_BUCKET: u32 = 17;

/// How far ahead of a bucket's head [`permute`]'s first pass asks for the
/// bucket's next positions.
const PERMUTE_AHEAD: usize = 16;

/// Moves `a[i]` and `b[i]` to position `dest[i]`, for every `i` (`dest` is a
/// permutation of `0..len`), in place; `dest` ends as `0..len`.
///
/// Walking the permutation's cycles directly costs a cache miss per link:
/// each move lands anywhere in the arrays (90% of the gathered links' sort,
/// 1.4 s a worker on bench snapshot 9). So the links first go to their
/// buckets of `2^shift` destinations, as an American flag sort does: every
/// bucket fills from its start, so the moves write to a few hundred places
/// that advance through the arrays. Then each bucket's items go to their
/// places from a copy of the bucket's ids and hosts (384 KiB),
/// which fits in the cache.
fn permute<A: Copy, B: Copy>(dest: &mut [u32], a: &mut [A], b: &mut [B], shift: u32) {
    let len = dest.len();
    debug_assert!(a.len() == len && b.len() == len);
    let swap = |dest: &mut [u32], a: &mut [A], b: &mut [B], i: usize, j: usize| {
        dest.swap(i, j);
        a.swap(i, j);
        b.swap(i, j);
    };
    let buckets = len.div_ceil(1 << shift);
    if buckets > 1 {
        // A bucket's head: its first position that does not yet hold one
        // of its own links. Every bucket has exactly as many links as
        // positions, since `dest` is a permutation.
        let mut head: Vec<usize> = (0..buckets).map(|k| k << shift).collect();
        for k in 0..buckets {
            let end = ((k + 1) << shift).min(len);
            while head[k] < end {
                let i = head[k];
                let mut home = (dest[i] >> shift) as usize;
                while home != k {
                    let j = head[home];
                    head[home] += 1;
                    // Each bucket is written from its head on, so its next
                    // positions are asked for ahead: the moves land in any
                    // of the buckets, and each head's line had left the
                    // cache by the next move there (the same run as above:
                    // 92 ms without the prefetch, 53 ms with it).
                    let ahead = (j + PERMUTE_AHEAD).min(len - 1);
                    prefetch(&dest[ahead]);
                    prefetch(&a[ahead]);
                    prefetch(&b[ahead]);
                    swap(dest, a, b, i, j);
                    home = (dest[i] >> shift) as usize;
                }
                head[k] += 1;
            }
        }
    }
    // Each bucket now holds its own items: they go to their places through
    // a bucket-sized scratch copy. Walking the cycles in place instead chained
    // each move's load on the one before (half the permutation's time on
    // bench snapshot 9); the scatter's stores do not wait on one another.
    let (mut scratch_a, mut scratch_b) = (Vec::new(), Vec::new());
    for start in (0..len).step_by(1 << shift) {
        let end = (start + (1 << shift)).min(len);
        scratch_a.clear();
        scratch_a.extend_from_slice(&a[start..end]);
        scratch_b.clear();
        scratch_b.extend_from_slice(&b[start..end]);
        for (i, d) in dest[start..end].iter_mut().enumerate() {
            let to = *d as usize;
            a[to] = scratch_a[i];
            b[to] = scratch_b[i];
            *d = (start + i) as u32;
        }
    }
}

/// Compares the set `old` with the set `new`: calls `f(link, -1)` for each
/// link only in `old` and `f(link, 1)` for each only in `new`, in order, and
/// returns which of `new`'s links `old` lacks, by their positions in `new`.
///
/// A source by source: most sources keep their links from one snapshot to
/// the next, and one comparison of their runs passes them.
pub fn diff(old: &LinkSet, new: &LinkSet, mut f: impl FnMut(Link, i64)) -> Bits {
    let mut fresh = Bits::with_len(new.len());
    let mut olds = old.sources().peekable();
    for n in new.sources() {
        while let Some(o) = olds.next_if(|o| o.src < n.src) {
            o.links().for_each(|l| f(l, -1));
        }
        match olds.next_if(|o| o.src == n.src) {
            Some(o) if o.dsts == n.dsts && o.dst_hosts == n.dst_hosts => {}
            Some(o) => {
                let mut gone = o.links().peekable();
                for (j, l) in n.links().enumerate() {
                    while let Some(a) = gone.next_if(|a| *a < l) {
                        f(a, -1);
                    }
                    if gone.next_if_eq(&l).is_none() {
                        fresh.insert(n.start + j);
                        f(l, 1);
                    }
                }
                gone.for_each(|a| f(a, -1));
            }
            None => {
                for (j, l) in n.links().enumerate() {
                    fresh.insert(n.start + j);
                    f(l, 1);
                }
            }
        }
    }
    olds.for_each(|o| o.links().for_each(|l| f(l, -1)));
    fresh
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(src: u64, dst: u64, src_host: u64, dst_host: u64) -> LinkKey {
        LinkKey::of(src, src_host, dst, dst_host)
    }

    /// A set's state blocks hold its links in order, each block under
    /// `LINK_BLOCK` links but for its last source, and appended to a gather
    /// of another worker (hosts interned in another order) give the set back.
    #[test]
    fn blocks_hold_the_set_and_restore_it() {
        let mut hosts = HostIndex::default();
        let mut want: Vec<LinkKey> = Vec::new();
        // Sources of 1 to 40 links (one of 3 * LINK_BLOCK), over 300 hosts.
        for src in 0..2000u64 {
            let n = if src == 700 {
                3 * LINK_BLOCK as u64
            } else {
                1 + src * 7 % 40
            };
            for d in 0..n {
                let dst = (src * 31 + d * 17) % 100_000;
                want.push(key(
                    src * 3,
                    dst,
                    src % 300,
                    if d % 3 == 0 { dst % 300 } else { src % 300 },
                ));
            }
        }
        want.sort_unstable();
        want.dedup_by_key(|k| (k.src, k.dst));
        let mut links: Vec<Link> = want.iter().map(|&k| hosts.link(k)).collect();
        links.sort_unstable();
        let set = LinkSet::from_sorted(&links);
        let blocks: Vec<LinkBlock> = set.blocks(&hosts).collect();
        assert!(blocks.len() > 3, "{}", blocks.len());
        for b in &blocks {
            b.check().unwrap();
            let ends = &b.ends;
            let before_last = if ends.len() > 1 {
                ends[ends.len() - 2]
            } else {
                0
            };
            assert!(
                before_last < LINK_BLOCK,
                "only the last source reaches the limit"
            );
        }
        let from_blocks: Vec<LinkKey> = blocks.iter().flat_map(|b| b.links()).collect();
        assert_eq!(from_blocks, want);

        let mut other = HostIndex::default();
        other.intern(HostId(12345));
        let mut gather = LinkGather::default();
        blocks
            .iter()
            .for_each(|b| gather.append_block(&mut other, b));
        let mut duplicates = 0;
        let back = gather.into_set(&mut duplicates);
        assert_eq!(duplicates, 0);
        let back: Vec<LinkKey> = back.iter().map(|l| other.key(l)).collect();
        assert_eq!(back, want);
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
        let new = LinkSet::from_sorted(&[link(1, 3), link(1, 4), link(6, 7), link(8, 9)]);
        let mut seen = Vec::new();
        let fresh = diff(&old, &new, |l, d| seen.push((l.src.0, l.dst.0, d)));
        assert_eq!(seen, [(1, 2, -1), (1, 4, 1), (4, 5, -1), (8, 9, 1)]);
        let marked: Vec<bool> = (0..new.len()).map(|j| fresh.contains(j)).collect();
        assert_eq!(marked, [false, true, false, true]);
        let gone = diff(&old, &LinkSet::default(), |_, d| assert_eq!(d, -1));
        assert_eq!(gone, Bits::default(), "no set, no links new");
    }

    /// The diff of random sets, many of whose sources keep their links, is
    /// the merge of their links one by one.
    #[test]
    fn diff_is_the_merge_of_the_links() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_pcg::Pcg64::seed_from_u64(11);
        for _ in 0..300 {
            let mut hosts = HostIndex::default();
            let random_set = |rng: &mut rand_pcg::Pcg64, base: &[LinkKey]| {
                let mut keys: Vec<LinkKey> = Vec::new();
                for src in 0..rng.random_range(0..30u64) {
                    let kept: Vec<LinkKey> =
                        base.iter().filter(|k| k.src.0 == src).copied().collect();
                    if !kept.is_empty() && rng.random_bool(0.5) {
                        keys.extend(kept);
                        continue;
                    }
                    for _ in 0..rng.random_range(0..6) {
                        let dst = rng.random_range(0..20u64);
                        keys.push(key(src, dst, src % 4, dst % 4));
                    }
                }
                keys.sort_unstable();
                keys.dedup_by_key(|k| (k.src, k.dst));
                keys
            };
            let old_keys = random_set(&mut rng, &[]);
            let new_keys = random_set(&mut rng, &old_keys);
            let old_links: Vec<Link> = old_keys.iter().map(|&k| hosts.link(k)).collect();
            let new_links: Vec<Link> = new_keys.iter().map(|&k| hosts.link(k)).collect();
            let (old, new) = (
                LinkSet::from_sorted(&old_links),
                LinkSet::from_sorted(&new_links),
            );
            let mut got = Vec::new();
            let fresh = diff(&old, &new, |l, d| got.push((l, d)));
            let mut want = Vec::new();
            let mut want_fresh = Vec::new();
            let mut a = old_links.iter().peekable();
            for (j, l) in new_links.iter().enumerate() {
                while let Some(x) = a.next_if(|x| *x < l) {
                    want.push((*x, -1));
                }
                if a.next_if_eq(&l).is_none() {
                    want.push((*l, 1));
                    want_fresh.push(j);
                }
            }
            want.extend(a.map(|x| (*x, -1)));
            assert_eq!(got, want);
            let marked: Vec<usize> = (0..new.len()).filter(|&j| fresh.contains(j)).collect();
            assert_eq!(marked, want_fresh);
        }
    }

    /// Links in a random order with repeats, as several runs per source:
    /// the gathered set is the sorted, deduplicated set of them.
    #[test]
    fn a_gather_sorts_and_deduplicates_where_the_links_lie() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_pcg::Pcg64::seed_from_u64(7);
        for case in 0..200 {
            let mut hosts = HostIndex::default();
            // Small and larger sets (the permutation itself: the next test).
            let n = rng.random_range(0..if case % 4 < 2 { 60 } else { 400 });
            let mut arrivals: Vec<LinkKey> = Vec::new();
            // In runs by source, as link tables list them; some cases with
            // a source's links split over runs out of order.
            while arrivals.len() < n {
                let src = rng.random_range(0..12u64);
                for _ in 0..rng.random_range(1..6) {
                    let dst = rng.random_range(0..12u64);
                    arrivals.push(key(src, dst, src / 4, dst / 4));
                }
                if case % 2 == 0 {
                    // Sorted, unique sources: the in-place path.
                    arrivals.sort_by_key(|k| k.src);
                }
            }
            let mut gather = LinkGather::with_capacity(4, 2);
            for &k in &arrivals {
                gather.push(hosts.link(k));
            }
            let mut duplicates = 0;
            let set = gather.into_set(&mut duplicates);
            let want: std::collections::BTreeSet<LinkKey> = arrivals.iter().copied().collect();
            let got: Vec<LinkKey> = set.iter().map(|l| hosts.key(l)).collect();
            assert_eq!(got, want.iter().copied().collect::<Vec<_>>(), "case {case}");
            assert_eq!(
                duplicates as usize,
                arrivals.len() - want.len(),
                "case {case}"
            );
            let srcs: std::collections::BTreeSet<PageId> = want.iter().map(|k| k.src).collect();
            assert_eq!(set.sources_len(), srcs.len());
        }
    }

    /// Random permutations, with buckets of 1 to 64 positions so that the
    /// first pass has many buckets, some of them short at the end.
    #[test]
    fn permute_puts_each_item_at_its_destination() {
        use rand::seq::SliceRandom;
        use rand::{Rng, SeedableRng};
        let mut rng = rand_pcg::Pcg64::seed_from_u64(11);
        for case in 0..300 {
            let len = rng.random_range(0..500usize);
            let shift = rng.random_range(0..7u32);
            let mut dest: Vec<u32> = (0..len as u32).collect();
            dest.shuffle(&mut rng);
            let mut a: Vec<u64> = (0..len as u64).map(|i| i * 1000).collect();
            let mut b: Vec<u32> = (0..len as u32).collect();
            let want_at: Vec<u32> = {
                // want_at[d] = the item that goes to d
                let mut w = vec![0u32; len];
                for (i, &d) in dest.iter().enumerate() {
                    w[d as usize] = i as u32;
                }
                w
            };
            permute(&mut dest, &mut a, &mut b, shift);
            assert!(
                dest.iter().enumerate().all(|(i, &d)| d as usize == i),
                "case {case}"
            );
            assert_eq!(b, want_at, "case {case}");
            let want_a: Vec<u64> = want_at.iter().map(|&i| i as u64 * 1000).collect();
            assert_eq!(a, want_a, "case {case}");
        }
    }

    #[test]
    fn a_partial_set_keeps_the_uncovered_sources_of_the_old() {
        let mut hosts = HostIndex::default();
        let mut link = |src, dst| hosts.link(key(src, dst, 1, 1));
        let old = LinkSet::from_sorted(&[link(1, 2), link(3, 4), link(5, 6), link(7, 8)]);
        let new = LinkSet::from_sorted(&[link(3, 9), link(6, 1)]);
        // 3 and 6 are link sources now, 5 was fetched without outlinks.
        let covered = [PageId(3), PageId(5), PageId(6)];
        let set = new.with_kept(&old, &covered);
        let got: Vec<(u64, u64)> = set.iter().map(|l| (l.src.0, l.dst.0)).collect();
        assert_eq!(got, [(1, 2), (3, 9), (6, 1), (7, 8)]);
        assert_eq!(set.sources_len(), 4);
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

    /// Links interned through the table and the last host name their hosts
    /// as a plain map would: random links, mostly on their source's host,
    /// in runs by source, over enough hosts that the table grows.
    #[test]
    fn links_intern_their_hosts_as_a_map_would() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(11);
        let mut hosts = HostIndex::default();
        let mut reference: std::collections::HashMap<HostId, u32> = Default::default();
        let index = |h: HostId, reference: &mut std::collections::HashMap<HostId, u32>| {
            let next = reference.len() as u32;
            *reference.entry(h).or_insert(next)
        };
        for src in 0..2_000u64 {
            let src_host = HostId(rng.random_range(0..3000));
            for dst in 0..rng.random_range(0..12u64) {
                let dst_host = if rng.random_range(0..4) == 0 {
                    HostId(rng.random_range(0..3000))
                } else {
                    src_host
                };
                let l = hosts.link(LinkKey {
                    src: PageId(src),
                    dst: PageId(dst),
                    src_host,
                    dst_host,
                });
                // The reference interns in the same order: source, then
                // destination.
                assert_eq!(l.src_host, index(src_host, &mut reference));
                assert_eq!(l.dst_host, index(dst_host, &mut reference));
                assert_eq!(hosts.key(l).dst_host, dst_host);
            }
        }
    }
}
