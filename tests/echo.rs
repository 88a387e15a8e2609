//! The ECHO analysis on the generator's news crawl: `content_sources` and
//! `source_estimates` against a brute-force reference that replays the crawl
//! directory's files snapshot by snapshot; `echo_schedule`/`echo_plan` against
//! the schedule of the reference's parameters; recovery of the generator's true
//! λ, P, μ; and the same tables for every worker layout and for a run split in two.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use webevo::algo::echo::{fit_clicks, schedule, Source};
use webevo::generate::Preset;
use webevo::ingest::crawl_dir::CrawlDir;

use crate::util::*;

const BIN: i64 = 20 * 60 * 1_000_000;

/// The news crawl of a generated preset.
fn news(preset: Preset, dir: &Path) -> PathBuf {
    generated(preset, 11, &dir.join("in")).join("news")
}

fn job(dir: &Path, extra: &str) -> PathBuf {
    let path = dir.join("echo.toml");
    std::fs::write(
        &path,
        format!("analyses = [\"echo\"]\n[echo]\ncrawl_rates_per_s = [0.01, 0.05]\n{extra}\n"),
    )
    .unwrap();
    path
}

/// What the reference expects of one source at one snapshot.
#[derive(Debug)]
struct Expected {
    kind: &'static str,
    crawls: i64,
    new_links: i64,
    lambda: Option<f64>,
    clicked: i64,
    /// `(P, μ, bin ends)` of the fit, `None` when the default applies.
    fit: Option<(f64, f64, Vec<f64>)>,
    /// New pages it revealed within the click horizon (the source cover's set).
    young: Vec<String>,
}

#[derive(Default)]
struct SourceHistory {
    /// (fetch time, new links), every crawl as a source.
    crawls: Vec<(i64, u64)>,
    /// Pages revealed after the baseline, with the snapshot they were found at.
    pages: Vec<(String, usize)>,
}

fn path_is_root(url: &str) -> bool {
    let rest = url.split_once("://").unwrap().1;
    rest.find('/').is_none_or(|i| &rest[i..] == "/")
}

fn host_of(url: &str) -> &str {
    let rest = url.split_once("://").unwrap().1;
    &rest[..rest.find('/').unwrap_or(rest.len())]
}

