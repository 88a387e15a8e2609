//! Reading committed tables back for the report: one snapshot partition or all,
//! only the columns a figure needs, with the Hive partition value as `snapshot`.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use anyhow::Context;
use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int32Type, Int64Type, TimestampMicrosecondType};
use arrow_array::Array;
use arrow_schema::{DataType, TimeUnit};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;

use crate::output::commit::{Manifest, OutputDir};

/// The output directories a report draws on, with their manifests: each table
/// is read from the first one that has it (the demo keeps the 10-minute news
/// crawl in a second output).
pub struct Outputs {
    dirs: Vec<PathBuf>,
    manifests: Vec<Manifest>,
}

/// A column read back: every type the tables use, widened.
#[derive(Clone, Debug)]
pub enum Column {
    Int(Vec<Option<i64>>),
    Float(Vec<Option<f64>>),
    Text(Vec<Option<String>>),
    Bool(Vec<Option<bool>>),
}

/// Rows of one table, column by column.
#[derive(Debug, Default)]
pub struct Frame {
    columns: BTreeMap<String, Column>,
    len: usize,
}

impl Outputs {
    /// Opens the outputs, failing on a directory without a readable manifest.
    pub fn open(dirs: Vec<PathBuf>) -> anyhow::Result<Outputs> {
        let mut manifests = Vec::with_capacity(dirs.len());
        for dir in &dirs {
            match OutputDir::new(dir).manifest()? {
                Some(m) => manifests.push(m),
                None => anyhow::bail!(
                    "{}: not a webevo output (no _manifest.json); run `webevo run --output {}` first",
                    dir.display(),
                    dir.display()
                ),
            }
        }
        Ok(Outputs { dirs, manifests })
    }

    /// Output `i` alone.
    pub fn only(&self, i: usize) -> Outputs {
        Outputs {
            dirs: vec![self.dirs[i].clone()],
            manifests: vec![self.manifests[i].clone()],
        }
    }

    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// The manifests, one per directory.
    pub fn manifests(&self) -> &[Manifest] {
        &self.manifests
    }

    /// The directory of `table`, if some output has it.
    pub fn table_dir(&self, table: &str) -> Option<PathBuf> {
        self.dirs.iter().map(|d| d.join(table)).find(|p| p.is_dir())
    }

    /// The DuckDB expression that reads `table` where this report reads it.
    pub fn source(&self, table: &str) -> String {
        let dir = self
            .table_dir(table)
            .unwrap_or_else(|| self.dirs[0].join(table));
        let dir = sql_string(&dir.display().to_string());
        if self.partitions(table).is_empty() {
            format!("read_parquet('{dir}/*.parquet')")
        } else {
            format!("read_parquet('{dir}/**/*.parquet', hive_partitioning = true)")
        }
    }

    /// The snapshot partitions of `table`, ascending.
    pub fn partitions(&self, table: &str) -> Vec<(i64, PathBuf)> {
        let Some(dir) = self.table_dir(table) else {
            return Vec::new();
        };
        let mut parts: Vec<(i64, PathBuf)> = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let seq = name.strip_prefix("snapshot=")?.parse().ok()?;
                Some((seq, e.path()))
            })
            .collect();
        parts.sort();
        parts
    }

    /// The last snapshot partition of `table`.
    pub fn latest(&self, table: &str) -> Option<i64> {
        self.partitions(table).last().map(|p| p.0)
    }

    /// `columns` of `table` at its latest snapshot; `None` when no output has
    /// the table or it has no snapshot yet.
    pub fn read_latest(&self, table: &str, columns: &[&str]) -> anyhow::Result<Option<Frame>> {
        match self.latest(table) {
            Some(snap) => self.read(table, Some(snap), columns),
            None => Ok(None),
        }
    }

    /// `columns` of `table` at `snapshot` (every snapshot when `None`; the
    /// unpartitioned tables ignore it). `None` when no output has the table.
    pub fn read(
        &self,
        table: &str,
        snapshot: Option<i64>,
        columns: &[&str],
    ) -> anyhow::Result<Option<Frame>> {
        if self.table_dir(table).is_none() {
            return Ok(None);
        }
        let mut frame = Frame::default();
        for (seq, file) in self.files(table, snapshot)? {
            frame.append_file(&file, columns, seq)?;
        }
        Ok(Some(frame))
    }

    /// The Parquet files of `table` at `snapshot` (every snapshot when `None`),
    /// each with its snapshot (`None` for an unpartitioned table).
    pub fn files(
        &self,
        table: &str,
        snapshot: Option<i64>,
    ) -> anyhow::Result<Vec<(Option<i64>, PathBuf)>> {
        let Some(dir) = self.table_dir(table) else {
            return Ok(Vec::new());
        };
        let parts = self.partitions(table);
        if parts.is_empty() {
            return Ok(parquet_files(&dir)?
                .into_iter()
                .map(|f| (None, f))
                .collect());
        }
        let mut files = Vec::new();
        for (seq, part) in parts {
            if snapshot.is_none_or(|s| s == seq) {
                files.extend(parquet_files(&part)?.into_iter().map(|f| (Some(seq), f)));
            }
        }
        Ok(files)
    }
}

