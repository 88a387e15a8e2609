//! Personalized PageRank in fixed point (docs/rankmass.md).
//!
//! Ranks are integers in units of `2^-60`, and every product and quotient is
//! rounded down in integer arithmetic, so sums over pages do not depend on the
//! order in which workers add them: the vector is the same bit for bit on any
//! number of workers. The distributed iteration is `dataflow::pagerank`; this
//! module holds its arithmetic and a one-machine solver for tests.

use serde::{Deserialize, Serialize};

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

    /// A page's factor `d / c` per outlink for PageRank's steps (0 for a page
    /// without outlinks).
    pub fn per_link(self, c: u32) -> LinkFactor {
        // `d < 1` in units of 2^-60 is below 2^60, so `16 d` fits in 64 bits.
        LinkFactor(match c {
            0 => 0,
            c => (self.0 << 4) / u64::from(c),
        })
    }

    /// The mass that jumps by the trust vector: `(1 − d) + d · dangling`.
    pub fn jump(self, dangling: u128) -> u128 {
        u128::from(ONE) - self.apply(u128::from(ONE)) + self.apply(dangling)
    }
}

/// `d / c` in units of `2^-64`, computed once per page and snapshot: a step
/// takes a page's share per outlink as one 128-bit product, rounded down,
/// rather than a division (which was a sixth of a step's sweep). The share
/// is at most one unit below [`Damping::share`]'s; the crawl orderings, whose
/// references follow `Damping::share`, keep that one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkFactor(u64);

impl LinkFactor {
    /// The share `d r / c` of each outlink of a page of rank `r`.
    pub fn share(self, r: u64) -> u64 {
        ((u128::from(r) * u128::from(self.0)) >> 64) as u64
    }

    /// Whether the page has no outlinks.
    pub fn is_dangling(self) -> bool {
        self.0 == 0
    }
}

/// Over-relaxation: a step moves a rank from `x` to `x + ω (r − x)` rather
/// than to the sweep's value `r`, with `ω − 1` in units of `2^-20` and the
/// product rounded down, so every worker computes the same integers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Relaxation(i128);

impl Relaxation {
    /// Plain Gauss-Seidel (`ω = 1`).
    pub const NONE: Relaxation = Relaxation(0);

    pub fn new(omega: f64) -> Relaxation {
        Relaxation(((omega - 1.0) * (1 << 20) as f64).round().max(0.0) as i128)
    }

    /// `x + ω (r − x)`, at least 0.
    pub fn apply(self, r: u64, x: u64) -> u64 {
        if self.0 == 0 {
            return r;
        }
        let delta = i128::from(r) - i128::from(x);
        (i128::from(r) + ((delta * self.0) >> 20)).max(0) as u64
    }
}

/// How a solve speeds up its steps: over-relaxation, host balancing (see
/// [`HostMass`]) and extrapolation (see [`Accelerated::extrapolation_step`]).
/// Measured on the bench graph (BENCHMARKS.md), balancing alone takes about a
/// third of plain Gauss-Seidel's steps, and over-relaxing on top of it costs
/// steps rather than saving them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Acceleration {
    pub omega: Relaxation,
    pub balance: bool,
    pub extrapolate: bool,
}

impl Acceleration {
    /// Plain Gauss-Seidel within hosts.
    pub const NONE: Acceleration = Acceleration {
        omega: Relaxation::NONE,
        balance: false,
        extrapolate: false,
    };
}

/// The acceleration of one solve: as configured until a step fails it (see
/// [`Accelerated::record`]), then plain Gauss-Seidel for the rest of the solve.
/// It sees only the steps' global L1 changes, so every worker decides alike.
#[derive(Clone, Copy, Debug)]
pub struct Accelerated {
    with: Acceleration,
    on: bool,
    /// The steps recorded, and the last two changes, the newest last.
    steps: u32,
    changes: [u128; 2],
    /// The steps since the extrapolation's base (see
    /// [`Accelerated::extrapolation_step`]), and the Gram sums of its
    /// differences once they are in.
    cycle: u32,
    gram: Option<Gram>,
}

impl Accelerated {
    pub fn new(with: Acceleration) -> Accelerated {
        Accelerated {
            with,
            on: true,
            steps: 0,
            changes: [0; 2],
            cycle: 0,
            gram: None,
        }
    }

