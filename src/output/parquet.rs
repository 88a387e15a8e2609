//! Writing one Parquet part file of a table, with one writer configuration.

use std::fs::File;
use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;

use crate::error::OutputError;
use crate::output::batch::{RowContext, RowWriter, TableRow};
use crate::output::schema::{ColType, TableDef};

/// How output files are written (from the job file's `[output]` section).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WriteSettings {
    /// Rows per row group: large enough for good compression and few footers,
    /// small enough that a reader can split a big part file.
    pub row_group_rows: usize,
    pub zstd_level: i32,
}

impl Default for WriteSettings {
    fn default() -> Self {
        WriteSettings {
            row_group_rows: 1 << 20,
            zstd_level: 3,
        }
    }
}

pub(crate) fn properties(table: &TableDef, settings: &WriteSettings) -> WriterProperties {
    let mut builder = WriterProperties::builder()
        .set_compression(Compression::ZSTD(
            ZstdLevel::try_new(settings.zstd_level).expect("zstd level checked by the job"),
        ))
        .set_max_row_group_row_count(Some(settings.row_group_rows));
    // A column of values nearly all distinct gains nothing from a
    // dictionary, and its rows come by site or by URL, so each value is
    // near the one before: front coding stores of a URL only what differs
    // from the one before (then zstd compresses a third less), a delta
    // binary packing of a time only its difference. DuckDB and Spark read
    // both. The `pages` table's 980K URLs: 0.35 s and 10.6 MB as a
    // dictionary tried then plain, 0.19 s and 7.9 MB front-coded; each of
    // its fetch-time columns 0.055 s plain, 0.024 s delta-packed.
    //
    // What is left of a delta-packed time is its differences' low bits,
    // which zstd cannot shrink: it took the `pages` table's fetch-time
    // columns from 10.9 to 10.6 MB a worker on bench snapshot 9 and cost a
    // seventh of writing the table (0.36 → 0.31 s re-encoding worker 0's
    // part on one core), so those columns are written uncompressed.
    for column in table.columns.iter().filter(|c| c.distinct) {
        let (encoding, compress) = match column.ty {
            ColType::Utf8 => (Encoding::DELTA_BYTE_ARRAY, true),
            ColType::Int64 | ColType::Int32 | ColType::Timestamp => {
                (Encoding::DELTA_BINARY_PACKED, false)
            }
            ColType::Float64 | ColType::Bool => (Encoding::PLAIN, true),
        };
        let path = ColumnPath::from(column.name);
        if !compress {
            builder = builder.set_column_compression(path.clone(), Compression::UNCOMPRESSED);
        }
        builder = builder
            .set_column_dictionary_enabled(path.clone(), false)
            .set_column_encoding(path, encoding);
    }
    builder.build()
}

/// The part file a worker writes into a table directory.
pub fn part_path(dir: &Path, worker: usize) -> PathBuf {
    dir.join(format!("part-{worker:05}.parquet"))
}

/// Writes `rows` to `path` (creating its directory) and syncs it to disk.
/// Returns the number of rows written.
pub fn write_rows<'a, R: TableRow + 'a>(
    path: &Path,
    rows: impl IntoIterator<Item = &'a R>,
    ctx: &RowContext,
    settings: &WriteSettings,
) -> Result<u64, OutputError> {
    let mut part = PartWriter::<R>::create(path, settings)?;
    for row in rows {
        part.push(row, ctx)?;
    }
    part.finish()
}

/// A part file being written a row at a time, for rows that arrive in their
/// final order and need not all be held first.
pub struct PartWriter<R: TableRow> {
    path: PathBuf,
    writer: ArrowWriter<File>,
    batch: RowWriter,
    total: u64,
    rows: std::marker::PhantomData<R>,
}

/// Rows per Arrow batch handed to the Parquet writer. A batch's buffers (and
/// the writer's own per batch, its levels' and its pages') are then mostly
/// under half a MiB, which the allocator keeps between batches. At 65,536
/// rows they were several MiB each, which it gave back to the kernel as each
/// batch was freed and took back, page fault by page fault, for the next:
/// the `pages` table of bench snapshot 9 after a committed 0-8 (2 workers)
/// took 0.75 → 0.65 s a worker, the run 12% fewer page faults (8 alternated
/// runs; 2,048 and 16,384 rows the same within the noise).
pub const BATCH_ROWS: usize = 8_192;

