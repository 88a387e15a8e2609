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
//! Memory: nothing grows with the release. Vertices and edges go to scratch
//! files, and two sort-merge joins on disk (edges by source id with the
//! vertices, then by destination id) give every edge its two pages.

use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type, UInt32Type, UInt64Type};
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use super::snapshot_sort::{lines_of, sort_lines, Scratch, RUN_BYTES};
use super::{host_page, line_error, CrawlWriter, LineReader};
use crate::error::{InputError, OutputError, Position};
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

/// An edge whose vertex id is missing: the first in input order is reported.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Missing {
    seq: u64,
    /// 0: its source, 1: its destination (a source is reported first).
    end: u8,
    id: u64,
    file: usize,
    at: u64,
    row: bool,
}

/// One sort-merge join: `edges` lines `KEY<TAB>SEQ<TAB>REST…` sorted by key
/// with sorted `vertices` lines `ID<TAB>FILE<TAB>PAGE`; `each(edge line, page)`
/// for every edge whose key is a vertex (PAGE `-`: an unusable host name, as
/// `None`), `miss(edge line)` for the others. A vertex id twice is an error
/// naming its second file.
fn join(
    vertices: &Path,
    edges: &Path,
    vertex_files: &[PathBuf],
    each: &mut dyn FnMut(&str, Option<&str>) -> anyhow::Result<()>,
    miss: &mut dyn FnMut(&str),
) -> anyhow::Result<()> {
    let mut vs = lines_of(vertices)?;
    let mut v: Option<String> = vs.next().transpose()?;
    let mut advance = |v: &mut Option<String>| -> anyhow::Result<()> {
        let next = vs.next().transpose()?;
        if let (Some(a), Some(b)) = (v.as_deref(), next.as_deref()) {
            if a[..16] == b[..16] {
                let file = usize::from_str_radix(&b[17..21], 16).unwrap_or(0);
                return Err(InputError::file(
                    &vertex_files[file.min(vertex_files.len() - 1)],
                    format!(
                        "vertex id {} appears twice",
                        u64::from_str_radix(&a[..16], 16).unwrap_or(0)
                    ),
                )
                .into());
            }
        }
        *v = next;
        Ok(())
    };
    for e in lines_of(edges)? {
        let e = e?;
        let key = &e[..16];
        while v.as_deref().is_some_and(|x| &x[..16] < key) {
            advance(&mut v)?;
        }
        match v.as_deref() {
            Some(x) if &x[..16] == key => {
                let page = &x[22..];
                each(&e, (page != "-").then_some(page))?;
            }
            _ => miss(&e),
        }
    }
    // The rest of the vertices, for their duplicate check.
    while v.is_some() {
        advance(&mut v)?;
    }
    Ok(())
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
    let scratch = out.scratch_dir().to_path_buf();
    let path = |name: &str| scratch.join(name);
    let mut lines_read = 0u64;

    // Vertices: `ID<TAB>FILE<TAB>PAGE`, PAGE `-` for an unusable host name.
    let mut vertices = Scratch::create(path("vertices.txt"))?;
    for (file, vpath) in release.vertices.iter().enumerate() {
        let mut vertex = |id: u64, reversed: &str| {
            let page = host_page(&unreverse(reversed));
            vertices.line(format_args!(
                "{id:016x}\t{file:04x}\t{}",
                page.as_deref().unwrap_or("-")
            ))
        };
        if is_parquet(vpath) {
            for_parquet_rows(vpath, &mut |batch, row, _| {
                let id = int_column(batch, 0, row)?;
                let host = text_column(batch, row)?;
                vertex(id, host).map_err(|e| e.to_string())
            })?;
        } else {
            let mut lines = LineReader::open(vpath, progress)?;
            while let Some((no, line)) = lines.next_line()? {
                if line.is_empty() {
                    continue;
                }
                let mut f = line.split('\t');
                let (Some(id), Some(host)) = (f.next(), f.next()) else {
                    return Err(line_error(vpath, no, "expected `id<TAB>reversed.host`").into());
                };
                let id = id.trim().parse().map_err(|_| {
                    line_error(vpath, no, format!("vertex id {id:?} is not a number"))
                })?;
                vertex(id, host)?;
            }
            lines_read += lines.line_no;
        }
    }
    let vertices = vertices.close()?;

    // Edges by source: `FROM<TAB>SEQ<TAB>TO<TAB>FILE<TAB>L|R POSITION`.
    let mut edges = Scratch::create(path("edges-by-source.txt"))?;
    let mut seq = 0u64;
    for (file, epath) in release.edges.iter().enumerate() {
        let mut edge = |from: u64, to: u64, at: Position| {
            seq += 1;
            let (kind, n) = match at {
                Position::Row(r) => ('R', r),
                Position::Line(l) => ('L', l),
                _ => ('L', 0),
            };
            edges.line(format_args!(
                "{from:016x}\t{seq:016x}\t{to:016x}\t{file}\t{kind}{n}"
            ))
        };
        if is_parquet(epath) {
            for_parquet_rows(epath, &mut |batch, row, file_row| {
                let from = int_column(batch, 0, row)?;
                let to = int_column(batch, 1, row)?;
                edge(from, to, Position::Row(file_row)).map_err(|e| e.to_string())
            })?;
        } else {
            let mut lines = LineReader::open(epath, progress)?;
            while let Some((no, line)) = lines.next_line()? {
                if line.is_empty() {
                    continue;
                }
                let mut f = line.split('\t').map(|x| x.trim().parse::<u64>());
                let (Some(Ok(from)), Some(Ok(to))) = (f.next(), f.next()) else {
                    return Err(line_error(epath, no, "expected `from_id<TAB>to_id`").into());
                };
                edge(from, to, Position::Line(no))?;
            }
            lines_read += lines.line_no;
        }
    }
    let edges = edges.close()?;

    let sort = |from: &Path, to: &str| sort_lines(from, &path(to), &scratch, RUN_BYTES);
    sort(&vertices, "vertices.sorted")?;
    sort(&edges, "edges-by-source.sorted")?;
    let mut missing: Option<Missing> = None;
    let mut note = |line: &str, end: u8| {
        let f: Vec<&str> = line.splitn(5, '\t').collect();
        let pos = f[4];
        let m = Missing {
            seq: u64::from_str_radix(f[1], 16).unwrap_or(0),
            end,
            id: u64::from_str_radix(f[0], 16).unwrap_or(0),
            file: f[3].parse().unwrap_or(0),
            at: pos[1..].parse().unwrap_or(0),
            row: pos.starts_with('R'),
        };
        missing = Some(missing.map_or(m, |x| x.min(m)));
    };

    // Join 1: the source's page. Edges by destination: `TO<TAB>SEQ<TAB>SRC<TAB>FILE<TAB>POS`.
    let mut by_dst = Scratch::create(path("edges-by-destination.txt"))?;
    join(
        &path("vertices.sorted"),
        &path("edges-by-source.sorted"),
        &release.vertices,
        &mut |e, src| {
            let f: Vec<&str> = e.splitn(5, '\t').collect();
            by_dst.line(format_args!(
                "{}\t{}\t{}\t{}\t{}",
                f[2],
                f[1],
                src.unwrap_or("-"),
                f[3],
                f[4]
            ))?;
            Ok(())
        },
        &mut |e| note(e, 0),
    )?;
    let by_dst = by_dst.close()?;
    sort(&by_dst, "edges-by-destination.sorted")?;

    // Join 2: the destination's page; every edge with both ends goes out.
    join(
        &path("vertices.sorted"),
        &path("edges-by-destination.sorted"),
        &release.vertices,
        &mut |e, dst| {
            let src = e.split('\t').nth(2).filter(|s| *s != "-");
            out.edge(time, src, dst, 1)?;
            Ok(())
        },
        &mut |e| note(e, 1),
    )?;
    if let Some(m) = missing {
        let at = if m.row {
            Position::Row(m.at)
        } else {
            Position::Line(m.at)
        };
        return Err(InputError::at(
            &release.edges[m.file],
            at,
            format!("vertex id {} is not in the release's vertices", m.id),
        )
        .into());
    }
    for name in [
        "vertices.txt",
        "vertices.sorted",
        "edges-by-source.txt",
        "edges-by-source.sorted",
        "edges-by-destination.txt",
        "edges-by-destination.sorted",
    ] {
        let p = path(name);
        std::fs::remove_file(&p).map_err(|e| OutputError::io(&p, e))?;
    }
    Ok(lines_read)
}

/// Calls `each(batch, row, file_row)` for every row of a Parquet file (`row`
/// within the batch, `file_row` within the file); an `Err` from it becomes an
/// error at that row.
fn for_parquet_rows(
    path: &Path,
    each: &mut dyn FnMut(&RecordBatch, usize, u64) -> Result<(), String>,
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
            each(&batch, row, base + row as u64)
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
