//! Personalized PageRank over all workers (docs/rankmass.md, `algo::pagerank`).
//!
//! Each worker holds the nodes of its hosts with their outlinks, read from its
//! own ledger once the ledger has folded the snapshot ([`Ledger::rank_nodes`]).
//! Per snapshot, in a timely loop whose inner time counts rounds:
//! - round 0: every worker sends each worker its distinct destinations there, in
//!   a fixed order, with their edge counts; the owner counts in-links, adds
//!   destinations it did not list (kept links of a partial snapshot), and maps
//!   the order to its own positions once;
//! - round 1: every worker broadcasts its numbers of nodes, trusted pages and edges;
//! - then one step per round: each worker sends each worker one dense array,
//!   the sums of its edges' shares per destination in that order (no ids, no
//!   lookups), and broadcasts its dangling mass and its part of the step's L1
//!   change; then it sweeps its nodes, host by host, each adding the shares
//!   from other hosts (as of the step's start) to those from its own host (as
//!   the sweep leaves them), and scales the host's new ranks to its mass
//!   balance (docs/rankmass.md). A host's pages are all on one worker, and
//!   every worker adds the same integers, so all stop at the same round with
//!   the same vector, on any number of workers.
//!
//! The vector of the last snapshot is kept for the next snapshot's warm start and
//! written to `_state/rank-<worker>.bin` after the run's last snapshot; the ledger
//! hands it back at the restore epoch of the next run.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::{Exchange, Pipeline};
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::vec::Map;
use timely::dataflow::operators::{Capability, ConnectLoop, Enter, Feedback, Leave};
use timely::dataflow::Stream;
use timely::order::Product;

use crate::algo::pagerank::{
    is_main_page, tolerance_units, trust_share, Accelerated, Acceleration, Damping, Extrapolate,
    Gram, HostMass, LinkFactor, Relaxation, ONE,
};
use crate::algo::url_order::LocalOrder;
use crate::dataflow::rankmass::{
    CurvePart, GraphPart, Keyed, NodesPart, OrderRows, Orders, Placed,
};
use crate::dataflow::sink::SnapshotPart;
use crate::dataflow::split::split_by_kind;
use crate::dataflow::{in_lookup_blocks, WorkerCtx, ROWS_PER_ACTIVATION};
use crate::error::OutputError;
use crate::ingest::TrustWeights;
use crate::job::Analysis;
use crate::ledger::{Ledger, LedgerOut};
use crate::model::{HostId, PageId, Seq};
use crate::output::rankmass::{
    HostRankRow, OrderingKey, PageRankRow, PageRankRunRow, RankmassCurveRow, RankmassOrderRow,
    RankmassSummaryRow,
};
use crate::placement::Placement;
use crate::state::{self, StateRecord, StateWriter};

type FastMap<K, V> = HashMap<K, V, foldhash::fast::FixedState>;
type Time = Product<Seq, u32>;

/// What workers send each other in a round; `to` is the receiving worker's
/// index (timely routes `to % peers`), `from` the sender's.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Msg {
    /// Round 0: the sender's destinations on the receiver's hosts, in the order
    /// of its later `Mass` arrays, with their hosts and edge counts.
    Edges {
        to: u64,
        from: u32,
        pages: Vec<(PageId, HostId, u32)>,
    },
    /// A step: the shares into those destinations, `stride` values each (the
    /// vectors still iterating, primary first).
    Mass { to: u64, from: u32, mass: Vec<u64> },
    /// A worker's sums, one copy to each worker. Boxed, as are the graph and
    /// nodes below: `Sums` is ten 128-bit sums, and every `Out` of the
    /// operator, each of a snapshot's rows included, would carry its size.
    Sums { to: u64, sums: Box<Sums> },
    /// Orderings: a worker's histogram of its candidates' `rm` (its nonzero
    /// buckets), on a log scale or of a byte, and with a byte their smallest
    /// and largest `rm` (`u64::MAX` and 0 if none).
    Hist {
        to: u64,
        counts: Vec<(u16, u64)>,
        lo: u64,
        hi: u64,
    },
    /// Orderings: a worker's largest `rm` in the bucket of the window's
    /// threshold, as many as are still needed, with their places in URL order.
    Values { to: u64, values: Vec<(u64, u32)> },
    /// Orderings: the smallest places in URL order (`Part::url_rank`) of a
    /// worker's candidates tied at the window's threshold.
    Ties { to: u64, places: Vec<u32> },
    /// Orderings, to every other worker, with the graph's sizes: the
    /// prefixes of the sender's URLs with their counts, in order, from which
    /// each worker ranks its URLs among all (`algo::url_order`).
    Prefixes {
        to: u64,
        from: u32,
        prefixes: Vec<(String, u32)>,
    },
    /// Orderings, to worker 0 for the single-page RankMass: the sender's
    /// nodes.
    Nodes {
        to: u64,
        from: u32,
        nodes: Box<NodesPart>,
    },
    /// Orderings, to worker 0: the sender's outlinks (its `Part` CSR, slot runs
    /// and the positions of every sender's slots here), for the single-page
    /// RankMass.
    Graph {
        to: u64,
        from: u32,
        graph: Box<GraphPart>,
    },
    /// Orderings, to every worker: evenly spaced keys of the sender's items
    /// of a sort, with how many items each stands for
    /// (`algo::sample_sort::samples`).
    Samples { to: u64, samples: Vec<(u128, u64)> },
    /// Orderings: the sender's items of a sort in the receiver's range of
    /// keys.
    Route { to: u64, items: Vec<Keyed> },
    /// Orderings, to every worker: how many items of a sort the sender holds
    /// after the routing, and the sum of their PageRank.
    Count {
        to: u64,
        from: u32,
        count: u64,
        sum: Box<u128>,
    },
    /// Orderings, to worker 0: the sender's sums of an ordering's curve.
    Curve { to: u64, part: Box<CurvePart> },
    /// Orderings: the receiver's downloads of a numbered ordering, a run of
    /// their ranks in rank order, for its `rankmass_order` rows.
    Rows {
        to: u64,
        key: OrderingKey,
        placed: Vec<Placed>,
    },
}

impl Msg {
    fn to(&self) -> u64 {
        match self {
            Msg::Edges { to, .. }
            | Msg::Mass { to, .. }
            | Msg::Sums { to, .. }
            | Msg::Hist { to, .. }
            | Msg::Ties { to, .. }
            | Msg::Values { to, .. }
            | Msg::Prefixes { to, .. }
            | Msg::Nodes { to, .. }
            | Msg::Graph { to, .. }
            | Msg::Samples { to, .. }
            | Msg::Route { to, .. }
            | Msg::Count { to, .. }
            | Msg::Curve { to, .. }
            | Msg::Rows { to, .. } => *to,
        }
    }
}

/// One message to every worker.
pub(crate) fn broadcast(peers: usize, out: &mut Vec<Out>, msg: impl Fn(u64) -> Msg) {
    out.extend((0..peers as u64).map(|to| Out::Msg(msg(to))));
}

/// Numbers every worker adds up; integers, so the order does not matter.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct Sums {
    pub nodes: u64,
    pub trusted: u64,
    pub edges: u64,
    /// The previous snapshot's rank of this snapshot's nodes (the warm start's
    /// mass before it is scaled to 1).
    pub start: u128,
    /// The nodes the previous snapshot did not have, as weights of each trust
    /// vector `choose_trust` may pick: `trust.parquet`'s, main pages, all.
    pub fresh: [u128; 3],
    /// Rank of the pages without outlinks, per vector (orderings: the `rm`
    /// they pushed, in the first).
    pub dangling: [u128; 2],
    /// The last step's L1 change, per vector.
    pub change: [u128; 2],
    /// Per vector, the Gram sums of an extrapolation's differences (see
    /// `algo::pagerank::Accelerated::extrapolation_step`), when the last step
    /// added them up.
    pub gram: [Gram; 2],
    /// Nodes listed in `trust.parquet`, and the sum of their weights.
    pub listed: u64,
    pub listed_weight: u128,
    /// Orderings: the `rm` a pass pushed, and the pages a round downloaded.
    pub pushed: u128,
    pub selected: u64,
}

