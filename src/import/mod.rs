//! `webevo import`: turning link data from other tools into a crawl directory.
//!
//! Two input formats, one per module: the Archives Unleashed toolkit's Gephi GDF
//! host graphs ([`gdf`]) and long, dated link tables ([`dated_links`]). Both become
//! edges `(date, source page, destination page, count)`; every distinct date is one
//! snapshot, whose fetched pages are the sources of its edges and whose links are
//! its edges.
//!
//! The input is streamed once: each edge is appended to a scratch file of its date
//! (through a per-date buffer, under a global memory budget), so memory does not
//! grow with the input. Each snapshot is then finalized on its own by an external
//! merge sort ([`snapshot_sort`]): sorted, duplicates merged (counts summed),
//! streamed into Parquet.
//! Everything is written into `OUT.tmp-<pid>` and renamed to `OUT` at the end, so a
//! failed import leaves no crawl directory behind.

pub mod cc_hostgraph;
pub mod dated_links;
pub mod gdf;
pub mod html_links;
pub mod http;
mod snapshot_sort;
pub mod warc;

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

use crate::error::{InputError, OutputError, Position};
use crate::ingest::url::normalize;
use crate::model::Micros;

/// The input formats `webevo import` reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Archives Unleashed "Gephi GDF" host graphs (see [`gdf`]).
    AutGdf,
    /// `date, src, dst[, count]` rows, TSV or CSV, optionally gzipped (see [`dated_links`]).
    DatedLinks,
    /// WARC files, `.warc` or `.warc.gz` (see [`warc`]).
    Warc,
    /// Common Crawl host-graph releases, one directory each (see [`cc_hostgraph`]).
    CcHostgraph,
}

/// How WARC records are grouped into snapshots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SnapshotBy {
    /// Each input file is one snapshot.
    File,
    /// Records by the UTC day of their `WARC-Date`.
    Day,
    /// Records by the ISO week (Monday to Sunday, UTC) of their `WARC-Date`.
    Week,
}

/// The field separator of a dated-links file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delimiter {
    Tab,
    Comma,
}

/// What to import and where.
#[derive(Clone, Debug)]
pub struct ImportRequest {
    pub format: Format,
    /// Input files, read in order; their edges are merged by date.
    pub inputs: Vec<PathBuf>,
    /// The crawl directory to create; must be absent or empty.
    pub output: PathBuf,
    /// Mark every snapshot complete (full) rather than partial.
    pub complete: bool,
    /// Dated links only: the separator (default: by file extension).
    pub delimiter: Option<Delimiter>,
    /// WARC only: the grouping rule (default: one snapshot per file).
    pub snapshot_by: Option<SnapshotBy>,
    /// WARC and cc-hostgraph: a file of `input<TAB>time` lines giving each input's
    /// snapshot time; inputs with the same time form one snapshot.
    pub snapshot_map: Option<PathBuf>,
}

/// Edges or rows left out of the crawl directory, by reason.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Skipped {
    /// Edges whose source is not a usable host name or URL (the edge is dropped).
    pub invalid_sources: u64,
    /// Edges whose destination is not a usable host name or URL (the source still
    /// counts as fetched).
    pub invalid_destinations: u64,
    /// Edges from a page to itself (the source still counts as fetched).
    pub self_links: u64,
    /// Edges repeating a `(src, dst)` pair of the same snapshot, merged into it
    /// (counts summed).
    pub duplicate_links: u64,
    /// Distinct dates none of whose edges had a usable source: no snapshot.
    pub dates_without_pages: u64,
    /// Observations of a page repeated within one snapshot (the latest is kept).
    pub repeated_observations: u64,
}

impl Skipped {
    /// Non-zero counts as `"3 self-links, 1 invalid source"` text, or `None`.
    pub fn describe(&self) -> Option<String> {
        let parts: Vec<String> = [
            (self.invalid_sources, "edges with an invalid source"),
            (
                self.invalid_destinations,
                "edges with an invalid destination",
            ),
            (self.self_links, "self-links"),
            (self.duplicate_links, "duplicate links merged"),
            (self.dates_without_pages, "dates without a valid edge"),
            (
                self.repeated_observations,
                "repeated observations of a page in one snapshot (the latest kept)",
            ),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
        (!parts.is_empty()).then(|| parts.join(", "))
    }
}

/// One snapshot written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotWritten {
    pub seq: u64,
    pub time: Micros,
    /// Distinct fetched pages (the sources of the date's edges).
    pub pages: u64,
    /// Distinct `(src, dst)` links.
    pub links: u64,
}

