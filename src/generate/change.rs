//! True content-change rates, drawn from the per-domain mix of the change paper.
//!
//! Cho & Garcia-Molina, "The Evolution of the Web and Implications for an Incremental
//! Crawler", VLDB 2000, Section 3.1 (Figure 2): more than 40% of `com` pages changed
//! every day, while more than half of the `edu` and `gov` pages did not change at all
//! in four months; `netorg` lies in between. Each page gets a Poisson rate: a bucket is
//! drawn from its class's shares, then a mean change interval log-uniformly within the
//! bucket's bounds; the rest of the class never changes (rate 0).

use rand::Rng;

use super::clock::{DAY, HOUR, YEAR};
use super::names::Class;

/// The buckets' bounds on the mean change interval (seconds): hourly, daily, weekly, monthly, slower than monthly.
const BOUNDS: [(f64, f64); 5] = [
    (HOUR, 12.0 * HOUR),
    (12.0 * HOUR, 2.0 * DAY),
    (2.0 * DAY, 14.0 * DAY),
    (14.0 * DAY, 60.0 * DAY),
    (60.0 * DAY, YEAR),
];

/// Shares of the five buckets per class; what is left never changes.
fn shares(class: Class) -> [f64; 5] {
    match class {
        Class::Com => [0.25, 0.20, 0.20, 0.15, 0.10],
        Class::Other => [0.15, 0.15, 0.20, 0.20, 0.15],
        Class::NetOrg => [0.08, 0.10, 0.20, 0.20, 0.20],
        Class::Edu | Class::Gov => [0.03, 0.04, 0.10, 0.14, 0.22],
    }
}

/// Draws the true change rate (per second) of a page of `class`.
pub(crate) fn sample_rate<R: Rng>(class: Class, rng: &mut R) -> f64 {
    let u: f64 = rng.random();
    let mut cumulative = 0.0;
    for (share, (fast, slow)) in shares(class).into_iter().zip(BOUNDS) {
        cumulative += share;
        if u < cumulative {
            let interval = fast * (slow / fast).powf(rng.random::<f64>());
            return 1.0 / interval;
        }
    }
    0.0
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    #[test]
    fn com_changes_faster_than_gov() {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(1);
        let daily = |class, rng: &mut rand_pcg::Pcg64Mcg| {
            (0..10_000)
                .filter(|_| sample_rate(class, rng) * DAY >= 0.5)
                .count()
        };
        let com = daily(Class::Com, &mut rng);
        let gov = daily(Class::Gov, &mut rng);
        assert!(com > 3_500, "com pages changing about daily: {com}");
        assert!(gov < 1_000, "gov pages changing about daily: {gov}");
    }
}
