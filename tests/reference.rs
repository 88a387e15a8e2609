//! The foundation and discovery tables against a brute-force reference: plain sets
//! of URL strings following the README's, ALGORITHMS.md's and docs/discovery.md's
//! definitions, on random crawls with partial snapshots, page deaths, changes,
//! duplicates, self-links and non-web links, on richer crawls with history and
//! sites appearing mid-crawl (under default and other `[discovery]` parameters),
//! on registered-domain sites, and on the discoverability paper's Figure 1. The
//! discovery part of the reference is `discovery_reference.rs`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

use crate::discovery_reference::{Discovery, Params, Set, SiteOf, SnapshotData, TABLES};
use crate::util::*;

/// One snapshot of a crawl as written: `(url, digest)` pages and `(src, dst)` links.
pub struct Snap {
    pub day: i64,
    pub partial: bool,
    pub pages: Vec<(String, String)>,
    pub links: Vec<(String, String)>,
}

impl Snap {
    /// A full snapshot fetching `pages` (digest `d`) with `links`.
    pub fn full(day: i64, pages: &[String], links: &[(String, String)]) -> Snap {
        Snap {
            day,
            partial: false,
            pages: pages.iter().map(|u| (u.clone(), "d".to_string())).collect(),
            links: links.to_vec(),
        }
    }
}

fn host(url: &str) -> String {
    url.split('/').nth(2).unwrap().to_string()
}

fn random_crawl(rng: &mut Pcg64Mcg) -> Vec<Snap> {
    let hosts = ["a.com", "b.org", "c.net", "d.edu", "e.gov"];
    // Each snapshot can reach a few more paths per host, so new pages keep coming.
    let url = |rng: &mut Pcg64Mcg, host: &str, paths: u32| {
        format!("http://{host}/{}", rng.random_range(0..paths))
    };
    let any_host = |rng: &mut Pcg64Mcg| hosts[rng.random_range(0..hosts.len())];
    let n = rng.random_range(2..7);
    let mut day = 0;
    (0..n)
        .map(|i| {
            day += rng.random_range(1..10);
            let paths = 4 + 3 * i;
            let partial = i > 0 && rng.random_bool(0.3);
            let mut pages = Vec::new();
            for _ in 0..rng.random_range(0..16) {
                let h = any_host(rng);
                pages.push((url(rng, h, paths), format!("d{}", rng.random_range(0..3))));
            }
            pages.sort();
            pages.dedup_by(|a, b| a.0 == b.0);
            let mut links = Vec::new();
            for _ in 0..rng.random_range(0..30) {
                // Mostly outlinks of fetched pages, mostly to the same host.
                let src = match pages.len() {
                    n if n > 0 && rng.random_bool(0.8) => pages[rng.random_range(0..n)].0.clone(),
                    _ => {
                        let h = any_host(rng);
                        url(rng, h, paths)
                    }
                };
                let src_host = host(&src);
                let dst = match rng.random_range(0..10) {
                    0 => src.clone(),
                    1 => "mailto:x@y.z".to_string(),
                    2..=7 => url(rng, &src_host, paths),
                    _ => {
                        let h = any_host(rng);
                        url(rng, h, paths)
                    }
                };
                links.push((src, dst));
            }
            Snap {
                day,
                partial,
                pages,
                links,
            }
        })
        .collect()
}

