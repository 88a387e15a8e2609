//! Change-rate estimators, lifespans and freshness under the Poisson model
//! (docs/change.md; Cho and Garcia-Molina, VLDB 2000, and Cho and Garcia-Molina,
//! "Estimating Frequency of Change", TOIT 2003, for the estimators).
//!
//! Everything here works on one page's (or one pooled group's) intervals; the
//! ledger keeps those and calls in.

use serde::{Deserialize, Serialize};

pub const DAY: f64 = 86_400.0;
/// The 95% point of χ² with one degree of freedom: the likelihood-ratio interval.
pub const CHI2_95: f64 = 3.841_458_820_694_124;
/// Bisections stop at this relative width of `λ`.
const REL_TOL: f64 = 1e-12;

/// The domain classes of the paper (Section 3), from a host's last label.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum DomainClass {
    Com,
    Edu,
    NetOrg,
    Gov,
    Other,
    /// Every class together: the `all` rows.
    All,
}

impl DomainClass {
    pub fn of_host(host: &str) -> DomainClass {
        let host = host.strip_suffix('.').unwrap_or(host);
        match host.rsplit('.').next().unwrap_or("") {
            "com" => DomainClass::Com,
            "edu" => DomainClass::Edu,
            "net" | "org" => DomainClass::NetOrg,
            "gov" | "mil" => DomainClass::Gov,
            _ => DomainClass::Other,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            DomainClass::Com => "com",
            DomainClass::Edu => "edu",
            DomainClass::NetOrg => "netorg",
            DomainClass::Gov => "gov",
            DomainClass::Other => "other",
            DomainClass::All => "all",
        }
    }
}

/// Buckets of the average change interval `T / X` (Figure 2).
pub const CHANGE_BUCKETS: [&str; 5] = ["le_1d", "1d_1w", "1w_1m", "1m_4m", "gt_4m_or_never"];
/// Buckets of lifespans (Figures 3 and 4).
pub const LIFESPAN_BUCKETS: [&str; 4] = ["le_1w", "1w_1m", "1m_4m", "gt_4m"];

/// The bucket of an average change interval, `None` for "never changed".
pub fn change_bucket(avg_interval_s: Option<f64>) -> u8 {
    match avg_interval_s {
        Some(d) if d <= DAY => 0,
        Some(d) if d <= 7.0 * DAY => 1,
        Some(d) if d <= 30.0 * DAY => 2,
        Some(d) if d <= 120.0 * DAY => 3,
        _ => 4,
    }
}

pub fn lifespan_bucket(span_s: f64) -> u8 {
    match span_s {
        d if d <= 7.0 * DAY => 0,
        d if d <= 30.0 * DAY => 1,
        d if d <= 120.0 * DAY => 2,
        _ => 3,
    }
}

/// The censoring case of a lifespan (Section 3.2): whether the page was present at
/// the first snapshot and whether it is present at the last.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Censoring {
    /// Present at the first snapshot only.
    A,
    /// Appeared and disappeared.
    B,
    /// Present at the last only.
    C,
    /// Present at both.
    D,
}

impl Censoring {
    pub fn of(at_first: bool, at_last: bool) -> Censoring {
        match (at_first, at_last) {
            (true, false) => Censoring::A,
            (false, false) => Censoring::B,
            (false, true) => Censoring::C,
            (true, true) => Censoring::D,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Censoring::A => "a",
            Censoring::B => "b",
            Censoring::C => "c",
            Censoring::D => "d",
        }
    }

    /// Method 2 doubles the observed span of a lifespan censored at either end.
    pub fn lifespan_m2(self, span_s: f64) -> f64 {
        match self {
            Censoring::B => span_s,
            _ => 2.0 * span_s,
        }
    }
}

/// Sufficient statistics of a set of intervals for every estimator: the changed
/// intervals as `(τ, count)` and the totals.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Intervals {
    pub changed: Vec<(f64, u64)>,
    /// `n`: all intervals.
    pub n: u64,
    /// `X`: changed intervals.
    pub x: u64,
    /// `T`: total length, seconds.
    pub total: f64,
    /// `U`: total length of the unchanged intervals, seconds.
    pub unchanged: f64,
}

