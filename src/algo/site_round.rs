//! One site at one snapshot: everything discovery derives from its closure `N_t`,
//! and the site's history that the recrawl policies learn from.
//!
//! docs/discovery.md defines every quantity here. A *round* is a snapshot at which
//! the site had coverable new pages; the history keeps, per page that ever covered
//! one, its windowed scores and bound flags, plus the clusters and greedy cover of
//! the latest recrawl round. [`evaluate`] scores the policies against `N_t` using
//! the history of earlier rounds only, then [`SiteHistory::record`] adds round `t`.
//! The history grows with the pages that ever covered new content, never with the
//! site's size, and the work per round with `Σ |N_t(x)|` and that history.

use std::collections::{BTreeMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::algo::greedy::{greedy_cover, CoverStep};
use crate::algo::jaccard::{jaccard_histogram, single_linkage_clusters, Cluster};
use crate::job::DiscoveryParams;
use crate::model::{PageId, Seq};

/// The Jaccard histogram's bins (width 0.05).
pub const JACCARD_BINS: usize = 20;

/// The recrawl policies of the paper's Section 5, and the bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Policy {
    OdWin,
    OdAll,
    Od1,
    CliqWin,
    Cliq1,
    Cov,
    Optimal,
    BoundAll,
    BoundW2,
    BoundW4,
}

impl Policy {
    pub const BUDGETED: [Policy; 7] = [
        Policy::OdWin,
        Policy::OdAll,
        Policy::Od1,
        Policy::CliqWin,
        Policy::Cliq1,
        Policy::Cov,
        Policy::Optimal,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Policy::OdWin => "OD-WIN",
            Policy::OdAll => "OD-ALL",
            Policy::Od1 => "OD-1",
            Policy::CliqWin => "CLIQ-WIN",
            Policy::Cliq1 => "CLIQ-1",
            Policy::Cov => "COV",
            Policy::Optimal => "OPTIMAL",
            Policy::BoundAll => "BOUND-ALL",
            Policy::BoundW2 => "BOUND-W2",
            Policy::BoundW4 => "BOUND-W4",
        }
    }
}

/// The old pages of one site at `t` with their `N_t(x)`, ordered by URL.
pub struct RoundSets {
    pub pages: Vec<(String, PageId, Vec<u64>)>,
}

/// What one site contributes at one snapshot.
pub struct RoundResult {
    pub steps: Vec<CoverStep>,
    pub coverable: u64,
    pub covering_pairs: u64,
    pub jaccard: Vec<u64>,
    pub clusters: Vec<Cluster>,
    /// `p_t(x)` per input page.
    pub p: Vec<f64>,
    /// Per policy and budget (`None` for the bounds): pages chosen and new pages
    /// they cover.
    pub policies: Vec<(Policy, Option<u64>, u64, u64)>,
}

/// What the history keeps of one page that covered new content in some round.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct PageHistory {
    url: String,
    /// Windowed numerators over recrawl rounds (OD-WIN) and all rounds (OD-ALL).
    num_win: f64,
    num_all: f64,
    /// `p_{r*}` at the latest recrawl round; 0 when it covered nothing then.
    p_latest: f64,
    /// Covered something in any round; in a round `≡ 0 mod 2`; `mod 4`.
    bound_all: bool,
    bound_w2: bool,
    bound_w4: bool,
}

/// One site's history of rounds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SiteHistory {
    last_round: Option<Seq>,
    last_recrawl: Option<Seq>,
    den_win: f64,
    den_all: f64,
    pages: BTreeMap<PageId, PageHistory>,
    /// The latest recrawl round's clusters as `(q, representative)`.
    latest_clusters: Vec<(f64, PageId)>,
    /// The latest recrawl round's greedy picks, in order.
    latest_cover: Vec<PageId>,
}