    /// The acceleration of the next step.
    pub fn current(&self) -> Acceleration {
        if self.on {
            self.with
        } else {
            Acceleration::NONE
        }
    }

    /// Whether no step has failed the acceleration.
    pub fn held(&self) -> bool {
        self.on
    }

    /// Records a step's L1 change. From the third step on, a step that
    /// shrinks the change by less than `d` fails the acceleration: the plain
    /// iteration shrinks it by `d` or better once its start is forgotten,
    /// while over-relaxing past `2 / (1 + d)` can make it shrink slower or
    /// grow, and balancing and extrapolation, which are not linear steps,
    /// carry no guarantee of their own. The second step is not judged: the
    /// first moves away from the start vector, and on a cold start, which puts
    /// all of a host's mass on its main page, the second is where balancing
    /// first sees how the host's mass spreads and corrects every host's total
    /// at once.
    pub fn record(&mut self, d: Damping, change: u128) {
        if self.steps >= 2 && change > d.apply(self.changes[1]) {
            self.on = false;
        }
        self.steps += 1;
        self.changes = [self.changes[1], change];
    }

    /// What to do with the vectors after the step just swept, before its
    /// change is recorded.
    ///
    /// Once a few modes dominate the error `x_k − x*`, a polynomial in the
    /// iteration removes them: minimal polynomial extrapolation (Sidi, Smith
    /// and Ford; Kamvar et al. applied it to PageRank as quadratic
    /// extrapolation) takes the differences `u_j = x_{j+1} − x_j` of four
    /// iterates, finds the `c` that makes `c0 u0 + c1 u1 + u2` smallest, and
    /// combines three iterates with weights `c / Σc`. On the bench graph the
    /// change shrinks by a steady 0.40 a step, but one extrapolated ratio
    /// (Aitken's) removed only three quarters of the error: several modes
    /// with ratios from about 0.35 to 0.46 make up that 0.40, and two
    /// weights fit them far better than one.
    ///
    /// A cycle of four steps from a base vector `x_b` (the start, or the last
    /// extrapolated vector): keep `x_b` and `x_{b+1}` ([`Extrapolate::Keep`]);
    /// after step `b + 3` add up the Gram sums of `u_b, u_{b+1}, u_{b+2}`
    /// ([`Extrapolate::Gram`]), which the workers add together with the
    /// step's other sums, and keep `x_{b+2}`; after step `b + 4` combine
    /// `x_{b+2}, x_{b+3}, x_{b+4}` ([`Extrapolate::Combine`]). The weights
    /// fitted to one window apply to the window two steps on, since they
    /// depend on the modes and not on the iterate: so the sums travel with the
    /// step's messages and cost no round of their own. Every worker computes
    /// the same weights from the same sums and applies them to its own nodes
    /// in integers.
    pub fn extrapolation_step(&mut self, tol: u128) -> Extrapolate {
        if !self.on || !self.with.extrapolate {
            return Extrapolate::Nothing;
        }
        self.cycle += 1;
        match self.cycle {
            1 => Extrapolate::Keep(0),
            2 => Extrapolate::Keep(1),
            3 => Extrapolate::Gram(Gram::shift_for(self.changes[0].max(self.changes[1]))),
            _ => {
                self.cycle = 0;
                let [before, last] = self.changes.map(|c| c as f64);
                // The step's change is predicted below the tolerance: the
                // vector a solve ends on stays a plain step's.
                let last_step = before > 0.0 && last * last / before < tol as f64;
                match self.gram.take().and_then(|g| g.weights()) {
                    Some(w) if !last_step => Extrapolate::Combine(w),
                    _ => Extrapolate::Nothing,
                }
            }
        }
    }

    /// Takes the workers' total Gram sums of a [`Extrapolate::Gram`] step.
    pub fn receive_gram(&mut self, gram: Gram) {
        if self.cycle == 3 {
            self.gram = Some(gram);
        }
    }
}

