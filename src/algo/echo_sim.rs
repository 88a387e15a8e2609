//! ECHO's policy evaluation: a discrete-event simulation of one crawler over a
//! dynamic link graph and a click log (Lefortier et al., Section 6).
//!
//! The world: content sources whose links to new pages appear and disappear at
//! known times, and each new page's clicks per 20-minute bin. The crawler fetches
//! one page every `1/N` seconds. Fetching a source reveals the never-seen pages it
//! lists at that moment (a page listed only between two fetches of its sources is
//! missed); fetching a revealed page at `τ` earns its clicks from `τ` on (a bin
//! straddling `τ` counts in proportion). Pages listed at the start are old.
//!
//! Policies (ALGORITHMS.md section 3): BFS (sources in a fixed random order, each
//! followed by its new pages), Fixed-quota (half of the fetches for sources by the
//! ECHO schedule, half for new pages), Frequency (ECHO-schedule with every source
//! of equal `P` and `μ`), ECHO-newpages (new pages first; otherwise the source most
//! behind its schedule), ECHO-schedule (sources on their schedule; new pages, newest
//! first, in the time left), ECHO-greedy (the source of largest `λ P τ`, then its
//! new pages), and the upper bound (every page fetched the moment it appears).
//! Policies that need `λ, P, μ` read the estimates in force at the time (see
//! [`Estimates`]) and re-solve the schedule every `replan` seconds.

use crate::algo::echo::{schedule_warm, Source, Warm};

/// Width of a click bin, microseconds.
pub const BIN: i64 = 20 * 60 * 1_000_000;

/// A link from a source to a new page, listed during `[appear, disappear)` (µs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Span {
    pub appear: i64,
    pub disappear: i64,
    pub page: u32,
}

/// The simulated world.
#[derive(Clone, Debug, Default)]
pub struct World {
    pub start: i64,
    pub end: i64,
    /// Per source, its links' spans sorted by `appear`.
    pub sources: Vec<Vec<Span>>,
    /// Per page, its click rows `(bin start, clicks)` sorted by time.
    pub clicks: Vec<Vec<(i64, u64)>>,
}

/// Per-source parameters over time: `params[k]` holds from `times[k]` on.
#[derive(Clone, Debug, Default)]
pub struct Estimates {
    pub times: Vec<i64>,
    /// Per time, per source: `(λ, P, μ)` when the source has a rate.
    pub params: Vec<Vec<Option<Source>>>,
}

impl Estimates {
    fn at(&self, t: i64) -> Option<&[Option<Source>]> {
        let k = self.times.partition_point(|x| *x <= t);
        k.checked_sub(1).map(|k| self.params[k].as_slice())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Policy {
    Bfs,
    FixedQuota,
    Frequency,
    EchoNewpages,
    EchoSchedule,
    EchoGreedy,
    UpperBound,
}

impl Policy {
    pub const ALL: [Policy; 7] = [
        Policy::Bfs,
        Policy::FixedQuota,
        Policy::Frequency,
        Policy::EchoNewpages,
        Policy::EchoSchedule,
        Policy::EchoGreedy,
        Policy::UpperBound,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Policy::Bfs => "bfs",
            Policy::FixedQuota => "fixed-quota",
            Policy::Frequency => "frequency",
            Policy::EchoNewpages => "echo-newpages",
            Policy::EchoSchedule => "echo-schedule",
            Policy::EchoGreedy => "echo-greedy",
            Policy::UpperBound => "upper-bound",
        }
    }
}

/// Settings of a simulation.
#[derive(Clone, Debug)]
pub struct SimSettings {
    /// Fetches per second.
    pub rate: f64,
    /// Seconds between re-solves of the schedule.
    pub replan_s: f64,
    /// Quality is measured from `start + warmup_s` on.
    pub warmup_s: f64,
    /// The window `T` of the dynamic quality, and its sampling step, seconds.
    pub window_s: f64,
    pub step_s: f64,
    /// Seeds BFS's random source order.
    pub seed: u64,
}

/// What a simulation measured.
#[derive(Clone, Debug, PartialEq)]
pub struct SimResult {
    /// Clicks per second earned by the fetches in the measured period.
    pub overall_quality: f64,
    pub dynamic_quality_mean: f64,
    pub dynamic_quality_std: f64,
    pub fetches: u64,
    pub source_fetches: u64,
    pub new_page_fetches: u64,
    /// Fetches, spans and click rows processed: the simulation's events.
    pub events: u64,
}

/// A page's clicks from `t` on.
fn profit_from(rows: &[(i64, u64)], t: i64) -> f64 {
    let first = rows.partition_point(|r| r.0 + BIN <= t);
    rows[first..]
        .iter()
        .map(|&(s, c)| {
            if s >= t {
                c as f64
            } else {
                c as f64 * (s + BIN - t) as f64 / BIN as f64
            }
        })
        .sum()
}

/// The crawler's state during one simulation.
struct Crawler<'w> {
    world: &'w World,
    discovered: Vec<bool>,
    /// Per source, the first span not yet examined.
    cursor: Vec<usize>,
    last: Vec<i64>,
    /// Revealed pages not fetched yet, oldest first.
    frontier: Vec<u32>,
    /// `(fetch time, profit)` of every page fetched.
    earned: Vec<(i64, f64)>,
    source_fetches: u64,
    events: u64,
}

