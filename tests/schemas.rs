//! The schema files and the code agree.

use crate::util::*;

#[test]
fn schema_files_match_the_code() {
    let o = run_bin(&["schemas", "--check"], &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn written_files_carry_the_declared_schema() {
    let dir = tempdir();
    let input = generated(webevo::generate::Preset::Tiny, 1, &dir.path().join("in"));
    let out = dir.path().join("out");
    run_in_process(&input, &out, 2).unwrap();
    // echo_eval is written by jobs/echo-eval.toml, on the news crawl.
    let news = dir.path().join("news-out");
    run_in_process_with_job(
        &input.join("news"),
        &news,
        2,
        &root().join("jobs/echo-eval.toml"),
    )
    .unwrap();
    for t in webevo::output::schema::TABLES {
        let mut files = Vec::new();
        let base = if t.name == "echo_eval" { &news } else { &out };
        find_parquet(&base.join(t.name), &mut files);
        assert!(!files.is_empty(), "{} has files", t.name);
        for f in files {
            let r = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
                std::fs::File::open(&f).unwrap(),
            )
            .unwrap();
            assert_eq!(
                r.schema().fields(),
                t.arrow_schema().fields(),
                "{}",
                f.display()
            );
        }
    }
}

fn find_parquet(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            find_parquet(&p, out);
        } else if p.extension().is_some_and(|x| x == "parquet") {
            out.push(p);
        }
    }
}