/// What [`Accelerated::extrapolation_step`] asks of a step's vectors: `x` the
/// vector just swept, `before` the one before it, `kept` two kept ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Extrapolate {
    Nothing,
    /// Keep `before` in `kept[i]`.
    Keep(usize),
    /// Add the nodes' Gram sums of `kept[0], kept[1], before, x` with this
    /// shift ([`Gram::add`]), then keep `before` in `kept[0]`.
    Gram(u32),
    /// Replace `x` by the weighted sum of `kept[0], before, x`.
    Combine(Weights),
}

/// The Gram sums of three differences of four iterates, `⟨u_i, u_j⟩` for
/// `i ≤ j` (00, 01, 02, 11, 12, 22), of the differences shifted right by a
/// number of bits that every worker takes from the same global change: exact
/// integers, so the total does not depend on which worker adds which node.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gram(pub [i128; 6]);

impl Gram {
    /// Differences are cut to this many bits past the shift, so that a
    /// product fits 52 bits and [`Gram::CHUNK`] of them add up in 64 (one
    /// machine multiply and add per product, the 128-bit sums once per
    /// chunk). The fit needs the sums to a few digits only, and the largest
    /// differences, which set them, keep all 26 bits.
    const BITS: u32 = 26;
    const CHUNK: usize = 1024;

    /// The shift for differences whose L1 norms are at most `bound` (each
    /// difference is then at most `bound` too).
    pub fn shift_for(bound: u128) -> u32 {
        (128 - bound.leading_zeros()).saturating_sub(Self::BITS)
    }

    /// Adds the nodes of four iterates, given as equally long slices.
    pub fn add(&mut self, shift: u32, x: [&[u64]; 4]) {
        let limit = 1i64 << Self::BITS;
        // Ranks stay below 2^62, so a difference fits 64 bits; the clamp
        // keeps the products in range whatever the vectors hold.
        let u = |a: u64, b: u64| ((b as i64).wrapping_sub(a as i64) >> shift).clamp(-limit, limit);
        let n = x[0].len();
        for start in (0..n).step_by(Self::CHUNK) {
            let end = (start + Self::CHUNK).min(n);
            let mut g = [0i64; 6];
            for (((&a, &b), &c), &d) in x[0][start..end]
                .iter()
                .zip(&x[1][start..end])
                .zip(&x[2][start..end])
                .zip(&x[3][start..end])
            {
                let (u0, u1, u2) = (u(a, b), u(b, c), u(c, d));
                g[0] += u0 * u0;
                g[1] += u0 * u1;
                g[2] += u0 * u2;
                g[3] += u1 * u1;
                g[4] += u1 * u2;
                g[5] += u2 * u2;
            }
            for (total, part) in self.0.iter_mut().zip(g) {
                *total += i128::from(part);
            }
        }
    }

    pub fn merge(&mut self, o: &Gram) {
        for (a, b) in self.0.iter_mut().zip(o.0) {
            *a += b;
        }
    }

    /// The weights that make `γ0 u0 + γ1 u1 + γ2 u2` smallest with
    /// `γ0 + γ1 + γ2 = 1` (`c2 = 1` and `c0, c1` from the normal equations,
    /// then `γ = c / Σc`), or those of `u1, u2` alone when `u0` and `u1`
    /// point nearly the same way. None when the fit leaves more than half of
    /// `u2`'s length (the iteration is not yet dominated by a few modes) or
    /// the weights are out of range.
    pub fn weights(&self) -> Option<Weights> {
        let [g00, g01, g02, g11, g12, g22] = self.0.map(|g| g as f64);
        if g11 <= 0.0 || g22 <= 0.0 {
            return None;
        }
        let det = g00 * g11 - g01 * g01;
        let (c0, c1) = if det > 1e-9 * g00 * g11 {
            (
                (-g02 * g11 + g12 * g01) / det,
                (-g12 * g00 + g02 * g01) / det,
            )
        } else {
            (0.0, -g12 / g11)
        };
        let residual =
            c0 * c0 * g00 + c1 * c1 * g11 + g22 + 2.0 * (c0 * c1 * g01 + c0 * g02 + c1 * g12);
        let sum = c0 + c1 + 1.0;
        // Written so that a NaN from a degenerate fit fails too.
        let fits = residual <= 0.25 * g22 && sum.abs() > 1e-3;
        if !fits {
            return None;
        }
        let one = (1u64 << Weights::BITS) as f64;
        let (w0, w1) = ((c0 / sum * one).round(), (c1 / sum * one).round());
        let max = one * f64::from(1u32 << 16);
        if !(w0.abs() < max && w1.abs() < max) {
            return None;
        }
        let (w0, w1) = (w0 as i64, w1 as i64);
        Some(Weights([w0, w1, (1i64 << Weights::BITS) - w0 - w1]))
    }
}

