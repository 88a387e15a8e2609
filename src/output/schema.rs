//! Every output table, defined once: names, types, nullability and meaning.
//!
//! `schemas/<table>.json` is generated from these definitions (`webevo schemas`), and
//! a test fails when the files and the code disagree. Per-snapshot tables are
//! Hive-partitioned by `snapshot`: the column lives in the directory name
//! (`snapshot=<seq>`), not in the files, as Spark requires.

use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};

/// The logical type of an output column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColType {
    Int64,
    Int32,
    Float64,
    Utf8,
    Bool,
    /// Microseconds since the Unix epoch, UTC.
    Timestamp,
}

/// The time zone of every timestamp column.
pub const TIME_ZONE: &str = "UTC";

impl ColType {
    pub fn arrow(self) -> DataType {
        match self {
            ColType::Int64 => DataType::Int64,
            ColType::Int32 => DataType::Int32,
            ColType::Float64 => DataType::Float64,
            ColType::Utf8 => DataType::Utf8,
            ColType::Bool => DataType::Boolean,
            ColType::Timestamp => {
                DataType::Timestamp(TimeUnit::Microsecond, Some(TIME_ZONE.into()))
            }
        }
    }

    fn name(self) -> &'static str {
        match self {
            ColType::Int64 => "int64",
            ColType::Int32 => "int32",
            ColType::Float64 => "float64",
            ColType::Utf8 => "string",
            ColType::Bool => "boolean",
            ColType::Timestamp => "timestamp[us, UTC]",
        }
    }
}

/// One output column.
#[derive(Debug)]
pub struct ColumnDef {
    pub name: &'static str,
    pub ty: ColType,
    pub nullable: bool,
    pub doc: &'static str,
    /// The column's values are nearly all distinct (a page's URL, a fetch
    /// time), or at least far too many for a dictionary: written without
    /// one, which would be dropped after a page's worth of tries, and
    /// delta-encoded (see `output::parquet`).
    pub distinct: bool,
}

impl ColumnDef {
    /// The column, marked [`ColumnDef::distinct`].
    const fn distinct(self) -> ColumnDef {
        ColumnDef {
            distinct: true,
            ..self
        }
    }
}

/// One output table.
#[derive(Debug)]
pub struct TableDef {
    pub name: &'static str,
    /// Hive-partitioned by `snapshot` (one directory per snapshot) or one file set
    /// rewritten by every run.
    pub partitioned: bool,
    pub doc: &'static str,
    pub columns: &'static [ColumnDef],
}

const fn c(name: &'static str, ty: ColType, nullable: bool, doc: &'static str) -> ColumnDef {
    ColumnDef {
        name,
        ty,
        nullable,
        doc,
        distinct: false,
    }
}

use ColType::*;

pub static SNAPSHOTS: TableDef = TableDef {
    name: "snapshots",
    partitioned: true,
    doc: "One row per snapshot: what the crawl saw and how it differs from the previous snapshot.",
    columns: &[
        c("time", Timestamp, false, "The snapshot's time, from its snapshot.json."),
        c("partial", Bool, false, "Whether the snapshot is partial (says nothing about pages it did not fetch)."),
        c("pages_fetched", Int64, false, "Distinct pages fetched in this snapshot."),
        c("pages_known", Int64, false, "Distinct pages fetched or named by a link in this snapshot."),
        c("new_pages", Int64, false, "Fetched pages seen (fetched or linked) in no earlier snapshot."),
        c("gone_pages", Int64, false, "Pages alive before (fetched in the last full snapshot or a partial one since) that this full snapshot did not fetch; 0 for partial snapshots."),
        c("changed_pages", Int64, false, "Fetched pages whose content digest differs from their previous observation."),
        c("links", Int64, false, "Distinct (src, dst) links, self-links excluded."),
        c("new_links", Int64, false, "Links present now and not in the previous snapshot."),
        c("removed_links", Int64, false, "Links present in the previous snapshot and not now."),
        c("hosts", Int64, false, "Hosts with at least one fetched page."),
        c("new_hosts", Int64, false, "Hosts with fetched pages none of whose pages was known before."),
    ],
};

