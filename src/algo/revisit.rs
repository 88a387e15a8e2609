//! Optimal revisit frequencies (Cho and Garcia-Molina, Section 5 and Figure 9).
//!
//! Maximize `Σ w_i F(λ_i, 1/f_i)` subject to `Σ f_i = B`. The Lagrange condition is
//! `φ(λ_i / f_i) = μ λ_i / w_i` with `φ(x) = 1 − (1 + x) e^{−x}`, and `f_i = 0` when
//! `μ λ_i / w_i ≥ 1`. The pages are spread over workers, so the multiplier `μ` is
//! found by rounds: every worker evaluates its pages at the round's `μ`
//! ([`PageSet::partial`]) and all workers combine the same partial sums the same way
//! ([`Search::next`]), so they agree on the next `μ` and on when to stop. Sums are
//! fixed point, so they do not depend on how the pages are split.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::algo::change::{freshness, DAY};

/// Fixed-point scale of summed frequencies (per day): 1e-12 per page.
const SCALE: f64 = 1e12;

/// `φ(x) = 1 − (1 + x) e^{−x}`, accurate for small `x` too.
pub fn phi(x: f64) -> f64 {
    if x < 0.05 {
        // Σ_{k≥2} (−1)^k (k − 1) x^k / k!
        let mut term = x * x / 2.0;
        let mut sum = 0.0;
        for k in 2..12 {
            sum += (k - 1) as f64 * term;
            term *= -x / (k + 1) as f64;
        }
        sum
    } else {
        -(-x).exp_m1() - x * (-x).exp()
    }
}

/// The `x` with `φ(x) = y`, for `0 < y < 1`, by Newton's method from `start` (a
/// previous solution, or 0 for none), safeguarded by a bracket.
pub fn phi_inverse(y: f64, start: f64) -> f64 {
    let (mut lo, mut hi) = (0.0f64, f64::INFINITY);
    let mut x = if start > 0.0 && start.is_finite() {
        start
    } else {
        // φ(x) ≈ x²/2 for small x; 1 − (1 + x)e^{−x} for large.
        (2.0 * y).sqrt().max(-(1.0 - y).ln())
    };
    for _ in 0..100 {
        // φ and its slope `x e^{−x}` from one `expm1` (the solvers call this for
        // every source or page in every pass).
        let (phi_x, slope) = if x < 0.05 {
            (phi(x), x * (-x).exp())
        } else {
            let em1 = (-x).exp_m1();
            let e = em1 + 1.0;
            (-em1 - x * e, x * e)
        };
        let f = phi_x - y;
        if f > 0.0 {
            hi = hi.min(x);
        } else {
            lo = lo.max(x);
        }
        let newton = x - f / slope;
        if newton > lo && newton < hi {
            // Newton's error after a step is about `(1 − x) / (2x)` times the
            // step squared: a step under 1e-9 x leaves about 1e-18 x, so stop
            // there rather than pay one more step to see it.
            if (newton - x).abs() <= 1e-9 * x {
                return newton;
            }
            x = newton;
            continue;
        }
        let next = if hi.is_finite() {
            0.5 * (lo + hi)
        } else {
            2.0 * x.max(1e-300)
        };
        if (next - x).abs() <= 1e-15 * x {
            return next;
        }
        x = next;
    }
    x
}

/// One page of a plan: its rate (per second) and weight.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlanPage {
    pub lambda: f64,
    pub weight: f64,
}

/// The optimal frequency (per day) of a page at multiplier `mu`, and `x = λ/f`
/// (for a warm start); `None` where the page is not worth refreshing.
pub fn optimal_frequency(p: PlanPage, mu: f64, start: f64) -> Option<(f64, f64)> {
    if p.lambda <= 0.0 || p.weight <= 0.0 {
        return None;
    }
    let y = mu * p.lambda / p.weight;
    if y >= 1.0 {
        return None;
    }
    let x = phi_inverse(y, start);
    Some((p.lambda / x * DAY, x))
}

