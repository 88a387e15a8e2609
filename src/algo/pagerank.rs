//! Personalized PageRank in fixed point (docs/rankmass.md).
//!
//! Ranks are integers in units of `2^-60`, and every product and quotient is
//! rounded down in integer arithmetic, so sums over pages do not depend on the
//! order in which workers add them: the vector is the same bit for bit on any
//! number of workers. The distributed iteration is `dataflow::pagerank`; this
//! module holds its arithmetic and a one-machine solver for tests.

/// A rank of 1.
pub const ONE: u64 = 1 << 60;

/// The damping factor `d` in the ranks' units (`2^-60`), so that it is exact to
/// about 1e-18.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Damping(u64);

impl Damping {
    pub fn new(d: f64) -> Damping {
        Damping((d * ONE as f64).round() as u64)
    }

    /// `d x`, rounded down (`x` is at most a few units of rank, so the product
    /// fits).
    pub fn apply(self, x: u128) -> u128 {
        (x * u128::from(self.0)) >> 60
    }

    /// The share `d r / c` each of a page's `c` outlinks carries.
    pub fn share(self, r: u64, c: u32) -> u64 {
        // `d r < r` fits in 64 bits, and a 64-bit division is many times
        // faster than a 128-bit one (a library call), once per node and step.
        (self.apply(u128::from(r)) as u64) / u64::from(c.max(1))
    }

    /// The mass that jumps by the trust vector: `(1 − d) + d · dangling`.
    pub fn jump(self, dangling: u128) -> u128 {
        u128::from(ONE) - self.apply(u128::from(ONE)) + self.apply(dangling)
    }
}

/// A trusted page's part of the jump mass among `trusted` pages.
pub fn jump_share(jump: u128, trusted: u64) -> u64 {
    (jump / u128::from(trusted.max(1))) as u64
}

/// A trusted node's part `x w / total` of a mass `x` that goes by the trust
/// vector, whose node weights `w` sum to `total` over the graph. With the
/// uniform vector (every weight 1) this is [`jump_share`].
pub fn trust_share(x: u128, weight: u64, total: u128) -> u64 {
    (x * u128::from(weight) / total.max(1)) as u64
}

/// The tolerance in rank units.
pub fn tolerance_units(tol: f64) -> u128 {
    (tol * ONE as f64) as u128
}

pub fn to_f64(r: u64) -> f64 {
    r as f64 / ONE as f64
}

/// Whether a normalized URL is its host's main page (path `/`, no query).
pub fn is_main_page(url: &str) -> bool {
    let Some(rest) = url.split_once("://").map(|(_, r)| r) else {
        return false;
    };
    match rest.find('/') {
        Some(i) => &rest[i..] == "/",
        None => true,
    }
}

/// The result of a solve.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Solved {
    pub ranks: Vec<u64>,
    pub iterations: u32,
    /// The L1 change of the last step, in rank units.
    pub change: u128,
}

/// Solves on one machine: `out[u]` lists `u`'s distinct outlinks (no self-links),
/// `trusted[u]` whether `u` is in the (uniform) trust vector, `start` the initial
/// vector. Follows the same arithmetic and stopping rule as the dataflow.
pub fn solve_local(
    out: &[Vec<u32>],
    trusted: &[bool],
    d: Damping,
    tol: u128,
    max_iterations: u32,
    start: Vec<u64>,
) -> Solved {
    let n = out.len();
    let m = trusted.iter().filter(|t| **t).count() as u64;
    let mut x = start;
    let mut iterations = 0;
    loop {
        let mut next = vec![0u64; n];
        let mut dangling = 0u128;
        for (u, targets) in out.iter().enumerate() {
            if targets.is_empty() {
                dangling += u128::from(x[u]);
            } else {
                let s = d.share(x[u], targets.len() as u32);
                for &v in targets {
                    next[v as usize] += s;
                }
            }
        }
        let j = jump_share(d.jump(dangling), m);
        for (v, r) in next.iter_mut().enumerate() {
            if trusted[v] {
                *r += j;
            }
        }
        let change: u128 = next
            .iter()
            .zip(&x)
            .map(|(a, b)| u128::from(a.abs_diff(*b)))
            .sum();
        iterations += 1;
        x = next;
        if change < tol || iterations >= max_iterations {
            return Solved {
                ranks: x,
                iterations,
                change,
            };
        }
    }
}

