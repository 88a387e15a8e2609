//! The ECHO analysis (docs/echo.md): per content source the new-link rate `λ`, the
//! click curve `P (1 − e^{−μt})` of the new pages it reveals, and the optimal
//! recrawl schedule.
//!
//! Three stages, each a timely operator that acts when a snapshot closes:
//!
//! 1. **Pages**, on the worker of a *revealed page's* host (where its clicks and its
//!    ledger entry are): a content source's outlink whose destination the ledger
//!    first saw at this snapshot reveals a new page. The stage remembers which
//!    sources revealed each new page, sorts the page's click rows into 20-minute
//!    bins of its age, and reports every bin once it has ended, so a bin is counted
//!    only for pages old enough to have it.
//! 2. **Sources**, on the worker of the *source's* host: crawls, revealed pages and
//!    ended bins become `λ` (over the last `n` crawls) and the mean cumulative click
//!    curve, refitted at every snapshot (`algo::echo::fit_click_bins`, microseconds
//!    a source).
//! 3. **Schedule**, on worker 0: the sources' `(λ, P, μ)` (a few numbers per source,
//!    not the graph) and one solve per crawl rate (`algo::echo::schedule`).
//!
//! The sources' revealed pages within the window also feed the greedy source
//! cover ([`echo_cover`]).
//!
//! Stages 1 and 2 keep state across snapshots and persist it per host in
//! `_state/echo-<worker>.bin`; the ledger hands it back at the next run's restore
//! epoch, so a run continues exactly where the last one stopped.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::vec::Map;
use timely::dataflow::Stream;

use crate::algo::echo::{fit_click_bins, new_link_rate, schedule, Source};
use crate::dataflow::echo_cover::{self, CoverSet};
use crate::dataflow::sink::SnapshotPart;
use crate::dataflow::split::split_by_kind;
use crate::dataflow::WorkerCtx;
use crate::error::OutputError;
use crate::id_map::IdMap;
use crate::ingest::{ClickObs, UrlText, CLICK_BIN};
use crate::job::EchoParams;
use crate::ledger::LedgerOut;
use crate::model::{HostId, Micros, PageId, Seq};
use crate::output::echo::{
    ContentSourceRow, EchoPlanRow, EchoScheduleRow, SourceCoverRow, SourceEstimateRow, SourceKind,
};
use crate::placement::Placement;
use crate::state::{self, StateRecord, StateWriter};

type FastMap<K, V> = HashMap<K, V, foldhash::fast::FixedState>;

/// A content source as the ledger sees it at a snapshot.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SourceObs {
    pub host: HostId,
    pub page: PageId,
    pub url: UrlText,
    pub kind: SourceKind,
    pub first_seen: Micros,
    /// Its fetch time, if this snapshot fetched it.
    pub crawled: Option<Micros>,
}

/// The ledger's per-snapshot messages to the ECHO stages.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum EchoMsg {
    /// A content source (every one, every snapshot).
    Source(Box<SourceObs>),
    /// An outlink of a source fetched at this snapshot that its worker's links
    /// of the snapshot before did not have (only such a link can name a page
    /// first seen now).
    Link {
        dst_host: HostId,
        dst: PageId,
        src_host: HostId,
        src: PageId,
    },
    /// A click row whose bin ended by this snapshot.
    Click(ClickObs),
    /// Persisted state of one host, at the restore epoch.
    Restored(HostId, Vec<u8>),
}

impl EchoMsg {
    /// The host whose worker handles the message in the pages stage.
    fn page_side_host(&self) -> HostId {
        match self {
            EchoMsg::Source(s) => s.host,
            EchoMsg::Link { dst_host, .. } => *dst_host,
            EchoMsg::Click(c) => c.host,
            EchoMsg::Restored(h, _) => *h,
        }
    }
}

