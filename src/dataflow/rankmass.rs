//! RankMass crawl orderings over all workers (docs/rankmass.md), run in the
//! PageRank loop's rounds once a snapshot's vector is solved, on the same graph
//! and exchange (`dataflow::pagerank`).
//!
//! Windowed-RankMass (Figure 6), one window after another; the window of 100%
//! is also L-Neighbor, whose BFS levels are its rounds. A round:
//! - selects the window, the top `ceil(w m)` by `rm` of the `m` pages with
//!   `rm > 0` not yet downloaded, by a distributed threshold: each pass every
//!   worker broadcasts a histogram of a byte of its candidates' `rm`, with
//!   their smallest and largest `rm`, and all pick the same byte, until the
//!   threshold is exact. The next pass reads the byte below the bits the
//!   candidates left all share (so the zero top bytes of small ranks cost no
//!   pass), and candidates all equal go straight to the ties. Pages tied at
//!   the threshold are settled by their URLs, each worker sending the places
//!   in URL order of only as many of its smallest as are still needed;
//! - then one synchronous propagation pass, shares summed per destination
//!   worker as in a PageRank step.
//!
//! All decisions come from integers every worker adds up, so every worker
//! takes the same ones, on any number of workers.
//!
//! An ordering's downloads are numbered by a sort over all workers
//! (`algo::sample_sort`), so that no worker holds every node: each worker
//! sorts its downloads by the ordering's key (round, then `rm` at download
//! for the windows, then the page's place in URL order: each worker ranks its
//! URLs among all from the others' host prefixes, `algo::url_order`, so no URL
//! moves), sends samples of the keys to all, and every download goes to the
//! worker whose range of keys holds it. A worker's downloads then are a
//! stretch of the order, which starts after the counts of the workers before
//! it; it sends each download's rank back to the worker that holds the page,
//! which makes and writes its row, and sends worker 0 the sums of the
//! PageRank at the curve's points in its stretch. The best possible curve
//! comes the same way from every node's PageRank, sorted once per snapshot
//! from the largest. The single-page RankMass (Figure 5) needs the global
//! maximum at every step, so it runs on worker 0
//! (`algo::rankmass::single_page`) when the graph has at most
//! `rankmass.single_page_max_edges` edges, which worker 0 then receives with
//! its nodes.

use std::collections::{BTreeMap, VecDeque};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::algo::pagerank::{trust_share, Damping};
use crate::algo::rankmass::{
    checkpoints, curve, downloads_to_actual, downloads_to_guarantee, guaranteed_at, level_units,
    single_page, start_mass, target_units, CurvePoint, Download, LargestSums,
};
use crate::algo::sample_sort::{owner, samples, splitters};
use crate::dataflow::in_lookup_blocks;
use crate::dataflow::pagerank::{broadcast, Msg, Out, Part, Sums};
use crate::dataflow::sink::SnapshotPart;
use crate::job::RankmassParams;
use crate::ledger::Ledger;
use crate::output::rankmass::{
    Algorithm, OrderingKey, RankmassCurveRow, RankmassOrderRow, RankmassSummaryRow,
};

/// A window of 100%, in millionths.
const FULL: u32 = 1_000_000;

/// The bits below an `rm`'s highest set bit that its bucket in a round's first
/// histogram keeps (see [`fine_bucket`]).
const FINE_BITS: u32 = 6;

/// The buckets of a round's first histogram: a bucket per highest set bit and
/// value of the `FINE_BITS` bits below it.
const FINE_BUCKETS: usize = 64 << FINE_BITS;

/// Where a windowed ordering stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// Waiting for the histograms of the candidates' buckets on a log scale
    /// (see [`fine_bucket`]).
    Fine,
    /// Waiting for the `rm` and places in URL order of the candidates in the
    /// threshold's bucket.
    Values,
    /// Waiting for the histograms of the byte of `rm` at bit `shift`.
    Hist(u32),
    /// Waiting for the URLs of the pages tied at the threshold.
    Ties,
    /// Waiting for a propagation pass.
    Pass,
    /// Every ordering is numbered; the workers wait for the ranks of the
    /// single-page RankMass's downloads, if it ran.
    Done,
}

/// Where the sort that numbers an ordering stands (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// Waiting for every worker's samples of its keys.
    Samples,
    /// Waiting for the items in this worker's range of keys.
    Route,
    /// Waiting for every worker's count of items and sum of their PageRank.
    Count,
    /// Waiting for the ranks of this worker's downloads (and on worker 0 for
    /// the curve's sums).
    Place,
}

/// L-Neighbor's key.
const L_NEIGHBOR: OrderingKey = OrderingKey {
    algorithm: Algorithm::LNeighbor,
    window_ppm: None,
};

/// What a round of a sort brought.
#[derive(Default)]
struct Sorting {
    samples: Vec<(u128, u64)>,
    routed: Vec<Keyed>,
    counts: Vec<(u32, u64, u128)>,
    curves: Vec<CurvePart>,
}

/// What a sort numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Job {
    /// Every node, by PageRank from the largest: the best possible curve.
    Largest,
    /// An ordering's downloads, in its order.
    Ordering(OrderingKey),
}

/// A download, or a node for the best possible curve, as the sort moves it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Keyed {
    /// The round that downloaded it (0 for a node).
    pub round: u32,
    /// Its page's place in URL order (`Part::url_rank`): the last tie-break.
    pub url: u32,
    /// The worker that holds the page, and the page's node there.
    pub from: u32,
    pub node: u32,
    /// Its `rm` at download (for a node, its PageRank).
    pub bound: u64,
    /// Its PageRank.
    pub rank: u64,
}

impl Keyed {
    /// Its place in an order, as one integer: the round, then (`by_bound`)
    /// the largest `rm` first, then the smallest URL. Keys are distinct, as
    /// a node is downloaded once and its place in URL order is its own.
    fn key(&self, by_bound: bool) -> u128 {
        let bound = if by_bound { u64::MAX - self.bound } else { 0 };
        (u128::from(self.round) << 96) | (u128::from(bound) << 32) | u128::from(self.url)
    }
}

/// A sort under way.
struct Numbering {
    job: Job,
    /// Whether the key orders by `rm` at download within a round (see
    /// [`Keyed::key`]); L-Neighbor orders a round by URL alone.
    by_bound: bool,
    step: Step,
    /// This worker's items in key order: its own until they are routed, then
    /// its stretch of the global order.
    items: Vec<Keyed>,
    /// Items over all workers, once counted.
    total: u64,
}

