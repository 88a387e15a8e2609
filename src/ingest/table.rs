//! Reading the rows of one input table, Parquet or TSV, as typed cells.
//!
//! Each table kind declares its columns once ([`TableKind::columns`]); readers look
//! columns up by name in the Parquet schema or the TSV header and hand rows to a
//! callback as a [`Row`], whose accessors parse cells into the logical type. A cell
//! the callback rejects becomes an [`InputError`] naming file and row or line.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, TimestampMicrosecondType,
    TimestampMillisecondType, TimestampNanosecondType, TimestampSecondType, UInt32Type, UInt64Type,
};
use arrow_array::{
    Array, ArrayRef, BinaryArray, LargeStringArray, PrimitiveArray, RecordBatch, StringArray,
    StringViewArray,
};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use parquet::arrow::ProjectionMask;

use crate::error::{InputError, Position};
use crate::ingest::crawl_dir::{parse_time, FileFormat, InputFile};
use crate::model::Micros;

/// The kinds of input table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableKind {
    Pages,
    Links,
    Clicks,
    Trust,
}

/// The logical type of an input column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CellType {
    Text,
    Int,
    /// Unix seconds, RFC 3339 text, or a Parquet timestamp.
    Time,
    Float,
}

/// One declared input column.
#[derive(Clone, Copy, Debug)]
pub struct InputColumn {
    pub name: &'static str,
    pub required: bool,
    pub cell: CellType,
    /// Text that repeats across rows (a link's ends): Parquet hands it over
    /// with its dictionary, so a reader can work once per distinct value of a
    /// column chunk ([`Row::dict_key`]).
    pub repeats: bool,
}

const fn col(name: &'static str, required: bool, cell: CellType) -> InputColumn {
    InputColumn {
        name,
        required,
        cell,
        repeats: false,
    }
}

const fn repeated_text(name: &'static str) -> InputColumn {
    InputColumn {
        name,
        required: true,
        cell: CellType::Text,
        repeats: true,
    }
}

use CellType::{Float, Int, Text, Time};
const PAGES_COLUMNS: &[InputColumn] = &[
    col("url", true, Text),
    col("fetch_time", false, Time),
    col("status", false, Int),
    col("digest", false, Text),
];
const LINKS_COLUMNS: &[InputColumn] = &[
    repeated_text("src"),
    repeated_text("dst"),
    col("count", false, Int),
];
const CLICKS_COLUMNS: &[InputColumn] = &[
    col("url", true, Text),
    col("time", true, Time),
    col("clicks", true, Int),
];
const TRUST_COLUMNS: &[InputColumn] = &[col("url", true, Text), col("weight", true, Float)];

impl TableKind {
    /// The columns of this table, in the order [`Row`] indexes them.
    pub fn columns(self) -> &'static [InputColumn] {
        match self {
            TableKind::Pages => PAGES_COLUMNS,
            TableKind::Links => LINKS_COLUMNS,
            TableKind::Clicks => CLICKS_COLUMNS,
            TableKind::Trust => TRUST_COLUMNS,
        }
    }
}

/// Checks that `file` can be opened and has every required column with a usable type.
pub fn check_columns(file: &InputFile) -> Result<(), InputError> {
    match file.format {
        FileFormat::Parquet => {
            let builder = parquet_builder(&file.path)?;
            parquet_columns(file, builder.schema().as_ref()).map(|_| ())
        }
        FileFormat::Tsv | FileFormat::TsvGz => {
            let mut lines = open_text(&file.path, file.format)?;
            let header = read_header(&file.path, &mut lines)?;
            tsv_columns(file, &header).map(|_| ())
        }
    }
}

/// Which part of a file one worker reads: worker `index` of `peers` takes
/// Parquet row group `g` if `g % peers == index`, unless its process's
/// workers take their row groups in [`Turns`].
#[derive(Clone, Debug)]
pub struct Share {
    pub index: usize,
    pub peers: usize,
    pub turns: Option<Arc<Turns>>,
}

