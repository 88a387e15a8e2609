//! The RankMass section: the orderings' guaranteed and actual RankMass by
//! downloads ("RankMass Crawler", Figures 7 and 8) and the downloads to 98%.

use std::collections::{BTreeMap, BTreeSet};

use super::figure::{Axis, Body, Figure, Plot, PlotKind, Series, Table, Value};
use super::{Ctx, Section};

pub fn section(cx: &Ctx) -> anyhow::Result<Section> {
    let mut s = Section::new(
        "rankmass",
        "RankMass crawl orderings",
        "How much of the personalized PageRank a crawl captures for its downloads, and what each ordering can guarantee (jobs/rankmass.toml).",
    );
    let Some(snap) = cx.out.latest("rankmass_curve") else {
        return Ok(s.missing("the rankmass analysis has not run on this output"));
    };
    s.note = format!("Snapshot {snap}, the latest.");
    s.push(curve(cx, "guaranteed")?);
    s.push(curve(cx, "actual")?);
    s.push(summary(cx)?);
    Ok(s)
}

/// The series key of an ordering: its algorithm, and its window in percent.
fn ordering(algorithm: &str, window: Option<f64>) -> String {
    match window {
        Some(w) => format!("{algorithm}, window {}%", (w * 100.0).round() as i64),
        None => algorithm.to_string(),
    }
}

const ORDERING_SQL: &str =
    "algorithm || coalesce(', window ' || round(\"window\" * 100)::bigint || '%', '')";

/// Figure 7 (guaranteed) or 8 (actual), with the optimal ordering's RankMass.
fn curve(cx: &Ctx, column: &str) -> anyhow::Result<Option<Figure>> {
    let Some(f) = cx.out.read_latest(
        "rankmass_curve",
        &["algorithm", "window", "downloads", column, "optimal"],
    )?
    else {
        return Ok(None);
    };
    let mut series: BTreeMap<String, Series> = BTreeMap::new();
    let mut optimal: BTreeSet<(i64, u64)> = BTreeSet::new();
    for r in 0..f.len() {
        let (Some(a), Some(n), Some(v)) = (
            f.text("algorithm", r),
            f.int("downloads", r),
            f.float(column, r),
        ) else {
            continue;
        };
        if n <= 0 {
            continue;
        }
        let key = ordering(a, f.float("window", r));
        series
            .entry(key.clone())
            .or_insert_with(|| Series::named(&key))
            .points
            .push((n as f64, v));
        if let Some(o) = f.float("optimal", r) {
            optimal.insert((n, o.to_bits()));
        }
    }
    let mut series: Vec<Series> = series.into_values().collect();
    let mut best = Series::named("optimal");
    best.points = optimal
        .into_iter()
        .map(|(n, o)| (n as f64, f64::from_bits(o)))
        .collect();
    series.push(best);
    for s in &mut series {
        s.points
            .sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    }
    let (id, title, guide) = if column == "guaranteed" {
        (
            "rankmass-guaranteed",
            "Guaranteed RankMass by downloads (Figure 7)",
            "The RankMass each ordering has proven it holds after n downloads: the crawler can stop once the guarantee reaches its target.",
        )
    } else {
        (
            "rankmass-actual",
            "Actual RankMass by downloads (Figure 8)",
            "The PageRank the downloaded pages really hold, against the optimal ordering that downloads the highest-ranked pages first.",
        )
    };
    Ok(Some(Figure {
        id: id.into(),
        title: title.into(),
        guide: guide.into(),
        query: cx.sql(&format!(
            "select {ORDERING_SQL} as series, downloads as x, {column} as y
from {{rankmass_curve}}
where snapshot = (select max(snapshot) from {{rankmass_curve}}) and downloads > 0
union
select 'optimal', downloads, optimal
from {{rankmass_curve}}
where snapshot = (select max(snapshot) from {{rankmass_curve}}) and downloads > 0
order by series, x"
        )),
        body: Body::Plot(Plot {
            kind: PlotKind::Lines,
            x: Axis::log("pages downloaded (log)"),
            y: Axis::linear("RankMass (share of the total PageRank)"),
            series,
            rule: None,
        }),
    }))
}

/// The downloads each ordering needs to reach 98%, guaranteed and actual.
fn summary(cx: &Ctx) -> anyhow::Result<Option<Figure>> {
    let cols = [
        "algorithm",
        "window",
        "downloads_to_098_guaranteed",
        "downloads_to_098_actual",
        "downloads",
        "rounds",
    ];
    let Some(f) = cx.out.read_latest("rankmass_summary", &cols)? else {
        return Ok(None);
    };
    let mut rows: Vec<Vec<Value>> = (0..f.len())
        .map(|r| {
            vec![
                ordering(
                    f.text("algorithm", r).unwrap_or_default(),
                    f.float("window", r),
                )
                .as_str()
                .into(),
                f.int("downloads_to_098_guaranteed", r).into(),
                f.int("downloads_to_098_actual", r).into(),
                f.int("downloads", r).into(),
                f.int("rounds", r).into(),
            ]
        })
        .collect();
    rows.sort_by_key(|r| r[0].display());
    Ok(Some(Figure {
        id: "rankmass-summary".into(),
        title: "Downloads to reach 98% RankMass".into(),
        guide: "Fewer downloads to a guaranteed 98% is better; rounds are the PageRank bound recomputations each ordering made.".into(),
        query: cx.sql(&format!(
            "select {ORDERING_SQL} as ordering,
       downloads_to_098_guaranteed, downloads_to_098_actual, downloads, rounds
from {{rankmass_summary}}
where snapshot = (select max(snapshot) from {{rankmass_summary}})
order by ordering"
        )),
        body: Body::Table(Table {
            columns: [
                "ordering",
                "downloads_to_098_guaranteed",
                "downloads_to_098_actual",
                "downloads",
                "rounds",
            ]
            .map(String::from)
            .to_vec(),
            rows,
        }),
    }))
}
