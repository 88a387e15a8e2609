//! ECHO's greedy cover of new pages by content sources (`source_cover`): how
//! few sources reveal most of the new content (Lefortier et al., Section 3: 3k
//! sources cover 80% of a week's new pages).
//!
//! The sets are the new pages each source revealed within the click horizon (the
//! sources stage's `young` pages). Greedy over the union of disjoint groups of
//! sources is the merge of the groups' own greedy trajectories by gain
//! (`algo::greedy::merge_sites`), because a pick in one group changes no gain in
//! another. So the cover runs per group, on the group's worker, and only the
//! picks meet on worker 0:
//!
//! 1. **Groups**, on worker 0: hosts whose sources revealed a common page (the
//!    pages stage reports such pairs of hosts; they are rare, as sources mostly
//!    reveal their own host's pages) are joined by union-find; each joined host
//!    learns its group, the smallest host id of its component. Every other host
//!    is a group of its own.
//! 2. **Sets**, on the source's host worker: each source's set is sent to its
//!    group's worker (for a host alone, the worker it is on).
//! 3. **Trajectories**, on the group's worker: the group's greedy cover.
//! 4. **Merge**, on worker 0: the groups' picks merged by gain, ties by URL.
//!
//! Only the picks (one per source that adds a page) and the rare shared host
//! pairs reach one worker, never the sets.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use timely::dataflow::operators::vec::Map;
use timely::dataflow::operators::Concat;
use timely::dataflow::Stream;

use crate::algo::disjoint_sets::DisjointSets;
use crate::algo::greedy::{greedy_cover, merge_sites, CoverStep};
use crate::dataflow::echo::{epoch_operator, Emit, EpochStage};
use crate::dataflow::WorkerCtx;
use crate::model::{HostId, PageId, Seq};
use crate::output::echo::SourceCoverRow;
use crate::placement::Placement;

/// A source and the new pages it revealed within the window.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct CoverSet {
    pub host: HostId,
    pub url: Arc<str>,
    pub pages: Vec<PageId>,
}

/// Input of the sets stage: a source's set, or its host's group.
#[derive(Clone, Debug, Serialize, Deserialize)]
enum SetsIn {
    Sources(Box<CoverSet>),
    Group { host: HostId, group: HostId },
}

/// One group's trajectory, for the merge.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct GroupPicks {
    group: HostId,
    /// `(url, gain)` in pick order.
    picks: Vec<(String, u64)>,
}

/// Builds the four stages over the sources' sets (from the sources stage) and
/// the pairs of hosts whose sources revealed a common page (from the pages
/// stage); see the module docs.
pub fn source_cover<'s>(
    sets: Stream<'s, Seq, Vec<Box<CoverSet>>>,
    shared: Stream<'s, Seq, Vec<(HostId, HostId)>>,
    ctx: &WorkerCtx,
) -> Stream<'s, Seq, Vec<SourceCoverRow>> {
    let groups = epoch_operator(shared, |_, _| 0, "EchoCoverGroups", ctx, Groups);
    let sets_in = sets.map(SetsIn::Sources).concat(groups);
    let sets = epoch_operator(
        sets_in,
        |p: &Placement, m: &SetsIn| match m {
            SetsIn::Sources(s) => p.route(s.host),
            SetsIn::Group { host, .. } => p.route(*host),
        },
        "EchoCoverSets",
        ctx,
        Sets,
    );
    let picks = epoch_operator(
        sets,
        |p: &Placement, (group, _): &(HostId, Box<CoverSet>)| p.route(*group),
        "EchoCoverGreedy",
        ctx,
        Trajectories,
    );
    epoch_operator(picks, |_, _| 0, "EchoCoverMerge", ctx, Merge)
}

/// Stage 1: the groups of hosts that share revealed pages.
struct Groups;

impl EpochStage for Groups {
    type In = (HostId, HostId);
    type Out = SetsIn;