/// What the pages stage tells the sources stage.
#[derive(Clone, Debug, Serialize, Deserialize)]
enum SourceIn {
    Source(Box<SourceObs>),
    /// `src` revealed `page` at this snapshot.
    Revealed {
        src_host: HostId,
        src: PageId,
        page: PageId,
    },
    /// Bin `bin` of `page`, revealed by `src`, ended with `clicks` clicks.
    Bin {
        src_host: HostId,
        src: PageId,
        page: PageId,
        bin: u16,
        clicks: u64,
    },
    /// A host's persisted sources (decoded once, by the pages stage).
    Restored(HostId, Vec<(PageId, SourceState)>),
}

impl SourceIn {
    fn host(&self) -> HostId {
        match self {
            SourceIn::Source(s) => s.host,
            SourceIn::Revealed { src_host, .. } | SourceIn::Bin { src_host, .. } => *src_host,
            SourceIn::Restored(h, _) => *h,
        }
    }
}

/// Persisted state of one host: the new pages it holds (pages stage) or its
/// sources (sources stage).
#[derive(Serialize, Deserialize)]
enum Saved {
    Pages {
        pages: Vec<(PageId, Revealed)>,
        pending: Vec<((Micros, PageId, u16), u64)>,
    },
    Sources(Vec<(PageId, SourceState)>),
}

/// A new page within the click horizon, on its host's worker.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Revealed {
    host: HostId,
    /// The snapshot time at which it was revealed: its age is counted from here.
    found: Micros,
    /// The sources that revealed it.
    sources: Vec<(HostId, PageId)>,
}

/// The output streams of the analysis.
pub struct EchoStreams<'s> {
    pub sources: Stream<'s, Seq, Vec<ContentSourceRow>>,
    pub estimates: Stream<'s, Seq, Vec<SourceEstimateRow>>,
    pub plan: Stream<'s, Seq, Vec<EchoPlanRow>>,
    pub cover: Stream<'s, Seq, Vec<SourceCoverRow>>,
}

/// Builds the three stages over the ledger's echo messages.
pub fn echo<'s>(
    msgs: Stream<'s, Seq, Vec<(LedgerOut, Seq, isize)>>,
    ctx: &WorkerCtx,
) -> EchoStreams<'s> {
    let msgs = msgs.flat_map(|(o, _, _)| match o {
        LedgerOut::Echo(m) => Some(m),
        _ => None,
    });
    // The pages stage's output: for the sources stage, or (errors, by the
    // idiom of `Scheduler`) pairs of hosts sharing a page, for the cover.
    // Streams split a container at a time (`split_by_kind`), not by timely's
    // `partition`, which holds a snapshot's whole output in one vector per part.
    let [pages_ok, pages_err] = split_by_kind(
        pages_stage(msgs, ctx),
        "SplitEchoPages",
        |r: &Result<_, _>| usize::from(r.is_err()),
    );
    let shared = pages_err.flat_map(|r| r.err());
    let out = sources_stage(pages_ok.flat_map(|r| r.ok()), ctx);
    let [rows, estimates, params, young] =
        split_by_kind(out, "SplitEchoSources", |o: &SourceOut| match o {
            SourceOut::Row(_) => 0,
            SourceOut::Estimate(_) => 1,
            SourceOut::Params { .. } => 2,
            SourceOut::Young(_) => 3,
        });
    let young = young.flat_map(|o| match o {
        SourceOut::Young(c) => Some(c),
        _ => None,
    });
    let cover = echo_cover::source_cover(young, shared, ctx);
    let estimates = estimates.flat_map(|o| match o {
        SourceOut::Estimate(r) => Some(*r),
        _ => None,
    });
    let sources = rows.flat_map(|o| match o {
        SourceOut::Row(r) => Some(r),
        _ => None,
    });
    let plan = schedule_stage(params, ctx);
    EchoStreams {
        sources,
        estimates,
        plan,
        cover,
    }
}