/// Replays the crawl: per snapshot, per content source URL, what it expects.
fn reference(
    crawl: &Path,
    age_days: f64,
    n: usize,
    horizon_bins: i64,
) -> Vec<BTreeMap<String, Expected>> {
    let metas: Vec<(u64, i64)> = CrawlDir::open(crawl)
        .unwrap()
        .snapshots
        .iter()
        .map(|s| (s.meta.seq, s.meta.time))
        .collect();
    let times: Vec<i64> = metas.iter().map(|m| m.1).collect();
    // Click rows: (url, time, clicks), each counted at the first snapshot whose
    // time is at least the end of its bin.
    let mut clicks: HashMap<String, Vec<(usize, i64, i64)>> = HashMap::new();
    for row in read_cells(&crawl.join("clicks.parquet")) {
        let (url, time, c) = (
            row["url"].str().unwrap().to_string(),
            row["time"].i64().unwrap(),
            row["clicks"].i64().unwrap(),
        );
        let at = times.partition_point(|t| *t < time + BIN);
        if at < times.len() && c > 0 {
            clicks.entry(url).or_default().push((at, time, c));
        }
    }
    let mut first_seen: HashMap<String, usize> = HashMap::new();
    let mut outlinks: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut history: BTreeMap<String, SourceHistory> = BTreeMap::new();
    let mut out = Vec::new();
    for (s, (seq, now)) in metas.iter().enumerate() {
        let dir = crawl.join("snapshots").join(seq.to_string());
        let mut fetched: BTreeMap<String, i64> = BTreeMap::new();
        for row in crawl_rows(&dir, "pages") {
            let t = row.get("fetch_time").and_then(Cell::i64).unwrap_or(*now);
            fetched.insert(row["url"].str().unwrap().to_string(), t);
        }
        let mut links: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for row in crawl_rows(&dir, "links") {
            let (src, dst) = (row["src"].str().unwrap(), row["dst"].str().unwrap());
            if src != dst {
                links
                    .entry(src.to_string())
                    .or_default()
                    .insert(dst.to_string());
            }
        }
        // Known pages; the partial snapshot replaces the outlinks of what it covers.
        for url in fetched
            .keys()
            .chain(links.values().flatten())
            .chain(links.keys())
        {
            first_seen.entry(url.clone()).or_insert(s);
        }
        for url in fetched.keys() {
            outlinks.remove(url);
        }
        outlinks.extend(links);
        // Content sources.
        let old = |url: &str| {
            let f = first_seen[url];
            f == 0 || (*now - times[f]) as f64 >= age_days * 86_400e6
        };
        let mut sources: BTreeMap<String, &'static str> = BTreeMap::new();
        for (src, dsts) in &outlinks {
            if !path_is_root(src) || dsts.is_empty() {
                continue;
            }
            for d in dsts {
                if host_of(d) == host_of(src) && old(d) {
                    sources.insert(d.clone(), "linked");
                }
            }
            sources.insert(src.clone(), "main");
        }
        let mut expected = BTreeMap::new();
        for (url, kind) in sources {
            let h = history.entry(url.clone()).or_default();
            if let Some(&t) = fetched.get(&url) {
                let found: Vec<String> = outlinks
                    .get(&url)
                    .into_iter()
                    .flatten()
                    .filter(|d| first_seen[*d] == s)
                    .cloned()
                    .collect();
                let baseline = h.crawls.is_empty();
                h.crawls
                    .push((t, if baseline { 0 } else { found.len() as u64 }));
                if !baseline {
                    h.pages.extend(found.into_iter().map(|p| (p, s)));
                }
            }
            // λ over the last n crawls, 1-based as in ALGORITHMS.md.
            let k = h.crawls.len();
            let lambda = (k >= 2).then(|| {
                let first = (k as i64 - n as i64 + 1).max(2) as usize;
                let from = (k as i64 - n as i64).max(1) as usize;
                let links: u64 = (first..=k).map(|j| h.crawls[j - 1].1).sum();
                links as f64 / ((h.crawls[k - 1].0 - h.crawls[from - 1].0) as f64 / 1e6)
            });
            // The click curve: bin b over the pages at least b + 1 bins old.
            let mut sums = vec![0i64; horizon_bins as usize];
            let mut reach = vec![0i64; horizon_bins as usize];
            let mut clicked = 0;
            for (page, at) in &h.pages {
                let found = times[*at];
                let age_bins = (*now - found) / BIN;
                for b in 0..horizon_bins.min(age_bins) {
                    reach[b as usize] += 1;
                }
                let mut any = false;
                for &(arrived, time, c) in clicks.get(page).into_iter().flatten() {
                    if arrived < *at || arrived > s {
                        continue;
                    }
                    let age = time + BIN - found;
                    let b = ((age + BIN - 1).div_euclid(BIN) - 1).max(0);
                    if b < horizon_bins && found + (b + 1) * BIN <= *now {
                        sums[b as usize] += c;
                        any = true;
                    }
                }
                clicked += i64::from(any);
            }
            let mut t = Vec::new();
            let mut y = Vec::new();
            let mut cumulative = 0.0;
            for b in 0..horizon_bins as usize {
                if reach[b] == 0 {
                    break;
                }
                cumulative += sums[b] as f64 / reach[b] as f64;
                t.push((b + 1) as f64 * BIN as f64 / 1e6);
                y.push(cumulative);
            }
            let ln2 = std::f64::consts::LN_2;
            let fit = (clicked > 0 && y.len() >= 3)
                .then(|| fit_clicks(&t, &y, ln2 / (720.0 * 3600.0), ln2 / (0.05 * 3600.0)))
                .flatten()
                .map(|f| (f.profit, f.mu, t.clone()));
            let young = h
                .pages
                .iter()
                .filter(|(_, at)| *now - times[*at] < horizon_bins * BIN)
                .map(|(p, _)| p.clone())
                .collect();
            expected.insert(
                url,
                Expected {
                    kind,
                    crawls: k as i64,
                    new_links: h.crawls.iter().map(|c| c.1 as i64).sum(),
                    lambda,
                    clicked,
                    fit,
                    young,
                },
            );
        }
        out.push(expected);
    }
    out
}

