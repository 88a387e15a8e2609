//! The per-site discovery stage: each snapshot's closure `N_t`, one site at a time,
//! with the site's history of earlier rounds.
//!
//! The closure arrives as differential updates (inserted at a snapshot, retracted
//! at the next), routed by site, so every site's `N_t` is whole on one worker.
//! When a snapshot closes, every site with coverable new pages is evaluated
//! ([`site_round::evaluate`]) and its history extended. What a site contributes is
//! emitted at the snapshot and retracted at the next, like the ledger's events;
//! the aggregates downstream are differential reduces over those contributions.
//!
//! The histories are state: written to `_state/sites-<worker>.bin` after the last
//! snapshot and handed back by the ledger at the restore epoch of the next run.

use std::collections::{BTreeMap, HashMap};

use differential_dataflow::consolidation::consolidate;
use differential_dataflow::{AsCollection, VecCollection};
use serde::{Deserialize, Serialize};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::Concat;

use crate::algo::site_round::{self, RoundResult, RoundSets, SiteHistory};
use crate::dataflow::WorkerCtx;
use crate::error::OutputError;
use crate::job::DiscoveryParams;
use crate::model::{route, HostId, HostKey, PageId, Seq};
use crate::output::discovery::{CoverSide, CoverStats, SiteOut};
use crate::state::{self, StateRecord, StateWriter};

/// The stage's input: a closure update, or a restored history.
#[derive(Clone, Debug, Serialize, Deserialize)]
enum SiteIn {
    /// `(site, x, y)`: old page `x` covers new page `y`.
    Pair(HostId, PageId, PageId),
    /// `(site, x, url of x)`.
    Coverer(HostId, PageId, String),
    Restored(HostId, Vec<u8>),
}

impl SiteIn {
    fn site(&self) -> HostId {
        match self {
            SiteIn::Pair(h, ..) | SiteIn::Coverer(h, ..) | SiteIn::Restored(h, _) => *h,
        }
    }
}

type Out = Vec<((HostId, SiteOut), Seq, isize)>;