/// What an import did.
#[derive(Clone, Debug, Default)]
pub struct ImportSummary {
    pub files: usize,
    /// Lines read, all files together (headers included).
    pub lines: u64,
    /// Edge (data) lines read.
    pub edges: u64,
    pub snapshots: Vec<SnapshotWritten>,
    pub skipped: Skipped,
    /// WARC imports: what the records held.
    pub warc: Option<warc::WarcCounts>,
}

impl ImportSummary {
    pub fn pages(&self) -> u64 {
        self.snapshots.iter().map(|s| s.pages).sum()
    }

    pub fn links(&self) -> u64 {
        self.snapshots.iter().map(|s| s.links).sum()
    }
}

/// Imports `req.inputs` into a new crawl directory `req.output`. `progress` gets
/// occasional lines about long inputs.
pub fn import(
    req: &ImportRequest,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<ImportSummary> {
    if req.inputs.is_empty() {
        return Err(crate::error::JobError::Setting("no input file given".into()).into());
    }
    let setting = |m: &str| -> anyhow::Result<ImportSummary> {
        Err(crate::error::JobError::Setting(m.into()).into())
    };
    if req.delimiter.is_some() && req.format != Format::DatedLinks {
        return setting("--delimiter applies to --format dated-links only");
    }
    if req.snapshot_by.is_some() && req.format != Format::Warc {
        return setting("--snapshot-by applies to --format warc only");
    }
    if req.snapshot_by.is_some() && req.snapshot_map.is_some() {
        return setting("give --snapshot-by or --snapshot-map, not both");
    }
    if req.snapshot_map.is_some() && !matches!(req.format, Format::Warc | Format::CcHostgraph) {
        return setting("--snapshot-map applies to --format warc and cc-hostgraph only");
    }
    if req.format == Format::CcHostgraph && req.snapshot_map.is_none() {
        return setting(
            "--format cc-hostgraph needs --snapshot-map: a file of `RELEASE_DIR<TAB>DATE` lines giving each release's date",
        );
    }
    check_output(&req.output)?;
    let staging = staging_path(&req.output);
    if staging.exists() {
        std::fs::remove_dir_all(&staging).map_err(|e| OutputError::io(&staging, e))?;
    }
    std::fs::create_dir_all(&staging).map_err(|e| OutputError::io(&staging, e))?;
    let result = import_into(req, &staging, progress);
    match result {
        Ok(summary) => {
            if let Err(e) = publish(&staging, &req.output) {
                let _ = std::fs::remove_dir_all(&staging);
                return Err(e.into());
            }
            Ok(summary)
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&staging);
            Err(e)
        }
    }
}

/// Refuses an output that exists and is not an empty directory.
fn check_output(output: &Path) -> Result<(), OutputError> {
    let conflict = |problem: &str| OutputError::Conflict {
        path: output.to_path_buf(),
        problem: problem.to_string(),
    };
    match std::fs::symlink_metadata(output) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(OutputError::io(output, e)),
        Ok(m) if !m.is_dir() => Err(conflict(
            "exists and is not a directory; import writes a new crawl directory",
        )),
        Ok(_) => {
            let mut entries = std::fs::read_dir(output).map_err(|e| OutputError::io(output, e))?;
            if entries.next().is_some() {
                Err(conflict(
                    "exists and is not empty; import writes a new crawl directory (remove it or choose another --output)",
                ))
            } else {
                Ok(())
            }
        }
    }
}

/// `OUT.tmp-<pid>`, beside `OUT`.
fn staging_path(output: &Path) -> PathBuf {
    let name = output
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "crawl".into());
    let mut p = output.to_path_buf();
    p.set_file_name(format!("{name}.tmp-{}", std::process::id()));
    p
}

/// Moves the finished staging directory to `output`.
fn publish(staging: &Path, output: &Path) -> Result<(), OutputError> {
    // An empty output directory may exist (checked at the start); rename cannot
    // replace it portably, so it goes first. A non-empty one makes rename fail.
    if output.is_dir() {
        std::fs::remove_dir(output).map_err(|e| OutputError::io(output, e))?;
    }
    std::fs::rename(staging, output).map_err(|e| OutputError::io(output, e))
}

