//! Parquet and JSON output of the crawl directory, each file written atomically.
//!
//! The schemas here are the crawl-directory contract that ingest reads. Files are
//! zstd-compressed with row groups of at most [`ROW_GROUP`] rows, so several workers can
//! split one file by row group; every file is written under a temporary name in its
//! final directory and renamed into place once complete.

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use arrow_array::builder::StringBuilder;
use arrow_array::{ArrayRef, Int32Array, Int64Array, RecordBatch, TimestampMicrosecondArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;
use serde::Serialize;

use super::clicks::ClickRow;
use super::clock::{self, Micros};
use super::snapshot::{Crawl, LinkRow, PageRow, JAVASCRIPT, MAILTO};
use super::urls::UrlView;

/// Largest row group, in rows.
pub(crate) const ROW_GROUP: usize = 65_536;

/// Bytes to reserve per URL when building a column (generated URLs are shorter).
const TYPICAL_URL: usize = 80;

const MAILTO_URL: &str = "mailto:someone@example.com";
const JAVASCRIPT_URL: &str = "javascript:void(0)";

/// `Timestamp(Microsecond, "UTC")`, the type of every timestamp column.
pub(crate) fn timestamp() -> DataType {
    DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
}

/// A timestamp column without nulls.
pub(crate) fn timestamps(values: impl Iterator<Item = Micros>) -> ArrayRef {
    Arc::new(TimestampMicrosecondArray::from_iter_values(values).with_timezone("UTC"))
}

/// `snapshots/<seq>/pages.parquet`: one row per fetched page.
pub(crate) fn pages_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("url", DataType::Utf8, false),
        Field::new("fetch_time", timestamp(), true),
        Field::new("status", DataType::Int32, true),
        Field::new("digest", DataType::Utf8, true),
    ]))
}

/// `snapshots/<seq>/links.parquet`: one row per distinct (src, dst) of a fetched page.
pub(crate) fn links_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("src", DataType::Utf8, false),
        Field::new("dst", DataType::Utf8, false),
        Field::new("count", DataType::Int64, true),
    ]))
}

/// `clicks.parquet`: clicks per page and 20-minute bin.
pub(crate) fn clicks_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("url", DataType::Utf8, false),
        Field::new("time", timestamp(), false),
        Field::new("clicks", DataType::Int64, false),
    ]))
}

/// Writer settings: zstd, bounded row groups, no statistics for string columns (min/max
/// of URLs serve no reader and cost a third of the encoding time), and no dictionary for
/// the `distinct` columns, whose values are (nearly) all different.
fn properties(schema: &Schema, distinct: &[&str]) -> WriterProperties {
    let strings = schema
        .fields()
        .iter()
        .filter(|f| f.data_type() == &DataType::Utf8);
    let builder = strings.fold(WriterProperties::builder(), |b, field| {
        b.set_column_statistics_enabled(
            ColumnPath::from(field.name().as_str()),
            EnabledStatistics::None,
        )
    });
    distinct
        .iter()
        .fold(builder, |b, &column| {
            b.set_column_dictionary_enabled(ColumnPath::from(column), false)
        })
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .set_max_row_group_row_count(Some(ROW_GROUP))
        .build()
}

/// Writes `batches` to `path` through a temporary file in the same directory.
/// `distinct` names the columns whose values are (nearly) all different.
pub(crate) fn write_parquet(
    path: &Path,
    schema: SchemaRef,
    distinct: &[&str],
    batches: impl Iterator<Item = anyhow::Result<RecordBatch>>,
) -> anyhow::Result<()> {
    atomically(path, |file| {
        let properties = properties(&schema, distinct);
        let mut writer = ArrowWriter::try_new(BufWriter::new(file), schema, Some(properties))?;
        for batch in batches {
            writer.write(&batch?)?;
        }
        writer.into_inner()?.flush()?;
        Ok(())
    })
}

/// Creates `path` by writing a temporary sibling with `write` and renaming it.
fn atomically(path: &Path, write: impl FnOnce(File) -> anyhow::Result<()>) -> anyhow::Result<()> {
    let tmp = temporary(path);
    let file = File::create(&tmp).with_context(|| format!("Could not create {}", tmp.display()))?;
    write(file).with_context(|| format!("Could not write {}", tmp.display()))?;
    fs::rename(&tmp, path)
        .with_context(|| format!("Could not rename {} to {}", tmp.display(), path.display()))
}

/// `dir/.name.tmp` for `dir/name`.
fn temporary(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(Default::default, |n| n.to_string_lossy());
    path.with_file_name(format!(".{name}.tmp"))
}

