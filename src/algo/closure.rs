//! The new-page closure of one site (ALGORITHMS.md section 1): for every old page
//! `x` fetched now, `N_t(x)`, the new pages reachable from `x` through new pages
//! only. Together the sets are the covering pairs `Z_t`.
//!
//! One breadth-first search per old page over the site's links among new pages,
//! on a compressed adjacency built once per site and round. The cost follows the
//! site's new pages, their links and the size of `Z_t`, never the site's old
//! pages beyond those that link to something new.

use crate::model::PageId;

/// `N_t(x)` for every old page `x` of one site, ordered by `x`, each set sorted
/// ascending.
///
/// `starts` holds the links `x -> y` from an old page fetched now to a new page,
/// `edges` the links between new pages. Both are sorted and deduplicated in place.
pub fn new_page_closure(
    starts: &mut Vec<(PageId, PageId)>,
    edges: &mut Vec<(PageId, PageId)>,
) -> Vec<(PageId, Vec<u64>)> {
    starts.sort_unstable();
    starts.dedup();
    edges.sort_unstable();
    edges.dedup();
    // The new pages involved, indexed densely in id order, so an index order is
    // also an id order.
    let mut nodes: Vec<PageId> = starts.iter().map(|&(_, y)| y).collect();
    nodes.extend(edges.iter().flat_map(|&(u, v)| [u, v]));
    nodes.sort_unstable();
    nodes.dedup();
    let index = |p: PageId| nodes.binary_search(&p).expect("every page is a node") as u32;

    // Compressed adjacency: edges are sorted by source, so each node's targets are
    // one run of `targets`.
    let mut offsets = vec![0u32; nodes.len() + 1];
    let targets: Vec<u32> = edges.iter().map(|&(_, v)| index(v)).collect();
    for &(u, _) in edges.iter() {
        offsets[index(u) as usize + 1] += 1;
    }
    for i in 1..offsets.len() {
        offsets[i] += offsets[i - 1];
    }

    // `seen[i] == stamp` marks node `i` as reached from the current old page.
    let mut seen = vec![0u32; nodes.len()];
    let mut stamp = 0u32;
    let mut queue: Vec<u32> = Vec::new();
    let mut out = Vec::new();
    for group in starts.chunk_by(|a, b| a.0 == b.0) {
        stamp += 1;
        queue.clear();
        for &(_, y) in group {
            let i = index(y);
            if seen[i as usize] != stamp {
                seen[i as usize] = stamp;
                queue.push(i);
            }
        }
        // `queue` doubles as the reached set: everything pushed stays in it.
        let mut head = 0;
        while head < queue.len() {
            let u = queue[head] as usize;
            head += 1;
            for &v in &targets[offsets[u] as usize..offsets[u + 1] as usize] {
                if seen[v as usize] != stamp {
                    seen[v as usize] = stamp;
                    queue.push(v);
                }
            }
        }
        queue.sort_unstable();
        out.push((
            group[0].0,
            queue.iter().map(|&i| nodes[i as usize].0).collect(),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use std::collections::BTreeSet;

    /// The closure as a naive fixed point over pair sets.
    fn fixpoint(starts: &[(u64, u64)], edges: &[(u64, u64)]) -> Vec<(PageId, Vec<u64>)> {
        let mut pairs: BTreeSet<(u64, u64)> = starts.iter().copied().collect();
        loop {
            let more: Vec<(u64, u64)> = pairs
                .iter()
                .flat_map(|&(x, y)| {
                    edges
                        .iter()
                        .filter(move |&&(u, _)| u == y)
                        .map(move |&(_, v)| (x, v))
                })
                .filter(|p| !pairs.contains(p))
                .collect();
            if more.is_empty() {
                break;
            }
            pairs.extend(more);
        }
        let mut out: Vec<(PageId, Vec<u64>)> = Vec::new();
        for (x, y) in pairs {
            match out.last_mut() {
                Some(last) if last.0 == PageId(x) => last.1.push(y),
                _ => out.push((PageId(x), vec![y])),
            }
        }
        out
    }

    fn ids(pairs: &[(u64, u64)]) -> Vec<(PageId, PageId)> {
        pairs.iter().map(|&(a, b)| (PageId(a), PageId(b))).collect()
    }

    #[test]
    fn cycles_duplicates_and_shared_targets() {
        // Old pages 1 and 2; new pages 10..=14 with a cycle 11 -> 12 -> 11 and a
        // page (14) no old page reaches.
        let starts = [(1, 10), (1, 10), (2, 12), (2, 13)];
        let edges = [(10, 11), (11, 12), (12, 11), (12, 13), (14, 10), (14, 10)];
        let got = new_page_closure(&mut ids(&starts), &mut ids(&edges));
        assert_eq!(
            got,
            vec![
                (PageId(1), vec![10, 11, 12, 13]),
                (PageId(2), vec![11, 12, 13])
            ]
        );
        assert_eq!(got, fixpoint(&starts, &edges));
    }

    #[test]
    fn random_graphs_match_the_fixed_point() {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(7);
        let mut next = |n: u64| rng.random_range(0..n);
        for _ in 0..200 {
            let old = 1 + next(6);
            let new = 1 + next(12);
            let starts: Vec<(u64, u64)> = (0..next(10))
                .map(|_| (next(old), 100 + next(new)))
                .collect();
            let edges: Vec<(u64, u64)> = (0..next(30))
                .map(|_| (100 + next(new), 100 + next(new)))
                .collect();
            assert_eq!(
                new_page_closure(&mut ids(&starts), &mut ids(&edges)),
                fixpoint(&starts, &edges),
                "starts {starts:?} edges {edges:?}"
            );
        }
    }
}
