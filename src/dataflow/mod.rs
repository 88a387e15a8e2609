//! The dataflow: wiring the ledger, the analyses' stages and the table writers.
//!
//! Each snapshot is one timely epoch (its sequence number). Records are routed by
//! host into the per-worker [`ledger`](ledger_op), which emits the snapshot's deltas
//! as differential collections; every stage keyed by host then runs on the worker
//! that already holds the host. [`build`] is the only place that knows every stage.

pub mod change;
pub mod discovery;
pub mod echo;
pub mod echo_cover;
pub mod ledger_op;
pub mod pagerank;
pub mod plan;
pub mod rankmass;
pub mod record_exchange;
pub mod revisit;
pub mod sink;
pub mod site_rounds;
pub mod spine;
pub mod split;

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use differential_dataflow::{AsCollection, VecCollection};
use timely::dataflow::operators::vec::Map;
use timely::dataflow::operators::{Concat, Concatenate, Probe};
use timely::dataflow::{ProbeHandle, Scope, Stream};

use crate::ingest::Record;
use crate::job::Analysis;
use crate::ledger::{Ledger, LedgerOut};
use crate::model::HostId;
use crate::model::Seq;
use crate::output::discovery::{CoverSummaryRow, SiteOut};
use crate::output::rows::{HostCounts, SnapshotRow};
use plan::{RunPlan, WorkerLog};

/// Rows an operator hands on per activation when it makes a snapshot's rows
/// in batches (the `pagerank` and `revisit_plan` rows), so
/// that the writer takes each batch before the next is made.
const ROWS_PER_ACTIVATION: usize = 1 << 16;

/// Items whose scattered lookups are made together (see [`in_lookup_blocks`]).
const LOOKUP_BLOCK: usize = 1024;

/// Calls `each(item, value)` for every item in order, the values of a block
/// of items made first by `lookup` (which pushes one per item, in order), in
/// a loop of their own. The lookups a row needs from the ledger (a page's
/// URL, its host's name) are cache misses, the page map and then the
/// scattered bytes: made together they overlap (see [`Ledger::urls_of`]),
/// where one row's lookup among the rest of its making waited on each in
/// turn (the `pagerank` and `rankmass_order` rows).
fn in_lookup_blocks<I, V>(
    items: impl IntoIterator<Item = I>,
    mut lookup: impl FnMut(&[I], &mut Vec<V>),
    mut each: impl FnMut(I, V),
) {
    let mut items = items.into_iter();
    let mut block: Vec<I> = Vec::with_capacity(LOOKUP_BLOCK);
    let mut values: Vec<V> = Vec::with_capacity(LOOKUP_BLOCK);
    loop {
        block.extend(items.by_ref().take(LOOKUP_BLOCK));
        if block.is_empty() {
            return;
        }
        lookup(&block, &mut values);
        assert_eq!(values.len(), block.len(), "a value an item");
        block
            .drain(..)
            .zip(values.drain(..))
            .for_each(|(i, v)| each(i, v));
    }
}

/// Per-worker context the operators share.
#[derive(Clone)]
pub struct WorkerCtx {
    pub plan: Arc<RunPlan>,
    pub log: Rc<RefCell<WorkerLog>>,
    pub index: usize,
    /// Workers in the run, over all processes.
    pub peers: usize,
    /// This worker's ledger, shared read-only with stages that look up URLs of
    /// pages on its hosts (a page's URL never changes once known).
    pub ledger: Rc<RefCell<Ledger>>,
    /// Which worker owns each host; every host-routed exchange follows it.
    pub placement: Arc<crate::placement::Placement>,
    /// State files still on their way to disk. The worker waits for them
    /// only once the finish epoch is through (`run::run_worker`), so that
    /// the disk's last writes overlap with the other stages' finish rather
    /// than hold up the stages after the ledger's.
    pub syncing: Rc<RefCell<Vec<crate::state::Syncing>>>,
}

impl WorkerCtx {
    /// Leaves `file` to reach the disk while the finish goes on: the worker
    /// waits for it once the finish epoch is through (see [`Self::syncing`]).
    pub fn sync_at_end(&self, file: crate::state::Syncing) {
        self.syncing.borrow_mut().push(file);
    }
}

