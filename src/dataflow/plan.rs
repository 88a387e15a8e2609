//! What one run does (shared by all workers) and what each worker reports back.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::ingest::crawl_dir::SnapshotInput;
use crate::ingest::OddRows;
use crate::job::Job;
use crate::model::{Seq, SnapshotMeta};
use crate::output::commit::StageRecord;

/// A run's plan; every process derives the same plan from the same input and output.
#[derive(Debug)]
pub struct RunPlan {
    /// Name of the staging area, the same in every process.
    pub run: String,
    /// The snapshots to process, in order.
    pub snapshots: Vec<SnapshotInput>,
    /// The last committed snapshot, whose state the run starts from.
    pub restore: Option<Seq>,
    /// Every snapshot known to the output: committed ones and this run's.
    pub metas: BTreeMap<Seq, SnapshotMeta>,
    /// Where workers write (`OUT/_staging/<run>`).
    pub staging: PathBuf,
    /// The committed state to restore from (`OUT/_state`).
    pub state_dir: PathBuf,
    pub job: Job,
    /// RankMass: the input's `trust.parquet`, read once per process.
    pub trust: Option<std::sync::Arc<crate::ingest::TrustWeights>>,
    /// ECHO: the input's click log, read by every worker's share.
    pub clicks: Option<crate::ingest::crawl_dir::InputFile>,
    /// The host placement kept with the state being restored; `None` for a
    /// run from nothing (which measures one) or a state kept without one
    /// (which was placed by hash).
    pub placement: Option<crate::placement::Placement>,
}

impl RunPlan {
    /// The dataflow's epochs: the restore epoch (if any), then the new snapshots.
    pub fn epochs(&self) -> Vec<Seq> {
        self.restore
            .into_iter()
            .chain(self.snapshots.iter().map(|s| s.meta.seq))
            .collect()
    }

    /// The epoch after the last snapshot, at which the ledger persists its state.
    pub fn finish_epoch(&self) -> Seq {
        self.snapshots.last().expect("a run has snapshots").meta.seq + 1
    }

    /// Whether tables are written at `seq` (not at the restore epoch).
    pub fn writes(&self, seq: Seq) -> bool {
        Some(seq) != self.restore
    }

    pub fn meta(&self, seq: Seq) -> &SnapshotMeta {
        &self.metas[&seq]
    }

    /// The staging directory of a table, or of one of its partitions.
    pub fn table_dir(&self, table: &str, seq: Option<Seq>) -> PathBuf {
        let dir = self.staging.join(table);
        match seq {
            Some(s) => dir.join(format!("snapshot={s}")),
            None => dir,
        }
    }

    /// The directory of a table that is rewritten by every run, as the last
    /// committed run left it (the state's sibling).
    pub fn committed_table_dir(&self, table: &str) -> Option<PathBuf> {
        Some(self.state_dir.parent()?.join(table))
    }

    pub fn staged_state_dir(&self) -> PathBuf {
        self.staging.join(crate::output::commit::STATE)
    }

    /// The files of the state before the committed one, for this run's to
    /// be written over (see [`crate::output::commit::SPARE_STATE`]).
    pub fn spare_state_dir(&self) -> PathBuf {
        self.state_dir
            .with_file_name(crate::output::commit::SPARE_STATE)
    }

    pub fn worker_log_path(&self, index: usize) -> PathBuf {
        worker_log_path(&self.staging, index)
    }
}

pub fn worker_log_path(staging: &Path, index: usize) -> PathBuf {
    staging
        .join("_workers")
        .join(format!("worker-{index:05}.json"))
}

/// What one worker did, written to the staging area for process 0 to merge.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct WorkerLog {
    pub index: usize,
    /// Fatal problems with the input (exit code 2); any one prevents the commit.
    pub input_errors: Vec<String>,
    /// Other fatal problems; any one prevents the commit.
    pub errors: Vec<String>,
    pub odd: BTreeMap<Seq, OddRows>,
    pub rows: BTreeMap<String, u64>,
    pub pages_read: u64,
    pub links_read: u64,
    /// State records this worker read to continue from the last commit.
    pub state_records_read: u64,
    /// Wall time from starting to read a snapshot until all its tables were written.
    pub snapshot_seconds: BTreeMap<Seq, f64>,
    /// Wall time of writing the state and the rewritten tables after the last snapshot.
    pub finish_seconds: f64,
    /// The revisit plan's solve per snapshot: wall time from its pages to the
    /// final multiplier, and the rounds it took.
    pub revisit_seconds: BTreeMap<Seq, f64>,
    pub revisit_rounds: BTreeMap<Seq, u32>,
    /// The part of it this worker spent computing (the rest is waiting for rounds).
    pub revisit_compute_seconds: BTreeMap<Seq, f64>,
    /// Page and link rows this worker read per snapshot.
    pub snapshot_pages: BTreeMap<Seq, u64>,
    pub snapshot_links: BTreeMap<Seq, u64>,
    /// Worker 0 only: the stages with their wall time and process 0's peak memory.
    pub stages: Vec<StageRecord>,
}

impl WorkerLog {
    pub fn error(&mut self, e: impl std::fmt::Display) {
        self.errors.push(e.to_string());
    }
}