/// The rows of a snapshot's `pages` or `links` file, Parquet or TSV (all cells
/// text).
fn crawl_rows(dir: &Path, stem: &str) -> Vec<BTreeMap<String, Cell>> {
    let parquet = dir.join(format!("{stem}.parquet"));
    if parquet.exists() {
        return read_cells(&parquet);
    }
    let text = std::fs::read_to_string(dir.join(format!("{stem}.tsv"))).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split('\t').collect();
    lines
        .map(|l| {
            header
                .iter()
                .zip(l.split('\t'))
                .map(|(k, v)| (k.to_string(), Cell::Str(v.to_string())))
                .collect()
        })
        .collect()
}

/// Eager greedy cover straight from the definition: each pick rescans every
/// source; ties go to the smallest URL. `(url, gain, covered fraction)`.
fn brute_force_cover(sets: &BTreeMap<String, Vec<String>>) -> Vec<(String, i64, f64)> {
    let all: BTreeSet<&String> = sets.values().flatten().collect();
    let mut covered: BTreeSet<&String> = BTreeSet::new();
    let mut out = Vec::new();
    loop {
        // BTreeMap order: the first of equal gains is the smallest URL.
        let mut best: Option<(&String, usize)> = None;
        for (url, pages) in sets {
            let gain = pages.iter().filter(|p| !covered.contains(p)).count();
            if gain > best.map_or(0, |b| b.1) {
                best = Some((url, gain));
            }
        }
        let Some((url, gain)) = best else { return out };
        covered.extend(sets[url].iter());
        out.push((
            url.clone(),
            gain as i64,
            covered.len() as f64 / all.len() as f64,
        ));
    }
}

/// `source_cover` of `out` against the greedy cover of the reference's sets.
fn check_source_cover(out: &Path, expected: &[BTreeMap<String, Expected>]) -> usize {
    let mut got: BTreeMap<i64, Vec<(i64, String, i64, f64)>> = BTreeMap::new();
    for r in read_cells(&out.join("source_cover")) {
        got.entry(r["snapshot"].i64().unwrap()).or_default().push((
            r["rank"].i64().unwrap(),
            r["url"].str().unwrap().to_string(),
            r["gain"].i64().unwrap(),
            r["covered_fraction"].f64().unwrap(),
        ));
    }
    let mut picks = 0;
    for (s, want) in expected.iter().enumerate() {
        let sets: BTreeMap<String, Vec<String>> = want
            .iter()
            .filter(|(_, e)| !e.young.is_empty())
            .map(|(u, e)| (u.clone(), e.young.clone()))
            .collect();
        let want: Vec<(i64, String, i64, f64)> = brute_force_cover(&sets)
            .into_iter()
            .enumerate()
            .map(|(i, (u, g, f))| (i as i64 + 1, u, g, f))
            .collect();
        let mut rows = got.remove(&(s as i64)).unwrap_or_default();
        rows.sort_by_key(|r| r.0);
        assert_eq!(rows.len(), want.len(), "source cover of snapshot {s}");
        for (a, b) in rows.iter().zip(&want) {
            assert_eq!((a.0, &a.1, a.2), (b.0, &b.1, b.2), "snapshot {s}");
            assert!(close(a.3, b.3, 1e-12), "snapshot {s}: {a:?} vs {b:?}");
        }
        picks += want.len();
    }
    assert!(got.is_empty(), "no cover at other snapshots: {got:?}");
    picks
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * a.abs().max(b.abs()) + 1e-12
}

