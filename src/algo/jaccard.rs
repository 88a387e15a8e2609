//! Jaccard overlap of the new pages covered by one site's old pages: its histogram
//! over all pairs, and the single-linkage clusters built from it.
//!
//! This module works on one site at one snapshot and knows nothing about dataflow;
//! the caller (a differential `reduce` over one host's covering pairs) hands it plain
//! data.
//!
//! # Definitions
//!
//! From Dasgupta, Ghosh, Kumar, Olston, Pandey, Tomkins, "The Discoverability of the
//! Web", WWW 2007: Section 4.2 (node redundancy, Figure 5) and Section 5.2 (algorithms
//! based on overlap, CLIQ); `ALGORITHMS.md` §1, "Jaccard" and "Clustering".
//!
//! - Each input page `x` is an old page of the site that covers at least one new page;
//!   `N(x)` is the set of new pages it covers (new pages are `u64` ids).
//! - `J(x, y) = |N(x) ∩ N(y)| / |N(x) ∪ N(y)|` for every unordered pair `{x, y}` of
//!   distinct input pages.
//! - [`jaccard_histogram`]: the histogram of `J` over all `C(n, 2)` pairs, in `bins`
//!   equal bins over `[0, 1]` (the project uses 20 bins of width 0.05). Bin `i` is
//!   `[i/bins, (i+1)/bins)`; the last bin is closed, so `J = 1` falls in it. Pairs that
//!   share nothing (`J = 0`, bin 0) are counted arithmetically, `C(n, 2)` minus the
//!   pairs found by joining on the shared new page, and are never enumerated.
//! - [`single_linkage_clusters`]: link `x` and `y` when `J(x, y) >= threshold` (the
//!   project passes `1 - ε_b`, default `ε_b = 0.8`, so 0.2) and `J(x, y) > 0`; the
//!   clusters are the connected components of that graph (single linkage, the paper's
//!   "modified" CLIQ clustering: a page joins a cluster when its overlap with *any*
//!   member is high enough). Each cluster has `q` = the largest weight (`p_i`) of its
//!   members and that member as its representative.
//!
//! # Input requirements
//!
//! Both functions take `sets: &[(K, Vec<u64>)]`, one entry per old page: its key (in
//! practice its URL; used only for deterministic ordering) and `N(x)`. Pages are
//! referred to by their index into `sets`.
//! - `N(x)` should be sorted and duplicate-free, as the pipeline produces it; the
//!   functions do not rely on it (they sort and deduplicate internally), so any list
//!   gives the result for the *set* of its elements.
//! - `N(x)` should be non-empty. An empty `N(x)` is accepted and treated as sharing
//!   nothing with any page (`J = 0` with every other page, so its pairs count in bin 0
//!   and it forms a singleton cluster); `J` of two empty sets is `0/0` and is taken as 0.
//! - Keys should be distinct. Every ordering by key falls back to the index into
//!   `sets` for equal keys, so results stay deterministic either way.
//! - At most `u32::MAX` pages (indices are packed into a `u64` pair key); more panics.
//!
//! # Memory and time
//!
//! Let `m = Σ_x |N(x)|` and `d(y)` = the number of input pages covering new page `y`.
//! - Inverting `N` (the list of covering pages per new page) sorts the `m` pairs
//!   `(y, x)`: `O(m log m)` time, `16 m` bytes.
//! - The join on `y` visits every pair of pages covering the same `y`:
//!   `O(Σ_y d(y)²)` time (`Σ_y d(y)(d(y)-1)/2` hash-map updates). The pair map holds one
//!   entry per *intersecting* pair (at most `min(C(n, 2), Σ_y d(y)(d(y)-1)/2)`), about
//!   16 bytes each plus hash-table overhead. Disjoint pairs cost nothing.
//! - The histogram then costs `O(bins + intersecting pairs)`; the clustering adds a
//!   union-find over the intersecting pairs (near-linear) and `O(n log n)` for the
//!   deterministic ordering of members and clusters.
//!
//! Each function performs its own join; a caller needing both pays the join twice.
//!
//! # Examples
//!
//! ```
//! use webevo::algo::jaccard::{jaccard_histogram, single_linkage_clusters};
//!
//! let sets = vec![
//!     ("http://a.example/1", vec![1, 2, 3]),
//!     ("http://a.example/2", vec![1, 2, 3]),
//!     ("http://a.example/3", vec![7, 8]),
//! ];
//! let h = jaccard_histogram(&sets, 20);
//! assert_eq!(h.total_pairs, 3);
//! assert_eq!(h.intersecting_pairs, 1);
//! assert_eq!(h.bins[19], 1); // pages 1 and 2 cover the same new pages: J = 1
//! assert_eq!(h.bins[0], 2); // page 3 shares nothing with either
//!
//! let p = [0.3, 0.5, 0.2]; // the weights p_i
//! let clusters = single_linkage_clusters(&sets, 0.2, |i| p[i]);
//! assert_eq!(clusters.len(), 2);
//! assert_eq!(clusters[0].members, vec![0, 1]);
//! assert_eq!(clusters[0].representative, 1);
//! assert_eq!(clusters[0].q, 0.5);
//! assert_eq!(clusters[1].members, vec![2]);
//! ```

