//! `versus run FILE`: scenario files driven against in-process servers
//! through the binary: values taken by JSON path, header and regex feed
//! the next step at each endpoint; errors before the run exit 2 naming
//! the place; a value missing at run time fails that instance only; a CSV
//! feeds one row per instance in order; `--match`, `--list` and weights.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use common::{
    run_bin, run_scenario_json as run_json, scenario_file as write, step_of as step, Reply, Server,
};

/// A shop whose ids carry its `prefix`: `POST /login` answers a token,
/// `POST /orders` (with that token) answers 201 with the order's place in
/// `Location` and its number in the body's text, `GET /orders/N` (with
/// the number the body gave) the order. Anything else is refused and
/// counted in `wrong`.
fn shop(prefix: &'static str, wrong: Arc<AtomicU64>) -> Server {
    let next = AtomicU64::new(1);
    Server::start(move |seen| {
        let refuse = || {
            wrong.fetch_add(1, Ordering::Relaxed);
            Reply::ok("{}").status(400)
        };
        let auth = seen
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        match (seen.method.as_str(), seen.path.as_str()) {
            ("POST", "/login") => {
                let v: serde_json::Value = serde_json::from_slice(&seen.body).unwrap_or_default();
                match v["user"].as_str() {
                    Some(user) => Reply::ok(format!(r#"{{"token":"{prefix}.{user}"}}"#)),
                    None => refuse(),
                }
            }
            ("POST", "/orders") if auth.starts_with(&format!("Bearer {prefix}.")) => {
                let n = next.fetch_add(1, Ordering::Relaxed);
                Reply::ok(format!("created order={prefix}{n};"))
                    .status(201)
                    .header("location", &format!("/orders/{prefix}{n}"))
            }
            ("GET", path) if path.starts_with(&format!("/orders/{prefix}")) => {
                if !auth.starts_with(&format!("Bearer {prefix}.")) {
                    return refuse();
                }
                Reply::ok(r#"{"state":"new"}"#)
            }
            ("GET", path) if path.starts_with("/check/") => {
                if path[7..].starts_with(prefix) {
                    Reply::ok("{}")
                } else {
                    refuse()
                }
            }
            _ => refuse(),
        }
    })
}

const SHOP: &str = r#"
[vars]
user = "ann"

[[step]]
name = "login"
path = "/login"
json = { user = "{{ user }}" }
extract = { token = "$.token" }
check = { status = 200, "$.token" = { exists = true } }

[[step]]
name = "create"
path = "/orders"
body = "{}"
headers = { authorization = "Bearer {{ token }}" }
extract = { place = "header:location", number = "regex:order=(\\w+);" }
check = { status = 201 }

[[step]]
name = "read"
path = "{{ place }}"
headers = { authorization = "Bearer {{ token }}" }

[[step]]
name = "check"
path = "/check/{{ number }}"
"#;

#[test]
fn values_taken_by_json_path_header_and_regex_feed_the_next_step_at_each_endpoint() {
    let wrong = Arc::new(AtomicU64::new(0));
    let (a, b) = (shop("A", wrong.clone()), shop("B", wrong.clone()));
    let file = write("shop.toml", SHOP);
    let (a, b) = (format!("a={}", a.url()), format!("b={}", b.url()));
    // The tokens and ids differ by design: not compared.
    let report = run_json(
        &file,
        &[
            "-c",
            "3",
            "--stop-after",
            "30",
            "--ignore",
            "$.token",
            "--compare",
            "status",
            &a,
            &b,
        ],
    );
    assert_eq!(
        wrong.load(Ordering::Relaxed),
        0,
        "a step lacked its value: {report}"
    );
    for e in 0..2 {
        assert_eq!(report["endpoints"][e]["flows"]["instances"], 30);
        assert_eq!(report["endpoints"][e]["flows"]["succeeded"], 30);
        for s in ["login", "create", "read", "check"] {
            assert_eq!(step(&report, e, s)["requests"], 30, "{s}");
            assert_eq!(step(&report, e, s)["errors"], 0, "{s}");
        }
    }
    assert_eq!(report["comparison"]["mismatched"], 0);
}

#[test]
fn errors_before_the_run_exit_2_naming_the_place() {
    let bad = write("bad.toml", "[[endpoint]]\nname = \"a\"\nurl = \"http://127.0.0.1:1/\"\n\n[[step]]\nname = \"x\"\npath = \"/{{ id }}\"\n");
    let out = run_bin(&["run", bad.to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.toml:7: step \"x\""), "{err}");
    assert!(err.contains("{{ id }}"), "{err}");
    let missing = run_bin(&["run", "/nonexistent/scenario.toml"], b"");
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("/nonexistent/scenario.toml"));
    // A stream's template has no place in a scenario: said before the
    // file's endpoints (here none that answers) are reached.
    let ok = write("ok.toml", "[[endpoint]]\nname = \"a\"\nurl = \"http://127.0.0.1:1/\"\n\n[[step]]\nname = \"x\"\npath = \"/\"\n");
    let templated = run_bin(
        &["run", ok.to_str().unwrap(), "--template", "a=GET /x"],
        b"",
    );
    assert_eq!(templated.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&templated.stderr).contains("[step.endpoint.NAME]"));
}

#[test]
fn a_value_missing_at_run_time_fails_that_instance_there_and_the_run_goes_on() {
    // Every third login at the candidate answers without a token.
    let n = AtomicU64::new(0);
    let flaky = Server::start(move |seen| match seen.path.as_str() {
        "/login" if n.fetch_add(1, Ordering::Relaxed) % 3 == 0 => Reply::ok(r#"{"user":"x"}"#),
        "/login" => Reply::ok(r#"{"token":"t"}"#),
        _ => Reply::ok("{}"),
    });
    let good = Server::start(|seen| match seen.path.as_str() {
        "/login" => Reply::ok(r#"{"token":"t"}"#),
        _ => Reply::ok("{}"),
    });
    let file = write(
        "missing.toml",
        "[[step]]\nname = \"login\"\npath = \"/login\"\nextract = { token = \"$.token\" }\n\n[[step]]\nname = \"use\"\npath = \"/use/{{ token }}\"\n",
    );
    let (a, b) = (format!("a={}", good.url()), format!("b={}", flaky.url()));
    let report = run_json(&file, &["-c", "1", "--stop-after", "30", &a, &b]);
    let cand = &report["endpoints"][1];
    assert_eq!(cand["flows"]["instances"], 30);
    assert_eq!(cand["flows"]["succeeded"], 20);
    assert_eq!(step(&report, 1, "login")["failed_checks"], 10);
    assert_eq!(step(&report, 1, "use")["skipped"], 10);
    assert_eq!(step(&report, 1, "use")["requests"], 20);
    assert_eq!(report["endpoints"][0]["flows"]["succeeded"], 30);
    // The connections the text report counts, in JSON too: one a virtual
    // user, opened before the clock started.
    for e in 0..2 {
        let endpoint = &report["endpoints"][e];
        assert_eq!(endpoint["connects"], 1, "{endpoint:#}");
        assert_eq!(endpoint["connects_during_run"], 0, "{endpoint:#}");
    }
    // The text report names the step, the reason and a sample instance.
    let a = format!("a={}", good.url());
    let b = format!("b={}", flaky.url());
    let out = run_bin(
        &[
            "run",
            file.to_str().unwrap(),
            "-q",
            "-c",
            "1",
            "--stop-after",
            "9",
            &a,
            &b,
        ],
        b"",
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("b  login  extract failed: token: nothing at $.token in the answer"),
        "{text}"
    );
    assert!(text.contains("e.g. instance "), "{text}");
}

#[test]
fn a_csv_feeds_one_row_per_instance_in_order() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let server = Server::start(move |req| {
        s.lock().unwrap().push(req.path.clone());
        Reply::ok("{}")
    });
    let csv = write("users.csv", "user,n\nann,1\nbob,2\ncy,3\n");
    let file = write(
        "feed.toml",
        &format!(
            "[data]\nfile = {:?}\n\n[[step]]\nname = \"get\"\npath = \"/u/{{{{ user }}}}/{{{{ n }}}}\"\n",
            csv.file_name().unwrap().to_str().unwrap()
        ),
    );
    let url = server.url();
    // One virtual user: instances in order, each row once.
    run_json(
        &file,
        &["-c", "1", "--threads", "1", "--stop-after", "3", &url],
    );
    assert_eq!(*seen.lock().unwrap(), ["/u/ann/1", "/u/bob/2", "/u/cy/3"]);
    // A row with a missing column is refused before the run.
    write("short.csv", "user,n\nann,1\nbob\n");
    let file = write(
        "short.toml",
        "[data]\nfile = \"short.csv\"\n\n[[step]]\nname = \"get\"\npath = \"/u/{{ user }}\"\n",
    );
    let out = run_bin(&["run", file.to_str().unwrap(), &url], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("row 2"));
}

const SUITE: &str = r#"
[[scenario]]
name = "browse"
weight = 3
[[scenario.step]]
name = "home"
path = "/home"

[[scenario]]
name = "buy"
weight = 1
[[scenario.step]]
name = "cart"
path = "/cart"
[[scenario.step]]
name = "pay"
path = "/pay"
"#;

#[test]
fn list_and_match_pick_scenarios() {
    let file = write("suite.toml", SUITE);
    let out = run_bin(
        &[
            "run",
            file.to_str().unwrap(),
            "--list",
            "http://127.0.0.1:1/",
        ],
        b"",
    );
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "browse  (weight 3)  home\nbuy  (weight 1)  cart -> pay\n"
    );
    let out = run_bin(
        &[
            "run",
            file.to_str().unwrap(),
            "--list",
            "--match",
            "bu*",
            "http://127.0.0.1:1/",
        ],
        b"",
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "buy  (weight 1)  cart -> pay\n"
    );
    let out = run_bin(
        &[
            "run",
            file.to_str().unwrap(),
            "--match",
            "nothing",
            "http://127.0.0.1:1/",
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_suite_lists_its_scenarios_without_an_endpoint() {
    // Listing needs no endpoint: a suite whose endpoints are to be named on
    // the command line lists as it is, a step's own version for a named
    // endpoint included; running it still asks for one.
    let text = format!("{SUITE}[scenario.step.endpoint.new]\npath = \"/v2/pay\"\n");
    let file = write("no-endpoints.toml", &text);
    let out = run_bin(&["run", file.to_str().unwrap(), "--list"], b"");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "browse  (weight 3)  home\nbuy  (weight 1)  cart -> pay\n"
    );
    let out = run_bin(&["run", file.to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no endpoint"));
}

#[test]
fn weights_are_honoured_within_two_percent_over_ten_thousand_instances() {
    let server = Server::start(|_| Reply::ok("{}"));
    let file = write("weights.toml", SUITE);
    let url = server.url();
    let report = run_json(&file, &["-c", "8", "--stop-after", "10000", &url]);
    let scenarios = report["endpoints"][0]["scenarios"].as_array().unwrap();
    let count = |name: &str| {
        scenarios.iter().find(|s| s["name"] == name).unwrap()["instances"]
            .as_u64()
            .unwrap()
    };
    let (browse, buy) = (count("browse"), count("buy"));
    assert_eq!(browse + buy, 10_000);
    let share = browse as f64 / 10_000.0;
    assert!((share - 0.75).abs() < 0.02, "browse ran {browse} of 10,000");
    // Each scenario's steps are named after it.
    assert_eq!(step(&report, 0, "buy: pay")["requests"], buy);
    assert_eq!(step(&report, 0, "browse: home")["requests"], browse);
}

/// A threshold can name a step (of every endpoint, or of one): a slow
/// step fails it with exit 3 while the fast one passes; a name that is
/// neither an endpoint nor a step is refused before the run.
#[test]
fn thresholds_can_name_a_step() {
    let server = Server::start(|seen| match seen.path.as_str() {
        "/slow" => Reply::ok("{}").after(std::time::Duration::from_millis(30)),
        _ => Reply::ok("{}"),
    });
    let file = write(
        "steps.toml",
        "[[step]]\nname = \"fast\"\npath = \"/fast\"\n\n[[step]]\nname = \"slow\"\npath = \"/slow\"\n",
    );
    let url = format!("api={}", server.url());
    let run = |thresholds: &[&str]| {
        let mut args = vec![
            "run",
            file.to_str().unwrap(),
            "-q",
            "--stop-after",
            "5",
            &url,
        ];
        for t in thresholds {
            args.push("--threshold");
            args.push(t);
        }
        run_bin(&args, b"")
    };
    let out = run(&["fast: p99 < 20ms", "api: fast: errors == 0"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let out = run(&["slow: p50 < 20ms"]);
    assert_eq!(out.status.code(), Some(3));
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        report.contains("FAILED  slow: p50 < 20ms [api: slow]"),
        "{report}"
    );
    let out = run(&["pay: p99 < 1s"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no endpoint or step is named \"pay\"") && err.contains("steps: fast, slow"),
        "{err}"
    );
}

#[test]
fn a_mismatch_sample_of_a_step_shows_the_request_the_step_sent() {
    // Samples name the step's request (method, path, body) as a stream's
    // show its body, credentials in the path masked.
    let a = Server::start(|_| Reply::ok(r#"{"n":1}"#));
    let b = Server::start(|_| Reply::ok(r#"{"n":2}"#));
    let file = write(
        "sampled.toml",
        "[[step]]\nname = \"put\"\nmethod = \"PUT\"\npath = \"/things/7\"\nbody = \"{\\\"x\\\":1}\"\n",
    );
    let (a, b) = (format!("a={}", a.url()), format!("b={}", b.url()));
    let report = run_json(&file, &["-c", "1", "--stop-after", "3", &a, &b]);
    let groups = report["comparison"]["groups"].as_array().unwrap();
    let sample = &groups[0]["samples"][0];
    assert_eq!(sample["request"], r#"PUT /things/7 {"x":1}"#, "{report:#}");
}
