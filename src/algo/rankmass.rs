//! RankMass crawl orderings in fixed point (docs/rankmass.md): the single-page
//! RankMass of the paper's Figure 5, and the curves and summaries of every
//! ordering.
//!
//! The windowed orderings (Figure 6, and L-Neighbor) run over all workers in
//! `dataflow::rankmass`; the single-page one is inherently sequential (each
//! step needs the global maximum of `rm`), so it runs here, on worker 0, for
//! graphs up to `rankmass.single_page_max_edges`.
//!
//! `rm` values are in the ranks' units (`algo::pagerank::ONE` is 1) and every
//! push is rounded down, so the guarantee never overstates and the order is
//! the same on any number of workers.

use std::cmp::Reverse;

use crate::algo::pagerank::{trust_share, Damping, ONE};

/// One download of an ordering.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Download {
    /// The node, in the caller's numbering.
    pub node: u32,
    /// The loop iteration that downloaded it, from 1.
    pub round: u32,
    /// Its `rm` when it was chosen: a lower bound of its PageRank.
    pub bound: u64,
}

/// An ordering's result.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ordering {
    pub downloads: Vec<Download>,
    /// The guarantee as a step function of downloads: `(n, crm)` means the
    /// guaranteed RankMass `crm` was reached with `n` downloads. Both columns
    /// never decrease.
    pub progress: Vec<(u64, u128)>,
    pub rounds: u32,
    /// The final guaranteed RankMass.
    pub crm: u128,
}

/// The starting `rm` of a node of trust weight `weight`: `(1 − d) t_i`.
pub fn start_mass(d: Damping, weight: u64, total: u128) -> u64 {
    trust_share(u128::from(ONE) - d.apply(u128::from(ONE)), weight, total)
}

/// The guarantee an ordering aims for, `1 − ε`, in rank units.
pub fn target_units(epsilon: f64) -> u128 {
    u128::from(ONE) - (epsilon * ONE as f64) as u128
}

/// Single-page RankMass (Figure 5): repeatedly take the node of largest `rm`
/// (ties: smallest `url_rank`), download it if it is not yet, add its `rm` to
/// the guarantee, push `d rm / c` to each child (a node without outlinks
/// pushes `d rm / m` to each of the `m` trusted nodes) and zero it; stop when
/// the guarantee reaches `target` or no node holds any `rm`.
///
/// `out[u]` lists `u`'s distinct outlinks, `trust[u]` its weight in the trust
/// vector (the weights sum to `trust_total`), `url_rank[u]` the position of
/// `u`'s URL in sorted order. `max_steps` bounds the loop.
pub fn single_page(
    out: &[Vec<u32>],
    trust: &[u64],
    trust_total: u128,
    url_rank: &[u32],
    d: Damping,
    target: u128,
    max_steps: u64,
) -> Ordering {
    let n = out.len();
    let trusted: Vec<bool> = trust.iter().map(|w| *w > 0).collect();
    let trusted_nodes: Vec<u32> = (0..n as u32).filter(|u| trusted[*u as usize]).collect();
    // With a uniform trust vector, pushes from nodes without outlinks raise
    // every trusted node by the same amount: that is kept once, in `lift`,
    // rather than written to each. A trusted node's `rm` is `held + lift`, so a
    // heap of trusted nodes keyed by `held` orders them by `rm` too; untrusted
    // nodes' `rm` is `held`. Other trust vectors get each push written out.
    let uniform = trusted_nodes
        .first()
        .map(|&u| trust[u as usize])
        .filter(|&w| trusted_nodes.iter().all(|&v| trust[v as usize] == w));
    let mut lift: i128 = 0;
    let mut held: Vec<i128> = vec![0; n];
    let mut downloaded = vec![false; n];
    let mut plain = NodeHeap::new(n);
    let mut lifted = NodeHeap::new(n);
    for &u in &trusted_nodes {
        held[u as usize] = i128::from(start_mass(d, trust[u as usize], trust_total));
        lifted.raise(u, &held, url_rank);
    }
    let mut result = Ordering::default();
    let mut crm: u128 = 0;
    let mut steps: u64 = 0;
    while crm < target && steps < max_steps {
        let a = plain
            .top()
            .map(|u| (held[u as usize], Reverse(url_rank[u as usize]), u));
        let b = lifted
            .top()
            .map(|u| (held[u as usize] + lift, Reverse(url_rank[u as usize]), u));
        let (value, _, u) = match (a, b) {
            (Some(a), Some(b)) => a.max(b),
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (None, None) => break,
        };
        if value <= 0 {
            break;
        }
        steps += 1;
        let ui = u as usize;
        let rm = value as u64;
        if !downloaded[ui] {
            downloaded[ui] = true;
            result.progress.push((result.downloads.len() as u64, crm));
            result.downloads.push(Download {
                node: u,
                round: steps.min(u64::from(u32::MAX)) as u32,
                bound: rm,
            });
        }
        crm += u128::from(rm);
        // Zero it.
        if trusted[ui] {
            held[ui] = -lift;
            lifted.lower_top(&held, url_rank);
        } else {
            held[ui] = 0;
            plain.pop(&held, url_rank);
        }
        let children = &out[ui];
        if children.is_empty() {
            let jump = d.apply(u128::from(rm));
            match uniform {
                Some(w) => lift += i128::from(trust_share(jump, w, trust_total)),
                None => {
                    for &v in &trusted_nodes {
                        let vi = v as usize;
                        held[vi] += i128::from(trust_share(jump, trust[vi], trust_total));
                        lifted.raise(v, &held, url_rank);
                    }
                }
            }
            continue;
        }
        let share = d.share(rm, children.len() as u32);
        if share == 0 {
            continue;
        }
        for &v in children {
            held[v as usize] += i128::from(share);
            if trusted[v as usize] {
                lifted.raise(v, &held, url_rank);
            } else {
                plain.raise(v, &held, url_rank);
            }
        }
    }
    result.progress.push((result.downloads.len() as u64, crm));
    result.rounds = steps.min(u64::from(u32::MAX)) as u32;
    result.crm = crm;
    result
}