pub static HOST_SNAPSHOTS: TableDef = TableDef {
    name: "host_snapshots",
    partitioned: true,
    doc: "One row per host and snapshot, for every host with fetched pages, outlinks or gone pages in the snapshot.",
    columns: &[
        c("host", Utf8, false, "Normalized host name."),
        c("pages_fetched", Int64, false, "Distinct pages of the host fetched in this snapshot."),
        c("pages_known", Int64, false, "Distinct pages of the host fetched or linked to in this snapshot."),
        c("new_pages", Int64, false, "Fetched pages of the host seen in no earlier snapshot."),
        c("gone_pages", Int64, false, "Pages of the host alive before that this full snapshot did not fetch."),
        c("changed_pages", Int64, false, "Fetched pages whose digest differs from their previous observation."),
        c("links", Int64, false, "Distinct links whose source is on the host (on- and off-host)."),
        c("new_links", Int64, false, "Links from the host present now and not in the previous snapshot."),
        c("removed_links", Int64, false, "Links from the host present in the previous snapshot and not now."),
        c("new_host", Bool, false, "The host has fetched pages now and none of its pages was known before."),
    ],
};

pub static PAGES: TableDef = TableDef {
    name: "pages",
    partitioned: false,
    doc: "Every page known so far (fetched or linked to), with its history summary; rewritten by every run, each part's rows by first_seen_snapshot, then url.",
    columns: &[
        c("url", Utf8, false, "Normalized URL.").distinct(),
        c("host", Utf8, false, "Normalized host name."),
        c("first_seen", Timestamp, false, "Time of the first snapshot that fetched or linked to the page."),
        c("last_seen", Timestamp, false, "Time of the last snapshot that fetched or linked to the page."),
        c("first_seen_snapshot", Int64, false, "Sequence number of that first snapshot."),
        c("last_seen_snapshot", Int64, false, "Sequence number of that last snapshot."),
        c("observations", Int64, false, "Snapshots that fetched the page."),
        c("changes", Int64, false, "Observations whose digest differs from the previous observation's."),
        c("first_fetch_time", Timestamp, true, "Fetch time of the first observation; null if never fetched.").distinct(),
        c("last_fetch_time", Timestamp, true, "Fetch time of the last observation; null if never fetched.").distinct(),
        c("last_status", Int32, true, "HTTP status of the last observation, if recorded."),
        c("alive", Bool, false, "Fetched in the last full snapshot, or in a partial snapshot since."),
    ],
};

pub static COVER_TRAJECTORY: TableDef = TableDef {
    name: "cover_trajectory",
    partitioned: true,
    doc: "Discovery: per site, the GREEDY cover of its new pages by its old pages, one row per pick (ties: smallest URL). A prefix of k rows is the k-budgeted cover.",
    columns: &[
        c("site", Utf8, false, "The site: its host name, or its registered domain (discovery.site_key)."),
        c("rank", Int64, false, "Position of the pick, from 1."),
        c("url", Utf8, false, "The old page picked: fetched in this snapshot and in an earlier one.").distinct(),
        c("gain", Int64, false, "New pages it reaches (through new pages only) that no earlier pick reaches."),
        c("covered", Int64, false, "New pages reached by the picks up to this one."),
        c("overhead", Float64, false, "rank / covered: old pages fetched per new page found."),
    ],
};

pub static COVER_SUMMARY: TableDef = TableDef {
    name: "cover_summary",
    partitioned: true,
    doc: "Discovery: per old site (with pages fetched before) with new pages, the new-page closure and its greedy covers. 90% covers are relative to the coverable new pages (orphans excluded), as in the paper.",
    columns: &[
        c("site", Utf8, false, "The site: its host name, or its registered domain (discovery.site_key)."),
        c("old_pages", Int64, false, "Pages of the site fetched now and in an earlier snapshot."),
        c("new_pages", Int64, false, "Pages of the site fetched now and known in no earlier snapshot."),
        c("covering_pairs", Int64, false, "Pairs (old x, new y) with a path x -> y through new pages only (|Z_t|)."),
        c("orphans", Int64, false, "New pages no old page reaches."),
        c("cover90_size", Int64, false, "Picks of the shortest greedy prefix covering 90% of the coverable new pages."),
        c("cover90_covered", Int64, false, "New pages that prefix covers."),
        c("cover100_size", Int64, false, "Picks of the whole greedy cover."),
        c("cover100_covered", Int64, false, "New pages it covers (all coverable ones)."),
    ],
};

