//! The corpus of nasty real-world input (tests/corpus/, checked in; the large
//! cases and the truncated WARC are generated here): each runs through `webevo run` (all analyses, 2
//! workers) and either fails with exit code 2 and a message naming file, line and
//! problem, or runs and yields the tables it should.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::util::*;

fn corpus(case: &str) -> PathBuf {
    root().join("tests/corpus").join(case)
}

/// Runs jobs/`job` on `input`; the exit code, stderr and the output directory.
fn run(input: &Path, job: &str, out: &Path) -> (Option<i32>, String) {
    let o = run_bin(
        &[
            "run",
            "-q",
            "--job",
            &format!("jobs/{job}"),
            "--input",
            input.to_str().unwrap(),
            "--output",
            out.to_str().unwrap(),
            "-w",
            "2",
        ],
        &[],
    );
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn run_ok(input: &Path, job: &str, out: &Path) {
    let (code, err) = run(input, job, out);
    assert_eq!(code, Some(0), "{}: {err}", input.display());
}

fn fails(case: &str, expect: &[&str]) {
    let dir = tempdir();
    let out = dir.path().join("out");
    let (code, err) = run(&corpus(case), "all.toml", &out);
    assert_eq!(code, Some(2), "{case}: exit code; stderr: {err}");
    for e in expect {
        assert!(err.contains(e), "{case}: stderr lacks {e:?}: {err}");
    }
    assert!(!out.join("snapshots").exists(), "{case}: nothing committed");
}

/// `column` of `table`'s rows, as strings, sorted.
fn column(out: &Path, table: &str, column: &str) -> Vec<String> {
    let mut v: Vec<String> = read_cells(&out.join(table))
        .iter()
        .map(|r| match &r[column] {
            Cell::Str(s) => s.clone(),
            c => format!("{c:?}"),
        })
        .collect();
    v.sort();
    v
}

/// The `snapshots` table as (snapshot, pages_fetched, new_pages, gone_pages, links).
fn snapshot_counts(out: &Path) -> Vec<(i64, i64, i64, i64, i64)> {
    let mut v: Vec<_> = read_cells(&out.join("snapshots"))
        .iter()
        .map(|r| {
            let i = |c: &str| r[c].i64().unwrap();
            (
                i("snapshot"),
                i("pages_fetched"),
                i("new_pages"),
                i("gone_pages"),
                i("links"),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn corpus_invalid_utf8() {
    fails("invalid_utf8", &["pages.tsv, line 3", "UTF-8"]);
}

#[test]
fn corpus_duplicate_snapshots() {
    fails("duplicate_snapshots", &["duplicate snapshot number 1"]);
}

#[test]
fn corpus_times_going_backwards() {
    fails(
        "times_backwards",
        &["snapshots/1/snapshot.json", "times must increase"],
    );
}

#[test]
fn corpus_truncated_gzip() {
    fails("truncated_gzip", &["pages.tsv.gz"]);
}

#[test]
fn corpus_truncated_warc() {
    let dir = tempdir();
    let out = dir.path().join("crawl");
    // Two gzip members, as crawlers write them; the second record claims 4000
    // bytes and the file ends after 28.
    let record = |uri: &str, block: &[u8], claimed: usize| {
        let mut r = format!(
            "WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: {uri}\r\nWARC-Date: 2020-01-06T10:00:00Z\r\nContent-Length: {claimed}\r\n\r\n"
        )
        .into_bytes();
        r.extend_from_slice(block);
        let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(&r).unwrap();
        z.finish().unwrap()
    };
    let first = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi";
    let mut bytes = record(
        "http://a.com/",
        &[&first[..], b"\r\n\r\n"].concat(),
        first.len(),
    );
    bytes.extend(record(
        "http://a.com/b",
        b"HTTP/1.1 200 OK\r\n\r\n<a href",
        4000,
    ));
    let input = dir.path().join("truncated.warc.gz");
    fs::write(&input, bytes).unwrap();
    let o = run_bin(
        &[
            "import",
            "--format",
            "warc",
            "--input",
            input.to_str().unwrap(),
            "--output",
            out.to_str().unwrap(),
        ],
        &[],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    for e in ["truncated.warc.gz", "record 2", "truncated record"] {
        assert!(err.contains(e), "stderr lacks {e:?}: {err}");
    }
    assert!(!out.exists());
}

#[test]
fn corpus_idn_and_punycode_are_one_page() {
    let dir = tempdir();
    let out = dir.path().join("out");
    run_ok(&corpus("idn_punycode"), "all.toml", &out);
    assert_eq!(
        column(&out, "pages", "url"),
        ["http://xn--bcher-kva.example/", "http://xn--r8jz45g.jp/a"]
    );
    // Seen in both snapshots (once in Unicode, once in punycode), changed once.
    assert_eq!(column(&out, "pages", "observations"), ["Int(2)", "Int(2)"]);
    assert_eq!(column(&out, "pages", "changes"), ["Int(0)", "Int(1)"]);
}

#[test]
fn corpus_ipv6_hosts() {
    let dir = tempdir();
    let out = dir.path().join("out");
    run_ok(&corpus("ipv6_hosts"), "all.toml", &out);
    assert_eq!(
        column(&out, "pages", "url"),
        ["http://[2001:db8::1]:8080/x", "http://[::1]/"]
    );
    assert_eq!(column(&out, "pages", "host"), ["[2001:db8::1]", "[::1]"]);
    assert_eq!(snapshot_counts(&out), [(0, 2, 2, 0, 2)]);
}

#[test]
fn corpus_dot_segments() {
    let dir = tempdir();
    let out = dir.path().join("out");
    run_ok(&corpus("dot_paths"), "all.toml", &out);
    // /x/../y and /y are one page (a duplicate row, counted as odd); /./z/. is /z/.
    assert_eq!(
        column(&out, "pages", "url"),
        ["http://a.com/y", "http://a.com/z/"]
    );
    assert_eq!(snapshot_counts(&out), [(0, 2, 2, 0, 1)]);
}

#[test]
fn corpus_empty_snapshot_and_no_links_file() {
    let dir = tempdir();
    let out = dir.path().join("out");
    run_ok(&corpus("empty_and_linkless"), "all.toml", &out);
    // An empty full snapshot: everything gone. Pages that return are not new.
    assert_eq!(
        snapshot_counts(&out),
        [(0, 2, 2, 0, 1), (1, 0, 0, 2, 0), (2, 2, 1, 0, 0)]
    );
}

/// Writes a crawl of `snapshots` full snapshots of the same `pages` pages of one
/// host, no links.
fn same_pages_crawl(dir: &Path, snapshots: usize, pages: usize, url: impl Fn(usize) -> String) {
    for s in 0..snapshots {
        let d = dir.join("snapshots").join(s.to_string());
        fs::create_dir_all(&d).unwrap();
        fs::write(
            d.join("snapshot.json"),
            format!("{{\"time\": \"2026-01-{:02}T00:00:00Z\"}}\n", 5 + 7 * s),
        )
        .unwrap();
        let mut f = std::io::BufWriter::new(fs::File::create(d.join("pages.tsv")).unwrap());
        writeln!(f, "url\tdigest").unwrap();
        for p in 0..pages {
            writeln!(f, "{}\td", url(p)).unwrap();
        }
    }
}

#[test]
fn corpus_a_one_megabyte_url() {
    let dir = tempdir();
    let input = dir.path().join("in");
    let long = format!("http://a.com/{}", "a".repeat(1 << 20));
    same_pages_crawl(&input, 2, 2, |p| {
        if p == 0 {
            long.clone()
        } else {
            "http://a.com/".into()
        }
    });
    let out = dir.path().join("out");
    run_ok(&input, "all.toml", &out);
    let urls = column(&out, "pages", "url");
    assert_eq!(urls.len(), 2);
    assert!(urls.contains(&long));
}

#[test]
fn corpus_a_site_with_a_million_pages_and_no_new_ones() {
    let dir = tempdir();
    let input = dir.path().join("in");
    same_pages_crawl(&input, 2, 1_000_000, |p| {
        format!("http://big.example/p/{p}")
    });
    let out = dir.path().join("out");
    run_ok(&input, "discovery.toml", &out);
    assert_eq!(
        snapshot_counts(&out),
        [(0, 1_000_000, 1_000_000, 0, 0), (1, 1_000_000, 0, 0, 0)]
    );
    // No new page in snapshot 1: no cover to compute, no site with new pages.
    let summary = read_cells(&out.join("cover_summary"));
    assert!(summary.iter().all(|r| r["snapshot"].i64() != Some(1)));
}