/// The discovery analysis (docs/discovery.md): the closure, the per-site rounds,
/// and their tables.
fn build_discovery<'s>(
    ledger: VecCollection<'s, Seq, LedgerOut>,
    site_msgs: Stream<'s, Seq, Vec<(LedgerOut, Seq, isize)>>,
    counts: VecCollection<'s, Seq, (HostId, HostCounts)>,
    totals: VecCollection<'s, Seq, SnapshotRow>,
    names: VecCollection<'s, Seq, (HostId, String)>,
    ctx: &WorkerCtx,
) -> Vec<Stream<'s, Seq, Vec<()>>> {
    let off_site = ledger.flat_map(|o| match o {
        LedgerOut::OffSiteStart(k) => Some((k.host, k.key)),
        _ => None,
    });
    // Split the per-site results once by kind. The site rounds write the
    // cover steps and cluster members themselves, as they make them.
    let rounds = site_rounds::site_rounds(site_msgs, ctx);
    let [stats, curves, gains, jaccard, policies] = split_updates(
        rounds.inner,
        "SplitSiteOut",
        |o: &(HostId, SiteOut)| match o.1 {
            SiteOut::Stats(_) => 0,
            SiteOut::Curve { .. } => 1,
            SiteOut::Gain(_) => 2,
            SiteOut::JaccardBin(_) => 3,
            SiteOut::Policy { .. } => 4,
        },
    );
    let [stats, curves, gains, jaccard, policies] =
        [stats, curves, gains, jaccard, policies].map(|s| s.as_collection());
    let summaries = discovery::cover_summaries(
        counts.clone(),
        stats.clone().flat_map(|(h, o)| match o {
            SiteOut::Stats(s) => Some((h, s)),
            _ => None,
        }),
    );
    let summaries = summaries.join_map(names, |_, summary, site| CoverSummaryRow {
        site: site.clone(),
        summary: *summary,
    });
    let params = &ctx.plan.job.discovery;
    vec![
        sink::write_table(summaries, ctx),
        sink::write_table(discovery::cover_curve(curves), ctx),
        sink::write_table(discovery::global_cover(gains.concat(stats), params), ctx),
        sink::write_table(discovery::jaccard_histogram(jaccard), ctx),
        sink::write_table(discovery::policy_eval(policies), ctx),
        sink::write_table_from(discovery::new_sites(totals), ctx, 1),
        sink::write_table(discovery::site_cover(off_site, counts), ctx),
    ]
}

/// The change analysis (docs/change.md): the books' rows and counts, and the
/// revisit plan from the per-snapshot plan messages.
fn build_change<'s>(
    ledger: VecCollection<'s, Seq, LedgerOut>,
    groups: Stream<'s, Seq, Vec<(LedgerOut, Seq, isize)>>,
    plan: Stream<'s, Seq, Vec<(LedgerOut, Seq, isize)>>,
    ctx: &WorkerCtx,
) -> Vec<Stream<'s, Seq, Vec<()>>> {
    use change::ChangeAgg;
    let groups = groups.flat_map(|(o, _, _)| match o {
        LedgerOut::GroupChange(r) => Some(r),
        _ => None,
    });
    let counts = ledger.flat_map(|o| match o {
        LedgerOut::ChangeCount(k) => Some(k),
        _ => None,
    });
    let first = *ctx.plan.metas.keys().next().expect("a run has snapshots");
    let aggs = change::aggregates(counts, &ctx.plan.job.change, ctx.plan.meta(first).time);
    let (plan_rows, summaries) = revisit::revisit_plan(plan, ctx);
    vec![
        sink::write_snapshot_rows(groups, ctx),
        sink::write_table(
            aggs.clone().flat_map(|a| match a {
                ChangeAgg::Change(r) => Some(r),
                _ => None,
            }),
            ctx,
        ),
        sink::write_table(
            aggs.clone().flat_map(|a| match a {
                ChangeAgg::Lifespan(r) => Some(r),
                _ => None,
            }),
            ctx,
        ),
        sink::write_table(
            aggs.clone().flat_map(|a| match a {
                ChangeAgg::Unchanged(r) => Some(r),
                _ => None,
            }),
            ctx,
        ),
        sink::write_table(
            aggs.clone().flat_map(|a| match a {
                ChangeAgg::Poisson(r) => Some(r),
                _ => None,
            }),
            ctx,
        ),
        sink::write_table(
            aggs.flat_map(|a| match a {
                ChangeAgg::Freshness(r) => Some(r),
                _ => None,
            }),
            ctx,
        ),
        // Made in page-id order, a batch at a time: written as they come.
        sink::write_ordered_snapshot_rows(plan_rows, ctx),
        sink::write_table(summaries, ctx),
    ]
}