/// The uniform start over the trusted pages.
pub fn trust_start(trusted: &[bool]) -> Vec<u64> {
    let m = trusted.iter().filter(|t| **t).count() as u64;
    trusted
        .iter()
        .map(|&t| if t { ONE / m.max(1) } else { 0 })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Plain power iteration in doubles, the textbook way.
    fn power(out: &[Vec<u32>], trusted: &[bool], d: f64) -> Vec<f64> {
        let n = out.len();
        let m = trusted.iter().filter(|t| **t).count() as f64;
        let t: Vec<f64> = trusted
            .iter()
            .map(|&b| if b { 1.0 / m } else { 0.0 })
            .collect();
        let mut x = t.clone();
        for _ in 0..500 {
            let mut next = vec![0.0; n];
            let mut dangling = 0.0;
            for (u, targets) in out.iter().enumerate() {
                if targets.is_empty() {
                    dangling += x[u];
                }
                for &v in targets {
                    next[v as usize] += d * x[u] / targets.len() as f64;
                }
            }
            for v in 0..n {
                next[v] += t[v] * ((1.0 - d) + d * dangling);
            }
            x = next;
        }
        x
    }

    #[test]
    fn main_pages() {
        assert!(is_main_page("http://a.com/"));
        assert!(is_main_page("https://a.com:8080/"));
        assert!(!is_main_page("http://a.com/x"));
        assert!(!is_main_page("http://a.com/?q=1"));
    }

    #[test]
    fn fixed_point_matches_doubles_and_sums_to_one() {
        // A small graph with a dangling page, a cycle and an unreachable page.
        let out: Vec<Vec<u32>> = vec![vec![1, 2], vec![2], vec![0], vec![], vec![0, 3]];
        let trusted = vec![true, false, false, true, false];
        let d = Damping::new(0.85);
        let s = solve_local(
            &out,
            &trusted,
            d,
            tolerance_units(1e-12),
            10_000,
            trust_start(&trusted),
        );
        let want = power(&out, &trusted, 0.85);
        for (a, b) in s.ranks.iter().zip(&want) {
            assert!((to_f64(*a) - b).abs() < 1e-11, "{} vs {b}", to_f64(*a));
        }
        let total: f64 = s.ranks.iter().map(|r| to_f64(*r)).sum();
        assert!((total - 1.0).abs() < 1e-11, "{total}");
        // Page 4 has no inlinks and no trust.
        assert_eq!(s.ranks[4], 0);
    }

    #[test]
    fn a_warm_start_takes_fewer_steps_to_the_same_vector() {
        let n = 200u32;
        let out: Vec<Vec<u32>> = (0..n)
            .map(|u| {
                let mut t: Vec<u32> = (1..4)
                    .map(|k| (u * 7 + k * 13) % n)
                    .filter(|&v| v != u)
                    .collect();
                t.sort_unstable();
                t.dedup();
                t
            })
            .collect();
        let trusted: Vec<bool> = (0..n).map(|u| u % 10 == 0).collect();
        let d = Damping::new(0.85);
        let tol = tolerance_units(1e-9);
        let cold = solve_local(&out, &trusted, d, tol, 1000, trust_start(&trusted));
        let warm = solve_local(&out, &trusted, d, tol, 1000, cold.ranks.clone());
        assert!(
            warm.iterations < cold.iterations / 4,
            "{} vs {}",
            warm.iterations,
            cold.iterations
        );
        let diff: u128 = warm
            .ranks
            .iter()
            .zip(&cold.ranks)
            .map(|(a, b)| u128::from(a.abs_diff(*b)))
            .sum();
        assert!(diff < 2 * tol, "{diff}");
    }
}
