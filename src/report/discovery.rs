//! The discovery section: the figures and tables of "The Discoverability of the
//! Web" for the user's crawl, at the latest snapshot.

use std::collections::BTreeMap;

use super::figure::{Axis, Body, Figure, Plot, PlotKind, Series, Table, Value};
use super::{Ctx, Section};

pub fn section(cx: &Ctx) -> anyhow::Result<Section> {
    let mut s = Section::new(
        "discovery",
        "Discovery of new content",
        "Which old pages lead to the new ones, and what finding them costs (jobs/discovery.toml).",
    );
    let Some(snap) = cx.out.latest("cover_summary") else {
        return Ok(s.missing("the discovery analysis has not run on this output"));
    };
    s.note = format!("Snapshot {snap}, the latest, unless a figure says otherwise.");
    s.push(cover_trajectories(cx, snap)?);
    s.push(cover_curve(cx, "mean_covered")?);
    s.push(cover_curve(cx, "mean_overhead")?);
    s.push(fraction_covered(cx)?);
    s.push(cover90_histogram(cx, snap)?);
    s.push(jaccard(cx)?);
    s.push(policy_coverage(cx)?);
    s.push(policy_table(cx)?);
    s.push(new_sites(cx)?);
    Ok(s)
}

/// Figure 2: for the sites with the most new pages, how many of them the first
/// k greedy picks cover.
fn cover_trajectories(cx: &Ctx, snap: i64) -> anyhow::Result<Option<Figure>> {
    const SITES: usize = 6;
    let Some(sum) = cx
        .out
        .read("cover_summary", Some(snap), &["site", "new_pages"])?
    else {
        return Ok(None);
    };
    let mut sites: Vec<(i64, String)> = (0..sum.len())
        .filter_map(|r| Some((sum.int("new_pages", r)?, sum.text("site", r)?.to_string())))
        .collect();
    sites.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    sites.truncate(SITES);
    let Some(t) = cx
        .out
        .read("cover_trajectory", Some(snap), &["site", "rank", "covered"])?
    else {
        return Ok(None);
    };
    let mut series: BTreeMap<String, Series> = BTreeMap::new();
    for r in 0..t.len() {
        let site = t.text("site", r).unwrap_or_default();
        let Some((new, _)) = sites.iter().find(|s| s.1 == site) else {
            continue;
        };
        let (Some(rank), Some(covered)) = (t.int("rank", r), t.int("covered", r)) else {
            continue;
        };
        series
            .entry(site.to_string())
            .or_insert_with(|| Series::named(site))
            .points
            .push((rank as f64, 100.0 * covered as f64 / *new as f64));
    }
    Ok(Some(Figure {
        id: "discovery-cover-size".into(),
        title: "Greedy cover size against new pages covered (Figure 2)".into(),
        guide: format!("For the {SITES} sites with the most new pages: a steep start means a few old pages lead to most new ones."),
        query: cx.sql(&format!(
            "with top as (
    select site, new_pages from {{cover_summary}}
    where snapshot = (select max(snapshot) from {{cover_summary}})
    order by new_pages desc, site limit {SITES}
)
select t.site as series, t.rank as x, 100.0 * t.covered / top.new_pages as y
from {{cover_trajectory}} t join top using (site)
where t.snapshot = (select max(snapshot) from {{cover_summary}})
order by series, x"
        )),
        body: Body::Plot(Plot {
            kind: PlotKind::Lines,
            x: Axis::linear("old pages fetched, in greedy order (pages)"),
            y: Axis::linear("new pages of the site covered (%)"),
            series: sorted(series),
            rule: None,
        }),
    }))
}

