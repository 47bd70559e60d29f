//! End to end: the real binary in a pseudo-terminal (120x35, NO_COLOR=1, a temporary data
//! directory). Add an event, find it by location, create a timeline, travel there with the
//! wizard, return to the anchor, quit with `q`, and check the terminal was given back. Also:
//! the dashboard driving a server over https with a private CA, and a panic inside the
//! dashboard leaving the terminal restored with color-eyre's report on the normal screen.

#[path = "pki/mod.rs"]
mod pki;
mod support;

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};

const ROWS: u16 = 35;
const COLS: u16 = 120;
/// How long to wait for the screen to show something before failing.
const PATIENCE: Duration = Duration::from_secs(30);

struct Screen {
    parser: vt100::Parser,
    raw: Vec<u8>,
}

/// The binary under test. CHRONOSCOPE_E2E_BIN runs another build of it (a shared target
/// directory can hold another checkout's binary under the default path).
fn binary() -> std::ffi::OsString {
    std::env::var_os("CHRONOSCOPE_E2E_BIN")
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_chronoscope").into())
}

struct Session {
    screen: Arc<Mutex<Screen>>,
    writer: Box<dyn Write + Send>,
    child: Box<dyn portable_pty::Child + Send + Sync>,
    /// Kept open as long as the session: dropping it hangs up the child.
    master: Box<dyn portable_pty::MasterPty + Send>,
    /// The terminal's settings before the dashboard started.
    termios_before: Option<Termios>,
}

/// The terminal settings a dashboard changes (raw mode) and must put back.
type Termios = (u64, u64, u64, u64);

impl Session {
    fn start(data_dir: &std::path::Path) -> Session {
        Session::spawn(
            data_dir,
            &["--seed", "none", "--tick", "500ms", "--as", "ada"],
            &[],
        )
    }

    /// The binary with `--data-dir data_dir` and `args`, with `env` set.
    fn spawn(data_dir: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> Session {
        let pty = native_pty_system()
            .openpty(PtySize {
                rows: ROWS,
                cols: COLS,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("a pseudo-terminal");
        let mut cmd = CommandBuilder::new(binary());
        cmd.args(["--data-dir"]);
        cmd.arg(data_dir);
        cmd.args(args);
        cmd.env("NO_COLOR", "1");
        cmd.env("TERM", "xterm-256color");
        // A short report: the backtrace would scroll the start of it off the screen.
        cmd.env("RUST_BACKTRACE", "0");
        for (name, value) in env {
            cmd.env(name, value);
        }
        cmd.cwd(data_dir);
        let termios_before = termios(pty.master.as_ref());
        let child = pty.slave.spawn_command(cmd).expect("the binary starts");
        drop(pty.slave);
        let mut reader = pty.master.try_clone_reader().expect("pty reader");
        let writer = pty.master.take_writer().expect("pty writer");
        let screen = Arc::new(Mutex::new(Screen {
            parser: vt100::Parser::new(
                std::num::NonZeroU16::new(ROWS).expect("rows"),
                std::num::NonZeroU16::new(COLS).expect("cols"),
                0,
            ),
            raw: Vec::new(),
        }));
        let sink = Arc::clone(&screen);
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let mut s = sink.lock().unwrap_or_else(|e| e.into_inner());
                s.parser.process(&buf[..n]);
                s.raw.extend_from_slice(&buf[..n]);
            }
        });
        Session {
            screen,
            writer,
            child,
            master: pty.master,
            termios_before,
        }
    }

