//! The crawl directory: listing and checking its snapshots before any worker starts.
//!
//! ```text
//! DIR/snapshots/<seq>/snapshot.json   {"time": "2026-01-05T00:00:00Z", "partial": false}
//! DIR/snapshots/<seq>/pages.parquet   url (required), fetch_time, status, digest
//! DIR/snapshots/<seq>/links.parquet   src, dst (required), count (default 1)
//! DIR/clicks.parquet                  url, time, clicks            optional
//! DIR/trust.parquet                   url, weight                  optional
//! ```
//! Each table may be `.parquet`, `.tsv` or `.tsv.gz`. Everything checkable without
//! reading rows (names, snapshot.json, times, headers and column types) is checked
//! here, so a bad directory fails in a second with a message naming the file.

use std::path::{Path, PathBuf};

use crate::error::InputError;
use crate::ingest::table::{self, TableKind};
use crate::model::{Micros, Seq, SnapshotMeta};
use crate::page_state::MAX_SEQ;

/// Storage format of one input table file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileFormat {
    Parquet,
    Tsv,
    TsvGz,
}

/// One input table file.
#[derive(Clone, Debug)]
pub struct InputFile {
    pub path: PathBuf,
    pub format: FileFormat,
    pub kind: TableKind,
}

/// One snapshot directory.
#[derive(Clone, Debug)]
pub struct SnapshotInput {
    pub meta: SnapshotMeta,
    pub dir: PathBuf,
    pub pages: InputFile,
    pub links: Option<InputFile>,
}

/// A checked crawl directory.
#[derive(Clone, Debug)]
pub struct CrawlDir {
    pub root: PathBuf,
    pub snapshots: Vec<SnapshotInput>,
    pub clicks: Option<InputFile>,
    pub trust: Option<InputFile>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct SnapshotJson {
    time: String,
    #[serde(default)]
    partial: bool,
}

/// Parses a time given as unix seconds or RFC 3339 into microseconds.
pub fn parse_time(text: &str) -> Result<Micros, String> {
    let text = text.trim();
    if let Ok(secs) = text.parse::<i64>() {
        return secs
            .checked_mul(1_000_000)
            .ok_or_else(|| format!("time {text} out of range"));
    }
    chrono::DateTime::parse_from_rfc3339(text)
        .map(|t| t.timestamp_micros())
        .map_err(|e| format!("time {text:?} is neither unix seconds nor RFC 3339 ({e})"))
}

/// Formats microseconds as RFC 3339 UTC, for messages.
pub fn format_time(t: Micros) -> String {
    chrono::DateTime::from_timestamp_micros(t)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true))
        .unwrap_or_else(|| format!("{t}µs"))
}

impl CrawlDir {
    /// Lists and checks `root`. Snapshots come back in numeric order.
    pub fn open(root: &Path) -> Result<CrawlDir, InputError> {
        let snap_root = root.join("snapshots");
        if !snap_root.is_dir() {
            return Err(InputError::file(
                root,
                "not a crawl directory: it has no snapshots/ folder (see the README's input format)",
            ));
        }
        let mut dirs: Vec<(Seq, PathBuf)> = Vec::new();
        for entry in read_dir(&snap_root)? {
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            if name.starts_with('.') {
                continue;
            }
            // The ledger keeps snapshot numbers in 4 bytes per page, the
            // largest meaning "never" (see `page_state`).
            let seq = name.parse::<Seq>().ok().filter(|&s| s <= MAX_SEQ && path.is_dir()).ok_or_else(|| {
                InputError::file(&path, format!("unexpected entry: snapshots/ holds only folders named by an integer from 0 to {MAX_SEQ}"))
            })?;
            dirs.push((seq, path));
        }
        dirs.sort();
        if let Some(w) = dirs.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(InputError::file(
                &w[1].1,
                format!("duplicate snapshot number {}", w[0].0),
            ));
        }
        let mut snapshots = Vec::with_capacity(dirs.len());
        for (seq, dir) in dirs {
            let snap = open_snapshot(seq, &dir)?;
            if let Some(prev) = snapshots.last().map(|s: &SnapshotInput| &s.meta) {
                if snap.meta.time <= prev.time {
                    return Err(InputError::file(
                        dir.join("snapshot.json"),
                        format!(
                            "snapshot times must increase: snapshot {} is at {}, not after snapshot {} at {}",
                            seq,
                            format_time(snap.meta.time),
                            prev.seq,
                            format_time(prev.time)
                        ),
                    ));
                }
            }
            snapshots.push(snap);
        }
        let clicks = find_table(root, "clicks", TableKind::Clicks)?;
        let trust = find_table(root, "trust", TableKind::Trust)?;
        Ok(CrawlDir {
            root: root.to_path_buf(),
            snapshots,
            clicks,
            trust,
        })
    }
}

