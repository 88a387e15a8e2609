//! The foundation statistics every analysis reuses: per-host and per-snapshot counts.

use differential_dataflow::VecCollection;

use crate::model::{HostFact, HostId, HostKey, Seq};
use crate::output::rows::{HostCounts, HostSnapshotRow, SnapshotRow};

/// Returns `(host, counts)` for every host with a fact in the snapshot, accumulated
/// from the ledger's deltas (including hosts only linked to).
pub fn host_counts<'s>(
    facts: VecCollection<'s, Seq, HostKey<HostFact>>,
) -> VecCollection<'s, Seq, (HostId, HostCounts)> {
    // A host's facts arrive as a handful of (fact, count) values: O(1) per host.
    facts
        .map(|k| (k.host, k.key))
        .reduce_named("HostCounts", |_host, input, output| {
            let mut counts = HostCounts::default();
            for (fact, n) in input {
                counts.add(**fact, *n as i64);
            }
            output.push((counts, 1isize));
        })
}

/// Returns `(host, row)` for every host the snapshot crawled, with its name.
pub fn host_snapshots<'s>(
    counts: VecCollection<'s, Seq, (HostId, HostCounts)>,
    names: VecCollection<'s, Seq, (HostId, String)>,
) -> VecCollection<'s, Seq, (HostId, HostSnapshotRow)> {
    counts
        .filter(|(_, c)| c.crawled())
        .join_map(names, |host, counts, name| {
            (
                *host,
                HostSnapshotRow {
                    host: name.clone(),
                    counts: *counts,
                },
            )
        })
}

/// Returns the snapshot's single row of sums over hosts.
///
/// Only per-host aggregates travel to the one worker that sums them, never pages
/// or links.
pub fn snapshot_totals<'s>(
    hosts: VecCollection<'s, Seq, HostCounts>,
) -> VecCollection<'s, Seq, SnapshotRow> {
    hosts
        .map(|counts| ((), counts))
        .reduce_named("SnapshotTotals", |_unit, input, output| {
            let mut row = SnapshotRow::default();
            for (counts, n) in input {
                row.add(counts, *n as i64);
            }
            output.push((row, 1isize));
        })
        .map(|((), row)| row)
}
