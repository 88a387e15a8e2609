//! Hostile input: a mutation fuzzer (proptest, bounded so it runs in `make test`)
//! for every parser: URL normalization, crawl-directory TSV tables and
//! snapshot.json, job files, and the importers' GDF, dated links, WARC and
//! Common Crawl host-graph readers. Each target starts from a valid input and
//! applies random edits (nasty tokens inserted, bytes flipped, ranges deleted or
//! repeated, the file cut short); whatever comes out, the parser must not panic,
//! and a rejection must name the file it rejects. `PROPTEST_CASES=5000 cargo test
//! --release --test integration hostile` fuzzes longer; proptest shrinks a
//! failure to a minimal edit list.

use std::fs;
use std::io::Write;
use std::path::Path;

use proptest::prelude::*;
use proptest::test_runner::Config;

use webevo::import::{import, Format, ImportRequest};
use webevo::ingest::crawl_dir::CrawlDir;
use webevo::ingest::table::Share;
use webevo::ingest::url::normalize;
use webevo::ingest::{read_snapshot, OddRows};
use webevo::job::{Job, SiteKey};

use crate::util::*;

/// Cases per target: enough to find the shallow bugs every run, cheap enough
/// for CI (`PROPTEST_CASES` overrides it).
fn config() -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(96);
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

/// Tokens that break naive parsers.
const NASTY: &[&[u8]] = &[
    b"\t",
    b"\n",
    b"\r\n",
    b"\r",
    b"\0",
    b"\xEF\xBB\xBF",
    b"\xff\xfe",
    b"\xc3",
    b"%",
    b"%zz",
    b"..",
    b"/../../",
    b"http://[::1]/",
    b"http://[2001:db8::1]:8080/x",
    b"http://xn--nxasmq6b.com/",
    "http://例え.jp/パス".as_bytes(),
    b"javascript:alert(1)",
    b"http://",
    b"://",
    b"-1",
    b"0",
    b"99999999999999999999999",
    b"1e308",
    b"NaN",
    b"\"",
    b"\"\"",
    b",",
    b";",
    b"#",
    b"[",
    b"{",
    b"}",
    b"=",
    b"WARC/1.0\r\n",
    b"Content-Length: 99999999999\r\n",
    b"Content-Length: -5\r\n",
    b"\r\n\r\n",
    b"\x1f\x8b",
    b"nodedef>",
    b"edgedef>",
    b"2015-13-45",
    b"19700101",
    b"9999-12-31T23:59:59Z",
];

#[derive(Clone, Debug)]
enum Edit {
    Insert(usize, usize),
    Flip(usize, u8),
    Delete(usize, usize),
    Repeat(usize, usize),
    Truncate(usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        4 => (any::<usize>(), 0..NASTY.len()).prop_map(|(p, t)| Edit::Insert(p, t)),
        2 => (any::<usize>(), any::<u8>()).prop_map(|(p, b)| Edit::Flip(p, b)),
        2 => (any::<usize>(), 1usize..64).prop_map(|(p, n)| Edit::Delete(p, n)),
        1 => (any::<usize>(), 1usize..64).prop_map(|(p, n)| Edit::Repeat(p, n)),
        1 => any::<usize>().prop_map(Edit::Truncate),
    ]
}

fn edits() -> impl Strategy<Value = Vec<Edit>> {
    prop::collection::vec(edit(), 0..8)
}