impl<'w> Crawler<'w> {
    fn new(world: &'w World) -> Self {
        let pages = world.clicks.len();
        let mut c = Crawler {
            world,
            discovered: vec![false; pages],
            cursor: vec![0; world.sources.len()],
            last: vec![world.start; world.sources.len()],
            frontier: Vec::new(),
            earned: Vec::new(),
            source_fetches: 0,
            events: 0,
        };
        // What is listed at the start is old.
        for (i, spans) in world.sources.iter().enumerate() {
            let k = spans.partition_point(|s| s.appear <= world.start);
            for s in &spans[..k] {
                if s.disappear > world.start {
                    c.discovered[s.page as usize] = true;
                }
            }
            c.cursor[i] = k;
        }
        c
    }

    /// Fetches source `i` at `t`; returns the pages it revealed.
    fn crawl_source(&mut self, i: usize, t: i64) -> Vec<u32> {
        self.source_fetches += 1;
        self.events += 1;
        self.last[i] = t;
        let spans = &self.world.sources[i];
        let end = self.cursor[i] + spans[self.cursor[i]..].partition_point(|s| s.appear <= t);
        let mut found = Vec::new();
        // Spans that appeared since the last fetch; those already gone are missed
        // here (another source may still list the page).
        for s in &spans[self.cursor[i]..end] {
            self.events += 1;
            if s.disappear > t && !self.discovered[s.page as usize] {
                self.discovered[s.page as usize] = true;
                found.push(s.page);
            }
        }
        // A missed span moves the cursor only if no earlier span is still open:
        // spans are sorted by appearance, and every examined one is settled.
        self.cursor[i] = end;
        found
    }

    fn fetch_page(&mut self, page: u32, t: i64) {
        let rows = &self.world.clicks[page as usize];
        self.events += 1 + rows.len() as u64;
        self.earned.push((t, profit_from(rows, t)));
    }

    /// The source most behind its schedule (largest `(t − last) / I`) among
    /// `scheduled`, the sources with an interval `(source, I)`.
    fn most_behind(&self, scheduled: &[(usize, f64)], t: i64) -> Option<(usize, f64)> {
        scheduled
            .iter()
            .map(|&(i, iv)| (i, (t - self.last[i]) as f64 / 1e6 / iv))
            .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
    }
}