impl Intervals {
    pub fn from_pairs(pairs: impl IntoIterator<Item = (f64, bool)>) -> Intervals {
        let mut s = Intervals::default();
        for (tau, changed) in pairs {
            s.add(tau, changed, 1);
        }
        s
    }

    /// Replaces the intervals with `pairs`, keeping the allocation.
    pub fn refill(&mut self, pairs: impl IntoIterator<Item = (f64, bool)>) {
        let mut changed = std::mem::take(&mut self.changed);
        changed.clear();
        *self = Intervals {
            changed,
            ..Intervals::default()
        };
        for (tau, changed) in pairs {
            self.add(tau, changed, 1);
        }
    }

    pub fn add(&mut self, tau: f64, changed: bool, count: u64) {
        self.n += count;
        self.total += tau * count as f64;
        if changed {
            self.x += count;
            self.changed.push((tau, count));
        } else {
            self.unchanged += tau * count as f64;
        }
    }

    /// `X / T`.
    pub fn naive(&self) -> Option<f64> {
        (self.n > 0 && self.total > 0.0).then(|| self.x as f64 / self.total)
    }

    /// The regular-interval estimator at the mean interval `I = T / n`.
    pub fn regular(&self) -> Option<f64> {
        if self.n == 0 || self.total <= 0.0 {
            return None;
        }
        let (n, x) = (self.n as f64, self.x as f64);
        let mean = self.total / n;
        Some(-((n - x + 0.5) / (n + 0.5)).ln() / mean)
    }

    /// The log-likelihood `ℓ(λ)` up to a constant, its slope (the score, which
    /// decreases in `λ`) and its curvature, in one pass: one `expm1` and one
    /// `ln_1p` per distinct changed interval, however many of the three a solve
    /// needs.
    fn log_lik(&self, lambda: f64) -> Lik {
        self.log_lik_with(lambda, true)
    }

    /// [`Self::log_lik`], leaving `value` out (zero) when `with_value` is false:
    /// the rate's own Newton steps need only the slope and curvature, and skip
    /// the `ln_1p` per interval that the value costs.
    fn log_lik_with(&self, lambda: f64, with_value: bool) -> Lik {
        #[cfg(test)]
        tests::EVALS.with(|e| e.set(e.get() + 1));
        let mut lik = Lik {
            value: -lambda * self.unchanged,
            score: -self.unchanged,
            slope: 0.0,
        };
        // The value's terms `ln(1 + 1/e)` are summed as the logarithm of a
        // running product (one `ln` per evaluation, not per interval), folded
        // into the sum before it could overflow; a repeated or huge factor takes
        // its own `ln`.
        let mut product = 1.0f64;
        for &(tau, c) in &self.changed {
            // With `e = e^{λτ} − 1`: `ln(1 − e^{−λτ}) = −ln(1 + 1/e)`, the score's
            // term is `τ/e`, the curvature's `−τ²(1 + e)/e²`. Written in `1/e`
            // they stay finite when `λτ` is large (`e = ∞`).
            let inv = 1.0 / (lambda * tau).exp_m1();
            if with_value {
                if c == 1 && inv < 1e30 {
                    product *= 1.0 + inv;
                    if product > 1e250 {
                        lik.value -= product.ln();
                        product = 1.0;
                    }
                } else {
                    lik.value -= c as f64 * inv.ln_1p();
                }
            }
            let c = c as f64;
            lik.score += c * tau * inv;
            lik.slope -= c * tau * tau * inv * (1.0 + inv);
        }
        lik.value -= product.ln();
        lik
    }

