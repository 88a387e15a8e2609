//! Tests of the generator: determinism, the crawl-directory contract read back from
//! Parquet, and the statistics the analyses rely on.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fs::File;
use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use super::model::Role;
use super::names::Class;
use super::{generate, generate_scaled, simulate, GenerateSummary, Preset};

fn generate_into(preset: Preset, seed: u64, dir: &Path) -> (GenerateSummary, Vec<String>) {
    let mut lines = Vec::new();
    let summary = generate(preset, seed, dir, &mut |line| lines.push(line.to_string())).unwrap();
    (summary, lines)
}

/// All files under `dir`, relative, sorted.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path.strip_prefix(dir).unwrap().to_path_buf());
            }
        }
    }
    out.sort();
    out
}

/// The rows of a Parquet file, column by column, and its row-group sizes.
struct Table {
    batches: Vec<RecordBatch>,
    row_groups: Vec<i64>,
}

impl Table {
    fn read(path: &Path) -> Table {
        let builder = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap()).unwrap();
        let row_groups = builder
            .metadata()
            .row_groups()
            .iter()
            .map(|g| g.num_rows())
            .collect();
        let batches = builder.build().unwrap().map(Result::unwrap).collect();
        Table {
            batches,
            row_groups,
        }
    }

    fn rows(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }

    fn column<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a dyn Array> + 'a {
        self.batches
            .iter()
            .map(move |b| b.column_by_name(name).unwrap().as_ref())
    }

    fn strings(&self, name: &str) -> Vec<Option<String>> {
        self.column(name)
            .flat_map(|a| a.as_string::<i32>().iter().map(|v| v.map(str::to_string)))
            .collect()
    }

    fn ints(&self, name: &str) -> Vec<i64> {
        self.column(name)
            .flat_map(|a| match a.data_type() {
                DataType::Int32 => a
                    .as_primitive::<Int32Type>()
                    .values()
                    .iter()
                    .map(|&v| i64::from(v))
                    .collect::<Vec<_>>(),
                _ => a.as_primitive::<Int64Type>().values().to_vec(),
            })
            .collect()
    }
}

fn host_of(url: &str) -> &str {
    let rest = url.split_once("://").unwrap().1;
    &rest[..rest.find('/').unwrap()]
}

/// One snapshot read back from its directory.
struct Snapshot {
    time: String,
    /// URL → (status, digest).
    pages: BTreeMap<String, (i32, Option<String>)>,
    links: Vec<(String, String, i64)>,
}

fn read_snapshot(dir: &Path) -> Snapshot {
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("snapshot.json")).unwrap()).unwrap();
    assert_eq!(meta["partial"], serde_json::Value::Bool(false));
    let pages = Table::read(&dir.join("pages.parquet"));
    assert!(pages.row_groups.iter().all(|&g| g <= 65_536));
    let digests = pages.strings("digest");
    let status = pages.ints("status");
    let mut by_url = BTreeMap::new();
    for (i, url) in pages.strings("url").into_iter().enumerate() {
        let previous = by_url.insert(url.unwrap(), (status[i] as i32, digests[i].clone()));
        assert!(
            previous.is_none(),
            "duplicate page URL in {}",
            dir.display()
        );
    }
    let links = Table::read(&dir.join("links.parquet"));
    let links = links
        .strings("src")
        .into_iter()
        .zip(links.strings("dst"))
        .zip(links.ints("count"))
        .map(|((s, d), c)| (s.unwrap(), d.unwrap(), c))
        .collect();
    Snapshot {
        time: meta["time"].as_str().unwrap().to_string(),
        pages: by_url,
        links,
    }
}

#[test]
fn same_seed_gives_the_same_bytes() {
    let (a, b, c) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    assert_eq!(
        generate_into(Preset::Tiny, 7, a.path()),
        generate_into(Preset::Tiny, 7, b.path())
    );
    generate_into(Preset::Tiny, 8, c.path());
    let names = files(a.path());
    assert_eq!(names, files(b.path()));
    assert!(names.len() >= 5 * 3 + 1 + 4);
    for name in &names {
        let bytes = std::fs::read(a.path().join(name)).unwrap();
        assert_eq!(
            bytes,
            std::fs::read(b.path().join(name)).unwrap(),
            "{} differs",
            name.display()
        );
    }
    let pages = Path::new("snapshots/0/pages.parquet");
    assert_ne!(
        std::fs::read(a.path().join(pages)).unwrap(),
        std::fs::read(c.path().join(pages)).unwrap()
    );
}

