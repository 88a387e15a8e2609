//! Sorting and merging one snapshot's scratch file in bounded memory.
//!
//! The importers append a snapshot's page observations and edges to its scratch
//! file in input order, duplicates and all. Writing the snapshot needs its
//! distinct pages (the latest observation of each) and distinct links (counts
//! summed), sorted. A snapshot may be far larger than memory (a Common Crawl
//! release is one snapshot of billions of edges), so this is an external merge
//! sort: the scratch file is cut into runs of at most `run_bytes`, each run sorted
//! and merged in memory and written out, and the runs are merged in one k-way
//! pass. Memory: one run, plus one line per run during the merge.
//!
//! Run lines are text, tab-separated, keyed by their leading fields:
//! pages `url, observations, fetch_time, status, digest` (empty fields when
//! unobserved) and links `src, dst, count, lines`. Normalized URLs hold no tabs
//! or newlines, and a tab sorts before every URL character, so comparing whole
//! key strings orders `(src, dst)` pairs as tuples.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::error::OutputError;
use crate::model::Micros;

/// Runs of this many scratch bytes are sorted in memory.
pub const RUN_BYTES: usize = 128 << 20;

/// The sorted, merged pages and links of a snapshot, as two run-format files.
pub struct Sorted {
    pub pages: PathBuf,
    pub links: PathBuf,
    /// Whether any page was observed (an `@` line), not only a link source.
    pub observed: bool,
}

/// Which kind of run line.
#[derive(Clone, Copy)]
enum Kind {
    Pages,
    Links,
    /// Any lines, sorted whole (equal lines kept once).
    Whole,
}

impl Kind {
    /// Fields that form the key.
    fn key_fields(self) -> usize {
        match self {
            Kind::Pages => 1,
            Kind::Links => 2,
            Kind::Whole => usize::MAX,
        }
    }
}

/// The key of a run line: its first `n` fields, tabs included.
fn key(line: &str, n: usize) -> &str {
    let mut end = 0;
    for (i, field) in line.split('\t').take(n).enumerate() {
        end += field.len() + usize::from(i > 0);
    }
    &line[..end]
}

/// One line standing for `group` (lines with one key).
fn combine(kind: Kind, group: &[&str]) -> String {
    match kind {
        Kind::Whole => group[0].to_string(),
        Kind::Pages => {
            let mut url = "";
            let mut observations = 0u64;
            // The latest observation stands for the snapshot: compared as
            // (fetch time, status, digest), like the in-memory writer did.
            let mut best: Option<(Micros, Option<i32>, &str, &str, &str)> = None;
            for line in group {
                let f: Vec<&str> = line.split('\t').collect();
                url = f[0];
                let n: u64 = f[1].parse().unwrap_or(0);
                observations += n;
                if n > 0 {
                    let obs = (
                        f[2].parse().unwrap_or(0),
                        f[3].parse().ok(),
                        f[4],
                        f[2],
                        f[3],
                    );
                    if best.is_none_or(|b| (obs.0, obs.1, obs.2) > (b.0, b.1, b.2)) {
                        best = Some(obs);
                    }
                }
            }
            match best {
                Some((_, _, digest, fetch, status)) => {
                    format!("{url}\t{observations}\t{fetch}\t{status}\t{digest}")
                }
                None => format!("{url}\t0\t\t\t"),
            }
        }
        Kind::Links => {
            let mut count = 0i64;
            let mut lines = 0u64;
            let mut k = "";
            for line in group {
                let f: Vec<&str> = line.split('\t').collect();
                k = key(line, 2);
                count = count.saturating_add(f[2].parse().unwrap_or(1));
                lines += f[3].parse::<u64>().unwrap_or(1);
            }
            format!("{k}\t{count}\t{lines}")
        }
    }
}

