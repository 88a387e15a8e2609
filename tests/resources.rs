//! Resource limits: past its memory budget a run stops with a clear error and the
//! last commit intact; a disk that fills up during a run's writes leaves the last
//! commit intact, and once there is room again the rerun ends as an uninterrupted
//! run would. The disk-full test mounts a small tmpfs in a user and mount
//! namespace (`unshare -rm`), and skips, saying so, where that is not allowed.

use std::path::Path;
use std::process::Command;

use webevo::generate::Preset;

use crate::util::*;

fn run_args<'a>(input: &'a str, out: &'a str, job: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "run", "-q", "--input", input, "--output", out, "--job", job, "-w", "2",
    ];
    args.extend(extra);
    args
}

#[test]
fn memory_budget_stops_a_run_with_a_clear_error_and_keeps_the_last_commit() {
    let (demo, _, _) = demo_outputs();
    let dir = tempdir();
    let first = subset(demo, &dir.path().join("first"), 0..=1);
    let out = dir.path().join("out");
    let job = root().join("jobs/discovery.toml");
    let (first_s, out_s, job_s, demo_s) = (
        first.to_str().unwrap(),
        out.to_str().unwrap(),
        job.to_str().unwrap(),
        demo.to_str().unwrap(),
    );
    let o = run_bin(&run_args(first_s, out_s, job_s, &[]), &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let before = committed_state(&out);

    // Six more demo snapshots hold far more than 40 MiB.
    let o = run_bin(
        &run_args(demo_s, out_s, job_s, &["--memory-limit", "40M"]),
        &[],
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("memory budget exceeded")
            && stderr.contains("of --memory-limit 40 MiB")
            && stderr.contains("the last commit is intact")
            && stderr.contains("Raise --memory-limit"),
        "{stderr}"
    );
    assert_eq!(committed_state(&out), before);

    // Without the budget the same update completes.
    let o = run_bin(&run_args(demo_s, out_s, job_s, &[]), &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(committed_state(&out).1.as_array().unwrap().len(), 8);
}

#[test]
fn a_bad_memory_budget_is_refused() {
    let o = run_bin(
        &[
            "run",
            "--input",
            "x",
            "--output",
            "y",
            "--memory-limit",
            "lots",
        ],
        &[],
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("write it like 512M, 8G"), "{stderr}");
}

fn namespaces_allowed() -> bool {
    Command::new("unshare")
        .args(["-rm", "true"])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn disk_full_during_a_run_keeps_the_last_commit_and_a_rerun_completes() {
    if !namespaces_allowed() {
        eprintln!("skipped: `unshare -rm` (user and mount namespaces) is not allowed here, so no small disk can be mounted");
        return;
    }
    let dir = tempdir();
    let full = generated(Preset::Tiny, 4, &dir.path().join("in"));
    let first = subset(&full, &dir.path().join("first"), 0..=2);
    let job = root().join("jobs/all.toml");
    let mnt = dir.path().join("disk");
    std::fs::create_dir_all(&mnt).unwrap();
    let t = dir.path();
    // Inside the namespace: a 512 MiB tmpfs for the first run, shrunk to what
    // it uses plus 64 KiB for the second, grown again for the rerun. Each step's
    // output is copied out, since the mount vanishes with the namespace.
    let script = format!(
        r#"set -e
mount -t tmpfs -o size=512m none {mnt}
{bin} run -q --input {first} --output {mnt}/out --job {job} -w 2
cp -a {mnt}/out {t}/after-first
used=$(df -k {mnt} | tail -1 | awk '{{print $3}}')
mount -o remount,size=$((used + 64))k {mnt}
set +e
{bin} run -q --input {full} --output {mnt}/out --job {job} -w 2 2> {t}/full.err
echo $? > {t}/full.rc
set -e
cp -a {mnt}/out {t}/after-full
mount -o remount,size=512m {mnt}
{bin} run -q --input {full} --output {mnt}/out --job {job} -w 2
cp -a {mnt}/out {t}/after-rerun
"#,
        mnt = mnt.display(),
        bin = bin().display(),
        first = first.display(),
        full = full.display(),
        job = job.display(),
        t = t.display(),
    );
    let o = Command::new("unshare")
        .args(["-rm", "sh", "-c", &script])
        .current_dir(root())
        .output()
        .expect("unshare");
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let read = |name: &str| std::fs::read_to_string(t.join(name)).unwrap();
    let err = read("full.err");
    assert_eq!(read("full.rc").trim(), "1", "{err}");
    assert!(err.contains("No space left on device"), "{err}");
    assert!(
        err.contains("the disk is full: nothing of this run was committed"),
        "{err}"
    );
    assert!(
        err.contains(&mnt.display().to_string()),
        "the error names no file: {err}"
    );
    assert_eq!(
        committed_state(&t.join("after-full")),
        committed_state(&t.join("after-first")),
        "the failed run changed the committed output"
    );

    let reference = t.join("reference");
    run_in_process(&full, &reference, 2).unwrap();
    assert_eq!(tables(&t.join("after-rerun")), tables(&reference));
    assert_no_staging(&t.join("after-rerun"));
}

fn assert_no_staging(out: &Path) {
    let staging = out.join("_staging");
    let left: Vec<_> = std::fs::read_dir(&staging)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "staging left behind: {left:?}");
}