/// One worker's stretch of a global order, for the sums of its first `n`
/// PageRanks.
struct Stretch {
    /// Items before it in the order, and the sum of their PageRank.
    offset: u64,
    base: u128,
    /// Whether it ends the order (it is the last nonempty stretch).
    ends: bool,
}

impl Stretch {
    /// For each `n` of `at` (ascending) in `(offset, offset + len]`, the sum
    /// of the first `n` PageRanks of the order (`rank(i)` is the stretch's
    /// `i`th); the stretch that ends the order also answers for every larger
    /// `n`, with the whole sum.
    fn sums(&self, len: usize, rank: impl Fn(usize) -> u64, at: &[u64]) -> Vec<(u64, u128)> {
        let mut out = Vec::new();
        let (mut sum, mut done) = (self.base, 0usize);
        for &n in at {
            if n <= self.offset {
                continue;
            }
            if n > self.offset + len as u64 && !self.ends {
                break;
            }
            let upto = ((n - self.offset) as usize).min(len);
            while done < upto {
                sum += u128::from(rank(done));
                done += 1;
            }
            out.push((n, sum));
        }
        out
    }

    /// The fewest items of the order whose PageRank sums to `level` (above
    /// 0), if that many end in this stretch.
    fn crossing(&self, len: usize, rank: impl Fn(usize) -> u64, level: u128) -> Option<u64> {
        let mut sum = self.base;
        if sum >= level {
            return None;
        }
        for i in 0..len {
            sum += u128::from(rank(i));
            if sum >= level {
                return Some(self.offset + i as u64 + 1);
            }
        }
        None
    }
}

/// A worker's part of an ordering's curve, for worker 0: the sums of the
/// PageRank of the first `n` downloads (`actual`) and of the `n` largest
/// (`optimal`) at the curve's points in its stretches, and where the
/// downloads' PageRank reaches 0.98, if in its stretch.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CurvePart {
    pub actual: Vec<(u64, u128)>,
    pub optimal: Vec<(u64, u128)>,
    pub to_098_actual: Option<u64>,
}

/// One windowed ordering on one worker.
struct Run {
    window: u32,
    rm: Vec<u64>,
    downloaded: Vec<bool>,
    /// `(node, round, rm at download)` of this worker's downloads.
    log: Vec<(u32, u32, u64)>,
    round: u32,
    crm: u128,
    downloads: u64,
    progress: Vec<(u64, u128)>,
    stage: Stage,
    /// The candidates still in the running for the threshold.
    cands: Vec<u32>,
    /// How many more of them the window takes.
    need: u64,
    /// The pages the window has taken so far.
    chosen: Vec<u32>,
    started: Instant,
}

impl Run {
    /// Given the candidates' counts per bucket over all workers (`bucket` maps
    /// an `rm` to its bucket, larger values to no lower bucket), takes every
    /// candidate above the bucket where the threshold falls and keeps that
    /// bucket's as the candidates left. Returns the bucket, and whether its
    /// candidates are exactly the ones still needed (then taken too).
    fn cut(&mut self, hist: &[u64], bucket: impl Fn(u64) -> usize) -> (usize, bool) {
        let mut above = 0u64;
        let mut v = hist.len() - 1;
        while v > 0 && above + hist[v] < self.need {
            above += hist[v];
            v -= 1;
        }
        let mut rest: Vec<u32> = Vec::new();
        for &i in &self.cands {
            let b = bucket(self.rm[i as usize]);
            if b > v {
                self.chosen.push(i);
            } else if b == v {
                rest.push(i);
            }
        }
        self.need -= above;
        if hist[v] == self.need {
            self.chosen.extend(rest);
            self.cands.clear();
            return (v, true);
        }
        self.cands = rest;
        (v, false)
    }
}

/// What the workers keep of a finished windowed ordering while they number
/// its downloads.
struct Finished {
    progress: Vec<(u64, u128)>,
    rounds: u32,
    crm: u128,
    micros: u64,
    /// `(node, round, rm at download)` of this worker's downloads.
    log: Vec<(u32, u32, u64)>,
    /// The orders to number them in, the next last.
    keys: Vec<OrderingKey>,
}

/// Worker 0's copy of the nodes, for the single-page RankMass.
#[derive(Default)]
struct Gathered {
    /// Each node's rank in URL order, which breaks ties in the orders.
    url_rank: Vec<u32>,
    ranks: Vec<u64>,
    trust: Vec<u64>,
    /// Where each worker's nodes start in the global numbering.
    base: Vec<u32>,
    /// The sums of the largest ranks, for the curves' best possible.
    best: LargestSums,
}

/// A worker's nodes as sent to worker 0: their places in URL order (see
/// `Part::url_rank`), ranks and trust weights.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct NodesPart {
    pub url_rank: Vec<u32>,
    pub ranks: Vec<u64>,
    pub trust: Vec<u64>,
}

/// A worker's outlinks as sent to worker 0 (see [`Msg::Graph`]).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct GraphPart {
    pub offsets: Vec<u32>,
    pub targets: Vec<u32>,
    pub runs: Vec<(u32, u32)>,
    pub inbound: Vec<Vec<u32>>,
}

/// A download as its page's worker receives it from worker 0: the page (its
/// node on that worker), its rank in the ordering (from 1), round and bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placed {
    pub node: u32,
    pub rank: u64,
    pub round: u32,
    pub bound: u64,
}

/// The orderings of one snapshot, on one worker.
pub struct Orders {
    index: usize,
    peers: usize,
    d: Damping,
    target: u128,
    max_rounds: u32,
    /// The windows requested, in millionths.
    windows: Vec<u32>,
    /// The windows to run: 100% first (it is also L-Neighbor), then the others.
    queue: VecDeque<u32>,
    single_page: bool,
    /// At most this many candidates' values a worker sends to settle a
    /// window's threshold (see [`Orders::on_fine`]).
    values_max: u64,
    /// The sum of the trust vector's weights.
    trust_total: u128,
    run: Option<Run>,
    finished: Option<Finished>,
    numbering: Option<Numbering>,
    /// This worker's nodes' PageRank, for the sorts' items.
    ranks: Vec<u64>,
    /// This worker's stretch of every node's PageRank from the largest.
    largest: Option<(Stretch, Vec<u64>)>,
    /// Worker 0, for the single-page RankMass.
    gathered: Option<Gathered>,
    /// Worker 0: the graph for the single-page RankMass, until it runs.
    graphs: Vec<(u32, GraphPart)>,
    /// The pass's sums per slot, reused by every pass.
    acc: Vec<u64>,
}

