//! The binary as an operator runs it: `serve` over https with a private CA, the CLI on another
//! "machine" trusting that CA, metrics on their own listener, warnings and refusals in words,
//! and the shell integration (completions, man pages).

mod support;

#[path = "pki/mod.rs"]
mod pki;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use pki::Pki;

/// How long a server may take to start or stop.
const PATIENCE: Duration = Duration::from_secs(30);

fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_chronoscope")
}

/// `chronoscope --data-dir DIR ARGS…`, run to the end.
fn run(dir: &Path, args: &[&str]) -> Output {
    Command::new(binary())
        .arg("--data-dir")
        .arg(dir)
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .env("NO_COLOR", "1")
        .output()
        .expect("the binary runs")
}

/// A `serve` process and what it has said on stderr so far.
struct Served {
    child: Child,
    lines: mpsc::Receiver<String>,
    said: Vec<String>,
}

impl Served {
    fn start(dir: &Path, args: &[&str]) -> Served {
        Self::start_as(dir, args, true)
    }

    /// `serve`, with `NO_COLOR` set or not (a log written to a file never needs it).
    fn start_as(dir: &Path, args: &[&str], no_color: bool) -> Served {
        let mut command = Command::new(binary());
        if no_color {
            command.env("NO_COLOR", "1");
        } else {
            command.env_remove("NO_COLOR");
        }
        let mut child = command
            .arg("--data-dir")
            .arg(dir)
            .arg("serve")
            .args(args)
            .env("RUST_BACKTRACE", "0")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("serve starts");
        let stderr = child.stderr.take().expect("a stderr pipe");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Served {
            child,
            lines,
            said: Vec::new(),
        }
    }

    /// The rest of the first line of stderr that starts with `prefix`, waiting for it.
    fn wait_for(&mut self, prefix: &str) -> String {
        let line = self.wait_line(prefix, |l| l.starts_with(prefix));
        line[prefix.len()..].to_owned()
    }

