//! One convention for commands that print figures: `--format table|json|yaml`
//! (nodetool's `-F`), the table for people, JSON and YAML for programs.
//!
//! Contract:
//! 1. The three formats carry the same records with the same field names;
//!    the table is aligned columns with a header line, JSON an array of
//!    objects, YAML a sequence of maps, fields in the order given.
//! 2. Values are the strings the table shows, so a script reads exactly what
//!    a person sees (numbers with their units, dates as ISO-8601 UTC).
//! 3. Commands whose reports are nested (tablestats, compaction history,
//!    verify, ...) take the same `--format` through [`OutputArgs`]: JSON is
//!    the report serialized as it always was, YAML the same document in
//!    YAML's syntax (same keys in the same order, numbers as numbers).
//!    `--json`, the flag these commands had before, stays as a hidden
//!    synonym of `--format json` so that scripts keep working.

use clap::{Args, ValueEnum};
use serde::Serialize;
use std::fmt::Write as _;
use strata::{Error, Result};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned columns with a header.
    #[default]
    Table,
    /// An array of objects.
    Json,
    /// A sequence of maps.
    Yaml,
}

/// `--format` (`-F`, as nodetool's) for a command that prints a report.
#[derive(Args, Clone, Copy, Debug, Default)]
pub struct OutputArgs {
    /// How the report prints: `table` for people, `json` or `yaml` for
    /// programs.
    #[arg(long, short = 'F', value_enum, default_value_t = Format::Table)]
    format: Format,
    /// The same as `--format json`.
    #[arg(long, hide = true, conflicts_with = "format")]
    json: bool,
}

impl OutputArgs {
    pub fn format(&self) -> Format {
        if self.json {
            Format::Json
        } else {
            self.format
        }
    }

    /// True for the table: the text for people, progress lines included.
    pub fn is_table(&self) -> bool {
        self.format() == Format::Table
    }

    /// Prints `value` as JSON or YAML when one was asked for and returns
    /// true; prints nothing and returns false for the table, which the
    /// command writes itself (contract 3).
    pub fn print_report<T: Serialize + ?Sized>(&self, value: &T) -> Result<bool> {
        match self.format() {
            Format::Table => Ok(false),
            f => {
                crate::out!("{}", report_text(f, value)?);
                Ok(true)
            }
        }
    }
}

/// `value` as pretty JSON or YAML (`Table` is taken as JSON), ending in a
/// newline.
pub fn report_text<T: Serialize + ?Sized>(format: Format, value: &T) -> Result<String> {
    let json = serde_json::to_string_pretty(value)
        .map_err(|e| Error::InvalidInput(format!("JSON: {e}")))?;
    if format != Format::Yaml {
        return Ok(json + "\n");
    }
    // JSON is YAML: loading the serialized text keeps the keys in the order
    // the report's fields have, where a detour through serde_json's map
    // would sort them.
    let docs = yaml_rust2::YamlLoader::load_from_str(&json)
        .map_err(|e| Error::InvalidInput(format!("YAML: {e}")))?;
    let mut s = String::new();
    if let Some(doc) = docs.first() {
        yaml_rust2::YamlEmitter::new(&mut s)
            .dump(doc)
            .map_err(|e| Error::InvalidInput(format!("YAML: {e}")))?;
    }
    s.push('\n');
    Ok(s)
}

/// `rows` (each as long as `columns`) in `format` (contract 1).
pub fn render(format: Format, columns: &[&str], rows: &[Vec<String>]) -> String {
    match format {
        Format::Table => table(columns, rows),
        Format::Json => {
            // By hand: serde_json's map sorts keys, and the contract keeps
            // the order given.
            let quote = |v: &str| serde_json::to_string(v).unwrap_or_default();
            let mut s = String::from("[");
            for (i, row) in rows.iter().enumerate() {
                s.push_str(if i == 0 { "\n  {" } else { ",\n  {" });
                for (j, (c, v)) in columns.iter().zip(row).enumerate() {
                    let sep = if j == 0 { "" } else { "," };
                    let _ = write!(s, "{sep}\n    {}: {}", quote(c), quote(v));
                }
                s.push_str("\n  }");
            }
            s.push_str(if rows.is_empty() { "]\n" } else { "\n]\n" });
            s
        }
        Format::Yaml => {
            use yaml_rust2::{yaml::Hash, Yaml, YamlEmitter};
            let list = Yaml::Array(
                rows.iter()
                    .map(|row| {
                        let mut h = Hash::new();
                        for (c, v) in columns.iter().zip(row) {
                            h.insert(Yaml::String(c.to_string()), Yaml::String(v.clone()));
                        }
                        Yaml::Hash(h)
                    })
                    .collect(),
            );
            let mut s = String::new();
            // Writing into a String cannot fail.
            let _ = YamlEmitter::new(&mut s).dump(&list);
            s.push('\n');
            s
        }
    }
}

