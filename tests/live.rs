//! The live view as a user meets it: the progress line only on a terminal,
//! and the dashboard (`-i`) in a real terminal (tmux): labels and moving
//! counts, `q`, Ctrl-C once and twice, the report afterwards on a restored
//! terminal.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::*;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

const BIN: &str = env!("CARGO_BIN_EXE_versus");

#[test]
fn progress_is_absent_when_stderr_is_not_a_terminal() {
    let server = Server::start(|_| Reply::ok("{}"));
    // Longer than one interval, so a progress line would have been drawn.
    let url = server.url();
    let out = run_bin(&["--method", "GET", "--stop-after=1300ms", &url], b"");
    assert_eq!(out.status.code(), Some(0));
    let stderr = text(&out.stderr);
    assert!(
        !stderr.contains('\r') && !stderr.contains('\x1b') && !stderr.contains("done"),
        "{stderr:?}"
    );
    assert!(text(&out.stdout).contains("** Summary for 1 endpoint:"));
}

/// Run `versus ARGS > report` on a pseudo-terminal (util-linux `script`),
/// so that stderr is a terminal; returns what the terminal showed and the
/// report.
fn on_a_pty(args: &[&str]) -> (String, String) {
    let dir = std::env::temp_dir();
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let report = dir.join(format!("versus-live-report-{}-{n}", std::process::id()));
    let mut command = format!("'{BIN}'");
    for a in args {
        command.push_str(&format!(" '{a}'"));
    }
    command.push_str(&format!(" > '{}'", report.display()));
    // script(1) with a closed stdin shows nothing; /dev/null is fine.
    let out = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("util-linux script(1)");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    let report_text = std::fs::read_to_string(&report).unwrap();
    let _ = std::fs::remove_file(&report);
    (shown, report_text)
}

#[test]
fn progress_is_shown_on_a_terminal_and_not_with_quiet() {
    let server = Server::start(|_| Reply::ok("{}").after(Duration::from_millis(2)));
    // Short labels: the line must fit the 80 columns assumed when the
    // terminal does not tell its size.
    let a = format!("a={}", server.url());
    let b = format!("b={}", server.url());
    let (shown, report) = on_a_pty(&["--method", "GET", "--stop-after=2200ms", &a, &b]);
    assert!(report.contains("** Summary for 2 endpoints:"), "{report}");
    for want in [
        "\r",
        "│ a ",
        "│ b ",
        " done ",
        "errors 0",
        "mismatched 0",
        " left",
    ] {
        assert!(shown.contains(want), "{want:?} not in {shown:?}");
    }
    // Cleared at the end: the last thing on the terminal is an erased line.
    assert!(shown.ends_with("\r\x1b[2K"), "{shown:?}");

    let (quiet, report) = on_a_pty(&["--quiet", "--method", "GET", "--stop-after=1300ms", &a]);
    assert!(report.contains("** Summary for 1 endpoint:"), "{report}");
    assert!(quiet.is_empty(), "{quiet:?}");
}

/// A tmux server of its own (`-L`), killed when dropped.
struct Tmux {
    socket: String,
}

impl Tmux {
    /// Run `command` in a new 120×40 session; the shell then prints
    /// `EXIT=<code>` and waits, so the screen can be read afterwards.
    fn start(name: &str, command: &str) -> Tmux {
        Tmux::start_sized(name, command, "120x40")
    }

    /// [`Tmux::start`] on a screen of `size` (`80x24`).
    fn start_sized(name: &str, command: &str, size: &str) -> Tmux {
        let t = Tmux {
            socket: format!("versus-test-{}-{name}", std::process::id()),
        };
        let script = format!("{command}; echo EXIT=$?; sleep 60");
        let (x, y) = size.split_once('x').expect("WIDTHxHEIGHT");
        t.run(&["new-session", "-d", "-x", x, "-y", y, &script]);
        t
    }

    fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux");
        assert!(out.status.success(), "tmux {args:?}: {}", text(&out.stderr));
        text(&out.stdout)
    }

    fn screen(&self) -> String {
        self.run(&["capture-pane", "-p"])
    }

    fn keys(&self, keys: &str) {
        self.run(&["send-keys", keys]);
    }

    fn alternate_screen(&self) -> bool {
        self.run(&["display-message", "-p", "#{alternate_on}"])
            .trim()
            == "1"
    }

    /// Poll the screen until `done` holds (20 s at most).
    fn wait_for(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let screen = self.screen();
            if done(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

/// Field `n` (0: the frame, 1: the label) of `label`'s row in the
/// dashboard's endpoint table, as a number.
fn field_of(screen: &str, label: &str, n: usize) -> Option<f64> {
    let row = screen.lines().find(|l| {
        l.starts_with("│") && l.trim_start_matches('│').trim_start().starts_with(label)
    })?;
    let field = row.split_whitespace().nth(n)?;
    field.replace(',', "").parse().ok()
}

/// The "done" count of `label`'s row.
fn done_of(screen: &str, label: &str) -> Option<u64> {
    field_of(screen, label, 2).map(|n| n as u64)
}

/// The "now req/s" of `label`'s row.
fn now_of(screen: &str, label: &str) -> Option<f64> {
    field_of(screen, label, 3)
}

#[test]
#[ignore = "needs tmux (installed by .ci/run)"]
fn the_dashboard_shows_moving_counts_q_ends_the_run_and_the_report_follows() {
    let server = Server::start(|_| Reply::ok("{}").after(Duration::from_millis(10)));
    let command = format!(
        "'{BIN}' -i --method GET --stop-after=10m -c 2 alpha={url} beta={url}",
        url = server.url()
    );
    let tmux = Tmux::start("q", &command);
    let first = tmux.wait_for("both labels and a count", |s| {
        done_of(s, "alpha").is_some_and(|n| n > 0) && done_of(s, "beta").is_some()
    });
    assert!(tmux.alternate_screen());
    assert!(first.contains("quit and report"), "{first}");
    let before = done_of(&first, "alpha").unwrap();
    tmux.wait_for("the count to move", |s| {
        done_of(s, "alpha").is_some_and(|n| n > before)
    });

    tmux.keys("q");
    let after = tmux.wait_for("the report and the exit code", |s| s.contains("EXIT=0"));
    assert!(after.contains("** Summary for 2 endpoints:"), "{after}");
    assert!(after.contains("Stopped:    interrupted"), "{after}");
    // Back on the normal screen, the dashboard gone, the terminal usable.
    assert!(!tmux.alternate_screen(), "{after}");
    assert!(!after.contains("quit and report"), "{after}");
    let completed = number_after(&after, "Completed:");
    assert!(completed as u64 >= before, "{after}");
}

/// On an 80×24 terminal every endpoint's row starts with its name and the
/// headers are whole (the names once got no room, `mismatch` read
/// `ismatch`).
#[test]
#[ignore = "needs tmux (installed by .ci/run)"]
fn at_80_columns_the_dashboard_names_every_endpoint() {
    let server = Server::start(|_| Reply::ok("{}").after(Duration::from_millis(10)));
    let command = format!(
        "'{BIN}' -i --method GET --stop-after=10m -c 2 reference-node={url} candidate-node={url}",
        url = server.url()
    );
    let tmux = Tmux::start_sized("narrow", &command, "80x24");
    let screen = tmux.wait_for("both names and a count", |s| {
        done_of(s, "reference-node").is_some_and(|n| n > 0)
            && done_of(s, "candidate-node").is_some()
    });
    let header = screen
        .lines()
        .find(|l| l.contains(" done "))
        .unwrap_or_else(|| panic!("no header:\n{screen}"));
    assert!(
        header.contains("│ endpoint ") && header.contains(" errors mismatch │"),
        "{screen}"
    );
    tmux.keys("q");
    tmux.wait_for("the report and the exit code", |s| s.contains("EXIT=0"));
}

#[test]
#[ignore = "needs tmux (installed by .ci/run)"]
fn plus_in_the_dashboard_raises_the_rate_of_an_open_model_run() {
    let server = Server::start(|_| Reply::ok("{}"));
    let command = format!(
        "'{BIN}' -i --method GET --rate 40 --stop-after=10m alpha={}",
        server.url()
    );
    let tmux = Tmux::start("rate", &command);
    tmux.wait_for("the planned rate", |s| {
        s.contains("target 40/s per endpoint") && now_of(s, "alpha").is_some_and(|r| r > 20.0)
    });
    for _ in 0..6 {
        tmux.keys("+");
    }
    // 40 x 1.25^6 = 152.6: shown, and the endpoint's current rate follows.
    tmux.wait_for("the raised target", |s| {
        s.contains("target 153/s per endpoint (x3.81)")
    });
    tmux.wait_for("the current rate to follow", |s| {
        now_of(s, "alpha").is_some_and(|r| r > 100.0)
    });
    tmux.keys("q");
    let after = tmux.wait_for("the report and the exit code", |s| s.contains("EXIT=0"));
    assert!(after.contains("Stopped:    interrupted"), "{after}");
}

#[test]
#[ignore = "needs tmux (installed by .ci/run)"]
fn ctrl_c_in_the_dashboard_stops_and_a_second_exits_130_on_a_restored_terminal() {
    let server = Server::start(|s| {
        if s.path.contains("slow") {
            Reply::ok("{}").after(Duration::from_secs(60))
        } else {
            Reply::ok("{}").after(Duration::from_millis(5))
        }
    });
    // The slow endpoint keeps requests in flight, so that the first Ctrl-C
    // waits out the (long) drain and the second one is what ends the run.
    let command = format!(
        "'{BIN}' -i --drain 60s --method GET --stop-after=10m -c 2 fast={url} slow={url}slow",
        url = server.url()
    );
    let tmux = Tmux::start("ctrlc", &command);
    tmux.wait_for("a count", |s| done_of(s, "fast").is_some_and(|n| n > 0));
    tmux.keys("C-c");
    tmux.wait_for("the stopping notice", |s| {
        s.contains("STOPPING: waiting up to 1m for requests in flight")
    });
    tmux.keys("C-c");
    let after = tmux.wait_for("exit code 130", |s| s.contains("EXIT=130"));
    assert!(!tmux.alternate_screen(), "{after}");
    assert!(after.contains("versus: interrupted"), "{after}");
    assert!(!after.contains("** Summary"), "{after}");
}

#[test]
#[ignore = "needs tmux (installed by .ci/run)"]
fn the_progress_line_in_a_terminal_and_ctrl_c_once_gives_the_partial_report() {
    let server = Server::start(|_| Reply::ok("{}").after(Duration::from_millis(5)));
    let command = format!(
        "'{BIN}' --method GET --stop-after=10m -c 2 alpha={url}",
        url = server.url()
    );
    let tmux = Tmux::start("progress", &command);
    tmux.wait_for("the progress line", |s| {
        s.contains("alpha ") && s.contains(" done ") && s.contains("errors 0")
    });
    tmux.keys("C-c");
    let after = tmux.wait_for("the report and the exit code", |s| s.contains("EXIT=0"));
    assert!(after.contains("versus: stopping;"), "{after}");
    assert!(after.contains("Stopped:    interrupted"), "{after}");
    // The stopping notice starts its own line, not the end of the progress
    // line.
    let notice = after
        .lines()
        .find(|l| l.contains("versus: stopping;"))
        .unwrap();
    assert!(notice.starts_with("versus: stopping;"), "{after}");
}

#[test]
fn interactive_and_quiet_do_not_go_together() {
    let out = run_bin(&["-i", "--quiet", "http://127.0.0.1:9/"], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--quiet"),
        "{}",
        text(&out.stderr)
    );
}
