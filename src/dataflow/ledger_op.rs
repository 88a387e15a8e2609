//! The ledger as a timely operator: records routed by host in, deltas out.

use std::collections::BTreeMap;
use std::path::PathBuf;

use differential_dataflow::{AsCollection, VecCollection};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::Stream;

use crate::change_book::{BookSettings, ChangeBook};
use crate::dataflow::record_exchange::record_pact;
use crate::dataflow::sink::SnapshotPart;
use crate::dataflow::WorkerCtx;
use crate::error::OutputError;
use crate::ingest::Record;
use crate::job::Analysis;
use crate::ledger::{Batch, EchoScan, Ledger, LedgerOut, Updates};
use crate::model::Seq;
use crate::output::change::PageChangeRow;
use crate::output::pages_table::{KeptPart, PagesPart, RowsHash};
use crate::output::parquet::{part_path, BATCH_ROWS};
use crate::output::rows::PageColumns;
use crate::state::{self, PackedLinks, StateRecord, StateWriter};

/// Routes `records` by host into each worker's [`Ledger`] and returns the ledger's
/// updates. At the run's finish epoch (after the last snapshot) the ledger writes
/// its state and the `pages` table into the staging area, before it releases it.
pub fn ledger<'s>(
    records: Stream<'s, Seq, Vec<Record>>,
    ctx: &WorkerCtx,
) -> VecCollection<'s, Seq, LedgerOut> {
    let ctx = ctx.clone();
    let placement = ctx.placement.clone();
    type Out = Vec<(LedgerOut, Seq, isize)>;
    records
        .unary_frontier::<CapacityContainerBuilder<Out>, _, _, _>(
            record_pact(move |r: &Record| r.route(&placement)),
            "Ledger",
            move |cap, _info| {
                let mut epochs = ctx.plan.epochs();
                epochs.push(ctx.plan.finish_epoch());
                let mut cap = Some(cap);
                let mut next = 0;
                let mut stash: BTreeMap<Seq, Batch> = BTreeMap::new();
                let shared = ctx.ledger.clone();
                {
                    let mut ledger = shared.borrow_mut();
                    let analyses = &ctx.plan.job.analyses;
                    ledger.discovery = analyses.contains(&Analysis::Discovery);
                    if analyses.contains(&Analysis::Echo) {
                        let days = ctx.plan.job.echo.content_age_days;
                        ledger.echo = Some(EchoScan {
                            content_age: (days * 86_400e6) as i64,
                            first_seq: *ctx.plan.metas.keys().next().expect("a run has snapshots"),
                            times: ctx.plan.metas.iter().map(|(s, m)| (*s, m.time)).collect(),
                        });
                    }
                    if analyses.contains(&Analysis::Change) {
                        ledger.change = Some(ChangeBook::new(BookSettings {
                            params: ctx.plan.job.change.clone(),
                            first_seq: *ctx.plan.metas.keys().next().expect("a run has snapshots"),
                        }));
                    }
                }
                move |(input, frontier), output| {
                    let mut ledger = shared.borrow_mut();
                    input.for_each(|c, data| {
                        let t = *c.least().expect("records carry a time");
                        let batch = stash
                            .entry(t)
                            .or_insert_with(|| Batch::with_capacity(ledger.batch_sizes()));
                        ledger.gather(batch, data);
                    });
                    while next < epochs.len() && !frontier.less_equal(&epochs[next]) {
                        let t = epochs[next];
                        let c = cap.as_ref().expect("held until the last epoch").delayed(&t);
                        if t == ctx.plan.finish_epoch() {
                            // After the last snapshot: leave the state for the next run.
                            if let Err(e) = persist(&ledger, &ctx) {
                                ctx.log.borrow_mut().error(e);
                            }
                        } else {
                            let batch = stash.remove(&t).unwrap_or_default();
                            let mut give = |chunk: std::vec::Drain<'_, (LedgerOut, i64)>| {
                                output
                                    .session(&c)
                                    .give_iterator(chunk.map(|(o, d)| (o, t, d as isize)))
                            };
                            fold(&mut ledger, &ctx, t, batch, &mut give);
                        }
                        next += 1;
                        match epochs.get(next) {
                            Some(n) => cap.as_mut().unwrap().downgrade(n),
                            None => cap = None,
                        }
                    }
                }
            },
        )
        .as_collection()
}

