//! GREEDY covers of new pages by old pages, and their merge across sites.
//!
//! Dasgupta, Ghosh, Kumar, Olston, Pandey, Tomkins, "The Discoverability of the
//! Web", WWW 2007, Section 2.2: given the old pages `x` of a site with the sets
//! `N(x)` of new pages they cover, repeatedly take the old page that covers the most
//! still-uncovered new pages. The order of picks is the *trajectory*: a prefix of
//! length `k` is the k-budgeted cover, and the shortest prefix covering a fraction
//! `ρ` of the coverable new pages is the ρ-partial cover. Ties go to the smallest
//! key (the URL), and a page that adds nothing is never picked, so the trajectory
//! is unique and any independent implementation reproduces it.
//!
//! Section 4.4 observes that per-site gains never increase, so merging the
//! sites' trajectories by gain (ties: smallest key) is the greedy cover of the
//! union of the sites.
//!
//! # Memory and time
//! Lazy greedy: the sets are held once (`Σ |N(x)|` ids) plus one heap entry per
//! page; each pick re-evaluates only the pages whose stale gain reaches the top,
//! `O(Σ |N(x)| log n)` in all.
//!
//! # Examples
//! ```
//! use webevo::algo::greedy::greedy_cover;
//! // The paper's Figure 1: p1 reaches every new page (p6, p7 through new p4).
//! let sets = vec![("p1", vec![4, 5, 6, 7]), ("p3", vec![5])];
//! let t = greedy_cover(&sets);
//! assert_eq!(t.len(), 1);
//! assert_eq!((t[0].page, t[0].gain, t[0].covered), (0, 4, 4));
//! ```

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashSet};

/// One pick of a greedy cover.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CoverStep {
    /// 1 for the first pick.
    pub rank: u32,
    /// Index of the picked page in the input.
    pub page: usize,
    /// New pages this pick covers that no earlier pick did.
    pub gain: u64,
    /// New pages covered by the picks up to this one.
    pub covered: u64,
    /// `rank / covered`: pages fetched per new page found.
    pub overhead: f64,
}

/// The greedy trajectory over `sets` (`(key, N(x))`; `N(x)` need not be sorted but
/// must be free of duplicates). Stops when no page adds anything.
pub fn greedy_cover<K: Ord, Y: Copy + Eq + std::hash::Hash>(
    sets: &[(K, Vec<Y>)],
) -> Vec<CoverStep> {
    // Heap entries: (stale gain, key order) with the smallest key first on ties.
    let mut order: Vec<usize> = (0..sets.len()).collect();
    order.sort_by(|&a, &b| sets[a].0.cmp(&sets[b].0));
    let mut heap: BinaryHeap<(u64, Reverse<usize>)> = order
        .iter()
        .enumerate()
        .map(|(pos, &i)| (sets[i].1.len() as u64, Reverse(pos)))
        .collect();
    let mut covered: HashSet<Y, foldhash::fast::FixedState> = HashSet::default();
    let mut steps = Vec::new();
    while let Some((stale, Reverse(pos))) = heap.pop() {
        if stale == 0 {
            break;
        }
        let i = order[pos];
        let gain = sets[i].1.iter().filter(|y| !covered.contains(y)).count() as u64;
        // Gains only shrink, so a page whose fresh gain still beats (or ties with a
        // larger key) every stale gain in the heap is the true maximum.
        let still_best = heap.peek().is_none_or(|top| (gain, Reverse(pos)) >= *top);
        if gain > 0 && still_best {
            covered.extend(sets[i].1.iter().copied());
            let rank = steps.len() as u32 + 1;
            let total = covered.len() as u64;
            steps.push(CoverStep {
                rank,
                page: i,
                gain,
                covered: total,
                overhead: rank as f64 / total as f64,
            });
        } else if gain > 0 {
            heap.push((gain, Reverse(pos)));
        }
    }
    steps
}

/// The k-budgeted cover: the first `k` picks.
pub fn budgeted(trajectory: &[CoverStep], k: usize) -> &[CoverStep] {
    &trajectory[..k.min(trajectory.len())]
}

/// The ρ-partial cover: the shortest prefix covering at least `rho · coverable`
/// new pages (`coverable` = new pages covered by any old page).
pub fn partial(trajectory: &[CoverStep], rho: f64, coverable: u64) -> &[CoverStep] {
    let need = rho * coverable as f64;
    let n = trajectory
        .iter()
        .position(|s| s.covered as f64 >= need - 1e-9)
        .map_or(trajectory.len(), |p| p + 1);
    &trajectory[..n]
}

