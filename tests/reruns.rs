//! Reruns and concurrency: the same update run twice changes nothing the second
//! time; a held lock refuses a second run with a clear message and nothing
//! committed; a lock file left by a dead process holds no lock; two runs started
//! together on one output end as one run would (this test found a race in the
//! old pid-file lock: a lock file created but not yet written looked stale).

use std::fs;
use std::path::Path;

use webevo::generate::Preset;

use crate::util::*;

fn run_cli(input: &Path, out: &Path) -> std::process::Output {
    run_bin(
        &[
            "run",
            "-q",
            "--input",
            input.to_str().unwrap(),
            "--output",
            out.to_str().unwrap(),
            "-w",
            "2",
        ],
        &[],
    )
}

#[test]
fn rerunning_the_same_update_changes_nothing() {
    let dir = tempdir();
    let input = generated(Preset::Tiny, 3, &dir.path().join("in"));
    let out = dir.path().join("out");
    let first = run_in_process(&input, &out, 2).unwrap();
    assert!(!first.snapshots.is_empty());
    let before = committed_state(&out);
    let second = run_in_process(&input, &out, 2).unwrap();
    assert!(second.snapshots.is_empty(), "{:?}", second.snapshots);
    assert_eq!(committed_state(&out), before);
}

#[test]
fn a_live_lock_refuses_a_second_run() {
    let dir = tempdir();
    let input = generated(Preset::Tiny, 3, &dir.path().join("in"));
    let out = dir.path().join("out");
    fs::create_dir_all(&out).unwrap();
    // This test process holds the lock, as a running webevo would.
    let held = fs::File::create(out.join("_lock")).unwrap();
    held.try_lock().unwrap();
    fs::write(out.join("_lock"), format!("{}\n", std::process::id())).unwrap();
    let o = run_cli(&input, &out);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    let pid = format!("another webevo run (pid {})", std::process::id());
    assert!(err.contains(&pid), "{err}");
    assert!(err.contains("_lock"), "{err}");
    assert!(!out.join("_manifest.json").exists(), "nothing committed");
    assert!(out.join("_lock").exists(), "the holder's lock stays");
    // Released, the next run goes ahead.
    drop(held);
    let o = run_cli(&input, &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn a_stale_lock_is_taken_over() {
    let dir = tempdir();
    let input = generated(Preset::Tiny, 3, &dir.path().join("in"));
    let out = dir.path().join("out");
    fs::create_dir_all(&out).unwrap();
    // The pid of a process that has exited: a crashed run's lock.
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let pid = gone.id();
    gone.wait().unwrap();
    fs::write(out.join("_lock"), format!("{pid}\n")).unwrap();
    let o = run_cli(&input, &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        !out.join("_lock").exists(),
        "the lock is released at the end"
    );
    let reference = dir.path().join("reference");
    run_in_process(&input, &reference, 2).unwrap();
    assert_eq!(tables(&out), tables(&reference));
}

#[test]
fn two_runs_started_together_end_as_one() {
    let dir = tempdir();
    let input = generated(Preset::Tiny, 3, &dir.path().join("in"));
    let out = dir.path().join("out");
    let spawn = || {
        std::process::Command::new(bin())
            .args(["run", "-q", "-w", "1", "--input"])
            .arg(&input)
            .arg("--output")
            .arg(&out)
            .current_dir(root())
            .output()
    };
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(spawn);
        let b = s.spawn(spawn);
        (a.join().unwrap().unwrap(), b.join().unwrap().unwrap())
    });
    let mut ok = 0;
    for o in [&a, &b] {
        let err = String::from_utf8_lossy(&o.stderr);
        if o.status.success() {
            ok += 1;
        } else {
            // The loser is refused by the lock, never half-written.
            assert_eq!(o.status.code(), Some(2), "{err}");
            assert!(err.contains("another webevo run"), "{err}");
        }
    }
    assert!(ok >= 1);
    let reference = dir.path().join("reference");
    run_in_process(&input, &reference, 2).unwrap();
    assert_eq!(tables(&out), tables(&reference));
    assert!(!out.join("_lock").exists());
}

/// Every run writes the whole state at the current version, so the
/// manifest records that version, not the one of the run that began the
/// output.
#[test]
fn the_manifest_records_the_state_version_last_written() {
    let dir = tempdir();
    let full = generated(Preset::Tiny, 3, &dir.path().join("in"));
    let seqs = snapshot_seqs(&full);
    let half = subset(
        &full,
        &dir.path().join("half"),
        seqs[..seqs.len() / 2].iter().copied(),
    );
    let out = dir.path().join("out");
    run_in_process(&half, &out, 2).unwrap();
    let path = out.join("_manifest.json");
    let version = |m: &serde_json::Value| m["state_version"].as_u64().unwrap();
    let mut manifest: serde_json::Value =
        serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    assert_eq!(version(&manifest), u64::from(webevo::state::STATE_VERSION));
    // As an output begun by an older webevo records it.
    manifest["state_version"] = 5.into();
    fs::write(&path, serde_json::to_vec_pretty(&manifest).unwrap()).unwrap();
    let more = run_in_process(&full, &out, 2).unwrap();
    assert!(!more.snapshots.is_empty());
    let manifest: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    assert_eq!(version(&manifest), u64::from(webevo::state::STATE_VERSION));
}
