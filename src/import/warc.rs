//! WARC files (ISO 28500): what a crawler fetched, as Heritrix, BUbiNG,
//! StormCrawler, wget or Common Crawl write it.
//!
//! Each `response` record with an `http(s)` target is one observation of a page:
//! its URL, `WARC-Date` as the fetch time, the HTTP status and the payload digest
//! (`WARC-Payload-Digest`, or the SHA-1 of the payload, in the same `sha1:BASE32`
//! form). The links of HTML pages come from [`super::html_links`]; a redirect's
//! `Location` is a link too. A `revisit` record is an observation whose payload is
//! identical to an earlier capture: it carries that capture's digest, so it is
//! unchanged, and the earlier capture's links (looked up by URL and digest, or by
//! `WARC-Refers-To-Target-URI` for URL-agnostic revisits). `resource` records of
//! `http(s)` URLs are observations without a status. `request`, `metadata`,
//! `warcinfo` and `conversion` records carry no observation and are skipped.
//!
//! The reader is our own (about 150 lines): the `warc` crate rejects two of the
//! real sample files (a `warcinfo` whose `Content-Length` is shorter than its
//! block, which `warcio` and the Wayback Machine accept), cannot say where in a
//! file a bad record starts, and pins old `uuid` and `nom` releases. This one
//! tolerates extra blank lines between records and reports every error as file,
//! record number and byte offset.
//!
//! Memory: a record's block is read whole up to [`MAX_BLOCK`] (larger ones keep
//! their first megabyte, enough for the HTTP headers, and get no links). Nothing
//! grows with the input: the links of every capture and the revisits wait in
//! scratch files, and once every file is read a sort-merge join on (URL, digest)
//! gives each revisit its capture's links ([`WarcState::finish`]).

use std::fs::File;
use std::io::{BufRead, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use sha1::Digest;
use url::Url;

use super::html_links;
use super::http::{parse_response, Response};
use super::snapshot_sort::{lines_of, Scratch};
use super::{CrawlWriter, REPORT_EVERY};
use crate::error::{InputError, OutputError, Position};
use crate::ingest::url::normalize;
use crate::model::Micros;

/// Blocks up to this size are read whole.
pub const MAX_BLOCK: u64 = 64 << 20;
/// What is kept of a larger block.
const OVERSIZED_KEEP: u64 = 1 << 20;
/// A record's header section may not be longer.
const MAX_HEADER: usize = 1 << 20;

const DAY: Micros = 86_400_000_000;

/// Which snapshot a record belongs to.
#[derive(Clone, Copy, Debug)]
pub enum SnapshotOf {
    /// Every record of the file goes to snapshot key `k`.
    Fixed(Micros),
    /// The UTC day of the record's `WARC-Date`.
    Day,
    /// The ISO week (Monday to Sunday, UTC) of the record's `WARC-Date`.
    Week,
}

impl SnapshotOf {
    fn key(self, time: Micros) -> Micros {
        match self {
            SnapshotOf::Fixed(k) => k,
            SnapshotOf::Day => time.div_euclid(DAY) * DAY,
            // 1970-01-01 was a Thursday: shift by 3 days so weeks start on Mondays.
            SnapshotOf::Week => (time + 3 * DAY).div_euclid(7 * DAY) * 7 * DAY - 3 * DAY,
        }
    }
}

/// Counts over all WARC files of an import.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WarcCounts {
    pub records: u64,
    pub responses: u64,
    pub revisits: u64,
    pub resources: u64,
    /// Records of other types (request, metadata, warcinfo, conversion).
    pub other_records: u64,
    /// Response, revisit and resource records of non-HTTP targets (`dns:`, `ftp:`).
    pub non_http: u64,
    /// Targets that are not a usable page URL.
    pub invalid_targets: u64,
    /// HTML pages parsed for links.
    pub html_pages: u64,
    /// Links found (before normalization and merging).
    pub links_found: u64,
    /// Link attributes that were not `http(s)` URLs (`javascript:`, `mailto:`).
    pub links_skipped: u64,
    /// Revisits whose earlier capture was not in the import: observed, but their
    /// links are unknown.
    pub revisits_without_original: u64,
    /// HTML bodies that could not be decoded (unknown content coding, corrupt gzip).
    pub undecodable_bodies: u64,
    /// Records larger than [`MAX_BLOCK`], observed without links.
    pub oversized: u64,
    /// Declared SHA-1 payload digests that differ from the payload's (the
    /// declared one is kept: revisits refer to it).
    pub digest_mismatches: u64,
}