/// Richer crawls for the discovery tables: up to 8 snapshots, so sites have
/// history; hub pages (paths 0 and 1) linking to the newest paths, so closures
/// overlap; three of six sites appearing mid-crawl, linked from old pages of the
/// others (rarely linked to before they appear, so they are then no new sites);
/// pages dropping out and coming back; partial snapshots, self-links, non-web
/// links and links of pages not fetched.
fn rich_crawl(rng: &mut Pcg64Mcg) -> Vec<Snap> {
    let hosts = ["a.com", "b.org", "c.net", "d.edu", "e.gov", "f.io"];
    let n = rng.random_range(3..9);
    let start: Vec<usize> = (0..hosts.len())
        .map(|j| if j < 3 { 0 } else { rng.random_range(1..n) })
        .collect();
    let mut day = 0;
    (0..n)
        .map(|i| {
            day += rng.random_range(1..5);
            let paths = 3 + 3 * i as u32;
            let live: Vec<&str> = (0..hosts.len())
                .filter(|&j| start[j] <= i)
                .map(|j| hosts[j])
                .collect();
            let partial = i > 0 && rng.random_bool(0.2);
            let mut pages = Vec::new();
            for h in &live {
                for p in 0..paths {
                    let keep = if p < 2 { 0.9 } else { 0.6 };
                    if rng.random_bool(keep) {
                        let d = format!("d{}", rng.random_range(0..3));
                        pages.push((format!("http://{h}/{p}"), d));
                    }
                }
            }
            // Mostly to the newest paths, which are new pages more often.
            let path = |rng: &mut Pcg64Mcg| match rng.random_bool(0.6) {
                true => rng.random_range(paths.saturating_sub(6)..paths),
                false => rng.random_range(0..paths),
            };
            let mut links = Vec::new();
            for (u, _) in &pages {
                let h = host(u);
                let hub = u.ends_with("/0") || u.ends_with("/1");
                let fanout = if hub {
                    rng.random_range(2..8)
                } else {
                    rng.random_range(0..3)
                };
                for _ in 0..fanout {
                    let dst = match rng.random_range(0..40) {
                        0 => u.clone(),
                        1 => "mailto:x@y.z".to_string(),
                        2..=31 => format!("http://{h}/{}", path(rng)),
                        32..=38 => {
                            let o = live[rng.random_range(0..live.len())];
                            format!("http://{o}/{}", path(rng))
                        }
                        _ => {
                            let o = hosts[rng.random_range(0..hosts.len())];
                            format!("http://{o}/{}", path(rng))
                        }
                    };
                    links.push((u.clone(), dst));
                }
            }
            for _ in 0..rng.random_range(0..3) {
                let h = live[rng.random_range(0..live.len())];
                let src = format!("http://{h}/{}", path(rng));
                links.push((src, format!("http://{h}/{}", path(rng))));
            }
            Snap {
                day,
                partial,
                pages,
                links,
            }
        })
        .collect()
}