/// Merges per-site trajectories into the greedy cover of all sites: repeatedly the
/// site whose next pick gains most (ties: smallest key of that pick). Returns
/// `(site, step index)` pairs in global order.
pub fn merge_sites<K: Ord>(sites: &[(Vec<CoverStep>, Vec<K>)]) -> Vec<(usize, usize)> {
    struct Head<'a, K> {
        gain: u64,
        key: &'a K,
        site: usize,
        step: usize,
    }
    impl<K: Ord> PartialEq for Head<'_, K> {
        fn eq(&self, o: &Self) -> bool {
            self.cmp(o) == Ordering::Equal
        }
    }
    impl<K: Ord> Eq for Head<'_, K> {}
    impl<K: Ord> PartialOrd for Head<'_, K> {
        fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
            Some(self.cmp(o))
        }
    }
    impl<K: Ord> Ord for Head<'_, K> {
        fn cmp(&self, o: &Self) -> Ordering {
            // Max-heap: larger gain first, then smaller key, then smaller site.
            self.gain
                .cmp(&o.gain)
                .then_with(|| o.key.cmp(self.key))
                .then_with(|| o.site.cmp(&self.site))
        }
    }
    let head = |site: usize, step: usize| {
        sites[site].0.get(step).map(|s| Head {
            gain: s.gain,
            key: &sites[site].1[s.page],
            site,
            step,
        })
    };
    let mut heap: BinaryHeap<Head<K>> = (0..sites.len()).filter_map(|s| head(s, 0)).collect();
    let mut out = Vec::new();
    while let Some(h) = heap.pop() {
        out.push((h.site, h.step));
        if let Some(next) = head(h.site, h.step + 1) {
            heap.push(next);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use std::collections::BTreeSet;

    /// Eager greedy straight from the definition: every pick scans every page.
    fn brute_force(sets: &[(String, Vec<u32>)]) -> Vec<(usize, u64, u64)> {
        let mut covered = BTreeSet::new();
        let mut picked = vec![false; sets.len()];
        let mut out = Vec::new();
        loop {
            let best = (0..sets.len())
                .filter(|&i| !picked[i])
                .map(|i| {
                    (
                        sets[i].1.iter().filter(|y| !covered.contains(*y)).count() as u64,
                        i,
                    )
                })
                .filter(|(g, _)| *g > 0)
                .max_by(|a, b| a.0.cmp(&b.0).then_with(|| sets[b.1].0.cmp(&sets[a.1].0)));
            let Some((gain, i)) = best else { return out };
            picked[i] = true;
            covered.extend(sets[i].1.iter().copied());
            out.push((i, gain, covered.len() as u64));
        }
    }

    fn random_sets(rng: &mut rand_pcg::Pcg64Mcg) -> Vec<(String, Vec<u32>)> {
        let n = rng.random_range(0..12);
        let universe = rng.random_range(1..30);
        (0..n)
            .map(|i| {
                let mut s: Vec<u32> = (0..rng.random_range(0..8))
                    .map(|_| rng.random_range(0..universe))
                    .collect();
                s.sort();
                s.dedup();
                // Keys in an order unrelated to the index, with shared prefixes.
                (format!("http://a.com/{}", (i * 7) % 13), s)
            })
            .collect()
    }

    #[test]
    fn lazy_greedy_equals_eager_greedy() {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(7);
        for _ in 0..2000 {
            let sets = random_sets(&mut rng);
            let got: Vec<_> = greedy_cover(&sets)
                .iter()
                .map(|s| (s.page, s.gain, s.covered))
                .collect();
            assert_eq!(got, brute_force(&sets), "{sets:?}");
        }
    }

    #[test]
    fn figure_one_of_the_paper() {
        // Old p1, p2, p3; new p4..p7; p1 -> p4, p5; p3 -> p5; p4 -> p6, p7 (through
        // new p4, so p1 covers p6 and p7 too); p2 links to no new page.
        let sets = vec![("p1", vec![4u32, 5, 6, 7]), ("p2", vec![]), ("p3", vec![5])];
        let t = greedy_cover(&sets);
        assert_eq!(t.len(), 1, "recrawling p1 alone discovers every new page");
        assert_eq!(
            (t[0].page, t[0].gain, t[0].covered, t[0].overhead),
            (0, 4, 4, 0.25)
        );
    }

    #[test]
    fn ties_go_to_the_smallest_key() {
        let sets = vec![("b", vec![1u32, 2]), ("a", vec![3, 4]), ("c", vec![1, 3])];
        let order: Vec<usize> = greedy_cover(&sets).iter().map(|s| s.page).collect();
        assert_eq!(order, vec![1, 0]);
    }

    #[test]
    fn budgets_and_partial_covers() {
        let sets = vec![
            ("a", vec![1u32, 2, 3, 4, 5, 6]),
            ("b", vec![7, 8, 9]),
            ("c", vec![10]),
        ];
        let t = greedy_cover(&sets);
        assert_eq!(budgeted(&t, 2).len(), 2);
        assert_eq!(budgeted(&t, 10).len(), 3);
        assert_eq!(partial(&t, 0.9, 10).len(), 2, "9 of 10 is a 90% cover");
        assert_eq!(partial(&t, 1.0, 10).len(), 3);
        assert_eq!(partial(&t, 0.5, 10).len(), 1);
    }

    #[test]
    fn merging_sites_is_the_greedy_of_their_union() {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(11);
        for _ in 0..500 {
            let sites: Vec<Vec<(String, Vec<u32>)>> = (0..rng.random_range(1..5))
                .map(|s| {
                    random_sets(&mut rng)
                        .into_iter()
                        .map(|(k, ys)| {
                            (
                                format!("{k}/{s}"),
                                ys.into_iter().map(|y| y + 1000 * s as u32).collect(),
                            )
                        })
                        .collect()
                })
                .collect();
            let union: Vec<(String, Vec<u32>)> = sites.iter().flatten().cloned().collect();
            let want: Vec<(String, u64)> = brute_force(&union)
                .into_iter()
                .map(|(i, g, _)| (union[i].0.clone(), g))
                .collect();
            let per_site: Vec<(Vec<CoverStep>, Vec<String>)> = sites
                .iter()
                .map(|s| (greedy_cover(s), s.iter().map(|(k, _)| k.clone()).collect()))
                .collect();
            let got: Vec<(String, u64)> = merge_sites(&per_site)
                .into_iter()
                .map(|(s, i)| {
                    let step = per_site[s].0[i];
                    (per_site[s].1[step.page].clone(), step.gain)
                })
                .collect();
            assert_eq!(got, want);
        }
    }
}
