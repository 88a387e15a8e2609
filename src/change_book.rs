//! The change analysis' histories, kept beside the ledger (docs/change.md).
//!
//! Per page the book keeps its observation chain as packed 8-byte entries (an
//! interval, changed or not, or a gap where a digest was missing), so that every
//! estimate, lifespan and change interval derives from the page's own record and a
//! new snapshot touches only the pages it fetched or found gone. Per host and per
//! directory it keeps pooled interval counts, to plan pages with too few
//! observations of their own.
//!
//! The histograms and sums over all pages are differential counts: when a page is
//! touched, its old contributions are subtracted and its new ones added, so their
//! cost is the snapshot's, not the collection's.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::algo::change::{
    backoff_step, change_bucket, design_freshness, lifespan_bucket, Censoring, DomainClass,
    Intervals, Mle, DAY,
};
use crate::chain_store::{ChainId, ChainStore};
use crate::grow::{push_by_eighths, room_for};
use crate::id_map::IdMap;
use crate::ingest::PageObs;
use crate::job::ChangeParams;
use crate::ledger::PageState;
use crate::model::{HostId, PageId, Seq};
use crate::output::change::{GroupChangeRow, PageChangeRow, PlanInput};
use crate::url_arena::UrlArena;

type FastMap<K, V> = HashMap<K, V, foldhash::fast::FixedState>;

/// Fixed-point scale of summed freshness (1e-9 per page).
pub const FRESHNESS_SCALE: f64 = 1e9;

const UNCHANGED: u64 = 0;
const CHANGED: u64 = 1;
const GAP: u64 = 2;

/// One page's change history as the state files keep it: its observation
/// chain, and what the book keeps beside it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistoryRecord {
    /// `(µs << 2) | kind`: the page's observation chain in order.
    entries: Vec<u64>,
    base: bool,
    left: bool,
    rate_bits: u64,
    intervals: u32,
    backoff_bits: u64,
}

/// One page's change history; its observation chain is in the book's
/// [`ChainStore`], at `chain`.
#[derive(Clone, Debug, PartialEq)]
struct PageHistory {
    chain: ChainId,
    /// Fetched at the first snapshot with a digest: in the unchanged curve's base.
    base: bool,
    /// A base page that has changed or gone.
    left: bool,
    /// The page's own planning rate (bits; NaN without intervals), cached so that
    /// restoring and retracting its contributions need no re-estimation.
    rate_bits: u64,
    /// Intervals so far, and the back-off rule's interval after them (bits; NaN
    /// before the first), kept so that the plan costs O(1) per page.
    intervals: u32,
    backoff_bits: u64,
    /// The changed intervals so far and the sum of all intervals in seconds
    /// (added in order, as the estimators add them): what a page's counted
    /// contributions need, kept so that retracting and re-adding them costs
    /// the same at a page's hundredth observation as at its second. Derived
    /// from the chain on restore, so not stored.
    changes: u32,
    total_s: f64,
    /// Touched at the snapshot being folded (see [`ChangeBook::touch`]): in
    /// the struct's padding, where a set of touched pages was a hash table
    /// of 50-80 MB while a snapshot folds.
    touched: bool,
}

impl PageHistory {
    /// A history with no observations, whose chain is `chain`.
    fn new(chain: ChainId) -> PageHistory {
        PageHistory {
            chain,
            base: false,
            left: false,
            rate_bits: f64::NAN.to_bits(),
            intervals: 0,
            backoff_bits: f64::NAN.to_bits(),
            changes: 0,
            total_s: 0.0,
            touched: false,
        }
    }

    fn rate(&self) -> Option<f64> {
        let r = f64::from_bits(self.rate_bits);
        (!r.is_nan()).then_some(r)
    }

    /// The history as the state files keep it, with its chain.
    fn record(&self, chain: Chain) -> HistoryRecord {
        HistoryRecord {
            entries: chain.0.to_vec(),
            base: self.base,
            left: self.left,
            rate_bits: self.rate_bits,
            intervals: self.intervals,
            backoff_bits: self.backoff_bits,
        }
    }

    /// The history of a restored record, whose chain is `chain`.
    fn restored(r: &HistoryRecord, chain: ChainId) -> PageHistory {
        let (changes, total_s) = Chain(&r.entries).summary();
        PageHistory {
            base: r.base,
            left: r.left,
            rate_bits: r.rate_bits,
            intervals: r.intervals,
            backoff_bits: r.backoff_bits,
            changes,
            total_s,
            ..PageHistory::new(chain)
        }
    }
}