/// Where a worker writes its `rankmass_order` rows as the ranks of its
/// downloads arrive: the snapshot's part file, and the ledger for the URLs.
pub struct OrderRows<'a> {
    pub ledger: &'a Ledger,
    pub file: &'a mut SnapshotPart<RankmassOrderRow>,
}

impl OrderRows<'_> {
    /// The rows of this worker's downloads in an ordering, in rank order,
    /// their URLs looked up a block at a time.
    fn write(&mut self, part: &Part, key: OrderingKey, placed: &[Placed]) {
        let (ledger, file) = (self.ledger, &mut *self.file);
        in_lookup_blocks(
            placed,
            |block: &[&Placed], urls| {
                part.urls(ledger, block.iter().map(|p| p.node as usize), urls)
            },
            |p, url| {
                file.push(&RankmassOrderRow {
                    key,
                    rank: p.rank as i64,
                    url: url.to_string(),
                    round: i64::from(p.round),
                    bound: p.bound,
                })
            },
        );
    }
}

impl Orders {
    pub fn new(params: &RankmassParams, index: usize, peers: usize) -> Orders {
        let mut windows: Vec<u32> = params
            .windows
            .iter()
            .map(|w| ((w * 1e6).round() as u32).clamp(1, FULL))
            .collect();
        windows.sort_unstable();
        windows.dedup();
        Orders {
            index,
            peers,
            d: Damping::new(params.damping),
            target: target_units(params.epsilon),
            max_rounds: params.max_rounds,
            windows,
            queue: VecDeque::new(),
            single_page: false,
            values_max: params.selection_values_max,
            trust_total: 0,
            run: None,
            finished: None,
            numbering: None,
            ranks: Vec::new(),
            largest: None,
            gathered: None,
            graphs: Vec::new(),
            acc: Vec::new(),
        }
    }

    /// Starts the orderings of a solved snapshot: `ranks` is the PageRank of
    /// `part`'s nodes, `trusted` and `edges` the graph's totals.
    pub fn start(
        &mut self,
        part: &Part,
        ranks: &[u64],
        trust_total: u128,
        edges: u64,
        max_edges: u64,
        out: &mut Vec<Out>,
    ) {
        self.trust_total = trust_total;
        self.single_page = edges <= max_edges;
        self.finished = None;
        self.gathered = None;
        self.ranks = ranks.to_vec();
        if self.single_page {
            out.push(Out::Msg(Msg::Nodes {
                to: 0,
                from: self.index as u32,
                nodes: Box::new(NodesPart {
                    url_rank: part.url_rank.clone(),
                    ranks: ranks.to_vec(),
                    trust: part.trust.clone(),
                }),
            }));
            out.push(Out::Msg(Msg::Graph {
                to: 0,
                from: self.index as u32,
                graph: Box::new(GraphPart {
                    offsets: part.offsets.clone(),
                    targets: part.targets.clone(),
                    runs: part
                        .runs
                        .iter()
                        .map(|r| (r.start as u32, r.end as u32))
                        .collect(),
                    inbound: part.inbound.clone(),
                }),
            }));
        }
        self.queue = std::iter::once(FULL)
            .chain(self.windows.iter().copied().filter(|w| *w != FULL))
            .collect();
        // The largest PageRanks first; the orderings start once they are
        // sorted.
        self.start_numbering(part, Job::Largest, out);
    }

    /// Starts the sort of `job`'s items: sorts this worker's, and sends every
    /// worker samples of their keys.
    fn start_numbering(&mut self, part: &Part, job: Job, out: &mut Vec<Out>) {
        let from = self.index as u32;
        let ranks = &self.ranks;
        let (mut items, by_bound): (Vec<Keyed>, bool) = match job {
            Job::Largest => (
                (0..ranks.len())
                    .map(|i| Keyed {
                        round: 0,
                        url: part.url_rank[i],
                        from,
                        node: i as u32,
                        bound: ranks[i],
                        rank: ranks[i],
                    })
                    .collect(),
                true,
            ),
            Job::Ordering(key) => {
                let f = self.finished.as_mut().expect("an ordering finished");
                let items = f
                    .log
                    .iter()
                    .map(|&(node, round, bound)| Keyed {
                        round,
                        url: part.url_rank[node as usize],
                        from,
                        node,
                        bound,
                        rank: ranks[node as usize],
                    })
                    .collect();
                // The last order to number the downloads in lets the log go.
                if f.keys.is_empty() {
                    f.log = Vec::new();
                }
                (items, key.algorithm != Algorithm::LNeighbor)
            }
        };
        items.sort_unstable_by_key(|k| k.key(by_bound));
        // Enough that no worker receives much more than its share (see
        // `algo::sample_sort`), few enough that the samples stay small next
        // to the items when there are many workers.
        let count = (4 * self.peers).clamp(64, 1024);
        let keys = samples(items.len(), |i| items[i].key(by_bound), count);
        broadcast(self.peers, out, |to| Msg::Samples {
            to,
            samples: keys.clone(),
        });
        self.numbering = Some(Numbering {
            job,
            by_bound,
            step: Step::Samples,
            items,
            total: 0,
        });
    }