/// Freshness of a page refreshed `f` times per day.
pub fn page_freshness(lambda: f64, f_per_day: f64) -> f64 {
    if lambda <= 0.0 {
        1.0
    } else if f_per_day <= 0.0 {
        0.0
    } else {
        freshness(lambda, DAY / f_per_day)
    }
}

/// What one worker reports in one round; fields add across workers.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Partial {
    /// Pages in the plan.
    pub pages: u64,
    /// Σ f_i(μ), fixed point.
    pub sum_f: i128,
    /// Σ μ f_i'(μ) (≤ 0), fixed point: the slope of `Σf` against `ln μ`.
    pub slope: i128,
    /// Σ w_i, fixed point.
    pub sum_w: i128,
    /// Σ λ_i, fixed point of per-day rates.
    pub sum_lambda: i128,
    /// Σ sqrt(λ_i w_i / 2) per day: the small-`x` asymptote `Σf ≈ that / sqrt(μ)`.
    pub sum_root: i128,
    /// The largest `w_i / λ_i` (bits of a positive double order like the double).
    pub max_ratio_bits: u64,
    /// The smallest `w_i / λ_i` of the pages still refreshed at `μ`: the next
    /// cut-off above `μ` (bits; 0 when none).
    pub next_cut_bits: u64,
}

impl Partial {
    pub fn add(&mut self, o: &Partial) {
        self.pages += o.pages;
        self.sum_f += o.sum_f;
        self.slope += o.slope;
        self.sum_w += o.sum_w;
        self.sum_lambda += o.sum_lambda;
        self.sum_root += o.sum_root;
        self.max_ratio_bits = self.max_ratio_bits.max(o.max_ratio_bits);
        self.next_cut_bits = min_cut(self.next_cut_bits, o.next_cut_bits);
    }
}

/// The smaller of two cut-offs' bits, 0 standing for none.
fn min_cut(a: u64, b: u64) -> u64 {
    match (a, b) {
        (0, x) | (x, 0) => x,
        (a, b) => a.min(b),
    }
}

fn fixed(v: f64) -> i128 {
    (v * SCALE).round() as i128
}

fn unfixed(v: i128) -> f64 {
    v as f64 / SCALE
}

/// One worker's planned pages, with each page's last `x` for warm starts.
#[derive(Default)]
pub struct PageSet {
    pub pages: Vec<PlanPage>,
    warm: Vec<f64>,
}

impl PageSet {
    pub fn new(pages: Vec<PlanPage>) -> PageSet {
        let warm = vec![0.0; pages.len()];
        PageSet { pages, warm }
    }

    /// The round-0 report: sizes and the start of the search.
    pub fn totals(&self) -> Partial {
        let mut p = Partial::default();
        for pg in &self.pages {
            p.pages += 1;
            p.sum_w += fixed(pg.weight);
            p.sum_lambda += fixed(pg.lambda * DAY);
            if pg.lambda > 0.0 {
                p.sum_root += fixed((pg.lambda * DAY * pg.weight * DAY / 2.0).sqrt());
                let ratio = pg.weight / pg.lambda;
                p.max_ratio_bits = p.max_ratio_bits.max(ratio.to_bits());
            }
        }
        p
    }

    /// The pages binned by ratio, for the search's start.
    pub fn bins(&self) -> RateBins {
        let mut bins = RateBins::default();
        for pg in &self.pages {
            if pg.lambda > 0.0 && pg.weight > 0.0 {
                let key = ((pg.lambda / pg.weight * DAY).ln() * BINS_PER_UNIT).floor() as i32;
                let b = bins.bins.entry(key).or_default();
                b.0 += fixed(pg.weight);
                b.1 += fixed(pg.lambda * DAY);
            }
        }
        bins
    }

