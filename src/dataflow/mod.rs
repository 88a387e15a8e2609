//! The dataflow: wiring the ledger, the analyses' stages and the table writers.
//!
//! Each snapshot is one timely epoch (its sequence number). Records are routed by
//! host into the per-worker [`ledger`](ledger_op), which emits the snapshot's deltas
//! as differential collections; every stage keyed by host then runs on the worker
//! that already holds the host. [`build`] is the only place that knows every stage.

pub mod ledger_op;
pub mod plan;
pub mod sink;
pub mod spine;

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use differential_dataflow::VecCollection;
use timely::dataflow::operators::{Concatenate, Probe};
use timely::dataflow::{ProbeHandle, Scope, Stream};

use crate::ingest::Record;
use crate::ledger::LedgerOut;
use crate::model::Seq;
use plan::{RunPlan, WorkerLog};

/// Per-worker context the operators share.
#[derive(Clone)]
pub struct WorkerCtx {
    pub plan: Arc<RunPlan>,
    pub log: Rc<RefCell<WorkerLog>>,
    pub index: usize,
}

/// Builds the whole dataflow over the routed input `records`; the returned probe
/// passes a snapshot once every table of it is written.
pub fn build<'s>(
    scope: Scope<'s, Seq>,
    records: Stream<'s, Seq, Vec<Record>>,
    ctx: &WorkerCtx,
) -> ProbeHandle<Seq> {
    let ledger: VecCollection<'s, Seq, LedgerOut> = ledger_op::ledger(records, ctx);
    let facts = ledger.clone().flat_map(|o| match o {
        LedgerOut::Fact(k) => Some(k),
        LedgerOut::HostName(_) => None,
    });
    let names = ledger.flat_map(|o| match o {
        LedgerOut::HostName(k) => Some((k.host, k.key)),
        LedgerOut::Fact(_) => None,
    });
    let counts = spine::host_counts(facts);
    let hosts = spine::host_snapshots(counts.clone(), names);
    let totals = spine::snapshot_totals(counts.map(|(_, c)| c));
    let done = [
        sink::write_table(hosts.map(|(_, row)| row), ctx),
        sink::write_table(totals, ctx),
    ];
    let (probe, _) = scope.concatenate(done).probe();
    probe
}