impl Sums {
    fn add(&mut self, o: &Sums) {
        self.nodes += o.nodes;
        self.trusted += o.trusted;
        self.edges += o.edges;
        self.start += o.start;
        for (a, b) in self.fresh.iter_mut().zip(o.fresh) {
            *a += b;
        }
        for v in 0..2 {
            self.dangling[v] += o.dangling[v];
            self.change[v] += o.change[v];
            self.gram[v].merge(&o.gram[v]);
        }
        self.pushed += o.pushed;
        self.listed += o.listed;
        self.listed_weight += o.listed_weight;
        self.selected += o.selected;
    }
}

/// The operator's output, one stream per kind. A snapshot's per-page rows
/// pass through batches of these, so the per-page kinds set the size (see the
/// test below): the few rows of a snapshot's runs, curves and summaries are
/// boxed, and a page's revisit weight is a plain triple until it leaves.
pub enum Out {
    Msg(Msg),
    Row(PageRankRow),
    Run(Box<PageRankRunRow>),
    /// A page's rank as its revisit weight, at snapshot `Seq`.
    Weight((PageId, u64, Seq)),
    Host(HostRankRow),
    Curve(Box<RankmassCurveRow>),
    Summary(Box<RankmassSummaryRow>),
}

impl Out {
    const KINDS: usize = 7;

    /// Its output stream, in declaration order.
    fn kind(&self) -> usize {
        match self {
            Out::Msg(_) => 0,
            Out::Row(_) => 1,
            Out::Run(_) => 2,
            Out::Weight(_) => 3,
            Out::Host(_) => 4,
            Out::Curve(_) => 5,
            Out::Summary(_) => 6,
        }
    }
}

/// One worker's part of a snapshot's graph.
#[derive(Default)]
pub struct Part {
    pub pages: Vec<PageId>,
    hosts: Vec<HostId>,
    index: FastMap<PageId, u32>,
    /// Outlinks as a CSR over the nodes the ledger listed (nodes added later have
    /// none): each edge names a slot, a distinct destination. Slots are ordered by
    /// their owner worker, then page; `runs[w]` is worker `w`'s range of slots.
    pub offsets: Vec<u32>,
    pub targets: Vec<u32>,
    pub slots: Vec<(PageId, HostId)>,
    pub runs: Vec<std::ops::Range<usize>>,
    /// Per sending worker, the positions of its slot order here.
    pub inbound: Vec<Vec<u32>>,
    in_links: Vec<u32>,
    /// Each node's weight in the trust vector (0: not trusted), set once the
    /// graph's sizes say which vector applies (see `Phase::Sizes`).
    pub trust: Vec<u64>,
    /// The trusted nodes with their weights (the nonzero part of `trust`), the
    /// nodes the jump reaches, listed with it.
    pub trusted: Vec<(u32, u64)>,
    /// Whether it is its host's main page, and its weight in `trust.parquet`
    /// (empty without the file: read it with [`Self::listed`]).
    main: Vec<bool>,
    listed: Vec<u64>,
    /// With the orderings: each node's URL in the order of every worker's
    /// URLs (its rank there), once the graph's sizes are in.
    pub url_rank: Vec<u32>,
}

impl Part {
    /// The part of snapshot `t`'s graph on this worker, read from its ledger.
    fn build(t: Seq, ledger: &Ledger, placement: &Placement, file: Option<&TrustWeights>) -> Part {
        let peers = placement.peers;
        // Each node as `(host, page, its outlinks' place in the ledger)`.
        // A host's pages side by side, and the slots in the order the edges first
        // name them: most links stay within their host, so a step's scatter into
        // the slots and the owner's into its nodes stay within a small window of
        // memory rather than jumping across all of it.
        type Node = (HostId, PageId, u32);
        crate::memory::trace(|| format!("snapshot {t}: PageRank part: starts"));
        let mut nodes: Vec<Node> = ledger.rank_nodes(t);
        nodes.sort_unstable();
        crate::memory::trace(|| format!("snapshot {t}: PageRank part: nodes"));
        let outlinks = |source: u32| {
            (source != u32::MAX)
                .then(|| ledger.rank_outlinks(source))
                .into_iter()
                .flatten()
        };
        let mut p = Part::default();
        let mut slot_of: FastMap<PageId, u32> = FastMap::default();
        // Per slot, its edges from pages of its own host.
        let mut within: Vec<u32> = Vec::new();
        // Two passes over the ledger's links: the slots and their counts
        // first, then the edges in the sweep's order, looking their slots up
        // again. Kept from the first pass and copied into that order, the
        // edges were held twice (80 MB on bench snapshot 9 with 1 worker,
        // 107 while the first copy grew by doubling), at the run's peak.
        let mut edges = 0usize;
        for n in &nodes {
            for (dst, host) in outlinks(n.2) {
                let next = p.slots.len() as u32;
                let s = *slot_of.entry(dst).or_insert_with(|| {
                    p.slots.push((dst, host));
                    within.push(0);
                    next
                });
                within[s as usize] += u32::from(host == n.0);
                edges += 1;
            }
        }
        crate::memory::trace(|| format!("snapshot {t}: PageRank part: slots"));
        // Within each host, the pages its other pages link to most come first
        // (ties by page): the sweep visits a host's pages in this order
        // (Gauss-Seidel), so the hubs' new ranks reach the pages after them
        // within the step, and pages with equally many in-links sit side by side,
        // so the loop over each page's in-links ends where the branch predictor
        // expects. On bench snapshot 9 this took a warm solve from 23 steps to
        // 22 and each step from 55 to 38 ms (BENCHMARKS.md, session 21).
        //
        // The nodes take that order where they lie, each with its count in
        // place of nothing (the same 24 bytes), rather than beside a list of
        // the order (30 MB on bench snapshot 9 with 1 worker, at the part's
        // peak).
        let in_host = |page: &PageId| slot_of.get(page).map_or(0, |&s| within[s as usize]);
        let mut sweep: Vec<(HostId, std::cmp::Reverse<u32>, PageId, u32)> = nodes
            .into_iter()
            .map(|(host, page, source)| (host, std::cmp::Reverse(in_host(&page)), page, source))
            .collect();
        sweep.sort_unstable();
        p.offsets.reserve_exact(sweep.len() + 1);
        p.targets.reserve_exact(edges);
        p.reserve_nodes(sweep.len(), file.is_some());
        p.offsets.push(0);
        for &(host, _, page, source) in &sweep {
            p.targets
                .extend(outlinks(source).map(|(dst, _)| slot_of[&dst]));
            p.offsets.push(p.targets.len() as u32);
            let url = ledger
                .url_of(page)
                .expect("the ledger knows the nodes it lists");
            p.push_node(page, host, is_main_page(url), file);
        }
        drop((slot_of, sweep));
        // Indexed once the slots' map and the sweep are gone, not beside them
        // at the set-up's peak: 35 MiB lower resident peak on bench snapshot 9
        // with 1 worker.
        p.index.reserve(p.pages.len());
        p.index.extend(
            p.pages
                .iter()
                .enumerate()
                .map(|(i, &page)| (page, i as u32)),
        );
        crate::memory::trace(|| format!("snapshot {t}: PageRank part: edges"));
        // Order the slots by owner, then first use, and renumber the edges.
        let mut order: Vec<u32> = (0..p.slots.len() as u32).collect();
        order.sort_by_key(|&k| placement.owner(p.slots[k as usize].1));
        let mut renumber = vec![0u32; order.len()];
        for (new, &old) in order.iter().enumerate() {
            renumber[old as usize] = new as u32;
        }
        p.slots = order.iter().map(|&k| p.slots[k as usize]).collect();
        p.targets
            .iter_mut()
            .for_each(|s| *s = renumber[*s as usize]);
        let mut start = 0;
        p.runs = (0..peers)
            .map(|w| {
                let end = start + p.slots[start..].partition_point(|s| placement.owner(s.1) == w);
                let r = start..end;
                start = end;
                r
            })
            .collect();
        p.inbound = vec![Vec::new(); peers];
        p
    }

    /// The number of slots (distinct destinations); the runs cover them all.
    pub fn slot_count(&self) -> usize {
        self.runs.last().map_or(0, |r| r.end)
    }