/// A binary max-heap of nodes by `(held, smallest url_rank)`, indexed so that
/// a node's key can rise in place: it holds each node once, and a step costs
/// `O(log n)` per child rather than a new entry.
struct NodeHeap {
    heap: Vec<u32>,
    /// Each node's position in `heap`, `u32::MAX` when absent.
    pos: Vec<u32>,
}

impl NodeHeap {
    fn new(n: usize) -> NodeHeap {
        NodeHeap {
            heap: Vec::new(),
            pos: vec![u32::MAX; n],
        }
    }

    fn top(&self) -> Option<u32> {
        self.heap.first().copied()
    }

    fn above(a: u32, b: u32, held: &[i128], url_rank: &[u32]) -> bool {
        let (a, b) = (a as usize, b as usize);
        (held[a], Reverse(url_rank[a])) > (held[b], Reverse(url_rank[b]))
    }

    /// Inserts `u`, or moves it up after its key rose.
    fn raise(&mut self, u: u32, held: &[i128], url_rank: &[u32]) {
        let mut k = self.pos[u as usize] as usize;
        if k == u32::MAX as usize {
            k = self.heap.len();
            self.heap.push(u);
        }
        while k > 0 {
            let parent = (k - 1) / 2;
            if !Self::above(u, self.heap[parent], held, url_rank) {
                break;
            }
            self.heap[k] = self.heap[parent];
            self.pos[self.heap[k] as usize] = k as u32;
            k = parent;
        }
        self.heap[k] = u;
        self.pos[u as usize] = k as u32;
    }

    /// Moves the top down after its key fell.
    fn lower_top(&mut self, held: &[i128], url_rank: &[u32]) {
        self.sift_down(0, held, url_rank);
    }

    fn sift_down(&mut self, mut k: usize, held: &[i128], url_rank: &[u32]) {
        let n = self.heap.len();
        if n == 0 {
            return;
        }
        let u = self.heap[k];
        loop {
            let mut c = 2 * k + 1;
            if c >= n {
                break;
            }
            if c + 1 < n && Self::above(self.heap[c + 1], self.heap[c], held, url_rank) {
                c += 1;
            }
            if !Self::above(self.heap[c], u, held, url_rank) {
                break;
            }
            self.heap[k] = self.heap[c];
            self.pos[self.heap[k] as usize] = k as u32;
            k = c;
        }
        self.heap[k] = u;
        self.pos[u as usize] = k as u32;
    }

    /// Removes the top.
    fn pop(&mut self, held: &[i128], url_rank: &[u32]) {
        let top = self.heap[0];
        self.pos[top as usize] = u32::MAX;
        let last = self.heap.pop().expect("pop follows top");
        if !self.heap.is_empty() {
            self.heap[0] = last;
            self.pos[last as usize] = 0;
            self.sift_down(0, held, url_rank);
        }
    }
}

/// A row of an ordering's curve, in rank units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CurvePoint {
    pub downloads: u64,
    pub guaranteed: u128,
    pub actual: u128,
    pub optimal: u128,
}