    /// A round of the sort under way.
    fn on_numbering(&mut self, part: &Part, got: Sorting, out: &mut Vec<Out>) {
        let (index, peers) = (self.index, self.peers);
        let n = self.numbering.as_mut().expect("a sort is under way");
        let by_bound = n.by_bound;
        match n.step {
            Step::Samples => {
                let cut = splitters(got.samples, peers);
                let items = std::mem::take(&mut n.items);
                // Each worker's range of keys is a run of the sorted items.
                let mut start = 0;
                let runs: Vec<(usize, std::ops::Range<usize>)> = (0..peers)
                    .map(|w| {
                        let end = items.partition_point(|k| owner(&cut, &k.key(by_bound)) <= w);
                        let run = start..end;
                        start = end;
                        (w, run)
                    })
                    .filter(|(_, run)| !run.is_empty())
                    .collect();
                if let [(w, _)] = runs[..] {
                    // All to one worker (always so with one): moved, not copied.
                    out.push(Out::Msg(Msg::Route {
                        to: w as u64,
                        items,
                    }));
                } else {
                    for (w, run) in runs {
                        out.push(Out::Msg(Msg::Route {
                            to: w as u64,
                            items: items[run].to_vec(),
                        }));
                    }
                }
                n.step = Step::Route;
            }
            Step::Route => {
                let mut items = got.routed;
                items.sort_unstable_by_key(|k| k.key(by_bound));
                let sum: u128 = items.iter().map(|k| u128::from(k.rank)).sum();
                let count = items.len() as u64;
                broadcast(peers, out, |to| Msg::Count {
                    to,
                    from: index as u32,
                    count,
                    sum: Box::new(sum),
                });
                n.items = items;
                n.step = Step::Count;
            }
            Step::Count => {
                let (mut offset, mut base, mut total) = (0u64, 0u128, 0u64);
                for (from, count, sum) in got.counts {
                    if (from as usize) < index {
                        offset += count;
                        base += sum;
                    }
                    total += count;
                }
                let items = std::mem::take(&mut n.items);
                let stretch = Stretch {
                    offset,
                    base,
                    ends: !items.is_empty() && offset + items.len() as u64 == total,
                };
                n.total = total;
                match n.job {
                    Job::Largest => {
                        self.numbering = None;
                        let ranks = items.iter().map(|k| k.rank).collect();
                        self.largest = Some((stretch, ranks));
                        crate::memory::trace(|| {
                            format!("worker {index}: largest PageRanks sorted")
                        });
                        self.next_run(part, out);
                    }
                    Job::Ordering(key) => {
                        n.step = Step::Place;
                        self.place(key, total, &stretch, &items, out);
                    }
                }
            }
            Step::Place => {
                let (job, total) = (n.job, n.total);
                self.numbering = None;
                let Job::Ordering(key) = job else {
                    unreachable!("the largest PageRanks are not placed")
                };
                if index == 0 {
                    self.emit_curve(key, total, got.curves, out);
                }
                crate::memory::trace(|| format!("worker {index}: ordering {key:?} numbered"));
                let f = self.finished.as_mut().expect("an ordering finished");
                match f.keys.pop() {
                    Some(next) => self.start_numbering(part, Job::Ordering(next), out),
                    None => {
                        self.finished = None;
                        self.after_ordering(part, out);
                    }
                }
            }
        }
    }

    /// An ordering's downloads in this worker's stretch of its order: their
    /// ranks to the workers that hold their pages, and the curve's sums in
    /// the stretch to worker 0.
    fn place(
        &mut self,
        key: OrderingKey,
        total: u64,
        stretch: &Stretch,
        items: &[Keyed],
        out: &mut Vec<Out>,
    ) {
        let downloads = items
            .iter()
            .map(|k| (k.from as usize, k.node, k.round, k.bound));
        send_ranks(self.peers, key, stretch.offset, downloads, out);
        let at = checkpoints(total);
        let rank = |i: usize| items[i].rank;
        let mut part = CurvePart {
            actual: stretch.sums(items.len(), rank, &at),
            to_098_actual: stretch.crossing(items.len(), rank, level_units(0.98)),
            ..CurvePart::default()
        };
        if let Some((s, ranks)) = &self.largest {
            part.optimal = s.sums(ranks.len(), |i| ranks[i], &at);
        }
        if part != CurvePart::default() {
            out.push(Out::Msg(Msg::Curve {
                to: 0,
                part: Box::new(part),
            }));
        }
    }

    /// Worker 0: an ordering's curve and summary rows, from the workers' sums.
    fn emit_curve(
        &mut self,
        key: OrderingKey,
        total: u64,
        parts: Vec<CurvePart>,
        out: &mut Vec<Out>,
    ) {
        let f = self.finished.as_ref().expect("an ordering finished");
        let (mut actual, mut optimal) = (BTreeMap::new(), BTreeMap::new());
        let mut to_098_actual = None;
        for p in parts {
            actual.extend(p.actual);
            optimal.extend(p.optimal);
            to_098_actual = to_098_actual.or(p.to_098_actual);
        }
        let sum_at = |sums: &BTreeMap<u64, u128>, n: u64| match n {
            0 => 0,
            n => *sums.get(&n).expect("a worker's stretch holds every point"),
        };
        let points = checkpoints(total).into_iter().map(|n| CurvePoint {
            downloads: n,
            guaranteed: guaranteed_at(&f.progress, n),
            actual: sum_at(&actual, n),
            optimal: sum_at(&optimal, n),
        });
        if level_units(0.98) == 0 {
            to_098_actual = Some(0);
        }
        let (rounds, crm, micros) = (f.rounds, f.crm, f.micros);
        let done = (rounds, crm, micros, total);
        push_curve_rows(key, points, &f.progress, to_098_actual, done, out);
    }

    /// After an ordering is numbered: the next one, or the single-page
    /// RankMass and the end of the snapshot's orderings.
    fn after_ordering(&mut self, part: &Part, out: &mut Vec<Out>) {
        if !self.queue.is_empty() {
            self.next_run(part, out);
            return;
        }
        // Last, so that it does not hold up the windowed ones' rounds (and
        // their times).
        let graphs = std::mem::take(&mut self.graphs);
        if self.single_page && !graphs.is_empty() {
            self.run_single_page(graphs, out);
        }
        self.gathered = None;
        self.run = Some(Run {
            stage: Stage::Done,
            ..self.empty_run(FULL)
        });
    }

    fn next_run(&mut self, part: &Part, out: &mut Vec<Out>) {
        let window = self.queue.pop_front().expect("an ordering is left to run");
        let mut run = self.empty_run(window);
        run.rm = part
            .trust
            .iter()
            .map(|&w| start_mass(self.d, w, self.trust_total))
            .collect();
        run.downloaded = vec![false; part.pages.len()];
        self.run = Some(run);
        self.begin_round(part, out);
    }

    fn empty_run(&self, window: u32) -> Run {
        Run {
            window,
            rm: Vec::new(),
            downloaded: Vec::new(),
            log: Vec::new(),
            round: 0,
            crm: 0,
            downloads: 0,
            progress: vec![(0, 0)],
            stage: Stage::Pass,
            cands: Vec::new(),
            need: 0,
            chosen: Vec::new(),
            started: Instant::now(),
        }
    }

    fn run(&mut self) -> &mut Run {
        self.run.as_mut().expect("an ordering is under way")
    }

