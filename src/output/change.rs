//! Rows of the change tables (docs/change.md). Doubles travel as their bits, since
//! rows are differential data and must be totally ordered.

use serde::{Deserialize, Serialize};

use crate::algo::change::{Censoring, DomainClass, CHANGE_BUCKETS, DESIGNS, LIFESPAN_BUCKETS};
use crate::change_book::Level;
use crate::model::{Micros, PageId};
use crate::output::batch::{RowContext, RowWriter, TableRow};
use crate::output::schema::{
    TableDef, CHANGE_HISTOGRAM, FRESHNESS_DESIGNS, GROUP_CHANGE, LIFESPAN_HISTOGRAM, PAGE_CHANGE,
    POISSON_CHECK, REVISIT_PLAN, REVISIT_SUMMARY, UNCHANGED_CURVE,
};

fn f(bits: u64) -> f64 {
    f64::from_bits(bits)
}

fn opt(bits: Option<u64>) -> Option<f64> {
    bits.map(f64::from_bits)
}

/// A rate class's name: its mean change interval in days, then `d` (`91.25d`).
pub struct ClassName(pub f64);

impl std::fmt::Display for ClassName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}d", self.0)
    }
}

/// A row of `page_change`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct PageChangeRow {
    pub url: String,
    pub host: String,
    pub class: DomainClass,
    pub observations: i64,
    pub changes: i64,
    pub intervals: i64,
    pub span_s: u64,
    pub naive: Option<u64>,
    pub regular: Option<u64>,
    pub mle: Option<u64>,
    pub lo: Option<u64>,
    pub hi: Option<u64>,
    /// The most probable rate class, as its mean change interval in days
    /// (bits): written as its name, `<days>d`, without a string per row.
    pub rate_class_days: Option<u64>,
    pub rate_class_p: Option<u64>,
    pub censoring: Censoring,
    pub lifespan_m1_s: u64,
    pub lifespan_m2_s: u64,
}

impl TableRow for PageChangeRow {
    const TABLE: &'static TableDef = &PAGE_CHANGE;
    fn write(&self, _: &RowContext, out: &mut RowWriter) {
        out.str(&self.url);
        out.str(&self.host);
        out.str(self.class.name());
        out.i64(self.observations);
        out.i64(self.changes);
        out.i64(self.intervals);
        out.f64(f(self.span_s));
        out.opt_f64(opt(self.naive));
        out.opt_f64(opt(self.regular));
        out.opt_f64(opt(self.mle));
        out.opt_f64(opt(self.lo));
        out.opt_f64(opt(self.hi));
        out.opt_display(self.rate_class_days.map(|d| ClassName(f(d))));
        out.opt_f64(opt(self.rate_class_p));
        out.str(self.censoring.name());
        out.f64(f(self.lifespan_m1_s));
        out.f64(f(self.lifespan_m2_s));
    }
}

/// A row of `group_change`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct GroupChangeRow {
    pub level: Level,
    pub key: String,
    pub pages: i64,
    pub observations: i64,
    pub changes: i64,
    pub intervals: i64,
    pub mle: Option<u64>,
    pub lo: Option<u64>,
    pub hi: Option<u64>,
}

impl TableRow for GroupChangeRow {
    const TABLE: &'static TableDef = &GROUP_CHANGE;
    fn write(&self, _: &RowContext, out: &mut RowWriter) {
        out.str(self.level.name());
        out.str(&self.key);
        out.i64(self.pages);
        out.i64(self.observations);
        out.i64(self.changes);
        out.i64(self.intervals);
        out.opt_f64(opt(self.mle));
        out.opt_f64(opt(self.lo));
        out.opt_f64(opt(self.hi));
    }
}

/// A row of `change_histogram`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ChangeHistogramRow {
    pub class: DomainClass,
    pub bucket: u8,
    pub pages: i64,
}

impl TableRow for ChangeHistogramRow {
    const TABLE: &'static TableDef = &CHANGE_HISTOGRAM;
    fn write(&self, _: &RowContext, out: &mut RowWriter) {
        out.str(self.class.name());
        out.str(CHANGE_BUCKETS[self.bucket as usize]);
        out.i64(self.pages);
    }
}

/// A row of `lifespan_histogram`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct LifespanHistogramRow {
    pub class: DomainClass,
    pub method: u8,
    pub bucket: u8,
    pub pages: i64,
}

