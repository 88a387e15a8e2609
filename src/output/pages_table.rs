//! A worker's part of the `pages` table, written with what cannot have
//! changed copied from the last run's part.
//!
//! The table lists every page known so far, and every run rewrites it: a
//! page seen again has a new `last_seen`, a fetched one new fetch columns.
//! Four of its twelve columns never change once a page is known (`url`,
//! `host`, `first_seen`, `first_seen_snapshot`), and the URLs are most of the
//! work of encoding it: on bench snapshot 9 (2 workers), encoding a worker's
//! part took 0.59-0.74 s, its eight changing columns alone 0.16 s, its URLs
//! alone 0.27-0.33 s.
//!
//! The rows are in the ledger's table order (by the snapshot that first knew
//! a page, then by URL: [`Ledger::table_order`](crate::ledger::Ledger::table_order)),
//! so the rows of the last run's part keep their places, and the pages new
//! since follow. For those kept rows a row group of the new part is the last
//! part's row group with its fixed columns' chunks copied byte for byte
//! (Parquet lets a writer splice in an encoded column chunk) and the changing
//! ones encoded; the new pages are encoded whole, in row groups of their own.
//!
//! A part is copied from only when its rows are the ledger's first pages:
//! each part records in its footer a hash of its rows' URLs and first
//! snapshots ([`ROWS_HASH_KEY`]), which the next run computes over its first
//! pages and compares. Anything else (no such part, a run with another
//! number of workers, a part of an older webevo or one a user replaced, too
//! many row groups) writes the part whole, as the first run does.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{ArrayRef, RecordBatch};
use parquet::arrow::arrow_writer::{compute_leaves, ArrowColumnWriter, ArrowRowGroupWriterFactory};
use parquet::arrow::{add_encoded_arrow_schema_to_metadata, ArrowSchemaConverter};
use parquet::column::writer::ColumnCloseResult;
use parquet::file::metadata::{KeyValue, PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader};
use parquet::file::writer::{SerializedFileWriter, SerializedRowGroupWriter};

use crate::error::OutputError;
use crate::model::Seq;
use crate::output::parquet::{parquet_error, properties, sync_to_disk, WriteSettings};
use crate::output::rows::PAGE_COLUMNS_CHANGING;
use crate::output::schema::PAGES;

/// The footer key under which a part records the hash of its rows
/// ([`RowsHash`]), in hexadecimal.
pub const ROWS_HASH_KEY: &str = "webevo.pages_rows";

/// Row groups a part may have beyond those its rows fill at the job's row
/// group size, and still be copied from. Each run that copies adds at least
/// one (its new pages), so a daily run would add one a day; past this many
/// the part is written whole again, in row groups of the job's size, which
/// costs what every run cost before this module. (A cap on all row groups
/// would never copy a part of more than that many full ones.)
pub const EXTRA_ROW_GROUPS: usize = 16;

/// A hash of a part's rows, in order: each row's URL and first snapshot
/// (the host is the URL's, `first_seen` the snapshot's time).
#[derive(Clone)]
pub struct RowsHash(xxhash_rust::xxh3::Xxh3);

impl Default for RowsHash {
    fn default() -> Self {
        RowsHash(xxhash_rust::xxh3::Xxh3::new())
    }
}

impl RowsHash {
    pub fn add(&mut self, url: &[u8], first_seen: Seq) {
        // The length first, so that no two lists of URLs hash alike by
        // where one ends and the next begins.
        self.0.update(&(url.len() as u64).to_le_bytes());
        self.0.update(url);
        self.0.update(&first_seen.to_le_bytes());
    }

    pub fn hex(&self) -> String {
        format!("{:032x}", self.0.digest128())
    }
}

/// The last run's part of this worker, whose rows are the ledger's first
/// pages: its fixed columns can be copied.
pub struct KeptPart {
    file: File,
    meta: ParquetMetaData,
    hash: RowsHash,
}

