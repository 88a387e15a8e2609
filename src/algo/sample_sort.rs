//! Splitters that sort items spread over workers (a sample sort), so that no
//! worker has to hold them all to number them.
//!
//! Each worker sorts its own items and sends every worker [`samples`] of them:
//! evenly spaced keys, each with the count of the worker's items it stands
//! for. From all the samples every worker picks the same [`splitters`], and
//! each item goes to the worker [`owner`] names. Then every key on worker `w`
//! is below every key on worker `w + 1`, so a worker's items, sorted, are the
//! stretch of the global order that starts after the counts of the workers
//! before it.
//!
//! With `s` samples from each of `p` workers, a worker receives at most about
//! `n / p + (2p + 1) n_max / s` of the `n` items (`n_max` the most any worker
//! started with): each worker's samples misplace at most one of its runs of
//! `n_max / s` items at each end of a splitter's range.

/// Evenly spaced keys of a worker's `len` sorted items (`key(i)` is the
/// `i`th's), at most `count`, each with how many items it stands for: the key
/// starts a run of that many, which ends where the next sample's run starts.
pub fn samples<K>(len: usize, key: impl Fn(usize) -> K, count: usize) -> Vec<(K, u64)> {
    let s = count.min(len);
    (0..s)
        .map(|j| {
            let (lo, hi) = (j * len / s, (j + 1) * len / s);
            (key(lo), (hi - lo) as u64)
        })
        .collect()
}

/// At most `peers - 1` keys that cut the samples of all workers into `peers`
/// runs of about equal weight, in ascending order. The same samples give the
/// same splitters on every worker, in whatever order they arrived.
pub fn splitters<K: Ord + Copy>(mut samples: Vec<(K, u64)>, peers: usize) -> Vec<K> {
    samples.sort_unstable();
    let total: u64 = samples.iter().map(|s| s.1).sum();
    let mut out = Vec::with_capacity(peers.saturating_sub(1));
    let (mut before, mut i) = (0u64, 0usize);
    for w in 1..peers {
        let want = (u128::from(total) * w as u128 / peers as u128) as u64;
        while i < samples.len() && before < want {
            before += samples[i].1;
            i += 1;
        }
        match samples.get(i) {
            Some(s) => out.push(s.0),
            // The later workers receive nothing.
            None => break,
        }
    }
    out
}

/// The worker that receives `key`: the number of splitters at or below it.
pub fn owner<K: Ord>(splitters: &[K], key: &K) -> usize {
    splitters.partition_point(|s| s <= key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// Random keys spread unevenly over 1-6 workers (some with none): after
    /// routing, every worker's keys lie below the next one's, so the owners'
    /// sorted keys in turn are the whole set sorted, and no worker gets more
    /// than the bound in the module docs.
    #[test]
    fn routed_keys_are_globally_sorted_and_balanced() {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(3);
        for case in 0..400 {
            let peers = rng.random_range(1..=6usize);
            let count = rng.random_range(1..=40usize);
            let mut all: Vec<u64> = Vec::new();
            let parts: Vec<Vec<u64>> = (0..peers)
                .map(|_| {
                    let n = match rng.random_range(0..4) {
                        0 => 0,
                        1 => rng.random_range(0..5),
                        _ => rng.random_range(0..3000),
                    };
                    // Clustered values, as ranks are: many small, few large.
                    let mut v: Vec<u64> = (0..n)
                        .map(|_| rng.random::<u64>() >> rng.random_range(0..64))
                        .collect();
                    v.sort_unstable();
                    v.dedup();
                    v
                })
                .collect();
            // Unique across workers, as the orderings' keys are (they end with
            // a node's place in URL order).
            let mut seen = std::collections::HashSet::new();
            let parts: Vec<Vec<u64>> = parts
                .into_iter()
                .map(|p| p.into_iter().filter(|k| seen.insert(*k)).collect())
                .collect();
            let mut s = Vec::new();
            for p in &parts {
                all.extend(p);
                s.extend(samples(p.len(), |i| p[i], count));
            }
            all.sort_unstable();
            let cut = splitters(s.clone(), peers);
            s.reverse();
            assert_eq!(cut, splitters(s, peers), "case {case}: order of arrival");
            assert!(cut.len() < peers.max(1));
            assert!(cut.windows(2).all(|w| w[0] <= w[1]));
            let mut routed: Vec<Vec<u64>> = vec![Vec::new(); peers];
            for p in &parts {
                for k in p {
                    routed[owner(&cut, k)].push(*k);
                }
            }
            let mut joined = Vec::new();
            for r in &mut routed {
                r.sort_unstable();
                joined.extend(r.iter().copied());
            }
            assert_eq!(joined, all, "case {case}");
            let n = all.len();
            let n_max = parts.iter().map(Vec::len).max().unwrap_or(0);
            let run = n_max.div_ceil(count);
            let bound = n / peers + (2 * peers + 1) * run + 1;
            for (w, r) in routed.iter().enumerate() {
                assert!(
                    r.len() <= bound,
                    "case {case}: worker {w} got {} of {n}, bound {bound}",
                    r.len()
                );
            }
        }
    }

    #[test]
    fn samples_stand_for_every_item() {
        let v: Vec<u32> = (0..10).collect();
        assert_eq!(samples(10, |i| v[i], 3), vec![(0, 3), (3, 3), (6, 4)]);
        assert_eq!(samples(10, |i| v[i], 20).len(), 10);
        assert!(samples(0, |i| v[i], 5).is_empty());
        assert_eq!(splitters(vec![(5u32, 1)], 3), vec![5, 5]);
        assert_eq!(owner(&[5u32], &4), 0);
        assert_eq!(owner(&[5u32], &5), 1);
    }
}