/// Extrapolation weights in units of `2^-32`, summing to exactly 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Weights(pub [i64; 3]);

impl Weights {
    const BITS: u32 = 32;

    /// `γ0 a + γ1 b + γ2 c`, rounded down, at least 0: as `c + γ0 (a − c) +
    /// γ1 (b − c)`, the same integer since the weights sum to 1, in two
    /// products rather than three.
    #[inline]
    pub fn apply(&self, a: u64, b: u64, c: u64) -> u64 {
        let [w0, w1, _] = self.0.map(i128::from);
        // Ranks stay below 2^62, so the differences fit 64 bits, and each
        // product is one widening multiply.
        let (da, db) = (
            (a as i64).wrapping_sub(c as i64),
            (b as i64).wrapping_sub(c as i64),
        );
        let moved = (w0 * i128::from(da) + w1 * i128::from(db)) >> Self::BITS;
        (i128::from(c) + moved).clamp(0, i128::from(u64::MAX)) as u64
    }
}

/// One host's mass over a step's sweep, for host balancing.
///
/// Gauss-Seidel settles how a host's mass spreads over its pages within a few
/// sweeps, but the host's total follows its mass balance `m = e + k`, where
/// `e` flows in from other hosts and the jump, and `k` is what the host's
/// pages pass to each other, a fraction `k / m` of the host's mass that is
/// close to `d` on hosts with few links out. So the total closes its gap by
/// only `1 − k / m` per step, much slower than the spread. Balancing solves the
/// balance for the total at once, `m' = e + m' k / m`, and scales the host's
/// new ranks by `m' / m = e / (m − k)` after each sweep: an aggregation step
/// whose coarse problem is one number per host, solved in place. At the fixed
/// point `m = e + k` and the scale is 1, so the answer is the same; it only
/// takes fewer steps. Pages outside the balance (the dataflow's pages that are
/// link targets only) count as outside the host: what flows to them is lost
/// to it.
#[derive(Clone, Copy, Debug, Default)]
pub struct HostMass {
    inflow: u128,
    mass: u128,
    kept: u128,
}

impl HostMass {
    /// Adds a page: `inflow` its mass from outside the host (other hosts and
    /// the jump), `r` its new rank, `share` its new share per outlink, and
    /// `within` its outlinks to pages in the balance.
    pub fn add(&mut self, inflow: u64, r: u64, share: u64, within: u32) {
        self.inflow += u128::from(inflow);
        self.mass += u128::from(r);
        self.kept += u128::from(share) * u128::from(within);
    }

    /// The scale `e / (m − k)` of the host's ranks, if it has mass.
    pub fn scale(&self) -> Option<Scale> {
        (self.mass > self.kept).then(|| {
            let f = (self.inflow << Scale::BITS) / (self.mass - self.kept);
            Scale(f.min(Scale::MAX))
        })
    }
}

/// A factor in units of `2^-40`: one 128-bit product per page rather than a
/// 128-bit division, exact to about 1e-12 of a rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scale(u128);

impl Scale {
    const BITS: u32 = 40;
    /// A scale beyond `2^20` (a host far from its balance, early in a solve)
    /// is cut there, so that the product cannot overflow.
    const MAX: u128 = 1 << (Self::BITS + 20);