pub static COVER_CURVE: TableDef = TableDef {
    name: "cover_curve",
    partitioned: true,
    doc: "Discovery: the k-budgeted greedy covers aggregated over the sites with coverable new pages (the paper's Figures 2-4), one row per budget of discovery.curve_budgets.",
    columns: &[
        c("budget", Int64, false, "k: old pages each site may fetch."),
        c("sites", Int64, false, "Sites with coverable new pages in this snapshot."),
        c("mean_covered", Float64, false, "Mean over those sites of the new pages their first k greedy picks cover."),
        c("mean_overhead", Float64, false, "Mean over those sites of picks / covered for their first k picks."),
        c("fraction_covered", Float64, false, "New pages the k-budgeted covers reach / all coverable new pages."),
    ],
};

pub static GLOBAL_COVER: TableDef = TableDef {
    name: "global_cover",
    partitioned: true,
    doc: "Discovery: the greedy cover across all sites (the merge of the per-site trajectories by gain), one row per budget of discovery.global_budgets. The picks themselves are cover_trajectory ordered by gain desc, site, url.",
    columns: &[
        c("budget", Int64, false, "k: old pages fetched in all."),
        c("pages", Int64, false, "Picks made: k, or fewer when every coverable page is covered sooner."),
        c("covered", Int64, false, "New pages those picks cover."),
        c("overhead", Float64, false, "pages / covered."),
        c("fraction_covered", Float64, false, "covered / all coverable new pages."),
    ],
};

pub static JACCARD_HISTOGRAM: TableDef = TableDef {
    name: "jaccard_histogram",
    partitioned: true,
    doc: "Discovery: the Jaccard overlap J = |N(x) & N(y)| / |N(x) | N(y)| over all pairs of old pages of one site that cover new pages (the paper's Figure 5), in 20 bins; pairs sharing nothing are counted, not enumerated.",
    columns: &[
        c("bin_lo", Float64, false, "Lower bound of the bin (inclusive)."),
        c("bin_hi", Float64, false, "Upper bound (exclusive; the last bin includes 1)."),
        c("pairs", Int64, false, "Pairs of old pages of one site with J in the bin."),
    ],
};

pub static CLUSTERS: TableDef = TableDef {
    name: "clusters",
    partitioned: true,
    doc: "Discovery: single-linkage clusters of each site's old pages that cover new pages, linked at J >= 1 - eps_b; one row per page.",
    columns: &[
        c("site", Utf8, false, "The site."),
        c("cluster", Int64, false, "Cluster number within the site, from 0, in order of each cluster's smallest URL."),
        c("url", Utf8, false, "The old page.").distinct(),
        c("is_representative", Bool, false, "Whether the page is its cluster's representative (largest p, ties: smallest URL)."),
        c("q", Float64, false, "The cluster's q: its representative's share p of the site's coverable new pages."),
    ],
};

pub static POLICY_EVAL: TableDef = TableDef {
    name: "policy_eval",
    partitioned: true,
    doc: "Discovery: history-based recrawl policies evaluated on this snapshot using earlier snapshots only (the paper's Table 2), summed over the sites with coverable new pages. Sum the count columns over snapshots for the all-snapshot roll-up.",
    columns: &[
        c("policy", Utf8, false, "OD-WIN, OD-ALL, OD-1, CLIQ-WIN, CLIQ-1, COV, OPTIMAL, BOUND-ALL, BOUND-W2 or BOUND-W4."),
        c("budget", Int64, true, "Old pages each site may fetch; null for the BOUND rows, which have no budget."),
        c("sites", Int64, false, "Sites evaluated: those with coverable new pages."),
        c("chosen", Int64, false, "Old pages the policy fetches, summed over the sites."),
        c("covered", Int64, false, "New pages those pages cover, summed over the sites."),
        c("coverable", Int64, false, "Coverable new pages, summed over the sites."),
        c("mean_chosen", Float64, false, "chosen / sites."),
        c("overhead_pct", Float64, true, "100 * chosen / covered; null when nothing is covered."),
        c("coverage", Float64, false, "covered / coverable."),
    ],
};

pub static NEW_SITES: TableDef = TableDef {
    name: "new_sites",
    partitioned: true,
    doc: "Discovery: new pages on new and on old sites (the paper's Section 4.4), one row per snapshot after the first.",
    columns: &[
        c("new_pages", Int64, false, "New pages in this snapshot."),
        c("new_pages_on_new_sites", Int64, false, "Those on sites never known before."),
        c("new_pages_on_old_sites", Int64, false, "Those on sites known before."),
        c("p_new_site", Float64, true, "new_pages_on_new_sites / new_pages; null without new pages."),
        c("new_sites", Int64, false, "Sites with fetched pages now that were never known before."),
        c("pages_per_new_site", Float64, true, "new_pages_on_new_sites / new_sites; null without new sites."),
    ],
};

