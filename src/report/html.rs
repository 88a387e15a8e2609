//! The page: sections of figures, each with its SVG (or table), an HTML legend,
//! the reading guide, the DuckDB query and the data as JSON.

use std::fmt::Write;

use super::data::Outputs;
use super::figure::{Body, Figure, Plot, PlotKind, Table};
use super::plot::{self, PALETTE};
use super::Section;

const STYLE: &str = r#"
body { font: 15px/1.45 system-ui, sans-serif; color: #222; margin: 0 auto; max-width: 1280px; padding: 0 24px 48px; }
header { border-bottom: 1px solid #ddd; margin-bottom: 8px; }
h1 { font-size: 26px; margin: 24px 0 4px; }
h2 { font-size: 21px; margin: 32px 0 4px; border-bottom: 1px solid #eee; }
h3 { font-size: 15px; margin: 0 0 2px; }
nav a { margin-right: 14px; }
.meta, .intro, .note { color: #555; margin: 2px 0; }
.missing { color: #8a4b00; background: #fff6e5; padding: 8px 12px; border-radius: 4px; }
.figures { display: grid; grid-template-columns: repeat(auto-fill, minmax(560px, 1fr)); gap: 20px; margin-top: 12px; }
figure { margin: 0; border: 1px solid #e4e4e4; border-radius: 6px; padding: 12px; background: #fff; }
figure.table { grid-column: 1 / -1; }
figure svg { width: 100%; height: auto; display: block; }
.guide { color: #555; font-size: 13px; margin: 0 0 6px; }
.legend { list-style: none; padding: 0; margin: 4px 0; font-size: 13px; display: flex; flex-wrap: wrap; gap: 4px 14px; }
.swatch { display: inline-block; width: 12px; height: 12px; border-radius: 2px; margin-right: 5px; vertical-align: -1px; }
.empty { color: #888; font-style: italic; }
details { font-size: 13px; margin-top: 6px; }
pre { background: #f6f6f6; padding: 8px; overflow-x: auto; font-size: 12px; }
table { border-collapse: collapse; font-size: 13px; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid #eee; padding: 3px 10px; text-align: right; }
th:first-child, td:first-child { text-align: left; }
.scroll { max-height: 420px; overflow: auto; }
"#;

pub fn page(out: &Outputs, sections: &[Section]) -> anyhow::Result<String> {
    let mut h = String::with_capacity(1 << 20);
    h.push_str("<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    h.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    h.push_str("<title>webevo report</title>\n<style>");
    h.push_str(STYLE);
    h.push_str("</style>\n</head>\n<body>\n<header>\n<h1>webevo report</h1>\n");
    for (dir, m) in out.dirs().iter().zip(out.manifests()) {
        let what = match (m.snapshots.first(), m.last()) {
            (Some(first), Some(last)) => format!(
                "{} snapshots committed, {} to {}",
                m.snapshots.len(),
                crate::ingest::crawl_dir::format_time(first.time),
                crate::ingest::crawl_dir::format_time(last.time),
            ),
            _ => "no snapshots committed".into(),
        };
        let _ = writeln!(
            h,
            "<p class=\"meta\">Output <code>{}</code>: {}.</p>",
            esc(&dir.display().to_string()),
            esc(&what)
        );
        let _ = writeln!(
            h,
            "<details class=\"meta\"><summary>its job</summary><pre><code>{}</code></pre></details>",
            esc(&serde_json::to_string_pretty(&m.job).unwrap_or_default())
        );
    }
    h.push_str("<p class=\"meta\">Each figure names the paper's figure it reproduces; open <em>DuckDB query</em> under it for the query that returns its data.</p>\n<nav>");
    for s in sections {
        let _ = write!(h, "<a href=\"#{}\">{}</a>", s.id, esc(&s.title));
    }
    h.push_str("</nav>\n</header>\n");
    for s in sections {
        section(&mut h, s)?;
    }
    h.push_str("</body>\n</html>\n");
    Ok(h)
}

fn section(h: &mut String, s: &Section) -> anyhow::Result<()> {
    let _ = writeln!(
        h,
        "<section id=\"{}\">\n<h2>{}</h2>\n<p class=\"intro\">{}</p>",
        s.id,
        esc(&s.title),
        esc(&s.intro)
    );
    if let Some(why) = &s.missing {
        let _ = writeln!(
            h,
            "<p class=\"missing\">Not in this output: {}.</p>\n</section>",
            esc(why)
        );
        return Ok(());
    }
    if !s.note.is_empty() {
        let _ = writeln!(h, "<p class=\"note\">{}</p>", esc(&s.note));
    }
    h.push_str("<div class=\"figures\">\n");
    for f in &s.figures {
        figure(h, f)?;
    }
    h.push_str("</div>\n</section>\n");
    Ok(())
}

fn figure(h: &mut String, f: &Figure) -> anyhow::Result<()> {
    let class = match f.body {
        Body::Plot(_) => "plot",
        Body::Table(_) => "table",
    };
    let _ = writeln!(
        h,
        "<figure class=\"{class}\" id=\"{}\">\n<h3>{}</h3>\n<p class=\"guide\">{}</p>",
        f.id,
        esc(&f.title),
        esc(&f.guide)
    );
    if f.marks() == 0 {
        h.push_str("<p class=\"empty\">Nothing to show at this snapshot.</p>\n");
    } else {
        match &f.body {
            Body::Plot(p) => plot_html(h, p)?,
            Body::Table(t) => table_html(h, t),
        }
    }
    let _ = writeln!(
        h,
        "<details><summary>DuckDB query</summary><pre><code>{}</code></pre></details>",
        esc(&f.query)
    );
    let data = serde_json::json!({
        "id": f.id,
        "kind": class,
        "query": f.query,
        "data": f.data(),
    });
    // `</` inside a script element would end it; `<\/` is the same JSON string.
    let _ = writeln!(
        h,
        "<script type=\"application/json\" class=\"figure-data\">{}</script>\n</figure>",
        data.to_string().replace("</", "<\\/")
    );
    Ok(())
}

fn plot_html(h: &mut String, p: &Plot) -> anyhow::Result<()> {
    h.push_str(&plot::svg(p)?);
    h.push('\n');
    let single_unnamed = p.series.len() == 1 && matches!(p.kind, PlotKind::Bars(_));
    if !single_unnamed {
        h.push_str("<ul class=\"legend\">");
        for (i, s) in p.series.iter().enumerate() {
            let (r, g, b) = PALETTE[i % PALETTE.len()];
            let _ = write!(
                h,
                "<li><span class=\"swatch\" style=\"background:#{r:02x}{g:02x}{b:02x}\"></span>{}</li>",
                esc(&s.name)
            );
        }
        h.push_str("</ul>\n");
    }
    Ok(())
}

fn table_html(h: &mut String, t: &Table) {
    h.push_str("<div class=\"scroll\"><table>\n<thead><tr>");
    for c in &t.columns {
        let _ = write!(h, "<th>{}</th>", esc(c));
    }
    h.push_str("</tr></thead>\n<tbody>\n");
    for row in &t.rows {
        h.push_str("<tr>");
        for v in row {
            let _ = write!(h, "<td>{}</td>", esc(&v.display()));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody></table></div>\n");
}

/// Text for HTML element content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(
            esc("<a href=\"x\">Tom & 'Jerry'</a>"),
            "&lt;a href=&quot;x&quot;&gt;Tom &amp; &#39;Jerry&#39;&lt;/a&gt;"
        );
    }
}
