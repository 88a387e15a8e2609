//! Progress lines while stderr is a terminal (run under `script`, which gives the
//! command a pseudo-terminal), none otherwise, none with -q; every run not -q
//! ends with a summary naming the output and the next command.

use std::process::Command;

use webevo::generate::Preset;

use crate::util::*;

fn summary_checks(text: &str, out: &str) {
    assert!(
        text.contains("webevo: committed snapshots [0, 1, 2, 3, 4]"),
        "{text}"
    );
    assert!(text.contains("peak memory"), "{text}");
    assert!(text.contains(&format!("output: {out}")), "{text}");
    assert!(
        text.contains(&format!("next: webevo report --output {out}")),
        "{text}"
    );
}

#[test]
fn progress_on_a_terminal_a_summary_always_and_silence_with_quiet() {
    let dir = tempdir();
    let input = generated(Preset::Tiny, 2, &dir.path().join("in"));
    let job = root().join("jobs/discovery.toml");
    let run = |out: &str, quiet: bool| {
        let mut args = vec![
            "run".to_string(),
            "--input".into(),
            input.display().to_string(),
            "--output".into(),
            dir.path().join(out).display().to_string(),
            "--job".into(),
            job.display().to_string(),
        ];
        if quiet {
            args.push("-q".into());
        }
        args
    };

    // Not a terminal: the summary only.
    let o = run_bin(
        &run("plain", false)
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
        &[],
    );
    let text = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(o.status.success(), "{text}");
    summary_checks(&text, &dir.path().join("plain").display().to_string());
    assert!(
        !text.contains("pages/s"),
        "progress lines without a terminal: {text}"
    );

    // -q: nothing at all.
    let o = run_bin(
        &run("quiet", true)
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
        &[],
    );
    assert!(o.status.success());
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );

    // A terminal: a line per snapshot with its rates and the time left.
    let has_script = Command::new("script").arg("--version").output().is_ok();
    if !has_script {
        eprintln!("skipped the terminal part: util-linux `script` is not installed");
        return;
    }
    let command: Vec<String> = std::iter::once(bin().display().to_string())
        .chain(run("tty", false))
        .map(|a| format!("'{a}'"))
        .collect();
    let o = Command::new("script")
        .args(["-q", "-e", "-c", &command.join(" "), "/dev/null"])
        .current_dir(root())
        .output()
        .expect("script");
    let text = String::from_utf8_lossy(&o.stdout).replace('\r', "");
    assert!(o.status.success(), "{text}");
    for seq in 0..5 {
        assert!(
            text.contains(&format!("webevo: snapshot {seq} ({}/5) in ", seq + 1)),
            "no progress line for snapshot {seq}: {text}"
        );
    }
    assert!(
        text.contains("pages/s") && text.contains("links/s"),
        "{text}"
    );
    assert!(text.contains("ETA "), "{text}");
    summary_checks(&text, &dir.path().join("tty").display().to_string());
}