    /// A round's start: the candidates, and in the same pass their histogram on
    /// a log scale (none when the window takes them all).
    fn begin_round(&mut self, part: &Part, out: &mut Vec<Out>) {
        let peers = self.peers;
        let run = self.run.as_mut().expect("an ordering is under way");
        run.cands.clear();
        let (rm, downloaded) = (run.rm.as_slice(), run.downloaded.as_slice());
        if run.window == FULL {
            run.cands.extend(
                (0..rm.len() as u32).filter(|&i| rm[i as usize] > 0 && !downloaded[i as usize]),
            );
            let all = std::mem::take(&mut run.cands);
            self.propagate(part, all, out);
            return;
        }
        let mut counts = vec![0u64; FINE_BUCKETS];
        for (i, (&r, &done)) in rm.iter().zip(downloaded).enumerate() {
            if r > 0 && !done {
                run.cands.push(i as u32);
                counts[fine_bucket(r)] += 1;
            }
        }
        let counts = sparse(&counts);
        run.stage = Stage::Fine;
        broadcast(peers, out, |to| Msg::Hist {
            to,
            counts: counts.clone(),
            lo: 0,
            hi: 0,
        });
    }

    fn send_hist(&mut self, shift: u32, out: &mut Vec<Out>) {
        let run = self.run.as_ref().expect("an ordering is under way");
        let mut counts = vec![0u64; 256];
        let (mut lo, mut hi) = (u64::MAX, 0);
        for &i in &run.cands {
            let rm = run.rm[i as usize];
            counts[digit(rm, shift)] += 1;
            lo = lo.min(rm);
            hi = hi.max(rm);
        }
        let counts = sparse(&counts);
        broadcast(self.peers, out, |to| Msg::Hist {
            to,
            counts: counts.clone(),
            lo,
            hi,
        });
    }

    /// Downloads `selected` and sends the round's propagation pass: every
    /// downloaded page with `rm > 0` pushes it and is zeroed.
    fn propagate(&mut self, part: &Part, selected: Vec<u32>, out: &mut Vec<Out>) {
        let d = self.d;
        let run = self.run.as_mut().expect("an ordering is under way");
        let round = run.round + 1;
        for &i in &selected {
            run.downloaded[i as usize] = true;
            run.log.push((i, round, run.rm[i as usize]));
        }
        let acc = &mut self.acc;
        acc.clear();
        acc.resize(part.slot_count(), 0);
        // As a slice: a store through the `Vec` made the compiler reload its
        // pointer and length on every link.
        let acc = acc.as_mut_slice();
        let mut pushed: u128 = 0;
        let mut dangling: u128 = 0;
        let (rm, downloaded) = (run.rm.as_mut_slice(), run.downloaded.as_slice());
        for i in 0..rm.len() {
            let r = rm[i];
            if r == 0 || !downloaded[i] {
                continue;
            }
            pushed += u128::from(r);
            let c = part.out_degree(i);
            if c == 0 {
                dangling += u128::from(r);
            } else {
                let s = d.share(r, c);
                let (lo, hi) = (part.offsets[i] as usize, part.offsets[i + 1] as usize);
                for &slot in &part.targets[lo..hi] {
                    acc[slot as usize] += s;
                }
            }
            rm[i] = 0;
        }
        // This worker's own run stays in `acc` for `on_pass`.
        for (w, r) in part.runs.iter().enumerate() {
            if !r.is_empty() && w != self.index {
                out.push(Out::Msg(Msg::Mass {
                    to: w as u64,
                    from: self.index as u32,
                    mass: acc[r.clone()].to_vec(),
                }));
            }
        }
        let sums = Sums {
            pushed,
            selected: selected.len() as u64,
            dangling: [dangling, 0],
            ..Sums::default()
        };
        broadcast(self.peers, out, |to| Msg::Sums {
            to,
            sums: Box::new(sums),
        });
        run.stage = Stage::Pass;
    }

    /// A round of messages; true when the snapshot's orderings are all done
    /// and their rows of this worker's pages written to `rows`.
    pub fn receive(
        &mut self,
        part: &Part,
        sums: Sums,
        masses: Vec<(u32, Vec<u64>)>,
        rest: Vec<Msg>,
        rows: &mut OrderRows<'_>,
        out: &mut Vec<Out>,
    ) -> bool {
        let mut hist = vec![0u64; FINE_BUCKETS];
        let (mut lo, mut hi) = (u64::MAX, 0);
        let mut ties: Vec<u32> = Vec::new();
        let mut values: Vec<(u64, u32)> = Vec::new();
        let mut nodes = Vec::new();
        let mut graphs = Vec::new();
        let mut got = Sorting::default();
        let mut placed = Vec::new();
        for m in rest {
            match m {
                Msg::Hist {
                    counts,
                    lo: l,
                    hi: h,
                    ..
                } => {
                    for (b, c) in counts {
                        hist[usize::from(b)] += c;
                    }
                    lo = lo.min(l);
                    hi = hi.max(h);
                }
                Msg::Ties { places, .. } => ties.extend(places),
                Msg::Values { values: v, .. } => values.extend(v),
                Msg::Nodes { from, nodes: n, .. } => nodes.push((from, *n)),
                Msg::Graph { from, graph, .. } => graphs.push((from, *graph)),
                Msg::Samples { samples, .. } => got.samples.extend(samples),
                Msg::Route { items, .. } => {
                    if got.routed.is_empty() {
                        got.routed = items;
                    } else {
                        got.routed.extend(items);
                    }
                }
                Msg::Count {
                    from, count, sum, ..
                } => got.counts.push((from, count, *sum)),
                Msg::Curve { part, .. } => got.curves.push(*part),
                Msg::Rows { key, placed: p, .. } => placed.push((key, p)),
                _ => {}
            }
        }
        // Written at once and let go: waiting for the end of the snapshot,
        // every ordering's placed downloads were held together (155 MB on
        // bench snapshot 9, 1 worker). No ordering is under way in this
        // round, so the writing counts in no ordering's time. Each worker's
        // stretch of the order is a run of ranks: in rank order.
        placed.sort_unstable_by_key(|(key, p)| (*key, p.first().map(|p| p.rank)));
        for (key, p) in placed {
            rows.write(part, key, &p);
        }
        if !nodes.is_empty() {
            self.gather(nodes);
        }
        self.graphs.extend(graphs);
        if self.numbering.is_some() {
            self.on_numbering(part, got, out);
            return false;
        }
        match self.run().stage {
            // This round brought the ranks of the single-page ordering's
            // downloads, if it ran.
            Stage::Done => {
                // The snapshot's orderings are over. What the last one kept,
                // and the pass's sums, would otherwise wait through the next
                // snapshot's fold and site rounds, where the run's memory
                // peaks (`start` makes them anew).
                self.run = None;
                self.acc = Vec::new();
                self.ranks = Vec::new();
                self.largest = None;
                return true;
            }
            Stage::Fine => self.on_fine(part, hist, out),
            Stage::Values => self.on_values(part, values, out),
            Stage::Hist(shift) => self.on_hist(part, shift, hist, (lo, hi), out),
            Stage::Ties => self.on_ties(part, ties, out),
            Stage::Pass => self.on_pass(part, sums, masses, out),
        }
        false
    }