/// The schedule's intervals at `t` for `policy`, from the estimates in force.
fn intervals(
    policy: Policy,
    est: &Estimates,
    sources: usize,
    t: i64,
    rate: f64,
    // The simulation's last solve, `xs` indexed by every source of the world
    // (the solve itself sees only those with estimates): where the next starts.
    last: &mut Warm,
) -> Vec<Option<f64>> {
    let Some(params) = est.at(t) else {
        return vec![None; sources];
    };
    let mut idx = Vec::new();
    let mut list = Vec::new();
    // Frequency: every source of the same quality (P = 1, the median μ).
    let mut mus: Vec<f64> = params.iter().flatten().map(|s| s.mu).collect();
    mus.sort_by(f64::total_cmp);
    let median_mu = mus.get(mus.len() / 2).copied().unwrap_or(1e-4);
    for (i, p) in params.iter().enumerate().take(sources) {
        if let Some(s) = p {
            idx.push(i);
            list.push(if policy == Policy::Frequency {
                Source {
                    lambda: s.lambda,
                    profit: 1.0,
                    mu: median_mu,
                }
            } else {
                *s
            });
        }
    }
    let budget = if policy == Policy::FixedQuota {
        // Half the fetches recrawl sources; their new pages are paid by the
        // other half, so only the recrawls count here.
        let lambda: f64 = list.iter().map(|s| s.lambda).sum();
        rate / 2.0 + lambda
    } else {
        rate
    };
    last.xs.resize(sources, 0.0);
    let mut warm = Warm {
        omega: last.omega,
        xs: idx.iter().map(|&i| last.xs[i]).collect(),
    };
    let sched = schedule_warm(&list, budget, &mut warm);
    last.omega = warm.omega;
    let mut out = vec![None; sources];
    for (k, i) in idx.into_iter().enumerate() {
        out[i] = sched.intervals[k];
        last.xs[i] = warm.xs[k];
    }
    out
}

/// Runs `policy` over `world` with the estimates `est`.
pub fn simulate(world: &World, est: &Estimates, policy: Policy, s: &SimSettings) -> SimResult {
    let mut c = Crawler::new(world);
    if policy == Policy::UpperBound {
        // Every page fetched the moment it first appears.
        let mut first: Vec<Option<i64>> = vec![None; world.clicks.len()];
        for spans in &world.sources {
            for sp in spans
                .iter()
                .filter(|sp| sp.appear > world.start && sp.appear < world.end)
            {
                let f = &mut first[sp.page as usize];
                *f = Some(f.map_or(sp.appear, |x: i64| x.min(sp.appear)));
            }
        }
        for (page, t) in first.iter().enumerate() {
            if let Some(t) = *t {
                if !c.discovered[page] {
                    c.fetch_page(page as u32, t);
                }
            }
        }
        c.earned.sort_by_key(|e| e.0);
        let fetched = c.earned.len() as u64;
        return measure(world, s, c, fetched);
    }
    let n = world.sources.len();
    let step = (1e6 / s.rate).max(1.0);
    let replan = (s.replan_s * 1e6) as i64;
    let mut order: Vec<usize> = (0..n).collect();
    shuffle(&mut order, s.seed);
    let mut next_in_order = 0;
    // BFS and ECHO-greedy: the pages of the last source, fetched next.
    let mut queue: std::collections::VecDeque<u32> = Default::default();
    let mut plan: Vec<(usize, f64)> = Vec::new();
    let mut planned_at = i64::MIN;
    let mut last_solve = Warm::default();
    let mut k: u64 = 0;
    let mut page_fetches = 0u64;
    loop {
        let t = world.start + (k as f64 * step) as i64;
        if t >= world.end || n == 0 {
            break;
        }
        k += 1;
        let needs_plan = matches!(
            policy,
            Policy::FixedQuota | Policy::Frequency | Policy::EchoNewpages | Policy::EchoSchedule
        );
        if needs_plan && (planned_at == i64::MIN || t - planned_at >= replan) {
            plan = intervals(policy, est, n, t, s.rate, &mut last_solve)
                .into_iter()
                .enumerate()
                .filter_map(|(i, iv)| iv.map(|iv| (i, iv)))
                .collect();
            planned_at = t;
        }
        match policy {
            Policy::Bfs | Policy::EchoGreedy => {
                if let Some(p) = queue.pop_front() {
                    c.fetch_page(p, t);
                    page_fetches += 1;
                    continue;
                }
                let i = if policy == Policy::Bfs {
                    let i = order[next_in_order];
                    next_in_order = (next_in_order + 1) % n;
                    i
                } else {
                    greedy_pick(&c, est, t)
                };
                queue.extend(c.crawl_source(i, t));
            }
            Policy::EchoNewpages => {
                if let Some(p) = c.frontier.pop() {
                    c.fetch_page(p, t);
                    page_fetches += 1;
                } else if let Some((i, _)) = c.most_behind(&plan, t) {
                    let found = c.crawl_source(i, t);
                    c.frontier.extend(found);
                }
            }
            Policy::EchoSchedule | Policy::Frequency | Policy::FixedQuota => {
                let due = c.most_behind(&plan, t);
                let source_turn = match policy {
                    Policy::FixedQuota => k % 2 == 1 || c.frontier.is_empty(),
                    _ => due.is_some_and(|d| d.1 >= 1.0) || c.frontier.is_empty(),
                };
                if source_turn {
                    if let Some((i, _)) = due {
                        let found = c.crawl_source(i, t);
                        c.frontier.extend(found);
                        continue;
                    }
                }
                if let Some(p) = c.frontier.pop() {
                    c.fetch_page(p, t);
                    page_fetches += 1;
                }
            }
            Policy::UpperBound => unreachable!("handled above"),
        }
    }
    measure(world, s, c, page_fetches)
}

