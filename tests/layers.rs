//! The layers of `src/` import one way: a module may use its own layer
//! and the layers below it, never one above; no top-level modules import
//! each other in a circle, and neither do the files of one folder.
//! ARCHITECTURE.md describes the layers; this test holds the code to
//! them, reading every `crate::` and `super::` path outside comments.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, from the bottom up, and the top-level modules of each.
const LAYERS: &[(&str, &[&str])] = &[
    (
        "vocabulary",
        &["model", "slab", "json_path", "exit", "grpc", "display"],
    ),
    (
        "work and judgement",
        &["input", "compare", "stats", "flow", "scenario"],
    ),
    ("transports", &["endpoint", "fault"]),
    ("engine", &["engine"]),
    ("output", &["results", "report", "live"]),
    (
        "app",
        &[
            "app", "plan", "cli", "commands", "demo", "gen", "lib", "main",
        ],
    ),
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|(_, mods)| mods.contains(&module))
}

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file of `src/` belongs to (`endpoint` for
/// `src/endpoint/h1.rs`, `plan` for `src/plan.rs`).
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel.components().next().unwrap().as_os_str();
    first.to_string_lossy().trim_end_matches(".rs").to_string()
}

/// The top-level modules a line of code names through `crate::` (or a
/// macro's `$crate::`), comments left out.
fn named(line: &str) -> Vec<String> {
    let code = line.trim_start();
    if code.starts_with("//") {
        return Vec::new();
    }
    let code = code.split("//").next().unwrap_or("");
    code.match_indices("crate::")
        .map(|(i, _)| {
            code[i + 7..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect::<String>()
        })
        .filter(|m| !m.is_empty())
        .collect()
}

/// Every import arrow between top-level modules: (from, to) -> where.
fn arrows() -> BTreeMap<(String, String), Vec<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut arrows: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for file in files {
        let from = module_of(&src, &file);
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            for to in named(line) {
                if to != from {
                    let at = format!("{}:{}", file.strip_prefix(&src).unwrap().display(), n + 1);
                    arrows.entry((from.clone(), to)).or_default().push(at);
                }
            }
        }
    }
    arrows
}

#[test]
fn every_module_has_a_layer() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let unplaced: BTreeSet<String> = files
        .iter()
        .map(|f| module_of(&src, f))
        .filter(|m| layer_of(m).is_none())
        .collect();
    assert!(
        unplaced.is_empty(),
        "modules in no layer (add them to LAYERS and to ARCHITECTURE.md): {unplaced:?}"
    );
}

#[test]
fn no_module_imports_a_layer_above_its_own() {
    let mut up = Vec::new();
    for ((from, to), at) in arrows() {
        let (Some(lf), Some(lt)) = (layer_of(&from), layer_of(&to)) else {
            continue;
        };
        if lt > lf {
            up.push(format!(
                "{from} ({}) -> {to} ({}) at {}",
                LAYERS[lf].0,
                LAYERS[lt].0,
                at.join(", ")
            ));
        }
    }
    assert!(up.is_empty(), "imports that point up:\n{}", up.join("\n"));
}

/// The circles of a graph given by its arrows, each as `a -> b -> a`.
fn circles(arrows: &BTreeSet<(String, String)>) -> Vec<Vec<String>> {
    let mut next: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (from, to) in arrows {
        next.entry(from).or_default().insert(to);
    }
    // Depth-first, keeping the path: an arrow back into the path closes
    // a circle.
    fn visit<'a>(
        m: &'a str,
        next: &BTreeMap<&'a str, BTreeSet<&'a str>>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
        found: &mut Vec<Vec<String>>,
    ) {
        if let Some(i) = path.iter().position(|p| *p == m) {
            let mut circle: Vec<String> = path[i..].iter().map(|s| s.to_string()).collect();
            circle.push(m.to_string());
            found.push(circle);
            return;
        }
        if !done.insert(m) {
            return;
        }
        path.push(m);
        for to in next.get(m).into_iter().flatten() {
            visit(to, next, path, done, found);
        }
        path.pop();
    }
    let mut found = Vec::new();
    let mut done = BTreeSet::new();
    for m in next.keys() {
        visit(m, &next, &mut Vec::new(), &mut done, &mut found);
    }
    found
}