    pub fn apply(self, r: u64) -> u64 {
        ((u128::from(r) * self.0) >> Self::BITS) as u64
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
    /// Whether the acceleration held to the end (no step failed it).
    pub acceleration_held: bool,
}

/// Solves on one machine: `out[u]` lists `u`'s distinct outlinks (no self-links),
/// `host[u]` its host (numbered from 0), `trusted[u]` whether `u` is in the
/// (uniform) trust vector, `start` the initial vector. Nodes are swept in index
/// order, as the dataflow sweeps a worker's nodes (sorted by host, then page),
/// and hosts are balanced after the sweep (the dataflow balances each host as
/// its sweep ends: the same, since a sweep reads other hosts' shares from the
/// step's start); follows the same arithmetic and stopping rule.
#[allow(clippy::too_many_arguments)]
pub fn solve_local(
    out: &[Vec<u32>],
    host: &[u64],
    trusted: &[bool],
    d: Damping,
    with: Acceleration,
    tol: u128,
    max_iterations: u32,
    start: Vec<u64>,
) -> Solved {
    let n = out.len();
    let m = trusted.iter().filter(|t| **t).count() as u64;
    let factor: Vec<LinkFactor> = out.iter().map(|o| d.per_link(o.len() as u32)).collect();
    let share = |r: u64, u: usize| factor[u].share(r);
    // Each node's in-neighbours in its own host, and its outlinks into it.
    let mut within: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut within_out = vec![0u32; n];
    for (u, targets) in out.iter().enumerate() {
        for &v in targets {
            if host[v as usize] == host[u] {
                within[v as usize].push(u as u32);
                within_out[u] += 1;
            }
        }
    }
    let hosts = host.iter().max().map_or(0, |h| *h as usize + 1);
    let mut x = start;
    let mut shares: Vec<u64> = x.iter().enumerate().map(|(u, &r)| share(r, u)).collect();
    let mut accelerated = Accelerated::new(with);
    // The iterates that extrapolation keeps.
    let mut kept: [Vec<u64>; 2] = Default::default();
    let mut iterations = 0;
    loop {
        // Mass between hosts and the dangling mass, from the step's start.
        let mut next = vec![0u64; n];
        let mut dangling = 0u128;
        for (u, targets) in out.iter().enumerate() {
            if targets.is_empty() {
                dangling += u128::from(x[u]);
            }
            for &v in targets {
                if host[v as usize] != host[u] {
                    next[v as usize] += shares[u];
                }
            }
        }
        let j = jump_share(d.jump(dangling), m);
        let with = accelerated.current();
        let mut balances = vec![HostMass::default(); hosts];
        for v in 0..n {
            let mut inflow = next[v];
            if trusted[v] {
                inflow += j;
            }
            let r = inflow + within[v].iter().map(|&u| shares[u as usize]).sum::<u64>();
            let r = with.omega.apply(r, x[v]);
            next[v] = r;
            shares[v] = share(r, v);
            balances[host[v] as usize].add(inflow, r, shares[v], within_out[v]);
        }
        if with.balance {
            let scales: Vec<Option<Scale>> = balances.iter().map(HostMass::scale).collect();
            for v in 0..n {
                if let Some(f) = scales[host[v] as usize] {
                    next[v] = f.apply(next[v]);
                    shares[v] = f.apply(shares[v]);
                }
            }
        }
        let change: u128 = next
            .iter()
            .zip(&x)
            .map(|(a, b)| u128::from(a.abs_diff(*b)))
            .sum();
        match accelerated.extrapolation_step(tol) {
            Extrapolate::Nothing => {}
            Extrapolate::Keep(i) => kept[i] = x.clone(),
            Extrapolate::Gram(shift) => {
                let mut gram = Gram::default();
                gram.add(shift, [&kept[0], &kept[1], &x, &next]);
                accelerated.receive_gram(gram);
                kept[0] = x.clone();
            }
            Extrapolate::Combine(w) => {
                for v in 0..n {
                    next[v] = w.apply(kept[0][v], x[v], next[v]);
                    shares[v] = share(next[v], v);
                }
            }
        }
        iterations += 1;
        x = next;
        accelerated.record(d, change);
        if change < tol || iterations >= max_iterations {
            return Solved {
                ranks: x,
                iterations,
                change,
                acceleration_held: accelerated.held(),
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
    fn link_factor_share_is_the_exact_share_rounded_down_or_one_less() {
        let d = Damping::new(0.85);
        assert!(d.per_link(0).is_dangling());
        assert_eq!(d.per_link(0).share(ONE), 0);
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..100_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            // Ranks up to a few times 1, and degrees from 1 to about 1M.
            let r = seed % (4 * ONE);
            let c = 1 + ((seed >> 40) as u32 % (1 << 20));
            // d r / c in exact rational arithmetic: D r / (c 2^60).
            let exact = (u128::from(r) * u128::from(d.0)) / (u128::from(c) << 60);
            let fast = u128::from(d.per_link(c).share(r));
            assert!(
                fast <= exact && exact - fast <= 1,
                "r {r} c {c}: {fast} vs {exact}"
            );
            assert!(!d.per_link(c).is_dangling());
        }
    }

    #[test]
    fn main_pages() {
        assert!(is_main_page("http://a.com/"));
        assert!(is_main_page("https://a.com:8080/"));
        assert!(!is_main_page("http://a.com/x"));
        assert!(!is_main_page("http://a.com/?q=1"));
    }

    fn accel(omega: f64, balance: bool, extrapolate: bool) -> Acceleration {
        Acceleration {
            omega: Relaxation::new(omega),
            balance,
            extrapolate,
        }
    }

    /// Every combination the tests try: plain Gauss-Seidel, relaxations,
    /// balancing, extrapolation, and together.
    const ACCELERATIONS: [(f64, bool, bool); 10] = [
        (1.0, false, false),
        (1.1, false, false),
        (1.2, false, false),
        (1.5, false, false),
        (1.9, false, false),
        (1.0, true, false),
        (1.2, true, false),
        (1.0, false, true),
        (1.0, true, true),
        (1.2, true, true),
    ];

    /// Solves cold.
    fn solve(
        out: &[Vec<u32>],
        host: &[u64],
        trusted: &[bool],
        with: Acceleration,
        tol: f64,
    ) -> Solved {
        solve_local(
            out,
            host,
            trusted,
            Damping::new(0.85),
            with,
            tolerance_units(tol),
            10_000,
            trust_start(trusted),
        )
    }

    fn assert_close(s: &Solved, want: &[f64], tol: f64, context: &str) {
        let l1: f64 = s
            .ranks
            .iter()
            .zip(want)
            .map(|(a, b)| (to_f64(*a) - b).abs())
            .sum();
        assert!(l1 < tol, "{context}: L1 error {l1}");
    }

    #[test]
    fn fixed_point_matches_doubles_and_sums_to_one() {
        // A small graph with a dangling page, a cycle and an unreachable page.
        let out: Vec<Vec<u32>> = vec![vec![1, 2], vec![2], vec![0], vec![], vec![0, 3]];
        let trusted = vec![true, false, false, true, false];
        let want = power(&out, &trusted, 0.85);
        // One host, a host per page, and two hosts.
        for host in [[0u64; 5], [0, 1, 2, 3, 4], [0, 0, 1, 1, 1]] {
            for (omega, balance, extrapolate) in ACCELERATIONS {
                let with = accel(omega, balance, extrapolate);
                let s = solve(&out, &host, &trusted, with, 1e-13);
                let context = format!("{host:?}, {with:?}");
                assert_close(&s, &want, 1e-11, &context);
                let total: f64 = s.ranks.iter().map(|r| to_f64(*r)).sum();
                assert!((total - 1.0).abs() < 1e-11, "{total}");
                // Page 4 has no inlinks and no trust.
                assert_eq!(s.ranks[4], 0);
            }
        }
    }

    /// Random graphs of a few hosts with links both ways within and between
    /// hosts: two pages linking each other across hosts make the between-host
    /// part of a step oscillate, which over-relaxation amplifies past
    /// `ω = 2 / (1 + d)`; the fallback to plain Gauss-Seidel still reaches the
    /// fixed point.
    #[test]
    fn every_acceleration_reaches_the_fixed_point() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = |k: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % k
        };
        let mut fell_back = 0;
        for case in 0..40 {
            let n = 2 + next(30) as usize;
            let host: Vec<u64> = (0..n).map(|_| next(4)).collect();
            let out: Vec<Vec<u32>> = (0..n)
                .map(|u| {
                    let mut t: Vec<u32> = (0..next(4))
                        .map(|_| next(n as u64) as u32)
                        .filter(|&v| v as usize != u)
                        .collect();
                    t.sort_unstable();
                    t.dedup();
                    t
                })
                .collect();
            let trusted: Vec<bool> = (0..n).map(|u| u == 0 || next(3) == 0).collect();
            let want = power(&out, &trusted, 0.85);
            for (omega, balance, extrapolate) in ACCELERATIONS {
                let with = accel(omega, balance, extrapolate);
                let s = solve(&out, &host, &trusted, with, 1e-13);
                fell_back += usize::from(!s.acceleration_held);
                let context = format!("case {case}, {with:?}");
                assert!(s.change < tolerance_units(1e-13), "{context}: stopped");
                assert_close(&s, &want, 1e-11, &context);
            }
        }
        // The cases include some where the relaxation failed.
        assert!(fell_back > 0);
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
        let host: Vec<u64> = (0..u64::from(n)).map(|u| u / 20).collect();
        let solve = |start| {
            solve_local(
                &out,
                &host,
                &trusted,
                d,
                accel(1.0, true, true),
                tol,
                1000,
                start,
            )
        };
        let cold = solve(trust_start(&trusted));
        let warm = solve(cold.ranks.clone());
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

    /// Hosts of pages that link mostly among themselves (the shape of a web
    /// crawl): plain Gauss-Seidel spreads each host's mass quickly, but its
    /// total converges slowly; balancing fixes the totals every step.
    #[test]
    fn balancing_hosts_saves_steps() {
        let (hosts, size) = (30u32, 40u32);
        let n = hosts * size;
        let out: Vec<Vec<u32>> = (0..n)
            .map(|u| {
                let (h, i) = (u / size, u % size);
                let mut t: Vec<u32> = (1..6)
                    .map(|k| h * size + (i * 11 + k * 7) % size)
                    .chain((u % 5 == 0).then_some(((h + 1 + u % 7) % hosts) * size))
                    .filter(|&v| v != u)
                    .collect();
                t.sort_unstable();
                t.dedup();
                t
            })
            .collect();
        let host: Vec<u64> = (0..n).map(|u| u64::from(u / size)).collect();
        let trusted: Vec<bool> = (0..n).map(|u| u % size == 0).collect();
        let want = power(&out, &trusted, 0.85);
        let plain = solve(&out, &host, &trusted, Acceleration::NONE, 1e-12);
        let balanced = solve(&out, &host, &trusted, accel(1.0, true, false), 1e-12);
        assert_close(&plain, &want, 1e-10, "plain");
        assert_close(&balanced, &want, 1e-10, "balanced");
        assert!(balanced.acceleration_held);
        assert!(
            balanced.iterations * 2 < plain.iterations,
            "{} vs {}",
            balanced.iterations,
            plain.iterations
        );
        let extrapolated = solve(&out, &host, &trusted, accel(1.0, true, true), 1e-12);
        assert_close(&extrapolated, &want, 1e-10, "extrapolated");
        assert!(extrapolated.acceleration_held);
        assert!(
            extrapolated.iterations < balanced.iterations,
            "{} vs {}",
            extrapolated.iterations,
            balanced.iterations
        );
    }

    /// A cycle of four steps: keep two iterates, add up the Gram sums at the
    /// third, combine at the fourth, unless the step is predicted to be the
    /// last; nothing without the option or once a step failed the
    /// acceleration.
    #[test]
    fn extrapolation_runs_in_cycles_of_four_steps() {
        let d = Damping::new(0.85);
        let mut a = Accelerated::new(accel(1.0, true, true));
        let u = 1u128 << 50;
        // The Gram sums of two modes, 0.4 and 0.3, in four iterates.
        let gram = gram_of(1.0, Gram::shift_for(u), false);
        let w = gram.weights().expect("two modes fit");
        let mut steps = Vec::new();
        for k in 0..8 {
            let step = a.extrapolation_step(1);
            if let Extrapolate::Gram(_) = step {
                a.receive_gram(gram);
            }
            steps.push(step);
            a.record(d, u >> k);
        }
        assert_eq!(
            steps,
            [
                Extrapolate::Keep(0),
                Extrapolate::Keep(1),
                Extrapolate::Gram(Gram::shift_for(u)),
                Extrapolate::Combine(w),
                Extrapolate::Keep(0),
                Extrapolate::Keep(1),
                Extrapolate::Gram(Gram::shift_for(u >> 4)),
                Extrapolate::Combine(w),
            ]
        );
        // Predicted to be the last step: the change shrinks by half, to
        // below the tolerance.
        let mut a = Accelerated::new(accel(1.0, true, true));
        for k in 0..3 {
            if let Extrapolate::Gram(_) = a.extrapolation_step(1) {
                a.receive_gram(gram);
            }
            a.record(d, u >> k);
        }
        assert_eq!(a.extrapolation_step((u >> 3) + 1), Extrapolate::Nothing);
        assert_eq!(a.extrapolation_step(1), Extrapolate::Keep(0));
        // Off without the option, and once a step has failed the acceleration.
        let mut off = Accelerated::new(accel(1.0, true, false));
        let mut failed = Accelerated::new(accel(1.0, true, true));
        for k in 0..3 {
            off.record(d, u >> k);
            failed.record(d, u >> k);
        }
        assert_eq!(off.extrapolation_step(1), Extrapolate::Nothing);
        failed.record(d, u);
        assert!(!failed.held());
        assert_eq!(failed.extrapolation_step(1), Extrapolate::Nothing);
    }

    /// Iterates `x_j = x* + 0.4^j e + 0.3^j s f` of 64 nodes, with `x*` and
    /// the modes `e, f` from a fixed generator: two modes, or one for `s = 0`.
    fn iterate(j: i32, s: f64) -> (Vec<u64>, Vec<u64>) {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % 2001) as f64 / 1000.0 - 1.0
        };
        let unit = (1u64 << 44) as f64;
        let mut fixed = Vec::new();
        let mut x = Vec::new();
        for _ in 0..64 {
            let (e, f) = (next(), next());
            let star = (1u64 << 50) + (next().abs() * unit) as u64;
            fixed.push(star);
            let error = 0.4f64.powi(j) * e + 0.3f64.powi(j) * s * f;
            x.push((star as f64 + unit * error) as u64);
        }
        (fixed, x)
    }

