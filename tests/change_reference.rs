//! The nine change tables of docs/change.md against a brute-force reference: per
//! URL the plain list of its observations (fetch time, digest), every statistic
//! recomputed from scratch at every snapshot, every root (MLE, interval ends, the
//! revisit plan's threshold 1/μ, φ⁻¹) found by plain bisection to a double's
//! precision. It
//! calls no webevo code. Random crawls (several hosts and domain classes, irregular
//! snapshot times, partial snapshots, pages appearing, vanishing and coming back,
//! missing digests, duplicate rows, explicit and sub-second fetch times, stale fetch
//! times) under the defaults and under other `[change]` parameters, plus hand-made
//! crawls whose values are worked out by hand below (checking the reference itself).
//!
//! Tolerances: exact for counts, strings and NULLs; 1e-9 relative for closed forms
//! and for what depends on an iterative solve ([`ITER`]: MLE, interval ends and what
//! is computed from them; webevo agrees to ~1e-14); [`PLAN`] for the optimal
//! revisit frequencies, which webevo computes at a μ whose budget is within 1e-5
//! of the job's and then scales to meet it (docs/change.md), so each may differ
//! from the exact optimum by about 1e-5 relative (observed: up to 2e-5, more for a
//! page at its cut-off, whose frequency is then tiny: hence also an absolute
//! `PLAN_ABS · budget`); the freshness of that plan is second order (observed 3e-12).
//!
//! Open readings of docs/change.md, as webevo implements them: the Poisson check's
//! mean `m` is the mean of the change intervals each rounded to whole seconds (not
//! the mean rounded); with no planned page changing, the proportional frequencies
//! and the optimal ones are 0 (every page's freshness is 1 at any frequency).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

use crate::util::{read_cells, root, run_in_process_with_job, tempdir, Cell};

const DAY: f64 = 86_400.0;
/// The 95% point of χ² with one degree of freedom.
const CHI: f64 = 3.841458820694124;
/// 2026-01-05T00:00:00Z.
const T0: i64 = 1_767_571_200;
/// Relative tolerance of what depends on an iterative solve (docs/change.md:
/// "doubles agree to about 1e-9 relative"; observed: below 1e-14).
const ITER: f64 = 1e-9;
/// Relative tolerance of the optimal frequencies (see the module comment); an
/// absolute `PLAN_ABS · budget` is allowed too, for pages near their cut-off.
/// That bound follows from the solve: every `f_i(μ)` falls with `μ`, so at a
/// `μ` whose `Σf` is within 1e-5 of the budget each page is off the optimum by
/// at most 1e-5 of the budget, and the scaling to meet it moves each by 1e-5 of
/// its own: at most 2e-5 of the budget in all.
const PLAN: f64 = 1e-4;
const PLAN_ABS: f64 = 2e-5;

const TABLES: [&str; 9] = [
    "page_change",
    "group_change",
    "change_histogram",
    "lifespan_histogram",
    "unchanged_curve",
    "poisson_check",
    "freshness_designs",
    "revisit_plan",
    "revisit_summary",
];

type Row = BTreeMap<String, Cell>;
/// A table's rows by key.
type Table = BTreeMap<String, Row>;

/// The `[change]` section of a job.
#[derive(Clone, Debug)]
struct Params {
    cycle_days: f64,
    batch_days: f64,
    budget_per_day: f64,
    min_intervals: usize,
    rate_classes_days: Vec<f64>,
    poisson_bands_days: Vec<[f64; 2]>,
    poisson_bucket_days: f64,
    backoff_start_days: f64,
}

impl Default for Params {
    /// docs/change.md's defaults (jobs/change.toml).
    fn default() -> Self {
        Params {
            cycle_days: 30.0,
            batch_days: 7.0,
            budget_per_day: 1000.0,
            min_intervals: 3,
            rate_classes_days: vec![1.0, 7.0, 30.0, 91.25, 365.0],
            poisson_bands_days: vec![[9.0, 11.0], [18.0, 22.0]],
            poisson_bucket_days: 1.0,
            backoff_start_days: 1.0,
        }
    }
}

impl Params {
    fn job_toml(&self) -> String {
        format!(
            "analyses = [\"change\"]\n\n[change]\ncycle_days = {:?}\nbatch_days = {:?}\n\
             budget_per_day = {:?}\nmin_intervals = {}\nrate_classes_days = {:?}\n\
             poisson_bands_days = {:?}\npoisson_bucket_days = {:?}\nbackoff_start_days = {:?}\n",
            self.cycle_days,
            self.batch_days,
            self.budget_per_day,
            self.min_intervals,
            self.rate_classes_days,
            self.poisson_bands_days,
            self.poisson_bucket_days,
            self.backoff_start_days
        )
    }
}

/// One row of a snapshot's pages file.
#[derive(Clone, Debug)]
struct Fetch {
    url: String,
    /// Microseconds; `None` is an empty field (the snapshot's time).
    time_us: Option<i64>,
    digest: Option<String>,
}

/// One snapshot as written.
#[derive(Clone, Debug)]
struct Snap {
    time_s: i64,
    partial: bool,
    pages: Vec<Fetch>,
}

fn fetch(url: &str, time_us: Option<i64>, digest: Option<&str>) -> Fetch {
    Fetch {
        url: url.to_string(),
        time_us,
        digest: digest.map(str::to_string),
    }
}

/// Writes `snaps` as a crawl directory (TSV pages; no links, which change ignores).
fn write_crawl(dir: &Path, snaps: &[Snap]) {
    for (seq, s) in snaps.iter().enumerate() {
        let d = dir.join("snapshots").join(seq.to_string());
        fs::create_dir_all(&d).unwrap();
        fs::write(
            d.join("snapshot.json"),
            format!("{{\"time\": \"{}\", \"partial\": {}}}", s.time_s, s.partial),
        )
        .unwrap();
        let mut p = String::from("url\tfetch_time\tdigest\n");
        for f in &s.pages {
            let time = match f.time_us {
                None => String::new(),
                Some(us) if us % 1_000_000 == 0 => (us / 1_000_000).to_string(),
                Some(us) => chrono::DateTime::from_timestamp_micros(us)
                    .unwrap()
                    .to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
            };
            let digest = f.digest.as_deref().unwrap_or("");
            p += &format!("{}\t{time}\t{digest}\n", f.url);
        }
        fs::write(d.join("pages.tsv"), p).unwrap();
    }
}

// ---------------------------------------------------------------------------
// Words of docs/change.md

fn host(url: &str) -> String {
    url.split('/').nth(2).unwrap().to_string()
}

fn domain_class(host: &str) -> &'static str {
    match host.trim_end_matches('.').rsplit('.').next().unwrap() {
        "com" => "com",
        "edu" => "edu",
        "net" | "org" => "netorg",
        "gov" | "mil" => "gov",
        _ => "other",
    }
}

/// The URL up to and including the slash ending the first path segment when the
/// path has one, else the root.
fn directory(url: &str) -> String {
    let after_scheme = url.find("://").unwrap() + 3;
    let root_end = after_scheme + url[after_scheme..].find('/').unwrap() + 1;
    match url[root_end..].find('/') {
        Some(i) => url[..root_end + i + 1].to_string(),
        None => url[..root_end].to_string(),
    }
}

/// One observation of a page.
#[derive(Clone, Debug)]
struct Obs {
    snap: usize,
    time_us: i64,
    digest: Option<String>,
}

/// One interval: two consecutive observations, both with a digest, time increasing.
#[derive(Clone, Debug)]
struct Interval {
    tau: f64,
    changed: bool,
    end_us: i64,
    end_snap: usize,
}

fn intervals(obs: &[Obs]) -> Vec<Interval> {
    let mut iv = Vec::new();
    for w in obs.windows(2) {
        if let (Some(a), Some(b)) = (&w[0].digest, &w[1].digest) {
            if w[1].time_us > w[0].time_us {
                iv.push(Interval {
                    tau: (w[1].time_us - w[0].time_us) as f64 / 1e6,
                    changed: a != b,
                    end_us: w[1].time_us,
                    end_snap: w[1].snap,
                });
            }
        }
    }
    iv
}

// ---------------------------------------------------------------------------
// Estimators

/// `ln(1 − e^{−x})`.
fn ln_one_minus_exp(x: f64) -> f64 {
    (-(-x).exp_m1()).ln()
}