    /// The maximum-likelihood rate with its likelihood-ratio 95% interval.
    pub fn mle(&self) -> Mle {
        if self.n == 0 || self.total <= 0.0 {
            return Mle::default();
        }
        if self.x == 0 {
            return Mle {
                lambda: Some(0.0),
                lo: Some(0.0),
                hi: Some(CHI2_95 / (2.0 * self.unchanged)),
            };
        }
        let guess = self.x as f64 / self.total;
        if self.unchanged <= 0.0 {
            // Every interval changed: the likelihood rises towards λ = ∞, and only
            // a lower bound is known, where ℓ has fallen χ/2 below its limit 0.
            let lo = solve_increasing(
                |l| {
                    let v = self.log_lik(l);
                    (v.value + CHI2_95 / 2.0, v.score)
                },
                guess,
                0.0,
                f64::INFINITY,
            );
            return Mle {
                lambda: None,
                lo: Some(lo),
                hi: None,
            };
        }
        let lambda = solve_increasing(
            |l| {
                let v = self.log_lik_with(l, false);
                (-v.score, -v.slope)
            },
            guess,
            0.0,
            f64::INFINITY,
        );
        let at_max = self.log_lik(lambda);
        let top = at_max.value - CHI2_95 / 2.0;
        // The ends start from the Wald interval on `ln λ` (the likelihood is close
        // to quadratic there), so each takes a few Newton steps, not a bracket hunt.
        let sd = 1.0 / (lambda * (-at_max.slope).sqrt());
        let wald = if sd.is_finite() { 1.96 * sd } else { 1.0 };
        let lo = solve_increasing(
            |l| {
                let v = self.log_lik(l);
                (v.value - top, v.score)
            },
            lambda * (-wald).exp(),
            0.0,
            lambda,
        );
        let hi = solve_increasing(
            |l| {
                let v = self.log_lik(l);
                (top - v.value, -v.score)
            },
            lambda * wald.exp(),
            lambda,
            f64::INFINITY,
        );
        Mle {
            lambda: Some(lambda),
            lo: Some(lo),
            hi: Some(hi),
        }
    }

    /// The posterior over rate classes `rates` (per second) under a uniform
    /// prior: `(index of the most probable class, its probability)`. A class's
    /// log-likelihood is `Σ ln(1 − e^{−rτ})` over the changed intervals and
    /// `−r·U` for all the unchanged ones, so the cost follows the changed
    /// intervals only.
    pub fn rate_class(&self, rates: &[f64]) -> Option<(usize, f64)> {
        if self.n == 0 || rates.is_empty() {
            return None;
        }
        let log_w: Vec<f64> = rates
            .iter()
            .map(|&r| {
                // `Σ c ln(1 − e^{−rτ})` as the logarithm of a running product:
                // one `ln` per class instead of one per interval (each factor is
                // in (0, 1]; the product is folded into the sum before it could
                // underflow, and a repeated or tiny factor takes its own `ln`).
                let (mut changed, mut product) = (0.0f64, 1.0f64);
                for &(tau, c) in &self.changed {
                    let p = -(-r * tau).exp_m1();
                    if c == 1 && p > 1e-30 {
                        product *= p;
                        if product < 1e-250 {
                            changed += product.ln();
                            product = 1.0;
                        }
                    } else {
                        changed += c as f64 * p.ln();
                    }
                }
                changed + product.ln() - r * self.unchanged
            })
            .collect();
        let best = (0..log_w.len()).fold(0, |b, i| if log_w[i] > log_w[b] { i } else { b });
        let top = log_w[best];
        if top == f64::NEG_INFINITY {
            return None;
        }
        let total: f64 = log_w.iter().map(|w| (w - top).exp()).sum();
        Some((best, 1.0 / total))
    }
}

/// The log-likelihood at one `λ`, with its first and second derivatives.
struct Lik {
    value: f64,
    score: f64,
    slope: f64,
}

/// A maximum-likelihood estimate and its interval; `None` where undefined
/// (`lambda` is `None` with a lower bound when every interval changed).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Mle {
    pub lambda: Option<f64>,
    pub lo: Option<f64>,
    pub hi: Option<f64>,
}

impl Mle {
    /// The rate a plan uses: the estimate, or the lower bound when every interval
    /// changed.
    pub fn planning_rate(&self) -> Option<f64> {
        self.lambda.or(self.lo)
    }
}

