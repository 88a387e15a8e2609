//! Synthetic evolving web: writes a crawl directory of successive full snapshots, a click
//! log and the ground truth the pipeline's estimates can be checked against.
//!
//! The simulated web is built to exercise the four analyses of `ALGORITHMS.md`:
//!
//! - *Discovery* (Dasgupta et al., "The Discoverability of the Web", WWW 2007): new
//!   articles appear on front pages (main page "what's new", section hubs, mirrored
//!   hubs with identical lists), some only through chains of other new articles, some
//!   as orphans; new hosts appear, linked from old front pages or only from other new
//!   hosts.
//! - *Change* (Cho & Garcia-Molina, VLDB 2000): every page has a true Poisson change rate
//!   drawn from the paper's per-domain mix; digests change exactly when content does;
//!   snapshots are weekly on average with jitter and skipped weeks.
//! - *ECHO* (Lefortier et al., CIKM 2013): front pages are content sources with a true
//!   profit and click decay; new articles get Poisson clicks in 20-minute bins.
//! - *RankMass* (Cho & Schonfeld, VLDB 2007): heavy-tailed host sizes and cross-host links
//!   that prefer large hosts give a skewed PageRank.
//!
//! # Output
//!
//! ```text
//! OUT/snapshots/<seq>/{snapshot.json, pages.parquet, links.parquet}
//! OUT/clicks.parquet
//! OUT/truth/{pages, sources, hosts, snapshots}.parquet
//! OUT/news/…   the frequent partial crawl of news front pages (see `news`)
//! ```
//!
//! Output is a pure function of `(preset, seed)`: one seeded PCG stream drives the
//! simulation on the calling thread, and writer threads only encode finished rows.

mod change;
mod clicks;
mod clock;
mod crosslinks;
mod evolve;
mod model;
mod names;
mod news;
mod presets;
mod random;
mod snapshot;
mod truth;
mod urls;
mod write;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::mpsc;
use std::sync::Mutex;

use anyhow::{bail, Context};

use clicks::ClickLog;
use clock::Micros;
use model::Web;
use presets::Params;
use snapshot::Crawl;
use urls::UrlView;

/// Size of the generated web.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Preset {
    /// 5 snapshots, about 15 hosts and a few hundred pages: for unit tests.
    Tiny,
    /// 8 snapshots of about 50,000 pages and 400,000 links on about 1,000 hosts.
    Demo,
    /// 10 snapshots of about 1,000,000 pages and 10,000,000 links.
    Bench,
}

/// What [`generate`] wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GenerateSummary {
    pub snapshots: usize,
    /// Page rows written, over all snapshots.
    pub pages: u64,
    /// Link rows written, over all snapshots.
    pub links: u64,
    /// Hosts that ever existed.
    pub hosts: u64,
    /// The news crawl (`OUT/news`): partial snapshots, front pages, articles.
    pub news_snapshots: usize,
    pub news_sources: usize,
    pub news_articles: usize,
}

/// Threads that encode and compress snapshot files while the simulation runs ahead.
const WRITERS: usize = 2;

