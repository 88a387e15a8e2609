//! `webevo run`: plan which snapshots are new, run the workers, commit.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use timely::dataflow::operators::Input as TimelyInput;

use crate::dataflow::plan::{worker_log_path, RunPlan, WorkerLog};
use crate::dataflow::{self, ledger_op, WorkerCtx};
use crate::error::{InputError, OutputError};
use crate::ingest::crawl_dir::{format_time, CrawlDir};
use crate::ingest::table::{Share, Turns};
use crate::ingest::{
    read_clicks, read_snapshot, read_trust, ClickObs, OddRows, PageBatcher, Record, RecordSink,
    CLICK_BIN,
};
use crate::job::{Analysis, Cluster, Job};
use crate::ledger::Ledger;
use crate::model::{Micros, Seq};
use crate::output::commit::{Manifest, OutputDir, RunRecord, StageRecord, FORMAT_VERSION};
use crate::placement::Placement;
use crate::state::STATE_VERSION;

/// What `webevo run` was asked to do.
#[derive(Clone, Debug)]
pub struct RunRequest {
    pub input: PathBuf,
    pub output: PathBuf,
    pub job: Job,
    pub cluster: Cluster,
    /// Print a summary at the end, and progress lines while stderr is a terminal.
    pub progress: bool,
}

/// What this process's workers share: the rows they read, for the progress
/// lines' rates, and the input's row groups, which they take in turn.
struct ProcessCounters {
    pages: AtomicU64,
    links: AtomicU64,
    /// The row groups of the input files, taken in turn by this process's workers.
    turns: Arc<Turns>,
}

/// What a run did: the record the manifest keeps of it.
pub type RunSummary = RunRecord;