/// The download counts a curve reports: every power of two up to `total`, and
/// `total` (a single 0 when nothing was downloaded).
pub fn checkpoints(total: u64) -> Vec<u64> {
    let mut at: Vec<u64> = std::iter::successors(Some(1u64), |n| n.checked_mul(2))
        .take_while(|n| *n <= total)
        .collect();
    if at.last() != Some(&total) {
        at.push(total);
    }
    at
}

/// The guarantee with at most `n` downloads: the largest `crm` reached by then.
pub fn guaranteed_at(progress: &[(u64, u128)], n: u64) -> u128 {
    let k = progress.partition_point(|p| p.0 <= n);
    if k == 0 {
        0
    } else {
        progress[k - 1].1
    }
}

/// The sums of the `n` largest of a set of PageRanks: an ordering's best
/// possible curve.
///
/// It keeps the ranks sorted from the largest (8 bytes a node) and their sums
/// at the powers of two, where a curve asks for most of its points, rather
/// than the prefix sum of every `n` (16 bytes a node). Worker 0 holds one for
/// the single-page RankMass's curve, on graphs small enough for it; the
/// windowed orderings' curves take their sums from every worker's stretch of
/// the sorted ranks (`dataflow::rankmass`).
#[derive(Clone, Debug, Default)]
pub struct LargestSums {
    /// The ranks, from the largest.
    sorted: Vec<u64>,
    /// `at_powers[k]`: the sum of the `2^k` largest.
    at_powers: Vec<u128>,
}

impl LargestSums {
    pub fn new(mut ranks: Vec<u64>) -> LargestSums {
        ranks.sort_unstable_by(|a, b| b.cmp(a));
        let mut at_powers = Vec::new();
        let mut sum: u128 = 0;
        for (i, &r) in ranks.iter().enumerate() {
            sum += u128::from(r);
            if (i + 1).is_power_of_two() {
                at_powers.push(sum);
            }
        }
        LargestSums {
            sorted: ranks,
            at_powers,
        }
    }

    /// The sum of the `n` largest ranks (of all of them if there are fewer):
    /// from the largest power of two at most `n`, the rest added up.
    pub fn of(&self, n: u64) -> u128 {
        let n = (n as usize).min(self.sorted.len());
        if n == 0 {
            return 0;
        }
        let k = n.ilog2() as usize;
        let from = 1usize << k;
        self.at_powers[k]
            + self.sorted[from..n]
                .iter()
                .map(|&r| u128::from(r))
                .sum::<u128>()
    }
}

/// The curve of an ordering: `ranks` are the PageRanks of its downloads in
/// order, `best` the sums of the largest PageRanks of all nodes.
pub fn curve(ranks: &[u64], progress: &[(u64, u128)], best: &LargestSums) -> Vec<CurvePoint> {
    let mut actual: u128 = 0;
    let mut done = 0usize;
    checkpoints(ranks.len() as u64)
        .into_iter()
        .map(|n| {
            while done < n as usize {
                actual += u128::from(ranks[done]);
                done += 1;
            }
            CurvePoint {
                downloads: n,
                guaranteed: guaranteed_at(progress, n),
                actual,
                optimal: best.of(n),
            }
        })
        .collect()
}

/// The fewest downloads whose guarantee reaches `level` (rank units).
pub fn downloads_to_guarantee(progress: &[(u64, u128)], level: u128) -> Option<u64> {
    progress.iter().find(|p| p.1 >= level).map(|p| p.0)
}

/// The fewest downloads of the order whose PageRank sums to `level`.
pub fn downloads_to_actual(ranks: &[u64], level: u128) -> Option<u64> {
    let mut sum: u128 = 0;
    if level == 0 {
        return Some(0);
    }
    for (k, r) in ranks.iter().enumerate() {
        sum += u128::from(*r);
        if sum >= level {
            return Some(k as u64 + 1);
        }
    }
    None
}