impl TableRow for LifespanHistogramRow {
    const TABLE: &'static TableDef = &LIFESPAN_HISTOGRAM;
    fn write(&self, _: &RowContext, out: &mut RowWriter) {
        out.str(self.class.name());
        out.i64(i64::from(self.method));
        out.str(LIFESPAN_BUCKETS[self.bucket as usize]);
        out.i64(self.pages);
    }
}

/// A row of `unchanged_curve`; the elapsed time is taken from the snapshot the
/// row is written for.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct UnchangedCurveRow {
    pub class: DomainClass,
    /// The first snapshot's time.
    pub first_time: Micros,
    pub base: i64,
    pub still: i64,
}

impl TableRow for UnchangedCurveRow {
    const TABLE: &'static TableDef = &UNCHANGED_CURVE;
    fn write(&self, ctx: &RowContext, out: &mut RowWriter) {
        let now = ctx.snapshot.expect("a partitioned table").time;
        out.str(self.class.name());
        out.f64((now - self.first_time) as f64 / 1e6);
        out.i64(self.base);
        out.f64(self.still as f64 / self.base as f64);
    }
}

/// A row of `poisson_check`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct PoissonRow {
    pub band_lo_s: u64,
    pub band_hi_s: u64,
    pub interval_lo_s: u64,
    pub interval_hi_s: Option<u64>,
    pub observed: i64,
    pub expected: u64,
    pub ks_distance: u64,
}

impl TableRow for PoissonRow {
    const TABLE: &'static TableDef = &POISSON_CHECK;
    fn write(&self, _: &RowContext, out: &mut RowWriter) {
        out.f64(f(self.band_lo_s));
        out.f64(f(self.band_hi_s));
        out.f64(f(self.interval_lo_s));
        out.opt_f64(opt(self.interval_hi_s));
        out.i64(self.observed);
        out.f64(f(self.expected));
        out.f64(f(self.ks_distance));
    }
}

/// A row of `freshness_designs`: the fixed-point sum over its pages.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct FreshnessRow {
    pub design: u8,
    pub cycle_s: u64,
    pub batch_s: u64,
    pub pages: i64,
    pub sum: i64,
}

impl TableRow for FreshnessRow {
    const TABLE: &'static TableDef = &FRESHNESS_DESIGNS;
    fn write(&self, _: &RowContext, out: &mut RowWriter) {
        out.str(DESIGNS[self.design as usize]);
        out.f64(f(self.cycle_s));
        out.f64(f(self.batch_s));
        out.i64(self.pages);
        out.f64(self.sum as f64 / crate::change_book::FRESHNESS_SCALE / self.pages as f64);
    }
}

/// A page handed to the revisit plan at one snapshot. Without its URL: the
/// plan's stage runs on the worker of the page's ledger and reads it there
/// when it makes the page's row (a copy per alive page waited for PageRank
/// through the whole snapshot, 100 MB on bench).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct PlanInput {
    pub page: PageId,
    pub lambda_bits: u64,
    pub backoff_bits: u64,
}

/// A row of `revisit_plan`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct RevisitPlanRow {
    pub url: String,
    pub lambda: u64,
    pub weight: u64,
    pub optimal: u64,
    pub uniform: u64,
    pub proportional: u64,
    pub freshness: u64,
    pub backoff: u64,
}

impl TableRow for RevisitPlanRow {
    const TABLE: &'static TableDef = &REVISIT_PLAN;
    fn write(&self, _: &RowContext, out: &mut RowWriter) {
        out.str(&self.url);
        for v in [
            self.lambda,
            self.weight,
            self.optimal,
            self.uniform,
            self.proportional,
            self.freshness,
            self.backoff,
        ] {
            out.f64(f(v));
        }
    }
}

/// The policies of `revisit_summary`.
pub const POLICIES: [&str; 3] = ["optimal", "uniform", "proportional"];

/// A row of `revisit_summary`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct RevisitSummaryRow {
    pub policy: u8,
    pub budget: u64,
    pub pages: i64,
    pub freshness: u64,
}

impl TableRow for RevisitSummaryRow {
    const TABLE: &'static TableDef = &REVISIT_SUMMARY;
    fn write(&self, _: &RowContext, out: &mut RowWriter) {
        out.str(POLICIES[self.policy as usize]);
        out.f64(f(self.budget));
        out.i64(self.pages);
        out.f64(f(self.freshness));
    }
}
