//! The same output for 1 worker, 4 workers and 2 processes of 2 workers each.

use webevo::generate::Preset;

use crate::util::*;

fn check(preset: Preset) {
    let dir = tempdir();
    let input = generated(preset, 7, &dir.path().join("in"));
    let one = dir.path().join("one");
    let four = dir.path().join("four");
    let two_by_two = dir.path().join("two-by-two");
    run_in_process(&input, &one, 1).unwrap();
    run_in_process(&input, &four, 4).unwrap();
    run_cluster(&input, &two_by_two, 2, 2);
    let expected = tables(&one);
    // Every table of jobs/all.toml has rows (echo_eval, the policy simulation of
    // jobs/echo-eval.toml, is checked in tests/echo.rs).
    for (table, rows) in &expected {
        assert!(table == "echo_eval" || !rows.is_empty(), "{table} has rows");
    }
    assert_eq!(tables(&four), expected, "4 workers differ from 1");
    assert_eq!(
        tables(&two_by_two),
        expected,
        "2 processes x 2 workers differ from 1"
    );
}

#[test]
fn tiny_preset_same_for_any_worker_layout() {
    check(Preset::Tiny);
}

#[test]
fn demo_preset_same_for_any_worker_layout() {
    check(Preset::Demo);
}
