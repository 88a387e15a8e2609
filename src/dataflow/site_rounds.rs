//! The per-site discovery stage: each snapshot's closure `N_t`, one site at a time,
//! with the site's history of earlier rounds.
//!
//! The closure's inputs (start edges, links among new pages) arrive as
//! per-snapshot messages from the ledger, on the worker that owns the site, so
//! every site's round is whole on one worker, and the old pages' URLs are looked
//! up in that worker's ledger. When a snapshot closes,
//! every site with start edges gets its closure ([`new_page_closure`]) and is
//! evaluated ([`site_round::evaluate`]), and its history extended. What a site
//! contributes to the aggregates is emitted at the snapshot and retracted at
//! the next, like the ledger's events; the aggregates downstream are
//! differential reduces over those contributions. Only its statistics name
//! the site: the rest is read as a multiset, so equal contributions of the
//! worker's sites are added up before they are sent. Its cover steps and cluster
//! members are rows of per-snapshot tables, named here (the ledger of the
//! site's worker knows its host's name) and written to their part files here,
//! as they are made.
//!
//! The histories are state: written to `_state/sites-<worker>.bin` after the last
//! snapshot and handed back by the ledger at the restore epoch of the next run.

use std::collections::{BTreeMap, HashMap};

use differential_dataflow::{AsCollection, VecCollection};
use serde::{Deserialize, Serialize};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::vec::Map;
use timely::dataflow::Stream;

use crate::algo::closure::new_page_closure;
use crate::algo::greedy::CoverStep;
use crate::algo::site_round::{self, RoundResult, RoundSets, SiteHistory};
use crate::dataflow::sink::SnapshotPart;
use crate::dataflow::WorkerCtx;
use crate::error::OutputError;
use crate::job::DiscoveryParams;
use crate::ledger::{Ledger, LedgerOut};
use crate::model::{HostId, PageId, Seq};
use crate::output::discovery::{ClusterRow, CoverStats, CoverTrajectoryRow, SiteOut};
use crate::state::{self, StateRecord, StateWriter};

/// The stage's input: a closure input of the current snapshot, or a restored
/// history.
#[derive(Clone, Debug, Serialize, Deserialize)]
enum SiteIn {
    /// `(site, x, y)`: old page `x`, fetched now, links to new page `y`.
    Start(HostId, PageId, PageId),
    /// `(site, u, v)`: new page `u` links to new page `v`.
    Edge(HostId, PageId, PageId),
    Restored(HostId, Vec<u8>),
}

impl SiteIn {
    fn site(&self) -> HostId {
        match self {
            SiteIn::Start(h, ..) | SiteIn::Edge(h, ..) | SiteIn::Restored(h, _) => *h,
        }
    }
}

type Out = Vec<((HostId, SiteOut), Seq, isize)>;
type Contributions = Vec<((HostId, SiteOut), isize)>;

/// Evaluates every site's rounds from the ledger's discovery messages (start and
/// new edges, restored histories); see the module docs.
pub fn site_rounds<'s>(
    msgs: Stream<'s, Seq, Vec<(LedgerOut, Seq, isize)>>,
    ctx: &WorkerCtx,
) -> VecCollection<'s, Seq, (HostId, SiteOut)> {
    let ctx = ctx.clone();
    let placement = ctx.placement.clone();
    msgs.flat_map(|(o, t, _)| {
        let s = match o {
            LedgerOut::StartEdge(k) => SiteIn::Start(k.host, k.key.0, k.key.1),
            LedgerOut::NewEdge(k) => SiteIn::Edge(k.host, k.key.0, k.key.1),
            LedgerOut::Restored(k) => SiteIn::Restored(k.host, k.key),
            _ => return None,
        };
        Some((s, t))
    })
    .unary_frontier::<CapacityContainerBuilder<Out>, _, _, _>(
        Exchange::new(move |(s, _): &(SiteIn, Seq)| placement.route(s.site())),
        "SiteRounds",
        move |cap, _info| {
            let mut epochs = ctx.plan.epochs();
            epochs.push(ctx.plan.finish_epoch());
            let mut cap = Some(cap);
            let mut next = 0;
            let mut sites = Sites::default();
            move |(input, frontier), output| {
                // Filed by site as they arrive, not kept as a list of messages
                // to file when their snapshot closes: the list held 32 bytes
                // a message beside the sites' 16.
                input.for_each(|_, data| {
                    for (s, t) in data.drain(..) {
                        sites.apply(s, t, &ctx);
                    }
                });
                while next < epochs.len() && !frontier.less_equal(&epochs[next]) {
                    let t = epochs[next];
                    let c = cap.as_ref().expect("held until the last epoch");
                    if t == ctx.plan.finish_epoch() {
                        if let Err(e) = sites.persist(&ctx) {
                            ctx.log.borrow_mut().error(e);
                        }
                    } else if ctx.plan.writes(t) {
                        crate::memory::trace(|| {
                            format!(
                                "worker {} snapshot {t}: discovery's site rounds start ({} sites)",
                                ctx.index,
                                sites.rounds.get(&t).map_or(0, |r| r.len())
                            )
                        });
                        let out = sites.evaluate(t, &ctx);
                        crate::memory::trace(|| {
                            format!(
                                "worker {} snapshot {t}: discovery's site rounds done",
                                ctx.index
                            )
                        });
                        // Contributions hold for snapshot t only.
                        let at_t = c.delayed(&t);
                        let mut now = output.session(&at_t);
                        now.give_iterator(out.iter().map(|(o, d)| (o.clone(), t, *d)));
                        drop(now);
                        output
                            .session(&c.delayed(&(t + 1)))
                            .give_iterator(out.into_iter().map(|(o, d)| (o, t + 1, -d)));
                    }
                    sites.rounds.remove(&t);
                    next += 1;
                    match epochs.get(next) {
                        Some(n) => cap.as_mut().unwrap().downgrade(n),
                        None => cap = None,
                    }
                }
            }
        },
    )
    .as_collection()
}