    /// `Σ f_i(μ)` and its slope against `ln μ` over this worker's pages.
    pub fn partial(&mut self, mu: f64) -> Partial {
        let mut p = Partial::default();
        for (pg, warm) in self.pages.iter().zip(self.warm.iter_mut()) {
            if let Some((f, x)) = optimal_frequency(*pg, mu, *warm) {
                *warm = x;
                p.sum_f += fixed(f);
                p.next_cut_bits = min_cut(p.next_cut_bits, (pg.weight / pg.lambda).to_bits());
                // μ df/dμ = −f (e^x − 1 − x) / x².
                let g = if x < 1e-4 {
                    0.5 + x / 6.0
                } else {
                    (x.exp_m1() - x) / (x * x)
                };
                p.slope -= fixed(f * g);
            }
        }
        p
    }

    /// The plan's frequencies per day (0 for pages not worth refreshing).
    pub fn frequencies(&mut self, plan: &Final) -> Vec<f64> {
        self.pages
            .iter()
            .zip(self.warm.iter_mut())
            .map(|(pg, warm)| match optimal_frequency(*pg, plan.mu, *warm) {
                Some((f, x)) => {
                    *warm = x;
                    let scaled = match plan.cliff {
                        // Only the pages cut off just past the cliff.
                        Some(past) => past * pg.lambda / pg.weight >= 1.0,
                        None => true,
                    };
                    if scaled {
                        f * plan.scale
                    } else {
                        f
                    }
                }
                None => 0.0,
            })
            .collect()
    }
}

/// Bins per unit of `ln(λ/w)`: a page's ratio is within 0.4% of its bin's
/// mean.
const BINS_PER_UNIT: f64 = 128.0;

/// The plan's pages binned by `r = λ/w`, with each bin's `Σw` and `Σλ` (fixed
/// point). Round 0 sends them, and every worker solves the problem with each
/// bin's pages at the bin's mean ratio: a few thousand bins instead of a
/// million pages, and within a few parts in 10⁴ of the answer (the error is
/// second order in a bin's width), so the exact search starts next to its root.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RateBins {
    bins: BTreeMap<i32, (i128, i128)>,
}

impl RateBins {
    pub fn add(&mut self, o: &RateBins) {
        for (k, (w, l)) in &o.bins {
            let b = self.bins.entry(*k).or_default();
            b.0 += w;
            b.1 += l;
        }
    }

