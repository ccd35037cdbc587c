//! The manual is README.md (the front door) and the pages of docs/: every
//! long flag of every command is in docs/cli.md, the exit codes are in
//! docs/exit-codes.md, and every `sh` example of every page that can run
//! offline runs.

use clap::CommandFactory;

fn longs(cmd: &clap::Command, out: &mut Vec<String>) {
    for arg in cmd.get_arguments() {
        if let Some(long) = arg.get_long() {
            out.push(format!("--{long}"));
        }
    }
    for sub in cmd.get_subcommands() {
        longs(sub, out);
    }
}

/// The manual's pages, README.md first, then docs/*.md by name: (path
/// from the repository's root, text).
fn pages() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut docs: Vec<_> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    let mut out = vec![(
        "README.md".to_string(),
        std::fs::read_to_string(root.join("README.md")).unwrap(),
    )];
    for path in docs {
        let name = path.strip_prefix(root).unwrap().display().to_string();
        out.push((name, std::fs::read_to_string(&path).unwrap()));
    }
    out
}

fn page(name: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(name)).unwrap()
}

/// Every long flag of every command is in docs/cli.md, the command-line
/// reference (the topic pages explain them; this one lists them all).
#[test]
fn the_readme_mentions_every_long_flag() {
    let cli = page("docs/cli.md");
    let mut flags = Vec::new();
    longs(&versus::cli::Cli::command(), &mut flags);
    assert!(flags.len() > 20);
    let missing: Vec<_> = flags.iter().filter(|f| !cli.contains(f.as_str())).collect();
    assert!(
        missing.is_empty(),
        "docs/cli.md does not mention {missing:?}"
    );
}

/// The exit-code table is in docs/exit-codes.md, the page that documents
/// exit codes.
#[test]
fn the_readme_names_every_exit_code() {
    let codes = page("docs/exit-codes.md");
    for code in ["| 0 |", "| 1 |", "| 2 |", "| 3 |", "| 4 |", "| 130 |"] {
        assert!(codes.contains(code), "exit code row {code} missing");
    }
}

mod common;
#[path = "common/grpc_server.rs"]
mod grpc_server;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};

use common::{Reply, Server};

/// The command lines of a page's `sh` blocks that run versus
/// (continuation lines joined, comments cut).
fn examples(readme: &str) -> Vec<String> {
    let mut out = Vec::new();
    let continued = regex::Regex::new(r"\\\n\s*").unwrap();
    for block in readme.split("```sh\n").skip(1) {
        let block = block.split("```").next().unwrap_or("");
        let joined = continued.replace_all(block, " ");
        for line in joined.lines() {
            let line = line.trim();
            if line.starts_with('#') || !line.contains("versus") {
                continue;
            }
            let line = match line.find("  #") {
                Some(i) => line[..i].trim_end(),
                None => line,
            };
            out.push(line.to_string());
        }
    }
    out
}

/// Why an example cannot run here, if it cannot.
fn offline(example: &str) -> Option<&'static str> {
    if example.contains("tcpdump") {
        Some("captures live traffic (needs capture rights)")
    } else if example.contains("kubectl") {
        Some("needs a Kubernetes cluster")
    } else if example.contains("docker ") {
        Some("needs a container runtime")
    } else if example.contains(" -i ") {
        Some("the dashboard needs a terminal")
    } else if example.contains(" [-")
        || example.contains(" [rpc")
        || example.contains("json|markdown")
    {
        Some("a synopsis, not a command")
    } else {
        None
    }
}