/// Bisection on `ln λ` between `a` and `b`, where `f` has opposite signs, down
/// to adjacent doubles.
fn bisect(mut a: f64, mut b: f64, f: &dyn Fn(f64) -> f64) -> f64 {
    let positive_at_a = f(a) > 0.0;
    assert_ne!(positive_at_a, f(b) > 0.0, "not a bracket: {a} {b}");
    for _ in 0..2000 {
        let mid = (a * b).sqrt();
        if mid <= a.min(b) || mid >= a.max(b) {
            break;
        }
        if (f(mid) > 0.0) == positive_at_a {
            a = mid;
        } else {
            b = mid;
        }
    }
    (a * b).sqrt()
}

/// The root of a decreasing `f` on `(0, ∞)`, bracketed outward from `start`.
fn root_decreasing(f: &dyn Fn(f64) -> f64, start: f64) -> f64 {
    let (mut lo, mut hi) = (start, start);
    while f(lo) <= 0.0 {
        lo /= 2.0;
    }
    while f(hi) >= 0.0 {
        hi *= 2.0;
    }
    bisect(lo, hi, f)
}

/// `lambda_mle`, `lambda_lo`, `lambda_hi` over `(τ, changed)` intervals.
#[derive(Clone, Copy, Debug, Default)]
struct Estimate {
    mle: Option<f64>,
    lo: Option<f64>,
    hi: Option<f64>,
}

impl Estimate {
    /// The rate used for planning and for the crawl designs: the MLE, or the lower
    /// end when every interval changed.
    fn rate(&self) -> Option<f64> {
        self.mle.or(self.lo)
    }
}

fn estimate(iv: &[(f64, bool)]) -> Estimate {
    let n = iv.len();
    let x = iv.iter().filter(|i| i.1).count();
    if n == 0 {
        return Estimate::default();
    }
    let t: f64 = iv.iter().map(|i| i.0).sum();
    let u: f64 = iv.iter().filter(|i| !i.1).map(|i| i.0).sum();
    let ll = |l: f64| -> f64 {
        iv.iter()
            .map(|&(tau, c)| {
                if c {
                    ln_one_minus_exp(l * tau)
                } else {
                    -l * tau
                }
            })
            .sum()
    };
    if x == 0 {
        return Estimate {
            mle: Some(0.0),
            lo: Some(0.0),
            hi: Some(CHI / (2.0 * u)),
        };
    }
    if x == n {
        let lo = root_decreasing(&|l| -2.0 * ll(l) - CHI, x as f64 / t);
        return Estimate {
            mle: None,
            lo: Some(lo),
            hi: None,
        };
    }
    let score = |l: f64| -> f64 {
        iv.iter()
            .filter(|i| i.1)
            .map(|&(tau, _)| tau / (l * tau).exp_m1())
            .sum::<f64>()
            - u
    };
    let mle = root_decreasing(&score, x as f64 / t);
    let top = ll(mle);
    let lr = |l: f64| 2.0 * (top - ll(l)) - CHI;
    let mut a = mle / 2.0;
    while lr(a) <= 0.0 {
        a /= 2.0;
    }
    let lo = bisect(a, mle, &lr);
    let mut b = mle * 2.0;
    while lr(b) <= 0.0 {
        b *= 2.0;
    }
    let hi = bisect(mle, b, &lr);
    Estimate {
        mle: Some(mle),
        lo: Some(lo),
        hi: Some(hi),
    }
}

/// Pages with more changed intervals than this are estimated from binned ones.
const EXACT_CHANGES: usize = 16;

/// The intervals with each changed one replaced by the mean of its bin: changed
/// intervals whose `⌊ln τ / ln 1.01⌋` agree (`τ` in seconds), averaged in whole
/// µs (docs/change.md, "Groups").
fn binned(iv: &[(f64, bool)]) -> Vec<(f64, bool)> {
    let us = |tau: f64| (tau * 1e6).round() as u64;
    let mut bins: BTreeMap<i64, Vec<u64>> = BTreeMap::new();
    for &(tau, changed) in iv {
        if changed {
            let b = ((us(tau) as f64 / 1e6).ln() / 1.01f64.ln()).floor() as i64;
            bins.entry(b).or_default().push(us(tau));
        }
    }
    let mut out: Vec<(f64, bool)> = iv.iter().filter(|i| !i.1).copied().collect();
    for members in bins.values() {
        let sum: u128 = members.iter().map(|&u| u128::from(u)).sum();
        let mean = sum as f64 / members.len() as f64 / 1e6;
        out.extend(std::iter::repeat_n((mean, true), members.len()));
    }
    out
}

/// The most probable rate class (first on ties) and its posterior probability.
fn rate_class(iv: &[(f64, bool)], classes_days: &[f64]) -> Option<(String, f64)> {
    if iv.is_empty() {
        return None;
    }
    let logs: Vec<f64> = classes_days
        .iter()
        .map(|d| {
            let l = 1.0 / (d * DAY);
            iv.iter()
                .map(|&(tau, changed)| {
                    if changed {
                        ln_one_minus_exp(l * tau)
                    } else {
                        -l * tau
                    }
                })
                .sum()
        })
        .collect();
    let mut best = 0;
    for (c, &v) in logs.iter().enumerate() {
        if v > logs[best] {
            best = c;
        }
    }
    let z: f64 = logs.iter().map(|v| (v - logs[best]).exp()).sum();
    Some((format!("{}d", classes_days[best]), 1.0 / z))
}

// ---------------------------------------------------------------------------
// Freshness and the revisit plan

/// `(1 − e^{−x}) / x`, 1 at 0.
fn fresh(x: f64) -> f64 {
    if x == 0.0 {
        1.0
    } else {
        -(-x).exp_m1() / x
    }
}

/// `φ(x) = 1 − (1 + x) e^{−x}`, by its series near 0.
fn phi(x: f64) -> f64 {
    if x < 1e-3 {
        let x2 = x * x;
        x2 / 2.0 - x2 * x / 3.0 + x2 * x2 / 8.0 - x2 * x2 * x / 30.0 + x2 * x2 * x2 / 144.0
    } else {
        -(-x).exp_m1() - x * (-x).exp()
    }
}

/// `φ⁻¹(y)` for `0 < y < 1` by bisection to adjacent doubles.
fn phi_inv(y: f64) -> f64 {
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    while phi(hi) < y {
        hi *= 2.0;
        if hi > 1e6 {
            return f64::INFINITY;
        }
    }
    loop {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            return hi;
        }
        if phi(mid) < y {
            lo = mid;
        } else {
            hi = mid;
        }
    }
}

/// `x` with `ln ψ(x) = ln((1 + x) e^{−x}) = t` (`t < 0`), by bisection to
/// adjacent doubles: `φ⁻¹(1 − e^t)` without the cancellation of `1 − e^t`.
fn psi_inv_ln(t: f64) -> f64 {
    let g = |x: f64| x.ln_1p() - x;
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    while g(hi) > t {
        hi *= 2.0;
    }
    loop {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            return hi;
        }
        if g(mid) > t {
            lo = mid;
        } else {
            hi = mid;
        }
    }
}

/// Optimal fetches per day of a page changing `l` times a day (weight 1) when the
/// threshold rate `s = 1/μ` is `top + delta`: 0 when `l = 0` or `l ≥ s`, else
/// `l / x` with `φ(x) = l/s`, i.e. `ψ(x) = 1 − φ(x) = (s − l)/s`. `s − l` is
/// computed as `(top − l) + delta`, so that a page just under the threshold keeps
/// its precision however small `delta` is (a plain double μ cannot resolve
/// `1 − μl` below 1e-16, and there `f ≈ l / ln(1/(1 − μl))` is still far from 0).
fn freq_at(l: f64, top: f64, delta: f64) -> f64 {
    if l == 0.0 || l > top {
        return 0.0;
    }
    let s = top + delta;
    let phi_value = l / s;
    let x = if phi_value < 0.5 {
        phi_inv(phi_value)
    } else {
        psi_inv_ln(((top - l) + delta).ln() - s.ln())
    };
    l / x
}