    /// Waits for the child to exit.
    fn exit_status(&mut self) -> portable_pty::ExitStatus {
        let start = Instant::now();
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("child status") {
                break status;
            }
            if start.elapsed() > PATIENCE {
                let _ = self.child.kill();
                panic!(
                    "the dashboard did not exit; the screen shows:\n{}",
                    self.contents()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        // Let the reader drain what the process wrote last.
        std::thread::sleep(Duration::from_millis(200));
        status
    }

    fn contents(&self) -> String {
        let s = self.screen.lock().unwrap_or_else(|e| e.into_inner());
        s.parser.screen().contents()
    }

    fn wait_for(&self, text: &str) {
        let start = Instant::now();
        loop {
            let screen = self.contents();
            if screen.contains(text) {
                return;
            }
            if start.elapsed() > PATIENCE {
                panic!("waited {PATIENCE:?} for {text:?}; the screen shows:\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until `text` is no longer on screen.
    fn wait_until_gone(&self, text: &str) {
        let start = Instant::now();
        loop {
            let screen = self.contents();
            if !screen.contains(text) {
                return;
            }
            if start.elapsed() > PATIENCE {
                panic!("waited {PATIENCE:?} for {text:?} to go; the screen shows:\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn send(&mut self, bytes: &str) {
        self.writer
            .write_all(bytes.as_bytes())
            .expect("write to the pty");
        self.writer.flush().expect("flush the pty");
        // Give the dashboard a moment between keys, as a person would.
        std::thread::sleep(Duration::from_millis(60));
    }

    fn keys(&mut self, keys: &[&str]) {
        for k in keys {
            self.send(k);
        }
    }
}

/// The pty's input, output, control and local flags (raw mode clears some of each).
fn termios(master: &dyn portable_pty::MasterPty) -> Option<Termios> {
    master.get_termios().map(|t| {
        (
            u64::from(t.input_flags.bits()),
            u64::from(t.output_flags.bits()),
            u64::from(t.control_flags.bits()),
            u64::from(t.local_flags.bits()),
        )
    })
}

const ENTER: &str = "\r";
const TAB: &str = "\t";
const ESC: &str = "\x1b";

#[test]
fn a_whole_mission_in_a_real_terminal() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut s = Session::start(dir.path());
    s.wait_for("connected");
    s.wait_for("ada @ ");

    // An event to find: e, description, keep the prefilled time, location.
    s.send("e");
    s.wait_for("Add an event");
    s.send("Tesla demonstrates AC");
    s.keys(&[TAB, TAB]);
    s.send("Zurich");
    s.send(ENTER);
    s.wait_for("Added event Tesla demonstrates AC");

    // Search it by location.
    s.keys(&[TAB, "/"]);
    s.send("zur");
    s.send(ENTER);
    s.wait_for("1 found");
    s.wait_for("Tesla demonstrates AC");

    // A timeline to go to (shift-tab back to the timelines pane first).
    s.send("\x1b[Z");
    s.send("n");
    s.wait_for("New timeline");
    s.send("Tesla 1889");
    s.send(TAB);
    s.send("1889-03-10T23:50:00Z");
    s.send(ENTER);
    s.wait_for("Created timeline Tesla 1889");

    // An anchor where we are, to come back to.
    s.send("a");
    s.wait_for("Set an anchor");
    s.send(TAB);
    s.send("home");
    s.send(ENTER);
    s.wait_for("Anchor 'home' set");

    // The wizard walked to its confirm step, where enter does not travel and one esc leaves.
    s.send("t");
    s.wait_for("Where to?");
    s.send(ENTER);
    s.wait_for("What do you carry?");
    s.send(ENTER);
    s.wait_for("Tesla 1889 stays stable");
    s.send(ENTER);
    s.wait_for("Ready to leave");
    s.send(ENTER);
    s.send(ESC);
    s.wait_until_gone("Ready to leave");
    let screen = s.contents();
    assert!(!screen.contains("Arrived"), "nobody travelled:\n{screen}");
    assert!(screen.contains("ada @ Primary"), "still at home:\n{screen}");

    // The wizard again: destination (the new timeline is selected), items, check, confirm.
    s.send("t");
    s.wait_for("Where to?");
    s.send(ENTER);
    s.wait_for("What do you carry?");
    s.send(ENTER);
    s.wait_for("Tesla 1889 stays stable");
    s.send(ENTER);
    s.wait_for("Ready to leave");
    s.send("y");
    s.wait_for("Arrived.");
    s.wait_for("ada @ Tesla 1889");
    s.send(ESC);

    // Return to the anchor.
    s.send("b");
    s.wait_for("(return)");
    s.send(ENTER);
    s.wait_for("What do you carry?");
    s.send(ENTER);
    s.wait_for("stays stable");
    s.send(ENTER);
    s.wait_for("Ready to leave");
    s.send("y");
    s.wait_for("Returned.");
    s.send(ESC);

    // Another process (the CLI on the same data directory) moves a cause after its effect in
    // the selected timeline; the dashboard's monitor shows the new anomaly on its next tick.
    let cli = |args: &[&str]| -> serde_json::Value {
        let out = std::process::Command::new(binary())
            .arg("--data-dir")
            .arg(dir.path())
            .args(["--as", "ada", "--json"])
            .args(args)
            .output()
            .expect("the CLI runs");
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("the CLI prints JSON")
    };
    let timelines = cli(&["timelines", "list"]);
    let tesla = timelines["items"]
        .as_array()
        .and_then(|items| items.iter().find(|t| t["name"] == "Tesla 1889"))
        .and_then(|t| t["id"].as_str())
        .expect("the timeline made in the dashboard")
        .to_owned();
    let cause = cli(&[
        "events",
        "add",
        "Invention",
        "--time",
        "1880-01-01T00:00:00Z",
        "--location",
        "Lab",
        "--timeline",
        &tesla,
    ]);
    let cause = cause["event_id"].as_str().expect("an event id").to_owned();
    cli(&[
        "events",
        "add",
        "Demonstration",
        "--time",
        "1890-01-01T00:00:00Z",
        "--location",
        "Fair",
        "--timeline",
        &tesla,
        "--cause",
        &cause,
    ]);
    s.wait_for("Monitor stable · Tesla 1889");
    cli(&[
        "events",
        "manipulate",
        &cause,
        "--timeline",
        &tesla,
        "--time",
        "1895-01-01T00:00:00Z",
    ]);
    s.wait_for("NEW");
    s.wait_for("crit");

    s.send("q");
    let status = s.exit_status();
    assert!(status.success(), "exit status {status:?}");
    let screen = s.screen.lock().unwrap_or_else(|e| e.into_inner());
    assert!(
        !screen.parser.screen().alternate_screen(),
        "the alternate screen was left"
    );
    assert!(
        !screen.parser.screen().hide_cursor(),
        "the cursor is shown again"
    );
    let raw = String::from_utf8_lossy(&screen.raw);
    let entered = raw
        .find("\x1b[?1049h")
        .expect("the dashboard used the alternate screen");
    let left = raw.rfind("\x1b[?1049l").expect("and left it");
    assert!(left > entered);
    // NO_COLOR=1: no foreground or background colour was ever set (resets are fine).
    for code in 30..=37 {
        assert!(
            !raw.contains(&format!("\x1b[{code}m")),
            "colour {code} under NO_COLOR"
        );
    }
    assert!(
        !raw.contains("\x1b[38;") && !raw.contains("\x1b[48;"),
        "colour under NO_COLOR"
    );
}

/// The time controls and the anchors list in the real binary: pause (the header says so and
/// the time stands), fast-forward by a typed duration while paused, resume, then an anchor
/// listed with its stability, kept on n and deleted on y.
#[test]
fn pause_fast_forward_and_the_anchors_list_in_a_real_terminal() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut s = Session::start(dir.path());
    s.wait_for("connected");
    s.wait_for("ada @ ");

    s.send(" ");
    s.wait_for("⏸ paused");
    s.wait_for("Your clock is paused at");
    let header = |s: &Session| s.contents().lines().next().unwrap_or_default().to_owned();
    let paused_at = header(&s);
    // Two ticks later (500 ms each) the header was redrawn, and your time has not moved.
    std::thread::sleep(Duration::from_millis(1500));
    let later = header(&s);
    let time = |line: &str| {
        line.split("ada @ Primary ")
            .nth(1)
            .and_then(|rest| rest.get(..19))
            .map(str::to_owned)
    };
    assert!(time(&paused_at).is_some(), "{paused_at}");
    assert_eq!(time(&later), time(&paused_at), "{paused_at}\n{later}");

    // Fast-forward by a typed duration: you stand still further on, still paused.
    s.send(">");
    s.wait_for("Fast-forward your own clock");
    s.send("2h");
    s.send(ENTER);
    s.wait_for("Fast-forwarded 2h");
    s.wait_for("⏸ paused");
    s.send(" ");
    s.wait_for("Your clock runs again");
    s.wait_until_gone("⏸ paused");

    // An anchor, listed with its stability; n keeps it, y deletes it.
    s.send("a");
    s.wait_for("Set an anchor");
    s.send(TAB);
    s.send("home");
    s.send(ENTER);
    s.wait_for("Anchor 'home' set");
    s.send("A");
    s.wait_for("Your anchors (1)");
    s.wait_for("● stable");
    s.send("d");
    s.wait_for("Delete anchor 'home'");
    s.send("n");
    s.wait_until_gone("Delete anchor 'home'");
    s.wait_for("Your anchors (1)");
    s.send("d");
    s.wait_for("Delete anchor 'home'");
    s.send("y");
    s.wait_for("You have no anchors");
    s.send(ESC);
    s.wait_until_gone("Your anchors");

    s.send("q");
    let status = s.exit_status();
    assert!(status.success(), "exit status {status:?}");
}

#[test]
fn the_dashboard_drives_a_server_over_https_with_a_private_ca() {
    use chronoscope::service::PageRequest;
    use chronoscope::service::prelude::*;

    let runtime = tokio::runtime::Runtime::new().expect("a runtime for the server");
    let pki = pki::Pki::new();
    let (engine, port) = runtime.block_on(async {
        let engine = support::memory_engine().await;
        let port = support::serve_port(Arc::clone(&engine), Some(pki.server_config())).await;
        (engine, port)
    });
    let token = support::token("ada");
    let dir = tempfile::tempdir().expect("temp dir");
    let remote = format!("https://localhost:{port}/v1");
    let ca = pki.ca();
    let mut s = Session::spawn(
        dir.path(),
        &[
            "--remote",
            &remote,
            "--token",
            &token,
            "--ca-cert",
            ca.to_str().expect("a UTF-8 path"),
            "--tick",
            "500ms",
        ],
        &[],
    );
    s.wait_for("connected");
    s.wait_for(&format!("server https://localhost:{port}"));
    s.send("n");
    s.wait_for("New timeline");
    s.send("Made over TLS");
    s.send(ENTER);
    s.wait_for("Created timeline Made over TLS");
    s.send("q");
    let status = s.exit_status();
    assert!(status.success(), "exit status {status:?}");
    let on_server = runtime
        .block_on(
            engine
                .session("ada".parse().expect("a name"))
                .list_timelines(PageRequest::default()),
        )
        .expect("the server's engine answers");
    assert!(
        on_server.items.iter().any(|t| t.name == "Made over TLS"),
        "{on_server:?}"
    );
}

#[test]
fn a_panic_in_the_dashboard_restores_the_terminal_then_prints_the_report() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut s = Session::spawn(
        dir.path(),
        &["--seed", "none", "--as", "ada"],
        &[(chronoscope::tui::TEST_PANIC_ENV, "1")],
    );
    s.wait_for("connected");
    let before = s.termios_before.expect("the pty's settings");
    assert_ne!(
        termios(s.master.as_ref()),
        Some(before),
        "the dashboard runs in raw mode"
    );
    s.send("x");
    let status = s.exit_status();
    assert!(!status.success(), "a panic is a failure: {status:?}");
    assert_eq!(
        termios(s.master.as_ref()),
        Some(before),
        "raw mode is off again"
    );
    let screen = s.screen.lock().unwrap_or_else(|e| e.into_inner());
    assert!(
        !screen.parser.screen().alternate_screen(),
        "the alternate screen was left"
    );
    assert!(!screen.parser.screen().hide_cursor(), "the cursor is shown");
    let shown = screen.parser.screen().contents();
    assert!(
        shown.contains("The application panicked (crashed)."),
        "color-eyre's report is on the normal screen:\n{shown}"
    );
    assert!(
        shown.contains("CHRONOSCOPE_TEST_PANIC=1: panicking on the first key"),
        "{shown}"
    );
    // Restored first, then reported: the report follows the last leave of the alternate screen.
    let raw = String::from_utf8_lossy(&screen.raw);
    let left = raw
        .rfind("\x1b[?1049l")
        .expect("the alternate screen was left");
    let report = raw
        .find("The application panicked")
        .expect("the report was printed");
    assert!(
        left < report,
        "the report was printed before the terminal was restored"
    );
}

#[test]
fn a_panicking_background_call_is_an_error_on_screen_and_the_dashboard_stays_up() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut s = Session::spawn(
        dir.path(),
        &["--seed", "none", "--as", "ada"],
        &[(chronoscope::tui::TEST_PANIC_ENV, "call")],
    );
    s.wait_for("connected");
    let before = s.termios_before.expect("the pty's settings");
    s.send("x");
    s.wait_for("the call failed unexpectedly");
    assert_ne!(
        termios(s.master.as_ref()),
        Some(before),
        "still in raw mode after a background panic"
    );
    {
        let screen = s.screen.lock().unwrap_or_else(|e| e.into_inner());
        assert!(
            screen.parser.screen().alternate_screen(),
            "still on the alternate screen"
        );
    }
    // The dashboard still takes keys, and quits cleanly.
    s.send("?");
    s.wait_for("Help");
    s.send(ESC);
    s.send("q");
    let status = s.exit_status();
    assert!(status.success(), "exit status {status:?}");
    let screen = s.screen.lock().unwrap_or_else(|e| e.into_inner());
    let shown = screen.parser.screen().contents();
    assert!(
        shown.contains("While the dashboard ran, a background task panicked"),
        "the panic is reported once the terminal is back:\n{shown}"
    );
}

/// With a tick of a minute, only the server's stream can bring another client's change to the
/// screen within seconds: a paradox bob makes shows in ada's remote dashboard, and its revert
/// clears it, without a key pressed.
#[test]
fn another_clients_change_reaches_the_remote_dashboard_through_the_stream() {
    use chronoscope::model::{TimelineId, parse_instant};
    use chronoscope::service::*;

    let runtime = tokio::runtime::Runtime::new().expect("a runtime for the server");
    let (engine, port) = runtime.block_on(async {
        let engine = support::memory_engine().await;
        let port = support::serve_port(Arc::clone(&engine), None).await;
        (engine, port)
    });
    let at = |s| parse_instant("t", s).expect("a time");
    let bob = engine.session("bob".parse().expect("a name"));
    let primary = TimelineId::primary();
    let add = |description: &str, time, causes| NewEvent {
        description: description.into(),
        time: at(time),
        location: "Turin".into(),
        causes,
        fixed_point: false,
        safety_check: false,
    };
    let party = runtime.block_on(async {
        let treaty = bob
            .add_event(&primary, add("Treaty", "1860-06-01T12:00:00Z", vec![]))
            .await
            .expect("an event");
        bob.add_event(
            &primary,
            add(
                "Treaty celebrated",
                "1861-06-01T12:00:00Z",
                vec![treaty.event_id],
            ),
        )
        .await
        .expect("an event")
    });

    let token = support::token("ada");
    let dir = tempfile::tempdir().expect("temp dir");
    let remote = format!("http://127.0.0.1:{port}/v1");
    let mut s = Session::spawn(
        dir.path(),
        &["--remote", &remote, "--token", &token, "--tick", "60s"],
        &[],
    );
    s.wait_for("live");
    s.wait_for("stable");

    runtime
        .block_on(bob.manipulate_event(ManipulateRequest {
            timeline_id: None,
            event_id: party.event_id.clone(),
            new_outcome: NewOutcome {
                description: None,
                changes: vec![OutcomeChange {
                    action: None,
                    time: Some(at("1855-06-01T12:00:00Z")),
                }],
            },
            safety_check: false,
        }))
        .expect("bob's manipulation");
    let acknowledged = Instant::now();
    s.wait_for("1 anomaly");
    let shown = acknowledged.elapsed();
    assert!(
        shown < Duration::from_secs(10),
        "shown {shown:?} after bob's change; the tick is 60 s"
    );

    runtime
        .block_on(bob.revert_event(RevertRequest {
            event_id: party.event_id.clone(),
            timeline_id: None,
            safety_check: false,
        }))
        .expect("bob's revert");
    s.wait_until_gone("1 anomaly");
    s.wait_for("stable");
    s.send("q");
    let status = s.exit_status();
    assert!(status.success(), "exit status {status:?}");
}

/// The merge wizard against a real server: a branch is diffed with its parent and merged into
/// it with `source_overwrite`, and the server's primary timeline then has the branch's outcome.
#[test]
fn the_merge_wizard_merges_a_branch_on_a_remote_server() {
    use chronoscope::model::{TimelineId, parse_instant};
    use chronoscope::service::*;

    let runtime = tokio::runtime::Runtime::new().expect("a runtime for the server");
    let (engine, port) = runtime.block_on(async {
        let engine = support::memory_engine().await;
        let port = support::serve_port(Arc::clone(&engine), None).await;
        (engine, port)
    });
    let at = |s| parse_instant("t", s).expect("a time");
    let ada = engine.session("ada".parse().expect("a name"));
    let primary = TimelineId::primary();
    let moved =
        |timeline: &TimelineId, event: &chronoscope::model::EventId, time| ManipulateRequest {
            timeline_id: Some(timeline.clone()),
            event_id: event.clone(),
            new_outcome: NewOutcome {
                description: None,
                changes: vec![OutcomeChange {
                    action: None,
                    time: Some(at(time)),
                }],
            },
            safety_check: false,
        };
    runtime.block_on(async {
        let treaty = ada
            .add_event(
                &primary,
                NewEvent {
                    description: "Treaty signed".into(),
                    time: at("1860-06-01T12:00:00Z"),
                    location: "Turin".into(),
                    causes: vec![],
                    fixed_point: false,
                    safety_check: false,
                },
            )
            .await
            .expect("an event");
        let branch = ada
            .create_timeline(NewTimeline {
                name: Some("Treaty late".into()),
                ..NewTimeline::default()
            })
            .await
            .expect("a branch");
        ada.manipulate_event(moved(&branch.id, &treaty.event_id, "1861-06-01T12:00:00Z"))
            .await
            .expect("moved in the branch");
        ada.manipulate_event(moved(&primary, &treaty.event_id, "1859-06-01T12:00:00Z"))
            .await
            .expect("moved in primary");
    });

    let token = support::token("ada");
    let dir = tempfile::tempdir().expect("temp dir");
    let remote = format!("http://127.0.0.1:{port}/v1");
    let mut s = Session::spawn(dir.path(), &["--remote", &remote, "--token", &token], &[]);
    s.wait_for("Treaty late");
    // Primary is selected (you are there); the branch is under it.
    s.keys(&["j", "M"]);
    s.wait_for("Merge Treaty late into");
    s.send(ENTER);
    s.wait_for("0 incoming · 0 added · 0 kept · 0 convergent · 1 conflict");
    s.wait_for("1861-06-01 12:00 Treaty signed");
    // Strategy: source_overwrite is the first; then the last look, and y.
    s.keys(&[ENTER, "k", "k", ENTER]);
    s.wait_for("strategy  source_overwrite");
    s.send("y");
    s.wait_for("Merged Treaty late into Primary.");
    let events = runtime
        .block_on(ada.search_events(SearchQuery::default()))
        .expect("the server's engine answers");
    assert!(
        events
            .items
            .iter()
            .any(|e| e.description == "Treaty signed" && e.time == at("1861-06-01T12:00:00Z")),
        "primary has the branch's outcome: {:?}",
        events.items
    );
    s.keys(&[ESC, "q"]);
    let status = s.exit_status();
    assert!(status.success(), "exit status {status:?}");
}