/// A stage of this analysis: folds the messages of each closing epoch into its
/// state, and persists that state at the run's finish epoch.
pub(super) trait EpochStage: 'static {
    type In: timely::ExchangeData;
    type Out: Clone + 'static;
    /// The messages of a snapshot (or of the restore epoch, `t = restore`).
    fn advance(&mut self, t: Seq, msgs: Vec<Self::In>, ctx: &WorkerCtx, out: &mut Emit<Self::Out>);
    /// Leaves the state for the next run.
    fn persist(&self, _ctx: &WorkerCtx) -> Result<(), OutputError> {
        Ok(())
    }
}

/// Where a stage's output goes: each item into the operator's output session
/// as it is made, which ships it on a container at a time. A stage that
/// gathered a snapshot's output in one vector held it twice at its end, the
/// vector and the containers it was copied into: ECHO's sources stage emits
/// 629K items on bench snapshot 9, and its vector grew to 160 MB.
pub(super) struct Emit<'a, T> {
    give: &'a mut dyn FnMut(T),
    count: usize,
}

impl<T> Emit<'_, T> {
    pub fn push(&mut self, x: T) {
        self.count += 1;
        (self.give)(x);
    }

    pub fn extend(&mut self, items: impl IntoIterator<Item = T>) {
        for x in items {
            self.push(x);
        }
    }
}

/// Runs `stage` over `input` routed by `route_by`: each epoch of the run as it
/// closes, then the finish epoch.
pub(super) fn epoch_operator<'s, S: EpochStage>(
    input: Stream<'s, Seq, Vec<S::In>>,
    route_by: impl Fn(&Placement, &S::In) -> u64 + 'static,
    name: &str,
    ctx: &WorkerCtx,
    mut stage: S,
) -> Stream<'s, Seq, Vec<S::Out>> {
    let ctx = ctx.clone();
    let placement = ctx.placement.clone();
    let stage_name = name.to_string();
    input.unary_frontier::<CapacityContainerBuilder<Vec<S::Out>>, _, _, _>(
        Exchange::new(move |x: &S::In| route_by(&placement, x)),
        name,
        move |cap, _info| {
            let mut epochs = ctx.plan.epochs();
            epochs.push(ctx.plan.finish_epoch());
            let mut cap = Some(cap);
            let mut next = 0;
            let mut stash: BTreeMap<Seq, Vec<S::In>> = BTreeMap::new();
            move |(input, frontier), output| {
                input.for_each(|c, data| {
                    let t = *c.least().expect("messages carry a time");
                    stash.entry(t).or_default().append(data);
                });
                while next < epochs.len() && !frontier.less_equal(&epochs[next]) {
                    let t = epochs[next];
                    let c = cap.as_ref().expect("held until the last epoch").delayed(&t);
                    if t == ctx.plan.finish_epoch() {
                        if let Err(e) = stage.persist(&ctx) {
                            ctx.log.borrow_mut().error(e);
                        }
                    } else {
                        let msgs = stash.remove(&t).unwrap_or_default();
                        let count = msgs.len();
                        crate::memory::trace(|| {
                            format!("worker {} snapshot {t}: {stage_name} starts", ctx.index)
                        });
                        let mut session = output.session(&c);
                        let mut out = Emit {
                            give: &mut |x| session.give(x),
                            count: 0,
                        };
                        stage.advance(t, msgs, &ctx, &mut out);
                        let emitted = out.count;
                        // A point to stop a run at, e.g. `EchoPages-9`: under
                        // heaptrack, whose "leaks" are then the heap live there.
                        crate::failpoint::hit(&format!("{stage_name}-{t}"));
                        crate::memory::trace(|| {
                            format!(
                                "worker {} snapshot {t}: {stage_name} done ({count} in, {emitted} out)",
                                ctx.index,
                            )
                        });
                    }
                    next += 1;
                    match epochs.get(next) {
                        Some(n) => cap.as_mut().unwrap().downgrade(n),
                        None => cap = None,
                    }
                }
            }
        },
    )
}