    /// The first line of stderr that `wanted` accepts, waiting for it.
    fn wait_line(&mut self, what: &str, wanted: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(found) = self.said.iter().find(|l| wanted(l)) {
                return found.clone();
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => self.said.push(line),
                Err(_) => panic!(
                    "serve never said {what:?}; it said:\n{}",
                    self.said.join("\n")
                ),
            }
        }
    }

    /// Sends SIGTERM and waits for the exit.
    fn terminate(&mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill runs");
        assert!(sent.success());
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(status) = self.child.try_wait().expect("the exit status") {
                return status;
            }
            assert!(Instant::now() < deadline, "serve did not stop on SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A plain HTTP/1.1 GET of `url` (`http://host:port/path`): the whole answer, headers included.
fn http_get(url: &str) -> String {
    use std::io::{Read, Write};
    let rest = url.trim().strip_prefix("http://").expect("an http URL");
    let (host, path) = rest.split_once('/').expect("a path");
    let mut stream = std::net::TcpStream::connect(host).expect("the listener accepts");
    write!(
        stream,
        "GET /{path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .expect("send the request");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("read the answer");
    answer
}

fn token(dir: &Path) -> String {
    let out = run(dir, &["token", "--subject", "ada"]);
    support::assert_succeeded(&out);
    String::from_utf8(out.stdout)
        .expect("a printable token")
        .trim()
        .to_owned()
}

#[test]
fn serve_over_https_drives_the_cli_with_a_private_ca_and_stops_on_sigterm() {
    let server_dir = tempfile::tempdir().expect("temp dir");
    let client_dir = tempfile::tempdir().expect("temp dir");
    let pki = Pki::new();
    let cert = pki.cert();
    let key = pki.key();
    let mut served = Served::start(
        server_dir.path(),
        &[
            "--listen",
            "127.0.0.1:0",
            "--tls-cert",
            cert.to_str().expect("a UTF-8 path"),
            "--tls-key",
            key.to_str().expect("a UTF-8 path"),
            "--metrics-listen",
            "127.0.0.1:0",
        ],
    );
    let address = served.wait_for("chronoscope serving on https://");
    let port = address
        .split_whitespace()
        .next()
        .and_then(|a| a.rsplit(':').next())
        .expect("an address with a port")
        .to_owned();
    let metrics = served.wait_for("metrics on ");
    let token = token(server_dir.path());
    // The seed and the dashboard write the server with its /v1.
    let remote = format!("https://localhost:{port}/v1");
    let ca = pki.ca();
    let other = pki.other_ca();
    let cli = |ca: &Path, args: &[&str]| {
        let mut all = support::remote_options(&remote, &token, ca);
        all.extend_from_slice(args);
        run(client_dir.path(), &all)
    };

    let made = cli(&ca, &["--json", "timelines", "create", "Over TLS"]);
    support::assert_succeeded(&made);
    let made: serde_json::Value = serde_json::from_slice(&made.stdout).expect("JSON");
    assert_eq!(made["name"], "Over TLS");
    let me = cli(&ca, &["--json", "whoami"]);
    support::assert_succeeded(&me);

    // The wrong CA: refused, in words that say what to do, and nothing else on stderr.
    let refused = cli(&other, &["whoami"]);
    assert_eq!(refused.status.code(), Some(1));
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains(&format!(
            "cannot reach https://localhost:{port}: the server's certificate is not trusted"
        )),
        "{said}"
    );
    assert!(said.contains("--ca-cert FILE"), "{said}");
    assert!(
        !said.contains("ERROR"),
        "a log line repeats the refusal:\n{said}"
    );
    assert!(refused.stdout.is_empty());

    // Metrics are on their own plain-http listener.
    let scrape = http_get(&metrics);
    assert!(scrape.starts_with("HTTP/1.1 200"), "{scrape}");
    assert!(
        scrape.contains(
            "chronoscope_http_requests_total{method=\"POST\",route=\"/v1/timelines\",status=\"201\"} 1"
        ),
        "{scrape}"
    );

    let status = served.terminate();
    assert!(status.success(), "serve exited with {status:?}");
}

/// Also: stderr going to a pipe or a file carries no colour codes, even without `NO_COLOR`
/// (a server's log file read with `less` or grep showed `[2m…[0m` around every field).
#[test]
fn plain_http_beyond_loopback_warns_that_tokens_travel_unencrypted() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut served = Served::start_as(dir.path(), &["--listen", "0.0.0.0:0"], false);
    let port = served.wait_for("chronoscope serving on http://0.0.0.0:");
    let port = port.split_whitespace().next().expect("a port").to_owned();
    // Serving (and so listening for SIGTERM) before it is sent.
    assert!(http_get(&format!("http://127.0.0.1:{port}/healthz")).starts_with("HTTP/1.1 200"));
    let line = served.wait_line("the warning", |l| l.contains("unencrypted"));
    support::assert_contains_all(
        &line,
        &[
            "WARN",
            "bearer tokens cross the network unencrypted",
            "--tls-cert",
        ],
    );
    assert!(
        !line.contains('\u{1b}'),
        "colour codes in a piped log: {line:?}"
    );
    assert!(served.terminate().success());

    // On loopback, nothing to warn about.
    let mut quiet = Served::start(dir.path(), &["--listen", "127.0.0.1:0"]);
    let address = quiet.wait_for("chronoscope serving on http://");
    let address = address
        .split_whitespace()
        .next()
        .expect("an address")
        .to_owned();
    assert!(http_get(&format!("http://{address}/healthz")).starts_with("HTTP/1.1 200"));
    let status = quiet.terminate();
    assert!(status.success());
    while let Ok(line) = quiet.lines.try_recv() {
        quiet.said.push(line);
    }
    assert!(
        !quiet.said.iter().any(|l| l.contains("unencrypted")),
        "{}",
        quiet.said.join("\n")
    );
}

#[test]
fn an_unusable_certificate_or_key_is_named_and_serve_exits() {
    let dir = tempfile::tempdir().expect("temp dir");
    let pki = Pki::new();
    let missing = pki.dir().join("missing.pem");
    let path = |p: &Path| p.to_str().expect("a UTF-8 path").to_owned();
    for (cert, key, says) in [
        (
            path(&missing),
            path(&pki.key()),
            format!("cannot read the TLS certificate {}", missing.display()),
        ),
        (
            path(&pki.key()),
            path(&pki.key()),
            format!(
                "the TLS certificate {} holds no certificate",
                pki.key().display()
            ),
        ),
        (
            path(&pki.cert()),
            path(&pki.cert()),
            format!("the TLS key {} holds no private key", pki.cert().display()),
        ),
    ] {
        let out = run(
            dir.path(),
            &[
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--tls-cert",
                &cert,
                "--tls-key",
                &key,
            ],
        );
        assert_eq!(out.status.code(), Some(1), "{cert} {key}");
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(said.contains(&says), "{said}");
        assert!(!said.contains("panicked"), "{said}");
    }
    // One without the other is a usage error.
    let out = run(dir.path(), &["serve", "--tls-cert", &path(&pki.cert())]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--tls-key"));
}

#[test]
fn completions_name_every_subcommand_and_bash_accepts_them() {
    let dir = tempfile::tempdir().expect("temp dir");
    for shell in ["bash", "zsh", "fish"] {
        let out = run(dir.path(), &["completions", shell]);
        assert!(out.status.success(), "{shell}");
        let script = String::from_utf8(out.stdout).expect("UTF-8");
        for sub in ["serve", "timelines", "travel", "completions", "man"] {
            assert!(script.contains(sub), "{shell} completion lacks {sub}");
        }
        // (fish writes long flags without their dashes)
        for flag in ["remote", "ca-cert", "tls-cert", "metrics-listen"] {
            assert!(script.contains(flag), "{shell} completion lacks {flag}");
        }
        if shell == "bash" {
            let file = dir.path().join("chronoscope.bash");
            std::fs::write(&file, &script).expect("write the script");
            let checked = Command::new("bash")
                .arg("-n")
                .arg(&file)
                .output()
                .expect("bash runs");
            // bash -n names the script and the line it cannot parse.
            support::assert_succeeded(&checked);
        }
    }
    let out = run(dir.path(), &["completions", "tcsh"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "an unknown shell is a usage error"
    );
}

#[test]
fn the_man_page_comes_from_the_same_definition() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = run(dir.path(), &["man"]);
    assert!(out.status.success());
    let page = String::from_utf8(out.stdout).expect("UTF-8");
    support::assert_contains_all(&page, &[".TH chronoscope 1", ".SH SUBCOMMANDS"]);
    for sub in [
        "chronoscope\\-serve(1)",
        "chronoscope\\-timelines(1)",
        "chronoscope\\-man(1)",
    ] {
        assert!(page.contains(sub), "the page lacks {sub}");
    }
    assert!(
        page.contains("CHRONOSCOPE_CA_CERT"),
        "flags show their variables"
    );

    let pages = dir.path().join("man1");
    let out = run(
        dir.path(),
        &["man", "--out-dir", pages.to_str().expect("UTF-8")],
    );
    support::assert_succeeded(&out);
    let serve =
        std::fs::read_to_string(pages.join("chronoscope-serve.1")).expect("a page for serve");
    support::assert_contains_all(&serve, &[".TH chronoscope-serve 1", "\\-\\-tls\\-cert"]);
    assert!(pages.join("chronoscope.1").exists());
    assert!(pages.join("chronoscope-timelines-create.1").exists());
}

/// The metric names of the README's metrics table, each with whether it is there from start-up
/// (rows whose label set is per request or per timeline appear with their first one).
fn readme_metrics() -> Vec<(String, bool)> {
    let readme = include_str!("../README.md");
    let mut out = Vec::new();
    for row in readme.lines().filter(|l| l.starts_with("| `chronoscope_")) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let from_start = cells.get(2).is_some_and(|c| *c == "yes");
        for name in cells[1]
            .split('`')
            .filter(|n| n.starts_with("chronoscope_"))
        {
            let name = name.split('{').next().unwrap_or(name).to_owned();
            out.push((name, from_start));
        }
    }
    out
}

#[test]
fn a_scrape_right_after_start_shows_every_series_the_readme_lists_at_zero() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut served = Served::start(
        dir.path(),
        &["--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"],
    );
    let metrics = served.wait_for("metrics on ");
    let scrape = http_get(&metrics);
    let (_, body) = scrape.split_once("\r\n\r\n").expect("headers, then a body");
    let mut present: Vec<String> = body
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.split(['{', ' ']).next())
        .map(|n| {
            ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|s| n.strip_suffix(s))
                .unwrap_or(n)
                .to_owned()
        })
        .collect();
    present.sort();
    present.dedup();
    let listed = readme_metrics();
    assert!(
        listed.len() >= 15,
        "the README's table was not found: {listed:?}"
    );
    let mut expected: Vec<String> = listed
        .iter()
        .filter(|(_, from_start)| *from_start)
        .map(|(n, _)| n.clone())
        .collect();
    expected.sort();
    assert_eq!(present, expected, "scraped at start:\n{body}");
    // Each of those is at zero: nothing has happened yet.
    for line in body
        .lines()
        .filter(|l| l.starts_with("chronoscope_jobs_failed_total"))
    {
        assert!(line.ends_with(" 0"), "{line}");
    }
}