/// A page's observation chain: `(µs << 2) | kind` entries in order.
#[derive(Clone, Copy)]
struct Chain<'a>(&'a [u64]);

impl<'a> Chain<'a> {
    /// The intervals as `(τ seconds, changed)`.
    fn intervals(self) -> impl Iterator<Item = (f64, bool)> + 'a {
        self.intervals_us().map(|(us, c)| (us as f64 / 1e6, c))
    }

    /// The intervals as `(τ µs, changed)`.
    fn intervals_us(self) -> impl Iterator<Item = (u64, bool)> + 'a {
        self.0.iter().filter_map(|e| match e & 3 {
            GAP => None,
            kind => Some((e >> 2, kind == CHANGED)),
        })
    }

    /// Fills `s` with the intervals of a chain with `changes` changed ones:
    /// exact up to [`EXACT_CHANGES`] of them, binned beyond.
    fn fill(self, changes: u32, s: &mut Intervals) {
        if changes <= EXACT_CHANGES {
            s.refill(self.intervals());
            return;
        }
        let mut bins = Bins::default();
        let (mut n, mut unchanged_us, mut total_us) = (0u64, 0u128, 0u128);
        for (us, changed) in self.intervals_us() {
            n += 1;
            total_us += u128::from(us);
            if changed {
                bins.add(us);
            } else {
                unchanged_us += u128::from(us);
            }
        }
        s.refill(std::iter::empty());
        for (tau, c) in bins.means() {
            s.add(tau, true, c);
        }
        s.n = n;
        s.unchanged = unchanged_us as f64 / 1e6;
        s.total = total_us as f64 / 1e6;
    }

    /// The changed intervals and the sum of all intervals in seconds.
    fn summary(self) -> (u32, f64) {
        let (mut changes, mut total) = (0u32, 0.0f64);
        for (tau, changed) in self.intervals() {
            changes += u32::from(changed);
            total += tau;
        }
        (changes, total)
    }

    /// The times (µs after the first fetch) at which changes were observed.
    fn change_times(self) -> Vec<u64> {
        let mut at = 0u64;
        let mut times = Vec::new();
        for e in self.0 {
            at += e >> 2;
            if e & 3 == CHANGED {
                times.push(at);
            }
        }
        times
    }
}

/// A differentially counted quantity over all pages; the update's diff is the count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum ChangeKey {
    /// Pages with intervals, by class and average-change-interval bucket.
    ChangeBucket(DomainClass, u8),
    /// Pages, by class, lifespan method (1, 2) and bucket.
    Lifespan(DomainClass, u8, u8),
    /// Base pages of the unchanged curve, and those that have not left.
    UnchangedBase(DomainClass),
    UnchangedStill(DomainClass),
    /// Per Poisson band: change intervals, their total seconds, and per bucket.
    PoissonCount(u8),
    PoissonSeconds(u8),
    PoissonBucket(u8, u32),
    /// Pages with intervals, and their design freshness in fixed point.
    FreshPages,
    FreshSum(u8),
}

/// The level of a pooled group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Level {
    Host,
    Directory,
}

impl Level {
    pub fn name(self) -> &'static str {
        match self {
            Level::Host => "host",
            Level::Directory => "directory",
        }
    }
}

type GroupKey = (HostId, Level, u64);

/// Changed intervals whose lengths lie within 1% of each other share a bin
/// (`⌊ln τ / ln 1.01⌋`, `τ` in seconds) and enter the estimators as their
/// count at the bin's mean length. A crawl's intervals cluster around its
/// revisit cadence, so the bins a group or a long page history occupies stay
/// few however many snapshots accumulate, and so does an estimate's cost. The
/// likelihood changes by second order in the spread within a bin (below 1e-4
/// relative). Counts and sums are integers (µs), so the bins do not depend on
/// the order in which intervals were added: a run split anywhere equals one run.
pub const BIN_BASE: f64 = 1.01;

/// A page's own estimates use its exact intervals up to this many changed
/// ones, and the bins beyond (docs/change.md).
pub const EXACT_CHANGES: u32 = 16;

/// The bin of a changed interval of `tau_us` µs (positive).
pub fn interval_bin(tau_us: u64) -> i32 {
    ((tau_us as f64 / 1e6).ln() / BIN_BASE.ln()).floor() as i32
}

/// Changed intervals by bin: `(bin, count, summed µs)`, in bin order. A
/// sorted vector rather than a `BTreeMap`, whose nodes have room for eleven
/// bins however few a group has: the groups' bins were 42 MB on bench
/// snapshot 9 with 1 worker.
#[derive(Clone, Debug, Default)]
struct Bins(Vec<(i32, u64, u128)>);