/// Folds one epoch's records into the ledger, handing its updates to `give`
/// a chunk at a time.
fn fold(
    ledger: &mut Ledger,
    ctx: &WorkerCtx,
    t: Seq,
    batch: Batch,
    give: &mut dyn FnMut(std::vec::Drain<'_, (LedgerOut, i64)>),
) {
    let mut updates = Updates::new(give);
    if ctx.plan.restore == Some(t) {
        let result = restore(ledger, ctx, t, batch.restore, &mut updates);
        updates.flush();
        if let Err(e) = result {
            ctx.log.borrow_mut().error(e);
        }
        return;
    }
    let odd_before = ledger.odd;
    // Every worker of the process has read its share: what the fold and
    // the analyses after it free stays mapped for what they allocate next.
    crate::freed_hold::hold();
    let mut page_rows = SnapshotPart::<PageChangeRow>::new(ctx, t);
    let mut write_row = |r: PageChangeRow| page_rows.push(&r);
    crate::memory::trace(|| {
        format!(
            "worker {} snapshot {t}: ledger fold starts ({} links, {} pages, {} mentions of new pages, {} of known ones gathered)",
            ctx.index,
            batch.links.len(),
            batch.new_fetches.len() + batch.known_fetches.len(),
            batch.mentions.len(),
            batch.seen.len(),
        )
    });
    let result = ledger.advance_into(ctx.plan.meta(t), batch, &mut updates, &mut write_row);
    updates.flush();
    page_rows.finish();
    crate::memory::trace(|| {
        format!(
            "worker {} snapshot {t}: ledger fold done ({})",
            ctx.index,
            ledger.footprint()
        )
    });
    // A point to stop a run at under heaptrack (`fold-done-9`): its "leaks"
    // are then what the state holds as a snapshot starts, which is how a
    // whole run and one restored from its commit can be compared.
    crate::failpoint::hit(&format!("fold-done-{t}"));
    let mut log = ctx.log.borrow_mut();
    let odd = log.odd.entry(t).or_default();
    odd.duplicate_links += ledger.odd.duplicate_links - odd_before.duplicate_links;
    odd.duplicate_pages += ledger.odd.duplicate_pages - odd_before.duplicate_pages;
    if let Err(e) = result {
        log.error(e);
    }
}

/// Restores the ledger at the restore epoch `t`: from the records routed to it
/// or, when the state was written by as many workers as this run has, from its
/// own part files read in place (no record boxed, exchanged and held until the
/// epoch ends: the restore's time and peak memory were mostly that).
fn restore(
    ledger: &mut Ledger,
    ctx: &WorkerCtx,
    t: Seq,
    routed: Vec<StateRecord>,
    out: &mut Updates<'_>,
) -> Result<(), OutputError> {
    for rec in routed {
        ledger
            .restore_record(rec, out)
            .map_err(|problem| OutputError::Corrupt {
                path: ctx.plan.state_dir.clone(),
                problem,
            })?;
    }
    if let Some(parts) = state::own_parts(&ctx.plan.state_dir, ctx.peers, ctx.index)? {
        let mut records = 0u64;
        for part in &parts {
            ledger.reserve_restore(state::part_room(part)?);
            let mut misplaced = None;
            let mut undecoded = None;
            state::read_part(part, |rec: StateRecord| {
                records += 1;
                rec.each_host(|host| {
                    if ctx.placement.owner(host) != ctx.index {
                        misplaced.get_or_insert(host);
                    }
                });
                if let Err(e) = ledger.restore_record(rec, out) {
                    undecoded.get_or_insert(e);
                }
            })?;
            if let Some(problem) = undecoded {
                return Err(OutputError::Corrupt {
                    path: part.clone(),
                    problem,
                });
            }
            if let Some(host) = misplaced {
                return Err(OutputError::Corrupt {
                    path: part.clone(),
                    problem: format!(
                        "holds host {host:?}, which worker {} of {} does not own: the state \
                         was not written by a run of {} workers with its placement.json",
                        ctx.index, ctx.peers, ctx.peers
                    ),
                });
            }
        }
        ctx.log.borrow_mut().state_records_read += records;
    }
    ledger.restored(t, out);
    crate::memory::trace(|| format!("worker {}: restore done", ctx.index));
    Ok(())
}

/// Writes the ledger's state and its `pages` part into the staging area.
///
/// The state is written on a thread of its own while this one writes the
/// `pages` part: the state is a hundred megabytes or more a worker, which
/// the disk takes longer to write than the thread takes to encode (bench
/// snapshot 9: two workers' states kept the disk busy 0.5 s, and their
/// encoding half a core each), and the `pages` part is under half a second
/// of a core's work into a file a seventh the size. The disk's last writes
/// are waited for at the end of the finish ([`WorkerCtx::syncing`]).
fn persist(ledger: &Ledger, ctx: &WorkerCtx) -> Result<(), OutputError> {
    let plan = &ctx.plan;
    // The `pages` table's order, and the state's, so that the next run's
    // ledger holds its pages in it (see `Ledger::table_order`).
    let order = ledger.table_order();
    crate::memory::trace(|| format!("worker {}: finish: pages in table order", ctx.index));
    let index = ctx.index;
    std::thread::scope(|scope| {
        let order = &order;
        let state = std::thread::Builder::new()
            .name(format!("webevo:state-{index}"))
            .spawn_scoped(scope, move || {
                let path = state::part_path(&plan.staged_state_dir(), index);
                let spare = state::part_path(&plan.spare_state_dir(), index);
                let mut w = StateWriter::over_spare(&path, ledger.state_sizes(), &spare)?;
                for rec in ledger.state_records(order) {
                    w.write(&rec)?;
                }
                // It is synced while the `pages` part is written.
                let syncing = w.finish_syncing();
                crate::memory::trace(|| format!("worker {index}: finish: state written"));
                syncing
            })
            .map_err(|e| OutputError::io(plan.staged_state_dir(), e))?;
        let pages = write_pages_part(ledger, ctx, order);
        let syncing = match state.join() {
            Ok(syncing) => syncing?,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        ctx.sync_at_end(syncing);
        pages
    })?;
    if ctx.index == 0 {
        ctx.placement.save(&plan.staged_state_dir())?;
    }
    crate::failpoint::hit("state-written");
    Ok(())
}

/// Writes the ledger's `pages` part, its rows in `order`.
fn write_pages_part(ledger: &Ledger, ctx: &WorkerCtx, order: &[u32]) -> Result<(), OutputError> {
    let plan = &ctx.plan;
    // The last run's part, if its rows are this ledger's first pages: its
    // columns that cannot change are copied (see `output::pages_table`).
    let kept = plan.committed_table_dir("pages").and_then(|dir| {
        let group_rows = plan.job.write.row_group_rows;
        KeptPart::open(&part_path(&dir, ctx.index), group_rows, |rows| {
            let first = order.get(..rows)?;
            if !first.iter().enumerate().all(|(i, &p)| i == p as usize) {
                return None;
            }
            let mut hash = RowsHash::default();
            for (state, url, _) in ledger.pages_at(first) {
                hash.add(url, state.first_seen());
            }
            Some(hash)
        })
    });
    let path = part_path(&plan.table_dir("pages", None), ctx.index);
    let mut part = PagesPart::create(&path, &plan.job.write, kept)?;
    let time = |seq| plan.meta(seq).time;
    // A batch of rows at a time (see `PageColumns` and `BATCH_ROWS`). The
    // rows come straight from the ledger (`Ledger::pages_at`): a vector of
    // every page's state, URL and host first was 40 bytes a page of the
    // finish's peak.
    let mut columns = PageColumns::default();
    let mut start = 0;
    for rows in part.kept_groups() {
        for block in order[start..start + rows].chunks(BATCH_ROWS) {
            for (state, _, _) in ledger.pages_at(block) {
                columns.push_state(state);
            }
            part.write_changing(&columns.changing(time))?;
        }
        part.close_kept_group()?;
        start += rows;
    }
    let copied = start;
    for block in order[start..].chunks(BATCH_ROWS) {
        for (state, url, host) in ledger.pages_at(block) {
            columns.push(state, url, host);
        }
        let batch = columns.batch(time).expect("the ledger keeps URLs as text");
        part.write_batch(&batch)?;
    }
    let n = part.finish()?;
    *ctx.log.borrow_mut().rows.entry("pages".into()).or_default() += n;
    crate::memory::trace(|| {
        format!(
            "worker {}: finish: pages table written ({copied} of {n} rows' fixed columns copied)",
            ctx.index
        )
    });
    Ok(())
}

/// Sends this worker's share of the committed state into the dataflow at the
/// restore epoch: part files `j` with `j % peers == index`, routed like input.
pub fn send_state(
    ctx: &WorkerCtx,
    peers: usize,
    send: &mut dyn FnMut(Record),
) -> Result<(), OutputError> {
    let parts: Vec<PathBuf> = (state::part_files(&ctx.plan.state_dir)?.into_iter())
        .skip(ctx.index)
        .step_by(peers)
        .collect();
    for part in &parts {
        state::read_part(part, |rec: StateRecord| match rec {
            // Its sources go to their hosts' workers one by one.
            StateRecord::Links(b) | StateRecord::PackedLinks(PackedLinks(b))
                if b.check().is_ok() =>
            {
                for o in b.outlinks() {
                    send(Record::Restore(Box::new(StateRecord::Outlinks(o))));
                }
            }
            rec => send(Record::Restore(Box::new(rec))),
        })?;
    }
    Ok(())
}
