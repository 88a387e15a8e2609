//! The output directory and its commit protocol.
//!
//! ```text
//! OUT/_manifest.json                       committed snapshots, job, run history
//! OUT/<table>/snapshot=<seq>/part-*.parquet per-snapshot tables
//! OUT/<table>/part-*.parquet                tables rewritten by every run
//! OUT/_state/                               what the next run continues from
//! OUT/_staging/<run>/                       a run in progress (same layout)
//! OUT/_journal.json                         present only while a commit is applied
//! OUT/_lock                                 held by the running process 0
//! ```
//! A run writes only under `_staging/<run>/`. To commit, it writes the new manifest
//! there and then atomically creates `_journal.json`: that is the commit point.
//! Applying the journal moves the new partitions into place, swaps the rewritten
//! tables and `_state/`, and finally renames the new manifest over the old one;
//! every step is idempotent. Whoever opens the directory next (any `webevo`
//! command) finishes an interrupted apply, or deletes an uncommitted staging area.
//! So a run killed at any point leaves either the previous commit or the new one,
//! never a mixture, and readers that follow the manifest never see partial files.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::OutputError;
use crate::ingest::OddRows;
use crate::model::{Seq, SnapshotMeta};

pub const MANIFEST: &str = "_manifest.json";
const JOURNAL: &str = "_journal.json";
const STAGING: &str = "_staging";
const LOCK: &str = "_lock";
pub const STATE: &str = "_state";
/// The state replaced by the last commit, whose files the next run writes
/// its own over (see `state::StateWriter::over_spare`) rather than leave the
/// disk to unlink them and allocate new ones. No committed state refers to
/// it, so a run that fails leaves nothing to undo, and it may be deleted.
pub const SPARE_STATE: &str = "_state.spare";
/// Bumped when the output layout changes incompatibly.
pub const FORMAT_VERSION: u32 = 1;

/// What `_manifest.json` records.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub format_version: u32,
    pub state_version: u32,
    /// The job the outputs were computed with; later runs must use the same.
    pub job: serde_json::Value,
    /// Committed snapshots, in order.
    pub snapshots: Vec<SnapshotMeta>,
    pub runs: Vec<RunRecord>,
}

impl Manifest {
    pub fn last(&self) -> Option<&SnapshotMeta> {
        self.snapshots.last()
    }
}

/// One committed run, for the record.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub run: String,
    pub snapshots: Vec<Seq>,
    pub workers: usize,
    pub seconds: f64,
    /// Rows written per table.
    pub rows: BTreeMap<String, u64>,
    /// Odd input rows skipped, per snapshot.
    pub odd_rows: BTreeMap<Seq, OddRows>,
    /// Work done, which grows with the new snapshots, not with the history: page
    /// and link rows read, and state records read to continue from the last commit.
    pub pages_read: u64,
    pub links_read: u64,
    pub state_records_read: u64,
    /// Wall time per snapshot (read, fold, write), and the peak resident memory
    /// of process 0.
    pub snapshot_seconds: BTreeMap<Seq, f64>,
    /// Writing the state and the rewritten tables after the last snapshot.
    pub finish_seconds: f64,
    pub peak_rss_bytes: u64,
    /// The change analysis' revisit-plan solve per snapshot (worker 0's wall
    /// time, and the rounds over all workers).
    #[serde(default)]
    pub revisit_seconds: BTreeMap<Seq, f64>,
    #[serde(default)]
    pub revisit_rounds: BTreeMap<Seq, u32>,
    /// Of worker 0's solve time, the part spent computing rather than waiting.
    #[serde(default)]
    pub revisit_compute_seconds: BTreeMap<Seq, f64>,
    /// The run stage by stage (restoring the state, each snapshot, the finish),
    /// for the report's run section.
    #[serde(default)]
    pub stages: Vec<StageRecord>,
}

/// One stage of a run, as worker 0 saw it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StageRecord {
    /// restore, snapshot or finish.
    pub stage: String,
    /// The snapshot of a snapshot stage (the committed one a restore continues from).
    pub snapshot: Option<Seq>,
    /// Wall time until every worker had finished the stage.
    pub seconds: f64,
    /// Peak resident memory of process 0 during the stage (Linux; else 0).
    pub peak_rss_bytes: u64,
    /// Bytes process 0 sent to and received from the other processes during
    /// the stage, headers included (0 in a single-process run). With two
    /// processes this is all the traffic between them.
    #[serde(default)]
    pub exchange_bytes: u64,
    /// Rows read in the stage by all workers: pages and links of a snapshot,
    /// state records of a restore.
    pub pages_read: u64,
    pub links_read: u64,
    pub state_records_read: u64,
    /// Odd input rows skipped in a snapshot stage.
    pub odd_rows: OddRows,
}

#[derive(Serialize, Deserialize)]
struct Journal {
    run: String,
}

