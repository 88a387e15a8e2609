//! `webevo schemas`.

use std::path::PathBuf;

use anyhow::bail;

use crate::output::schema::TABLES;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Compare the files with the code instead of writing them; fail on a difference.
    #[arg(long)]
    check: bool,
    /// Where the schema files live.
    #[arg(long, default_value = "schemas")]
    dir: PathBuf,
}

/// The text of `schemas/<table>.json` for every table.
pub fn schema_files() -> Vec<(String, String)> {
    TABLES
        .iter()
        .map(|t| {
            let text = serde_json::to_string_pretty(&t.json()).expect("schema serializes") + "\n";
            (format!("{}.json", t.name), text)
        })
        .collect()
}

pub fn main(args: Args) -> anyhow::Result<()> {
    let files = schema_files();
    if args.check {
        let mut stale = Vec::new();
        for (name, text) in &files {
            let path = args.dir.join(name);
            if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
                stale.push(path.display().to_string());
            }
        }
        let expected: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
        if let Ok(entries) = std::fs::read_dir(&args.dir) {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if name.ends_with(".json") && !expected.contains(&name.as_str()) {
                    stale.push(format!("{} (no such table)", e.path().display()));
                }
            }
        }
        if !stale.is_empty() {
            bail!(
                "schema files differ from the code: {}; run `webevo schemas` (make schemas)",
                stale.join(", ")
            );
        }
        eprintln!("webevo: {} schema files match the code", files.len());
        return Ok(());
    }
    std::fs::create_dir_all(&args.dir)?;
    for (name, text) in &files {
        std::fs::write(args.dir.join(name), text)?;
    }
    eprintln!(
        "webevo: wrote {} schema files to {}",
        files.len(),
        args.dir.display()
    );
    Ok(())
}