impl KeptPart {
    /// Opens the part at `path` if it can be copied from: written with the
    /// `pages` table's schema, at most [`EXTRA_ROW_GROUPS`] row groups more
    /// than its rows fill at `group_rows` a group, and a recorded hash equal
    /// to `hash_of(rows)`, the hash of the ledger's first `rows` pages in
    /// table order (`None` when they are not the first in that order).
    /// `None` for any other part, or none.
    pub fn open(
        path: &Path,
        group_rows: usize,
        hash_of: impl FnOnce(usize) -> Option<RowsHash>,
    ) -> Option<KeptPart> {
        let file = File::open(path).ok()?;
        let meta = ParquetMetaDataReader::new()
            .with_page_index_policy(PageIndexPolicy::Optional)
            .parse_and_finish(&file)
            .ok()?;
        let schema = pages_schema().ok()?;
        let file_meta = meta.file_metadata();
        let rows = usize::try_from(file_meta.num_rows()).ok()?;
        let full_groups = rows.div_ceil(group_rows.max(1));
        if file_meta.schema_descr().root_schema() != schema.root_schema()
            || meta.num_row_groups() > full_groups + EXTRA_ROW_GROUPS
        {
            return None;
        }
        let recorded = file_meta
            .key_value_metadata()?
            .iter()
            .find(|kv| kv.key == ROWS_HASH_KEY)?
            .value
            .clone()?;
        let hash = hash_of(rows)?;
        (hash.hex() == recorded).then_some(KeptPart { file, meta, hash })
    }

    /// The rows the part holds.
    pub fn rows(&self) -> usize {
        self.meta.file_metadata().num_rows() as usize
    }
}

fn pages_schema() -> parquet::errors::Result<parquet::schema::types::SchemaDescriptor> {
    ArrowSchemaConverter::new().convert(&PAGES.arrow_schema())
}

/// A `pages` part being written: first the row groups of the kept part
/// (each its changing columns, a batch at a time, then closed), then the
/// new rows, a batch at a time.
pub struct PagesPart {
    path: PathBuf,
    writer: SerializedFileWriter<File>,
    factory: ArrowRowGroupWriterFactory,
    kept: Option<KeptPart>,
    /// The open row group's column writers and rows.
    group: Option<(Vec<ArrowColumnWriter>, usize)>,
    group_rows: usize,
    hash: RowsHash,
}

