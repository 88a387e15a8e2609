//! `webevo import`.

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::ValueEnum;

use crate::import::{format_date, import, Delimiter, Format, ImportRequest, SnapshotBy};

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum CliFormat {
    /// Archives Unleashed "Gephi GDF" host graphs (nodedef>/edgedef> with timeint dates).
    AutGdf,
    /// date, src, dst[, count] rows (TSV or CSV, optionally gzipped).
    DatedLinks,
    /// WARC files (.warc or .warc.gz): responses, revisits, links from HTML.
    Warc,
    /// Common Crawl host-graph releases: one directory of vertices and edges each.
    CcHostgraph,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum CliSnapshotBy {
    /// Each input file is one snapshot.
    File,
    /// Records by the UTC day of their WARC-Date.
    Day,
    /// Records by the week (Monday to Sunday, UTC) of their WARC-Date.
    Week,
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
    /// An input file, or a release directory for cc-hostgraph (repeat for several;
    /// their edges are merged by date).
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
    /// WARC: how records form snapshots (default: one per file).
    #[arg(long, value_enum)]
    snapshot_by: Option<CliSnapshotBy>,
    /// WARC and cc-hostgraph: a file of `INPUT<TAB>DATE` lines dating each input;
    /// inputs with the same date form one snapshot.
    #[arg(long)]
    snapshot_map: Option<PathBuf>,
    /// No output (progress lines appear only while stderr is a terminal).
    #[arg(short, long)]
    quiet: bool,
    /// Memory budget of this process, like 512M or 8G, or none: past it webevo
    /// stops with a clear error before the kernel's OOM killer acts, leaving the
    /// last commit intact [default: 90% of the memory free at start].
    #[arg(long, value_parser = super::parse_budget)]
    memory_limit: Option<super::Budget>,
}

pub fn main(args: Args) -> anyhow::Result<()> {
    super::enforce_budget(args.memory_limit);
    let started = std::time::Instant::now();
    let req = ImportRequest {
        format: match args.format {
            CliFormat::AutGdf => Format::AutGdf,
            CliFormat::DatedLinks => Format::DatedLinks,
            CliFormat::Warc => Format::Warc,
            CliFormat::CcHostgraph => Format::CcHostgraph,
        },
        inputs: args.input,
        output: args.output,
        complete: args.complete,
        delimiter: args.delimiter.map(|d| match d {
            CliDelimiter::Tab => Delimiter::Tab,
            CliDelimiter::Comma => Delimiter::Comma,
        }),
        snapshot_by: args.snapshot_by.map(|b| match b {
            CliSnapshotBy::File => SnapshotBy::File,
            CliSnapshotBy::Day => SnapshotBy::Day,
            CliSnapshotBy::Week => SnapshotBy::Week,
        }),
        snapshot_map: args.snapshot_map,
    };
    let quiet = args.quiet;
    // Progress lines for a person watching; the summary whenever not quiet.
    let lines = !quiet && std::io::stderr().is_terminal();
    let s = import(&req, &mut |line| {
        if lines {
            eprintln!("webevo: {line}")
        }
    })?;
    if !quiet {
        let span = match (s.snapshots.first(), s.snapshots.last()) {
            (Some(a), Some(b)) => format!(", {} … {}", format_date(a.time), format_date(b.time)),
            _ => String::new(),
        };
        // WARC files have records, not lines: their counts follow on the next line.
        let lines = match s.warc {
            Some(_) => String::new(),
            None => format!(", {} lines", s.lines),
        };
        eprintln!(
            "webevo: imported {} {} snapshots{span} ({} page rows, {} link rows) from {} file(s){lines}, into {} in {:.1} s",
            s.snapshots.len(),
            if req.complete { "complete" } else { "partial" },
            s.pages(),
            s.links(),
            s.files,
            req.output.display(),
            started.elapsed().as_secs_f64()
        );
        if let Some(warc) = &s.warc {
            eprintln!("webevo: {}", warc.describe());
        }
        if let Some(skipped) = s.skipped.describe() {
            eprintln!("webevo: left out: {skipped}");
        }
        eprintln!(
            "  next: webevo run --input {} --output {}-out",
            req.output.display(),
            req.output.display()
        );
    }
    Ok(())
}
