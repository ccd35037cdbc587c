//! Data of a scenario: rows of named values (inline in the file, or from a
//! CSV file with a header line, or a JSON Lines file of flat objects), one
//! row per flow instance. Instance n takes row n (in order, starting over
//! after the last) or a row picked at random by n; either way every
//! endpoint gets the same row for the same instance. The rows are read
//! once, before the run, and checked: a row without a value for every
//! column is an error naming the row.

use std::path::Path;

/// How instances take rows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Order {
    /// Instance n takes row n (modulo the number of rows).
    #[default]
    Sequential,
    /// Instance n takes a row picked by a hash of n.
    Random,
}

/// Rows of named values.
#[derive(Clone, Debug, Default)]
pub(crate) struct Data {
    columns: Vec<String>,
    rows: Vec<Vec<String>>,
    order: Order,
}

impl Data {
    /// Rows given inline (TOML tables of values).
    ///
    /// # Errors
    /// A row whose keys differ from the first row's, or a value that is a
    /// table or an array.
    pub(crate) fn inline(rows: &[toml::Table], order: Order) -> Result<Data, String> {
        let Some(first) = rows.first() else {
            return Ok(Data::default());
        };
        let columns: Vec<String> = first.keys().cloned().collect();
        let mut out = Vec::with_capacity(rows.len());
        for (i, row) in rows.iter().enumerate() {
            let mut values = Vec::with_capacity(columns.len());
            for c in &columns {
                let v = row
                    .get(c)
                    .ok_or_else(|| format!("data row {}: no value for {c:?}", i + 1))?;
                values.push(scalar(v).ok_or_else(|| {
                    format!(
                        "data row {}: {c:?} must be a string, number or boolean",
                        i + 1
                    )
                })?);
            }
            if row.len() != columns.len() {
                return Err(format!(
                    "data row {}: it has other keys than the first row ({})",
                    i + 1,
                    columns.join(", ")
                ));
            }
            out.push(values);
        }
        Ok(Data {
            columns,
            rows: out,
            order,
        })
    }

    /// Rows from a file: CSV with a header line, or (named `*.jsonl` or
    /// `*.ndjson`) one flat JSON object per line.
    ///
    /// # Errors
    /// A file that cannot be read, no rows, a row with a missing value, a
    /// line that is not a flat JSON object; the message names the row or
    /// line.
    pub(crate) fn file(path: &Path, order: Order) -> Result<Data, String> {
        let shown = path.display();
        let jsonl = matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("jsonl" | "ndjson")
        );
        let data = if jsonl {
            let text = std::fs::read_to_string(path).map_err(|e| format!("{shown}: {e}"))?;
            let mut tables = Vec::new();
            for (n, line) in text
                .lines()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty())
            {
                let v: serde_json::Map<String, serde_json::Value> = serde_json::from_str(line)
                    .map_err(|e| format!("{shown}:{}: not a JSON object: {e}", n + 1))?;
                let mut t = toml::Table::new();
                for (k, v) in v {
                    let v = match v {
                        serde_json::Value::String(s) => toml::Value::String(s),
                        serde_json::Value::Bool(b) => toml::Value::Boolean(b),
                        serde_json::Value::Number(n) => toml::Value::String(n.to_string()),
                        _ => {
                            return Err(format!(
                                "{shown}:{}: {k:?} must be a string, number or boolean",
                                n + 1
                            ))
                        }
                    };
                    t.insert(k, v);
                }
                tables.push(t);
            }
            Data::inline(&tables, order).map_err(|e| format!("{shown}: {e}"))?
        } else {
            let mut reader = csv::ReaderBuilder::new()
                .has_headers(true)
                .from_path(path)
                .map_err(|e| format!("{shown}: {e}"))?;
            let columns: Vec<String> = reader
                .headers()
                .map_err(|e| format!("{shown}: {e}"))?
                .iter()
                .map(|h| h.trim().to_string())
                .collect();
            let mut rows = Vec::new();
            for (i, record) in reader.records().enumerate() {
                // The csv crate refuses a record with another number of
                // fields than the header, naming its line.
                let record = record.map_err(|e| format!("{shown}: row {}: {e}", i + 1))?;
                rows.push(record.iter().map(str::to_string).collect());
            }
            Data {
                columns,
                rows,
                order,
            }
        };
        if data.rows.is_empty() {
            return Err(format!("{shown}: no rows"));
        }
        Ok(data)
    }

    /// The columns, in order.
    pub(crate) fn columns(&self) -> &[String] {
        &self.columns
    }

    /// The row of instance `n` (none when there are no rows).
    pub(crate) fn row(&self, n: u64) -> Option<&[String]> {
        if self.rows.is_empty() {
            return None;
        }
        let len = self.rows.len() as u64;
        let i = match self.order {
            Order::Sequential => n % len,
            Order::Random => mix(n) % len,
        };
        self.rows.get(i as usize).map(Vec::as_slice)
    }

    /// The value of column `name` in instance `n`'s row.
    pub(crate) fn value(&self, n: u64, name: &str) -> Option<&str> {
        let c = self.columns.iter().position(|c| c == name)?;
        self.row(n)?.get(c).map(String::as_str)
    }
}

