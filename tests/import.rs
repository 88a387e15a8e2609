//! `webevo import`: the real GDF and dated-links files against counts done here by
//! plain string processing, an imported crawl run end to end, and hand-written
//! inputs for comma host names, date formats and errors naming file and line.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use webevo::import::{import, Delimiter, Format, ImportRequest, ImportSummary};

use crate::util::*;

/// What the importer wrote for one snapshot.
#[derive(Debug, Default)]
struct Written {
    time: String,
    partial: bool,
    pages: BTreeSet<String>,
    /// `(src, dst)` → count.
    links: BTreeMap<(String, String), i64>,
}

/// Reads a crawl directory back, snapshot by snapshot, in order.
fn read_crawl(dir: &Path) -> Vec<Written> {
    snapshot_seqs(dir)
        .into_iter()
        .map(|seq| {
            let d = dir.join("snapshots").join(seq.to_string());
            let json: serde_json::Value =
                serde_json::from_str(&fs::read_to_string(d.join("snapshot.json")).unwrap())
                    .unwrap();
            let mut w = Written {
                time: json["time"].as_str().unwrap().to_string(),
                partial: json["partial"].as_bool().unwrap(),
                ..Written::default()
            };
            for b in batches(&d.join("pages.parquet")) {
                let urls = b.column_by_name("url").unwrap().as_string::<i32>();
                w.pages.extend(urls.iter().map(|u| u.unwrap().to_string()));
            }
            for b in batches(&d.join("links.parquet")) {
                let src = b.column_by_name("src").unwrap().as_string::<i32>();
                let dst = b.column_by_name("dst").unwrap().as_string::<i32>();
                let count = b
                    .column_by_name("count")
                    .unwrap()
                    .as_primitive::<Int64Type>();
                for i in 0..b.num_rows() {
                    let key = (src.value(i).to_string(), dst.value(i).to_string());
                    assert!(
                        w.links.insert(key, count.value(i)).is_none(),
                        "duplicate link"
                    );
                }
            }
            w
        })
        .collect()
}

fn batches(path: &Path) -> Vec<arrow_array::RecordBatch> {
    let f = fs::File::open(path).unwrap();
    ParquetRecordBatchReaderBuilder::try_new(f)
        .unwrap()
        .build()
        .unwrap()
        .map(|b| b.unwrap())
        .collect()
}

fn import_lib(format: Format, input: &Path, output: &Path) -> ImportSummary {
    import(
        &ImportRequest {
            format,
            inputs: vec![input.to_path_buf()],
            output: output.to_path_buf(),
            complete: false,
            delimiter: None,
            snapshot_by: None,
            snapshot_map: None,
        },
        &mut |_| {},
    )
    .unwrap_or_else(|e| panic!("import {}: {e:#}", input.display()))
}

/// The reference: per date string, the distinct sources, and the links between
/// plain host names (summed weights), from plain string processing.
#[derive(Default)]
struct Reference {
    sources: BTreeMap<String, BTreeSet<String>>,
    links: BTreeMap<String, BTreeMap<(String, String), i64>>,
    /// Edge lines whose destination is not a plain host name.
    odd_destinations: usize,
    /// Those destinations, lower-cased.
    odd_hosts: BTreeSet<String>,
}

/// A host name as normalization leaves it: non-empty dot-separated labels of
/// lower-case letters, digits and `-_` (`74.125.39.132.` normalizes to
/// `74.125.39.132`; `a.b...3` is no host).
fn plain_host(h: &str) -> bool {
    h.split('.').all(|label| !label.is_empty())
        && h.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-._".contains(&b))
}

