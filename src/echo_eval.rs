//! The `echo_eval` analysis: ECHO's policy simulation over the whole crawl
//! (`algo::echo_sim`), run by the leader process after a run commits.
//!
//! The dynamic link graph is rebuilt from the crawl directory: every time a
//! snapshot fetches a content source, a link to a new page that was not on its
//! list opens a span at the snapshot's time and a link no longer listed closes
//! its span (so appearance and disappearance are known to the crawl's
//! resolution). Only links to new pages (first seen after the first snapshot)
//! matter. The policies read the `λ, P, μ` the `echo` analysis estimated at each
//! snapshot (`source_estimates`), so a simulated crawler at time `t` knows only
//! what the estimates knew then. The simulation is one crawler's sequential
//! process over the sources' links and the click log; the (policy, crawl rate)
//! pairs run in parallel threads.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::path::Path;

use anyhow::Context;
use arrow_array::cast::AsArray;
use arrow_array::types::Float64Type;
use arrow_array::Array;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use crate::algo::echo::Source;
use crate::algo::echo_sim::{simulate, Estimates, Policy, SimResult, SimSettings, Span, World};
use crate::ingest::crawl_dir::CrawlDir;
use crate::ingest::table::Share;
use crate::ingest::{read_clicks, read_snapshot, OddRows, Record};
use crate::job::{EchoEvalParams, Job};
use crate::model::{Micros, PageId};
use crate::output::batch::{RowContext, RowWriter, TableRow};
use crate::output::parquet::write_rows;
use crate::output::schema::{TableDef, ECHO_EVAL};

/// A row of `echo_eval`.
#[derive(Clone, Debug, PartialEq)]
pub struct EchoEvalRow {
    pub rate: f64,
    pub policy: Policy,
    pub result: SimResult,
}

impl TableRow for EchoEvalRow {
    const TABLE: &'static TableDef = &ECHO_EVAL;
    fn write(&self, _: &RowContext, out: &mut RowWriter) {
        let r = &self.result;
        out.f64(self.rate);
        out.str(self.policy.name());
        out.f64(r.overall_quality);
        out.f64(r.dynamic_quality_mean);
        out.f64(r.dynamic_quality_std);
        out.i64(r.fetches as i64);
        out.i64(r.source_fetches as i64);
        out.i64(r.new_page_fetches as i64);
    }
}

/// What the evaluation did.
#[derive(Clone, Debug, Default)]
pub struct EvalSummary {
    pub rows: u64,
    pub events: u64,
    pub seconds: f64,
    /// Events per second of the slowest and the median simulated policy.
    pub slowest_events_per_s: f64,
    pub median_events_per_s: f64,
}

/// The file in `echo_eval/` naming the committed run the table was simulated
/// after (readers of `*.parquet` skip it, and Spark skips names starting `_`).
const EVALUATED_RUN: &str = "_evaluated_run";

/// The committed run `out/echo_eval/` was simulated after, if any.
pub fn evaluated_run(out: &Path) -> Option<String> {
    std::fs::read_to_string(out.join(ECHO_EVAL.name).join(EVALUATED_RUN)).ok()
}

