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
    // The manifest measures the traffic between processes, and only there.
    let exchanged = |out: &std::path::Path| -> Vec<u64> {
        let text = std::fs::read_to_string(out.join("_manifest.json")).unwrap();
        let m: serde_json::Value = serde_json::from_str(&text).unwrap();
        m["runs"][0]["stages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["stage"] == "snapshot")
            .map(|s| s["exchange_bytes"].as_u64().unwrap())
            .collect()
    };
    assert!(exchanged(&one).iter().all(|&b| b == 0));
    let between = exchanged(&two_by_two);
    // (The network threads report their messages in batches of about a hundred,
    // so a snapshot's reading may lag by a few messages; the total may not.)
    assert!(
        between.iter().sum::<u64>() > 0,
        "the processes exchange bytes: {between:?}"
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