    /// Lets go of what only the graph's set-up looks up, a node by its page
    /// and a slot's page and host: the solve and the orderings need neither
    /// (54 MiB less heap after bench snapshot 9's solve with 1 worker).
    fn release_lookups(&mut self) {
        self.index = FastMap::default();
        self.slots = Vec::new();
    }

    /// Each slot's number of edges.
    fn slot_counts(&self) -> Vec<u32> {
        let mut counts = vec![0u32; self.slots.len()];
        for &s in &self.targets {
            counts[s as usize] += 1;
        }
        counts
    }

    /// The slots of `run` with their edge counts, as [`Msg::Edges`] lists them.
    fn listing(&self, run: &std::ops::Range<usize>, counts: &[u32]) -> Vec<(PageId, HostId, u32)> {
        run.clone()
            .map(|k| (self.slots[k].0, self.slots[k].1, counts[k]))
            .collect()
    }

    /// Worker `me`'s own slots with their edge counts, as another worker's
    /// [`Msg::Edges`] would list them. The counts are made again here rather
    /// than kept from [`Self::announce`]: one pass over the edges, against a
    /// vector per slot held through the rounds in between.
    fn own_slots(&self, me: usize) -> Vec<(PageId, HostId, u32)> {
        match self.runs.get(me).filter(|r| !r.is_empty()) {
            Some(own) => self.listing(own, &self.slot_counts()),
            None => Vec::new(),
        }
    }

    /// Round 0: the slots, with their edge counts, to their owners. Not to
    /// this worker itself: it reads its own from the part when the round's
    /// messages arrive ([`Self::own_slots`]). Sent, they were a second copy of
    /// the slots (33 MB on bench snapshot 9 with 1 worker), held in the
    /// channel through discovery's site rounds, where a run's memory peaks.
    fn announce(&self, from: usize, out: &mut Vec<Out>) {
        let counts = self.slot_counts();
        for (w, run) in self.runs.iter().enumerate() {
            if run.is_empty() || w == from {
                continue;
            }
            let pages = self.listing(run, &counts);
            out.push(Out::Msg(Msg::Edges {
                to: w as u64,
                from: from as u32,
                pages,
            }));
        }
    }

    /// Room for `n` nodes in every per-node vector. Grown by
    /// doubling instead, they overshot and held old and new copies at once,
    /// at the peak of the part's set-up (beside the nodes, the slots and the
    /// edges): 20 MiB more heap on bench snapshot 9 with 1 worker.
    fn reserve_nodes(&mut self, n: usize, listed: bool) {
        self.pages.reserve_exact(n);
        self.hosts.reserve_exact(n);
        self.main.reserve_exact(n);
        if listed {
            self.listed.reserve_exact(n);
        }
        self.trust.reserve_exact(n);
        self.in_links.reserve_exact(n);
    }

    /// Adds a node, and indexes it.
    fn add(&mut self, page: PageId, host: HostId, main: bool, file: Option<&TrustWeights>) -> u32 {
        let i = self.push_node(page, host, main, file);
        self.index.insert(page, i);
        i
    }

    /// Adds a node without indexing it.
    fn push_node(
        &mut self,
        page: PageId,
        host: HostId,
        main: bool,
        file: Option<&TrustWeights>,
    ) -> u32 {
        let i = self.pages.len() as u32;
        self.pages.push(page);
        self.hosts.push(host);
        self.main.push(main);
        // Without a trust file every weight is 0, and the vector stays empty
        // (`Self::listed`): 11 MB on bench snapshot 9 with 1 worker.
        if let Some(f) = file {
            self.listed.push(f.get(&page).copied().unwrap_or(0));
        }
        self.trust.push(0);
        self.in_links.push(0);
        i
    }

    /// Node `i`'s weight in `trust.parquet` (0: not listed, or no file).
    fn listed(&self, i: usize) -> u64 {
        self.listed.get(i).copied().unwrap_or(0)
    }

    /// Renumbers this worker's own run of slots in the order of the nodes they
    /// are (known once round 0 has placed them), so that a scatter into them
    /// over a host's links stays within the host's nodes, as the sweep's order
    /// keeps them side by side, and adding the run into the nodes goes in
    /// order. The first use's order, which round 0 needs, spread a host's
    /// slots wherever other hosts had first named its pages.
    fn own_slots_in_node_order(&mut self, me: usize) {
        let Some(own) = self.runs.get(me).cloned() else {
            return;
        };
        let positions = &self.inbound[me];
        // Slots of pages no worker knows (`u32::MAX`) go last.
        let mut order: Vec<u32> = (0..own.len() as u32).collect();
        order.sort_unstable_by_key(|&k| (positions[k as usize], k));
        let mut renumber = vec![0u32; own.len()];
        for (new, &old) in order.iter().enumerate() {
            renumber[old as usize] = (own.start + new) as u32;
        }
        for t in &mut self.targets {
            if own.contains(&(*t as usize)) {
                *t = renumber[*t as usize - own.start];
            }
        }
        self.inbound[me] = order.iter().map(|&k| positions[k as usize]).collect();
        let slots: Vec<(PageId, HostId)> = order
            .iter()
            .map(|&k| self.slots[own.start + k as usize])
            .collect();
        self.slots[own].copy_from_slice(&slots);
    }

    /// Node `i`'s URL. The part holds none of its own: the ledger of this
    /// worker knows every node's (the listed ones are its pages, and a link
    /// target becomes a node only where its host's ledger is), and a URL never
    /// changes once known, so a copy per node (80 MB on bench snapshot 9) would
    /// only repeat it.
    pub fn url<'l>(&self, ledger: &'l Ledger, i: usize) -> &'l str {
        ledger
            .url_of(self.pages[i])
            .expect("the ledger knows every node of its worker's part")
    }

    /// The URLs of nodes `nodes`, pushed to `out` in order, looked up
    /// together ([`Ledger::urls_of`]).
    pub fn urls<'l>(
        &'l self,
        ledger: &'l Ledger,
        nodes: impl IntoIterator<Item = usize>,
        out: &mut Vec<&'l str>,
    ) {
        let mut found = Vec::new();
        ledger.urls_of(nodes.into_iter().map(|i| &self.pages[i]), &mut found);
        out.extend(
            found
                .into_iter()
                .map(|u| u.expect("the ledger knows every node of its worker's part")),
        );
    }

    /// The name of node `i`'s host (its site, as its URL marks it), which
    /// the ledger knows as it knows the URL.
    pub fn host_name<'l>(&self, ledger: &'l Ledger, i: usize) -> &'l str {
        ledger
            .host_name(self.hosts[i])
            .expect("the ledger knows the host of every node of its worker's part")
    }

    pub fn out_degree(&self, i: usize) -> u32 {
        if i + 1 < self.offsets.len() {
            self.offsets[i + 1] - self.offsets[i]
        } else {
            0
        }
    }
}

/// A node's edges split by where they lead. Edges into this worker's own nodes
/// are kept by their target, as lists of source nodes, so a step gathers each
/// node's mass from its in-neighbours' shares (reads from scattered places, a
/// sequential write) rather than scattering into it (a read, an add and a
/// write at a scattered place per edge). Those within a host are listed apart:
/// a step sweeps each host's pages in order and reads their sources' shares as
/// the sweep leaves them (Gauss-Seidel within the host), while edges between
/// hosts carry the shares of the step's start, wherever the hosts live, so the
/// iterates do not depend on how hosts are spread over workers. Edges into
/// other workers' slots are kept by source, and their mass is scattered and
/// sent. With one worker every edge is local and a step sends nothing.
#[derive(Default)]
struct Split {
    /// Edges from nodes of this worker into nodes of another host, as
    /// `(source, target)` in target order. A flat list rather than each
    /// target's list of sources: most nodes have zero to two such in-links, and
    /// a loop per node mispredicted the end of nearly every one (a step of
    /// bench snapshot 9 took 38 ms with it, 33 ms without; 1 worker).
    cross: Vec<(u32, u32)>,
    /// In-neighbours in the same host.
    host_offsets: Vec<u32>,
    host_sources: Vec<u32>,
    remote_offsets: Vec<u32>,
    /// Other workers' slots, numbered without this worker's own run (see
    /// [`Split::remote_run`]), so a step's scatter buffer holds nothing unused.
    remote_targets: Vec<u32>,
    /// This worker's own run of slots, and the number of the others.
    own: std::ops::Range<usize>,
    remote_slots: usize,
    /// The runs of listed nodes (those the ledger sent, with their outlinks)
    /// of one host each: run `k` is `blocks[k]..blocks[k + 1]`. The last run
    /// holds the nodes added as link targets, which are in no host's balance.
    blocks: Vec<u32>,
    /// Each listed node's outlinks to listed nodes of its host.
    within_out: Vec<u32>,
    /// The nodes with edges into other workers' slots.
    remote_nodes: Vec<u32>,
    /// Each node's share factor `d / c` (0: no outlinks).
    factor: Vec<LinkFactor>,
}

