//! `webevo import`.

use std::path::PathBuf;

use clap::ValueEnum;

use crate::import::{format_date, import, Delimiter, Format, ImportRequest};

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum CliFormat {
    /// Archives Unleashed "Gephi GDF" host graphs (nodedef>/edgedef> with timeint dates).
    AutGdf,
    /// date, src, dst[, count] rows (TSV or CSV, optionally gzipped).
    DatedLinks,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum CliDelimiter {
    Tab,
    Comma,
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The input format.
    #[arg(long, value_enum)]
    format: CliFormat,
    /// An input file (repeat for several; their edges are merged by date).
    #[arg(long, required = true, num_args = 1..)]
    input: Vec<PathBuf>,
    /// The crawl directory to create (must not exist, or be empty).
    #[arg(long)]
    output: PathBuf,
    /// Mark the snapshots complete (a full crawl of their sites) instead of partial.
    #[arg(long)]
    complete: bool,
    /// Field separator of dated links (default: comma for .csv[.gz], else tab).
    #[arg(long, value_enum)]
    delimiter: Option<CliDelimiter>,
    /// No progress output.
    #[arg(short, long)]
    quiet: bool,
}

pub fn main(args: Args) -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    let req = ImportRequest {
        format: match args.format {
            CliFormat::AutGdf => Format::AutGdf,
            CliFormat::DatedLinks => Format::DatedLinks,
        },
        inputs: args.input,
        output: args.output,
        complete: args.complete,
        delimiter: args.delimiter.map(|d| match d {
            CliDelimiter::Tab => Delimiter::Tab,
            CliDelimiter::Comma => Delimiter::Comma,
        }),
    };
    let quiet = args.quiet;
    let s = import(&req, &mut |line| {
        if !quiet {
            eprintln!("webevo: {line}")
        }
    })?;
    if !quiet {
        let span = match (s.snapshots.first(), s.snapshots.last()) {
            (Some(a), Some(b)) => format!(", {} … {}", format_date(a.time), format_date(b.time)),
            _ => String::new(),
        };
        eprintln!(
            "webevo: imported {} {} snapshots{span} ({} page rows, {} link rows) from {} file(s), {} lines, into {} in {:.1} s",
            s.snapshots.len(),
            if req.complete { "complete" } else { "partial" },
            s.pages(),
            s.links(),
            s.files,
            s.lines,
            req.output.display(),
            started.elapsed().as_secs_f64()
        );
        if let Some(skipped) = s.skipped.describe() {
            eprintln!("webevo: left out: {skipped}");
        }
    }
    Ok(())
}