/// ECHO-greedy's pick: the largest `λ P τ`; sources without a rate count with a
/// tiny one, so they are visited oldest first when nothing is known.
fn greedy_pick(c: &Crawler, est: &Estimates, t: i64) -> usize {
    let params = est.at(t);
    (0..c.last.len())
        .map(|i| {
            let (lambda, p) = params
                .and_then(|ps| ps.get(i).copied().flatten())
                .map_or((1e-12, 1e-12), |s| {
                    (s.lambda.max(1e-12), s.profit.max(1e-12))
                });
            (i, lambda * p * (t - c.last[i]) as f64)
        })
        .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
        .map_or(0, |x| x.0)
}

/// Overall and dynamic quality over the measured period.
fn measure(world: &World, s: &SimSettings, c: Crawler, page_fetches: u64) -> SimResult {
    let from = world.start + (s.warmup_s * 1e6) as i64;
    let span = (world.end - from).max(1) as f64 / 1e6;
    let earned: f64 = c.earned.iter().filter(|e| e.0 >= from).map(|e| e.1).sum();
    let window = (s.window_s * 1e6) as i64;
    let step = ((s.step_s * 1e6) as i64).max(1);
    let mut samples = Vec::new();
    let mut t = from + window;
    // `earned` is in time order: a sliding sum over it.
    let (mut lo, mut hi, mut sum) = (0, 0, 0.0);
    while t <= world.end {
        while hi < c.earned.len() && c.earned[hi].0 <= t {
            sum += c.earned[hi].1;
            hi += 1;
        }
        while lo < hi && c.earned[lo].0 <= t - window {
            sum -= c.earned[lo].1;
            lo += 1;
        }
        samples.push(sum / s.window_s);
        t += step;
    }
    let mean = samples.iter().sum::<f64>() / samples.len().max(1) as f64;
    let var =
        samples.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / samples.len().max(1) as f64;
    SimResult {
        overall_quality: earned / span,
        dynamic_quality_mean: mean,
        dynamic_quality_std: var.sqrt(),
        fetches: c.source_fetches + page_fetches,
        source_fetches: c.source_fetches,
        new_page_fetches: page_fetches,
        events: c.events,
    }
}