impl Split {
    fn build(p: &Part, me: usize, d: Damping) -> Split {
        let own = p.runs.get(me).cloned().unwrap_or(0..0);
        let positions = &p.inbound[me];
        let n = p.pages.len();
        let mut s = Split {
            remote_offsets: vec![0],
            remote_slots: p.slot_count() - own.len(),
            own: own.clone(),
            ..Split::default()
        };
        // The local edges' targets, between hosts and within one, as CSRs of
        // each target's sources (ascending) by a counting sort in two passes
        // over the part's edges: gathered first as `(source, target)` pairs
        // (8 bytes an edge, 80 MB on bench snapshot 9 with 1 worker, and as
        // much again while a pair list doubled), they were the peak of the
        // solve.
        let listed = p.offsets.len().saturating_sub(1);
        let target = |i: usize, slot: u32| -> Option<(u32, bool)> {
            if !own.contains(&(slot as usize)) {
                return None;
            }
            // A slot no worker knows the page of carries its mass
            // nowhere (the error is logged where the edges arrive).
            let node = positions[slot as usize - own.start];
            (node != u32::MAX).then(|| (node, p.hosts[i] == p.hosts[node as usize]))
        };
        let mut host_offsets = vec![0u32; n + 1];
        let mut cross_offsets = vec![0u32; n + 1];
        s.within_out = vec![0; listed];
        for i in 0..listed {
            let (lo, hi) = (p.offsets[i] as usize, p.offsets[i + 1] as usize);
            for &slot in &p.targets[lo..hi] {
                match target(i, slot) {
                    Some((v, true)) => {
                        host_offsets[v as usize + 1] += 1;
                        if (v as usize) < listed {
                            s.within_out[i] += 1;
                        }
                    }
                    Some((v, false)) => cross_offsets[v as usize + 1] += 1,
                    None if (slot as usize) < own.start => s.remote_targets.push(slot),
                    None if own.contains(&(slot as usize)) => {}
                    None => s.remote_targets.push(slot - own.len() as u32),
                }
            }
            if *s.remote_offsets.last().expect("starts at 0") < s.remote_targets.len() as u32 {
                s.remote_nodes.push(i as u32);
            }
            s.remote_offsets.push(s.remote_targets.len() as u32);
        }
        for v in 0..n {
            host_offsets[v + 1] += host_offsets[v];
            cross_offsets[v + 1] += cross_offsets[v];
        }
        let mut host_fill: Vec<u32> = host_offsets[..n].to_vec();
        let mut cross_fill: Vec<u32> = cross_offsets[..n].to_vec();
        s.host_sources = vec![0; host_offsets[n] as usize];
        s.cross = vec![(0, 0); cross_offsets[n] as usize];
        for i in 0..listed {
            let (lo, hi) = (p.offsets[i] as usize, p.offsets[i + 1] as usize);
            for &slot in &p.targets[lo..hi] {
                match target(i, slot) {
                    Some((v, true)) => {
                        let f = &mut host_fill[v as usize];
                        s.host_sources[*f as usize] = i as u32;
                        *f += 1;
                    }
                    Some((v, false)) => {
                        let f = &mut cross_fill[v as usize];
                        s.cross[*f as usize] = (i as u32, v);
                        *f += 1;
                    }
                    None => {}
                }
            }
        }
        s.host_offsets = host_offsets;
        s.factor = (0..n).map(|i| d.per_link(p.out_degree(i))).collect();
        // Listed nodes are sorted by host, so each host's are one run.
        s.blocks = (0..listed)
            .filter(|&i| i == 0 || p.hosts[i] != p.hosts[i - 1])
            .chain([listed, n])
            .map(|i| i as u32)
            .collect();
        s.blocks.dedup();
        s
    }

    /// Node `v`'s in-neighbours in its host.
    fn host_sources(&self, v: usize) -> &[u32] {
        &self.host_sources[self.host_offsets[v] as usize..self.host_offsets[v + 1] as usize]
    }

    /// Where another worker's run of slots lies in the remote numbering: runs
    /// are ordered by worker, so those after this worker's shift down past it.
    fn remote_run(&self, run: &std::ops::Range<usize>) -> std::ops::Range<usize> {
        if run.start >= self.own.end {
            run.start - self.own.len()..run.end - self.own.len()
        } else {
            run.clone()
        }
    }

    /// Node `i`'s edges into other workers' slots (remote numbering).
    fn remote_edges(&self, i: usize) -> &[u32] {
        match self.remote_offsets.get(i + 1) {
            Some(&hi) => &self.remote_targets[self.remote_offsets[i] as usize..hi as usize],
            None => &[],
        }
    }
}

/// Where the current snapshot stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Waiting for the snapshot's nodes.
    Nodes,
    /// Waiting for the edge announcements.
    Edges,
    /// Waiting for the graph's sizes.
    Sizes,
    /// Waiting for step `k`'s sums and the shares of `x_k`.
    Step(u32),
    /// Running the crawl orderings.
    Orders,
}

/// One worker's side of a snapshot's solve.
struct Solver {
    peers: usize,
    index: usize,
    d: Damping,
    tol: u128,
    max_iterations: u32,
    acceleration: Acceleration,
    /// Per vector, the acceleration of its steps (see
    /// `algo::pagerank::Accelerated`).
    accelerated: [Accelerated; 2],
    warm_start: bool,
    measure_cold: bool,
    part: Part,
    /// The primary vector and, when measured, the cold one.
    x: [Vec<u64>; 2],
    /// Each node's edges split by where they lead (see [`Split`]), built once
    /// the graph's edges are announced.
    split: Split,
    /// Buffers reused by every step: per live vector, the mass for other
    /// workers' slots, the mass for this worker's own nodes from other hosts,
    /// and each node's share per outlink `d r / c` (the sweep updates it).
    acc: [Vec<u64>; 2],
    local: [Vec<u64>; 2],
    shares: [Vec<u64>; 2],
    next: Vec<u64>,
    active: [bool; 2],
    /// Per vector, the iterates extrapolation keeps, and the Gram sums of
    /// this worker's nodes when the step adds them up.
    kept: [[Vec<u64>; 2]; 2],
    gram: [Gram; 2],
    /// Per vector, the rank of the nodes without outlinks, as of its last
    /// sweep.
    dangling: [u128; 2],
    /// Each node's rank in the previous snapshot (`None`: new), looked up
    /// once per snapshot for the warm start's sums and its start vector.
    prior: Vec<Option<u64>>,
    iterations: [u32; 2],
    change: [u128; 2],
    sizes: Sums,
    warm_started: bool,
    /// When the steps started, and how long they took.
    solve_started: std::time::Instant,
    solve_micros: u64,
    /// Whether to emit the ranks as the revisit plan's weights.
    weights: bool,
    /// The last snapshot's vector, with each page's host: made at the finish,
    /// held until the next snapshot's starting vector is made from it.
    prev: FastMap<PageId, (HostId, u64)>,
    /// `trust.parquet`, if the input has one, and the sum of the trust
    /// vector's weights over the graph.
    trust_file: Option<std::sync::Arc<TrustWeights>>,
    trust_total: u128,
    /// Whether to compute the crawl orderings, and their state.
    orderings: bool,
    single_page_max_edges: u64,
    orders: Orders,
    /// With the orderings, this worker's URLs in order until the other
    /// workers' prefixes arrive (see `Part::url_rank`).
    url_order: LocalOrder,
    /// The finished snapshot and its next node whose `pagerank` row (and
    /// revisit weight) is still to make, while any is.
    rows_next: Option<(Seq, usize)>,
}

