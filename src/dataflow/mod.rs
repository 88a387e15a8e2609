//! The dataflow: wiring the ledger, the analyses' stages and the table writers.
//!
//! Each snapshot is one timely epoch (its sequence number). Records are routed by
//! host into the per-worker [`ledger`](ledger_op), which emits the snapshot's deltas
//! as differential collections; every stage keyed by host then runs on the worker
//! that already holds the host. [`build`] is the only place that knows every stage.

pub mod discovery;
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
use crate::job::Analysis;
use crate::ledger::LedgerOut;
use crate::model::Seq;
use crate::model::{HostId, HostKey};
use crate::output::discovery::{CoverSide, CoverSummaryRow, CoverTrajectoryRow};
use crate::output::rows::HostCounts;
use plan::{RunPlan, WorkerLog};

/// Per-worker context the operators share.
#[derive(Clone)]
pub struct WorkerCtx {
    pub plan: Arc<RunPlan>,
    pub log: Rc<RefCell<WorkerLog>>,
    pub index: usize,
}

/// The discovery analysis: closure, greedy covers, their tables.
fn build_discovery<'s>(
    ledger: VecCollection<'s, Seq, LedgerOut>,
    counts: VecCollection<'s, Seq, (HostId, HostCounts)>,
    names: VecCollection<'s, Seq, (HostId, String)>,
    ctx: &WorkerCtx,
) -> Vec<Stream<'s, Seq, Vec<()>>> {
    let start = ledger.clone().flat_map(|o| match o {
        LedgerOut::StartEdge(k) => Some((
            HostKey {
                host: k.host,
                key: k.key.1,
            },
            (k.key.0, k.key.2),
        )),
        _ => None,
    });
    let new_edges = ledger.flat_map(|o| match o {
        LedgerOut::NewEdge(k) => Some((
            HostKey {
                host: k.host,
                key: k.key.0,
            },
            k.key.1,
        )),
        _ => None,
    });
    let pairs = discovery::covering_pairs(start, new_edges);
    let covers = discovery::site_covers(pairs);
    let summaries = discovery::cover_summaries(counts, covers.clone());
    let steps = covers
        .flat_map(|(h, side)| match side {
            CoverSide::Step {
                rank,
                url,
                gain,
                covered,
            } => Some((h, (rank, url, gain, covered))),
            CoverSide::Stats(_) => None,
        })
        .join_map(names.clone(), |_, (rank, url, gain, covered), site| {
            CoverTrajectoryRow {
                site: site.clone(),
                rank: *rank,
                url: url.clone(),
                gain: *gain,
                covered: *covered,
            }
        });
    let summaries = summaries.join_map(names, |_, summary, site| CoverSummaryRow {
        site: site.clone(),
        summary: *summary,
    });
    vec![
        sink::write_table(steps, ctx),
        sink::write_table(summaries, ctx),
    ]
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
        _ => None,
    });
    let names = ledger.clone().flat_map(|o| match o {
        LedgerOut::HostName(k) => Some((k.host, k.key)),
        _ => None,
    });
    let counts = spine::host_counts(facts);
    let hosts = spine::host_snapshots(counts.clone(), names.clone());
    let totals = spine::snapshot_totals(counts.clone().map(|(_, c)| c));
    let mut done = vec![
        sink::write_table(hosts.map(|(_, row)| row), ctx),
        sink::write_table(totals, ctx),
    ];
    if ctx.plan.job.analyses.contains(&Analysis::Discovery) {
        done.extend(build_discovery(ledger, counts, names, ctx));
    }
    let (probe, _) = scope.concatenate(done).probe();
    probe
}