fn import_into(
    req: &ImportRequest,
    root: &Path,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<ImportSummary> {
    let mut writer = CrawlWriter::new(root)?;
    let mut summary = ImportSummary {
        files: req.inputs.len(),
        ..ImportSummary::default()
    };
    let map = match &req.snapshot_map {
        Some(p) => Some(SnapshotMap::read(p)?),
        None => None,
    };
    let mapped = |path: &Path| -> Result<Micros, InputError> {
        let map = map.as_ref().expect("checked");
        map.time_of(path)
    };
    match req.format {
        Format::Warc => {
            let mut state = warc::WarcState::new(&writer.scratch)?;
            for (i, path) in req.inputs.iter().enumerate() {
                let of = match (req.snapshot_by, &map) {
                    (_, Some(_)) => warc::SnapshotOf::Fixed(mapped(path)?),
                    (None | Some(SnapshotBy::File), None) => warc::SnapshotOf::Fixed(i as Micros),
                    (Some(SnapshotBy::Day), None) => warc::SnapshotOf::Day,
                    (Some(SnapshotBy::Week), None) => warc::SnapshotOf::Week,
                };
                warc::read(path, of, &mut state, &mut writer, progress)?;
            }
            state.finish(&mut writer)?;
            let times = if map.is_some() {
                SnapshotTimes::Keys
            } else {
                SnapshotTimes::LatestFetch
            };
            summary.warc = Some(state.counts);
            return finish_import(req, root, writer, summary, times, progress);
        }
        Format::CcHostgraph => {
            for path in &req.inputs {
                let time = mapped(path)?;
                summary.lines += cc_hostgraph::read(path, time, &mut writer, progress)?;
            }
            return finish_import(req, root, writer, summary, SnapshotTimes::Keys, progress);
        }
        Format::AutGdf | Format::DatedLinks => {}
    }
    for path in &req.inputs {
        let mut lines = LineReader::open(path, progress)?;
        match req.format {
            Format::AutGdf => gdf::read(&mut lines, &mut writer)?,
            Format::Warc | Format::CcHostgraph => unreachable!("read above"),
            Format::DatedLinks => {
                let delimiter = req
                    .delimiter
                    .unwrap_or_else(|| dated_links::delimiter_for(path));
                dated_links::read(&mut lines, delimiter, &mut writer)?
            }
        }
        summary.lines += lines.line_no;
    }
    finish_import(req, root, writer, summary, SnapshotTimes::Keys, progress)
}

fn finish_import(
    req: &ImportRequest,
    root: &Path,
    writer: CrawlWriter,
    mut summary: ImportSummary,
    times: SnapshotTimes,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<ImportSummary> {
    summary.edges = writer.edges;
    if writer.dates.is_empty() {
        let what = match req.format {
            Format::Warc => {
                "page observation (a response, revisit or resource record of an http(s) URL)"
            }
            _ => "edge with a usable source",
        };
        let files = match req.inputs.len() {
            1 => "the input holds".to_string(),
            n => format!("none of the {n} inputs holds"),
        };
        return Err(InputError::file(
            &req.inputs[0],
            format!("nothing to import: {files} a {what}"),
        )
        .into());
    }
    let (snapshots, skipped) = writer.finish(root, req.complete, times, progress)?;
    summary.snapshots = snapshots;
    summary.skipped = skipped;
    // What `webevo run` checks first: it must accept what was written.
    crate::ingest::crawl_dir::CrawlDir::open(root)?;
    Ok(summary)
}

/// `--snapshot-map`: each input's snapshot time, from `input<TAB>time` lines
/// (an input named by its path as given or by its file name; `#` comments).
pub struct SnapshotMap {
    path: PathBuf,
    times: Vec<(String, Micros)>,
}

impl SnapshotMap {
    pub fn read(path: &Path) -> Result<Self, InputError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| InputError::file(path, format!("cannot read: {e}")))?;
        let mut times = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let at = Position::Line(i as u64 + 1);
            let (name, time) = line.rsplit_once('\t').ok_or_else(|| {
                InputError::at(
                    path,
                    at,
                    "expected `input<TAB>time` (a file or directory, a tab, a date)",
                )
            })?;
            let time = parse_date(time).map_err(|p| InputError::at(path, at, p))?;
            times.push((name.trim().to_string(), time));
        }
        Ok(SnapshotMap {
            path: path.to_path_buf(),
            times,
        })
    }

    /// The time of `input`: the line naming it by its path, else by its file name.
    pub fn time_of(&self, input: &Path) -> Result<Micros, InputError> {
        let full = input.to_string_lossy();
        let trimmed = full.trim_end_matches('/');
        let name = input.file_name().map(|n| n.to_string_lossy());
        self.times
            .iter()
            .find(|(n, _)| n.trim_end_matches('/') == trimmed)
            .or_else(|| {
                self.times
                    .iter()
                    .find(|(n, _)| name.as_deref() == Some(n.trim_end_matches('/')))
            })
            .map(|(_, t)| *t)
            .ok_or_else(|| {
                InputError::file(
                    &self.path,
                    format!(
                        "no line gives the snapshot time of input {}",
                        input.display()
                    ),
                )
            })
    }
}

/// How the writer dates the snapshots it collected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SnapshotTimes {
    /// The key of each snapshot is its time.
    Keys,
    /// Each snapshot's time is the latest fetch time of its observations; the
    /// keys only group them.
    LatestFetch,
}