fn read_dir(dir: &Path) -> Result<Vec<std::fs::DirEntry>, InputError> {
    let entries = std::fs::read_dir(dir).map_err(|e| InputError::io(dir, e))?;
    entries
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| InputError::io(dir, e))
}

fn open_snapshot(seq: Seq, dir: &Path) -> Result<SnapshotInput, InputError> {
    let json_path = dir.join("snapshot.json");
    let text = std::fs::read_to_string(&json_path).map_err(|e| InputError::io(&json_path, e))?;
    let json: SnapshotJson = serde_json::from_str(&text).map_err(|e| {
        InputError::at(
            &json_path,
            crate::error::Position::Line(e.line() as u64),
            format!("invalid snapshot.json: {e}"),
        )
    })?;
    let time = parse_time(&json.time).map_err(|p| InputError::file(&json_path, p))?;
    let mut pages = None;
    let mut links = None;
    for entry in read_dir(dir)? {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == "snapshot.json" || name.starts_with('.') {
            continue;
        }
        let path = entry.path();
        let (stem, format) = split_format(&name).ok_or_else(|| unknown_file(&path))?;
        let (slot, kind) = match stem {
            "pages" => (&mut pages, TableKind::Pages),
            "links" => (&mut links, TableKind::Links),
            _ => return Err(unknown_file(&path)),
        };
        if slot.is_some() {
            return Err(InputError::file(
                &path,
                format!("a second {stem} table in one snapshot"),
            ));
        }
        let file = InputFile { path, format, kind };
        table::check_columns(&file)?;
        *slot = Some(file);
    }
    let pages = pages.ok_or_else(|| {
        InputError::file(
            dir,
            "snapshot has no pages table (pages.parquet, pages.tsv or pages.tsv.gz)",
        )
    })?;
    Ok(SnapshotInput {
        meta: SnapshotMeta {
            seq,
            time,
            partial: json.partial,
        },
        dir: dir.to_path_buf(),
        pages,
        links,
    })
}

fn unknown_file(path: &Path) -> InputError {
    InputError::file(
        path,
        "unknown file in a snapshot: expected snapshot.json, pages.{parquet,tsv,tsv.gz}, links.{parquet,tsv,tsv.gz}",
    )
}

fn split_format(name: &str) -> Option<(&str, FileFormat)> {
    if let Some(stem) = name.strip_suffix(".parquet") {
        Some((stem, FileFormat::Parquet))
    } else if let Some(stem) = name.strip_suffix(".tsv.gz") {
        Some((stem, FileFormat::TsvGz))
    } else {
        name.strip_suffix(".tsv")
            .map(|stem| (stem, FileFormat::Tsv))
    }
}

fn find_table(root: &Path, stem: &str, kind: TableKind) -> Result<Option<InputFile>, InputError> {
    let mut found = None;
    for (ext, format) in [
        ("parquet", FileFormat::Parquet),
        ("tsv", FileFormat::Tsv),
        ("tsv.gz", FileFormat::TsvGz),
    ] {
        let path = root.join(format!("{stem}.{ext}"));
        if path.exists() {
            if found.is_some() {
                return Err(InputError::file(
                    &path,
                    format!("more than one {stem} table"),
                ));
            }
            let file = InputFile { path, format, kind };
            table::check_columns(&file)?;
            found = Some(file);
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times() {
        assert_eq!(parse_time("0"), Ok(0));
        assert_eq!(parse_time("1767571200"), Ok(1_767_571_200_000_000));
        assert_eq!(
            parse_time("2026-01-05T00:00:00Z"),
            Ok(1_767_571_200_000_000)
        );
        assert_eq!(
            parse_time("2026-01-05T01:00:00+01:00"),
            Ok(1_767_571_200_000_000)
        );
        assert!(parse_time("yesterday").is_err());
        assert_eq!(format_time(1_767_571_200_000_000), "2026-01-05T00:00:00Z");
    }

    /// The largest snapshot number opens; one more is refused with the folder
    /// named, before anything is read.
    #[test]
    fn snapshot_numbers_end_below_the_ledgers_never() {
        let root = tempfile::tempdir().unwrap();
        let snapshot = |seq: Seq| {
            let dir = root.path().join("snapshots").join(seq.to_string());
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("snapshot.json"), r#"{"time": "0"}"#).unwrap();
            std::fs::write(dir.join("pages.tsv"), "url\nhttp://a.example/\n").unwrap();
            dir
        };
        snapshot(MAX_SEQ);
        let crawl = CrawlDir::open(root.path()).unwrap();
        assert_eq!(crawl.snapshots[0].meta.seq, MAX_SEQ);
        assert_eq!(MAX_SEQ, 4_294_967_294);
        let too_large = snapshot(MAX_SEQ + 1);
        let e = CrawlDir::open(root.path()).err().unwrap().to_string();
        assert!(e.contains(&too_large.display().to_string()), "{e}");
        assert!(e.contains("from 0 to 4294967294"), "{e}");
    }
}
