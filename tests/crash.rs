//! A run killed at any point leaves the previous commit readable and unchanged (or,
//! past the commit point, the new one once recovered), and the next run completes
//! with exactly the output of an uninterrupted run.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use webevo::generate::Preset;

use crate::util::*;

type Tables = BTreeMap<String, Vec<String>>;

struct Setup {
    _dir: tempfile::TempDir,
    full: std::path::PathBuf,
    grow: std::path::PathBuf,
    seqs: Vec<u64>,
    /// Outputs after the first half, and after everything.
    half: Tables,
    whole: Tables,
}

fn setup(preset: Preset) -> Setup {
    let dir = tempdir();
    let full = generated(preset, 11, &dir.path().join("full"));
    let seqs = snapshot_seqs(&full);
    let whole_out = dir.path().join("whole");
    run_in_process(&full, &whole_out, 2).unwrap();
    let half_out = dir.path().join("half");
    let half_in = subset(
        &full,
        &dir.path().join("half-in"),
        seqs[..seqs.len() / 2].iter().copied(),
    );
    run_in_process(&half_in, &half_out, 2).unwrap();
    let grow = dir.path().join("grow");
    Setup {
        half: tables(&half_out),
        whole: tables(&whole_out),
        full,
        grow,
        seqs,
        _dir: dir,
    }
}

fn run_args<'a>(input: &'a str, out: &'a str) -> Vec<&'a str> {
    vec![
        "run",
        "-q",
        "--job",
        "jobs/all.toml",
        "--input",
        input,
        "--output",
        out,
        "-w",
        "2",
    ]
}

/// Commits the first half into `out`, then makes all snapshots visible.
fn first_half(s: &Setup, out: &Path) {
    let _ = std::fs::remove_dir_all(&s.grow);
    subset(&s.full, &s.grow, s.seqs[..s.seqs.len() / 2].iter().copied());
    run_in_process(&s.grow, out, 2).unwrap();
    assert_eq!(tables(out), s.half);
    subset(&s.full, &s.grow, s.seqs.iter().copied());
}

fn recover(out: &Path) {
    let o = run_bin(&["status", "--output", out.to_str().unwrap()], &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn crash_at_every_step_keeps_the_last_commit() {
    let s = setup(Preset::Tiny);
    let points = [
        ("ingest", false),
        ("table-written", false),
        ("state-written", false),
        ("before-commit-point", false),
        ("after-commit-point", true),
        ("mid-apply", true),
    ];
    for (point, committed) in points {
        let dir = tempdir();
        let out = dir.path().join("out");
        first_half(&s, &out);
        let manifest = std::fs::read(out.join("_manifest.json")).unwrap();
        let (i, o) = (s.grow.to_str().unwrap(), out.to_str().unwrap());
        let r = run_bin(&run_args(i, o), &[("WEBEVO_CRASH_AT", point)]);
        assert!(!r.status.success(), "{point}: the run should have crashed");
        if committed {
            recover(&out);
            assert_eq!(
                tables(&out),
                s.whole,
                "{point}: recovery completes the commit"
            );
        } else {
            assert_eq!(tables(&out), s.half, "{point}: previous commit unchanged");
            assert_eq!(
                std::fs::read(out.join("_manifest.json")).unwrap(),
                manifest,
                "{point}"
            );
        }
        let r = run_bin(&run_args(i, o), &[]);
        assert!(
            r.status.success(),
            "{point}: rerun: {}",
            String::from_utf8_lossy(&r.stderr)
        );
        assert_eq!(
            tables(&out),
            s.whole,
            "{point}: rerun equals an uninterrupted run"
        );
        assert!(!out.join("_staging").exists() && !out.join("_journal.json").exists());
    }
}

#[test]
fn sigkill_at_random_moments() {
    let s = setup(Preset::Demo);
    let dir = tempdir();
    let out = dir.path().join("out");
    first_half(&s, &out);
    let (i, o) = (s.grow.to_str().unwrap(), out.to_str().unwrap());
    // Kill after 0.05 s, 0.1 s, 0.2 s, ...: early ones die in ingest, later ones
    // in writing or committing, the last ones may finish.
    for step in 0..8 {
        let mut child = std::process::Command::new(bin())
            .args(run_args(i, o))
            .current_dir(root())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(50 << step));
        let _ = child.kill();
        let _ = child.wait();
        recover(&out);
        let now = tables(&out);
        assert!(
            now == s.half || now == s.whole,
            "kill after {} ms left a mixture",
            50 << step
        );
    }
    let r = run_bin(&run_args(i, o), &[]);
    assert!(r.status.success());
    assert_eq!(tables(&out), s.whole);
}
