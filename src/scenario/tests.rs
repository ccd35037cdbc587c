//! Reading scenario files: what a valid file becomes, and every error
//! before the run with its file, line and fix.

use super::*;

fn file(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("versus-scenario-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn error(name: &str, text: &str) -> String {
    match Suite::load(&file(name, text), &[]) {
        Ok(_) => panic!("{name} was accepted"),
        Err(e) => e.0,
    }
}

const ENDPOINTS: &str = r#"
[[endpoint]]
name = "old"
url = "http://127.0.0.1:1/"

[[endpoint]]
name = "new"
url = "http://127.0.0.1:2/v2/"
headers = { "x-key" = "k" }
"#;

#[test]
fn a_file_becomes_endpoints_and_flows() {
    let text = format!(
        r#"{ENDPOINTS}
[vars]
user = "ann"

[[scenario]]
name = "shop"
weight = 3

[[scenario.step]]
name = "login"
json = {{ user = "{{{{ user }}}}" }}
extract = {{ token = "$.token", where = "header:location" }}

[[scenario.step]]
name = "me"
path = "/me"
headers = {{ authorization = "Bearer {{{{ token }}}}" }}
check = {{ status = 200, "$.name" = "ann" }}
rules = {{ ignore = ["$.seen"] }}

[scenario.step.endpoint.new]
path = "/users/me"

[[scenario]]
name = "browse"
[[scenario.step]]
name = "home"
"#
    );
    let mut suite = Suite::load(&file("ok.toml", &text), &[]).unwrap();
    assert_eq!(
        suite.endpoints,
        ["old=http://127.0.0.1:1/", "new=http://127.0.0.1:2/v2/"]
    );
    assert_eq!(suite.endpoint_headers, ["new=x-key: k"]);
    assert_eq!(suite.headers_taken, ["location"]);
    assert_eq!(
        suite.listing(),
        "shop  (weight 3)  login -> me\nbrowse  (weight 1)  home\n"
    );
    assert_eq!(suite.scenarios[0].rules[0].0, "me");
    suite.select(&["bro*".to_string()]).unwrap();
    assert_eq!(suite.listing(), "browse  (weight 1)  home\n");
    assert!(suite
        .select(&["nothing".to_string()])
        .unwrap_err()
        .0
        .contains("no scenario matches (there are browse)"));
}

#[test]
fn a_step_renders_its_call_per_endpoint_from_its_values() {
    let text = format!(
        r#"{ENDPOINTS}
[data]
rows = [{{ id = 7, name = "a b" }}]

[[step]]
name = "find"
path = "/items/{{{{ id }}}}"
query = {{ q = "{{{{ name }}}}!", page = "2" }}
json = {{ tag = "say \"{{{{ name }}}}\"", n = 1, on = true }}

[step.endpoint.new]
method = "PUT"
"#
    );
    let suite = Suite::load(&file("render.toml", &text), &[]).unwrap();
    let mix = suite.mix().unwrap();
    let flow = &mix.flows()[0];
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let call = |endpoint| {
        let ctx = Context {
            endpoint,
            label: "x".into(),
            instance: 0,
            replies: Default::default(),
            vars: Default::default(),
        };
        rt.block_on(flow.steps()[0].make(ctx))
            .unwrap()
            .into_request(0)
    };
    let old = call(0);
    assert_eq!(old.method, Some(http::Method::POST));
    assert_eq!(old.target.as_deref(), Some("/items/7?page=2&q=a%20b%21"));
    // Keys in the file's order.
    assert_eq!(&old.body[..], br#"{"tag":"say \"a b\"","n":1,"on":true}"#);
    assert!(old
        .headers
        .iter()
        .any(|(n, v)| n == "content-type" && v == "application/json"));
    assert_eq!(call(1).method, Some(http::Method::PUT));
}

#[test]
fn every_error_before_the_run_names_the_file_line_and_fix() {
    // An undefined variable: the line of its step, and what would define it.
    let e = error(
        "undefined.toml",
        &format!("{ENDPOINTS}\n[[step]]\nname = \"a\"\n\n[[step]]\nname = \"b\"\npath = \"/x/{{{{ token }}}}\"\n"),
    );
    assert!(e.contains("undefined.toml:16: step \"b\""), "{e}");
    assert!(e.contains("{{ token }}"), "{e}");
    assert!(e.contains("extract"), "{e}");
    // The line that uses it, not the step's name line: here a method and a
    // header stand between them.
    let e = error(
        "use.toml",
        &format!("{ENDPOINTS}\n[[step]]\nname = \"a\"\nmethod = \"GET\"\nheaders = {{ x = \"1\" }}\npath = \"/orders/{{{{ order_id }}}}\"\n"),
    );
    assert!(e.contains("use.toml:15: step \"a\""), "{e}");
    // A variable taken by a later step is not defined yet.
    let e = error(
        "order.toml",
        &format!("{ENDPOINTS}\n[[step]]\nname = \"a\"\npath = \"/{{{{ id }}}}\"\n\n[[step]]\nname = \"b\"\nextract = {{ id = \"$.id\" }}\n"),
    );
    assert!(e.contains("order.toml:13: step \"a\""), "{e}");
    // A template that does not parse.
    let e = error(
        "template.toml",
        &format!("{ENDPOINTS}\n[[step]]\nname = \"a\"\npath = \"/{{{{ nope(1) }}}}\"\n"),
    );
    assert!(
        e.contains("template.toml:12") && e.contains("unknown function nope()"),
        "{e}"
    );
    // A JSON path that is not valid, in an extraction and in a check.
    let e = error(
        "path.toml",
        &format!("{ENDPOINTS}\n[[step]]\nname = \"a\"\nextract = {{ id = \"$.[\" }}\n"),
    );
    assert!(
        e.contains("path.toml:12") && e.contains("extract id: JSON path"),
        "{e}"
    );
    let e = error(
        "check.toml",
        &format!("{ENDPOINTS}\n[[step]]\nname = \"a\"\ncheck = {{ \"id\" = 1 }}\n"),
    );
    assert!(e.contains("must start with $"), "{e}");
    // A step name used twice.
    let e = error(
        "twice.toml",
        &format!("{ENDPOINTS}\n[[step]]\nname = \"a\"\n\n[[step]]\nname = \"a\"\n"),
    );
    assert!(
        e.contains("twice.toml:15") && e.contains("used twice"),
        "{e}"
    );
    // A CSV without the named column.
    let csv = file("users.csv", "user\nann\n");
    let e = error(
        "column.toml",
        &format!(
            "{ENDPOINTS}\n[data]\nfile = {:?}\n\n[[step]]\nname = \"a\"\npath = \"/{{{{ pass }}}}\"\n",
            csv.display().to_string()
        ),
    );
    assert!(
        e.contains("{{ pass }}") && e.contains("the data has the columns user"),
        "{e}"
    );
    // An override for an endpoint that is not in the run.
    let e = error(
        "endpoint.toml",
        &format!("{ENDPOINTS}\n[[step]]\nname = \"a\"\n[step.endpoint.other]\npath = \"/\"\n"),
    );
    assert!(
        e.contains("[endpoint.other] names no endpoint") && e.contains("old, new"),
        "{e}"
    );
    // A key that does not exist: its own line, and the key meant.
    let e = error(
        "key.toml",
        &format!("{ENDPOINTS}\n[[step]]\nname = \"a\"\npth = \"/\"\n"),
    );
    assert!(
        e.contains("key.toml:13: unknown key `pth`; did you mean `path`?"),
        "{e}"
    );
    // No endpoint anywhere.
    let e = error("none.toml", "[[step]]\nname = \"a\"\n");
    assert!(e.contains("no endpoint"), "{e}");
}

/// A mistyped key is named at its own line (the parser named the line of
/// its table's header) with the key meant; a `think` that is no duration
/// says what one looks like (it said "expected number at 0").
#[test]
fn a_mistyped_key_is_named_at_its_line_with_the_key_meant() {
    let e = error(
        "methd.toml",
        &format!("{ENDPOINTS}\n[[scenario]]\nname = \"s\"\n\n[[scenario.step]]\nname = \"a\"\npath = \"/\"\nmethd = \"GET\"\n"),
    );
    assert!(
        e.contains("methd.toml:17: unknown key `methd`; did you mean `method`?"),
        "{e}"
    );
    let e = error(
        "weight.toml",
        &format!("{ENDPOINTS}\n[[scenario]]\nname = \"s\"\n\"wieght\" = 2\n"),
    );
    assert!(
        e.contains("weight.toml:13: unknown key `wieght`; did you mean `weight`? (keys here: name, weight, step)"),
        "{e}"
    );
    let e = error(
        "think.toml",
        &format!("{ENDPOINTS}\n[[step]]\nname = \"a\"\npath = \"/\"\nthink = \"abc\"\n"),
    );
    assert!(
        e.contains("think.toml:14: think = \"abc\" is not a duration (examples: \"100ms\""),
        "{e}"
    );
}