impl Reference {
    fn add(&mut self, date: &str, src: &str, dst: &str, weight: i64) {
        let (src, dst) = (src.trim().to_lowercase(), dst.trim().to_lowercase());
        assert!(plain_host(&src), "source {src:?} on {date}");
        let url = |h: &str| format!("http://{h}/");
        self.sources
            .entry(date.to_string())
            .or_default()
            .insert(url(&src));
        let links = self.links.entry(date.to_string()).or_default();
        if !plain_host(&dst) {
            self.odd_destinations += 1;
            self.odd_hosts.insert(dst);
        } else if src != dst {
            *links.entry((url(&src), url(&dst))).or_default() += weight;
        }
    }

    /// Checks `written` against this reference; `day` turns a date string into
    /// the snapshot time expected in snapshot.json.
    fn check(&self, name: &str, written: &[Written], day: impl Fn(&str) -> String) {
        assert_eq!(written.len(), self.sources.len(), "{name}: snapshots");
        let mut extra_links = 0;
        for ((date, sources), w) in self.sources.iter().zip(written) {
            assert_eq!(w.time, day(date), "{name}: snapshot time of {date}");
            assert!(w.partial, "{name}: partial by default");
            assert_eq!(&w.pages, sources, "{name}: pages of {date}");
            for (link, count) in &self.links[date] {
                assert_eq!(
                    w.links.get(link),
                    Some(count),
                    "{name}: link {link:?} of {date}"
                );
            }
            for (src, dst) in w.links.keys() {
                if !self.links[date].contains_key(&(src.clone(), dst.clone())) {
                    // Only links to hosts the reference leaves out: odd characters,
                    // or a trailing dot normalization drops.
                    let host = &dst["http://".len()..dst.len() - 1];
                    assert!(
                        !plain_host(host) || self.odd_hosts.contains(&format!("{host}.")),
                        "{name}: unexpected link {src} -> {dst}"
                    );
                    extra_links += 1;
                }
            }
        }
        assert!(
            extra_links <= self.odd_destinations,
            "{name}: {extra_links} extra links"
        );
    }
}

/// The GDF reference: weight and date split from the right; a `source,target`
/// with more than one comma is split where the target is a node name.
fn gdf_reference(path: &Path) -> Reference {
    let text = fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let e = lines
        .iter()
        .position(|l| l.starts_with("edgedef>"))
        .unwrap();
    let comma_nodes: Vec<&str> = lines[1..e]
        .iter()
        .copied()
        .filter(|n| n.contains(','))
        .collect();
    let mut r = Reference::default();
    for line in &lines[e + 1..] {
        if line.is_empty() {
            continue;
        }
        let f: Vec<&str> = line.rsplitn(3, ',').collect();
        let (date, weight, pair) = (f[0], f[1], f[2]);
        let (src, dst) = match comma_nodes
            .iter()
            .find(|n| pair.ends_with(&format!(",{n}")))
        {
            Some(n) => (
                &pair[..pair.len() - n.len() - 1],
                &pair[pair.len() - n.len()..],
            ),
            None => pair.rsplit_once(',').unwrap(),
        };
        r.add(date, src, dst, weight.parse().unwrap());
    }
    r
}

fn gdf_day(d: &str) -> String {
    format!("{}-{}-{}T00:00:00Z", &d[..4], &d[4..6], &d[6..8])
}