/// Figure 3: the k-budgeted covers' mean pages covered, or mean overhead, by k.
fn cover_curve(cx: &Ctx, column: &str) -> anyhow::Result<Option<Figure>> {
    let Some(f) = cx.out.read_latest("cover_curve", &["budget", column])? else {
        return Ok(None);
    };
    let mut s = Series::named(column);
    for r in 0..f.len() {
        if let (Some(k), Some(v)) = (f.float("budget", r), f.float(column, r)) {
            s.points.push((k, v));
        }
    }
    let (id, title, guide, y) = if column == "mean_covered" {
        (
            "discovery-mean-covered",
            "Mean new pages covered per site by budget (Figure 3)",
            "How many new pages a site's best k old pages reveal, on average over the sites with new pages.",
            "new pages covered per site (pages)",
        )
    } else {
        (
            "discovery-mean-overhead",
            "Mean overhead per site by budget (Figure 3)",
            "Old pages fetched per new page found: lower is cheaper; it grows once the easy new pages are covered.",
            "old pages fetched per new page covered",
        )
    };
    Ok(Some(Figure {
        id: id.into(),
        title: title.into(),
        guide: guide.into(),
        query: cx.sql(&format!(
            "select '{column}' as series, budget as x, {column} as y
from {{cover_curve}}
where snapshot = (select max(snapshot) from {{cover_curve}})
order by x"
        )),
        body: Body::Plot(Plot {
            kind: PlotKind::Lines,
            x: Axis::log("k: old pages fetched per site (pages)"),
            y: Axis::linear(y),
            series: vec![s],
            rule: None,
        }),
    }))
}

/// Figure 3: the fraction of all coverable new pages reached, per-site budget
/// against one global budget.
fn fraction_covered(cx: &Ctx) -> anyhow::Result<Option<Figure>> {
    let mut series = Vec::new();
    for (table, name) in [
        ("cover_curve", "k per site"),
        ("global_cover", "k in all (global greedy)"),
    ] {
        let Some(f) = cx.out.read_latest(table, &["budget", "fraction_covered"])? else {
            continue;
        };
        let mut s = Series::named(name);
        for r in 0..f.len() {
            if let (Some(k), Some(v)) = (f.float("budget", r), f.float("fraction_covered", r)) {
                s.points.push((k, 100.0 * v));
            }
        }
        series.push(s);
    }
    if series.is_empty() {
        return Ok(None);
    }
    Ok(Some(Figure {
        id: "discovery-fraction-covered".into(),
        title: "Share of new pages covered by budget (Figure 3)".into(),
        guide: "The budget each site, or the whole crawl, needs to reach a share of the new pages; the gap is the price of a fixed per-site quota.".into(),
        query: cx.sql(
            "select 'k per site' as series, budget as x, 100 * fraction_covered as y
from {cover_curve} where snapshot = (select max(snapshot) from {cover_curve})
union all
select 'k in all (global greedy)', budget, 100 * fraction_covered
from {global_cover} where snapshot = (select max(snapshot) from {global_cover})
order by series, x",
        ),
        body: Body::Plot(Plot {
            kind: PlotKind::Lines,
            x: Axis::log("k: old pages fetched, per site or in all (pages)"),
            y: Axis::linear("coverable new pages covered (%)"),
            series,
            rule: None,
        }),
    }))
}

/// Figure 4: how many old pages sites need to cover 90% of their new pages.
fn cover90_histogram(cx: &Ctx, snap: i64) -> anyhow::Result<Option<Figure>> {
    let Some(f) = cx
        .out
        .read("cover_summary", Some(snap), &["cover90_size"])?
    else {
        return Ok(None);
    };
    let mut counts: BTreeMap<i64, i64> = BTreeMap::new();
    for r in 0..f.len() {
        match f.int("cover90_size", r) {
            Some(k) if k > 0 => *counts.entry(k).or_default() += 1,
            _ => {}
        }
    }
    let mut s = Series::named("sites");
    s.points = counts.iter().map(|(k, n)| (*k as f64, *n as f64)).collect();
    Ok(Some(Figure {
        id: "discovery-cover90-histogram".into(),
        title: "Sites by the size of their 90% cover (Figure 4)".into(),
        guide: "Most sites need only a handful of old pages to find 90% of their new pages; the tail is where recrawl budget goes.".into(),
        query: cx.sql(
            "select 'sites' as series, cover90_size as x, count(*) as y
from {cover_summary}
where snapshot = (select max(snapshot) from {cover_summary}) and cover90_size > 0
group by cover90_size order by x",
        ),
        body: Body::Plot(Plot {
            kind: PlotKind::Bars(1.0),
            x: Axis::linear("old pages in the site's 90% cover (pages)"),
            y: Axis::linear("sites"),
            series: vec![s],
            rule: None,
        }),
    }))
}