impl Solver {
    /// Whether the finished snapshot has rows still to hand on.
    fn has_rows(&self) -> bool {
        self.rows_next.is_some()
    }

    /// Up to `max` of the finished snapshot's `pagerank` rows and revisit
    /// weights, in node order. They are made a batch at a time from the part
    /// and the ledger's URLs, so that the writers take each batch before the
    /// next is made: made at once, they were the peak of a run's memory
    /// (600 MB on bench snapshot 9 with 1 worker, in `Out` records, their
    /// strings and the writer's sorted copy). Once all are handed on, the part
    /// and the ranks are let go.
    fn take_rows(&mut self, ledger: &Ledger, max: usize, out: &mut Vec<Out>) {
        let p = &self.part;
        let x = &self.x[0];
        if let Some((t, from)) = self.rows_next {
            let to = p.pages.len().min(from.saturating_add(max));
            in_lookup_blocks(
                from..to,
                |block: &[usize], rows| {
                    let mut urls = Vec::with_capacity(block.len());
                    p.urls(ledger, block.iter().copied(), &mut urls);
                    let hosts = block.iter().map(|&i| p.host_name(ledger, i));
                    rows.extend(urls.into_iter().zip(hosts));
                },
                |i, (url, host)| {
                    let rank = x[i];
                    if self.weights {
                        out.push(Out::Weight((p.pages[i], rank, t)));
                    }
                    out.push(Out::Row(PageRankRow {
                        url: url.to_string(),
                        host: host.to_string(),
                        rank,
                        in_links: i64::from(p.in_links[i]),
                        out_links: i64::from(p.out_degree(i)),
                    }));
                },
            );
            self.rows_next = (to < p.pages.len()).then_some((t, to));
        }
        if !self.has_rows() {
            self.part = Part::default();
            self.x[0] = Vec::new();
        }
    }

    fn broadcast(&self, sums: Sums, out: &mut Vec<Out>) {
        broadcast(self.peers, out, |to| Msg::Sums {
            to,
            sums: Box::new(sums),
        });
    }

    /// The vectors still iterating.
    fn live(&self) -> Vec<usize> {
        (0..2).filter(|v| self.active[*v]).collect()
    }

    /// Each live vector's shares and dangling rank, from the vector itself
    /// (the sweep keeps them up to date from then on).
    fn fill_shares(&mut self) {
        for v in self.live() {
            let factor = &self.split.factor;
            let x = &self.x[v];
            self.shares[v].clear();
            self.shares[v].extend(x.iter().zip(factor).map(|(&r, f)| f.share(r)));
            self.dangling[v] = x
                .iter()
                .zip(factor)
                .filter(|(_, f)| f.is_dangling())
                .map(|(&r, _)| u128::from(r))
                .sum();
        }
    }

    /// Sends the shares of the active vectors and this worker's sums. The mass
    /// for this worker's own nodes from other hosts is gathered in place, into
    /// `local`; the sweep adds the mass from their own hosts.
    fn send_step(&mut self, change: [u128; 2], out: &mut Vec<Out>) {
        let live = self.live();
        let p = &self.part;
        let split = &self.split;
        let n = p.pages.len();
        for &v in &live {
            let (acc, local) = (&mut self.acc[v], &mut self.local[v]);
            let shares = &self.shares[v];
            acc.clear();
            acc.resize(split.remote_slots, 0);
            // As a slice: a store through a `Vec` would make the compiler reload
            // its pointer and length on every edge.
            let acc = acc.as_mut_slice();
            for &i in &split.remote_nodes {
                let s = shares[i as usize];
                if s > 0 {
                    for &slot in split.remote_edges(i as usize) {
                        acc[slot as usize] += s;
                    }
                }
            }
            local.clear();
            local.resize(n, 0);
            let local = local.as_mut_slice();
            for &(u, v) in &split.cross {
                local[v as usize] += shares[u as usize];
            }
        }
        for (w, run) in p.runs.iter().enumerate() {
            if !run.is_empty() && w != self.index {
                // Vector after vector: `mass[j * run.len() + k]` is live vector
                // `j`'s mass for slot `k` of the run.
                let mut mass = Vec::with_capacity(run.len() * live.len());
                for &v in &live {
                    mass.extend_from_slice(&self.acc[v][split.remote_run(run)]);
                }
                out.push(Out::Msg(Msg::Mass {
                    to: w as u64,
                    from: self.index as u32,
                    mass,
                }));
            }
        }
        let gram = std::mem::take(&mut self.gram);
        self.broadcast(
            Sums {
                dangling: self.dangling,
                change,
                gram,
                ..Sums::default()
            },
            out,
        );
    }

    /// One step's sweep of vector `v` over this worker's nodes in order:
    /// `next` holds each node's mass from other hosts; a node adds its part of
    /// the jump and its host's shares as the sweep leaves them, becomes its
    /// new rank, and updates its own share. When balancing, each host's ranks
    /// are then scaled to its mass balance (see `algo::pagerank::HostMass`).
    /// With extrapolation, the same pass adds up this worker's Gram sums or
    /// combines the iterates (`step`; see
    /// `algo::pagerank::Accelerated::extrapolation_step`) while each host's
    /// nodes are in cache. Returns the L1 change of the sweep (before any
    /// combining), and keeps the new dangling rank.
    fn sweep(&mut self, v: usize, jump: u128, step: Extrapolate) -> u128 {
        let split = &self.split;
        let total = self.trust_total;
        let next = self.next.as_mut_slice();
        // The jump first, in its own pass over the few trusted nodes, so that
        // the sweep reads no per-node trust weight.
        let unit = trust_share(jump, 1, total);
        for &(i, w) in &self.part.trusted {
            next[i as usize] += if w == 1 {
                unit
            } else {
                trust_share(jump, w, total)
            };
        }
        let shares = self.shares[v].as_mut_slice();
        let x = self.x[v].as_slice();
        let factor = split.factor.as_slice();
        let with = self.accelerated[v].current();
        let listed = split.within_out.len();
        let mut change = 0u128;
        let mut dangling = 0u128;
        let kept = &self.kept[v];
        let mut gram = Gram::default();
        for run in split.blocks.windows(2) {
            let run = run[0] as usize..run[1] as usize;
            let mut host = HostMass::default();
            for i in run.clone() {
                let inflow = next[i];
                let mut r = inflow;
                for &u in split.host_sources(i) {
                    r += shares[u as usize];
                }
                let r = with.omega.apply(r, x[i]);
                next[i] = r;
                shares[i] = factor[i].share(r);
                if i < listed {
                    host.add(inflow, r, shares[i], split.within_out[i]);
                }
            }
            let scale = if with.balance && run.start < listed {
                host.scale()
            } else {
                None
            };
            // The change and the dangling rank, after the scale if any (in
            // the same pass: the host's pages are still in cache).
            for i in run.clone() {
                if let Some(f) = scale {
                    next[i] = f.apply(next[i]);
                    shares[i] = f.apply(shares[i]);
                }
                change += u128::from(next[i].abs_diff(x[i]));
                if factor[i].is_dangling() {
                    dangling += u128::from(next[i]);
                }
            }
            // Extrapolation's work in loops of its own, so that the loop above,
            // which every step runs, stays as tight as before.
            match step {
                Extrapolate::Gram(shift) => {
                    let iterates = [&kept[0][..], &kept[1][..], x, next];
                    gram.add(shift, iterates.map(|v| &v[run.clone()]));
                }
                Extrapolate::Combine(w) => {
                    for i in run {
                        let swept = next[i];
                        next[i] = w.apply(kept[0][i], x[i], swept);
                        shares[i] = factor[i].share(next[i]);
                        if factor[i].is_dangling() {
                            dangling = dangling - u128::from(swept) + u128::from(next[i]);
                        }
                    }
                }
                Extrapolate::Nothing | Extrapolate::Keep(_) => {}
            }
        }
        self.dangling[v] = dangling;
        self.gram[v] = gram;
        change
    }