/// Sorts `lines` by key and writes one combined line per key to `path`.
fn write_run(kind: Kind, lines: &mut [String], path: &Path) -> Result<(), OutputError> {
    let n = kind.key_fields();
    lines.sort_unstable_by(|a, b| key(a, n).cmp(key(b, n)));
    let mut out = BufWriter::new(File::create(path).map_err(|e| OutputError::io(path, e))?);
    let mut i = 0;
    while i < lines.len() {
        let k = key(&lines[i], n);
        let mut j = i + 1;
        while j < lines.len() && key(&lines[j], n) == k {
            j += 1;
        }
        let group: Vec<&str> = lines[i..j].iter().map(String::as_str).collect();
        writeln!(out, "{}", combine(kind, &group)).map_err(|e| OutputError::io(path, e))?;
        i = j;
    }
    out.flush().map_err(|e| OutputError::io(path, e))
}

/// Merges sorted runs into `path`, combining lines with one key.
fn merge_runs(kind: Kind, runs: &[PathBuf], path: &Path) -> Result<(), OutputError> {
    let n = kind.key_fields();
    let mut readers = Vec::with_capacity(runs.len());
    for r in runs {
        let f = File::open(r).map_err(|e| OutputError::io(r, e))?;
        readers.push(BufReader::with_capacity(1 << 16, f).lines());
    }
    let mut current: Vec<Option<String>> = Vec::with_capacity(runs.len());
    let mut heap = BinaryHeap::new();
    for (i, r) in readers.iter_mut().enumerate() {
        let line = r
            .next()
            .transpose()
            .map_err(|e| OutputError::io(&runs[i], e))?;
        if let Some(l) = &line {
            heap.push(Reverse((key(l, n).to_string(), i)));
        }
        current.push(line);
    }
    let mut out = BufWriter::new(File::create(path).map_err(|e| OutputError::io(path, e))?);
    while let Some(Reverse((k, _))) = heap.peek().cloned() {
        // Every run's line with this key (at most one per run: runs are merged).
        let mut group = Vec::new();
        while let Some(Reverse((k2, i))) = heap.peek().cloned() {
            if k2 != k {
                break;
            }
            heap.pop();
            group.push(current[i].take().expect("a line per heap entry"));
            let next = readers[i]
                .next()
                .transpose()
                .map_err(|e| OutputError::io(&runs[i], e))?;
            if let Some(l) = &next {
                heap.push(Reverse((key(l, n).to_string(), i)));
            }
            current[i] = next;
        }
        let refs: Vec<&str> = group.iter().map(String::as_str).collect();
        writeln!(out, "{}", combine(kind, &refs)).map_err(|e| OutputError::io(path, e))?;
    }
    out.flush().map_err(|e| OutputError::io(path, e))
}

/// A scratch file of text lines, for the importers' on-disk joins.
pub struct Scratch {
    path: PathBuf,
    out: BufWriter<File>,
}

impl Scratch {
    pub fn create(path: PathBuf) -> Result<Scratch, OutputError> {
        let out = BufWriter::with_capacity(
            1 << 16,
            File::create(&path).map_err(|e| OutputError::io(&path, e))?,
        );
        Ok(Scratch { path, out })
    }

    pub fn line(&mut self, args: std::fmt::Arguments) -> Result<(), OutputError> {
        self.out
            .write_fmt(args)
            .and_then(|_| self.out.write_all(b"\n"))
            .map_err(|e| OutputError::io(&self.path, e))
    }

    pub fn close(mut self) -> Result<PathBuf, OutputError> {
        self.out
            .flush()
            .map_err(|e| OutputError::io(&self.path, e))?;
        Ok(self.path)
    }
}

/// The lines of a scratch file.
pub fn lines_of(
    path: &Path,
) -> Result<impl Iterator<Item = Result<String, OutputError>> + '_, OutputError> {
    let f = File::open(path).map_err(|e| OutputError::io(path, e))?;
    Ok(BufReader::with_capacity(1 << 16, f)
        .lines()
        .map(move |l| l.map_err(|e| OutputError::io(path, e))))
}

