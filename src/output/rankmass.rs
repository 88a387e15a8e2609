//! Rows of the RankMass tables (docs/rankmass.md).

use serde::{Deserialize, Serialize};

use crate::algo::pagerank::to_f64;
use crate::output::batch::{RowContext, RowWriter, TableRow};
use crate::output::schema::{
    TableDef, HOST_RANK, PAGERANK, PAGERANK_RUNS, RANKMASS_CURVE, RANKMASS_ORDER, RANKMASS_SUMMARY,
};

/// A row of `pagerank`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct PageRankRow {
    pub url: String,
    pub host: String,
    /// Fixed point (`algo::pagerank::ONE` is 1).
    pub rank: u64,
    pub in_links: i64,
    pub out_links: i64,
}

impl TableRow for PageRankRow {
    const TABLE: &'static TableDef = &PAGERANK;
    fn write(&self, _: &RowContext, out: &mut RowWriter) {
        out.str(&self.url);
        out.str(&self.host);
        out.f64(to_f64(self.rank));
        out.i64(self.in_links);
        out.i64(self.out_links);
    }
}

/// A row of `host_rank`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct HostRankRow {
    pub host: String,
    /// The sum of its pages' ranks, fixed point.
    pub rank: u128,
    pub pages: i64,
}

impl TableRow for HostRankRow {
    const TABLE: &'static TableDef = &HOST_RANK;
    fn write(&self, _: &RowContext, out: &mut RowWriter) {
        out.str(&self.host);
        out.f64(self.rank as f64 / crate::algo::pagerank::ONE as f64);
        out.i64(self.pages);
    }
}

/// The row of `pagerank_runs`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct PageRankRunRow {
    pub iterations: i64,
    pub warm_started: bool,
    /// The last step's L1 change, in rank units.
    pub change: u128,
    pub trust_pages: i64,
    pub nodes: i64,
    pub edges: i64,
    pub iterations_cold: Option<i64>,
    /// Wall time of the steps on worker 0.
    pub micros: u64,
}

impl TableRow for PageRankRunRow {
    const TABLE: &'static TableDef = &PAGERANK_RUNS;
    fn write(&self, _: &RowContext, out: &mut RowWriter) {
        out.i64(self.iterations);
        out.bool(self.warm_started);
        out.f64(self.change as f64 / crate::algo::pagerank::ONE as f64);
        out.i64(self.trust_pages);
        out.i64(self.nodes);
        out.i64(self.edges);
        out.opt_i64(self.iterations_cold);
        out.f64(self.micros as f64 / 1e6);
    }
}

/// The ordering algorithms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Algorithm {
    LNeighbor,
    RankMass,
    Windowed,
}

impl Algorithm {
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::LNeighbor => "l-neighbor",
            Algorithm::RankMass => "rankmass",
            Algorithm::Windowed => "windowed-rankmass",
        }
    }
}

/// Which ordering a row is of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct OrderingKey {
    pub algorithm: Algorithm,
    /// The window in millionths (exact, so rows compare), for windowed-rankmass.
    pub window_ppm: Option<u32>,
}

impl OrderingKey {
    fn write(&self, out: &mut RowWriter) {
        out.str(self.algorithm.name());
        out.opt_f64(self.window_ppm.map(|w| f64::from(w) / 1e6));
    }
}

/// A row of `rankmass_order`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct RankmassOrderRow {
    pub key: OrderingKey,
    pub rank: i64,
    pub url: String,
    pub round: i64,
    /// Fixed point.
    pub bound: u64,
}

impl TableRow for RankmassOrderRow {
    const TABLE: &'static TableDef = &RANKMASS_ORDER;
    fn write(&self, _: &RowContext, out: &mut RowWriter) {
        self.key.write(out);
        out.i64(self.rank);
        out.str(&self.url);
        out.i64(self.round);
        out.f64(to_f64(self.bound));
    }
}

/// A row of `rankmass_curve`; the sums in fixed point.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct RankmassCurveRow {
    pub key: OrderingKey,
    pub downloads: i64,
    pub guaranteed: u128,
    pub actual: u128,
    pub optimal: u128,
}

fn units(x: u128) -> f64 {
    x as f64 / crate::algo::pagerank::ONE as f64
}

impl TableRow for RankmassCurveRow {
    const TABLE: &'static TableDef = &RANKMASS_CURVE;
    fn write(&self, _: &RowContext, out: &mut RowWriter) {
        self.key.write(out);
        out.i64(self.downloads);
        out.f64(units(self.guaranteed));
        out.f64(units(self.actual));
        out.f64(units(self.optimal));
    }
}

/// A row of `rankmass_summary`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct RankmassSummaryRow {
    pub key: OrderingKey,
    pub to_098_guaranteed: Option<i64>,
    pub to_098_actual: Option<i64>,
    pub rounds: i64,
    pub micros: u64,
    /// Fixed point.
    pub final_guaranteed: u128,
    pub downloads: i64,
}

impl TableRow for RankmassSummaryRow {
    const TABLE: &'static TableDef = &RANKMASS_SUMMARY;
    fn write(&self, _: &RowContext, out: &mut RowWriter) {
        self.key.write(out);
        out.opt_i64(self.to_098_guaranteed);
        out.opt_i64(self.to_098_actual);
        out.i64(self.rounds);
        out.f64(self.micros as f64 / 1e6);
        out.f64(units(self.final_guaranteed));
        out.i64(self.downloads);
    }
}