/// Splits a stream of updates into `N` streams by the kind (`0..N`) of each
/// datum, moving every update into exactly one: a stream with several
/// consumers hands each of them its own copy of all of it.
fn split_updates<'s, D: 'static, const N: usize>(
    updates: Stream<'s, Seq, Vec<(D, Seq, isize)>>,
    name: &str,
    kind: impl Fn(&D) -> usize + 'static,
) -> [Stream<'s, Seq, Vec<(D, Seq, isize)>>; N] {
    split::split_by_kind(updates, name, move |u: &(D, Seq, isize)| kind(&u.0))
}

/// Builds the whole dataflow over the routed input `records`; the returned probe
/// passes a snapshot once every table of it is written.
pub fn build<'s>(
    scope: Scope<'s, Seq>,
    records: Stream<'s, Seq, Vec<Record>>,
    ctx: &WorkerCtx,
) -> ProbeHandle<Seq> {
    let ledger = ledger_op::ledger(records, ctx);
    let analyses = &ctx.plan.job.analyses;
    // Split the per-snapshot messages off once: the rows are large. They are
    // messages of one snapshot each, not a collection.
    let [ledger, groups, plan, rank_nodes, echo_msgs, site_msgs] =
        split_updates(ledger.inner, "SplitLedgerOut", |o: &LedgerOut| match o {
            LedgerOut::GroupChange(_) => 1,
            LedgerOut::PlanPage(_) => 2,
            LedgerOut::RankPrev(..) => 3,
            LedgerOut::Echo(_) => 4,
            LedgerOut::StartEdge(_) | LedgerOut::NewEdge(_) | LedgerOut::Restored(_) => 5,
            _ => 0,
        });
    let ledger: VecCollection<'s, Seq, LedgerOut> = ledger.as_collection();
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
        sink::write_table(totals.clone(), ctx),
    ];
    let mut plan = plan;
    if analyses.contains(&Analysis::Rankmass) {
        let ranks = pagerank::pagerank(rank_nodes, ctx);
        // A worker's `pagerank` rows come in its nodes' order (by host), a
        // batch at a time, and are written as they come.
        done.push(sink::write_ordered_snapshot_rows(ranks.rows, ctx));
        done.push(sink::write_snapshot_rows(ranks.runs, ctx));
        done.push(sink::write_snapshot_rows(ranks.hosts, ctx));
        // The `rankmass_order` rows are written inside the stage, a worker's
        // as worker 0 sends it the ranks of its downloads.
        done.push(sink::write_snapshot_rows(ranks.curves, ctx));
        done.push(sink::write_snapshot_rows(ranks.summaries, ctx));
        // The revisit plan weighs pages by their PageRank, and so waits for it.
        plan = plan.concat(ranks.weights);
    }
    if analyses.contains(&Analysis::Change) {
        done.extend(build_change(ledger.clone(), groups, plan, ctx));
    }
    if analyses.contains(&Analysis::Discovery) {
        done.extend(build_discovery(
            ledger, site_msgs, counts, totals, names, ctx,
        ));
    }
    if analyses.contains(&Analysis::Echo) {
        let e = echo::echo(echo_msgs, ctx);
        done.push(sink::write_snapshot_rows(e.sources, ctx));
        done.push(sink::write_snapshot_rows(e.estimates, ctx));
        done.push(sink::write_snapshot_rows(e.plan, ctx));
        done.push(sink::write_snapshot_rows(e.cover, ctx));
    }
    let (probe, _) = scope.concatenate(done).probe();
    probe
}

#[cfg(test)]
mod tests {
    /// Every item meets its own lookup, in order, across the blocks' edges
    /// and for an empty input.
    #[test]
    fn lookup_blocks_pair_each_item_with_its_lookup_in_order() {
        for n in [
            0,
            1,
            super::LOOKUP_BLOCK - 1,
            super::LOOKUP_BLOCK,
            2 * super::LOOKUP_BLOCK + 7,
        ] {
            let mut got = Vec::new();
            super::in_lookup_blocks(
                0..n,
                |b: &[usize], out| out.extend(b.iter().map(|&i| i * 3 + 1)),
                |i, v| got.push((i, v)),
            );
            let want: Vec<(usize, usize)> = (0..n).map(|i| (i, i * 3 + 1)).collect();
            assert_eq!(got, want, "{n} items");
        }
    }
}