fn walk_files() -> Option<Vec<PathBuf>> {
    let Some(data) = shared_data() else {
        eprintln!("skipped: ../shared/data is absent");
        return None;
    };
    let mut files: Vec<PathBuf> = fs::read_dir(data.join("walk"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "gdf"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 4, "the four WALK GDF files");
    Some(files)
}

#[test]
fn walk_gdf_files_match_plain_counts() {
    let Some(files) = walk_files() else { return };
    let dir = tempdir();
    for file in files {
        let name = file.file_stem().unwrap().to_string_lossy().into_owned();
        let out = dir.path().join(&name);
        let s = import_lib(Format::AutGdf, &file, &out);
        let r = gdf_reference(&file);
        assert_eq!(s.snapshots.len(), r.sources.len(), "{name}");
        assert_eq!(s.skipped.invalid_sources, 0, "{name}");
        let written = read_crawl(&out);
        r.check(&name, &written, gdf_day);
        let pages: usize = r.sources.values().map(|s| s.len()).sum();
        assert_eq!(s.pages(), pages as u64, "{name}: page rows");
        assert_eq!(
            s.links(),
            written.iter().map(|w| w.links.len() as u64).sum::<u64>()
        );
        // No scratch or staging left behind.
        let left: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains(".tmp-"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
        assert_eq!(
            fs::read_dir(&out).unwrap().count(),
            1,
            "{name}: only snapshots/"
        );
    }
}

#[test]
fn canadian_sitelinks_match_plain_counts() {
    let Some(data) = shared_data() else {
        eprintln!("skipped: ../shared/data is absent");
        return;
    };
    let file = data.join("canadian-political-sitelinks-2005-2009.tsv");
    let dir = tempdir();
    let out = dir.path().join("crawl");
    let s = import_lib(Format::DatedLinks, &file, &out);
    let mut r = Reference::default();
    for line in fs::read_to_string(&file).unwrap().lines() {
        let f: Vec<&str> = line.split('\t').collect();
        r.add(f[0], f[1], f[2], f[3].parse().unwrap());
    }
    assert_eq!(r.sources.len(), 36, "36 months");
    assert_eq!(s.snapshots.len(), 36);
    assert_eq!(s.edges, 29_587);
    let written = read_crawl(&out);
    r.check("canadian sitelinks", &written, |d| {
        format!("{}-{}-01T00:00:00Z", &d[..4], &d[4..6])
    });
}

#[test]
fn imported_gdf_runs_end_to_end() {
    let Some(files) = walk_files() else { return };
    let uvic = files
        .iter()
        .find(|f| f.to_string_lossy().contains("UVIC"))
        .unwrap();
    let dir = tempdir();
    let crawl = dir.path().join("crawl");
    let o = run_bin(
        &[
            "import",
            "--format",
            "aut-gdf",
            "--input",
            uvic.to_str().unwrap(),
            "--output",
            crawl.to_str().unwrap(),
        ],
        &[],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "import failed: {err}");
    assert!(err.contains("imported 7 partial snapshots"), "{err}");
    let out = dir.path().join("out");
    let summary = run_in_process(&crawl, &out, 2).expect("run the imported crawl");
    assert_eq!(summary.snapshots, (0..7).collect::<Vec<u64>>());
    assert!(out.join("_manifest.json").is_file());
    assert_eq!(table_rows(&out, "snapshots").len(), 7);
    // Every one of the 126 hosts of the node list is a source or target of an edge.
    assert_eq!(table_rows(&out, "pages").len(), 126);
}

fn import_bin(args: &[&str]) -> std::process::Output {
    let mut all = vec!["import"];
    all.extend_from_slice(args);
    run_bin(&all, &[])
}

fn fails(o: &std::process::Output, expect: &[&str]) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "exit code; stderr: {err}");
    for e in expect {
        assert!(err.contains(e), "stderr lacks {e:?}: {err}");
    }
}

const GDF_HEAD: &str = "nodedef> name VARCHAR\na.ca\nB.org\njoyce.webs,com\nedgedef> source VARCHAR, target VARCHAR, weight DOUBLE, timeint VARCHAR\n";

