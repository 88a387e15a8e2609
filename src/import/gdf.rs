//! The Archives Unleashed toolkit's "Gephi GDF" host graphs.
//!
//! ```text
//! nodedef> name VARCHAR
//! example.com
//! other.org
//! edgedef> source VARCHAR, target VARCHAR, weight DOUBLE, timeint VARCHAR
//! example.com,other.org,12,20150301
//! ```
//! Each edge line is `source,target,weight,timeint`: `weight` is the number of
//! links, `timeint` the crawl date `YYYYMMDD`. Host names become pages
//! `http://HOST/`; every crawl date is one snapshot whose fetched pages are the
//! sources of its edges.
//!
//! A few host names contain commas, and the format does not quote them. Weight and
//! date never do, so each line is split from the right: the last two fields are
//! weight and date, and the rest is `source,target`. When that rest holds more
//! than one comma, the node list decides: the split whose source and target are
//! both node names (only names with commas need checking, and only those are
//! kept). Without a unique such split, the rightmost comma separates them.

use std::collections::HashSet;

use crate::error::InputError;
use crate::import::{host_page, line_error, parse_date, CrawlWriter, LineReader, UrlCache};

/// Reads one GDF file into `out`.
pub fn read(lines: &mut LineReader, out: &mut CrawlWriter) -> anyhow::Result<()> {
    let mut section = Section::Start;
    let mut comma_nodes: HashSet<String> = HashSet::new();
    let mut urls = UrlCache::default();
    let path = lines.path().to_path_buf();
    while let Some((no, line)) = lines.next_line()? {
        if line.trim().is_empty() {
            continue;
        }
        match section {
            Section::Start => {
                let Some(cols) = strip_prefix_ci(line, "nodedef>") else {
                    return Err(line_error(
                        &path,
                        no,
                        format!(
                            "expected the GDF header \"nodedef> name VARCHAR\", found {:?}",
                            clip(line)
                        ),
                    )
                    .into());
                };
                let names = column_names(cols);
                if names.len() != 1 || names[0] != "name" {
                    return Err(line_error(
                            &path,
                            no,
                            format!(
                                "unsupported node columns {names:?}: expected \"nodedef> name VARCHAR\" (the Archives Unleashed format)"
                            ),
                        )
                        .into());
                }
                section = Section::Nodes;
            }
            Section::Nodes => {
                if let Some(cols) = strip_prefix_ci(line, "edgedef>") {
                    let names = column_names(cols);
                    if names != ["source", "target", "weight", "timeint"] {
                        return Err(line_error(
                                &path,
                                no,
                                format!(
                                    "unsupported edge columns {names:?}: expected \"edgedef> source VARCHAR, target VARCHAR, weight DOUBLE, timeint VARCHAR\""
                                ),
                            )
                            .into());
                    }
                    section = Section::Edges;
                } else if line.contains(',') {
                    comma_nodes.insert(line.trim().to_string());
                }
            }
            Section::Edges => {
                if strip_prefix_ci(line, "edgedef>").is_some()
                    || strip_prefix_ci(line, "nodedef>").is_some()
                {
                    return Err(line_error(
                        &path,
                        no,
                        "a second nodedef>/edgedef> header in one file",
                    )
                    .into());
                }
                let edge = parse_edge(line, &comma_nodes).map_err(|p| line_error(&path, no, p))?;
                let src = urls.get(edge.source, host_page);
                let dst = urls.get(edge.target, host_page);
                out.edge(edge.time, src.as_deref(), dst.as_deref(), edge.count)?;
            }
        }
    }
    match section {
        Section::Edges => Ok(()),
        Section::Start => Err(InputError::file(
            lines.path(),
            "empty file: expected a GDF \"nodedef>\" header",
        )
        .into()),
        Section::Nodes => Err(InputError::file(
            lines.path(),
            format!(
                "no \"edgedef>\" line after {} lines: not a complete GDF file",
                lines.line_no
            ),
        )
        .into()),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Section {
    Start,
    Nodes,
    Edges,
}

/// One edge line, split.
#[derive(Debug, PartialEq, Eq)]
pub struct Edge<'a> {
    pub source: &'a str,
    pub target: &'a str,
    pub count: u64,
    pub time: crate::model::Micros,
}

/// Splits and parses one edge line; `comma_nodes` are the node names holding a
/// comma (see the module docs).
pub fn parse_edge<'a>(line: &'a str, comma_nodes: &HashSet<String>) -> Result<Edge<'a>, String> {
    let mut right = line.rsplitn(3, ',');
    let (Some(timeint), Some(weight), Some(pair)) = (right.next(), right.next(), right.next())
    else {
        return Err(wrong_fields(line));
    };
    let (source, target) = split_pair(pair, comma_nodes).ok_or_else(|| wrong_fields(line))?;
    let (source, target) = (source.trim(), target.trim());
    if source.is_empty() || target.is_empty() {
        return Err("empty source or target host name".into());
    }
    let time = parse_date(timeint).map_err(|e| format!("timeint: {e}"))?;
    let w = weight.trim();
    let count = w
        .parse::<f64>()
        .ok()
        .filter(|w| w.is_finite() && *w >= 0.0 && *w < 9.0e18)
        .ok_or_else(|| format!("weight {w:?} is not a non-negative number"))?;
    Ok(Edge {
        source,
        target,
        count: (count.round() as u64).max(1),
        time,
    })
}

