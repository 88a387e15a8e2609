//! Writing one Parquet part file of a table, with one writer configuration.

use std::fs::File;
use std::path::{Path, PathBuf};

use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

use crate::error::OutputError;
use crate::output::batch::{RowContext, RowWriter, TableRow};

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

fn properties(settings: &WriteSettings) -> WriterProperties {
    WriterProperties::builder()
        .set_compression(Compression::ZSTD(
            ZstdLevel::try_new(settings.zstd_level).expect("zstd level checked by the job"),
        ))
        .set_max_row_group_row_count(Some(settings.row_group_rows))
        .build()
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
    const BATCH: usize = 65_536;
    let err = |e| OutputError::Parquet {
        path: path.to_path_buf(),
        source: e,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| OutputError::io(dir, e))?;
    }
    let file = File::create(path).map_err(|e| OutputError::io(path, e))?;
    let mut writer =
        ArrowWriter::try_new(file, R::TABLE.arrow_schema(), Some(properties(settings)))
            .map_err(err)?;
    let mut batch = RowWriter::new(R::TABLE);
    let mut total = 0u64;
    for row in rows {
        batch.push(row, ctx);
        if batch.rows() == BATCH {
            total += BATCH as u64;
            writer.write(&batch.finish()).map_err(err)?;
        }
    }
    total += batch.rows() as u64;
    writer.write(&batch.finish()).map_err(err)?;
    let file = writer.into_inner().map_err(err)?;
    file.sync_all().map_err(|e| OutputError::io(path, e))?;
    Ok(total)
}