/// Simulates every policy at every crawl rate of the job over `crawl`, with the
/// estimates committed in `out` by run `run`, and (re)writes `out/echo_eval/`,
/// recording `run` last: a simulation cut short is redone by the next run.
pub fn evaluate(crawl: &CrawlDir, out: &Path, job: &Job, run: &str) -> anyhow::Result<EvalSummary> {
    let started = std::time::Instant::now();
    let params = &job.echo_eval;
    let (urls, estimates) = read_estimates(crawl, out)?;
    let world = build_world(crawl, &urls, job)?;
    let settings: Vec<(f64, Policy)> = params
        .crawl_rates_per_s
        .iter()
        .flat_map(|&r| Policy::ALL.iter().map(move |&p| (r, p)))
        .collect();
    let timed: Vec<(SimResult, f64)> = parallel_map(&settings, |&(rate, policy)| {
        let started = std::time::Instant::now();
        let r = simulate(&world, &estimates, policy, &sim_settings(params, rate));
        (r, started.elapsed().as_secs_f64())
    });
    // Events per second of each simulated policy (the upper bound is no crawl).
    let mut speeds: Vec<f64> = settings
        .iter()
        .zip(&timed)
        .filter(|(s, _)| s.1 != Policy::UpperBound)
        .map(|(_, (r, secs))| r.events as f64 / secs.max(1e-9))
        .collect();
    speeds.sort_by(f64::total_cmp);
    let rows: Vec<EchoEvalRow> = settings
        .iter()
        .zip(timed)
        .map(|(&(rate, policy), (result, _))| EchoEvalRow {
            rate,
            policy,
            result,
        })
        .collect();
    // Written beside its final name and renamed: readers see the old table or the new one.
    let dir = out.join(ECHO_EVAL.name);
    std::fs::create_dir_all(&dir).with_context(|| format!("Could not create {}", dir.display()))?;
    let tmp = dir.join(".part-00000.parquet.tmp");
    let n = write_rows(&tmp, &rows, &RowContext { snapshot: None }, &job.write)?;
    std::fs::rename(&tmp, dir.join("part-00000.parquet"))
        .with_context(|| format!("Could not write {}", dir.display()))?;
    let stamp = dir.join(format!(".{EVALUATED_RUN}.tmp"));
    std::fs::write(&stamp, run)
        .and_then(|()| std::fs::rename(&stamp, dir.join(EVALUATED_RUN)))
        .with_context(|| format!("Could not write {}", dir.display()))?;
    Ok(EvalSummary {
        rows: n,
        events: rows.iter().map(|r| r.result.events).sum(),
        seconds: started.elapsed().as_secs_f64(),
        slowest_events_per_s: speeds.first().copied().unwrap_or(0.0),
        median_events_per_s: speeds.get(speeds.len() / 2).copied().unwrap_or(0.0),
    })
}

fn sim_settings(p: &EchoEvalParams, rate: f64) -> SimSettings {
    SimSettings {
        rate,
        replan_s: p.replan_minutes * 60.0,
        warmup_s: p.warmup_hours * 3600.0,
        window_s: p.window_hours * 3600.0,
        step_s: 120.0,
        seed: p.seed,
    }
}

/// `f` over `items` on the machine's cores, in order.
fn parallel_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut out: Vec<Option<R>> = (0..items.len()).map(|_| None).collect();
    let slots = std::sync::Mutex::new(&mut out);
    std::thread::scope(|s| {
        for _ in 0..threads.min(items.len()) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(item) = items.get(i) else { break };
                let r = f(item);
                slots.lock().expect("no thread panicked")[i] = Some(r);
            });
        }
    });
    out.into_iter()
        .map(|r| r.expect("every item ran"))
        .collect()
}

/// The content sources' URLs (sorted) and their estimates per snapshot, from
/// `out/source_estimates`.
fn read_estimates(crawl: &CrawlDir, out: &Path) -> anyhow::Result<(Vec<String>, Estimates)> {
    let table = out.join("source_estimates");
    let times: HashMap<u64, Micros> = crawl
        .snapshots
        .iter()
        .map(|s| (s.meta.seq, s.meta.time))
        .collect();
    let mut per_snapshot: Vec<(Micros, Vec<(String, Source)>)> = Vec::new();
    let mut urls = HashSet::new();
    let entries = std::fs::read_dir(&table).with_context(|| {
        format!(
            "{} is missing: echo_eval needs the echo analysis' estimates",
            table.display()
        )
    })?;
    for entry in entries {
        let dir = entry?.path();
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let Some(seq) = name
            .strip_prefix("snapshot=")
            .and_then(|s| s.parse::<u64>().ok())
        else {
            continue;
        };
        let Some(&time) = times.get(&seq) else {
            continue;
        };
        let mut list = Vec::new();
        for part in std::fs::read_dir(&dir)? {
            let path = part?.path();
            if path.extension().is_none_or(|e| e != "parquet") {
                continue;
            }
            let file =
                File::open(&path).with_context(|| format!("Could not open {}", path.display()))?;
            for batch in ParquetRecordBatchReaderBuilder::try_new(file)?.build()? {
                let batch = batch?;
                let col = |name: &str| {
                    batch
                        .column_by_name(name)
                        .with_context(|| format!("{} has no column {name}", path.display()))
                };
                let url = col("url")?.as_string::<i32>().clone();
                let lambda = col("lambda_per_s")?.as_primitive::<Float64Type>().clone();
                let p = col("p_profit")?.as_primitive::<Float64Type>().clone();
                let mu = col("mu_per_s")?.as_primitive::<Float64Type>().clone();
                for r in 0..batch.num_rows() {
                    urls.insert(url.value(r).to_string());
                    if !lambda.is_null(r) {
                        list.push((
                            url.value(r).to_string(),
                            Source {
                                lambda: lambda.value(r),
                                profit: p.value(r),
                                mu: mu.value(r),
                            },
                        ));
                    }
                }
            }
        }
        per_snapshot.push((time, list));
    }
    per_snapshot.sort_by_key(|s| s.0);
    let mut urls: Vec<String> = urls.into_iter().collect();
    urls.sort();
    let index: HashMap<&str, usize> = urls
        .iter()
        .enumerate()
        .map(|(i, u)| (u.as_str(), i))
        .collect();
    let mut est = Estimates::default();
    for (time, list) in per_snapshot {
        let mut params = vec![None; urls.len()];
        for (url, s) in list {
            params[index[url.as_str()]] = Some(s);
        }
        est.times.push(time);
        est.params.push(params);
    }
    Ok((urls, est))
}

