//! End to end: the real binary in a pseudo-terminal (120x35, NO_COLOR=1, a temporary data
//! directory). Add an event, find it by location, create a timeline, travel there with the
//! wizard, return to the anchor, quit with `q`, and check the terminal was given back.

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
}

impl Session {
    fn start(data_dir: &std::path::Path) -> Session {
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
        cmd.args(["--seed", "none", "--tick", "500ms", "--as", "ada"]);
        cmd.env("NO_COLOR", "1");
        cmd.env("TERM", "xterm-256color");
        cmd.cwd(data_dir);
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
        // Keep the master alive as long as the session: dropping it hangs up the child.
        std::mem::forget(pty.master);
        Session {
            screen,
            writer,
            child,
        }
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
    s.wait_for("Anchor anc_");

    // The wizard: destination (the new timeline is selected), items, check, confirm.
    s.send("t");
    s.wait_for("Where to?");
    s.send(ENTER);
    s.wait_for("What do you carry?");
    s.send(ENTER);
    s.wait_for("Tesla 1889 stays stable");
    s.send(ENTER);
    s.wait_for("Ready to leave");
    s.send(ENTER);
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
    s.send(ENTER);
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
    s.wait_for("Monitor Tesla 1889 · stable");
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
    let start = Instant::now();
    let status = loop {
        if let Some(status) = s.child.try_wait().expect("child status") {
            break status;
        }
        if start.elapsed() > PATIENCE {
            let _ = s.child.kill();
            panic!("q did not quit; the screen shows:\n{}", s.contents());
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "exit status {status:?}");
    // Let the reader drain what the process wrote last.
    std::thread::sleep(Duration::from_millis(200));
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