/// Opens an input file, decompressing it if it starts with gzip's magic bytes.
pub fn open_input(path: &Path) -> Result<Box<dyn BufRead>, InputError> {
    let cannot = |e: std::io::Error| InputError::file(path, format!("cannot read: {e}"));
    let file = File::open(path).map_err(cannot)?;
    let mut raw = BufReader::with_capacity(1 << 16, file);
    let head = raw.fill_buf().map_err(cannot)?;
    Ok(if head.starts_with(&[0x1f, 0x8b]) {
        Box::new(BufReader::with_capacity(
            1 << 16,
            flate2::bufread::MultiGzDecoder::new(raw),
        ))
    } else {
        Box::new(raw)
    })
}

// ---------------------------------------------------------------------------
// Reading input lines.

/// Lines of one input file (gzip detected by its magic bytes), with the line
/// number for errors and a progress report every few seconds.
pub struct LineReader<'p> {
    path: PathBuf,
    reader: Box<dyn BufRead>,
    buf: Vec<u8>,
    /// The 1-based number of the line last returned.
    line_no: u64,
    progress: &'p mut dyn FnMut(&str),
    started: Instant,
    next_report: Instant,
}

pub(crate) const REPORT_EVERY: Duration = Duration::from_secs(2);

impl<'p> LineReader<'p> {
    pub fn open(path: &Path, progress: &'p mut dyn FnMut(&str)) -> Result<Self, InputError> {
        Ok(Self::new(path, open_input(path)?, progress))
    }

    /// Lines of `reader`, named `path` in messages.
    pub fn new(path: &Path, reader: Box<dyn BufRead>, progress: &'p mut dyn FnMut(&str)) -> Self {
        let now = Instant::now();
        LineReader {
            path: path.to_path_buf(),
            reader,
            buf: Vec::new(),
            line_no: 0,
            progress,
            started: now,
            next_report: now + REPORT_EVERY,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The next line without its terminator, with its 1-based number; `None` at
    /// the end of the file.
    pub fn next_line(&mut self) -> Result<Option<(u64, &str)>, InputError> {
        self.buf.clear();
        let at = self.line_no + 1;
        let n = self.reader.read_until(b'\n', &mut self.buf).map_err(|e| {
            InputError::at(&self.path, Position::Line(at), format!("cannot read: {e}"))
        })?;
        if n == 0 {
            return Ok(None);
        }
        self.line_no = at;
        if at.is_multiple_of(4096) {
            let now = Instant::now();
            if now >= self.next_report {
                self.next_report = now + REPORT_EVERY;
                (self.progress)(&format!(
                    "import: {}: {} lines read ({:.0} s)",
                    self.path.display(),
                    at,
                    self.started.elapsed().as_secs_f64()
                ));
            }
        }
        while matches!(self.buf.last(), Some(b'\n' | b'\r')) {
            self.buf.pop();
        }
        let text = std::str::from_utf8(&self.buf).map_err(|_| {
            InputError::at(&self.path, Position::Line(at), "line is not valid UTF-8")
        })?;
        Ok(Some((at, text)))
    }
}

/// An error at line `line` of `path`.
pub fn line_error(path: &Path, line: u64, problem: impl Into<String>) -> InputError {
    InputError::at(path, Position::Line(line), problem)
}

// ---------------------------------------------------------------------------
// Dates and URLs.

/// Parses an input date: `YYYYMMDD`, `YYYYMM` (the first of the month),
/// `YYYY-MM-DD`, `YYYY-MM` (midnight UTC) or RFC 3339, into microseconds.
pub fn parse_date(text: &str) -> Result<Micros, String> {
    let s = text.trim();
    let bad = || {
        format!("bad date {s:?}: expected YYYYMMDD, YYYYMM or RFC 3339 (like 2015-03-01T00:00:00Z)")
    };
    let digits = |r: std::ops::Range<usize>| -> Option<u32> {
        let part = s.get(r)?;
        part.bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| part.parse().ok())?
    };
    let ymd = match s.len() {
        8 => (digits(0..4), digits(4..6), digits(6..8)),
        6 => (digits(0..4), digits(4..6), Some(1)),
        10 if s.as_bytes()[4] == b'-' && s.as_bytes()[7] == b'-' => {
            (digits(0..4), digits(5..7), digits(8..10))
        }
        7 if s.as_bytes()[4] == b'-' => (digits(0..4), digits(5..7), Some(1)),
        _ => {
            return chrono::DateTime::parse_from_rfc3339(s)
                .map(|t| t.timestamp_micros())
                .map_err(|_| bad())
        }
    };
    let (Some(y), Some(m), Some(d)) = ymd else {
        return Err(bad());
    };
    chrono::NaiveDate::from_ymd_opt(y as i32, m, d)
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc().timestamp_micros())
        .ok_or_else(bad)
}

