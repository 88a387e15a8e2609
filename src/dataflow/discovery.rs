//! Discovery of new content (ALGORITHMS.md section 1, docs/discovery.md): the
//! aggregates over the per-site rounds
//! ([`site_rounds`](super::site_rounds)).
//!
//! Aggregates gather only per-site numbers onto the worker that owns a table's
//! key, never pages or links: identical contributions consolidate into one value
//! with a multiplicity before they travel.

use std::collections::HashSet;

use differential_dataflow::VecCollection;

use crate::algo::greedy::greedy_cover;
use crate::algo::site_round::{Policy, JACCARD_BINS};
use crate::job::DiscoveryParams;
use crate::model::{HostId, PageId, Seq};
use crate::output::discovery::{
    CoverCurveRow, CoverStats, CoverSummary, GlobalCoverRow, JaccardRow, NewSitesRow, PolicyRow,
    SiteCoverRow, SiteOut,
};
use crate::output::rows::{HostCounts, SnapshotRow};

/// Returns a cover summary for every old site with new pages now (a site all of
/// whose pages are new has nothing to cover them with; new sites are counted
/// apart): its new and old page counts, and the closure's statistics (none when
/// every new page is an orphan).
pub fn cover_summaries<'s>(
    counts: VecCollection<'s, Seq, (HostId, HostCounts)>,
    stats: VecCollection<'s, Seq, (HostId, CoverStats)>,
) -> VecCollection<'s, Seq, (HostId, CoverSummary)> {
    let stats = stats.map(|(h, s)| (h, Ok(s)));
    counts
        .filter(|(_, c)| c.new_pages > 0 && c.pages_fetched > c.new_pages)
        .map(|(h, c)| (h, Err(c)))
        .concat(stats)
        .reduce_named("CoverSummary", |_site, input, output| {
            // Err: the host's counts (a site has new pages); Ok: its closure stats.
            let counts = input.iter().find_map(|(v, _)| v.as_ref().err().copied());
            let stats = input.iter().find_map(|(v, _)| v.as_ref().ok().copied());
            if let Some(c) = counts {
                let s = stats.unwrap_or_default();
                output.push((
                    CoverSummary {
                        old_pages: c.pages_fetched - c.new_pages,
                        new_pages: c.new_pages,
                        orphans: c.new_pages - s.coverable,
                        stats: s,
                    },
                    1,
                ));
            }
        })
}

/// `cover_curve`: the k-budgeted covers averaged over the evaluated sites.
pub fn cover_curve<'s>(
    rounds: VecCollection<'s, Seq, (HostId, SiteOut)>,
) -> VecCollection<'s, Seq, CoverCurveRow> {
    rounds
        .flat_map(|(_, o)| match o {
            SiteOut::Curve {
                budget,
                covered,
                picks,
                coverable,
            } => Some((budget, (picks, covered, coverable))),
            _ => None,
        })
        .reduce_named("CoverCurve", |&budget, input, output| {
            let (mut sites, mut covered, mut coverable) = (0i64, 0i64, 0i64);
            let mut overheads = Vec::new();
            for (&(picks, c, v), n) in input {
                let n = *n as i64;
                sites += n;
                covered += c as i64 * n;
                coverable += v as i64 * n;
                overheads.extend(std::iter::repeat_n(picks as f64 / c as f64, n as usize));
            }
            // Summed smallest first, so the result is the same however many workers
            // the sites were spread over.
            overheads.sort_by(f64::total_cmp);
            let sum: f64 = overheads.iter().fold(0.0, |a, b| a + b);
            let row = CoverCurveRow {
                budget: budget as i64,
                sites,
                covered,
                coverable,
                overhead_sum_bits: sum.to_bits(),
            };
            output.push((row, 1isize));
        })
        .map(|(_, row)| row)
}

/// `global_cover`: the greedy cover of all sites at once, from the multiset of
/// per-site gains (the merge by gain of the per-site trajectories).
pub fn global_cover<'s>(
    rounds: VecCollection<'s, Seq, (HostId, SiteOut)>,
    params: &DiscoveryParams,
) -> VecCollection<'s, Seq, GlobalCoverRow> {
    let budgets = params.global_budgets.clone();
    rounds
        .flat_map(|(_, o)| match o {
            SiteOut::Gain(g) => Some(((), (false, g))),
            SiteOut::Stats(s) => Some(((), (true, s.coverable as u64))),
            _ => None,
        })
        .reduce_named("GlobalCover", move |_, input, output| {
            let mut coverable = 0i64;
            let mut gains: Vec<(u64, i64)> = Vec::new();
            for (&(is_coverable, v), n) in input {
                if is_coverable {
                    coverable += v as i64 * *n as i64;
                } else {
                    gains.push((v, *n as i64));
                }
            }
            gains.sort_unstable_by_key(|g| std::cmp::Reverse(g.0));
            let total: i64 = gains.iter().map(|g| g.1).sum();
            for &k in &budgets {
                let pages = (k as i64).min(total);
                let (mut left, mut covered) = (pages, 0i64);
                for &(g, n) in &gains {
                    let take = left.min(n);
                    covered += take * g as i64;
                    left -= take;
                }
                let row = GlobalCoverRow {
                    budget: k as i64,
                    pages,
                    covered,
                    coverable,
                };
                output.push((row, 1isize));
            }
        })
        .map(|(_, row)| row)
}

