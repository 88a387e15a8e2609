//! Bad input fails with exit code 2 and a message naming file, row and problem;
//! odd rows are counted, not fatal; and a failed run commits nothing.

use crate::util::*;

const A: &str = "http://a.com/";
const B: &str = "http://a.com/b";

fn run_fails(input: &std::path::Path, out: &std::path::Path, expect: &[&str]) {
    let o = run_bin(
        &[
            "run",
            "-q",
            "--job",
            "jobs/all.toml",
            "--input",
            input.to_str().unwrap(),
            "--output",
            out.to_str().unwrap(),
            "-w",
            "2",
        ],
        &[],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "exit code; stderr: {err}");
    for e in expect {
        assert!(err.contains(e), "stderr lacks {e:?}: {err}");
    }
}

#[test]
fn missing_required_column() {
    let dir = tempdir();
    let c = Crawl::new(&dir.path().join("in"));
    c.snapshot(0, 0, false, &[(A, "x")], &[]).raw(
        0,
        "links.tsv",
        "src\tto\nhttp://a.com/\thttp://a.com/b\n",
    );
    run_fails(
        &c.dir,
        &dir.path().join("out"),
        &["links.tsv", "missing required column \"dst\""],
    );
}

#[test]
fn wrong_number_of_fields_names_the_line() {
    let dir = tempdir();
    let c = Crawl::new(&dir.path().join("in"));
    c.snapshot(0, 0, false, &[(A, "x")], &[]).raw(
        0,
        "pages.tsv",
        "url\tdigest\nhttp://a.com/\tx\nhttp://a.com/b\tx\textra\n",
    );
    run_fails(
        &c.dir,
        &dir.path().join("out"),
        &[
            "pages.tsv, line 3",
            "wrong number of fields: expected 2",
            "found 3",
        ],
    );
}

#[test]
fn unparsable_page_url_names_the_line() {
    let dir = tempdir();
    let c = Crawl::new(&dir.path().join("in"));
    c.snapshot(0, 0, false, &[(A, "x"), ("not a url", "y")], &[]);
    run_fails(
        &c.dir,
        &dir.path().join("out"),
        &["pages.tsv, line 3", "page URL \"not a url\""],
    );
}