/// Computes every per-site quantity of round `t` (`sets` non-empty) and scores
/// the policies of `history` against it.
pub fn evaluate(history: &SiteHistory, sets: &RoundSets, params: &DiscoveryParams) -> RoundResult {
    let pages = &sets.pages;
    let keyed: Vec<(&str, Vec<u64>)> = pages
        .iter()
        .map(|(url, _, ys)| (url.as_str(), ys.clone()))
        .collect();
    let steps = greedy_cover(&keyed);
    let mut all: Vec<u64> = pages.iter().flat_map(|p| p.2.iter().copied()).collect();
    let covering_pairs = all.len() as u64;
    all.sort_unstable();
    all.dedup();
    let coverable = all.len() as u64;
    let p: Vec<f64> = pages
        .iter()
        .map(|(_, _, ys)| ys.len() as f64 / coverable as f64)
        .collect();
    let jaccard = jaccard_histogram(&keyed, JACCARD_BINS).bins;
    let clusters = single_linkage_clusters(&keyed, 1.0 - params.eps_b, |i| p[i]);

    let index: BTreeMap<PageId, usize> = pages
        .iter()
        .enumerate()
        .map(|(i, (_, x, _))| (*x, i))
        .collect();
    let max_budget = params.budgets.last().copied().unwrap_or(0) as usize;
    let mut policies = Vec::new();
    let mut score = |policy: Policy, ranked: &mut dyn Iterator<Item = PageId>| {
        let ranked: Vec<PageId> = ranked.take(max_budget).collect();
        for (k, chosen, covered) in prefix_coverage(&ranked, &params.budgets, &index, pages) {
            policies.push((policy, Some(k), chosen, covered));
        }
    };
    let h = history;
    score(Policy::OdWin, &mut h.ranked_by(|p| p.num_win / h.den_win));
    score(Policy::OdAll, &mut h.ranked_by(|p| p.num_all / h.den_all));
    score(Policy::Od1, &mut h.ranked_by(|p| p.p_latest));
    score(Policy::CliqWin, &mut h.cliq(true).into_iter());
    score(Policy::Cliq1, &mut h.cliq(false).into_iter());
    score(Policy::Cov, &mut h.latest_cover.iter().copied());
    score(Policy::Optimal, &mut steps.iter().map(|s| pages[s.page].1));
    for (policy, flag) in [
        (
            Policy::BoundAll,
            (|p: &PageHistory| p.bound_all) as fn(&PageHistory) -> bool,
        ),
        (Policy::BoundW2, |p| p.bound_w2),
        (Policy::BoundW4, |p| p.bound_w4),
    ] {
        let chosen: Vec<PageId> = h
            .pages
            .iter()
            .filter(|(_, p)| flag(p))
            .map(|(x, _)| *x)
            .collect();
        let covered = union_size(chosen.iter(), &index, pages);
        policies.push((policy, None, chosen.len() as u64, covered));
    }
    RoundResult {
        steps,
        coverable,
        covering_pairs,
        jaccard,
        clusters,
        p,
        policies,
    }
}

/// `(budget, pages chosen, new pages covered)` for each budget's prefix of `ranked`.
fn prefix_coverage(
    ranked: &[PageId],
    budgets: &[u64],
    index: &BTreeMap<PageId, usize>,
    pages: &[(String, PageId, Vec<u64>)],
) -> Vec<(u64, u64, u64)> {
    let mut covered: HashSet<u64, foldhash::fast::FixedState> = HashSet::default();
    let mut out = Vec::with_capacity(budgets.len());
    let mut taken = 0;
    for &k in budgets {
        while taken < ranked.len() && (taken as u64) < k {
            if let Some(&i) = index.get(&ranked[taken]) {
                covered.extend(pages[i].2.iter().copied());
            }
            taken += 1;
        }
        out.push((k, taken as u64, covered.len() as u64));
    }
    out
}

fn union_size<'a>(
    chosen: impl Iterator<Item = &'a PageId>,
    index: &BTreeMap<PageId, usize>,
    pages: &[(String, PageId, Vec<u64>)],
) -> u64 {
    let mut covered: HashSet<u64, foldhash::fast::FixedState> = HashSet::default();
    for x in chosen {
        if let Some(&i) = index.get(x) {
            covered.extend(pages[i].2.iter().copied());
        }
    }
    covered.len() as u64
}