/// The root of `f`, increasing in `λ > 0`, where `f(λ)` returns the value and
/// its derivative: Newton's method on `ln λ` from `start`, safeguarded by a
/// bracket: `(lo, hi)` as known (0 and ∞ when not), narrowed by every evaluation
/// (bisecting in `ln λ` when a step would leave it, and moving 4× towards a side
/// not yet found).
fn solve_increasing(f: impl Fn(f64) -> (f64, f64), start: f64, lo: f64, hi: f64) -> f64 {
    let (mut lo, mut hi) = (lo, hi);
    let mut x = if start.is_finite() && start > lo && start < hi {
        start
    } else if hi.is_finite() {
        hi / 2.0
    } else {
        lo.max(1e-6) * 2.0
    };
    for _ in 0..400 {
        let (v, dv) = f(x);
        if v == 0.0 {
            return x;
        }
        if v < 0.0 {
            lo = x;
        } else {
            hi = x;
        }
        let mut next = x * (-v / (x * dv)).exp();
        let newton = next > lo && next < hi;
        if !newton {
            next = if hi.is_infinite() {
                x * 4.0
            } else if lo == 0.0 {
                x / 4.0
            } else {
                (lo * hi).sqrt()
            };
        }
        // Newton converges quadratically: after a step of relative size 1e-8 the
        // error is at a double's precision.
        let step = (next - x).abs() / x;
        if (newton && step <= 1e-8)
            || step <= 1e-14
            || hi - lo <= REL_TOL * lo
            || !(1e-300..1e300).contains(&next)
        {
            return next;
        }
        x = next;
    }
    x
}

/// Freshness of a page with rate `λ` refreshed every `interval` seconds:
/// `(1 − e^{−λI}) / (λI)`.
pub fn freshness(lambda: f64, interval: f64) -> f64 {
    let x = lambda * interval;
    if x <= 0.0 {
        1.0
    } else if x.is_infinite() {
        0.0
    } else {
        -(-x).exp_m1() / x
    }
}

/// The four crawler designs of Table 1.
pub const DESIGNS: [&str; 4] = [
    "steady-inplace",
    "batch-inplace",
    "steady-shadowing",
    "batch-shadowing",
];

/// Expected freshness of a page with rate `λ` under design `d` of [`DESIGNS`],
/// with cycle `c` and batch length `b` (seconds).
pub fn design_freshness(d: usize, lambda: f64, c: f64, b: f64) -> f64 {
    match d {
        0 | 1 => freshness(lambda, c),
        2 => freshness(lambda, c).powi(2),
        _ => freshness(lambda, b) * freshness(lambda, c),
    }
}

