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

impl ColType {
    pub fn arrow(self) -> DataType {
        match self {
            ColType::Int64 => DataType::Int64,
            ColType::Int32 => DataType::Int32,
            ColType::Float64 => DataType::Float64,
            ColType::Utf8 => DataType::Utf8,
            ColType::Bool => DataType::Boolean,
            ColType::Timestamp => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
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
    doc: "Every page known so far (fetched or linked to), with its history summary; rewritten by every run.",
    columns: &[
        c("url", Utf8, false, "Normalized URL."),
        c("host", Utf8, false, "Normalized host name."),
        c("first_seen", Timestamp, false, "Time of the first snapshot that fetched or linked to the page."),
        c("last_seen", Timestamp, false, "Time of the last snapshot that fetched or linked to the page."),
        c("first_seen_snapshot", Int64, false, "Sequence number of that first snapshot."),
        c("last_seen_snapshot", Int64, false, "Sequence number of that last snapshot."),
        c("observations", Int64, false, "Snapshots that fetched the page."),
        c("changes", Int64, false, "Observations whose digest differs from the previous observation's."),
        c("first_fetch_time", Timestamp, true, "Fetch time of the first observation; null if never fetched."),
        c("last_fetch_time", Timestamp, true, "Fetch time of the last observation; null if never fetched."),
        c("last_status", Int32, true, "HTTP status of the last observation, if recorded."),
        c("alive", Bool, false, "Fetched in the last full snapshot, or in a partial snapshot since."),
    ],
};

pub static COVER_TRAJECTORY: TableDef = TableDef {
    name: "cover_trajectory",
    partitioned: true,
    doc: "Discovery: per site, the GREEDY cover of its new pages by its old pages, one row per pick (ties: smallest URL). A prefix of k rows is the k-budgeted cover.",
    columns: &[
        c("site", Utf8, false, "The site (its host name)."),
        c("rank", Int64, false, "Position of the pick, from 1."),
        c("url", Utf8, false, "The old page picked: fetched in this snapshot and in an earlier one."),
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
        c("site", Utf8, false, "The site (its host name)."),
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

/// Every table webevo writes, in the order the README lists them.
pub static TABLES: &[&TableDef] = &[
    &SNAPSHOTS,
    &HOST_SNAPSHOTS,
    &PAGES,
    &COVER_TRAJECTORY,
    &COVER_SUMMARY,
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
