//! Job files: the TOML as written ([`JobFile`]) and the checked job ([`Job`]).
//!
//! ```toml
//! # jobs/all.toml
//! analyses = []          # the foundation tables are always written
//! [output]
//! row_group_rows = 1048576
//! zstd_level = 3
//! ```
//! A job names the analyses to run and their parameters. The job is recorded in the
//! output's manifest, and a later run over the same output must use the same job,
//! since incremental results are only meaningful under unchanged parameters.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::JobError;
use crate::output::parquet::WriteSettings;

/// The analyses a job can name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Analysis {
    Discovery,
    Change,
    Echo,
    Rankmass,
    /// ECHO's policy simulation, after the run commits (needs `echo`).
    #[serde(rename = "echo_eval")]
    EchoEval,
}

impl Analysis {
    pub fn name(self) -> &'static str {
        match self {
            Analysis::Discovery => "discovery",
            Analysis::Change => "change",
            Analysis::Echo => "echo",
            Analysis::Rankmass => "rankmass",
            Analysis::EchoEval => "echo_eval",
        }
    }

    /// Whether this build of webevo implements the analysis.
    pub fn available(self) -> bool {
        matches!(
            self,
            Analysis::Discovery
                | Analysis::Change
                | Analysis::Echo
                | Analysis::Rankmass
                | Analysis::EchoEval
        )
    }
}

/// A job file exactly as written.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobFile {
    #[serde(default)]
    pub analyses: Vec<Analysis>,
    #[serde(default)]
    pub output: OutputSection,
    #[serde(default)]
    pub discovery: DiscoveryParams,
    #[serde(default)]
    pub change: ChangeParams,
    #[serde(default)]
    pub rankmass: RankmassParams,
    #[serde(default)]
    pub echo: EchoParams,
    #[serde(default)]
    pub echo_eval: EchoEvalParams,
}

/// How pages are grouped into sites.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SiteKey {
    /// A site is a host name.
    #[default]
    Host,
    /// A site is the host's registered domain under the public suffix list.
    RegisteredDomain,
}

/// The discovery analysis' parameters (`[discovery]`; docs/discovery.md). The site
/// key applies to the whole run: every per-host table is then per site.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DiscoveryParams {
    pub site_key: SiteKey,
    /// Clustering links pages with Jaccard overlap at least `1 - eps_b`.
    pub eps_b: f64,
    /// Decay of older recrawl rounds in the windowed policies.
    pub alpha: f64,
    /// Full recrawl period, in snapshots.
    pub delta: u32,
    /// Budgets of `policy_eval`.
    pub budgets: Vec<u64>,
    /// Budgets of `cover_curve`.
    pub curve_budgets: Vec<u64>,
    /// Budgets of `global_cover`.
    pub global_budgets: Vec<u64>,
}

impl Default for DiscoveryParams {
    fn default() -> Self {
        DiscoveryParams {
            site_key: SiteKey::Host,
            eps_b: 0.8,
            alpha: 1.0,
            delta: 1,
            budgets: vec![1, 10, 100, 1000, 10000],
            curve_budgets: vec![1, 2, 5, 10, 20, 50, 100, 200, 500, 1000],
            global_budgets: vec![1, 10, 100, 1000, 10000, 100000, 1000000],
        }
    }
}

impl DiscoveryParams {
    fn check(&self) -> Result<(), String> {
        if !(self.eps_b > 0.0 && self.eps_b <= 1.0) {
            return Err(format!("discovery.eps_b = {} is not in (0, 1]", self.eps_b));
        }
        if !(self.alpha > 0.0 && self.alpha <= 1.0) {
            return Err(format!("discovery.alpha = {} is not in (0, 1]", self.alpha));
        }
        if self.delta == 0 {
            return Err("discovery.delta must be at least 1".into());
        }
        for (name, b) in [
            ("budgets", &self.budgets),
            ("curve_budgets", &self.curve_budgets),
            ("global_budgets", &self.global_budgets),
        ] {
            if b.is_empty() || b.contains(&0) || !b.windows(2).all(|w| w[0] < w[1]) {
                return Err(format!(
                    "discovery.{name} = {b:?} must be positive and strictly increasing"
                ));
            }
        }
        Ok(())
    }
}