impl WarcCounts {
    pub fn describe(&self) -> String {
        let mut parts = vec![format!(
            "{} records: {} responses, {} revisits, {} resources, {} others",
            self.records, self.responses, self.revisits, self.resources, self.other_records
        )];
        parts.push(format!(
            "{} HTML pages with {} links",
            self.html_pages, self.links_found
        ));
        for (n, what) in [
            (self.non_http, "non-HTTP targets skipped"),
            (self.invalid_targets, "invalid target URIs skipped"),
            (self.links_skipped, "non-HTTP link targets skipped"),
            (
                self.revisits_without_original,
                "revisits whose original capture was not imported (links unknown)",
            ),
            (self.undecodable_bodies, "undecodable HTML bodies"),
            (self.oversized, "oversized records (no links)"),
            (
                self.digest_mismatches,
                "declared payload digests that differ from the payload's",
            ),
        ] {
            if n > 0 {
                parts.push(format!("{n} {what}"));
            }
        }
        parts.join("; ")
    }
}

/// What the WARC import keeps across files: counts, and the captures' links
/// and the revisits waiting for them.
pub struct WarcState {
    pub counts: WarcCounts,
    captures: CaptureStore,
}

impl WarcState {
    pub fn new(scratch: &Path) -> Result<Self, OutputError> {
        Ok(WarcState {
            counts: WarcCounts::default(),
            captures: CaptureStore::new(scratch)?,
        })
    }

    /// Gives every revisit its capture's links, once every file is read.
    pub fn finish(&mut self, out: &mut CrawlWriter) -> Result<(), OutputError> {
        self.counts.revisits_without_original += self.captures.join(out)?;
        Ok(())
    }
}

/// One WARC record: its named fields and its block.
struct WarcRecord {
    number: u64,
    offset: u64,
    fields: Vec<(String, String)>,
    block: Vec<u8>,
    /// The block was larger than [`MAX_BLOCK`]; only its start is in `block`.
    cut: bool,
}

impl WarcRecord {
    fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn position(&self) -> Position {
        Position::Record {
            number: self.number,
            offset: self.offset,
        }
    }
}

/// Splits a (decompressed) WARC stream into records.
struct RecordReader {
    path: PathBuf,
    input: Box<dyn BufRead>,
    offset: u64,
    number: u64,
    line: Vec<u8>,
}

impl RecordReader {
    fn err(&self, number: u64, offset: u64, problem: impl Into<String>) -> InputError {
        InputError::at(&self.path, Position::Record { number, offset }, problem)
    }

    /// Reads one line into `self.line` (terminator kept); its length, 0 at the end.
    fn read_line(&mut self, number: u64, offset: u64) -> Result<usize, InputError> {
        self.line.clear();
        let n = self
            .input
            .read_until(b'\n', &mut self.line)
            .map_err(|e| self.err(number, offset, format!("cannot read: {e}")))?;
        self.offset += n as u64;
        Ok(n)
    }

