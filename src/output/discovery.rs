//! Rows of the discovery tables (`cover_trajectory`, `cover_summary`).

use serde::{Deserialize, Serialize};

use crate::output::batch::{RowContext, RowWriter, TableRow};
use crate::output::schema::{TableDef, COVER_SUMMARY, COVER_TRAJECTORY};

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

/// What the per-site greedy reduce emits: its statistics and one value per pick.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum CoverSide {
    Stats(CoverStats),
    Step {
        rank: i64,
        url: String,
        gain: i64,
        covered: i64,
    },
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
