//! The ledger as a timely operator: records routed by host in, deltas out.

use std::collections::BTreeMap;

use differential_dataflow::{AsCollection, VecCollection};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::Stream;

use crate::dataflow::WorkerCtx;
use crate::error::OutputError;
use crate::ingest::Record;
use crate::ledger::{Ledger, LedgerOut};
use crate::model::Seq;
use crate::output::batch::RowContext;
use crate::output::parquet::{part_path, write_rows};
use crate::output::rows::PageRow;
use crate::state::{self, StateRecord, StateWriter};

/// Routes `records` by host into each worker's [`Ledger`] and returns the ledger's
/// updates. At the run's last epoch the ledger also writes its state and the
/// `pages` table into the staging area, before it releases that epoch.
pub fn ledger<'s>(
    records: Stream<'s, Seq, Vec<Record>>,
    ctx: &WorkerCtx,
) -> VecCollection<'s, Seq, LedgerOut> {
    let ctx = ctx.clone();
    type Out = Vec<(LedgerOut, Seq, isize)>;
    records
        .unary_frontier::<CapacityContainerBuilder<Out>, _, _, _>(
            Exchange::new(|r: &Record| r.route()),
            "Ledger",
            move |cap, _info| {
                let epochs = ctx.plan.epochs();
                let mut cap = Some(cap);
                let mut next = 0;
                let mut stash: BTreeMap<Seq, Vec<Record>> = BTreeMap::new();
                let mut ledger = Ledger::default();
                move |(input, frontier), output| {
                    input.for_each(|c, data| {
                        let t = *c.least().expect("records carry a time");
                        stash.entry(t).or_default().append(data);
                    });
                    while next < epochs.len() && !frontier.less_equal(&epochs[next]) {
                        let t = epochs[next];
                        let records = stash.remove(&t).unwrap_or_default();
                        let updates = fold(&mut ledger, &ctx, t, records);
                        let c = cap.as_ref().expect("held until the last epoch").delayed(&t);
                        output
                            .session(&c)
                            .give_iterator(updates.into_iter().map(|(o, d)| (o, t, d as isize)));
                        next += 1;
                        match epochs.get(next) {
                            Some(n) => cap.as_mut().unwrap().downgrade(n),
                            None => {
                                if let Err(e) = persist(&ledger, &ctx) {
                                    ctx.log.borrow_mut().error(e);
                                }
                                cap = None;
                            }
                        }
                    }
                }
            },
        )
        .as_collection()
}

/// Folds one epoch's records into the ledger.
fn fold(
    ledger: &mut Ledger,
    ctx: &WorkerCtx,
    t: Seq,
    records: Vec<Record>,
) -> Vec<(LedgerOut, i64)> {
    if ctx.plan.restore == Some(t) {
        let state = records
            .into_iter()
            .map(|r| match r {
                Record::Restore(s) => *s,
                other => panic!("input record at the restore epoch: {other:?}"),
            })
            .collect();
        return ledger.restore(t, state);
    }
    let odd_before = ledger.odd;
    let result = ledger.advance(ctx.plan.meta(t), records);
    let mut log = ctx.log.borrow_mut();
    let odd = log.odd.entry(t).or_default();
    odd.duplicate_links += ledger.odd.duplicate_links - odd_before.duplicate_links;
    odd.duplicate_pages += ledger.odd.duplicate_pages - odd_before.duplicate_pages;
    result.unwrap_or_else(|e| {
        log.error(e);
        Vec::new()
    })
}

/// Writes the ledger's state and its `pages` part into the staging area.
fn persist(ledger: &Ledger, ctx: &WorkerCtx) -> Result<(), OutputError> {
    let plan = &ctx.plan;
    let mut w = StateWriter::create(&state::part_path(&plan.staged_state_dir(), ctx.index))?;
    for rec in ledger.state_records() {
        w.write(&rec)?;
    }
    w.finish()?;
    crate::failpoint::hit("state-written");

    let mut rows: Vec<PageRow> = ledger
        .pages()
        .map(|(state, host)| PageRow {
            state,
            host,
            first_seen: plan.meta(state.first_seen).time,
            last_seen: plan.meta(state.last_seen).time,
        })
        .collect();
    rows.sort_unstable_by(|a, b| a.state.url.url.cmp(&b.state.url.url));
    let path = part_path(&plan.table_dir("pages", None), ctx.index);
    let n = write_rows(
        &path,
        &rows,
        &RowContext { snapshot: None },
        &plan.job.write,
    )?;
    *ctx.log.borrow_mut().rows.entry("pages".into()).or_default() += n;
    Ok(())
}

/// Sends this worker's share of the committed state into the dataflow at the
/// restore epoch: part files `j` with `j % peers == index`, routed like input.
pub fn send_state(
    ctx: &WorkerCtx,
    peers: usize,
    send: &mut dyn FnMut(Record),
) -> Result<(), OutputError> {
    let parts = state::part_files(&ctx.plan.state_dir)?;
    for (j, part) in parts.iter().enumerate() {
        if j % peers == ctx.index {
            state::read_part(part, |rec: StateRecord| {
                send(Record::Restore(Box::new(rec)))
            })?;
        }
    }
    Ok(())
}