    fn next(&mut self) -> Result<Option<WarcRecord>, InputError> {
        let number = self.number + 1;
        // Blank lines between records (the standard's two CRLFs, and the extra
        // ones of writers that count their block short) are skipped.
        let offset = loop {
            let at = self.offset;
            if self.read_line(number, at)? == 0 {
                return Ok(None);
            }
            if !self.line.iter().all(|b| matches!(b, b'\r' | b'\n')) {
                break at;
            }
        };
        if !self.line.starts_with(b"WARC/") {
            let shown = String::from_utf8_lossy(&self.line[..self.line.len().min(40)]);
            return Err(self.err(
                number,
                offset,
                format!("expected a record's version line (WARC/1.0), found {shown:?}"),
            ));
        }
        self.number = number;
        let mut fields: Vec<(String, String)> = Vec::new();
        let mut header_bytes = 0usize;
        loop {
            let n = self.read_line(number, offset)?;
            if n == 0 {
                return Err(self.err(number, offset, "the file ends inside the record's header"));
            }
            header_bytes += n;
            if header_bytes > MAX_HEADER {
                return Err(self.err(number, offset, "the record's header is longer than 1 MiB"));
            }
            let line = String::from_utf8_lossy(&self.line);
            let line = line.trim_end_matches(['\r', '\n']);
            if line.is_empty() {
                break;
            }
            if line.starts_with([' ', '\t']) {
                // A folded continuation of the previous field.
                match fields.last_mut() {
                    Some((_, v)) => {
                        v.push(' ');
                        v.push_str(line.trim());
                    }
                    None => {
                        return Err(self.err(
                            number,
                            offset,
                            "header starts with a continuation line",
                        ))
                    }
                }
                continue;
            }
            let Some((name, value)) = line.split_once(':') else {
                return Err(self.err(
                    number,
                    offset,
                    format!("header line without a colon: {line:?}"),
                ));
            };
            fields.push((name.trim().to_string(), value.trim().to_string()));
        }
        let length = fields
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
            .ok_or_else(|| self.err(number, offset, "the record has no Content-Length"))?;
        let length: u64 = length.1.parse().map_err(|_| {
            self.err(
                number,
                offset,
                format!("Content-Length {:?} is not a number", length.1),
            )
        })?;
        let keep = if length > MAX_BLOCK {
            OVERSIZED_KEEP
        } else {
            length
        };
        // Capacity grows with what arrives, not with what the header claims.
        let mut block = Vec::with_capacity(keep.min(1 << 20) as usize);
        let got = (&mut self.input)
            .take(keep)
            .read_to_end(&mut block)
            .map_err(|e| self.err(number, offset, format!("cannot read the block: {e}")))?;
        let mut read = got as u64;
        if read == keep && length > keep {
            read += std::io::copy(
                &mut (&mut self.input).take(length - keep),
                &mut std::io::sink(),
            )
            .map_err(|e| self.err(number, offset, format!("cannot read the block: {e}")))?;
        }
        self.offset += read;
        if read < length {
            return Err(self.err(
                number,
                offset,
                format!("truncated record: Content-Length is {length} but the file ends after {read} bytes of its block"),
            ));
        }
        Ok(Some(WarcRecord {
            number,
            offset,
            fields,
            block,
            cut: length > keep,
        }))
    }
}

