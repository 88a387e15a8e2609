//! The foundation tables against a brute-force reference: plain sets of URL
//! strings following the README's definitions, on random crawls with partial
//! snapshots, page deaths, changes, duplicates, self-links and non-web links.

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
    let url = |rng: &mut Pcg64Mcg| {
        format!(
            "http://{}/{}",
            hosts[rng.random_range(0..hosts.len())],
            rng.random_range(0..8)
        )
    };
    let n = rng.random_range(2..7);
    let mut day = 0;
    (0..n)
        .map(|i| {
            day += rng.random_range(1..10);
            let partial = i > 0 && rng.random_bool(0.3);
            let mut pages = Vec::new();
            for _ in 0..rng.random_range(0..12) {
                pages.push((url(rng), format!("d{}", rng.random_range(0..3))));
            }
            pages.sort();
            pages.dedup_by(|a, b| a.0 == b.0);
            let mut links = Vec::new();
            for _ in 0..rng.random_range(0..25) {
                let src = url(rng);
                let dst = match rng.random_range(0..10) {
                    0 => src.clone(),
                    1 => "mailto:x@y.z".to_string(),
                    _ => url(rng),
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

/// Expected `snapshots` and `host_snapshots` rows, formatted as `tables` reads them.
fn reference(snaps: &[Snap]) -> (Vec<String>, Vec<String>) {
    let mut known_before = Set::new();
    let mut links_prev: BTreeSet<(String, String)> = BTreeSet::new();
    let mut alive_prev = Set::new();
    let mut last_digest: BTreeMap<String, String> = BTreeMap::new();
    let (mut snap_rows, mut host_rows) = (Vec::new(), Vec::new());
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
        for (u, d) in &s.pages {
            last_digest.insert(u.clone(), d.clone());
        }
        known_before.extend(known);
        links_prev = links;
        alive_prev = alive;
    }
    snap_rows.sort();
    host_rows.sort();
    (snap_rows, host_rows)
}

#[test]
fn spine_tables_match_brute_force_on_random_crawls() {
    let mut rng = Pcg64Mcg::seed_from_u64(2026);
    for case in 0..25 {
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
        let (snap_rows, host_rows) = reference(&snaps);
        assert_eq!(
            table_rows(&out, "snapshots"),
            snap_rows,
            "case {case}: snapshots"
        );
        assert_eq!(
            table_rows(&out, "host_snapshots"),
            host_rows,
            "case {case}: host_snapshots"
        );
    }
}