use std::cmp::Ordering;
use std::collections::HashMap;

use crate::algo::disjoint_sets::DisjointSets;

type FastMap<K, V> = HashMap<K, V, foldhash::fast::FixedState>;

/// Histogram of `J` over all unordered pairs of one site's old pages.
#[derive(Clone, Debug, PartialEq)]
pub struct JaccardHistogram {
    /// Pair counts per bin; bin `i` is `[i/bins, (i+1)/bins)`, the last bin closed.
    /// Sums to `total_pairs`.
    pub bins: Vec<u64>,
    /// Pairs sharing at least one new page (`J > 0`), found by the join on `y`.
    pub intersecting_pairs: u64,
    /// `C(n, 2)` for `n` input pages.
    pub total_pairs: u64,
}

/// One single-linkage cluster of old pages.
#[derive(Clone, Debug, PartialEq)]
pub struct Cluster {
    /// Position of the cluster when clusters are ordered by their smallest member key,
    /// from 0.
    pub id: u32,
    /// Indices into the input, ordered by key (then index).
    pub members: Vec<usize>,
    /// The member with the largest weight; ties go to the smallest key (then index).
    pub representative: usize,
    /// The representative's weight: the largest weight among the members.
    pub q: f64,
}

/// Pair key of `i < j`: both indices packed into one `u64`.
fn pair_key(i: u32, j: u32) -> u64 {
    (u64::from(i) << 32) | u64::from(j)
}

fn unpack(key: u64) -> (usize, usize) {
    ((key >> 32) as usize, (key & 0xffff_ffff) as usize)
}

/// The join on `y`: `|N(i)|` per page `i` and `|N(i) ∩ N(j)|` per intersecting pair
/// `i < j`, keyed by [`pair_key`].
fn pair_intersections<K>(sets: &[(K, Vec<u64>)]) -> (Vec<u64>, FastMap<u64, u64>) {
    let n = sets.len();
    assert!(
        n <= u32::MAX as usize,
        "jaccard: more than u32::MAX pages in one site ({n})"
    );
    // Invert N: (y, x) sorted by new page, then by page index; duplicates dropped.
    let mut inverted: Vec<(u64, u32)> = Vec::with_capacity(sets.iter().map(|s| s.1.len()).sum());
    for (i, (_, covered)) in sets.iter().enumerate() {
        inverted.extend(covered.iter().map(|&y| (y, i as u32)));
    }
    inverted.sort_unstable();
    inverted.dedup();

    let mut sizes = vec![0u64; n];
    for &(_, i) in &inverted {
        sizes[i as usize] += 1;
    }

    let mut inter: FastMap<u64, u64> = FastMap::default();
    for group in inverted.chunk_by(|a, b| a.0 == b.0) {
        // `group` lists the pages covering one new page, in increasing index order.
        for (a, &(_, i)) in group.iter().enumerate() {
            for &(_, j) in &group[a + 1..] {
                *inter.entry(pair_key(i, j)).or_insert(0) += 1;
            }
        }
    }
    (sizes, inter)
}

