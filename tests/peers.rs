//! A dead or missing process of a multi-process run: the survivor exits promptly
//! with one clear line (no hang, no backtraces), nothing is committed, and a rerun
//! of all processes completes with the output of an undisturbed run.

use std::fs;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use webevo::generate::Preset;

use crate::util::*;

fn spawn(
    input: &Path,
    out: &Path,
    hostfile: &Path,
    p: usize,
    extra: &[&str],
    crash: Option<&str>,
) -> Child {
    let mut c = Command::new(bin());
    c.args(["run", "-q", "--input"])
        .arg(input)
        .arg("--output")
        .arg(out)
        .args(["-w", "1", "-n", "2", "-p", &p.to_string(), "--hostfile"])
        .arg(hostfile)
        .args(extra)
        .current_dir(root())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some(point) = crash {
        c.env("WEBEVO_CRASH_AT", point);
    }
    c.spawn().expect("start webevo")
}

/// Waits for `child` at most `limit`; its exit code and stderr.
fn wait_at_most(mut child: Child, limit: Duration) -> (Option<i32>, String) {
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            child.kill().unwrap();
            panic!("the process did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let o = child.wait_with_output().unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn hostfile(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("hosts");
    let lines: Vec<String> = free_ports(2)
        .iter()
        .map(|p| format!("127.0.0.1:{p}"))
        .collect();
    fs::write(&path, lines.join("\n")).unwrap();
    path
}

#[test]
fn a_dead_peer_stops_the_other_promptly_and_a_rerun_succeeds() {
    let dir = tempdir();
    let input = generated(Preset::Tiny, 4, &dir.path().join("in"));
    let out = dir.path().join("out");
    let hosts = hostfile(dir.path());
    // Process 1 dies as a crash would (abort, no cleanup) once both are connected.
    let p0 = spawn(&input, &out, &hosts, 0, &[], None);
    let p1 = spawn(&input, &out, &hosts, 1, &[], Some("ingest"));
    let (code1, _) = wait_at_most(p1, Duration::from_secs(60));
    assert_ne!(code1, Some(0));
    let (code, err) = wait_at_most(p0, Duration::from_secs(60));
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("lost the connection to another process"),
        "{err}"
    );
    assert!(
        !err.contains("panicked"),
        "one clear line, not backtraces: {err}"
    );
    assert!(!out.join("_manifest.json").exists(), "nothing committed");

    // All processes again: the run completes as if nothing had happened.
    run_cluster(&input, &out, 2, 1);
    let reference = dir.path().join("reference");
    run_in_process(&input, &reference, 2).unwrap();
    assert_eq!(tables(&out), tables(&reference));
}

#[test]
fn a_missing_peer_times_out_with_a_clear_message() {
    let dir = tempdir();
    let input = generated(Preset::Tiny, 4, &dir.path().join("in"));
    let out = dir.path().join("out");
    let hosts = hostfile(dir.path());
    let p0 = spawn(&input, &out, &hosts, 0, &["--connect-timeout", "2"], None);
    let (code, err) = wait_at_most(p0, Duration::from_secs(60));
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("not all 2 processes connected within 2 s"),
        "{err}"
    );
    assert!(err.contains("--connect-timeout"), "{err}");
    assert!(!out.join("_manifest.json").exists());
}