    fn advance(
        &mut self,
        _: Seq,
        mut pairs: Vec<(HostId, HostId)>,
        _: &WorkerCtx,
        out: &mut Emit<SetsIn>,
    ) {
        pairs.sort_unstable();
        pairs.dedup();
        let mut hosts: Vec<HostId> = pairs.iter().flat_map(|&(a, b)| [a, b]).collect();
        hosts.sort_unstable();
        hosts.dedup();
        let index = |h: HostId| hosts.binary_search(&h).expect("listed") as u32;
        let mut sets = DisjointSets::new(hosts.len());
        for &(a, b) in &pairs {
            sets.union(index(a), index(b));
        }
        // The group's name is its smallest host: the first of its members in order.
        let mut name: BTreeMap<u32, HostId> = BTreeMap::new();
        for (i, &h) in hosts.iter().enumerate() {
            let root = sets.find(i as u32);
            let group = *name.entry(root).or_insert(h);
            out.push(SetsIn::Group { host: h, group });
        }
    }
}

/// Stage 2: every source's set to its group's worker.
struct Sets;

impl EpochStage for Sets {
    type In = SetsIn;
    type Out = (HostId, Box<CoverSet>);

    fn advance(&mut self, _: Seq, msgs: Vec<SetsIn>, _: &WorkerCtx, out: &mut Emit<Self::Out>) {
        let mut group_of: BTreeMap<HostId, HostId> = BTreeMap::new();
        let mut sets = Vec::new();
        for m in msgs {
            match m {
                SetsIn::Sources(s) => sets.push(s),
                SetsIn::Group { host, group } => {
                    group_of.insert(host, group);
                }
            }
        }
        out.extend(sets.into_iter().map(|s| {
            let group = group_of.get(&s.host).copied().unwrap_or(s.host);
            (group, s)
        }));
    }
}

/// Stage 3: each group's greedy trajectory.
struct Trajectories;

impl EpochStage for Trajectories {
    type In = (HostId, Box<CoverSet>);
    type Out = GroupPicks;

    fn advance(&mut self, _: Seq, msgs: Vec<Self::In>, _: &WorkerCtx, out: &mut Emit<GroupPicks>) {
        let mut groups: BTreeMap<HostId, Vec<(Arc<str>, Vec<PageId>)>> = BTreeMap::new();
        for (group, set) in msgs {
            let set = *set;
            groups.entry(group).or_default().push((set.url, set.pages));
        }
        for (group, sets) in groups {
            let picks = greedy_cover(&sets)
                .iter()
                .map(|s| (sets[s.page].0.to_string(), s.gain))
                .collect();
            out.push(GroupPicks { group, picks });
        }
    }
}

/// Stage 4: the groups' picks merged into the cover of all sources.
struct Merge;

impl EpochStage for Merge {
    type In = GroupPicks;
    type Out = SourceCoverRow;

    fn advance(
        &mut self,
        _: Seq,
        mut msgs: Vec<GroupPicks>,
        _: &WorkerCtx,
        out: &mut Emit<SourceCoverRow>,
    ) {
        // Groups in a fixed order, whatever the order of arrival.
        msgs.sort_unstable_by_key(|g| g.group);
        let trajectories: Vec<(Vec<CoverStep>, Vec<&str>)> = msgs
            .iter()
            .map(|g| {
                let mut covered = 0;
                let steps = g
                    .picks
                    .iter()
                    .enumerate()
                    .map(|(i, (_, gain))| {
                        covered += gain;
                        CoverStep {
                            rank: i as u32 + 1,
                            page: i,
                            gain: *gain,
                            covered,
                            overhead: (i + 1) as f64 / covered as f64,
                        }
                    })
                    .collect();
                (steps, g.picks.iter().map(|p| p.0.as_str()).collect())
            })
            .collect();
        // Groups share no page, so the window's pages are the sum of theirs.
        let total: u64 = msgs.iter().flat_map(|g| &g.picks).map(|p| p.1).sum();
        let mut covered = 0;
        for (rank, (group, step)) in merge_sites(&trajectories).into_iter().enumerate() {
            let (url, gain) = &msgs[group].picks[step];
            covered += gain;
            out.push(SourceCoverRow {
                rank: rank as i64 + 1,
                url: url.clone(),
                gain: *gain as i64,
                covered_fraction: (covered as f64 / total as f64).to_bits(),
            });
        }
    }
}
