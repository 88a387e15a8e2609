//! The run section: what was processed, how long each stage took and how much
//! memory it held, the rows of every table, and the odd input rows skipped.

use std::fs::File;

use parquet::file::reader::{FileReader, SerializedFileReader};

use super::figure::{Axis, Body, Figure, Plot, PlotKind, Series, Table, Value};
use super::{Ctx, Section};
use crate::output::commit::Manifest;

pub fn section(cx: &Ctx) -> anyhow::Result<Section> {
    let mut s = Section::new(
        "run",
        "The runs",
        "What webevo processed to produce these tables, and what it cost.",
    );
    let dirs = cx.out.dirs();
    for (i, (dir, m)) in dirs.iter().zip(cx.out.manifests()).enumerate() {
        let one = cx.out.only(i);
        let cx = Ctx { out: &one };
        let figures = [
            snapshots(&cx)?,
            stage_times(&cx, m),
            stages(&cx, m),
            table_rows(&cx)?,
        ];
        for mut f in figures.into_iter().flatten() {
            if dirs.len() > 1 {
                // One set per output, told apart by id and title.
                if i > 0 {
                    f.id = format!("{}-{}", f.id, i + 1);
                }
                f.title = format!("{}: {}", dir.display(), f.title);
            }
            s.figures.push(f);
        }
    }
    Ok(s)
}

/// The snapshots with what changed in each.
fn snapshots(cx: &Ctx) -> anyhow::Result<Option<Figure>> {
    let cols = [
        "snapshot",
        "time",
        "pages_fetched",
        "new_pages",
        "changed_pages",
        "gone_pages",
        "links",
        "new_hosts",
    ];
    let Some(f) = cx.out.read("snapshots", None, &cols)? else {
        return Ok(None);
    };
    let mut rows: Vec<Vec<Value>> = (0..f.len())
        .map(|r| {
            cols.iter()
                .map(|c| match *c {
                    "time" => f
                        .int(c, r)
                        .map_or(Value::Null, |t| Value::Text(utc_minute(t))),
                    _ => f.int(c, r).into(),
                })
                .collect()
        })
        .collect();
    rows.sort_by_key(|r| match r[0] {
        Value::Int(s) => s,
        _ => 0,
    });
    Ok(Some(Figure {
        id: "run-snapshots".into(),
        title: "Snapshots processed".into(),
        guide: "Each committed snapshot with its pages fetched, what was new, changed or gone since the one before, and its links.".into(),
        query: cx.sql(
            "select snapshot, strftime(time at time zone 'UTC', '%Y-%m-%d %H:%M') as time,
       pages_fetched, new_pages, changed_pages, gone_pages, links, new_hosts
from {snapshots}
order by snapshot",
        ),
        body: Body::Table(Table {
            columns: cols.iter().map(|c| c.to_string()).collect(),
            rows,
        }),
    }))
}

fn utc_minute(micros: i64) -> String {
    chrono::DateTime::from_timestamp_micros(micros)
        .map(|t| t.format("%Y-%m-%d %H:%M").to_string())
        .unwrap_or_default()
}

fn manifest_source(cx: &Ctx) -> String {
    let path = cx.out.dirs()[0].join("_manifest.json");
    format!(
        "(select unnest(runs) as r from read_json('{}', maximum_object_size = 1000000000))",
        super::data::sql_string(&path.display().to_string())
    )
}

