//! Discovery of new content (ALGORITHMS.md section 1): the new-page closure and
//! the per-site greedy covers.

use differential_dataflow::operators::iterate::Iterate;
use differential_dataflow::VecCollection;

use crate::algo::greedy::{greedy_cover, partial, CoverStep};
use crate::model::{HostId, HostKey, PageId, Seq};
use crate::output::discovery::{CoverSide, CoverStats, CoverSummary};
use crate::output::rows::HostCounts;

/// Returns the covering pairs `Z_t` as `(y, (x, url of x))`: old page `x`, fetched
/// now, reaches new page `y` through new pages only.
///
/// `start` holds the links old → new as `(y, (x, url))`, `new_edges` the links
/// new → new as `(src, dst)`. Every key is a [`HostKey`], so the whole closure of a
/// site runs on the worker that holds the site; its cost is proportional to the
/// site's new pages and the links among them, not to the site's size.
pub fn covering_pairs<'s>(
    start: VecCollection<'s, Seq, (HostKey<PageId>, (PageId, String))>,
    new_edges: VecCollection<'s, Seq, (HostKey<PageId>, PageId)>,
) -> VecCollection<'s, Seq, (HostKey<PageId>, (PageId, String))> {
    start.clone().iterate(|scope, reach| {
        let edges = new_edges.enter(scope);
        let start = start.enter(scope);
        // Follow one more new → new link from every reached new page.
        reach
            .join_map(edges, |y, x, next| {
                (
                    HostKey {
                        host: y.host,
                        key: *next,
                    },
                    x.clone(),
                )
            })
            .concat(start)
            .distinct()
    })
}

/// Returns per site its greedy trajectory steps and its cover statistics.
pub fn site_covers<'s>(
    pairs: VecCollection<'s, Seq, (HostKey<PageId>, (PageId, String))>,
) -> VecCollection<'s, Seq, (HostId, CoverSide)> {
    pairs
        .map(|(y, (x, url))| (y.host, (url, x, y.key)))
        .reduce_named("GreedyCover", |_site, input, output| {
            // Values arrive sorted by (url, x, y): group them into N(x) per old page.
            let mut sets: Vec<(&String, Vec<PageId>)> = Vec::new();
            let mut coverable: Vec<PageId> = Vec::with_capacity(input.len());
            for ((url, _x, y), _) in input {
                match sets.last_mut() {
                    Some((u, ys)) if *u == url => ys.push(*y),
                    _ => sets.push((url, vec![*y])),
                }
                coverable.push(*y);
            }
            coverable.sort_unstable();
            coverable.dedup();
            let steps = greedy_cover(&sets);
            let coverable = coverable.len() as u64;
            let covered = |s: &[CoverStep]| s.last().map_or(0, |s| s.covered as i64);
            let c90 = partial(&steps, 0.9, coverable);
            let stats = CoverStats {
                covering_pairs: input.len() as i64,
                coverable: coverable as i64,
                cover90_size: c90.len() as i64,
                cover90_covered: covered(c90),
                cover100_size: steps.len() as i64,
                cover100_covered: covered(&steps),
            };
            output.push((CoverSide::Stats(stats), 1));
            for s in &steps {
                let step = CoverSide::Step {
                    rank: s.rank as i64,
                    url: sets[s.page].0.clone(),
                    gain: s.gain as i64,
                    covered: s.covered as i64,
                };
                output.push((step, 1));
            }
        })
}

/// Returns a cover summary for every old site with new pages now (a site all of
/// whose pages are new has nothing to cover them with; new sites are counted
/// apart): its new and old page counts, and the closure's statistics (none when
/// every new page is an orphan).
pub fn cover_summaries<'s>(
    counts: VecCollection<'s, Seq, (HostId, HostCounts)>,
    covers: VecCollection<'s, Seq, (HostId, CoverSide)>,
) -> VecCollection<'s, Seq, (HostId, CoverSummary)> {
    let stats = covers.flat_map(|(h, side)| match side {
        CoverSide::Stats(s) => Some((h, Ok(s))),
        CoverSide::Step { .. } => None,
    });
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