/// Reads the WARC file `path` into `out`, each record to the snapshot `of` says.
pub fn read(
    path: &Path,
    of: SnapshotOf,
    state: &mut WarcState,
    out: &mut CrawlWriter,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<()> {
    let mut reader = RecordReader {
        path: path.to_path_buf(),
        input: super::open_input(path)?,
        offset: 0,
        number: 0,
        line: Vec::new(),
    };
    let started = Instant::now();
    let mut next_report = started + REPORT_EVERY;
    while let Some(record) = reader.next()? {
        state.counts.records += 1;
        observe(path, &record, of, state, out)?;
        if record.number % 256 == 0 && Instant::now() >= next_report {
            next_report = Instant::now() + REPORT_EVERY;
            progress(&format!(
                "import: {}: {} records, {} MB read ({:.0} s)",
                path.display(),
                record.number,
                reader.offset >> 20,
                started.elapsed().as_secs_f64()
            ));
        }
    }
    Ok(())
}

/// Turns one record into a page observation and its links, if it is one.
fn observe(
    path: &Path,
    record: &WarcRecord,
    of: SnapshotOf,
    state: &mut WarcState,
    out: &mut CrawlWriter,
) -> anyhow::Result<()> {
    let kind = record.field("WARC-Type").unwrap_or("").to_ascii_lowercase();
    let counts = &mut state.counts;
    match kind.as_str() {
        "response" => counts.responses += 1,
        "revisit" => counts.revisits += 1,
        "resource" => counts.resources += 1,
        _ => {
            counts.other_records += 1;
            return Ok(());
        }
    }
    let Some(target) = record.field("WARC-Target-URI").map(strip_angles) else {
        counts.invalid_targets += 1;
        return Ok(());
    };
    if !(starts_with_ignore_case(target, "http:") || starts_with_ignore_case(target, "https:")) {
        counts.non_http += 1;
        return Ok(());
    }
    let Ok(page) = normalize(target) else {
        counts.invalid_targets += 1;
        return Ok(());
    };
    let page = page.url;
    let date = record
        .field("WARC-Date")
        .ok_or_else(|| InputError::at(path, record.position(), "the record has no WARC-Date"))?;
    let time = chrono::DateTime::parse_from_rfc3339(date)
        .map(|t| t.timestamp_micros())
        .map_err(|_| {
            InputError::at(
                path,
                record.position(),
                format!("WARC-Date {date:?} is not an RFC 3339 time"),
            )
        })?;
    let key = of.key(time);
    let http = (kind != "resource")
        .then(|| parse_response(&record.block))
        .flatten();
    let status = http.as_ref().map(|r| r.status);
    let declared = record.field("WARC-Payload-Digest").map(str::to_string);

    if kind == "revisit" {
        out.page(key, &page, time, status, declared.as_deref())?;
        let refers = record
            .field("WARC-Refers-To-Target-URI")
            .map(strip_angles)
            .and_then(|u| normalize(u).ok())
            .map(|n| n.url);
        match declared.as_deref() {
            Some(d) => state.captures.revisit(key, &page, d, refers.as_deref())?,
            None => state.counts.revisits_without_original += 1,
        }
        return Ok(());
    }

    // A response or resource: the digest as declared, or computed.
    let payload = match &http {
        Some(r) => r.payload(),
        None => std::borrow::Cow::Borrowed(&record.block[..]),
    };
    let computed = (!record.cut).then(|| sha1_digest(&payload));
    if let (Some(d), Some(c)) = (&declared, &computed) {
        // Some writers (wget) digest the body still chunked: that is a
        // convention, not a mismatch.
        let agrees = |digest: &str| d.eq_ignore_ascii_case(digest);
        let raw_agrees = || http.as_ref().is_some_and(|r| agrees(&sha1_digest(r.body)));
        if d.to_ascii_lowercase().starts_with("sha1:") && !agrees(c) && !raw_agrees() {
            state.counts.digest_mismatches += 1;
        }
    }
    let digest = declared.or(computed);
    out.page(key, &page, time, status, digest.as_deref())?;
    if record.cut {
        state.counts.oversized += 1;
        return Ok(());
    }
    let links = match &http {
        Some(r) => response_links(r, &page, &mut state.counts),
        None => {
            let html = record
                .field("Content-Type")
                .is_some_and(|t| t.to_ascii_lowercase().starts_with("text/html"));
            if html {
                html_page_links(&record.block, &page, &mut state.counts)
            } else {
                Vec::new()
            }
        }
    };
    for dst in &links {
        out.edge(key, Some(&page), Some(dst), 1)?;
    }
    if let Some(d) = &digest {
        state.captures.put(&page, d, &links)?;
    }
    Ok(())
}

/// The normalized link targets of an HTTP response: its redirect target, or the
/// links of its HTML.
fn response_links(r: &Response, page: &str, counts: &mut WarcCounts) -> Vec<String> {
    if (300..400).contains(&r.status) {
        let target = r
            .header("location")
            .and_then(|l| Url::parse(page).ok()?.join(l.trim()).ok())
            .filter(|u| matches!(u.scheme(), "http" | "https"))
            .and_then(|u| normalize(u.as_str()).ok());
        counts.links_found += target.is_some() as u64;
        return target.map(|n| vec![n.url]).unwrap_or_default();
    }
    if !(200..300).contains(&r.status) || !r.is_html() {
        return Vec::new();
    }
    match r.decoded() {
        Ok(body) => html_page_links(&body, page, counts),
        Err(_) => {
            counts.undecodable_bodies += 1;
            Vec::new()
        }
    }
}

/// The normalized link targets of an HTML body. Bytes that are not UTF-8 become
/// U+FFFD: link URLs are ASCII in practice, and a non-ASCII one keeps its other
/// characters.
fn html_page_links(body: &[u8], page: &str, counts: &mut WarcCounts) -> Vec<String> {
    let Ok(base) = Url::parse(page) else {
        return Vec::new();
    };
    counts.html_pages += 1;
    let found = html_links::extract(&String::from_utf8_lossy(body), &base);
    counts.links_found += found.links.len() as u64;
    counts.links_skipped += found.skipped;
    found
        .links
        .iter()
        .filter_map(|u| normalize(u.as_str()).ok())
        .map(|n| n.url)
        .collect()
}

/// `sha1:` and the base32 (RFC 4648) SHA-1 of `payload`, as crawlers write
/// `WARC-Payload-Digest`.
pub fn sha1_digest(payload: &[u8]) -> String {
    let hash = sha1::Sha1::digest(payload);
    const ALPHABET: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let mut out = String::from("sha1:");
    // 20 bytes are 160 bits: exactly 32 base32 digits, no padding.
    let mut bits = 0u32;
    let mut acc = 0u64;
    for &b in hash.iter() {
        acc = (acc << 8) | b as u64;
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(ALPHABET[((acc >> bits) & 31) as usize] as char);
        }
    }
    out
}

