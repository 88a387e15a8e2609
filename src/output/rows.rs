//! Rows of the foundation tables (`snapshots`, `host_snapshots`, `pages`).

use std::sync::Arc;

use arrow_array::builder::StringBuilder;
use arrow_array::{
    ArrayRef, BooleanArray, Int32Array, Int64Array, RecordBatch, StringArray,
    TimestampMicrosecondArray,
};
use arrow_buffer::{Buffer, OffsetBuffer, ScalarBuffer};
use serde::{Deserialize, Serialize};

use crate::ledger::PageState;
use crate::model::{HostFact, Micros, Seq};
use crate::output::batch::{RowContext, RowWriter, TableRow};
use crate::output::schema::{TableDef, HOST_SNAPSHOTS, PAGES, SNAPSHOTS, TIME_ZONE};

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

/// Rows of the `pages` table gathered a batch at a time (their states and
/// URLs copied out of the ledger in a loop of their own: read one by one
/// between the Arrow appends of each row, the worker waited on each cache
/// miss in turn), then made into Arrow columns whole. The batch is the one
/// that pushing each [`PageRow`] into a [`RowWriter`] makes, without its
/// checks of every cell's column and type, and with the URLs' bytes copied
/// once a batch (the row by row writer was a quarter of the time the `pages`
/// table took on bench snapshot 9).
pub struct PageColumns<'a> {
    states: Vec<&'a PageState>,
    hosts: Vec<&'a str>,
    url_bytes: Vec<u8>,
    /// Where each URL ends in `url_bytes`, after a first 0: Arrow's offsets.
    url_offsets: Vec<i32>,
}

impl Default for PageColumns<'_> {
    fn default() -> Self {
        PageColumns {
            states: Vec::new(),
            hosts: Vec::new(),
            url_bytes: Vec::new(),
            url_offsets: vec![0],
        }
    }
}

/// The `pages` table's columns that a page's later snapshots change, by
/// their place in the table. The others (`url`, `host`, `first_seen`,
/// `first_seen_snapshot`) are fixed once the page is known, so the writer of
/// the table copies them for the rows it kept ([`crate::output::pages_table`]).
pub const PAGE_COLUMNS_CHANGING: [usize; 8] = [3, 5, 6, 7, 8, 9, 10, 11];

impl<'a> PageColumns<'a> {
    /// Adds the page whose state is `state`, URL `url` and host name `host`.
    pub fn push(&mut self, state: &'a PageState, url: &[u8], host: &'a str) {
        self.states.push(state);
        self.hosts.push(host);
        self.url_bytes.extend_from_slice(url);
        let end = i32::try_from(self.url_bytes.len()).expect("a batch's URLs under 2 GiB");
        self.url_offsets.push(end);
    }

    /// Adds the page whose state is `state`, for [`Self::changing`] only.
    pub fn push_state(&mut self, state: &'a PageState) {
        self.states.push(state);
    }

    pub fn len(&self) -> usize {
        self.states.len()
    }

    pub fn is_empty(&self) -> bool {
        self.states.is_empty()
    }

    /// The rows added since the last batch, as one batch of the `pages`
    /// table; `time` gives a snapshot's time. `None` if a URL is not UTF-8.
    /// Every row must have been added by [`Self::push`].
    pub fn batch(&mut self, time: impl Fn(Seq) -> Micros) -> Option<RecordBatch> {
        debug_assert_eq!(self.hosts.len(), self.states.len());
        // The URLs' bytes and offsets become the column's buffers, not
        // copies of them; the next batch's start at this one's size.
        let (bytes, offsets) = (self.url_bytes.len(), self.url_offsets.len());
        let url_bytes = std::mem::replace(&mut self.url_bytes, Vec::with_capacity(bytes));
        let mut url_offsets = Vec::with_capacity(offsets);
        url_offsets.push(0);
        let url_offsets = std::mem::replace(&mut self.url_offsets, url_offsets);
        let urls = StringArray::try_new(
            OffsetBuffer::new(ScalarBuffer::from(url_offsets)),
            Buffer::from_vec(url_bytes),
            None,
        )
        .ok()?;
        let bytes = self.hosts.iter().map(|h| h.len()).sum();
        let mut hosts = StringBuilder::with_capacity(self.states.len(), bytes);
        for h in &self.hosts {
            hosts.append_value(h);
        }
        let first_seen: ArrayRef = Arc::new(
            TimestampMicrosecondArray::from_iter_values(
                self.states.iter().map(|s| time(s.first_seen())),
            )
            .with_timezone(TIME_ZONE),
        );
        let first_seen_snapshot: ArrayRef = Arc::new(Int64Array::from_iter_values(
            self.states.iter().map(|s| s.first_seen() as i64),
        ));
        let mut changing = self.changing(time).into_iter();
        let mut columns = vec![
            Arc::new(urls) as ArrayRef,
            Arc::new(hosts.finish()),
            first_seen,
        ];
        columns.extend(changing.next());
        columns.push(first_seen_snapshot);
        columns.extend(changing);
        let batch = RecordBatch::try_new(PAGES.arrow_schema(), columns)
            .expect("the pages table's columns, as its definition lists them");
        self.hosts.clear();
        Some(batch)
    }

