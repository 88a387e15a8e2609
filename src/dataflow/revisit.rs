//! The revisit plan: the optimal frequencies' multiplier found by rounds over all
//! workers (docs/change.md, `algo::revisit`).
//!
//! Each worker keeps the plan's pages of its hosts. Per snapshot, in a timely loop
//! whose inner time counts rounds, every worker sends its partial sums to every
//! worker; all workers add the same numbers (fixed point, so the order does not
//! matter) and take the same step, until the budget is met. A round moves a few
//! dozen bytes per worker, never a page. Then each worker writes its own pages'
//! rows, and worker 0 the summary.

use std::collections::{BTreeMap, HashMap};

use differential_dataflow::{AsCollection, VecCollection};
use serde::{Deserialize, Serialize};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::vec::{Broadcast, Map};
use timely::dataflow::operators::{Capability, ConnectLoop, Enter, Feedback, Leave};
use timely::dataflow::Stream;
use timely::order::Product;

use crate::algo::change::DAY;
use crate::algo::pagerank::to_f64;
use crate::algo::revisit::{
    page_freshness, Final, PageSet, Partial, PlanPage, RateBins, Search, Step,
};
use crate::dataflow::split::split_by_kind;
use crate::dataflow::{WorkerCtx, ROWS_PER_ACTIVATION};
use crate::job::Analysis;

use crate::ledger::{Ledger, LedgerOut};
use crate::model::{PageId, Seq};
use crate::output::change::{PlanInput, RevisitPlanRow, RevisitSummaryRow};

/// What a worker tells every worker in a round.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct Msg {
    partial: Partial,
    /// Round 0: the pages binned by ratio, for the search's start.
    bins: RateBins,
    /// Final round: Σ w F under the optimal, uniform and proportional plans.
    fresh: [i128; 3],
}

/// What the solving operator emits.
#[derive(Clone, Debug)]
enum SolveOut {
    Msg(Msg),
    /// A row of the snapshot's plan (a per-snapshot message).
    Plan(RevisitPlanRow),
    Summary((RevisitSummaryRow, Seq, isize)),
}

/// Fixed-point scale of summed freshness.
const FRESH_SCALE: f64 = 1e12;

/// Where the current snapshot's solve stands.
enum Phase {
    /// Waiting for the plan's pages.
    Pages,
    /// Waiting for round-0 totals.
    Totals,
    /// Waiting for the partial sums at the search's current `μ`.
    Search(Search, Partial),
    /// Waiting for the freshness sums of the final plans.
    Final(Partial),
}

type Time = Product<Seq, u32>;
type FastMap<K, V> = HashMap<K, V, foldhash::fast::FixedState>;

/// One worker's side of the solve.
struct Solver {
    index: usize,
    peers: usize,
    budget: f64,
    /// This snapshot's pages, sorted, and their numeric form.
    inputs: Vec<PlanInput>,
    set: PageSet,
    /// The snapshot's rows not yet handed on, once the plan is final.
    rows: Option<PlanRows>,
}

/// The final plans of a worker's pages, whose rows are handed on in batches
/// so that they are never all held at once (1.06M rows on bench snapshot 9
/// with 1 worker: 436 MB in one vector, and again in the channel).
struct PlanRows {
    optimal: Vec<f64>,
    uniform: f64,
    lambda_sum: f64,
    /// The next page whose row is to be made.
    next: usize,
}

impl PlanRows {
    /// A page's frequency under the proportional plan.
    fn proportional(&self, budget: f64, p: &PlanPage) -> f64 {
        if self.lambda_sum > 0.0 {
            // Σλ is fixed point; so is each λ's share, for worker independence.
            budget * (p.lambda * DAY * 1e12).round() / self.lambda_sum
        } else {
            0.0
        }
    }

    /// Page `i`'s freshness under the optimal, uniform and proportional plans.
    fn freshness(&self, budget: f64, p: &PlanPage, i: usize) -> [f64; 3] {
        [
            page_freshness(p.lambda, self.optimal[i]),
            page_freshness(p.lambda, self.uniform),
            page_freshness(p.lambda, self.proportional(budget, p)),
        ]
    }
}

impl Solver {
    fn reply(partial: Partial) -> Option<Msg> {
        Some(Msg {
            partial,
            ..Msg::default()
        })
    }