/// The histogram of `J(x, y)` over all unordered pairs of `sets`, in `bins` equal bins
/// over `[0, 1]`.
///
/// Bin `i` is `[i/bins, (i+1)/bins)` and the last bin is closed. The bin of a pair is
/// computed from the exact rational, `floor(inter · bins / union)` in integer (`u128`)
/// arithmetic, clamped to `bins - 1` (which only `J = 1` reaches), so a `J` that is
/// exactly a bin boundary (for example `1/20` with 20 bins) lands in the bin it starts,
/// with no floating-point rounding.
///
/// Pairs sharing nothing are not enumerated: bin 0 receives `C(n, 2)` minus the
/// intersecting pairs found by the join on the shared new page, plus any intersecting
/// pair whose `J < 1/bins`. See the module docs for input requirements and costs
/// (`O(m log m + Σ_y d(y)²)`).
///
/// # Panics
///
/// If `bins == 0`, or with more than `u32::MAX` pages.
pub fn jaccard_histogram<K>(sets: &[(K, Vec<u64>)], bins: usize) -> JaccardHistogram {
    assert!(bins > 0, "jaccard_histogram: bins must be positive");
    let n = sets.len() as u64;
    let total_pairs = if n < 2 { 0 } else { n * (n - 1) / 2 };
    let (sizes, inter) = pair_intersections(sets);

    let mut counts = vec![0u64; bins];
    let intersecting_pairs = inter.len() as u64;
    for (&key, &common) in &inter {
        let (i, j) = unpack(key);
        let union = sizes[i] + sizes[j] - common;
        let bin = (u128::from(common) * bins as u128 / u128::from(union)) as usize;
        counts[bin.min(bins - 1)] += 1;
    }
    counts[0] += total_pairs - intersecting_pairs;
    JaccardHistogram {
        bins: counts,
        intersecting_pairs,
        total_pairs,
    }
}