/// The change analysis' parameters (`[change]`; docs/change.md). Times are in days.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ChangeParams {
    /// Refresh cycle `C` of the crawl designs.
    pub cycle_days: f64,
    /// Batch length `B` of the batch designs.
    pub batch_days: f64,
    /// Fetches per day of the revisit plan.
    pub budget_per_day: f64,
    /// Pages with fewer intervals are planned with their directory's or host's rate.
    pub min_intervals: u32,
    /// The Bayesian rate classes, as mean change intervals.
    pub rate_classes_days: Vec<f64>,
    /// Bands `[lo, hi)` of the average change interval for the Poisson check.
    pub poisson_bands_days: Vec<[f64; 2]>,
    /// Bucket width of the Poisson check.
    pub poisson_bucket_days: f64,
    /// Starting interval of the adaptive back-off rule.
    pub backoff_start_days: f64,
}

impl Default for ChangeParams {
    fn default() -> Self {
        ChangeParams {
            cycle_days: 30.0,
            batch_days: 7.0,
            budget_per_day: 1000.0,
            min_intervals: 3,
            rate_classes_days: vec![1.0, 7.0, 30.0, 91.25, 365.0],
            poisson_bands_days: vec![[9.0, 11.0], [18.0, 22.0]],
            poisson_bucket_days: 1.0,
            backoff_start_days: 1.0,
        }
    }
}

impl ChangeParams {
    fn check(&self) -> Result<(), String> {
        let positive = |name: &str, v: f64| {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err(format!("change.{name} = {v} must be a positive number"))
            }
        };
        positive("cycle_days", self.cycle_days)?;
        positive("batch_days", self.batch_days)?;
        positive("budget_per_day", self.budget_per_day)?;
        positive("poisson_bucket_days", self.poisson_bucket_days)?;
        positive("backoff_start_days", self.backoff_start_days)?;
        if !(1.0 / 24.0..=365.0).contains(&self.backoff_start_days) {
            return Err(format!(
                "change.backoff_start_days = {} is outside the back-off rule's range [1/24, 365]",
                self.backoff_start_days
            ));
        }
        if self.batch_days > self.cycle_days {
            return Err(format!(
                "change.batch_days = {} is longer than change.cycle_days = {}",
                self.batch_days, self.cycle_days
            ));
        }
        let c = &self.rate_classes_days;
        if c.is_empty()
            || c.iter().any(|d| !(d.is_finite() && *d > 0.0))
            || !c.windows(2).all(|w| w[0] < w[1])
        {
            return Err(format!(
                "change.rate_classes_days = {c:?} must be positive and strictly increasing"
            ));
        }
        if let Some(b) = self
            .poisson_bands_days
            .iter()
            .find(|b| !(b[0].is_finite() && b[0] >= 0.0 && b[1].is_finite() && b[0] < b[1]))
        {
            return Err(format!(
                "change.poisson_bands_days: band {b:?} must be [lo, hi] with 0 <= lo < hi"
            ));
        }
        if self.poisson_bands_days.len() > 255 {
            return Err("change.poisson_bands_days: at most 255 bands".into());
        }
        Ok(())
    }

    /// The rate classes' rates, per second.
    pub fn class_rates(&self) -> Vec<f64> {
        self.rate_classes_days
            .iter()
            .map(|d| 1.0 / (d * crate::algo::change::DAY))
            .collect()
    }

    /// The name of rate class `i`: its mean interval in days, shortest form.
    pub fn class_name(&self, i: usize) -> String {
        crate::output::change::ClassName(self.rate_classes_days[i]).to_string()
    }
}