/// A string literal's body for SQL: quotes doubled.
pub fn sql_string(s: &str) -> String {
    s.replace('\'', "''")
}

fn parquet_files(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot list {}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "parquet"))
        .collect();
    files.sort();
    Ok(files)
}

impl Frame {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn int(&self, column: &str, row: usize) -> Option<i64> {
        match self.columns.get(column) {
            Some(Column::Int(v)) => v[row],
            _ => None,
        }
    }

    /// A number column as `f64` (integers converted).
    pub fn float(&self, column: &str, row: usize) -> Option<f64> {
        match self.columns.get(column) {
            Some(Column::Float(v)) => v[row],
            Some(Column::Int(v)) => v[row].map(|x| x as f64),
            _ => None,
        }
    }

    pub fn text(&self, column: &str, row: usize) -> Option<&str> {
        match self.columns.get(column) {
            Some(Column::Text(v)) => v[row].as_deref(),
            _ => None,
        }
    }

    pub fn bool(&self, column: &str, row: usize) -> Option<bool> {
        match self.columns.get(column) {
            Some(Column::Bool(v)) => v[row],
            _ => None,
        }
    }

    fn append_file(
        &mut self,
        path: &Path,
        columns: &[&str],
        snapshot: Option<i64>,
    ) -> anyhow::Result<()> {
        let unreadable = || format!("cannot read {}", path.display());
        let builder =
            ParquetRecordBatchReaderBuilder::try_new(File::open(path).with_context(unreadable)?)
                .with_context(unreadable)?;
        let schema = builder.schema().clone();
        let mut roots = Vec::new();
        for c in columns.iter().filter(|c| **c != "snapshot") {
            let i = schema.index_of(c).map_err(|_| {
                anyhow::anyhow!(
                    "{}: no column {c}; was it written by another webevo version?",
                    path.display()
                )
            })?;
            roots.push(i);
        }
        let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
        for batch in builder.with_projection(mask).build()? {
            let batch = batch.with_context(unreadable)?;
            let n = batch.num_rows();
            for c in columns {
                let column = if *c == "snapshot" {
                    self.columns
                        .entry(c.to_string())
                        .or_insert_with(|| Column::Int(Vec::new()))
                } else {
                    let array = batch
                        .column_by_name(c)
                        .expect("projected column is present");
                    let entry = self
                        .columns
                        .entry(c.to_string())
                        .or_insert_with(|| empty_like(array.data_type()));
                    extend(entry, array.as_ref())
                        .with_context(|| format!("{}: column {c}", path.display()))?;
                    continue;
                };
                if let Column::Int(v) = column {
                    v.extend(std::iter::repeat_n(snapshot, n));
                }
            }
            self.len += n;
        }
        Ok(())
    }
}

fn empty_like(dt: &DataType) -> Column {
    match dt {
        DataType::Float64 | DataType::Float32 => Column::Float(Vec::new()),
        DataType::Utf8 | DataType::LargeUtf8 => Column::Text(Vec::new()),
        DataType::Boolean => Column::Bool(Vec::new()),
        _ => Column::Int(Vec::new()),
    }
}

fn extend(column: &mut Column, a: &dyn Array) -> anyhow::Result<()> {
    let at = |i: usize| a.is_valid(i);
    match (column, a.data_type()) {
        (Column::Int(v), DataType::Int64) => {
            let x = a.as_primitive::<Int64Type>();
            v.extend((0..a.len()).map(|i| at(i).then(|| x.value(i))));
        }
        (Column::Int(v), DataType::Int32) => {
            let x = a.as_primitive::<Int32Type>();
            v.extend((0..a.len()).map(|i| at(i).then(|| x.value(i) as i64)));
        }
        (Column::Int(v), DataType::Timestamp(TimeUnit::Microsecond, _)) => {
            let x = a.as_primitive::<TimestampMicrosecondType>();
            v.extend((0..a.len()).map(|i| at(i).then(|| x.value(i))));
        }
        (Column::Float(v), DataType::Float64) => {
            let x = a.as_primitive::<Float64Type>();
            v.extend((0..a.len()).map(|i| at(i).then(|| x.value(i))));
        }
        (Column::Text(v), DataType::Utf8) => {
            let x = a.as_string::<i32>();
            v.extend((0..a.len()).map(|i| at(i).then(|| x.value(i).to_string())));
        }
        (Column::Bool(v), DataType::Boolean) => {
            let x = a.as_boolean();
            v.extend((0..a.len()).map(|i| at(i).then(|| x.value(i))));
        }
        (_, dt) => anyhow::bail!("unexpected type {dt}"),
    }
    Ok(())
}