/// `--scale` multiplies hosts and pages: the scaling benchmark's half and
/// double sizes are the same web, smaller or bigger.
#[test]
fn a_scale_multiplies_hosts_and_pages() {
    let runs: Vec<GenerateSummary> = [1.0, 2.0]
        .iter()
        .map(|&scale| {
            let dir = tempfile::tempdir().unwrap();
            generate_scaled(Preset::Demo, scale, 1, dir.path(), true, &mut |_| {}).unwrap()
        })
        .collect();
    for (what, one, two) in [
        ("hosts", runs[0].hosts, runs[1].hosts),
        ("pages", runs[0].pages, runs[1].pages),
        ("links", runs[0].links, runs[1].links),
    ] {
        let ratio = two as f64 / one as f64;
        assert!((1.8..2.2).contains(&ratio), "{what}: {two} / {one}");
    }
    let dir = tempfile::tempdir().unwrap();
    assert!(generate_scaled(Preset::Tiny, 0.0, 1, dir.path(), true, &mut |_| {}).is_err());
}

/// Without the news crawl (`--no-news`) the crawl's own files are the same,
/// byte for byte, and no `news/` is written.
#[test]
fn no_news_leaves_the_crawl_as_it_was() {
    let with = tempfile::tempdir().unwrap();
    let without = tempfile::tempdir().unwrap();
    let a = generate_scaled(Preset::Tiny, 1.0, 3, with.path(), true, &mut |_| {}).unwrap();
    let b = generate_scaled(Preset::Tiny, 1.0, 3, without.path(), false, &mut |_| {}).unwrap();
    assert!(a.news_snapshots > 0 && with.path().join("news").is_dir());
    assert_eq!(
        (b.news_snapshots, b.news_sources, b.news_articles),
        (0, 0, 0)
    );
    assert!(!without.path().join("news").exists());
    assert_eq!(
        (a.snapshots, a.pages, a.links, a.hosts),
        (b.snapshots, b.pages, b.links, b.hosts)
    );
    for seq in 0..a.snapshots {
        for file in ["pages.parquet", "links.parquet", "snapshot.json"] {
            let rel = format!("snapshots/{seq}/{file}");
            assert_eq!(
                std::fs::read(with.path().join(&rel)).unwrap(),
                std::fs::read(without.path().join(&rel)).unwrap(),
                "{rel}"
            );
        }
    }
}

#[test]
fn refuses_a_non_empty_snapshots_directory() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("snapshots/0")).unwrap();
    assert!(generate(Preset::Tiny, 1, dir.path(), &mut |_| {}).is_err());
}

