//! `rankmass_order`, `rankmass_curve` and `rankmass_summary` against plain
//! single-threaded references of the paper's Figure 5 (RankMass), Figure 6
//! (Windowed-RankMass) and L-Neighbor, written here from docs/rankmass.md: an
//! ordered set for the single page, a full sort per window. They use the same
//! fixed-point rounding as the definitions (ranks in units of 2^-60, each
//! push rounded down), so orders, rounds and bounds must be identical, ties by
//! smallest URL. Curves are checked against the reference's guarantee, the
//! PageRank of `rankmass_reference`, and the invariants
//! guaranteed <= actual <= optimal <= 1; L-Neighbor's levels against
//! `1 - d^(L+1)`.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;

use crate::rankmass_reference::{
    graphs, graphs_with_trust, job, random_crawl, reference, reference_of, write, Expected, Graph,
    Snap,
};
use crate::util::*;

const ONE: u128 = 1 << 60;

/// The definitions' arithmetic.
#[derive(Clone, Copy)]
struct Fx {
    d: u128,
}

impl Fx {
    fn new(d: f64) -> Fx {
        Fx {
            d: (d * ONE as f64).round() as u128,
        }
    }
    fn apply(self, x: u128) -> u128 {
        (x * self.d) >> 60
    }
    fn share(self, r: u128, c: usize) -> u128 {
        self.apply(r) / c as u128
    }
    /// A node's part of a mass going by the trust vector.
    fn by_trust(x: u128, g: &Graph, v: usize) -> u128 {
        x * u128::from(g.trust[v]) / g.trust_total()
    }
    fn start(self, g: &Graph, v: usize) -> u128 {
        Fx::by_trust(ONE - self.apply(ONE), g, v)
    }
}

fn units(x: u128) -> f64 {
    x as f64 / ONE as f64
}

/// An ordering: `(node, round, bound)` in order, and `(downloads, crm)` steps.
#[derive(Debug, Default)]
struct Order {
    downloads: Vec<(usize, u32, u128)>,
    progress: Vec<(u64, u128)>,
    rounds: u32,
    crm: u128,
}

fn target(epsilon: f64) -> u128 {
    ONE - (epsilon * ONE as f64) as u128
}

/// Figure 5, with the largest `rm` found in an ordered set.
fn single_page(g: &Graph, fx: Fx, target: u128) -> Order {
    let n = g.nodes.len();
    let mut rm: Vec<u128> = (0..n).map(|u| fx.start(g, u)).collect();
    // Largest rm first, then smallest URL (node numbers are in URL order).
    let mut queue: BTreeSet<(Reverse<u128>, usize)> = (0..n)
        .filter(|&u| rm[u] > 0)
        .map(|u| (Reverse(rm[u]), u))
        .collect();
    let set =
        |queue: &mut BTreeSet<(Reverse<u128>, usize)>, rm: &mut Vec<u128>, u: usize, v: u128| {
            if rm[u] > 0 {
                queue.remove(&(Reverse(rm[u]), u));
            }
            rm[u] = v;
            if v > 0 {
                queue.insert((Reverse(v), u));
            }
        };
    let mut o = Order::default();
    let mut seen = vec![false; n];
    while o.crm < target {
        let Some(&(Reverse(r), u)) = queue.iter().next() else {
            break;
        };
        o.rounds += 1;
        if !seen[u] {
            seen[u] = true;
            o.progress.push((o.downloads.len() as u64, o.crm));
            o.downloads.push((u, o.rounds, r));
        }
        o.crm += r;
        set(&mut queue, &mut rm, u, 0);
        if g.outs[u].is_empty() {
            for v in 0..n {
                let s = Fx::by_trust(fx.apply(r), g, v);
                if s > 0 {
                    let now = rm[v] + s;
                    set(&mut queue, &mut rm, v, now);
                }
            }
        } else {
            let s = fx.share(r, g.outs[u].len());
            for &v in &g.outs[u] {
                if s > 0 {
                    let now = rm[v] + s;
                    set(&mut queue, &mut rm, v, now);
                }
            }
        }
    }
    o.progress.push((o.downloads.len() as u64, o.crm));
    o
}