impl<R: TableRow> PartWriter<R> {
    /// Rows per Arrow batch handed to the Parquet writer.
    const BATCH: usize = BATCH_ROWS;

    /// Creates the file at `path`, and its directory.
    pub fn create(path: &Path, settings: &WriteSettings) -> Result<Self, OutputError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| OutputError::io(dir, e))?;
        }
        let file = File::create(path).map_err(|e| OutputError::io(path, e))?;
        let writer = ArrowWriter::try_new(
            file,
            R::TABLE.arrow_schema(),
            Some(properties(R::TABLE, settings)),
        )
        .map_err(|e| parquet_error(path, e))?;
        Ok(PartWriter {
            path: path.to_path_buf(),
            writer,
            batch: RowWriter::new(R::TABLE),
            total: 0,
            rows: std::marker::PhantomData,
        })
    }

    pub fn push(&mut self, row: &R, ctx: &RowContext) -> Result<(), OutputError> {
        self.push_row(row, ctx)
    }

    /// Like [`PartWriter::push`], for a row of the same table whose borrows
    /// end before the writer's (a row made from buffers reused for the next
    /// rows). A row of another table panics, as in [`RowWriter::push`].
    pub fn push_row<Q: TableRow>(&mut self, row: &Q, ctx: &RowContext) -> Result<(), OutputError> {
        self.batch.push(row, ctx);
        if self.batch.rows() == Self::BATCH {
            self.flush_batch()?;
        }
        Ok(())
    }

    /// Writes `batch`, rows of this part's table made whole (see
    /// [`PageColumns`](crate::output::rows::PageColumns)), after the rows
    /// pushed before it.
    pub fn write_batch(&mut self, batch: &RecordBatch) -> Result<(), OutputError> {
        assert_eq!(
            batch.schema(),
            R::TABLE.arrow_schema(),
            "a batch of {}",
            R::TABLE.name
        );
        if self.batch.rows() > 0 {
            self.flush_batch()?;
        }
        self.total += batch.num_rows() as u64;
        self.writer
            .write(batch)
            .map_err(|e| parquet_error(&self.path, e))
    }

    fn flush_batch(&mut self) -> Result<(), OutputError> {
        self.total += self.batch.rows() as u64;
        let batch = self.batch.finish();
        self.writer
            .write(&batch)
            .map_err(|e| parquet_error(&self.path, e))
    }

    /// Writes the footer and syncs the file to disk; returns the rows written.
    pub fn finish(mut self) -> Result<u64, OutputError> {
        self.flush_batch()?;
        sync_to_disk(self.writer.into_inner(), &self.path)?;
        Ok(self.total)
    }
}

/// Syncs `file`, a part at `path` whose writer has written its footer, to
/// disk.
pub(crate) fn sync_to_disk(
    file: parquet::errors::Result<File>,
    path: &Path,
) -> Result<(), OutputError> {
    let file = file.map_err(|e| parquet_error(path, e))?;
    file.sync_all().map_err(|e| OutputError::io(path, e))
}

pub(crate) fn parquet_error(path: &Path, source: parquet::errors::ParquetError) -> OutputError {
    OutputError::Parquet {
        path: path.to_path_buf(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::schema::PAGES;

    /// The `pages` table's URLs are front-coded and its fetch times
    /// delta-packed (and left uncompressed), without dictionaries; its other
    /// columns keep theirs.
    #[test]
    fn distinct_columns_skip_the_dictionary() {
        let props = properties(&PAGES, &WriteSettings::default());
        let column = |name: &str| {
            let path = ColumnPath::from(name);
            (props.dictionary_enabled(&path), props.encoding(&path))
        };
        assert_eq!(column("url"), (false, Some(Encoding::DELTA_BYTE_ARRAY)));
        for time in ["first_fetch_time", "last_fetch_time"] {
            assert_eq!(column(time), (false, Some(Encoding::DELTA_BINARY_PACKED)));
            let path = ColumnPath::from(time);
            assert_eq!(props.compression(&path), Compression::UNCOMPRESSED);
        }
        let url = ColumnPath::from("url");
        assert!(matches!(props.compression(&url), Compression::ZSTD(_)));
        for other in ["host", "first_seen", "observations", "last_status"] {
            assert_eq!(column(other), (true, None), "{other}");
        }
    }
}