/// Sorts the lines of `input` into `output` in bounded memory (runs of at most
/// `run_bytes` in `work`), keeping equal lines once: for the importers' joins,
/// whose lines start with a fixed-width key and carry a sequence number.
pub fn sort_lines(
    input: &Path,
    output: &Path,
    work: &Path,
    run_bytes: usize,
) -> Result<(), OutputError> {
    let f = File::open(input).map_err(|e| OutputError::io(input, e))?;
    let mut lines = BufReader::with_capacity(1 << 16, f).lines();
    let stem = output.file_name().unwrap_or_default().to_string_lossy();
    let mut runs = Vec::new();
    let mut run = Vec::new();
    let mut bytes = 0usize;
    loop {
        let line = lines
            .next()
            .transpose()
            .map_err(|e| OutputError::io(input, e))?;
        let end = line.is_none();
        if let Some(l) = line {
            bytes += l.len() + 1;
            run.push(l);
        }
        if (end && (!run.is_empty() || runs.is_empty())) || bytes >= run_bytes {
            let path = work.join(format!("{stem}-{}.run", runs.len()));
            write_run(Kind::Whole, &mut run, &path)?;
            runs.push(path);
            run.clear();
            bytes = 0;
        }
        if end {
            break;
        }
    }
    merge_runs(Kind::Whole, &runs, output)?;
    for r in &runs {
        std::fs::remove_file(r).map_err(|e| OutputError::io(r, e))?;
    }
    Ok(())
}

