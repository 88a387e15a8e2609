//! The ECHO section: per-source estimates, the schedule, the plan and the
//! simulated policies of "Timely Crawling of High-quality Ephemeral New Content".

use std::collections::BTreeMap;

use super::figure::{short_number, Axis, Body, Figure, Plot, PlotKind, Series, Table, Value};
use super::{Ctx, Section};

const HOUR: f64 = 3600.0;

pub fn section(cx: &Ctx) -> anyhow::Result<Section> {
    // ECHO needs a fine-grained crawl: prefer the output that also simulated
    // the policies on it (the demo's news crawl) over a weekly crawl's estimates.
    let dirs = cx.out.dirs();
    let has = |t: &str| dirs.iter().position(|d| d.join(t).is_dir());
    let scoped;
    let cx = match has("echo_eval").or_else(|| has("source_estimates")) {
        Some(i) => {
            scoped = cx.out.only(i);
            &Ctx { out: &scoped }
        }
        None => cx,
    };
    let mut s = Section::new(
        "echo",
        "Ephemeral content sources (ECHO)",
        "How fast each source reveals new pages, how much those pages are worth, and how often to recrawl it (jobs/echo.toml, jobs/echo-eval.toml).",
    );
    let Some(snap) = cx.out.latest("source_estimates") else {
        return Ok(s.missing("the echo analysis has not run on this output"));
    };
    s.note = format!(
        "Snapshot {snap}, the latest, of {}.",
        cx.out
            .table_dir("source_estimates")
            .and_then(|d| d.parent().map(|p| p.display().to_string()))
            .unwrap_or_default()
    );
    s.push(distribution(
        cx,
        "echo-lambda",
        "lambda_per_s",
        HOUR,
        "New links per hour (λ) over the sources (cumulative)",
        Axis::linear("λ: new links revealed per hour"),
        "Sources to the right reveal new pages fastest; they are recrawled most.",
    )?);
    s.push(distribution(
        cx,
        "echo-profit",
        "p_profit",
        1.0,
        "Clicks a new page of the source earns (P), over the sources (cumulative)",
        Axis::log("P: clicks per new page (log)"),
        "A source's new pages are worth P clicks each in all; sources without clicks yet have the job's default.",
    )?);
    s.push(distribution(
        cx,
        "echo-mu",
        "mu_per_s",
        HOUR,
        "Click decay rate (μ) over the sources (cumulative)",
        Axis::log("μ: click decay per hour (log)"),
        "A new page's clicks fall off as exp(-μt): large μ means its value is gone within hours.",
    )?);
    s.push(intervals(cx)?);
    s.push(source_cover(cx)?);
    s.push(plan(cx)?);
    s.push(simulation(cx)?);
    Ok(s)
}

/// The empirical distribution of one estimate over the sources at the latest
/// snapshot (positive values only on a log axis).
fn distribution(
    cx: &Ctx,
    id: &str,
    column: &str,
    scale: f64,
    title: &str,
    x: Axis,
    guide: &str,
) -> anyhow::Result<Option<Figure>> {
    let Some(f) = cx.out.read_latest("source_estimates", &[column])? else {
        return Ok(None);
    };
    let values = (0..f.len())
        .filter_map(|r| f.float(column, r))
        .filter(|v| !x.log || *v > 0.0)
        .map(|v| v * scale)
        .collect();
    let positive = if x.log {
        format!(" and {column} > 0")
    } else {
        String::new()
    };
    Ok(Some(Figure {
        id: id.into(),
        title: title.into(),
        guide: guide.into(),
        query: cx.sql(&format!(
            "select 'sources' as series, {column} * {scale} as x, cume_dist() over (order by {column}) as y
from {{source_estimates}}
where snapshot = (select max(snapshot) from {{source_estimates}}) and {column} is not null{positive}
qualify (row_number() over (order by {column}) - 1) % ceil(count(*) over () / {CDF_POINTS}) = 0
order by x"
        )),
        body: Body::Plot(Plot {
            kind: PlotKind::Lines,
            x,
            y: Axis::linear("share of sources at or below (fraction)"),
            series: vec![cdf("sources".into(), "sources".into(), values)],
            rule: None,
        }),
    }))
}