impl Bins {
    fn add(&mut self, tau_us: u64) {
        let bin = interval_bin(tau_us);
        let i = match self.0.binary_search_by_key(&bin, |b| b.0) {
            Ok(i) => i,
            Err(i) => {
                self.0.insert(i, (bin, 0, 0));
                i
            }
        };
        self.0[i].1 += 1;
        self.0[i].2 += u128::from(tau_us);
    }

    /// Each bin as `(mean τ in seconds, count)`, in bin order.
    fn means(&self) -> impl Iterator<Item = (f64, u64)> + '_ {
        self.0
            .iter()
            .map(|&(_, c, sum)| (sum as f64 / c as f64 / 1e6, c))
    }
}

/// A host's or directory's pooled intervals.
#[derive(Clone, Debug, Default)]
struct Group {
    name: String,
    pages: u64,
    observations: u64,
    changes: u64,
    intervals: u64,
    changed: Bins,
    unchanged_us: u128,
    /// The pooled planning rate, cached when the group was last touched.
    rate: Option<f64>,
}

impl Group {
    fn add_interval(&mut self, tau_us: u64, changed: bool) {
        self.intervals += 1;
        if changed {
            self.changes += 1;
            self.changed.add(tau_us);
        } else {
            self.unchanged_us += u128::from(tau_us);
        }
    }

    fn estimate(&self) -> Mle {
        let mut s = Intervals::default();
        for (tau, c) in self.changed.means() {
            s.add(tau, true, c);
        }
        // The unchanged intervals enter the estimators only through their sum.
        s.n += self.intervals - self.changes;
        s.unchanged = self.unchanged_us as f64 / 1e6;
        s.total += s.unchanged;
        s.mle()
    }
}

/// The directory group of a URL: up to the first `/` of the path when another `/`
/// follows, else the root.
pub fn directory(url: &str, host_end: usize) -> &str {
    let rest = &url[host_end..];
    let Some(path_start) = rest.find('/') else {
        return url;
    };
    let path = &rest[path_start + 1..];
    let end = match path.find('/') {
        Some(i) => host_end + path_start + 1 + i + 1,
        None => host_end + path_start + 1,
    };
    &url[..end]
}

/// What the book needs to know of the run.
#[derive(Clone, Debug)]
pub struct BookSettings {
    pub params: ChangeParams,
    /// The first snapshot of the output (lifespan censoring, the unchanged curve).
    pub first_seq: Seq,
}

/// A page touched in the current snapshot: its id, change count and summed
/// intervals (seconds) before it.
type Touched = (PageId, u32, f64);

/// Pages whose states and histories a restore or a snapshot's finish looks
/// up together (see `IdMap::find_each`): both go through pages in order of
/// id, so the page map and the histories are read at random.
const LOOKUP_BLOCK: usize = 64;

/// The change book of one worker's hosts.
pub struct ChangeBook {
    settings: BookSettings,
    class_rates: Vec<f64>,
    pages: IdMap<PageId, PageHistory>,
    /// The pages' observation chains (a history holds where its chain is).
    chains: ChainStore,
    groups: FastMap<GroupKey, Group>,
    /// Pages touched in the current snapshot, with their old contributions
    /// already retracted into `counts`, each with its change count and summed
    /// intervals before the snapshot: what its Poisson-check windows were
    /// counted from. A page with a history is in it once (its history's
    /// `touched`), one without may be twice, with equal entries.
    touched: Vec<Touched>,
    /// How many pages the last snapshot touched: the room `touched` starts
    /// with, so that a million pages do not grow it by doubling.
    touched_last: usize,
    touched_groups: FastMap<GroupKey, ()>,
    counts: FastMap<ChangeKey, i64>,
    scratch: Intervals,
}

/// A row the book makes for a snapshot, handed on as it is made: all of a
/// snapshot's at once, in vectors, were 550 MB on bench snapshot 9 with 1
/// worker, the peak of the run.
pub enum BookRow {
    Page(PageChangeRow),
    Group(GroupChangeRow),
    /// A page of the revisit plan's input.
    Plan(PlanInput),
}

impl ChangeBook {
    /// The bytes the book's per-page histories hold: the map and the chains.
    pub fn heap_bytes(&self) -> usize {
        self.pages.heap_bytes() + self.chains.heap_bytes()
    }

