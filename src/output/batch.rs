//! Turning typed rows into Arrow record batches that match their table's schema.
//!
//! A row type implements [`TableRow`] by pushing its cells in column order into a
//! [`RowWriter`]; the writer checks each cell's type against the table definition,
//! so a row and its schema cannot drift apart unnoticed (the schema tests push a
//! row of every table).

use std::sync::Arc;

use arrow_array::cast::AsArray;

use arrow_array::builder::{
    BooleanBuilder, Float64Builder, Int32Builder, Int64Builder, StringBuilder,
    TimestampMicrosecondBuilder,
};
use arrow_array::{ArrayRef, RecordBatch};

use crate::model::{Micros, SnapshotMeta};
use crate::output::schema::{ColType, TableDef, TIME_ZONE};

/// What a row may need to know that it does not carry: the snapshot it belongs to.
#[derive(Clone, Copy, Debug)]
pub struct RowContext<'a> {
    pub snapshot: Option<&'a SnapshotMeta>,
}

/// A row of one output table.
pub trait TableRow {
    const TABLE: &'static TableDef;
    /// Pushes the row's cells in the table's column order.
    fn write(&self, ctx: &RowContext, out: &mut RowWriter);
}

/// Large rows travel boxed (so that sorting them moves pointers), and are
/// written as what they hold.
impl<R: TableRow> TableRow for Box<R> {
    const TABLE: &'static TableDef = R::TABLE;
    fn write(&self, ctx: &RowContext, out: &mut RowWriter) {
        (**self).write(ctx, out)
    }
}

enum ColumnBuilder {
    Int64(Int64Builder),
    Int32(Int32Builder),
    Float64(Float64Builder),
    Utf8(StringBuilder),
    Bool(BooleanBuilder),
    Timestamp(TimestampMicrosecondBuilder),
}

/// Builds one record batch of a table, cell by cell.
pub struct RowWriter {
    table: &'static TableDef,
    columns: Vec<ColumnBuilder>,
    next: usize,
    rows: usize,
}