/// WARC 1.1 drafts wrote `<uri>`; some tools still do.
fn strip_angles(uri: &str) -> &str {
    uri.trim()
        .strip_prefix('<')
        .and_then(|u| u.strip_suffix('>'))
        .unwrap_or(uri.trim())
}

fn starts_with_ignore_case(s: &str, prefix: &str) -> bool {
    // Bytes, not str slices: the cut may fall inside a character.
    s.as_bytes()
        .get(..prefix.len())
        .is_some_and(|p| p.eq_ignore_ascii_case(prefix.as_bytes()))
}

/// The links of captures by (page, digest), and the revisits that want them,
/// in two scratch files of text lines that [`CaptureStore::join`] sorts and
/// merges. Capture lines: `KEY<TAB>SEQ<TAB>dst dst …`; revisit lines:
/// `KEY<TAB>SEQ<TAB>FALLBACK<TAB>SNAPSHOT<TAB>page`, where KEY hashes (page,
/// digest), FALLBACK (refers-to URI, digest) or is `-`, and SEQ (input order)
/// makes the first capture of a key the one that counts. Keys and SEQ are
/// fixed-width hex, so sorting lines sorts by key, then order; normalized URLs
/// hold no spaces, tabs or newlines.
struct CaptureStore {
    dir: PathBuf,
    captures: BufWriter<File>,
    revisits: BufWriter<File>,
    seq: u64,
}

const CAPTURES: &str = "captures.txt";
const REVISITS: &str = "revisits.txt";

impl CaptureStore {
    fn new(dir: &Path) -> Result<Self, OutputError> {
        let create = |name: &str| {
            let path = dir.join(name);
            File::create(&path)
                .map(|f| BufWriter::with_capacity(1 << 16, f))
                .map_err(|e| OutputError::io(&path, e))
        };
        Ok(CaptureStore {
            dir: dir.to_path_buf(),
            captures: create(CAPTURES)?,
            revisits: create(REVISITS)?,
            seq: 0,
        })
    }

    fn key(page: &str, digest: &str) -> u64 {
        xxhash_rust::xxh3::xxh3_64_with_seed(
            digest.as_bytes(),
            xxhash_rust::xxh3::xxh3_64(page.as_bytes()),
        )
    }

    fn put(&mut self, page: &str, digest: &str, links: &[String]) -> Result<(), OutputError> {
        self.seq += 1;
        writeln!(
            self.captures,
            "{:016x}\t{:016x}\t{}",
            Self::key(page, digest),
            self.seq,
            links.join(" ")
        )
        .map_err(|e| OutputError::io(self.dir.join(CAPTURES), e))
    }

    /// A revisit of `page` with `digest` in snapshot `snapshot`, whose capture
    /// is found by its own URL or else by `refers`.
    fn revisit(
        &mut self,
        snapshot: Micros,
        page: &str,
        digest: &str,
        refers: Option<&str>,
    ) -> Result<(), OutputError> {
        self.seq += 1;
        let fallback = refers.map_or("-".to_string(), |r| {
            format!("{:016x}", Self::key(r, digest))
        });
        writeln!(
            self.revisits,
            "{:016x}\t{:016x}\t{fallback}\t{snapshot}\t{page}",
            Self::key(page, digest),
            self.seq,
        )
        .map_err(|e| OutputError::io(self.dir.join(REVISITS), e))
    }

