//! The profile-guided build's training (`make build-pgo`) keeps up with the CLI:
//! scripts/pgo-train.sh runs to the end with the binary under test, on a tiny crawl.

use std::process::Command;

use crate::util::{bin, root, tempdir};

#[test]
fn the_training_script_runs_every_step() {
    let tmp = tempdir();
    let work = tmp.path().join("work");
    let out = Command::new("bash")
        .arg(root().join("scripts/pgo-train.sh"))
        .arg(bin())
        .arg(&work)
        .env("PGO_TRAIN_SCALE", "0.01")
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "scripts/pgo-train.sh failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    // Two runs committed: the history (0-8), then the last snapshot alone on
    // top of it, the incremental path the profile is meant to cover.
    let manifest = std::fs::read_to_string(work.join("out/_manifest.json")).expect("a manifest");
    let manifest: serde_json::Value = serde_json::from_str(&manifest).expect("manifest is JSON");
    let runs: Vec<Vec<u64>> = manifest["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .map(|r| {
            r["snapshots"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_u64().unwrap())
                .collect()
        })
        .collect();
    assert_eq!(runs, vec![(0..9).collect::<Vec<u64>>(), vec![9]]);
    assert!(
        work.join("out-news/echo_eval").is_dir(),
        "the policy simulation ran"
    );
    // The crawls themselves are removed: a training run leaves only its outputs.
    assert!(!work.join("data").exists() && !work.join("demo").exists());
}
