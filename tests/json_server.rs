//! A scenario against a real REST server: two json-server instances (from
//! npm; `.ci/run` installs it), each with its own empty database. Create a
//! record, read it back by the id the server returned, update it, delete
//! it; every step is compared across the two.

mod common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A json-server on 127.0.0.1 with a fresh `db.json`; killed on drop.
struct JsonServer {
    child: Child,
    port: u16,
    _dir: std::path::PathBuf,
}

impl JsonServer {
    fn start(name: &str) -> JsonServer {
        let dir =
            std::env::temp_dir().join(format!("versus-json-server-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let db = dir.join("db.json");
        std::fs::write(&db, r#"{ "posts": [] }"#).unwrap();
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let child = Command::new("json-server")
            .args([
                "--host",
                "127.0.0.1",
                "--port",
                &port.to_string(),
                "--quiet",
            ])
            .arg(&db)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("json-server on PATH (npm install -g json-server@0.17.4)");
        // Ready when it answers: wait for the port to accept, at most 20 s.
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "json-server did not start on {port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        JsonServer {
            child,
            port,
            _dir: dir,
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }
}

impl Drop for JsonServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const CRUD: &str = r#"
[[step]]
name = "create"
method = "POST"
path = "/posts"
json = { title = "post {{ instance }}", views = 1 }
extract = { id = "$.id" }
check = { status = 201, "$.title" = { matches = "^post " } }

[[step]]
name = "read"
path = "/posts/{{ id }}"
check = { status = 200, "$.views" = 1 }

[[step]]
name = "update"
method = "PUT"
path = "/posts/{{ id }}"
json = { title = "post {{ instance }}, edited", views = 2 }
check = { status = 200, "$.views" = 2 }

[[step]]
name = "delete"
method = "DELETE"
path = "/posts/{{ id }}"
check = { status = 200 }
"#;

#[test]
#[ignore = "needs json-server from npm (installed by .ci/run)"]
fn create_read_update_delete_against_two_json_servers_all_compared() {
    let (a, b) = (JsonServer::start("a"), JsonServer::start("b"));
    let dir = std::env::temp_dir().join(format!("versus-json-server-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("crud.toml");
    std::fs::write(&file, CRUD).unwrap();
    // One virtual user: both servers hand out the same ids in the same order.
    let out = common::run_bin(
        &[
            "run",
            file.to_str().unwrap(),
            "-c",
            "1",
            "--stop-after",
            "25",
            "--format",
            "json",
            "-q",
            &format!("one={}", a.url()),
            &format!("two={}", b.url()),
        ],
        b"",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for e in 0..2 {
        let ep = &report["endpoints"][e];
        assert_eq!(ep["flows"]["instances"], 25, "{report}");
        assert_eq!(ep["flows"]["succeeded"], 25, "{report}");
        for step in ep["steps"].as_array().unwrap() {
            assert_eq!(step["requests"], 25, "{step}");
            assert_eq!(step["errors"], 0, "{step}");
        }
    }
    assert_eq!(report["comparison"]["compared"], 100);
    assert_eq!(report["comparison"]["mismatched"], 0, "{report}");
}