/// Checks content_sources, source_estimates and the schedule tables of `out`
/// against the reference.
fn check_against_reference(out: &Path, expected: &[BTreeMap<String, Expected>], rates: &[f64]) {
    let by_snapshot = |table: &str| {
        let mut m: BTreeMap<i64, Vec<BTreeMap<String, Cell>>> = BTreeMap::new();
        for row in read_cells(&out.join(table)) {
            m.entry(row["snapshot"].i64().unwrap())
                .or_default()
                .push(row);
        }
        m
    };
    let sources = by_snapshot("content_sources");
    let estimates = by_snapshot("source_estimates");
    let schedules = by_snapshot("echo_schedule");
    let plans = by_snapshot("echo_plan");
    let mut fitted = 0;
    for (s, want) in expected.iter().enumerate() {
        let s64 = s as i64;
        let got: BTreeMap<&str, &str> = sources
            .get(&s64)
            .into_iter()
            .flatten()
            .map(|r| (r["url"].str().unwrap(), r["kind"].str().unwrap()))
            .collect();
        let want_kinds: BTreeMap<&str, &str> =
            want.iter().map(|(u, e)| (u.as_str(), e.kind)).collect();
        assert_eq!(got, want_kinds, "content sources of snapshot {s}");
        let rows = estimates.get(&s64).map_or(&[][..], |v| v.as_slice());
        assert_eq!(rows.len(), want.len(), "estimates of snapshot {s}");
        let mut params = Vec::new();
        for r in rows {
            let url = r["url"].str().unwrap();
            let e = &want[url];
            let what = format!("snapshot {s}, {url}");
            assert_eq!(r["crawls"].i64(), Some(e.crawls), "{what}: crawls");
            assert_eq!(r["new_links"].i64(), Some(e.new_links), "{what}: new_links");
            assert_eq!(r["clicked_pages"].i64(), Some(e.clicked), "{what}: clicked");
            match (r["lambda_per_s"].f64(), e.lambda) {
                (Some(a), Some(b)) => assert!(close(a, b, 1e-12), "{what}: lambda {a} vs {b}"),
                (a, b) => assert_eq!(a, b, "{what}: lambda"),
            }
            let default = r["p_is_default"] == Cell::Bool(true);
            assert_eq!(default, e.fit.is_none(), "{what}: default");
            let (p, mu) = (r["p_profit"].f64().unwrap(), r["mu_per_s"].f64().unwrap());
            if let Some((wp, wmu, t)) = &e.fit {
                // Where the curve is nearly straight, P and mu trade off along a
                // flat valley; the fitted curves must agree.
                let top = t
                    .iter()
                    .map(|t| wp * -(-wmu * t).exp_m1())
                    .fold(0.0, f64::max);
                for t in t {
                    let (a, b) = (p * -(-mu * t).exp_m1(), wp * -(-wmu * t).exp_m1());
                    assert!(
                        (a - b).abs() <= 1e-3 * top,
                        "{what}: curves at {t}: {a} vs {b} (P {p} vs {wp}, mu {mu} vs {wmu})"
                    );
                }
                fitted += 1;
            } else {
                assert_eq!(p, 1.0, "{what}: default P");
            }
            if let Some(lambda) = r["lambda_per_s"].f64() {
                params.push((
                    url.to_string(),
                    Source {
                        lambda,
                        profit: p,
                        mu,
                    },
                ));
            }
        }
        // The schedule of exactly these parameters.
        params.sort_by(|a, b| a.0.cmp(&b.0));
        let list: Vec<Source> = params.iter().map(|p| p.1).collect();
        let sched = schedules.get(&s64).map_or(&[][..], |v| v.as_slice());
        let plan = plans.get(&s64).map_or(&[][..], |v| v.as_slice());
        if list.is_empty() {
            assert!(
                sched.is_empty() && plan.is_empty(),
                "snapshot {s}: no schedule"
            );
            continue;
        }
        assert_eq!(plan.len(), rates.len(), "snapshot {s}: a plan per rate");
        assert_eq!(sched.len(), rates.len() * list.len(), "snapshot {s}");
        for &rate in rates {
            let want = schedule(&list, rate);
            let p = plan
                .iter()
                .find(|r| r["crawl_rate_per_s"].f64() == Some(rate))
                .unwrap();
            assert!(close(p["omega"].f64().unwrap(), want.omega, 1e-9));
            assert!(close(
                p["profit_per_s"].f64().unwrap(),
                want.profit_per_s,
                1e-9
            ));
            let crawled = want.intervals.iter().filter(|i| i.is_some()).count() as i64;
            assert_eq!(p["sources_crawled"].i64(), Some(crawled));
            for ((url, _), interval) in params.iter().zip(&want.intervals) {
                let row = sched
                    .iter()
                    .find(|r| {
                        r["crawl_rate_per_s"].f64() == Some(rate) && r["url"].str() == Some(url)
                    })
                    .unwrap();
                match (row["interval_s"].f64(), interval) {
                    (Some(a), Some(b)) => assert!(close(a, *b, 1e-9)),
                    (a, b) => assert_eq!(a, *b, "{url} at {rate}"),
                }
            }
        }
    }
    assert!(fitted > 0, "some sources have a fitted click curve");
}

