//! Common Crawl host-graph releases.
//!
//! A release is a directory holding the vertices, `id<TAB>reversed.host` (like
//! `com.example.www`; Common Crawl strips a leading `www.`), and the edges,
//! `from_id<TAB>to_id`, each as one or several files, gzipped or not, or as
//! Parquet (vertices: the first integer column is the id, the first text column
//! the host; edges: the first two integer columns). Files are recognized by name:
//! `*vertices*` and `*edges*`, in the directory or one level below (the releases
//! split them into `vertices/part-*.txt.gz`). Every release is one snapshot, dated
//! by `--snapshot-map`; hosts become the pages `http://HOST/` and so match across
//! releases by name. The fetched pages of a snapshot are the sources of its edges
//! (a release does not say which of its dangling hosts were crawled).
//!
//! Memory: the vertex table of one release (its page URLs in one string arena and
//! an index, about 30 bytes per host), never the edges, which stream through.

use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type, UInt32Type, UInt64Type};
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use super::{host_page, line_error, CrawlWriter, LineReader};
use crate::error::{InputError, Position};
use crate::model::Micros;

/// The files of one release.
struct Release {
    vertices: Vec<PathBuf>,
    edges: Vec<PathBuf>,
}

/// Finds the vertex and edge files under `dir`.
fn release_files(dir: &Path) -> Result<Release, InputError> {
    let mut release = Release {
        vertices: Vec::new(),
        edges: Vec::new(),
    };
    let list = |d: &Path| -> Result<Vec<PathBuf>, InputError> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(d)
            .map_err(|e| InputError::file(d, format!("cannot list the release directory: {e}")))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        v.sort();
        Ok(v)
    };
    for entry in list(dir)? {
        let name = entry
            .file_name()
            .map(|n| n.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        let files = if entry.is_dir() {
            list(&entry)?.into_iter().filter(|p| p.is_file()).collect()
        } else {
            vec![entry.clone()]
        };
        let (vertices, edges) = (name.contains("vertices"), name.contains("edges"));
        for f in files {
            let fname = f.file_name().map(|n| n.to_string_lossy().to_string());
            if fname.is_some_and(|n| n.starts_with(['.', '_'])) {
                continue; // _SUCCESS, .crc files
            }
            if vertices {
                release.vertices.push(f);
            } else if edges {
                release.edges.push(f);
            }
        }
    }
    if release.vertices.is_empty() || release.edges.is_empty() {
        return Err(InputError::file(
            dir,
            format!(
                "not a host-graph release: expected files named *vertices* and *edges* in the directory (found {} vertex and {} edge files)",
                release.vertices.len(),
                release.edges.len()
            ),
        ));
    }
    Ok(release)
}

fn is_parquet(p: &Path) -> bool {
    p.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("parquet"))
}

/// `com.example.www` → `www.example.com`.
pub fn unreverse(host: &str) -> String {
    let mut parts: Vec<&str> = host.trim().split('.').collect();
    parts.reverse();
    parts.join(".")
}

/// The vertex table: page URL of every id (`None` for an unusable host name).
#[derive(Default)]
struct Vertices {
    /// Sorted ids and the span of their page in `arena` (empty: unusable).
    ids: Vec<(u64, u32, u32)>,
    arena: String,
    /// Set when ids arrived out of order and `ids` must be sorted.
    unsorted: bool,
}

impl Vertices {
    fn push(&mut self, id: u64, reversed: &str) {
        if self.ids.last().is_some_and(|l| l.0 >= id) {
            self.unsorted = true;
        }
        let start = self.arena.len() as u32;
        // An unusable name gets an empty span; its edges count as invalid.
        if let Some(page) = host_page(&unreverse(reversed)) {
            self.arena.push_str(&page);
        }
        self.ids.push((id, start, self.arena.len() as u32));
    }

    fn finish(&mut self, path: &Path) -> Result<(), InputError> {
        if self.unsorted {
            self.ids.sort_unstable_by_key(|v| v.0);
        }
        if let Some(w) = self.ids.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(InputError::file(
                path,
                format!("vertex id {} appears twice", w[0].0),
            ));
        }
        Ok(())
    }

    /// The page of vertex `id`: `Err` if there is no such vertex, `Ok(None)` if
    /// its host name is unusable.
    fn page(&self, id: u64) -> Result<Option<&str>, ()> {
        // Releases number vertices 0..n in order: try the direct slot first.
        let slot = match self.ids.get(id as usize) {
            Some(v) if v.0 == id => Some(v),
            _ => self
                .ids
                .binary_search_by_key(&id, |v| v.0)
                .ok()
                .map(|i| &self.ids[i]),
        };
        let (_, a, b) = slot.ok_or(())?;
        Ok((a < b).then(|| &self.arena[*a as usize..*b as usize]))
    }
}

