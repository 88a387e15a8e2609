//! `webevo status`.

use std::path::PathBuf;

use crate::ingest::crawl_dir::format_time;
use crate::output::commit::OutputDir;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The output directory.
    #[arg(long)]
    output: PathBuf,
}

pub fn main(args: Args) -> anyhow::Result<()> {
    let out = OutputDir::new(&args.output);
    {
        let _lock = out.lock()?;
        out.recover()?;
    }
    match out.manifest()? {
        None => println!("{}: nothing committed yet", args.output.display()),
        Some(m) => {
            println!(
                "{}: {} committed snapshots",
                args.output.display(),
                m.snapshots.len()
            );
            for s in &m.snapshots {
                let kind = if s.partial { "partial" } else { "full" };
                println!("  snapshot {:>6}  {}  {kind}", s.seq, format_time(s.time));
            }
            println!("job: {}", m.job);
            println!("runs: {}", m.runs.len());
        }
    }
    Ok(())
}