#[test]
fn tiny_preset_has_the_promised_structure() {
    let dir = tempfile::tempdir().unwrap();
    let (summary, lines) = generate_into(Preset::Tiny, 42, dir.path());
    assert_eq!(summary.snapshots, 5);
    assert_eq!(lines.len(), 6);
    assert!(lines[0].starts_with("snapshot 1/5: "), "{}", lines[0]);
    assert!(
        lines[5].starts_with("news crawl: snapshot 36/36"),
        "{}",
        lines[5]
    );
    // The news crawl: 36 partial snapshots every 10 minutes, each fetching every
    // front page of truth/sources, and every article at most once.
    assert_eq!(summary.news_snapshots, 36);
    let news = dir.path().join("news");
    let truth = Table::read(&news.join("truth/sources.parquet"));
    let fronts: BTreeSet<String> = truth.strings("url").into_iter().flatten().collect();
    assert_eq!(fronts.len(), summary.news_sources);
    let mut articles = BTreeSet::new();
    for seq in 0..36 {
        let d = news.join("snapshots").join(seq.to_string());
        let meta = std::fs::read_to_string(d.join("snapshot.json")).unwrap();
        assert!(meta.contains("\"partial\":true"), "{meta}");
        let urls = Table::read(&d.join("pages.parquet")).strings("url");
        let fetched: BTreeSet<String> = urls.into_iter().flatten().collect();
        assert!(
            fronts.is_subset(&fetched),
            "snapshot {seq} fetches every front page"
        );
        for a in fetched.difference(&fronts) {
            assert!(articles.insert(a.clone()), "{a} fetched twice");
        }
    }
    assert!(articles.len() > 10, "articles appear: {}", articles.len());

    let snapshots: Vec<Snapshot> = (0..summary.snapshots)
        .map(|seq| {
            let d = dir.path().join("snapshots").join(seq.to_string());
            for file in ["snapshot.json", "pages.parquet", "links.parquet"] {
                assert!(d.join(file).is_file(), "missing {file} in snapshot {seq}");
            }
            read_snapshot(&d)
        })
        .collect();
    assert_eq!(snapshots[0].time, "2026-01-05T00:00:00Z");
    assert!(snapshots.windows(2).all(|w| w[0].time < w[1].time));
    let page_rows: usize = snapshots.iter().map(|s| s.pages.len()).sum();
    let link_rows: usize = snapshots.iter().map(|s| s.links.len()).sum();
    assert_eq!(
        (summary.pages, summary.links),
        (page_rows as u64, link_rows as u64)
    );
    assert!(
        (100..1_000).contains(&snapshots[0].pages.len()),
        "{} pages",
        snapshots[0].pages.len()
    );

    // Every page URL is already in WHATWG-normalized form (what ingest applies), and
    // so is every link destination except the deliberate mailto:/javascript: rows.
    let normalized = |url: &str| url::Url::parse(url).is_ok_and(|u| u.as_str() == url);
    for s in &snapshots {
        for url in s.pages.keys() {
            assert!(
                url.starts_with("http://") || url.starts_with("https://"),
                "{url}"
            );
            assert!(normalized(url) && !url.contains('#'), "{url}");
        }
        for (_, dst, _) in &s.links {
            let odd = ["mailto:someone@example.com", "javascript:void(0)"].contains(&dst.as_str());
            assert!(odd || normalized(dst), "{dst}");
        }
    }

    let mut seen: HashSet<&str> = HashSet::new();
    let mut hosts_seen: HashSet<&str> = HashSet::new();
    let (mut orphans, mut new_hosts, mut changed, mut unchanged) = (0, 0, 0, 0);
    for (t, s) in snapshots.iter().enumerate() {
        if t > 0 {
            let new: BTreeSet<&str> = s
                .pages
                .keys()
                .map(String::as_str)
                .filter(|u| !seen.contains(u))
                .collect();
            assert!(!new.is_empty(), "no new pages at snapshot {t}");
            orphans += orphan_count(s, &new);
            new_hosts += s
                .pages
                .keys()
                .map(|u| host_of(u))
                .filter(|h| !hosts_seen.contains(h))
                .collect::<HashSet<_>>()
                .len();
            for (url, (status, digest)) in &s.pages {
                if let Some((200, before)) = snapshots[t - 1].pages.get(url) {
                    if *status == 200 {
                        if before == digest {
                            unchanged += 1
                        } else {
                            changed += 1
                        }
                    }
                }
            }
        }
        seen.extend(s.pages.keys().map(String::as_str));
        seen.extend(s.links.iter().map(|(_, d, _)| d.as_str()));
        hosts_seen.extend(s.pages.keys().map(|u| host_of(u)));
    }
    assert!(orphans > 0, "no orphans");
    assert!(new_hosts > 0, "no new hosts");
    assert!(
        changed > 0 && unchanged > 0,
        "changed {changed}, unchanged {unchanged}"
    );

    let all_links = snapshots.iter().flat_map(|s| &s.links);
    let cross = all_links
        .clone()
        .filter(|(s, d, _)| d.contains("://") && host_of(s) != host_of(d))
        .count();
    let share = cross as f64 / link_rows as f64;
    assert!((0.05..0.35).contains(&share), "cross-host share {share}");
    assert!(all_links.clone().any(|(s, d, _)| s == d), "no self-link");
    assert!(
        all_links.clone().any(|(_, d, _)| !d.contains("://")),
        "no mailto: or javascript: link"
    );
    assert!(
        all_links.clone().any(|(_, _, c)| *c > 1),
        "every link occurs once"
    );

    // The truth covers exactly what was crawled.
    let truth = dir.path().join("truth");
    let pages = Table::read(&truth.join("pages.parquet"));
    let truth_urls: HashSet<String> = pages
        .strings("url")
        .into_iter()
        .map(Option::unwrap)
        .collect();
    let crawled: HashSet<String> = snapshots
        .iter()
        .flat_map(|s| s.pages.keys().cloned())
        .collect();
    assert_eq!(truth_urls, crawled);
    assert_eq!(truth_urls.len(), pages.rows());
    let hosts = Table::read(&truth.join("hosts.parquet"));
    let truth_hosts: HashSet<String> = hosts
        .strings("host")
        .into_iter()
        .map(Option::unwrap)
        .collect();
    let crawled_hosts: HashSet<String> = crawled.iter().map(|u| host_of(u).to_string()).collect();
    assert_eq!(truth_hosts, crawled_hosts);
    assert_eq!(summary.hosts as usize, hosts.rows());
    let final_200 = snapshots[4]
        .pages
        .values()
        .filter(|(status, _)| *status == 200)
        .count();
    assert_eq!(
        hosts.ints("pages_final").iter().sum::<i64>() as usize,
        final_200
    );
    assert_eq!(Table::read(&truth.join("snapshots.parquet")).rows(), 5);
    let sources = Table::read(&truth.join("sources.parquet"));
    assert!(sources
        .strings("url")
        .iter()
        .all(|u| truth_urls.contains(u.as_ref().unwrap())));

    let clicks = Table::read(&dir.path().join("clicks.parquet"));
    assert!(clicks.rows() > 0);
    assert!(clicks
        .strings("url")
        .iter()
        .all(|u| truth_urls.contains(u.as_ref().unwrap())));
}