#[test]
fn tiny_news_crawl_matches_the_reference() {
    let dir = tempdir();
    let crawl = news(Preset::Tiny, dir.path());
    // The default horizon (48 h, longer than the crawl), and one of an hour (3 bins)
    // that pages outgrow.
    for (name, extra, horizon) in [
        ("default", "", 144),
        ("short", "click_horizon_hours = 1\ncrawls = 3", 3),
    ] {
        let d = dir.path().join(name);
        std::fs::create_dir_all(&d).unwrap();
        let job = job(&d, extra);
        let out = d.join("out");
        run_in_process_with_job(&crawl, &out, 2, &job).unwrap();
        let n = if name == "short" { 3 } else { 7 };
        let expected = reference(&crawl, 3.0, n, horizon);
        check_against_reference(&out, &expected, &[0.01, 0.05]);
        assert!(
            check_source_cover(&out, &expected) > 0,
            "{name}: some picks"
        );
    }
}

/// Random partial crawls of a few hosts whose sources reveal new pages of their
/// own and of other hosts, so the cover's groups of hosts span workers.
#[test]
fn source_cover_across_hosts_matches_the_brute_force_for_any_layout() {
    use rand::{Rng, SeedableRng};
    let dir = tempdir();
    let job = job(dir.path(), "content_age_days = 1\nclick_horizon_hours = 60");
    let mut picks = 0;
    for seed in 0..6u64 {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
        let hosts = rng.random_range(2..7);
        let main = |h: usize| format!("http://h{h}.com/");
        let section = |h: usize, j: usize| format!("http://h{h}.com/s{j}");
        let crawl = Crawl::new(&dir.path().join(format!("in{seed}")));
        let mut article = 0;
        for seq in 0..6u64 {
            let mut pages: Vec<(String, String)> = Vec::new();
            let mut links: Vec<(String, String)> = Vec::new();
            for h in 0..hosts {
                pages.push((main(h), format!("m{seq}")));
                for j in 0..2 {
                    pages.push((section(h, j), format!("s{seq}")));
                    links.push((main(h), section(h, j)));
                }
            }
            // New pages, each on a random host, linked from 1-3 random sources
            // (sometimes of other hosts); some pages are linked again later.
            for _ in 0..rng.random_range(0..12) {
                article += 1;
                let on = rng.random_range(0..hosts);
                let url = format!("http://h{on}.com/a{article}");
                for _ in 0..rng.random_range(1..4) {
                    let h = if rng.random_bool(0.7) {
                        on
                    } else {
                        rng.random_range(0..hosts)
                    };
                    let src = match rng.random_range(0..3) {
                        0 => main(h),
                        j => section(h, j - 1),
                    };
                    links.push((src, url.clone()));
                }
            }
            if article > 3 && rng.random_bool(0.5) {
                let old = format!("http://h0.com/a{}", rng.random_range(1..article));
                links.push((section(0, 0), old));
            }
            let pages: Vec<(&str, &str)> = pages
                .iter()
                .map(|(a, b)| (a.as_str(), b.as_str()))
                .collect();
            let links: Vec<(&str, &str)> = links
                .iter()
                .map(|(a, b)| (a.as_str(), b.as_str()))
                .collect();
            crawl.snapshot(seq, seq as i64, seq > 0, &pages, &links);
        }
        // 60 hours: the pages of the last two daily snapshots, 180 bins.
        let expected = reference(&crawl.dir, 1.0, 7, 180);
        let mut first = None;
        for workers in [1, 3] {
            let out = dir.path().join(format!("out{seed}-{workers}"));
            run_in_process_with_job(&crawl.dir, &out, workers, &job).unwrap();
            picks += check_source_cover(&out, &expected);
            let rows = table_rows(&out, "source_cover");
            assert_eq!(
                first.get_or_insert_with(|| rows.clone()),
                &rows,
                "seed {seed}"
            );
        }
    }
    assert!(picks > 20, "the cases pick sources: {picks}");
}