impl PagesPart {
    /// Creates the part at `path` (and its directory), to copy from `kept`.
    pub fn create(
        path: &Path,
        settings: &WriteSettings,
        kept: Option<KeptPart>,
    ) -> Result<PagesPart, OutputError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| OutputError::io(dir, e))?;
        }
        let file = File::create(path).map_err(|e| OutputError::io(path, e))?;
        let arrow_schema = PAGES.arrow_schema();
        let mut props = properties(&PAGES, settings);
        add_encoded_arrow_schema_to_metadata(&arrow_schema, &mut props);
        let schema = pages_schema().map_err(|e| parquet_error(path, e))?;
        let writer = SerializedFileWriter::new(file, schema.root_schema_ptr(), Arc::new(props))
            .map_err(|e| parquet_error(path, e))?;
        let factory = ArrowRowGroupWriterFactory::new(&writer, arrow_schema);
        let hash = kept.as_ref().map(|k| k.hash.clone()).unwrap_or_default();
        Ok(PagesPart {
            path: path.to_path_buf(),
            writer,
            factory,
            kept,
            group: None,
            group_rows: settings.row_group_rows.max(1),
            hash,
        })
    }

    /// The rows of the kept part's row groups, in order: the caller hands
    /// each group's changing columns to [`Self::write_changing`], then
    /// calls [`Self::close_kept_group`].
    pub fn kept_groups(&self) -> Vec<usize> {
        self.kept.as_ref().map_or_else(Vec::new, |k| {
            k.meta
                .row_groups()
                .iter()
                .map(|g| g.num_rows() as usize)
                .collect()
        })
    }

    /// The rows of the kept part: the new rows follow them.
    pub fn kept_rows(&self) -> usize {
        self.kept.as_ref().map_or(0, KeptPart::rows)
    }

    /// Writes the [`PAGE_COLUMNS_CHANGING`] columns of the next rows of the
    /// kept part's current row group.
    pub fn write_changing(&mut self, columns: &[ArrayRef]) -> Result<(), OutputError> {
        let rows = columns.first().map_or(0, |c| c.len());
        self.open_group()?;
        let (writers, group_rows) = self.group.as_mut().expect("a row group is open");
        let fields = PAGES.arrow_schema();
        for (column, &at) in columns.iter().zip(&PAGE_COLUMNS_CHANGING) {
            write_column(&mut writers[at], fields.field(at), column, &self.path)?;
        }
        *group_rows += rows;
        Ok(())
    }

    /// Closes the kept part's current row group: its fixed columns copied,
    /// its changing ones as written.
    pub fn close_kept_group(&mut self) -> Result<(), OutputError> {
        self.open_group()?;
        let kept = self.kept.as_ref().expect("a kept part");
        let index = self.writer.flushed_row_groups().len();
        let source = kept.meta.row_group(index);
        let (writers, rows) = self.group.take().expect("a row group is open");
        assert_eq!(rows as i64, source.num_rows(), "the kept row group's rows");
        let page_index = kept.meta.page_index_for_row_group(index);
        let path = &self.path;
        let mut group = self
            .writer
            .next_row_group()
            .map_err(|e| parquet_error(path, e))?;
        let mut writers = writers.into_iter();
        for at in 0..PAGES.columns.len() {
            let writer = writers.next();
            if PAGE_COLUMNS_CHANGING.contains(&at) {
                let writer = writer.expect("the changing columns were written");
                append_written(writer, &mut group, path)?;
            } else {
                let column = source.column(at);
                let close = ColumnCloseResult {
                    bytes_written: column.compressed_size() as u64,
                    rows_written: rows as u64,
                    metadata: column.clone(),
                    bloom_filter: None,
                    column_index: page_index.column_index(at).cloned(),
                    offset_index: page_index.offset_index(at).cloned(),
                };
                group
                    .append_column(&kept.file, close)
                    .map_err(|e| parquet_error(path, e))?;
            }
        }
        group.close().map_err(|e| parquet_error(path, e))?;
        Ok(())
    }

    fn open_group(&mut self) -> Result<(), OutputError> {
        if self.group.is_none() {
            let writers = self
                .factory
                .create_column_writers(self.writer.flushed_row_groups().len())
                .map_err(|e| parquet_error(&self.path, e))?;
            self.group = Some((writers, 0));
        }
        Ok(())
    }

    /// Writes `batch`, new rows of the table, after the rows written before
    /// (the kept row groups must all be closed).
    pub fn write_batch(&mut self, batch: &RecordBatch) -> Result<(), OutputError> {
        assert_eq!(batch.schema(), PAGES.arrow_schema(), "a batch of pages");
        assert!(
            self.writer.flushed_row_groups().len()
                >= self.kept.as_ref().map_or(0, |k| k.meta.num_row_groups()),
            "new rows after the kept ones"
        );
        let column = |name| batch.column_by_name(name).expect("a column of pages");
        let urls = column("url").as_string::<i32>();
        let first_seen = column("first_seen_snapshot").as_primitive::<Int64Type>();
        for (url, seq) in urls.iter().zip(first_seen.values()) {
            self.hash
                .add(url.unwrap_or_default().as_bytes(), *seq as Seq);
        }
        let mut batch = batch.clone();
        while batch.num_rows() > 0 {
            self.open_group()?;
            let (writers, rows) = self.group.as_mut().expect("a row group is open");
            let take = (self.group_rows - *rows).min(batch.num_rows());
            let part = batch.slice(0, take);
            for ((writer, field), column) in writers
                .iter_mut()
                .zip(PAGES.arrow_schema().fields())
                .zip(part.columns())
            {
                write_column(writer, field, column, &self.path)?;
            }
            *rows += take;
            if *rows == self.group_rows {
                self.close_new_group()?;
            }
            batch = batch.slice(take, batch.num_rows() - take);
        }
        Ok(())
    }

    fn close_new_group(&mut self) -> Result<(), OutputError> {
        let Some((writers, _)) = self.group.take() else {
            return Ok(());
        };
        let path = &self.path;
        let mut group = self
            .writer
            .next_row_group()
            .map_err(|e| parquet_error(path, e))?;
        for writer in writers {
            append_written(writer, &mut group, path)?;
        }
        group.close().map_err(|e| parquet_error(path, e))?;
        Ok(())
    }

    /// Writes the footer (with the rows' hash) and syncs the file to disk;
    /// returns the rows written.
    pub fn finish(mut self) -> Result<u64, OutputError> {
        self.close_new_group()?;
        self.writer
            .append_key_value_metadata(KeyValue::new(ROWS_HASH_KEY.to_string(), self.hash.hex()));
        let rows = self
            .writer
            .flushed_row_groups()
            .iter()
            .map(|g| g.num_rows() as u64)
            .sum();
        sync_to_disk(self.writer.into_inner(), &self.path)?;
        Ok(rows)
    }
}

