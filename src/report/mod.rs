//! `webevo report`: the papers' figures drawn from the user's own output, as one
//! self-contained HTML page (inline SVG, no scripts, nothing fetched).
//!
//! Every figure carries the DuckDB query that yields exactly its data, and that
//! data as JSON (`<script type="application/json" class="figure-data">`), so the
//! report test can run the query and compare.

mod change;
pub mod data;
mod discovery;
mod echo;
pub mod figure;
mod html;
pub mod plot;
mod rankmass;
mod run_section;

use std::path::{Path, PathBuf};

use anyhow::Context;

use self::data::Outputs;
use self::figure::Figure;

/// What to draw, and where.
#[derive(Clone, Debug)]
pub struct ReportRequest {
    /// Output directories of `webevo run`; each table comes from the first that has it.
    pub outputs: Vec<PathBuf>,
    pub html: PathBuf,
}

/// What the report holds.
#[derive(Debug, Default)]
pub struct ReportSummary {
    pub figures: usize,
    /// Figures with nothing to draw (their ids).
    pub empty: Vec<String>,
    /// Sections whose analysis has not run (their titles).
    pub missing: Vec<String>,
    pub bytes: u64,
}

/// Gives the section builders the outputs and the SQL spelling of each table.
pub struct Ctx<'a> {
    pub out: &'a Outputs,
}

impl Ctx<'_> {
    /// `template` with every `{table}` replaced by the DuckDB expression reading it.
    pub fn sql(&self, template: &str) -> String {
        let mut out = String::with_capacity(template.len() + 256);
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            out.push_str(&rest[..open]);
            let after = &rest[open + 1..];
            match after.find('}') {
                Some(close)
                    if crate::output::schema::TABLES
                        .iter()
                        .any(|t| t.name == &after[..close]) =>
                {
                    out.push_str(&self.out.source(&after[..close]));
                    rest = &after[close + 1..];
                }
                _ => {
                    out.push('{');
                    rest = after;
                }
            }
        }
        out.push_str(rest);
        out
    }
}

/// A part of the page: one analysis, or the runs.
pub struct Section {
    pub id: String,
    pub title: String,
    pub intro: String,
    /// Which snapshot the figures show.
    pub note: String,
    pub figures: Vec<Figure>,
    /// Why the section is empty, when it is.
    pub missing: Option<String>,
}

impl Section {
    fn new(id: &str, title: &str, intro: &str) -> Section {
        Section {
            id: id.into(),
            title: title.into(),
            intro: intro.into(),
            note: String::new(),
            figures: Vec::new(),
            missing: None,
        }
    }

    fn missing(mut self, why: &str) -> Section {
        self.missing = Some(why.into());
        self
    }

    fn push(&mut self, figure: Option<Figure>) {
        self.figures.extend(figure);
    }
}

/// Draws the report of `req.outputs` into `req.html` (written whole, then
/// renamed into place, so a failed report never leaves half a page).
pub fn write(req: &ReportRequest) -> anyhow::Result<ReportSummary> {
    anyhow::ensure!(!req.outputs.is_empty(), "no output directory given");
    let out = Outputs::open(req.outputs.clone())?;
    let cx = Ctx { out: &out };
    let sections = vec![
        discovery::section(&cx).context("the discovery section")?,
        change::section(&cx).context("the change section")?,
        echo::section(&cx).context("the ECHO section")?,
        rankmass::section(&cx).context("the RankMass section")?,
        run_section::section(&cx).context("the run section")?,
    ];
    let page = html::page(&out, &sections)?;
    let tmp = temp_path(&req.html);
    std::fs::write(&tmp, &page).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, &req.html)
        .with_context(|| format!("cannot write {}", req.html.display()))?;
    let mut summary = ReportSummary {
        bytes: page.len() as u64,
        ..ReportSummary::default()
    };
    for s in &sections {
        if s.missing.is_some() {
            summary.missing.push(s.title.clone());
        }
        for f in &s.figures {
            summary.figures += 1;
            if f.marks() == 0 {
                summary.empty.push(f.id.clone());
            }
        }
    }
    Ok(summary)
}

fn temp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    path.with_file_name(name)
}