    pub fn new(settings: BookSettings) -> ChangeBook {
        ChangeBook {
            class_rates: settings.params.class_rates(),
            settings,
            pages: IdMap::new(),
            chains: ChainStore::default(),
            groups: FastMap::default(),
            touched: Vec::new(),
            touched_last: 0,
            touched_groups: FastMap::default(),
            counts: FastMap::default(),
            scratch: Intervals::default(),
        }
    }

    /// Restores a page's history (at the restore epoch), before [`Self::restored`].
    pub fn restore_page(&mut self, page: PageId, r: &HistoryRecord) {
        let h = PageHistory::restored(r, self.chains.push(&r.entries));
        self.pages.insert(page, h);
    }

    /// Rebuilds the groups from the restored pages and returns every page's
    /// contributions: the counts as of the restored snapshot.
    pub fn restored(
        &mut self,
        states: &IdMap<PageId, PageState>,
        urls: &UrlArena,
        host_names: &dyn Fn(HostId) -> String,
    ) -> Vec<(ChangeKey, i64)> {
        let mut ids: Vec<PageId> = self.pages.keys().copied().collect();
        ids.sort_unstable();
        // A block's entries looked up together, their URLs' bytes asked for
        // too (see `LOOKUP_BLOCK`).
        let (mut in_states, mut in_book) = (Vec::new(), Vec::new());
        for block in ids.chunks(LOOKUP_BLOCK) {
            in_states.clear();
            in_book.clear();
            states.find_each_ahead(
                block,
                |st| urls.prefetch(&st.url),
                |_, found| in_states.push(found.expect("a page with a history is known").0),
            );
            self.pages
                .find_each(block, |_, found| in_book.push(found.expect("listed").0));
            for (&s, &b) in in_states.iter().zip(&in_book) {
                let st = states.at(s).1;
                let chain = Chain(self.chains.get(self.pages.at(b).1.chain));
                let pairs: Vec<(u64, bool)> = chain.intervals_us().collect();
                let name = host_names(st.host);
                for key in Self::group_keys(st, urls) {
                    let g = self.group(key, st, urls, &name);
                    g.pages += 1;
                    g.observations += u64::from(st.observations);
                    for &(tau, c) in &pairs {
                        g.add_interval(tau, c);
                    }
                }
                let class = DomainClass::of_host(&name);
                let counts = &mut self.counts;
                let h = self.pages.at(b).1;
                let chain = Chain(self.chains.get(h.chain));
                Self::contributions(&self.settings, st, h, class, Some(chain), |k, c| {
                    *counts.entry(k).or_default() += c
                });
            }
        }
        for g in self.groups.values_mut() {
            g.rate = rate_of(&g.estimate(), g.intervals, &self.settings.params);
        }
        let mut out: Vec<_> = self.counts.drain().filter(|(_, c)| *c != 0).collect();
        out.sort_unstable();
        out
    }

    /// The page's host and directory groups.
    fn group_keys(st: &PageState, urls: &UrlArena) -> [GroupKey; 2] {
        let dir = directory(urls.get(&st.url), st.url.host_range().1 as usize);
        let dir_id = xxhash_rust::xxh3::xxh3_64(dir.as_bytes());
        [
            (st.host, Level::Host, 0),
            (st.host, Level::Directory, dir_id),
        ]
    }

    /// The group `key` of a page, created with its name when new.
    fn group(
        &mut self,
        key: GroupKey,
        st: &PageState,
        urls: &UrlArena,
        host_name: &str,
    ) -> &mut Group {
        self.groups.entry(key).or_insert_with(|| Group {
            name: match key.1 {
                Level::Host => host_name.to_string(),
                Level::Directory => {
                    directory(urls.get(&st.url), st.url.host_range().1 as usize).to_string()
                }
            },
            ..Group::default()
        })
    }

    /// Retracts a page's contributions before it changes at this snapshot (once
    /// per snapshot), given its state before the change.
    pub fn touch(&mut self, page: PageId, before: &PageState, class: DomainClass) {
        if self.touched.is_empty() {
            self.touched.reserve_exact(room_for(self.touched_last));
        }
        let mut summary = (page, 0, 0.0);
        if let Some(h) = self.pages.get_mut(&page) {
            if h.touched {
                return;
            }
            h.touched = true;
            let counts = &mut self.counts;
            // The retraction's Poisson windows are counted in `finish`
            // (`poisson_delta`).
            Self::contributions(&self.settings, before, h, class, None, |k, c| {
                *counts.entry(k).or_default() -= c
            });
            summary = (page, h.changes, h.total_s);
        }
        push_by_eighths(&mut self.touched, summary);
    }

