//! `webevo run`.

use std::path::PathBuf;

use crate::job::{Cluster, Job};
use crate::run::{run, RunRequest};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The crawl directory (see the README's input format).
    #[arg(long)]
    input: PathBuf,
    /// The output directory; created if absent, continued if present.
    #[arg(long)]
    output: PathBuf,
    /// The job file naming the analyses and their parameters.
    #[arg(long, default_value = "jobs/all.toml")]
    job: PathBuf,
    /// Worker threads per process.
    #[arg(short = 'w', long = "workers", default_value_t = 1)]
    workers: usize,
    /// Number of processes (each started with its own -p).
    #[arg(short = 'n', long = "processes", default_value_t = 1)]
    processes: usize,
    /// This process's index, from 0.
    #[arg(short = 'p', long = "process", default_value_t = 0)]
    process: usize,
    /// File of host:port lines, one per process (default: localhost:2101, 2102, ...).
    #[arg(long)]
    hostfile: Option<PathBuf>,
    /// Seconds a process of a multi-process run waits for the others to connect.
    #[arg(long, default_value_t = 300)]
    connect_timeout: u64,
    /// No output (progress lines appear only while stderr is a terminal).
    #[arg(short, long)]
    quiet: bool,
    /// Memory budget of this process, like 512M or 8G, or none: past it webevo
    /// stops with a clear error before the kernel's OOM killer acts, leaving the
    /// last commit intact [default: 90% of the memory free at start, shared
    /// equally by the processes the hostfile puts on this machine].
    #[arg(long, value_parser = super::parse_budget)]
    memory_limit: Option<super::Budget>,
}

pub fn main(args: Args) -> anyhow::Result<()> {
    let mut cluster = Cluster::new(
        args.workers,
        args.processes,
        args.process,
        args.hostfile.as_deref(),
    )?;
    super::enforce_shared_budget(args.memory_limit, cluster.processes_on_this_host());
    let job = Job::load(&args.job)?;
    cluster.connect_timeout = std::time::Duration::from_secs(args.connect_timeout);
    run(&RunRequest {
        input: args.input,
        output: args.output,
        job,
        cluster,
        progress: !args.quiet,
    })?;
    Ok(())
}