impl Share {
    /// Worker `index` of `peers`, with row groups dealt by number.
    pub fn dealt(index: usize, peers: usize) -> Share {
        Share {
            index,
            peers,
            turns: None,
        }
    }

    /// Whether this worker reads the unit (row group or whole text file) numbered `unit`.
    fn takes(&self, unit: usize) -> bool {
        unit % self.peers == self.index
    }

    /// The row groups of the file at `path`, of `groups`, that this worker
    /// reads, in the order it takes them.
    fn groups(&self, path: &Path, groups: usize) -> impl Iterator<Item = usize> {
        let (first, step, next) = match &self.turns {
            Some(t) => (t.process, t.processes, Some(t.start(path, self.index))),
            None => (self.index, self.peers, None),
        };
        let mut taken = 0;
        std::iter::from_fn(move || {
            let k = match &next {
                Some(next) => next.fetch_add(1, Ordering::Relaxed),
                None => taken,
            };
            taken += 1;
            let g = first + k * step;
            (g < groups).then_some(g)
        })
    }
}

/// The row groups of the Parquet files a process's workers read, handed out
/// one at a time to whichever worker asks next instead of dealt by number:
/// a worker on a core that the machine slows down (a shared virtual machine's
/// are, by a quarter at times) then reads fewer of them rather than holding
/// back every other worker, which wait for the whole snapshot before the
/// fold. Between processes the row groups are still dealt by number (`g %
/// processes`). Which worker reads a row changes nothing downstream: every
/// record goes to the worker that owns its host, and the ledger's fold
/// orders what it gathers by content.
#[derive(Debug)]
pub struct Turns {
    process: usize,
    processes: usize,
    /// Per file and reading of it (the first, the second, ...) the number of
    /// this process's row groups handed out; and per file and worker how
    /// many times the worker started reading it, which says which reading
    /// the worker's next one is: every worker reads the same files in the
    /// same order.
    counters: Mutex<TurnCounters>,
}

#[derive(Debug, Default)]
struct TurnCounters {
    next: HashMap<(PathBuf, usize), Arc<AtomicUsize>>,
    readings: HashMap<(PathBuf, usize), usize>,
}

impl Turns {
    /// Turns for the workers of process `process` of `processes`.
    pub fn new(process: usize, processes: usize) -> Turns {
        Turns {
            process,
            processes: processes.max(1),
            counters: Mutex::default(),
        }
    }

    /// The counter of the reading of `path` that worker `index` starts now.
    fn start(&self, path: &Path, index: usize) -> Arc<AtomicUsize> {
        let mut c = self.counters.lock().unwrap_or_else(|e| e.into_inner());
        let reading = c.readings.entry((path.to_path_buf(), index)).or_insert(0);
        let key = (path.to_path_buf(), *reading);
        *reading += 1;
        c.next.entry(key).or_default().clone()
    }
}

/// Reads this worker's share of `file`: the Parquet row groups it takes (see
/// [`Share`]), or the whole of a text file if `salt % peers == index`
/// (text files cannot be split, gzip least of all). `visit` gets each row and may
/// reject it with a problem description.
pub fn read_rows(
    file: &InputFile,
    share: &Share,
    salt: usize,
    mut visit: impl FnMut(&Row) -> Result<(), String>,
) -> Result<(), InputError> {
    match file.format {
        FileFormat::Parquet => read_parquet(file, share, &mut visit),
        FileFormat::Tsv | FileFormat::TsvGz => {
            if share.takes(salt) {
                read_tsv(file, &mut visit)
            } else {
                Ok(())
            }
        }
    }
}

/// One column of a record batch, its Arrow type resolved once a batch: a
/// link table's rows are read ten million a snapshot, and looking up each
/// cell's type and downcasting its array (dynamic calls) cost `webevo check`
/// of bench snapshot 9 4% of its CPU time (2.50 → 2.40 s, 8 alternated runs).
pub struct Column<'a> {
    array: &'a ArrayRef,
    nulls: Option<&'a NullBuffer>,
    cells: Cells<'a>,
}