/// Single-linkage clusters of `sets`: `x` and `y` are linked when they share a new page
/// and `J(x, y) >= threshold`; clusters are the connected components.
///
/// - Only intersecting pairs are ever linked (`J > 0` is required), so a `threshold` of
///   0 (or below) links exactly the pairs sharing a new page, never disjoint pages.
///   A `threshold` above 1, or NaN, links nothing: every page is its own cluster.
/// - `J >= threshold` is tested as `inter as f64 >= threshold * union as f64` (an
///   integer-exact test is impossible for an arbitrary `f64` threshold). The counts
///   convert exactly (below 2^53); the only rounding is in the product, so a `J` equal
///   to the threshold's intended rational (e.g. `J = 1/5` with threshold `0.2`,
///   computed as `1 - 0.8`) may fall on either side of it by one ulp.
/// - `weight(i)` (the page's `p_i`) is called once per index. The representative is the
///   member with the largest weight, compared with [`f64::total_cmp`] (pass finite
///   weights; under that order `-0.0 < 0.0`), ties broken by the smallest key, then
///   index; `q` is its weight.
/// - Every page is in exactly one cluster (singletons included). Members are ordered by
///   key, then index; clusters are ordered by their first (smallest-key) member and
///   numbered from 0 in that order.
///
/// Costs are those of the join (module docs) plus `O(n log n)`.
///
/// # Panics
///
/// With more than `u32::MAX` pages.
pub fn single_linkage_clusters<K: Ord>(
    sets: &[(K, Vec<u64>)],
    threshold: f64,
    weight: impl Fn(usize) -> f64,
) -> Vec<Cluster> {
    let n = sets.len();
    let (sizes, inter) = pair_intersections(sets);

    let mut components = DisjointSets::new(n);
    for (&key, &common) in &inter {
        let (i, j) = unpack(key);
        let union = sizes[i] + sizes[j] - common;
        if common > 0 && common as f64 >= threshold * union as f64 {
            components.union(i as u32, j as u32);
        }
    }

    // Group indices by root, in order of first appearance.
    let mut slot_of_root: Vec<u32> = vec![u32::MAX; n];
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for i in 0..n {
        let root = components.find(i as u32) as usize;
        if slot_of_root[root] == u32::MAX {
            slot_of_root[root] = groups.len() as u32;
            groups.push(Vec::new());
        }
        groups[slot_of_root[root] as usize].push(i);
    }

    let by_key = |a: &usize, b: &usize| -> Ordering { sets[*a].0.cmp(&sets[*b].0).then(a.cmp(b)) };
    for members in &mut groups {
        members.sort_by(by_key);
    }
    groups.sort_by(|a, b| by_key(&a[0], &b[0]));

    let weights: Vec<f64> = (0..n).map(&weight).collect();
    groups
        .into_iter()
        .enumerate()
        .map(|(id, members)| {
            // Members are in key order, so keeping the first maximum breaks ties by key.
            let mut representative = members[0];
            for &i in &members[1..] {
                if weights[i].total_cmp(&weights[representative]) == Ordering::Greater {
                    representative = i;
                }
            }
            Cluster {
                id: id as u32,
                q: weights[representative],
                representative,
                members,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeSet, VecDeque};

    /// xorshift64: a tiny deterministic PRNG for the randomized comparisons.
    struct XorShift(u64);

    impl XorShift {
        fn next(&mut self) -> u64 {
            let mut x = self.0;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            self.0 = x;
            x
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    fn set_of(v: &[u64]) -> BTreeSet<u64> {
        v.iter().copied().collect()
    }

    /// Brute-force bin: the largest `b` with `b / bins <= inter / union`, by scanning
    /// the boundaries with exact rational comparisons.
    fn reference_bin(inter: u64, union: u64, bins: usize) -> usize {
        if union == 0 {
            return 0;
        }
        let mut bin = 0;
        for b in 1..bins {
            if inter * bins as u64 >= b as u64 * union {
                bin = b;
            }
        }
        bin
    }

    /// All pairs with set operations: `(i, j, |∩|, |∪|)` for `i < j`.
    fn all_pairs<K>(sets: &[(K, Vec<u64>)]) -> Vec<(usize, usize, u64, u64)> {
        let as_sets: Vec<BTreeSet<u64>> = sets.iter().map(|s| set_of(&s.1)).collect();
        let mut out = Vec::new();
        for i in 0..sets.len() {
            for j in i + 1..sets.len() {
                let inter = as_sets[i].intersection(&as_sets[j]).count() as u64;
                let union = as_sets[i].union(&as_sets[j]).count() as u64;
                out.push((i, j, inter, union));
            }
        }
        out
    }

    fn reference_histogram<K>(sets: &[(K, Vec<u64>)], bins: usize) -> JaccardHistogram {
        let mut counts = vec![0u64; bins];
        let mut intersecting_pairs = 0;
        let mut total_pairs = 0;
        for (_, _, inter, union) in all_pairs(sets) {
            total_pairs += 1;
            if inter > 0 {
                intersecting_pairs += 1;
            }
            counts[reference_bin(inter, union, bins)] += 1;
        }
        JaccardHistogram {
            bins: counts,
            intersecting_pairs,
            total_pairs,
        }
    }

    fn reference_clusters<K: Ord>(
        sets: &[(K, Vec<u64>)],
        threshold: f64,
        weight: impl Fn(usize) -> f64,
    ) -> Vec<Cluster> {
        let n = sets.len();
        let mut adjacent = vec![Vec::new(); n];
        for (i, j, inter, union) in all_pairs(sets) {
            if inter > 0 && inter as f64 >= threshold * union as f64 {
                adjacent[i].push(j);
                adjacent[j].push(i);
            }
        }
        // BFS components.
        let mut seen = vec![false; n];
        let mut comps: Vec<Vec<usize>> = Vec::new();
        for start in 0..n {
            if seen[start] {
                continue;
            }
            seen[start] = true;
            let mut comp = vec![start];
            let mut queue = VecDeque::from([start]);
            while let Some(v) = queue.pop_front() {
                for &w in &adjacent[v] {
                    if !seen[w] {
                        seen[w] = true;
                        comp.push(w);
                        queue.push_back(w);
                    }
                }
            }
            comps.push(comp);
        }
        let key_order = |a: &usize, b: &usize| (&sets[*a].0, *a).cmp(&(&sets[*b].0, *b));
        for comp in &mut comps {
            comp.sort_by(key_order);
        }
        comps.sort_by(|a, b| {
            let min_a = a.iter().min_by(|x, y| key_order(x, y)).unwrap();
            let min_b = b.iter().min_by(|x, y| key_order(x, y)).unwrap();
            key_order(min_a, min_b)
        });
        comps
            .into_iter()
            .enumerate()
            .map(|(id, members)| {
                // Largest weight; among equal weights the smallest (key, index).
                let representative = *members
                    .iter()
                    .max_by(|a, b| weight(**a).total_cmp(&weight(**b)).then(key_order(b, a)))
                    .unwrap();
                Cluster {
                    id: id as u32,
                    members,
                    representative,
                    q: weight(representative),
                }
            })
            .collect()
    }

    /// A random small site: some pages copy (and perturb) an earlier page so that high
    /// overlaps are common, as in the paper's Figure 5.
    fn random_instance(rng: &mut XorShift) -> Vec<(String, Vec<u64>)> {
        let n = rng.below(13) as usize;
        let universe = 1 + rng.below(16);
        let mut sets: Vec<Vec<u64>> = Vec::new();
        for i in 0..n {
            let mut s: BTreeSet<u64> = if i > 0 && rng.below(2) == 0 {
                let mut s = set_of(&sets[rng.below(i as u64) as usize]);
                for _ in 0..rng.below(3) {
                    let y = rng.below(universe);
                    if !s.remove(&y) {
                        s.insert(y);
                    }
                }
                s
            } else {
                (0..1 + rng.below(6)).map(|_| rng.below(universe)).collect()
            };
            if s.is_empty() {
                s.insert(rng.below(universe));
            }
            sets.push(s.into_iter().collect());
        }
        // Keys in an order unrelated to the indices, with occasional duplicates.
        let key_range = if rng.below(4) == 0 { 4 } else { 1000 };
        sets.into_iter()
            .map(|s| {
                (
                    format!("http://site.example/{:03}", rng.below(key_range)),
                    s,
                )
            })
            .collect()
    }

    #[test]
    fn matches_brute_force_on_random_instances() {
        let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
        let thresholds = [
            -0.5,
            0.0,
            0.1,
            0.2,
            1.0 - 0.8,
            1.0 / 3.0,
            0.5,
            0.8,
            1.0,
            1.5,
        ];
        let bin_counts = [1, 2, 3, 5, 7, 20];
        let weight_values = [0.0, 0.1, 0.25, 0.25, 0.5, 1.0];
        // How much of the interesting ground the instances reach.
        let (mut intersecting, mut disjoint, mut linked, mut rep_not_first) = (0, 0, 0, 0);
        for _ in 0..500 {
            let sets = random_instance(&mut rng);
            let bins = bin_counts[rng.below(bin_counts.len() as u64) as usize];
            let fast = jaccard_histogram(&sets, bins);
            assert_eq!(fast, reference_histogram(&sets, bins), "sets {sets:?}");
            assert_eq!(fast.bins.iter().sum::<u64>(), fast.total_pairs);
            intersecting += fast.intersecting_pairs;
            disjoint += fast.total_pairs - fast.intersecting_pairs;

            let weights: Vec<f64> = (0..sets.len())
                .map(|_| weight_values[rng.below(weight_values.len() as u64) as usize])
                .collect();
            let threshold = thresholds[rng.below(thresholds.len() as u64) as usize];
            let fast = single_linkage_clusters(&sets, threshold, |i| weights[i]);
            let slow = reference_clusters(&sets, threshold, |i| weights[i]);
            assert_eq!(fast, slow, "sets {sets:?} threshold {threshold}");
            let mut all: Vec<usize> = fast.iter().flat_map(|c| c.members.clone()).collect();
            all.sort_unstable();
            assert_eq!(all, (0..sets.len()).collect::<Vec<_>>());
            linked += fast.iter().filter(|c| c.members.len() > 1).count();
            rep_not_first += fast
                .iter()
                .filter(|c| c.representative != c.members[0])
                .count();
        }
        assert!(
            intersecting > 1000 && disjoint > 1000,
            "{intersecting} {disjoint}"
        );
        assert!(
            linked > 200 && rep_not_first > 50,
            "{linked} {rep_not_first}"
        );
    }

    #[test]
    fn identical_sets_land_in_the_last_bin() {
        let sets = vec![
            ("a", vec![1, 2, 3]),
            ("b", vec![1, 2, 3]),
            ("c", vec![1, 2, 3]),
        ];
        let h = jaccard_histogram(&sets, 20);
        let mut expected = vec![0; 20];
        expected[19] = 3;
        assert_eq!(
            h,
            JaccardHistogram {
                bins: expected,
                intersecting_pairs: 3,
                total_pairs: 3
            }
        );
        let clusters = single_linkage_clusters(&sets, 1.0, |_| 0.5);
        assert_eq!(clusters.len(), 1);
        assert_eq!(clusters[0].members, vec![0, 1, 2]);
    }

    #[test]
    fn disjoint_sets_count_in_bin_zero_without_intersecting() {
        let sets = vec![
            ("a", vec![1]),
            ("b", vec![2, 3]),
            ("c", vec![4]),
            ("d", vec![5, 6, 7]),
        ];
        let h = jaccard_histogram(&sets, 20);
        assert_eq!(h.total_pairs, 6);
        assert_eq!(h.intersecting_pairs, 0);
        assert_eq!(h.bins[0], 6);
        assert_eq!(h.bins[1..].iter().sum::<u64>(), 0);
        // Threshold 0 still requires a shared new page: four singletons.
        let clusters = single_linkage_clusters(&sets, 0.0, |_| 1.0);
        assert_eq!(clusters.len(), 4);
        for (id, c) in clusters.iter().enumerate() {
            assert_eq!(c.id, id as u32);
            assert_eq!(c.members, vec![id]);
            assert_eq!(c.representative, id);
        }
    }

    #[test]
    fn small_inputs() {
        let none: Vec<(&str, Vec<u64>)> = Vec::new();
        let h = jaccard_histogram(&none, 20);
        assert_eq!((h.total_pairs, h.intersecting_pairs), (0, 0));
        assert_eq!(h.bins, vec![0; 20]);
        assert!(single_linkage_clusters(&none, 0.2, |_| 1.0).is_empty());

        let one = vec![("a", vec![1, 2])];
        assert_eq!(jaccard_histogram(&one, 20).total_pairs, 0);
        let clusters = single_linkage_clusters(&one, 0.2, |_| 0.7);
        assert_eq!(
            clusters,
            vec![Cluster {
                id: 0,
                members: vec![0],
                representative: 0,
                q: 0.7
            }]
        );
    }

    #[test]
    fn bin_boundaries_are_exact() {
        // J = 1/20 starts bin 1 of 20.
        let mut sets = vec![("a", (0..20).collect::<Vec<u64>>()), ("b", vec![0])];
        assert_eq!(jaccard_histogram(&sets, 20).bins[1], 1);
        // J = 3/20 starts bin 3 (float edges would miss it: 3.0 * 0.05 > 0.15).
        sets = vec![("a", (0..20).collect()), ("b", vec![0, 1, 2])];
        assert_eq!(jaccard_histogram(&sets, 20).bins[3], 1);
        // J = 29/100 starts bin 29 of 100 (float: floor(0.29 * 100.0) = 28).
        sets = vec![("a", (0..100).collect()), ("b", (0..29).collect())];
        assert!((29.0f64 / 100.0 * 100.0).floor() < 29.0);
        assert_eq!(jaccard_histogram(&sets, 100).bins[29], 1);
        // J = 7/10 starts bin 14; J = 19/20 starts bin 19; J just below 1 stays in 19.
        sets = vec![("a", (0..10).collect()), ("b", (0..7).collect())];
        assert_eq!(jaccard_histogram(&sets, 20).bins[14], 1);
        sets = vec![("a", (0..20).collect()), ("b", (0..19).collect())];
        assert_eq!(jaccard_histogram(&sets, 20).bins[19], 1);
        // J = 1/21 < 1/20: an intersecting pair in bin 0.
        sets = vec![("a", (0..21).collect()), ("b", vec![5])];
        let h = jaccard_histogram(&sets, 20);
        assert_eq!((h.bins[0], h.intersecting_pairs), (1, 1));
    }

    #[test]
    fn unsorted_and_duplicate_input_is_read_as_a_set() {
        let messy = vec![("a", vec![3, 1, 3, 2]), ("b", vec![2, 2, 4])];
        let clean = vec![("a", vec![1, 2, 3]), ("b", vec![2, 4])];
        assert_eq!(jaccard_histogram(&messy, 20), jaccard_histogram(&clean, 20));
        // J = 1/4 = 0.25: bin 5.
        assert_eq!(jaccard_histogram(&clean, 20).bins[5], 1);
    }

    #[test]
    fn empty_sets_are_disjoint_from_everything() {
        let sets = vec![("a", vec![]), ("b", vec![]), ("c", vec![1])];
        let h = jaccard_histogram(&sets, 4);
        assert_eq!(h.bins, vec![3, 0, 0, 0]);
        assert_eq!(h.intersecting_pairs, 0);
        assert_eq!(single_linkage_clusters(&sets, 0.0, |_| 1.0).len(), 3);
    }

    #[test]
    fn chain_is_one_cluster_under_single_linkage() {
        // J(a, b) = 2/5, J(b, c) = 2/4, J(a, c) = 0.
        let sets = vec![
            ("a", vec![1, 2, 3]),
            ("b", vec![2, 3, 4, 5]),
            ("c", vec![4, 5]),
        ];
        let h = jaccard_histogram(&sets, 20);
        assert_eq!(h.intersecting_pairs, 2);
        assert_eq!(h.bins[0], 1);
        assert_eq!(h.bins[8], 1);
        assert_eq!(h.bins[10], 1);
        let weights = [0.3, 0.4, 0.2];
        let clusters = single_linkage_clusters(&sets, 0.2, |i| weights[i]);
        assert_eq!(
            clusters,
            vec![Cluster {
                id: 0,
                members: vec![0, 1, 2],
                representative: 1,
                q: 0.4
            }]
        );
        // Above J = 1/2 nothing links; at 0.45 only b~c does.
        assert_eq!(single_linkage_clusters(&sets, 0.6, |i| weights[i]).len(), 3);
        let clusters = single_linkage_clusters(&sets, 0.45, |i| weights[i]);
        let members: Vec<Vec<usize>> = clusters.iter().map(|c| c.members.clone()).collect();
        assert_eq!(members, vec![vec![0], vec![1, 2]]);
        assert_eq!((clusters[1].id, clusters[1].representative), (1, 1));
    }

    #[test]
    fn representative_tie_goes_to_smallest_key() {
        // Input order differs from key order: the smallest key is at index 2.
        let sets = vec![
            ("http://s/c", vec![1, 2]),
            ("http://s/b", vec![1, 2]),
            ("http://s/a", vec![1, 2]),
            ("http://s/d", vec![1, 2]),
        ];
        let weights = [0.5, 0.5, 0.5, 0.1];
        let clusters = single_linkage_clusters(&sets, 0.2, |i| weights[i]);
        assert_eq!(
            clusters,
            vec![Cluster {
                id: 0,
                members: vec![2, 1, 0, 3],
                representative: 2,
                q: 0.5
            }]
        );
        // A strictly larger weight beats a smaller key.
        let weights = [0.5, 0.5, 0.5, 0.9];
        let clusters = single_linkage_clusters(&sets, 0.2, |i| weights[i]);
        assert_eq!((clusters[0].representative, clusters[0].q), (3, 0.9));
    }

    #[test]
    fn two_groups_give_mass_at_both_ends_and_two_clusters() {
        // Group A covers almost the same new pages 0..10, group B almost 100..110.
        let near = |base: u64, drop: u64| -> Vec<u64> {
            (base..base + 10).filter(|&y| y != drop).collect()
        };
        let sets = vec![
            ("http://s/b1", near(100, 200)), // all ten
            ("http://s/a1", near(0, 200)),
            ("http://s/a2", near(0, 3)),
            ("http://s/b2", near(100, 104)),
            ("http://s/a3", near(0, 7)),
            ("http://s/b3", near(100, 100)),
        ];
        let h = jaccard_histogram(&sets, 20);
        assert_eq!(h.total_pairs, 15);
        // Within a group: J = 9/10 twice (full vs. one dropped) and 8/10 once (two
        // different drops); across groups J = 0.
        assert_eq!(h.intersecting_pairs, 6);
        assert_eq!(h.bins[0], 9);
        assert_eq!(h.bins[16], 2); // 8/10 starts bin 16
        assert_eq!(h.bins[18], 4); // 9/10 starts bin 18
        assert_eq!(h.bins.iter().sum::<u64>(), 15);

        let p = [1.0, 1.0, 0.9, 0.9, 0.9, 0.9];
        let clusters = single_linkage_clusters(&sets, 1.0 - 0.8, |i| p[i]);
        assert_eq!(
            clusters,
            vec![
                Cluster {
                    id: 0,
                    members: vec![1, 2, 4],
                    representative: 1,
                    q: 1.0
                },
                Cluster {
                    id: 1,
                    members: vec![0, 3, 5],
                    representative: 0,
                    q: 1.0
                },
            ]
        );
    }
}
