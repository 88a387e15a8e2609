//! `webevo import --format warc`: every real WARC file in `../shared/data/warc/`
//! against warcio's reading of it (tests/sql/warc_reference.py), the two gov.uk
//! crawls run end to end, the grouping rules, and WARC files written here for what
//! the samples lack (gzip bodies, a truncated record, a bad header).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use webevo::ingest::url::normalize;

use crate::util::*;

fn warc_files() -> Option<Vec<PathBuf>> {
    let dir = shared_data()?.join("warc");
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .ok()?
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".warc.gz"))
        .collect();
    files.sort();
    (!files.is_empty()).then_some(files)
}

/// One snapshot as written: url → (fetch time µs, status, digest), and links.
#[derive(Debug, Default, PartialEq)]
struct Snap {
    pages: BTreeMap<String, (i64, Option<i64>, Option<String>)>,
    links: BTreeSet<(String, String)>,
}

fn read_snapshots(crawl: &Path) -> Vec<Snap> {
    snapshot_seqs(crawl)
        .into_iter()
        .map(|seq| {
            let d = crawl.join("snapshots").join(seq.to_string());
            let mut s = Snap::default();
            for row in read_cells(&d.join("pages.parquet")) {
                let url = row["url"].str().unwrap().to_string();
                let obs = (
                    row["fetch_time"].i64().unwrap(),
                    row["status"].i64(),
                    row["digest"].str().map(str::to_string),
                );
                s.pages.insert(url, obs);
            }
            for row in read_cells(&d.join("links.parquet")) {
                s.links.insert((
                    row["src"].str().unwrap().to_string(),
                    row["dst"].str().unwrap().to_string(),
                ));
            }
            s
        })
        .collect()
}

/// warcio's reading of `files` (one snapshot per file), normalized as webevo
/// normalizes, self-links dropped; `None` if warcio is not installed.
fn warcio_reading(files: &[PathBuf]) -> Option<Vec<Snap>> {
    let python = std::env::var("WEBEVO_PYTHON").unwrap_or_else(|_| "python3".into());
    let o = Command::new(python)
        .arg(root().join("tests/sql/warc_reference.py"))
        .args(files)
        .output()
        .expect("python3");
    match o.status.code() {
        Some(0) => {}
        Some(3) => {
            eprintln!("skipped: {}", String::from_utf8_lossy(&o.stdout));
            return None;
        }
        _ => panic!("{}", String::from_utf8_lossy(&o.stderr)),
    }
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let norm = |u: &str| normalize(u).ok().map(|n| n.url);
    let snaps = json["snapshots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let mut snap = Snap::default();
            for (url, obs) in s["pages"].as_object().unwrap() {
                let Some(url) = norm(url) else { continue };
                let time = chrono::DateTime::parse_from_rfc3339(obs[0].as_str().unwrap())
                    .unwrap()
                    .timestamp_micros();
                let o = (time, obs[1].as_i64(), obs[2].as_str().map(str::to_string));
                // Two raw URLs may normalize to one page: the latest stands.
                let e = snap.pages.entry(url).or_insert(o.clone());
                if o > *e {
                    *e = o;
                }
            }
            for l in s["links"].as_array().unwrap() {
                let (Some(src), Some(dst)) =
                    (norm(l[0].as_str().unwrap()), norm(l[1].as_str().unwrap()))
                else {
                    continue;
                };
                if src != dst {
                    snap.links.insert((src, dst));
                }
            }
            snap
        })
        .collect();
    Some(snaps)
}

fn import_warc(files: &[PathBuf], out: &Path, extra: &[&str]) -> std::process::Output {
    let mut args: Vec<String> = vec!["import".into(), "--format".into(), "warc".into()];
    args.push("--input".into());
    args.extend(files.iter().map(|f| f.to_string_lossy().into_owned()));
    args.extend(["--output".into(), out.to_string_lossy().into_owned()]);
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    run_bin(&args, &[])
}

#[test]
fn real_warc_files_match_warcio() {
    let Some(files) = warc_files() else { return };
    let dir = tempdir();
    let crawl = dir.path().join("crawl");
    let o = import_warc(&files, &crawl, &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    // Our digests of the payloads agree with every digest the crawlers declared.
    assert!(!err.contains("differ from the payload"), "{err}");
    let Some(mut want) = warcio_reading(&files) else {
        return;
    };
    // One snapshot per file, in time order: the latest fetch of each.
    want.sort_by_key(|s| s.pages.values().map(|p| p.0).max());
    let got = read_snapshots(&crawl);
    assert_eq!(got.len(), files.len());
    let mut links = 0;
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g.pages, w.pages, "snapshot {i}: pages");
        let missing: Vec<_> = w.links.difference(&g.links).take(5).collect();
        let extra: Vec<_> = g.links.difference(&w.links).take(5).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "snapshot {i}: links missing {missing:?}, extra {extra:?}"
        );
        links += g.links.len();
    }
    assert!(links > 5000, "{links} links");
}