/// An output directory.
pub struct OutputDir {
    root: PathBuf,
}

/// The output directory's lock: an OS file lock (`flock`) on `OUT/_lock`, which
/// the kernel releases when the process ends however it ends, so a crashed run
/// never leaves a lock behind. The file holds the holder's pid for messages.
pub struct Lock {
    path: PathBuf,
    _file: fs::File,
}

impl Drop for Lock {
    fn drop(&mut self) {
        // Remove the file before the lock is released (the field drops after
        // this): whoever opens the path afterwards gets a new file.
        let _ = fs::remove_file(&self.path);
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> OutputError + '_ {
    move |e| OutputError::io(path, e)
}

impl OutputDir {
    pub fn new(root: &Path) -> OutputDir {
        OutputDir {
            root: root.to_path_buf(),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn state_dir(&self) -> PathBuf {
        self.root.join(STATE)
    }

    /// Where run `run` stages its files.
    pub fn staging(&self, run: &str) -> PathBuf {
        self.root.join(STAGING).join(run)
    }

    /// Takes the directory's lock, failing with a clear message if another run
    /// holds it. A lock file left by a dead process holds no lock and is reused.
    pub fn lock(&self) -> Result<Lock, OutputError> {
        use std::io::Write;
        use std::os::unix::fs::MetadataExt;
        fs::create_dir_all(&self.root).map_err(io(&self.root))?;
        let path = self.root.join(LOCK);
        for _ in 0..8 {
            let mut file = fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .map_err(io(&path))?;
            match file.try_lock() {
                Ok(()) => {
                    // The previous holder may have removed the file between our
                    // open and our lock: then we hold a lock on a file nobody else
                    // will see. Only the file at the path counts.
                    let ours = file.metadata().map_err(io(&path))?.ino();
                    if fs::metadata(&path).map(|m| m.ino()).ok() != Some(ours) {
                        continue;
                    }
                    file.set_len(0).map_err(io(&path))?;
                    writeln!(file, "{}", std::process::id()).map_err(io(&path))?;
                    return Ok(Lock { path, _file: file });
                }
                Err(fs::TryLockError::WouldBlock) => {
                    let holder = fs::read_to_string(&path).unwrap_or_default();
                    let holder = holder.trim();
                    return Err(OutputError::Conflict {
                        path: self.root.clone(),
                        problem: format!(
                            "another webevo run (pid {}) is writing this output (it holds {}); wait for it to finish",
                            if holder.is_empty() { "unknown" } else { holder },
                            path.display()
                        ),
                    });
                }
                Err(fs::TryLockError::Error(e)) => return Err(OutputError::io(&path, e)),
            }
        }
        Err(OutputError::Conflict {
            path: self.root.clone(),
            problem: "could not take the output lock".into(),
        })
    }

    /// Finishes an interrupted commit, or discards an uncommitted staging area.
    /// Only the lock holder may call this.
    pub fn recover(&self) -> Result<(), OutputError> {
        let journal = self.root.join(JOURNAL);
        if journal.exists() {
            let text = fs::read_to_string(&journal).map_err(io(&journal))?;
            let j: Journal = serde_json::from_str(&text).map_err(|e| OutputError::Corrupt {
                path: journal.clone(),
                problem: e.to_string(),
            })?;
            self.apply(&j.run)?;
        }
        self.discard()
    }

    /// Deletes every uncommitted staging area (the caller holds the lock).
    pub fn discard(&self) -> Result<(), OutputError> {
        let staging = self.root.join(STAGING);
        match fs::remove_dir_all(&staging) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(OutputError::io(&staging, e)),
            _ => Ok(()),
        }
    }

    /// Whether a commit is being applied (other processes wait for it to finish).
    pub fn commit_pending(&self) -> bool {
        self.root.join(JOURNAL).exists()
    }

    /// The committed manifest, if any run has committed.
    pub fn manifest(&self) -> Result<Option<Manifest>, OutputError> {
        let path = self.root.join(MANIFEST);
        let text = match fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(OutputError::io(&path, e)),
        };
        let m: Manifest = serde_json::from_str(&text).map_err(|e| OutputError::Corrupt {
            path: path.clone(),
            problem: format!("unreadable manifest: {e}"),
        })?;
        if m.format_version != FORMAT_VERSION {
            return Err(OutputError::Corrupt {
                path,
                problem: format!(
                    "output format version {}, this webevo writes version {FORMAT_VERSION}: use a new output directory",
                    m.format_version
                ),
            });
        }
        Ok(Some(m))
    }