    /// Emits the links of every revisit's capture into `out`; returns the
    /// revisits whose capture is in none of the files.
    fn join(&mut self, out: &mut CrawlWriter) -> Result<u64, OutputError> {
        for (w, name) in [
            (&mut self.captures, CAPTURES),
            (&mut self.revisits, REVISITS),
        ] {
            w.flush()
                .map_err(|e| OutputError::io(self.dir.join(name), e))?;
        }
        let path = |name: &str| self.dir.join(name);
        let sort = |from: &str, to: &str| {
            super::snapshot_sort::sort_lines(&path(from), &path(to), &self.dir, RUN_BYTES)
        };
        sort(CAPTURES, "captures.sorted")?;
        sort(REVISITS, "revisits.sorted")?;
        // By the revisit's own URL; the misses with a refers-to URI try again by it.
        let mut again = Scratch::create(path("revisits-by-refers.txt"))?;
        let mut missed = 0;
        merge_join(
            &path("captures.sorted"),
            &path("revisits.sorted"),
            out,
            &mut |line| {
                let f: Vec<&str> = line.splitn(5, '\t').collect();
                if f[2] == "-" {
                    missed += 1;
                    return Ok(());
                }
                again.line(format_args!("{}\t{}\t-\t{}\t{}", f[2], f[1], f[3], f[4]))
            },
        )?;
        again.close()?;
        sort("revisits-by-refers.txt", "revisits-by-refers.sorted")?;
        merge_join(
            &path("captures.sorted"),
            &path("revisits-by-refers.sorted"),
            out,
            &mut |_| {
                missed += 1;
                Ok(())
            },
        )?;
        Ok(missed)
    }
}

/// Scratch lines sorted in runs of this many bytes.
const RUN_BYTES: usize = super::snapshot_sort::RUN_BYTES;

/// Walks sorted captures and sorted revisits together: each revisit whose key
/// has a capture gets that (first) capture's links as edges; the others go to
/// `miss`.
fn merge_join(
    captures: &Path,
    revisits: &Path,
    out: &mut CrawlWriter,
    miss: &mut dyn FnMut(&str) -> Result<(), OutputError>,
) -> Result<(), OutputError> {
    let mut caps = lines_of(captures)?;
    let mut cap: Option<String> = caps.next().transpose()?;
    for line in lines_of(revisits)? {
        let line = line?;
        let key = &line[..16];
        while cap.as_deref().is_some_and(|c| &c[..16] < key) {
            cap = caps.next().transpose()?;
        }
        match cap.as_deref() {
            // The first capture of the key (lines sort by key, then input order).
            Some(c) if &c[..16] == key => {
                let f: Vec<&str> = line.splitn(5, '\t').collect();
                let snapshot: Micros = f[3].parse().expect("written as a number");
                let links = c.splitn(3, '\t').nth(2).unwrap_or("");
                for dst in links.split(' ').filter(|d| !d.is_empty()) {
                    out.edge(snapshot, Some(f[4]), Some(dst), 1)?;
                }
            }
            _ => miss(&line)?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base32_sha1_matches_crawlers() {
        // The empty payload's digest, as Heritrix and warcio write it.
        assert_eq!(sha1_digest(b""), "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ");
    }

    #[test]
    fn days_and_weeks() {
        let t = crate::import::parse_date("2014-03-25T12:12:25Z").unwrap();
        let day = |s| crate::import::parse_date(s).unwrap();
        assert_eq!(SnapshotOf::Day.key(t), day("2014-03-25"));
        // 2014-03-25 was a Tuesday; its week starts on Monday the 24th.
        assert_eq!(SnapshotOf::Week.key(t), day("2014-03-24"));
        assert_eq!(SnapshotOf::Week.key(day("2014-03-24")), day("2014-03-24"));
        assert_eq!(SnapshotOf::Week.key(day("2014-03-23")), day("2014-03-17"));
        assert_eq!(SnapshotOf::Week.key(day("1969-12-31")), day("1969-12-29"));
    }
}