/// One step of the adaptive back-off rule: times 0.8 on a change and 1.4
/// otherwise, kept in [1 hour, 365 days].
pub fn backoff_step(interval: f64, changed: bool) -> f64 {
    let next = if changed {
        interval * 0.8
    } else {
        interval * 1.4
    };
    next.clamp(3_600.0, 365.0 * DAY)
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};

    use super::*;

    thread_local! {
        /// Log-likelihood evaluations on this thread, for the solver's cost.
        pub(super) static EVALS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    }

    /// The interval the back-off rule reaches after `pairs`, from `start`.
    fn backoff_interval(pairs: impl IntoIterator<Item = bool>, start: f64) -> f64 {
        pairs.into_iter().fold(start, backoff_step)
    }

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1e-300)
    }

    #[test]
    fn domain_classes_follow_the_last_label() {
        assert_eq!(DomainClass::of_host("www.a.com"), DomainClass::Com);
        assert_eq!(DomainClass::of_host("cs.stanford.edu."), DomainClass::Edu);
        assert_eq!(DomainClass::of_host("x.org"), DomainClass::NetOrg);
        assert_eq!(DomainClass::of_host("x.net"), DomainClass::NetOrg);
        assert_eq!(DomainClass::of_host("army.mil"), DomainClass::Gov);
        assert_eq!(DomainClass::of_host("bbc.co.uk"), DomainClass::Other);
        assert_eq!(DomainClass::of_host("10.0.0.1"), DomainClass::Other);
    }

    #[test]
    fn regular_intervals_match_the_closed_forms() {
        // 10 daily intervals, 4 changes.
        let s = Intervals::from_pairs((0..10).map(|i| (DAY, i % 3 == 0)));
        assert_eq!((s.n, s.x), (10, 4));
        assert!(close(s.naive().unwrap(), 4.0 / (10.0 * DAY), 1e-15));
        let regular = -((10.0 - 4.0 + 0.5) / 10.5f64).ln() / DAY;
        assert!(close(s.regular().unwrap(), regular, 1e-15));
        // Equal intervals: the MLE is -ln(1 - X/n) / I.
        let mle = s.mle();
        assert!(close(mle.lambda.unwrap(), -(0.6f64).ln() / DAY, 1e-10));
        let (lo, hi) = (mle.lo.unwrap(), mle.hi.unwrap());
        assert!(lo < mle.lambda.unwrap() && mle.lambda.unwrap() < hi);
        // Both ends lie χ/2 below the maximum.
        for end in [lo, hi] {
            let drop = s.log_lik(mle.lambda.unwrap()).value - s.log_lik(end).value;
            assert!(close(drop, CHI2_95 / 2.0, 1e-6), "{drop}");
        }
    }

    #[test]
    fn no_change_and_all_change_give_one_sided_intervals() {
        let none = Intervals::from_pairs([(DAY, false), (2.0 * DAY, false)]);
        let m = none.mle();
        assert_eq!((m.lambda, m.lo), (Some(0.0), Some(0.0)));
        assert!(close(m.hi.unwrap(), CHI2_95 / (2.0 * 3.0 * DAY), 1e-15));
        let all = Intervals::from_pairs([(DAY, true), (DAY, true), (DAY, true)]);
        let m = all.mle();
        assert_eq!((m.lambda, m.hi), (None, None));
        // -2 * 3 ln(1 - e^{-λ DAY}) = χ  =>  λ = -ln(1 - e^{-χ/6}) / DAY.
        let lo = -(1.0 - (-CHI2_95 / 6.0).exp()).ln() / DAY;
        assert!(close(m.lo.unwrap(), lo, 1e-10));
        assert_eq!(Intervals::default().mle(), Mle::default());
        assert_eq!(Intervals::default().naive(), None);
    }

    #[test]
    fn irregular_mle_solves_the_score_equation() {
        let s = Intervals::from_pairs([
            (DAY, true),
            (3.0 * DAY, false),
            (0.5 * DAY, true),
            (7.0 * DAY, true),
            (2.0 * DAY, false),
        ]);
        let l = s.mle().lambda.unwrap();
        let lhs: f64 = [DAY, 0.5 * DAY, 7.0 * DAY]
            .iter()
            .map(|t| t / ((l * t).exp() - 1.0))
            .sum();
        assert!(close(lhs, 5.0 * DAY, 1e-9), "{lhs}");
    }

    /// Pages simulated with a known rate and irregular observation times: the
    /// likelihood-ratio interval covers the true rate in about 95% of cases.
    #[test]
    fn mle_interval_covers_the_true_rate_about_95_percent() {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(7);
        let trials = 4000;
        let mut covered = 0;
        for _ in 0..trials {
            let rate = 1.0 / (DAY * rng.random_range(1.0..20.0));
            let pairs: Vec<(f64, bool)> = (0..40)
                .map(|_| {
                    let tau = DAY * rng.random_range(0.5..10.0);
                    let changed = rng.random::<f64>() < -(-rate * tau).exp_m1();
                    (tau, changed)
                })
                .collect();
            let m = Intervals::from_pairs(pairs).mle();
            let lo = m.lo.unwrap_or(0.0);
            let hi = m.hi.unwrap_or(f64::INFINITY);
            if lo <= rate && rate <= hi {
                covered += 1;
            }
        }
        let share = covered as f64 / trials as f64;
        assert!((0.93..=0.97).contains(&share), "coverage {share}");
    }

    /// Plain bisection in `ln λ` to a double's precision: the slow, obvious root.
    fn bisect(f: impl Fn(f64) -> f64, mut lo: f64, mut hi: f64) -> f64 {
        for _ in 0..200 {
            let mid = (lo * hi).sqrt();
            if f(mid) < 0.0 {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        (lo * hi).sqrt()
    }

    /// The safeguarded Newton solves agree with bisection, and the weekly crawls'
    /// histories (up to 10 intervals, a few weeks each) cost few evaluations.
    #[test]
    fn mle_matches_bisection_in_few_evaluations() {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(11);
        let (mut evals, mut solved) = (0, 0);
        for _ in 0..2000 {
            let rate = 1.0 / (DAY * 10f64.powf(rng.random_range(-1.5..2.5)));
            let k = rng.random_range(1..=10);
            let pairs: Vec<(f64, bool)> = (0..k)
                .map(|_| {
                    let tau = DAY
                        * (7.0 * rng.random_range(1..=3) as f64 + rng.random_range(-0.25..0.25));
                    (tau, rng.random::<f64>() < -(-rate * tau).exp_m1())
                })
                .collect();
            let s = Intervals::from_pairs(pairs);
            EVALS.with(|e| e.set(0));
            let m = s.mle();
            evals += EVALS.with(|e| e.get());
            if s.x == 0 || s.unchanged <= 0.0 {
                continue;
            }
            solved += 1;
            let lambda = m.lambda.unwrap();
            let want = bisect(|l| -s.log_lik(l).score, 1e-12, 1e3);
            assert!(close(lambda, want, 1e-11), "{lambda} vs {want}");
            let top = s.log_lik(want).value - CHI2_95 / 2.0;
            let lo = bisect(|l| s.log_lik(l).value - top, 1e-15, want);
            let hi = bisect(|l| top - s.log_lik(l).value, want, 1e3);
            assert!(close(m.lo.unwrap(), lo, 1e-9), "{:?} vs {lo}", m.lo);
            assert!(close(m.hi.unwrap(), hi, 1e-9), "{:?} vs {hi}", m.hi);
        }
        assert!(solved > 500, "{solved}");
        let per = evals as f64 / 2000.0;
        assert!(per <= 10.0, "{per} evaluations per estimate");
    }

    #[test]
    fn rate_classes_pick_the_likely_class() {
        let rates: Vec<f64> = [1.0, 7.0, 30.0, 91.25, 365.0]
            .iter()
            .map(|d| 1.0 / (d * DAY))
            .collect();
        let weekly: Vec<(f64, bool)> = (0..30).map(|i| (DAY, i % 7 == 0)).collect();
        let (class, p) = Intervals::from_pairs(weekly).rate_class(&rates).unwrap();
        assert_eq!(class, 1);
        assert!(p > 0.5 && p <= 1.0);
        // One daily interval that changed: the likelihoods 1 - e^{-λ DAY} by hand.
        let one = [(DAY, true)];
        let w: Vec<f64> = rates.iter().map(|r| 1.0 - (-r * DAY).exp()).collect();
        let (class, p) = Intervals::from_pairs(one).rate_class(&rates).unwrap();
        assert_eq!(class, 0);
        assert!(close(p, w[0] / w.iter().sum::<f64>(), 1e-12));
    }

    #[test]
    fn table_one_of_the_paper() {
        let lambda = 1.0 / (120.0 * DAY);
        let (c, b) = (30.0 * DAY, 7.0 * DAY);
        let r = |v: f64| (v * 100.0).round() / 100.0;
        let f: Vec<f64> = (0..4)
            .map(|d| r(design_freshness(d, lambda, c, b)))
            .collect();
        assert_eq!(f, vec![0.88, 0.88, 0.78, 0.86]);
        // Section 4's other example: pages changing monthly, a batch crawler running
        // the first two weeks of every month: 0.63 in place, 0.50 shadowing (the
        // formula gives 0.505; the paper truncates).
        let monthly = 1.0 / (30.0 * DAY);
        let two_weeks = 14.0 * DAY;
        assert_eq!(r(design_freshness(1, monthly, c, two_weeks)), 0.63);
        let shadowing = design_freshness(3, monthly, c, two_weeks);
        assert!((0.50..0.51).contains(&shadowing), "{shadowing}");
        assert_eq!(freshness(0.0, DAY), 1.0);
    }

    #[test]
    fn backoff_moves_and_clamps() {
        assert!(close(
            backoff_interval([true, false], DAY),
            DAY * 0.8 * 1.4,
            1e-15
        ));
        assert_eq!(backoff_interval([true; 100], DAY), 3_600.0);
        assert_eq!(backoff_interval([false; 100], DAY), 365.0 * DAY);
    }

    #[test]
    fn buckets_and_censoring() {
        assert_eq!(change_bucket(Some(DAY)), 0);
        assert_eq!(change_bucket(Some(DAY + 1.0)), 1);
        assert_eq!(change_bucket(Some(120.0 * DAY)), 3);
        assert_eq!(change_bucket(None), 4);
        assert_eq!(lifespan_bucket(7.0 * DAY), 0);
        assert_eq!(lifespan_bucket(121.0 * DAY), 3);
        assert_eq!(Censoring::of(true, true).lifespan_m2(5.0), 10.0);
        assert_eq!(Censoring::of(false, false).lifespan_m2(5.0), 5.0);
        assert_eq!(Censoring::of(false, true), Censoring::C);
    }
}