    /// The `μ` at which the binned problem's `Σf` meets the budget; `None` when
    /// no page changes.
    pub fn approximate_mu(&self, budget_per_day: f64) -> Option<f64> {
        // Each bin as one page of weight `Σw` at ratio `Σλ/Σw` (per second).
        let bins: Vec<(f64, f64)> = self
            .bins
            .values()
            .filter(|(w, l)| *w > 0 && *l > 0)
            .map(|&(w, l)| (unfixed(w), unfixed(l) / unfixed(w) / DAY))
            .collect();
        let min_r = bins.iter().map(|b| b.1).fold(f64::INFINITY, f64::min);
        if !min_r.is_finite() || budget_per_day <= 0.0 {
            return None;
        }
        let mut warm = vec![0.0; bins.len()];
        let mut sum_f = |mu: f64| -> f64 {
            let mut sum = 0.0;
            for (&(w, r), warm) in bins.iter().zip(warm.iter_mut()) {
                let y = mu * r;
                if y < 1.0 {
                    let x = phi_inverse(y, *warm);
                    *warm = x;
                    sum += w * r / x * DAY;
                }
            }
            sum
        };
        // Every bin is cut off at μ = 1/min r; Σf grows without bound as μ → 0.
        let hi = -min_r.ln();
        let mut lo = hi - 1.0;
        while sum_f(lo.exp()) < budget_per_day && lo > hi - 700.0 {
            lo -= (hi - lo).max(1.0);
        }
        let mut hi = hi;
        for _ in 0..48 {
            let mid = 0.5 * (lo + hi);
            if sum_f(mid.exp()) > budget_per_day {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Some((0.5 * (lo + hi)).exp())
    }
}

/// The search for `μ`, identical on every worker.
#[derive(Clone, Debug, PartialEq)]
pub struct Search {
    budget: f64,
    /// `ln μ` where `Σf` is above the budget (`None` until seen), with
    /// `ln Σf − ln B` there.
    lo: Option<(f64, f64)>,
    /// `ln μ` where `Σf` is below it: beyond this every page is cut off; with
    /// `ln Σf − ln B` there (−∞ at the cut-off).
    hi: (f64, f64),
    /// Which end the last round moved: the Illinois rule halves the other end's
    /// value when the same end moves twice, so false position cannot stall.
    last_moved_lo: Option<bool>,
    /// The previous round's `(ln μ, ln Σf − ln B)`, for secant steps.
    prev: Option<(f64, f64)>,
    /// The evaluated ends, below and above the budget: `(ln μ, Σf, d ln Σf / d ln μ,
    /// the next cut-off's bits)`.
    ends: [Option<(f64, f64, f64, u64)>; 2],
    /// A cliff being probed: its cut-off `c`, and `Σf` just past it once known.
    probe: Option<(f64, Option<f64>)>,
    /// Whether the last round ended a probe: the next one takes an ordinary
    /// step, so that probes do not walk the cut-offs one page at a time.
    probed: bool,
    pub mu: f64,
    pub rounds: u32,
}

/// What to do after a round.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Step {
    /// Evaluate at this `μ`.
    Try(f64),
    /// The plan.
    Done(Final),
}

/// The final plan: the frequencies at `mu`, scaled so that they meet the budget
/// exactly.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Final {
    pub mu: f64,
    /// `B / Σf(μ)`, 1 up to the search's tolerance ([`BUDGET_TOL`]), applied to
    /// every page; or at a cliff, the share of the tied pages' frequencies that
    /// the budget leaves them, applied to them only.
    pub scale: f64,
    /// At a cliff: `μ` just past it. Pages tied at one ratio `w/λ` (one group's
    /// rate) reach their cut-off together, and in doubles `Σf` jumps there; when
    /// the budget falls inside the jump, the optimum is `μ` at the cliff with the
    /// tied pages, refreshed far less often than they change, where freshness is
    /// linear in `f`, splitting what the others leave.
    pub cliff: Option<f64>,
}

/// Relative budget error at which the search stops. The frequencies are then
/// scaled to meet the budget exactly: that plan is the optimum for a budget
/// within this of `B`, off the true optimum's freshness by about its square.
/// Closer than this `Σf` is a staircase: a page nearing its cut-off drops to 0
/// over a sliver of `μ` (`f` falls only like `1 / ln(1/(1 − μλ/w))`), so with
/// many pages each further digit costs rounds and buys nothing.
const BUDGET_TOL: f64 = 1e-5;
const MAX_ROUNDS: u32 = 200;

impl Search {
    /// Starts from the combined round-0 totals and bins; `None` when no page
    /// changes.
    pub fn start(budget_per_day: f64, totals: &Partial, bins: &RateBins) -> Option<Search> {
        if totals.max_ratio_bits == 0 || budget_per_day <= 0.0 {
            return None;
        }
        let hi = f64::from_bits(totals.max_ratio_bits).ln();
        // The small-x asymptote Σf ≈ R / sqrt(μ) gives μ = (R / B)²; it
        // overestimates Σf, so the root lies at or above it.
        let root = unfixed(totals.sum_root);
        let mut guess = 2.0 * (root / budget_per_day).ln();
        if let Some(mu) = bins.approximate_mu(budget_per_day) {
            guess = mu.ln();
        }
        if guess > hi - 0.01 {
            // Near the cut-off Σf falls only logarithmically: start well inside.
            guess = hi - 0.7;
        }
        Some(Search {
            budget: budget_per_day,
            lo: None,
            hi: (hi, f64::NEG_INFINITY),
            last_moved_lo: None,
            prev: None,
            ends: [None, None],
            probe: None,
            probed: false,
            mu: guess.exp(),
            rounds: 0,
        })
    }

