//! The layers of `src/` import one way: a module may use its own layer
//! and the layers below it, never one above; no top-level modules import
//! each other in a circle, and neither do the files of one folder.
//! ARCHITECTURE.md describes the layers; this test holds the code to
//! them, reading every `crate::` and `super::` path outside comments.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, from the bottom up, each with its top-level modules, as
/// ARCHITECTURE.md's "Layers" lists them: the one place they are written.
/// An item there is `N. **name**: `module` (what it holds), ...`; the
/// modules are the bare names in backticks outside parentheses.
fn layers() -> Vec<(String, Vec<String>)> {
    let map =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("ARCHITECTURE.md"))
            .unwrap();
    let section = map
        .split("\n## Layers\n")
        .nth(1)
        .expect("ARCHITECTURE.md has a \"## Layers\" section")
        .split("\n## ")
        .next()
        .unwrap();
    let mut layers = Vec::new();
    for line in section.lines() {
        let Some((number, item)) = line.split_once(". **") else {
            continue;
        };
        if number.parse::<usize>().is_err() {
            continue;
        }
        let (name, _) = item.split_once("**").unwrap();
        layers.push((
            name.trim_matches('`').to_string(),
            outside_parentheses(item),
        ));
    }
    assert!(layers.len() >= 2, "no numbered layers in ARCHITECTURE.md");
    layers
}

/// The bare lower-case names in backticks of `item`, outside parentheses.
fn outside_parentheses(item: &str) -> Vec<String> {
    let (mut depth, mut out) = (0usize, Vec::new());
    let mut parts = item.split('`');
    let mut outside = parts.next().unwrap_or("");
    while let Some(quoted) = parts.next() {
        depth = outside.chars().fold(depth, |d, c| match c {
            '(' => d + 1,
            ')' => d.saturating_sub(1),
            _ => d,
        });
        let bare = !quoted.is_empty() && quoted.chars().all(|c| c.is_ascii_lowercase() || c == '_');
        if depth == 0 && bare {
            out.push(quoted.to_string());
        }
        outside = parts.next().unwrap_or("");
    }
    out
}