    /// Commits staged run `run` with its new manifest.
    pub fn commit(&self, run: &str, manifest: &Manifest) -> Result<(), OutputError> {
        let staging = self.staging(run);
        let staged_manifest = staging.join(MANIFEST);
        write_synced(
            &staged_manifest,
            &serde_json::to_vec_pretty(manifest).expect("manifest serializes"),
        )?;
        sync_tree(&staging)?;
        crate::failpoint::hit("before-commit-point");
        // The commit point.
        let journal = self.root.join(JOURNAL);
        let tmp = self.root.join("_journal.json.tmp");
        write_synced(
            &tmp,
            &serde_json::to_vec(&Journal {
                run: run.to_string(),
            })
            .unwrap(),
        )?;
        fs::rename(&tmp, &journal).map_err(io(&journal))?;
        sync_dir(&self.root)?;
        crate::failpoint::hit("after-commit-point");
        self.apply(run)?;
        self.discard()
    }

    /// Moves a committed staging area into place; safe to repeat after a crash.
    fn apply(&self, run: &str) -> Result<(), OutputError> {
        let staging = self.staging(run);
        let trash = self.root.join(STAGING).join(format!("{run}.old"));
        if staging.exists() {
            for entry in fs::read_dir(&staging).map_err(io(&staging))? {
                let entry = entry.map_err(io(&staging))?;
                let name = entry.file_name().to_string_lossy().into_owned();
                let src = entry.path();
                if name == MANIFEST || name.starts_with("_workers") || !src.is_dir() {
                    continue;
                }
                let dst = self.root.join(&name);
                if is_partitioned(&src)? {
                    fs::create_dir_all(&dst).map_err(io(&dst))?;
                    for part in fs::read_dir(&src).map_err(io(&src))? {
                        let part = part.map_err(io(&src))?;
                        let target = dst.join(part.file_name());
                        if target.exists() {
                            // Left by an earlier failed attempt at this very commit.
                            fs::remove_dir_all(&target).map_err(io(&target))?;
                        }
                        fs::rename(part.path(), &target).map_err(io(&target))?;
                    }
                    fs::remove_dir(&src).map_err(io(&src))?;
                } else {
                    // A rewritten table or _state/: swap the whole directory.
                    if dst.exists() {
                        fs::create_dir_all(&trash).map_err(io(&trash))?;
                        let old = trash.join(&name);
                        if old.exists() {
                            fs::remove_dir_all(&old).map_err(io(&old))?;
                        }
                        fs::rename(&dst, &old).map_err(io(&dst))?;
                    }
                    fs::rename(&src, &dst).map_err(io(&dst))?;
                }
                sync_dir(&dst)?;
                crate::failpoint::hit("mid-apply");
            }
            let staged_manifest = staging.join(MANIFEST);
            if staged_manifest.exists() {
                let manifest = self.root.join(MANIFEST);
                fs::rename(&staged_manifest, &manifest).map_err(io(&manifest))?;
            }
        }
        sync_dir(&self.root)?;
        let journal = self.root.join(JOURNAL);
        if journal.exists() {
            fs::remove_file(&journal).map_err(io(&journal))?;
        }
        sync_dir(&self.root)?;
        if trash.exists() {
            self.keep_spare_state(&trash);
            fs::remove_dir_all(&trash).map_err(io(&trash))?;
        }
        Ok(())
    }

    /// Moves the state replaced by a commit from `trash` to [`SPARE_STATE`],
    /// in place of the one there. The commit is done by then, so this is
    /// only worth trying: if it fails (a file of that name the user made),
    /// the next run writes new files, as it would without a spare.
    fn keep_spare_state(&self, trash: &Path) {
        let old = trash.join(STATE);
        if !old.is_dir() {
            return;
        }
        let spare = self.root.join(SPARE_STATE);
        if spare.symlink_metadata().is_ok() && fs::remove_dir_all(&spare).is_err() {
            return;
        }
        let _ = fs::rename(&old, &spare);
    }
}

/// A staged table directory is partitioned when it holds `snapshot=` folders.
fn is_partitioned(dir: &Path) -> Result<bool, OutputError> {
    for entry in fs::read_dir(dir).map_err(io(dir))? {
        let entry = entry.map_err(io(dir))?;
        if entry.file_name().to_string_lossy().starts_with("snapshot=") {
            return Ok(true);
        }
    }
    Ok(false)
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    use std::io::Write;
    let mut f = fs::File::create(path).map_err(io(path))?;
    f.write_all(bytes).map_err(io(path))?;
    f.sync_all().map_err(io(path))
}

fn sync_dir(dir: &Path) -> Result<(), OutputError> {
    match fs::File::open(dir) {
        Ok(f) => f.sync_all().map_err(io(dir)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(OutputError::io(dir, e)),
    }
}

/// Syncs every directory under `dir` (the files were synced when written).
fn sync_tree(dir: &Path) -> Result<(), OutputError> {
    for entry in fs::read_dir(dir).map_err(io(dir))? {
        let entry = entry.map_err(io(dir))?;
        if entry.path().is_dir() {
            sync_tree(&entry.path())?;
        }
    }
    sync_dir(dir)
}