    /// Keeps the iterate before vector `v`'s step (in `next` once the step's
    /// vector is `x[v]`) where extrapolation wants it. The buffers rotate:
    /// `next` takes the kept slot's old one, which the step's messages refill
    /// as `local` before any use.
    fn keep(&mut self, v: usize, step: Extrapolate) {
        match step {
            Extrapolate::Keep(i) => std::mem::swap(&mut self.next, &mut self.kept[v][i]),
            Extrapolate::Gram(_) => std::mem::swap(&mut self.next, &mut self.kept[v][0]),
            Extrapolate::Nothing | Extrapolate::Combine(_) => {}
        }
    }

    /// Lets go of what only the steps use, once the solve has converged: the
    /// split edges, the step buffers and the cold vector. Held through the
    /// crawl orderings, they were about 200 MB of bench snapshot 9's peak
    /// with 1 worker, which the orderings' state then came on top of.
    fn solved(&mut self) {
        self.x[1] = Vec::new();
        self.kept = Default::default();
        self.split = Split::default();
        self.acc = Default::default();
        self.local = Default::default();
        self.shares = Default::default();
        self.next = Vec::new();
    }

    /// The snapshot's per-host and run rows, and the vector kept for the next
    /// snapshot; its per-page rows follow in batches ([`Self::take_rows`]).
    fn finish(&mut self, t: Seq, ledger: &Ledger, out: &mut Vec<Out>) {
        let p = &self.part;
        let x = &self.x[0];
        self.prev.clear();
        self.prev.reserve(p.pages.len());
        // A host's pages are all on its worker: its roll-up is local. Per host
        // its rank, its pages and one of them (for its name).
        let mut hosts: FastMap<HostId, (u128, i64, usize)> = FastMap::default();
        for (i, (&page, &host)) in p.pages.iter().zip(&p.hosts).enumerate() {
            self.prev.insert(page, (host, x[i]));
            let h = hosts.entry(host).or_insert((0, 0, i));
            h.0 += u128::from(x[i]);
            h.1 += 1;
        }
        out.extend(hosts.into_values().map(|(rank, pages, i)| {
            Out::Host(HostRankRow {
                host: p.host_name(ledger, i).to_string(),
                rank,
                pages,
            })
        }));
        self.rows_next = (!p.pages.is_empty()).then_some((t, 0));
        if self.index == 0 {
            out.push(Out::Run(Box::new(PageRankRunRow {
                iterations: i64::from(self.iterations[0]),
                warm_started: self.warm_started,
                change: self.change[0],
                trust_pages: self.sizes.trusted as i64,
                nodes: self.sizes.nodes as i64,
                edges: self.sizes.edges as i64,
                iterations_cold: self.measure_cold.then(|| {
                    let v = if self.warm_started { 1 } else { 0 };
                    i64::from(self.iterations[v])
                }),
                micros: self.solve_micros,
            })));
        }
    }

    /// Which trust vector applies, from the graph's sizes: the weights of
    /// `trust.parquet` when it lists a node of the graph, else uniform over
    /// the main pages, else uniform over every node. Every worker decides the
    /// same from the same sums. Returns the chosen vector's weight on the
    /// nodes new in this snapshot.
    fn choose_trust(&mut self, sums: &Sums) -> u128 {
        let p = &mut self.part;
        let fresh = if sums.listed > 0 {
            for (i, w) in p.trust.iter_mut().enumerate() {
                *w = p.listed.get(i).copied().unwrap_or(0);
            }
            self.trust_total = sums.listed_weight;
            self.sizes.trusted = sums.listed;
            sums.fresh[0]
        } else if sums.trusted > 0 {
            for (w, &main) in p.trust.iter_mut().zip(&p.main) {
                *w = u64::from(main);
            }
            self.trust_total = u128::from(sums.trusted);
            sums.fresh[1]
        } else {
            p.trust.iter_mut().for_each(|w| *w = 1);
            self.trust_total = u128::from(sums.nodes);
            self.sizes.trusted = sums.nodes;
            sums.fresh[2]
        };
        p.trusted.clear();
        p.trusted.extend(
            p.trust
                .iter()
                .enumerate()
                .filter(|(_, w)| **w > 0)
                .map(|(i, w)| (i as u32, *w)),
        );
        fresh
    }

    fn persist(&self, ctx: &WorkerCtx) -> Result<(), OutputError> {
        let path = state::rank_part_path(&ctx.plan.staged_state_dir(), ctx.index);
        let mut w = StateWriter::create(&path)?;
        let mut ids: Vec<(&PageId, &(HostId, u64))> = self.prev.iter().collect();
        ids.sort_unstable();
        for (page, (host, rank)) in ids {
            w.write(&StateRecord::Rank(*host, *page, *rank))?;
        }
        ctx.sync_at_end(w.finish_syncing()?);
        Ok(())
    }
}

/// What the PageRank stage emits, each a stream of per-snapshot messages.
pub struct PageRankOut<'s> {
    pub rows: Stream<'s, Seq, Vec<PageRankRow>>,
    /// Worker 0's `pagerank_runs` row.
    pub runs: Stream<'s, Seq, Vec<PageRankRunRow>>,
    pub hosts: Stream<'s, Seq, Vec<HostRankRow>>,
    /// When the change analysis runs, every node's rank as a
    /// [`LedgerOut::PlanWeight`] for the revisit plan.
    pub weights: Stream<'s, Seq, Vec<(LedgerOut, Seq, isize)>>,
    /// Worker 0's curve and summary rows of the crawl orderings.
    pub curves: Stream<'s, Seq, Vec<RankmassCurveRow>>,
    pub summaries: Stream<'s, Seq, Vec<RankmassSummaryRow>>,
}