    /// Records the fetch `obs` at snapshot `t`, given the page's state before
    /// it, whose URL is in `urls` (call [`Self::touch`] first).
    pub fn observe(
        &mut self,
        obs: &PageObs,
        before: &PageState,
        urls: &UrlArena,
        t: Seq,
        host_name: &str,
    ) {
        let (page, fetch_time, digest) = (obs.page, obs.fetch_time, obs.digest);
        let first_seq = self.settings.first_seq;
        let backoff_start = self.settings.params.backoff_start_days * DAY;
        // Touched already: a page gets its history when first observed, and
        // a second touch in the snapshot must find it touched.
        let chains = &mut self.chains;
        let h = self.pages.get_or_insert_with(page, || PageHistory {
            touched: true,
            ..PageHistory::new(chains.push(&[]))
        });
        let mut interval = None;
        if before.observations == 0 {
            h.base = t == first_seq && digest != 0;
        } else {
            let last = before.last_fetch_time().unwrap_or(fetch_time);
            let tau = fetch_time.saturating_sub(last).max(0) as u64;
            let kind = if before.last_digest == 0 || digest == 0 || tau == 0 {
                GAP
            } else if before.last_digest != digest {
                CHANGED
            } else {
                UNCHANGED
            };
            // Merged into the chain when the snapshot finishes.
            chains.append(h.chain, (tau << 2) | kind);
            if kind != GAP {
                let tau_s = tau as f64 / 1e6;
                interval = Some((tau, kind == CHANGED));
                h.intervals += 1;
                h.changes += u32::from(kind == CHANGED);
                h.total_s += tau_s;
                let backoff = f64::from_bits(h.backoff_bits);
                let backoff = if backoff.is_nan() {
                    backoff_start
                } else {
                    backoff
                };
                h.backoff_bits = backoff_step(backoff, kind == CHANGED).to_bits();
            }
            if kind == CHANGED && h.base {
                h.left = true;
            }
        }
        for key in Self::group_keys(before, urls) {
            let g = self.group(key, before, urls, host_name);
            if before.observations == 0 {
                g.pages += 1;
            }
            g.observations += 1;
            if let Some((tau, c)) = interval {
                g.add_interval(tau, c);
            }
            self.touched_groups.insert(key, ());
        }
    }

    /// A page found gone at this snapshot (call [`Self::touch`] first).
    pub fn gone(&mut self, page: PageId) {
        if let Some(h) = self.pages.get_mut(&page) {
            if h.base {
                h.left = true;
            }
        }
    }

    /// The page's contributions to the counted tables, given its current state,
    /// each passed to `add` (a page is counted twice a snapshot, so no `Vec`);
    /// with its chain (`poisson`), its Poisson-check windows too.
    fn contributions(
        settings: &BookSettings,
        st: &PageState,
        h: &PageHistory,
        class: DomainClass,
        poisson: Option<Chain>,
        mut add: impl FnMut(ChangeKey, i64),
    ) {
        let both = [class, DomainClass::All];
        let first_seq = settings.first_seq;
        let span = span_s(st);
        let censoring = Censoring::of(st.first_fetched() == Some(first_seq), st.alive);
        for c in both {
            add(ChangeKey::Lifespan(c, 1, lifespan_bucket(span)), 1);
            let m2 = censoring.lifespan_m2(span);
            add(ChangeKey::Lifespan(c, 2, lifespan_bucket(m2)), 1);
            if h.base {
                add(ChangeKey::UnchangedBase(c), 1);
                if !h.left {
                    add(ChangeKey::UnchangedStill(c), 1);
                }
            }
        }
        let (n, x, total) = (u64::from(h.intervals), u64::from(h.changes), h.total_s);
        if n == 0 {
            return;
        }
        let avg = (x > 0).then(|| total / x as f64);
        for c in both {
            add(ChangeKey::ChangeBucket(c, change_bucket(avg)), 1);
        }
        let p = &settings.params;
        if let Some(rate) = h.rate() {
            add(ChangeKey::FreshPages, 1);
            let (cycle, batch) = (p.cycle_days * DAY, p.batch_days * DAY);
            for d in 0..4u8 {
                let f = design_freshness(d as usize, rate, cycle, batch);
                add(ChangeKey::FreshSum(d), (f * FRESHNESS_SCALE).round() as i64);
            }
        }
        if let Some(chain) = poisson {
            let bands = poisson_bands(p, x, total);
            if bands != 0 {
                let times = chain.change_times();
                poisson_windows(p, bands, &times, 1, &mut add);
            }
        }
    }

