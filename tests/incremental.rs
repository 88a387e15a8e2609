//! A run over 0-5 followed by a run after 6-7 appear equals one run over 0-7, and
//! the second run's work grows with 6-7, not with 0-5.

use webevo::generate::Preset;

use crate::util::*;

/// Runs 0..`first` on 2 workers, then the rest on `later_workers`.
fn check(preset: Preset, first: usize, later_workers: usize) {
    let dir = tempdir();
    let full = generated(preset, 3, &dir.path().join("full"));
    let seqs = snapshot_seqs(&full);
    assert!(seqs.len() > first, "preset has more than {first} snapshots");

    let whole = dir.path().join("whole");
    let one_run = run_in_process(&full, &whole, 2).unwrap();

    let grow = dir.path().join("grow");
    let out = dir.path().join("incremental");
    subset(&full, &grow, seqs[..first].iter().copied());
    let a = run_in_process(&grow, &out, 2).unwrap();
    subset(&full, &grow, seqs.iter().copied());
    let b = run_in_process(&grow, &out, later_workers).unwrap();

    assert_eq!(
        tables(&out),
        tables(&whole),
        "incremental differs from one run"
    );
    assert_eq!(b.snapshots, seqs[first..].to_vec());
    // On as many workers, each `pages` part kept the last one's rows as its
    // first row group (their fixed columns copied), the new pages after.
    let groups = pages_row_groups(&out);
    assert_eq!(groups.len(), later_workers);
    if later_workers == 2 {
        assert!(groups.iter().all(|&g| g == 2), "row groups {groups:?}");
    } else {
        assert!(groups.iter().all(|&g| g <= 1), "row groups {groups:?}");
    }
    // Work: the second run reads only the new snapshots' rows...
    assert_eq!(a.pages_read + b.pages_read, one_run.pages_read);
    assert_eq!(a.links_read + b.links_read, one_run.links_read);
    // ...plus the state of one snapshot: at most a record per known page and host,
    // per link of the last snapshot, per event of it.
    let pages_known = table_rows(&whole, "pages").len() as u64;
    let links_bound = a.links_read; // links of one snapshot <= links read over 0..first
    assert!(b.state_records_read > 0);
    assert!(
        b.state_records_read <= 2 * pages_known + links_bound,
        "restored {} records for {pages_known} pages",
        b.state_records_read
    );
    assert!(
        b.state_records_read < a.pages_read + a.links_read,
        "continuing costs less than re-reading the history"
    );
    // A third run with nothing new does nothing and changes nothing.
    let before = tables(&out);
    let c = run_in_process(&grow, &out, 1).unwrap();
    assert!(c.snapshots.is_empty());
    assert_eq!(tables(&out), before);
}

/// The row groups of each `pages` part of `out`.
fn pages_row_groups(out: &std::path::Path) -> Vec<usize> {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let mut parts: Vec<_> = std::fs::read_dir(out.join("pages"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    parts.sort();
    parts
        .iter()
        .map(|p| {
            let reader = SerializedFileReader::new(std::fs::File::open(p).unwrap()).unwrap();
            reader.metadata().num_row_groups()
        })
        .collect()
}

#[test]
fn tiny_preset_split_in_two_runs() {
    check(Preset::Tiny, 3, 3);
}

#[test]
fn demo_preset_zero_to_five_then_six_seven() {
    check(Preset::Demo, 6, 3);
}

/// The same on as many workers: the second run copies the `pages` table's
/// fixed columns of the rows it kept (`output::pages_table`).
#[test]
fn demo_preset_continued_on_as_many_workers() {
    check(Preset::Demo, 6, 2);
}

#[test]
fn continuing_with_another_job_is_refused() {
    let dir = tempdir();
    let input = generated(Preset::Tiny, 1, &dir.path().join("in"));
    let out = dir.path().join("out");
    run_in_process(&input, &out, 1).unwrap();
    let other_job = dir.path().join("job.toml");
    std::fs::write(&other_job, "[output]\nzstd_level = 9\n").unwrap();
    let o = run_bin(
        &[
            "run",
            "-q",
            "--input",
            input.to_str().unwrap(),
            "--output",
            out.to_str().unwrap(),
            "--job",
            other_job.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("different job"));
}

/// Each commit keeps the state it replaced in `_state.spare/`, and the next
/// run writes its ledger parts over those files (the same inodes) instead of
/// new ones; the tables still equal one run's, and the committed state is
/// never a spare.
#[test]
fn a_run_writes_its_state_over_the_one_before_last() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempdir();
    let full = generated(Preset::Tiny, 5, &dir.path().join("full"));
    let seqs = snapshot_seqs(&full);
    assert!(seqs.len() >= 3, "preset has 3 snapshots or more");
    let whole = dir.path().join("whole");
    run_in_process(&full, &whole, 2).unwrap();

    let inodes = |state: &std::path::Path| -> Vec<u64> {
        (0..2)
            .map(|i| {
                let part = webevo::state::part_path(state, i);
                std::fs::metadata(&part).unwrap().ino()
            })
            .collect()
    };
    let grow = dir.path().join("grow");
    let out = dir.path().join("incremental");
    let (state, spare) = (out.join("_state"), out.join("_state.spare"));
    subset(&full, &grow, seqs[..1].iter().copied());
    run_in_process(&grow, &out, 2).unwrap();
    assert!(!spare.exists(), "a first commit replaces no state");
    let first = inodes(&state);
    subset(&full, &grow, seqs[..2].iter().copied());
    run_in_process(&grow, &out, 2).unwrap();
    let second = inodes(&state);
    assert_eq!(inodes(&spare), first, "the replaced state is kept");
    assert!(second.iter().all(|i| !first.contains(i)));
    subset(&full, &grow, seqs.iter().copied());
    run_in_process(&grow, &out, 2).unwrap();
    assert_eq!(inodes(&state), first, "written over the spare files");
    assert_eq!(inodes(&spare), second);
    assert_eq!(
        tables(&out),
        tables(&whole),
        "incremental differs from one run"
    );
}

/// A file where the spare state would go (not webevo's) costs the commit
/// only its spare: the run commits, and the file stays.
#[test]
fn a_file_in_the_spare_states_place_fails_nothing() {
    let dir = tempdir();
    let full = generated(Preset::Tiny, 6, &dir.path().join("full"));
    let seqs = snapshot_seqs(&full);
    let whole = dir.path().join("whole");
    run_in_process(&full, &whole, 2).unwrap();
    let grow = dir.path().join("grow");
    let out = dir.path().join("incremental");
    subset(&full, &grow, seqs[..1].iter().copied());
    run_in_process(&grow, &out, 2).unwrap();
    std::fs::write(out.join("_state.spare"), "not a state").unwrap();
    subset(&full, &grow, seqs.iter().copied());
    let b = run_in_process(&grow, &out, 2).unwrap();
    assert_eq!(b.snapshots, seqs[1..].to_vec());
    assert_eq!(
        tables(&out),
        tables(&whole),
        "incremental differs from one run"
    );
    let left = std::fs::read_to_string(out.join("_state.spare")).unwrap();
    assert_eq!(left, "not a state");
}
