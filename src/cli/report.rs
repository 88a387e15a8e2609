//! `webevo report`.

use std::path::PathBuf;

use crate::report::{write, ReportRequest};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// An output directory of `webevo run`. Give it twice to draw on two (the
    /// demo keeps its 10-minute news crawl in a second output): each table is
    /// read from the first that has it.
    #[arg(long, required = true)]
    output: Vec<PathBuf>,
    /// Where to write the page [default: OUTPUT/report.html, the first OUTPUT].
    #[arg(long)]
    html: Option<PathBuf>,
    /// No summary line.
    #[arg(short, long)]
    quiet: bool,
}

pub fn main(args: Args) -> anyhow::Result<()> {
    let html = args
        .html
        .unwrap_or_else(|| args.output[0].join("report.html"));
    let started = std::time::Instant::now();
    let summary = write(&ReportRequest {
        outputs: args.output,
        html: html.clone(),
    })?;
    if !args.quiet {
        eprintln!(
            "webevo: wrote {} ({} figures, {:.1} MB) in {:.2} s; open it in a browser",
            html.display(),
            summary.figures,
            summary.bytes as f64 / 1e6,
            started.elapsed().as_secs_f64()
        );
        if !summary.missing.is_empty() {
            eprintln!(
                "  not in this output: {} (run those analyses to add them)",
                summary.missing.join(", ")
            );
        }
        if !summary.empty.is_empty() {
            eprintln!("  nothing to draw yet: {}", summary.empty.join(", "));
        }
    }
    Ok(())
}