/// Sorts and merges the scratch file `scratch` into `work/pages.sorted` and
/// `work/links.sorted`, in runs of at most `run_bytes`.
///
/// Scratch lines: `@url<TAB>fetch<TAB>status<TAB>digest` (an observation), `src`
/// (a fetched page) or `src<TAB>dst<TAB>count` (an edge from a fetched page).
pub fn sort_scratch(scratch: &Path, work: &Path, run_bytes: usize) -> Result<Sorted, OutputError> {
    let f = File::open(scratch).map_err(|e| OutputError::io(scratch, e))?;
    let mut input = BufReader::with_capacity(1 << 16, f);
    let (mut page_runs, mut link_runs) = (Vec::new(), Vec::new());
    let (mut pages, mut links): (Vec<String>, Vec<String>) = (Vec::new(), Vec::new());
    let mut bytes = 0usize;
    let mut observed = false;
    let mut line = String::new();
    let mut flush = |pages: &mut Vec<String>, links: &mut Vec<String>| -> Result<(), OutputError> {
        let i = page_runs.len();
        let (p, l) = (
            work.join(format!("pages-{i}.run")),
            work.join(format!("links-{i}.run")),
        );
        write_run(Kind::Pages, pages, &p)?;
        write_run(Kind::Links, links, &l)?;
        page_runs.push(p);
        link_runs.push(l);
        pages.clear();
        links.clear();
        Ok(())
    };
    loop {
        line.clear();
        let n = input
            .read_line(&mut line)
            .map_err(|e| OutputError::io(scratch, e))?;
        if n == 0 {
            break;
        }
        let text = line.trim_end_matches('\n');
        if let Some(obs) = text.strip_prefix('@') {
            observed = true;
            let mut f = obs.splitn(4, '\t');
            let (url, fetch, status, digest) = (
                f.next().unwrap_or(""),
                f.next().unwrap_or(""),
                f.next().unwrap_or(""),
                f.next().unwrap_or(""),
            );
            pages.push(format!("{url}\t1\t{fetch}\t{status}\t{digest}"));
        } else {
            let mut f = text.splitn(3, '\t');
            let src = f.next().unwrap_or("");
            pages.push(format!("{src}\t0\t\t\t"));
            if let (Some(dst), Some(count)) = (f.next(), f.next()) {
                links.push(format!("{src}\t{dst}\t{count}\t1"));
            }
        }
        bytes += n;
        if bytes >= run_bytes {
            flush(&mut pages, &mut links)?;
            bytes = 0;
        }
    }
    flush(&mut pages, &mut links)?;
    let sorted = Sorted {
        pages: work.join("pages.sorted"),
        links: work.join("links.sorted"),
        observed,
    };
    merge_runs(Kind::Pages, &page_runs, &sorted.pages)?;
    merge_runs(Kind::Links, &link_runs, &sorted.links)?;
    for r in page_runs.iter().chain(&link_runs) {
        std::fs::remove_file(r).map_err(|e| OutputError::io(r, e))?;
    }
    Ok(sorted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn sorted_text(scratch: &str, run_bytes: usize) -> (String, String) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("scratch.txt");
        std::fs::write(&path, scratch).unwrap();
        let s = sort_scratch(&path, dir.path(), run_bytes).unwrap();
        (
            std::fs::read_to_string(&s.pages).unwrap(),
            std::fs::read_to_string(&s.links).unwrap(),
        )
    }

    #[test]
    fn merges_observations_and_links() {
        let scratch = "@http://b/\t5\t200\td1\nhttp://a/\thttp://b/\t2\n@http://b/\t9\t\td2\nhttp://a/\thttp://b/\t3\nhttp://c/\n@http://b/\t7\t404\t\n";
        let (pages, links) = sorted_text(scratch, 1 << 20);
        assert_eq!(
            pages,
            "http://a/\t0\t\t\t\nhttp://b/\t3\t9\t\td2\nhttp://c/\t0\t\t\t\n"
        );
        assert_eq!(links, "http://a/\thttp://b/\t5\t2\n");
    }

    #[test]
    fn sorting_lines_in_tiny_runs_equals_a_plain_sort() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in.txt");
        let mut lines: Vec<String> = (0..500u64)
            .map(|i| format!("{:016x}\t{i}", (i * 7919) % 97))
            .collect();
        std::fs::write(&input, lines.join("\n") + "\n").unwrap();
        for run_bytes in [1, 100, 1 << 20] {
            let out = dir.path().join("out.txt");
            sort_lines(&input, &out, dir.path(), run_bytes).unwrap();
            lines.sort();
            let got: Vec<String> = std::fs::read_to_string(&out)
                .unwrap()
                .lines()
                .map(str::to_string)
                .collect();
            assert_eq!(got, lines, "runs of {run_bytes} bytes");
        }
        let empty = dir.path().join("empty.txt");
        std::fs::write(&empty, "").unwrap();
        sort_lines(&empty, &dir.path().join("e.out"), dir.path(), 10).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("e.out")).unwrap(),
            ""
        );
    }

    #[test]
    fn tiny_runs_give_the_same_result_as_one_run() {
        let mut rng = rand_pcg::Pcg64::seed_from_u64(7);
        let mut scratch = String::new();
        for _ in 0..2000 {
            let a = rng.random_range(0..40);
            let b = rng.random_range(0..40);
            match rng.random_range(0..3) {
                0 => scratch.push_str(&format!(
                    "@http://h{a}/\t{}\t{}\td{}\n",
                    rng.random_range(0..5),
                    200 + rng.random_range(0..2),
                    rng.random_range(0..3)
                )),
                1 => scratch.push_str(&format!("http://h{a}/\n")),
                _ => scratch.push_str(&format!(
                    "http://h{a}/\thttp://h{b}/x\t{}\n",
                    rng.random_range(1..4)
                )),
            }
        }
        let one = sorted_text(&scratch, usize::MAX);
        for run_bytes in [1, 100, 5000] {
            assert_eq!(
                sorted_text(&scratch, run_bytes),
                one,
                "runs of {run_bytes} bytes"
            );
        }
        // The one-run result against a plain in-memory reference.
        let mut want = std::collections::BTreeMap::<String, (i64, u64)>::new();
        for line in scratch.lines().filter(|l| !l.starts_with('@')) {
            let f: Vec<&str> = line.split('\t').collect();
            if f.len() == 3 {
                let e = want.entry(format!("{}\t{}", f[0], f[1])).or_default();
                e.0 += f[2].parse::<i64>().unwrap();
                e.1 += 1;
            }
        }
        let want: String = want
            .iter()
            .map(|(k, (c, n))| format!("{k}\t{c}\t{n}\n"))
            .collect();
        assert_eq!(one.1, want);
    }
}