    /// The round's first histogram, of the candidates' buckets on a log scale,
    /// summed over the workers: the window takes every candidate above the
    /// bucket where its threshold falls, and some of that bucket. Those are
    /// settled by their values (`Stage::Values`) when no worker need send more
    /// than `values_max` of them; otherwise the bucket's candidates are first
    /// narrowed by byte histograms (`Stage::Hist`), or, when the bucket holds a
    /// single value, by URL (`Stage::Ties`).
    fn on_fine(&mut self, part: &Part, hist: Vec<u64>, out: &mut Vec<Out>) {
        let values_max = self.values_max;
        let peers = self.peers;
        let run = self.run();
        let count: u64 = hist.iter().sum();
        if count == 0 {
            // Nothing left to download: the round only propagates.
            self.propagate(part, Vec::new(), out);
            return;
        }
        let need = (u128::from(run.window) * u128::from(count)).div_ceil(u128::from(FULL));
        run.need = (need as u64).clamp(1, count);
        run.chosen.clear();
        let (v, settled) = run.cut(&hist, fine_bucket);
        if settled {
            let chosen = std::mem::take(&mut run.chosen);
            self.propagate(part, chosen, out);
            return;
        }
        if hist[v].min(run.need) <= values_max {
            // Each worker's largest, as many as are still needed: the cut is
            // among them.
            let mut mine: Vec<(u64, u32)> = run
                .cands
                .iter()
                .map(|&i| (run.rm[i as usize], part.url_rank[i as usize]))
                .collect();
            mine.sort_unstable_by_key(|&(r, url)| (std::cmp::Reverse(r), url));
            mine.truncate(run.need as usize);
            run.stage = Stage::Values;
            broadcast(peers, out, |to| Msg::Values {
                to,
                values: mine.clone(),
            });
            return;
        }
        // The bucket's candidates share their highest set bit `e` and the
        // `FINE_BITS` bits below it; the next pass reads the byte just below.
        let e = (v >> FINE_BITS) as u32;
        if e > FINE_BITS {
            let next = (e - FINE_BITS - 1).saturating_sub(7);
            run.stage = Stage::Hist(next);
            self.send_hist(next, out);
        } else {
            self.send_ties(part, out);
        }
    }

    /// The values of the candidates in the threshold's bucket, from every
    /// worker: the window takes the largest `rm`, the smallest URL among equal
    /// ones, as many as are still needed.
    fn on_values(&mut self, part: &Part, mut values: Vec<(u64, u32)>, out: &mut Vec<Out>) {
        let run = self.run();
        values.sort_unstable_by_key(|&(r, url)| (std::cmp::Reverse(r), url));
        let (rm, url) = values[run.need as usize - 1];
        let cands = std::mem::take(&mut run.cands);
        run.chosen.extend(cands.into_iter().filter(|&i| {
            let r = run.rm[i as usize];
            r > rm || (r == rm && part.url_rank[i as usize] <= url)
        }));
        let chosen = std::mem::take(&mut run.chosen);
        self.propagate(part, chosen, out);
    }

    /// A pass's histogram of the byte of the candidates' `rm` at bit `shift`,
    /// summed over the workers, and the candidates' smallest and largest `rm`.
    fn on_hist(
        &mut self,
        part: &Part,
        shift: u32,
        hist: Vec<u64>,
        (lo, hi): (u64, u64),
        out: &mut Vec<Out>,
    ) {
        let run = self.run();
        let count: u64 = hist.iter().sum();
        if lo < hi {
            // The byte of the threshold: all above it are in, some of it may be.
            let (_, settled) = run.cut(&hist[..256], |r| digit(r, shift));
            if settled {
                let chosen = std::mem::take(&mut run.chosen);
                self.propagate(part, chosen, out);
                return;
            }
            if shift > 0 {
                // The candidates left agree on every bit from `shift` up, and
                // on every bit above the highest where `lo` and `hi` differ:
                // the next pass reads the byte just below both (rather than a
                // byte of zeros, as the top bytes of most ranks are).
                let top = (63 - (lo ^ hi).leading_zeros()).min(shift - 1);
                let next = top.saturating_sub(7);
                run.stage = Stage::Hist(next);
                self.send_hist(next, out);
                return;
            }
        } else if count == run.need {
            // All equal, and all in.
            run.chosen.append(&mut run.cands);
            let chosen = std::mem::take(&mut run.chosen);
            self.propagate(part, chosen, out);
            return;
        }
        self.send_ties(part, out);
    }

    /// Every candidate left has the same `rm`: the smallest URLs go in,
    /// compared by their places in URL order.
    fn send_ties(&mut self, part: &Part, out: &mut Vec<Out>) {
        let peers = self.peers;
        let run = self.run();
        let mut tied: Vec<u32> = run
            .cands
            .iter()
            .map(|&i| part.url_rank[i as usize])
            .collect();
        tied.sort_unstable();
        tied.truncate(run.need as usize);
        run.stage = Stage::Ties;
        broadcast(peers, out, |to| Msg::Ties {
            to,
            places: tied.clone(),
        });
    }

    fn on_ties(&mut self, part: &Part, mut ties: Vec<u32>, out: &mut Vec<Out>) {
        let run = self.run();
        ties.sort_unstable();
        let last = ties[run.need as usize - 1];
        let cands = std::mem::take(&mut run.cands);
        run.chosen.extend(
            cands
                .into_iter()
                .filter(|&i| part.url_rank[i as usize] <= last),
        );
        let chosen = std::mem::take(&mut run.chosen);
        self.propagate(part, chosen, out);
    }