/// The exact optimum (weights 1, rates per day): `Σf(s)` increases with the
/// threshold `s`; find the segment `(λ_j, λ_{j−1}]` between consecutive distinct
/// rates where it reaches the budget, then bisect `δ = s − λ_j` on a log scale down
/// to adjacent doubles. `None` when no page changes.
fn optimal_plan(rates_day: &[f64], budget: f64) -> Option<Vec<f64>> {
    let mut distinct: Vec<f64> = rates_day.iter().copied().filter(|&l| l > 0.0).collect();
    distinct.sort_by(|a, b| b.total_cmp(a));
    distinct.dedup();
    if distinct.is_empty() {
        return None;
    }
    let total = |top: f64, delta: f64| {
        rates_day
            .iter()
            .map(|&l| freq_at(l, top, delta))
            .sum::<f64>()
    };
    // The segment: the highest j with Σf(λ_j + 0) ≤ budget (Σf → 0 at the bottom).
    let j = (0..distinct.len())
        .find(|&j| total(distinct[j], 0.0) <= budget)
        .unwrap();
    let top = distinct[j];
    let mut hi = if j == 0 { top } else { distinct[j - 1] - top };
    if j == 0 {
        while total(top, hi) < budget {
            hi *= 2.0;
        }
    }
    if total(top, hi) <= budget {
        // The budget is met exactly at the segment's upper end.
        return Some(rates_day.iter().map(|&l| freq_at(l, top, hi)).collect());
    }
    let mut lo = hi / 2.0;
    while lo > f64::MIN_POSITIVE && total(top, lo) >= budget {
        lo /= 2.0;
    }
    let delta = bisect(lo, hi, &|d| total(top, d) - budget);
    Some(rates_day.iter().map(|&l| freq_at(l, top, delta)).collect())
}

/// Freshness of a page changing `l` times a day fetched `f` times a day.
fn freshness(l: f64, f: f64) -> f64 {
    if l == 0.0 {
        1.0
    } else if f == 0.0 {
        0.0
    } else {
        fresh(l / f)
    }
}

// ---------------------------------------------------------------------------
// The reference

#[derive(Clone, Debug)]
struct Page {
    host: String,
    class: &'static str,
    dir: String,
    obs: Vec<Obs>,
}

/// A page's statistics as of a snapshot.
struct Stats {
    iv: Vec<Interval>,
    /// The intervals the estimators see (binned beyond `EXACT_CHANGES`).
    pairs: Vec<(f64, bool)>,
    x: usize,
    n: usize,
    t: f64,
    span: f64,
    est: Estimate,
}

impl Stats {
    fn of(page: &Page) -> Stats {
        let iv = intervals(&page.obs);
        let mut pairs: Vec<(f64, bool)> = iv.iter().map(|i| (i.tau, i.changed)).collect();
        if pairs.iter().filter(|p| p.1).count() > EXACT_CHANGES {
            pairs = binned(&pairs);
        }
        let first = page.obs.first().unwrap().time_us;
        let last = page.obs.last().unwrap().time_us;
        Stats {
            x: iv.iter().filter(|i| i.changed).count(),
            n: iv.len(),
            t: iv.iter().map(|i| i.tau).sum(),
            span: (last - first) as f64 / 1e6,
            est: estimate(&pairs),
            pairs,
            iv,
        }
    }
}

/// One group (host or directory) as of a snapshot.
#[derive(Default)]
struct Group {
    pages: i64,
    observations: i64,
    changes: i64,
    intervals: i64,
    pooled: Vec<(f64, bool)>,
    fetched_now: bool,
}

fn fl(v: f64) -> Cell {
    Cell::Float(v)
}

fn opt(v: Option<f64>) -> Cell {
    v.map_or(Cell::Null, Cell::Float)
}

fn st(v: &str) -> Cell {
    Cell::Str(v.to_string())
}

fn int(v: usize) -> Cell {
    Cell::Int(v as i64)
}

fn row(seq: usize, cells: Vec<(&str, Cell)>) -> Row {
    let mut r: Row = cells.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    r.insert("snapshot".into(), int(seq));
    r
}

/// Things the crawls must exercise, so the comparison is not vacuous.
#[derive(Debug, Default)]
struct Exercised {
    all_changed: usize,
    none_changed: usize,
    some_changed: usize,
    gone_rows: usize,
    group_planned: usize,
    poisson_intervals: usize,
    cut_off: usize,
    digestless: usize,
}