/// `seed` with `edits` applied (positions taken modulo the current length).
fn mutate(seed: &[u8], edits: &[Edit]) -> Vec<u8> {
    let mut v = seed.to_vec();
    for e in edits {
        let at = |p: usize, v: &Vec<u8>| if v.is_empty() { 0 } else { p % (v.len() + 1) };
        match *e {
            Edit::Insert(p, t) => {
                let i = at(p, &v);
                v.splice(i..i, NASTY[t].iter().copied());
            }
            Edit::Flip(p, b) => {
                if !v.is_empty() {
                    let i = p % v.len();
                    v[i] ^= b | 1;
                }
            }
            Edit::Delete(p, n) => {
                let i = at(p, &v);
                let j = (i + n).min(v.len());
                v.drain(i..j);
            }
            Edit::Repeat(p, n) => {
                let i = at(p, &v);
                let j = (i + n).min(v.len());
                let part: Vec<u8> = v[i..j].to_vec();
                v.splice(j..j, part);
            }
            Edit::Truncate(p) => {
                let i = at(p, &v);
                v.truncate(i);
            }
        }
    }
    v
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// A rejection must say which file it rejects.
fn names_file(e: &dyn std::fmt::Display, file: &str) -> Result<(), TestCaseError> {
    let text = e.to_string();
    prop_assert!(
        text.contains(file),
        "the error does not name {file}: {text}"
    );
    Ok(())
}

// ---------------------------------------------------------------------------
// URL normalization.

proptest! {
    #![proptest_config(config())]

    /// Normalizing never panics, the host is a non-empty slice of the URL, and
    /// normalizing a normalized URL changes nothing.
    #[test]
    fn url_normalization_is_total_and_idempotent(
        seed in prop::sample::select(vec![
            "http://a.com/x/../y?q#f", "HTTPS://Ex.COM:443/%7e/", "http://[::1]:80/",
            "http://例え.jp/パス", "http://xn--nxasmq6b.com/", "ftp://a/b", "http://a.com./",
        ]),
        edits in edits(),
    ) {
        let raw = String::from_utf8_lossy(&mutate(seed.as_bytes(), &edits)).into_owned();
        if let Ok(n) = normalize(&raw) {
            prop_assert!(!n.host().is_empty());
            let again = normalize(&n.url).expect("a normalized URL parses");
            prop_assert_eq!(&again, &n);
        }
    }
}

// ---------------------------------------------------------------------------
// Crawl directories: snapshot.json and TSV tables, as `webevo run` reads them.

const PAGES_TSV: &str = "url\tfetch_time\tstatus\tdigest\nhttp://a.com/\t2026-01-05T00:00:00Z\t200\tabc\nhttp://a.com/x\t1767571200\t404\t\nhttp://b.org/y\t\t\td1\n";
const LINKS_TSV: &str = "src\tdst\tcount\nhttp://a.com/\thttp://a.com/x\t2\nhttp://a.com/\thttp://b.org/y\t\nhttp://b.org/y\thttps://c.net/\t1\n";
const SNAPSHOT_JSON: &str = "{\"time\": \"2026-01-05T00:00:00Z\", \"partial\": false}\n";

/// Writes a one-snapshot crawl directory and reads it as every worker of 2 would.
fn read_crawl(
    dir: &Path,
    json: &[u8],
    pages: &[u8],
    links: &[u8],
    gz: bool,
) -> Result<usize, webevo::error::InputError> {
    let snap = dir.join("snapshots/0");
    let _ = fs::remove_dir_all(dir.join("snapshots"));
    fs::create_dir_all(&snap).unwrap();
    fs::write(snap.join("snapshot.json"), json).unwrap();
    if gz {
        fs::write(snap.join("pages.tsv.gz"), gzip(pages)).unwrap();
        fs::write(snap.join("links.tsv.gz"), gzip(links)).unwrap();
    } else {
        fs::write(snap.join("pages.tsv"), pages).unwrap();
        fs::write(snap.join("links.tsv"), links).unwrap();
    }
    let crawl = CrawlDir::open(dir)?;
    let mut records = 0;
    for index in 0..2 {
        let mut odd = OddRows::default();
        read_snapshot(
            &crawl.snapshots[0],
            &Share::dealt(index, 2),
            SiteKey::Host,
            &mut odd,
            &mut |_| records += 1,
        )?;
    }
    Ok(records)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn crawl_directory_tables(
        target in 0..3usize,
        gz in any::<bool>(),
        edits in edits(),
    ) {
        let dir = tempdir();
        let (mut json, mut pages, mut links) =
            (SNAPSHOT_JSON.as_bytes().to_vec(), PAGES_TSV.as_bytes().to_vec(), LINKS_TSV.as_bytes().to_vec());
        let file = match target {
            0 => { json = mutate(&json, &edits); "snapshot.json" }
            1 => { pages = mutate(&pages, &edits); "pages.tsv" }
            _ => { links = mutate(&links, &edits); "links.tsv" }
        };
        if let Err(e) = read_crawl(dir.path(), &json, &pages, &links, gz) {
            names_file(&e, file)?;
        }
    }

    /// A gzip stream cut anywhere is an error naming the file, never a panic or
    /// a silently shorter table.
    #[test]
    fn truncated_gzip_tables(cut in 1usize..200) {
        let dir = tempdir();
        let snap = dir.path().join("snapshots/0");
        fs::create_dir_all(&snap).unwrap();
        fs::write(snap.join("snapshot.json"), SNAPSHOT_JSON).unwrap();
        let z = gzip(PAGES_TSV.as_bytes());
        let cut = cut % z.len();
        fs::write(snap.join("pages.tsv.gz"), &z[..cut]).unwrap();
        let result = CrawlDir::open(dir.path()).and_then(|c| {
            let mut odd = OddRows::default();
            read_snapshot(&c.snapshots[0], &Share::dealt(0, 1), SiteKey::Host, &mut odd, &mut |_| {})
        });
        match result {
            Err(e) => names_file(&e, "pages.tsv.gz")?,
            Ok(_) => prop_assert!(false, "a gzip stream cut at {cut} of {} read as complete", z.len()),
        }
    }
}

// ---------------------------------------------------------------------------
// Job files.

proptest! {
    #![proptest_config(config())]

    #[test]
    fn job_files(edits in edits()) {
        let seed = fs::read(root().join("jobs/all.toml")).unwrap();
        let text = String::from_utf8_lossy(&mutate(&seed, &edits)).into_owned();
        let path = Path::new("jobs/fuzzed.toml");
        if let Err(e) = Job::parse(&text, path) {
            names_file(&e, "fuzzed.toml")?;
        }
    }
}

// ---------------------------------------------------------------------------
// Importers.

const GDF: &str = "nodedef> name VARCHAR\na.ca\nb.org\njoyce.webs,com\nedgedef> source VARCHAR, target VARCHAR, weight DOUBLE, timeint VARCHAR\na.ca,b.org,3.0,20150101\nb.org,joyce.webs,com,1.0,20150201\n";
const DATED: &str = "date\tsrc\tdst\tcount\n200510\tliberal.ca\tconservative.ca\t23\n2015-03-01T00:00:00Z\thttp://a.ca/x\thttp://b.org/\t\n20151231\ta.ca\tb.org\t1\n";

fn warc_seed() -> Vec<u8> {
    let rec = |kind: &str, uri: &str, extra: &str, block: &[u8]| {
        let mut r = format!(
            "WARC/1.0\r\nWARC-Type: {kind}\r\nWARC-Target-URI: {uri}\r\nWARC-Date: 2020-01-06T10:00:00Z\r\n{extra}Content-Length: {}\r\n\r\n",
            block.len()
        )
        .into_bytes();
        r.extend_from_slice(block);
        r.extend_from_slice(b"\r\n\r\n");
        r
    };
    let mut v = rec(
        "response",
        "http://a.com/",
        "",
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n<a href=/x>x</a>\r\n0\r\n\r\n",
    );
    v.extend(rec(
        "revisit",
        "http://a.com/",
        "WARC-Payload-Digest: sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ\r\n",
        b"HTTP/1.1 304 Not Modified\r\n\r\n",
    ));
    v.extend(rec(
        "response",
        "http://a.com/old",
        "",
        b"HTTP/1.1 301 Moved\r\nLocation: /new\r\n\r\n",
    ));
    v
}

/// Imports `bytes` (as file `name`) with `format`; an error must name the file
/// and leave no output behind.
fn import_one(
    format: Format,
    name: &str,
    bytes: &[u8],
    map: Option<&str>,
) -> Result<(), TestCaseError> {
    let dir = tempdir();
    let input = dir.path().join(name);
    let inputs = if format == Format::CcHostgraph {
        fs::create_dir_all(&input).unwrap();
        fs::write(input.join("vertices.txt"), b"0\tcom.a\n1\torg.b\n").unwrap();
        fs::write(input.join("edges.txt"), bytes).unwrap();
        vec![input.clone()]
    } else {
        fs::write(&input, bytes).unwrap();
        vec![input.clone()]
    };
    let snapshot_map = map.map(|m| {
        let p = dir.path().join("map.tsv");
        fs::write(&p, m).unwrap();
        p
    });
    let output = dir.path().join("out");
    let result = import(
        &ImportRequest {
            format,
            inputs,
            output: output.clone(),
            complete: false,
            delimiter: None,
            snapshot_by: None,
            snapshot_map,
        },
        &mut |_| {},
    );
    if let Err(e) = result {
        let text = format!("{e:#}");
        prop_assert!(
            text.contains(name) || text.contains("same time"),
            "the error does not name {name}: {text}"
        );
        prop_assert!(!output.exists(), "a failed import left {output:?}");
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn gdf_files(edits in edits()) {
        import_one(Format::AutGdf, "fuzzed.gdf", &mutate(GDF.as_bytes(), &edits), None)?;
    }

    #[test]
    fn dated_link_files(edits in edits(), gz in any::<bool>()) {
        let bytes = mutate(DATED.as_bytes(), &edits);
        let bytes = if gz { gzip(&bytes) } else { bytes };
        import_one(Format::DatedLinks, "fuzzed.tsv", &bytes, None)?;
    }

    #[test]
    fn warc_files(edits in edits(), gz in any::<bool>()) {
        let bytes = mutate(&warc_seed(), &edits);
        let bytes = if gz { gzip(&bytes) } else { bytes };
        import_one(Format::Warc, "fuzzed.warc", &bytes, None)?;
    }

    #[test]
    fn host_graph_edges(edits in edits()) {
        let bytes = mutate(b"0\t1\n1\t0\n0\t0\n", &edits);
        import_one(Format::CcHostgraph, "release", &bytes, Some("release\t2024-01-01\n"))?;
    }
}
