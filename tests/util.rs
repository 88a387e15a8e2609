//! Test helpers: building crawl directories, running webevo, reading tables back.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int32Type, Int64Type, TimestampMicrosecondType};
use arrow_array::Array;
use arrow_schema::DataType;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use webevo::generate::{generate, Preset};
use webevo::job::{Cluster, Job};
use webevo::run::{run, RunRequest, RunSummary};

/// The webevo binary under test.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_webevo"))
}

/// The project root (jobs/, schemas/ live there).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `../shared/data`, if this checkout has it.
pub fn shared_data() -> Option<PathBuf> {
    let p = root().join("../shared/data");
    p.is_dir().then_some(p)
}

pub fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

/// Generates a preset into `dir`.
pub fn generated(preset: Preset, seed: u64, dir: &Path) -> PathBuf {
    generate(preset, seed, dir, &mut |_| {}).expect("generate");
    dir.to_path_buf()
}

/// Runs webevo in this process with `workers` threads and jobs/all.toml.
pub fn run_in_process(input: &Path, output: &Path, workers: usize) -> anyhow::Result<RunSummary> {
    run_in_process_with_job(input, output, workers, &root().join("jobs/all.toml"))
}

/// Runs webevo in this process with `workers` threads and the job file `job`.
pub fn run_in_process_with_job(
    input: &Path,
    output: &Path,
    workers: usize,
    job: &Path,
) -> anyhow::Result<RunSummary> {
    run(&RunRequest {
        input: input.to_path_buf(),
        output: output.to_path_buf(),
        job: Job::load(job).unwrap_or_else(|e| panic!("{}: {e}", job.display())),
        cluster: Cluster::new(workers, 1, 0, None).unwrap(),
        progress: false,
    })
}

/// The demo as `make demo` writes it, built once per test binary and shared by
/// the tests that only read it: (demo-data, demo-out, demo-out-news).
pub fn demo_outputs() -> &'static (PathBuf, PathBuf, PathBuf) {
    static DEMO: std::sync::OnceLock<(PathBuf, PathBuf, PathBuf)> = std::sync::OnceLock::new();
    DEMO.get_or_init(|| {
        // A fixed place under target/, replaced by each test run, so no copy
        // outlives the next run (statics are never dropped).
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("demo-outputs");
        let _ = fs::remove_dir_all(&dir);
        let input = generated(Preset::Demo, 1, &dir.join("demo-data"));
        let out = dir.join("demo-out");
        run_in_process(&input, &out, 2).unwrap();
        let news = dir.join("demo-out-news");
        run_in_process_with_job(
            &input.join("news"),
            &news,
            2,
            &root().join("jobs/echo-eval.toml"),
        )
        .unwrap();
        (input, out, news)
    })
}

/// Runs a Python check script (with `WEBEVO_PYTHON`, else python3) from the
/// project root: its output when it passes, `None` (after saying so) when it
/// exits 3 for a missing package; panics with its output when it fails.
pub fn python_check(args: &[&std::ffi::OsStr]) -> Option<String> {
    let python = std::env::var("WEBEVO_PYTHON").unwrap_or_else(|_| "python3".into());
    let o = Command::new(python)
        .args(args)
        .current_dir(root())
        .output()
        .expect("python3");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    match o.status.code() {
        Some(0) => Some(text),
        Some(3) => {
            eprintln!("skipped: {text}");
            None
        }
        _ => panic!("{text}"),
    }
}

/// Every table's rows and the manifest's committed snapshots: what a failed
/// run must leave exactly as it was.
pub fn committed_state(out: &Path) -> (BTreeMap<String, Vec<String>>, serde_json::Value) {
    let manifest: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(out.join("_manifest.json")).unwrap()).unwrap();
    (tables(out), manifest["snapshots"].clone())
}

/// Runs the binary with `args`, returning its output.
pub fn run_bin(args: &[&str], envs: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(bin());
    cmd.args(args).current_dir(root());
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.output().expect("start webevo")
}

/// Runs `processes` webevo processes of `workers` threads each on loopback and
/// waits for all of them; panics unless every one succeeds.
pub fn run_cluster(input: &Path, output: &Path, processes: usize, workers: usize) {
    run_cluster_with_job(input, output, processes, workers, "jobs/all.toml")
}

/// [`run_cluster`] with the job file `job` (relative to the repository).
pub fn run_cluster_with_job(
    input: &Path,
    output: &Path,
    processes: usize,
    workers: usize,
    job: &str,
) {
    let dir = tempdir();
    let hostfile = dir.path().join("hosts");
    let ports = free_ports(processes);
    let lines: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
    fs::write(&hostfile, lines.join("\n")).unwrap();
    let children: Vec<_> = (0..processes)
        .map(|p| {
            Command::new(bin())
                .args(["run", "-q", "--job", job, "--input"])
                .arg(input)
                .arg("--output")
                .arg(output)
                .args([
                    "-w",
                    &workers.to_string(),
                    "-n",
                    &processes.to_string(),
                    "-p",
                    &p.to_string(),
                ])
                .arg("--hostfile")
                .arg(&hostfile)
                .current_dir(root())
                .spawn()
                .expect("start webevo")
        })
        .collect();
    for (p, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "process {p} failed: {:?}", out.status);
    }
}