/// `snapshots/<seq>/snapshot.json`.
#[derive(Serialize)]
struct SnapshotMeta {
    time: String,
    partial: bool,
}

/// Writes one snapshot directory: pages, links, and `snapshot.json` last, so a directory
/// with its metadata file is complete.
pub(crate) fn write_crawl(
    dir: &Path,
    crawl: &Crawl,
    urls: &UrlView,
    partial: bool,
) -> anyhow::Result<()> {
    fs::create_dir_all(dir).with_context(|| format!("Could not create {}", dir.display()))?;
    let pages = crawl
        .pages
        .chunks(ROW_GROUP)
        .map(|rows| pages_batch(rows, urls));
    write_parquet(
        &dir.join("pages.parquet"),
        pages_schema(),
        &["url", "digest"],
        pages,
    )?;
    let links = crawl
        .links
        .chunks(ROW_GROUP)
        .map(|rows| links_batch(rows, urls));
    write_parquet(&dir.join("links.parquet"), links_schema(), &[], links)?;
    let meta = SnapshotMeta {
        time: clock::rfc3339(crawl.time)?,
        partial,
    };
    atomically(&dir.join("snapshot.json"), |mut file| {
        serde_json::to_writer(&mut file, &meta)?;
        file.write_all(b"\n")?;
        Ok(())
    })
}

/// Writes `clicks.parquet`.
pub(crate) fn write_clicks(path: &Path, rows: &[ClickRow], urls: &UrlView) -> anyhow::Result<()> {
    let batches = rows.chunks(ROW_GROUP).map(|rows| {
        let mut url = url_builder(rows.len());
        rows.iter().for_each(|r| url.append_value(urls.get(r.page)));
        let columns: Vec<ArrayRef> = vec![
            Arc::new(url.finish()),
            timestamps(rows.iter().map(|r| r.time)),
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.clicks))),
        ];
        Ok(RecordBatch::try_new(clicks_schema(), columns)?)
    });
    write_parquet(path, clicks_schema(), &[], batches)
}

fn pages_batch(rows: &[PageRow], urls: &UrlView) -> anyhow::Result<RecordBatch> {
    let mut url = url_builder(rows.len());
    let mut digest = StringBuilder::with_capacity(rows.len(), 16 * rows.len());
    for r in rows {
        url.append_value(urls.get(r.page));
        match r.digest {
            Some(d) => digest.append_value(hex(d).as_str()),
            None => digest.append_null(),
        }
    }
    let columns: Vec<ArrayRef> = vec![
        Arc::new(url.finish()),
        timestamps(rows.iter().map(|r| r.fetch_time)),
        Arc::new(Int32Array::from_iter_values(rows.iter().map(|r| r.status))),
        Arc::new(digest.finish()),
    ];
    Ok(RecordBatch::try_new(pages_schema(), columns)?)
}

fn links_batch(rows: &[LinkRow], urls: &UrlView) -> anyhow::Result<RecordBatch> {
    let dst_url = |dst: u32| match dst {
        MAILTO => MAILTO_URL,
        JAVASCRIPT => JAVASCRIPT_URL,
        page => urls.get(page),
    };
    let mut src = url_builder(rows.len());
    let mut dst = url_builder(rows.len());
    for r in rows {
        src.append_value(urls.get(r.src));
        dst.append_value(dst_url(r.dst));
    }
    let columns: Vec<ArrayRef> = vec![
        Arc::new(src.finish()),
        Arc::new(dst.finish()),
        Arc::new(Int64Array::from_iter_values(
            rows.iter().map(|r| i64::from(r.count)),
        )),
    ];
    Ok(RecordBatch::try_new(links_schema(), columns)?)
}

/// A string builder for `rows` URLs.
fn url_builder(rows: usize) -> StringBuilder {
    StringBuilder::with_capacity(rows, rows * TYPICAL_URL)
}

/// Sixteen lower-case hex digits, on the stack.
struct Hex([u8; 16]);

impl Hex {
    fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0).expect("hex digits are ASCII")
    }
}

fn hex(x: u64) -> Hex {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = [0u8; 16];
    for (i, d) in out.iter_mut().enumerate() {
        *d = DIGITS[((x >> (60 - 4 * i)) & 0xf) as usize];
    }
    Hex(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_is_sixteen_digits() {
        assert_eq!(hex(0xdead_beef).as_str(), "00000000deadbeef");
        assert_eq!(hex(u64::MAX).as_str(), "ffffffffffffffff");
    }
}