impl SiteHistory {
    /// Pages with a positive score, best first; ties to the smallest URL.
    fn ranked_by(&self, score: impl Fn(&PageHistory) -> f64) -> impl Iterator<Item = PageId> {
        let mut scored: Vec<(f64, &str, PageId)> = self
            .pages
            .iter()
            .map(|(x, p)| (score(p), p.url.as_str(), *x))
            .filter(|(s, _, _)| *s > 0.0)
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
        scored
            .into_iter()
            .map(|(_, _, x)| x)
            .collect::<Vec<_>>()
            .into_iter()
    }

    /// The representatives CLIQ picks, best first: the latest recrawl round's
    /// clusters, plus (windowed) a singleton for every other page that scores.
    fn cliq(&self, windowed: bool) -> Vec<PageId> {
        let mut clusters: Vec<(f64, &str, PageId)> = self
            .latest_clusters
            .iter()
            .map(|(q, x)| (*q, self.pages[x].url.as_str(), *x))
            .collect();
        if windowed {
            for (x, p) in &self.pages {
                let q = p.num_win / self.den_win;
                if p.p_latest == 0.0 && q > 0.0 {
                    clusters.push((q, p.url.as_str(), *x));
                }
            }
        }
        clusters.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
        clusters.into_iter().map(|(_, _, x)| x).collect()
    }