    /// The Gram sums of `x_0..x_3`, adding the nodes in either order.
    fn gram_of(s: f64, shift: u32, reverse: bool) -> Gram {
        let xs: Vec<Vec<u64>> = (0..4).map(|j| iterate(j, s).1).collect();
        let mut gram = Gram::default();
        let mut nodes: Vec<usize> = (0..64).collect();
        if reverse {
            nodes.reverse();
        }
        for i in nodes {
            let mut part = Gram::default();
            part.add(shift, [0, 1, 2, 3].map(|j| &xs[j][i..i + 1]));
            gram.merge(&part);
        }
        gram
    }

    /// The weights fitted to `x_0..x_3` remove two modes of the error from
    /// `x_2, x_3, x_4`, or one when there is one (where the first two
    /// differences point the same way); a Gram sum is the same whichever
    /// order its nodes are added in.
    #[test]
    fn extrapolation_removes_the_modes() {
        for s in [1.0, 0.0] {
            let (fixed, x4) = iterate(4, s);
            let (x2, x3) = (iterate(2, s).1, iterate(3, s).1);
            let error = |x: &[u64]| -> f64 {
                x.iter()
                    .zip(&fixed)
                    .map(|(a, b)| (*a as f64 - *b as f64).abs())
                    .sum()
            };
            let shift = Gram::shift_for(1 << 50);
            let gram = gram_of(s, shift, false);
            assert_eq!(gram, gram_of(s, shift, true));
            let w = gram.weights().unwrap();
            assert_eq!(w.0.iter().sum::<i64>(), 1 << 32);
            let combined: Vec<u64> = (0..64).map(|i| w.apply(x2[i], x3[i], x4[i])).collect();
            assert!(
                error(&combined) < 1e-4 * error(&x4),
                "{s}: {} of {}",
                error(&combined),
                error(&x4)
            );
        }
        // Differences that do not shrink by a few steady ratios (independent
        // random iterates) fit badly.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % (1 << 20)
        };
        let noise: Vec<Vec<u64>> = (0..4).map(|_| (0..32).map(|_| next()).collect()).collect();
        let mut gram = Gram::default();
        gram.add(0, [0, 1, 2, 3].map(|j| noise[j].as_slice()));
        assert_eq!(gram.weights(), None);
    }
}