/// Stage 1; see the module docs.
fn pages_stage<'s>(
    msgs: Stream<'s, Seq, Vec<EchoMsg>>,
    ctx: &WorkerCtx,
) -> Stream<'s, Seq, Vec<Result<SourceIn, (HostId, HostId)>>> {
    epoch_operator(
        msgs,
        |p: &Placement, m: &EchoMsg| p.route(m.page_side_host()),
        "EchoPages",
        ctx,
        PagesState::default(),
    )
}

#[derive(Default)]
struct PagesState {
    pages: FastMap<PageId, Revealed>,
    /// Clicks of bins that have not ended: `(bin end, page, bin) -> clicks`.
    pending: BTreeMap<(Micros, PageId, u16), u64>,
}

impl EpochStage for PagesState {
    type In = EchoMsg;
    /// `Err`: a pair of hosts whose sources revealed a common page (the cover's).
    type Out = Result<SourceIn, (HostId, HostId)>;

    fn advance(&mut self, t: Seq, msgs: Vec<EchoMsg>, ctx: &WorkerCtx, out: &mut Emit<Self::Out>) {
        let params = &ctx.plan.job.echo;
        let now = ctx.plan.meta(t).time;
        let horizon = horizon_bins(params);
        let mut links = Vec::new();
        let mut clicks = Vec::new();
        for m in msgs {
            match m {
                EchoMsg::Source(s) => out.push(Ok(SourceIn::Source(s))),
                EchoMsg::Link {
                    dst_host,
                    dst,
                    src_host,
                    src,
                } => links.push((dst, dst_host, src_host, src)),
                EchoMsg::Click(c) => clicks.push(c),
                EchoMsg::Restored(h, bytes) => match bincode::deserialize(&bytes) {
                    Ok(Saved::Pages { pages, pending }) => {
                        self.pages.extend(pages);
                        self.pending.extend(pending);
                    }
                    Ok(Saved::Sources(list)) => out.push(Ok(SourceIn::Restored(h, list))),
                    Err(e) => ctx.log.borrow_mut().error(format!(
                        "corrupt echo state in {}: {e}",
                        ctx.plan.state_dir.display()
                    )),
                },
            }
        }
        // New pages: destinations the ledger first saw now. Sorted, so the
        // output does not depend on arrival order.
        links.sort_unstable();
        links.dedup();
        {
            let ledger = ctx.ledger.borrow();
            for (dst, dst_host, src_host, src) in links {
                if ledger.first_seen(dst) != Some(t) {
                    continue;
                }
                // Most pages have one source: room for one, not the four a
                // first push makes.
                let page = self.pages.entry(dst).or_insert_with(|| Revealed {
                    host: dst_host,
                    found: now,
                    sources: Vec::with_capacity(1),
                });
                page.sources.push((src_host, src));
                out.push(Ok(SourceIn::Revealed {
                    src_host,
                    src,
                    page: dst,
                }));
            }
        }
        // Click rows: into the bin of the page's age at the end of the row's bin.
        for c in clicks {
            let Some(page) = self.pages.get(&c.page) else {
                continue;
            };
            let age = c.time + CLICK_BIN - page.found;
            let bin = ((age + CLICK_BIN - 1).div_euclid(CLICK_BIN) - 1).max(0);
            if bin >= horizon as i64 {
                continue;
            }
            let end = page.found + (bin + 1) * CLICK_BIN;
            *self.pending.entry((end, c.page, bin as u16)).or_default() += c.clicks;
        }
        // Bins that have ended.
        let later = self.pending.split_off(&(now + 1, PageId(0), 0));
        for ((_, page, bin), clicks) in std::mem::replace(&mut self.pending, later) {
            if let Some(p) = self.pages.get(&page) {
                for &(src_host, src) in &p.sources {
                    out.push(Ok(SourceIn::Bin {
                        src_host,
                        src,
                        page,
                        bin,
                        clicks,
                    }));
                }
            }
        }
        // Pages past the horizon have every bin ended.
        let limit = horizon as i64 * CLICK_BIN;
        self.pages.retain(|_, p| now - p.found < limit);
        // The table keeps the size of the largest snapshot's new pages (every
        // page at the first one) unless told otherwise: 45 MB of bench's
        // 1-worker heap through every later snapshot, for a few thousand pages.
        self.pages.shrink_to_fit();
        if ctx.plan.writes(t) {
            out.extend(shared_hosts(self.pages.values()).map(Err));
        }
    }