impl RowWriter {
    pub fn new(table: &'static TableDef) -> RowWriter {
        RowWriter {
            table,
            columns: builders(table, 0, &[]),
            next: 0,
            rows: 0,
        }
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Appends one row.
    ///
    /// # Panics
    /// If the row's cells do not match the table's columns (a programming error the
    /// schema tests catch).
    pub fn push<R: TableRow>(&mut self, row: &R, ctx: &RowContext) {
        assert!(
            std::ptr::eq(R::TABLE, self.table),
            "row of {} pushed into {}",
            R::TABLE.name,
            self.table.name
        );
        self.next = 0;
        row.write(ctx, self);
        assert_eq!(
            self.next,
            self.columns.len(),
            "row of {} has too few cells",
            self.table.name
        );
        self.rows += 1;
    }

    fn slot(&mut self, ty: ColType, null: bool) -> &mut ColumnBuilder {
        let def = self
            .table
            .columns
            .get(self.next)
            .unwrap_or_else(|| panic!("row of {} has too many cells", self.table.name));
        assert_eq!(def.ty, ty, "{}.{}: cell type", self.table.name, def.name);
        assert!(
            !null || def.nullable,
            "{}.{} is not nullable",
            self.table.name,
            def.name
        );
        self.next += 1;
        &mut self.columns[self.next - 1]
    }

    pub fn i64(&mut self, v: i64) {
        self.opt_i64(Some(v))
    }

    pub fn opt_i64(&mut self, v: Option<i64>) {
        if let ColumnBuilder::Int64(b) = self.slot(ColType::Int64, v.is_none()) {
            b.append_option(v)
        }
    }

    pub fn opt_i32(&mut self, v: Option<i32>) {
        if let ColumnBuilder::Int32(b) = self.slot(ColType::Int32, v.is_none()) {
            b.append_option(v)
        }
    }

    pub fn f64(&mut self, v: f64) {
        self.opt_f64(Some(v))
    }

    pub fn opt_f64(&mut self, v: Option<f64>) {
        if let ColumnBuilder::Float64(b) = self.slot(ColType::Float64, v.is_none()) {
            b.append_option(v)
        }
    }

    pub fn str(&mut self, v: &str) {
        if let ColumnBuilder::Utf8(b) = self.slot(ColType::Utf8, false) {
            b.append_value(v)
        }
    }

    /// A string column's cell written by `Display`, without an allocation per row.
    pub fn opt_display(&mut self, v: Option<impl std::fmt::Display>) {
        if let ColumnBuilder::Utf8(b) = self.slot(ColType::Utf8, v.is_none()) {
            match v {
                Some(v) => {
                    use std::fmt::Write;
                    // A string builder's row is what was written to it, ended
                    // by appending the empty rest.
                    write!(b, "{v}").expect("writing to a builder cannot fail");
                    b.append_value("");
                }
                None => b.append_null(),
            }
        }
    }

    pub fn opt_str(&mut self, v: Option<&str>) {
        if let ColumnBuilder::Utf8(b) = self.slot(ColType::Utf8, v.is_none()) {
            b.append_option(v)
        }
    }

    pub fn bool(&mut self, v: bool) {
        if let ColumnBuilder::Bool(b) = self.slot(ColType::Bool, false) {
            b.append_value(v)
        }
    }

    pub fn time(&mut self, v: Micros) {
        self.opt_time(Some(v))
    }

    pub fn opt_time(&mut self, v: Option<Micros>) {
        if let ColumnBuilder::Timestamp(b) = self.slot(ColType::Timestamp, v.is_none()) {
            b.append_option(v)
        }
    }

    /// Finishes the batch; the writer can be reused for the next one.
    pub fn finish(&mut self) -> RecordBatch {
        let arrays: Vec<ArrayRef> = self
            .columns
            .iter_mut()
            .map(|b| -> ArrayRef {
                match b {
                    ColumnBuilder::Int64(b) => Arc::new(b.finish()),
                    ColumnBuilder::Int32(b) => Arc::new(b.finish()),
                    ColumnBuilder::Float64(b) => Arc::new(b.finish()),
                    ColumnBuilder::Utf8(b) => Arc::new(b.finish()),
                    ColumnBuilder::Bool(b) => Arc::new(b.finish()),
                    ColumnBuilder::Timestamp(b) => Arc::new(b.finish()),
                }
            })
            .collect();
        // The next batch's builders start at this one's size: Arrow's
        // `finish` leaves them empty, and growing them again by doubling
        // copied each column several times a batch.
        let text: Vec<usize> = arrays
            .iter()
            .filter_map(|a| a.as_string_opt::<i32>())
            .map(|a| a.value_data().len())
            .collect();
        self.columns = builders(self.table, self.rows, &text);
        self.rows = 0;
        RecordBatch::try_new(self.table.arrow_schema(), arrays).expect("builders follow the schema")
    }
}

/// Builders of `table`'s columns with room for `rows` rows, the text
/// columns' `text[i]` bytes each (in column order; none when `text` is
/// short).
fn builders(table: &TableDef, rows: usize, text: &[usize]) -> Vec<ColumnBuilder> {
    let mut text = text.iter();
    table
        .columns
        .iter()
        .map(|c| match c.ty {
            ColType::Int64 => ColumnBuilder::Int64(Int64Builder::with_capacity(rows)),
            ColType::Int32 => ColumnBuilder::Int32(Int32Builder::with_capacity(rows)),
            ColType::Float64 => ColumnBuilder::Float64(Float64Builder::with_capacity(rows)),
            ColType::Utf8 => ColumnBuilder::Utf8(StringBuilder::with_capacity(
                rows,
                text.next().copied().unwrap_or(0),
            )),
            ColType::Bool => ColumnBuilder::Bool(BooleanBuilder::with_capacity(rows)),
            ColType::Timestamp => ColumnBuilder::Timestamp(
                TimestampMicrosecondBuilder::with_capacity(rows).with_timezone(TIME_ZONE),
            ),
        })
        .collect()
}