fn wrong_fields(line: &str) -> String {
    format!(
        "wrong number of fields: expected 4 (source,target,weight,timeint), found {}",
        line.split(',').count()
    )
}

/// Splits `source,target` at the comma the node list supports, else the last one.
fn split_pair<'a>(pair: &'a str, comma_nodes: &HashSet<String>) -> Option<(&'a str, &'a str)> {
    let commas: Vec<usize> = pair.match_indices(',').map(|(i, _)| i).collect();
    let last = *commas.last()?;
    let at = |i: usize| (&pair[..i], &pair[i + 1..]);
    if commas.len() > 1 {
        let is_node = |s: &str| !s.contains(',') || comma_nodes.contains(s.trim());
        let fits: Vec<usize> = commas
            .iter()
            .copied()
            .filter(|&i| {
                let (s, t) = at(i);
                is_node(s) && is_node(t)
            })
            .collect();
        if let [i] = fits[..] {
            return Some(at(i));
        }
    }
    Some(at(last))
}

/// Case-insensitive `strip_prefix`.
fn strip_prefix_ci<'a>(line: &'a str, prefix: &str) -> Option<&'a str> {
    let head = line.trim_start().get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &line.trim_start()[prefix.len()..])
}

/// `name VARCHAR, label VARCHAR` → `["name", "label"]` (lower-cased).
fn column_names(cols: &str) -> Vec<String> {
    cols.split(',')
        .map(|c| {
            c.split_whitespace()
                .next()
                .unwrap_or_default()
                .to_ascii_lowercase()
        })
        .collect()
}

/// The start of a long line, for messages.
fn clip(line: &str) -> String {
    line.chars().take(80).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_edges_from_the_right_and_by_node_names() {
        let nodes: HashSet<String> = ["joyce.webs,com".to_string()].into();
        let e = parse_edge("a.ca,b.com,12,20150301", &nodes).unwrap();
        assert_eq!((e.source, e.target, e.count), ("a.ca", "b.com", 12));
        let e = parse_edge("a.net,joyce.webs,com,6,20151020", &nodes).unwrap();
        assert_eq!((e.source, e.target), ("a.net", "joyce.webs,com"));
        // Unknown to the node list: the rightmost comma.
        let e = parse_edge("x,y,z,6,20151020", &nodes).unwrap();
        assert_eq!((e.source, e.target), ("x,y", "z"));
        assert_eq!(parse_edge("a,b,2.6,20150301", &nodes).unwrap().count, 3);
        assert_eq!(parse_edge("a,b,0,20150301", &nodes).unwrap().count, 1);
        let err = |l| parse_edge(l, &nodes).unwrap_err();
        assert!(err("a.ca,12,20150301").starts_with("wrong number of fields"));
        assert!(err("a.ca,b,12,2015031").contains("bad date"));
        assert!(err("a.ca,b,many,20150301").contains("weight \"many\""));
        assert!(err("a.ca,,1,20150301").contains("empty"));
    }
}