/// The ECHO analysis' parameters (`[echo]`; docs/echo.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EchoParams {
    /// `D`: pages linked from a main page are content sources once this old.
    pub content_age_days: f64,
    /// `n`: the new-link rate is taken over a source's last `n` crawls.
    pub crawls: u32,
    /// Clicks of a new page are followed for this long after it was found.
    pub click_horizon_hours: f64,
    /// The pessimistic `P` of a source without clicked pages, and its decay.
    pub default_profit: f64,
    pub default_half_life_hours: f64,
    /// The fitted decay is searched between these half-lives.
    pub min_half_life_hours: f64,
    pub max_half_life_hours: f64,
    /// Crawl rates `N` (fetches per second) the schedule is solved for.
    pub crawl_rates_per_s: Vec<f64>,
}

impl Default for EchoParams {
    fn default() -> Self {
        EchoParams {
            content_age_days: 3.0,
            crawls: 7,
            click_horizon_hours: 48.0,
            default_profit: 1.0,
            default_half_life_hours: 2.0,
            min_half_life_hours: 0.05,
            max_half_life_hours: 24.0 * 30.0,
            crawl_rates_per_s: vec![0.1, 0.2, 0.5, 1.0],
        }
    }
}

impl EchoParams {
    fn check(&self) -> Result<(), String> {
        let positive = [
            ("click_horizon_hours", self.click_horizon_hours),
            ("default_half_life_hours", self.default_half_life_hours),
            ("min_half_life_hours", self.min_half_life_hours),
            ("max_half_life_hours", self.max_half_life_hours),
        ];
        if let Some((name, v)) = positive.iter().find(|(_, v)| !(v.is_finite() && *v > 0.0)) {
            return Err(format!("echo.{name} = {v} must be a positive number"));
        }
        for (name, v) in [
            ("content_age_days", self.content_age_days),
            ("default_profit", self.default_profit),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(format!("echo.{name} = {v} must be a number >= 0"));
            }
        }
        if self.min_half_life_hours >= self.max_half_life_hours {
            return Err(format!(
                "echo.min_half_life_hours = {} is not below max_half_life_hours = {}",
                self.min_half_life_hours, self.max_half_life_hours
            ));
        }
        if self.crawls == 0 {
            return Err("echo.crawls must be at least 1".into());
        }
        if let Some(r) = self
            .crawl_rates_per_s
            .iter()
            .find(|r| !(r.is_finite() && **r > 0.0))
        {
            return Err(format!(
                "echo.crawl_rates_per_s: {r} is not a positive number"
            ));
        }
        Ok(())
    }

    /// The click horizon in seconds.
    pub fn horizon_s(&self) -> f64 {
        self.click_horizon_hours * 3600.0
    }
}

/// The ECHO policy simulation's parameters (`[echo_eval]`; docs/echo.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EchoEvalParams {
    /// Crawl rates `N` (fetches per second) every policy is simulated at.
    pub crawl_rates_per_s: Vec<f64>,
    /// Quality is measured after this warm-up.
    pub warmup_hours: f64,
    /// The window `T` of the dynamic quality.
    pub window_hours: f64,
    /// The schedule is re-solved this often from the estimates in force.
    pub replan_minutes: f64,
    /// Seeds BFS's random order of the sources.
    pub seed: u64,
}

impl Default for EchoEvalParams {
    fn default() -> Self {
        EchoEvalParams {
            crawl_rates_per_s: vec![0.02, 0.05, 0.1],
            warmup_hours: 6.0,
            window_hours: 6.0,
            replan_minutes: 30.0,
            seed: 1,
        }
    }
}

impl EchoEvalParams {
    fn check(&self) -> Result<(), String> {
        if self.crawl_rates_per_s.is_empty() {
            return Err("echo_eval.crawl_rates_per_s must list at least one rate".into());
        }
        if let Some(r) = self
            .crawl_rates_per_s
            .iter()
            .find(|r| !(r.is_finite() && **r > 0.0))
        {
            return Err(format!(
                "echo_eval.crawl_rates_per_s: {r} is not a positive number"
            ));
        }
        for (name, v) in [
            ("window_hours", self.window_hours),
            ("replan_minutes", self.replan_minutes),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(format!("echo_eval.{name} = {v} must be a positive number"));
            }
        }
        if !(self.warmup_hours.is_finite() && self.warmup_hours >= 0.0) {
            return Err(format!(
                "echo_eval.warmup_hours = {} must be a number >= 0",
                self.warmup_hours
            ));
        }
        Ok(())
    }
}