/// Figure 6 with window `w` (in millionths); `levels` orders a round by URL
/// (L-Neighbor) rather than by `rm`.
fn windowed(g: &Graph, fx: Fx, target: u128, w: u128, levels: bool, max_rounds: u32) -> Order {
    let n = g.nodes.len();
    let mut rm: Vec<u128> = (0..n).map(|u| fx.start(g, u)).collect();
    let mut down = vec![false; n];
    let mut o = Order {
        progress: vec![(0, 0)],
        ..Order::default()
    };
    loop {
        let mut cands: Vec<usize> = (0..n).filter(|&u| rm[u] > 0 && !down[u]).collect();
        cands.sort_by_key(|&u| (Reverse(rm[u]), u));
        let k = (w * cands.len() as u128).div_ceil(1_000_000) as usize;
        let mut chosen: Vec<usize> = cands[..k.min(cands.len())].to_vec();
        if levels {
            chosen.sort();
        }
        o.rounds += 1;
        for &u in &chosen {
            down[u] = true;
            o.downloads.push((u, o.rounds, rm[u]));
        }
        // One synchronous pass from the values at its start.
        let mut next = rm.clone();
        let mut pushed = 0;
        let mut dangling = 0;
        for u in 0..n {
            if !down[u] || rm[u] == 0 {
                continue;
            }
            pushed += rm[u];
            next[u] -= rm[u];
            if g.outs[u].is_empty() {
                dangling += rm[u];
            } else {
                let s = fx.share(rm[u], g.outs[u].len());
                for &v in &g.outs[u] {
                    next[v] += s;
                }
            }
        }
        for (v, r) in next.iter_mut().enumerate() {
            *r += Fx::by_trust(fx.apply(dangling), g, v);
        }
        rm = next;
        o.crm += pushed;
        o.progress.push((o.downloads.len() as u64, o.crm));
        if o.crm >= target || (chosen.is_empty() && pushed == 0) || o.rounds >= max_rounds {
            break;
        }
    }
    o
}

fn guaranteed_at(progress: &[(u64, u128)], n: u64) -> u128 {
    progress
        .iter()
        .filter(|p| p.0 <= n)
        .map(|p| p.1)
        .max()
        .unwrap_or(0)
}

/// The rows of one ordering of one snapshot.
struct Got {
    order: Vec<(String, i64, f64)>,
    curve: Vec<BTreeMap<String, Cell>>,
    summary: BTreeMap<String, Cell>,
}

fn read(out: &Path) -> BTreeMap<(i64, String, Option<i64>), Got> {
    let key = |r: &BTreeMap<String, Cell>| {
        (
            r["snapshot"].i64().unwrap(),
            r["algorithm"].str().unwrap().to_string(),
            r["window"].f64().map(|w| (w * 1e6).round() as i64),
        )
    };
    let mut all: BTreeMap<(i64, String, Option<i64>), Got> = BTreeMap::new();
    for r in read_cells(&out.join("rankmass_summary")) {
        let prev = all.insert(
            key(&r),
            Got {
                order: Vec::new(),
                curve: Vec::new(),
                summary: r.clone(),
            },
        );
        assert!(prev.is_none(), "one summary row per ordering: {r:?}");
    }
    let mut orders = read_cells(&out.join("rankmass_order"));
    orders.sort_by_key(|r| r["rank"].i64().unwrap());
    for r in orders {
        let g = all.get_mut(&key(&r)).expect("an order row has its summary");
        assert_eq!(
            r["rank"].i64().unwrap(),
            g.order.len() as i64 + 1,
            "ranks count from 1"
        );
        g.order.push((
            r["url"].str().unwrap().to_string(),
            r["round"].i64().unwrap(),
            r["bound_at_download"].f64().unwrap(),
        ));
    }
    let mut curves = read_cells(&out.join("rankmass_curve"));
    curves.sort_by_key(|r| r["downloads"].i64().unwrap());
    for r in curves {
        all.get_mut(&key(&r))
            .expect("a curve row has its summary")
            .curve
            .push(r);
    }
    all
}

const WINDOWS: [i64; 5] = [50_000, 100_000, 250_000, 500_000, 1_000_000];
const EPSILON: f64 = 0.001;