    /// Given `Σf` and its slope at the current `μ`, the next step.
    pub fn next(&mut self, total: &Partial) -> Step {
        self.rounds += 1;
        let s = self.mu.ln();
        let sum = unfixed(total.sum_f);
        let done = Step::Done(Final {
            mu: self.mu,
            scale: if sum > 0.0 { self.budget / sum } else { 1.0 },
            cliff: None,
        });
        if (sum - self.budget).abs() <= BUDGET_TOL * self.budget || self.rounds >= MAX_ROUNDS {
            return done;
        }
        let probed = std::mem::replace(&mut self.probed, self.probe.is_some());
        match self.probe.take() {
            // Just past the cut-off `c`, below the budget: try just before it.
            Some((c, None)) if sum < self.budget => {
                self.probe = Some((c, Some(sum)));
                self.mu = before(c);
                return Step::Try(self.mu);
            }
            // Above the budget just before `c` and below it just past: the cliff.
            Some((c, Some(past))) if sum > self.budget => {
                return Step::Done(Final {
                    mu: self.mu,
                    scale: (self.budget - past) / (sum - past),
                    cliff: Some(after(c)),
                });
            }
            _ => {}
        }
        let gap = sum.ln() - self.budget.ln();
        let moved_lo = sum > self.budget;
        let analytic = unfixed(total.slope) / sum;
        self.ends[usize::from(moved_lo)] = Some((s, sum, analytic, total.next_cut_bits));
        if let [Some(below), Some(above)] = self.ends {
            // A cliff (see [`Final::cliff`]) looks, across the bracket, far
            // steeper than the slope past it (the side before it is steep too:
            // the tied pages are near their cut-off). Probe the first cut-off
            // above the bracket's low end: just past it, then just before it.
            let secant = (below.1.ln() - above.1.ln()) / (below.0 - above.0);
            let c = f64::from_bits(above.3);
            if !probed
                && secant.abs() > 4.0 * below.2.abs().min(above.2.abs())
                && above.3 != 0
                && after(c).ln() < below.0
            {
                self.probe = Some((c, None));
                self.mu = after(c);
                return Step::Try(self.mu);
            }
        }
        if moved_lo {
            self.lo = Some((s, gap));
        } else if s < self.hi.0 {
            self.hi = (s, gap);
        }
        if self.last_moved_lo == Some(moved_lo) {
            // Illinois: the end that stayed put twice weighs half.
            match (moved_lo, self.lo.as_mut()) {
                (true, _) => self.hi.1 /= 2.0,
                (false, Some(lo)) => lo.1 /= 2.0,
                (false, None) => {}
            }
        }
        self.last_moved_lo = Some(moved_lo);
        // Newton on ln Σf against ln μ. Pages close to their cut-off make the
        // analytic slope jumpy, so once two rounds are known the secant's slope
        // (which sees Σf at the scale of the steps) is used instead.
        let secant = self
            .prev
            .filter(|p| p.0 != s && gap.is_finite() && p.1.is_finite())
            .map(|p| (gap - p.1) / (s - p.0))
            .filter(|e| *e < 0.0);
        self.prev = Some((s, gap));
        let elasticity = secant.map_or(analytic, |e| e.min(analytic));
        let newton = if sum > 0.0 && elasticity < 0.0 {
            s - gap / elasticity
        } else {
            f64::NAN
        };
        let hi = self.hi.0;
        let next = match self.lo {
            Some((lo, _)) if hi - lo <= 1e-15 * lo.abs().max(1.0) => return done,
            Some((lo, _)) if newton > lo && newton < hi => newton,
            // False position between the ends, when both are finite.
            Some((lo, f_lo)) if self.hi.1.is_finite() && f_lo > self.hi.1 => {
                let x = lo + f_lo * (hi - lo) / (f_lo - self.hi.1);
                if x > lo && x < hi {
                    x
                } else {
                    0.5 * (lo + hi)
                }
            }
            Some((lo, _)) => 0.5 * (lo + hi),
            None if newton < hi => newton,
            None => s - 1.0,
        };
        self.mu = next.exp();
        Step::Try(self.mu)
    }
}