/// The RankMass analysis' parameters (`[rankmass]`; docs/rankmass.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RankmassParams {
    /// The damping factor `d`.
    pub damping: f64,
    /// PageRank stops at the first step whose L1 change is below this.
    pub tolerance: f64,
    pub max_iterations: u32,
    /// The over-relaxation `ω` of each step's sweep (1: Gauss-Seidel within
    /// hosts).
    pub relaxation: f64,
    /// Scale each host's ranks to its mass balance after each sweep. A step
    /// that shrinks the L1 change by less than `d` turns this and the
    /// relaxation off for the rest of the solve.
    pub host_balance: bool,
    /// Start each snapshot from the previous snapshot's vector.
    pub warm_start: bool,
    /// Also iterate from the trust vector, to report the steps a warm start saves.
    pub measure_cold: bool,
    /// Compute the crawl orderings (L-Neighbor, RankMass, Windowed-RankMass).
    pub orderings: bool,
    /// The windows of Windowed-RankMass, as fractions in (0, 1].
    pub windows: Vec<f64>,
    /// The orderings run until the guarantee reaches `1 - epsilon`.
    pub epsilon: f64,
    /// The single-page RankMass runs on worker 0, for graphs up to this many edges.
    pub single_page_max_edges: u64,
    /// Bounds the rounds of each windowed ordering.
    pub max_rounds: u32,
    /// At most this many candidates' `rm` a worker sends in a round to settle
    /// a window's threshold; past it, byte histograms narrow them first. The
    /// orders are the same either way.
    pub selection_values_max: u64,
    /// Extrapolate a step once the L1 changes shrink by a steady ratio
    /// (`algo::pagerank::Accelerated::take_extrapolation`).
    pub extrapolation: bool,
}

const DEFAULT_VALUES_MAX: u64 = 65_536;

impl Default for RankmassParams {
    fn default() -> Self {
        RankmassParams {
            damping: 0.85,
            tolerance: 1e-9,
            max_iterations: 1000,
            relaxation: 1.0,
            host_balance: true,
            warm_start: true,
            measure_cold: false,
            orderings: true,
            windows: vec![0.05, 0.1, 0.2, 1.0],
            epsilon: 0.001,
            single_page_max_edges: 2_000_000,
            max_rounds: 10_000,
            selection_values_max: DEFAULT_VALUES_MAX,
            extrapolation: true,
        }
    }
}