pub static SITE_COVER: TableDef = TableDef {
    name: "site_cover",
    partitioned: true,
    doc: "Discovery: the greedy cover of new sites by old pages (an old page fetched now covers a new site when it links to any of its pages), one row per pick (ties: smallest URL).",
    columns: &[
        c("rank", Int64, false, "Position of the pick, from 1."),
        c("url", Utf8, false, "The old page picked.").distinct(),
        c("new_sites_gained", Int64, false, "New sites it links to that no earlier pick does."),
        c("new_sites_covered", Int64, false, "New sites covered by the picks up to this one."),
        c("new_pages_covered", Int64, false, "New pages on those new sites."),
    ],
};

pub static PAGE_CHANGE: TableDef = TableDef {
    name: "page_change",
    partitioned: true,
    doc: "Change: per page fetched or gone at this snapshot, its change statistics as of the snapshot (docs/change.md). A page's latest row is its current state.",
    columns: &[
        c("url", Utf8, false, "The page.").distinct(),
        c("host", Utf8, false, "Its host (its site under site_key = registered_domain)."),
        c("domain_class", Utf8, false, "com, edu, netorg (.net, .org), gov (.gov, .mil) or other, from the host's last label."),
        c("observations", Int64, false, "Fetches of the page so far."),
        c("changes", Int64, false, "X: intervals whose two digests differ."),
        c("intervals", Int64, false, "n: consecutive fetches both with a digest."),
        c("span_s", Float64, false, "Last fetch time minus first fetch time, seconds."),
        c("lambda_naive", Float64, true, "X / T, changes per second; null without intervals."),
        c("lambda_regular", Float64, true, "-ln((n - X + 0.5) / (n + 0.5)) / (T / n); null without intervals."),
        c("lambda_mle", Float64, true, "Maximum-likelihood rate over the irregular intervals; null when every interval changed (only a lower bound exists) or without intervals."),
        c("lambda_lo", Float64, true, "Lower end of the 95% likelihood-ratio interval."),
        c("lambda_hi", Float64, true, "Upper end of the 95% likelihood-ratio interval; null when every interval changed."),
        c("rate_class", Utf8, true, "Most probable rate class (mean change interval, e.g. 7d) under a uniform prior; null without intervals."),
        c("rate_class_p", Float64, true, "Its posterior probability."),
        c("censoring", Utf8, false, "a: present at the first snapshot only; b: appeared and disappeared; c: present at the last (this) snapshot only; d: both."),
        c("lifespan_m1_s", Float64, false, "Lifespan by Method 1: the observed span, seconds."),
        c("lifespan_m2_s", Float64, false, "Lifespan by Method 2: twice the observed span for censoring a, c and d."),
    ],
};

pub static GROUP_CHANGE: TableDef = TableDef {
    name: "group_change",
    partitioned: true,
    doc: "Change: pooled change-rate estimates per host and per URL directory, for each group with a page fetched at this snapshot (intervals rounded to whole minutes).",
    columns: &[
        c("level", Utf8, false, "host or directory."),
        c("key", Utf8, false, "The host name, or the directory URL (up to the first path segment's slash)."),
        c("pages", Int64, false, "Pages of the group ever fetched."),
        c("observations", Int64, false, "Their fetches."),
        c("changes", Int64, false, "Their changed intervals."),
        c("intervals", Int64, false, "Their intervals."),
        c("lambda_mle", Float64, true, "Pooled maximum-likelihood rate, per second; null when every interval changed or there are none."),
        c("lambda_lo", Float64, true, "Lower end of its 95% likelihood-ratio interval."),
        c("lambda_hi", Float64, true, "Upper end; null when every interval changed."),
    ],
};

pub static CHANGE_HISTOGRAM: TableDef = TableDef {
    name: "change_histogram",
    partitioned: true,
    doc: "Change: pages with at least one interval by average change interval T/X (the paper's Figure 2), per domain class and all.",
    columns: &[
        c("domain_class", Utf8, false, "com, edu, netorg, gov, other or all."),
        c("bucket", Utf8, false, "le_1d, 1d_1w, 1w_1m, 1m_4m or gt_4m_or_never."),
        c("pages", Int64, false, "Pages in the bucket."),
    ],
};

