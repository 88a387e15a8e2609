//! `webevo generate`.

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::ValueEnum;

use crate::generate::{generate_scaled, Preset};

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum CliPreset {
    /// A few hundred pages, for unit tests.
    Tiny,
    /// About 50k pages over 8 snapshots; runs in well under a minute.
    Demo,
    /// About 1M pages and 10M links per snapshot, 10 snapshots.
    Bench,
}

impl From<CliPreset> for Preset {
    fn from(p: CliPreset) -> Preset {
        match p {
            CliPreset::Tiny => Preset::Tiny,
            CliPreset::Demo => Preset::Demo,
            CliPreset::Bench => Preset::Bench,
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Size of the synthetic web.
    #[arg(long, value_enum, default_value = "demo")]
    preset: CliPreset,
    /// Hosts and pages as a multiple of the preset's (the same shape of web;
    /// the benchmark's scaling runs use 0.5 and 2).
    #[arg(long, default_value_t = 1.0)]
    scale: f64,
    /// Skip the news crawl (`OUT/news`, ECHO's frequent partial crawl of front
    /// pages): its size does not follow --scale, and at the bench preset it
    /// takes most of the time.
    #[arg(long)]
    no_news: bool,
    /// Random seed; the same seed gives the same files.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The crawl directory to create.
    #[arg(long)]
    out: PathBuf,
    /// No output (progress lines appear only while stderr is a terminal).
    #[arg(short, long)]
    quiet: bool,
}

pub fn main(args: Args) -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    let lines = !args.quiet && std::io::stderr().is_terminal();
    let s = generate_scaled(
        args.preset.into(),
        args.scale,
        args.seed,
        &args.out,
        !args.no_news,
        &mut |line| {
            if lines {
                eprintln!("webevo: {line}")
            }
        },
    )?;
    if !args.quiet {
        eprintln!(
            "webevo: wrote {} snapshots ({} page rows, {} link rows, {} hosts) to {} in {:.1} s",
            s.snapshots,
            s.pages,
            s.links,
            s.hosts,
            args.out.display(),
            started.elapsed().as_secs_f64()
        );
        eprintln!(
            "  next: webevo run --input {} --output {}-out",
            args.out.display(),
            args.out.display()
        );
    }
    Ok(())
}