/// New pages of snapshot `s` that no old fetched page of their host reaches through
/// on-host links whose intermediate pages are all new.
fn orphan_count(s: &Snapshot, new: &BTreeSet<&str>) -> usize {
    let mut out: HashMap<&str, Vec<&str>> = HashMap::new();
    for (src, dst, _) in &s.links {
        if dst.contains("://") && host_of(src) == host_of(dst) {
            out.entry(src.as_str()).or_default().push(dst.as_str());
        }
    }
    let mut covered: HashSet<&str> = HashSet::new();
    let mut stack: Vec<&str> = s
        .pages
        .keys()
        .map(String::as_str)
        .filter(|u| !new.contains(u))
        .collect();
    while let Some(page) = stack.pop() {
        for &dst in out.get(page).into_iter().flatten() {
            if new.contains(dst) && covered.insert(dst) {
                stack.push(dst);
            }
        }
    }
    new.iter().filter(|u| !covered.contains(*u)).count()
}

/// Over all intervals in which an article was fetched at both ends, the share whose
/// digest changed must match the mean of `1 - exp(-λτ)` for the articles' true rates.
#[test]
fn demo_change_frequency_follows_true_rates() {
    let mut crawls = Vec::new();
    let run = simulate(Preset::Demo, 1.0, 3, |crawl, _| {
        crawls.push(crawl);
        Ok(())
    })
    .unwrap();
    let digests: Vec<HashMap<u32, u64>> = crawls
        .iter()
        .map(|c| {
            c.pages
                .iter()
                .filter_map(|r| Some((r.page, r.digest?)))
                .collect()
        })
        .collect();
    for class in [
        Class::Com,
        Class::Edu,
        Class::NetOrg,
        Class::Gov,
        Class::Other,
    ] {
        let (mut observed, mut expected, mut intervals) = (0.0, 0.0, 0usize);
        for t in 1..crawls.len() {
            let tau = super::clock::seconds(crawls[t].time - crawls[t - 1].time);
            for (&page, &digest) in &digests[t] {
                let p = &run.web.pages[page as usize];
                if p.role != Role::Article || run.web.hosts[p.host as usize].class != class {
                    continue;
                }
                if let Some(&before) = digests[t - 1].get(&page) {
                    observed += f64::from(u8::from(before != digest));
                    expected += -(-p.lambda * tau).exp_m1();
                    intervals += 1;
                }
            }
        }
        let n = intervals as f64;
        assert!(intervals > 5_000, "{class:?}: {intervals} intervals");
        let (observed, expected) = (observed / n, expected / n);
        assert!(
            (observed - expected).abs() < 0.02,
            "{class:?}: observed {observed:.3}, expected {expected:.3}"
        );
    }
}

/// Times each preset end to end and prints its sizes: `cargo test --release --lib
/// generate::tests::timing -- --ignored --nocapture` (the bench preset writes several GB).
#[test]
#[ignore = "slow: writes the demo and bench presets"]
fn timing() {
    for preset in [Preset::Tiny, Preset::Demo, Preset::Bench] {
        let dir = tempfile::tempdir().unwrap();
        let start = std::time::Instant::now();
        let (summary, lines) = generate_into(preset, 1, dir.path());
        println!(
            "{preset:?}: {:.2} s, {summary:?}",
            start.elapsed().as_secs_f64()
        );
        lines.iter().for_each(|line| println!("  {line}"));
    }
}
