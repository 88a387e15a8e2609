//! The change analysis on the demo preset against the generator's true rates:
//! the per-page estimates recover them, and the 95% intervals cover them about as
//! often as they should.

use std::collections::BTreeMap;

use webevo::generate::Preset;

use crate::util::{generated, read_cells, root, run_in_process_with_job, tempdir, Cell};

#[test]
fn demo_estimates_recover_the_true_rates() {
    let dir = tempdir();
    let data = generated(Preset::Demo, 1, &dir.path().join("data"));
    let out = dir.path().join("out");
    run_in_process_with_job(&data, &out, 2, &root().join("jobs/change.toml")).unwrap();

    let truth: BTreeMap<String, f64> = read_cells(&data.join("truth/pages.parquet"))
        .into_iter()
        .map(|r| {
            let url = r["url"].str().unwrap().to_string();
            (url, r["change_rate_per_s"].f64().unwrap())
        })
        .collect();
    // Each page's latest row is its estimate from all its observations.
    let mut latest: BTreeMap<String, BTreeMap<String, Cell>> = BTreeMap::new();
    for row in read_cells(&out.join("page_change")) {
        let url = row["url"].str().unwrap().to_string();
        let newer = latest
            .get(&url)
            .is_none_or(|r| r["snapshot"].i64() < row["snapshot"].i64());
        if newer {
            latest.insert(url, row);
        }
    }
    let (mut errors, mut checked, mut covered) = (Vec::new(), 0usize, 0usize);
    // Pages whose mean change interval is within the reach of weekly snapshots.
    let mut weekly_errors = Vec::new();
    let day = 86_400.0;
    for (url, row) in &latest {
        let Some(&rate) = truth.get(url) else {
            continue;
        };
        if row["intervals"].i64().unwrap() < 3 {
            continue;
        }
        checked += 1;
        let lo = row["lambda_lo"].f64().unwrap_or(0.0);
        let hi = row["lambda_hi"].f64().unwrap_or(f64::INFINITY);
        if lo <= rate && rate <= hi {
            covered += 1;
        }
        if let Some(mle) = row["lambda_mle"].f64() {
            if rate > 0.0 && mle > 0.0 {
                let e = (mle - rate).abs() / rate;
                errors.push(e);
                if (1.0 / (30.0 * day)..=1.0 / (3.0 * day)).contains(&rate) {
                    weekly_errors.push(e);
                }
            }
        }
    }
    errors.sort_by(f64::total_cmp);
    weekly_errors.sort_by(f64::total_cmp);
    let median = errors[errors.len() / 2];
    let weekly_median = weekly_errors[weekly_errors.len() / 2];
    let coverage = covered as f64 / checked as f64;
    eprintln!(
        "demo: {checked} pages with >= 3 intervals; 95% interval covers the true rate for {:.1}%; \
         median relative error of the MLE {:.3} over {} pages with a finite positive estimate, \
         {:.3} over the {} of them whose true mean change interval is 3 to 30 days",
        100.0 * coverage,
        median,
        errors.len(),
        weekly_median,
        weekly_errors.len()
    );
    assert!(checked > 10_000, "{checked} pages checked");
    assert!(coverage > 0.85, "coverage {coverage}");
    assert!(median < 0.5, "median relative error {median}");
    assert!(
        weekly_median < 0.45,
        "median relative error {weekly_median} at 3-30 days"
    );
}
