//! Writing a collection as a per-snapshot table: each worker its own part file.

use std::collections::BTreeMap;

use differential_dataflow::consolidation::consolidate;
use differential_dataflow::{Data, VecCollection};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::Capability;
use timely::dataflow::Stream;

use crate::dataflow::WorkerCtx;
use crate::error::OutputError;
use crate::model::{Seq, SnapshotMeta};
use crate::output::batch::{RowContext, TableRow};
use crate::output::parquet::{part_path, write_rows, PartWriter};

/// Writes the accumulated contents of `rows` at every snapshot to
/// `<table>/snapshot=<seq>/part-<worker>.parquet` in the staging area, sorted.
///
/// Returns an empty stream whose frontier passes a snapshot once its file is
/// written, for the run's probe.
pub fn write_table<'s, R>(
    rows: VecCollection<'s, Seq, R>,
    ctx: &WorkerCtx,
) -> Stream<'s, Seq, Vec<()>>
where
    R: TableRow + Data,
{
    write_table_from(rows, ctx, 0)
}

/// As [`write_table`], for a table defined only from snapshot `first` on (a table
/// of snapshot pairs has no row for the first snapshot).
pub fn write_table_from<'s, R>(
    rows: VecCollection<'s, Seq, R>,
    ctx: &WorkerCtx,
    first: Seq,
) -> Stream<'s, Seq, Vec<()>>
where
    R: TableRow + Data,
{
    let ctx = ctx.clone();
    let table = R::TABLE.name;
    rows.inner
        .unary_frontier::<CapacityContainerBuilder<Vec<()>>, _, _, _>(
            Pipeline,
            &format!("Write_{table}"),
            move |cap, _info| {
                let mut clock = EpochClock::new(&ctx, cap);
                let mut pending: Vec<(R, Seq, isize)> = Vec::new();
                // The table's accumulated rows on this worker.
                let mut current: Vec<(R, isize)> = Vec::new();
                move |(input, frontier), _output| {
                    input.for_each(|_cap, data| pending.append(data));
                    while let Some(t) = clock.next_closed(|t| !frontier.less_equal(t)) {
                        let (now, later): (Vec<_>, Vec<_>) =
                            pending.drain(..).partition(|(_, time, _)| *time <= t);
                        pending = later;
                        current.extend(now.into_iter().map(|(r, _, d)| (r, d)));
                        consolidate(&mut current);
                        // Held to the next snapshot: without the room the
                        // retractions and new rows took while they met.
                        current.shrink_to_fit();
                        if ctx.plan.writes(t) && t >= first {
                            write_snapshot(&ctx, table, t, &current);
                        }
                    }
                }
            },
        )
}

/// Writes per-snapshot rows: the rows `rows` carries at time `t` are the table's
/// whole contents at snapshot `t` on this worker, written sorted once `t`
/// completes.
///
/// For tables whose rows are facts of one snapshot (a page's estimates as of
/// it), which a collection would have to insert and then retract at the next
/// snapshot: twice the rows through a consolidating sort, for nothing.
pub fn write_snapshot_rows<'s, R>(
    rows: Stream<'s, Seq, Vec<R>>,
    ctx: &WorkerCtx,
) -> Stream<'s, Seq, Vec<()>>
where
    R: TableRow + Data,
{
    let ctx = ctx.clone();
    let table = R::TABLE.name;
    rows.unary_frontier::<CapacityContainerBuilder<Vec<()>>, _, _, _>(
        Pipeline,
        &format!("Write_{table}"),
        move |cap, _info| {
            let mut clock = EpochClock::new(&ctx, cap);
            let mut pending: BTreeMap<Seq, Vec<R>> = BTreeMap::new();
            move |(input, frontier), _output| {
                input.for_each(|c, data| {
                    let t = *c.least().expect("rows carry a time");
                    pending.entry(t).or_default().append(data);
                });
                while let Some(t) = clock.next_closed(|t| !frontier.less_equal(t)) {
                    // Anything before `t` belongs to an epoch not written (a
                    // restore). The rows are sorted where they gathered, not
                    // copied out with a count each: a copy of 690K rows (ECHO's
                    // schedule on bench snapshot 9, before it wrote its own)
                    // took 64 MB of room more while both lived.
                    let keep = pending.split_off(&(t + 1));
                    let mut rows = std::mem::replace(&mut pending, keep)
                        .remove(&t)
                        .unwrap_or_default();
                    if ctx.plan.writes(t) {
                        rows.sort_unstable();
                        write_part(&ctx, table, t, rows.iter());
                    }
                }
            }
        },
    )
}

/// As [`write_snapshot_rows`], for a table whose rows a worker emits already
/// in their final order, the same order on every run: each batch is written as
/// it arrives, so the rows are never all held at once (the `pagerank` and
/// `revisit_plan` rows, a row per page).
pub fn write_ordered_snapshot_rows<'s, R>(
    rows: Stream<'s, Seq, Vec<R>>,
    ctx: &WorkerCtx,
) -> Stream<'s, Seq, Vec<()>>
where
    R: TableRow + Data,
{
    let ctx = ctx.clone();
    let table = R::TABLE.name;
    rows.unary_frontier::<CapacityContainerBuilder<Vec<()>>, _, _, _>(
        Pipeline,
        &format!("Write_{table}"),
        move |cap, _info| {
            let mut clock = EpochClock::new(&ctx, cap);
            let mut open: BTreeMap<Seq, SnapshotPart<R>> = BTreeMap::new();
            move |(input, frontier), _output| {
                input.for_each(|c, data| {
                    let t = *c.least().expect("rows carry a time");
                    let part = open.entry(t).or_insert_with(|| SnapshotPart::new(&ctx, t));
                    data.iter().for_each(|r| part.push(r));
                });
                while let Some(t) = clock.next_closed(|t| !frontier.less_equal(t)) {
                    if let Some(part) = open.remove(&t) {
                        part.finish();
                    }
                }
            }
        },
    )
}

