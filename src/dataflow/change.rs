//! The change analysis' aggregate tables (docs/change.md), from the counts the
//! ledgers' change books emit.
//!
//! Each worker's book pre-aggregates its pages' contributions per snapshot, so a
//! table's reduce sees one update per worker and key: the totals are small and
//! are formed on one worker per table, never the pages.

use differential_dataflow::VecCollection;

use crate::algo::change::{DomainClass, CHANGE_BUCKETS, DAY, DESIGNS, LIFESPAN_BUCKETS};
use crate::change_book::ChangeKey;
use crate::job::ChangeParams;
use crate::model::{Micros, Seq};
use crate::output::change::{
    ChangeHistogramRow, FreshnessRow, LifespanHistogramRow, PoissonRow, UnchangedCurveRow,
};

/// The aggregate rows, before they are split by table.
#[derive(
    Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum ChangeAgg {
    Change(ChangeHistogramRow),
    Lifespan(LifespanHistogramRow),
    Unchanged(UnchangedCurveRow),
    Poisson(PoissonRow),
    Freshness(FreshnessRow),
}

/// The table a count belongs to: the reduce's key, so that different tables
/// may be formed on different workers.
fn table_of(k: &ChangeKey) -> u8 {
    match k {
        ChangeKey::ChangeBucket(..) => 0,
        ChangeKey::Lifespan(..) => 1,
        ChangeKey::UnchangedBase(_) | ChangeKey::UnchangedStill(_) => 2,
        ChangeKey::PoissonCount(_)
        | ChangeKey::PoissonSeconds(_)
        | ChangeKey::PoissonBucket(..) => 3,
        ChangeKey::FreshPages | ChangeKey::FreshSum(_) => 4,
    }
}

/// The aggregate tables from the counted contributions.
pub fn aggregates<'s>(
    counts: VecCollection<'s, Seq, ChangeKey>,
    params: &ChangeParams,
    first_time: Micros,
) -> VecCollection<'s, Seq, ChangeAgg> {
    let params = params.clone();
    counts
        .map(|k| (table_of(&k), k))
        .reduce_named("ChangeAggregates", move |table, input, output| {
            let counts: Vec<(ChangeKey, i64)> = input
                .iter()
                .filter(|(_, c)| *c != 0)
                .map(|(k, c)| (**k, *c as i64))
                .collect();
            let rows = match table {
                0 => change_histogram(&counts),
                1 => lifespan_histogram(&counts),
                2 => unchanged_curve(&counts, first_time),
                3 => poisson_check(&counts, &params),
                _ => freshness_designs(&counts, &params),
            };
            output.extend(rows.into_iter().map(|r| (r, 1)));
        })
        .map(|(_, row)| row)
}

/// Classes with a positive count under `f`, in order.
fn classes(
    counts: &[(ChangeKey, i64)],
    f: impl Fn(&ChangeKey) -> Option<DomainClass>,
) -> Vec<DomainClass> {
    let mut cs: Vec<DomainClass> = counts.iter().filter_map(|(k, _)| f(k)).collect();
    cs.sort();
    cs.dedup();
    cs
}

fn count_of(counts: &[(ChangeKey, i64)], key: ChangeKey) -> i64 {
    counts
        .iter()
        .find(|(k, _)| *k == key)
        .map_or(0, |(_, c)| *c)
}

fn change_histogram(counts: &[(ChangeKey, i64)]) -> Vec<ChangeAgg> {
    let mut rows = Vec::new();
    for class in classes(counts, |k| match k {
        ChangeKey::ChangeBucket(c, _) => Some(*c),
        _ => None,
    }) {
        for b in 0..CHANGE_BUCKETS.len() as u8 {
            rows.push(ChangeAgg::Change(ChangeHistogramRow {
                class,
                bucket: b,
                pages: count_of(counts, ChangeKey::ChangeBucket(class, b)),
            }));
        }
    }
    rows
}