/// Points drawn of a distribution: every k-th value in order.
const CDF_POINTS: usize = 300;

/// The cumulative distribution of `values`: every k-th value in order (at most
/// [`CDF_POINTS`]) with the share of values at or below it (SQL's cume_dist).
fn cdf(key: Value, name: String, mut values: Vec<f64>) -> Series {
    values.sort_by(f64::total_cmp);
    let n = values.len() as f64;
    let step = values.len().div_ceil(CDF_POINTS).max(1);
    let mut s = Series::keyed(key, name);
    for (i, v) in values.iter().enumerate().step_by(step) {
        let at_or_below = values[i..].partition_point(|w| w <= v) + i;
        s.points.push((*v, at_or_below as f64 / n));
    }
    s
}

/// The greedy cover of the window's new pages by sources (source_cover).
fn source_cover(cx: &Ctx) -> anyhow::Result<Option<Figure>> {
    let Some(f) = cx
        .out
        .read_latest("source_cover", &["rank", "covered_fraction"])?
    else {
        return Ok(None);
    };
    let mut line = Series::named("greedy cover");
    line.points = (0..f.len())
        .filter_map(|r| Some((f.int("rank", r)? as f64, f.float("covered_fraction", r)?)))
        .collect();
    line.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    Ok(Some(Figure {
        id: "echo-source-cover".into(),
        title: "Sources needed to find the new pages (greedy cover)".into(),
        guide: "Where the line crosses 0.8, that many sources, picked greedily, reveal 80% of the new pages of the click horizon.".into(),
        query: cx.sql(
            "select 'greedy cover' as series, rank as x, covered_fraction as y
from {source_cover}
where snapshot = (select max(snapshot) from {source_cover})
order by x",
        ),
        body: Body::Plot(Plot {
            kind: PlotKind::Lines,
            x: Axis::linear("sources picked"),
            y: Axis::linear("share of new pages revealed (fraction)"),
            series: vec![line],
            rule: Some((0.8, "80%".into())),
        }),
    }))
}

/// The optimal recrawl intervals of the sources, for each crawl rate.
fn intervals(cx: &Ctx) -> anyhow::Result<Option<Figure>> {
    let Some(f) = cx
        .out
        .read_latest("echo_schedule", &["crawl_rate_per_s", "interval_s"])?
    else {
        return Ok(None);
    };
    let mut by_rate: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
    for r in 0..f.len() {
        if let (Some(n), Some(i)) = (f.float("crawl_rate_per_s", r), f.float("interval_s", r)) {
            if i > 0.0 {
                by_rate.entry(n.to_bits()).or_default().push(i / HOUR);
            }
        }
    }
    let series = by_rate
        .into_iter()
        .map(|(n, v)| {
            let n = f64::from_bits(n);
            cdf(
                Value::Float(n),
                format!("N = {} fetches/s", short_number(n)),
                v,
            )
        })
        .collect();
    Ok(Some(Figure {
        id: "echo-intervals".into(),
        title: "Optimal recrawl intervals of the sources, per crawl rate".into(),
        guide: "For each budget N of fetches per second: the share of sources recrawled at least this often; sources never recrawled are left out.".into(),
        query: cx.sql(&format!(
            "select crawl_rate_per_s as series, interval_s / 3600 as x,
       cume_dist() over (partition by crawl_rate_per_s order by interval_s) as y
from {{echo_schedule}}
where snapshot = (select max(snapshot) from {{echo_schedule}}) and interval_s > 0
qualify (row_number() over (partition by crawl_rate_per_s order by interval_s) - 1)
        % ceil(count(*) over (partition by crawl_rate_per_s) / {CDF_POINTS}) = 0
order by series, x"
        )),
        body: Body::Plot(Plot {
            kind: PlotKind::Lines,
            x: Axis::log("recrawl interval (hours, log)"),
            y: Axis::linear("share of scheduled sources (fraction)"),
            series,
            rule: None,
        }),
    }))
}