/// Formats microseconds as RFC 3339 UTC.
pub fn format_date(t: Micros) -> String {
    chrono::DateTime::from_timestamp_micros(t)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true))
        .unwrap_or_else(|| t.to_string())
}

/// The normalized page of a host name, `http://HOST/`; `None` if `host` is not a
/// plain host name (it has a path, a user, spaces, or does not parse).
pub fn host_page(host: &str) -> Option<String> {
    let host = host.trim();
    if host.is_empty() || host.contains(['/', '?', '#', '@', '\\']) {
        return None;
    }
    let n = normalize(&format!("http://{host}/")).ok()?;
    // Only a port may follow the host: anything else means the name was not a host.
    let rest = &n.url[n.host_end as usize..];
    let port_ok = rest == "/"
        || rest
            .strip_prefix(':')
            .and_then(|r| r.strip_suffix('/'))
            .is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    (n.url[..n.host_start as usize] == *"http://" && port_ok).then_some(n.url)
}

/// The normalized page of `text`: a full URL (it has `://`) as is, anything else
/// as a host name ([`host_page`]). `None` if it cannot be a page.
pub fn page_url(text: &str) -> Option<String> {
    let text = text.trim();
    if text.contains("://") {
        normalize(text).ok().map(|n| n.url)
    } else {
        host_page(text)
    }
}

/// A cache of normalized endpoints: link data repeats the same few hosts on every
/// line. Bounded: cleared when it grows past `CAP` entries.
#[derive(Default)]
pub struct UrlCache {
    seen: HashMap<String, Option<Arc<str>>, foldhash::fast::FixedState>,
}

impl UrlCache {
    const CAP: usize = 1 << 18;

    /// `convert(raw)`, computed once per distinct `raw` while it stays cached.
    pub fn get(&mut self, raw: &str, convert: impl Fn(&str) -> Option<String>) -> Option<Arc<str>> {
        if let Some(v) = self.seen.get(raw) {
            return v.clone();
        }
        if self.seen.len() >= Self::CAP {
            self.seen.clear();
        }
        let v: Option<Arc<str>> = convert(raw).map(Arc::from);
        self.seen.insert(raw.to_string(), v.clone());
        v
    }
}

// ---------------------------------------------------------------------------
// The crawl-directory writer.

/// A date's buffered edges go to its scratch file when they reach this size...
const FLUSH_DATE: usize = 1 << 16;
/// ...and every date's do when all buffers together reach this size.
const FLUSH_ALL: usize = 64 << 20;
/// Rows per Parquet row group (a worker reads whole row groups).
const ROW_GROUP: usize = 1 << 17;

/// Collects edges by date into scratch files and finally writes the snapshots.
///
/// Each date buffers its edges in memory and appends them to its scratch file
/// (opened, written, closed) when the buffer fills, so no file handles are held
/// however many dates there are, and memory stays under [`FLUSH_ALL`] plus one
/// buffer.
pub struct CrawlWriter {
    scratch: PathBuf,
    dates: HashMap<Micros, DateFile>,
    /// Every date seen, usable or not.
    seen_dates: HashSet<Micros>,
    buffered: usize,
    edges: u64,
    skipped: Skipped,
}

impl CrawlWriter {
    /// Where importers keep their scratch files (removed with the import's staging).
    pub fn scratch_dir(&self) -> &Path {
        &self.scratch
    }
}

struct DateFile {
    path: PathBuf,
    buf: Vec<u8>,
    /// The latest fetch time of the date's page observations.
    latest_fetch: Option<Micros>,
}

impl DateFile {
    fn flush(&mut self) -> Result<(), OutputError> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .map_err(|e| OutputError::io(&self.path, e))?;
        f.write_all(&self.buf)
            .map_err(|e| OutputError::io(&self.path, e))?;
        self.buf.clear();
        Ok(())
    }
}

impl CrawlWriter {
    fn new(root: &Path) -> Result<Self, OutputError> {
        let scratch = root.join(".import-scratch");
        std::fs::create_dir_all(&scratch).map_err(|e| OutputError::io(&scratch, e))?;
        Ok(CrawlWriter {
            scratch,
            dates: HashMap::new(),
            seen_dates: HashSet::new(),
            buffered: 0,
            edges: 0,
            skipped: Skipped::default(),
        })
    }

    /// The scratch file of snapshot `key`, created on first use.
    fn date_file(&mut self, key: Micros) -> &mut DateFile {
        let n = self.dates.len();
        let scratch = &self.scratch;
        self.dates.entry(key).or_insert_with(|| DateFile {
            path: scratch.join(format!("{n}.txt")),
            buf: Vec::new(),
            latest_fetch: None,
        })
    }