pub static LIFESPAN_HISTOGRAM: TableDef = TableDef {
    name: "lifespan_histogram",
    partitioned: true,
    doc: "Change: every page ever fetched by visible lifespan (the paper's Figures 3 and 4), per method, domain class and all.",
    columns: &[
        c("domain_class", Utf8, false, "com, edu, netorg, gov, other or all."),
        c("method", Int64, false, "1: observed span; 2: twice the span when censored."),
        c("bucket", Utf8, false, "le_1w, 1w_1m, 1m_4m or gt_4m."),
        c("pages", Int64, false, "Pages in the bucket."),
    ],
};

pub static UNCHANGED_CURVE: TableDef = TableDef {
    name: "unchanged_curve",
    partitioned: true,
    doc: "Change: the fraction of the first snapshot's pages neither changed nor gone by this snapshot (the paper's Figure 5). The 50% time is min(elapsed_s) where fraction_unchanged <= 0.5.",
    columns: &[
        c("domain_class", Utf8, false, "com, edu, netorg, gov, other or all."),
        c("elapsed_s", Float64, false, "This snapshot's time minus the first snapshot's, seconds."),
        c("base_pages", Int64, false, "Pages fetched at the first snapshot with a digest."),
        c("fraction_unchanged", Float64, false, "Share of them not yet changed or gone."),
    ],
};

pub static POISSON_CHECK: TableDef = TableDef {
    name: "poisson_check",
    partitioned: true,
    doc: "Change: for pages whose average change interval lies in a band, the histogram of their intervals between observed changes against the exponential with the same mean (the paper's Figure 6).",
    columns: &[
        c("band_lo_s", Float64, false, "The band's lower end, seconds."),
        c("band_hi_s", Float64, false, "Its upper end (exclusive), seconds."),
        c("interval_lo_s", Float64, false, "The bucket's lower end, seconds."),
        c("interval_hi_s", Float64, true, "Its upper end (exclusive); null for the last, open bucket."),
        c("observed", Int64, false, "Change intervals in the bucket."),
        c("expected", Float64, false, "Intervals the exponential with the band's mean predicts in the bucket."),
        c("ks_distance", Float64, false, "Kolmogorov-Smirnov distance of the band's binned intervals from the exponential (the same on every row of the band)."),
    ],
};

pub static FRESHNESS_DESIGNS: TableDef = TableDef {
    name: "freshness_designs",
    partitioned: true,
    doc: "Change: expected freshness of the four crawler designs (the paper's Table 1) averaged over the pages' estimated rates.",
    columns: &[
        c("design", Utf8, false, "steady-inplace, batch-inplace, steady-shadowing or batch-shadowing."),
        c("cycle_s", Float64, false, "The refresh cycle C, seconds."),
        c("batch_s", Float64, false, "The batch length B, seconds."),
        c("pages", Int64, false, "Pages averaged: those with at least one interval."),
        c("freshness", Float64, false, "Mean expected freshness."),
    ],
};

pub static REVISIT_PLAN: TableDef = TableDef {
    name: "revisit_plan",
    partitioned: true,
    doc: "Change: the revisit plan for every alive page with a rate: optimal, uniform and change-proportional frequencies for the job's budget, and the adaptive back-off interval.",
    columns: &[
        c("url", Utf8, false, "The page.").distinct(),
        c("lambda", Float64, false, "The rate planned with, per second (the page's own, else its directory's or host's)."),
        c("weight", Float64, false, "The page's weight: its PageRank when the rankmass analysis runs (0 outside the snapshot's graph), else 1."),
        c("freq_optimal_per_day", Float64, false, "Optimal fetches per day; 0 for pages that change too fast to be worth refreshing."),
        c("freq_uniform_per_day", Float64, false, "The budget split evenly."),
        c("freq_proportional_per_day", Float64, false, "The budget split in proportion to lambda."),
        c("freshness_optimal", Float64, false, "The page's expected freshness under the optimal frequency."),
        c("backoff_interval_s", Float64, false, "The interval the adaptive back-off rule (x0.8 on change, x1.4 otherwise, within [1 hour, 1 year]) reaches."),
    ],
};