/// PageRank of every snapshot, from the graphs in the workers' ledgers; `nodes`
/// (the ledger's output) brings the restored vector, and its frontier says
/// when a snapshot's graph is complete.
pub fn pagerank<'s>(
    nodes: Stream<'s, Seq, Vec<(LedgerOut, Seq, isize)>>,
    ctx: &WorkerCtx,
) -> PageRankOut<'s> {
    let outer = nodes.scope();
    let ctx = ctx.clone();
    outer.iterative::<u32, _, _>(|inner| {
        let peers = inner.peers();
        let nodes = nodes.enter(inner);
        let (handle, cycle) = inner.feedback::<Vec<Msg>>(Product::new(0, 1));
        let worker = inner.worker();
        let out = nodes.binary_frontier::<_, CapacityContainerBuilder<Vec<Out>>, _, _, _, _>(
            cycle,
            Pipeline,
            Exchange::new(|m: &Msg| m.to()),
            "PageRank",
            move |cap, info| {
                let activator = worker.activator_for(info.address.clone());
                let epochs: Vec<Seq> = ctx
                    .plan
                    .epochs()
                    .into_iter()
                    .filter(|t| ctx.plan.writes(*t))
                    .collect();
                let params = ctx.plan.job.rankmass.clone();
                let mut solver = Solver {
                    peers,
                    index: ctx.index,
                    d: Damping::new(params.damping),
                    tol: tolerance_units(params.tolerance),
                    max_iterations: params.max_iterations,
                    acceleration: Acceleration {
                        omega: Relaxation::new(params.relaxation),
                        balance: params.host_balance,
                        extrapolate: params.extrapolation,
                    },
                    accelerated: [Accelerated::new(Acceleration::NONE); 2],
                    warm_start: params.warm_start,
                    measure_cold: params.measure_cold,
                    part: Part::default(),
                    x: [Vec::new(), Vec::new()],
                    split: Split::default(),
                    acc: [Vec::new(), Vec::new()],
                    local: [Vec::new(), Vec::new()],
                    shares: [Vec::new(), Vec::new()],
                    next: Vec::new(),
                    active: [false; 2],
                    kept: Default::default(),
                    gram: Default::default(),
                    dangling: [0; 2],
                    prior: Vec::new(),
                    iterations: [0; 2],
                    change: [0; 2],
                    sizes: Sums::default(),
                    warm_started: false,
                    solve_started: std::time::Instant::now(),
                    solve_micros: 0,
                    weights: ctx.plan.job.analyses.contains(&Analysis::Change),
                    prev: FastMap::default(),
                    trust_file: ctx.plan.trust.clone(),
                    trust_total: 0,
                    orderings: params.orderings,
                    single_page_max_edges: params.single_page_max_edges,
                    orders: Orders::new(&params, ctx.index, peers),
                    url_order: LocalOrder::default(),
                    rows_next: None,
                };
                // Hold nothing before the first snapshot written (the restore epoch
                // must complete without this operator).
                let mut main: Option<Capability<Time>> = epochs.first().map(|&t| {
                    let mut cap = cap;
                    cap.downgrade(&Product::new(t, 0));
                    cap
                });
                let mut round: Option<Capability<Time>> = None;
                // While the solved snapshot has `pagerank` rows of this
                // worker's pages to hand on, at the time of its last round (see
                // `take_rows`).
                let mut rows_at: Option<Capability<Time>> = None;
                // The snapshot's `rankmass_order` part file, written as the
                // ranks of this worker's downloads arrive.
                let mut order_file: Option<SnapshotPart<RankmassOrderRow>> = None;
                let mut next = 0usize;
                let mut phase = Phase::Nodes;
                let mut restored: Vec<(PageId, (HostId, u64))> = Vec::new();
                let mut inbox: BTreeMap<Time, Vec<Msg>> = BTreeMap::new();
                move |(nodes_in, nodes_frontier), (msgs_in, msgs_frontier), output| {
                    nodes_in.for_each(|_, data| {
                        // The snapshots' graphs stay in the ledger
                        // (`Part::build`); only the restored vector comes here.
                        for (o, _, d) in data.drain(..) {
                            if let (LedgerOut::RankPrev(host, page, rank), true) = (o, d > 0) {
                                restored.push((page, (host, rank)))
                            }
                        }
                    });
                    msgs_in.for_each(|c, data| {
                        let time = *c.stamp().iter().next().expect("rounds carry a time");
                        inbox.entry(time).or_default().append(data);
                    });
                    let mut emitted = Vec::new();
                    if let Some(at) = &rows_at {
                        // A batch per activation, so that the writer takes each
                        // before the next is made.
                        solver.take_rows(&ctx.ledger.borrow(), ROWS_PER_ACTIVATION, &mut emitted);
                        output.session(at).give_iterator(emitted.drain(..));
                        if solver.has_rows() {
                            activator.activate();
                        } else {
                            rows_at = None;
                        }
                    }
                    loop {
                        let Some(&t) = epochs.get(next) else {
                            main = None;
                            break;
                        };
                        if phase == Phase::Nodes {
                            if nodes_frontier.less_equal(&Product::new(t, 0)) {
                                break;
                            }
                            let m = main.as_mut().expect("held until the last snapshot");
                            let mut r = m.delayed(&Product::new(t, 0));
                            match epochs.get(next + 1) {
                                Some(&n) => m.downgrade(&Product::new(n, 0)),
                                None => main = None,
                            }
                            // The last snapshot's rows go before its URLs do.
                            if let Some(at) = rows_at.take() {
                                solver.take_rows(&ctx.ledger.borrow(), usize::MAX, &mut emitted);
                                output.session(&at).give_iterator(emitted.drain(..));
                            }
                            // The restore epoch's vector arrives before any snapshot;
                            // taken, so that its memory goes with it.
                            solver.prev.extend(std::mem::take(&mut restored));
                            // The last snapshot's part went with its rows.
                            solver.part = Part::build(
                                t,
                                &ctx.ledger.borrow(),
                                &ctx.placement,
                                solver.trust_file.as_deref(),
                            );
                            solver.part.announce(solver.index, &mut emitted);
                            crate::memory::trace(|| format!("worker {} snapshot {t}: PageRank part built", solver.index));
                            output.session(&r).give_iterator(emitted.drain(..));
                            r.downgrade(&Product::new(t, 1));
                            round = Some(r);
                            phase = Phase::Edges;
                            continue;
                        }
                        let r = round.as_mut().expect("a round is under way");
                        let at = *r.time();
                        if msgs_frontier.less_equal(&at) {
                            break;
                        }
                        let msgs = inbox.remove(&at).unwrap_or_default();
                        let mut sums = Sums::default();
                        let mut masses: Vec<(u32, Vec<u64>)> = Vec::new();
                        let mut edges: Vec<(u32, Vec<(PageId, HostId, u32)>)> = Vec::new();
                        let mut rest: Vec<Msg> = Vec::new();
                        for m in msgs {
                            match m {
                                Msg::Sums { sums: s, .. } => sums.add(&s),
                                Msg::Mass { from, mass, .. } => masses.push((from, mass)),
                                Msg::Edges { from, pages, .. } => edges.push((from, pages)),
                                other => rest.push(other),
                            }
                        }
                        let finished = match phase {
                            Phase::Nodes => unreachable!("rounds follow the nodes"),
                            Phase::Orders => {
                                let ledger = ctx.ledger.borrow();
                                let mut rows = OrderRows {
                                    ledger: &ledger,
                                    file: order_file.get_or_insert_with(|| SnapshotPart::new(&ctx, t)),
                                };
                                let done = solver.orders.receive(&solver.part, sums, masses, rest, &mut rows, &mut emitted);
                                if done {
                                    order_file.take().expect("opened above").finish();
                                    crate::memory::trace(|| format!("worker {} snapshot {t}: orderings done", solver.index));
                                }
                                done
                            }
                            Phase::Edges => {
                                // By sender, so that added nodes get the same
                                // positions on any run.
                                let own = solver.part.own_slots(solver.index);
                                if !own.is_empty() {
                                    edges.push((solver.index as u32, own));
                                }
                                edges.sort_unstable_by_key(|e| e.0);
                                let ledger = ctx.ledger.borrow();
                                for (from, pages) in edges {
                                    let mut positions = Vec::with_capacity(pages.len());
                                    for (page, host, count) in pages {
                                        let i = match solver.part.index.get(&page) {
                                            Some(&i) => i,
                                            None => match ledger.url_of(page) {
                                                Some(url) => solver.part.add(page, host, is_main_page(url), solver.trust_file.as_deref()),
                                                None => {
                                                    ctx.log.borrow_mut().error(format!(
                                                        "internal error: a link leads to page {page:?}, which no worker knows"
                                                    ));
                                                    positions.push(u32::MAX);
                                                    continue;
                                                }
                                            },
                                        };
                                        solver.part.in_links[i as usize] += count;
                                        positions.push(i);
                                    }
                                    solver.part.inbound[from as usize] = positions;
                                }
                                drop(ledger);
                                solver.part.own_slots_in_node_order(solver.index);
                                solver.part.release_lookups();
                                solver.prior.clear();
                                solver.prior.extend(solver.part.pages.iter().map(|pg| solver.prev.get(pg).map(|v| v.1)));
                                // Rebuilt from the part at the finish: let go
                                // through the split, the solve and the
                                // orderings (52 MB on bench snapshot 9 with 1
                                // worker).
                                solver.prev = FastMap::default();
                                solver.split = Split::build(&solver.part, solver.index, solver.d);
                                crate::memory::trace(|| format!("worker {} snapshot {t}: PageRank split built", solver.index));
                                let p = &solver.part;
                                let prior = &solver.prior;
                                let own = Sums {
                                    nodes: p.pages.len() as u64,
                                    trusted: p.main.iter().filter(|t| **t).count() as u64,
                                    listed: p.listed.iter().filter(|w| **w > 0).count() as u64,
                                    listed_weight: p.listed.iter().map(|w| u128::from(*w)).sum(),
                                    edges: p.targets.len() as u64,
                                    start: prior.iter().map(|r| r.map_or(0, u128::from)).sum(),
                                    fresh: (0..p.pages.len())
                                        .filter(|&i| prior[i].is_none())
                                        .fold([0; 3], |[l, m, a], i| {
                                            [l + u128::from(p.listed(i)), m + u128::from(p.main[i]), a + 1]
                                        }),
                                    ..Sums::default()
                                };
                                solver.broadcast(own, &mut emitted);
                                if solver.orderings {
                                    let ledger = ctx.ledger.borrow();
                                    let urls: Vec<&str> =
                                        (0..p.pages.len()).map(|i| p.url(&ledger, i)).collect();
                                    let order = LocalOrder::new(&urls);
                                    for w in (0..peers).filter(|&w| w != solver.index) {
                                        emitted.push(Out::Msg(Msg::Prefixes {
                                            to: w as u64,
                                            from: solver.index as u32,
                                            prefixes: order.prefixes.clone(),
                                        }));
                                    }
                                    solver.url_order = order;
                                }
                                phase = Phase::Sizes;
                                false
                            }
                            Phase::Sizes => {
                                solver.sizes = sums;
                                if solver.orderings {
                                    let mut others: Vec<(u32, Vec<(String, u32)>)> = rest
                                        .into_iter()
                                        .filter_map(|m| match m {
                                            Msg::Prefixes { from, prefixes, .. } => Some((from, prefixes)),
                                            _ => None,
                                        })
                                        .collect();
                                    others.sort_unstable_by_key(|o| o.0);
                                    let lists: Vec<&[(String, u32)]> =
                                        others.iter().map(|o| o.1.as_slice()).collect();
                                    let order = std::mem::take(&mut solver.url_order);
                                    solver.part.url_rank = order.global_ranks(&lists);
                                }
                                if sums.nodes == 0 {
                                    solver.solved();
                                    solver.solve_micros = 0;
                                    solver.iterations = [0; 2];
                                    solver.change = [0; 2];
                                    solver.warm_started = false;
                                    true
                                } else {
                                    let fresh_weight = solver.choose_trust(&sums);
                                    let p = &solver.part;
                                    let total = solver.trust_total;
                                    let cold: Vec<u64> = p
                                        .trust
                                        .iter()
                                        .map(|&w| trust_share(u128::from(ONE), w, total))
                                        .collect();
                                    solver.warm_started = solver.warm_start && sums.start > 0;
                                    solver.x[0] = if solver.warm_started {
                                        // New nodes start as they would cold, and the old
                                        // ones share the rest of a total of 1 as they
                                        // shared the previous snapshot's rank.
                                        let fresh = u128::from(ONE) * fresh_weight / total.max(1);
                                        let keep = u128::from(ONE) - fresh.min(u128::from(ONE));
                                        let start = sums.start;
                                        solver
                                            .prior
                                            .iter()
                                            .zip(&cold)
                                            .map(|(prior, c)| match prior {
                                                Some(r) => (u128::from(*r) * keep / start) as u64,
                                                None => *c,
                                            })
                                            .collect()
                                    } else {
                                        cold.clone()
                                    };
                                    solver.prior = Vec::new();
                                    solver.active = [true, solver.measure_cold && solver.warm_started];
                                    solver.x[1] = if solver.active[1] { cold } else { Vec::new() };
                                    solver.iterations = [0; 2];
                                    solver.change = [0; 2];
                                    solver.accelerated = [Accelerated::new(solver.acceleration); 2];
                                    solver.solve_started = std::time::Instant::now();
                                    solver.fill_shares();
                                    solver.send_step([0; 2], &mut emitted);
                                    phase = Phase::Step(0);
                                    false
                                }
                            }
                            Phase::Step(k) => {
                                // The masses carry the vectors live when they were
                                // sent, before this round's check.
                                let sent = solver.live();
                                if k >= 1 {
                                    for v in 0..2 {
                                        if solver.active[v] {
                                            solver.change[v] = sums.change[v];
                                            solver.accelerated[v].receive_gram(sums.gram[v]);
                                            solver.accelerated[v].record(solver.d, sums.change[v]);
                                            if sums.change[v] < solver.tol
                                                || solver.iterations[v] >= solver.max_iterations
                                            {
                                                solver.active[v] = false;
                                            }
                                        }
                                    }
                                }
                                if solver.active == [false, false] {
                                    solver.solve_micros =
                                        solver.solve_started.elapsed().as_micros() as u64;
                                    solver.solved();
                                    crate::memory::trace(|| format!("worker {} snapshot {t}: PageRank solved", solver.index));
                                    if solver.orderings {
                                        let sizes = solver.sizes;
                                        solver.orders.start(
                                            &solver.part,
                                            &solver.x[0],
                                            solver.trust_total,
                                            sizes.edges,
                                            solver.single_page_max_edges,
                                            &mut emitted,
                                        );
                                        phase = Phase::Orders;
                                        false
                                    } else {
                                        true
                                    }
                                } else {
                                    let n = solver.part.pages.len();
                                    let mut change = [0u128; 2];
                                    for (j, &v) in sent.iter().enumerate() {
                                        if !solver.active[v] {
                                            continue;
                                        }
                                        let next = &mut solver.next;
                                        std::mem::swap(next, &mut solver.local[v]);
                                        debug_assert_eq!(next.len(), n);
                                        for (from, mass) in &masses {
                                            let positions = &solver.part.inbound[*from as usize];
                                            let mass = &mass[j * positions.len()..][..positions.len()];
                                            for (&i, &m) in positions.iter().zip(mass) {
                                                if i != u32::MAX {
                                                    next[i as usize] += m;
                                                }
                                            }
                                        }
                                        let jump = solver.d.jump(sums.dangling[v]);
                                        let step = solver.accelerated[v].extrapolation_step(solver.tol);
                                        change[v] = solver.sweep(v, jump, step);
                                        std::mem::swap(&mut solver.x[v], &mut solver.next);
                                        solver.keep(v, step);
                                        solver.iterations[v] += 1;
                                    }
                                    solver.send_step(change, &mut emitted);
                                    phase = Phase::Step(k + 1);
                                    false
                                }
                            }
                        };
                        if finished {
                            solver.finish(t, &ctx.ledger.borrow(), &mut emitted);
                            // The rows are made after the solve and the orderings,
                            // so that making and writing them does not run inside
                            // the orderings' rounds and count in their time
                            // (`rankmass_summary.seconds`).
                            if solver.has_rows() {
                                rows_at = Some(r.clone());
                                activator.activate();
                            }
                            if next + 1 == epochs.len() {
                                if let Err(e) = solver.persist(&ctx) {
                                    ctx.log.borrow_mut().error(e);
                                }
                            }
                            output.session(r).give_iterator(emitted.drain(..));
                            round = None;
                            phase = Phase::Nodes;
                            next += 1;
                        } else {
                            let mut session = output.session(r);
                            session.give_iterator(emitted.drain(..));
                            drop(session);
                            r.downgrade(&Product::new(t, at.inner + 1));
                        }
                    }
                }
            },
        );
        // One stream per kind, in `Out::kind` order; each takes its own.
        let parts: [_; Out::KINDS] = split_by_kind(out, "SplitRankOut", Out::kind);
        let mut parts = parts.into_iter();
        macro_rules! take {
            ($kind:path) => {
                parts
                    .next()
                    .expect("a part per kind")
                    .flat_map(|o| match o {
                        $kind(x) => Some(x),
                        _ => None,
                    })
            };
        }
        take!(Out::Msg).connect_loop(handle);
        let rows = take!(Out::Row);
        let runs = take!(Out::Run).map(|r| *r);
        let weights =
            take!(Out::Weight).map(|(page, rank, t)| (LedgerOut::PlanWeight(page, rank), t, 1));
        let hosts = take!(Out::Host);
        let curves = take!(Out::Curve).map(|r| *r);
        let summaries = take!(Out::Summary).map(|r| *r);
        PageRankOut {
            rows: rows.leave(outer),
            runs: runs.leave(outer),
            hosts: hosts.leave(outer),
            weights: weights.leave(outer),
            curves: curves.leave(outer),
            summaries: summaries.leave(outer),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every row of a snapshot's tables passes through the operator's output
    /// as an `Out`, so a large variant costs its size per row: a `Sums`
    /// inline once made each 224 bytes.
    #[test]
    fn an_output_record_is_no_larger_than_a_row() {
        let row = std::mem::size_of::<PageRankRow>();
        let out = std::mem::size_of::<Out>();
        assert!(out <= row + 8, "Out is {out} bytes, a page's row {row}");
    }
}