#[test]
fn gdf_comma_hosts_and_malformed_lines() {
    let dir = tempdir();
    let good = dir.path().join("good.gdf");
    fs::write(
        &good,
        format!(
            "{GDF_HEAD}a.ca,joyce.webs,com,6,20151020\nB.org,a.ca,3,20150910\nb.org,a.ca,2,20150910\n\
             a.ca,a.ca,9,20150910\na.ca,bad host,1,20150910\n"
        ),
    )
    .unwrap();
    let out = dir.path().join("crawl");
    let s = import_lib(Format::AutGdf, &good, &out);
    assert_eq!(s.skipped.self_links, 1);
    assert_eq!(s.skipped.invalid_destinations, 1);
    assert_eq!(s.skipped.duplicate_links, 1);
    let w = read_crawl(&out);
    assert_eq!(w.len(), 2);
    assert_eq!(w[0].time, "2015-09-10T00:00:00Z");
    let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
    assert_eq!(w[0].pages, set(&["http://a.ca/", "http://b.org/"]));
    assert_eq!(
        w[0].links,
        [(("http://b.org/".into(), "http://a.ca/".into()), 5)].into()
    );
    assert_eq!(w[1].pages, set(&["http://a.ca/"]));
    let (link, count) = w[1].links.iter().next().unwrap();
    assert_eq!((link.0.as_str(), *count), ("http://a.ca/", 6));
    assert!(link.1.starts_with("http://joyce.webs"), "{link:?}");

    // Malformed lines: the error names the file and the line; nothing is left.
    for (body, line, problem) in [
        (
            "a.ca,B.org,3,20150910\na.ca,3,20150910\n",
            7,
            "wrong number of fields",
        ),
        ("a.ca,B.org,3,2015091\n", 6, "bad date \"2015091\""),
        ("a.ca,B.org,three,20150910\n", 6, "weight \"three\""),
    ] {
        let bad = dir.path().join("bad.gdf");
        fs::write(&bad, format!("{GDF_HEAD}{body}")).unwrap();
        let out = dir.path().join("bad-out");
        let o = import_bin(&[
            "--format",
            "aut-gdf",
            "-q",
            "--input",
            bad.to_str().unwrap(),
            "--output",
            out.to_str().unwrap(),
        ]);
        fails(&o, &[&format!("bad.gdf, line {line}"), problem]);
        assert!(!out.exists(), "a failed import leaves no output");
    }
    let leftovers: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    // Not a GDF file at all.
    let notgdf = dir.path().join("links.tsv");
    fs::write(&notgdf, "20150910\ta.ca\tb.ca\n").unwrap();
    fails(
        &import_bin(&[
            "--format",
            "aut-gdf",
            "--input",
            notgdf.to_str().unwrap(),
            "--output",
            dir.path().join("x").to_str().unwrap(),
        ]),
        &["links.tsv, line 1", "nodedef>"],
    );
}

#[test]
fn refuses_a_non_empty_output() {
    let dir = tempdir();
    let input = dir.path().join("l.tsv");
    fs::write(&input, "20150910\ta.ca\tb.ca\n").unwrap();
    let out = dir.path().join("out");
    fs::create_dir_all(&out).unwrap();
    fs::write(out.join("keep.txt"), "mine").unwrap();
    let args = |out: &Path| {
        import_bin(&[
            "--format",
            "dated-links",
            "--input",
            input.to_str().unwrap(),
            "--output",
            out.to_str().unwrap(),
        ])
    };
    fails(&args(&out), &["out", "not empty"]);
    assert_eq!(fs::read_to_string(out.join("keep.txt")).unwrap(), "mine");
    // An empty directory is fine.
    let empty = dir.path().join("empty");
    fs::create_dir_all(&empty).unwrap();
    assert!(args(&empty).status.success());
    assert_eq!(snapshot_seqs(&empty), vec![0]);
}

