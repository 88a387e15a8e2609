//! Host placement: a run from nothing pins the largest hosts of its first
//! snapshot apart, every worker's ledger holds the hosts the placement gives
//! it, later runs route as the kept state was placed, and the tables are the
//! same as with one worker.

use std::path::Path;

use webevo::model::{route, HostId};
use webevo::placement::Placement;

use crate::util::*;

/// `n` host names that the hash alone puts on worker 0 of 2.
fn hosts_hashed_to_worker_0(n: usize) -> Vec<String> {
    (0..)
        .map(|i| format!("big{i}.example"))
        .filter(|h| route(HostId::of(h)).is_multiple_of(2))
        .take(n)
        .collect()
}

/// A crawl whose four large hosts (40, 30, 20 and 10 pages) all hash to the
/// same worker of 2, beside a dozen one-page hosts; snapshot 1 adds a page to
/// each large host.
fn skewed_crawl(dir: &Path) -> (Crawl, Vec<String>) {
    let big = hosts_hashed_to_worker_0(4);
    let sizes = [40, 30, 20, 10];
    let mut urls = Vec::new();
    for (h, n) in big.iter().zip(sizes) {
        for p in 0..n {
            urls.push(format!("http://{h}/p{p}"));
        }
    }
    for s in 0..12 {
        urls.push(format!("http://small{s}.example/"));
    }
    let links: Vec<(String, String)> = urls
        .windows(2)
        .map(|w| (w[0].clone(), w[1].clone()))
        .collect();
    let crawl = Crawl::new(dir);
    let pages: Vec<(&str, &str)> = urls.iter().map(|u| (u.as_str(), "d0")).collect();
    let l: Vec<(&str, &str)> = links
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    crawl.snapshot(0, 0, false, &pages, &l);
    let mut more = urls.clone();
    for h in &big {
        more.push(format!("http://{h}/new"));
    }
    let pages: Vec<(&str, &str)> = more.iter().map(|u| (u.as_str(), "d1")).collect();
    crawl.snapshot(1, 7, false, &pages, &l);
    (crawl, big)
}

/// Rows of the `pages` table per worker's part file.
fn pages_per_worker(out: &Path) -> Vec<usize> {
    let mut parts: Vec<_> = std::fs::read_dir(out.join("pages"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    parts.sort();
    parts.iter().map(|p| parquet_file_rows(p).len()).collect()
}

#[test]
fn large_hosts_that_hash_together_are_placed_apart() {
    let dir = tempdir();
    let (crawl, big) = skewed_crawl(&dir.path().join("in"));
    let first = subset(&crawl.dir, &dir.path().join("first"), [0]);

    // Snapshot 0 with 2 workers, then snapshot 1 continuing with 2 (the state
    // read in place) ...
    let two = dir.path().join("two");
    run_in_process(&first, &two, 2).unwrap();
    let kept = Placement::load(&two.join("_state"))
        .unwrap()
        .expect("a kept placement");
    assert_eq!(kept.peers, 2);
    let worker = |h: &str| kept.owner(HostId::of(h));
    assert_ne!(
        worker(&big[0]),
        worker(&big[1]),
        "the two largest hosts apart"
    );
    // 40 + 10 + small hosts against 30 + 20 + small hosts, where the hash
    // alone gives one worker all 100 pages of the large hosts.
    let per_worker = pages_per_worker(&two);
    assert_eq!(per_worker.iter().sum::<usize>(), 112);
    assert!(
        per_worker.iter().all(|&n| (50..=62).contains(&n)),
        "{per_worker:?}"
    );
    subset(&crawl.dir, &dir.path().join("first"), [1]);
    run_in_process(&first, &two, 2).unwrap();
    assert_eq!(
        Placement::load(&two.join("_state")).unwrap(),
        Some(kept.clone())
    );

    // ... equals one worker, and a continuation with 3 workers (the state
    // routed to the pins' places for 3).
    let one = dir.path().join("one");
    run_in_process(&crawl.dir, &one, 1).unwrap();
    assert_eq!(tables(&two), tables(&one));
    let three = dir.path().join("three");
    let again = subset(&crawl.dir, &dir.path().join("again"), [0]);
    run_in_process(&again, &three, 2).unwrap();
    subset(&crawl.dir, &again, [1]);
    run_in_process(&again, &three, 3).unwrap();
    assert_eq!(tables(&three), tables(&one));
    let moved = Placement::load(&three.join("_state")).unwrap().unwrap();
    assert_eq!(moved.peers, 3);
    assert_eq!(moved.pins.len(), kept.pins.len());
}

#[test]
fn a_state_kept_without_a_placement_continues_by_hash() {
    // States written before placement existed have no placement.json; their
    // parts hold the hosts the hash gave each worker, so the next run routes
    // by hash. With 1 worker that is any placement.
    let dir = tempdir();
    let (crawl, _) = skewed_crawl(&dir.path().join("in"));
    let one = dir.path().join("one");
    run_in_process(&crawl.dir, &one, 1).unwrap();
    let first = subset(&crawl.dir, &dir.path().join("first"), [0]);
    let out = dir.path().join("out");
    run_in_process(&first, &out, 1).unwrap();
    std::fs::remove_file(out.join("_state").join(webevo::placement::FILE)).unwrap();
    subset(&crawl.dir, &first, [1]);
    run_in_process(&first, &out, 1).unwrap();
    assert_eq!(tables(&out), tables(&one));
    let p = Placement::load(&out.join("_state")).unwrap().unwrap();
    assert!(p.pins.is_empty(), "continued by hash: {p:?}");

    // With 2 workers, a state whose placement was lost cannot be read as if
    // hashed: the run stops with an error naming the part, and the last
    // commit stays as it was.
    let first = subset(&crawl.dir, &dir.path().join("first2"), [0]);
    let two = dir.path().join("two");
    run_in_process(&first, &two, 2).unwrap();
    std::fs::remove_file(two.join("_state").join(webevo::placement::FILE)).unwrap();
    let before = tables(&two);
    subset(&crawl.dir, &first, [1]);
    let err = format!("{:#}", run_in_process(&first, &two, 2).unwrap_err());
    assert!(
        err.contains("_state/") && err.contains("placement.json"),
        "{err}"
    );
    assert_eq!(tables(&two), before);
}