/// One site's closure inputs of the current snapshot.
#[derive(Default)]
struct RoundInputs {
    starts: Vec<(PageId, PageId)>,
    edges: Vec<(PageId, PageId)>,
}

/// One worker's sites: the inputs of the snapshots not yet evaluated, and the
/// histories.
#[derive(Default)]
struct Sites {
    /// Per snapshot not yet evaluated, its sites' inputs.
    rounds: BTreeMap<Seq, HashMap<HostId, RoundInputs>>,
    history: HashMap<HostId, SiteHistory>,
}

impl Sites {
    /// Files a closure input of snapshot `t` with its site, or restores a
    /// history.
    fn apply(&mut self, s: SiteIn, t: Seq, ctx: &WorkerCtx) {
        match s {
            SiteIn::Start(h, x, y) => self.inputs(t, h).starts.push((x, y)),
            SiteIn::Edge(h, u, v) => self.inputs(t, h).edges.push((u, v)),
            SiteIn::Restored(h, bytes) => match bincode::deserialize(&bytes) {
                Ok(history) => {
                    self.history.insert(h, history);
                }
                Err(e) => ctx.log.borrow_mut().error(format!(
                    "corrupt discovery state of a site in {}: {e}",
                    ctx.plan.state_dir.display()
                )),
            },
        }
    }

    fn inputs(&mut self, t: Seq, site: HostId) -> &mut RoundInputs {
        self.rounds.entry(t).or_default().entry(site).or_default()
    }

    /// Evaluates every site with start edges at `t` (in site order, so the
    /// output does not depend on hashing) and records the round in its history.
    /// Returns the sites' contributions to the aggregates; writes their rows
    /// of `cover_trajectory` and `clusters` as they are made, in the order of
    /// the sites' ids. Sent on as boxed rows to the tables' sinks instead,
    /// they were all held at once (78 MiB on bench snapshot 9 with 1 worker).
    fn evaluate(&mut self, t: Seq, ctx: &WorkerCtx) -> Contributions {
        let params = &ctx.plan.job.discovery;
        let mut rounds: Vec<(HostId, RoundInputs)> = self
            .rounds
            .remove(&t)
            .unwrap_or_default()
            .into_iter()
            .filter(|(_, r)| !r.starts.is_empty())
            .collect();
        rounds.sort_unstable_by_key(|(h, _)| *h);
        let ledger = ctx.ledger.borrow();
        let mut out = Vec::new();
        // The aggregates' contributions (most are equal gains, curve points
        // and Jaccard bins of different sites) summed as they come, each
        // distinct one held once: listed, they grew by doubling to 1.2M on
        // bench snapshot 9 with 1 worker, at the run's peak, and
        // consolidated whenever they doubled, their sorting was most of the
        // rounds' own time.
        let mut totals: HashMap<SiteOut, isize, foldhash::fast::FixedState> = HashMap::default();
        let mut site_out = Vec::new();
        let mut steps = SnapshotPart::<CoverTrajectoryRow>::new(ctx, t);
        let mut members = SnapshotPart::<ClusterRow>::new(ctx, t);
        for (h, mut inputs) in rounds {
            let closure = new_page_closure(&mut inputs.starts, &mut inputs.edges);
            let sets = round_sets(closure, &ledger);
            let history = self.history.entry(h).or_default();
            let result = site_round::evaluate(history, &sets, params);
            contributions(h, &result, params, &mut site_out);
            for ((site, o), d) in site_out.drain(..) {
                if site == NO_SITE {
                    *totals.entry(o).or_default() += d;
                } else {
                    out.push(((site, o), d));
                }
            }
            let site = ledger
                .host_name(h)
                .expect("the site's ledger knows its host");
            site_rows(site, &sets, &result, &mut steps, &mut members);
            history.record(t, &sets, &result, params);
        }
        out.reserve_exact(totals.len());
        out.extend(
            totals
                .into_iter()
                .filter(|&(_, d)| d != 0)
                .map(|(o, d)| ((NO_SITE, o), d)),
        );
        steps.finish();
        members.finish();
        out
    }