    fn persist(&self, ctx: &WorkerCtx) -> Result<(), OutputError> {
        let mut by_host: BTreeMap<HostId, Saved> = BTreeMap::new();
        let mut pages: Vec<(&PageId, &Revealed)> = self.pages.iter().collect();
        pages.sort_unstable_by_key(|(p, _)| **p);
        for (p, r) in pages {
            if let Saved::Pages { pages, .. } = by_host.entry(r.host).or_insert(Saved::Pages {
                pages: Vec::new(),
                pending: Vec::new(),
            }) {
                pages.push((*p, r.clone()));
            }
        }
        for (k, c) in &self.pending {
            let Some(host) = self.pages.get(&k.1).map(|r| r.host) else {
                continue;
            };
            if let Some(Saved::Pages { pending, .. }) = by_host.get_mut(&host) {
                pending.push((*k, *c));
            }
        }
        write_saved(ctx, "pages", by_host)
    }
}

/// The pairs `(a, b)`, `a < b`, of hosts whose sources revealed a common page of
/// `pages`, each once, in order.
fn shared_hosts<'a>(
    pages: impl Iterator<Item = &'a Revealed>,
) -> impl Iterator<Item = (HostId, HostId)> {
    let mut pairs = std::collections::BTreeSet::new();
    for p in pages {
        let Some(&(first, _)) = p.sources.first() else {
            continue;
        };
        if p.sources.iter().all(|s| s.0 == first) {
            continue;
        }
        let mut hosts: Vec<HostId> = p.sources.iter().map(|s| s.0).collect();
        hosts.sort_unstable();
        hosts.dedup();
        // A star on the smallest host joins them all.
        pairs.extend(hosts[1..].iter().map(|&h| (hosts[0], h)));
    }
    pairs.into_iter()
}

fn write_saved(
    ctx: &WorkerCtx,
    stage: &str,
    by_host: BTreeMap<HostId, Saved>,
) -> Result<(), OutputError> {
    let path = state::echo_part_path(&ctx.plan.staged_state_dir(), ctx.index);
    let path = path.with_file_name(format!(
        "{}-{stage}.bin",
        path.file_stem().and_then(|s| s.to_str()).unwrap_or("echo")
    ));
    let mut w = StateWriter::create(&path)?;
    for (h, saved) in by_host {
        let bytes = bincode::serialize(&saved).expect("echo state serializes");
        w.write(&StateRecord::Echo(h, bytes))?;
    }
    ctx.sync_at_end(w.finish_syncing()?);
    Ok(())
}

/// The fewest bins of click curve a fit is made from.
pub const MIN_FIT_BINS: usize = 3;

/// Bins of the click horizon.
fn horizon_bins(params: &EchoParams) -> usize {
    ((params.horizon_s() * 1e6 / CLICK_BIN as f64).ceil() as usize).clamp(1, u16::MAX as usize)
}

/// One content source's history, on its host's worker.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct SourceState {
    /// Crawls as a content source, the first (baseline) included.
    crawls: u64,
    /// The last `n + 1` crawls: (fetch time, new links revealed).
    recent: VecDeque<(Micros, u64)>,
    new_links: u64,
    /// Revealed pages within the click horizon: (page, when, has clicks).
    young: Vec<(PageId, Micros, bool)>,
    /// Revealed pages past the horizon, and how many of them had clicks.
    old_pages: u64,
    old_clicked: u64,
    /// Clicks per bin of age, over the pages whose bin has ended.
    bins: Vec<u64>,
}

