//! `webevo report` on the demo output: every figure's data is what its own DuckDB
//! query returns; headless Chromium renders the page, and every figure has marks
//! drawn in the series colours, in the DOM it built and in its screenshot.
//! The browser part skips (saying so) where Chromium is not installed; `.ci/run`
//! installs Debian's `chromium`.

use std::path::{Path, PathBuf};
use std::process::Command;

use webevo::generate::Preset;

use crate::util::*;

/// Every figure the demo's report must have.
const FIGURES: &[&str] = &[
    "discovery-cover-size",
    "discovery-mean-covered",
    "discovery-mean-overhead",
    "discovery-fraction-covered",
    "discovery-cover90-histogram",
    "discovery-jaccard",
    "discovery-policy-coverage",
    "discovery-policy-table",
    "discovery-new-sites",
    "change-intervals",
    "change-lifespans",
    "change-unchanged",
    "change-poisson",
    "change-designs",
    "change-revisit-frequencies",
    "change-revisit-freshness",
    "echo-lambda",
    "echo-profit",
    "echo-mu",
    "echo-intervals",
    "echo-plan",
    "echo-simulation",
    "rankmass-guaranteed",
    "rankmass-actual",
    "rankmass-summary",
    "run-snapshots",
    "run-stage-seconds",
    "run-stages",
    "run-table-rows",
    "run-snapshots-2",
    "run-stages-2",
];

fn chromium() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("WEBEVO_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| {
            std::env::var_os("PATH").and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|d| d.join(name))
                    .find(|p| p.is_file())
            })
        })
}

/// Headless Chromium with the flags a closed sandbox needs, on `page`.
fn headless(browser: &Path, profile: &Path, args: &[&str], page: &Path) -> Vec<u8> {
    let o = Command::new("timeout")
        .arg("180")
        .arg(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("start chromium");
    assert!(
        o.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o.stdout
}

#[test]
fn demo_report_matches_its_queries_and_renders() {
    let (_, out, news) = demo_outputs();
    let dir = tempdir();
    let html = dir.path().join("report.html");
    let o = run_bin(
        &[
            "report",
            "--output",
            out.to_str().unwrap(),
            "--output",
            news.to_str().unwrap(),
            "--html",
            html.to_str().unwrap(),
        ],
        &[],
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(
        stderr.contains("wrote") && !stderr.contains("not in this output"),
        "{stderr}"
    );
    assert!(!stderr.contains("nothing to draw"), "{stderr}");

    // Self-contained: nothing to fetch, nothing to run.
    let page = std::fs::read_to_string(&html).unwrap();
    for fetches in ["<link", " src=", "url(", "<img", "<script src", "@import"] {
        assert!(
            !page.contains(fetches),
            "the page fetches something: {fetches}"
        );
    }
    assert!(!page.contains("<script>") && !page.contains("<script type=\"text/javascript\""));

    let script = root().join("tests/sql/report_check.py");
    let mut args: Vec<&std::ffi::OsStr> = vec![script.as_os_str(), html.as_os_str()];
    let Some(browser) = chromium() else {
        eprintln!("skipped the browser part: chromium is not installed (apt-get install chromium; .ci/run does)");
        args.push("--expect".as_ref());
        args.extend(FIGURES.iter().map(std::ffi::OsStr::new));
        python_check(&args);
        return;
    };
    let profile = dir.path().join("chromium-profile");
    let dom = dir.path().join("dom.html");
    std::fs::write(&dom, headless(&browser, &profile, &["--dump-dom"], &html)).unwrap();
    let shot = dir.path().join("report.png");
    headless(
        &browser,
        &profile,
        &[
            "--window-size=1280,2400",
            &format!("--screenshot={}", shot.display()),
        ],
        &html,
    );
    assert!(shot.is_file(), "no screenshot");
    args.extend([
        "--dom".as_ref(),
        dom.as_os_str(),
        "--screenshot".as_ref(),
        shot.as_os_str(),
        "--expect".as_ref(),
    ]);
    args.extend(FIGURES.iter().map(std::ffi::OsStr::new));
    if let Some(text) = python_check(&args) {
        assert!(text.contains(" 0 failures"), "{text}");
    }
}

#[test]
fn a_report_of_some_analyses_says_which_are_missing() {
    let dir = tempdir();
    let input = generated(Preset::Tiny, 3, &dir.path().join("in"));
    let out = dir.path().join("out");
    run_in_process_with_job(&input, &out, 2, &root().join("jobs/discovery.toml")).unwrap();
    let o = run_bin(&["report", "--output", out.to_str().unwrap()], &[]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "not in this output: Change and freshness, Ephemeral content sources (ECHO), RankMass crawl orderings"
        ),
        "{stderr}"
    );
    let page = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(page.contains("id=\"discovery-cover-size\""));
    assert!(page.contains("the change analysis has not run on this output"));
}

#[test]
fn a_report_of_a_directory_that_is_no_output_is_refused() {
    let dir = tempdir();
    let html = dir.path().join("r.html");
    let o = run_bin(
        &[
            "report",
            "--output",
            dir.path().to_str().unwrap(),
            "--html",
            html.to_str().unwrap(),
        ],
        &[],
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        stderr.contains("not a webevo output (no _manifest.json)"),
        "{stderr}"
    );
    assert!(!html.exists());
}