/// `jaccard_histogram`: the per-site histograms summed; all bins, once any pair
/// exists.
pub fn jaccard_histogram<'s>(
    rounds: VecCollection<'s, Seq, (HostId, SiteOut)>,
) -> VecCollection<'s, Seq, JaccardRow> {
    rounds
        .flat_map(|(_, o)| match o {
            SiteOut::JaccardBin(b) => Some(((), b)),
            _ => None,
        })
        .reduce_named("JaccardHistogram", |_, input, output| {
            let mut pairs = [0i64; JACCARD_BINS];
            for (&bin, n) in input {
                pairs[bin as usize] += *n as i64;
            }
            for (bin, &pairs) in pairs.iter().enumerate() {
                let row = JaccardRow {
                    bin: bin as u8,
                    pairs,
                };
                output.push((row, 1isize));
            }
        })
        .map(|(_, row)| row)
}

/// `policy_eval`: each policy's picks and their coverage summed over the sites.
pub fn policy_eval<'s>(
    rounds: VecCollection<'s, Seq, (HostId, SiteOut)>,
) -> VecCollection<'s, Seq, PolicyRow> {
    rounds
        .flat_map(|(_, o)| match o {
            SiteOut::Policy {
                policy,
                budget,
                chosen,
                covered,
                coverable,
            } => Some(((policy, budget), (chosen, covered, coverable))),
            _ => None,
        })
        .reduce_named(
            "PolicyEval",
            |&(policy, budget): &(Policy, Option<u64>), input, output| {
                let mut row = PolicyRow {
                    policy,
                    budget: budget.map(|b| b as i64),
                    sites: 0,
                    chosen: 0,
                    covered: 0,
                    coverable: 0,
                };
                for (&(chosen, covered, coverable), n) in input {
                    let n = *n as i64;
                    row.sites += n;
                    row.chosen += chosen as i64 * n;
                    row.covered += covered as i64 * n;
                    row.coverable += coverable as i64 * n;
                }
                output.push((row, 1isize));
            },
        )
        .map(|(_, row)| row)
}

/// `new_sites`: new pages on new and old sites, from the snapshot's totals.
pub fn new_sites<'s>(
    totals: VecCollection<'s, Seq, SnapshotRow>,
) -> VecCollection<'s, Seq, NewSitesRow> {
    totals.map(|t| NewSitesRow {
        new_pages: t.totals.new_pages,
        on_new_sites: t.new_pages_on_new_hosts,
        new_sites: t.new_hosts,
    })
}

/// `site_cover`: the greedy cover of the new sites by old pages.
///
/// `starts` are the ledger's candidates `(site, (x, url of x))`; joined with the
/// new sites they become the true pairs, which (few: only links into new sites)
/// meet on one worker for the greedy cover across all sites.
pub fn site_cover<'s>(
    starts: VecCollection<'s, Seq, (HostId, (PageId, String))>,
    counts: VecCollection<'s, Seq, (HostId, HostCounts)>,
) -> VecCollection<'s, Seq, SiteCoverRow> {
    let new_sites = counts
        .filter(|(_, c)| c.new_host)
        .map(|(h, c)| (h, c.new_pages));
    starts
        .join_map(new_sites, |site, (_, url), pages| {
            ((), (url.clone(), *site, *pages))
        })
        .reduce_named("SiteCover", |_, input, output| {
            // Sorted by URL: group the new sites each old page links to.
            let mut sets: Vec<(&String, Vec<HostId>)> = Vec::new();
            let mut pages_of = std::collections::HashMap::new();
            for ((url, site, pages), _) in input {
                pages_of.insert(*site, *pages);
                match sets.last_mut() {
                    Some((u, sites)) if *u == url => sites.push(*site),
                    _ => sets.push((url, vec![*site])),
                }
            }
            let mut covered: HashSet<HostId> = HashSet::new();
            let mut pages_covered = 0i64;
            for step in greedy_cover(&sets) {
                for site in &sets[step.page].1 {
                    if covered.insert(*site) {
                        pages_covered += pages_of[site];
                    }
                }
                let row = SiteCoverRow {
                    rank: step.rank as i64,
                    url: sets[step.page].0.clone(),
                    gained: step.gain as i64,
                    sites_covered: step.covered as i64,
                    pages_covered,
                };
                output.push((row, 1isize));
            }
        })
        .map(|(_, row)| row)
}
