//! The change section: the figures and tables of "The Evolution of the Web and
//! Implications for an Incremental Crawler" for the user's crawl.

use std::collections::BTreeMap;

use super::figure::{Axis, Body, Figure, Plot, PlotKind, Series, Table, Value};
use super::{Ctx, Section};

const DAY: f64 = 86_400.0;
const CLASSES: [&str; 6] = ["com", "edu", "netorg", "gov", "other", "all"];

pub fn section(cx: &Ctx) -> anyhow::Result<Section> {
    let mut s = Section::new(
        "change",
        "Change and freshness",
        "How often pages change and vanish, and how to spend a fetch budget to keep a copy fresh (jobs/change.toml).",
    );
    let Some(snap) = cx.out.latest("page_change") else {
        return Ok(s.missing("the change analysis has not run on this output"));
    };
    s.note = format!("Snapshot {snap}, the latest, unless a figure says otherwise.");
    s.push(histogram(
        cx,
        "change_histogram",
        &[
            ("le_1d", "≤ 1 day"),
            ("1d_1w", "1 day–1 week"),
            ("1w_1m", "1 week–1 month"),
            ("1m_4m", "1–4 months"),
            ("gt_4m_or_never", "> 4 months or never"),
        ],
    )?);
    s.push(histogram(
        cx,
        "lifespan_histogram",
        &[
            ("le_1w", "≤ 1 week"),
            ("1w_1m", "1 week–1 month"),
            ("1m_4m", "1–4 months"),
            ("gt_4m", "> 4 months"),
        ],
    )?);
    s.push(unchanged(cx)?);
    s.push(poisson(cx)?);
    s.push(designs(cx)?);
    s.push(revisit_frequencies(cx)?);
    s.push(revisit_freshness(cx)?);
    Ok(s)
}

/// Figures 2 and 4: pages by average change interval, or by lifespan, as a
/// share of each domain class (lifespans: all pages, by method).
fn histogram(cx: &Ctx, table: &str, buckets: &[(&str, &str)]) -> anyhow::Result<Option<Figure>> {
    let lifespan = table == "lifespan_histogram";
    let mut cols = vec!["domain_class", "bucket", "pages"];
    if lifespan {
        cols.push("method");
    }
    let Some(f) = cx.out.read_latest(table, &cols)? else {
        return Ok(None);
    };
    // (series order, bucket) -> pages, and each series' total; the series are
    // the domain classes, or the lifespan methods.
    let mut pages: BTreeMap<((i64, String), String), i64> = BTreeMap::new();
    let mut totals: BTreeMap<(i64, String), (Value, i64)> = BTreeMap::new();
    for r in 0..f.len() {
        let (Some(class), Some(bucket), Some(n)) = (
            f.text("domain_class", r),
            f.text("bucket", r),
            f.int("pages", r),
        ) else {
            continue;
        };
        let (order, key) = if lifespan {
            if class != "all" {
                continue;
            }
            let m = f.int("method", r).unwrap_or(0);
            ((m, String::new()), Value::Int(m))
        } else {
            let i = CLASSES
                .iter()
                .position(|x| *x == class)
                .unwrap_or(CLASSES.len());
            (
                (i as i64, class.to_string()),
                Value::Text(class.to_string()),
            )
        };
        *pages
            .entry((order.clone(), bucket.to_string()))
            .or_default() += n;
        totals.entry(order).or_insert((key, 0)).1 += n;
    }
    let series = totals
        .iter()
        .filter(|t| t.1 .1 > 0)
        .map(|(order, (key, total))| {
            let name = match key {
                Value::Int(1) => "method 1: observed span".to_string(),
                Value::Int(2) => "method 2: twice the span when censored".to_string(),
                other => other.display(),
            };
            let mut s = Series::keyed(key.clone(), name);
            for (i, (b, _)) in buckets.iter().enumerate() {
                if let Some(n) = pages.get(&(order.clone(), b.to_string())) {
                    s.points.push((i as f64, 100.0 * *n as f64 / *total as f64));
                }
            }
            s
        })
        .collect();
    let categories = buckets
        .iter()
        .map(|(v, l)| (v.to_string(), l.to_string()))
        .collect();
    let figure = if lifespan {
        Figure {
            id: "change-lifespans".into(),
            title: "Pages by visible lifespan (Figure 4)".into(),
            guide: "Method 1 counts only the span seen; method 2 doubles the span of pages seen at the first or last snapshot, whose life goes on outside the window.".into(),
            query: cx.sql(
                "select method as series, bucket as x,
       100.0 * pages / sum(pages) over (partition by method) as y
from {lifespan_histogram}
where snapshot = (select max(snapshot) from {lifespan_histogram}) and domain_class = 'all'
qualify sum(pages) over (partition by method) > 0
order by series, x",
            ),
            body: Body::Plot(Plot {
                kind: PlotKind::CategoryBars(categories),
                x: Axis::linear("how long the page was visible"),
                y: Axis::linear("pages (%)"),
                series,
                rule: None,
            }),
        }
    } else {
        Figure {
            id: "change-intervals".into(),
            title: "Pages by average change interval, per domain class (Figure 2)".into(),
            guide: "The crawl's time span over the changes seen, for pages seen at least twice: short intervals on the left need frequent revisits.".into(),
            query: cx.sql(
                "select domain_class as series, bucket as x,
       100.0 * pages / sum(pages) over (partition by domain_class) as y
from {change_histogram}
where snapshot = (select max(snapshot) from {change_histogram})
qualify sum(pages) over (partition by domain_class) > 0
order by series, x",
            ),
            body: Body::Plot(Plot {
                kind: PlotKind::CategoryBars(categories),
                x: Axis::linear("average change interval"),
                y: Axis::linear("pages of the domain class (%)"),
                series,
                rule: None,
            }),
        }
    };
    Ok(Some(figure))
}