    /// The Poisson check's counts of a touched page, given its change count and
    /// summed intervals before the snapshot (`before`): a page's change times only
    /// grow at the end, so in a band it stays in only its new windows are added,
    /// and only a band it leaves or enters takes all of them. The windows then
    /// cost the page's new changes, not its history.
    fn poisson_delta(
        settings: &BookSettings,
        h: &PageHistory,
        chain: Chain,
        before: (u32, f64),
        mut add: impl FnMut(ChangeKey, i64),
    ) {
        let p = &settings.params;
        let old = poisson_bands(p, u64::from(before.0), before.1);
        let new = poisson_bands(p, u64::from(h.changes), h.total_s);
        if old == 0 && new == 0 {
            return;
        }
        let times = chain.change_times();
        // The windows counted before: those between the first `before.0` changes.
        let counted = (before.0 as usize).min(times.len());
        poisson_windows(p, old & !new, &times[..counted], -1, &mut add);
        poisson_windows(p, new & !old, &times, 1, &mut add);
        let kept = counted.saturating_sub(1);
        poisson_windows(p, old & new, &times[kept..], 1, &mut add);
    }

    /// Finishes snapshot `t`: adds the touched pages' new contributions, hands
    /// `emit` the rows of the touched pages and groups and the plan's input
    /// (every alive page with a rate), and returns the counts' deltas.
    pub fn finish(
        &mut self,
        states: &IdMap<PageId, PageState>,
        urls: &UrlArena,
        alive: &[PageId],
        host_names: &dyn Fn(HostId) -> String,
        emit: &mut dyn FnMut(BookRow),
    ) -> Vec<(ChangeKey, i64)> {
        self.chains.settle();
        let mut touched = std::mem::take(&mut self.touched);
        touched.sort_unstable_by_key(|t| t.0);
        touched.dedup_by_key(|t| t.0);
        self.touched_last = touched.len();
        let params = self.settings.params.clone();
        // A block's entries looked up together, their URLs' bytes asked for
        // too (see `LOOKUP_BLOCK`).
        let (mut in_states, mut in_book) = (Vec::new(), Vec::new());
        for block in touched.chunks(LOOKUP_BLOCK) {
            in_states.clear();
            in_book.clear();
            let ids = || block.iter().map(|t| &t.0);
            states.find_each_ahead(
                ids(),
                |st| urls.prefetch(&st.url),
                |_, found| in_states.push(found.expect("a touched page is known").0),
            );
            self.pages
                .find_each(ids(), |_, found| in_book.push(found.map(|(i, _)| i)));
            for ((&(_, changes_before, total_before), &at_state), &at_book) in
                block.iter().zip(&in_states).zip(&in_book)
            {
                let st = states.at(at_state).1;
                let Some(at_book) = at_book else {
                    continue;
                };
                let h = self.pages.at_mut(at_book).1;
                h.touched = false;
                // One scratch set of intervals for all pages: a page's estimate
                // then allocates nothing.
                let s = &mut self.scratch;
                let chain = Chain(self.chains.get(h.chain));
                chain.fill(h.changes, s);
                let mle = s.mle();
                let rate_class = s.rate_class(&self.class_rates);
                h.rate_bits = mle.planning_rate().unwrap_or(f64::NAN).to_bits();
                let host = host_names(st.host);
                let class = DomainClass::of_host(&host);
                let counts = &mut self.counts;
                let h = self.pages.at(at_book).1;
                let mut add = |k, c| *counts.entry(k).or_default() += c;
                Self::contributions(&self.settings, st, h, class, None, &mut add);
                let before = (changes_before, total_before);
                Self::poisson_delta(&self.settings, h, chain, before, &mut add);
                let censoring = Censoring::of(
                    st.first_fetched() == Some(self.settings.first_seq),
                    st.alive,
                );
                let span = span_s(st);
                emit(BookRow::Page(PageChangeRow {
                    url: urls.get(&st.url).to_string(),
                    host,
                    class,
                    observations: i64::from(st.observations),
                    changes: s.x as i64,
                    intervals: s.n as i64,
                    span_s: span.to_bits(),
                    naive: s.naive().map(f64::to_bits),
                    regular: s.regular().map(f64::to_bits),
                    mle: mle.lambda.map(f64::to_bits),
                    lo: mle.lo.map(f64::to_bits),
                    hi: mle.hi.map(f64::to_bits),
                    rate_class_days: rate_class.map(|(i, _)| params.rate_classes_days[i].to_bits()),
                    rate_class_p: rate_class.map(|(_, p)| p.to_bits()),
                    censoring,
                    lifespan_m1_s: span.to_bits(),
                    lifespan_m2_s: censoring.lifespan_m2(span).to_bits(),
                }));
            }
        }
        let mut groups: Vec<GroupKey> = self.touched_groups.drain().map(|(k, _)| k).collect();
        groups.sort_unstable();
        for key in groups {
            let g = self.groups.get_mut(&key).expect("touched groups exist");
            let mle = g.estimate();
            g.rate = rate_of(&mle, g.intervals, &params);
            emit(BookRow::Group(GroupChangeRow {
                level: key.1,
                key: g.name.clone(),
                pages: g.pages as i64,
                observations: g.observations as i64,
                changes: g.changes as i64,
                intervals: g.intervals as i64,
                mle: mle.lambda.map(f64::to_bits),
                lo: mle.lo.map(f64::to_bits),
                hi: mle.hi.map(f64::to_bits),
            }));
        }
        // Dropped rather than kept for the next snapshot: a snapshot touches
        // a million pages, 25 MB of list.
        drop(touched);
        self.plan(states, urls, alive, emit);
        let mut counts: Vec<(ChangeKey, i64)> =
            self.counts.drain().filter(|(_, c)| *c != 0).collect();
        counts.sort_unstable();
        counts
    }