/// A worker's part file of a per-snapshot table, for rows made in their final
/// order (the same on every run) and written as they are made. The file is
/// created at the first row: a worker without rows writes none, as for the
/// other tables. Nothing is written at snapshots the run does not write (a
/// restore). Errors are logged, and the run fails at its end.
pub struct SnapshotPart<R: TableRow> {
    ctx: WorkerCtx,
    /// The snapshot, looked up once rather than per row; `None` when the run
    /// does not write it.
    meta: Option<SnapshotMeta>,
    /// `None` until the first row; `Some(None)` once writing failed.
    writer: Option<Option<PartWriter<R>>>,
}

impl<R: TableRow> SnapshotPart<R> {
    pub fn new(ctx: &WorkerCtx, t: Seq) -> Self {
        SnapshotPart {
            ctx: ctx.clone(),
            meta: ctx.plan.writes(t).then(|| ctx.plan.meta(t).clone()),
            writer: None,
        }
    }

    pub fn push(&mut self, row: &R) {
        let Some(meta) = &self.meta else {
            return;
        };
        let ctx = &self.ctx;
        let writer = self.writer.get_or_insert_with(|| {
            let path = part_path(
                &ctx.plan.table_dir(R::TABLE.name, Some(meta.seq)),
                ctx.index,
            );
            PartWriter::create(&path, &ctx.plan.job.write)
                .map_err(|e| ctx.log.borrow_mut().error(e))
                .ok()
        });
        let rc = RowContext {
            snapshot: Some(meta),
        };
        if let Some(w) = writer {
            if let Err(e) = w.push(row, &rc) {
                ctx.log.borrow_mut().error(e);
                *writer = None;
            }
        }
    }

    /// Finishes the file, if any row was written.
    pub fn finish(self) {
        if let Some(Some(w)) = self.writer {
            record_written(&self.ctx, R::TABLE.name, w.finish());
        }
    }
}

fn write_snapshot<R: TableRow>(ctx: &WorkerCtx, table: &str, t: Seq, current: &[(R, isize)]) {
    let mut log = ctx.log.borrow_mut();
    if let Some((_, d)) = current.iter().find(|(_, d)| *d < 0) {
        log.error(format!(
            "internal error: table {table} holds a row {d} times at snapshot {t}"
        ));
        return;
    }
    drop(log);
    let rows = current
        .iter()
        .flat_map(|(r, d)| std::iter::repeat_n(r, *d as usize));
    write_part(ctx, table, t, rows);
}

/// Writes `rows`, this worker's part of `table` at snapshot `t`; no file
/// when there are none.
fn write_part<'r, R: TableRow + 'r>(
    ctx: &WorkerCtx,
    table: &str,
    t: Seq,
    rows: impl Iterator<Item = &'r R>,
) {
    let mut rows = rows.peekable();
    if rows.peek().is_none() {
        return;
    }
    let path = part_path(&ctx.plan.table_dir(table, Some(t)), ctx.index);
    let rc = RowContext {
        snapshot: Some(ctx.plan.meta(t)),
    };
    record_written(
        ctx,
        table,
        write_rows(&path, rows, &rc, &ctx.plan.job.write),
    );
}

/// Counts a written part file's rows in the run's log, or logs why it failed.
fn record_written(ctx: &WorkerCtx, table: &str, written: Result<u64, OutputError>) {
    let mut log = ctx.log.borrow_mut();
    match written {
        Ok(n) => {
            crate::failpoint::hit("table-written");
            *log.rows.entry(table.to_string()).or_default() += n
        }
        Err(e) => log.error(e),
    }
}

/// The snapshots a writer writes, in order, and the capability it holds for
/// the next one: a sink completes a snapshot once its input's frontier has
/// passed it, then lets its own output's frontier pass it too.
struct EpochClock {
    epochs: Vec<Seq>,
    next: usize,
    cap: Option<Capability<Seq>>,
}

impl EpochClock {
    fn new(ctx: &WorkerCtx, cap: Capability<Seq>) -> EpochClock {
        EpochClock {
            epochs: ctx.plan.epochs(),
            next: 0,
            cap: Some(cap),
        }
    }

    /// The next snapshot the input is done with (`passed`), if any; the
    /// capability moves on to the snapshot after it, or is dropped after the
    /// last.
    fn next_closed(&mut self, passed: impl Fn(&Seq) -> bool) -> Option<Seq> {
        let t = *self.epochs.get(self.next).filter(|t| passed(t))?;
        self.next += 1;
        match (&mut self.cap, self.epochs.get(self.next)) {
            (Some(c), Some(n)) => c.downgrade(n),
            _ => self.cap = None,
        }
        Some(t)
    }
}