pub static REVISIT_SUMMARY: TableDef = TableDef {
    name: "revisit_summary",
    partitioned: true,
    doc: "Change: the collection's weighted freshness under each allocation of the revisit budget.",
    columns: &[
        c("policy", Utf8, false, "optimal, uniform or proportional."),
        c("budget_per_day", Float64, false, "Fetches per day."),
        c("pages", Int64, false, "Pages planned."),
        c(
            "freshness",
            Float64,
            false,
            "Weighted mean expected freshness.",
        ),
    ],
};

pub static PAGERANK: TableDef = TableDef {
    name: "pagerank",
    partitioned: true,
    doc: "RankMass: personalized PageRank of every node of the snapshot's graph (fetched pages, link sources and destinations), trust uniform over the main pages.",
    columns: &[
        c("url", Utf8, false, "The page.").distinct(),
        c("host", Utf8, false, "Its host."),
        c("score", Float64, false, "Its PageRank; the scores of a snapshot sum to 1."),
        c("in_links", Int64, false, "Distinct pages linking to it (self-links ignored)."),
        c("out_links", Int64, false, "Distinct pages it links to (self-links ignored)."),
    ],
};

pub static HOST_RANK: TableDef = TableDef {
    name: "host_rank",
    partitioned: true,
    doc: "RankMass: PageRank rolled up per host, as crawlers budget by host.",
    columns: &[
        c("host", Utf8, false, "The host."),
        c(
            "score_sum",
            Float64,
            false,
            "The sum of the PageRank of its nodes.",
        ),
        c("pages", Int64, false, "Its nodes in the snapshot's graph."),
    ],
};

pub static PAGERANK_RUNS: TableDef = TableDef {
    name: "pagerank_runs",
    partitioned: true,
    doc: "RankMass: how the snapshot's PageRank was solved.",
    columns: &[
        c("iterations", Int64, false, "Power-iteration steps, the last one (whose L1 change fell below the tolerance) included."),
        c("warm_started", Bool, false, "Whether the iteration started from the previous snapshot's vector."),
        c("l1_residual", Float64, false, "The L1 change of the last step."),
        c("trust_pages", Int64, false, "Pages of the trust vector (the main pages; every node when there is none)."),
        c("nodes", Int64, false, "Nodes of the graph."),
        c("edges", Int64, false, "Edges of the graph."),
        c("iterations_cold", Int64, true, "Steps from the trust vector to the same tolerance, when rankmass.measure_cold is set: the steps the warm start saved are the difference."),
        c("seconds", Float64, false, "Wall time of the steps on worker 0 (varies from run to run)."),
    ],
};

pub static RANKMASS_ORDER: TableDef = TableDef {
    name: "rankmass_order",
    partitioned: true,
    doc: "RankMass: the crawl order of each ordering algorithm, one row per download.",
    columns: &[
        c("algorithm", Utf8, false, "l-neighbor, rankmass (single page, Figure 5) or windowed-rankmass (Figure 6)."),
        c("window", Float64, true, "The window of windowed-rankmass as a fraction (0.1 = 10%); null for the other two."),
        c("rank", Int64, false, "The download's position, from 1."),
        c("url", Utf8, false, "The page downloaded.").distinct(),
        c("round", Int64, false, "The algorithm's loop iteration that downloaded it, from 1 (the BFS level + 1 for l-neighbor; the step for rankmass)."),
        c("bound_at_download", Float64, false, "Its rm when chosen: a lower bound of its PageRank."),
    ],
};

pub static RANKMASS_CURVE: TableDef = TableDef {
    name: "rankmass_curve",
    partitioned: true,
    doc: "RankMass: guaranteed, actual and optimal RankMass by downloads, at every power of two and at the end of each ordering.",
    columns: &[
        c("algorithm", Utf8, false, "As in rankmass_order."),
        c("window", Float64, true, "As in rankmass_order."),
        c("downloads", Int64, false, "Pages downloaded."),
        c("guaranteed", Float64, false, "The largest guaranteed RankMass (CRM) the algorithm had proven with at most this many downloads."),
        c("actual", Float64, false, "The sum of the PageRank of the pages downloaded."),
        c("optimal", Float64, false, "The sum of the largest PageRanks of as many pages."),
    ],
};

