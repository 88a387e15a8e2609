//! The command line: clap types only; each subcommand lives in its own file.

mod check;
mod generate;
mod import;
mod report;
mod run;
mod schemas;
mod status;

use clap::{Parser, Subcommand};

/// Incremental crawl-snapshot statistics: discovery of new content, change and
/// freshness, ephemeral content sources (ECHO) and RankMass, written as Parquet.
#[derive(Debug, Parser)]
#[command(name = "webevo", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Write a synthetic crawl directory (an evolving web) with its true parameters.
    Generate(generate::Args),
    /// Convert link data from other tools (Archives Unleashed GDF, dated link
    /// tables) into a new crawl directory.
    Import(import::Args),
    /// Process every snapshot of the input that the output has not committed yet.
    Run(run::Args),
    /// Draw the papers' figures from an output as one self-contained HTML page.
    Report(report::Args),
    /// Write (or check) schemas/<table>.json from the code's table definitions.
    Schemas(schemas::Args),
    /// Show what an output directory holds (and finish an interrupted commit).
    Status(status::Args),
    /// Read and parse a crawl directory without running anything: its errors,
    /// its row counts, and how long reading takes.
    Check(check::Args),
}

/// A `--memory-limit` value: a size, or none.
#[derive(Clone, Copy, Debug)]
pub struct Budget(Option<u64>);

fn parse_budget(text: &str) -> Result<Budget, String> {
    crate::memory::parse_budget(text).map(Budget)
}

/// Starts the memory budget's watch: the given one, else 90% of what is free.
fn enforce_budget(budget: Option<Budget>) {
    enforce_shared_budget(budget, 1);
}

/// Starts the memory budget's watch of one of `sharing` processes on this
/// machine: the given budget, else an equal part of 90% of what is free.
fn enforce_shared_budget(budget: Option<Budget>, sharing: usize) {
    let default = || crate::memory::default_budget().map(|b| b / sharing.max(1) as u64);
    if let Some(limit) = budget.map_or_else(default, |b| b.0) {
        crate::memory::enforce_budget(limit, "--memory-limit");
    }
}

/// Runs the command line `args` (including the program name).
pub fn run<I, T>(args: I) -> anyhow::Result<()>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = Cli::try_parse_from(args)?;
    match cli.command {
        Command::Generate(a) => generate::main(a),
        Command::Import(a) => import::main(a),
        Command::Report(a) => report::main(a),
        Command::Run(a) => run::main(a),
        Command::Schemas(a) => schemas::main(a),
        Command::Status(a) => status::main(a),
        Command::Check(a) => check::main(a),
    }
}