/// A TOML scalar as text.
pub(crate) fn scalar(v: &toml::Value) -> Option<String> {
    match v {
        toml::Value::String(s) => Some(s.clone()),
        toml::Value::Integer(n) => Some(n.to_string()),
        toml::Value::Float(f) => Some(f.to_string()),
        toml::Value::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A fixed 64-bit mix (splitmix64's finaliser): the same instance picks
/// the same row on every endpoint and core.
fn mix(n: u64) -> u64 {
    let mut z = n.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str, text: &str) -> std::path::PathBuf {
        let p = std::env::temp_dir().join(format!("versus-data-{}-{name}", std::process::id()));
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn csv_rows_are_taken_in_order_and_start_over() {
        let p = temp("users.csv", "user,pass\nann,a1\n\"lee, jr\",b2\n");
        let d = Data::file(&p, Order::Sequential).unwrap();
        assert_eq!(d.columns(), ["user", "pass"]);
        assert_eq!(d.value(0, "user"), Some("ann"));
        assert_eq!(d.value(1, "user"), Some("lee, jr"));
        assert_eq!(d.value(2, "pass"), Some("a1"));
        assert_eq!(d.value(0, "nope"), None);
    }

    #[test]
    fn a_row_with_a_missing_value_is_refused_by_its_number() {
        let p = temp("short.csv", "user,pass\nann,a1\nlee\n");
        let e = Data::file(&p, Order::Sequential).unwrap_err();
        assert!(e.contains("row 2"), "{e}");
        let p = temp("rows.jsonl", "{\"user\":\"ann\"}\n{\"user\":[1]}\n");
        let e = Data::file(&p, Order::Sequential).unwrap_err();
        assert!(e.contains(":2:"), "{e}");
        let p = temp("empty.csv", "user\n");
        assert!(Data::file(&p, Order::Sequential)
            .unwrap_err()
            .contains("no rows"));
    }

    #[test]
    fn random_order_is_the_same_for_an_instance_everywhere() {
        let rows: Vec<toml::Table> = (0..10)
            .map(|i| {
                let mut t = toml::Table::new();
                t.insert("i".into(), toml::Value::Integer(i));
                t
            })
            .collect();
        let d = Data::inline(&rows, Order::Random).unwrap();
        let picks: Vec<&str> = (0..100).map(|n| d.value(n, "i").unwrap()).collect();
        let again: Vec<&str> = (0..100).map(|n| d.value(n, "i").unwrap()).collect();
        assert_eq!(picks, again);
        let distinct: std::collections::BTreeSet<&&str> = picks.iter().collect();
        assert!(distinct.len() >= 8, "{distinct:?}");
    }
}
