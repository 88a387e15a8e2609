//! Rows of the RankMass tables (docs/rankmass.md).

use serde::{Deserialize, Serialize};

use crate::algo::pagerank::to_f64;
use crate::output::batch::{RowContext, RowWriter, TableRow};
use crate::output::schema::{TableDef, HOST_RANK, PAGERANK, PAGERANK_RUNS};

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
    }
}