/// Expected tables, formatted as `tables` reads them: `snapshots`,
/// `host_snapshots` and the discovery tables, with `site` mapping a URL to its
/// site (which replaces the host everywhere).
pub fn reference(snaps: &[Snap], params: &Params, site: SiteOf) -> BTreeMap<String, Vec<String>> {
    let mut known_before = Set::new();
    let mut links_prev: BTreeSet<(String, String)> = BTreeSet::new();
    let mut alive_prev = Set::new();
    let mut last_digest: BTreeMap<String, String> = BTreeMap::new();
    let (mut snap_rows, mut host_rows) = (Vec::new(), Vec::new());
    let mut discovery = Discovery::new(params, site);
    for (seq, s) in snaps.iter().enumerate() {
        let fetched: Set = s.pages.iter().map(|p| p.0.clone()).collect();
        let listed: BTreeSet<(String, String)> = s
            .links
            .iter()
            .filter(|(a, b)| a != b && b.starts_with("http"))
            .cloned()
            .collect();
        let mut known = fetched.clone();
        for (a, b) in &listed {
            known.insert(a.clone());
            known.insert(b.clone());
        }
        let mut links = listed.clone();
        if s.partial {
            let covered: Set = listed
                .iter()
                .map(|l| l.0.clone())
                .chain(fetched.iter().cloned())
                .collect();
            links.extend(
                links_prev
                    .iter()
                    .filter(|l| !covered.contains(&l.0))
                    .cloned(),
            );
        }
        let alive: Set = if s.partial {
            alive_prev.union(&fetched).cloned().collect()
        } else {
            fetched.clone()
        };
        let gone: Set = if s.partial {
            Set::new()
        } else {
            alive_prev.difference(&fetched).cloned().collect()
        };
        let new: Set = fetched.difference(&known_before).cloned().collect();
        let changed: Set = s
            .pages
            .iter()
            .filter(|(u, d)| last_digest.get(u).is_some_and(|old| old != d))
            .map(|p| p.0.clone())
            .collect();
        let new_links: BTreeSet<_> = links.difference(&links_prev).cloned().collect();
        let removed: BTreeSet<_> = links_prev.difference(&links).cloned().collect();
        let hosts_before: Set = known_before.iter().map(|u| site(u)).collect();
        let all_hosts: Set = known
            .iter()
            .chain(gone.iter())
            .chain(links.iter().chain(removed.iter()).map(|l| &l.0))
            .map(|u| site(u))
            .collect();
        let time = (1_767_571_200 + s.day * 86_400) * 1_000_000;
        let count = |set: &Set, h: &str| set.iter().filter(|u| site(u) == h).count();
        let lcount = |set: &BTreeSet<(String, String)>, h: &str| {
            set.iter().filter(|l| site(&l.0) == h).count()
        };
        let (mut hosts, mut new_hosts) = (0, 0);
        for h in &all_hosts {
            let pf = count(&fetched, h);
            let is_new = pf > 0 && !hosts_before.contains(h);
            hosts += (pf > 0) as usize;
            new_hosts += is_new as usize;
            let row = [
                pf,
                count(&known, h),
                count(&new, h),
                count(&gone, h),
                count(&changed, h),
                lcount(&links, h),
                lcount(&new_links, h),
                lcount(&removed, h),
            ];
            if row[0] > 0 || row[5] > 0 || row[3] > 0 || row[7] > 0 {
                let cells: Vec<String> = row.iter().map(|c| c.to_string()).collect();
                host_rows.push(format!("snapshot={seq}|{h}|{}|{is_new}", cells.join("|")));
            }
        }
        snap_rows.push(format!(
            "snapshot={seq}|{time}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{hosts}|{new_hosts}",
            s.partial,
            fetched.len(),
            known.len(),
            new.len(),
            gone.len(),
            changed.len(),
            links.len(),
            new_links.len(),
            removed.len()
        ));
        discovery.snapshot(&SnapshotData {
            seq,
            fetched: &fetched,
            new: &new,
            known_before: &known_before,
            links: &links,
        });
        for (u, d) in &s.pages {
            last_digest.insert(u.clone(), d.clone());
        }
        known_before.extend(known);
        links_prev = links;
        alive_prev = alive;
    }
    snap_rows.sort();
    host_rows.sort();
    let mut all: BTreeMap<String, Vec<String>> = discovery
        .finish()
        .into_iter()
        .map(|(t, rows)| (t.to_string(), rows))
        .collect();
    all.insert("snapshots".into(), snap_rows);
    all.insert("host_snapshots".into(), host_rows);
    all
}

/// Writes `snaps` as a crawl directory under `dir`.
fn write_crawl(dir: &Path, snaps: &[Snap]) -> Crawl {
    let c = Crawl::new(&dir.join("in"));
    for (seq, s) in snaps.iter().enumerate() {
        let pages: Vec<(&str, &str)> = s
            .pages
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        let links: Vec<(&str, &str)> = s
            .links
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        c.snapshot(seq as u64, s.day, s.partial, &pages, &links);
    }
    c
}

/// Runs `snaps` with `workers` threads, under `params` (`None`: jobs/all.toml),
/// and compares every table of `want` with the output; mismatches are collected in
/// `failures` so one run reports every table that disagrees.
fn run_and_compare(
    snaps: &[Snap],
    params: Option<&Params>,
    workers: usize,
    want: &BTreeMap<String, Vec<String>>,
    context: &str,
    failures: &mut Vec<String>,
) {
    let dir = tempdir();
    let c = write_crawl(dir.path(), snaps);
    let out = dir.path().join("out");
    match params {
        None => run_in_process(&c.dir, &out, workers).unwrap(),
        Some(p) => {
            let job = dir.path().join("job.toml");
            std::fs::write(&job, p.job_toml()).unwrap();
            run_in_process_with_job(&c.dir, &out, workers, &job).unwrap()
        }
    };
    for (table, rows) in want {
        compare(
            &table_rows(&out, table),
            rows,
            &format!("{context}: {table}"),
            failures,
        );
    }
}

