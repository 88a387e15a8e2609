//! Job files: the TOML as written ([`JobFile`]) and the checked job ([`Job`]).
//!
//! ```toml
//! # jobs/all.toml
//! analyses = []          # the foundation tables are always written
//! [output]
//! row_group_rows = 1048576
//! zstd_level = 3
//! ```
//! A job names the analyses to run and their parameters. The job is recorded in the
//! output's manifest, and a later run over the same output must use the same job,
//! since incremental results are only meaningful under unchanged parameters.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::JobError;
use crate::output::parquet::WriteSettings;

/// The analyses a job can name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Analysis {
    Discovery,
    Change,
    Echo,
    Rankmass,
}

impl Analysis {
    pub fn name(self) -> &'static str {
        match self {
            Analysis::Discovery => "discovery",
            Analysis::Change => "change",
            Analysis::Echo => "echo",
            Analysis::Rankmass => "rankmass",
        }
    }

    /// Whether this build of webevo implements the analysis.
    pub fn available(self) -> bool {
        matches!(self, Analysis::Discovery)
    }
}

/// A job file exactly as written.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobFile {
    #[serde(default)]
    pub analyses: Vec<Analysis>,
    #[serde(default)]
    pub output: OutputSection,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputSection {
    #[serde(default = "default_row_group_rows")]
    pub row_group_rows: usize,
    #[serde(default = "default_zstd_level")]
    pub zstd_level: i32,
}

impl Default for OutputSection {
    fn default() -> Self {
        OutputSection {
            row_group_rows: default_row_group_rows(),
            zstd_level: default_zstd_level(),
        }
    }
}

fn default_row_group_rows() -> usize {
    WriteSettings::default().row_group_rows
}

fn default_zstd_level() -> i32 {
    WriteSettings::default().zstd_level
}

/// A checked job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Job {
    pub analyses: Vec<Analysis>,
    pub write: WriteSettings,
}

impl Default for Job {
    fn default() -> Self {
        Job::check(JobFile::default(), Path::new("<default job>"))
            .expect("the default job is valid")
    }
}

impl Job {
    /// Reads and checks a job file.
    pub fn load(path: &Path) -> Result<Job, JobError> {
        let text = std::fs::read_to_string(path).map_err(|e| JobError::Invalid {
            path: path.to_path_buf(),
            problem: format!("cannot read job file: {e}"),
        })?;
        Job::parse(&text, path)
    }

    /// Parses and checks job file text; `path` is for messages.
    pub fn parse(text: &str, path: &Path) -> Result<Job, JobError> {
        let file: JobFile = toml::from_str(text).map_err(|e| JobError::Invalid {
            path: path.to_path_buf(),
            problem: e.to_string(),
        })?;
        Job::check(file, path)
    }

    fn check(file: JobFile, path: &Path) -> Result<Job, JobError> {
        let invalid = |problem: String| JobError::Invalid {
            path: path.to_path_buf(),
            problem,
        };
        let mut analyses = file.analyses;
        analyses.sort();
        analyses.dedup();
        if let Some(a) = analyses.iter().find(|a| !a.available()) {
            return Err(invalid(format!(
                "analysis {:?} is not implemented in this version of webevo (the foundation tables snapshots, host_snapshots and pages are always written)",
                a.name()
            )));
        }
        let o = file.output;
        if o.row_group_rows < 1024 {
            return Err(invalid(format!(
                "output.row_group_rows = {} is below 1024",
                o.row_group_rows
            )));
        }
        if !(1..=22).contains(&o.zstd_level) {
            return Err(invalid(format!(
                "output.zstd_level = {} is not in 1..=22",
                o.zstd_level
            )));
        }
        Ok(Job {
            analyses,
            write: WriteSettings {
                row_group_rows: o.row_group_rows,
                zstd_level: o.zstd_level,
            },
        })
    }

    /// The job as recorded in the manifest.
    pub fn record(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("job serializes")
    }
}

/// How many workers and processes, from the command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cluster {
    pub workers: usize,
    pub processes: usize,
    pub process: usize,
    pub addresses: Vec<String>,
}

impl Cluster {
    /// Checks the settings and reads the hostfile (one `host:port` per line, process 0 first).
    pub fn new(
        workers: usize,
        processes: usize,
        process: usize,
        hostfile: Option<&Path>,
    ) -> Result<Cluster, JobError> {
        let bad = |m: String| JobError::Setting(m);
        if workers == 0 {
            return Err(bad("-w must be at least 1".into()));
        }
        if processes == 0 || process >= processes {
            return Err(bad(format!("-p {process} must be below -n {processes}")));
        }
        let addresses = match (processes, hostfile) {
            (1, _) => Vec::new(),
            (_, None) => (0..processes)
                .map(|i| format!("localhost:{}", 2101 + i))
                .collect(),
            (_, Some(path)) => {
                let text = std::fs::read_to_string(path).map_err(|e| JobError::Invalid {
                    path: path.to_path_buf(),
                    problem: format!("cannot read hostfile: {e}"),
                })?;
                let lines: Vec<String> = text
                    .lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty() && !l.starts_with('#'))
                    .map(String::from)
                    .collect();
                if lines.len() < processes {
                    return Err(JobError::Invalid {
                        path: path.to_path_buf(),
                        problem: format!(
                            "hostfile lists {} addresses, -n {processes} needs that many",
                            lines.len()
                        ),
                    });
                }
                if let Some(l) = lines.iter().find(|l| !l.contains(':')) {
                    return Err(JobError::Invalid {
                        path: path.to_path_buf(),
                        problem: format!("{l:?} is not host:port"),
                    });
                }
                lines.into_iter().take(processes).collect()
            }
        };
        Ok(Cluster {
            workers,
            processes,
            process,
            addresses,
        })
    }

    pub fn total_workers(&self) -> usize {
        self.workers * self.processes
    }

    /// The timely configuration.
    pub fn timely_config(&self) -> timely::Config {
        use timely::communication::Config as Comm;
        let communication = if self.processes > 1 {
            Comm::Cluster {
                threads: self.workers,
                process: self.process,
                addresses: self.addresses.clone(),
                report: false,
                zerocopy: false,
            }
        } else if self.workers > 1 {
            Comm::Process(self.workers)
        } else {
            Comm::Thread
        };
        timely::Config {
            communication,
            worker: timely::WorkerConfig::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_unknown_keys_and_bad_values() {
        let p = Path::new("t.toml");
        assert!(Job::parse("analyses = []\nbogus = 1", p).is_err());
        assert!(Job::parse("[output]\nzstd_level = 99", p).is_err());
        assert!(Job::parse("analyses = [\"nope\"]", p).is_err());
        let j = Job::parse("[output]\nrow_group_rows = 4096", p).unwrap();
        assert_eq!(j.write.row_group_rows, 4096);
    }
}