/// Ports that were free a moment ago.
pub fn free_ports(n: usize) -> Vec<u16> {
    let listeners: Vec<_> = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    listeners
        .iter()
        .map(|l| l.local_addr().unwrap().port())
        .collect()
}

/// Every committed table of `out` as sorted row strings, keyed by table name.
/// Partition values lead each row (`snapshot=3|...`).
pub fn tables(out: &Path) -> BTreeMap<String, Vec<String>> {
    let mut all = BTreeMap::new();
    for t in webevo::output::schema::TABLES {
        all.insert(t.name.to_string(), table_rows(out, t.name));
    }
    all
}

/// One table's rows as sorted strings.
pub fn table_rows(out: &Path, table: &str) -> Vec<String> {
    let mut rows = Vec::new();
    let dir = out.join(table);
    if dir.exists() {
        collect_rows(&dir, "", &mut rows);
    }
    rows.sort();
    rows
}

fn collect_rows(dir: &Path, prefix: &str, rows: &mut Vec<String>) {
    for path in sorted_entries(dir) {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            collect_rows(&path, &format!("{prefix}{name}|"), rows);
        } else if name.ends_with(".parquet") {
            rows.extend(
                parquet_file_rows(&path)
                    .into_iter()
                    .map(|r| format!("{prefix}{r}")),
            );
        }
    }
}

/// A directory's entries, in name order.
fn sorted_entries(dir: &Path) -> Vec<PathBuf> {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    entries
}

/// The record batches of one Parquet file.
fn record_batches(path: &Path) -> impl Iterator<Item = arrow_array::RecordBatch> {
    let f = fs::File::open(path).unwrap();
    ParquetRecordBatchReaderBuilder::try_new(f)
        .unwrap()
        .build()
        .unwrap()
        .map(|b| b.unwrap())
}

/// The rows of one Parquet file as strings, cells joined by `|`.
pub fn parquet_file_rows(path: &Path) -> Vec<String> {
    let mut rows = Vec::new();
    for batch in record_batches(path) {
        for r in 0..batch.num_rows() {
            // Wall times differ between runs by nature.
            let cells: Vec<String> = batch
                .columns()
                .iter()
                .zip(batch.schema().fields())
                .map(|(c, f)| {
                    if f.name() == "seconds" {
                        "<wall time>".to_string()
                    } else {
                        cell(c.as_ref(), r)
                    }
                })
                .collect();
            rows.push(cells.join("|"));
        }
    }
    rows
}

fn cell(a: &dyn Array, r: usize) -> String {
    if a.is_null(r) {
        return "null".into();
    }
    match a.data_type() {
        DataType::Int64 => a.as_primitive::<Int64Type>().value(r).to_string(),
        DataType::Int32 => a.as_primitive::<Int32Type>().value(r).to_string(),
        DataType::Float64 => format!("{:?}", a.as_primitive::<Float64Type>().value(r)),
        DataType::Utf8 => a.as_string::<i32>().value(r).to_string(),
        DataType::Boolean => a.as_boolean().value(r).to_string(),
        DataType::Timestamp(_, _) => a
            .as_primitive::<TimestampMicrosecondType>()
            .value(r)
            .to_string(),
        other => panic!("unexpected column type {other}"),
    }
}

/// A hand-written crawl directory in TSV.
pub struct Crawl {
    pub dir: PathBuf,
}

impl Crawl {
    pub fn new(dir: &Path) -> Crawl {
        fs::create_dir_all(dir.join("snapshots")).unwrap();
        Crawl {
            dir: dir.to_path_buf(),
        }
    }

    /// Adds snapshot `seq` at `day` days after 2026-01-05; `pages` are
    /// `(url, digest)`, `links` `(src, dst)`.
    pub fn snapshot(
        &self,
        seq: u64,
        day: i64,
        partial: bool,
        pages: &[(&str, &str)],
        links: &[(&str, &str)],
    ) -> &Self {
        let d = self.dir.join("snapshots").join(seq.to_string());
        fs::create_dir_all(&d).unwrap();
        let time = 1_767_571_200 + day * 86_400;
        fs::write(
            d.join("snapshot.json"),
            format!("{{\"time\": \"{time}\", \"partial\": {partial}}}"),
        )
        .unwrap();
        let mut p = String::from("url\tdigest\n");
        for (u, dg) in pages {
            p += &format!("{u}\t{dg}\n");
        }
        fs::write(d.join("pages.tsv"), p).unwrap();
        let mut l = String::from("src\tdst\n");
        for (s, t) in links {
            l += &format!("{s}\t{t}\n");
        }
        fs::write(d.join("links.tsv"), l).unwrap();
        self
    }

