//! Ordering many strings (URLs) by their bytes.
//!
//! A comparison sort of URLs spends its time following each string's pointer
//! and comparing the long prefix that URLs of one host share. [`order_by_bytes`]
//! sorts fixed 16-byte chunks of the keys held inline instead, and goes back
//! to the strings only for the runs that tie on a whole chunk, 16 bytes deeper
//! each time (a most-significant-digit radix sort with 16-byte digits, each
//! level sorted by comparison).

/// One key's chunk at some depth, with the item it belongs to.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Entry {
    /// The key's bytes `depth..depth + 16`, big-endian, padded with zeros.
    chunk: u128,
    /// How many bytes of the key are left from `depth`, capped at
    /// [`CONTINUES`]: a shorter key that pads to the same chunk sorts first.
    left: u8,
    item: u32,
}

const CHUNK: usize = 16;
/// `left` of a key that goes on past this chunk.
const CONTINUES: u8 = CHUNK as u8 + 1;

fn entry(key: &[u8], depth: usize, item: u32) -> Entry {
    let rest = &key[depth.min(key.len())..];
    let take = rest.len().min(CHUNK);
    let mut bytes = [0u8; CHUNK];
    bytes[..take].copy_from_slice(&rest[..take]);
    Entry {
        chunk: u128::from_be_bytes(bytes),
        left: rest.len().min(CONTINUES as usize) as u8,
        item,
    }
}

/// The items `0..n` in the byte order of their keys (`key(i)` is item `i`'s),
/// equal keys by item: the same order as sorting `(key(i), i)`.
pub fn order_by_bytes<'a>(n: usize, key: impl Fn(usize) -> &'a [u8]) -> Vec<u32> {
    assert!(n <= u32::MAX as usize, "at most 2^32 items");
    let mut entries: Vec<Entry> = (0..n).map(|i| entry(key(i), 0, i as u32)).collect();
    entries.sort_unstable();
    // Ranges sorted at `depth` whose ties on a whole chunk need the next one.
    let mut pending = vec![(0, n, 0)];
    while let Some((lo, hi, depth)) = pending.pop() {
        let mut start = lo;
        while start < hi {
            let first = entries[start];
            let mut end = start + 1;
            while end < hi && entries[end].chunk == first.chunk && entries[end].left == first.left {
                end += 1;
            }
            if end - start > 1 && first.left == CONTINUES {
                let deeper = depth + CHUNK;
                for e in &mut entries[start..end] {
                    *e = entry(key(e.item as usize), deeper, e.item);
                }
                entries[start..end].sort_unstable();
                pending.push((start, end, deeper));
            }
            start = end;
        }
    }
    entries.into_iter().map(|e| e.item).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn by_std(keys: &[Vec<u8>]) -> Vec<u32> {
        let mut order: Vec<u32> = (0..keys.len() as u32).collect();
        order.sort_by(|&a, &b| (&keys[a as usize], a).cmp(&(&keys[b as usize], b)));
        order
    }

    /// Keys with long shared prefixes, zero bytes, lengths on and around the
    /// chunk boundaries, and duplicates: the same order as the standard sort.
    #[test]
    fn matches_the_standard_sort() {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(7);
        for round in 0..200 {
            let prefixes: Vec<Vec<u8>> = (0..1 + round % 5)
                .map(|_| {
                    (0..rng.random_range(0..40))
                        .map(|_| rng.random_range(0..3))
                        .collect()
                })
                .collect();
            let keys: Vec<Vec<u8>> = (0..rng.random_range(0..300))
                .map(|_| {
                    let mut k = prefixes[rng.random_range(0..prefixes.len())].clone();
                    let extra = [0, 1, 15, 16, 17, 31, 32, 33][rng.random_range(0..8)];
                    k.extend((0..rng.random_range(0..=extra)).map(|_| rng.random_range(0..3u8)));
                    k
                })
                .collect();
            let got = order_by_bytes(keys.len(), |i| keys[i].as_slice());
            assert_eq!(got, by_std(&keys), "round {round}");
        }
    }

    #[test]
    fn urls() {
        let urls = [
            "https://www.example.org/b",
            "http://www.example.org/a/very/long/path/that/goes/on",
            "http://www.example.org/a/very/long/path/that/goes",
            "http://www.example.org/",
            "http://www.example.org/a/very/long/path/that/goes/on",
            "",
        ];
        let got = order_by_bytes(urls.len(), |i| urls[i].as_bytes());
        assert_eq!(got, [5, 3, 2, 1, 4, 0]);
    }
}