    /// Accounts for `added` bytes buffered for `key`, flushing as the limits say.
    fn buffered(&mut self, key: Micros, added: usize) -> Result<(), OutputError> {
        self.buffered += added;
        let d = self.dates.get_mut(&key).expect("just written");
        if d.buf.len() >= FLUSH_DATE {
            self.buffered -= d.buf.len();
            d.flush()?;
        }
        if self.buffered >= FLUSH_ALL {
            for d in self.dates.values_mut() {
                d.flush()?;
            }
            self.buffered = 0;
        }
        Ok(())
    }

    /// Records one observation of page `url` (normalized) in snapshot `key`:
    /// fetched at `fetch_time` with this status and payload digest.
    pub fn page(
        &mut self,
        key: Micros,
        url: &str,
        fetch_time: Micros,
        status: Option<u16>,
        digest: Option<&str>,
    ) -> Result<(), OutputError> {
        self.seen_dates.insert(key);
        let d = self.date_file(key);
        d.latest_fetch = Some(d.latest_fetch.map_or(fetch_time, |t| t.max(fetch_time)));
        let before = d.buf.len();
        // `@` marks an observation: normalized URLs start with their scheme.
        // Tabs and newlines cannot occur in a digest the way we write it.
        let digest = digest.unwrap_or("").replace(['\t', '\n', '\r'], " ");
        let status = status.map(|s| s.to_string()).unwrap_or_default();
        writeln!(d.buf, "@{url}\t{fetch_time}\t{status}\t{digest}").expect("in memory");
        let added = d.buf.len() - before;
        self.buffered(key, added)
    }

    /// Records one edge of the snapshot at `time`. `src` and `dst` are normalized
    /// page URLs, `None` when the input's text could not be one. The source is a
    /// fetched page of the snapshot whenever it is usable.
    pub fn edge(
        &mut self,
        time: Micros,
        src: Option<&str>,
        dst: Option<&str>,
        count: u64,
    ) -> Result<(), OutputError> {
        self.edges += 1;
        self.seen_dates.insert(time);
        let Some(src) = src else {
            self.skipped.invalid_sources += 1;
            return Ok(());
        };
        let dst = match dst {
            None => {
                self.skipped.invalid_destinations += 1;
                None
            }
            Some(dst) if dst == src => {
                self.skipped.self_links += 1;
                None
            }
            Some(dst) => Some(dst),
        };
        let d = self.date_file(time);
        let before = d.buf.len();
        d.buf.extend_from_slice(src.as_bytes());
        if let Some(dst) = dst {
            d.buf.push(b'\t');
            d.buf.extend_from_slice(dst.as_bytes());
            d.buf.push(b'\t');
            d.buf.extend_from_slice(count.to_string().as_bytes());
        }
        d.buf.push(b'\n');
        let added = d.buf.len() - before;
        self.buffered(time, added)
    }

    /// Writes every snapshot under `root/snapshots/` in date order and removes the
    /// scratch files.
    fn finish(
        mut self,
        root: &Path,
        complete: bool,
        rule: SnapshotTimes,
        progress: &mut dyn FnMut(&str),
    ) -> anyhow::Result<(Vec<SnapshotWritten>, Skipped)> {
        // (time, key) of every snapshot, in time order.
        let mut times: Vec<(Micros, Micros)> = self
            .dates
            .iter()
            .map(|(&key, d)| match rule {
                SnapshotTimes::Keys => (key, key),
                SnapshotTimes::LatestFetch => (d.latest_fetch.unwrap_or(key), key),
            })
            .collect();
        times.sort_unstable();
        if let Some(w) = times.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(crate::error::JobError::Setting(format!(
                "two snapshots would have the same time {} (the latest fetch time of their records); group the inputs with --snapshot-by day or week, or date them with --snapshot-map",
                format_date(w[0].0)
            ))
            .into());
        }
        self.skipped.dates_without_pages = (self.seen_dates.len() - times.len()) as u64;
        let started = Instant::now();
        let mut next_report = started + REPORT_EVERY;
        let mut written = Vec::with_capacity(times.len());
        for (seq, (time, key)) in times.iter().enumerate() {
            let mut d = self.dates.remove(key).expect("listed");
            d.flush()?;
            let dir = root.join("snapshots").join(seq.to_string());
            let w = write_snapshot(&d.path, &dir, *time, !complete)?;
            let (pages, links) = (w.pages, w.links);
            self.skipped.duplicate_links += w.duplicate_links;
            self.skipped.repeated_observations += w.repeated_observations;
            std::fs::remove_file(&d.path).map_err(|e| OutputError::io(&d.path, e))?;
            written.push(SnapshotWritten {
                seq: seq as u64,
                time: *time,
                pages,
                links,
            });
            if Instant::now() >= next_report {
                next_report = Instant::now() + REPORT_EVERY;
                progress(&format!(
                    "import: wrote {} of {} snapshots ({:.0} s)",
                    seq + 1,
                    times.len(),
                    started.elapsed().as_secs_f64()
                ));
            }
        }
        std::fs::remove_dir_all(&self.scratch).map_err(|e| OutputError::io(&self.scratch, e))?;
        Ok((written, self.skipped))
    }
}