/// Processes every snapshot of the input that the output has not committed yet.
pub fn run(req: &RunRequest) -> anyhow::Result<RunSummary> {
    let started = Instant::now();
    let crawl = CrawlDir::open(&req.input)?;
    let out = OutputDir::new(&req.output);
    let leader = req.cluster.process == 0;
    let _lock = if leader {
        let lock = out.lock()?;
        out.recover()?;
        Some(lock)
    } else {
        wait_for_commit(&out)?;
        None
    };
    let manifest = out.manifest()?;
    let Some(mut plan) = plan_run(&crawl, &out, manifest.as_ref(), &req.job)? else {
        if req.progress && leader {
            eprintln!(
                "webevo: {} is up to date with {}",
                req.output.display(),
                req.input.display()
            );
        }
        // The simulation runs after a commit; one cut short (a crash, a kill)
        // is finished now.
        if let Some(last) = manifest.as_ref().and_then(|m| m.runs.last()) {
            if leader && crate::echo_eval::evaluated_run(out.root()).as_ref() != Some(&last.run) {
                evaluate_echo(&crawl, &out, &last.run, req)?;
            }
        }
        return Ok(RunSummary::default());
    };
    if let Some(file) = &crawl.trust {
        if req.job.analyses.contains(&Analysis::Rankmass) {
            plan.trust = Some(Arc::new(read_trust(file, req.job.discovery.site_key)?));
        }
    }
    if req.job.analyses.contains(&Analysis::Echo) {
        plan.clicks = crawl.clicks.clone();
    }
    let plan = Arc::new(plan);
    // Progress lines only for a person watching; the summary whenever not quiet.
    let lines = req.progress && std::io::stderr().is_terminal();
    if lines && leader {
        eprintln!(
            "webevo: processing snapshots {} with {} worker(s) in {} process(es){}",
            seq_list(
                &plan
                    .snapshots
                    .iter()
                    .map(|s| s.meta.seq)
                    .collect::<Vec<_>>()
            ),
            req.cluster.total_workers(),
            req.cluster.processes,
            plan.restore
                .map(|r| format!(", continuing from committed snapshot {r}"))
                .unwrap_or_default()
        );
    }

    let worker_plan = plan.clone();
    let counters = Arc::new(ProcessCounters {
        pages: AtomicU64::new(0),
        links: AtomicU64::new(0),
        turns: Arc::new(Turns::new(req.cluster.process, req.cluster.processes)),
    });
    let processes = req.cluster.processes;
    let cluster = &req.cluster;
    let connected = (cluster.processes > 1).then(|| {
        crate::peers::watch(
            cluster.processes,
            cluster.process,
            &cluster.addresses[cluster.process],
            cluster.connect_timeout,
        )
    });
    let config = req.cluster.timely_config();
    let (builders, others) = config
        .communication
        .try_build_with(crate::exchange::counting_hooks())
        .map_err(|e| anyhow::anyhow!("could not start the workers: {e}"))?;
    let guards = timely::execute::execute_from(builders, others, config.worker, move |worker| {
        if let Some(c) = &connected {
            c.set();
        }
        let talk = lines.then_some(processes);
        let result = run_worker(worker, worker_plan.clone(), counters.clone(), talk);
        crate::memory::release_kept();
        result
    })
    .map_err(|e| anyhow::anyhow!("could not start the workers: {e}"))?;
    for result in guards.join() {
        match result {
            Ok(Ok(())) => {}
            Ok(Err(e)) => bail!("worker failed: {e}"),
            Err(e) => bail!("worker failed: {e}"),
        }
    }
    if !leader {
        return Ok(RunSummary::default());
    }

    let logs = read_worker_logs(&plan, req.cluster.total_workers())?;
    let mut summary = RunRecord {
        run: plan.run.clone(),
        snapshots: plan.snapshots.iter().map(|s| s.meta.seq).collect(),
        workers: req.cluster.total_workers(),
        seconds: started.elapsed().as_secs_f64(),
        ..RunRecord::default()
    };
    let mut errors = Vec::new();
    let mut input_errors = Vec::new();
    let mut per_snapshot: BTreeMap<Seq, (u64, u64)> = BTreeMap::new();
    for log in &logs {
        for (seq, n) in &log.snapshot_pages {
            per_snapshot.entry(*seq).or_default().0 += n;
        }
        for (seq, n) in &log.snapshot_links {
            per_snapshot.entry(*seq).or_default().1 += n;
        }
        errors.extend(log.errors.iter().cloned());
        input_errors.extend(log.input_errors.iter().cloned());
        for (t, odd) in &log.odd {
            summary.odd_rows.entry(*t).or_default().add(odd);
        }
        for (table, n) in &log.rows {
            *summary.rows.entry(table.clone()).or_default() += n;
        }
        summary.pages_read += log.pages_read;
        summary.links_read += log.links_read;
        summary.state_records_read += log.state_records_read;
        if log.index == 0 {
            summary.snapshot_seconds = log.snapshot_seconds.clone();
            summary.finish_seconds = log.finish_seconds;
            summary.revisit_seconds = log.revisit_seconds.clone();
            summary.revisit_rounds = log.revisit_rounds.clone();
            summary.revisit_compute_seconds = log.revisit_compute_seconds.clone();
            summary.stages = log.stages.clone();
        }
    }
    for stage in &mut summary.stages {
        match (stage.stage.as_str(), stage.snapshot) {
            ("snapshot", Some(seq)) => {
                let (pages, links) = per_snapshot.get(&seq).copied().unwrap_or_default();
                stage.pages_read = pages;
                stage.links_read = links;
                stage.odd_rows = summary.odd_rows.get(&seq).cloned().unwrap_or_default();
            }
            ("restore", _) => stage.state_records_read = summary.state_records_read,
            _ => {}
        }
    }
    if !input_errors.is_empty() || !errors.is_empty() {
        // Nothing is committed; drop the staging area now rather than at the next run.
        out.discard()?;
        input_errors.sort();
        errors.sort();
        if let Some(first) = input_errors.first() {
            let more = input_errors.len() + errors.len() - 1;
            let more = if more > 0 {
                format!(" (and {more} more problems)")
            } else {
                String::new()
            };
            return Err(InputError::Reported(format!("{first}{more}")).into());
        }
        bail!("the run failed: {}", errors.join("; "));
    }

    summary.peak_rss_bytes = crate::memory::overall_peak();
    let mut manifest = manifest.unwrap_or_else(|| Manifest {
        format_version: FORMAT_VERSION,
        state_version: STATE_VERSION,
        job: req.job.record(),
        snapshots: Vec::new(),
        runs: Vec::new(),
    });
    // The run rewrote the whole state, at this version.
    manifest.state_version = STATE_VERSION;
    manifest
        .snapshots
        .extend(plan.snapshots.iter().map(|s| s.meta.clone()));
    manifest.runs.push(summary.clone());
    out.commit(&plan.run, &manifest)?;
    if req.progress {
        print_summary(&summary, &req.output);
    }
    evaluate_echo(&crawl, &out, &plan.run, req)?;
    Ok(summary)
}