fn lifespan_histogram(counts: &[(ChangeKey, i64)]) -> Vec<ChangeAgg> {
    let mut rows = Vec::new();
    for class in classes(counts, |k| match k {
        ChangeKey::Lifespan(c, _, _) => Some(*c),
        _ => None,
    }) {
        for method in [1, 2] {
            for b in 0..LIFESPAN_BUCKETS.len() as u8 {
                rows.push(ChangeAgg::Lifespan(LifespanHistogramRow {
                    class,
                    method,
                    bucket: b,
                    pages: count_of(counts, ChangeKey::Lifespan(class, method, b)),
                }));
            }
        }
    }
    rows
}

fn unchanged_curve(counts: &[(ChangeKey, i64)], first_time: Micros) -> Vec<ChangeAgg> {
    classes(counts, |k| match k {
        ChangeKey::UnchangedBase(c) => Some(*c),
        _ => None,
    })
    .into_iter()
    .map(|class| {
        ChangeAgg::Unchanged(UnchangedCurveRow {
            class,
            first_time,
            base: count_of(counts, ChangeKey::UnchangedBase(class)),
            still: count_of(counts, ChangeKey::UnchangedStill(class)),
        })
    })
    .collect()
}

/// Figure 6: per band, the binned change intervals against the exponential with
/// the band's mean, and the binned Kolmogorov–Smirnov distance.
fn poisson_check(counts: &[(ChangeKey, i64)], p: &ChangeParams) -> Vec<ChangeAgg> {
    let mut rows = Vec::new();
    let w = p.poisson_bucket_days * DAY;
    for (b, band) in p.poisson_bands_days.iter().enumerate() {
        let b = b as u8;
        let n = count_of(counts, ChangeKey::PoissonCount(b));
        let seconds = count_of(counts, ChangeKey::PoissonSeconds(b));
        if n <= 0 || seconds <= 0 {
            continue;
        }
        let nf = n as f64;
        let mean = seconds as f64 / nf;
        let k_max = (4.0 * band[1] / p.poisson_bucket_days).ceil() as u32;
        let survive = |x: f64| (-x / mean).exp();
        let mut band_rows = Vec::new();
        let mut cumulative = 0i64;
        let mut ks = 0.0f64;
        for k in 0..=k_max {
            let lo = ((f64::from(k) - 0.5) * w).max(0.0);
            let hi = (k < k_max).then(|| (f64::from(k) + 0.5) * w);
            let observed = count_of(counts, ChangeKey::PoissonBucket(b, k));
            cumulative += observed;
            let expected = nf * (survive(lo) - hi.map_or(0.0, survive));
            if let Some(hi) = hi {
                let d = (cumulative as f64 / nf - (1.0 - survive(hi))).abs();
                ks = ks.max(d);
            }
            band_rows.push((lo, hi, observed, expected));
        }
        for (lo, hi, observed, expected) in band_rows {
            rows.push(ChangeAgg::Poisson(PoissonRow {
                band_lo_s: (band[0] * DAY).to_bits(),
                band_hi_s: (band[1] * DAY).to_bits(),
                interval_lo_s: lo.to_bits(),
                interval_hi_s: hi.map(f64::to_bits),
                observed,
                expected: expected.to_bits(),
                ks_distance: ks.to_bits(),
            }));
        }
    }
    rows
}

fn freshness_designs(counts: &[(ChangeKey, i64)], p: &ChangeParams) -> Vec<ChangeAgg> {
    let pages = count_of(counts, ChangeKey::FreshPages);
    if pages <= 0 {
        return Vec::new();
    }
    (0..DESIGNS.len() as u8)
        .map(|d| {
            ChangeAgg::Freshness(FreshnessRow {
                design: d,
                cycle_s: (p.cycle_days * DAY).to_bits(),
                batch_s: (p.batch_days * DAY).to_bits(),
                pages,
                sum: count_of(counts, ChangeKey::FreshSum(d)),
            })
        })
        .collect()
}
