//! DuckDB reads the demo output, and an independent SQL implementation of the
//! foundation tables, computed from the input directory, agrees with it.
//! The README's queries and examples/queries/*.sql run and hold on the demo output.
//! Skips (with a message) where Python's duckdb is not installed; CI installs it.

use webevo::generate::Preset;

use crate::util::*;

#[test]
fn sql_reference_agrees_on_tiny_and_demo() {
    for preset in [Preset::Tiny, Preset::Demo] {
        let dir = tempdir();
        let input = generated(preset, 5, &dir.path().join("in"));
        let out = dir.path().join("out");
        run_in_process(&input, &out, 2).unwrap();
        let script = root().join("tests/sql/spine_reference.py");
        if python_check(&[script.as_os_str(), input.as_os_str(), out.as_os_str()]).is_none() {
            return;
        }
    }
}

#[test]
fn duckdb_reads_hive_partitions() {
    let dir = tempdir();
    let input = generated(Preset::Tiny, 5, &dir.path().join("in"));
    let out = dir.path().join("out");
    run_in_process(&input, &out, 2).unwrap();
    let script = root().join("tests/sql/duckdb_query.py");
    if let Some(text) = python_check(&[script.as_os_str(), out.as_os_str()]) {
        let n = table_rows(&out, "snapshots").len();
        assert!(text.contains(&format!("snapshots: {n} rows")), "{text}");
    }
}

/// The README's queries and examples/queries/*.sql on the demo output, as `make
/// demo` writes it: every table read by DuckDB with the schema's column types,
/// every query returning rows, every example's `-- assert:` holding on each row.
#[test]
fn readme_and_example_queries_on_the_demo_output() {
    let (_, out, news) = demo_outputs();
    let script = root().join("scripts/check_queries.py");
    if let Some(text) = python_check(&[script.as_os_str(), out.as_os_str(), news.as_os_str()]) {
        assert!(
            text.contains("every table, README query and example query checks out"),
            "{text}"
        );
    }
}