/// Writes `column` (of `field`) with `writer`, leaf by leaf.
fn write_column(
    writer: &mut ArrowColumnWriter,
    field: &arrow_schema::Field,
    column: &ArrayRef,
    path: &Path,
) -> Result<(), OutputError> {
    for leaf in compute_leaves(field, column).map_err(|e| parquet_error(path, e))? {
        writer.write(&leaf).map_err(|e| parquet_error(path, e))?;
    }
    Ok(())
}

/// Closes `writer` and appends its chunk to `group`.
fn append_written(
    writer: ArrowColumnWriter,
    group: &mut SerializedRowGroupWriter<'_, File>,
    path: &Path,
) -> Result<(), OutputError> {
    let chunk = writer.close().map_err(|e| parquet_error(path, e))?;
    chunk
        .append_to_row_group(group)
        .map_err(|e| parquet_error(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::PageState;
    use crate::model::{HostId, Micros};
    use crate::output::rows::PageColumns;
    use crate::url_arena::UrlRef;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    fn time(seq: Seq) -> Micros {
        1_700_000_000_000_000 + seq as i64 * 86_400_000_000
    }

    /// Pages in table order: by first snapshot, then URL.
    struct Pages {
        states: Vec<PageState>,
        urls: Vec<String>,
        hosts: Vec<String>,
    }

    impl Pages {
        fn new(first: std::ops::Range<usize>, first_seen: impl Fn(usize) -> Seq) -> Pages {
            let mut keys: Vec<(Seq, String, usize)> = first
                .map(|i| (first_seen(i), format!("http://h{}.example/p{i}", i % 7), i))
                .collect();
            keys.sort();
            let mut pages = Pages {
                states: Vec::new(),
                urls: Vec::new(),
                hosts: Vec::new(),
            };
            for (seen, url, i) in keys {
                let mut st = PageState::new(UrlRef::default(), HostId(i as u64 % 7), seen);
                if i % 3 != 0 {
                    st.fetched(seen, time(seen) + i as i64, Some(200), i as u64);
                }
                pages.hosts.push(format!("h{}.example", i % 7));
                pages.urls.push(url);
                pages.states.push(st);
            }
            pages
        }

        fn hash(&self, rows: usize) -> RowsHash {
            let mut hash = RowsHash::default();
            for (st, url) in self.states[..rows].iter().zip(&self.urls) {
                hash.add(url.as_bytes(), st.first_seen());
            }
            hash
        }

        /// Writes the pages to `path`, copying what `kept` holds.
        fn write(&self, path: &Path, kept: Option<KeptPart>, group_rows: usize) -> u64 {
            let settings = WriteSettings {
                row_group_rows: group_rows,
                ..WriteSettings::default()
            };
            let mut part = PagesPart::create(path, &settings, kept).unwrap();
            let mut columns = PageColumns::default();
            let mut start = 0;
            for rows in part.kept_groups() {
                for block in (start..start + rows).collect::<Vec<_>>().chunks(250) {
                    for &i in block {
                        columns.push_state(&self.states[i]);
                    }
                    part.write_changing(&columns.changing(time)).unwrap();
                }
                part.close_kept_group().unwrap();
                start += rows;
            }
            assert_eq!(start, part.kept_rows());
            for block in (start..self.states.len()).collect::<Vec<_>>().chunks(300) {
                for &i in block {
                    columns.push(&self.states[i], self.urls[i].as_bytes(), &self.hosts[i]);
                }
                part.write_batch(&columns.batch(time).unwrap()).unwrap();
            }
            part.finish().unwrap()
        }
    }

    fn read(path: &Path) -> (RecordBatch, usize, String) {
        let file = File::open(path).unwrap();
        let builder = ParquetRecordBatchReaderBuilder::try_new(file).unwrap();
        let meta = builder.metadata().clone();
        let reader = builder.with_batch_size(1 << 20).build().unwrap();
        let mut batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
        assert_eq!(batches.len(), 1, "one batch over every row group");
        let whole = batches.pop().unwrap();
        let hash = meta
            .file_metadata()
            .key_value_metadata()
            .unwrap()
            .iter()
            .find(|kv| kv.key == ROWS_HASH_KEY)
            .unwrap()
            .value
            .clone()
            .unwrap();
        (whole, meta.num_row_groups(), hash)
    }

    /// A part written with the last part's fixed columns copied holds the
    /// rows a part written whole holds, over kept row groups of several
    /// sizes, with new rows after them; a part that does not hold the
    /// ledger's first pages is not copied from.
    #[test]
    fn a_copied_part_is_the_part_written_whole() {
        let dir = tempfile::tempdir().unwrap();
        let first = Pages::new(0..2000, |i| (i % 3) as Seq);
        let last = dir.path().join("last.parquet");
        assert_eq!(first.write(&last, None, 700), 2000);
        assert_eq!(read(&last).1, 3);

        // The next run: every kept page seen again, some fetched, new pages.
        let mut next = Pages::new(0..3000, |i| if i < 2000 { (i % 3) as Seq } else { 5 });
        assert_eq!(next.urls[..2000], first.urls[..]);
        for (k, st) in next.states.iter_mut().enumerate() {
            st.seen(5);
            if k % 4 == 0 {
                st.fetched(5, time(5) + k as i64, Some(404), 7);
            }
        }
        let kept = KeptPart::open(&last, 700, |rows| {
            assert_eq!(rows, 2000);
            Some(next.hash(rows))
        })
        .expect("the last part holds the first pages");
        let copied = dir.path().join("copied.parquet");
        assert_eq!(next.write(&copied, Some(kept), 700), 3000);
        let whole = dir.path().join("whole.parquet");
        assert_eq!(next.write(&whole, None, 700), 3000);
        let (copied_rows, copied_groups, copied_hash) = read(&copied);
        let (whole_rows, whole_groups, whole_hash) = read(&whole);
        assert_eq!(copied_rows, whole_rows);
        assert_eq!(copied_hash, whole_hash);
        assert_eq!(copied_hash, next.hash(3000).hex());
        assert_eq!((copied_groups, whole_groups), (3 + 2, 5));
        // And the copied part can be copied from in turn.
        assert!(KeptPart::open(&copied, 700, |rows| Some(next.hash(rows))).is_some());

        // Other first pages, no first pages in order, no part, not a part
        // of `pages`: written whole.
        let mut other = Pages::new(0..2000, |i| (i % 3) as Seq);
        other.urls[1999].push('x');
        assert!(KeptPart::open(&last, 700, |rows| Some(other.hash(rows))).is_none());
        assert!(KeptPart::open(&last, 700, |_| None).is_none());
        assert!(
            KeptPart::open(&dir.path().join("none.parquet"), 700, |_| unreachable!()).is_none()
        );
        let snapshots = dir.path().join("snapshots.parquet");
        std::fs::write(&snapshots, b"PAR1 not a part").unwrap();
        assert!(KeptPart::open(&snapshots, 700, |_| unreachable!()).is_none());
        // Many row groups: copied from while they are full at the job's
        // size, written whole again when more than `EXTRA_ROW_GROUPS` of
        // them are past what the rows fill.
        let many = dir.path().join("many.parquet");
        next.write(&many, None, 100);
        assert_eq!(read(&many).1, 30);
        assert!(KeptPart::open(&many, 100, |rows| Some(next.hash(rows))).is_some());
        assert!(KeptPart::open(&many, 3000 / 14, |rows| Some(next.hash(rows))).is_some());
        assert!(KeptPart::open(&many, 3000, |_| unreachable!()).is_none());
    }
}