/// Writes a crawl directory at `out` (created if absent; fails if `out/snapshots`
/// already exists and is not empty). `progress` gets one line per snapshot written.
pub fn generate(
    preset: Preset,
    seed: u64,
    out: &Path,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<GenerateSummary> {
    generate_scaled(preset, 1.0, seed, out, true, progress)
}

/// [`generate`] with `scale` times the preset's hosts and pages (the same shape
/// of web, bigger or smaller: for measuring how costs grow with size), and the
/// news crawl only when `news` (its size is the preset's at any scale, and at
/// the bench preset it takes most of the time: runs that never read it skip it).
pub fn generate_scaled(
    preset: Preset,
    scale: f64,
    seed: u64,
    out: &Path,
    news: bool,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<GenerateSummary> {
    if !(scale > 0.0 && scale.is_finite()) {
        bail!("the scale must be a positive number, not {scale}");
    }
    let snapshots = out.join("snapshots");
    if snapshots.is_dir() && snapshots.read_dir()?.next().is_some() {
        bail!("{} already exists and is not empty", snapshots.display());
    }
    let truth = out.join("truth");
    for dir in [&snapshots, &truth] {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("Could not create {}", dir.display()))?;
    }
    let total = Params::of(preset).snapshots;

    let (jobs, job_queue) = mpsc::sync_channel::<(Crawl, UrlView)>(1);
    let job_queue = Mutex::new(job_queue);
    let (done, finished) = mpsc::channel();
    std::thread::scope(|scope| {
        for _ in 0..WRITERS {
            let (job_queue, done, snapshots) = (&job_queue, done.clone(), &snapshots);
            scope.spawn(move || write_snapshots(job_queue, &done, snapshots));
        }
        drop(done);

        let mut report = Report::new(total, progress);
        let run = simulate(preset, scale, seed, |crawl, urls| {
            while let Ok(written) = finished.try_recv() {
                report.add(written?);
            }
            jobs.send((crawl, urls))
                .context("a snapshot writer stopped")
        });
        drop(jobs);
        // The truth and the click log are written while the last snapshots are.
        let hosts = run.and_then(|mut run| {
            let urls = run.web.urls.view();
            truth::write_truth(&truth, &run.web, &run.clicks, &urls, &run.times)?;
            write::write_clicks(&out.join("clicks.parquet"), &run.clicks.rows, &urls)?;
            Ok(run.web.hosts.len() as u64)
        });
        for written in finished {
            report.add(written?);
        }
        let hosts = hosts?;
        let (news_snapshots, news_sources, news_articles) = if news {
            let news = news::generate_news(preset, seed, &out.join("news"), &mut *report.progress)?;
            (news.snapshots, news.sources, news.articles)
        } else {
            (0, 0, 0)
        };
        Ok(GenerateSummary {
            news_snapshots,
            news_sources,
            news_articles,
            snapshots: total,
            pages: report.pages,
            links: report.links,
            hosts,
        })
    })
}

/// A snapshot on disk: its sequence number, page rows and link rows.
type Written = (usize, usize, usize);

/// A writer thread: writes the snapshots it takes from `jobs` under `snapshots`, and
/// reports each (or its error) to `done`, until `jobs` closes.
fn write_snapshots(
    jobs: &Mutex<mpsc::Receiver<(Crawl, UrlView)>>,
    done: &mpsc::Sender<anyhow::Result<Written>>,
    snapshots: &Path,
) {
    loop {
        let job = jobs.lock().expect("no writer panicked").recv();
        let Ok((crawl, urls)) = job else { break };
        let dir = snapshots.join(crawl.seq.to_string());
        let written = write::write_crawl(&dir, &crawl, &urls, false)
            .map(|()| (crawl.seq, crawl.pages.len(), crawl.links.len()));
        if done.send(written).is_err() {
            break;
        }
    }
}

/// The state left when the simulation ends.
struct Run {
    web: Web,
    /// Click rows sorted by time then page.
    clicks: ClickLog,
    times: Vec<Micros>,
}

/// Runs the simulation of `(preset, seed)`, handing every snapshot with the URLs of all
/// pages so far to `sink`, in order.
fn simulate(
    preset: Preset,
    scale: f64,
    seed: u64,
    mut sink: impl FnMut(Crawl, UrlView) -> anyhow::Result<()>,
) -> anyhow::Result<Run> {
    let params = Params::of(preset).scaled(scale);
    let mut rng = random::sim_rng(preset as u64 + 1, seed);
    let times = clock::schedule(params.snapshots, &mut rng);
    let mut web = Web::initial(params, &mut rng, times[0]);
    let mut clicks = ClickLog::default();
    for (seq, &now) in times.iter().enumerate() {
        let prev = seq.checked_sub(1).map(|s| times[s]);
        if let Some(prev) = prev {
            web.advance(&mut rng, prev, now);
        }
        let crawl = web.crawl(&mut rng, seq, prev, now);
        if let Some(prev) = prev {
            clicks.log_new_articles(&web, &mut rng, prev, now);
        }
        sink(crawl, web.urls.view())?;
    }
    clicks.sort();
    Ok(Run { web, clicks, times })
}

/// Reports finished snapshots in order, whatever order the writers finish them in.
struct Report<'a> {
    total: usize,
    progress: &'a mut dyn FnMut(&str),
    /// Snapshots written but not reported yet: their page and link rows.
    waiting: BTreeMap<usize, (usize, usize)>,
    next: usize,
    pages: u64,
    links: u64,
}

impl<'a> Report<'a> {
    fn new(total: usize, progress: &'a mut dyn FnMut(&str)) -> Self {
        Report {
            total,
            progress,
            waiting: BTreeMap::new(),
            next: 0,
            pages: 0,
            links: 0,
        }
    }

    fn add(&mut self, (seq, pages, links): Written) {
        self.waiting.insert(seq, (pages, links));
        while let Some((pages, links)) = self.waiting.remove(&self.next) {
            self.pages += pages as u64;
            self.links += links as u64;
            (self.progress)(&format!(
                "snapshot {}/{}: {pages} pages, {links} links (snapshots/{})",
                self.next + 1,
                self.total,
                self.next
            ));
            self.next += 1;
        }
    }
}