    fn on_pass(
        &mut self,
        part: &Part,
        sums: Sums,
        masses: Vec<(u32, Vec<u64>)>,
        out: &mut Vec<Out>,
    ) {
        let d = self.d;
        let total = self.trust_total;
        let max_rounds = self.max_rounds;
        let target = self.target;
        let own = part.runs.get(self.index).cloned().unwrap_or(0..0);
        let run = self.run.as_mut().expect("an ordering is under way");
        let mine = (self.index as u32, &self.acc[own]);
        let rm = run.rm.as_mut_slice();
        for (from, mass) in masses.iter().map(|(f, m)| (*f, m.as_slice())).chain([mine]) {
            for (&i, &m) in part.inbound[from as usize].iter().zip(mass) {
                if i != u32::MAX {
                    rm[i as usize] += m;
                }
            }
        }
        let jump = d.apply(sums.dangling[0]);
        if jump > 0 {
            for &(i, w) in &part.trusted {
                run.rm[i as usize] += trust_share(jump, w, total);
            }
        }
        run.crm += sums.pushed;
        run.downloads += sums.selected;
        run.round += 1;
        run.progress.push((run.downloads, run.crm));
        let exhausted = sums.selected == 0 && sums.pushed == 0;
        if !(run.crm >= target || exhausted || run.round >= max_rounds) {
            self.begin_round(part, out);
            return;
        }
        // The next ordering starts once this one's rows are written.
        let run = self.run.take().expect("an ordering is under way");
        let windowed = |w| OrderingKey {
            algorithm: Algorithm::Windowed,
            window_ppm: Some(w),
        };
        // Numbered from the last: L-Neighbor first, as it is the 100% window's
        // own order by level, then the 100% window if it was asked for.
        let keys = match run.window {
            FULL if self.windows.contains(&FULL) => vec![windowed(FULL), L_NEIGHBOR],
            FULL => vec![L_NEIGHBOR],
            w => vec![windowed(w)],
        };
        let mut f = Finished {
            progress: run.progress,
            rounds: run.round,
            crm: run.crm,
            micros: run.started.elapsed().as_micros() as u64,
            log: run.log,
            keys,
        };
        let first = f.keys.pop().expect("an ordering has a key");
        self.finished = Some(f);
        self.start_numbering(part, Job::Ordering(first), out);
    }

    /// Worker 0: every worker's nodes, numbered by worker, then position.
    fn gather(&mut self, mut nodes: Vec<(u32, NodesPart)>) {
        nodes.sort_unstable_by_key(|n| n.0);
        let mut g = Gathered {
            base: vec![0; self.peers],
            ..Gathered::default()
        };
        for (from, n) in nodes {
            g.base[from as usize] = g.url_rank.len() as u32;
            g.url_rank.extend(n.url_rank);
            g.ranks.extend(n.ranks);
            g.trust.extend(n.trust);
        }
        g.best = LargestSums::new(g.ranks.clone());
        self.gathered = Some(g);
    }

    /// Worker 0: the single-page RankMass on the whole graph.
    fn run_single_page(&mut self, mut graphs: Vec<(u32, GraphPart)>, out: &mut Vec<Out>) {
        let started = Instant::now();
        let g = self.gathered.as_ref().expect("nodes come with the graph");
        graphs.sort_unstable_by_key(|p| p.0);
        let n = g.url_rank.len();
        let mut adj: Vec<Vec<u32>> = vec![Vec::new(); n];
        for (from, p) in &graphs {
            let base = g.base[*from as usize];
            for i in 0..p.offsets.len().saturating_sub(1) {
                let (lo, hi) = (p.offsets[i] as usize, p.offsets[i + 1] as usize);
                let list = &mut adj[(base + i as u32) as usize];
                for &slot in &p.targets[lo..hi] {
                    // The slot's owner, and its position in the owner's order.
                    // The runs are consecutive ranges in owner order.
                    let owner = p.runs.partition_point(|r| r.1 <= slot);
                    let k = (slot - p.runs[owner].0) as usize;
                    let local = graphs[owner].1.inbound[*from as usize][k];
                    if local != u32::MAX {
                        list.push(g.base[owner] + local);
                    }
                }
            }
        }
        let max_steps = u64::from(self.max_rounds) * (n as u64).max(1);
        let o = single_page(
            &adj,
            &g.trust,
            self.trust_total,
            &g.url_rank,
            self.d,
            self.target,
            max_steps,
        );
        let key = OrderingKey {
            algorithm: Algorithm::RankMass,
            window_ppm: None,
        };
        let micros = started.elapsed().as_micros() as u64;
        self.emit(key, &o.downloads, &o.progress, o.rounds, o.crm, micros, out);
    }

    /// Worker 0: the single-page ordering's curve and summary rows, and each
    /// download's rank sent to its page's worker, which writes its
    /// `rankmass_order` row (see [`OrderRows`]).
    #[allow(clippy::too_many_arguments)]
    fn emit(
        &mut self,
        key: OrderingKey,
        downloads: &[Download],
        progress: &[(u64, u128)],
        rounds: u32,
        crm: u128,
        micros: u64,
        out: &mut Vec<Out>,
    ) {
        let g = self.gathered.as_ref().expect("nodes arrive first");
        let ranks: Vec<u64> = downloads.iter().map(|d| g.ranks[d.node as usize]).collect();
        let points = curve(&ranks, progress, &g.best);
        let to_098_actual = downloads_to_actual(&ranks, level_units(0.98));
        let done = (rounds, crm, micros, downloads.len() as u64);
        push_curve_rows(key, points, progress, to_098_actual, done, out);
        drop(ranks);
        // Workers without nodes share their base with the next one, so a
        // node's owner is the last worker whose nodes start at or before it.
        let owner = |d: &Download| g.base.partition_point(|&b| b <= d.node) - 1;
        let placed = downloads.iter().map(|d| {
            let w = owner(d);
            (w, d.node - g.base[w], d.round, d.bound)
        });
        send_ranks(self.peers, key, 0, placed, out);
    }
}

/// Worker 0: an ordering's curve rows at `points`, and its summary row, with
/// `done` its rounds, final guarantee, time and downloads.
fn push_curve_rows(
    key: OrderingKey,
    points: impl IntoIterator<Item = CurvePoint>,
    progress: &[(u64, u128)],
    to_098_actual: Option<u64>,
    (rounds, crm, micros, downloads): (u32, u128, u64, u64),
    out: &mut Vec<Out>,
) {
    for p in points {
        out.push(Out::Curve(Box::new(RankmassCurveRow {
            key,
            downloads: p.downloads as i64,
            guaranteed: p.guaranteed,
            actual: p.actual,
            optimal: p.optimal,
        })));
    }
    let level = level_units(0.98);
    out.push(Out::Summary(Box::new(RankmassSummaryRow {
        key,
        to_098_guaranteed: downloads_to_guarantee(progress, level).map(|n| n as i64),
        to_098_actual: to_098_actual.map(|n| n as i64),
        rounds: i64::from(rounds),
        micros,
        final_guaranteed: crm,
        downloads: downloads as i64,
    })));
}

