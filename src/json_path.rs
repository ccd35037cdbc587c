//! JSON paths as scenario files and pagination write them: `$`, then
//! `.name`, `["name"]` or `[index]` steps (`$.data[0].id`). Compiled once;
//! looked up in a parsed `serde_json::Value`.

use serde_json::Value;

/// A JSON path: `$`, then `.name`, `["name"]` or `[index]` steps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JsonPath {
    text: String,
    steps: Vec<PathStep>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum PathStep {
    Key(String),
    Index(usize),
}

impl JsonPath {
    /// Parse a path.
    ///
    /// # Errors
    /// A path that does not start with `$` or has a malformed step.
    pub fn parse(text: &str) -> Result<JsonPath, String> {
        let bad = |why: &str| format!("JSON path {text:?}: {why} (write e.g. $.data[0].id)");
        let mut rest = text
            .strip_prefix('$')
            .ok_or_else(|| bad("it must start with $"))?;
        let mut steps = Vec::new();
        while !rest.is_empty() {
            if let Some(r) = rest.strip_prefix('.') {
                let len = r.find(['.', '[']).unwrap_or(r.len());
                if len == 0 {
                    return Err(bad("an empty name after `.`"));
                }
                steps.push(PathStep::Key(r[..len].to_string()));
                rest = &r[len..];
            } else if let Some(r) = rest.strip_prefix('[') {
                let end = r.find(']').ok_or_else(|| bad("`[` without `]`"))?;
                let inner = &r[..end];
                let quoted = inner
                    .strip_prefix('"')
                    .and_then(|s| s.strip_suffix('"'))
                    .or_else(|| inner.strip_prefix('\'').and_then(|s| s.strip_suffix('\'')));
                match (quoted, inner.parse::<usize>()) {
                    (Some(key), _) => steps.push(PathStep::Key(key.to_string())),
                    (None, Ok(i)) => steps.push(PathStep::Index(i)),
                    (None, Err(_)) => {
                        return Err(bad("an index must be a number or a quoted name"))
                    }
                }
                rest = &r[end + 1..];
            } else {
                return Err(bad(&format!("unexpected {rest:?}")));
            }
        }
        Ok(JsonPath {
            text: text.to_string(),
            steps,
        })
    }

    /// The value at this path of `v`, if any.
    pub fn get<'a>(&self, v: &'a Value) -> Option<&'a Value> {
        self.steps.iter().try_fold(v, |v, s| match s {
            PathStep::Key(k) => v.get(k),
            PathStep::Index(i) => v.get(i),
        })
    }
}

impl std::fmt::Display for JsonPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}