    /// Adds round `t` (the site's closure `sets` and what [`evaluate`] derived
    /// from it) to the history.
    pub fn record(
        &mut self,
        t: Seq,
        sets: &RoundSets,
        result: &RoundResult,
        params: &DiscoveryParams,
    ) {
        for (url, x, _) in &sets.pages {
            let page = self.pages.entry(*x).or_default();
            if page.url.is_empty() {
                page.url = url.clone();
            }
        }
        let decay = |last: Option<Seq>| last.map_or(0.0, |r| params.alpha.powi((t - r) as i32));
        // Every round: OD-ALL.
        let f = decay(self.last_round);
        self.den_all = self.den_all * f + 1.0;
        for p in self.pages.values_mut() {
            p.num_all *= f;
        }
        let recrawl = t.is_multiple_of(u64::from(params.delta));
        if recrawl {
            let f = decay(self.last_recrawl);
            self.den_win = self.den_win * f + 1.0;
            for p in self.pages.values_mut() {
                p.num_win *= f;
                p.p_latest = 0.0;
            }
        }
        for (i, (_, x, _)) in sets.pages.iter().enumerate() {
            let page = self.pages.get_mut(x).expect("inserted above");
            let p = result.p[i];
            page.num_all += p;
            page.bound_all = true;
            page.bound_w2 |= t.is_multiple_of(2);
            page.bound_w4 |= t.is_multiple_of(4);
            if recrawl {
                page.num_win += p;
                page.p_latest = p;
            }
        }
        self.last_round = Some(t);
        if recrawl {
            self.last_recrawl = Some(t);
            self.latest_clusters = result
                .clusters
                .iter()
                .map(|c| (c.q, sets.pages[c.representative].1))
                .collect();
            self.latest_cover = result.steps.iter().map(|s| sets.pages[s.page].1).collect();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sets(pages: &[(&str, &[u64])]) -> RoundSets {
        RoundSets {
            pages: pages
                .iter()
                .map(|(u, ys)| (u.to_string(), PageId::of(u), ys.to_vec()))
                .collect(),
        }
    }

    fn policy(r: &RoundResult, p: Policy, k: Option<u64>) -> (u64, u64) {
        let (_, _, c, v) = r
            .policies
            .iter()
            .find(|(q, b, _, _)| *q == p && *b == k)
            .unwrap();
        (*c, *v)
    }

    #[test]
    fn policies_learn_from_earlier_rounds_only() {
        let params = DiscoveryParams::default();
        let mut h = SiteHistory::default();
        // Round 1: a covers 3 new pages, b covers 1.
        let r1 = sets(&[("http://s/a", &[1, 2, 3]), ("http://s/b", &[4])]);
        let e1 = evaluate(&h, &r1, &params);
        assert_eq!(e1.coverable, 4);
        assert_eq!(
            policy(&e1, Policy::OdWin, Some(1)),
            (0, 0),
            "no history yet"
        );
        assert_eq!(policy(&e1, Policy::Optimal, Some(1)), (1, 3));
        assert_eq!(policy(&e1, Policy::Optimal, Some(10)), (2, 4));
        h.record(1, &r1, &e1, &params);
        // Round 2: now b is the productive page; the policies still pick a first.
        let r2 = sets(&[("http://s/a", &[5]), ("http://s/b", &[6, 7])]);
        let e2 = evaluate(&h, &r2, &params);
        assert_eq!(policy(&e2, Policy::OdWin, Some(1)), (1, 1));
        assert_eq!(policy(&e2, Policy::Od1, Some(10)), (2, 3));
        assert_eq!(policy(&e2, Policy::Cov, Some(1)), (1, 1));
        assert_eq!(policy(&e2, Policy::Optimal, Some(1)), (1, 2));
        assert_eq!(policy(&e2, Policy::BoundAll, None), (2, 3));
        // Round 1 is odd, so the periodic bounds saw nothing.
        assert_eq!(policy(&e2, Policy::BoundW2, None), (0, 0));
        h.record(2, &r2, &e2, &params);
        // OD-WIN averages: a = (3/4 + 1/3)/2, b = (1/4 + 2/3)/2, so a still leads.
        let r3 = sets(&[("http://s/b", &[8])]);
        let e3 = evaluate(&h, &r3, &params);
        assert_eq!(policy(&e3, Policy::OdWin, Some(1)), (1, 0));
        assert_eq!(policy(&e3, Policy::Od1, Some(1)), (1, 1));
        assert_eq!(policy(&e3, Policy::BoundW2, None), (2, 1));
    }

    #[test]
    fn decay_favours_recent_rounds() {
        let params = DiscoveryParams {
            alpha: 0.1,
            ..DiscoveryParams::default()
        };
        let mut h = SiteHistory::default();
        for (t, r) in [
            (1, sets(&[("http://s/a", &[1, 2, 3]), ("http://s/b", &[4])])),
            (2, sets(&[("http://s/a", &[5]), ("http://s/b", &[6, 7])])),
        ] {
            let e = evaluate(&h, &r, &params);
            h.record(t, &r, &e, &params);
        }
        let r3 = sets(&[("http://s/b", &[8])]);
        let e3 = evaluate(&h, &r3, &params);
        assert_eq!(policy(&e3, Policy::OdWin, Some(1)), (1, 1));
    }

    #[test]
    fn recrawl_period_hides_other_rounds() {
        let params = DiscoveryParams {
            delta: 2,
            ..DiscoveryParams::default()
        };
        let mut h = SiteHistory::default();
        let r1 = sets(&[("http://s/a", &[1])]);
        let e1 = evaluate(&h, &r1, &params);
        h.record(1, &r1, &e1, &params);
        let r2 = sets(&[("http://s/b", &[2])]);
        let e2 = evaluate(&h, &r2, &params);
        // Round 1 is no recrawl: only OD-ALL and the bound know about it.
        assert_eq!(policy(&e2, Policy::OdWin, Some(10)), (0, 0));
        assert_eq!(policy(&e2, Policy::OdAll, Some(10)), (1, 0));
        assert_eq!(policy(&e2, Policy::BoundAll, None), (1, 0));
        h.record(2, &r2, &e2, &params);
        let r3 = sets(&[("http://s/a", &[3]), ("http://s/b", &[4])]);
        let e3 = evaluate(&h, &r3, &params);
        assert_eq!(policy(&e3, Policy::OdWin, Some(10)), (1, 1));
        assert_eq!(policy(&e3, Policy::CliqWin, Some(10)), (1, 1));
        assert_eq!(policy(&e3, Policy::OdAll, Some(10)), (2, 2));
    }

    #[test]
    fn history_round_trips_through_bincode() {
        let params = DiscoveryParams::default();
        let mut h = SiteHistory::default();
        let r = sets(&[("http://s/a", &[1, 2]), ("http://s/b", &[2])]);
        let e = evaluate(&h, &r, &params);
        h.record(4, &r, &e, &params);
        let bytes = bincode::serialize(&h).unwrap();
        assert_eq!(bincode::deserialize::<SiteHistory>(&bytes).unwrap(), h);
    }
}