/// What the sources stage emits.
#[derive(Clone, Debug, Serialize, Deserialize)]
enum SourceOut {
    Row(ContentSourceRow),
    /// Boxed: the largest kind, and a container of this enum holds every kind
    /// at its size.
    Estimate(Box<SourceEstimateRow>),
    /// A source's parameters for the schedule.
    Params {
        url: Arc<str>,
        lambda: f64,
        profit: f64,
        mu: f64,
    },
    /// The new pages a source revealed within the window, for the source cover.
    Young(Box<CoverSet>),
}

/// Stage 2; see the module docs.
fn sources_stage<'s>(
    input: Stream<'s, Seq, Vec<SourceIn>>,
    ctx: &WorkerCtx,
) -> Stream<'s, Seq, Vec<SourceOut>> {
    epoch_operator(
        input,
        |p: &Placement, m: &SourceIn| p.route(m.host()),
        "EchoSources",
        ctx,
        SourcesState::default(),
    )
}

/// One worker's sources: `page -> (host, history)`. An [`IdMap`]: sources are
/// never dropped, and a hash map's table of 128-byte entries is up to half
/// empty after it doubles.
#[derive(Default)]
struct SourcesState(IdMap<PageId, (HostId, SourceState)>);

impl EpochStage for SourcesState {
    type In = SourceIn;
    type Out = SourceOut;

    fn advance(&mut self, t: Seq, msgs: Vec<SourceIn>, ctx: &WorkerCtx, out: &mut Emit<SourceOut>) {
        advance_sources(&mut self.0, t, msgs, ctx, out);
    }

    fn persist(&self, ctx: &WorkerCtx) -> Result<(), OutputError> {
        persist_sources(&self.0, ctx)
    }
}