/// Records a mismatch between `got` and `want` (both sorted) in `failures`.
fn compare(got: &[String], want: &[String], what: &str, failures: &mut Vec<String>) {
    if got == want {
        return;
    }
    let (g, w): (BTreeSet<&String>, BTreeSet<&String>) =
        (got.iter().collect(), want.iter().collect());
    let missing: Vec<&&String> = w.difference(&g).take(8).collect();
    let unexpected: Vec<&&String> = g.difference(&w).take(8).collect();
    failures.push(format!(
        "{what}: {} rows, want {}; missing (first 8) {missing:#?}; unexpected (first 8) {unexpected:#?}",
        got.len(),
        want.len()
    ));
}

/// Fails with every recorded mismatch (at most 30 shown), led by a tally of the
/// mismatching tables.
fn assert_no_failures(failures: &[String]) {
    let mut tally: BTreeMap<&str, usize> = BTreeMap::new();
    for f in failures {
        let table = f.split(": ").nth(1).unwrap_or("?");
        *tally.entry(table).or_default() += 1;
    }
    assert!(
        failures.is_empty(),
        "{} mismatches, by table {tally:?}:\n{}",
        failures.len(),
        failures
            .iter()
            .take(30)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// How much of the discovery tables a family of crawls exercised, so a change to
/// the generators cannot quietly make the comparison vacuous.
#[derive(Default, Debug)]
struct Exercised {
    picks: usize,
    curve_sites: usize,
    jaccard_overlapping: usize,
    multi_clusters: usize,
    history_choices: usize,
    new_sites: usize,
    site_cover_picks: usize,
}

impl Exercised {
    fn add(&mut self, want: &BTreeMap<String, Vec<String>>) {
        let cells = |r: &String| r.split('|').map(str::to_string).collect::<Vec<_>>();
        self.picks += want["cover_trajectory"].len();
        self.curve_sites += want["cover_curve"].len();
        // Pairs sharing something (bins above 0).
        self.jaccard_overlapping += want["jaccard_histogram"]
            .iter()
            .map(cells)
            .filter(|c| c[1] != "0.0")
            .map(|c| c[3].parse::<usize>().unwrap())
            .sum::<usize>();
        // Cluster members that are not representatives.
        self.multi_clusters += want["clusters"]
            .iter()
            .filter(|r| r.contains("|false|"))
            .count();
        // History policies choosing something.
        self.history_choices += want["policy_eval"]
            .iter()
            .map(cells)
            .filter(|c| c[1] != "OPTIMAL" && c[4] != "0")
            .count();
        self.new_sites += want["new_sites"]
            .iter()
            .map(cells)
            .map(|c| c[5].parse::<usize>().unwrap())
            .sum::<usize>();
        self.site_cover_picks += want["site_cover"].len();
    }

    fn check(&self, policies: bool) {
        let e = self;
        let enough = e.picks > 20
            && e.curve_sites > 20
            && e.jaccard_overlapping > 10
            && e.multi_clusters > 10
            && (!policies || e.history_choices > 50)
            && e.new_sites > 5
            && e.site_cover_picks > 5;
        assert!(enough, "the crawls exercise the discovery tables: {e:?}");
    }
}

fn host_site(url: &str) -> String {
    host(url)
}

#[test]
fn spine_and_discovery_tables_match_brute_force_on_random_crawls() {
    let mut rng = Pcg64Mcg::seed_from_u64(2026);
    let mut failures = Vec::new();
    let mut exercised = Exercised::default();
    for case in 0..60 {
        let snaps = random_crawl(&mut rng);
        let want = reference(&snaps, &Params::default(), &host_site);
        exercised.add(&want);
        let context = format!("random case {case}");
        run_and_compare(&snaps, None, 1 + case % 3, &want, &context, &mut failures);
    }
    assert_no_failures(&failures);
    assert!(
        exercised.picks > 20,
        "the random crawls exercise the covers: {exercised:?}"
    );
}

/// Rich crawls under `params` (`None`: jobs/all.toml and the defaults).
fn rich_family(seed: u64, cases: usize, params: Option<&Params>) {
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let mut failures = Vec::new();
    let mut exercised = Exercised::default();
    let default = Params::default();
    for case in 0..cases {
        let snaps = rich_crawl(&mut rng);
        let want = reference(&snaps, params.unwrap_or(&default), &host_site);
        exercised.add(&want);
        let context = format!("rich case {case} (seed {seed})");
        run_and_compare(&snaps, params, 1 + case % 3, &want, &context, &mut failures);
    }
    assert_no_failures(&failures);
    exercised.check(true);
}

#[test]
fn discovery_tables_match_brute_force_on_rich_crawls() {
    rich_family(7, 30, None);
}

#[test]
fn discovery_tables_match_brute_force_with_other_parameters() {
    let params = Params {
        eps_b: 0.5,
        alpha: 0.5,
        delta: 2,
        ..Params::default()
    };
    rich_family(11, 30, Some(&params));
}

/// `www.a.co.uk` and `news.a.co.uk` are one site `a.co.uk`, `b.com` and
/// `www.b.com` one site `b.com`, and `shop.d.co.uk` (site `d.co.uk`) appears at
/// 2, linked from both old sites. Links between `www.` and `news.` are on-site.
fn registered_domain_crawl() -> Vec<Snap> {
    let u = |h: &str, p: u32| format!("http://{h}/{p}");
    let (www, news, b, wb, shop) = (
        "www.a.co.uk",
        "news.a.co.uk",
        "b.com",
        "www.b.com",
        "shop.d.co.uk",
    );
    let l = |ls: &[((&str, u32), (&str, u32))]| {
        ls.iter()
            .map(|(s, d)| (u(s.0, s.1), u(d.0, d.1)))
            .collect::<Vec<_>>()
    };
    let mut pages = vec![u(www, 1), u(www, 2), u(news, 1), u(b, 1)];
    let s0 = Snap::full(0, &pages, &l(&[((www, 1), (news, 1)), ((b, 1), (www, 1))]));
    pages.extend([u(news, 2), u(news, 3), u(www, 3), u(wb, 1), u(b, 2)]);
    let s1 = Snap::full(
        1,
        &pages,
        &l(&[
            ((www, 1), (news, 2)),
            ((news, 2), (news, 3)),
            ((news, 1), (www, 3)),
            ((www, 2), (news, 3)),
            ((b, 1), (wb, 1)),
            ((wb, 1), (b, 2)),
        ]),
    );
    pages.extend([u(shop, 1), u(shop, 2), u(news, 4), u(www, 5)]);
    let s2 = Snap::full(
        2,
        &pages,
        &l(&[
            ((www, 1), (news, 4)),
            ((www, 1), (shop, 1)),
            ((news, 4), (www, 5)),
            ((news, 1), (www, 5)),
            ((b, 1), (shop, 2)),
            ((shop, 1), (shop, 2)),
        ]),
    );
    pages.extend([u(www, 6), u(wb, 2)]);
    let s3 = Snap::full(
        3,
        &pages,
        &l(&[
            ((www, 1), (www, 6)),
            ((news, 2), (www, 6)),
            ((news, 1), (www, 6)),
            ((b, 1), (wb, 2)),
        ]),
    );
    vec![s0, s1, s2, s3]
}

/// The registered domains of [`registered_domain_crawl`]'s hosts.
fn registered_domain(url: &str) -> String {
    match host(url).as_str() {
        "www.a.co.uk" | "news.a.co.uk" => "a.co.uk",
        "b.com" | "www.b.com" => "b.com",
        "shop.d.co.uk" => "d.co.uk",
        other => panic!("no registered domain for {other} in this test"),
    }
    .to_string()
}

#[test]
fn registered_domain_sites_replace_hosts() {
    let snaps = registered_domain_crawl();
    let params = Params {
        site_key: "registered_domain",
        ..Params::default()
    };
    let want = reference(&snaps, &params, &registered_domain);
    // The reference itself: a.co.uk's closure crosses its hosts.
    assert!(want["cover_trajectory"]
        .contains(&"snapshot=1|a.co.uk|1|http://www.a.co.uk/1|2|2|0.5".to_string()));
    assert!(want["host_snapshots"]
        .iter()
        .all(|r| !r.contains("|www.") && !r.contains("|news.")));
    assert_eq!(
        want["new_sites"],
        vec![
            "snapshot=1|5|0|5|0.0|0|null",
            "snapshot=2|4|2|2|0.5|1|2.0",
            "snapshot=3|2|0|2|0.0|0|null"
        ]
    );
    let mut failures = Vec::new();
    run_and_compare(
        &snaps,
        Some(&params),
        2,
        &want,
        "registered domains",
        &mut failures,
    );
    // pages: the host column holds the site.
    let dir = tempdir();
    let c = write_crawl(dir.path(), &snaps);
    let out = dir.path().join("out");
    let job = dir.path().join("job.toml");
    std::fs::write(&job, params.job_toml()).unwrap();
    run_in_process_with_job(&c.dir, &out, 1, &job).unwrap();
    let sites: Set = table_rows(&out, "pages")
        .iter()
        .map(|r| r.split('|').nth(1).unwrap().to_string())
        .collect();
    let want_sites: Set = ["a.co.uk", "b.com", "d.co.uk"].map(String::from).into();
    compare(
        &sites.into_iter().collect::<Vec<_>>(),
        &want_sites.into_iter().collect::<Vec<_>>(),
        "registered domains: pages.host",
        &mut failures,
    );
    assert_no_failures(&failures);
}

/// The paper's Figure 1: old p1, p2, p3; new p4..p7; p5 is reached from p1 and
/// from p3, p6 and p7 only through new p4; recrawling p1 alone finds everything.
pub fn figure_one() -> Vec<Snap> {
    let p = |i: u32| format!("http://site.com/p{i}");
    let old: Vec<String> = (1..=3).map(p).collect();
    let all: Vec<String> = (1..=7).map(p).collect();
    let links = [(1, 4), (1, 5), (3, 5), (4, 6), (4, 7), (2, 1)].map(|(a, b)| (p(a), p(b)));
    vec![Snap::full(0, &old, &[]), Snap::full(7, &all, &links)]
}

/// Figure 1's discovery tables, worked out by hand.
pub fn figure_one_expected() -> BTreeMap<&'static str, Vec<String>> {
    let mut want: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    want.insert(
        "cover_trajectory",
        vec!["snapshot=1|site.com|1|http://site.com/p1|4|4|0.25".into()],
    );
    // old 3, new 4, pairs 5 (p1: 4, p3: 1), no orphans, 90% and 100% covers: p1.
    want.insert(
        "cover_summary",
        vec!["snapshot=1|site.com|3|4|5|0|1|4|1|4".into()],
    );
    // One site, one pick covering all 4: c_k = 4, o_k = 1/4 at every budget.
    want.insert(
        "cover_curve",
        [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000]
            .map(|k| format!("snapshot=1|{k}|1|4.0|0.25|1.0"))
            .into(),
    );
    want.insert(
        "global_cover",
        [1, 10, 100, 1000, 10000, 100000, 1000000]
            .map(|k| format!("snapshot=1|{k}|1|4|0.25|1.0"))
            .into(),
    );
    // One pair: p1, p3 with J = 1/4, bin 5.
    want.insert(
        "jaccard_histogram",
        (0..20)
            .map(|i| {
                let pairs = (i == 5) as usize;
                format!(
                    "snapshot=1|{:?}|{:?}|{pairs}",
                    i as f64 / 20.0,
                    (i + 1) as f64 / 20.0
                )
            })
            .collect(),
    );
    // 1 ≥ 0.2·4: one cluster, representative p1 with q = 4/4.
    want.insert(
        "clusters",
        vec![
            "snapshot=1|site.com|0|http://site.com/p1|true|1.0".into(),
            "snapshot=1|site.com|0|http://site.com/p3|false|1.0".into(),
        ],
    );
    // No history: only OPTIMAL chooses (p1, covering all 4).
    let mut policies = Vec::new();
    for policy in [
        "OD-WIN", "OD-ALL", "OD-1", "CLIQ-WIN", "CLIQ-1", "COV", "OPTIMAL",
    ] {
        for k in [1, 10, 100, 1000, 10000] {
            policies.push(match policy {
                "OPTIMAL" => format!("snapshot=1|{policy}|{k}|1|1|4|4|1.0|25.0|1.0"),
                _ => format!("snapshot=1|{policy}|{k}|1|0|0|4|0.0|null|0.0"),
            });
        }
    }
    for policy in ["BOUND-ALL", "BOUND-W2", "BOUND-W4"] {
        policies.push(format!("snapshot=1|{policy}|null|1|0|0|4|0.0|null|0.0"));
    }
    want.insert("policy_eval", policies);
    want.insert("new_sites", vec!["snapshot=1|4|0|4|0.0|0|null".into()]);
    want.insert("site_cover", vec![]);
    want.values_mut().for_each(|rows| rows.sort());
    want
}

#[test]
fn figure_one_of_the_discoverability_paper() {
    let want: BTreeMap<String, Vec<String>> = figure_one_expected()
        .into_iter()
        .map(|(t, rows)| (t.to_string(), rows))
        .collect();
    assert_eq!(want.len(), TABLES.len());
    let mut failures = Vec::new();
    run_and_compare(&figure_one(), None, 2, &want, "figure 1", &mut failures);
    assert_no_failures(&failures);
}

/// A crawl directory's snapshots as [`Snap`]s (one day apart; digests are not
/// needed by discovery).
fn read_crawl(dir: &Path) -> Vec<Snap> {
    snapshot_seqs(dir)
        .into_iter()
        .map(|seq| {
            let d = dir.join("snapshots").join(seq.to_string());
            let json = std::fs::read_to_string(d.join("snapshot.json")).unwrap();
            let pages = parquet_file_rows(&d.join("pages.parquet"))
                .into_iter()
                .map(|r| (r.split('|').next().unwrap().to_string(), "d".to_string()))
                .collect();
            let links = parquet_file_rows(&d.join("links.parquet"))
                .into_iter()
                .map(|r| {
                    let mut f = r.split('|');
                    (f.next().unwrap().to_string(), f.next().unwrap().to_string())
                })
                .collect();
            Snap {
                day: seq as i64,
                partial: json.contains("\"partial\":true"),
                pages,
                links,
            }
        })
        .collect()
}

/// The registered domain of a URL's host, straight from the public suffix list;
/// an IP address is its own site (docs/discovery.md).
fn psl_site(url: &str) -> String {
    let host = host(url);
    if host.starts_with('[') || host.parse::<std::net::Ipv4Addr>().is_ok() {
        return host;
    }
    let name = host.trim_end_matches('.');
    psl::domain_str(name).unwrap_or(name).to_string()
}

/// The real host graphs of ../shared/data (WALK GDF files and the Canadian
/// political sitelinks), imported and analysed with registered-domain sites: the
/// hosts of a domain are the pages of its site. Every table must match the
/// brute-force reference, with 1 and 3 workers.
#[test]
fn real_host_graphs_with_registered_domain_sites_match_brute_force() {
    let Some(data) = shared_data() else {
        eprintln!("skipped: ../shared/data is absent");
        return;
    };
    let mut inputs: Vec<(&str, PathBuf)> = std::fs::read_dir(data.join("walk"))
        .unwrap()
        .map(|e| ("aut-gdf", e.unwrap().path()))
        .filter(|(_, p)| p.extension().is_some_and(|e| e == "gdf"))
        .collect();
    inputs.sort();
    inputs.push((
        "dated-links",
        data.join("canadian-political-sitelinks-2005-2009.tsv"),
    ));
    let params = Params {
        site_key: "registered_domain",
        ..Params::default()
    };
    let mut failures = Vec::new();
    let mut exercised = (0usize, 0usize);
    for (format, input) in &inputs {
        let dir = tempdir();
        let crawl = dir.path().join("crawl");
        let out = run_bin(
            &[
                "import",
                "--format",
                format,
                "--input",
                input.to_str().unwrap(),
                "--output",
                crawl.to_str().unwrap(),
                "-q",
            ],
            &[],
        );
        assert!(out.status.success(), "import {}: {out:?}", input.display());
        let snaps = read_crawl(&crawl);
        let want = reference(&snaps, &params, &psl_site);
        exercised.0 += want["cover_trajectory"].len();
        exercised.1 += want["site_cover"].len();
        let name = input.file_name().unwrap().to_string_lossy();
        for workers in [1, 3] {
            run_and_compare(
                &snaps,
                Some(&params),
                workers,
                &want,
                &format!("{name}, {workers} workers"),
                &mut failures,
            );
        }
    }
    assert_no_failures(&failures);
    assert!(
        exercised.0 > 20 && exercised.1 > 50,
        "the real graphs exercise the covers: {exercised:?}"
    );
}
