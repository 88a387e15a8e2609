//! `webevo import --format cc-hostgraph`: releases written here in Common Crawl's
//! exact layouts (gzipped text split into part files, and Parquet), matched
//! across releases by host name, run end to end; errors name file and line.

use std::collections::BTreeSet;
use std::fs;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use parquet::arrow::ArrowWriter;

use crate::util::*;

fn gz_text(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(text.as_bytes()).unwrap();
    fs::write(path, e.finish().unwrap()).unwrap();
}

fn parquet(path: &Path, columns: Vec<(&str, ArrayRef)>) {
    let batch = RecordBatch::try_from_iter(columns).unwrap();
    let mut w =
        ArrowWriter::try_new(fs::File::create(path).unwrap(), batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

/// The pages and links of each snapshot of an imported crawl.
fn crawl(dir: &Path) -> Vec<(BTreeSet<String>, BTreeSet<(String, String)>)> {
    snapshot_seqs(dir)
        .into_iter()
        .map(|seq| {
            let d = dir.join("snapshots").join(seq.to_string());
            let pages = read_cells(&d.join("pages.parquet"))
                .into_iter()
                .map(|r| r["url"].str().unwrap().to_string())
                .collect();
            let links = read_cells(&d.join("links.parquet"))
                .into_iter()
                .map(|r| {
                    (
                        r["src"].str().unwrap().to_string(),
                        r["dst"].str().unwrap().to_string(),
                    )
                })
                .collect();
            (pages, links)
        })
        .collect()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn links(items: &[(&str, &str)]) -> BTreeSet<(String, String)> {
    items
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[test]
fn releases_in_text_and_parquet_match_by_host_name() {
    let dir = tempdir();
    // Release 1: gzipped text split into part files, as Common Crawl publishes it.
    let r1 = dir.path().join("cc-main-2024-feb-apr-may");
    gz_text(
        &r1.join("vertices/part-00000.txt.gz"),
        "0\tcom.example\n1\tcom.example.blog\n",
    );
    gz_text(
        &r1.join("vertices/part-00001.txt.gz"),
        "2\torg.other\n3\tbad host!\n",
    );
    gz_text(&r1.join("edges/part-00000.txt.gz"), "0\t1\n0\t2\n1\t0\n");
    gz_text(&r1.join("edges/part-00001.txt.gz"), "2\t2\n3\t0\n0\t3\n");
    fs::write(r1.join("edges/_SUCCESS"), "").unwrap();
    // Release 2: Parquet, ids renumbered (a new host sorts in between).
    let r2 = dir.path().join("cc-main-2024-jun-jul-aug");
    fs::create_dir_all(&r2).unwrap();
    parquet(
        &r2.join("host-vertices.parquet"),
        vec![
            (
                "id",
                Arc::new(Int64Array::from(vec![0, 1, 2, 3])) as ArrayRef,
            ),
            (
                "host_rev",
                Arc::new(StringArray::from(vec![
                    "com.example",
                    "com.example.blog",
                    "net.fresh",
                    "org.other",
                ])),
            ),
        ],
    );
    parquet(
        &r2.join("host-edges.parquet"),
        vec![
            (
                "from",
                Arc::new(Int64Array::from(vec![2, 2, 3])) as ArrayRef,
            ),
            ("to", Arc::new(Int64Array::from(vec![0, 3, 0]))),
        ],
    );
    let map = dir.path().join("releases.tsv");
    fs::write(
        &map,
        format!(
            "{}\t2024-05-31\ncc-main-2024-jun-jul-aug\t2024-08-31\n",
            r1.display()
        ),
    )
    .unwrap();
    let out = dir.path().join("crawl");
    let o = run_bin(
        &[
            "import",
            "--format",
            "cc-hostgraph",
            "--input",
            r1.to_str().unwrap(),
            r2.to_str().unwrap(),
            "--snapshot-map",
            map.to_str().unwrap(),
            "--output",
            out.to_str().unwrap(),
        ],
        &[],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("imported 2 partial snapshots"), "{err}");
    // Edges from the unusable host are dropped; edges to it keep their source.
    assert!(err.contains("1 edges with an invalid source"), "{err}");
    assert!(err.contains("1 edges with an invalid destination"), "{err}");
    let (ex, blog, other, fresh) = (
        "http://example.com/",
        "http://blog.example.com/",
        "http://other.org/",
        "http://fresh.net/",
    );
    let snaps = crawl(&out);
    assert_eq!(snaps.len(), 2);
    assert_eq!(snaps[0].0, set(&[ex, blog, other]));
    assert_eq!(snaps[0].1, links(&[(ex, blog), (ex, other), (blog, ex)]));
    assert_eq!(snaps[1].0, set(&[fresh, other]));
    assert_eq!(
        snaps[1].1,
        links(&[(fresh, ex), (fresh, other), (other, ex)])
    );
    let json = fs::read_to_string(out.join("snapshots/1/snapshot.json")).unwrap();
    assert!(json.contains("2024-08-31T00:00:00Z"), "{json}");

    // The pipeline runs on it; hosts are one page each across releases.
    let result = dir.path().join("out");
    run_in_process(&out, &result, 2).expect("run the imported releases");
    assert_eq!(table_rows(&result, "pages").len(), 4);
}

#[test]
fn bad_releases_name_file_and_line() {
    let dir = tempdir();
    let r = dir.path().join("rel");
    gz_text(&r.join("vertices.txt.gz"), "0\tcom.a\n1\tcom.b\n");
    gz_text(&r.join("edges.txt.gz"), "0\t1\n1\t7\n");
    let map = dir.path().join("map.tsv");
    fs::write(&map, "rel\t2024-01-01\n").unwrap();
    let run = |args: &[&str], out: &str| {
        let out = dir.path().join(out);
        let mut all = vec![
            "import",
            "--format",
            "cc-hostgraph",
            "--output",
            out.to_str().unwrap(),
        ];
        all.extend_from_slice(args);
        let o = run_bin(&all, &[]);
        assert!(!out.exists(), "a failed import leaves no output");
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let rel = r.to_str().unwrap();
    let m = map.to_str().unwrap();
    let err = run(&["--input", rel, "--snapshot-map", m], "o1");
    assert!(err.contains("edges.txt.gz, line 2"), "{err}");
    assert!(
        err.contains("vertex id 7 is not in the release's vertices"),
        "{err}"
    );
    let err = run(&["--input", rel], "o2");
    assert!(err.contains("needs --snapshot-map"), "{err}");
    let empty = dir.path().join("empty");
    fs::create_dir_all(&empty).unwrap();
    let err = run(
        &["--input", empty.to_str().unwrap(), "--snapshot-map", m],
        "o3",
    );
    assert!(err.contains("no line gives the snapshot time"), "{err}");
    fs::write(&map, "rel\t2024-01-01\nempty\t2024-02-01\n").unwrap();
    let err = run(
        &["--input", empty.to_str().unwrap(), "--snapshot-map", m],
        "o4",
    );
    assert!(err.contains("not a host-graph release"), "{err}");

    // The edges are joined to the vertices on disk, in sorted order; still the
    // first bad edge in input order is the one reported: line 2 (id 9, a
    // destination) before line 3 (id 3, a source, which sorts first).
    let r2 = dir.path().join("rel2");
    gz_text(&r2.join("vertices.txt.gz"), "0\tcom.a\n1\tcom.b\n");
    gz_text(&r2.join("edges.txt.gz"), "0\t1\n1\t9\n3\t0\n");
    fs::write(&map, "rel2\t2024-01-01\n").unwrap();
    let err = run(
        &["--input", r2.to_str().unwrap(), "--snapshot-map", m],
        "o5",
    );
    assert!(
        err.contains("edges.txt.gz, line 2") && err.contains("vertex id 9 is not"),
        "{err}"
    );
    // In Parquet the row is counted in the file, past the reader's batches.
    let r4 = dir.path().join("rel4");
    fs::create_dir_all(&r4).unwrap();
    parquet(
        &r4.join("vertices.parquet"),
        vec![
            ("id", Arc::new(Int64Array::from(vec![0, 1])) as ArrayRef),
            (
                "host_rev",
                Arc::new(StringArray::from(vec!["com.a", "com.b"])),
            ),
        ],
    );
    let mut to = vec![1i64; 20_000];
    to[12_345] = 99;
    parquet(
        &r4.join("edges.parquet"),
        vec![
            (
                "from",
                Arc::new(Int64Array::from(vec![0i64; 20_000])) as ArrayRef,
            ),
            ("to", Arc::new(Int64Array::from(to))),
        ],
    );
    fs::write(&map, "rel4\t2024-01-01\n").unwrap();
    let err = run(
        &["--input", r4.to_str().unwrap(), "--snapshot-map", m],
        "o7",
    );
    assert!(
        err.contains("edges.parquet, row 12345") && err.contains("vertex id 99 is not"),
        "{err}"
    );
    // A vertex id twice names the vertex file.
    let r3 = dir.path().join("rel3");
    gz_text(
        &r3.join("vertices.txt.gz"),
        "0\tcom.a\n1\tcom.b\n0\tcom.c\n",
    );
    gz_text(&r3.join("edges.txt.gz"), "0\t1\n");
    fs::write(&map, "rel3\t2024-01-01\n").unwrap();
    let err = run(
        &["--input", r3.to_str().unwrap(), "--snapshot-map", m],
        "o6",
    );
    assert!(
        err.contains("vertices.txt.gz") && err.contains("vertex id 0 appears twice"),
        "{err}"
    );
}