/// Figure 5: the Jaccard overlap of the old pages' new-page sets.
fn jaccard(cx: &Ctx) -> anyhow::Result<Option<Figure>> {
    let Some(f) = cx
        .out
        .read_latest("jaccard_histogram", &["bin_lo", "bin_hi", "pairs"])?
    else {
        return Ok(None);
    };
    let mut s = Series::named("pairs");
    let mut width = 1.0f64;
    for r in 0..f.len() {
        if let (Some(lo), Some(hi), Some(n)) = (
            f.float("bin_lo", r),
            f.float("bin_hi", r),
            f.int("pairs", r),
        ) {
            width = width.min(hi - lo);
            if n > 0 {
                s.points.push(((lo + hi) / 2.0, n as f64));
            }
        }
    }
    Ok(Some(Figure {
        id: "discovery-jaccard".into(),
        title: "Pairs of old pages by the overlap of the new pages they cover (Figure 5)".into(),
        guide: "Pairs of old pages in the same site by Jaccard similarity of their covered sets; mass near 1 means redundant pages that clustering can merge.".into(),
        query: cx.sql(
            "select 'pairs' as series, (bin_lo + bin_hi) / 2 as x, pairs as y
from {jaccard_histogram}
where snapshot = (select max(snapshot) from {jaccard_histogram}) and pairs > 0
order by x",
        ),
        body: Body::Plot(Plot {
            kind: PlotKind::Bars(width),
            x: Axis::linear("Jaccard similarity of the pages' covered sets (bin centre)"),
            y: Axis::log("pairs of old pages (log)"),
            series: vec![s],
            rule: None,
        }),
    }))
}

/// The policies' coverage by budget (the curves behind Table 2).
fn policy_coverage(cx: &Ctx) -> anyhow::Result<Option<Figure>> {
    let Some(f) = cx
        .out
        .read_latest("policy_eval", &["policy", "budget", "coverage"])?
    else {
        return Ok(None);
    };
    let mut series: BTreeMap<String, Series> = BTreeMap::new();
    for r in 0..f.len() {
        let (Some(p), Some(k), Some(c)) = (
            f.text("policy", r),
            f.float("budget", r),
            f.float("coverage", r),
        ) else {
            continue;
        };
        series
            .entry(p.to_string())
            .or_insert_with(|| Series::named(p))
            .points
            .push((k, 100.0 * c));
    }
    Ok(Some(Figure {
        id: "discovery-policy-coverage".into(),
        title: "History-based policies: new pages found by budget (Table 2)".into(),
        guide: "Each policy picks old pages from earlier snapshots only; OPTIMAL is the hindsight greedy cover, the ceiling for all of them.".into(),
        query: cx.sql(
            "select policy as series, budget as x, 100 * coverage as y
from {policy_eval}
where snapshot = (select max(snapshot) from {policy_eval}) and budget is not null
order by series, x",
        ),
        body: Body::Plot(Plot {
            kind: PlotKind::Lines,
            x: Axis::log("k: old pages each site may fetch (pages)"),
            y: Axis::linear("coverable new pages found (%)"),
            series: sorted(series),
            rule: None,
        }),
    }))
}