/// A column's values, as the array of its type.
enum Cells<'a> {
    Utf8(&'a StringArray),
    LargeUtf8(&'a LargeStringArray),
    Utf8View(&'a StringViewArray),
    Binary(&'a BinaryArray),
    /// Keys and values of a dictionary (32-bit keys, the one kind read).
    Dict(&'a PrimitiveArray<Int32Type>, &'a ArrayRef),
    Int64(&'a PrimitiveArray<Int64Type>),
    Int32(&'a PrimitiveArray<Int32Type>),
    Int16(&'a PrimitiveArray<Int16Type>),
    UInt32(&'a PrimitiveArray<UInt32Type>),
    UInt64(&'a PrimitiveArray<UInt64Type>),
    Float64(&'a PrimitiveArray<Float64Type>),
    Float32(&'a PrimitiveArray<Float32Type>),
    Seconds(&'a PrimitiveArray<TimestampSecondType>),
    Millis(&'a PrimitiveArray<TimestampMillisecondType>),
    Micros(&'a PrimitiveArray<TimestampMicrosecondType>),
    Nanos(&'a PrimitiveArray<TimestampNanosecondType>),
    /// A type no accessor reads (each names it in its error).
    Other,
}

impl<'a> Column<'a> {
    pub fn new(array: &'a ArrayRef) -> Column<'a> {
        let cells = match array.data_type() {
            DataType::Utf8 => Cells::Utf8(array.as_string::<i32>()),
            DataType::LargeUtf8 => Cells::LargeUtf8(array.as_string::<i64>()),
            DataType::Utf8View => Cells::Utf8View(array.as_string_view()),
            DataType::Binary => Cells::Binary(array.as_binary::<i32>()),
            DataType::Dictionary(k, _) if **k == DataType::Int32 => {
                let d = array.as_dictionary::<Int32Type>();
                Cells::Dict(d.keys(), d.values())
            }
            DataType::Int64 => Cells::Int64(array.as_primitive()),
            DataType::Int32 => Cells::Int32(array.as_primitive()),
            DataType::Int16 => Cells::Int16(array.as_primitive()),
            DataType::UInt32 => Cells::UInt32(array.as_primitive()),
            DataType::UInt64 => Cells::UInt64(array.as_primitive()),
            DataType::Float64 => Cells::Float64(array.as_primitive()),
            DataType::Float32 => Cells::Float32(array.as_primitive()),
            DataType::Timestamp(TimeUnit::Second, _) => Cells::Seconds(array.as_primitive()),
            DataType::Timestamp(TimeUnit::Millisecond, _) => Cells::Millis(array.as_primitive()),
            DataType::Timestamp(TimeUnit::Microsecond, _) => Cells::Micros(array.as_primitive()),
            DataType::Timestamp(TimeUnit::Nanosecond, _) => Cells::Nanos(array.as_primitive()),
            _ => Cells::Other,
        };
        Column {
            array,
            nulls: array.nulls(),
            cells,
        }
    }

    fn is_null(&self, row: usize) -> bool {
        self.nulls.is_some_and(|n| n.is_null(row))
    }
}

/// One input row; cells are indexed by the table's declared column order.
pub enum Row<'a> {
    Arrow {
        columns: &'a [Option<Column<'a>>],
        row: usize,
    },
    Tsv {
        fields: &'a [&'a str],
        map: &'a [Option<usize>],
    },
}

impl Row<'_> {
    /// The column `col` of an Arrow row, if the table has it and the cell
    /// is not null.
    fn arrow_cell(&self, col: usize) -> Option<(&Column<'_>, usize)> {
        let Row::Arrow { columns, row } = self else {
            return None;
        };
        let c = columns[col].as_ref()?;
        (!c.is_null(*row)).then_some((c, *row))
    }

    /// A text cell; empty TSV fields and nulls are `None`.
    pub fn text(&self, col: usize) -> Result<Option<&str>, String> {
        if let Row::Tsv { fields, map } = self {
            return Ok(map[col].map(|i| fields[i]).filter(|s| !s.is_empty()));
        }
        let Some((c, r)) = self.arrow_cell(col) else {
            return Ok(None);
        };
        Ok(Some(match c.cells {
            Cells::Utf8(a) => a.value(r),
            Cells::LargeUtf8(a) => a.value(r),
            Cells::Utf8View(a) => a.value(r),
            Cells::Binary(a) => std::str::from_utf8(a.value(r))
                .map_err(|_| "text is not valid UTF-8".to_string())?,
            Cells::Dict(keys, values) => {
                return dict_value(values, keys.value(r) as usize).map(Some)
            }
            _ => {
                let other = c.array.data_type();
                return Err(format!("unsupported text column type {other}"));
            }
        }))
    }

    /// A non-null cell of a text column read with its dictionary: the
    /// dictionary (the same array for every row of a Parquet column chunk
    /// whose pages share it) and the cell's key into it. `None` for other
    /// columns and null cells; the value is [`dict_value`]`(values, key)`.
    pub fn dict_key(&self, col: usize) -> Option<(&ArrayRef, usize)> {
        match self.arrow_cell(col)? {
            (
                Column {
                    cells: Cells::Dict(keys, values),
                    ..
                },
                r,
            ) => Some((*values, keys.value(r) as usize)),
            _ => None,
        }
    }

    /// The dictionary key `ahead` rows after this one in its batch, of
    /// dictionary column `col`: a hint to fetch what that row will need,
    /// not a cell (a null's key is whatever the writer left).
    pub fn dict_key_ahead(&self, col: usize, ahead: usize) -> Option<usize> {
        let Row::Arrow { columns, row } = self else {
            return None;
        };
        match columns[col].as_ref()?.cells {
            Cells::Dict(keys, _) => keys.values().get(row + ahead).map(|&k| k as usize),
            _ => None,
        }
    }

    /// An integer cell.
    pub fn int(&self, col: usize) -> Result<Option<i64>, String> {
        if let Row::Tsv { .. } = self {
            return match self.text(col)? {
                None => Ok(None),
                Some(s) => s
                    .trim()
                    .parse::<i64>()
                    .map(Some)
                    .map_err(|_| format!("{s:?} is not an integer")),
            };
        }
        let Some((c, r)) = self.arrow_cell(col) else {
            return Ok(None);
        };
        Ok(Some(match c.cells {
            Cells::Int64(a) => a.value(r),
            Cells::Int32(a) => a.value(r) as i64,
            Cells::Int16(a) => a.value(r) as i64,
            Cells::UInt32(a) => a.value(r) as i64,
            Cells::UInt64(a) => {
                i64::try_from(a.value(r)).map_err(|_| "integer out of range".to_string())?
            }
            _ => {
                let other = c.array.data_type();
                return Err(format!("unsupported integer column type {other}"));
            }
        }))
    }

    /// A float cell.
    pub fn float(&self, col: usize) -> Result<Option<f64>, String> {
        if let Row::Tsv { .. } = self {
            return match self.text(col)? {
                None => Ok(None),
                Some(s) => s
                    .trim()
                    .parse::<f64>()
                    .map(Some)
                    .map_err(|_| format!("{s:?} is not a number")),
            };
        }
        let Some((c, r)) = self.arrow_cell(col) else {
            return Ok(None);
        };
        match c.cells {
            Cells::Float64(a) => Ok(Some(a.value(r))),
            Cells::Float32(a) => Ok(Some(a.value(r) as f64)),
            _ => self.int(col).map(|v| v.map(|v| v as f64)),
        }
    }

    /// A time cell in microseconds: a Parquet timestamp, unix seconds, or RFC 3339.
    /// Times beyond the microseconds an `i64` holds are errors (`i64::MIN` too:
    /// the ledger's "no time").
    pub fn time(&self, col: usize) -> Result<Option<Micros>, String> {
        match self.raw_time(col)? {
            Some(Micros::MIN) => Err(OUT_OF_RANGE.to_string()),
            t => Ok(t),
        }
    }

    fn raw_time(&self, col: usize) -> Result<Option<Micros>, String> {
        if let Row::Arrow { .. } = self {
            let Some((c, r)) = self.arrow_cell(col) else {
                return Ok(None);
            };
            match c.cells {
                Cells::Seconds(a) => return scaled(a.value(r), 1_000_000).map(Some),
                Cells::Millis(a) => return scaled(a.value(r), 1_000).map(Some),
                Cells::Micros(a) => return Ok(Some(a.value(r))),
                Cells::Nanos(a) => return Ok(Some(a.value(r) / 1_000)),
                Cells::Int64(_) | Cells::Int32(_) => {
                    return self.int(col)?.map(|s| scaled(s, 1_000_000)).transpose()
                }
                _ => {}
            }
        }
        match self.text(col)? {
            None => Ok(None),
            Some(s) => parse_time(s).map(Some),
        }
    }
}

const OUT_OF_RANGE: &str = "time out of range";

/// `v` units of `per_unit` microseconds, or an error past an `i64`.
fn scaled(v: i64, per_unit: i64) -> Result<Micros, String> {
    v.checked_mul(per_unit)
        .ok_or_else(|| OUT_OF_RANGE.to_string())
}

/// Entry `key` of a dictionary of text (as [`Row::dict_key`] gives it).
pub fn dict_value(values: &ArrayRef, key: usize) -> Result<&str, String> {
    match values.data_type() {
        DataType::Utf8 => Ok(values.as_string::<i32>().value(key)),
        DataType::LargeUtf8 => Ok(values.as_string::<i64>().value(key)),
        DataType::Binary => std::str::from_utf8(values.as_binary::<i32>().value(key))
            .map_err(|_| "text is not valid UTF-8".to_string()),
        other => Err(format!("unsupported text column type {other}")),
    }
}

fn cell_accepts(cell: CellType, dt: &DataType) -> bool {
    use DataType::*;
    let text = match dt {
        Dictionary(_, v) => matches!(**v, Utf8 | LargeUtf8 | Binary),
        _ => matches!(dt, Utf8 | LargeUtf8 | Utf8View | Binary),
    };
    let int = matches!(dt, Int64 | Int32 | Int16 | UInt32 | UInt64);
    match cell {
        CellType::Text => text,
        CellType::Int => int,
        CellType::Float => int || matches!(dt, Float64 | Float32),
        CellType::Time => text || matches!(dt, Int64 | Int32 | Timestamp(_, _)),
    }
}

fn parquet_builder(path: &Path) -> Result<ParquetRecordBatchReaderBuilder<File>, InputError> {
    let f = File::open(path).map_err(|e| InputError::io(path, e))?;
    ParquetRecordBatchReaderBuilder::try_new(f)
        .map_err(|e| InputError::file(path, format!("not a readable Parquet file: {e}")))
}

/// Maps the declared columns to Parquet root column indices, checking types.
fn parquet_columns(
    file: &InputFile,
    schema: &arrow_schema::Schema,
) -> Result<Vec<Option<usize>>, InputError> {
    file.kind
        .columns()
        .iter()
        .map(|c| match schema.index_of(c.name) {
            Ok(i) => {
                let dt = schema.field(i).data_type();
                if cell_accepts(c.cell, dt) {
                    Ok(Some(i))
                } else {
                    Err(InputError::file(
                        &file.path,
                        format!("column {} has type {dt}, expected {:?}", c.name, c.cell),
                    ))
                }
            }
            Err(_) if c.required => Err(missing_column(file, c.name)),
            Err(_) => Ok(None),
        })
        .collect()
}

fn missing_column(file: &InputFile, name: &str) -> InputError {
    let all: Vec<&str> = file.kind.columns().iter().map(|c| c.name).collect();
    InputError::file(
        &file.path,
        format!(
            "missing required column {name:?} (the {:?} table has columns {all:?})",
            file.kind
        ),
    )
}

fn read_parquet(
    file: &InputFile,
    share: &Share,
    visit: &mut dyn FnMut(&Row) -> Result<(), String>,
) -> Result<(), InputError> {
    let source = File::open(&file.path).map_err(|e| InputError::io(&file.path, e))?;
    let metadata = ArrowReaderMetadata::load(&source, ArrowReaderOptions::new())
        .map_err(|e| InputError::file(&file.path, format!("not a readable Parquet file: {e}")))?;
    let map = parquet_columns(file, metadata.schema().as_ref())?;
    let metadata = keep_dictionaries(file, metadata, &map)?;
    // File row number of each row group's first row, so errors name exact rows.
    let mut starts = Vec::new();
    let mut acc = 0u64;
    for rg in metadata.metadata().row_groups() {
        starts.push(acc);
        acc += rg.num_rows() as u64;
    }
    let groups = starts.len();
    let mask = ProjectionMask::roots(metadata.parquet_schema(), map.iter().flatten().copied());
    for g in share.groups(&file.path, groups) {
        let source = source
            .try_clone()
            .map_err(|e| InputError::io(&file.path, e))?;
        let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(source, metadata.clone())
            .with_row_groups(vec![g])
            .with_projection(mask.clone())
            .with_batch_size(8192)
            .build()
            .map_err(|e| InputError::file(&file.path, e.to_string()))?;
        let mut row_no = starts[g];
        for batch in reader {
            let batch: RecordBatch =
                batch.map_err(|e| InputError::file(&file.path, format!("cannot decode: {e}")))?;
            let columns: Vec<Option<Column<'_>>> = file
                .kind
                .columns()
                .iter()
                .map(|c| batch.column_by_name(c.name).map(Column::new))
                .collect();
            for row in 0..batch.num_rows() {
                visit(&Row::Arrow {
                    columns: &columns,
                    row,
                })
                .map_err(|p| InputError::at(&file.path, Position::Row(row_no), p))?;
                row_no += 1;
            }
        }
    }
    Ok(())
}

/// `metadata` read so that the declared columns that repeat come with
/// their dictionaries (Parquet's dictionary pages; a chunk without one gets
/// a dictionary built by the reader), and every dictionary column with
/// 32-bit keys, the one kind [`Row`] reads.
fn keep_dictionaries(
    file: &InputFile,
    metadata: ArrowReaderMetadata,
    map: &[Option<usize>],
) -> Result<ArrowReaderMetadata, InputError> {
    let schema = metadata.schema();
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    let mut changed = false;
    for (c, i) in file.kind.columns().iter().zip(map) {
        let Some(i) = *i else { continue };
        let value = match fields[i].data_type() {
            DataType::Dictionary(k, v) if **k != DataType::Int32 => v.as_ref().clone(),
            dt @ (DataType::Utf8 | DataType::LargeUtf8 | DataType::Binary) if c.repeats => {
                dt.clone()
            }
            _ => continue,
        };
        let dt = DataType::Dictionary(Box::new(DataType::Int32), Box::new(value));
        fields[i] = fields[i].clone().with_data_type(dt);
        changed = true;
    }
    if !changed {
        return Ok(metadata);
    }
    let schema = Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
    let options = ArrowReaderOptions::new().with_schema(schema);
    ArrowReaderMetadata::try_new(metadata.metadata().clone(), options)
        .map_err(|e| InputError::file(&file.path, format!("not a readable Parquet file: {e}")))
}

type Lines = Box<dyn BufRead>;

fn open_text(path: &Path, format: FileFormat) -> Result<Lines, InputError> {
    let f = File::open(path).map_err(|e| InputError::io(path, e))?;
    let r: Box<dyn Read> = match format {
        FileFormat::TsvGz => Box::new(flate2::read::MultiGzDecoder::new(f)),
        _ => Box::new(f),
    };
    Ok(Box::new(BufReader::with_capacity(1 << 16, r)))
}

/// Reads one line without its terminator; `None` at end of file.
fn next_line(
    path: &Path,
    lines: &mut Lines,
    buf: &mut Vec<u8>,
    line_no: u64,
) -> Result<Option<()>, InputError> {
    buf.clear();
    let n = lines
        .read_until(b'\n', buf)
        .map_err(|e| InputError::at(path, Position::Line(line_no), format!("cannot read: {e}")))?;
    if n == 0 {
        return Ok(None);
    }
    while matches!(buf.last(), Some(b'\n' | b'\r')) {
        buf.pop();
    }
    Ok(Some(()))
}

fn read_header(path: &Path, lines: &mut Lines) -> Result<Vec<String>, InputError> {
    let mut buf = Vec::new();
    next_line(path, lines, &mut buf, 1)?.ok_or_else(|| {
        InputError::at(path, Position::Line(1), "empty file: expected a header row")
    })?;
    let text = std::str::from_utf8(&buf)
        .map_err(|_| InputError::at(path, Position::Line(1), "header is not valid UTF-8"))?;
    Ok(text.split('\t').map(|s| s.trim().to_string()).collect())
}

fn tsv_columns(file: &InputFile, header: &[String]) -> Result<Vec<Option<usize>>, InputError> {
    file.kind
        .columns()
        .iter()
        .map(|c| match header.iter().position(|h| h == c.name) {
            Some(i) => Ok(Some(i)),
            None if c.required => Err(missing_column(file, c.name)),
            None => Ok(None),
        })
        .collect()
}

fn read_tsv(
    file: &InputFile,
    visit: &mut dyn FnMut(&Row) -> Result<(), String>,
) -> Result<(), InputError> {
    let path = &file.path;
    let mut lines = open_text(path, file.format)?;
    let header = read_header(path, &mut lines)?;
    let map = tsv_columns(file, &header)?;
    let mut buf = Vec::new();
    let mut line_no = 1u64;
    loop {
        line_no += 1;
        if next_line(path, &mut lines, &mut buf, line_no)?.is_none() {
            return Ok(());
        }
        if buf.is_empty() {
            continue;
        }
        let at = |p: String| InputError::at(path, Position::Line(line_no), p);
        let text = std::str::from_utf8(&buf).map_err(|_| at("line is not valid UTF-8".into()))?;
        let fields: Vec<&str> = text.split('\t').collect();
        if fields.len() != header.len() {
            return Err(at(format!(
                "wrong number of fields: expected {} (as in the header), found {}",
                header.len(),
                fields.len()
            )));
        }
        visit(&Row::Tsv {
            fields: &fields,
            map: &map,
        })
        .map_err(at)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Int64Array, TimestampMicrosecondArray, TimestampSecondArray};
    use std::sync::Arc;

    fn cell(a: ArrayRef, row: usize) -> Result<Option<Micros>, String> {
        let columns = [Some(Column::new(&a))];
        Row::Arrow {
            columns: &columns,
            row,
        }
        .time(0)
    }

    /// Times convert to microseconds, and those an `i64` cannot hold, or that
    /// are the ledger's "no time", are errors rather than wrapped values.
    #[test]
    fn time_cells_in_range_convert_and_others_are_errors() {
        let secs: ArrayRef = Arc::new(TimestampSecondArray::from(vec![
            Some(1_700_000_000),
            Some(i64::MAX / 1000),
            None,
        ]));
        assert_eq!(cell(secs.clone(), 0), Ok(Some(1_700_000_000_000_000)));
        assert!(cell(secs.clone(), 1).unwrap_err().contains("out of range"));
        assert_eq!(cell(secs, 2), Ok(None));
        let micros: ArrayRef = Arc::new(TimestampMicrosecondArray::from(vec![i64::MIN, -5]));
        assert!(cell(micros.clone(), 0)
            .unwrap_err()
            .contains("out of range"));
        assert_eq!(cell(micros, 1), Ok(Some(-5)));
        let ints: ArrayRef = Arc::new(Int64Array::from(vec![i64::MIN / 10, 3]));
        assert!(cell(ints.clone(), 0).unwrap_err().contains("out of range"));
        assert_eq!(cell(ints, 1), Ok(Some(3_000_000)));
    }

    /// A Parquet trust table of `rows` rows, `per_group` to a row group,
    /// whose weights are the row numbers.
    fn numbered_rows(dir: &Path, rows: usize, per_group: usize) -> InputFile {
        use arrow_array::{Float64Array, StringArray};
        let path = dir.join("numbered.parquet");
        let url: ArrayRef = Arc::new(StringArray::from_iter_values(
            (0..rows).map(|i| format!("http://h{}.example/", i % 7)),
        ));
        let weight: ArrayRef =
            Arc::new(Float64Array::from_iter_values((0..rows).map(|i| i as f64)));
        let batch = RecordBatch::try_from_iter([("url", url), ("weight", weight)]).unwrap();
        let props = parquet::file::properties::WriterProperties::builder()
            .set_max_row_group_row_count(Some(per_group))
            .build();
        let f = File::create(&path).unwrap();
        let mut w = parquet::arrow::ArrowWriter::try_new(f, batch.schema(), Some(props)).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        InputFile {
            path,
            format: FileFormat::Parquet,
            kind: TableKind::Trust,
        }
    }

    /// Workers taking row groups in turns read every row of their
    /// process's row groups once between them, however the groups fall
    /// to them, and errors name the file's own row numbers; a second
    /// reading of the same file by the same workers starts over.
    #[test]
    fn workers_taking_turns_read_each_row_once() {
        let dir = tempfile::tempdir().unwrap();
        let file = numbered_rows(dir.path(), 1000, 37);
        let groups = 1000usize.div_ceil(37);
        for processes in [1usize, 2] {
            let workers = 3;
            let peers = workers * processes;
            let mut all: Vec<u64> = Vec::new();
            for process in 0..processes {
                let turns = Arc::new(Turns::new(process, processes));
                for reading in 0..2 {
                    let mut got: Vec<u64> = std::thread::scope(|scope| {
                        let handles: Vec<_> = (0..workers)
                            .map(|w| {
                                let share = Share {
                                    index: process * workers + w,
                                    peers,
                                    turns: Some(turns.clone()),
                                };
                                let file = &file;
                                scope.spawn(move || {
                                    let mut got = Vec::new();
                                    read_rows(file, &share, 0, |row| {
                                        got.push(row.float(1)?.unwrap() as u64);
                                        Ok(())
                                    })
                                    .unwrap();
                                    got
                                })
                            })
                            .collect();
                        handles
                            .into_iter()
                            .flat_map(|h| h.join().unwrap())
                            .collect()
                    });
                    got.sort_unstable();
                    let want: Vec<u64> = (0..1000u64)
                        .filter(|&r| (r as usize / 37) % processes == process)
                        .collect();
                    assert_eq!(
                        got, want,
                        "process {process} of {processes}, reading {reading}"
                    );
                    if reading == 0 {
                        all.extend(got);
                    }
                }
            }
            all.sort_unstable();
            assert_eq!(
                all,
                (0..1000).collect::<Vec<u64>>(),
                "{processes} process(es)"
            );
            assert!(groups > 2 * workers);
        }
        // A rejected row is named by its number in the file, whichever
        // worker reads it.
        let turns = Arc::new(Turns::new(0, 1));
        let share = Share {
            index: 1,
            peers: 2,
            turns: Some(turns),
        };
        let err = read_rows(&file, &share, 0, |row| {
            let w = row.float(1)?.unwrap();
            if w == 500.0 {
                Err("a bad weight".to_string())
            } else {
                Ok(())
            }
        })
        .unwrap_err();
        assert!(err.to_string().contains(", row 500"), "{err}");
    }
}