    /// The plans at the final `μ`: this worker's freshness sums. Its rows
    /// follow in batches ([`Self::take_rows`]).
    fn finish(&mut self, plan: Option<Final>, totals: &Partial) -> Msg {
        let optimal: Vec<f64> = match plan {
            Some(plan) => self.set.frequencies(&plan),
            None => vec![0.0; self.inputs.len()],
        };
        let rows = PlanRows {
            uniform: self.budget / totals.pages as f64,
            lambda_sum: totals.sum_lambda as f64,
            optimal,
            next: 0,
        };
        let mut fresh = [0i128; 3];
        for (i, p) in self.set.pages.iter().enumerate() {
            let freshness = rows.freshness(self.budget, p, i);
            for (s, v) in fresh.iter_mut().zip(freshness) {
                *s += (p.weight * v * FRESH_SCALE).round() as i128;
            }
        }
        self.rows = Some(rows);
        Msg {
            fresh,
            ..Msg::default()
        }
    }

    fn has_rows(&self) -> bool {
        self.rows.is_some()
    }

    /// Up to `max` more of the snapshot's rows into `out`; the plan's pages
    /// are let go after the last.
    fn take_rows(&mut self, ledger: &Ledger, max: usize, out: &mut Vec<SolveOut>) {
        let Some(rows) = self.rows.as_mut() else {
            return;
        };
        let end = self.inputs.len().min(rows.next.saturating_add(max));
        for i in rows.next..end {
            let (p, input) = (&self.set.pages[i], &self.inputs[i]);
            // The row's freshness is the optimal plan's.
            let freshness = page_freshness(p.lambda, rows.optimal[i]);
            out.push(SolveOut::Plan(RevisitPlanRow {
                url: ledger
                    .url_of(input.page)
                    .expect("the plan's pages are its worker's ledger's")
                    .to_string(),
                lambda: p.lambda.to_bits(),
                weight: p.weight.to_bits(),
                optimal: rows.optimal[i].to_bits(),
                uniform: rows.uniform.to_bits(),
                proportional: rows.proportional(self.budget, p).to_bits(),
                freshness: freshness.to_bits(),
                backoff: input.backoff_bits,
            }));
        }
        rows.next = end;
        if end == self.inputs.len() {
            self.rows = None;
            self.inputs = Vec::new();
            self.set = PageSet::default();
        }
    }

    /// Worker 0's summary rows from everyone's freshness sums.
    fn summary(&self, totals: &Partial, fresh: &[i128; 3], t: Seq, out: &mut Vec<SolveOut>) {
        if self.index != 0 || totals.sum_w <= 0 {
            return;
        }
        for (policy, sum) in fresh.iter().enumerate() {
            // Both sums are fixed point at 1e12.
            let row = RevisitSummaryRow {
                policy: policy as u8,
                budget: self.budget.to_bits(),
                pages: totals.pages as i64,
                freshness: (*sum as f64 / totals.sum_w as f64).to_bits(),
            };
            out.push(SolveOut::Summary((row.clone(), t, 1)));
            out.push(SolveOut::Summary((row, t + 1, -1)));
        }
    }
}