/// Sends each of an ordering's downloads, `(worker, node there, round, rm at
/// download)` in rank order from `before + 1`, to the worker that holds its
/// page, one message per worker, for its `rankmass_order` row.
fn send_ranks(
    peers: usize,
    key: OrderingKey,
    before: u64,
    downloads: impl Iterator<Item = (usize, u32, u32, u64)> + Clone,
    out: &mut Vec<Out>,
) {
    // Sized exactly: with one worker they hold every download (1.4M of 24
    // bytes on bench snapshot 9), and doubling left up to half unused.
    let mut sizes = vec![0usize; peers];
    for (w, ..) in downloads.clone() {
        sizes[w] += 1;
    }
    let mut placed: Vec<Vec<Placed>> = sizes.into_iter().map(Vec::with_capacity).collect();
    for (k, (w, node, round, bound)) in downloads.enumerate() {
        placed[w].push(Placed {
            node,
            rank: before + k as u64 + 1,
            round,
            bound,
        });
    }
    for (w, placed) in placed.into_iter().enumerate() {
        if !placed.is_empty() {
            out.push(Out::Msg(Msg::Rows {
                to: w as u64,
                key,
                placed,
            }));
        }
    }
}

/// The byte of `rm` at bit `shift`.
fn digit(rm: u64, shift: u32) -> usize {
    ((rm >> shift) & 0xff) as usize
}

/// A positive `rm`'s bucket on a log scale: its highest set bit, then the
/// `FINE_BITS` bits below it (zeros below bit 0), so that larger values never
/// fall in lower buckets, and a bucket's values are within 1/64 of each other.
/// Ranks span dozens of binary orders of magnitude: a histogram of one byte
/// of them put most candidates in one bucket, and a window's threshold took
/// about four passes to find.
fn fine_bucket(rm: u64) -> usize {
    debug_assert!(rm > 0);
    let e = 63 - rm.leading_zeros();
    let below = if e >= FINE_BITS {
        rm >> (e - FINE_BITS)
    } else {
        rm << (FINE_BITS - e)
    };
    ((e << FINE_BITS) as usize) | (below as usize & ((1 << FINE_BITS) - 1))
}

/// A histogram's nonzero buckets.
fn sparse(counts: &[u64]) -> Vec<(u16, u64)> {
    counts
        .iter()
        .enumerate()
        .filter(|(_, c)| **c > 0)
        .map(|(b, &c)| (b as u16, c))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// An order cut into random stretches, some empty: the stretches' sums at
    /// the curve's points and the crossing of a level, put together as worker
    /// 0 does, are the whole order's prefix sums and `downloads_to_actual`.
    #[test]
    fn stretches_answer_for_the_whole_order() {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(9);
        for case in 0..500 {
            let n = rng.random_range(0..200usize);
            let ranks: Vec<u64> = (0..n)
                .map(|_| rng.random::<u64>() >> rng.random_range(8..64))
                .collect();
            let mut cuts: Vec<usize> = (0..rng.random_range(0..6))
                .map(|_| rng.random_range(0..=n))
                .collect();
            cuts.extend([0, n]);
            cuts.sort_unstable();
            let whole: u128 = ranks.iter().map(|&r| u128::from(r)).sum();
            let level = match rng.random_range(0..3) {
                0 => whole + 1,
                _ => rng.random_range(1..=whole.max(1)),
            };
            // Points past the end too, as the largest PageRanks' stretch
            // answers for them (an ordering has no more downloads than the
            // graph has nodes, so never past the end of none).
            let past = if n > 0 { rng.random_range(0..3) } else { 0 };
            let at: Vec<u64> = checkpoints(n as u64 + past);
            let (mut sums, mut crossings) = (BTreeMap::new(), Vec::new());
            let last = cuts.windows(2).rposition(|w| w[0] < w[1]);
            for (k, w) in cuts.windows(2).enumerate() {
                let part = &ranks[w[0]..w[1]];
                let stretch = Stretch {
                    offset: w[0] as u64,
                    base: ranks[..w[0]].iter().map(|&r| u128::from(r)).sum(),
                    ends: Some(k) == last,
                };
                for (p, sum) in stretch.sums(part.len(), |i| part[i], &at) {
                    assert!(sums.insert(p, sum).is_none(), "case {case}: {p} twice");
                }
                crossings.extend(stretch.crossing(part.len(), |i| part[i], level));
            }
            for &p in at.iter().filter(|&&p| p > 0) {
                let want: u128 = ranks[..(p as usize).min(n)]
                    .iter()
                    .map(|&r| u128::from(r))
                    .sum();
                assert_eq!(sums.get(&p), Some(&want), "case {case}: point {p}");
            }
            assert!(crossings.len() <= 1, "case {case}");
            assert_eq!(
                crossings.first().copied(),
                downloads_to_actual(&ranks, level),
                "case {case}"
            );
        }
    }

    /// Buckets never put a larger value below a smaller one, and a bucket's
    /// values share their highest set bit and the `FINE_BITS` bits below it.
    #[test]
    fn fine_buckets_are_monotone_and_narrow() {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(5);
        for _ in 0..100_000 {
            let shift = rng.random_range(0..64);
            let a: u64 = (rng.random::<u64>() >> shift).max(1);
            let b: u64 = (a.wrapping_add(rng.random::<u64>() >> rng.random_range(0..64))).max(a);
            assert!(fine_bucket(a) <= fine_bucket(b), "{a} {b}");
            if fine_bucket(a) == fine_bucket(b) {
                let e = 63 - a.leading_zeros();
                let kept = e.saturating_sub(FINE_BITS);
                assert_eq!(a >> kept, b >> kept, "{a} {b}");
            }
        }
        // Below 2^7 every value has a bucket of its own.
        for v in 1..127u64 {
            assert!(fine_bucket(v) < fine_bucket(v + 1), "{v}");
        }
        assert_eq!(fine_bucket(128), fine_bucket(129));
        assert_eq!(fine_bucket(u64::MAX), FINE_BUCKETS - 1);
        assert_eq!(fine_bucket(1), 0);
    }
}
