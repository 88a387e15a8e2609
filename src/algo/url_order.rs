//! Every node's rank in the byte order of all URLs of a graph whose nodes are
//! spread over workers by host, without sending the URLs anywhere.
//!
//! A URL's *prefix* is its scheme and authority up to the first `/` after
//! `://` (`http://example.com/`), or the whole URL when it has none. Two
//! distinct prefixes are never one a proper prefix of the other unless the
//! shorter is a whole URL, so any two URLs with different prefixes compare as
//! their prefixes do, whatever their paths. A prefix names one host, so all
//! URLs with that prefix are on one worker. Hence a URL's global rank is its
//! rank among its own worker's URLs plus, for every other worker, how many of
//! that worker's URLs have a smaller prefix: each worker only needs the other
//! workers' prefixes and their URL counts, one entry per host rather than per
//! page.

use crate::str_sort::order_by_bytes;

/// The part of `url` that decides its order against URLs of other hosts.
pub fn prefix(url: &str) -> &str {
    // Bytes, not `str::find` of a pattern: this runs once per node and
    // snapshot. The scheme ends at the first ':'.
    let b = url.as_bytes();
    let Some(i) = b.iter().position(|&c| c == b':') else {
        return url;
    };
    if !b[i..].starts_with(b"://") {
        return url;
    }
    match b[i + 3..].iter().position(|&c| c == b'/') {
        Some(j) => &url[..i + 3 + j + 1],
        None => url,
    }
}

/// One worker's URLs in byte order, grouped by prefix.
#[derive(Clone, Debug, Default)]
pub struct LocalOrder {
    /// The worker's nodes in URL order.
    pub by_url: Vec<u32>,
    /// Each prefix with the number of its URLs, in order: the runs of
    /// `by_url`, one per prefix.
    pub prefixes: Vec<(String, u32)>,
}

impl LocalOrder {
    pub fn new(urls: &[&str]) -> LocalOrder {
        let by_url = order_by_bytes(urls.len(), |i| urls[i].as_bytes());
        let mut prefixes: Vec<(String, u32)> = Vec::new();
        for &i in &by_url {
            let p = prefix(urls[i as usize]);
            match prefixes.last_mut() {
                Some((last, n)) if last == p => *n += 1,
                _ => prefixes.push((p.to_string(), 1)),
            }
        }
        LocalOrder { by_url, prefixes }
    }

    /// Each node's rank among all workers' URLs, given the other workers'
    /// [`LocalOrder::prefixes`].
    pub fn global_ranks(&self, others: &[&[(String, u32)]]) -> Vec<u32> {
        // Per other worker, how many of its URLs precede each prefix.
        let before: Vec<Vec<u64>> = others
            .iter()
            .map(|list| {
                std::iter::once(0)
                    .chain(list.iter().scan(0u64, |s, (_, n)| {
                        *s += u64::from(*n);
                        Some(*s)
                    }))
                    .collect()
            })
            .collect();
        let mut ranks = vec![0u32; self.by_url.len()];
        let mut k = 0usize;
        for (p, n) in &self.prefixes {
            let elsewhere: u64 = others
                .iter()
                .zip(&before)
                .map(|(list, before)| {
                    before[list.partition_point(|(q, _)| q.as_str() < p.as_str())]
                })
                .sum();
            for &node in &self.by_url[k..k + *n as usize] {
                ranks[node as usize] = (elsewhere + k as u64) as u32;
                k += 1;
            }
        }
        ranks
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn prefixes() {
        assert_eq!(prefix("http://a.com/x/y"), "http://a.com/");
        assert_eq!(prefix("https://a.com:8080/"), "https://a.com:8080/");
        assert_eq!(prefix("http://a.com"), "http://a.com");
        assert_eq!(prefix("mailto:x@y"), "mailto:x@y");
        assert_eq!(prefix("a:b://c/d"), "a:b://c/d");
    }

    /// Hosts spread over workers at random, against one sort of every URL.
    #[test]
    fn global_ranks_are_the_ranks_of_one_sort() {
        let mut rng = rand_pcg::Pcg64::seed_from_u64(7);
        // Hosts chosen to share long stretches: one a prefix of another's
        // name, the same name under two schemes and with a port, and a URL
        // without a path.
        let hosts = [
            "http://a.com",
            "http://a.com.au",
            "https://a.com",
            "http://a.com:8080",
            "http://a.co",
            "http://b.org",
            "http://ab.com",
        ];
        for trial in 0..200 {
            let peers = 1 + trial % 4;
            let mut urls: Vec<(usize, String)> = Vec::new();
            for host in hosts {
                let owner = rng.random_range(0..peers);
                if rng.random_bool(0.2) {
                    urls.push((owner, host.to_string()));
                }
                for _ in 0..rng.random_range(0..6) {
                    let path: String = (0..rng.random_range(0..4))
                        .map(|_| ['/', 'a', 'b', '.', '%'][rng.random_range(0..5)])
                        .collect();
                    urls.push((owner, format!("{host}/{path}")));
                }
            }
            urls.sort();
            urls.dedup();
            let mut all: Vec<&str> = urls.iter().map(|(_, u)| u.as_str()).collect();
            all.sort_unstable();
            let parts: Vec<Vec<&str>> = (0..peers)
                .map(|w| {
                    urls.iter()
                        .filter(|(o, _)| *o == w)
                        .map(|(_, u)| u.as_str())
                        .collect()
                })
                .collect();
            let orders: Vec<LocalOrder> = parts.iter().map(|p| LocalOrder::new(p)).collect();
            for (w, part) in parts.iter().enumerate() {
                let others: Vec<&[(String, u32)]> = (0..peers)
                    .filter(|&v| v != w)
                    .map(|v| orders[v].prefixes.as_slice())
                    .collect();
                let ranks = orders[w].global_ranks(&others);
                for (i, url) in part.iter().enumerate() {
                    let want = all.binary_search(url).expect("listed");
                    assert_eq!(ranks[i] as usize, want, "{url} among {all:?}");
                }
            }
        }
    }
}