    /// The [`PAGE_COLUMNS_CHANGING`] columns of the rows added since the
    /// last batch, in that order; `time` gives a snapshot's time.
    pub fn changing(&mut self, time: impl Fn(Seq) -> Micros) -> Vec<ArrayRef> {
        let states = || self.states.iter().copied();
        let int = |cell: fn(&PageState) -> i64| -> ArrayRef {
            Arc::new(Int64Array::from_iter_values(states().map(cell)))
        };
        let times = |cell: &dyn Fn(&PageState) -> Option<Micros>| -> ArrayRef {
            Arc::new(
                states()
                    .map(cell)
                    .collect::<TimestampMicrosecondArray>()
                    .with_timezone(TIME_ZONE),
            )
        };
        let columns = vec![
            Arc::new(
                TimestampMicrosecondArray::from_iter_values(states().map(|s| time(s.last_seen())))
                    .with_timezone(TIME_ZONE),
            ) as ArrayRef,
            int(|s| s.last_seen() as i64),
            int(|s| s.observations as i64),
            int(|s| s.changes as i64),
            times(&|s| s.first_fetch_time()),
            times(&|s| s.last_fetch_time()),
            Arc::new(states().map(|s| s.last_status()).collect::<Int32Array>()),
            Arc::new(BooleanArray::from(
                states().map(|s| s.alive).collect::<Vec<bool>>(),
            )),
        ];
        self.states.clear();
        columns
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::HostId;
    use crate::url_arena::UrlRef;

    /// Pages as a batch of columns are the batch of their rows pushed one by
    /// one, whatever each page holds (never fetched, fetched without a
    /// status, changed, gone), batch after batch.
    #[test]
    fn page_columns_are_the_rows_batch() {
        let time = |seq: Seq| 1_700_000_000_000_000 + seq as i64 * 86_400_000_000;
        let mut states = Vec::new();
        let mut urls = Vec::new();
        for i in 0..700u64 {
            let mut st = PageState::new(UrlRef::default(), HostId(i % 5), (i % 4) as Seq);
            for t in 4..4 + i % 3 {
                let status = (i % 7 != 0).then_some(200 + (i % 3) as i32);
                st.fetched(t as Seq, time(t as Seq) + i as i64, status, 1 + i % 2 + t);
            }
            if i % 11 == 0 {
                st.seen(9);
            }
            if i % 13 == 0 {
                st.alive = false;
            }
            states.push(st);
            // Some not ASCII: the offsets count bytes.
            urls.push(format!("http://h{}.example/é{i}", i % 5));
        }
        let hosts: Vec<String> = (0..5).map(|h| format!("h{h}.example")).collect();
        let mut columns = PageColumns::default();
        let mut writer = RowWriter::new(&PAGES);
        for chunk in (0..states.len()).collect::<Vec<_>>().chunks(300) {
            for &i in chunk {
                let host = &hosts[i % 5];
                columns.push(&states[i], urls[i].as_bytes(), host);
                let row = PageRow {
                    state: &states[i],
                    url: &urls[i],
                    host,
                    first_seen: time(states[i].first_seen()),
                    last_seen: time(states[i].last_seen()),
                };
                writer.push(&row, &RowContext { snapshot: None });
            }
            assert_eq!(columns.len(), chunk.len());
            let whole = columns.batch(time).unwrap();
            assert!(columns.is_empty());
            assert_eq!(whole, writer.finish());
            // The columns a kept row's later snapshots change, alone.
            for &i in chunk {
                columns.push_state(&states[i]);
            }
            let changing = columns.changing(time);
            assert!(columns.is_empty());
            assert_eq!(changing.len(), PAGE_COLUMNS_CHANGING.len());
            for (column, &at) in changing.iter().zip(&PAGE_COLUMNS_CHANGING) {
                assert_eq!(column, whole.column(at), "column {at}");
            }
            assert!(whole.column(8).null_count() > 0 && whole.column(10).null_count() > 0);
        }
        // A URL that is not UTF-8 is refused, not written.
        columns.push(&states[0], b"http://h0.example/\xff", &hosts[0]);
        assert!(columns.batch(time).is_none());
    }
}