/// The example with local servers for its URLs (`servers` by URL, one
/// per host, started as they are first met), short runs for long ones,
/// and ethspam's stand-in on the PATH.
fn localised(
    example: &str,
    servers: &mut BTreeMap<String, String>,
    start: &mut dyn FnMut() -> String,
) -> String {
    let urls = regex::Regex::new(r#"https?://[^\s"'/]+(/[^\s"']*)?"#).unwrap();
    let mut line = urls
        .replace_all(example, |c: &regex::Captures| {
            let host = c[0].split('/').nth(2).unwrap_or("").to_string();
            let base = servers.entry(host).or_insert_with(&mut *start).clone();
            let path = c.get(1).map_or("/", |p| p.as_str());
            format!("{}{}", base.trim_end_matches('/'), path)
        })
        .into_owned();
    for (long, short) in [
        ("--stop-after=10s", "--stop-after=1s"),
        ("--stop-after=30s", "--stop-after=1s"),
        ("--stop-after=60s", "--stop-after=1s"),
        ("--stop-after=10000", "--stop-after=300"),
        ("--stop-after 1000", "--stop-after 100"),
        ("--stop-after 10s", "--stop-after 1s"),
        ("--stop-after 5s", "--stop-after 1s"),
        ("--stop-after=5s", "--stop-after=1s"),
        ("--capacity-time 2m", "--capacity-time 6s"),
        ("${INFURA_API_KEY}", "KEY"),
    ] {
        line = line.replace(long, short);
    }
    // A run with no stop (a scenario's 10 s, single-request mode's
    // 10 s) is made short too; what it shows is the same.
    let runs = !["report", "merge", "compare", "gen", "demo"]
        .iter()
        .any(|w| line.starts_with(&format!("versus {w}")));
    if runs && !line.contains("--stop-after") && !line.contains("--list") {
        line = if line.starts_with("versus run ") {
            format!("{line} --stop-after=1s")
        } else {
            line.replacen("versus ", "versus --stop-after=1s ", 1)
        };
    }
    line
}

/// What an example must print, and how it may end: (exit codes, a line
/// of its output, or a file it writes).
fn expected(example: &str) -> (&'static [i32], &'static str) {
    if example.contains("--threshold") {
        // The thresholds are the example's own: a slow machine may miss
        // `rps > 500` (exit 3); either way they are checked and shown.
        (&[0, 3], "p99 < 200ms")
    } else if example.starts_with("versus merge") {
        (&[0], "")
    } else if example.starts_with("versus compare") {
        (&[0], "vs first")
    } else if example.contains("--list") {
        (&[0], "checkout")
    } else if example.starts_with("versus gen") && !example.contains("| versus") {
        (&[0], "\"jsonrpc\"")
    } else if example.contains("> ") {
        // Its report goes to a file.
        (&[0], "")
    } else {
        (&[0], "** Summary for")
    }
}

/// A `bin/` in `dir` with `versus` and an `ethspam` that stands in for the
/// real one; the PATH that finds them first.
fn place_commands(dir: &Path) -> String {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let versus = env!("CARGO_BIN_EXE_versus");
    std::os::unix::fs::symlink(versus, bin.join("versus")).unwrap();
    std::fs::write(
        bin.join("ethspam"),
        "#!/bin/sh\nexec versus gen ethereum -n 2000\n",
    )
    .unwrap();
    std::fs::set_permissions(
        bin.join("ethspam"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// The files the examples name, in `dir`: fixtures, a JSON-RPC stream,
/// the shop scenario and a suite of it, the gRPC schemas, and the gRPC
/// pages scenario pointed at the local server.
fn place_files(root: &Path, dir: &Path, shops: &[versus::demo::shop::Running], grpc_addr: &str) {
    let fixtures = root.join("tests/fixtures");
    std::fs::copy(fixtures.join("chromium.har"), dir.join("session.har")).unwrap();
    std::fs::copy(fixtures.join("requests.jsonl"), dir.join("requests.jsonl")).unwrap();
    let requests: String = (0..200)
        .map(|i| {
            format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"eth_blockNumber\",\"params\":[]}}\n"
            )
        })
        .collect();
    std::fs::write(dir.join("requests"), requests).unwrap();
    let shop = std::fs::read_to_string(root.join("examples/shop.toml"))
        .unwrap()
        .replace("http://127.0.0.1:8080/", &shops[0].url())
        .replace("http://127.0.0.1:8081/", &shops[1].url());
    std::fs::write(dir.join("shop.toml"), &shop).unwrap();
    // A suite: the shop's steps as a `checkout` scenario, and a `browse`
    // one of its first two.
    let (head, steps) = shop.split_at(shop.find("[[step]]").unwrap());
    let steps = steps.replace("[[step]]", "[[scenario.step]]");
    let browse: String = steps
        .split("[[scenario.step]]")
        .take(3)
        .collect::<Vec<_>>()
        .join("[[scenario.step]]");
    let suite = format!(
        "{head}[[scenario]]\nname = \"checkout\"\nweight = 3\n\n{steps}\n[[scenario]]\nname = \"browse\"\n\n{browse}"
    );
    std::fs::write(dir.join("suite.toml"), suite).unwrap();
    // The gRPC examples' server (the Items service, with its REST views),
    // for their 127.0.0.1:50051; the schema and example files they name,
    // where they name them.
    std::fs::create_dir_all(dir.join("tests/fixtures/grpc")).unwrap();
    for proto in ["items.proto", "money.proto"] {
        std::fs::copy(
            fixtures.join("grpc").join(proto),
            dir.join("tests/fixtures/grpc").join(proto),
        )
        .unwrap();
    }
    std::fs::create_dir_all(dir.join("bench")).unwrap();
    std::fs::copy(
        root.join("bench/toxy-payload.json"),
        dir.join("bench/toxy-payload.json"),
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("examples")).unwrap();
    let pages_toml = std::fs::read_to_string(root.join("examples/items-pages.toml"))
        .unwrap()
        .replace("127.0.0.1:50051", grpc_addr);
    std::fs::write(dir.join("examples/items-pages.toml"), pages_toml).unwrap();
}

/// The saved runs an example reads but does not write, made first by
/// `saved(flags)`.
fn make_saved_runs(line: &str, dir: &Path, saved: &mut dyn FnMut(&str)) {
    for file in ["before.jsonl", "after.jsonl"] {
        let writes = line.contains(&format!("-o {file}"));
        if line.contains(file) && !writes && !dir.join(file).exists() {
            saved(&format!("-o {file}"));
        }
    }
    if line.contains("shard1.jsonl") && !dir.join("shard1.jsonl").exists() {
        saved("--shard 0/2 -o shard1.jsonl");
        saved("--shard 1/2 -o shard2.jsonl");
    }
    if line.contains("results/shard-") && !dir.join("results").exists() {
        std::fs::create_dir_all(dir.join("results")).unwrap();
        saved("--shard 0/2 -o results/shard-0.jsonl");
        saved("--shard 1/2 -o results/shard-1.jsonl");
    }
}

/// Every example of the manual (README.md and docs/*.md) that can run
/// offline runs: local servers stand in for the remote URLs, files it
/// names are made first, long runs are cut to a second. Each must end
/// with the exit code the page gives it and print its key line, so a
/// false claim fails CI (the single-request example once failed from a
/// script: stdin was not a terminal). An example on several pages runs
/// once.
#[test]
fn every_readme_example_that_can_run_offline_runs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = std::env::temp_dir().join(format!("versus-readme-{}", std::process::id()));
    let path = place_commands(&dir);
    // JSON-RPC answers for any request; shops for the scenario examples.
    let mut held: Vec<Server> = Vec::new();
    let mut rpc = || {
        let s = Server::start(|r| {
            let id = serde_json::from_slice::<serde_json::Value>(&r.body)
                .ok()
                .and_then(|v| v.get("id").cloned())
                .unwrap_or(serde_json::Value::from(1));
            Reply::ok(format!(r#"{{"jsonrpc":"2.0","id":{id},"result":"0x1"}}"#))
        });
        let url = s.url();
        held.push(s);
        url
    };
    let shops = [
        versus::demo::shop::start(false).unwrap(),
        versus::demo::shop::start(true).unwrap(),
    ];
    let grpc = grpc_server::GrpcServer::start(grpc_server::Options::default());
    let grpc_addr = grpc.addr.to_string();
    place_files(root, &dir, &shops, &grpc_addr);
    let sh = |line: &str| {
        Command::new("bash")
            .args(["-c", &format!("timeout 120 {line}")])
            .current_dir(&dir)
            .env("PATH", &path)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    // A saved run the examples read but do not write: made first, from a
    // one-second run against the servers of 10.0.0.1 and 10.0.0.2.
    let saved =
        |servers: &mut BTreeMap<String, String>, rpc: &mut dyn FnMut() -> String, flags: &str| {
            let urls: Vec<String> = ["10.0.0.1", "10.0.0.2"]
                .iter()
                .map(|h| {
                    servers
                        .entry(h.to_string())
                        .or_insert_with(&mut *rpc)
                        .clone()
                })
                .collect();
            let run = sh(&format!(
                "versus {flags} --stop-after=1s old={} new={} < requests",
                urls[0], urls[1]
            ));
            assert!(
                run.status.success(),
                "{}",
                String::from_utf8_lossy(&run.stderr)
            );
        };
    let mut servers: BTreeMap<String, String> = BTreeMap::new();
    let mut seen = std::collections::HashSet::new();
    let mut ran = 0;
    let mut failed = Vec::new();
    for (name, text) in pages() {
        for example in examples(&text) {
            if !seen.insert(example.clone()) {
                continue;
            }
            if let Some(why) = offline(&example) {
                eprintln!("skipped ({why}): {name}: {example}");
                continue;
            }
            let line = if example.contains("127.0.0.1:50051") && !example.contains("versus run") {
                let mut rest = || grpc.http();
                localised(
                    &example.replace("grpc://127.0.0.1:50051", &format!("grpc://{grpc_addr}")),
                    &mut BTreeMap::new(),
                    &mut rest,
                )
            } else if example.contains("versus run") {
                // Scenario examples: the two shops for their two endpoints.
                let mut shop_urls = BTreeMap::new();
                let mut next = shops.iter().map(|s| s.url());
                localised(&example, &mut shop_urls, &mut || {
                    next.next().unwrap_or_default()
                })
                .replace("examples/shop.toml", "shop.toml")
            } else {
                localised(&example, &mut servers, &mut rpc)
            };
            make_saved_runs(&line, &dir, &mut |flags| {
                saved(&mut servers, &mut rpc, flags)
            });
            let out = sh(&line);
            ran += 1;
            let (codes, key) = expected(&example);
            let stdout = String::from_utf8_lossy(&out.stdout);
            let code = out.status.code().unwrap_or(-1);
            if !codes.contains(&code) || !stdout.contains(key) {
                failed.push(format!(
                    "{name}: {example}\n  ran: {line}\n  exit {code}\n  stderr: {}\n  stdout: {}",
                    String::from_utf8_lossy(&out.stderr),
                    stdout.lines().take(5).collect::<Vec<_>>().join(" / ")
                ));
            }
        }
    }
    eprintln!("{ran} examples ran");
    assert!(ran >= 43, "only {ran} examples ran");
    assert!(dir.join("before.html").exists() && dir.join("all.jsonl").exists());
    assert!(
        failed.is_empty(),
        "examples that fail:\n{}",
        failed.join("\n\n")
    );
    let _ = std::fs::remove_dir_all(&dir);
}
