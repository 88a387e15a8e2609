//! `webevo check`: read and parse a crawl directory without running anything.
//!
//! Answers "is this input good?" before a long run (the same errors as
//! `webevo run`, naming file, row and problem), and measures what reading costs
//! on its own: each snapshot is read by `-w` threads, each taking the share of
//! row groups a worker of a run takes, and its wall time is reported.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;

use crate::error::InputError;
use crate::ingest::crawl_dir::CrawlDir;
use crate::ingest::table::{Share, Turns};
use crate::ingest::{read_clicks, read_snapshot, read_trust, Discard, OddRows, ReadCounts};
use crate::job::{Job, SiteKey};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The crawl directory (see the README's input format).
    #[arg(long)]
    input: PathBuf,
    /// A job file, for its site key (which decides each page's host).
    #[arg(long)]
    job: Option<PathBuf>,
    /// Threads, each reading the share of every file that a worker reads.
    #[arg(short = 'w', long = "workers", default_value_t = 1)]
    workers: usize,
    /// Only these snapshots (by number; repeat the option for more).
    #[arg(long = "snapshot")]
    snapshots: Vec<u64>,
    /// Print one JSON object instead of lines of text.
    #[arg(long)]
    json: bool,
}

/// What was read of one snapshot.
#[derive(Debug, Serialize)]
struct SnapshotCheck {
    seq: u64,
    pages: u64,
    links: u64,
    odd_rows: OddRows,
    /// From the first file opened to the last row parsed, all threads.
    seconds: f64,
}

#[derive(Debug, Serialize)]
struct Check {
    input: PathBuf,
    workers: usize,
    snapshots: Vec<SnapshotCheck>,
    click_rows: Option<u64>,
    trust_pages: Option<usize>,
}

pub fn main(args: Args) -> anyhow::Result<()> {
    anyhow::ensure!(args.workers >= 1, "--workers must be at least 1");
    let site_key = match &args.job {
        Some(path) => Job::load(path)?.discovery.site_key,
        None => SiteKey::Host,
    };
    let crawl = CrawlDir::open(&args.input)?;
    for seq in &args.snapshots {
        if !crawl.snapshots.iter().any(|s| s.meta.seq == *seq) {
            let problem = format!(
                "no snapshot {seq} (see `ls {}/snapshots`)",
                args.input.display()
            );
            return Err(InputError::file(&args.input, problem).into());
        }
    }
    let mut check = Check {
        input: args.input.clone(),
        workers: args.workers,
        snapshots: Vec::new(),
        click_rows: None,
        trust_pages: None,
    };
    for snap in &crawl.snapshots {
        if !args.snapshots.is_empty() && !args.snapshots.contains(&snap.meta.seq) {
            continue;
        }
        let start = Instant::now();
        let shares = on_threads(args.workers, |share| {
            let mut odd = OddRows::default();
            let counts = read_snapshot(snap, &share, site_key, &mut odd, &mut Discard)?;
            Ok((counts, odd))
        })?;
        let mut total = SnapshotCheck {
            seq: snap.meta.seq,
            pages: 0,
            links: 0,
            odd_rows: OddRows::default(),
            seconds: start.elapsed().as_secs_f64(),
        };
        for (ReadCounts { pages, links }, odd) in shares {
            total.pages += pages;
            total.links += links;
            total.odd_rows.add(&odd);
        }
        if !args.json {
            println!(
                "snapshot {}: {} pages, {} links, {} odd rows (self-links {}, unparsable link URLs {}); read in {:.2} s",
                total.seq,
                total.pages,
                total.links,
                total.odd_rows.total(),
                total.odd_rows.self_links,
                total.odd_rows.unparsable_link_urls,
                total.seconds
            );
        }
        check.snapshots.push(total);
    }
    if let Some(file) = &crawl.clicks {
        let rows = on_threads(args.workers, |share| {
            let mut n = 0u64;
            read_clicks(file, &share, site_key, &mut |_| n += 1)?;
            Ok(n)
        })?;
        check.click_rows = Some(rows.iter().sum());
    }
    if let Some(file) = &crawl.trust {
        check.trust_pages = Some(read_trust(file, site_key)?.len());
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&check)?);
    } else {
        if let Some(n) = check.click_rows {
            println!("clicks: {n} rows with clicks");
        }
        if let Some(n) = check.trust_pages {
            println!("trust: {n} pages");
        }
        println!("{}: no errors", args.input.display());
    }
    Ok(())
}

/// Runs `read` for every share of `workers` on its own thread; the first error
/// (by share) wins.
fn on_threads<T: Send>(
    workers: usize,
    read: impl Fn(Share) -> Result<T, InputError> + Sync,
) -> anyhow::Result<Vec<T>> {
    // The threads take row groups in turn, as a run's workers do.
    let turns = Arc::new(Turns::new(0, 1));
    let results: Vec<_> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|index| {
                let read = &read;
                let turns = turns.clone();
                scope.spawn(move || {
                    read(Share {
                        index,
                        peers: workers,
                        turns: Some(turns),
                    })
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join()).collect()
    });
    let mut out = Vec::new();
    for r in results {
        let r = r.map_err(|_| anyhow::anyhow!("a reading thread panicked"))?;
        out.push(r?);
    }
    Ok(out)
}
