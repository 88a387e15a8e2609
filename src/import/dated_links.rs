//! Long, dated link tables: `date, src, dst[, count]`, one link per line.
//!
//! ```text
//! 200510<TAB>liberal.ca<TAB>conservative.ca<TAB>23
//! 2015-03-01T00:00:00Z<TAB>http://a.ca/x<TAB>http://b.org/
//! ```
//! Tab- or comma-separated (`--delimiter`, or by the file name: `.csv` or
//! `.csv.gz` is comma-separated, anything else tab-separated), optionally gzipped.
//! CSV fields may be double-quoted (`""` inside quotes is a quote); TSV fields are
//! not quoted. The date is `YYYYMMDD`, `YYYYMM`, `YYYY-MM-DD`, `YYYY-MM` or RFC
//! 3339; a missing or empty count is 1. A `src`/`dst` holding `://` is a URL, taken
//! as is; anything else is a host name and becomes `http://HOST/`. A first line
//! whose date field has no digit (`date<TAB>src<TAB>dst`) is a header and skipped,
//! as are empty lines and lines starting with `#`.

use std::borrow::Cow;
use std::path::Path;

use crate::import::{
    line_error, page_url, parse_date, CrawlWriter, Delimiter, LineReader, UrlCache,
};

/// The delimiter a file's name implies.
pub fn delimiter_for(path: &Path) -> Delimiter {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let name = name.strip_suffix(".gz").unwrap_or(&name);
    if name.ends_with(".csv") {
        Delimiter::Comma
    } else {
        Delimiter::Tab
    }
}

/// Reads one dated-links file into `out`.
pub fn read(
    lines: &mut LineReader,
    delimiter: Delimiter,
    out: &mut CrawlWriter,
) -> anyhow::Result<()> {
    let mut urls = UrlCache::default();
    let path = lines.path().to_path_buf();
    let mut first = true;
    while let Some((no, line)) = lines.next_line()? {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let mut fields: Vec<Cow<str>> = Vec::with_capacity(4);
        split(line, delimiter, &mut fields).map_err(|p| line_error(&path, no, p))?;
        let is_first = std::mem::replace(&mut first, false);
        if is_first && !fields[0].bytes().any(|b| b.is_ascii_digit()) {
            continue; // a header row
        }
        if !(3..=4).contains(&fields.len()) {
            return Err(line_error(
                    &path,
                    no,
                    format!(
                        "wrong number of fields: expected 3 or 4 (date, src, dst[, count]) separated by {}, found {}",
                        match delimiter {
                            Delimiter::Tab => "tabs",
                            Delimiter::Comma => "commas",
                        },
                        fields.len()
                    ),
                )
                .into());
        }
        let row = parse_row(&fields).map_err(|p| line_error(&path, no, p))?;
        let src = urls.get(row.src, page_url);
        let dst = urls.get(row.dst, page_url);
        out.edge(row.time, src.as_deref(), dst.as_deref(), row.count)?;
    }
    Ok(())
}

struct RowFields<'a> {
    time: crate::model::Micros,
    src: &'a str,
    dst: &'a str,
    count: u64,
}

fn parse_row<'a>(fields: &'a [Cow<'a, str>]) -> Result<RowFields<'a>, String> {
    let time = parse_date(&fields[0])?;
    let src = fields[1].trim();
    let dst = fields[2].trim();
    if src.is_empty() || dst.is_empty() {
        return Err("src and dst must not be empty".into());
    }
    let count = match fields.get(3).map(|c| c.trim()).filter(|c| !c.is_empty()) {
        None => 1,
        Some(c) => c
            .parse::<u64>()
            .ok()
            .filter(|&n| n >= 1 && n <= i64::MAX as u64)
            .ok_or_else(|| format!("count {c:?} is not a positive integer"))?,
    };
    Ok(RowFields {
        time,
        src,
        dst,
        count,
    })
}

/// Splits one line into `fields`.
fn split<'a>(
    line: &'a str,
    delimiter: Delimiter,
    fields: &mut Vec<Cow<'a, str>>,
) -> Result<(), String> {
    fields.clear();
    match delimiter {
        Delimiter::Tab => fields.extend(line.split('\t').map(Cow::Borrowed)),
        Delimiter::Comma => split_csv(line, fields)?,
    }
    Ok(())
}

/// One CSV record on one line (RFC 4180 quoting, no line breaks inside quotes).
fn split_csv<'a>(line: &'a str, fields: &mut Vec<Cow<'a, str>>) -> Result<(), String> {
    let mut rest = line;
    loop {
        if let Some(quoted) = rest.strip_prefix('"') {
            let mut value = String::new();
            let mut chars = quoted.char_indices();
            let after = loop {
                match chars.next() {
                    None => return Err("unterminated quoted field".into()),
                    Some((i, '"')) => {
                        if quoted[i + 1..].starts_with('"') {
                            value.push('"');
                            chars.next();
                        } else {
                            break &quoted[i + 1..];
                        }
                    }
                    Some((_, c)) => value.push(c),
                }
            };
            fields.push(Cow::Owned(value));
            match after.strip_prefix(',') {
                Some(r) => rest = r,
                None if after.is_empty() => return Ok(()),
                None => return Err("text after a closing quote".into()),
            }
        } else {
            match rest.split_once(',') {
                Some((field, r)) => {
                    fields.push(Cow::Borrowed(field));
                    rest = r;
                }
                None => {
                    fields.push(Cow::Borrowed(rest));
                    return Ok(());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csv(line: &str) -> Result<Vec<String>, String> {
        let mut f = Vec::new();
        split_csv(line, &mut f)?;
        Ok(f.into_iter().map(|c| c.into_owned()).collect())
    }

    #[test]
    fn csv_fields() {
        assert_eq!(csv("a,b,,c").unwrap(), ["a", "b", "", "c"]);
        assert_eq!(
            csv(r#"20150301,"http://a.ca/x,y","say ""hi""",2"#).unwrap(),
            ["20150301", "http://a.ca/x,y", r#"say "hi""#, "2"]
        );
        assert_eq!(csv(r#""a","b""#).unwrap(), ["a", "b"]);
        assert!(csv(r#""a,b"#).is_err());
        assert!(csv(r#""a"x,b"#).is_err());
    }

    #[test]
    fn delimiter_by_name() {
        assert_eq!(delimiter_for(Path::new("x/links.CSV.gz")), Delimiter::Comma);
        assert_eq!(delimiter_for(Path::new("links.csv")), Delimiter::Comma);
        assert_eq!(delimiter_for(Path::new("links.tsv.gz")), Delimiter::Tab);
        assert_eq!(delimiter_for(Path::new("links.txt")), Delimiter::Tab);
    }

    #[test]
    fn rows() {
        let f =
            |v: &[&str]| -> Vec<Cow<str>> { v.iter().map(|s| Cow::Owned(s.to_string())).collect() };
        let fields = f(&["200510", "a.ca", "b.ca", "7"]);
        let r = parse_row(&fields).unwrap();
        assert_eq!((r.src, r.dst, r.count), ("a.ca", "b.ca", 7));
        let fields = f(&["200510", "a.ca", "b.ca"]);
        assert_eq!(parse_row(&fields).unwrap().count, 1);
        let fields = f(&["200510", "a.ca", "b.ca", "0"]);
        assert!(parse_row(&fields).err().unwrap().contains("count \"0\""));
        let fields = f(&["2005-13", "a.ca", "b.ca"]);
        assert!(parse_row(&fields).err().unwrap().contains("bad date"));
    }
}
