//! Rows of the ECHO tables (docs/echo.md). Floats are kept as their bits, so
//! rows order and compare exactly (every value here is finite and, but for
//! none, non-negative, where the bits order like the numbers).
//!
//! A source's URL and host are shared (`Arc<str>`) by its rows of a snapshot:
//! its `content_sources` and `source_estimates` rows, its parameters for the
//! schedule and its schedule rows, one per crawl rate, were each a copy of
//! the URL (bench snapshot 9: 205K sources, 1.2M copies in flight at once).

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::model::Micros;
use crate::output::batch::{RowContext, RowWriter, TableRow};
use crate::output::schema::{
    TableDef, CONTENT_SOURCES, ECHO_PLAN, ECHO_SCHEDULE, SOURCE_COVER, SOURCE_ESTIMATES,
};

fn f(bits: u64) -> f64 {
    f64::from_bits(bits)
}

/// What makes a page a content source.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum SourceKind {
    /// Its host's main page.
    Main,
    /// Linked from its host's main page and at least `D` old.
    Linked,
}

impl SourceKind {
    pub fn name(self) -> &'static str {
        match self {
            SourceKind::Main => "main",
            SourceKind::Linked => "linked",
        }
    }
}

/// A row of `content_sources`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ContentSourceRow {
    pub url: Arc<str>,
    pub host: Arc<str>,
    pub kind: SourceKind,
    pub first_seen: Micros,
}

impl TableRow for ContentSourceRow {
    const TABLE: &'static TableDef = &CONTENT_SOURCES;
    fn write(&self, _: &RowContext, out: &mut RowWriter) {
        out.str(&self.url);
        out.str(&self.host);
        out.str(self.kind.name());
        out.time(self.first_seen);
    }
}

/// A row of `source_estimates`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SourceEstimateRow {
    pub url: Arc<str>,
    pub host: Arc<str>,
    pub crawls: i64,
    pub new_links: i64,
    pub lambda: Option<u64>,
    pub clicked_pages: i64,
    pub profit: u64,
    pub mu: u64,
    pub rmse: Option<u64>,
    pub p_is_default: bool,
    pub priority: Option<u64>,
}

impl TableRow for SourceEstimateRow {
    const TABLE: &'static TableDef = &SOURCE_ESTIMATES;
    fn write(&self, _: &RowContext, out: &mut RowWriter) {
        out.str(&self.url);
        out.str(&self.host);
        out.i64(self.crawls);
        out.i64(self.new_links);
        out.opt_f64(self.lambda.map(f));
        out.i64(self.clicked_pages);
        out.f64(f(self.profit));
        out.f64(f(self.mu));
        out.opt_f64(self.rmse.map(f));
        out.bool(self.p_is_default);
        out.opt_f64(self.priority.map(f));
    }
}

/// A row of `echo_schedule`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct EchoScheduleRow {
    pub rate: u64,
    pub url: Arc<str>,
    pub interval: Option<u64>,
    pub profit: u64,
}

impl TableRow for EchoScheduleRow {
    const TABLE: &'static TableDef = &ECHO_SCHEDULE;
    fn write(&self, _: &RowContext, out: &mut RowWriter) {
        out.f64(f(self.rate));
        out.str(&self.url);
        out.opt_f64(self.interval.map(f));
        out.f64(f(self.profit));
    }
}

/// A row of `echo_plan`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct EchoPlanRow {
    pub rate: u64,
    pub omega: u64,
    pub crawled: i64,
    pub never: i64,
    pub source_fetches: u64,
    pub new_page_fetches: u64,
    pub profit: u64,
}

impl TableRow for EchoPlanRow {
    const TABLE: &'static TableDef = &ECHO_PLAN;
    fn write(&self, _: &RowContext, out: &mut RowWriter) {
        out.f64(f(self.rate));
        out.f64(f(self.omega));
        out.i64(self.crawled);
        out.i64(self.never);
        out.f64(f(self.source_fetches));
        out.f64(f(self.new_page_fetches));
        out.f64(f(self.profit));
    }
}

/// A row of `source_cover`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SourceCoverRow {
    pub rank: i64,
    pub url: String,
    pub gain: i64,
    pub covered_fraction: u64,
}

impl TableRow for SourceCoverRow {
    const TABLE: &'static TableDef = &SOURCE_COVER;
    fn write(&self, _: &RowContext, out: &mut RowWriter) {
        out.i64(self.rank);
        out.str(&self.url);
        out.i64(self.gain);
        out.f64(f(self.covered_fraction));
    }
}