/// Figure 5: the share of the first snapshot's pages not yet changed or gone.
fn unchanged(cx: &Ctx) -> anyhow::Result<Option<Figure>> {
    let Some(f) = cx.out.read(
        "unchanged_curve",
        None,
        &["domain_class", "elapsed_s", "fraction_unchanged"],
    )?
    else {
        return Ok(None);
    };
    let mut series: BTreeMap<usize, Series> = BTreeMap::new();
    let mut half: Option<f64> = None;
    for r in 0..f.len() {
        let (Some(class), Some(t), Some(v)) = (
            f.text("domain_class", r),
            f.float("elapsed_s", r),
            f.float("fraction_unchanged", r),
        ) else {
            continue;
        };
        let order = CLASSES.iter().position(|c| *c == class).unwrap_or(9);
        series
            .entry(order)
            .or_insert_with(|| Series::named(class))
            .points
            .push((t / DAY, 100.0 * v));
        if class == "all" && v <= 0.5 {
            half = Some(half.map_or(t, |h: f64| h.min(t)));
        }
    }
    let mut series: Vec<Series> = series.into_values().collect();
    for s in &mut series {
        s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    let rule = match half {
        Some(t) => format!("50%: reached after {:.1} days (all pages)", t / DAY),
        None => "50%: not reached within the crawl (all pages)".into(),
    };
    Ok(Some(Figure {
        id: "change-unchanged".into(),
        title: "Share of pages unchanged since the first snapshot (Figure 5)".into(),
        guide: "Where a class's curve crosses 50%, half of its pages have changed or gone: a good first revisit interval for it.".into(),
        query: cx.sql(
            "select domain_class as series, elapsed_s / 86400 as x, 100 * fraction_unchanged as y
from {unchanged_curve}
order by series, x",
        ),
        body: Body::Plot(Plot {
            kind: PlotKind::Lines,
            x: Axis::linear("time since the first snapshot (days)"),
            y: Axis::linear("pages neither changed nor gone (%)"),
            series,
            rule: Some((50.0, rule)),
        }),
    }))
}

/// Figure 6: the intervals between changes against the exponential.
fn poisson(cx: &Ctx) -> anyhow::Result<Option<Figure>> {
    let cols = [
        "band_lo_s",
        "band_hi_s",
        "interval_lo_s",
        "interval_hi_s",
        "observed",
        "expected",
        "ks_distance",
    ];
    let Some(f) = cx.out.read_latest("poisson_check", &cols)? else {
        return Ok(None);
    };
    let mut series: BTreeMap<(i64, i64, u8), Series> = BTreeMap::new();
    let mut ks: BTreeMap<(i64, i64), f64> = BTreeMap::new();
    for r in 0..f.len() {
        let (Some(blo), Some(bhi), Some(lo), Some(hi)) = (
            f.float("band_lo_s", r),
            f.float("band_hi_s", r),
            f.float("interval_lo_s", r),
            f.float("interval_hi_s", r),
        ) else {
            continue;
        };
        let band = ((blo / DAY).floor() as i64, (bhi / DAY).floor() as i64);
        if let Some(d) = f.float("ks_distance", r) {
            ks.insert(band, d);
        }
        let x = (lo + hi) / 2.0 / DAY;
        for (kind, column) in [(0u8, "observed"), (1, "expected")] {
            let name = format!("{column}, mean interval {}-{} days", band.0, band.1);
            let s = series
                .entry((band.0, band.1, kind))
                .or_insert_with(|| Series::named(&name));
            if let Some(v) = f.float(column, r).filter(|v| *v > 0.0) {
                s.points.push((x, v));
            }
        }
    }
    let mut series: Vec<Series> = series
        .into_values()
        .filter(|s| !s.points.is_empty())
        .collect();
    for s in &mut series {
        s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    let ks: Vec<String> = ks
        .iter()
        .map(|((lo, hi), d)| format!("{lo}-{hi} days: {d:.3}"))
        .collect();
    Ok(Some(Figure {
        id: "change-poisson".into(),
        title: "Intervals between changes against the Poisson model (Figure 6)".into(),
        guide: format!(
            "On a log scale a Poisson process gives a straight falling line: observed near expected supports the model. Kolmogorov–Smirnov distance per band: {}.",
            if ks.is_empty() { "none".into() } else { ks.join(", ") }
        ),
        query: cx.sql(
            "select format('{}, mean interval {}-{} days', kind,
              floor(band_lo_s / 86400)::bigint, floor(band_hi_s / 86400)::bigint) as series,
       (interval_lo_s + interval_hi_s) / 2 / 86400 as x, v as y
from {poisson_check}
cross join lateral (values ('observed', observed::double), ('expected', expected)) as o(kind, v)
where snapshot = (select max(snapshot) from {poisson_check})
  and interval_hi_s is not null and v > 0
order by series, x",
        ),
        body: Body::Plot(Plot {
            kind: PlotKind::Lines,
            x: Axis::linear("interval between changes, bucket centre (days)"),
            y: Axis::log("intervals (log)"),
            series,
            rule: None,
        }),
    }))
}

/// Table 1: the expected freshness of the four crawler designs.
fn designs(cx: &Ctx) -> anyhow::Result<Option<Figure>> {
    let cols = ["design", "cycle_s", "batch_s", "pages", "freshness"];
    let Some(f) = cx.out.read_latest("freshness_designs", &cols)? else {
        return Ok(None);
    };
    const ORDER: [&str; 4] = [
        "steady-inplace",
        "batch-inplace",
        "steady-shadowing",
        "batch-shadowing",
    ];
    let mut rows: Vec<Vec<Value>> = (0..f.len())
        .map(|r| {
            vec![
                f.text("design", r).into(),
                f.float("cycle_s", r).map(|v| v / DAY).into(),
                f.float("batch_s", r).map(|v| v / DAY).into(),
                f.int("pages", r).into(),
                f.float("freshness", r).into(),
            ]
        })
        .collect();
    rows.sort_by_key(|r| match &r[0] {
        Value::Text(d) => ORDER.iter().position(|o| o == d).unwrap_or(9),
        _ => 9,
    });
    Ok(Some(Figure {
        id: "change-designs".into(),
        title: "Expected freshness of the four crawler designs (Table 1)".into(),
        guide: "Freshness is the expected share of the collection that matches the live web; in-place updates beat shadowing, which serves a copy as old as a cycle.".into(),
        query: cx.sql(
            "select design, cycle_s / 86400 as cycle_days, batch_s / 86400 as batch_days, pages, freshness
from {freshness_designs}
where snapshot = (select max(snapshot) from {freshness_designs})",
        ),
        body: Body::Table(Table {
            columns: ["design", "cycle_days", "batch_days", "pages", "freshness"]
                .map(String::from)
                .to_vec(),
            rows,
        }),
    }))
}

/// Points shown of the revisit plan: every k-th page in order of rate.
const PLAN_POINTS: usize = 300;

/// Figure 9's shape: the optimal frequency against the change rate, with the
/// uniform and proportional allocations.
fn revisit_frequencies(cx: &Ctx) -> anyhow::Result<Option<Figure>> {
    let cols = [
        "url",
        "lambda",
        "freq_optimal_per_day",
        "freq_uniform_per_day",
        "freq_proportional_per_day",
    ];
    let Some(f) = cx.out.read_latest("revisit_plan", &cols)? else {
        return Ok(None);
    };
    let mut order: Vec<usize> = (0..f.len())
        .filter(|r| f.float("lambda", *r).is_some())
        .collect();
    order.sort_by(|a, b| {
        f.float("lambda", *a)
            .unwrap()
            .total_cmp(&f.float("lambda", *b).unwrap())
            .then_with(|| f.text("url", *a).cmp(&f.text("url", *b)))
    });
    let step = order.len().div_ceil(PLAN_POINTS).max(1);
    let mut series = Vec::new();
    for (name, column) in [
        ("optimal", "freq_optimal_per_day"),
        ("proportional", "freq_proportional_per_day"),
        ("uniform", "freq_uniform_per_day"),
    ] {
        let mut s = Series::named(name);
        for &r in order.iter().step_by(step) {
            if let Some(y) = f.float(column, r) {
                s.points.push((f.float("lambda", r).unwrap() * DAY, y));
            }
        }
        series.push(s);
    }
    Ok(Some(Figure {
        id: "change-revisit-frequencies".into(),
        title: "Revisit frequency against change rate (Figure 9's shape)".into(),
        guide: format!("Every {step}th page by change rate. The optimum revisits middling pages most and gives up on pages that change faster than it can follow."),
        query: cx.sql(&format!(
            "with p as (
    select \"lambda\" * 86400 as x, freq_optimal_per_day, freq_proportional_per_day, freq_uniform_per_day,
           row_number() over (order by \"lambda\", url) - 1 as i, count(*) over () as n
    from {{revisit_plan}}
    where snapshot = (select max(snapshot) from {{revisit_plan}}) and \"lambda\" is not null
)
select 'optimal' as series, x, freq_optimal_per_day as y from p where i % ceil(n / {PLAN_POINTS}) = 0
union all select 'proportional', x, freq_proportional_per_day from p where i % ceil(n / {PLAN_POINTS}) = 0
union all select 'uniform', x, freq_uniform_per_day from p where i % ceil(n / {PLAN_POINTS}) = 0
order by series, x"
        )),
        body: Body::Plot(Plot {
            kind: PlotKind::Points,
            x: Axis::linear("change rate λ (changes per day)"),
            y: Axis::linear("planned revisits per day"),
            series,
            rule: None,
        }),
    }))
}

/// The freshness each allocation of the budget achieves.
fn revisit_freshness(cx: &Ctx) -> anyhow::Result<Option<Figure>> {
    let Some(f) = cx
        .out
        .read_latest("revisit_summary", &["policy", "freshness"])?
    else {
        return Ok(None);
    };
    let policies = ["optimal", "proportional", "uniform"];
    let mut s = Series::named("freshness");
    for r in 0..f.len() {
        if let (Some(p), Some(v)) = (f.text("policy", r), f.float("freshness", r)) {
            if let Some(i) = policies.iter().position(|x| *x == p) {
                s.points.push((i as f64, 100.0 * v));
            }
        }
    }
    s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    Ok(Some(Figure {
        id: "change-revisit-freshness".into(),
        title: "Freshness of the revisit plans for the same budget".into(),
        guide: "The expected share of pages fresh at a random moment under each way of spending the job's fetches per day.".into(),
        query: cx.sql(
            "select 'freshness' as series, policy as x, 100 * freshness as y
from {revisit_summary}
where snapshot = (select max(snapshot) from {revisit_summary})",
        ),
        body: Body::Plot(Plot {
            kind: PlotKind::CategoryBars(
                policies
                    .iter()
                    .map(|p| (p.to_string(), p.to_string()))
                    .collect(),
            ),
            x: Axis::linear("allocation of the fetch budget"),
            y: Axis::linear("expected freshness (%)"),
            series: vec![s],
            rule: None,
        }),
    }))
}