fn layer_of(layers: &[(String, Vec<String>)], module: &str) -> Option<usize> {
    layers
        .iter()
        .position(|(_, mods)| mods.iter().any(|m| m == module))
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

/// A file's code with line comments left out (lines kept, so that line
/// numbers hold).
fn code_of(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(|line| line.split("//").next().unwrap_or(""))
        .collect();
    lines.join("\n")
}

/// Every path the code of a file names through `crate::` (a macro's
/// `$crate::` too) or `super::`, with its line: a grouped import
/// `use crate::{a::X, b::{self, Y}}` names `crate::a::X`, `crate::b` and
/// `crate::b::Y`.
fn paths(text: &str) -> Vec<(usize, Vec<String>)> {
    let code = code_of(text);
    let mut out = Vec::new();
    for (i, _) in code
        .match_indices("crate::")
        .chain(code.match_indices("super::"))
    {
        // `super::super::x` is met once, at its first `super`.
        if code[..i].ends_with("super::") || code[..i].ends_with("crate::") {
            continue;
        }
        let line = code[..i].matches('\n').count() + 1;
        out.extend(use_tree(&code[i..]).0.into_iter().map(|p| (line, p)));
    }
    out
}

/// The paths of the use tree `s` starts with (`a::b::{c, d::{self, e}}`),
/// and how many bytes of `s` it takes.
fn use_tree(s: &str) -> (Vec<Vec<String>>, usize) {
    let mut prefix: Vec<String> = Vec::new();
    let mut at = 0;
    loop {
        let rest = &s[at..];
        let word = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        if word == 0 && rest.starts_with('{') {
            let (inner, used) = group(&rest[1..]);
            let paths = inner
                .into_iter()
                .map(|p| prefix.iter().cloned().chain(p).collect())
                .collect();
            return (paths, at + 1 + used);
        }
        if word > 0 && &rest[..word] != "self" {
            prefix.push(rest[..word].to_string());
        }
        at += word;
        if word == 0 || !s[at..].starts_with("::") {
            return (vec![prefix], at);
        }
        at += 2;
    }
}

/// The trees of a group's inside, up to and with its closing brace.
fn group(s: &str) -> (Vec<Vec<String>>, usize) {
    let mut paths = Vec::new();
    let mut at = 0;
    loop {
        at += s[at..]
            .find(|c: char| !(c.is_whitespace() || c == ','))
            .unwrap_or(s.len() - at);
        if at >= s.len() || s[at..].starts_with('}') {
            return (paths, (at + 1).min(s.len()));
        }
        let (tree, used) = use_tree(&s[at..]);
        paths.extend(tree);
        at += used.max(1);
        // Past a rename (`X as Y`) to the next tree.
        at += s[at..].find([',', '}']).unwrap_or(s.len() - at);
    }
}

/// `path` (from `crate` or `super`) as a path from the crate's root, seen
/// from the file of module `at`. `super` of `a/b.rs` is `a`; of
/// `a/b/mod.rs` too.
fn absolute(path: &[String], at: &[String]) -> Vec<String> {
    let mut base: Vec<String> = match path.first().map(String::as_str) {
        Some("super") => at[..at.len().saturating_sub(1)].to_vec(),
        _ => Vec::new(),
    };
    let mut rest = &path[1.min(path.len())..];
    while rest.first().is_some_and(|w| w == "super") {
        base.pop();
        rest = &rest[1..];
    }
    base.extend(rest.iter().cloned());
    base
}

/// Every file of `src/`, with its module path and every absolute path its
/// code names, each with its line.
type Named = Vec<(PathBuf, Vec<String>, Vec<(usize, Vec<String>)>)>;

fn named_by_file() -> Named {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files
        .into_iter()
        .map(|file| {
            let at = module_path(&src, &file);
            let text = std::fs::read_to_string(&file).unwrap();
            let named = paths(&text)
                .into_iter()
                .map(|(line, p)| (line, absolute(&p, &at)))
                .filter(|(_, p)| !p.is_empty())
                .collect();
            (file.strip_prefix(&src).unwrap().to_path_buf(), at, named)
        })
        .collect()
}

/// Every import arrow between top-level modules: (from, to) -> where.
fn arrows() -> BTreeMap<(String, String), Vec<String>> {
    let mut arrows: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for (file, at, named) in named_by_file() {
        for (line, path) in named {
            if path[0] != at[0] {
                let place = format!("{}:{line}", file.display());
                arrows
                    .entry((at[0].clone(), path[0].clone()))
                    .or_default()
                    .push(place);
            }
        }
    }
    arrows
}

#[test]
fn every_module_has_a_layer() {
    let layers = layers();
    let unplaced: BTreeSet<String> = named_by_file()
        .into_iter()
        .map(|(_, at, _)| at[0].clone())
        .filter(|m| layer_of(&layers, m).is_none())
        .collect();
    assert!(
        unplaced.is_empty(),
        "modules in no layer (add them to ARCHITECTURE.md's \"Layers\"): {unplaced:?}"
    );
}

#[test]
fn no_module_imports_a_layer_above_its_own() {
    let layers = layers();
    let mut up = Vec::new();
    for ((from, to), at) in arrows() {
        let (Some(lf), Some(lt)) = (layer_of(&layers, &from), layer_of(&layers, &to)) else {
            continue;
        };
        if lt > lf {
            up.push(format!(
                "{from} ({}) -> {to} ({}) at {}",
                layers[lf].0,
                layers[lt].0,
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

#[test]
fn no_files_of_a_folder_import_each_other_in_a_circle() {
    let files = named_by_file();
    let modules: BTreeSet<&Vec<String>> = files.iter().map(|(_, at, _)| at).collect();
    let mut arrows = BTreeSet::new();
    for (_, at, named) in &files {
        for (_, path) in named {
            // The longest prefix that is a file's module: a sibling of
            // this file (same folder) makes an arrow.
            let Some(to) = (1..=path.len())
                .rev()
                .map(|k| path[..k].to_vec())
                .find(|p| modules.contains(p))
            else {
                continue;
            };
            if &to != at && to.len() == at.len() && to[..to.len() - 1] == at[..at.len() - 1] {
                arrows.insert((at.join("/"), to.join("/")));
            }
        }
    }
    let found = circles(&arrows);
    let shown: Vec<String> = found.iter().map(|c| c.join(" -> ")).collect();
    assert!(found.is_empty(), "files in a circle:\n{}", shown.join("\n"));
}

/// The check itself sees an arrow: `crate::` and `super::` paths in code
/// count, grouped ones each, and none in comments.
#[test]
fn a_path_in_code_is_an_arrow_and_one_in_a_comment_is_not() {
    let named =
        |text: &str| -> Vec<Vec<String>> { paths(text).into_iter().map(|(_, p)| p).collect() };
    assert_eq!(named("use crate::plan::Plan;"), [["crate", "plan", "Plan"]]);
    assert_eq!(
        named("let x = $crate::model::Outcome::x(); // crate::cli"),
        [["crate", "model", "Outcome", "x"]]
    );
    assert!(named("/// see [`crate::plan`]").is_empty());
    assert!(named("    // crate::engine").is_empty());
    assert_eq!(
        named("use crate::{\n    model::Request, // crate::cli\n    stats::{self, RunStats as S},\n};"),
        [
            vec!["crate", "model", "Request"],
            vec!["crate", "stats"],
            vec!["crate", "stats", "RunStats"]
        ]
    );
    let lines: Vec<usize> = paths("use std::io;\nuse crate::a;\n\nx(crate::b::C)")
        .iter()
        .map(|(l, _)| *l)
        .collect();
    assert_eq!(lines, [2, 4]);
    let at = ["endpoint".to_string(), "h1".to_string()];
    let resolved: Vec<Vec<String>> = named("use super::{io::{classify_io, Io}, h2};")
        .iter()
        .map(|p| absolute(p, &at))
        .collect();
    assert_eq!(
        resolved,
        [
            vec!["endpoint", "io", "classify_io"],
            vec!["endpoint", "io", "Io"],
            vec!["endpoint", "h2"]
        ]
    );
    let lane = ["endpoint".into(), "http".into(), "lane".into()];
    assert_eq!(
        absolute(&named("x: super::super::h1::Conn")[0], &lane),
        ["endpoint", "h1", "Conn"]
    );
}

/// The layers come from ARCHITECTURE.md, modules outside parentheses.
#[test]
fn the_layers_are_read_from_the_map() {
    assert_eq!(
        outside_parentheses("**x**: `model` (a `flow::x`, `cli`), `slab`, `gen`."),
        ["model", "slab", "gen"]
    );
    let layers = layers();
    assert_eq!(layers[0].0, "vocabulary");
    assert_eq!(layer_of(&layers, "engine"), Some(3));
    assert_eq!(layer_of(&layers, "report"), layer_of(&layers, "results"));
}

/// ARCHITECTURE.md is a map a newcomer reads in fifteen minutes: at most
/// 2,500 words. A new part of the house replaces words, or moves detail
/// to the code's own docs.
#[test]
fn the_map_stays_short() {
    let map =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("ARCHITECTURE.md"))
            .unwrap();
    let words = map.split_whitespace().count();
    assert!(
        words <= 2500,
        "ARCHITECTURE.md has {words} words, over 2,500"
    );
}