#[test]
fn tiny_news_crawl_same_for_any_layout_and_split_runs() {
    let dir = tempdir();
    let crawl = news(Preset::Tiny, dir.path());
    // With the simulation: echo_eval is the leader's, from the committed estimates.
    let job_path = dir.path().join("eval.toml");
    std::fs::write(
        &job_path,
        "analyses = [\"echo\", \"echo_eval\"]\n[echo]\nclick_horizon_hours = 1\n\
         [echo_eval]\ncrawl_rates_per_s = [0.005, 0.02]\nwarmup_hours = 1\nwindow_hours = 1\n",
    )
    .unwrap();
    let one = dir.path().join("one");
    run_in_process_with_job(&crawl, &one, 1, &job_path).unwrap();
    let expected = tables(&one);
    for table in [
        "content_sources",
        "source_estimates",
        "echo_schedule",
        "echo_plan",
        "source_cover",
        "echo_eval",
    ] {
        assert!(!expected[table].is_empty(), "{table} has rows");
    }
    let three = dir.path().join("three");
    run_in_process_with_job(&crawl, &three, 3, &job_path).unwrap();
    let same = |other: &Path, what: &str| {
        let got = tables(other);
        for (table, rows) in &expected {
            assert!(
                got.get(table) == Some(rows),
                "{table}: {what} differ from 1 worker"
            );
        }
    };
    same(&three, "3 workers");
    let cluster = dir.path().join("cluster");
    run_cluster_with_job(&crawl, &cluster, 2, 1, job_path.to_str().unwrap());
    same(&cluster, "2 processes");
    // Split in two runs: the state carries every source's and page's history.
    let seqs = snapshot_seqs(&crawl);
    let grow = dir.path().join("grow");
    let split = dir.path().join("split");
    subset(&crawl, &grow, seqs[..seqs.len() / 2].iter().copied());
    run_in_process_with_job(&grow, &split, 2, &job_path).unwrap();
    subset(&crawl, &grow, seqs.iter().copied());
    run_in_process_with_job(&grow, &split, 1, &job_path).unwrap();
    same(&split, "two runs");
    // A run killed after its commit, during the simulation: the next run finds
    // nothing new to read but simulates again; after that, an up-to-date run
    // leaves the table alone.
    let table = split.join("echo_eval").join("part-00000.parquet");
    std::fs::remove_dir_all(split.join("echo_eval")).unwrap();
    run_in_process_with_job(&grow, &split, 1, &job_path).unwrap();
    same(&split, "a simulation redone");
    let written = std::fs::metadata(&table).unwrap().modified().unwrap();
    run_in_process_with_job(&grow, &split, 1, &job_path).unwrap();
    assert_eq!(
        std::fs::metadata(&table).unwrap().modified().unwrap(),
        written
    );
}

/// Median of the relative errors `|est / truth - 1|`.
fn median_error(pairs: &[(f64, f64)]) -> f64 {
    let mut e: Vec<f64> = pairs.iter().map(|(est, t)| (est / t - 1.0).abs()).collect();
    e.sort_by(f64::total_cmp);
    e[e.len() / 2]
}