#[test]
fn dated_links_date_formats() {
    let dir = tempdir();
    // Every date format, a header, a URL kept as is, a missing count, a comment.
    let tsv = dir.path().join("links.tsv");
    fs::write(
        &tsv,
        "date\tsrc\tdst\tcount\n\
         # a comment\n\
         20150301\ta.ca\tb.ca\t2\n\
         201503\ta.ca\thttp://b.ca/x?y=1#frag\t\n\
         2015-03-01T12:00:00+02:00\tHTTP://C.ca/page\ta.ca\t1\n\
         2015-03-01\tb.ca\ta.ca\n\
         2015-02\tc.ca\ta.ca\t4\n\
         2015-03-01T10:00:00Z\td.ca\ta.ca\t1\n",
    )
    .unwrap();
    let out = dir.path().join("crawl");
    let s = import_lib(Format::DatedLinks, &tsv, &out);
    assert_eq!(s.edges, 6);
    let w = read_crawl(&out);
    let times: Vec<&str> = w.iter().map(|w| w.time.as_str()).collect();
    assert_eq!(
        times,
        [
            "2015-02-01T00:00:00Z",
            "2015-03-01T00:00:00Z",
            "2015-03-01T10:00:00Z"
        ]
    );
    let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
    assert_eq!(w[1].pages, set(&["http://a.ca/", "http://b.ca/"]));
    assert_eq!(
        w[1].links.keys().cloned().collect::<Vec<_>>(),
        [
            ("http://a.ca/".to_string(), "http://b.ca/".to_string()),
            ("http://a.ca/".to_string(), "http://b.ca/x?y=1".to_string()),
            ("http://b.ca/".to_string(), "http://a.ca/".to_string()),
        ]
    );
    assert_eq!(
        w[2].pages,
        set(&["http://c.ca/page", "http://d.ca/"]),
        "12:00+02:00 is 10:00Z"
    );

    // CSV (by extension), gzipped, quoted fields, --complete.
    let csv = dir.path().join("links.csv.gz");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(b"20150301,\"http://a.ca/x,y\",b.ca,3\n20160101,b.ca,a.ca\n")
        .unwrap();
    fs::write(&csv, gz.finish().unwrap()).unwrap();
    let out = dir.path().join("csv");
    let s = import(
        &ImportRequest {
            format: Format::DatedLinks,
            inputs: vec![csv.clone()],
            output: out.clone(),
            complete: true,
            delimiter: None,
            snapshot_by: None,
            snapshot_map: None,
        },
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(s.snapshots.len(), 2);
    let w = read_crawl(&out);
    assert!(!w[0].partial && !w[1].partial);
    assert_eq!(w[0].pages, set(&["http://a.ca/x,y"]));
    assert_eq!(w[1].time, "2016-01-01T00:00:00Z");
    // The same file forced to tabs has one field per line.
    let e = import(
        &ImportRequest {
            format: Format::DatedLinks,
            inputs: vec![csv.clone()],
            output: dir.path().join("tabs"),
            complete: false,
            delimiter: Some(Delimiter::Tab),
            snapshot_by: None,
            snapshot_map: None,
        },
        &mut |_| {},
    )
    .unwrap_err();
    assert!(
        format!("{e:#}").contains("line 1: wrong number of fields"),
        "{e:#}"
    );

    // Bad dates and counts name the file and line; exit code 2.
    for (body, line, problem) in [
        (
            "20150301\ta.ca\tb.ca\n2015-13\ta.ca\tb.ca\n",
            2,
            "bad date \"2015-13\"",
        ),
        (
            "20150301\ta.ca\tb.ca\n20150230\ta.ca\tb.ca\n",
            2,
            "bad date",
        ),
        ("2015\ta.ca\tb.ca\n", 1, "bad date \"2015\""),
        ("20150301\ta.ca\tb.ca\t0\n", 1, "count \"0\""),
        (
            "20150301\ta.ca\tb.ca\t1\textra\n",
            1,
            "wrong number of fields",
        ),
    ] {
        let bad = dir.path().join("bad.tsv");
        fs::write(&bad, body).unwrap();
        let out = dir.path().join("bad-out");
        fails(
            &import_bin(&[
                "--format",
                "dated-links",
                "--input",
                bad.to_str().unwrap(),
                "--output",
                out.to_str().unwrap(),
            ]),
            &[&format!("bad.tsv, line {line}"), problem],
        );
        assert!(!out.exists());
    }
}