/// Reads the release directory `dir` as the snapshot at `time`; returns the text
/// lines read.
pub fn read(
    dir: &Path,
    time: Micros,
    out: &mut CrawlWriter,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<u64> {
    let release = release_files(dir)?;
    let mut lines_read = 0u64;
    let mut vertices = Vertices::default();
    for path in &release.vertices {
        if is_parquet(path) {
            for_parquet_rows(path, &mut |batch, row| {
                let id = int_column(batch, 0, row)?;
                let host = text_column(batch, row)?;
                vertices.push(id, host);
                Ok(())
            })?;
        } else {
            let mut lines = LineReader::open(path, progress)?;
            while let Some((no, line)) = lines.next_line()? {
                if line.is_empty() {
                    continue;
                }
                let mut f = line.split('\t');
                let (Some(id), Some(host)) = (f.next(), f.next()) else {
                    return Err(line_error(path, no, "expected `id<TAB>reversed.host`").into());
                };
                let id = id.trim().parse().map_err(|_| {
                    line_error(path, no, format!("vertex id {id:?} is not a number"))
                })?;
                vertices.push(id, host);
            }
            lines_read += lines.line_no;
        }
    }
    vertices.finish(&release.vertices[0])?;
    for path in &release.edges {
        let mut edge = |from: u64, to: u64, at: Position| -> anyhow::Result<()> {
            let lookup = |id: u64| {
                vertices.page(id).map_err(|()| {
                    InputError::at(
                        path,
                        at,
                        format!("vertex id {id} is not in the release's vertices"),
                    )
                })
            };
            let (src, dst) = (lookup(from)?, lookup(to)?);
            out.edge(time, src, dst, 1)?;
            Ok(())
        };
        if is_parquet(path) {
            for_parquet_rows(path, &mut |batch, row| {
                let from = int_column(batch, 0, row)?;
                let to = int_column(batch, 1, row)?;
                edge(from, to, Position::Row(row as u64)).map_err(|e| e.to_string())
            })?;
        } else {
            let mut lines = LineReader::open(path, progress)?;
            while let Some((no, line)) = lines.next_line()? {
                if line.is_empty() {
                    continue;
                }
                let mut f = line.split('\t').map(|x| x.trim().parse::<u64>());
                let (Some(Ok(from)), Some(Ok(to))) = (f.next(), f.next()) else {
                    return Err(line_error(path, no, "expected `from_id<TAB>to_id`").into());
                };
                edge(from, to, Position::Line(no))?;
            }
            lines_read += lines.line_no;
        }
    }
    Ok(lines_read)
}

/// Calls `each(batch, row)` for every row of a Parquet file; an `Err` from it
/// becomes an error at that row.
fn for_parquet_rows(
    path: &Path,
    each: &mut dyn FnMut(&RecordBatch, usize) -> Result<(), String>,
) -> Result<(), InputError> {
    let file = std::fs::File::open(path).map_err(|e| InputError::io(path, e))?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .and_then(|b| b.with_batch_size(8192).build())
        .map_err(|e| InputError::file(path, format!("not a readable Parquet file: {e}")))?;
    let mut base = 0u64;
    for batch in reader {
        let batch =
            batch.map_err(|e| InputError::file(path, format!("cannot read Parquet: {e}")))?;
        for row in 0..batch.num_rows() {
            each(&batch, row)
                .map_err(|p| InputError::at(path, Position::Row(base + row as u64), p))?;
        }
        base += batch.num_rows() as u64;
    }
    Ok(())
}

/// The `nth` integer column's value at `row`.
fn int_column(batch: &RecordBatch, nth: usize, row: usize) -> Result<u64, String> {
    let col = batch
        .columns()
        .iter()
        .filter(|c| {
            matches!(
                c.data_type(),
                DataType::Int64 | DataType::Int32 | DataType::UInt32 | DataType::UInt64
            )
        })
        .nth(nth)
        .ok_or_else(|| format!("expected at least {} integer columns", nth + 1))?;
    if col.is_null(row) {
        return Err("null id".into());
    }
    let v: i128 = match col.data_type() {
        DataType::Int64 => col.as_primitive::<Int64Type>().value(row) as i128,
        DataType::Int32 => col.as_primitive::<Int32Type>().value(row) as i128,
        DataType::UInt32 => col.as_primitive::<UInt32Type>().value(row) as i128,
        _ => col.as_primitive::<UInt64Type>().value(row) as i128,
    };
    u64::try_from(v).map_err(|_| format!("id {v} is negative"))
}

/// The first text column's value at `row`.
fn text_column(batch: &RecordBatch, row: usize) -> Result<&str, String> {
    let col = batch
        .columns()
        .iter()
        .find(|c| matches!(c.data_type(), DataType::Utf8 | DataType::LargeUtf8))
        .ok_or("expected a text column (the reversed host name)")?;
    if col.is_null(row) {
        return Err("null host name".into());
    }
    Ok(match col.data_type() {
        DataType::Utf8 => col.as_string::<i32>().value(row),
        _ => col.as_string::<i64>().value(row),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reversed_hosts() {
        assert_eq!(unreverse("com.example.www"), "www.example.com");
        assert_eq!(unreverse("uk.co.bbc.news"), "news.bbc.co.uk");
        assert_eq!(unreverse("localhost"), "localhost");
    }
}
