//! The ground truth under `truth/`: what the simulation knows and the pipeline estimates.

use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use arrow_array::{
    ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, TimestampMicrosecondArray,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::clicks::ClickLog;
use super::clock::Micros;
use super::model::{Host, Page, Role, Web};
use super::urls::UrlView;
use super::write::{timestamp, timestamps, write_parquet, ROW_GROUP};

/// `truth/pages.parquet`: every page that ever existed (each was fetched at least once).
fn pages_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("url", DataType::Utf8, false),
        Field::new("host", DataType::Utf8, false),
        Field::new("domain_class", DataType::Utf8, false),
        Field::new("change_rate_per_s", DataType::Float64, false),
        Field::new("created", timestamp(), false),
        Field::new("died", timestamp(), true),
    ]))
}

/// `truth/sources.parquet`: the ECHO parameters of every front page.
fn sources_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("url", DataType::Utf8, false),
        Field::new("host", DataType::Utf8, false),
        Field::new("lambda_per_s", DataType::Float64, false),
        Field::new("p_profit", DataType::Float64, false),
        Field::new("mu_per_s", DataType::Float64, false),
    ]))
}

/// `truth/hosts.parquet`: every host that ever existed.
fn hosts_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("host", DataType::Utf8, false),
        Field::new("domain_class", DataType::Utf8, false),
        Field::new("created", timestamp(), false),
        Field::new("pages_final", DataType::Int64, false),
    ]))
}

/// `truth/snapshots.parquet`.
fn snapshots_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("seq", DataType::Int64, false),
        Field::new("time", timestamp(), false),
        Field::new("partial", DataType::Boolean, false),
    ]))
}

/// Writes the four truth tables into `dir`.
pub(crate) fn write_truth(
    dir: &Path,
    web: &Web,
    clicks: &ClickLog,
    urls: &UrlView,
    times: &[Micros],
) -> anyhow::Result<()> {
    let pages = with_ids(&web.pages).map(|(ids, chunk)| {
        let host = |p: &Page| &web.hosts[p.host as usize];
        let died: TimestampMicrosecondArray = chunk.iter().map(|p| p.died).collect();
        let columns: Vec<ArrayRef> = vec![
            strings(ids.clone().map(|id| urls.get(id))),
            strings(chunk.iter().map(|p| host(p).name.as_str())),
            strings(chunk.iter().map(|p| host(p).class.name())),
            floats(ids.map(|id| change_rate(web, id))),
            timestamps(chunk.iter().map(|p| p.created)),
            Arc::new(died.with_timezone("UTC")),
        ];
        Ok(RecordBatch::try_new(pages_schema(), columns)?)
    });
    write_parquet(&dir.join("pages.parquet"), pages_schema(), &["url"], pages)?;

    let sources = with_ids(&web.sources).map(|(ids, chunk)| {
        let host = |page: u32| &web.hosts[web.pages[page as usize].host as usize];
        let columns: Vec<ArrayRef> = vec![
            strings(chunk.iter().map(|s| urls.get(s.page))),
            strings(chunk.iter().map(|s| host(s.page).name.as_str())),
            floats(chunk.iter().map(|s| s.lambda)),
            floats(ids.map(|id| clicks.profit(web, id))),
            floats(chunk.iter().map(|s| host(s.page).click_decay)),
        ];
        Ok(RecordBatch::try_new(sources_schema(), columns)?)
    });
    write_parquet(
        &dir.join("sources.parquet"),
        sources_schema(),
        &["url"],
        sources,
    )?;

    let hosts = web.hosts.chunks(ROW_GROUP).map(|chunk| {
        let live_pages = |h: &Host| {
            if h.died.is_some() {
                0
            } else {
                h.pages.len() as i64
            }
        };
        let columns: Vec<ArrayRef> = vec![
            strings(chunk.iter().map(|h| h.name.as_str())),
            strings(chunk.iter().map(|h| h.class.name())),
            timestamps(chunk.iter().map(|h| h.created)),
            Arc::new(Int64Array::from_iter_values(chunk.iter().map(live_pages))),
        ];
        Ok(RecordBatch::try_new(hosts_schema(), columns)?)
    });
    write_parquet(&dir.join("hosts.parquet"), hosts_schema(), &["host"], hosts)?;

    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values(0..times.len() as i64)),
        timestamps(times.iter().copied()),
        Arc::new(BooleanArray::from(vec![false; times.len()])),
    ];
    let snapshots = RecordBatch::try_new(snapshots_schema(), columns)?;
    write_parquet(
        &dir.join("snapshots.parquet"),
        snapshots_schema(),
        &[],
        std::iter::once(Ok(snapshots)),
    )
}

/// The true change rate of a page: its own Poisson rate, plus for a front page the rate
/// at which new articles reach its lists (each one changes it). Deaths of listed
/// articles and links to new sites change front pages too and are not included.
fn change_rate(web: &Web, id: u32) -> f64 {
    let p = &web.pages[id as usize];
    let host = &web.hosts[p.host as usize];
    let source = match p.role {
        Role::Article => return p.lambda,
        Role::Main => host.main_source,
        Role::Hub => host.sections[p.section as usize].hub_source,
        Role::Mirror => {
            let section = &host.sections[p.section as usize];
            let mirror = section.mirrors.iter().find(|&&(m, _)| m == id);
            mirror.expect("a mirror is listed in its section").1
        }
    };
    p.lambda + web.sources[source as usize].lambda
}

/// The row groups of a table whose row `i` describes item `i`, with their item ids.
fn with_ids<T>(items: &[T]) -> impl Iterator<Item = (Range<u32>, &[T])> {
    items.chunks(ROW_GROUP).enumerate().map(|(k, chunk)| {
        let first = (k * ROW_GROUP) as u32;
        (first..first + chunk.len() as u32, chunk)
    })
}

fn floats(values: impl Iterator<Item = f64>) -> ArrayRef {
    Arc::new(Float64Array::from_iter_values(values))
}

fn strings<'a>(values: impl Iterator<Item = &'a str>) -> ArrayRef {
    Arc::new(values.map(Some).collect::<arrow_array::StringArray>())
}
