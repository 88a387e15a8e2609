//! Job files cannot go stale: every file in jobs/ parses and checks.

use webevo::job::Job;

use crate::util::root;

#[test]
fn every_job_file_parses() {
    let mut n = 0;
    for entry in std::fs::read_dir(root().join("jobs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            Job::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            n += 1;
        }
    }
    assert!(n >= 1, "jobs/ has job files");
}
