//! Rows of the discovery tables (docs/discovery.md), and what the per-site stage
//! emits for them.
//!
//! Rows are differential data, which must be totally ordered, so a computed
//! double travels as its bits (`*_bits`) and ratios are formed when written.

use serde::{Deserialize, Serialize};

use crate::algo::site_round::{Policy, JACCARD_BINS};
use crate::output::batch::{RowContext, RowWriter, TableRow};
use crate::output::schema::{
    TableDef, CLUSTERS, COVER_CURVE, COVER_SUMMARY, COVER_TRAJECTORY, GLOBAL_COVER,
    JACCARD_HISTOGRAM, NEW_SITES, POLICY_EVAL, SITE_COVER,
};

/// What one site contributes at one snapshot. `Gain` and `JaccardBin` carry
/// their count as the update's multiplicity. The numbers are contributions to
/// aggregates, emitted at the snapshot and retracted at the next; `Step` and
/// `Member` are whole rows of a per-snapshot table, named by the site's worker
/// and emitted once, never retracted, so they never enter an arrangement.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum SiteOut {
    Stats(CoverStats),
    Curve {
        budget: u64,
        covered: u64,
        picks: u64,
        coverable: u64,
    },
    Gain(u64),
    JaccardBin(u8),
    Policy {
        policy: Policy,
        budget: Option<u64>,
        chosen: u64,
        covered: u64,
        coverable: u64,
    },
}

/// Per site: the closure's statistics.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct CoverStats {
    pub covering_pairs: i64,
    /// New pages covered by some old page, `|N(X_t)|`.
    pub coverable: i64,
    pub cover90_size: i64,
    pub cover90_covered: i64,
    pub cover100_size: i64,
    pub cover100_covered: i64,
}

/// A site's cover summary, before its name is attached.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct CoverSummary {
    pub old_pages: i64,
    pub new_pages: i64,
    pub orphans: i64,
    pub stats: CoverStats,
}

/// A row of `cover_trajectory`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct CoverTrajectoryRow {
    pub site: String,
    pub rank: i64,
    pub url: String,
    pub gain: i64,
    pub covered: i64,
}

impl TableRow for CoverTrajectoryRow {
    const TABLE: &'static TableDef = &COVER_TRAJECTORY;
    fn write(&self, _: &RowContext, out: &mut RowWriter) {
        out.str(&self.site);
        out.i64(self.rank);
        out.str(&self.url);
        out.i64(self.gain);
        out.i64(self.covered);
        out.f64(self.rank as f64 / self.covered as f64);
    }
}

/// A row of `cover_summary`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct CoverSummaryRow {
    pub site: String,
    pub summary: CoverSummary,
}

impl TableRow for CoverSummaryRow {
    const TABLE: &'static TableDef = &COVER_SUMMARY;
    fn write(&self, _: &RowContext, out: &mut RowWriter) {
        let s = &self.summary;
        out.str(&self.site);
        out.i64(s.old_pages);
        out.i64(s.new_pages);
        out.i64(s.stats.covering_pairs);
        out.i64(s.orphans);
        out.i64(s.stats.cover90_size);
        out.i64(s.stats.cover90_covered);
        out.i64(s.stats.cover100_size);
        out.i64(s.stats.cover100_covered);
    }
}

fn ratio(a: i64, b: i64) -> Option<f64> {
    (b != 0).then(|| a as f64 / b as f64)
}

/// A row of `cover_curve`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct CoverCurveRow {
    pub budget: i64,
    pub sites: i64,
    pub covered: i64,
    pub coverable: i64,
    /// Σ over the sites of picks / covered, summed in ascending order of the terms.
    pub overhead_sum_bits: u64,
}