/// Every change table of `snaps` under `p`, keyed as [`key`] keys them.
fn reference(snaps: &[Snap], p: &Params, ex: &mut Exercised) -> BTreeMap<&'static str, Table> {
    let mut out: BTreeMap<&'static str, Table> =
        TABLES.iter().map(|t| (*t, Table::new())).collect();
    let mut put = |table: &'static str, r: Row| {
        let k = key(table, &r);
        assert!(
            out.get_mut(table).unwrap().insert(k.clone(), r).is_none(),
            "{k}"
        );
    };
    let mut pages: BTreeMap<String, Page> = BTreeMap::new();
    let mut alive: BTreeSet<String> = BTreeSet::new();
    let mut base: BTreeSet<String> = BTreeSet::new();
    let mut left: BTreeSet<String> = BTreeSet::new();
    let classes = ["com", "edu", "netorg", "gov", "other", "all"];
    for (seq, s) in snaps.iter().enumerate() {
        let ts_us = s.time_s * 1_000_000;
        // Of duplicate rows the latest fetch counts.
        let mut rows: BTreeMap<&str, (i64, Option<&String>)> = BTreeMap::new();
        for f in &s.pages {
            let t = f.time_us.unwrap_or(ts_us);
            match rows.get(f.url.as_str()) {
                Some(&(t0, _)) if t0 > t => {}
                Some(&(t0, _)) if t0 == t => panic!("tied duplicate rows of {}", f.url),
                _ => {
                    rows.insert(&f.url, (t, f.digest.as_ref()));
                }
            }
        }
        let fetched: BTreeSet<String> = rows.keys().map(|u| u.to_string()).collect();
        for (u, (t, d)) in &rows {
            let h = host(u);
            let page = pages.entry(u.to_string()).or_insert_with(|| Page {
                class: domain_class(&h),
                host: h,
                dir: directory(u),
                obs: Vec::new(),
            });
            page.obs.push(Obs {
                snap: seq,
                time_us: *t,
                digest: d.cloned(),
            });
            ex.digestless += d.is_none() as usize;
        }
        let gone: BTreeSet<String> = if s.partial {
            BTreeSet::new()
        } else {
            alive.difference(&fetched).cloned().collect()
        };
        if s.partial {
            alive.extend(fetched.iter().cloned());
        } else {
            alive = fetched.clone();
        }
        let stats: BTreeMap<&String, Stats> =
            pages.iter().map(|(u, pg)| (u, Stats::of(pg))).collect();
        let at_first = |u: &str| pages[u].obs[0].snap == 0;
        let censoring = |u: &str| match (at_first(u), alive.contains(u)) {
            (true, false) => "a",
            (false, false) => "b",
            (false, true) => "c",
            (true, true) => "d",
        };
        let lifespans = |u: &str| {
            let span = stats[&u.to_string()].span;
            let m2 = if censoring(u) == "b" {
                span
            } else {
                2.0 * span
            };
            (span, m2)
        };

        // page_change
        for u in fetched.union(&gone) {
            let (pg, ps) = (&pages[u], &stats[u]);
            let (n, x) = (ps.n as f64, ps.x as f64);
            let rc = rate_class(&ps.pairs, &p.rate_classes_days);
            let (m1, m2) = lifespans(u);
            ex.gone_rows += gone.contains(u) as usize;
            match (ps.n, ps.x) {
                (0, _) => {}
                (_, 0) => ex.none_changed += 1,
                (n, x) if n == x => ex.all_changed += 1,
                _ => ex.some_changed += 1,
            }
            put(
                "page_change",
                row(
                    seq,
                    vec![
                        ("url", st(u)),
                        ("host", st(&pg.host)),
                        ("domain_class", st(pg.class)),
                        ("observations", int(pg.obs.len())),
                        ("changes", int(ps.x)),
                        ("intervals", int(ps.n)),
                        ("span_s", fl(ps.span)),
                        ("lambda_naive", opt((ps.n > 0).then(|| x / ps.t))),
                        (
                            "lambda_regular",
                            opt((ps.n > 0).then(|| -((n - x + 0.5) / (n + 0.5)).ln() / (ps.t / n))),
                        ),
                        ("lambda_mle", opt(ps.est.mle)),
                        ("lambda_lo", opt(ps.est.lo)),
                        ("lambda_hi", opt(ps.est.hi)),
                        ("rate_class", rc.as_ref().map_or(Cell::Null, |c| st(&c.0))),
                        ("rate_class_p", opt(rc.as_ref().map(|c| c.1))),
                        ("censoring", st(censoring(u))),
                        ("lifespan_m1_s", fl(m1)),
                        ("lifespan_m2_s", fl(m2)),
                    ],
                ),
            );
        }

        // group_change (and the groups' planning rates)
        let mut groups: BTreeMap<(&str, String), Group> = BTreeMap::new();
        for (u, pg) in &pages {
            let ps = &stats[u];
            for g in [("host", pg.host.clone()), ("directory", pg.dir.clone())] {
                let e = groups.entry(g).or_default();
                e.pages += 1;
                e.observations += pg.obs.len() as i64;
                e.changes += ps.x as i64;
                e.intervals += ps.n as i64;
                e.pooled.extend(ps.iv.iter().map(|i| (i.tau, i.changed)));
                e.fetched_now |= fetched.contains(u);
            }
        }
        let group_est: BTreeMap<(&str, String), Estimate> = groups
            .iter()
            .map(|(k, g)| (k.clone(), estimate(&binned(&g.pooled))))
            .collect();
        for (k, g) in &groups {
            if !g.fetched_now {
                continue;
            }
            let e = &group_est[k];
            put(
                "group_change",
                row(
                    seq,
                    vec![
                        ("level", st(k.0)),
                        ("key", st(&k.1)),
                        ("pages", Cell::Int(g.pages)),
                        ("observations", Cell::Int(g.observations)),
                        ("changes", Cell::Int(g.changes)),
                        ("intervals", Cell::Int(g.intervals)),
                        ("lambda_mle", opt(e.mle)),
                        ("lambda_lo", opt(e.lo)),
                        ("lambda_hi", opt(e.hi)),
                    ],
                ),
            );
        }

        // change_histogram
        let mut hist: BTreeMap<(&str, &str), usize> = BTreeMap::new();
        for (u, pg) in &pages {
            let ps = &stats[u];
            if ps.n == 0 {
                continue;
            }
            let bucket = if ps.x == 0 {
                "gt_4m_or_never"
            } else {
                match ps.t / ps.x as f64 / DAY {
                    d if d <= 1.0 => "le_1d",
                    d if d <= 7.0 => "1d_1w",
                    d if d <= 30.0 => "1w_1m",
                    d if d <= 120.0 => "1m_4m",
                    _ => "gt_4m_or_never",
                }
            };
            for c in [pg.class, "all"] {
                for b in ["le_1d", "1d_1w", "1w_1m", "1m_4m", "gt_4m_or_never"] {
                    *hist.entry((c, b)).or_default() += (b == bucket) as usize;
                }
            }
        }
        for ((c, b), count) in hist {
            put(
                "change_histogram",
                row(
                    seq,
                    vec![
                        ("domain_class", st(c)),
                        ("bucket", st(b)),
                        ("pages", int(count)),
                    ],
                ),
            );
        }

        // lifespan_histogram
        let mut life: BTreeMap<(&str, usize, &str), usize> = BTreeMap::new();
        for (u, pg) in &pages {
            let (m1, m2) = lifespans(u);
            for (method, span) in [(1, m1), (2, m2)] {
                let bucket = match span / DAY {
                    d if d <= 7.0 => "le_1w",
                    d if d <= 30.0 => "1w_1m",
                    d if d <= 120.0 => "1m_4m",
                    _ => "gt_4m",
                };
                for c in [pg.class, "all"] {
                    for b in ["le_1w", "1w_1m", "1m_4m", "gt_4m"] {
                        *life.entry((c, method, b)).or_default() += (b == bucket) as usize;
                    }
                }
            }
        }
        for ((c, m, b), count) in life {
            put(
                "lifespan_histogram",
                row(
                    seq,
                    vec![
                        ("domain_class", st(c)),
                        ("method", int(m)),
                        ("bucket", st(b)),
                        ("pages", int(count)),
                    ],
                ),
            );
        }

        // unchanged_curve
        if seq == 0 {
            base = rows
                .iter()
                .filter(|(_, (_, d))| d.is_some())
                .map(|(u, _)| u.to_string())
                .collect();
        } else {
            for u in &base {
                let changed_now = stats[u]
                    .iv
                    .last()
                    .is_some_and(|i| i.end_snap == seq && i.changed);
                if gone.contains(u) || changed_now {
                    left.insert(u.clone());
                }
            }
        }
        for c in classes {
            let of_class: Vec<&String> = base
                .iter()
                .filter(|u| c == "all" || pages[*u].class == c)
                .collect();
            if of_class.is_empty() {
                continue;
            }
            let stayed = of_class.iter().filter(|u| !left.contains(**u)).count();
            put(
                "unchanged_curve",
                row(
                    seq,
                    vec![
                        ("domain_class", st(c)),
                        ("elapsed_s", fl((s.time_s - snaps[0].time_s) as f64)),
                        ("base_pages", int(of_class.len())),
                        (
                            "fraction_unchanged",
                            fl(stayed as f64 / of_class.len() as f64),
                        ),
                    ],
                ),
            );
        }

        // poisson_check
        let w = p.poisson_bucket_days * DAY;
        for &[lo_d, hi_d] in &p.poisson_bands_days {
            let mut d: Vec<f64> = Vec::new();
            for ps in stats.values() {
                if ps.x < 2 {
                    continue;
                }
                let avg = ps.t / ps.x as f64;
                if !(lo_d * DAY <= avg && avg < hi_d * DAY) {
                    continue;
                }
                let changes: Vec<i64> = ps
                    .iv
                    .iter()
                    .filter(|i| i.changed)
                    .map(|i| i.end_us)
                    .collect();
                d.extend(changes.windows(2).map(|c| (c[1] - c[0]) as f64 / 1e6));
            }
            if d.is_empty() {
                continue;
            }
            ex.poisson_intervals += d.len();
            let k_max = (4.0 * hi_d / p.poisson_bucket_days).ceil() as usize;
            let mut observed = vec![0usize; k_max + 1];
            for &v in &d {
                observed[((v / w).round() as usize).min(k_max)] += 1;
            }
            let big_n = d.len() as f64;
            // m: the mean of the intervals in whole seconds (each rounded; webevo's
            // reading of docs/change.md, which it matches bit for bit).
            let m = d.iter().map(|v| v.round()).sum::<f64>() / big_n;
            let bounds = |k: usize| {
                let lo = (k as f64 - 0.5).max(0.0) * w;
                let hi = (k < k_max).then_some((k as f64 + 0.5) * w);
                (lo, hi)
            };
            let mut ks = 0.0f64;
            let mut cum = 0usize;
            for (k, &o) in observed.iter().enumerate() {
                cum += o;
                let f_exp = bounds(k).1.map_or(1.0, |hi| 1.0 - (-hi / m).exp());
                ks = ks.max((cum as f64 / big_n - f_exp).abs());
            }
            for (k, &o) in observed.iter().enumerate() {
                let (lo, hi) = bounds(k);
                let expected = big_n * ((-lo / m).exp() - hi.map_or(0.0, |h| (-h / m).exp()));
                put(
                    "poisson_check",
                    row(
                        seq,
                        vec![
                            ("band_lo_s", fl(lo_d * DAY)),
                            ("band_hi_s", fl(hi_d * DAY)),
                            ("interval_lo_s", fl(lo)),
                            ("interval_hi_s", opt(hi)),
                            ("observed", int(o)),
                            ("expected", fl(expected)),
                            ("ks_distance", fl(ks)),
                        ],
                    ),
                );
            }
        }

        // freshness_designs
        let (c_s, b_s) = (p.cycle_days * DAY, p.batch_days * DAY);
        let rated: Vec<f64> = stats
            .values()
            .filter(|ps| ps.n > 0)
            .map(|ps| ps.est.rate().unwrap())
            .collect();
        if !rated.is_empty() {
            let designs: [(&str, &dyn Fn(f64) -> f64); 4] = [
                ("steady-inplace", &|l| fresh(l * c_s)),
                ("batch-inplace", &|l| fresh(l * c_s)),
                ("steady-shadowing", &|l| fresh(l * c_s).powi(2)),
                ("batch-shadowing", &|l| fresh(l * b_s) * fresh(l * c_s)),
            ];
            for (name, formula) in designs {
                let mean = rated.iter().map(|&l| formula(l)).sum::<f64>() / rated.len() as f64;
                put(
                    "freshness_designs",
                    row(
                        seq,
                        vec![
                            ("design", st(name)),
                            ("cycle_s", fl(c_s)),
                            ("batch_s", fl(b_s)),
                            ("pages", int(rated.len())),
                            ("freshness", fl(mean)),
                        ],
                    ),
                );
            }
        }

        // revisit_plan and revisit_summary
        let min = p.min_intervals as i64;
        let mut planned: Vec<(&String, f64, f64)> = Vec::new(); // url, rate per s, back-off
        for u in &alive {
            let (pg, ps) = (&pages[u], &stats[u]);
            let dir_key = ("directory", pg.dir.clone());
            let host_key = ("host", pg.host.clone());
            let rate = if ps.n as i64 >= min {
                ps.est.rate()
            } else if groups[&dir_key].intervals >= min {
                ex.group_planned += 1;
                group_est[&dir_key].rate()
            } else if groups[&host_key].intervals >= min {
                ex.group_planned += 1;
                group_est[&host_key].rate()
            } else {
                None
            };
            let Some(rate) = rate else { continue };
            let mut backoff = p.backoff_start_days * DAY;
            for i in &ps.iv {
                backoff *= if i.changed { 0.8 } else { 1.4 };
                backoff = backoff.clamp(3600.0, 365.0 * DAY);
            }
            planned.push((u, rate, backoff));
        }
        if !planned.is_empty() {
            let budget = p.budget_per_day;
            let rates_day: Vec<f64> = planned.iter().map(|q| q.1 * DAY).collect();
            let optimal = optimal_plan(&rates_day, budget).unwrap_or(vec![0.0; planned.len()]);
            let uniform = budget / planned.len() as f64;
            let sum: f64 = rates_day.iter().sum();
            let mut totals = [0.0f64; 3];
            for (i, (u, rate, backoff)) in planned.iter().enumerate() {
                let l = rates_day[i];
                let proportional = if sum > 0.0 { budget * l / sum } else { 0.0 };
                ex.cut_off += (l > 0.0 && optimal[i] == 0.0) as usize;
                let f_opt = freshness(l, optimal[i]);
                totals[0] += f_opt;
                totals[1] += freshness(l, uniform);
                totals[2] += freshness(l, proportional);
                put(
                    "revisit_plan",
                    row(
                        seq,
                        vec![
                            ("url", st(u)),
                            ("lambda", fl(*rate)),
                            ("weight", fl(1.0)),
                            ("freq_optimal_per_day", fl(optimal[i])),
                            ("freq_uniform_per_day", fl(uniform)),
                            ("freq_proportional_per_day", fl(proportional)),
                            ("freshness_optimal", fl(f_opt)),
                            ("backoff_interval_s", fl(*backoff)),
                        ],
                    ),
                );
            }
            for (policy, total) in ["optimal", "uniform", "proportional"].iter().zip(totals) {
                put(
                    "revisit_summary",
                    row(
                        seq,
                        vec![
                            ("policy", st(policy)),
                            ("budget_per_day", fl(budget)),
                            ("pages", int(planned.len())),
                            ("freshness", fl(total / planned.len() as f64)),
                        ],
                    ),
                );
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------
// Comparison

/// A row's key within its table: the snapshot and the columns naming the row.
fn key(table: &str, r: &Row) -> String {
    let cols: &[&str] = match table {
        "page_change" | "revisit_plan" => &["url"],
        "group_change" => &["level", "key"],
        "change_histogram" => &["domain_class", "bucket"],
        "lifespan_histogram" => &["domain_class", "method", "bucket"],
        "unchanged_curve" => &["domain_class"],
        "poisson_check" => &["band_lo_s", "interval_lo_s"],
        "freshness_designs" => &["design"],
        "revisit_summary" => &["policy"],
        other => panic!("no table {other}"),
    };
    let text = |c: &str| match r.get(c) {
        Some(Cell::Str(s)) => s.clone(),
        Some(Cell::Int(i)) => i.to_string(),
        Some(Cell::Float(f)) => format!("{f:.3}"),
        other => format!("{other:?}"),
    };
    let mut k = format!("snapshot={}", text("snapshot"));
    for c in cols {
        k += "|";
        k += &text(c);
    }
    k
}

/// How closely a column must agree: relative and absolute tolerance (0, 0 = exact).
fn tolerance(table: &str, col: &str, p: &Params) -> (f64, f64) {
    match (table, col) {
        (_, "lambda_mle" | "lambda_lo" | "lambda_hi" | "lambda") => (ITER, 0.0),
        ("freshness_designs" | "revisit_summary", "freshness") => (ITER, 1e-9),
        ("revisit_plan", "freq_proportional_per_day") => (ITER, 1e-9 * p.budget_per_day),
        ("revisit_plan", "freq_optimal_per_day") => (PLAN, PLAN_ABS * p.budget_per_day),
        ("revisit_plan", "freshness_optimal") => (PLAN, PLAN_ABS),
        ("poisson_check", "expected") => (1e-9, 1e-12),
        _ => (1e-9, 0.0),
    }
}

/// Compares one run's tables with the reference; mismatches go to `failures`, the
/// largest relative deviation of each float column to `dev`.
fn compare(
    out: &Path,
    want: &BTreeMap<&'static str, Table>,
    p: &Params,
    context: &str,
    failures: &mut Vec<String>,
    dev: &mut BTreeMap<String, f64>,
) {
    for (table, want_rows) in want {
        let mut got = Table::new();
        for r in read_cells(&out.join(table)) {
            let k = key(table, &r);
            if got.insert(k.clone(), r).is_some() {
                failures.push(format!("{context}: {table}: duplicate row {k}"));
            }
        }
        let (gk, wk): (BTreeSet<&String>, BTreeSet<&String>) =
            (got.keys().collect(), want_rows.keys().collect());
        let missing: Vec<&&String> = wk.difference(&gk).collect();
        let unexpected: Vec<&&String> = gk.difference(&wk).collect();
        if !missing.is_empty() || !unexpected.is_empty() {
            failures.push(format!(
                "{context}: {table}: {} rows, want {}; missing (first 8) {:?}; unexpected (first 8) {:?}",
                got.len(),
                want_rows.len(),
                &missing[..missing.len().min(8)],
                &unexpected[..unexpected.len().min(8)]
            ));
        }
        for (k, w) in want_rows {
            let Some(g) = got.get(k) else { continue };
            let gcols: BTreeSet<&String> = g.keys().collect();
            let wcols: BTreeSet<&String> = w.keys().collect();
            if gcols != wcols {
                failures.push(format!(
                    "{context}: {table}: columns {gcols:?}, want {wcols:?}"
                ));
                continue;
            }
            for (col, wv) in w {
                let gv = &g[col];
                let ok = match (gv, wv) {
                    (Cell::Float(a), Cell::Float(b)) => {
                        let (rel, mut abs) = tolerance(table, col, p);
                        if (*table, col.as_str()) == ("revisit_plan", "freshness_optimal") {
                            // Near its cut-off a page's freshness is about
                            // `f / λ`: its frequency's bound, over its rate.
                            if let Some(Cell::Float(l)) = w.get("lambda") {
                                abs = abs.max(PLAN_ABS * p.budget_per_day / (l * DAY));
                            }
                        }
                        let diff = (a - b).abs();
                        let scale = a.abs().max(b.abs());
                        if scale > 0.0 {
                            let e = dev.entry(format!("{table}.{col}")).or_default();
                            *e = e.max(diff / scale);
                        }
                        diff <= rel * scale + abs
                    }
                    _ => gv == wv,
                };
                if !ok {
                    failures.push(format!(
                        "{context}: {table}: {k}: {col} = {gv:?}, want {wv:?}"
                    ));
                }
            }
        }
    }
}

/// Runs `snaps` under `p` with `workers` threads and compares every table.
fn run_and_compare(
    snaps: &[Snap],
    p: &Params,
    workers: usize,
    want: &BTreeMap<&'static str, Table>,
    context: &str,
    failures: &mut Vec<String>,
    dev: &mut BTreeMap<String, f64>,
) {
    let dir = tempdir();
    let input = dir.path().join("in");
    write_crawl(&input, snaps);
    let job = dir.path().join("job.toml");
    fs::write(&job, p.job_toml()).unwrap();
    let out = dir.path().join("out");
    run_in_process_with_job(&input, &out, workers, &job).unwrap();
    compare(&out, want, p, context, failures, dev);
}

fn assert_no_failures(failures: &[String]) {
    let mut tally: BTreeMap<&str, usize> = BTreeMap::new();
    for f in failures {
        *tally
            .entry(f.split(": ").nth(1).unwrap_or("?"))
            .or_default() += 1;
    }
    assert!(
        failures.is_empty(),
        "{} mismatches, by table {tally:?}:\n{}",
        failures.len(),
        failures
            .iter()
            .take(40)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

// ---------------------------------------------------------------------------
// Crawls

/// A random crawl: 3–5 hosts of different domain classes with 4–9 pages each in a
/// few directories, 4–8 snapshots 12 hours to 15 days apart (some partial), pages
/// born and dying at random snapshots and missing from some full snapshots (gone,
/// then back), each with its own change probability; some rows without a digest,
/// with an explicit (sometimes sub-second) fetch time, with the page's previous
/// fetch time again (no interval), or duplicated with an earlier fetch time.
fn random_crawl(rng: &mut Pcg64Mcg) -> Vec<Snap> {
    let mut hosts = vec![
        "a.com",
        "www.b.edu",
        "c.net",
        "d.org",
        "e.gov",
        "f.mil",
        "g.io",
        "h.co.uk",
        "10.1.2.3",
    ];
    hosts.shuffle(rng);
    let n = rng.random_range(4..=8);
    struct Sim {
        url: String,
        birth: usize,
        death: usize,
        p_change: f64,
        version: u32,
        last_us: Option<i64>,
    }
    let mut sims = Vec::new();
    for h in &hosts[..rng.random_range(3..=5)] {
        for i in 0..rng.random_range(4..10) {
            let path = match rng.random_range(0..5) {
                0 | 1 => format!("p{i}.html"),
                2 => format!("news/{i}"),
                3 => format!("blog/{i}/post"),
                _ => format!("docs/{i}/"),
            };
            let birth = if rng.random_bool(0.6) {
                0
            } else {
                rng.random_range(1..n)
            };
            let death = if rng.random_bool(0.7) {
                n
            } else {
                rng.random_range(birth + 1..=n)
            };
            sims.push(Sim {
                url: format!("http://{h}/{path}"),
                birth,
                death,
                p_change: [0.0, 0.1, 0.3, 0.6, 0.9, 1.0][rng.random_range(0..6)],
                version: 0,
                last_us: None,
            });
        }
    }
    let mut time = T0 + rng.random_range(0..86_400);
    let mut snaps = Vec::new();
    for i in 0..n {
        if i > 0 {
            time += rng.random_range(43_200..15 * 86_400);
        }
        let partial = i > 0 && rng.random_bool(0.2);
        let mut pages = Vec::new();
        for sim in sims.iter_mut() {
            if i < sim.birth || i >= sim.death {
                continue;
            }
            if (partial && rng.random_bool(0.4)) || (!partial && rng.random_bool(0.08)) {
                continue;
            }
            if sim.last_us.is_some() && rng.random_bool(sim.p_change) {
                sim.version += 1;
            }
            let digest = (!rng.random_bool(0.06)).then(|| format!("v{}", sim.version));
            let offset = rng.random_range(1_000..21_600);
            let time_us = match rng.random_range(0..20) {
                0..=9 => None,
                10..=15 => Some((time + offset) * 1_000_000),
                16..=18 => Some((time + offset) * 1_000_000 + rng.random_range(1..1_000_000)),
                _ => sim.last_us.or(Some((time + offset) * 1_000_000)),
            };
            let effective = time_us.unwrap_or(time * 1_000_000);
            sim.last_us = Some(effective);
            let kept = Fetch {
                url: sim.url.clone(),
                time_us,
                digest,
            };
            if rng.random_bool(0.05) {
                let dup = Fetch {
                    url: sim.url.clone(),
                    time_us: Some(effective - rng.random_range(1..3_600) * 1_000_000),
                    digest: rng
                        .random_bool(0.7)
                        .then(|| format!("dup{}", rng.random_range(0..3))),
                };
                if rng.random_bool(0.5) {
                    pages.push(dup);
                    pages.push(kept);
                } else {
                    pages.push(kept);
                    pages.push(dup);
                }
            } else {
                pages.push(kept);
            }
        }
        snaps.push(Snap {
            time_s: time,
            partial,
            pages,
        });
    }
    snaps
}

fn random_family(seed: u64, cases: usize, p: &Params) -> Exercised {
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let mut failures = Vec::new();
    let mut dev = BTreeMap::new();
    let mut ex = Exercised::default();
    for case in 0..cases {
        let snaps = random_crawl(&mut rng);
        let want = reference(&snaps, p, &mut ex);
        let context = format!("seed {seed} case {case}");
        run_and_compare(
            &snaps,
            p,
            1 + case % 3,
            &want,
            &context,
            &mut failures,
            &mut dev,
        );
    }
    eprintln!("seed {seed}: exercised {ex:?}");
    eprintln!("seed {seed}: largest relative deviations {dev:#?}");
    assert_no_failures(&failures);
    ex
}

#[test]
fn change_tables_match_brute_force_on_random_crawls() {
    // The job file the project ships is the reference's defaults.
    let shipped = fs::read_to_string(root().join("jobs/change.toml")).unwrap();
    let p = Params::default();
    for line in p.job_toml().lines().filter(|l| l.contains(" = ")) {
        let (name, value) = line.split_once(" = ").unwrap();
        let shipped_value = shipped
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name} = ")))
            .unwrap_or_else(|| panic!("jobs/change.toml has no {name}"));
        let norm = |v: &str| v.replace(".0", "").replace(' ', "");
        assert_eq!(norm(shipped_value), norm(value), "jobs/change.toml: {name}");
    }
    let mut ex = Exercised::default();
    for seed in [1, 2] {
        let e = random_family(seed, 8, &p);
        ex.all_changed += e.all_changed;
        ex.none_changed += e.none_changed;
        ex.some_changed += e.some_changed;
        ex.gone_rows += e.gone_rows;
        ex.group_planned += e.group_planned;
        ex.poisson_intervals += e.poisson_intervals;
        ex.digestless += e.digestless;
    }
    assert!(
        ex.all_changed > 20
            && ex.none_changed > 20
            && ex.some_changed > 20
            && ex.gone_rows > 10
            && ex.group_planned > 10
            && ex.poisson_intervals > 3
            && ex.digestless > 10,
        "the random crawls exercise the change tables: {ex:?}"
    );
}

#[test]
fn change_tables_match_brute_force_with_other_parameters() {
    // A tight budget (pages cut off), group planning from 2 intervals, other rate
    // classes, wide Poisson bands in half-day buckets, a back-off start that the
    // 365-day clamp bounds.
    let p = Params {
        cycle_days: 10.0,
        batch_days: 2.5,
        budget_per_day: 0.4,
        min_intervals: 2,
        rate_classes_days: vec![0.5, 3.0, 14.0, 60.0],
        poisson_bands_days: vec![[2.0, 6.0], [6.0, 30.0]],
        poisson_bucket_days: 0.5,
        backoff_start_days: 300.0,
    };
    let ex = random_family(3, 8, &p);
    assert!(
        ex.cut_off > 5 && ex.poisson_intervals > 20,
        "the crawls exercise the cut-off and the Poisson check: {ex:?}"
    );
}

/// Four full snapshots 10 days apart (fetch times = snapshot times):
///
/// | page                  | s0 | s1 | s2 | s3 |
/// |-----------------------|----|----|----|----|
/// | P http://a.com/news/p | a  | b  | c  | d  |
/// | Q http://a.com/q      | x  | x  | x  | y  |
/// | R http://b.edu/r      | r  | r  |    |    |
/// | S http://c.org/s      |    | s  | –  | s  |  (– : fetched without a digest)
fn hand_crawl() -> Vec<Snap> {
    let (p, q, r, s) = (
        "http://a.com/news/p",
        "http://a.com/q",
        "http://b.edu/r",
        "http://c.org/s",
    );
    let snap = |day: i64, pages: Vec<Fetch>| Snap {
        time_s: T0 + day * 86_400,
        partial: false,
        pages,
    };
    vec![
        snap(
            0,
            vec![
                fetch(p, None, Some("a")),
                fetch(q, None, Some("x")),
                fetch(r, None, Some("r")),
            ],
        ),
        snap(
            10,
            vec![
                fetch(p, None, Some("b")),
                fetch(q, None, Some("x")),
                fetch(r, None, Some("r")),
                fetch(s, None, Some("s")),
            ],
        ),
        snap(
            20,
            vec![
                fetch(p, None, Some("c")),
                fetch(q, None, Some("x")),
                fetch(s, None, None),
            ],
        ),
        snap(
            30,
            vec![
                fetch(p, None, Some("d")),
                fetch(q, None, Some("y")),
                fetch(s, None, Some("s")),
            ],
        ),
    ]
}

fn cell(t: &BTreeMap<&'static str, Table>, table: &str, k: &str, col: &str) -> Cell {
    t[table]
        .get(k)
        .unwrap_or_else(|| panic!("{table}: no row {k}"))[col]
        .clone()
}

fn close(got: Cell, want: f64, what: &str) {
    let g = got.f64().unwrap_or_else(|| panic!("{what}: {got:?}"));
    assert!(
        (g - want).abs() <= 1e-12 * want.abs().max(1e-300),
        "{what}: {g} want {want}"
    );
}

/// The reference on [`hand_crawl`], against values worked out by hand, then
/// webevo against the reference.
#[test]
fn change_reference_on_a_hand_made_crawl() {
    let p = Params::default();
    let snaps = hand_crawl();
    let want = reference(&snaps, &p, &mut Exercised::default());
    let d = DAY;
    let pc = |seq: usize, u: &str, col: &str| {
        cell(&want, "page_change", &format!("snapshot={seq}|{u}"), col)
    };

    // P at s3: every one of its 3 intervals of 10 days changed. X = n = 3, T = 30 d.
    let pu = "http://a.com/news/p";
    close(pc(3, pu, "lambda_naive"), 3.0 / (30.0 * d), "P naive = X/T");
    // regular: −ln((3 − 3 + 0.5)/3.5)/(10 d) = ln 7/(10 d).
    close(
        pc(3, pu, "lambda_regular"),
        7f64.ln() / (10.0 * d),
        "P regular",
    );
    assert_eq!(pc(3, pu, "lambda_mle"), Cell::Null);
    assert_eq!(pc(3, pu, "lambda_hi"), Cell::Null);
    // lo: −2·3·ln(1 − e^{−10 d λ}) = χ ⇒ λ = −ln(1 − e^{−χ/6})/(10 d) ≈ 0.0749/day.
    let p_lo = -(1.0 - (-CHI / 6.0).exp()).ln() / (10.0 * d);
    close(pc(3, pu, "lambda_lo"), p_lo, "P lo");
    // Rate class: class c's likelihood (1 − e^{−10/c})³; daily is the largest.
    let lik = |c: f64| (1.0 - (-10.0 / c).exp()).powi(3);
    let z: f64 = [1.0, 7.0, 30.0, 91.25, 365.0].iter().map(|&c| lik(c)).sum();
    assert_eq!(pc(3, pu, "rate_class"), Cell::Str("1d".into()));
    close(pc(3, pu, "rate_class_p"), lik(1.0) / z, "P rate class p");
    assert_eq!(pc(3, pu, "censoring"), Cell::Str("d".into()));
    close(pc(3, pu, "lifespan_m2_s"), 60.0 * d, "P m2 = 2·30 d");

    // Q at s3: 1 of 3 equal intervals changed: the MLE solves τ/(e^{λτ} − 1) = 2τ,
    // λ = ln(3/2)/τ; the interval ends satisfy 2(ℓ(λ̂) − ℓ(λ)) = χ.
    let qu = "http://a.com/q";
    let q_mle = 1.5f64.ln() / (10.0 * d);
    close(pc(3, qu, "lambda_mle"), q_mle, "Q mle");
    close(
        pc(3, qu, "lambda_regular"),
        1.4f64.ln() / (10.0 * d),
        "Q regular = ln(3.5/2.5)/τ",
    );
    let ll = |l: f64| (1.0 - (-l * 10.0 * d).exp()).ln() - 2.0 * l * 10.0 * d;
    for end in ["lambda_lo", "lambda_hi"] {
        let l = pc(3, qu, end).f64().unwrap();
        let lr = 2.0 * (ll(q_mle) - ll(l));
        assert!((lr - CHI).abs() < 1e-9, "Q {end}: LR {lr}");
    }
    // R at s2: gone (fetched at s0, not alive): censoring a, lifespan 10 d / 20 d;
    // X = 0 over U = 10 d: mle = lo = 0, hi = χ/(2U).
    let ru = "http://b.edu/r";
    assert_eq!(pc(2, ru, "censoring"), Cell::Str("a".into()));
    close(pc(2, ru, "lifespan_m1_s"), 10.0 * d, "R m1");
    close(pc(2, ru, "lifespan_m2_s"), 20.0 * d, "R m2");
    close(pc(2, ru, "lambda_mle"), 0.0, "R mle");
    close(pc(2, ru, "lambda_hi"), CHI / (20.0 * d), "R hi");
    assert!(!want["page_change"].contains_key(&format!("snapshot=3|{ru}")));
    // S at s3: 3 observations, but the digest-less one at s2 breaks both intervals.
    let su = "http://c.org/s";
    assert_eq!(pc(3, su, "observations"), Cell::Int(3));
    assert_eq!(pc(3, su, "intervals"), Cell::Int(0));
    assert_eq!(pc(3, su, "lambda_naive"), Cell::Null);
    assert_eq!(pc(3, su, "censoring"), Cell::Str("c".into()));
    close(pc(3, su, "lifespan_m2_s"), 40.0 * d, "S m2");

    // Groups at s3: host a.com pools P and Q: 4 of 6 intervals of 10 d changed,
    // λ = ln(6/2)/τ. b.edu has no page fetched at s3: no row.
    let gc = |k: &str, col: &str| cell(&want, "group_change", &format!("snapshot=3|{k}"), col);
    close(
        gc("host|a.com", "lambda_mle"),
        3f64.ln() / (10.0 * d),
        "a.com mle",
    );
    assert_eq!(gc("host|a.com", "pages"), Cell::Int(2));
    assert_eq!(gc("host|a.com", "observations"), Cell::Int(8));
    close(
        gc("directory|http://a.com/news/", "lambda_lo"),
        p_lo,
        "a.com/news/ lo",
    );
    assert_eq!(gc("directory|http://c.org/", "lambda_mle"), Cell::Null);
    assert!(!want["group_change"].contains_key("snapshot=3|host|b.edu"));

    // change_histogram at s3: P (T/X = 10 d) and Q (30 d) in 1w_1m, R never.
    let ch = |k: &str| {
        cell(
            &want,
            "change_histogram",
            &format!("snapshot=3|{k}"),
            "pages",
        )
    };
    assert_eq!(ch("all|1w_1m"), Cell::Int(2));
    assert_eq!(ch("all|gt_4m_or_never"), Cell::Int(1));
    assert_eq!(ch("edu|gt_4m_or_never"), Cell::Int(1));
    assert_eq!(ch("com|le_1d"), Cell::Int(0));
    assert_eq!(
        want["change_histogram"]
            .keys()
            .filter(|k| k.starts_with("snapshot=3|"))
            .count(),
        15
    );
    // lifespan_histogram at s3, method 2: P, Q 60 d, S 40 d (1m_4m), R 20 d (1w_1m).
    let lh = |k: &str| {
        cell(
            &want,
            "lifespan_histogram",
            &format!("snapshot=3|{k}"),
            "pages",
        )
    };
    assert_eq!(lh("all|2|1m_4m"), Cell::Int(3));
    assert_eq!(lh("all|2|1w_1m"), Cell::Int(1));
    assert_eq!(lh("all|1|1w_1m"), Cell::Int(4));
    // unchanged_curve: base P, Q, R. s1: P changed (2/3); s2: R gone (1/3);
    // s3: Q changed (0). com: 1/2, 1/2, 0; edu: 1, 0, 0.
    let uc = |seq: usize, c: &str| {
        cell(
            &want,
            "unchanged_curve",
            &format!("snapshot={seq}|{c}"),
            "fraction_unchanged",
        )
    };
    for (seq, all, com, edu) in [
        (0, 1.0, 1.0, 1.0),
        (1, 2.0 / 3.0, 0.5, 1.0),
        (2, 1.0 / 3.0, 0.5, 0.0),
        (3, 0.0, 0.0, 0.0),
    ] {
        close(uc(seq, "all"), all, "unchanged all");
        close(uc(seq, "com"), com, "unchanged com");
        close(uc(seq, "edu"), edu, "unchanged edu");
    }

    // poisson_check at s3, band [9, 11) d: only P (X = 3 ≥ 2, T/X = 10 d), with its
    // X − 1 = 2 change intervals of 10 d (changes seen at s1, s2, s3): N = 2,
    // m = 10 d, both in bucket k = 10, [9.5 d, 10.5 d); k_max = ceil(4·11/1) = 44.
    // F_obs is 0 at the upper ends of buckets 0..9 and 1 from bucket 10 on;
    // F_exp(x) = 1 − e^{−x/m}. The largest gap is at bucket 9's upper end, 9.5 d:
    // |0 − (1 − e^{−0.95})| = 0.6133 (at 10.5 d: |1 − (1 − e^{−1.05})| = 0.3499,
    // and it shrinks beyond). Band [18, 22): no page, no rows. (Measuring the
    // upper ends in days against m in seconds would give F_exp ≈ 1e-5 everywhere
    // and a distance of 0.99999 at bucket 10: a unit slip, not the definition.)
    let band = |seq: usize| -> Vec<&Row> {
        want["poisson_check"]
            .iter()
            .filter(|(k, _)| k.starts_with(&format!("snapshot={seq}|")))
            .map(|(_, r)| r)
            .collect()
    };
    assert_eq!(band(3).len(), 45);
    for r in band(3) {
        close(r["ks_distance"].clone(), 1.0 - (-0.95f64).exp(), "KS");
    }
    let b10 = cell(
        &want,
        "poisson_check",
        &format!("snapshot=3|{:.3}|{:.3}", 9.0 * d, 9.5 * d),
        "expected",
    );
    close(
        b10,
        2.0 * ((-0.95f64).exp() - (-1.05f64).exp()),
        "expected in bucket 10",
    );
    assert_eq!(
        cell(
            &want,
            "poisson_check",
            &format!("snapshot=3|{:.3}|{:.3}", 9.0 * d, 9.5 * d),
            "observed"
        ),
        Cell::Int(2)
    );
    // At s2, P has X = 2, T/X = 10 d: one change interval, same KS.
    assert_eq!(band(2).len(), 45);

    // freshness_designs at s3: P (λ = its lo), Q (its MLE), R (λ = 0 → 1).
    let fc = |l: f64| (1.0 - (-l * 30.0 * d).exp()) / (l * 30.0 * d);
    let fb = |l: f64| (1.0 - (-l * 7.0 * d).exp()) / (l * 7.0 * d);
    let designs = [
        ("steady-inplace", (fc(p_lo) + fc(q_mle) + 1.0) / 3.0),
        (
            "steady-shadowing",
            (fc(p_lo).powi(2) + fc(q_mle).powi(2) + 1.0) / 3.0,
        ),
        (
            "batch-shadowing",
            (fb(p_lo) * fc(p_lo) + fb(q_mle) * fc(q_mle) + 1.0) / 3.0,
        ),
    ];
    for (design, f) in designs {
        close(
            cell(
                &want,
                "freshness_designs",
                &format!("snapshot=3|{design}"),
                "freshness",
            ),
            f,
            design,
        );
    }

    // revisit at s3: P (own 3 intervals, its lo) and Q (its MLE) planned; S has no
    // intervals in c.org/ nor c.org: not planned. Back-off: 1 d·0.8³, 1 d·1.4²·0.8.
    let rp = |seq: usize, u: &str, col: &str| {
        cell(&want, "revisit_plan", &format!("snapshot={seq}|{u}"), col)
    };
    close(rp(3, pu, "lambda"), p_lo, "P planned with lo");
    close(rp(3, pu, "freq_uniform_per_day"), 500.0, "uniform");
    close(
        rp(3, pu, "freq_proportional_per_day"),
        1000.0 * p_lo / (p_lo + q_mle),
        "proportional",
    );
    close(rp(3, pu, "backoff_interval_s"), 0.512 * d, "P back-off");
    close(rp(3, qu, "backoff_interval_s"), 1.568 * d, "Q back-off");
    assert!(!want["revisit_plan"].contains_key(&format!("snapshot=3|{su}")));
    // The optimum satisfies φ(λ_i/f_i) = μλ_i for both, with Σf = 1000.
    let (fp, fq) = (
        rp(3, pu, "freq_optimal_per_day").f64().unwrap(),
        rp(3, qu, "freq_optimal_per_day").f64().unwrap(),
    );
    assert!((fp + fq - 1000.0).abs() < 1e-9);
    let (lp, lq) = (p_lo * d, q_mle * d);
    let mu = |l: f64, f: f64| (1.0 - (1.0 + l / f) * (-l / f).exp()) / l;
    assert!((mu(lp, fp) / mu(lq, fq) - 1.0).abs() < 1e-6, "one μ");
    // At s2 P and Q have 2 intervals each (< 3), as do their directories: both use
    // host a.com's pooled rate (2 of 4 changed: ln 2/τ) and so get 500 each.
    close(
        rp(2, pu, "lambda"),
        2f64.ln() / (10.0 * d),
        "P planned with a.com",
    );
    close(
        rp(2, qu, "freq_optimal_per_day"),
        500.0,
        "equal rates, equal shares",
    );
    let rs = |seq: usize, pol: &str| {
        cell(
            &want,
            "revisit_summary",
            &format!("snapshot={seq}|{pol}"),
            "freshness",
        )
    };
    // λ = ln 2/10 per day, f = 500 per day.
    close(
        rs(2, "uniform"),
        fresh(2f64.ln() / 10.0 / 500.0),
        "uniform freshness at s2",
    );
    // Nothing is planned at s0 and s1 (no group has 3 intervals).
    assert_eq!(want["revisit_summary"].len(), 6);

    let mut failures = Vec::new();
    let mut dev = BTreeMap::new();
    for workers in [1, 2] {
        run_and_compare(
            &snaps,
            &p,
            workers,
            &want,
            &format!("hand crawl, {workers} workers"),
            &mut failures,
            &mut dev,
        );
    }
    assert_no_failures(&failures);
}

/// Planned pages none of which changes (open point of docs/change.md): the
/// proportional allocation is 0 for every page; every policy's freshness is 1. And
/// one that changes beside one that does not: the optimum gives it the whole
/// budget, the unchanging page 0 (its freshness is 1 at any frequency).
#[test]
fn revisit_plan_when_nothing_changes() {
    let p = Params::default();
    let (a, b, c) = ("http://x.com/a", "http://x.com/b", "http://y.net/c");
    let snap = |day: i64, c_digest: &str| Snap {
        time_s: T0 + day * 86_400,
        partial: false,
        pages: vec![
            fetch(a, None, Some("same")),
            fetch(b, None, Some("same")),
            fetch(c, None, Some(c_digest)),
        ],
    };
    let snaps = vec![
        snap(0, "1"),
        snap(2, "1"),
        snap(5, "1"),
        snap(6, "1"),
        snap(9, "2"),
    ];
    let want = reference(&snaps, &p, &mut Exercised::default());
    let rp = |seq: usize, u: &str, col: &str| {
        cell(&want, "revisit_plan", &format!("snapshot={seq}|{u}"), col)
    };
    // s3: every page has 3 unchanged intervals: λ = 0 for all.
    for u in [a, b, c] {
        assert_eq!(rp(3, u, "lambda"), Cell::Float(0.0));
        assert_eq!(rp(3, u, "freq_proportional_per_day"), Cell::Float(0.0));
        assert_eq!(rp(3, u, "freq_optimal_per_day"), Cell::Float(0.0));
        assert_eq!(rp(3, u, "freshness_optimal"), Cell::Float(1.0));
    }
    for pol in ["optimal", "uniform", "proportional"] {
        assert_eq!(
            cell(
                &want,
                "revisit_summary",
                &format!("snapshot=3|{pol}"),
                "freshness"
            ),
            Cell::Float(1.0)
        );
    }
    // s4: c changed once in 4 intervals; a and b still 0.
    assert!(rp(4, c, "lambda").f64().unwrap() > 0.0);
    close(
        rp(4, c, "freq_optimal_per_day"),
        1000.0,
        "c gets the budget",
    );
    close(
        rp(4, c, "freq_proportional_per_day"),
        1000.0,
        "c gets the budget",
    );
    assert_eq!(rp(4, a, "freq_optimal_per_day"), Cell::Float(0.0));
    let mut failures = Vec::new();
    let mut dev = BTreeMap::new();
    run_and_compare(
        &snaps,
        &p,
        2,
        &want,
        "nothing changes",
        &mut failures,
        &mut dev,
    );
    assert_no_failures(&failures);
}