/// The policy simulation (`echo_eval`), when the job has it: over the whole
/// committed crawl, after committed run `run`. A crash here leaves the previous
/// table (it is renamed into place) and no record of `run`, so the next run,
/// even with nothing new to read, simulates again.
fn evaluate_echo(
    crawl: &CrawlDir,
    out: &OutputDir,
    run: &str,
    req: &RunRequest,
) -> anyhow::Result<()> {
    if !req.job.analyses.contains(&Analysis::EchoEval) {
        return Ok(());
    }
    let e = crate::echo_eval::evaluate(crawl, out.root(), &req.job, run)?;
    if req.progress {
        eprintln!(
            "webevo: echo_eval: {} rows, {} simulated events in {:.2} s (per policy: median {:.2}M, slowest {:.2}M events/s)",
            e.rows,
            e.events,
            e.seconds,
            e.median_events_per_s / 1e6,
            e.slowest_events_per_s / 1e6
        );
    }
    Ok(())
}

/// Decides which snapshots are new; `None` when there is nothing to do.
fn plan_run(
    crawl: &CrawlDir,
    out: &OutputDir,
    manifest: Option<&Manifest>,
    job: &Job,
) -> anyhow::Result<Option<RunPlan>> {
    let committed = manifest.map(|m| m.snapshots.as_slice()).unwrap_or(&[]);
    if let Some(m) = manifest {
        if !job.matches_record(&m.job) {
            return Err(OutputError::Conflict {
                path: out.root().to_path_buf(),
                problem: format!(
                    "this output was computed with a different job ({}); incremental results need the same job: use a new output directory",
                    m.job
                ),
            }
            .into());
        }
    }
    let last = committed.last();
    let mut metas: BTreeMap<Seq, _> = committed.iter().map(|m| (m.seq, m.clone())).collect();
    let mut new = Vec::new();
    for snap in &crawl.snapshots {
        let seq = snap.meta.seq;
        match metas.get(&seq) {
            Some(done) if last.is_some_and(|l| seq <= l.seq) => {
                if *done != snap.meta {
                    return Err(InputError::file(
                        snap.dir.join("snapshot.json"),
                        format!(
                            "snapshot {seq} was committed with time {} (partial: {}) and now says {} (partial: {}); use a new output directory to recompute",
                            format_time(done.time),
                            done.partial,
                            format_time(snap.meta.time),
                            snap.meta.partial
                        ),
                    )
                    .into());
                }
            }
            _ => {
                if let Some(l) = last {
                    if seq <= l.seq {
                        return Err(InputError::file(
                            &snap.dir,
                            format!("snapshot {seq} is older than the last committed snapshot {}: it cannot be added to this output", l.seq),
                        )
                        .into());
                    }
                    if snap.meta.time <= l.time {
                        return Err(InputError::file(
                            snap.dir.join("snapshot.json"),
                            format!(
                                "snapshot times must increase: snapshot {seq} is at {}, not after committed snapshot {} at {}",
                                format_time(snap.meta.time),
                                l.seq,
                                format_time(l.time)
                            ),
                        )
                        .into());
                    }
                }
                metas.insert(seq, snap.meta.clone());
                new.push(snap.clone());
            }
        }
    }
    let (Some(first), Some(lastnew)) = (new.first(), new.last()) else {
        return Ok(None);
    };
    let run = format!("run-{}-{}", first.meta.seq, lastnew.meta.seq);
    Ok(Some(RunPlan {
        staging: out.staging(&run),
        run,
        snapshots: new,
        restore: last.map(|l| l.seq),
        metas,
        state_dir: out.state_dir(),
        job: job.clone(),
        trust: None,
        clicks: None,
        placement: match last {
            Some(_) => Placement::load(&out.state_dir())?,
            None => None,
        },
    }))
}

/// Where this run's workers keep each host: as the restored state was placed
/// (for this many workers), by hash for a state kept without a placement, or,
/// from nothing, balanced over the page counts of the first snapshot (see
/// [`crate::placement`]; a collective step of all workers).
fn place_hosts(worker: &mut timely::worker::Worker, plan: &RunPlan, share: &Share) -> Placement {
    let peers = worker.peers();
    if plan.restore.is_some() {
        return match &plan.placement {
            Some(p) => p.for_peers(peers),
            None => Placement::hashed(peers),
        };
    }
    let first = &plan.snapshots[0];
    let site_key = plan.job.discovery.site_key;
    crate::placement::measure(worker, |visit| {
        // A file that cannot be read leaves its hosts to the hash; the
        // snapshot's read then reports the error.
        let _ = crate::ingest::read_page_hosts(first, share, site_key, visit);
    })
}