/// Evaluates every site's rounds; see the module docs.
pub fn site_rounds<'s>(
    pairs: VecCollection<'s, Seq, (HostKey<PageId>, PageId)>,
    coverers: VecCollection<'s, Seq, (HostId, (PageId, String))>,
    restored: VecCollection<'s, Seq, (HostId, Vec<u8>)>,
    ctx: &WorkerCtx,
) -> VecCollection<'s, Seq, (HostId, SiteOut)> {
    let ctx = ctx.clone();
    let pairs = pairs.map(|(y, x)| SiteIn::Pair(y.host, x, y.key));
    let coverers = coverers.map(|(h, (x, url))| SiteIn::Coverer(h, x, url));
    let restored = restored.map(|(h, bytes)| SiteIn::Restored(h, bytes));
    pairs
        .inner
        .concat(coverers.inner)
        .concat(restored.inner)
        .unary_frontier::<CapacityContainerBuilder<Out>, _, _, _>(
            Exchange::new(|(s, _, _): &(SiteIn, Seq, isize)| route(s.site())),
            "SiteRounds",
            move |cap, _info| {
                let mut epochs = ctx.plan.epochs();
                epochs.push(ctx.plan.finish_epoch());
                let mut cap = Some(cap);
                let mut next = 0;
                let mut stash: BTreeMap<Seq, Vec<(SiteIn, isize)>> = BTreeMap::new();
                let mut sites = Sites::default();
                move |(input, frontier), output| {
                    input.for_each(|_, data| {
                        for (s, t, d) in data.drain(..) {
                            stash.entry(t).or_default().push((s, d));
                        }
                    });
                    while next < epochs.len() && !frontier.less_equal(&epochs[next]) {
                        let t = epochs[next];
                        let c = cap.as_ref().expect("held until the last epoch");
                        for (s, d) in stash.remove(&t).unwrap_or_default() {
                            sites.apply(s, d, &ctx);
                        }
                        if t == ctx.plan.finish_epoch() {
                            if let Err(e) = sites.persist(&ctx) {
                                ctx.log.borrow_mut().error(e);
                            }
                        } else if ctx.plan.writes(t) {
                            let out = sites.evaluate(t, &ctx.plan.job.discovery);
                            // Contributions hold for snapshot t only.
                            output
                                .session(&c.delayed(&t))
                                .give_iterator(out.iter().map(|(o, d)| (o.clone(), t, *d)));
                            output
                                .session(&c.delayed(&(t + 1)))
                                .give_iterator(out.into_iter().map(|(o, d)| (o, t + 1, -d)));
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
        .as_collection()
}

/// One worker's sites: their current closure and their histories.
#[derive(Default)]
struct Sites {
    /// `N_t` per site as `((x, y), multiplicity)` updates.
    closure: HashMap<HostId, Vec<((PageId, PageId), isize)>>,
    /// The URLs of the old pages in `N_t`, as updates.
    urls: HashMap<HostId, Vec<((PageId, String), isize)>>,
    history: HashMap<HostId, SiteHistory>,
}

impl Sites {
    fn apply(&mut self, s: SiteIn, d: isize, ctx: &WorkerCtx) {
        match s {
            SiteIn::Pair(h, x, y) => self.closure.entry(h).or_default().push(((x, y), d)),
            SiteIn::Coverer(h, x, url) => self.urls.entry(h).or_default().push(((x, url), d)),
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

    /// Evaluates every site with coverable new pages at `t` (in site order, so the
    /// output does not depend on hashing) and records the round in its history.
    fn evaluate(&mut self, t: Seq, params: &DiscoveryParams) -> Vec<((HostId, SiteOut), isize)> {
        fn settle<D: Ord>(map: &mut HashMap<HostId, Vec<(D, isize)>>) {
            map.retain(|_, updates| {
                consolidate(updates);
                !updates.is_empty()
            });
        }
        settle(&mut self.closure);
        settle(&mut self.urls);
        let mut site_ids: Vec<HostId> = self.closure.keys().copied().collect();
        site_ids.sort_unstable();
        let mut out = Vec::new();
        for h in site_ids {
            let sets = round_sets(&self.closure[&h], &self.urls[&h]);
            let history = self.history.entry(h).or_default();
            let result = site_round::evaluate(history, &sets, params);
            contributions(h, &sets, &result, params, &mut out);
            history.record(t, &sets, &result, params);
        }
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
        w.finish()
    }
}

/// Groups a site's consolidated closure (sorted by `x`, then `y`) into `N_t(x)`
/// per old page, ordered by URL. `urls` (sorted by `x`) names every `x`.
fn round_sets(
    pairs: &[((PageId, PageId), isize)],
    urls: &[((PageId, String), isize)],
) -> RoundSets {
    let mut pages: Vec<(String, PageId, Vec<u64>)> = Vec::new();
    let mut names = urls.iter();
    for ((x, y), _) in pairs {
        match pages.last_mut() {
            Some(last) if last.1 == *x => last.2.push(y.0),
            _ => {
                let url = names
                    .find(|((u, _), _)| u == x)
                    .map(|((_, url), _)| url.clone())
                    .expect("every covering page has its URL");
                pages.push((url, *x, vec![y.0]));
            }
        }
    }
    pages.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    RoundSets { pages }
}

/// What the site contributes to each discovery table.
fn contributions(
    h: HostId,
    sets: &RoundSets,
    r: &RoundResult,
    params: &DiscoveryParams,
    out: &mut Vec<((HostId, SiteOut), isize)>,
) {
    let mut push = |o: SiteOut, d: isize| out.push(((h, o), d));
    let covered = |picks: &[crate::algo::greedy::CoverStep]| picks.last().map_or(0, |s| s.covered);
    let c90 = crate::algo::greedy::partial(&r.steps, 0.9, r.coverable);
    push(
        SiteOut::Cover(CoverSide::Stats(CoverStats {
            covering_pairs: r.covering_pairs as i64,
            coverable: r.coverable as i64,
            cover90_size: c90.len() as i64,
            cover90_covered: covered(c90) as i64,
            cover100_size: r.steps.len() as i64,
            cover100_covered: covered(&r.steps) as i64,
        })),
        1,
    );
    for s in &r.steps {
        let step = CoverSide::Step {
            rank: s.rank as i64,
            url: sets.pages[s.page].0.clone(),
            gain: s.gain as i64,
            covered: s.covered as i64,
        };
        push(SiteOut::Cover(step), 1);
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
    for c in &r.clusters {
        for &m in &c.members {
            push(
                SiteOut::Cluster {
                    cluster: c.id,
                    url: sets.pages[m].0.clone(),
                    representative: m == c.representative,
                    q_bits: c.q.to_bits(),
                },
                1,
            );
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