impl RankmassParams {
    fn check(&self) -> Result<(), String> {
        if !(self.damping > 0.0 && self.damping < 1.0) {
            return Err(format!(
                "rankmass.damping = {} is not in (0, 1)",
                self.damping
            ));
        }
        if !(self.tolerance >= 1e-15 && self.tolerance < 1.0) {
            return Err(format!(
                "rankmass.tolerance = {} is not in [1e-15, 1)",
                self.tolerance
            ));
        }
        if self.max_iterations == 0 {
            return Err("rankmass.max_iterations must be at least 1".into());
        }
        if !(self.relaxation >= 1.0 && self.relaxation < 2.0) {
            return Err(format!(
                "rankmass.relaxation = {} is not in [1, 2)",
                self.relaxation
            ));
        }
        if let Some(w) = self.windows.iter().find(|w| !(**w > 0.0 && **w <= 1.0)) {
            return Err(format!("rankmass.windows: {w} is not in (0, 1]"));
        }
        if !(self.epsilon > 0.0 && self.epsilon < 1.0) {
            return Err(format!(
                "rankmass.epsilon = {} is not in (0, 1)",
                self.epsilon
            ));
        }
        if self.max_rounds == 0 {
            return Err("rankmass.max_rounds must be at least 1".into());
        }
        Ok(())
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputSection {
    #[serde(default = "default_row_group_rows")]
    pub row_group_rows: usize,
    #[serde(default = "default_zstd_level")]
    pub zstd_level: i32,
}

impl Default for OutputSection {
    fn default() -> Self {
        OutputSection {
            row_group_rows: default_row_group_rows(),
            zstd_level: default_zstd_level(),
        }
    }
}

fn default_row_group_rows() -> usize {
    WriteSettings::default().row_group_rows
}

fn default_zstd_level() -> i32 {
    WriteSettings::default().zstd_level
}

/// A checked job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Job {
    pub analyses: Vec<Analysis>,
    pub write: WriteSettings,
    pub discovery: DiscoveryParams,
    pub change: ChangeParams,
    #[serde(default)]
    pub rankmass: RankmassParams,
    #[serde(default)]
    pub echo: EchoParams,
    #[serde(default)]
    pub echo_eval: EchoEvalParams,
}

impl Default for Job {
    fn default() -> Self {
        Job::check(JobFile::default(), Path::new("<default job>"))
            .expect("the default job is valid")
    }
}

impl Job {
    /// Reads and checks a job file.
    pub fn load(path: &Path) -> Result<Job, JobError> {
        let text = std::fs::read_to_string(path).map_err(|e| JobError::Invalid {
            path: path.to_path_buf(),
            problem: format!("cannot read job file: {e}"),
        })?;
        Job::parse(&text, path)
    }

    /// Parses and checks job file text; `path` is for messages.
    pub fn parse(text: &str, path: &Path) -> Result<Job, JobError> {
        let file: JobFile = toml::from_str(text).map_err(|e| JobError::Invalid {
            path: path.to_path_buf(),
            problem: e.to_string(),
        })?;
        Job::check(file, path)
    }

    fn check(file: JobFile, path: &Path) -> Result<Job, JobError> {
        let invalid = |problem: String| JobError::Invalid {
            path: path.to_path_buf(),
            problem,
        };
        let mut analyses = file.analyses;
        analyses.sort();
        analyses.dedup();
        if let Some(a) = analyses.iter().find(|a| !a.available()) {
            return Err(invalid(format!(
                "analysis {:?} is not implemented in this version of webevo (the foundation tables snapshots, host_snapshots and pages are always written)",
                a.name()
            )));
        }
        let o = file.output;
        if o.row_group_rows < 1024 {
            return Err(invalid(format!(
                "output.row_group_rows = {} is below 1024",
                o.row_group_rows
            )));
        }
        if !(1..=22).contains(&o.zstd_level) {
            return Err(invalid(format!(
                "output.zstd_level = {} is not in 1..=22",
                o.zstd_level
            )));
        }
        file.discovery.check().map_err(invalid)?;
        file.change.check().map_err(invalid)?;
        file.rankmass.check().map_err(invalid)?;
        file.echo.check().map_err(invalid)?;
        file.echo_eval.check().map_err(invalid)?;
        if analyses.contains(&Analysis::EchoEval) && !analyses.contains(&Analysis::Echo) {
            return Err(invalid(
                "analysis \"echo_eval\" simulates with the echo analysis' estimates: add \"echo\" to analyses".into(),
            ));
        }
        Ok(Job {
            analyses,
            discovery: file.discovery,
            change: file.change,
            rankmass: file.rankmass,
            echo: file.echo,
            echo_eval: file.echo_eval,
            write: WriteSettings {
                row_group_rows: o.row_group_rows,
                zstd_level: o.zstd_level,
            },
        })
    }

    /// The job as recorded in the manifest.
    pub fn record(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("job serializes")
    }