fn advance_sources(
    sources: &mut IdMap<PageId, (HostId, SourceState)>,
    t: Seq,
    msgs: Vec<SourceIn>,
    ctx: &WorkerCtx,
    out: &mut Emit<SourceOut>,
) {
    let params = &ctx.plan.job.echo;
    let now = ctx.plan.meta(t).time;
    let mut current = Vec::new();
    let mut revealed: Vec<(PageId, PageId)> = Vec::new();
    let mut bins = Vec::new();
    for m in msgs {
        match m {
            SourceIn::Source(s) => current.push(s),
            SourceIn::Revealed { src, page, .. } => revealed.push((src, page)),
            SourceIn::Bin {
                src,
                page,
                bin,
                clicks,
                ..
            } => bins.push((src, page, bin, clicks)),
            SourceIn::Restored(h, list) => {
                for (p, s) in list {
                    sources.insert(p, (h, s));
                }
            }
        }
    }
    if !ctx.plan.writes(t) {
        return;
    }
    current.sort_unstable();
    revealed.sort_unstable();
    // Crawls first: a source's first crawl is its baseline, whose pages it does
    // not count.
    for s in &current {
        let (_, st) = sources.get_or_insert_with(s.page, || (s.host, SourceState::default()));
        let Some(at) = s.crawled else { continue };
        let from = revealed.partition_point(|r| r.0 < s.page);
        let found: Vec<PageId> = revealed[from..]
            .iter()
            .take_while(|r| r.0 == s.page)
            .map(|r| r.1)
            .collect();
        st.crawls += 1;
        let counted = if st.crawls > 1 { found.len() as u64 } else { 0 };
        if st.crawls > 1 {
            st.new_links += counted;
            // Exactly, here and below: a source's lists live as long as it
            // does, and a doubled list is up to half unused for good.
            st.young.reserve_exact(found.len());
            st.young.extend(found.iter().map(|&p| (p, now, false)));
        }
        st.recent.push_back((at, counted));
        while st.recent.len() > params.crawls as usize + 1 {
            st.recent.pop_front();
        }
    }
    for (src, page, bin, clicks) in bins {
        let Some((_, st)) = sources.get_mut(&src) else {
            continue;
        };
        // Pages of the baseline crawl are not the source's.
        let Some(y) = st.young.iter_mut().find(|y| y.0 == page) else {
            continue;
        };
        y.2 = true;
        let bin = bin as usize;
        if st.bins.len() <= bin {
            st.bins.reserve_exact(bin + 1 - st.bins.len());
            st.bins.resize(bin + 1, 0);
        }
        st.bins[bin] += clicks;
    }
    let horizon = horizon_bins(params);
    let limit = horizon as i64 * CLICK_BIN;
    let default_mu = std::f64::consts::LN_2 / (params.default_half_life_hours * 3600.0);
    let mu_lo = std::f64::consts::LN_2 / (params.max_half_life_hours * 3600.0);
    let mu_hi = std::f64::consts::LN_2 / (params.min_half_life_hours * 3600.0);
    for s in current {
        let (_, st) = sources.get_mut(&s.page).expect("inserted above");
        // Pages past the horizon: every bin of theirs has ended.
        let (mut gone, mut gone_clicked) = (0, 0);
        st.young.retain(|y| {
            let young = now - y.1 < limit;
            if !young {
                gone += 1;
                gone_clicked += u64::from(y.2);
            }
            young
        });
        st.young.shrink_to_fit();
        st.old_pages += gone;
        st.old_clicked += gone_clicked;

        let times: Vec<f64> = st.recent.iter().map(|r| r.0 as f64 / 1e6).collect();
        let links: Vec<u64> = st.recent.iter().map(|r| r.1).collect();
        // `recent` holds the last n + 1 crawls; crawls before it do not count.
        let lambda = if st.crawls >= 2 {
            new_link_rate(&times, &links, params.crawls as usize)
        } else {
            None
        };
        let clicked = st.old_clicked + st.young.iter().filter(|y| y.2).count() as u64;
        // Two parameters need at least three points of the curve.
        let points = curve(st, now, horizon);
        let fit = if clicked > 0 && points.len() >= MIN_FIT_BINS {
            fit_click_bins(&points, CLICK_BIN as f64 / 1e6, mu_lo, mu_hi)
        } else {
            None
        };
        let (profit, mu, rmse) = match fit {
            Some(f) => (f.profit, f.mu, Some(f.rmse)),
            None => (params.default_profit, default_mu, None),
        };
        let tau = st
            .recent
            .back()
            .map_or(0.0, |r| (now - r.0).max(0) as f64 / 1e6);
        let host: Arc<str> = s.url.host().into();
        let url: Arc<str> = (*s.url.url).into();
        out.push(SourceOut::Row(ContentSourceRow {
            url: url.clone(),
            host: host.clone(),
            kind: s.kind,
            first_seen: s.first_seen,
        }));
        out.push(SourceOut::Estimate(Box::new(SourceEstimateRow {
            url: url.clone(),
            host,
            crawls: st.crawls as i64,
            new_links: st.new_links as i64,
            lambda: lambda.map(f64::to_bits),
            clicked_pages: clicked as i64,
            profit: profit.to_bits(),
            mu: mu.to_bits(),
            rmse: rmse.map(f64::to_bits),
            p_is_default: fit.is_none(),
            priority: lambda.map(|l| (l * profit * tau).to_bits()),
        })));
        if !st.young.is_empty() {
            out.push(SourceOut::Young(Box::new(CoverSet {
                host: s.host,
                url: url.clone(),
                pages: st.young.iter().map(|y| y.0).collect(),
            })));
        }
        if let Some(lambda) = lambda {
            out.push(SourceOut::Params {
                url,
                lambda,
                profit,
                mu,
            });
        }
    }
}

/// The mean cumulative clicks of a source's revealed pages at the end of each
/// bin of age, over the bins some page has completed: bin `b`'s mean is over
/// the pages at least `b + 1` bins old.
fn curve(st: &SourceState, now: Micros, horizon: usize) -> Vec<f64> {
    let mut ages: Vec<i64> = st.young.iter().map(|y| now - y.1).collect();
    ages.sort_unstable();
    let mut out = Vec::new();
    let mut cumulative = 0.0;
    for b in 0..horizon {
        let need = (b as i64 + 1) * CLICK_BIN;
        let reach = st.old_pages + (ages.len() - ages.partition_point(|a| *a < need)) as u64;
        if reach == 0 {
            break;
        }
        cumulative += st.bins.get(b).copied().unwrap_or(0) as f64 / reach as f64;
        out.push(cumulative);
    }
    out
}