/// Aligned columns, each as wide as its widest cell, the last unpadded.
fn table(columns: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = columns.iter().map(|c| c.chars().count()).collect();
    for row in rows {
        for (w, v) in widths.iter_mut().zip(row) {
            *w = (*w).max(v.chars().count());
        }
    }
    let mut s = String::new();
    let mut line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut l = String::new();
        for (i, (cell, w)) in cells.zip(&widths).enumerate() {
            if i + 1 == columns.len() {
                l.push_str(cell);
            } else {
                let _ = write!(l, "{cell:<w$}  ");
            }
        }
        s.push_str(l.trim_end());
        s.push('\n');
    };
    line(&mut columns.iter().copied());
    for row in rows {
        line(&mut row.iter().map(String::as_str));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> (Vec<&'static str>, Vec<Vec<String>>) {
        (
            vec!["name", "value"],
            vec![
                vec!["commitlog_sync".into(), "periodic".into()],
                vec!["x".into(), "a: b".into()],
            ],
        )
    }

    #[test]
    fn the_table_aligns_columns_under_a_header() {
        let (c, r) = sample();
        assert_eq!(
            render(Format::Table, &c, &r),
            "name            value\ncommitlog_sync  periodic\nx               a: b\n"
        );
    }

    #[test]
    fn json_and_yaml_carry_the_same_fields_in_order() {
        let (c, r) = sample();
        let json: serde_json::Value = serde_json::from_str(&render(Format::Json, &c, &r)).unwrap();
        assert_eq!(json[1]["value"], "a: b");
        let text = render(Format::Json, &c, &r);
        assert!(text.find("\"name\"") < text.find("\"value\""), "{text}");
        assert_eq!(render(Format::Json, &c, &[]), "[]\n");
        let yaml = render(Format::Yaml, &c, &r);
        let docs = yaml_rust2::YamlLoader::load_from_str(&yaml).unwrap();
        assert_eq!(docs[0][1]["value"].as_str(), Some("a: b"), "{yaml}");
        assert_eq!(docs[0][0]["name"].as_str(), Some("commitlog_sync"));
    }

    #[derive(Serialize)]
    struct Report {
        zeta: u64,
        alpha: Vec<&'static str>,
        ratio: f64,
        none: Option<u32>,
        text: &'static str,
    }

    #[test]
    fn a_report_in_yaml_keeps_its_keys_order_and_types() {
        let r = Report {
            zeta: 1 << 40,
            alpha: vec!["a", "b: c"],
            ratio: 1.5,
            none: None,
            text: "yes",
        };
        let yaml = report_text(Format::Yaml, &r).unwrap();
        assert!(yaml.find("zeta") < yaml.find("alpha"), "{yaml}");
        let doc = &yaml_rust2::YamlLoader::load_from_str(&yaml).unwrap()[0];
        assert_eq!(doc["zeta"].as_i64(), Some(1 << 40));
        assert_eq!(doc["alpha"][1].as_str(), Some("b: c"));
        assert_eq!(doc["ratio"].as_f64(), Some(1.5));
        assert!(doc["none"].is_null());
        // "yes" stays a string, not YAML 1.1's boolean.
        assert_eq!(doc["text"].as_str(), Some("yes"), "{yaml}");
        let json = report_text(Format::Json, &r).unwrap();
        assert_eq!(json, serde_json::to_string_pretty(&r).unwrap() + "\n");
    }
}