/// Wall time per stage of each run.
fn stage_times(cx: &Ctx, m: &Manifest) -> Option<Figure> {
    let mut series = Vec::new();
    for run in &m.runs {
        let mut s = Series::named(&run.run);
        for st in &run.stages {
            if let (true, Some(seq)) = (st.stage == "snapshot", st.snapshot) {
                s.points.push((seq as f64, st.seconds));
            }
        }
        if !s.points.is_empty() {
            series.push(s);
        }
    }
    if series.is_empty() {
        return None;
    }
    Some(Figure {
        id: "run-stage-seconds".into(),
        title: "Wall time per snapshot".into(),
        guide: "Reading, folding and writing each snapshot, by run: flat bars mean the cost grows with the new snapshot, not with the history.".into(),
        query: format!(
            "select r.run as series, s.snapshot as x, s.seconds as y
from {}, unnest(r.stages) as t(s)
where s.stage = 'snapshot'
order by series, x",
            manifest_source(cx)
        ),
        body: Body::Plot(Plot {
            kind: PlotKind::Bars(1.0),
            x: Axis::linear("snapshot"),
            y: Axis::linear("wall time (seconds)"),
            series,
            rule: None,
        }),
    })
}

/// Every stage of every run with its memory and the odd input rows it skipped.
fn stages(cx: &Ctx, m: &Manifest) -> Option<Figure> {
    let mut rows = Vec::new();
    for run in &m.runs {
        for st in &run.stages {
            let odd = &st.odd_rows;
            rows.push(vec![
                run.run.as_str().into(),
                (run.workers as i64).into(),
                st.stage.as_str().into(),
                st.snapshot.map(|s| s as i64).into(),
                st.seconds.into(),
                (st.peak_rss_bytes as f64 / (1u64 << 20) as f64).into(),
                (st.pages_read as i64).into(),
                (st.links_read as i64).into(),
                ((odd.self_links
                    + odd.unparsable_link_urls
                    + odd.duplicate_links
                    + odd.duplicate_pages) as i64)
                    .into(),
            ]);
        }
    }
    if rows.is_empty() {
        return None;
    }
    Some(Figure {
        id: "run-stages".into(),
        title: "Stages: time, peak memory, rows read, odd rows skipped".into(),
        guide: "Peak memory is process 0's resident set during the stage; odd rows are self-links, unparsable link URLs and duplicates, skipped and counted.".into(),
        query: format!(
            "select r.run, r.workers, s.stage, s.snapshot, s.seconds,
       s.peak_rss_bytes / 1048576 as peak_mib, s.pages_read, s.links_read,
       s.odd_rows.self_links + s.odd_rows.unparsable_link_urls
         + s.odd_rows.duplicate_links + s.odd_rows.duplicate_pages as odd_rows
from {}, unnest(r.stages) as t(s)",
            manifest_source(cx)
        ),
        body: Body::Table(Table {
            columns: [
                "run",
                "workers",
                "stage",
                "snapshot",
                "seconds",
                "peak_mib",
                "pages_read",
                "links_read",
                "odd_rows",
            ]
            .map(String::from)
            .to_vec(),
            rows,
        }),
    })
}

/// Rows in every table of the output(s), from the Parquet footers.
fn table_rows(cx: &Ctx) -> anyhow::Result<Option<Figure>> {
    let mut rows = Vec::new();
    let mut parts = Vec::new();
    for table in crate::output::schema::TABLES.iter().map(|t| t.name) {
        if cx.out.table_dir(table).is_none() {
            continue;
        }
        let mut n = 0i64;
        for (_, file) in cx.out.files(table, None)? {
            let reader = SerializedFileReader::new(File::open(&file)?)
                .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
            n += reader.metadata().file_metadata().num_rows();
        }
        rows.push(vec![table.into(), n.into()]);
        parts.push(format!(
            "select '{table}' as \"table\", count(*) as rows from {}",
            cx.out.source(table)
        ));
    }
    if rows.is_empty() {
        return Ok(None);
    }
    Ok(Some(Figure {
        id: "run-table-rows".into(),
        title: "Rows per table".into(),
        guide: "Every table the report found, with its rows over all snapshots; the schema of each is in schemas/<table>.json.".into(),
        query: parts.join("\nunion all\n"),
        body: Body::Table(Table {
            columns: vec!["table".into(), "rows".into()],
            rows,
        }),
    }))
}