impl TableRow for CoverCurveRow {
    const TABLE: &'static TableDef = &COVER_CURVE;
    fn write(&self, _: &RowContext, out: &mut RowWriter) {
        out.i64(self.budget);
        out.i64(self.sites);
        out.f64(self.covered as f64 / self.sites as f64);
        out.f64(f64::from_bits(self.overhead_sum_bits) / self.sites as f64);
        out.f64(self.covered as f64 / self.coverable as f64);
    }
}

/// A row of `global_cover`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct GlobalCoverRow {
    pub budget: i64,
    pub pages: i64,
    pub covered: i64,
    pub coverable: i64,
}

impl TableRow for GlobalCoverRow {
    const TABLE: &'static TableDef = &GLOBAL_COVER;
    fn write(&self, _: &RowContext, out: &mut RowWriter) {
        out.i64(self.budget);
        out.i64(self.pages);
        out.i64(self.covered);
        out.f64(self.pages as f64 / self.covered as f64);
        out.f64(self.covered as f64 / self.coverable as f64);
    }
}

/// A row of `jaccard_histogram`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct JaccardRow {
    pub bin: u8,
    pub pairs: i64,
}

impl TableRow for JaccardRow {
    const TABLE: &'static TableDef = &JACCARD_HISTOGRAM;
    fn write(&self, _: &RowContext, out: &mut RowWriter) {
        let bins = JACCARD_BINS as f64;
        out.f64(f64::from(self.bin) / bins);
        out.f64(f64::from(self.bin + 1) / bins);
        out.i64(self.pairs);
    }
}

/// A row of `clusters`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ClusterRow {
    pub site: String,
    pub cluster: i64,
    pub url: String,
    pub representative: bool,
    pub q_bits: u64,
}

impl TableRow for ClusterRow {
    const TABLE: &'static TableDef = &CLUSTERS;
    fn write(&self, _: &RowContext, out: &mut RowWriter) {
        out.str(&self.site);
        out.i64(self.cluster);
        out.str(&self.url);
        out.bool(self.representative);
        out.f64(f64::from_bits(self.q_bits));
    }
}

/// A row of `policy_eval`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct PolicyRow {
    pub policy: Policy,
    pub budget: Option<i64>,
    pub sites: i64,
    pub chosen: i64,
    pub covered: i64,
    pub coverable: i64,
}

impl TableRow for PolicyRow {
    const TABLE: &'static TableDef = &POLICY_EVAL;
    fn write(&self, _: &RowContext, out: &mut RowWriter) {
        out.str(self.policy.name());
        out.opt_i64(self.budget);
        out.i64(self.sites);
        out.i64(self.chosen);
        out.i64(self.covered);
        out.i64(self.coverable);
        out.f64(self.chosen as f64 / self.sites as f64);
        out.opt_f64(ratio(100 * self.chosen, self.covered));
        out.f64(self.covered as f64 / self.coverable as f64);
    }
}

/// A row of `new_sites`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct NewSitesRow {
    pub new_pages: i64,
    pub on_new_sites: i64,
    pub new_sites: i64,
}

impl TableRow for NewSitesRow {
    const TABLE: &'static TableDef = &NEW_SITES;
    fn write(&self, _: &RowContext, out: &mut RowWriter) {
        out.i64(self.new_pages);
        out.i64(self.on_new_sites);
        out.i64(self.new_pages - self.on_new_sites);
        out.opt_f64(ratio(self.on_new_sites, self.new_pages));
        out.i64(self.new_sites);
        out.opt_f64(ratio(self.on_new_sites, self.new_sites));
    }
}

/// A row of `site_cover`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SiteCoverRow {
    pub rank: i64,
    pub url: String,
    pub gained: i64,
    pub sites_covered: i64,
    pub pages_covered: i64,
}

impl TableRow for SiteCoverRow {
    const TABLE: &'static TableDef = &SITE_COVER;
    fn write(&self, _: &RowContext, out: &mut RowWriter) {
        out.i64(self.rank);
        out.str(&self.url);
        out.i64(self.gained);
        out.i64(self.sites_covered);
        out.i64(self.pages_covered);
    }
}
