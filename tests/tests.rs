//! webevo's integration tests: one binary, one module per concern.

// Helpers: crawl directories, runs, reading tables back.
mod util;

// Bad input: clear errors naming file and row, exit code 2; odd rows counted.
mod bad_input;
// `webevo check`: the run's row counts and errors, without a run.
mod check;
// The corpus of nasty real-world input (tests/corpus/): each case fails clearly or runs right.
mod corpus;
// Hostile input: a bounded mutation fuzzer over every parser; no panic, errors name the file.
mod hostile_input;
// `webevo import`: real GDF and dated-links files, date formats, errors by line.
mod import;
// `webevo import --format warc`: real WARCs against warcio, a run end to end, written cases.
mod import_warc;
// `webevo import --format cc-hostgraph`: releases in text and Parquet, errors by line.
mod import_hostgraph;
// The nine change tables against a brute-force reference (docs/change.md), checked by hand.
mod change_reference;
// The change analysis' estimates on the demo preset recover the generator's rates.
mod change_truth;
// Crashes at every step of a run leave the last commit intact; reruns complete it.
mod crash;
// 1 worker = 4 workers = 2 processes x 2 workers, byte for byte after sorting.
mod determinism;
// The discovery part of the brute-force reference (docs/discovery.md), checked by hand.
mod discovery_reference;
// Snapshots 0-5 then 6-7 equal one run over 0-7, at the cost of 6-7 only.
mod incremental;
// ECHO on the news crawl against a replaying reference; truth recovery; layouts and split runs.
mod echo;
// Every job file in jobs/ parses.
mod jobs;
// `make build-pgo`'s training script runs to the end with the current CLI.
mod pgo_train;
// Host placement: large hosts pinned apart, kept with the state, same tables.
mod placement;
// pagerank and pagerank_runs against power iteration on random crawls, cold and warm.
mod rankmass_reference;
// The crawl orderings against plain references of Figures 5 and 6, and the curves' invariants.
mod rankmass_orders;
// The spine and discovery tables against a brute-force reference on random crawls.
mod reference;
// Progress lines on a terminal only; a summary at the end of every run.
mod progress;
// `webevo report`: each figure's data is its DuckDB query's; Chromium draws every figure.
mod report;
// Memory budget and disk full: clear errors, the last commit intact, reruns complete.
mod resources;
// Reruns change nothing; the output lock refuses a second run and recovers from a dead one.
mod reruns;
// A dead or missing process of a 2-process run: a prompt, clear exit; a rerun completes.
mod peers;
// schemas/*.json match the code; every table's rows match its schema.
mod schemas;
// DuckDB reads the output and an independent SQL reference agrees with it.
mod sql;
