//! Rows of the foundation tables (`snapshots`, `host_snapshots`, `pages`).

use serde::{Deserialize, Serialize};

use crate::ledger::PageState;
use crate::model::{HostFact, Micros};
use crate::output::batch::{RowContext, RowWriter, TableRow};
use crate::output::schema::{TableDef, HOST_SNAPSHOTS, PAGES, SNAPSHOTS};

/// Per-host counts of one snapshot, accumulated from the ledger's facts.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct HostCounts {
    pub pages_fetched: i64,
    pub pages_known: i64,
    pub new_pages: i64,
    pub gone_pages: i64,
    pub changed_pages: i64,
    pub links: i64,
    pub new_links: i64,
    pub removed_links: i64,
    pub new_host: bool,
}

impl HostCounts {
    /// Adds `count` occurrences of `fact`.
    pub fn add(&mut self, fact: HostFact, count: i64) {
        match fact {
            HostFact::Fetched => self.pages_fetched += count,
            HostFact::Known => self.pages_known += count,
            HostFact::Link => self.links += count,
            HostFact::NewPage => self.new_pages += count,
            HostFact::GonePage => self.gone_pages += count,
            HostFact::ChangedPage => self.changed_pages += count,
            HostFact::NewLink => self.new_links += count,
            HostFact::RemovedLink => self.removed_links += count,
            HostFact::NewHost => self.new_host = count > 0,
        }
    }

    /// The eight counts, in the column order both count tables use.
    fn counts(&self) -> [i64; 8] {
        [
            self.pages_fetched,
            self.pages_known,
            self.new_pages,
            self.gone_pages,
            self.changed_pages,
            self.links,
            self.new_links,
            self.removed_links,
        ]
    }

    fn counts_mut(&mut self) -> [&mut i64; 8] {
        [
            &mut self.pages_fetched,
            &mut self.pages_known,
            &mut self.new_pages,
            &mut self.gone_pages,
            &mut self.changed_pages,
            &mut self.links,
            &mut self.new_links,
            &mut self.removed_links,
        ]
    }

    fn write_counts(&self, out: &mut RowWriter) {
        self.counts().into_iter().for_each(|c| out.i64(c));
    }

    /// Whether the snapshot crawled anything of the host (else it has no row).
    pub fn crawled(&self) -> bool {
        self.pages_fetched > 0 || self.links > 0 || self.gone_pages > 0 || self.removed_links > 0
    }
}

/// A row of `host_snapshots`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct HostSnapshotRow {
    pub host: String,
    pub counts: HostCounts,
}

impl TableRow for HostSnapshotRow {
    const TABLE: &'static TableDef = &HOST_SNAPSHOTS;
    fn write(&self, _: &RowContext, out: &mut RowWriter) {
        out.str(&self.host);
        self.counts.write_counts(out);
        out.bool(self.counts.new_host);
    }
}

/// A row of `snapshots`: the sums over hosts.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct SnapshotRow {
    pub totals: HostCounts,
    pub hosts: i64,
    pub new_hosts: i64,
    /// New pages on new hosts (for `new_sites`; not a `snapshots` column).
    pub new_pages_on_new_hosts: i64,
}

impl SnapshotRow {
    /// Adds `times` hosts with counts `c`.
    pub fn add(&mut self, c: &HostCounts, times: i64) {
        let t = &mut self.totals;
        for (sum, v) in t.counts_mut().into_iter().zip(c.counts()) {
            *sum += v * times;
        }
        self.hosts += if c.pages_fetched > 0 { times } else { 0 };
        if c.new_host {
            self.new_hosts += times;
            self.new_pages_on_new_hosts += c.new_pages * times;
        }
    }
}

impl TableRow for SnapshotRow {
    const TABLE: &'static TableDef = &SNAPSHOTS;
    fn write(&self, ctx: &RowContext, out: &mut RowWriter) {
        let meta = ctx
            .snapshot
            .expect("snapshots rows are written per snapshot");
        out.time(meta.time);
        out.bool(meta.partial);
        self.totals.write_counts(out);
        out.i64(self.hosts);
        out.i64(self.new_hosts);
    }
}

/// A row of `pages`, borrowed from the ledger, with snapshot times resolved.
pub struct PageRow<'a> {
    pub state: &'a PageState,
    pub url: &'a str,
    pub host: &'a str,
    pub first_seen: Micros,
    pub last_seen: Micros,
}

impl TableRow for PageRow<'_> {
    const TABLE: &'static TableDef = &PAGES;
    fn write(&self, _: &RowContext, out: &mut RowWriter) {
        let s = self.state;
        out.str(self.url);
        out.str(self.host);
        out.time(self.first_seen);
        out.time(self.last_seen);
        out.i64(s.first_seen() as i64);
        out.i64(s.last_seen() as i64);
        out.i64(s.observations as i64);
        out.i64(s.changes as i64);
        out.opt_time(s.first_fetch_time());
        out.opt_time(s.last_fetch_time());
        out.opt_i32(s.last_status());
        out.bool(s.alive);
    }
}