#[test]
fn no_modules_import_each_other_in_a_circle() {
    let arrows = arrows();
    let found = circles(&arrows.keys().cloned().collect());
    let detail: Vec<String> = found
        .iter()
        .map(|c| {
            let wheres: Vec<String> = c
                .windows(2)
                .map(|w| {
                    let at = &arrows[&(w[0].clone(), w[1].clone())];
                    format!("  {} -> {} at {}", w[0], w[1], at.join(", "))
                })
                .collect();
            format!("{}\n{}", c.join(" -> "), wheres.join("\n"))
        })
        .collect();
    assert!(found.is_empty(), "circles:\n{}", detail.join("\n"));
}

/// A file's module path: `["endpoint", "h1"]` for `src/endpoint/h1.rs`,
/// `["endpoint"]` for `src/endpoint/mod.rs`.
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut path: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if path.last().is_some_and(|l| l == "mod") {
        path.pop();
    }
    path
}

/// The module paths a line names through `crate::` or `super::`, seen
/// from the file of module `at`.
fn paths_named(line: &str, at: &[String]) -> Vec<Vec<String>> {
    let code = line.trim_start();
    if code.starts_with("//") {
        return Vec::new();
    }
    let code = code.split("//").next().unwrap_or("");
    let mut out = Vec::new();
    for (i, _) in code
        .match_indices("crate::")
        .chain(code.match_indices("super::"))
    {
        // `super::super::x` is met once, at its first `super`.
        if code[..i].ends_with("super::") || code[..i].ends_with("crate::") {
            continue;
        }
        let words: Vec<&str> = code[i..]
            .split("::")
            .map(|w| {
                w.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .next()
                    .unwrap_or("")
            })
            .take_while(|w| !w.is_empty())
            .collect();
        let mut base: Vec<String> = if words[0] == "crate" {
            Vec::new()
        } else {
            // `super` of `a/b.rs` is `a`; of `a/b/mod.rs` too.
            at[..at.len().saturating_sub(1)].to_vec()
        };
        let mut rest = &words[1..];
        while rest.first() == Some(&"super") {
            base.pop();
            rest = &rest[1..];
        }
        base.extend(rest.iter().map(|w| w.to_string()));
        out.push(base);
    }
    out
}

#[test]
fn no_files_of_a_folder_import_each_other_in_a_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| module_path(&src, f)).collect();
    let mut arrows = BTreeSet::new();
    for file in &files {
        let at = module_path(&src, file);
        let text = std::fs::read_to_string(file).unwrap();
        for line in text.lines() {
            for named in paths_named(line, &at) {
                // The longest prefix that is a file's module: a sibling of
                // this file (same folder) makes an arrow.
                let Some(to) = (1..=named.len())
                    .rev()
                    .map(|k| named[..k].to_vec())
                    .find(|p| modules.contains(p))
                else {
                    continue;
                };
                if to != at && to.len() == at.len() && to[..to.len() - 1] == at[..at.len() - 1] {
                    arrows.insert((at.join("/"), to.join("/")));
                }
            }
        }
    }
    let found = circles(&arrows);
    let shown: Vec<String> = found.iter().map(|c| c.join(" -> ")).collect();
    assert!(found.is_empty(), "files in a circle:\n{}", shown.join("\n"));
}

/// The check itself sees an arrow: `crate::` paths in code count, in
/// comments they do not.
#[test]
fn a_path_in_code_is_an_arrow_and_one_in_a_comment_is_not() {
    assert_eq!(named("use crate::plan::Plan;"), ["plan"]);
    assert_eq!(
        named("let x = $crate::model::Outcome::x(); // crate::cli"),
        ["model"]
    );
    assert!(named("/// see [`crate::plan`]").is_empty());
    assert!(named("    // crate::engine").is_empty());
    let at = ["endpoint".to_string(), "h1".to_string()];
    assert_eq!(
        paths_named("use super::io::{classify_io, Io};", &at),
        [["endpoint", "io"]]
    );
    assert_eq!(
        paths_named(
            "x: super::super::h1::Conn",
            &["endpoint".into(), "http".into(), "lane".into()]
        ),
        [["endpoint", "h1", "Conn"]]
    );
}