pub static RANKMASS_SUMMARY: TableDef = TableDef {
    name: "rankmass_summary",
    partitioned: true,
    doc: "RankMass: per ordering, the downloads to pass 0.98, rounds and run time (the paper's Tables 2 and 3).",
    columns: &[
        c("algorithm", Utf8, false, "As in rankmass_order."),
        c("window", Float64, true, "As in rankmass_order."),
        c("downloads_to_098_guaranteed", Int64, true, "The fewest downloads whose guarantee reached 0.98; null if it never did."),
        c("downloads_to_098_actual", Int64, true, "The fewest downloads of the order whose PageRank summed to 0.98; null if they never did."),
        c("rounds", Int64, false, "Loop iterations (rankmass: pages taken from the queue, downloaded or not)."),
        c("seconds", Float64, false, "Wall time of the ordering on worker 0."),
        c("final_guaranteed", Float64, false, "The guarantee at the end: at least 1 - epsilon unless the graph was exhausted first."),
        c("downloads", Int64, false, "Pages downloaded in all."),
    ],
};

pub static CONTENT_SOURCES: TableDef = TableDef {
    name: "content_sources",
    partitioned: true,
    doc: "ECHO: the content sources at the snapshot: each host's main page and the pages of its host it links to that are at least echo.content_age_days old.",
    columns: &[
        c("url", Utf8, false, "The source page.").distinct(),
        c("host", Utf8, false, "Its host."),
        c("kind", Utf8, false, "main (the host's main page) or linked (linked from it)."),
        c("first_seen", Timestamp, false, "When the page was first seen (fetched or linked)."),
    ],
};

pub static SOURCE_ESTIMATES: TableDef = TableDef {
    name: "source_estimates",
    partitioned: true,
    doc: "ECHO: per content source, the new-link rate lambda over its last echo.crawls crawls, and the fit P (1 - exp(-mu t)) of the mean cumulative clicks of the new pages it revealed.",
    columns: &[
        c("url", Utf8, false, "The source page.").distinct(),
        c("host", Utf8, false, "Its host."),
        c("crawls", Int64, false, "Its crawls as a content source so far (the first is the baseline)."),
        c("new_links", Int64, false, "Links to never-seen pages it revealed, over all crawls after the baseline."),
        c("lambda_per_s", Float64, true, "New links per second over its last echo.crawls crawls; null before its second crawl."),
        c("clicked_pages", Int64, false, "Pages it revealed that received clicks."),
        c("p_profit", Float64, false, "P: clicks a new page it reveals receives in all (the default when p_is_default)."),
        c("mu_per_s", Float64, false, "mu: decay rate of those clicks, per second."),
        c("fit_rmse", Float64, true, "Root mean square residual of the fit, clicks; null when p_is_default."),
        c("p_is_default", Bool, false, "No revealed page has clicks yet: P and mu are echo.default_profit and the default half-life."),
        c("greedy_priority", Float64, true, "ECHO-greedy's priority lambda P tau (tau: seconds since its last crawl); null without lambda."),
    ],
};

pub static ECHO_SCHEDULE: TableDef = TableDef {
    name: "echo_schedule",
    partitioned: true,
    doc: "ECHO: the optimal recrawl interval of every source with a new-link rate, for each crawl rate of echo.crawl_rates_per_s.",
    columns: &[
        c("crawl_rate_per_s", Float64, false, "N: fetches per second for sources and their new pages."),
        c("url", Utf8, false, "The source page.").distinct(),
        c("interval_s", Float64, true, "Recrawl it every this many seconds; null: never."),
        c("profit_per_s", Float64, false, "Its expected clicks per second at that interval (0 if never)."),
    ],
};

pub static ECHO_PLAN: TableDef = TableDef {
    name: "echo_plan",
    partitioned: true,
    doc: "ECHO: the schedule's totals per crawl rate.",
    columns: &[
        c("crawl_rate_per_s", Float64, false, "N."),
        c(
            "omega",
            Float64,
            false,
            "The Lagrange multiplier: sources with lambda P / mu at most omega are never crawled.",
        ),
        c("sources_crawled", Int64, false, "Sources with an interval."),
        c("sources_never", Int64, false, "Sources never crawled."),
        c(
            "source_fetches_per_s",
            Float64,
            false,
            "Fetches per second spent recrawling sources.",
        ),
        c(
            "new_page_fetches_per_s",
            Float64,
            false,
            "Fetches per second of the new pages they reveal.",
        ),
        c(
            "profit_per_s",
            Float64,
            false,
            "Expected clicks per second of the schedule.",
        ),
    ],
};