/// What [`write_snapshot`] wrote and merged.
struct SnapshotCounts {
    pages: u64,
    links: u64,
    duplicate_links: u64,
    repeated_observations: u64,
}

/// Writes one snapshot directory from its scratch file, sorting and merging it
/// in bounded memory ([`snapshot_sort`]).
fn write_snapshot(
    scratch: &Path,
    dir: &Path,
    time: Micros,
    partial: bool,
) -> Result<SnapshotCounts, OutputError> {
    let work = scratch.with_extension("sort");
    std::fs::create_dir_all(&work).map_err(|e| OutputError::io(&work, e))?;
    let sorted = snapshot_sort::sort_scratch(scratch, &work, snapshot_sort::RUN_BYTES)?;
    std::fs::create_dir_all(dir).map_err(|e| OutputError::io(dir, e))?;
    let json = serde_json::json!({ "time": format_date(time), "partial": partial });
    let json_path = dir.join("snapshot.json");
    std::fs::write(&json_path, format!("{json}\n")).map_err(|e| OutputError::io(&json_path, e))?;

    let mut counts = SnapshotCounts {
        pages: 0,
        links: 0,
        duplicate_links: 0,
        repeated_observations: 0,
    };
    // Pages: `url, observations, fetch_time, status, digest`.
    let read_error = std::cell::RefCell::new(None);
    let pages = sorted_lines(&sorted.pages, &read_error)?.map(|line| {
        let f: Vec<&str> = line.split('\t').collect();
        let n: u64 = f[1].parse().unwrap_or(0);
        let obs = (n > 0).then(|| {
            (
                f[2].parse::<Micros>().unwrap_or(time),
                f[3].parse::<i32>().ok(),
                (!f[4].is_empty()).then(|| f[4].to_string()),
            )
        });
        (f[0].to_string(), n, obs)
    });
    let (counted, observed) = (std::cell::Cell::new(0u64), std::cell::Cell::new(0u64));
    let pages = pages.inspect(|p| {
        counted.set(counted.get() + 1);
        observed.set(observed.get() + p.1.saturating_sub(1));
    });
    if !sorted.observed {
        let page_schema = Arc::new(Schema::new(vec![Field::new("url", DataType::Utf8, false)]));
        write_parquet(&dir.join("pages.parquet"), page_schema, pages, |chunk| {
            vec![Arc::new(StringArray::from_iter_values(
                chunk.iter().map(|p| p.0.as_str()),
            )) as ArrayRef]
        })?;
    } else {
        // Observed pages carry what was observed; pages that are only link
        // sources (none in WARC imports) get nulls: fetched at the snapshot's time.
        let page_schema = Arc::new(Schema::new(vec![
            Field::new("url", DataType::Utf8, false),
            Field::new(
                "fetch_time",
                DataType::Timestamp(arrow_schema::TimeUnit::Microsecond, Some("UTC".into())),
                true,
            ),
            Field::new("status", DataType::Int32, true),
            Field::new("digest", DataType::Utf8, true),
        ]));
        write_parquet(&dir.join("pages.parquet"), page_schema, pages, |chunk| {
            vec![
                Arc::new(StringArray::from_iter_values(
                    chunk.iter().map(|p| p.0.as_str()),
                )) as ArrayRef,
                Arc::new(
                    arrow_array::TimestampMicrosecondArray::from_iter(
                        chunk.iter().map(|p| p.2.as_ref().map(|o| o.0)),
                    )
                    .with_timezone("UTC"),
                ),
                Arc::new(arrow_array::Int32Array::from_iter(
                    chunk.iter().map(|p| p.2.as_ref().and_then(|o| o.1)),
                )),
                Arc::new(StringArray::from_iter(
                    chunk
                        .iter()
                        .map(|p| p.2.as_ref().and_then(|o| o.2.as_deref())),
                )),
            ]
        })?;
    }
    if let Some(e) = read_error.borrow_mut().take() {
        return Err(e);
    }
    counts.pages = counted.get();
    counts.repeated_observations = observed.get();

    // Links: `src, dst, count, lines`.
    let links = sorted_lines(&sorted.links, &read_error)?.map(|line| {
        let f: Vec<&str> = line.split('\t').collect();
        let lines: u64 = f[3].parse().unwrap_or(1);
        (
            f[0].to_string(),
            f[1].to_string(),
            f[2].parse::<i64>().unwrap_or(1),
            lines,
        )
    });
    let (distinct, merged) = (std::cell::Cell::new(0u64), std::cell::Cell::new(0u64));
    let links = links.inspect(|l| {
        distinct.set(distinct.get() + 1);
        merged.set(merged.get() + l.3.saturating_sub(1));
    });
    let link_schema = Arc::new(Schema::new(vec![
        Field::new("src", DataType::Utf8, false),
        Field::new("dst", DataType::Utf8, false),
        Field::new("count", DataType::Int64, false),
    ]));
    write_parquet(&dir.join("links.parquet"), link_schema, links, |chunk| {
        vec![
            Arc::new(StringArray::from_iter_values(
                chunk.iter().map(|l| l.0.as_str()),
            )) as ArrayRef,
            Arc::new(StringArray::from_iter_values(
                chunk.iter().map(|l| l.1.as_str()),
            )),
            Arc::new(Int64Array::from_iter_values(chunk.iter().map(|l| l.2))),
        ]
    })?;
    if let Some(e) = read_error.borrow_mut().take() {
        return Err(e);
    }
    counts.links = distinct.get();
    counts.duplicate_links = merged.get();
    std::fs::remove_dir_all(&work).map_err(|e| OutputError::io(&work, e))?;
    Ok(counts)
}

