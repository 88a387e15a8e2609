//! `webevo check` reads a crawl as a run does: the same row counts and odd
//! rows as the run's manifest, on any number of threads, and the same errors.

use crate::util::*;
use webevo::generate::Preset;

fn check(args: &[&str]) -> std::process::Output {
    let mut all = vec!["check"];
    all.extend_from_slice(args);
    run_bin(&all, &[])
}

#[test]
fn counts_match_a_run() {
    let dir = tempdir();
    let input = generated(Preset::Tiny, 3, &dir.path().join("in"));
    let out = dir.path().join("out");
    run_in_process(&input, &out, 2).unwrap();
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("_manifest.json")).unwrap())
            .unwrap();
    let run = &manifest["runs"][0];

    let mut reports = Vec::new();
    for workers in ["1", "3"] {
        let o = check(&["--input", input.to_str().unwrap(), "-w", workers, "--json"]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let snaps = report["snapshots"].as_array().unwrap().clone();
        assert_eq!(snaps.len(), snapshot_seqs(&input).len());
        let pages: u64 = snaps.iter().map(|s| s["pages"].as_u64().unwrap()).sum();
        let links: u64 = snaps.iter().map(|s| s["links"].as_u64().unwrap()).sum();
        assert_eq!(
            pages,
            run["pages_read"].as_u64().unwrap(),
            "{workers} threads"
        );
        assert_eq!(
            links,
            run["links_read"].as_u64().unwrap(),
            "{workers} threads"
        );
        for s in &snaps {
            let seq = s["seq"].to_string();
            for odd in ["self_links", "unparsable_link_urls"] {
                assert_eq!(
                    s["odd_rows"][odd], run["odd_rows"][&seq][odd],
                    "snapshot {seq}, {odd}, {workers} threads"
                );
            }
        }
        let counts: Vec<(u64, u64)> = snaps
            .iter()
            .map(|s| (s["pages"].as_u64().unwrap(), s["links"].as_u64().unwrap()))
            .collect();
        reports.push(counts);
    }
    assert_eq!(reports[0], reports[1], "1 and 3 threads read the same");

    let o = check(&["--input", input.to_str().unwrap(), "--snapshot", "1"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success());
    assert!(
        text.starts_with("snapshot 1: ") && text.contains("no errors"),
        "{text}"
    );
    assert_eq!(text.matches("snapshot ").count(), 1, "{text}");
}

#[test]
fn errors_name_file_and_row() {
    let dir = tempdir();
    let c = Crawl::new(&dir.path().join("in"));
    c.snapshot(
        0,
        0,
        false,
        &[("http://a.com/", "x"), ("not a url", "y")],
        &[],
    );
    let o = check(&["--input", c.dir.to_str().unwrap(), "-w", "2"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("pages.tsv, line 3") && err.contains("page URL \"not a url\""),
        "{err}"
    );

    let o = check(&["--input", c.dir.to_str().unwrap(), "--snapshot", "7"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("no snapshot 7"), "{err}");
}