/// The sources' link spans to new pages, and the new pages' clicks.
fn build_world(crawl: &CrawlDir, urls: &[String], job: &Job) -> anyhow::Result<World> {
    let sources: HashMap<PageId, usize> = urls
        .iter()
        .enumerate()
        .map(|(i, u)| (PageId::of(u), i))
        .collect();
    let mut world = World {
        start: crawl.snapshots.first().map_or(0, |s| s.meta.time),
        end: crawl.snapshots.last().map_or(0, |s| s.meta.time),
        sources: vec![Vec::new(); urls.len()],
        clicks: Vec::new(),
    };
    let mut known: HashSet<PageId> = HashSet::new();
    let mut pages: HashMap<PageId, u32> = HashMap::new();
    // Per source, its listed new pages and their open spans.
    let mut open: Vec<HashMap<PageId, usize>> = vec![HashMap::new(); urls.len()];
    let site_key = job.discovery.site_key;
    for (k, snap) in crawl.snapshots.iter().enumerate() {
        let now = snap.meta.time;
        let mut fetched = Vec::new();
        let mut lists: HashMap<usize, Vec<PageId>> = HashMap::new();
        let mut seen = Vec::new();
        read_snapshot(
            snap,
            &Share::dealt(0, 1),
            site_key,
            &mut OddRows::default(),
            &mut |r| match r {
                Record::Page(p) => {
                    seen.push(p.page);
                    if let Some(&i) = sources.get(&p.page) {
                        fetched.push(i);
                    }
                }
                Record::Link(l) => {
                    seen.push(l.dst);
                    if let Some(&i) = sources.get(&l.src) {
                        lists.entry(i).or_default().push(l.dst);
                    }
                }
                Record::Mention(m) => seen.push(m.page),
                _ => {}
            },
        )?;
        // A page is new if no earlier snapshot knew it (the first snapshot's are old).
        let new: HashSet<PageId> = if k == 0 {
            HashSet::new()
        } else {
            seen.iter()
                .filter(|p| !known.contains(p))
                .copied()
                .collect()
        };
        known.extend(seen);
        // In source order, each list sorted: page numbers must not depend on hashing.
        let mut covered: Vec<usize> = fetched
            .iter()
            .copied()
            .chain(lists.keys().copied())
            .collect();
        covered.sort_unstable();
        covered.dedup();
        for i in covered {
            let mut list: Vec<PageId> = lists.remove(&i).unwrap_or_default();
            list.sort_unstable();
            list.dedup();
            // Close the spans of links no longer listed.
            let spans = &mut world.sources[i];
            open[i].retain(|p, span| {
                let keep = list.binary_search(p).is_ok();
                if !keep {
                    spans[*span].disappear = now;
                }
                keep
            });
            for p in list {
                if open[i].contains_key(&p) {
                    continue;
                }
                let page = match pages.get(&p) {
                    Some(&page) => page,
                    None if new.contains(&p) => {
                        let page = world.clicks.len() as u32;
                        world.clicks.push(Vec::new());
                        pages.insert(p, page);
                        page
                    }
                    None => continue,
                };
                open[i].insert(p, world.sources[i].len());
                world.sources[i].push(Span {
                    appear: now,
                    disappear: Micros::MAX,
                    page,
                });
            }
        }
    }
    for spans in &mut world.sources {
        spans.sort_unstable();
    }
    if let Some(file) = &crawl.clicks {
        read_clicks(file, &Share::dealt(0, 1), site_key, &mut |c| {
            if let Some(&page) = pages.get(&c.page) {
                world.clicks[page as usize].push((c.time, c.clicks));
            }
        })?;
    }
    for rows in &mut world.clicks {
        rows.sort_unstable();
    }
    Ok(world)
}