    /// Every alive page with a planning rate: its own with enough intervals, else
    /// its directory's, else its host's.
    fn plan(
        &self,
        states: &IdMap<PageId, PageState>,
        urls: &UrlArena,
        alive: &[PageId],
        emit: &mut dyn FnMut(BookRow),
    ) {
        let p = &self.settings.params;
        let min = u64::from(p.min_intervals);
        for id in alive {
            let Some(h) = self.pages.get(id) else {
                continue;
            };
            let rate = if u64::from(h.intervals) >= min {
                h.rate()
            } else {
                let [host_key, dir_key] = Self::group_keys(&states[id], urls);
                let dir = self.groups.get(&dir_key).and_then(|g| g.rate);
                dir.or_else(|| self.groups.get(&host_key).and_then(|g| g.rate))
            };
            let Some(rate) = rate else {
                continue;
            };
            let backoff = f64::from_bits(h.backoff_bits);
            let backoff = if backoff.is_nan() {
                p.backoff_start_days * DAY
            } else {
                backoff
            };
            emit(BookRow::Plan(PlanInput {
                page: *id,
                lambda_bits: rate.to_bits(),
                backoff_bits: backoff.to_bits(),
            }));
        }
    }

    /// The pages' histories for the state files.
    pub fn histories(&self) -> impl Iterator<Item = (&PageId, HistoryRecord)> + '_ {
        debug_assert!(self.chains.is_settled(), "histories after `finish`");
        self.pages
            .iter()
            .map(|(id, h)| (id, h.record(Chain(self.chains.get(h.chain)))))
    }
}

/// A group's planning rate, when it has enough intervals.
fn rate_of(mle: &Mle, intervals: u64, p: &ChangeParams) -> Option<f64> {
    if intervals >= u64::from(p.min_intervals) {
        mle.planning_rate()
    } else {
        None
    }
}

/// The Poisson check's bands (a bit each) a page with `x` changes over `total`
/// seconds of intervals falls in: its average change interval, with at least two
/// changes.
fn poisson_bands(p: &ChangeParams, x: u64, total: f64) -> u64 {
    if x < 2 {
        return 0;
    }
    let avg = total / x as f64;
    p.poisson_bands_days
        .iter()
        .enumerate()
        .filter(|(_, band)| avg >= band[0] * DAY && avg < band[1] * DAY)
        .fold(0, |m, (b, _)| m | 1 << b)
}

/// Adds `sign` times the windows between consecutive `times` (µs) to the
/// Poisson check's counts of every band in `bands`.
fn poisson_windows(
    p: &ChangeParams,
    bands: u64,
    times: &[u64],
    sign: i64,
    add: &mut impl FnMut(ChangeKey, i64),
) {
    if bands == 0 {
        return;
    }
    let width = p.poisson_bucket_days * DAY;
    for (b, band) in p.poisson_bands_days.iter().enumerate() {
        if bands & (1 << b) == 0 {
            continue;
        }
        let b = b as u8;
        let k_max = (4.0 * band[1] / p.poisson_bucket_days).ceil() as u32;
        for w in times.windows(2) {
            let d = (w[1] - w[0]) as f64 / 1e6;
            let k = ((d / width).round() as u32).min(k_max);
            add(ChangeKey::PoissonCount(b), sign);
            add(ChangeKey::PoissonSeconds(b), sign * d.round() as i64);
            add(ChangeKey::PoissonBucket(b, k), sign);
        }
    }
}