#[test]
fn demo_news_estimates_recover_the_generators_truth_and_echo_wins_the_simulation() {
    let dir = tempdir();
    let crawl = news(Preset::Demo, dir.path());
    let out = dir.path().join("out");
    run_in_process_with_job(&crawl, &out, 2, &root().join("jobs/echo-eval.toml")).unwrap();
    let last = snapshot_seqs(&crawl).len() as i64 - 1;
    let truth: HashMap<String, BTreeMap<String, Cell>> =
        read_cells(&crawl.join("truth/sources.parquet"))
            .into_iter()
            .map(|r| (r["url"].str().unwrap().to_string(), r))
            .collect();
    let (mut lambda, mut p, mut mu) = (Vec::new(), Vec::new(), Vec::new());
    let mut defaults_right = 0;
    let mut rows = 0;
    for r in read_cells(&out.join("source_estimates")) {
        if r["snapshot"].i64() != Some(last) {
            continue;
        }
        let url = r["url"].str().unwrap();
        let Some(t) = truth.get(url) else { continue };
        rows += 1;
        let logged = t["clicks_logged"] == Cell::Bool(true);
        let default = r["p_is_default"] == Cell::Bool(true);
        defaults_right += usize::from(default != logged);
        lambda.push((
            r["lambda_per_s"].f64().unwrap(),
            t["lambda_per_s"].f64().unwrap(),
        ));
        if !default {
            p.push((r["p_profit"].f64().unwrap(), t["p_profit"].f64().unwrap()));
            mu.push((r["mu_per_s"].f64().unwrap(), t["mu_per_s"].f64().unwrap()));
        }
    }
    assert_eq!(rows, truth.len(), "every front page is a content source");
    assert_eq!(
        defaults_right, rows,
        "exactly the hosts without clicks get the default"
    );
    let (el, ep, em) = (median_error(&lambda), median_error(&p), median_error(&mu));
    eprintln!("median relative errors: lambda {el:.3}, P {ep:.3}, mu {em:.3}");
    // λ over 7 crawls of 10 minutes sees a handful of new links: Poisson noise.
    assert!(el < 0.6, "lambda {el}");
    assert!(ep < 0.1, "P {ep}");
    assert!(em < 0.15, "mu {em}");

    // The policy simulation (echo_eval): every policy below the upper bound and
    // within its fetch budget; ECHO-newpages and ECHO-schedule ahead of BFS and
    // Fixed-quota at every rate, and of Frequency once the rate covers the new
    // pages' (0.05/s here; below it, the schedule cannot pay the new pages of the
    // sources it turns on).
    let mut quality: HashMap<(String, String), f64> = HashMap::new();
    let span_s = (snapshot_seqs(&crawl).len() - 1) as f64 * 600.0;
    for r in read_cells(&out.join("echo_eval")) {
        let rate = r["crawl_rate_per_s"].f64().unwrap();
        let policy = r["policy"].str().unwrap().to_string();
        let fetches = r["fetches"].i64().unwrap();
        assert!(
            policy == "upper-bound" || fetches as f64 <= rate * span_s + 1.0,
            "{policy} at {rate}: {fetches} fetches"
        );
        assert_eq!(
            Some(fetches),
            r["source_fetches"]
                .i64()
                .zip(r["new_page_fetches"].i64())
                .map(|(a, b)| a + b)
        );
        quality.insert(
            (format!("{rate}"), policy),
            r["overall_quality"].f64().unwrap(),
        );
    }
    assert_eq!(quality.len(), 3 * 7, "7 policies at 3 rates");
    for rate in ["0.02", "0.05", "0.1"] {
        let q = |p: &str| quality[&(rate.to_string(), p.to_string())];
        let bound = q("upper-bound");
        for p in [
            "bfs",
            "fixed-quota",
            "frequency",
            "echo-newpages",
            "echo-schedule",
            "echo-greedy",
        ] {
            assert!(q(p) <= bound, "{p} at {rate} above the upper bound");
        }
        for echo in ["echo-newpages", "echo-schedule"] {
            assert!(
                q(echo) > q("bfs") && q(echo) > q("fixed-quota"),
                "{echo} at {rate}"
            );
            if rate != "0.02" {
                assert!(q(echo) > q("frequency"), "{echo} vs frequency at {rate}");
            }
        }
    }
}