fn persist_sources(
    sources: &IdMap<PageId, (HostId, SourceState)>,
    ctx: &WorkerCtx,
) -> Result<(), OutputError> {
    let mut by_host: BTreeMap<HostId, Vec<(PageId, SourceState)>> = BTreeMap::new();
    for (p, (h, st)) in sources.iter() {
        by_host.entry(*h).or_default().push((*p, st.clone()));
    }
    let by_host = by_host
        .into_iter()
        .map(|(h, mut list)| {
            list.sort_unstable_by_key(|(p, _)| *p);
            (h, Saved::Sources(list))
        })
        .collect();
    write_saved(ctx, "sources", by_host)
}

/// Stage 3; see the module docs. Its `echo_schedule` rows are written where
/// they are made (see [`Scheduler`]); the plan's rows go on.
fn schedule_stage<'s>(
    params: Stream<'s, Seq, Vec<SourceOut>>,
    ctx: &WorkerCtx,
) -> Stream<'s, Seq, Vec<EchoPlanRow>> {
    epoch_operator(params, |_, _| 0, "EchoSchedule", ctx, Scheduler)
}

/// Worker 0's schedule solve: per crawl rate the plan's row, and the
/// schedule's rows of every source, which it writes into the snapshot's part
/// file as it makes them, in their final order (by rate, then URL). Sent on
/// to a sink instead, a snapshot's were all held at once, and sorted there:
/// 690K rows on bench snapshot 9, the window where a whole run peaked.
struct Scheduler;

impl EpochStage for Scheduler {
    type In = SourceOut;
    type Out = EchoPlanRow;

    fn advance(
        &mut self,
        t: Seq,
        msgs: Vec<SourceOut>,
        ctx: &WorkerCtx,
        out: &mut Emit<Self::Out>,
    ) {
        if !ctx.plan.writes(t) {
            return;
        }
        let mut list: Vec<(Arc<str>, Source)> = msgs
            .into_iter()
            .filter_map(|m| match m {
                SourceOut::Params {
                    url,
                    lambda,
                    profit,
                    mu,
                } => Some((url, Source { lambda, profit, mu })),
                _ => None,
            })
            .collect();
        if list.is_empty() {
            return;
        }
        list.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let params: Vec<Source> = list.iter().map(|s| s.1).collect();
        // The rates in the order of the rows' sort (a positive rate's bits
        // order as it does); a rate listed twice is one schedule.
        let mut rates = ctx.plan.job.echo.crawl_rates_per_s.clone();
        rates.sort_unstable_by_key(|r| r.to_bits());
        rates.dedup_by_key(|r| r.to_bits());
        let mut rows = SnapshotPart::<EchoScheduleRow>::new(ctx, t);
        for rate in rates {
            let s = schedule(&params, rate);
            let crawled = s.intervals.iter().filter(|i| i.is_some()).count();
            for ((url, src), interval) in list.iter().zip(&s.intervals) {
                rows.push(&EchoScheduleRow {
                    rate: rate.to_bits(),
                    url: url.clone(),
                    interval: interval.map(f64::to_bits),
                    profit: interval.map_or(0.0, |i| src.profit_per_s(i)).to_bits(),
                });
            }
            out.push(EchoPlanRow {
                rate: rate.to_bits(),
                omega: s.omega.to_bits(),
                crawled: crawled as i64,
                never: (list.len() - crawled) as i64,
                source_fetches: s.source_fetches.to_bits(),
                new_page_fetches: s.new_page_fetches.to_bits(),
                profit: s.profit_per_s.to_bits(),
            });
        }
        rows.finish();
    }
}