/// The lines of a sorted file; a read error ends them and is kept in `error`.
fn sorted_lines<'e>(
    path: &Path,
    error: &'e std::cell::RefCell<Option<OutputError>>,
) -> Result<impl Iterator<Item = String> + 'e, OutputError> {
    let f = File::open(path).map_err(|e| OutputError::io(path, e))?;
    let path = path.to_path_buf();
    Ok(BufReader::with_capacity(1 << 16, f)
        .lines()
        .map_while(move |l| match l {
            Ok(l) => Some(l),
            Err(e) => {
                *error.borrow_mut() = Some(OutputError::io(&path, e));
                None
            }
        }))
}

/// Writes `rows` to a zstd Parquet file, `columns` turning a chunk of rows into arrays.
fn write_parquet<T>(
    path: &Path,
    schema: SchemaRef,
    rows: impl Iterator<Item = T>,
    columns: impl Fn(&[T]) -> Vec<ArrayRef>,
) -> Result<(), OutputError> {
    let err = |e| OutputError::Parquet {
        path: path.to_path_buf(),
        source: e,
    };
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(
            ZstdLevel::try_new(3).expect("valid level"),
        ))
        .set_max_row_group_row_count(Some(ROW_GROUP))
        .build();
    let file = File::create(path).map_err(|e| OutputError::io(path, e))?;
    let mut writer = ArrowWriter::try_new(file, schema.clone(), Some(props)).map_err(err)?;
    let mut chunk = Vec::with_capacity(8192);
    let mut rows = rows.peekable();
    while rows.peek().is_some() {
        chunk.clear();
        chunk.extend(rows.by_ref().take(8192));
        let batch =
            RecordBatch::try_new(schema.clone(), columns(&chunk)).map_err(|e| err(e.into()))?;
        writer.write(&batch).map_err(err)?;
    }
    writer.close().map_err(err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        let day = |s| format_date(parse_date(s).unwrap());
        assert_eq!(day("20131002"), "2013-10-02T00:00:00Z");
        assert_eq!(day("200510"), "2005-10-01T00:00:00Z");
        assert_eq!(day("2015-03-01"), "2015-03-01T00:00:00Z");
        assert_eq!(day("2015-03"), "2015-03-01T00:00:00Z");
        assert_eq!(day("2015-03-01T12:30:00+02:00"), "2015-03-01T10:30:00Z");
        for bad in [
            "2013100",
            "20131302",
            "20130230",
            "2013",
            "yesterday",
            "",
            "2015-3-01",
        ] {
            let e = parse_date(bad).unwrap_err();
            assert!(e.starts_with("bad date"), "{bad}: {e}");
        }
    }

    #[test]
    fn hosts_and_urls() {
        assert_eq!(
            host_page("Example.COM").as_deref(),
            Some("http://example.com/")
        );
        assert_eq!(host_page(" a.b.ca ").as_deref(), Some("http://a.b.ca/"));
        assert_eq!(host_page("a.ca:8080").as_deref(), Some("http://a.ca:8080/"));
        for bad in [
            "",
            "cep.ca target=newwindow",
            "a.com/x",
            "a|b",
            "u@a.com",
            "a.com?q",
        ] {
            assert_eq!(host_page(bad), None, "{bad}");
        }
        assert_eq!(
            page_url("HTTPS://A.com/x#f").as_deref(),
            Some("https://a.com/x")
        );
        assert_eq!(page_url("a.com").as_deref(), Some("http://a.com/"));
        assert_eq!(page_url("mailto:x@a.com"), None);
    }
}