/// One worker: feed the restore state and every snapshot, one epoch at a time.
fn run_worker(
    worker: &mut timely::worker::Worker,
    plan: Arc<RunPlan>,
    counters: Arc<ProcessCounters>,
    talk: Option<usize>,
) -> Result<(), String> {
    let index = worker.index();
    let peers = worker.peers();
    let log = Rc::new(RefCell::new(WorkerLog {
        index,
        ..WorkerLog::default()
    }));
    let share = Share {
        index,
        peers,
        turns: Some(counters.turns.clone()),
    };
    let talk = talk.filter(|_| index == 0);
    // Worker 0 times the stages and measures process 0's memory in each.
    let timed = index == 0;
    // Bytes exchanged with the other processes by the end of the last stage.
    let exchanged = Cell::new(0u64);
    let stage = |name: &str, snapshot: Option<Seq>, started: Instant| {
        if timed {
            let now = crate::exchange::bytes_so_far();
            let before = exchanged.replace(now);
            log.borrow_mut().stages.push(StageRecord {
                stage: name.into(),
                snapshot,
                seconds: started.elapsed().as_secs_f64(),
                peak_rss_bytes: crate::memory::stage_peak(),
                exchange_bytes: now - before,
                ..StageRecord::default()
            });
        }
    };
    if timed {
        crate::memory::start_stage();
    }
    let placing = Instant::now();
    let placement = Arc::new(place_hosts(worker, &plan, &share));
    if plan.restore.is_none() {
        let first = plan.snapshots[0].meta.seq;
        stage("placement", Some(first), placing);
        if talk.is_some() {
            eprintln!(
                "webevo: placed the {} largest hosts of snapshot {first} on {peers} worker(s) in {:.2} s",
                placement.pins.len(),
                placing.elapsed().as_secs_f64()
            );
        }
    }
    let ctx = WorkerCtx {
        plan: plan.clone(),
        log: log.clone(),
        index,
        peers,
        ledger: Rc::new(RefCell::new(Ledger::default())),
        placement,
        syncing: Rc::default(),
    };
    let (mut input, probe) = worker.dataflow::<Seq, _, _>(|scope| {
        let (input, records) = scope.new_input::<Vec<Record>>();
        let probe = dataflow::build(scope, records, &ctx);
        (input, probe)
    });
    let run_started = Instant::now();

    if let Some(r) = plan.restore {
        input.advance_to(r);
        if timed {
            crate::memory::start_stage();
        }
        let started = Instant::now();
        let mut records = 0u64;
        // With as many workers as wrote the state, the ledger reads its own
        // part files in place (see `ledger_op::restore`); else they are routed.
        let result = match crate::state::own_parts(&plan.state_dir, peers, index) {
            Ok(Some(_)) => Ok(()),
            Ok(None) => ledger_op::send_state(&ctx, peers, &mut |rec| {
                records += 1;
                input.send(rec)
            }),
            Err(e) => Err(e),
        };
        let mut l = log.borrow_mut();
        l.state_records_read += records;
        if let Err(e) = result {
            l.error(e);
        }
        drop(l);
        input.advance_to(r + 1);
        input.flush();
        worker.step_or_park_while(None, || probe.less_than(input.time()));
        stage("restore", Some(r), started);
        if talk.is_some() {
            eprintln!(
                "webevo: restored state of snapshot {r} in {:.2} s",
                started.elapsed().as_secs_f64()
            );
        }
    }
    let mut clicks = match read_click_share(&plan, &share) {
        Ok(c) => c,
        Err(e) => {
            log.borrow_mut().input_errors.push(e.to_string());
            BTreeMap::new()
        }
    };
    let total = plan.snapshots.len();
    for (i, snap) in plan.snapshots.iter().enumerate() {
        let seq = snap.meta.seq;
        if timed {
            crate::memory::start_stage();
            crate::memory::set_current_snapshot(Some(seq));
        }
        // The reading sets the run's peak: freed memory goes back at once.
        crate::freed_hold::release();
        let started = Instant::now();
        input.advance_to(seq);
        let mut odd = OddRows::default();
        // After a fatal error anywhere in this worker, stop reading: the run
        // cannot commit, but the dataflow must still see every epoch close.
        let failed = !log.borrow().input_errors.is_empty();
        if !failed {
            // Step the dataflow now and then, so records move on to the ledgers
            // (32 bytes a link there) instead of queueing in the input's channels.
            // A batch of pages counts as the pages it holds: stepping every
            // 64K batches left a whole pages file queued (50 MB on bench
            // snapshot 9).
            let mut sent = 0u64;
            let mut send = |rec: Record| {
                let before = sent;
                sent += rec.rows();
                input.send(rec);
                if sent >> 16 != before >> 16 {
                    input.flush();
                    worker.step();
                }
            };
            // Pages and mentions travel in a batch per worker.
            let owner = |h| ctx.placement.owner(h);
            let mut batcher = PageBatcher::new(peers, &owner, &mut send);
            for c in clicks.remove(&seq).unwrap_or_default() {
                batcher.record(Record::Click(Box::new(c)));
            }
            let site_key = plan.job.discovery.site_key;
            let read = read_snapshot(snap, &share, site_key, &mut odd, &mut batcher);
            batcher.flush();
            drop(batcher);
            match read {
                Ok(counts) => {
                    crate::failpoint::hit("ingest");
                    let mut l = log.borrow_mut();
                    l.pages_read += counts.pages;
                    l.links_read += counts.links;
                    l.snapshot_pages.insert(seq, counts.pages);
                    l.snapshot_links.insert(seq, counts.links);
                    drop(l);
                    counters.pages.fetch_add(counts.pages, Ordering::Relaxed);
                    counters.links.fetch_add(counts.links, Ordering::Relaxed);
                }
                Err(e) => log.borrow_mut().input_errors.push(e.to_string()),
            }
        }
        log.borrow_mut().odd.entry(seq).or_default().add(&odd);
        input.advance_to(seq + 1);
        input.flush();
        worker.step_or_park_while(None, || probe.less_than(input.time()));
        log.borrow_mut()
            .snapshot_seconds
            .insert(seq, started.elapsed().as_secs_f64());
        stage("snapshot", Some(seq), started);
        if let Some(processes) = talk {
            // Every worker of this process has read its share once the probe passed.
            let pages = counters.pages.swap(0, Ordering::Relaxed);
            let links = counters.links.swap(0, Ordering::Relaxed);
            let mut line = progress_line(
                seq,
                i + 1,
                total,
                started.elapsed().as_secs_f64(),
                pages,
                links,
                run_started.elapsed().as_secs_f64(),
            );
            if processes > 1 {
                line.push_str(" (rates of process 0)");
            }
            eprintln!("{line} [{}]", format_time(snap.meta.time));
        }
    }

    // The ledgers write their state and the `pages` table at the finish epoch.
    if timed {
        crate::memory::start_stage();
        crate::memory::set_current_snapshot(None);
    }
    let started = Instant::now();
    input.advance_to(plan.finish_epoch() + 1);
    input.flush();
    worker.step_or_park_while(None, || probe.less_than(input.time()));
    for file in ctx.syncing.take() {
        if let Err(e) = file.wait() {
            log.borrow_mut().error(e);
        }
    }
    log.borrow_mut().finish_seconds = started.elapsed().as_secs_f64();
    stage("finish", None, started);
    if talk.is_some() {
        eprintln!(
            "webevo: state and pages table written in {:.2} s",
            started.elapsed().as_secs_f64()
        );
    }

    // Every table and state file is written once the probe passed the finish epoch.
    // Write this worker's log, then close the input: when the probe's frontier
    // is empty, every worker of every process has written its log.
    let path = plan.worker_log_path(index);
    let text = serde_json::to_vec(&*log.borrow()).expect("log serializes");
    std::fs::create_dir_all(path.parent().unwrap())
        .and_then(|_| std::fs::write(&path, text))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    drop(input);
    worker.step_or_park_while(None, || !probe.done());
    Ok(())
}