/// Just before and just past the cut-off `c` of the pages with `w/λ = c`, in
/// doubles (`μλ/w` is rounded twice).
fn before(c: f64) -> f64 {
    c * (1.0 - 4.0 * f64::EPSILON)
}

fn after(c: f64) -> f64 {
    c * (1.0 + 4.0 * f64::EPSILON)
}

/// Solves a plan on one machine (for tests and small inputs): the optimal
/// frequencies per day, and `μ`.
pub fn solve_local(pages: &[PlanPage], budget_per_day: f64) -> Option<(Vec<f64>, f64)> {
    let mut set = PageSet::new(pages.to_vec());
    let mut search = Search::start(budget_per_day, &set.totals(), &set.bins())?;
    let mut step = Step::Try(search.mu);
    while let Step::Try(mu) = step {
        let p = set.partial(mu);
        step = search.next(&p);
    }
    let Step::Done(plan) = step else {
        unreachable!()
    };
    Some((set.frequencies(&plan), plan.mu))
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};

    use super::*;

    #[test]
    fn phi_and_its_inverse() {
        for x in [1e-8f64, 1e-3, 0.049, 0.051, 0.5, 1.0, 5.0, 20.0] {
            let direct = 1.0 - (1.0 + x) * (-x).exp();
            let series = phi(x);
            if x > 1e-3 {
                assert!((direct - series).abs() <= 1e-12 * series, "{x}");
            }
            let back = phi_inverse(series, 0.0);
            // Near y = 1 the inverse is ill-conditioned: y's rounding alone moves x.
            let tol = if x > 10.0 { 1e-6 } else { 1e-9 };
            assert!((back - x).abs() <= tol * x, "{x} -> {back}");
            assert!((phi_inverse(series, x * 1.5) - x).abs() <= tol * x);
        }
    }

    /// The inverse is as exact as `φ` can tell: from cold and warm starts
    /// (Newton's early stop included), `φ(φ⁻¹(y))` is `y` to 1e-14.
    #[test]
    fn phi_inverse_is_exact_to_rounding() {
        for k in 0..=400 {
            let x = 10f64.powf(-6.0 + 7.0 * k as f64 / 400.0);
            let y = phi(x);
            for start in [0.0, x * 0.5, x * 0.999, x * 1.001, x * 3.0] {
                let back = phi_inverse(y, start);
                assert!(
                    (phi(back) - y).abs() <= 1e-14 * y,
                    "x {x}, start {start}: phi({back}) = {} vs {y}",
                    phi(back)
                );
            }
        }
    }

    fn total_freshness(pages: &[PlanPage], f: &[f64]) -> f64 {
        pages
            .iter()
            .zip(f)
            .map(|(p, f)| p.weight * page_freshness(p.lambda, *f))
            .sum::<f64>()
            / pages.iter().map(|p| p.weight).sum::<f64>()
    }

    fn random_pages(rng: &mut rand_pcg::Pcg64Mcg, n: usize) -> Vec<PlanPage> {
        (0..n)
            .map(|_| PlanPage {
                lambda: if rng.random::<f64>() < 0.1 {
                    0.0
                } else {
                    1.0 / (DAY * 10f64.powf(rng.random_range(-1.5..2.5)))
                },
                weight: if rng.random::<bool>() {
                    1.0
                } else {
                    rng.random_range(0.1..3.0)
                },
            })
            .collect()
    }

    #[test]
    fn optimum_meets_the_budget_and_beats_uniform_and_proportional() {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(3);
        for n in [1, 2, 5, 50, 2000] {
            let pages = random_pages(&mut rng, n);
            if pages.iter().all(|p| p.lambda == 0.0) {
                continue;
            }
            for budget in [0.01, 1.0, 30.0, 1000.0] {
                let (f, _) = solve_local(&pages, budget).unwrap();
                let sum: f64 = f.iter().sum();
                assert!((sum - budget).abs() <= 1e-6 * budget, "{n} {budget}: {sum}");
                let uniform = vec![budget / n as f64; n];
                let lsum: f64 = pages.iter().map(|p| p.lambda).sum();
                let prop: Vec<f64> = pages.iter().map(|p| budget * p.lambda / lsum).collect();
                let best = total_freshness(&pages, &f);
                let (u, p) = (
                    total_freshness(&pages, &uniform),
                    total_freshness(&pages, &prop),
                );
                assert!(best >= u - 1e-9, "{n} {budget}: {best} < uniform {u}");
                assert!(best >= p - 1e-9, "{n} {budget}: {best} < proportional {p}");
            }
        }
    }

    /// Two and three pages: a grid search over the budget's splits finds nothing
    /// better than the solver, and the solver's split is where the grid peaks.
    #[test]
    fn optimum_matches_a_brute_force_search() {
        let day = |d: f64| 1.0 / (d * DAY);
        let cases = [
            vec![(day(1.0), 1.0), (day(10.0), 1.0)],
            vec![(day(0.01), 1.0), (day(1.0), 1.0)],
            vec![(day(2.0), 2.0), (day(5.0), 1.0), (day(30.0), 0.5)],
        ];
        for case in cases {
            let pages: Vec<PlanPage> = case
                .iter()
                .map(|&(lambda, weight)| PlanPage { lambda, weight })
                .collect();
            let budget = 1.0;
            let (f, _) = solve_local(&pages, budget).unwrap();
            let best = total_freshness(&pages, &f);
            let steps = 400;
            let mut grid_best = 0.0f64;
            let mut grid_f = Vec::new();
            for a in 0..=steps {
                for b in 0..=(if pages.len() == 3 { steps - a } else { 0 }) {
                    let fa = budget * a as f64 / steps as f64;
                    let fb = budget * b as f64 / steps as f64;
                    let split: Vec<f64> = if pages.len() == 2 {
                        vec![fa, budget - fa]
                    } else {
                        vec![fa, fb, budget - fa - fb]
                    };
                    let v = total_freshness(&pages, &split);
                    if v > grid_best {
                        grid_best = v;
                        grid_f = split;
                    }
                }
            }
            assert!(best >= grid_best - 1e-9, "{best} < {grid_best}");
            for (a, b) in f.iter().zip(&grid_f) {
                assert!(
                    (a - b).abs() <= 2.0 * budget / steps as f64,
                    "{f:?} vs {grid_f:?}"
                );
            }
        }
    }

    #[test]
    fn too_fast_pages_get_nothing() {
        // The paper's example: one page changing daily, one every second, one
        // fetch a day: all of it goes to the daily page.
        let pages = [
            PlanPage {
                lambda: 1.0 / DAY,
                weight: 1.0,
            },
            PlanPage {
                lambda: 1.0,
                weight: 1.0,
            },
        ];
        let (f, _) = solve_local(&pages, 1.0).unwrap();
        assert!((f[0] - 1.0).abs() < 1e-9 && f[1] == 0.0, "{f:?}");
    }

    /// Splitting the pages over workers gives bit-identical sums and plans.
    #[test]
    fn partials_do_not_depend_on_the_split() {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(11);
        let pages = random_pages(&mut rng, 500);
        let run = |parts: usize| {
            let mut sets: Vec<PageSet> = (0..parts)
                .map(|k| PageSet::new(pages.iter().skip(k).step_by(parts).copied().collect()))
                .collect();
            let mut totals = Partial::default();
            let mut bins = RateBins::default();
            sets.iter().for_each(|s| {
                totals.add(&s.totals());
                bins.add(&s.bins());
            });
            let mut search = Search::start(50.0, &totals, &bins).unwrap();
            let mut step = Step::Try(search.mu);
            while let Step::Try(mu) = step {
                let mut p = Partial::default();
                sets.iter_mut().for_each(|s| p.add(&s.partial(mu)));
                step = search.next(&p);
            }
            (search.rounds, step)
        };
        let one = run(1);
        assert_eq!(one, run(3));
        assert_eq!(one, run(7));
        assert!(one.0 <= 5, "rounds: {}", one.0);
    }

    /// Pages with the generator's mix of rates (hourly to yearly, a
    /// third never changing): the search takes few rounds at any budget.
    #[test]
    fn few_rounds_on_a_realistic_mix() {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(5);
        let pages: Vec<PlanPage> = (0..200_000)
            .map(|_| PlanPage {
                lambda: if rng.random::<f64>() < 0.3 {
                    0.0
                } else {
                    1.0 / (3600.0 * (8760.0f64).powf(rng.random::<f64>()))
                },
                weight: 1.0,
            })
            .collect();
        for budget in [10.0, 1000.0, 100_000.0, 1e7] {
            let mut set = PageSet::new(pages.clone());
            let mut search = Search::start(budget, &set.totals(), &set.bins()).unwrap();
            let mut step = Step::Try(search.mu);
            while let Step::Try(mu) = step {
                step = search.next(&set.partial(mu));
            }
            assert!(
                search.rounds <= 5,
                "budget {budget}: {} rounds",
                search.rounds
            );
        }
    }

    /// Pages tied at one rate (a group's estimate, as pages with too few intervals
    /// of their own get) reach their cut-off together, and in doubles `Σf` jumps
    /// there. A budget inside the jump ends in a few rounds, met exactly, with
    /// the tied pages taking what the others leave.
    #[test]
    fn a_cliff_of_tied_pages_ends_quickly() {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(3);
        let tied = 1.0 / (9.0 * DAY);
        let mut pages: Vec<PlanPage> = (0..20_000)
            .map(|_| PlanPage {
                lambda: 1.0 / (DAY * 10f64.powf(rng.random_range(-1.0..2.5))),
                weight: 1.0,
            })
            .collect();
        pages.extend((0..2000).map(|_| PlanPage {
            lambda: tied,
            weight: 1.0,
        }));
        let mut set = PageSet::new(pages.clone());
        // Σf just before and just past the tied pages' cut-off `μ = w/λ`.
        let cut = 1.0 / tied;
        let before = unfixed(set.partial(cut * (1.0 - 4.0 * f64::EPSILON)).sum_f);
        let after = unfixed(set.partial(cut * (1.0 + 4.0 * f64::EPSILON)).sum_f);
        assert!(before - after > 1e-4 * before, "{before} {after}");
        let budget = 0.5 * (before + after);
        let mut search = Search::start(budget, &set.totals(), &set.bins()).unwrap();
        let mut step = Step::Try(search.mu);
        while let Step::Try(mu) = step {
            step = search.next(&set.partial(mu));
        }
        assert!(search.rounds <= 12, "{} rounds", search.rounds);
        let Step::Done(plan) = step else {
            unreachable!()
        };
        assert!(plan.cliff.is_some(), "{plan:?}");
        let freqs = set.frequencies(&plan);
        let total: f64 = freqs.iter().sum();
        assert!(
            (total - budget).abs() <= 1e-9 * budget,
            "{total} vs {budget}"
        );
    }
}