/// The observed span in seconds.
fn span_s(st: &PageState) -> f64 {
    match (st.first_fetch_time(), st.last_fetch_time()) {
        (Some(a), Some(b)) => (b - a).max(0) as f64 / 1e6,
        _ => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The touched flag sits in the history's padding, and the chain is a
    /// 4-byte id: 1.4M histories on bench snapshot 9 with 1 worker.
    #[test]
    fn a_history_stays_40_bytes() {
        assert_eq!(std::mem::size_of::<PageHistory>(), 40);
    }

    #[test]
    fn directories() {
        let d = |u: &str| {
            let host_end = u.find("://").unwrap()
                + 3
                + u[u.find("://").unwrap() + 3..].find('/').unwrap_or(u.len());
            directory(u, host_end).to_string()
        };
        assert_eq!(d("http://a.com/news/x.html"), "http://a.com/news/");
        assert_eq!(d("http://a.com/news/2024/x.html"), "http://a.com/news/");
        assert_eq!(d("http://a.com/x.html"), "http://a.com/");
        assert_eq!(d("http://a.com/"), "http://a.com/");
    }

    /// A history of weekly-ish crawls (7, 14 or 21 days, jittered by up to 6
    /// hours) whose page changes about every 10 days.
    fn history(rng: &mut impl rand::Rng, intervals: usize) -> Vec<u64> {
        let mut entries = Vec::new();
        for _ in 0..intervals {
            let days = 7.0 * rng.random_range(1..=3) as f64 + rng.random_range(-0.25..0.25);
            let tau_us = (days * DAY * 1e6) as u64;
            let changed = rng.random::<f64>() < -(-days / 10.0f64).exp_m1();
            entries.push((tau_us << 2) | if changed { CHANGED } else { UNCHANGED });
        }
        entries
    }

    /// Up to [`EXACT_CHANGES`] changed intervals a page's estimate sees them
    /// all; beyond, the binned ones give the exact estimate to 1e-4, from a
    /// bounded number of bins however long the history.
    #[test]
    fn long_histories_are_binned_within_tolerance() {
        use rand::SeedableRng;
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(5);
        let mut s = Intervals::default();
        let (mut binned_pages, mut most_bins) = (0, 0);
        for intervals in [5, 20, 40, 100, 400] {
            for _ in 0..50 {
                let entries = history(&mut rng, intervals);
                let h = Chain(&entries);
                let exact = Intervals::from_pairs(h.intervals());
                let (changes, _) = h.summary();
                h.fill(changes, &mut s);
                if changes <= EXACT_CHANGES {
                    assert_eq!(s, exact);
                    continue;
                }
                binned_pages += 1;
                most_bins = most_bins.max(s.changed.len());
                assert_eq!((s.n, s.x), (exact.n, exact.x));
                assert!((s.total - exact.total).abs() <= 1e-9 * exact.total);
                let (a, b) = (s.mle(), exact.mle());
                for (x, y) in [(a.lambda, b.lambda), (a.lo, b.lo), (a.hi, b.hi)] {
                    let (x, y) = (x.unwrap(), y.unwrap());
                    assert!((x - y).abs() <= 1e-4 * y, "{x} vs exact {y}");
                }
            }
        }
        assert!(binned_pages > 100, "{binned_pages}");
        // Three cadences, each ±6 h (±3.6% of a week): about 3 · 8 bins at most.
        assert!(most_bins <= 30, "{most_bins} bins");
    }

    /// A group's bins hold integer sums, so the order in which its intervals
    /// arrive (snapshot by snapshot, or page by page at a restore) does not
    /// change a bit of its estimate.
    #[test]
    fn group_estimates_do_not_depend_on_the_order_of_intervals() {
        use rand::seq::SliceRandom;
        use rand::SeedableRng;
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(6);
        let entries = history(&mut rng, 300);
        let mut pairs: Vec<(u64, bool)> = Chain(&entries).intervals_us().collect();
        let mut first = Group::default();
        pairs.iter().for_each(|&(us, c)| first.add_interval(us, c));
        pairs.shuffle(&mut rng);
        let mut second = Group::default();
        pairs.iter().for_each(|&(us, c)| second.add_interval(us, c));
        assert_eq!(first.estimate(), second.estimate());
        assert!(first.estimate().lambda.is_some());
    }
}