    fn persist(&self, ctx: &WorkerCtx) -> Result<(), OutputError> {
        let path = state::sites_part_path(&ctx.plan.staged_state_dir(), ctx.index);
        let mut w = StateWriter::create(&path)?;
        let mut ids: Vec<&HostId> = self.history.keys().collect();
        ids.sort_unstable();
        for h in ids {
            let bytes = bincode::serialize(&self.history[h]).expect("history serializes");
            w.write(&StateRecord::Site(*h, bytes))?;
        }
        ctx.sync_at_end(w.finish_syncing()?);
        Ok(())
    }
}

/// Names a site's `N_t(x)` sets with their pages' URLs, from the ledger of the
/// worker that owns the site, and orders them by URL.
fn round_sets(closure: Vec<(PageId, Vec<u64>)>, ledger: &Ledger) -> RoundSets {
    let mut pages: Vec<(String, PageId, Vec<u64>)> = closure
        .into_iter()
        .map(|(x, ys)| {
            let url = ledger.url_of(x).expect("the site's ledger knows its pages");
            (url.to_string(), x, ys)
        })
        .collect();
    pages.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    RoundSets { pages }
}

/// The site of the contributions that only the aggregates read (gains, curve
/// and policy points, Jaccard bins): none, so that equal ones of different
/// sites add up on their worker before they are sent (bench snapshot 9 with 1
/// worker: 1.2M contributions of 17k sites, 134 MiB of messages at the run's
/// peak, each sent again as its retraction at the next snapshot).
const NO_SITE: HostId = HostId(0);

/// What the site contributes to each aggregate discovery table. Only the
/// statistics keep the site: the cover summaries are per site.
fn contributions(h: HostId, r: &RoundResult, params: &DiscoveryParams, out: &mut Contributions) {
    out.push(((h, SiteOut::Stats(stats(r))), 1));
    let mut push = |o: SiteOut, d: isize| out.push(((NO_SITE, o), d));
    for s in &r.steps {
        push(SiteOut::Gain(s.gain), 1);
    }
    for &k in &params.curve_budgets {
        let picks = crate::algo::greedy::budgeted(&r.steps, k as usize);
        push(
            SiteOut::Curve {
                budget: k,
                covered: covered(picks),
                picks: picks.len() as u64,
                coverable: r.coverable,
            },
            1,
        );
    }
    for (bin, &pairs) in r.jaccard.iter().enumerate() {
        if pairs > 0 {
            push(SiteOut::JaccardBin(bin as u8), pairs as isize);
        }
    }
    for &(policy, budget, chosen, covered) in &r.policies {
        push(
            SiteOut::Policy {
                policy,
                budget,
                chosen,
                covered,
                coverable: r.coverable,
            },
            1,
        );
    }
}

/// New pages covered by a prefix of the greedy picks.
fn covered(picks: &[CoverStep]) -> u64 {
    picks.last().map_or(0, |s| s.covered)
}

/// The site's closure statistics, for its cover summary.
fn stats(r: &RoundResult) -> CoverStats {
    let c90 = crate::algo::greedy::partial(&r.steps, 0.9, r.coverable);
    CoverStats {
        covering_pairs: r.covering_pairs as i64,
        coverable: r.coverable as i64,
        cover90_size: c90.len() as i64,
        cover90_covered: covered(c90) as i64,
        cover100_size: r.steps.len() as i64,
        cover100_covered: covered(&r.steps) as i64,
    }
}

/// The site's rows of `cover_trajectory` and `clusters`, named with `site`.
fn site_rows(
    site: &str,
    sets: &RoundSets,
    r: &RoundResult,
    steps: &mut SnapshotPart<CoverTrajectoryRow>,
    members: &mut SnapshotPart<ClusterRow>,
) {
    for s in &r.steps {
        let row = CoverTrajectoryRow {
            site: site.to_string(),
            rank: s.rank as i64,
            url: sets.pages[s.page].0.clone(),
            gain: s.gain as i64,
            covered: s.covered as i64,
        };
        steps.push(&row);
    }
    for c in &r.clusters {
        for &m in &c.members {
            let row = ClusterRow {
                site: site.to_string(),
                cluster: i64::from(c.id),
                url: sets.pages[m].0.clone(),
                representative: m == c.representative,
                q_bits: c.q.to_bits(),
            };
            members.push(&row);
        }
    }
}