/// This worker's share of the click log, by the snapshot at which each row
/// counts: the first whose time is at or after the end of the row's bin. Rows
/// of snapshots committed before this run were counted then; rows after the
/// last snapshot wait for the run that brings a later one.
fn read_click_share(
    plan: &RunPlan,
    share: &Share,
) -> Result<BTreeMap<Seq, Vec<ClickObs>>, InputError> {
    let mut out: BTreeMap<Seq, Vec<ClickObs>> = BTreeMap::new();
    let Some(file) = &plan.clicks else {
        return Ok(out);
    };
    let times: Vec<(Micros, Seq)> = plan.metas.iter().map(|(s, m)| (m.time, *s)).collect();
    let first_new = plan.snapshots.first().map_or(Seq::MAX, |s| s.meta.seq);
    read_clicks(file, share, plan.job.discovery.site_key, &mut |c| {
        let end = c.time + CLICK_BIN;
        let k = times.partition_point(|(t, _)| *t < end);
        if let Some(&(_, seq)) = times.get(k) {
            if seq >= first_new {
                out.entry(seq).or_default().push(c);
            }
        }
    })?;
    Ok(out)
}

fn read_worker_logs(plan: &RunPlan, workers: usize) -> anyhow::Result<Vec<WorkerLog>> {
    (0..workers)
        .map(|i| {
            let path = worker_log_path(&plan.staging, i);
            let text = std::fs::read(&path)
                .with_context(|| format!("worker {i} left no log at {}", path.display()))?;
            serde_json::from_slice(&text)
                .with_context(|| format!("unreadable worker log {}", path.display()))
        })
        .collect()
}