    /// Whether an output's recorded job is this one. A key that webevo gained
    /// after the output was made reads as its default, so the output goes on
    /// incrementally unless the job sets the key otherwise.
    pub fn matches_record(&self, recorded: &serde_json::Value) -> bool {
        serde_json::from_value::<Job>(recorded.clone())
            .is_ok_and(|then| then.record() == self.record())
    }
}

/// Updates' worth of merging an idle arrangement does per scheduling (see
/// [`Cluster::timely_config`]): the arrangements hold per-host and per-site
/// numbers, not pages or links, so a few activations compact one.
const IDLE_MERGE_EFFORT: isize = 100_000;

/// How many workers and processes, from the command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cluster {
    pub workers: usize,
    pub processes: usize,
    pub process: usize,
    pub addresses: Vec<String>,
    /// How long a process of a multi-process run waits for the others to connect.
    pub connect_timeout: std::time::Duration,
}

impl Cluster {
    /// Checks the settings and reads the hostfile (one `host:port` per line, process 0 first).
    pub fn new(
        workers: usize,
        processes: usize,
        process: usize,
        hostfile: Option<&Path>,
    ) -> Result<Cluster, JobError> {
        let bad = |m: String| JobError::Setting(m);
        if workers == 0 {
            return Err(bad("-w must be at least 1".into()));
        }
        if processes == 0 || process >= processes {
            return Err(bad(format!("-p {process} must be below -n {processes}")));
        }
        let addresses = match (processes, hostfile) {
            (1, _) => Vec::new(),
            (_, None) => (0..processes)
                .map(|i| format!("localhost:{}", 2101 + i))
                .collect(),
            (_, Some(path)) => {
                let text = std::fs::read_to_string(path).map_err(|e| JobError::Invalid {
                    path: path.to_path_buf(),
                    problem: format!("cannot read hostfile: {e}"),
                })?;
                let lines: Vec<String> = text
                    .lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty() && !l.starts_with('#'))
                    .map(String::from)
                    .collect();
                if lines.len() < processes {
                    return Err(JobError::Invalid {
                        path: path.to_path_buf(),
                        problem: format!(
                            "hostfile lists {} addresses, -n {processes} needs that many",
                            lines.len()
                        ),
                    });
                }
                if let Some(l) = lines.iter().find(|l| !l.contains(':')) {
                    return Err(JobError::Invalid {
                        path: path.to_path_buf(),
                        problem: format!("{l:?} is not host:port"),
                    });
                }
                lines.into_iter().take(processes).collect()
            }
        };
        Ok(Cluster {
            workers,
            processes,
            process,
            addresses,
            connect_timeout: std::time::Duration::from_secs(300),
        })
    }

    /// How many processes of the run share this process's machine, by the host
    /// part of their addresses as written (`localhost` and `127.0.0.1` count as
    /// two machines): they share its memory.
    pub fn processes_on_this_host(&self) -> usize {
        let host = |a: &str| a.rsplit_once(':').map_or(a, |(h, _)| h).to_string();
        match self.addresses.get(self.process) {
            Some(me) => {
                let me = host(me);
                self.addresses.iter().filter(|a| host(a) == me).count()
            }
            None => 1,
        }
    }

    pub fn total_workers(&self) -> usize {
        self.workers * self.processes
    }

    /// The timely configuration.
    pub fn timely_config(&self) -> timely::Config {
        use timely::communication::Config as Comm;
        let communication = if self.processes > 1 {
            Comm::Cluster {
                threads: self.workers,
                process: self.process,
                addresses: self.addresses.clone(),
                report: false,
                zerocopy: false,
            }
        } else if self.workers > 1 {
            Comm::Process(self.workers)
        } else {
            Comm::Thread
        };
        // An arrangement keeps a snapshot's contributions, and their
        // retraction at the next snapshot, in separate batches until a merge
        // cancels them, and merges only as new batches arrive: a run held
        // several snapshots' worth. Merging while idle compacts each one as
        // soon as its snapshot is done.
        let mut worker = timely::WorkerConfig::default();
        let merging =
            differential_dataflow::Config::default().idle_merge_effort(Some(IDLE_MERGE_EFFORT));
        differential_dataflow::configure(&mut worker, &merging);
        timely::Config {
            communication,
            worker,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_unknown_keys_and_bad_values() {
        let p = Path::new("t.toml");
        assert!(Job::parse("analyses = []\nbogus = 1", p).is_err());
        assert!(Job::parse("[output]\nzstd_level = 99", p).is_err());
        assert!(Job::parse("analyses = [\"nope\"]", p).is_err());
        let j = Job::parse("[output]\nrow_group_rows = 4096", p).unwrap();
        assert_eq!(j.write.row_group_rows, 4096);
        assert!(Job::parse("[discovery]\neps_b = 0", p).is_err());
        assert!(Job::parse("[discovery]\nbudgets = [10, 1]", p).is_err());
        assert!(Job::parse("[discovery]\nsite_key = \"domain\"", p).is_err());
        let j = Job::parse(
            "[discovery]\nsite_key = \"registered_domain\"\ndelta = 2",
            p,
        )
        .unwrap();
        assert_eq!(j.discovery.site_key, SiteKey::RegisteredDomain);
        assert_eq!(j.discovery.delta, 2);
        assert_eq!(j.discovery.eps_b, 0.8);
        assert!(Job::parse("[change]\nbudget_per_day = 0", p).is_err());
        assert!(Job::parse("[change]\nbatch_days = 60", p).is_err());
        assert!(Job::parse("[change]\npoisson_bands_days = [[3, 2]]", p).is_err());
        assert!(Job::parse("[change]\nrate_classes_days = [7, 1]", p).is_err());
        let j = Job::parse("analyses = [\"change\"]\n[change]\nbudget_per_day = 5", p).unwrap();
        assert_eq!(j.change.budget_per_day, 5.0);
        assert_eq!(j.change.class_name(3), "91.25d");
        assert_eq!(j.change.class_name(0), "1d");
        assert!(Job::parse("[rankmass]\nrelaxation = 0.9", p).is_err());
        assert!(Job::parse("[rankmass]\nrelaxation = 2", p).is_err());
        let j = Job::parse("[rankmass]\nrelaxation = 1", p).unwrap();
        assert_eq!(j.rankmass.relaxation, 1.0);
        assert!(j.rankmass.host_balance);
        let j = Job::parse("[rankmass]\nhost_balance = false", p).unwrap();
        assert!(!j.rankmass.host_balance);
    }

    /// An output recorded before a key existed matches a job that leaves the
    /// key at its default, and no other.
    #[test]
    fn a_recorded_job_without_a_newer_key_reads_it_as_its_default() {
        let p = Path::new("t.toml");
        let j = Job::parse("analyses = [\"rankmass\"]", p).unwrap();
        let mut old = j.record();
        assert!(j.matches_record(&old));
        let params = old["rankmass"].as_object_mut().unwrap();
        assert!(params.remove("selection_values_max").is_some());
        assert!(params.remove("extrapolation").is_some());
        assert!(j.matches_record(&old));
        let set = Job::parse(
            "analyses = [\"rankmass\"]\n[rankmass]\nextrapolation = false",
            p,
        );
        assert!(!set.unwrap().matches_record(&old));
        let other = Job::parse("analyses = [\"rankmass\"]\n[rankmass]\nmax_rounds = 4", p);
        assert!(!other.unwrap().matches_record(&old));
        // A record that is no job at all matches nothing.
        assert!(!j.matches_record(&serde_json::json!({"analyses": 1})));
    }

    #[test]
    fn processes_sharing_a_host_are_counted_from_the_hostfile() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("hosts");
        std::fs::write(&file, "a:2101\nb:2101\na:2102\n# c:1\n").unwrap();
        let on = |p| {
            Cluster::new(1, 3, p, Some(&file))
                .unwrap()
                .processes_on_this_host()
        };
        assert_eq!((on(0), on(1), on(2)), (2, 1, 2));
        // Without a hostfile every process is on localhost; alone, it is one.
        assert_eq!(
            Cluster::new(2, 4, 3, None)
                .unwrap()
                .processes_on_this_host(),
            4
        );
        assert_eq!(
            Cluster::new(2, 1, 0, None)
                .unwrap()
                .processes_on_this_host(),
            1
        );
    }
}
