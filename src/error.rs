//! Error types of the library layers; every variant says where the problem is.

use std::path::PathBuf;

/// Where in an input file a problem was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Position {
    /// The file as a whole (its name, its header, its schema).
    File,
    /// A 1-based line of a text file (the header is line 1).
    Line(u64),
    /// A 0-based row of a Parquet file, counted across row groups.
    Row(u64),
    /// A 1-based record of a WARC file, and the byte where it starts in the
    /// uncompressed stream.
    Record { number: u64, offset: u64 },
}

impl std::fmt::Display for Position {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Position::File => Ok(()),
            Position::Line(n) => write!(f, ", line {n}"),
            Position::Row(n) => write!(f, ", row {n}"),
            Position::Record { number, offset } => {
                write!(f, ", record {number} (uncompressed byte {offset})")
            }
        }
    }
}

/// A problem with the input crawl directory. Exit code 2.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("{}{position}: {problem}", path.display())]
    At {
        path: PathBuf,
        position: Position,
        problem: String,
    },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A problem a worker found and reported as text.
    #[error("{0}")]
    Reported(String),
}

impl InputError {
    pub fn at(path: impl Into<PathBuf>, position: Position, problem: impl Into<String>) -> Self {
        InputError::At {
            path: path.into(),
            position,
            problem: problem.into(),
        }
    }

    pub fn file(path: impl Into<PathBuf>, problem: impl Into<String>) -> Self {
        Self::at(path, Position::File, problem)
    }

    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        InputError::Io {
            path: path.into(),
            source,
        }
    }
}

/// A problem with a job file or the command line's settings. Exit code 2.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    #[error("{}: {problem}", path.display())]
    Invalid { path: PathBuf, problem: String },
    #[error("{0}")]
    Setting(String),
}

/// A problem reading or writing the output directory. Exit code 1.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: {source}", path.display())]
    Parquet {
        path: PathBuf,
        #[source]
        source: parquet::errors::ParquetError,
    },
    #[error("{}: {problem}", path.display())]
    Corrupt { path: PathBuf, problem: String },
    #[error("{}: {problem}", path.display())]
    Conflict { path: PathBuf, problem: String },
}

impl OutputError {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        OutputError::Io {
            path: path.into(),
            source,
        }
    }
}

/// The exit code a person or a script can act on: 2 for bad input or settings,
/// 1 for everything else.
pub fn exit_code(err: &anyhow::Error) -> u8 {
    for cause in err.chain() {
        if cause.is::<InputError>() || cause.is::<JobError>() {
            return 2;
        }
        if let Some(OutputError::Conflict { .. }) = cause.downcast_ref::<OutputError>() {
            return 2;
        }
    }
    1
}