pub static SOURCE_COVER: TableDef = TableDef {
    name: "source_cover",
    partitioned: true,
    doc: "ECHO: the greedy cover of the new pages revealed within the last echo.click_horizon_hours by the content sources that revealed them (linked them at the snapshot they first appeared, after the source's baseline crawl), one row per pick (ties: smallest URL). How many sources cover 80% of new pages: the smallest rank with covered_fraction >= 0.8.",
    columns: &[
        c("rank", Int64, false, "Position of the pick, from 1."),
        c("url", Utf8, false, "The content source picked.").distinct(),
        c("gain", Int64, false, "New pages it revealed that no earlier pick did."),
        c("covered_fraction", Float64, false, "Share of all the window's revealed new pages that the picks up to this one revealed."),
    ],
};

pub static ECHO_EVAL: TableDef = TableDef {
    name: "echo_eval",
    partitioned: false,
    doc: "ECHO: the policy simulation over the whole crawl (rewritten by every run): per crawl rate and policy, the clicks per second its fetches earn.",
    columns: &[
        c("crawl_rate_per_s", Float64, false, "N: fetches per second."),
        c("policy", Utf8, false, "bfs, fixed-quota, frequency, echo-newpages, echo-schedule, echo-greedy or upper-bound (every page fetched when it appears)."),
        c("overall_quality", Float64, false, "Clicks per second earned by the pages fetched after the warm-up."),
        c("dynamic_quality_mean", Float64, false, "Mean over time (every 2 minutes) of the clicks per second earned by the fetches of the last echo_eval.window_hours."),
        c("dynamic_quality_std", Float64, false, "Its standard deviation."),
        c("fetches", Int64, false, "Fetches in all."),
        c("source_fetches", Int64, false, "Fetches of content sources."),
        c("new_page_fetches", Int64, false, "Fetches of new pages."),
    ],
};

/// Every table webevo writes, in the order the README lists them.
pub static TABLES: &[&TableDef] = &[
    &SNAPSHOTS,
    &HOST_SNAPSHOTS,
    &PAGES,
    &COVER_TRAJECTORY,
    &COVER_SUMMARY,
    &COVER_CURVE,
    &GLOBAL_COVER,
    &JACCARD_HISTOGRAM,
    &CLUSTERS,
    &POLICY_EVAL,
    &NEW_SITES,
    &SITE_COVER,
    &PAGE_CHANGE,
    &GROUP_CHANGE,
    &CHANGE_HISTOGRAM,
    &LIFESPAN_HISTOGRAM,
    &UNCHANGED_CURVE,
    &POISSON_CHECK,
    &FRESHNESS_DESIGNS,
    &REVISIT_PLAN,
    &REVISIT_SUMMARY,
    &PAGERANK,
    &PAGERANK_RUNS,
    &HOST_RANK,
    &RANKMASS_ORDER,
    &RANKMASS_CURVE,
    &RANKMASS_SUMMARY,
    &CONTENT_SOURCES,
    &SOURCE_ESTIMATES,
    &ECHO_SCHEDULE,
    &ECHO_PLAN,
    &SOURCE_COVER,
    &ECHO_EVAL,
];

impl TableDef {
    /// The Arrow schema of the table's files (without the partition column).
    pub fn arrow_schema(&self) -> SchemaRef {
        let fields: Vec<Field> = self
            .columns
            .iter()
            .map(|c| Field::new(c.name, c.ty.arrow(), c.nullable))
            .collect();
        Arc::new(Schema::new(fields))
    }

    /// The documentation file `schemas/<table>.json`.
    pub fn json(&self) -> serde_json::Value {
        let mut cols = Vec::new();
        if self.partitioned {
            cols.push(serde_json::json!({
                "name": "snapshot", "type": "int64", "nullable": false, "partition": true,
                "description": "The snapshot's sequence number (Hive partition directory snapshot=<seq>)."
            }));
        }
        cols.extend(self.columns.iter().map(|c| {
            serde_json::json!({
                "name": c.name, "type": c.ty.name(), "nullable": c.nullable, "description": c.doc
            })
        }));
        serde_json::json!({
            "table": self.name,
            "description": self.doc,
            "partitioned_by": if self.partitioned { Some("snapshot") } else { None },
            "path": if self.partitioned {
                format!("{}/snapshot=<seq>/part-<worker>.parquet", self.name)
            } else {
                format!("{}/part-<worker>.parquet", self.name)
            },
            "columns": cols,
        })
    }
}
