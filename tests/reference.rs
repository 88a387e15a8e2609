//! The foundation and discovery tables against a brute-force reference: plain sets
//! of URL strings following the README's and ALGORITHMS.md's definitions, on
//! random crawls with partial snapshots, page deaths, changes, duplicates,
//! self-links and non-web links.

use std::collections::{BTreeMap, BTreeSet};

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

use crate::util::*;

type Set = BTreeSet<String>;

struct Snap {
    day: i64,
    partial: bool,
    pages: Vec<(String, String)>,
    links: Vec<(String, String)>,
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

/// Expected `cover_trajectory` and `cover_summary` rows of snapshot `seq`: the
/// closure by search from every old page, and GREEDY straight from its definition.
fn discovery_reference(
    seq: usize,
    fetched: &Set,
    new: &Set,
    links: &BTreeSet<(String, String)>,
    trajectory: &mut Vec<String>,
    summary: &mut Vec<String>,
) {
    let hosts: Set = new.iter().map(|u| host(u)).collect();
    for h in hosts {
        let on_host = |u: &String| host(u) == h;
        let old: Vec<&String> = fetched
            .iter()
            .filter(|u| on_host(u) && !new.contains(*u))
            .collect();
        let new_here = new.iter().filter(|u| on_host(u)).count();
        if old.is_empty() {
            continue;
        }
        // N(x): new pages reachable from x through new pages only, on-host links
        // of pages fetched now.
        let step = |from: &String| -> Vec<String> {
            links
                .iter()
                .filter(|(s, d)| s == from && on_host(d) && fetched.contains(s) && new.contains(d))
                .map(|l| l.1.clone())
                .collect()
        };
        let mut sets: Vec<(&String, Set)> = Vec::new();
        for x in &old {
            let mut reached = Set::new();
            let mut todo = step(x);
            while let Some(y) = todo.pop() {
                if reached.insert(y.clone()) {
                    todo.extend(step(&y));
                }
            }
            if !reached.is_empty() {
                sets.push((x, reached));
            }
        }
        let coverable: Set = sets.iter().flat_map(|s| s.1.iter().cloned()).collect();
        let pairs: usize = sets.iter().map(|s| s.1.len()).sum();
        let mut covered = Set::new();
        let mut picks = Vec::new();
        loop {
            let best = sets
                .iter()
                .map(|(x, n)| (n.difference(&covered).count(), *x))
                .filter(|(g, _)| *g > 0)
                .max_by(|a, b| a.0.cmp(&b.0).then_with(|| b.1.cmp(a.1)));
            let Some((gain, x)) = best else { break };
            covered.extend(sets.iter().find(|s| s.0 == x).unwrap().1.iter().cloned());
            picks.push((x.clone(), gain, covered.len()));
        }
        for (i, (x, gain, cov)) in picks.iter().enumerate() {
            let rank = i + 1;
            trajectory.push(format!(
                "snapshot={seq}|{h}|{rank}|{x}|{gain}|{cov}|{:?}",
                rank as f64 / *cov as f64
            ));
        }
        let c90 = picks
            .iter()
            .position(|p| p.2 as f64 >= 0.9 * coverable.len() as f64 - 1e-9)
            .map_or(picks.len(), |p| p + 1);
        let c90_cov = if c90 > 0 { picks[c90 - 1].2 } else { 0 };
        summary.push(format!(
            "snapshot={seq}|{h}|{}|{new_here}|{pairs}|{}|{c90}|{c90_cov}|{}|{}",
            old.len(),
            new_here - coverable.len(),
            picks.len(),
            covered.len()
        ));
    }
}

/// Expected tables, formatted as `tables` reads them: `snapshots`,
/// `host_snapshots`, `cover_trajectory`, `cover_summary`.
fn reference(snaps: &[Snap]) -> [Vec<String>; 4] {
    let mut known_before = Set::new();
    let mut links_prev: BTreeSet<(String, String)> = BTreeSet::new();
    let mut alive_prev = Set::new();
    let mut last_digest: BTreeMap<String, String> = BTreeMap::new();
    let (mut snap_rows, mut host_rows) = (Vec::new(), Vec::new());
    let (mut trajectory, mut summary) = (Vec::new(), Vec::new());
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
        let hosts_before: Set = known_before.iter().map(|u| host(u)).collect();
        let all_hosts: Set = known
            .iter()
            .chain(gone.iter())
            .chain(links.iter().chain(removed.iter()).map(|l| &l.0))
            .map(|u| host(u))
            .collect();
        let time = (1_767_571_200 + s.day * 86_400) * 1_000_000;
        let count = |set: &Set, h: &str| set.iter().filter(|u| host(u) == h).count();
        let lcount = |set: &BTreeSet<(String, String)>, h: &str| {
            set.iter().filter(|l| host(&l.0) == h).count()
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
        discovery_reference(seq, &fetched, &new, &links, &mut trajectory, &mut summary);
        for (u, d) in &s.pages {
            last_digest.insert(u.clone(), d.clone());
        }
        known_before.extend(known);
        links_prev = links;
        alive_prev = alive;
    }
    let mut all = [snap_rows, host_rows, trajectory, summary];
    all.iter_mut().for_each(|t| t.sort());
    all
}

#[test]
fn spine_and_discovery_tables_match_brute_force_on_random_crawls() {
    let mut rng = Pcg64Mcg::seed_from_u64(2026);
    let mut picks = 0;
    for case in 0..60 {
        let snaps = random_crawl(&mut rng);
        let dir = tempdir();
        let c = Crawl::new(&dir.path().join("in"));
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
        let out = dir.path().join("out");
        run_in_process(&c.dir, &out, 1 + case % 3).unwrap();
        let want = reference(&snaps);
        let names = [
            "snapshots",
            "host_snapshots",
            "cover_trajectory",
            "cover_summary",
        ];
        picks += want[2].len();
        for (table, rows) in names.iter().zip(want) {
            assert_eq!(table_rows(&out, table), rows, "case {case}: {table}");
        }
    }
    assert!(
        picks > 20,
        "the random crawls exercise the covers ({picks} picks)"
    );
}

/// The paper's Figure 1: old p1, p2, p3; new p4..p7; p5 is reached from p1 and
/// from p3, p6 and p7 only through new p4; recrawling p1 alone finds everything.
#[test]
fn figure_one_of_the_discoverability_paper() {
    let dir = tempdir();
    let c = Crawl::new(&dir.path().join("in"));
    let p = |i: u32| format!("http://site.com/p{i}");
    let old: Vec<String> = (1..=3).map(p).collect();
    let all: Vec<String> = (1..=7).map(p).collect();
    let pages = |urls: &[String]| {
        urls.iter()
            .map(|u| (u.clone(), "d".to_string()))
            .collect::<Vec<_>>()
    };
    let (p0, p1) = (pages(&old), pages(&all));
    fn as_refs(v: &[(String, String)]) -> Vec<(&str, &str)> {
        v.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect()
    }
    let links = [(1, 4), (1, 5), (3, 5), (4, 6), (4, 7), (2, 1)].map(|(a, b)| (p(a), p(b)));
    let links: Vec<(&str, &str)> = links
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    c.snapshot(0, 0, false, &as_refs(&p0), &[]);
    c.snapshot(1, 7, false, &as_refs(&p1), &links);
    let out = dir.path().join("out");
    run_in_process(&c.dir, &out, 2).unwrap();
    assert_eq!(
        table_rows(&out, "cover_trajectory"),
        vec!["snapshot=1|site.com|1|http://site.com/p1|4|4|0.25"]
    );
    // old 3, new 4, pairs 5 (p1: 4, p3: 1), no orphans, 90% and 100% covers: p1.
    assert_eq!(
        table_rows(&out, "cover_summary"),
        vec!["snapshot=1|site.com|3|4|5|0|1|4|1|4"]
    );
}
