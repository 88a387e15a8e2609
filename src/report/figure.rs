//! What the report shows: figures (a plot or a table), each with its data, the
//! DuckDB query that produces that data, and a line on how to read it.

use serde::Serialize;

/// A cell of a figure's data, as DuckDB would return it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Value {
    Null,
    Int(i64),
    Float(f64),
    Text(String),
}

impl Value {
    /// For the HTML tables: integers as they are, other numbers to four
    /// significant digits.
    pub fn display(&self) -> String {
        match self {
            Value::Null => "–".into(),
            Value::Int(v) => v.to_string(),
            Value::Float(v) => short_number(*v),
            Value::Text(s) => s.clone(),
        }
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Value {
        Value::Int(v)
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Value {
        if v.is_finite() {
            Value::Float(v)
        } else {
            Value::Null
        }
    }
}

impl From<&str> for Value {
    fn from(v: &str) -> Value {
        Value::Text(v.to_string())
    }
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Value {
        v.map_or(Value::Null, Into::into)
    }
}

/// A number for people: 4 significant digits, thousands as k/M for big ones.
pub fn short_number(v: f64) -> String {
    let a = v.abs();
    if v == 0.0 {
        "0".into()
    } else if a >= 1e6 {
        format!("{}M", trim(format!("{:.3}", v / 1e6)))
    } else if a >= 1e4 {
        format!("{}k", trim(format!("{:.2}", v / 1e3)))
    } else if a >= 1.0 {
        trim(format!(
            "{:.prec$}",
            v,
            prec = 3 - (a.log10().floor() as usize).min(3)
        ))
    } else if a >= 1e-3 {
        let digits = (-a.log10().floor()) as usize + 3;
        trim(format!("{v:.digits$}"))
    } else {
        format!("{v:.2e}")
    }
}

fn trim(s: String) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// An axis: its label (with units) and scale.
#[derive(Clone, Debug)]
pub struct Axis {
    pub label: String,
    pub log: bool,
}

impl Axis {
    pub fn linear(label: &str) -> Axis {
        Axis {
            label: label.into(),
            log: false,
        }
    }

    pub fn log(label: &str) -> Axis {
        Axis {
            label: label.into(),
            log: true,
        }
    }
}

/// One named line, point set or bar group.
#[derive(Clone, Debug)]
pub struct Series {
    /// What the query returns in its `series` column.
    pub key: Value,
    /// The legend's text.
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

impl Series {
    pub fn named(name: &str) -> Series {
        Series {
            key: Value::Text(name.into()),
            name: name.into(),
            points: Vec::new(),
        }
    }

    pub fn keyed(key: Value, name: String) -> Series {
        Series {
            key,
            name,
            points: Vec::new(),
        }
    }
}

#[derive(Clone, Debug)]
pub enum PlotKind {
    /// Lines through the points, with a marker at each.
    Lines,
    /// Markers only.
    Points,
    /// Bars centred at numeric x, this wide (a histogram).
    Bars(f64),
    /// Bars over categories (value, label): x is the category's index; series
    /// side by side.
    CategoryBars(Vec<(String, String)>),
}

#[derive(Clone, Debug)]
pub struct Plot {
    pub kind: PlotKind,
    pub x: Axis,
    pub y: Axis,
    pub series: Vec<Series>,
    /// A horizontal reference line (the 50% level, say), with its label.
    pub rule: Option<(f64, String)>,
}

#[derive(Clone, Debug)]
pub struct Table {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Value>>,
}

#[derive(Clone, Debug)]
pub enum Body {
    Plot(Plot),
    Table(Table),
}

#[derive(Clone, Debug)]
pub struct Figure {
    /// The HTML id, stable across runs (tests and links use it).
    pub id: String,
    pub title: String,
    /// One line on how to read it.
    pub guide: String,
    /// The DuckDB query whose result is exactly `data()`.
    pub query: String,
    pub body: Body,
}

/// A figure's data as the query returns it: column names and rows.
#[derive(Debug, Serialize)]
pub struct Data {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Value>>,
}

impl Figure {
    /// The rows the figure shows. Plots: (series, x, y), where x is the
    /// category's name for category bars.
    pub fn data(&self) -> Data {
        match &self.body {
            Body::Table(t) => Data {
                columns: t.columns.clone(),
                rows: t.rows.clone(),
            },
            Body::Plot(p) => {
                let mut rows = Vec::new();
                for s in &p.series {
                    for &(x, y) in &s.points {
                        let x = match &p.kind {
                            PlotKind::CategoryBars(c) => Value::Text(c[x as usize].0.clone()),
                            _ => Value::Float(x),
                        };
                        rows.push(vec![s.key.clone(), x, Value::Float(y)]);
                    }
                }
                Data {
                    columns: vec!["series".into(), "x".into(), "y".into()],
                    rows,
                }
            }
        }
    }

    /// Points (plots) or rows (tables) shown.
    pub fn marks(&self) -> usize {
        match &self.body {
            Body::Table(t) => t.rows.len(),
            Body::Plot(p) => p.series.iter().map(|s| s.points.len()).sum(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_numbers() {
        assert_eq!(short_number(0.0), "0");
        assert_eq!(short_number(1234.0), "1234");
        assert_eq!(short_number(12345.0), "12.35k");
        assert_eq!(short_number(2_500_000.0), "2.5M");
        assert_eq!(short_number(0.5), "0.5");
        assert_eq!(short_number(0.012345), "0.01235");
        assert_eq!(short_number(2.71234), "2.712");
        assert_eq!(short_number(0.00001), "1.00e-5");
    }
}