#[test]
fn bad_parquet_cell_names_the_row() {
    use std::sync::Arc;
    let dir = tempdir();
    let c = Crawl::new(&dir.path().join("in"));
    c.snapshot(0, 0, false, &[(A, "x")], &[]);
    let snap = c.dir.join("snapshots/0");
    std::fs::remove_file(snap.join("pages.tsv")).unwrap();
    let urls = arrow_array::StringArray::from(vec![A, B, "mailto:x@y.z"]);
    let schema = Arc::new(arrow_schema::Schema::new(vec![arrow_schema::Field::new(
        "url",
        arrow_schema::DataType::Utf8,
        false,
    )]));
    let batch = arrow_array::RecordBatch::try_new(schema.clone(), vec![Arc::new(urls)]).unwrap();
    let f = std::fs::File::create(snap.join("pages.parquet")).unwrap();
    let mut w = parquet::arrow::ArrowWriter::try_new(f, schema, None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    run_fails(
        &c.dir,
        &dir.path().join("out"),
        &["pages.parquet, row 2", "URL has no host name"],
    );
}

#[test]
fn times_going_backwards() {
    let dir = tempdir();
    let c = Crawl::new(&dir.path().join("in"));
    c.snapshot(0, 5, false, &[(A, "x")], &[])
        .snapshot(1, 2, false, &[(A, "x")], &[]);
    run_fails(
        &c.dir,
        &dir.path().join("out"),
        &["snapshots/1/snapshot.json", "snapshot times must increase"],
    );
}

#[test]
fn unknown_file_in_a_snapshot() {
    let dir = tempdir();
    let c = Crawl::new(&dir.path().join("in"));
    c.snapshot(0, 0, false, &[(A, "x")], &[])
        .raw(0, "pagez.tsv", "url\n");
    run_fails(
        &c.dir,
        &dir.path().join("out"),
        &["pagez.tsv", "unknown file in a snapshot"],
    );
}

#[test]
fn bad_snapshot_json() {
    let dir = tempdir();
    let c = Crawl::new(&dir.path().join("in"));
    c.snapshot(0, 0, false, &[(A, "x")], &[])
        .raw(0, "snapshot.json", "{\"time\": \"soon\"}");
    run_fails(
        &c.dir,
        &dir.path().join("out"),
        &["snapshot.json", "neither unix seconds nor RFC 3339"],
    );
}

#[test]
fn a_snapshot_older_than_the_last_commit_is_refused() {
    let dir = tempdir();
    let c = Crawl::new(&dir.path().join("in"));
    c.snapshot(0, 0, false, &[(A, "x")], &[])
        .snapshot(2, 2, false, &[(A, "x")], &[]);
    let out = dir.path().join("out");
    run_in_process(&c.dir, &out, 1).unwrap();
    c.snapshot(1, 1, false, &[(A, "x")], &[]);
    run_fails(
        &c.dir,
        &out,
        &["snapshots/1", "older than the last committed snapshot 2"],
    );
}

#[test]
fn failed_run_commits_nothing() {
    let dir = tempdir();
    let c = Crawl::new(&dir.path().join("in"));
    c.snapshot(0, 0, false, &[(A, "x"), (B, "y")], &[(A, B)]);
    let out = dir.path().join("out");
    run_in_process(&c.dir, &out, 1).unwrap();
    let before = tables(&out);
    let manifest = std::fs::read(out.join("_manifest.json")).unwrap();
    c.snapshot(1, 1, false, &[(A, "x"), ("http://", "y")], &[]);
    run_fails(&c.dir, &out, &["snapshots/1/pages.tsv, line 3"]);
    assert_eq!(tables(&out), before);
    assert_eq!(std::fs::read(out.join("_manifest.json")).unwrap(), manifest);
    assert!(
        !out.join("_staging").exists(),
        "no staging area is left behind"
    );
}

#[test]
fn odd_rows_are_counted_not_fatal() {
    let dir = tempdir();
    let c = Crawl::new(&dir.path().join("in"));
    c.snapshot(
        0,
        0,
        false,
        &[(A, "x"), (B, "y"), (A, "x")],
        &[
            (A, B),
            (A, B),
            (A, A),
            (A, "mailto:me@a.com"),
            (B, "javascript:void(0)"),
        ],
    );
    let out = dir.path().join("out");
    let s = run_in_process(&c.dir, &out, 2).unwrap();
    let odd = s.odd_rows[&0];
    assert_eq!(
        (
            odd.self_links,
            odd.unparsable_link_urls,
            odd.duplicate_links,
            odd.duplicate_pages
        ),
        (1, 2, 1, 1)
    );
    let snaps = table_rows(&out, "snapshots");
    assert_eq!(snaps.len(), 1);
    // pages_fetched 2, pages_known 2, links 1
    assert!(
        snaps[0].contains("|false|2|2|2|0|0|1|1|0|1|1"),
        "{}",
        snaps[0]
    );
    let manifest = std::fs::read_to_string(out.join("_manifest.json")).unwrap();
    assert!(
        manifest.contains("\"self_links\": 1"),
        "odd rows recorded in the manifest"
    );
}

#[test]
fn bad_trust_weight_names_the_line() {
    let dir = tempdir();
    let c = Crawl::new(&dir.path().join("in"));
    c.snapshot(0, 0, false, &[(A, "x"), (B, "y")], &[(A, B)]);
    std::fs::write(
        c.dir.join("trust.tsv"),
        "url\tweight\nhttp://a.com/\t1\nhttp://a.com/b\t-2\n",
    )
    .unwrap();
    run_fails(
        &c.dir,
        &dir.path().join("out"),
        &[
            "trust.tsv",
            "line 3",
            "weight -2 is not a finite number >= 0",
        ],
    );
    std::fs::write(c.dir.join("trust.tsv"), "url\tweight\nmailto:x@a.com\t1\n").unwrap();
    run_fails(
        &c.dir,
        &dir.path().join("out"),
        &["trust.tsv", "line 2", "trust URL \"mailto:x@a.com\""],
    );
}