#[test]
fn gov_uk_crawls_run_end_to_end() {
    let Some(files) = warc_files() else { return };
    let pair: Vec<PathBuf> = files
        .iter()
        .filter(|f| f.to_string_lossy().contains("BL-2014032512"))
        .cloned()
        .collect();
    assert_eq!(pair.len(), 2);
    let dir = tempdir();
    let crawl = dir.path().join("crawl");
    let o = import_warc(&pair, &crawl, &["--complete"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("imported 2 complete snapshots"), "{err}");
    // Every revisit of the second crawl found its capture in the first.
    assert!(!err.contains("revisits whose original"), "{err}");
    let snaps = read_snapshots(&crawl);
    // The second crawl's revisits keep the first crawl's links: a page revisited
    // with the same digest links where it linked 11 minutes before.
    let mut same = 0;
    for (url, obs) in &snaps[1].pages {
        if snaps[0].pages.get(url).map(|o| &o.2) == Some(&obs.2) {
            let out = |s: &Snap| -> BTreeSet<String> {
                s.links
                    .iter()
                    .filter(|l| &l.0 == url)
                    .map(|l| l.1.clone())
                    .collect()
            };
            assert_eq!(out(&snaps[0]), out(&snaps[1]), "{url}");
            same += 1;
        }
    }
    assert!(same >= 50, "{same} unchanged pages");

    let out = dir.path().join("out");
    let summary = run_in_process(&crawl, &out, 2).expect("run the imported crawl");
    assert_eq!(summary.snapshots, vec![0, 1]);
    // Changes counted by the pipeline = pages whose digest differs between the crawls.
    let changed = snaps[1]
        .pages
        .iter()
        .filter(|(u, o)| {
            snaps[0]
                .pages
                .get(*u)
                .is_some_and(|p| p.2.is_some() && o.2.is_some() && p.2 != o.2)
        })
        .count() as i64;
    let pages = read_cells(&out.join("pages"));
    let changes: i64 = pages.iter().map(|r| r["changes"].i64().unwrap()).sum();
    assert_eq!(changes, changed);
    let fetched = snaps[0]
        .pages
        .keys()
        .chain(snaps[1].pages.keys())
        .collect::<BTreeSet<_>>()
        .len();
    let observed = pages
        .iter()
        .filter(|r| r["observations"].i64().unwrap() > 0)
        .count();
    assert_eq!(observed, fetched);
}

// ---------------------------------------------------------------------------
// Hand-written WARC files.

fn record(kind: &str, uri: &str, date: &str, extra: &str, block: &[u8]) -> Vec<u8> {
    let mut r = format!(
        "WARC/1.0\r\nWARC-Type: {kind}\r\nWARC-Target-URI: {uri}\r\nWARC-Date: {date}\r\n{extra}WARC-Record-ID: <urn:uuid:x>\r\nContent-Length: {}\r\n\r\n",
        block.len()
    )
    .into_bytes();
    r.extend_from_slice(block);
    r.extend_from_slice(b"\r\n\r\n");
    r
}

fn http(status: &str, headers: &str, body: &[u8]) -> Vec<u8> {
    let mut m = format!("HTTP/1.1 {status}\r\n{headers}\r\n").into_bytes();
    m.extend_from_slice(body);
    m
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

#[test]
fn written_warcs_gzip_bodies_redirects_and_grouping() {
    let dir = tempdir();
    let html = b"<base href='http://a.com/d/'><a href=x>x</a><a href='javascript:f()'>j</a>";
    let mut day1 = record(
        "response",
        "http://a.com/",
        "2020-01-06T10:00:00Z",
        "",
        &http(
            "200 OK",
            "Content-Type: text/html\r\nContent-Encoding: gzip\r\n",
            &gzip(html),
        ),
    );
    day1.extend(record(
        "response",
        "http://a.com/old",
        "2020-01-06T11:00:00Z",
        "",
        &http("301 Moved", "Location: /new\r\n", b""),
    ));
    day1.extend(record(
        "request",
        "http://a.com/",
        "2020-01-06T10:00:00Z",
        "",
        b"GET / HTTP/1.1\r\n\r\n",
    ));
    let mut day2 = record(
        "revisit",
        "http://a.com/",
        "2020-01-08T09:00:00Z",
        &format!(
            "WARC-Payload-Digest: {}\r\n",
            webevo::import::warc::sha1_digest(&gzip(html))
        ),
        &http("200 OK", "Content-Type: text/html\r\n", b""),
    );
    day2.extend(record(
        "response",
        "http://a.com/new",
        "2020-01-14T09:00:00Z",
        "",
        &http(
            "404 Not Found",
            "Content-Type: text/html\r\n",
            b"<a href=/gone>",
        ),
    ));
    // Each record its own gzip member, as crawlers write them.
    let one = dir.path().join("one.warc.gz");
    fs::write(&one, gzip(&day1)).unwrap();
    let two = dir.path().join("two.warc");
    fs::write(&two, &day2).unwrap();
    let files = [one.clone(), two.clone()];

    // By file: two snapshots; the revisit has the capture's links.
    let crawl = dir.path().join("by-file");
    let o = import_warc(&files, &crawl, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let snaps = read_snapshots(&crawl);
    assert_eq!(snaps.len(), 2);
    let link = |a: &str, b: &str| (a.to_string(), b.to_string());
    assert_eq!(
        snaps[0].links,
        BTreeSet::from([
            link("http://a.com/", "http://a.com/d/x"),
            link("http://a.com/old", "http://a.com/new"),
        ])
    );
    assert_eq!(snaps[0].pages["http://a.com/old"].1, Some(301));
    assert!(snaps[1]
        .links
        .contains(&link("http://a.com/", "http://a.com/d/x")));
    // A 404 page's body is not followed.
    assert_eq!(snaps[1].links.len(), 1);
    assert_eq!(snaps[1].pages["http://a.com/new"].1, Some(404));
    // The revisit carries the capture's digest: unchanged.
    assert_eq!(
        snaps[0].pages["http://a.com/"].2,
        snaps[1].pages["http://a.com/"].2
    );

    // By week: Jan 6 and 8 share a week (Monday the 6th), the 14th does not.
    let crawl = dir.path().join("by-week");
    let o = import_warc(&files, &crawl, &["--snapshot-by", "week"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let snaps = read_snapshots(&crawl);
    assert_eq!(snaps.len(), 2);
    assert_eq!(snaps[0].pages.len(), 2);
    // The revisit on the 8th is the latest observation of a.com/ that week.
    assert_eq!(
        snaps[0].pages["http://a.com/"].0,
        webevo::import::parse_date("2020-01-08T09:00:00Z").unwrap()
    );
    let json = fs::read_to_string(crawl.join("snapshots/0/snapshot.json")).unwrap();
    assert!(json.contains("2020-01-08T09:00:00Z"), "{json}");

    // By day: three snapshots.
    let crawl = dir.path().join("by-day");
    let o = import_warc(&files, &crawl, &["--snapshot-by", "day"]);
    assert!(o.status.success());
    assert_eq!(read_snapshots(&crawl).len(), 3);

    // An explicit map: both files one snapshot, at the mapped time.
    let map = dir.path().join("map.tsv");
    fs::write(
        &map,
        "# file\tdate\none.warc.gz\t2020-02-01\ntwo.warc\t2020-02-01\n",
    )
    .unwrap();
    let crawl = dir.path().join("mapped");
    let o = import_warc(&files, &crawl, &["--snapshot-map", map.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(read_snapshots(&crawl).len(), 1);
    let json = fs::read_to_string(crawl.join("snapshots/0/snapshot.json")).unwrap();
    assert!(json.contains("2020-02-01T00:00:00Z"), "{json}");
}

#[test]
fn bad_warcs_name_file_record_and_problem() {
    let dir = tempdir();
    let good = record(
        "response",
        "http://a.com/",
        "2020-01-06T10:00:00Z",
        "",
        &http("200 OK", "", b"hi"),
    );
    let cases: Vec<(&str, Vec<u8>, &[&str])> = vec![
        (
            "truncated.warc",
            {
                let mut v = good.clone();
                let cut = record(
                    "response",
                    "http://a.com/b",
                    "2020-01-06T10:00:00Z",
                    "",
                    &[b'x'; 100],
                );
                v.extend_from_slice(&cut[..cut.len() - 60]);
                v
            },
            &[
                "truncated.warc",
                "record 2",
                "truncated record",
                "Content-Length is 100",
            ],
        ),
        (
            "garbage.warc",
            {
                let mut v = good.clone();
                v.extend_from_slice(b"HTTP/1.1 200 OK\r\n\r\n");
                v
            },
            &[
                "garbage.warc",
                "record 2",
                "expected a record's version line",
            ],
        ),
        (
            "length.warc",
            b"WARC/1.0\r\nWARC-Type: response\r\nContent-Length: lots\r\n\r\n".to_vec(),
            &[
                "length.warc",
                "record 1 (uncompressed byte 0)",
                "Content-Length \"lots\"",
            ],
        ),
        (
            "date.warc",
            record(
                "response",
                "http://a.com/",
                "last tuesday",
                "",
                b"HTTP/1.1 200 OK\r\n\r\n",
            ),
            &["date.warc", "record 1", "WARC-Date \"last tuesday\""],
        ),
        (
            "gzip.warc.gz",
            {
                let z = gzip(&good);
                z[..z.len() / 2].to_vec()
            },
            &["gzip.warc.gz", "record 1", "cannot read"],
        ),
    ];
    for (name, bytes, expect) in cases {
        let input = dir.path().join(name);
        fs::write(&input, bytes).unwrap();
        let out = dir.path().join(format!("out-{name}"));
        let o = import_warc(&[input], &out, &[]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{name}: {err}");
        for e in expect {
            assert!(err.contains(e), "{name}: stderr lacks {e:?}: {err}");
        }
        assert!(!out.exists(), "{name}: a failed import leaves no output");
    }
}

/// Revisits are joined to their captures after every file is read (a sort-merge
/// join on disk, so memory does not grow with the input): by their own URL, by
/// `WARC-Refers-To-Target-URI` for URL-agnostic ones, in either file order, and
/// the first capture of a (URL, digest) counts.
#[test]
fn revisits_find_their_capture_by_url_or_refers_to_in_any_file_order() {
    let dir = tempdir();
    let page = |links: &str| http("200 OK", "Content-Type: text/html\r\n", links.as_bytes());
    let digest = |body: &[u8]| {
        format!(
            "WARC-Payload-Digest: {}\r\n",
            webevo::import::warc::sha1_digest(body)
        )
    };
    let html = b"<a href=/x>x</a><a href=http://c.com/y>y</a>";
    // File one (snapshot 0): the revisits, before any capture.
    let mut one = record(
        "revisit",
        "http://a.com/",
        "2020-01-06T10:00:00Z",
        &digest(html),
        &http("200 OK", "", b""),
    );
    one.extend(record(
        "revisit",
        "http://mirror.org/copy",
        "2020-01-06T10:05:00Z",
        &format!(
            "{}WARC-Refers-To-Target-URI: <http://a.com/>\r\n",
            digest(html)
        ),
        &http("200 OK", "", b""),
    ));
    one.extend(record(
        "revisit",
        "http://a.com/lost",
        "2020-01-06T10:06:00Z",
        &digest(b"never captured"),
        &http("200 OK", "", b""),
    ));
    // File two (snapshot 1): the capture, then a later one with the same
    // digest but other links (a writer's mistake): the first counts.
    let mut two = record(
        "response",
        "http://a.com/",
        "2020-01-07T10:00:00Z",
        "",
        &page(std::str::from_utf8(html).unwrap()),
    );
    two.extend(record(
        "response",
        "http://a.com/",
        "2020-01-07T11:00:00Z",
        &digest(html),
        &page("<a href=/other>other</a>"),
    ));
    let (a, b) = (dir.path().join("one.warc"), dir.path().join("two.warc"));
    fs::write(&a, &one).unwrap();
    fs::write(&b, &two).unwrap();
    let crawl = dir.path().join("crawl");
    let o = import_warc(&[a, b], &crawl, &[]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(
        stderr.contains("1 revisits whose original capture was not imported"),
        "{stderr}"
    );
    let snaps = read_snapshots(&crawl);
    let link = |a: &str, b: &str| (a.to_string(), b.to_string());
    assert_eq!(
        snaps[0].links,
        BTreeSet::from([
            link("http://a.com/", "http://a.com/x"),
            link("http://a.com/", "http://c.com/y"),
            link("http://mirror.org/copy", "http://a.com/x"),
            link("http://mirror.org/copy", "http://c.com/y"),
        ])
    );
    assert_eq!(snaps[0].pages.len(), 3);
}
