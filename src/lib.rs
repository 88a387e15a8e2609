//! webevo: incremental crawl-snapshot statistics on timely/differential dataflow.
//!
//! Data flows one way: [`cli`] → [`run`] (planning, workers, commit) →
//! [`ingest`] (crawl directories to records) → [`dataflow`] (the [`ledger`] and the
//! analyses' stages) → [`output`] (schemas, Parquet, the commit protocol).

pub mod algo;
pub mod bits;
pub mod byte_string;
pub mod chain_store;
pub mod change_book;
pub mod cli;
pub mod dataflow;
pub mod direct_file;
pub mod echo_eval;
pub mod error;
pub mod exchange;
pub mod failpoint;
pub mod freed_hold;
pub mod generate;
pub mod grow;
pub mod id_map;
pub mod import;
pub mod ingest;
pub mod job;
pub mod ledger;
pub mod link_set;
pub mod memory;
pub mod model;
pub mod output;
pub mod page_state;
pub mod peers;
pub mod placement;
pub mod prefetch;
pub mod report;
pub mod run;
pub mod state;
pub mod str_sort;
pub mod tag_table;
pub mod url_arena;