/// The plan per crawl rate: how the budget splits between sources and new pages.
fn plan(cx: &Ctx) -> anyhow::Result<Option<Figure>> {
    let cols = [
        "crawl_rate_per_s",
        "sources_crawled",
        "sources_never",
        "source_fetches_per_s",
        "new_page_fetches_per_s",
        "profit_per_s",
    ];
    let Some(f) = cx.out.read_latest("echo_plan", &cols)? else {
        return Ok(None);
    };
    let mut rows: Vec<Vec<Value>> = (0..f.len())
        .map(|r| {
            vec![
                f.float("crawl_rate_per_s", r).into(),
                f.int("sources_crawled", r).into(),
                f.int("sources_never", r).into(),
                f.float("source_fetches_per_s", r).into(),
                f.float("new_page_fetches_per_s", r).into(),
                f.float("profit_per_s", r).map(|p| p * HOUR).into(),
            ]
        })
        .collect();
    rows.sort_by(|a, b| match (&a[0], &b[0]) {
        (Value::Float(x), Value::Float(y)) => x.total_cmp(y),
        _ => std::cmp::Ordering::Equal,
    });
    Ok(Some(Figure {
        id: "echo-plan".into(),
        title: "The recrawl plan per crawl rate".into(),
        guide: "How each budget of fetches per second splits between recrawling sources and fetching the new pages they reveal, and the clicks per hour it captures.".into(),
        query: cx.sql(
            "select crawl_rate_per_s, sources_crawled, sources_never, source_fetches_per_s,
       new_page_fetches_per_s, profit_per_s * 3600 as clicks_per_hour
from {echo_plan}
where snapshot = (select max(snapshot) from {echo_plan})
order by crawl_rate_per_s",
        ),
        body: Body::Table(Table {
            columns: [
                "crawl_rate_per_s",
                "sources_crawled",
                "sources_never",
                "source_fetches_per_s",
                "new_page_fetches_per_s",
                "clicks_per_hour",
            ]
            .map(String::from)
            .to_vec(),
            rows,
        }),
    }))
}

/// The simulated policies' quality by crawl rate (echo_eval).
fn simulation(cx: &Ctx) -> anyhow::Result<Option<Figure>> {
    let Some(f) = cx.out.read(
        "echo_eval",
        None,
        &["crawl_rate_per_s", "policy", "overall_quality"],
    )?
    else {
        return Ok(None);
    };
    let mut series: BTreeMap<String, Series> = BTreeMap::new();
    for r in 0..f.len() {
        if let (Some(n), Some(p), Some(q)) = (
            f.float("crawl_rate_per_s", r),
            f.text("policy", r),
            f.float("overall_quality", r),
        ) {
            series
                .entry(p.to_string())
                .or_insert_with(|| Series::named(p))
                .points
                .push((n, q));
        }
    }
    let mut series: Vec<Series> = series.into_values().collect();
    for s in &mut series {
        s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    Ok(Some(Figure {
        id: "echo-simulation".into(),
        title: "Simulated quality of each policy by crawl rate (the paper's Figures 6–8)".into(),
        guide: "Clicks captured per unit time replaying the crawl: ECHO's policies should sit between the simple ones and the upper bound that fetches every page when it appears.".into(),
        query: cx.sql(
            "select policy as series, crawl_rate_per_s as x, overall_quality as y
from {echo_eval}
order by series, x",
        ),
        body: Body::Plot(Plot {
            kind: PlotKind::Lines,
            x: Axis::linear("N: fetches per second"),
            y: Axis::linear("overall quality (clicks captured per second)"),
            series,
            rule: None,
        }),
    }))
}