/// The revisit plan's rows from the ledger's per-snapshot plan messages.
pub fn revisit_plan<'s>(
    plan: Stream<'s, Seq, Vec<(LedgerOut, Seq, isize)>>,
    ctx: &WorkerCtx,
) -> (
    Stream<'s, Seq, Vec<RevisitPlanRow>>,
    VecCollection<'s, Seq, RevisitSummaryRow>,
) {
    let outer = plan.scope();
    let ctx = ctx.clone();
    outer.iterative::<u32, _, _>(|inner| {
        let peers = inner.peers();
        let worker = inner.worker();
        let pages = plan.enter(inner);
        let (handle, cycle) = inner.feedback::<Vec<Msg>>(Product::new(0, 1));
        let out = pages.binary_frontier::<_, CapacityContainerBuilder<Vec<SolveOut>>, _, _, _, _>(
            cycle,
            Pipeline,
            Pipeline,
            "RevisitPlan",
            move |cap, info| {
                let activator = worker.activator_for(info.address.clone());
                let epochs: Vec<Seq> = ctx
                    .plan
                    .epochs()
                    .into_iter()
                    .filter(|t| ctx.plan.writes(*t))
                    .collect();
                let mut solver = Solver {
                    index: ctx.index,
                    peers,
                    budget: ctx.plan.job.change.budget_per_day,
                    inputs: Vec::new(),
                    set: PageSet::default(),
                    rows: None,
                };
                // `main` stands for the snapshots not yet started; `round` for the
                // current snapshot's next round.
                // Hold nothing before the first snapshot written (the restore epoch
                // must complete without this operator).
                let mut main: Option<Capability<Time>> = epochs.first().map(|&t| {
                    let mut cap = cap;
                    cap.downgrade(&Product::new(t, 0));
                    cap
                });
                let mut round: Option<Capability<Time>> = None;
                // While this worker's rows of the last plan are handed on, at
                // the time of its final round (see `Solver::take_rows`).
                let mut rows_at: Option<Capability<Time>> = None;
                let mut next = 0usize;
                let mut phase = Phase::Pages;
                let mut stash: BTreeMap<Seq, Vec<PlanInput>> = BTreeMap::new();
                // PageRank weights, when the RankMass analysis runs.
                let ranked = ctx.plan.job.analyses.contains(&Analysis::Rankmass);
                let mut weights: BTreeMap<Seq, FastMap<PageId, u64>> = BTreeMap::new();
                let mut inbox: BTreeMap<Time, (usize, Msg)> = BTreeMap::new();
                let mut started = std::time::Instant::now();
                // This worker's time in the solve itself, apart from waiting for rounds.
                let mut busy = std::time::Duration::ZERO;
                move |(pages_in, pages_frontier), (msgs_in, msgs_frontier), output| {
                    pages_in.for_each(|_, data| {
                        for (o, t, d) in data.drain(..) {
                            match (o, d > 0) {
                                (LedgerOut::PlanPage(p), true) => {
                                    stash.entry(t).or_default().push(p)
                                }
                                (LedgerOut::PlanWeight(page, rank), true) => {
                                    weights.entry(t).or_default().insert(page, rank);
                                }
                                _ => {}
                            }
                        }
                    });
                    msgs_in.for_each(|c, data| {
                        let time = *c.stamp().iter().next().expect("rounds carry a time");
                        let slot = inbox.entry(time).or_default();
                        for m in data.drain(..) {
                            slot.0 += 1;
                            slot.1.partial.add(&m.partial);
                            slot.1.bins.add(&m.bins);
                            for (s, f) in slot.1.fresh.iter_mut().zip(m.fresh) {
                                *s += f;
                            }
                        }
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
                        if let Phase::Pages = phase {
                            if pages_frontier.less_equal(&Product::new(t, 0)) {
                                break;
                            }
                            let m = main.as_mut().expect("held until the last snapshot");
                            let mut r = m.delayed(&Product::new(t, 0));
                            match epochs.get(next + 1) {
                                Some(&n) => m.downgrade(&Product::new(n, 0)),
                                None => main = None,
                            }
                            // The last snapshot's rows go before its pages do.
                            if let Some(at) = rows_at.take() {
                                solver.take_rows(&ctx.ledger.borrow(), usize::MAX, &mut emitted);
                                output.session(&at).give_iterator(emitted.drain(..));
                            }
                            started = std::time::Instant::now();
                            let work = std::time::Instant::now();
                            solver.inputs = stash.remove(&t).unwrap_or_default();
                            solver.inputs.sort_unstable();
                            crate::memory::trace(|| {
                                format!(
                                    "worker {} snapshot {t}: revisit plan starts ({} pages)",
                                    solver.index,
                                    solver.inputs.len()
                                )
                            });
                            let ranks = weights.remove(&t).unwrap_or_default();
                            solver.set = PageSet::new(
                                solver
                                    .inputs
                                    .iter()
                                    .map(|p| PlanPage {
                                        lambda: f64::from_bits(p.lambda_bits),
                                        // A page outside the snapshot's graph has no
                                        // PageRank: weight 0.
                                        weight: if ranked {
                                            to_f64(ranks.get(&p.page).copied().unwrap_or(0))
                                        } else {
                                            1.0
                                        },
                                    })
                                    .collect(),
                            );
                            let totals = solver.set.totals();
                            output.session(&r).give(SolveOut::Msg(Msg {
                                partial: totals,
                                bins: solver.set.bins(),
                                fresh: [0; 3],
                            }));
                            // Holding only the next round's time lets this one complete.
                            r.downgrade(&Product::new(t, 1));
                            round = Some(r);
                            busy += work.elapsed();
                            phase = Phase::Totals;
                            continue;
                        }
                        // A round: every worker's message sent at `at - 1` arrives at
                        // `at`, the time `round` holds for the reply.
                        let r = round.as_mut().expect("a round is under way");
                        let at = *r.time();
                        if msgs_frontier.less_equal(&at) {
                            break;
                        }
                        let work = std::time::Instant::now();
                        let (got, msg) = inbox.remove(&at).unwrap_or_default();
                        assert_eq!(got, solver.peers, "every worker reports every round");
                        let reply = match std::mem::replace(&mut phase, Phase::Pages) {
                            Phase::Totals if msg.partial.pages == 0 => None,
                            Phase::Totals => {
                                match Search::start(solver.budget, &msg.partial, &msg.bins) {
                                    Some(search) => {
                                        let p = solver.set.partial(search.mu);
                                        phase = Phase::Search(search, msg.partial);
                                        Solver::reply(p)
                                    }
                                    // Nothing changes: no fetch is worth anything.
                                    None => {
                                        let m = solver.finish(None, &msg.partial);
                                        rows_at = Some(r.clone());
                                        activator.activate();
                                        phase = Phase::Final(msg.partial);
                                        Some(m)
                                    }
                                }
                            }
                            Phase::Search(mut search, totals) => match search.next(&msg.partial) {
                                Step::Try(mu) => {
                                    let p = solver.set.partial(mu);
                                    phase = Phase::Search(search, totals);
                                    Solver::reply(p)
                                }
                                Step::Done(plan) => {
                                    let mut log = ctx.log.borrow_mut();
                                    let secs = started.elapsed().as_secs_f64();
                                    log.revisit_seconds.insert(t, secs);
                                    log.revisit_rounds.insert(t, search.rounds);
                                    drop(log);
                                    let m = solver.finish(Some(plan), &totals);
                                    rows_at = Some(r.clone());
                                    activator.activate();
                                    phase = Phase::Final(totals);
                                    Some(m)
                                }
                            },
                            Phase::Final(totals) => {
                                solver.summary(&totals, &msg.fresh, t, &mut emitted);
                                None
                            }
                            Phase::Pages => unreachable!("rounds follow the pages"),
                        };
                        match reply {
                            Some(m) => {
                                let mut session = output.session(r);
                                session.give(SolveOut::Msg(m));
                                session.give_iterator(emitted.drain(..));
                                drop(session);
                                r.downgrade(&Product::new(t, at.inner + 1));
                                busy += work.elapsed();
                            }
                            None => {
                                busy += work.elapsed();
                                let secs = std::mem::take(&mut busy).as_secs_f64();
                                ctx.log.borrow_mut().revisit_compute_seconds.insert(t, secs);
                                output.session(r).give_iterator(emitted.drain(..));
                                round = None;
                                phase = Phase::Pages;
                                next += 1;
                            }
                        }
                    }
                }
            },
        );
        // A container at a time (`split_by_kind`): timely's `partition` held a
        // snapshot's whole plan (a row per page) in one vector per part.
        let [msgs, rows, summaries] = split_by_kind(out, "SplitRevisit", |o: &SolveOut| match o {
            SolveOut::Msg(_) => 0,
            SolveOut::Plan(_) => 1,
            SolveOut::Summary(_) => 2,
        });
        let summaries = summaries.flat_map(|o| match o {
            SolveOut::Summary(u) => Some(u),
            _ => None,
        });
        let rows = rows.flat_map(|o| match o {
            SolveOut::Plan(u) => Some(u),
            _ => None,
        });
        msgs.flat_map(|o| match o {
            SolveOut::Msg(m) => Some(m),
            _ => None,
        })
        .broadcast()
        .connect_loop(handle);
        (rows.leave(outer), summaries.leave(outer).as_collection())
    })
}