/// A seeded Fisher–Yates shuffle (xorshift; the order must not depend on a crate's version).
fn shuffle(v: &mut [usize], seed: u64) {
    let mut x = seed | 1;
    for i in (1..v.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.swap(i, (x % (i as u64 + 1)) as usize);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: i64 = 60_000_000;

    fn settings(rate: f64) -> SimSettings {
        SimSettings {
            rate,
            replan_s: 1800.0,
            warmup_s: 0.0,
            window_s: 3600.0,
            step_s: 120.0,
            seed: 7,
        }
    }

    /// Two sources; pages appear every 10 minutes on source 0 and every hour on
    /// source 1, each listed for two hours, with clicks 10 per bin for 3 bins.
    fn world() -> World {
        let mut w = World {
            start: 0,
            end: 24 * 60 * MIN,
            ..World::default()
        };
        w.sources = vec![Vec::new(), Vec::new()];
        let add = |src: usize, at: i64, w: &mut World| {
            let page = w.clicks.len() as u32;
            w.clicks.push((0..3).map(|b| (at + b * BIN, 10)).collect());
            w.sources[src].push(Span {
                appear: at,
                disappear: at + 120 * MIN,
                page,
            });
        };
        for k in 0..144 {
            add(0, k * 10 * MIN + 5 * MIN, &mut w);
        }
        for k in 0..24 {
            add(1, k * 60 * MIN + 7 * MIN, &mut w);
        }
        w
    }

    fn estimates(w: &World) -> Estimates {
        Estimates {
            times: vec![w.start],
            params: vec![vec![
                Some(Source {
                    lambda: 1.0 / 600.0,
                    profit: 30.0,
                    mu: 1.0 / 1200.0,
                }),
                Some(Source {
                    lambda: 1.0 / 3600.0,
                    profit: 30.0,
                    mu: 1.0 / 1200.0,
                }),
            ]],
        }
    }

    #[test]
    fn profit_counts_the_rest_of_a_straddled_bin() {
        let rows = [(0, 10), (BIN, 6)];
        assert_eq!(profit_from(&rows, 0), 16.0);
        assert_eq!(profit_from(&rows, BIN / 2), 11.0);
        assert_eq!(profit_from(&rows, 2 * BIN), 0.0);
    }

    #[test]
    fn upper_bound_is_every_click_after_appearance() {
        let w = world();
        let r = simulate(&w, &estimates(&w), Policy::UpperBound, &settings(1.0));
        // Every page earns its 30 clicks (the last bins may end after the day).
        let total: f64 = w
            .clicks
            .iter()
            .map(|rows| rows.iter().map(|r| r.1 as f64).sum::<f64>())
            .sum();
        assert!((r.overall_quality * 86_400.0 - total).abs() < 1e-6);
        assert_eq!(r.new_page_fetches, 168);
    }

    #[test]
    fn a_fast_crawler_approaches_the_upper_bound_and_a_slow_one_does_not() {
        let w = world();
        let est = estimates(&w);
        let bound = simulate(&w, &est, Policy::UpperBound, &settings(1.0)).overall_quality;
        for policy in Policy::ALL {
            let fast = simulate(&w, &est, policy, &settings(1.0));
            assert!(
                fast.overall_quality > 0.97 * bound && fast.overall_quality <= bound * (1.0 + 1e-9),
                "{policy:?}: {} vs {bound}",
                fast.overall_quality
            );
            let slow = simulate(&w, &est, policy, &settings(1.0 / 900.0));
            if policy != Policy::UpperBound {
                assert!(slow.overall_quality < 0.8 * bound, "{policy:?} slow");
                assert_eq!(slow.fetches, slow.source_fetches + slow.new_page_fetches);
                assert!(slow.fetches <= 96, "{policy:?}: a fetch every 15 minutes");
            }
        }
    }

    #[test]
    fn bfs_by_hand() {
        // One source, crawled every other fetch at a fetch per 10 minutes: a page
        // appearing at 5 min is found at 10 min and fetched at 20 min.
        let mut w = World {
            start: 0,
            end: 30 * MIN,
            sources: vec![vec![Span {
                appear: 5 * MIN,
                disappear: 100 * MIN,
                page: 0,
            }]],
            clicks: vec![vec![(5 * MIN, 12), (25 * MIN, 6)]],
        };
        let r = simulate(
            &w,
            &Estimates::default(),
            Policy::Bfs,
            &settings(1.0 / 600.0),
        );
        // Fetches at 0 (source: nothing), 10 (source: finds page 0), 20 (page 0):
        // the first bin [5, 25) has 5 of 20 minutes left, the second counts whole.
        assert_eq!((r.source_fetches, r.new_page_fetches), (2, 1));
        let want = 12.0 * 5.0 / 20.0 + 6.0;
        assert!((r.overall_quality * 1800.0 - want).abs() < 1e-9);
        // Listed only between two fetches: missed.
        w.sources[0][0].disappear = 9 * MIN;
        let r = simulate(
            &w,
            &Estimates::default(),
            Policy::Bfs,
            &settings(1.0 / 600.0),
        );
        assert_eq!((r.new_page_fetches, r.overall_quality), (0, 0.0));
    }

    #[test]
    fn dynamic_quality_of_a_steady_crawler_is_its_overall_quality() {
        let w = world();
        let r = simulate(&w, &estimates(&w), Policy::UpperBound, &settings(1.0));
        // Pages appear at a steady rate, so the hourly window's mean is close to
        // the overall quality.
        assert!((r.dynamic_quality_mean / r.overall_quality - 1.0).abs() < 0.1);
    }
}