/// Compares every ordering of every snapshot of `out` with the references.
fn check(out: &Path, graphs: &[Graph], ranks: &[Expected], single_page_too: bool, context: &str) {
    let fx = Fx::new(0.85);
    let got = read(out);
    for (seq, g) in graphs.iter().enumerate() {
        let seq_i = seq as i64;
        let mut algos: Vec<(String, Option<i64>, Order)> = vec![(
            "l-neighbor".into(),
            None,
            windowed(g, fx, target(EPSILON), 1_000_000, true, 10_000),
        )];
        for w in WINDOWS {
            algos.push((
                "windowed-rankmass".into(),
                Some(w),
                windowed(g, fx, target(EPSILON), w as u128, false, 10_000),
            ));
        }
        if single_page_too {
            algos.push(("rankmass".into(), None, single_page(g, fx, target(EPSILON))));
        }
        let count = got.keys().filter(|k| k.0 == seq_i).count();
        assert_eq!(count, algos.len(), "{context}: orderings of snapshot {seq}");
        let r: Vec<f64> = g.nodes.iter().map(|u| ranks[seq].rows[u].0).collect();
        let mut best = r.clone();
        best.sort_by(|a, b| b.total_cmp(a));
        for (algo, window, want) in algos {
            let ctx = format!("{context}: snapshot {seq}, {algo} {window:?}");
            let have = got
                .get(&(seq_i, algo.clone(), window))
                .unwrap_or_else(|| panic!("{ctx}: missing"));
            let want_order: Vec<(String, i64, f64)> = want
                .downloads
                .iter()
                .map(|(u, round, bound)| (g.nodes[*u].clone(), i64::from(*round), units(*bound)))
                .collect();
            assert_eq!(have.order, want_order, "{ctx}: order");
            let s = &have.summary;
            assert_eq!(
                s["rounds"].i64().unwrap(),
                i64::from(want.rounds),
                "{ctx}: rounds"
            );
            assert_eq!(
                s["final_guaranteed"].f64().unwrap(),
                units(want.crm),
                "{ctx}: final"
            );
            assert_eq!(
                s["downloads"].i64().unwrap(),
                want.downloads.len() as i64,
                "{ctx}"
            );
            let level = (0.98 * ONE as f64) as u128;
            let to_098 = want.progress.iter().find(|p| p.1 >= level);
            assert_eq!(
                s["downloads_to_098_guaranteed"].i64(),
                to_098.map(|p| p.0 as i64),
                "{ctx}: downloads to 0.98 guaranteed"
            );
            // The curve: at powers of two and the end.
            let total = want.downloads.len() as u64;
            let mut at: Vec<u64> = (0..64)
                .map(|k| 1u64 << k)
                .take_while(|n| *n <= total)
                .collect();
            if at.last() != Some(&total) {
                at.push(total);
            }
            let points: Vec<i64> = have
                .curve
                .iter()
                .map(|c| c["downloads"].i64().unwrap())
                .collect();
            assert_eq!(
                points,
                at.iter().map(|n| *n as i64).collect::<Vec<_>>(),
                "{ctx}: points"
            );
            let mut last = 0.0;
            for c in &have.curve {
                let n = c["downloads"].i64().unwrap() as u64;
                let (gu, ac, op) = (
                    c["guaranteed"].f64().unwrap(),
                    c["actual"].f64().unwrap(),
                    c["optimal"].f64().unwrap(),
                );
                assert_eq!(
                    gu,
                    units(guaranteed_at(&want.progress, n)),
                    "{ctx}: guaranteed at {n}"
                );
                let actual: f64 = want.downloads[..n as usize].iter().map(|d| r[d.0]).sum();
                let optimal: f64 = best[..n as usize].iter().sum();
                assert!(
                    (ac - actual).abs() < 1e-9,
                    "{ctx}: actual at {n}: {ac} vs {actual}"
                );
                assert!(
                    (op - optimal).abs() < 1e-9,
                    "{ctx}: optimal at {n}: {op} vs {optimal}"
                );
                assert!(
                    gu <= ac + 1e-9 && ac <= op + 1e-9 && op <= 1.0 + 1e-9,
                    "{ctx}: {gu} {ac} {op}"
                );
                assert!(gu >= last, "{ctx}: the guarantee decreased");
                last = gu;
            }
            if algo == "l-neighbor" {
                // After level L (round L + 1) the guarantee is 1 - d^(L+1), up to
                // the rounding down of each push (about one unit per edge and pass).
                let slack = (g.edges as f64 + 1.0) * want.rounds as f64 / ONE as f64 * 4.0 + 1e-12;
                for (k, p) in want.progress.iter().enumerate().skip(1) {
                    let bound = 1.0 - 0.85f64.powi(k as i32);
                    assert!(
                        units(p.1) + slack >= bound,
                        "{ctx}: level {k}: {} < {bound}",
                        units(p.1)
                    );
                }
            }
        }
    }
}