    /// Writes a raw file into snapshot `seq`.
    pub fn raw(&self, seq: u64, name: &str, text: &str) -> &Self {
        fs::write(
            self.dir.join("snapshots").join(seq.to_string()).join(name),
            text,
        )
        .unwrap();
        self
    }
}

/// A crawl directory holding only some snapshots of `full` (as symlinks).
pub fn subset(full: &Path, dir: &Path, seqs: impl IntoIterator<Item = u64>) -> PathBuf {
    fs::create_dir_all(dir.join("snapshots")).unwrap();
    for table in ["clicks.parquet", "trust.parquet"] {
        let link = dir.join(table);
        if full.join(table).exists() && !link.exists() {
            std::os::unix::fs::symlink(full.join(table), link).unwrap();
        }
    }
    for s in seqs {
        let link = dir.join("snapshots").join(s.to_string());
        if !link.exists() {
            std::os::unix::fs::symlink(full.join("snapshots").join(s.to_string()), link).unwrap();
        }
    }
    dir.to_path_buf()
}

/// Snapshot numbers of a crawl directory, in order.
pub fn snapshot_seqs(crawl: &Path) -> Vec<u64> {
    let mut seqs: Vec<u64> = fs::read_dir(crawl.join("snapshots"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().parse().unwrap())
        .collect();
    seqs.sort();
    seqs
}

/// A cell read back by column name.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    Null,
    Int(i64),
    Float(f64),
    Str(String),
    Bool(bool),
}

impl Cell {
    pub fn f64(&self) -> Option<f64> {
        match self {
            Cell::Float(v) => Some(*v),
            Cell::Int(v) => Some(*v as f64),
            _ => None,
        }
    }

    pub fn i64(&self) -> Option<i64> {
        match self {
            Cell::Int(v) => Some(*v),
            _ => None,
        }
    }

    pub fn str(&self) -> Option<&str> {
        match self {
            Cell::Str(v) => Some(v),
            _ => None,
        }
    }
}

/// Every row of the Parquet file `path`, or of the files under the directory
/// `path`, as cells by column name; Hive partition directories (`snapshot=3`)
/// add their column as an integer.
pub fn read_cells(path: &Path) -> Vec<BTreeMap<String, Cell>> {
    let mut rows = Vec::new();
    if path.is_file() {
        read_cells_file(path, &BTreeMap::new(), &mut rows);
    } else if path.exists() {
        collect_cells(path, &BTreeMap::new(), &mut rows);
    }
    rows
}

fn collect_cells(
    dir: &Path,
    parts: &BTreeMap<String, Cell>,
    rows: &mut Vec<BTreeMap<String, Cell>>,
) {
    for path in sorted_entries(dir) {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            let mut p = parts.clone();
            if let Some((k, v)) = name.split_once('=') {
                let cell = v
                    .parse()
                    .map(Cell::Int)
                    .unwrap_or_else(|_| Cell::Str(v.to_string()));
                p.insert(k.to_string(), cell);
            }
            collect_cells(&path, &p, rows);
        } else if name.ends_with(".parquet") {
            read_cells_file(&path, parts, rows);
        }
    }
}

fn read_cells_file(
    path: &Path,
    parts: &BTreeMap<String, Cell>,
    rows: &mut Vec<BTreeMap<String, Cell>>,
) {
    for batch in record_batches(path) {
        let schema = batch.schema();
        for r in 0..batch.num_rows() {
            let mut row = parts.clone();
            for (field, col) in schema.fields().iter().zip(batch.columns()) {
                row.insert(field.name().clone(), typed_cell(col.as_ref(), r));
            }
            rows.push(row);
        }
    }
}

fn typed_cell(a: &dyn Array, r: usize) -> Cell {
    if a.is_null(r) {
        return Cell::Null;
    }
    match a.data_type() {
        DataType::Int64 => Cell::Int(a.as_primitive::<Int64Type>().value(r)),
        DataType::Int32 => Cell::Int(i64::from(a.as_primitive::<Int32Type>().value(r))),
        DataType::Float64 => Cell::Float(a.as_primitive::<Float64Type>().value(r)),
        DataType::Utf8 => Cell::Str(a.as_string::<i32>().value(r).to_string()),
        DataType::Boolean => Cell::Bool(a.as_boolean().value(r)),
        DataType::Timestamp(_, _) => {
            Cell::Int(a.as_primitive::<TimestampMicrosecondType>().value(r))
        }
        other => panic!("unexpected column type {other}"),
    }
}