/// `level` (a fraction) in rank units.
pub fn level_units(level: f64) -> u128 {
    (level * ONE as f64) as u128
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Figure 5 written plainly: a linear scan for the maximum, every push
    /// written out.
    fn plain(out: &[Vec<u32>], trust: &[u64], urls: &[u32], d: Damping, target: u128) -> Vec<u32> {
        let n = out.len();
        let total: u128 = trust.iter().map(|w| u128::from(*w)).sum();
        let mut rm: Vec<u64> = trust.iter().map(|&w| start_mass(d, w, total)).collect();
        let mut seen = vec![false; n];
        let mut order = Vec::new();
        let mut crm = 0u128;
        while crm < target {
            let Some(u) = (0..n)
                .filter(|&u| rm[u] > 0)
                .max_by_key(|&u| (rm[u], Reverse(urls[u])))
            else {
                break;
            };
            if !seen[u] {
                seen[u] = true;
                order.push(u as u32);
            }
            let r = rm[u];
            crm += u128::from(r);
            rm[u] = 0;
            if out[u].is_empty() {
                for (x, w) in rm.iter_mut().zip(trust) {
                    *x += trust_share(d.apply(u128::from(r)), *w, total);
                }
            } else {
                let s = d.share(r, out[u].len() as u32);
                for &v in &out[u] {
                    rm[v as usize] += s;
                }
            }
        }
        order
    }

    #[test]
    fn single_page_matches_the_plain_loop() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for case in 0..60 {
            let n = 2 + (next() % if case < 40 { 30 } else { 300 }) as usize;
            let out: Vec<Vec<u32>> = (0..n)
                .map(|u| {
                    let mut v: Vec<u32> = (0..next() % 4)
                        .map(|_| (next() % n as u64) as u32)
                        .filter(|&v| v as usize != u)
                        .collect();
                    v.sort_unstable();
                    v.dedup();
                    v
                })
                .collect();
            // Uniform trust in even cases, weights 1-5 in odd ones.
            let mut trust: Vec<u64> = (0..n)
                .map(|_| match next() % 3 {
                    0 if case % 2 == 0 => 1,
                    0 => 1 + next() % 5,
                    _ => 0,
                })
                .collect();
            trust[0] = trust[0].max(1);
            let total: u128 = trust.iter().map(|w| u128::from(*w)).sum();
            let mut urls: Vec<u32> = (0..n as u32).collect();
            urls.reverse();
            let d = Damping::new(0.85);
            let target = target_units(0.01);
            let got = single_page(&out, &trust, total, &urls, d, target, u64::MAX);
            let want = plain(&out, &trust, &urls, d, target);
            let order: Vec<u32> = got.downloads.iter().map(|x| x.node).collect();
            assert_eq!(order, want, "case {case}");
            // The guarantee never decreases, and is reached unless mass ran out.
            assert!(got.progress.windows(2).all(|w| w[0] <= w[1]));
        }
    }

    /// Every `n`, against the prefix sums of the ranks sorted from the
    /// largest, on lengths around powers of two and with repeated ranks.
    #[test]
    fn largest_sums_agree_with_prefix_sums() {
        let mut x: u64 = 7;
        for len in [0usize, 1, 2, 3, 4, 5, 7, 8, 9, 31, 32, 33, 100, 1000] {
            let ranks: Vec<u64> = (0..len)
                .map(|_| {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    (x >> 33) % 50 + u64::MAX / 4 * u64::from(x.is_multiple_of(7))
                })
                .collect();
            let mut sorted = ranks.clone();
            sorted.sort_unstable_by(|a, b| b.cmp(a));
            let best = LargestSums::new(ranks);
            let mut sum: u128 = 0;
            assert_eq!(best.of(0), 0);
            for (i, &r) in sorted.iter().enumerate() {
                sum += u128::from(r);
                assert_eq!(best.of(i as u64 + 1), sum, "len {len}, n {}", i + 1);
            }
            assert_eq!(best.of(len as u64 + 5), sum, "past the end, len {len}");
        }
    }

    #[test]
    fn curves_read_the_step_function() {
        let progress = vec![(0, 0), (2, 10), (5, 20)];
        assert_eq!(guaranteed_at(&progress, 1), 0);
        assert_eq!(guaranteed_at(&progress, 4), 10);
        assert_eq!(guaranteed_at(&progress, 5), 20);
        assert_eq!(checkpoints(5), vec![1, 2, 4, 5]);
        assert_eq!(checkpoints(4), vec![1, 2, 4]);
        assert_eq!(checkpoints(0), vec![0]);
        let best = LargestSums::new(vec![2, 9, 1, 6, 3]);
        let c = curve(&[3, 9, 6, 1, 2], &progress, &best);
        assert_eq!(
            c[0],
            CurvePoint {
                downloads: 1,
                guaranteed: 0,
                actual: 3,
                optimal: 9
            }
        );
        assert_eq!(
            c[3],
            CurvePoint {
                downloads: 5,
                guaranteed: 20,
                actual: 21,
                optimal: 21
            }
        );
        assert_eq!(downloads_to_guarantee(&progress, 15), Some(5));
        assert_eq!(downloads_to_actual(&[3, 9, 6], 12), Some(2));
        assert_eq!(downloads_to_actual(&[3, 9, 6], 19), None);
    }
}