fn orders_job(dir: &Path, extra: &str) -> std::path::PathBuf {
    job(
        dir,
        &format!("windows = [0.05, 0.1, 0.25, 0.5, 1.0]\nepsilon = {EPSILON}\n{extra}"),
    )
}

/// Runs the crawl `input` on each number of `workers` and checks PageRank and
/// every ordering against the references. The last number of workers runs a
/// second time with `selection_values_max = 1`, so that the windows'
/// thresholds are narrowed by byte histograms and ties by URL, not settled by
/// the candidates' values as they are with the default.
fn run_and_check(
    dir: &Path,
    input: &Path,
    gs: &[Graph],
    ranks: &[Expected],
    workers: &[usize],
    context: &str,
) {
    let last = *workers.last().expect("some workers");
    let runs = workers
        .iter()
        .map(|&w| (w, ""))
        .chain([(last, "selection_values_max = 1\n")]);
    for (k, (w, extra)) in runs.enumerate() {
        let out = dir.join(format!("out{k}"));
        let j = orders_job(dir, extra);
        run_in_process_with_job(input, &out, w, &j).unwrap();
        let context = format!("{context}, {w} workers {extra}");
        crate::rankmass_reference::check(&out, ranks, &context);
        check(&out, gs, ranks, true, &context);
    }
}

#[test]
fn orderings_match_figures_5_and_6_on_random_crawls() {
    let mut rng = Pcg64Mcg::seed_from_u64(67);
    for case in 0..20 {
        let snaps: Vec<Snap> = random_crawl(&mut rng);
        let gs = graphs(&snaps);
        let ranks = reference(&snaps, 0.85);
        let dir = tempdir();
        let input = write(&dir.path().join("in"), &snaps, 0..snaps.len());
        run_and_check(
            dir.path(),
            &input,
            &gs,
            &ranks,
            &[1, 3],
            &format!("case {case}"),
        );
    }
}

/// The real Hollins 2004 crawl: thousands of distinct `rm` values, so the
/// windows' thresholds fall in buckets of several values, and with
/// `selection_values_max = 1` take several byte passes.
#[test]
fn orderings_match_the_references_on_the_hollins_crawl() {
    let Some(snap) = crate::rankmass_reference::hollins() else {
        eprintln!("skipped: ../shared/data/hollins-2004.dat is absent");
        return;
    };
    let snaps = [snap];
    let gs = graphs(&snaps);
    let ranks = reference(&snaps, 0.85);
    let dir = tempdir();
    let input = write(&dir.path().join("in"), &snaps, 0..1);
    run_and_check(dir.path(), &input, &gs, &ranks, &[1, 2], "hollins");
}

/// A trust file (`trust.tsv`: a random subset of the crawl's URLs and some
/// never crawled, random weights, some zero, one URL listed twice): PageRank
/// and every ordering follow its weights on the snapshot's nodes, and fall back
/// to the main pages on snapshots it lists none of.
#[test]
fn pagerank_and_orderings_follow_a_trust_file() {
    use rand::Rng;
    let mut rng = Pcg64Mcg::seed_from_u64(71);
    for case in 0..12 {
        let snaps: Vec<Snap> = random_crawl(&mut rng);
        let mut urls: BTreeSet<String> = BTreeSet::new();
        for s in &snaps {
            urls.extend(s.pages.iter().cloned());
            urls.extend(s.links.iter().map(|l| l.1.clone()));
        }
        let mut trust: Vec<(String, f64)> = Vec::new();
        for u in &urls {
            if rng.random_bool(if case % 4 == 3 { 0.02 } else { 0.3 }) {
                trust.push((u.clone(), [0.0, 0.5, 1.0, 2.5][rng.random_range(0..4)]));
            }
        }
        trust.push(("http://elsewhere.example/".into(), 3.0));
        if let Some(first) = trust.first().cloned() {
            trust.push((first.0, 1.0));
        }
        let gs = graphs_with_trust(&snaps, &trust);
        let ranks = reference_of(&gs, 0.85);
        let dir = tempdir();
        let input = write(&dir.path().join("in"), &snaps, 0..snaps.len());
        let mut text = String::from("url\tweight\n");
        for (u, w) in &trust {
            text.push_str(&format!("{u}\t{w}\n"));
        }
        std::fs::write(input.join("trust.tsv"), text).unwrap();
        run_and_check(
            dir.path(),
            &input,
            &gs,
            &ranks,
            &[1, 2],
            &format!("trust case {case}"),
        );
    }
}