/// Non-leader processes must not read the manifest while process 0 is applying a
/// commit left by an interrupted run.
fn wait_for_commit(out: &OutputDir) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(600);
    while out.commit_pending() {
        if Instant::now() > deadline {
            bail!(
                "{} has an unfinished commit; start process 0 (it completes the commit)",
                out.root().display()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(())
}

/// Snapshot numbers for people: `[3, 5, 8]`, or `0..=287 (288)` for a long run.
fn seq_list(seqs: &[Seq]) -> String {
    match (seqs.first(), seqs.last()) {
        (Some(a), Some(b)) if seqs.len() > 8 => format!("{a}..={b} ({})", seqs.len()),
        _ => format!("{seqs:?}"),
    }
}

fn print_summary(s: &RunSummary, output: &std::path::Path) {
    eprintln!(
        "webevo: committed snapshots {} in {:.2} s ({} pages, {} links read), peak memory {:.0} MiB",
        seq_list(&s.snapshots),
        s.seconds,
        s.pages_read,
        s.links_read,
        s.peak_rss_bytes as f64 / (1 << 20) as f64
    );
    for (table, rows) in &s.rows {
        eprintln!("  {table:<16} {rows:>12} rows");
    }
    let odd: OddRows = s.odd_rows.values().fold(OddRows::default(), |mut acc, o| {
        acc.add(o);
        acc
    });
    if odd.total() > 0 {
        eprintln!(
            "  odd input rows skipped: {} self-links, {} links with unparsable URLs, {} duplicate links, {} duplicate pages",
            odd.self_links, odd.unparsable_link_urls, odd.duplicate_links, odd.duplicate_pages
        );
    }
    let out = output.display();
    eprintln!("  output: {out} (Parquet, one directory per table)");
    eprintln!("  next: webevo report --output {out} --html {out}/report.html");
}

/// One progress line: the snapshot, its rates, and the time left at the mean
/// pace so far.
fn progress_line(
    seq: Seq,
    done: usize,
    total: usize,
    seconds: f64,
    pages: u64,
    links: u64,
    elapsed: f64,
) -> String {
    let rate = |n: u64| {
        let r = n as f64 / seconds.max(1e-9);
        if r >= 1e6 {
            format!("{:.1}M", r / 1e6)
        } else {
            format!("{:.0}k", r / 1e3)
        }
    };
    let left = total - done;
    let eta = if left == 0 {
        String::new()
    } else {
        let s = (elapsed / done as f64 * left as f64).round() as u64;
        format!(", ETA {}:{:02}", s / 60, s % 60)
    };
    format!(
        "webevo: snapshot {seq} ({done}/{total}) in {seconds:.2} s: {} pages/s, {} links/s{eta}",
        rate(pages),
        rate(links)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_lines_give_rates_and_the_time_left() {
        // 3 of 8 snapshots in 30 s: 10 s each, 50 s left.
        assert_eq!(
            progress_line(4, 3, 8, 2.0, 100_000, 3_000_000, 30.0),
            "webevo: snapshot 4 (3/8) in 2.00 s: 50k pages/s, 1.5M links/s, ETA 0:50"
        );
        // The last snapshot: no ETA.
        assert_eq!(
            progress_line(7, 8, 8, 1.0, 2_000, 0, 80.0),
            "webevo: snapshot 7 (8/8) in 1.00 s: 2k pages/s, 0k links/s"
        );
    }
}