/// Table 2: the policies with their cost, at each budget, and the historical bounds.
fn policy_table(cx: &Ctx) -> anyhow::Result<Option<Figure>> {
    let cols = [
        "policy",
        "budget",
        "mean_chosen",
        "coverage",
        "overhead_pct",
    ];
    let Some(f) = cx.out.read_latest("policy_eval", &cols)? else {
        return Ok(None);
    };
    let mut rows: Vec<Vec<Value>> = (0..f.len())
        .map(|r| {
            vec![
                f.text("policy", r).into(),
                f.int("budget", r).into(),
                f.float("mean_chosen", r).into(),
                f.float("coverage", r).map(|c| 100.0 * c).into(),
                f.float("overhead_pct", r).into(),
            ]
        })
        .collect();
    rows.sort_by(|a, b| (policy_rank(&a[0]), bud(&a[1])).cmp(&(policy_rank(&b[0]), bud(&b[1]))));
    Ok(Some(Figure {
        id: "discovery-policy-table".into(),
        title: "Recrawl policies: pages fetched, coverage and overhead (Table 2)".into(),
        guide: "Overhead is old pages fetched per 100 new pages found; the BOUND rows fetch every page that ever covered new content.".into(),
        query: cx.sql(
            "select policy, budget, mean_chosen as pages_per_site, 100 * coverage as coverage_pct, overhead_pct
from {policy_eval}
where snapshot = (select max(snapshot) from {policy_eval})
order by policy, budget nulls first",
        ),
        body: Body::Table(Table {
            columns: vec![
                "policy".into(),
                "budget".into(),
                "pages_per_site".into(),
                "coverage_pct".into(),
                "overhead_pct".into(),
            ],
            rows,
        }),
    }))
}

fn policy_rank(v: &Value) -> usize {
    const ORDER: [&str; 10] = [
        "OPTIMAL",
        "OD-WIN",
        "OD-ALL",
        "OD-1",
        "CLIQ-WIN",
        "CLIQ-1",
        "COV",
        "BOUND-ALL",
        "BOUND-W2",
        "BOUND-W4",
    ];
    match v {
        Value::Text(s) => ORDER.iter().position(|p| p == s).unwrap_or(ORDER.len()),
        _ => ORDER.len(),
    }
}

fn bud(v: &Value) -> i64 {
    match v {
        Value::Int(k) => *k,
        _ => -1,
    }
}

/// Table 1: new pages on new sites and on old ones, every snapshot.
fn new_sites(cx: &Ctx) -> anyhow::Result<Option<Figure>> {
    let cols = [
        "snapshot",
        "new_pages",
        "new_pages_on_new_sites",
        "new_pages_on_old_sites",
        "p_new_site",
        "new_sites",
        "pages_per_new_site",
    ];
    let Some(f) = cx.out.read("new_sites", None, &cols)? else {
        return Ok(None);
    };
    let mut rows: Vec<Vec<Value>> = (0..f.len())
        .map(|r| {
            cols.iter()
                .map(|c| match *c {
                    "p_new_site" | "pages_per_new_site" => f.float(c, r).into(),
                    _ => f.int(c, r).into(),
                })
                .collect()
        })
        .collect();
    rows.sort_by_key(|r| bud(&r[0]));
    Ok(Some(Figure {
        id: "discovery-new-sites".into(),
        title: "New pages on new sites and on old sites (Table 1)".into(),
        guide: "p_new_site is the share of new pages that live on sites the crawl has never seen: those no recrawl of old pages can find.".into(),
        query: cx.sql(&format!(
            "select {}\nfrom {{new_sites}}\norder by snapshot",
            cols.join(", ")
        )),
        body: Body::Table(Table {
            columns: cols.iter().map(|c| c.to_string()).collect(),
            rows,
        }),
    }))
}

fn sorted(series: BTreeMap<String, Series>) -> Vec<Series> {
    series.into_values().collect()
}
