//! The scriptable subcommands, parsed from real argument lists and run against an engine:
//! what a person reads, and what a script parses with `--json`.

mod support;

use std::sync::Arc;

use chronoscope::cli::{Cli, execute};
use chronoscope::engine::Engine;
use chronoscope::model::parse_instant;
use chronoscope::service::prelude::*;
use clap::Parser;
use support::run_cli;

async fn engine() -> Arc<Engine> {
    support::Fresh::new().await.engine
}

async fn json(service: &dyn TimelineService, args: &[&str]) -> serde_json::Value {
    let mut with_json = vec!["--json"];
    with_json.extend_from_slice(args);
    let text = run_cli(service, &with_json).await.unwrap();
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{args:?} printed invalid JSON: {e}\n{text}"))
}

#[tokio::test]
async fn a_mission_from_the_command_line() {
    let engine = engine().await;
    let ada = engine.session("ada".parse().unwrap());
    let created = json(
        &ada,
        &[
            "timelines",
            "create",
            "Tesla",
            "--destination-time",
            "1889-03-10T23:50:00Z",
        ],
    )
    .await;
    let tl = created["id"].as_str().unwrap().to_owned();
    let anchor = json(
        &ada,
        &[
            "anchors",
            "set",
            "2026-11-22T10:00:00Z",
            "--description",
            "home",
        ],
    )
    .await;
    let anchor = anchor["id"].as_str().unwrap().to_owned();

    let text = run_cli(&ada, &["travel", &tl]).await.unwrap();
    assert!(text.contains("1889-03-10T23:50:00Z"), "{text}");
    let item = json(&ada, &["items", "register", "Tesla's blueprint"]).await;
    let item = item["id"].as_str().unwrap().to_owned();
    let check = run_cli(
        &ada,
        &[
            "check",
            &tl,
            "--event",
            "Retrieve the blueprint@1889-03-10T23:50:00Z",
            "--item",
            &item,
        ],
    )
    .await
    .unwrap();
    assert_eq!(check, format!("{tl} is stable\n"));
    let back = run_cli(&ada, &["travel", &anchor, "--item", &item])
        .await
        .unwrap();
    assert!(back.contains(&format!("carried {item}")), "{back}");
    assert!(back.contains("now spent"), "{back}");

    let list = run_cli(&ada, &["anchors", "list"]).await.unwrap();
    assert!(list.lines().next().unwrap().starts_with("ANCHOR"), "{list}");
    assert!(list.contains("spent"), "{list}");
    let journeys = json(&ada, &["journeys"]).await;
    assert_eq!(journeys["items"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn the_guides_time_controls_run_from_the_command_line() {
    let engine = engine().await;
    let ada = engine.session("ada".parse().unwrap());
    let anchor = json(&ada, &["anchors", "set", "2024-09-01T00:00:00Z"]).await;
    let anchor = anchor["id"].as_str().unwrap().to_owned();
    let jump = run_cli(
        &ada,
        &["jump", "1889-03-10T23:45:00Z", "--location", "Tesla's Lab"],
    )
    .await
    .unwrap();
    assert!(jump.contains("-> primary (1889-03-10T23:45:00Z)"), "{jump}");
    let paused = run_cli(&ada, &["pause"]).await.unwrap();
    assert!(
        paused.starts_with("paused: 1889-03-10T23:45:00"),
        "{paused}"
    );
    let ff = json(&ada, &["fast-forward", "1h30m"]).await;
    assert!(
        ff["arrival_time"]
            .as_str()
            .unwrap()
            .starts_with("1889-03-11T01:15:00"),
        "{ff}"
    );
    let rw = json(&ada, &["rewind", "P1D"]).await;
    assert!(
        rw["arrival_time"]
            .as_str()
            .unwrap()
            .starts_with("1889-03-10T01:15:00"),
        "{rw}"
    );
    // Without a timestamp, an anchor is set where you are (your time, paused here), as the
    // dashboard's `a` sets it.
    let me = json(&ada, &["whoami"]).await;
    let here = json(&ada, &["anchors", "set", "--description", "here"]).await;
    assert_eq!(here["timestamp"], me["time"], "{here} {me}");
    let resumed = run_cli(&ada, &["resume"]).await.unwrap();
    assert!(
        resumed.starts_with("resumed: 1889-03-10T01:15:00"),
        "{resumed}"
    );
    let bad = run_cli(&ada, &["rewind", "ten minutes"]).await.unwrap_err();
    assert!(bad.to_string().contains("duration"), "{bad}");
    let tl = json(&ada, &["timelines", "create", "alt"]).await;
    let tl = tl["id"].as_str().unwrap().to_owned();
    let switched = json(&ada, &["switch", &tl]).await;
    assert_eq!(switched["status"], "switched");
    let again = run_cli(&ada, &["switch", &tl]).await.unwrap();
    assert!(again.starts_with(&format!("already in {tl}")), "{again}");
    let back = run_cli(&ada, &["return", &anchor]).await.unwrap();
    assert!(back.contains("now spent"), "{back}");
    let me = json(&ada, &["whoami"]).await;
    assert_eq!(me["timeline_id"], "primary");
}

/// Event commands that name no timeline act where the traveller is (DESIGN §4), as the
/// server does: after travelling, `events search`, `manipulate` and `revert` work there.
#[tokio::test]
async fn event_commands_without_a_timeline_act_where_the_traveller_is() {
    let engine = engine().await;
    let ada = engine.session("ada".parse().unwrap());
    let made = json(&ada, &["timelines", "create", "Elsewhere"]).await;
    let tl = made["id"].as_str().expect("an id").to_owned();
    let fair = json(
        &ada,
        &[
            "events",
            "add",
            "Village fair",
            "--time",
            "2026-06-01T12:00:00Z",
            "--location",
            "Bern",
            "--timeline",
            &tl,
        ],
    )
    .await;
    let fair = fair["event_id"].as_str().expect("an event id").to_owned();
    run_cli(&ada, &["travel", &tl]).await.expect("ada travels");

    let found = run_cli(&ada, &["events", "search", "--location", "bern"])
        .await
        .expect("a search where ada is");
    assert!(found.contains("Village fair"), "{found}");
    let moved = json(
        &ada,
        &[
            "events",
            "manipulate",
            &fair,
            "--description",
            "Fair in the rain",
        ],
    )
    .await;
    assert!(moved.to_string().contains("Fair in the rain"), "{moved}");
    run_cli(&ada, &["events", "revert", &fair])
        .await
        .expect("reverted where ada is");
    // Primary, where ada is not, never had the fair.
    let primary = run_cli(
        &ada,
        &[
            "events",
            "search",
            "--location",
            "bern",
            "--timeline",
            "primary",
        ],
    )
    .await
    .expect("a search of primary");
    assert!(!primary.contains("fair"), "{primary}");
}

#[tokio::test]
async fn events_are_added_searched_manipulated_and_reverted() {
    let engine = engine().await;
    let ada = engine.session("ada".parse().unwrap());
    let launch = json(
        &ada,
        &[
            "events",
            "add",
            "Launch",
            "--time",
            "2025-03-01T12:00:00Z",
            "--location",
            "Cape Canaveral",
        ],
    )
    .await;
    let launch = launch["event_id"].as_str().unwrap().to_owned();
    run_cli(
        &ada,
        &[
            "events",
            "add",
            "Deploy",
            "--time",
            "2025-03-02T12:00:00Z",
            "--location",
            "Orbit",
            "--cause",
            &launch,
        ],
    )
    .await
    .unwrap();
    // One date is that whole day, as in the dashboard's search (F10 of the walk-throughs).
    let that_day = run_cli(&ada, &["events", "search", "--range", "2025-03-02"])
        .await
        .unwrap();
    assert!(
        that_day.contains("Deploy") && !that_day.contains("Launch"),
        "{that_day}"
    );
    let typed = run_cli(
        &ada,
        &["events", "search", "--range", "2025-03-01 12:00/P1D"],
    )
    .await
    .unwrap();
    assert!(
        typed.contains("Launch") && typed.contains("Deploy"),
        "{typed}"
    );
    let found = run_cli(&ada, &["events", "search", "--location", "cape"])
        .await
        .unwrap();
    assert!(
        found.contains("Launch") && !found.contains("Deploy"),
        "{found}"
    );
    let range = run_cli(
        &ada,
        &["events", "search", "--range", "2025-03-02T00:00:00Z/P1D"],
    )
    .await
    .unwrap();
    assert!(
        range.contains("Deploy") && !range.contains("Launch"),
        "{range}"
    );

    let changed = run_cli(
        &ada,
        &[
            "events",
            "manipulate",
            &launch,
            "--description",
            "Launch scrubbed",
        ],
    )
    .await
    .unwrap();
    assert!(changed.starts_with("applied:"), "{changed}");
    let holds = run_cli(&ada, &["holds", &launch]).await.unwrap();
    assert!(holds.starts_with("altered:"), "{holds}");
    let reverted = run_cli(&ada, &["events", "revert", &launch]).await.unwrap();
    assert!(
        reverted.starts_with(&format!("reverted: {launch} stands again")),
        "{reverted}"
    );
    assert!(
        run_cli(&ada, &["holds", "launch"])
            .await
            .unwrap()
            .starts_with("holds:")
    );
}

#[tokio::test]
async fn automation_from_the_command_line() {
    let engine = engine().await;
    let ada = engine.session("ada".parse().unwrap());
    let e = json(
        &ada,
        &[
            "events",
            "add",
            "Launch",
            "--time",
            "2025-03-01T12:00:00Z",
            "--location",
            "Cape",
        ],
    )
    .await;
    let e = e["event_id"].as_str().unwrap().to_owned();
    let job = json(
        &ada,
        &[
            "schedules",
            "create",
            &e,
            "--at",
            "2026-11-22T10:00:00Z",
            "--new-details",
            "Launch moved",
        ],
    )
    .await;
    assert_eq!(job["status"], "scheduled");
    let trigger = json(
        &ada,
        &[
            "trigger",
            "--system",
            "CI",
            "--action",
            &format!("manipulate:{e}"),
            "--new-details",
            "by CI",
        ],
    )
    .await;
    assert_eq!(trigger["status"], "triggered");
    assert_eq!(engine.run_due().await.unwrap(), 2);
    let log = run_cli(&ada, &["log"]).await.unwrap();
    assert_eq!(
        log.lines().filter(|l| l.contains(" done ")).count(),
        2,
        "{log}"
    );
    let err = run_cli(&ada, &["trigger", "--system", "CI", "--action", "explode"])
        .await
        .unwrap_err();
    assert!(err.to_string().contains("KIND:EVENT"), "{err}");
}

#[tokio::test]
async fn mistakes_get_a_message_a_person_understands() {
    let engine = engine().await;
    let ada = engine.session("ada".parse().unwrap());
    let err = run_cli(&ada, &["travel", "tml_nowhere"]).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "no timeline or anchor 'tml_nowhere' is known to you"
    );
    let err = run_cli(&ada, &["timelines", "delete", "primary"])
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "the primary timeline cannot be deleted");
    // A timeline named in the path is refused in the same words as one named in a body.
    let err = run_cli(&ada, &["timelines", "show", "tml_nowhere"])
        .await
        .unwrap_err();
    assert_eq!(
        err.explain(),
        "Unknown reference: no timeline 'tml_nowhere' is known to you"
    );
    let me = run_cli(&ada, &["whoami"]).await.unwrap();
    // The embedded engine's user owns the store: an operator.
    assert!(me.starts_with("you are ada (operator)\n"), "{me}");
    // Flag values are checked by the parser before anything runs.
    let parse = Cli::try_parse_from(["chronoscope", "events", "search", "--range", "last week"]);
    let message = parse.unwrap_err().to_string();
    assert!(
        message.contains("'last week': write START/END, START/P1M (a duration) or one date"),
        "{message}"
    );
    let parse = Cli::try_parse_from(["chronoscope", "anchors", "set", "noon"]);
    assert!(parse.unwrap_err().to_string().contains("RFC 3339"));
    assert_eq!(
        run_cli(&ada, &["timelines", "list", "--limit", "1"])
            .await
            .unwrap()
            .lines()
            .count(),
        2
    );
}

#[test]
fn times_and_durations_out_of_range_are_refused_before_anything_runs() {
    for args in [
        &[
            "chronoscope",
            "events",
            "search",
            "--range",
            "2025-01-01T00:00:00Z/P100000000000D100000000000D",
        ][..],
        &["chronoscope", "anchors", "set", "0000-12-31T00:00:00Z"],
        &[
            "chronoscope",
            "timelines",
            "create",
            "x",
            "--destination-time",
            "9999-12-31T23:59:59-05:00",
        ],
    ] {
        let message = Cli::try_parse_from(args).unwrap_err().to_string();
        assert!(
            message.contains("years 0001 to 9999"),
            "{args:?}: {message}"
        );
    }
    let message = Cli::try_parse_from([
        "chronoscope",
        "--window",
        "1000000 weeks",
        "timelines",
        "list",
    ])
    .unwrap_err()
    .to_string();
    assert!(message.contains("10000 years"), "{message}");
    let message = Cli::try_parse_from(["chronoscope", "token", "--ttl", "99999999999999999h"])
        .unwrap_err()
        .to_string();
    assert!(message.contains("at most 3660d"), "{message}");
}

/// The real binary on a demo data directory: stdout is the change's answer, stderr names the
/// paradoxes the change introduced.
#[test]
fn a_change_that_makes_a_timeline_unstable_says_so_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let cli = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_chronoscope"))
            .arg("--data-dir")
            .arg(dir.path())
            .args(["--seed", "demo", "--json"])
            .args(args)
            .output()
            .expect("the CLI runs")
    };
    let found = cli(&["events", "search", "--limit", "500"]);
    let found: serde_json::Value = serde_json::from_slice(&found.stdout).unwrap();
    let effect = found["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| {
            e["fixed_point"] == false && e["causes"].as_array().is_some_and(|c| !c.is_empty())
        })
        .expect("the demo world has an effect that can be manipulated");
    let id = effect["event_id"].as_str().unwrap();

    // Checked, it is refused, with the way on said after the refusal.
    let checked = std::process::Command::new(env!("CARGO_BIN_EXE_chronoscope"))
        .arg("--data-dir")
        .arg(dir.path())
        .args(["events", "manipulate", id, "--time", "0001-01-02T00:00:00Z"])
        .arg("--safety-check")
        .output()
        .expect("the CLI runs");
    let stderr = String::from_utf8_lossy(&checked.stderr);
    assert_eq!(checked.status.code(), Some(2), "{stderr}");
    assert!(stderr.starts_with("error: Paradox detected: "), "{stderr}");
    assert!(
        !stderr.contains(".;"),
        "one sentence of paradoxes: {stderr}"
    );
    assert!(
        stderr.contains("nothing was written. To apply it anyway, run it again without"),
        "{stderr}"
    );
    let out = cli(&["events", "manipulate", id, "--time", "0001-01-02T00:00:00Z"]);
    assert!(out.status.success(), "{out:?}");
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["status"], "applied", "stdout stays JSON");
    let stderr = String::from_utf8_lossy(&out.stderr);
    support::assert_contains_all(
        &stderr,
        &[
            "warning: this change made timeline 'primary' unstable",
            "before its cause",
        ],
    );

    // Moved back: nothing new to warn about.
    let out = cli(&["events", "revert", answer["new_event_id"].as_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// An output both the command and the test can see while the command runs.
#[derive(Clone, Default)]
struct Shared(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Shared {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }

    /// Waits until the output has `n` lines (up to 5 s); answers them.
    async fn lines(&self, n: usize) -> Vec<String> {
        for _ in 0..100 {
            let lines: Vec<String> = self.text().lines().map(str::to_owned).collect();
            if lines.len() >= n {
                return lines;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        panic!("fewer than {n} lines after 5 s:\n{}", self.text());
    }
}

#[tokio::test]
async fn monitor_follow_prints_the_anomalies_then_each_change_as_it_comes() {
    let engine = engine().await;
    let ada = engine.session("ada".parse().unwrap());
    let primary = chronoscope::model::TimelineId::primary();
    let treaty = ada
        .add_event(
            &primary,
            support::new_event("Treaty", "1860-06-01T12:00:00Z", "Turin", &[]),
        )
        .await
        .unwrap();
    let party = ada
        .add_event(
            &primary,
            support::new_event(
                "Treaty celebrated",
                "1861-06-01T12:00:00Z",
                "Turin",
                &[&treaty.event_id],
            ),
        )
        .await
        .unwrap();

    // `follow` never ends by itself: it runs beside the checks, in the same task.
    let follow = |json: bool, mut sink: Shared| {
        let mut args = vec!["chronoscope", "monitor", "primary", "--follow"];
        if json {
            args.insert(1, "--json");
        }
        let cli = Cli::try_parse_from(args).unwrap();
        let service = engine.session("ada".parse().unwrap());
        async move {
            execute(
                cli.command.expect("a subcommand"),
                &service,
                cli.global.json,
                &mut sink,
            )
            .await
        }
    };
    let (json_out, text_out) = (Shared::default(), Shared::default());
    let checks = async {
        let first = json_out.lines(1).await;
        let snapshot: serde_json::Value = serde_json::from_str(&first[0]).unwrap();
        assert_eq!(snapshot["event"], "snapshot", "{snapshot}");
        assert_eq!(snapshot["report"]["status"], "stable");
        assert_eq!(text_out.lines(1).await[0], "primary: stable, no anomalies");

        ada.manipulate_event(support::manipulation(
            None,
            &party.event_id,
            support::retimed("1855-06-01T12:00:00Z"),
        ))
        .await
        .unwrap();
        let lines = json_out.lines(2).await;
        let appeared: serde_json::Value = serde_json::from_str(&lines[1]).unwrap();
        assert_eq!(appeared["event"], "appeared", "{appeared}");
        assert!(
            appeared["position"].as_u64().unwrap() > snapshot["position"].as_u64().unwrap(),
            "{appeared}"
        );
        let id = appeared["anomaly"]["anomaly_id"]
            .as_str()
            .unwrap()
            .to_owned();
        let text = text_out.lines(2).await;
        assert!(
            text[1].starts_with(&format!("+ {id} critical ")),
            "a person reads + id severity description: {}",
            text[1]
        );
    };
    tokio::select! {
        ended = follow(true, json_out.clone()) => panic!("--follow --json ended: {ended:?}"),
        ended = follow(false, text_out.clone()) => panic!("--follow ended: {ended:?}"),
        () = checks => {}
    }

    // A time range makes no sense for a stream: refused before anything runs.
    let both = Cli::try_parse_from([
        "chronoscope",
        "monitor",
        "--follow",
        "--range",
        "2026-01-01T00:00:00Z/P1D",
    ]);
    let err = both.expect_err("--follow with --range is refused");
    assert!(err.to_string().contains("--range"), "{err}");
}

/// What the binary prints with `--json` for `args` on `dir`, which must succeed.
fn binary_json(dir: &std::path::Path, args: &[&str]) -> serde_json::Value {
    let mut with_json = vec!["--json"];
    with_json.extend_from_slice(args);
    let out = with_backtraces(dir, &with_json);
    assert!(out.status.success(), "{args:?}: {out:?}");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {out:?}"))
}

/// The binary on a fresh data directory, with `RUST_BACKTRACE=1` as many developers set it.
fn with_backtraces(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_chronoscope"))
        .arg("--data-dir")
        .arg(dir)
        .args(["--seed", "demo"])
        .args(args)
        .env("RUST_BACKTRACE", "1")
        .env("NO_COLOR", "1")
        .output()
        .expect("the CLI runs")
}

/// B7: a branch's list, copied from its base when it was made, does not read "set by" whoever
/// branched it.
#[tokio::test]
async fn access_show_says_a_branchs_list_was_copied_from_its_base() {
    use chronoscope::service::{Permissions, SetAccessControlRequest};
    let fresh = support::Fresh::new().await;
    let engine = fresh.engine;
    let ada = engine.session("ada".parse().unwrap());
    let lab = ada.create_timeline(support::named("Lab")).await.unwrap().id;
    // A list set after the timeline was made (as every list set by a person is).
    fresh.clock.advance(chrono::Duration::seconds(1));
    ada.set_access_control(SetAccessControlRequest {
        timeline_id: lab.clone(),
        permissions: Some(Permissions {
            admin: vec!["ada".parse().unwrap()],
            write: vec![],
            read: vec!["bob".parse().unwrap()],
        }),
    })
    .await
    .unwrap();
    let bob = engine.session("bob".parse().unwrap()).with_admin(false);
    let branch = bob
        .create_timeline(chronoscope::service::NewTimeline {
            base_timeline_id: Some(lab.clone()),
            ..support::named("Bob's branch")
        })
        .await
        .unwrap()
        .id;
    let shown = run_cli(&bob, &["access", "show", branch.as_str()])
        .await
        .unwrap();
    assert!(
        shown.contains(&format!("(copied from {lab} when bob branched it, at ")),
        "{shown}"
    );
    assert!(!shown.contains("set by bob"), "{shown}");
    // A list set since reads as set.
    let shown = run_cli(&ada, &["access", "show", lab.as_str()])
        .await
        .unwrap();
    assert!(shown.contains("(set by ada at "), "{shown}");
}

/// A refused align does not advise leaving out a safety check it has not.
#[test]
fn a_refused_align_says_a_way_on_that_align_has() {
    let dir = tempfile::tempdir().unwrap();
    let add = |what: &str, time: &str, cause: Option<&str>| {
        let mut args = vec!["events", "add", what, "--time", time, "--location", "Lab"];
        args.extend(cause.map(|c| ["--cause", c]).iter().flatten());
        let added = binary_json(dir.path(), &args);
        added["event_id"].as_str().unwrap().to_owned()
    };
    let cause = add("cause", "1900-02-01T12:00:00Z", None);
    let first = add("first", "1900-02-01T10:00:00Z", Some(&cause));
    // Moving `first` after its cause would put this unnamed effect before it.
    add("effect", "1900-02-01T11:00:00Z", Some(&first));
    let out = with_backtraces(dir.path(), &["events", "align", &first]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.starts_with("error: Paradox detected: "), "{stderr}");
    assert!(
        stderr.contains("`events manipulate` moves an event"),
        "{stderr}"
    );
    assert!(!stderr.contains("safety-check"), "{stderr}");
}

#[test]
fn bad_input_is_one_line_without_a_backtrace_whatever_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let out = with_backtraces(dir.path(), &["events", "manipulate", "event-5678abcd"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(!stderr.contains("BACKTRACE"), "{stderr}");
    assert!(!stderr.contains("Location:"), "{stderr}");
    assert!(stderr.starts_with("error: Invalid request: "), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");

    // With --json the refusal is the problem body, for a script to parse.
    let out = with_backtraces(
        dir.path(),
        &["--json", "events", "manipulate", "event-5678abcd"],
    );
    assert!(!out.status.success());
    let problem: serde_json::Value = serde_json::from_slice(&out.stderr)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(problem["status"], 400, "{problem}");
    assert_eq!(problem["type"], "/problems/invalid-request", "{problem}");
    assert!(problem["detail"].as_str().is_some_and(|d| !d.is_empty()));
}

#[test]
fn a_window_is_refused_with_a_server_which_decides_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let remote = ["--remote", "http://127.0.0.1:9", "--token", "t"];
    let mut by_flag = remote.to_vec();
    by_flag.extend(["--window", "2 hours", "timelines", "create", "Later"]);
    let out = with_backtraces(dir.path(), &by_flag);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("--window / CHRONOSCOPE_WINDOW (2 hours)"),
        "{stderr}"
    );
    // A refusal of what was typed: one line, whatever RUST_BACKTRACE says.
    assert!(!stderr.contains("BACKTRACE"), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    let by_env = std::process::Command::new(env!("CARGO_BIN_EXE_chronoscope"))
        .arg("--data-dir")
        .arg(dir.path())
        .args(remote)
        .args(["timelines", "list"])
        .env("CHRONOSCOPE_WINDOW", "10 minutes")
        .output()
        .expect("the CLI runs");
    let stderr = String::from_utf8_lossy(&by_env.stderr);
    assert!(!by_env.status.success());
    assert!(stderr.contains("the server decides"), "{stderr}");
}

/// A server on a free port whose travellers may each send `per_second` requests a second, in
/// bursts of `burst`; its URL.
async fn rate_limited_server(per_second: f64, burst: u32) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a free port");
    let port = listener.local_addr().expect("bound").port();
    let secret = chronoscope::auth::Secret::from_bytes(support::SECRET.to_vec()).expect("secret");
    let mut config = chronoscope::server::ServerConfig::new(secret);
    config.rate_limit = chronoscope::server::RateLimit { per_second, burst };
    tokio::spawn(chronoscope::server::run(
        listener,
        config,
        engine().await,
        std::future::pending(),
    ));
    format!("http://127.0.0.1:{port}")
}

/// The real binary against `url` as ada, with `args`.
fn remote_run(url: &str, dir: &std::path::Path, args: &[&str]) -> tokio::process::Command {
    remote_run_as(&support::token("ada"), url, dir, args)
}

/// The real binary against `url` with `token`, with `args`.
fn remote_run_as(
    token: &str,
    url: &str,
    dir: &std::path::Path,
    args: &[&str],
) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_chronoscope"));
    command
        .arg("--data-dir")
        .arg(dir)
        .args(["--remote", url, "--token", token])
        .args(args)
        .env("NO_COLOR", "1")
        .env("RUST_BACKTRACE", "1");
    command
}

/// Forty parallel runs of the real binary, reads and writes, against a server allowing 2
/// requests a second: the last is served some 20 s after the first, yet each waits its turn
/// (saying so once on stderr) instead of failing, and each write is done once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_runs_wait_out_the_servers_rate_limit() {
    let url = rate_limited_server(2.0, 2).await;
    let dir = tempfile::tempdir().unwrap();
    let runs: Vec<_> = (0..40)
        .map(|i| {
            let parcel = format!("parcel {i}");
            let args = if i % 2 == 0 {
                vec!["--json", "timelines", "list"]
            } else {
                vec!["--json", "items", "register", &parcel]
            };
            remote_run(&url, dir.path(), &args).output()
        })
        .collect();
    let outputs = futures::future::join_all(runs).await;
    let mut waited = 0;
    for out in outputs {
        let out = out.expect("the CLI runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "a run failed: {stderr}");
        let notes = stderr
            .matches("asked to wait (too many requests for now, or a scan of the log within its cooldown); waiting")
            .count();
        assert!(notes <= 1, "the wait is said once per run: {stderr}");
        waited += notes;
    }
    assert!(waited > 0, "forty runs at once exceed 2 a second");
    let listed = remote_run(
        &url,
        dir.path(),
        &["--json", "items", "list", "--limit", "100"],
    )
    .output()
    .await
    .expect("the CLI runs");
    let items: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}",
            String::from_utf8_lossy(&listed.stderr)
        )
    });
    let text = items.to_string();
    for i in (1..40).step_by(2) {
        assert_eq!(
            text.matches(&format!("\"parcel {i}\"")).count(),
            1,
            "{items}"
        );
    }
}

/// A server whose `Retry-After` is beyond what a command waits is not waited for: the refusal
/// is one line saying that the command did wait, and what to do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limit_beyond_what_a_command_waits_is_said_with_what_to_do() {
    // One request per 100 s: the first passes, the next is told to come back much later.
    let url = rate_limited_server(0.01, 1).await;
    let dir = tempfile::tempdir().unwrap();
    let first = remote_run(&url, dir.path(), &["timelines", "list"])
        .output()
        .await
        .expect("the CLI runs");
    assert!(first.status.success(), "{first:?}");
    let refused = remote_run(&url, dir.path(), &["timelines", "list"])
        .output()
        .await
        .expect("the CLI runs");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.starts_with(
            "error: Too many requests: still refused after waiting as long as a command does \
             (at most 30 times and 60 s in all; the server asks for "
        ),
        "{stderr}"
    );
    assert!(
        stderr.ends_with(
            " s more): run fewer commands at once, or ask for a higher `serve --rate-limit`\n"
        ),
        "{stderr}"
    );
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
}

/// `token` without a secret signs with the data directory's, creating it the first time, and
/// says which file that is and which servers accept the token.
#[test]
fn a_token_names_the_secret_file_it_was_signed_with() {
    let dir = tempfile::tempdir().unwrap();
    let mint = || {
        std::process::Command::new(env!("CARGO_BIN_EXE_chronoscope"))
            .arg("--data-dir")
            .arg(dir.path())
            .args(["token", "--subject", "ada"])
            .env_remove("CHRONOSCOPE_JWT_SECRET")
            .env_remove("CHRONOSCOPE_JWT_SECRET_FILE")
            .output()
            .expect("the CLI runs")
    };
    let file = dir.path().join("jwt-secret");
    let first = mint();
    let stderr = String::from_utf8_lossy(&first.stderr);
    assert!(first.status.success(), "{stderr}");
    assert!(file.exists());
    assert!(
        stderr.contains(&format!("created a new token secret in {}", file.display())),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "only a server started with the data directory {} (or with --jwt-secret-file {}) \
             accepts this token",
            dir.path().display(),
            file.display()
        )),
        "{stderr}"
    );
    assert_eq!(String::from_utf8_lossy(&first.stdout).lines().count(), 1);

    let again = mint();
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(
        stderr.contains(&format!(
            "signed with the token secret in {}",
            file.display()
        )),
        "{stderr}"
    );

    // A secret given explicitly needs no note.
    let given = std::process::Command::new(env!("CARGO_BIN_EXE_chronoscope"))
        .arg("--data-dir")
        .arg(dir.path())
        .args(["token", "--subject", "ada"])
        .env(
            "CHRONOSCOPE_JWT_SECRET",
            "a secret that is long enough for HS256!",
        )
        .output()
        .expect("the CLI runs");
    assert!(given.status.success());
    assert!(given.stderr.is_empty(), "{given:?}");
}

/// A server's 401 reaches the person at the CLI as the server's sentence, not a library's name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_token_is_explained_with_what_to_do() {
    let port = support::serve_port(engine().await, None).await;
    let secret = chronoscope::auth::Secret::from_bytes(support::SECRET.to_vec()).expect("secret");
    let expired = chronoscope::auth::sign(
        &secret,
        &chronoscope::auth::Claims {
            sub: "ada".into(),
            iat: 1_699_990_000,
            exp: 1_700_000_000,
            scope: "read write".into(),
        },
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_chronoscope"))
        .arg("--data-dir")
        .arg(dir.path())
        .args(["--remote", &format!("http://127.0.0.1:{port}")])
        .args(["--token", &expired, "timelines", "list"])
        .env("NO_COLOR", "1")
        .output()
        .await
        .expect("the CLI runs");
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim_end(),
        "error: Your token was not accepted: the token expired at 2023-11-14T22:13:20Z; mint a new one with \
         `chronoscope token`"
    );
}

/// A subcommand's `--help` shows its own arguments and options first; the flags every command
/// shares follow under their own heading.
#[test]
fn help_lists_a_commands_own_options_before_the_global_ones() {
    let help = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_chronoscope"))
            .args(args)
            .arg("--help")
            .output()
            .expect("the CLI runs");
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).expect("utf-8 help")
    };
    for (args, own) in [
        (&["items", "register"][..], "<DESCRIPTION>"),
        (&["timelines", "create"][..], "--destination-time"),
    ] {
        let text = help(args);
        let at = |needle: &str| {
            text.find(needle)
                .unwrap_or_else(|| panic!("{args:?}: no {needle} in\n{text}"))
        };
        let global = at("\nGlobal options:\n");
        assert!(
            at(own) < global,
            "{args:?}: own option after the global ones\n{text}"
        );
        assert!(at("--data-dir") > global, "{args:?}\n{text}");
        assert!(at("--remote") > global, "{args:?}\n{text}");
    }
}

/// A command against a server that is not there (nothing listens on port 9).
const UNREACHABLE: &[&str] = &[
    "--remote",
    "http://127.0.0.1:9",
    "--token",
    "t",
    "timelines",
    "list",
];

/// With `--json` every failure on stderr is a problem body a script can parse: a server that
/// cannot be reached, a missing token, arguments that do not parse.
#[test]
fn with_json_every_failure_is_a_problem() {
    let dir = tempfile::tempdir().unwrap();
    let problem = |args: &[&str]| {
        let out = with_backtraces(dir.path(), args);
        assert!(!out.status.success(), "{args:?}");
        let text = String::from_utf8_lossy(&out.stderr).into_owned();
        let value: serde_json::Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {text}"));
        (value, out.status.code())
    };
    let mut with_json = vec!["--json"];
    with_json.extend_from_slice(UNREACHABLE);
    let (unreachable, code) = problem(&with_json);
    assert_eq!(unreachable["status"], 503, "{unreachable}");
    assert_eq!(unreachable["type"], "/problems/unavailable");
    assert_eq!(
        unreachable["detail"],
        "cannot reach http://127.0.0.1:9: connection refused"
    );
    assert_eq!(code, Some(1), "a failure, not the user's mistake");

    let (no_token, code) = problem(&["--json", "--remote", "http://127.0.0.1:9", "items", "list"]);
    assert_eq!(no_token["status"], 400, "{no_token}");
    assert_eq!(no_token["type"], "/problems/invalid-request");
    assert!(
        no_token["detail"]
            .as_str()
            .is_some_and(|d| d.contains("--remote needs --token")),
        "{no_token}"
    );
    assert_eq!(code, Some(2));

    let (bad_args, code) = problem(&["--json", "timelines", "bogus"]);
    assert_eq!(bad_args["status"], 400, "{bad_args}");
    assert_eq!(
        bad_args["detail"],
        "arguments: unrecognized subcommand 'bogus'"
    );
    assert_eq!(code, Some(2));

    // Without --json the missing token is one line too, not a crash report.
    let out = with_backtraces(
        dir.path(),
        &["--remote", "http://127.0.0.1:9", "items", "list"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.trim_end(),
        "error: Invalid request: token: --remote needs --token (see `chronoscope token --help`)"
    );
}

/// A server or a store that cannot be reached is not a crash: one line saying what and why,
/// exit status 1, whatever `RUST_BACKTRACE` says.
#[test]
fn what_cannot_be_reached_is_one_line_not_a_crash_report() {
    let dir = tempfile::tempdir().unwrap();
    for (args, said) in [
        (
            UNREACHABLE,
            "error: Service unavailable: cannot reach http://127.0.0.1:9: connection refused",
        ),
        (
            &["--database", "mysql://db.example/x", "timelines", "list"][..],
            "error: Service unavailable: cannot open the store mysql://db.example/x: unsupported \
             database `mysql:...`; use ",
        ),
    ] {
        let out = with_backtraces(dir.path(), args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.starts_with(said), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
    }
}

/// Settings that cannot work and input `token` refuses are the user's to change: one line
/// without a crash report whatever `RUST_BACKTRACE` says, and with `--json` a problem body,
/// exit status 2 either way.
#[test]
fn settings_that_cannot_work_are_one_line_or_one_problem() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-secret");
    let missing = missing.to_str().expect("a UTF-8 path");
    let cases: [(&[&str], &str); 5] = [
        (
            &["token", "--subject", "ada", "--scope", "read,root"],
            "Invalid request: scope: 'root' is not a scope; use read, write or admin",
        ),
        (
            &["token", "--subject", ""],
            "Invalid request: traveller: a traveller name is 1 to 128 printable characters",
        ),
        (
            &["token", "--subject", "ada", "--jwt-secret-file", missing],
            "no-such-secret",
        ),
        (
            &[
                "--remote",
                "http://127.0.0.1:9",
                "--token",
                "t",
                "--window",
                "2 hours",
                "timelines",
                "list",
            ],
            "Invalid request: window: --window / CHRONOSCOPE_WINDOW (2 hours) applies",
        ),
        (
            &["serve", "--listen", "127.0.0.1:0", "--jwt-audience", "x"],
            "--jwks-file or --jwks-url",
        ),
    ];
    for (args, says) in cases {
        let out = with_backtraces(dir.path(), args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.starts_with("error: "), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");

        let mut with_json = vec!["--json"];
        with_json.extend_from_slice(args);
        let out = with_backtraces(dir.path(), &with_json);
        let problem: serde_json::Value = serde_json::from_slice(&out.stderr).unwrap_or_else(|e| {
            panic!(
                "{args:?}: not JSON ({e}): {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
        assert_eq!(out.status.code(), Some(2), "{args:?}: {problem}");
        assert_eq!(problem["status"], 400, "{args:?}: {problem}");
        assert_eq!(problem["type"], "/problems/invalid-request", "{problem}");
        let detail = problem["detail"].as_str().unwrap_or_default();
        let says = says.trim_start_matches("Invalid request: ");
        assert!(detail.contains(says), "{args:?}: {problem}");
        assert!(out.stdout.is_empty(), "{args:?}: {out:?}");
    }
    // A token refused for its input leaves no new secret behind.
    let fresh = tempfile::tempdir().unwrap();
    let out = with_backtraces(fresh.path(), &["token", "--subject", ""]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!fresh.path().join("jwt-secret").exists());
}

#[test]
fn identity_provider_settings_that_cannot_work_stop_serve_before_it_listens() {
    let dir = tempfile::tempdir().unwrap();
    let serve = |extra: &[&str]| {
        let mut args = vec!["serve", "--listen", "127.0.0.1:0"];
        args.extend_from_slice(extra);
        let out = with_backtraces(dir.path(), &args);
        assert!(!out.status.success(), "serve {extra:?} started");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let stderr = serve(&["--jwt-audience", "chronoscope"]);
    assert!(stderr.contains("--jwks-file or --jwks-url"), "{stderr}");
    let stderr = serve(&[
        "--jwks-url",
        "ftp://id.example/jwks",
        "--jwt-audience",
        "chronoscope",
    ]);
    assert!(
        stderr.contains("not an http:// or https:// URL"),
        "{stderr}"
    );
    let missing = dir.path().join("no-such-jwks.json");
    let stderr = serve(&[
        "--jwks-file",
        missing.to_str().unwrap(),
        "--jwt-audience",
        "chronoscope",
    ]);
    assert!(stderr.contains("no-such-jwks.json"), "{stderr}");
    // A key set without an audience would make every token of the provider, whichever
    // service it was issued for, valid here with its scopes.
    let stderr = serve(&["--jwks-file", missing.to_str().unwrap()]);
    assert!(
        stderr.contains("--jwt-audience") && stderr.contains("--jwt-any-audience"),
        "{stderr}"
    );
    let stderr = serve(&["--jwks-url", "https://id.example/jwks"]);
    assert!(stderr.contains("--jwt-any-audience"), "{stderr}");
    assert!(!stderr.contains("BACKTRACE"), "{stderr}");
}

#[tokio::test]
async fn anchors_are_set_precisely_adjusted_checked_and_deleted_from_the_command_line() {
    let engine = engine().await;
    let ada = engine.session("ada".parse().unwrap());
    let set = run_cli(
        &ada,
        &[
            "anchors",
            "set",
            "2024-09-01T00:00:00.123456Z",
            "--description",
            "lab",
            "--accuracy",
            "microsecond",
            "--env",
            "temperature=20C",
        ],
    )
    .await
    .unwrap();
    support::assert_contains_all(
        &set,
        &[
            "timestamp 2024-09-01T00:00:00.123456Z",
            "environment temperature: 20C",
        ],
    );
    let id = set.split_whitespace().next().unwrap().to_owned();

    let adjusted = json(
        &ada,
        &["anchors", "adjust", &id, "--env", "temperature=22C"],
    )
    .await;
    assert_eq!(adjusted["environment"]["temperature"], "22C");
    let stability = run_cli(&ada, &["anchors", "stability", &id]).await.unwrap();
    support::assert_contains_all(&stability, &["stable", "temperature: 22C"]);

    let err = run_cli(
        &ada,
        &[
            "anchors",
            "set",
            "2024-09-01T00:00:00.123456Z",
            "--accuracy",
            "millisecond",
        ],
    )
    .await
    .unwrap_err();
    assert!(err.explain().contains("finely"), "{}", err.explain());
    let parse = Cli::try_parse_from([
        "chronoscope",
        "anchors",
        "set",
        "2024-09-01",
        "--accuracy",
        "eon",
    ]);
    assert!(parse.is_err());

    let deleted = run_cli(&ada, &["anchors", "delete", &id]).await.unwrap();
    assert_eq!(deleted, format!("deleted anchor {id}\n"));
    let active = json(&ada, &["anchors", "list", "--active"]).await;
    assert_eq!(active["items"].as_array().unwrap().len(), 0, "{active}");
}

#[test]
fn monitor_counts_one_anomaly_in_the_singular() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let moved = with_backtraces(
        dir.path(),
        &[
            "events",
            "manipulate",
            "sidereus-nuncius-published",
            "--time",
            "1600-01-01",
        ],
    );
    assert!(moved.status.success(), "{moved:?}");
    let scan = with_backtraces(dir.path(), &["monitor", "primary"]);
    let text = String::from_utf8_lossy(&scan.stdout);
    assert_eq!(text.lines().next(), Some("primary: 1 anomaly"), "{text}");
}

/// Access control from the command line (guide §5.1–5.2): an operator sets a timeline's lists
/// and restricts a traveller; the real binary, talking to a server as a traveller listed only
/// under `read`, is refused a change with a sentence naming the right, and one not listed
/// does not see the timeline at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_command_line_refuses_what_access_control_refuses() {
    let engine = engine().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a free port");
    let url = format!(
        "http://127.0.0.1:{}",
        listener.local_addr().expect("bound").port()
    );
    let secret = chronoscope::auth::Secret::from_bytes(support::SECRET.to_vec()).expect("secret");
    tokio::spawn(chronoscope::server::run(
        listener,
        chronoscope::server::ServerConfig::new(secret),
        Arc::clone(&engine),
        std::future::pending(),
    ));
    // The embedded engine's user is an operator.
    let root = engine.session("root".parse().unwrap());
    let vault = json(&root, &["timelines", "create", "Vault"]).await;
    let vault = vault["id"].as_str().unwrap().to_owned();
    let set = run_cli(
        &root,
        &["access", "set", &vault, "--read", "ada", "--admin", "root"],
    )
    .await
    .unwrap();
    assert!(set.contains("read   ada"), "{set}");
    let shown = run_cli(&root, &["access", "show", &vault]).await.unwrap();
    assert!(shown.contains("your right: admin"), "{shown}");
    let err = run_cli(&root, &["access", "set", &vault])
        .await
        .unwrap_err();
    assert!(
        err.explain().contains("--read, --write or --admin"),
        "{err:?}"
    );

    let dir = tempfile::tempdir().unwrap();
    let refused = remote_run(
        &url,
        dir.path(),
        &[
            "events",
            "add",
            "Break-in",
            "--timeline",
            &vault,
            "--time",
            "1900-01-01",
            "--location",
            "Vault",
        ],
    )
    .output()
    .await
    .expect("the CLI runs");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert!(
        stderr.contains("Access denied: you need the write right on timeline")
            && stderr.lines().count() == 1,
        "{stderr}"
    );
    let shown = remote_run(&url, dir.path(), &["access", "show", &vault])
        .output()
        .await
        .expect("the CLI runs");
    assert!(
        String::from_utf8_lossy(&shown.stdout).contains("your right: read"),
        "{shown:?}"
    );
    // bob is not listed: the timeline does not exist for him.
    let mut as_bob = tokio::process::Command::new(env!("CARGO_BIN_EXE_chronoscope"));
    as_bob
        .arg("--data-dir")
        .arg(dir.path())
        .args(["--remote", &url, "--token", &support::token("bob")])
        .args(["timelines", "show", &vault])
        .env("NO_COLOR", "1");
    let hidden = as_bob.output().await.expect("the CLI runs");
    let stderr = String::from_utf8_lossy(&hidden.stderr);
    assert!(
        !hidden.status.success() && stderr.contains(&format!("no timeline '{vault}'")),
        "{stderr}"
    );
    // A restriction, and whoami saying it.
    let said = run_cli(&root, &["access", "restrict", "ada", "read-only"])
        .await
        .unwrap();
    assert!(said.contains("ada is restricted to read_only"), "{said}");
    let me = remote_run(&url, dir.path(), &["whoami"])
        .output()
        .await
        .expect("the CLI runs");
    assert!(
        String::from_utf8_lossy(&me.stdout).contains("restricted to read_only by root"),
        "{me:?}"
    );
    let paused = remote_run(&url, dir.path(), &["pause"])
        .output()
        .await
        .expect("the CLI runs");
    assert!(
        String::from_utf8_lossy(&paused.stderr).contains("Travel restricted"),
        "{paused:?}"
    );
}

/// A `read` token, through the real binary: `whoami` and `access show` say the token allows
/// reading only (the right capped at read), and a change is refused in words, without HTTP.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_token_is_said_by_whoami_and_access_show_and_refused_in_words() {
    let port = support::serve_port(engine().await, None).await;
    let url = format!("http://127.0.0.1:{port}");
    let dir = tempfile::tempdir().unwrap();
    let tom = support::token_with("tom", "read");
    let run = |args: &'static [&'static str]| {
        let mut command = remote_run_as(&tom, &url, dir.path(), args);
        async move { command.output().await.expect("the CLI runs") }
    };
    let me = run(&["whoami"]).await;
    let said = String::from_utf8_lossy(&me.stdout);
    assert!(
        said.starts_with("you are tom (your token allows reading only)\n"),
        "{said}"
    );
    let me = run(&["--json", "whoami"]).await;
    let me: serde_json::Value = serde_json::from_slice(&me.stdout).unwrap();
    assert_eq!(me["read_only_token"], true, "{me}");

    let shown = run(&["access", "show", "primary"]).await;
    let said = String::from_utf8_lossy(&shown.stdout);
    assert!(
        said.contains("your right: read (your token allows reading only)"),
        "{said}"
    );
    // Nobody created primary: its creator is not said to administer it.
    assert!(said.contains("only operators administer it"), "{said}");
    let shown = run(&["--json", "access", "show", "primary"]).await;
    let shown: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(shown["your_right"], "read", "{shown}");

    let refused = run(&["timelines", "create", "Tom's own"]).await;
    let said = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{said}");
    assert!(said.contains("your token only allows reading"), "{said}");
    assert!(!said.contains("/v1/"), "no HTTP words: {said}");
    assert!(
        said.starts_with("error: Not allowed: "),
        "said in words, not as HTTP's 'Forbidden': {said}"
    );
    assert!(said.contains("this makes a change"), "{said}");
    // A check writes nothing: it is not said to make a change, though it needs 'write' too.
    let refused = run(&["check", "--event", "apollo-11-launch@1969-07-01"]).await;
    let said = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{said}");
    assert!(said.contains("checks a change before it is made"), "{said}");
    assert!(!said.contains("makes a change"), "{said}");
}

/// `check` and `stability` exit 4 when the timeline is or would be unstable, 0 when it is
/// stable, and `--help` says what each exit status means.
#[test]
fn an_unstable_timeline_has_its_own_exit_status() {
    let dir = tempfile::tempdir().unwrap();
    let loop_ = with_backtraces(dir.path(), &["stability", "tml_tesla_bootstrap"]);
    let said = String::from_utf8_lossy(&loop_.stdout);
    assert!(said.contains("UNSTABLE"), "{said}{loop_:?}");
    assert_eq!(loop_.status.code(), Some(4), "{said}");
    let created = with_backtraces(dir.path(), &["--json", "timelines", "create", "Calm"]);
    let created: serde_json::Value = serde_json::from_slice(&created.stdout).unwrap();
    let calm = created["id"].as_str().unwrap();
    let stable = with_backtraces(dir.path(), &["stability", calm]);
    assert_eq!(stable.status.code(), Some(0), "{stable:?}");
    let checked = with_backtraces(dir.path(), &["check", "tml_tesla_bootstrap"]);
    assert_eq!(checked.status.code(), Some(4), "{checked:?}");
    let help = with_backtraces(dir.path(), &["--help"]);
    let help = String::from_utf8_lossy(&help.stdout);
    for said in [
        "3 `detect-tampering` found tampering",
        "4 `check` or `stability`",
    ] {
        assert!(help.contains(said), "{help}");
    }
}

/// N19: `holds` says its answer in its exit status too: 0 when the event holds, 5 when its
/// lineage was altered, 6 when the timeline has no such event (it exited 0 for all three).
#[test]
fn holds_has_an_exit_status_for_each_answer() {
    let dir = tempfile::tempdir().unwrap();
    let json = |args: &[&str]| binary_json(dir.path(), args);
    let added = json(&[
        "events",
        "add",
        "Bridge opens",
        "--time",
        "2020-05-01T12:00:00Z",
        "--location",
        "Bern",
    ]);
    let bridge = added["event_id"].as_str().unwrap().to_owned();
    let holds = with_backtraces(dir.path(), &["holds", &bridge]);
    let said = String::from_utf8_lossy(&holds.stdout);
    assert_eq!(holds.status.code(), Some(0), "{said}{holds:?}");
    assert!(said.starts_with("holds:"), "{said}");

    json(&[
        "events",
        "manipulate",
        &bridge,
        "--description",
        "Bridge closes",
    ]);
    let altered = with_backtraces(dir.path(), &["holds", &bridge]);
    let said = String::from_utf8_lossy(&altered.stdout);
    assert_eq!(altered.status.code(), Some(5), "{said}{altered:?}");
    assert!(said.starts_with("altered:"), "{said}");

    let missing = with_backtraces(dir.path(), &["holds", "evt_nowhere"]);
    let said = String::from_utf8_lossy(&missing.stdout);
    assert_eq!(missing.status.code(), Some(6), "{said}{missing:?}");
    assert!(said.starts_with("missing:"), "{said}");

    let help = with_backtraces(dir.path(), &["--help"]);
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("5 `holds`: the event was altered"), "{help}");
}

/// `travel` carries what you carry unless told otherwise, as `jump`, `return` and `switch` do
/// (and the dashboard's wizard): one rule on every face; `--travel-light` leaves it all.
#[test]
fn travel_carries_everything_you_carry_unless_told_to_travel_light() {
    let dir = tempfile::tempdir().unwrap();
    let json = |args: &[&str]| binary_json(dir.path(), args);
    let compass = json(&["items", "register", "compass"]);
    let compass = compass["id"].as_str().unwrap().to_owned();
    let there = json(&["timelines", "create", "There"]);
    let there = there["id"].as_str().unwrap().to_owned();
    let went = json(&["travel", &there]);
    assert_eq!(
        went["items_transported"],
        serde_json::json!([compass]),
        "{went}"
    );
    let back = json(&["travel", "primary", "--travel-light"]);
    assert_eq!(back["items_transported"], serde_json::json!([]), "{back}");
    // The text list says each journey's kind, as the JSON does.
    json(&["fast-forward", "10m"]);
    let listed = with_backtraces(dir.path(), &["journeys"]);
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.lines().next().unwrap_or_default().contains("KIND"),
        "{listed}"
    );
    support::assert_contains_all(&listed, &[" fast_forward ", " travel "]);
}

/// An anchor set twice is refused in words that say what exists and what to do, with no
/// HTTP path; `whoami` says a paused clock, to the second.
#[test]
fn a_second_identical_anchor_is_refused_in_words_and_whoami_says_paused() {
    let dir = tempfile::tempdir().unwrap();
    let set = [
        "anchors",
        "set",
        "2026-11-22T10:00:00Z",
        "--description",
        "home",
    ];
    let first = with_backtraces(dir.path(), &set);
    assert!(first.status.success(), "{first:?}");
    let again = with_backtraces(dir.path(), &set);
    let said = String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(2), "{said}");
    assert!(
        said.starts_with("error: You already have an active anchor at this time"),
        "{said}"
    );
    assert!(said.contains("(anc_") && !said.contains("/v1/"), "{said}");

    let paused = with_backtraces(dir.path(), &["pause"]);
    assert!(paused.status.success(), "{paused:?}");
    // Text shows wall-clock times to the second, like whoami (nanoseconds are noise).
    let nanos = regex::Regex::new(r"\d\d:\d\d:\d\d\.\d").unwrap();
    let said = String::from_utf8_lossy(&paused.stdout);
    assert!(said.contains('Z') && !nanos.is_match(&said), "{said}");
    assert!(
        with_backtraces(dir.path(), &["items", "register", "compass"])
            .status
            .success()
    );
    let items = with_backtraces(dir.path(), &["items", "list"]);
    let said = String::from_utf8_lossy(&items.stdout);
    assert!(said.contains("compass") && !nanos.is_match(&said), "{said}");
    let me = with_backtraces(dir.path(), &["whoami"]);
    let said = String::from_utf8_lossy(&me.stdout);
    assert!(said.contains(", your clock paused"), "{said}");
    let at = said.lines().nth(1).unwrap_or_default();
    assert!(
        at.ends_with("Z, your clock paused (resume lets it run)"),
        "{said}"
    );
    assert!(!at.contains('.'), "seconds, not nanoseconds: {said}");
}

/// A branch whose only change is a stored data entry: the text diff and merge say the entry
/// (so a reader does not conclude there is nothing to merge); `merges list` is oldest first.
#[test]
fn diff_and_merge_say_the_data_entries_and_merges_are_listed_oldest_first() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let out = with_backtraces(dir.path(), args);
        assert!(out.status.success(), "{args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let created: serde_json::Value =
        serde_json::from_str(&run(&["--json", "timelines", "create", "Notes"])).unwrap();
    let notes = created["id"].as_str().unwrap().to_owned();
    let stored: serde_json::Value = serde_json::from_str(&run(&[
        "--json",
        "data",
        "store",
        &notes,
        "2026-11-22",
        r#"{"note": "kept"}"#,
    ]))
    .unwrap();
    let entry = stored["data_id"]
        .as_str()
        .or_else(|| stored["id"].as_str())
        .unwrap_or_else(|| panic!("an id: {stored}"))
        .to_owned();
    // Text that is not JSON: said where, in words, with the shape wanted (not serde's
    // "expected ident"), and nothing stored.
    let bad = with_backtraces(
        dir.path(),
        &["data", "store", &notes, "2026-11-22", "not json"],
    );
    let said = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(2), "{said}");
    assert!(said.contains("line 1, column 2"), "{said}");
    assert!(said.contains("give a JSON object"), "{said}");
    assert!(!said.contains("expected ident"), "{said}");
    let diff = run(&["timelines", "diff", &notes, "primary"]);
    assert!(
        diff.contains(&format!("1 data entry to copy: {entry}")),
        "{diff}"
    );
    let merged = run(&["timelines", "merge", &notes, "primary"]);
    assert!(
        merged.contains(&format!("1 data entry copied: {entry}")),
        "{merged}"
    );

    let listed: serde_json::Value =
        serde_json::from_str(&run(&["--json", "merges", "list", "--limit", "100"])).unwrap();
    let times: Vec<&str> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["at"].as_str().unwrap())
        .collect();
    assert!(times.len() >= 2, "{listed}");
    let parsed: Vec<_> = times
        .iter()
        .map(|t| parse_instant("at", t).unwrap())
        .collect();
    assert!(parsed.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
}

/// F10: `timelines merge` without `--strategy` leaves a conflict for review, as the dashboard's
/// wizard and the HTTP interface do by default (it kept the destination's outcome); `access log
/// --range` takes one date for that whole day and a duration alone for the last stretch of time.
#[test]
fn merge_defaults_to_manual_review_and_the_access_log_takes_a_day_or_the_last_hour() {
    let dir = tempfile::tempdir().unwrap();
    let json = |args: &[&str]| binary_json(dir.path(), args);
    let launch = json(&[
        "events",
        "add",
        "Launch",
        "--time",
        "2025-03-01T12:00:00Z",
        "--location",
        "Cape Canaveral",
    ]);
    let launch = launch["event_id"].as_str().unwrap().to_owned();
    let branch = json(&["timelines", "create", "Delayed"]);
    let branch = branch["id"].as_str().unwrap().to_owned();
    for (timeline, time) in [
        (branch.as_str(), "2025-03-05T12:00:00Z"),
        ("primary", "2025-03-09T12:00:00Z"),
    ] {
        json(&[
            "events",
            "manipulate",
            &launch,
            "--timeline",
            timeline,
            "--time",
            time,
        ]);
    }
    let merged = json(&["timelines", "merge", &branch, "primary"]);
    assert_eq!(merged["status"], "pending_review", "{merged}");
    let help = with_backtraces(dir.path(), &["timelines", "merge", "--help"]);
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("[default: manual-review]"), "{help}");

    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    for range in [today.as_str(), "PT1H"] {
        let log = json(&["access", "log", "primary", "--range", range]);
        let entries = log["logs"].as_array().unwrap_or_else(|| panic!("{log}"));
        assert!(
            !entries.is_empty(),
            "{range}: the writes just made are in it: {log}"
        );
    }
}

/// F9: a manipulation's answer names the lineage the new event stands for (what a person
/// wrote the first time, `apollo-11-launch`), then the version it replaced; it named only the
/// previous version.
#[test]
fn a_manipulation_names_the_lineage_it_stands_for_then_the_version_it_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let out = with_backtraces(dir.path(), args);
        assert!(out.status.success(), "{args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let first: serde_json::Value = serde_json::from_str(&run(&[
        "--json",
        "events",
        "manipulate",
        "apollo-11-launch",
        "--time",
        "1969-07-17T13:32:00Z",
    ]))
    .unwrap();
    let first = first["new_event_id"].as_str().unwrap().to_owned();
    let second = run(&[
        "events",
        "manipulate",
        &first,
        "--time",
        "1969-07-18T13:32:00Z",
    ]);
    let head = second.lines().next().unwrap_or_default();
    assert!(
        head.contains(" now stands for apollo-11-launch in primary"),
        "{second}"
    );
    assert!(head.contains(&format!("(replacing {first})")), "{second}");
}

/// B4, through the real binary against a server: bob's 409 (a first list that would leave him
/// out of `admin`) is in his timeline's access log; tom's scope refusal of `events isolate …
/// --timeline LAB` (the timeline named in the body) is filed under LAB, not service-wide; and
/// tom's refused `timelines create`, which named no timeline, is not repeated in LAB's log:
/// operators see it apart, with `--service-wide`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_are_logged_under_the_timeline_they_named_and_service_wide_ones_apart() {
    let port = support::serve_port(engine().await, None).await;
    let url = format!("http://127.0.0.1:{port}");
    let dir = tempfile::tempdir().unwrap();
    let as_ = |token: &str, args: &[&str]| {
        let mut command = remote_run_as(token, &url, dir.path(), args);
        async move { command.output().await.expect("the CLI runs") }
    };
    let (bob, tom) = (support::token("bob"), support::token_with("tom", "read"));
    let root = support::token_with("root", "read write admin");

    let lab = as_(&bob, &["--json", "timelines", "create", "Bob lab"]).await;
    let lab: serde_json::Value = serde_json::from_slice(&lab.stdout).unwrap();
    let lab = lab["id"].as_str().unwrap().to_owned();
    let spark = as_(
        &bob,
        &[
            "--json",
            "events",
            "add",
            "Spark",
            "--timeline",
            &lab,
            "--time",
            "1900-01-01",
            "--location",
            "Lab",
        ],
    )
    .await;
    let spark: serde_json::Value = serde_json::from_slice(&spark.stdout).unwrap();
    let spark = spark["event_id"].as_str().unwrap().to_owned();

    let refused = as_(&bob, &["access", "set", &lab, "--read", "tom"]).await;
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    let refused = as_(&tom, &["events", "isolate", &spark, "--timeline", &lab]).await;
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    let refused = as_(&tom, &["timelines", "create", "Tom lab"]).await;
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    // Refusals are flushed within a second.
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;

    let logged = |args: &'static [&'static str]| {
        let lab = lab.clone();
        let root = root.clone();
        let as_ = &as_;
        async move {
            let mut all = vec!["--json", "access", "log", lab.as_str()];
            all.extend_from_slice(args);
            let out = as_(&root, &all).await;
            assert!(out.status.success(), "{out:?}");
            let log: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            log["logs"].as_array().cloned().unwrap_or_default()
        }
    };
    let refusal = |entries: &[serde_json::Value], user: &str, operation: &str, scope: &str| {
        entries.iter().any(|e| {
            e["user_id"] == user
                && e["operation"]
                    .as_str()
                    .is_some_and(|o| o.contains(operation))
                && e["outcome"] == "refused"
                && e["scope"] == scope
        })
    };
    let own = logged(&[]).await;
    assert!(
        refusal(&own, "bob", "set_access_control", "timeline"),
        "bob's 409: {own:#?}"
    );
    assert!(
        refusal(&own, "tom", "isolate_event", "timeline"),
        "tom's isolate, filed under the timeline it named: {own:#?}"
    );
    assert!(
        own.iter().all(|e| e["scope"] == "timeline"),
        "no service-wide entry repeated in the timeline's log: {own:#?}"
    );
    let with_service = logged(&["--service-wide"]).await;
    assert!(
        refusal(&with_service, "tom", "create_timeline", "service"),
        "service-wide, apart and on request: {with_service:#?}"
    );
}

/// F6: one rule for what a journey carries, on every command: no `--item` → everything you
/// carry; `--item` → only those; `--travel-light` → nothing. `travel --to-time` took every
/// item whatever `--item` said, and `jump` / `return` had no way to travel light; each
/// `--help` says the rule in the same words.
#[test]
fn every_journey_carries_what_you_carry_unless_items_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let json = |args: &[&str]| binary_json(dir.path(), args);
    let id = |v: serde_json::Value, field: &str| v[field].as_str().unwrap().to_owned();
    let compass = id(json(&["items", "register", "compass"]), "id");
    id(json(&["items", "register", "map"]), "id");
    let home = id(
        json(&[
            "anchors",
            "set",
            "2026-01-01T00:00:00Z",
            "--description",
            "home",
        ]),
        "id",
    );
    let went = json(&["travel", "--to-time", "1900-01-01", "--item", &compass]);
    assert_eq!(
        went["items_transported"],
        serde_json::json!([compass]),
        "only the item named: {went}"
    );
    let jumped = json(&["jump", "1901-01-01", "--travel-light"]);
    assert_eq!(
        jumped["items_transported"],
        serde_json::json!([]),
        "{jumped}"
    );
    let back = json(&["return", &home, "--travel-light"]);
    assert_eq!(back["items_transported"], serde_json::json!([]), "{back}");

    let rule = "without --item, everything you carry comes along; with it, only the items named";
    for command in ["travel", "jump", "return"] {
        let help = with_backtraces(dir.path(), &[command, "--help"]);
        let help = String::from_utf8_lossy(&help.stdout)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        assert!(help.contains(rule), "{command}: {help}");
        assert!(help.contains("--travel-light"), "{command}: {help}");
    }
    for command in ["fast-forward", "rewind", "switch"] {
        let help = with_backtraces(dir.path(), &[command, "--help"]);
        let help = String::from_utf8_lossy(&help.stdout);
        assert!(
            help.contains("everything you carry comes along"),
            "{command}: {help}"
        );
    }
}

/// F4 on the command line: isolating the demo's bootstrap loop lists what it no longer
/// reports and, in the same words as the dashboard, what it leaves: the loop's event that comes
/// before its cause, which no move can put in order.
#[test]
fn isolating_the_bootstrap_loop_says_what_is_still_reported_inside_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = with_backtraces(
        dir.path(),
        &[
            "events",
            "isolate",
            "bootstrap-blueprint-delivered",
            "--timeline",
            "tml_tesla_bootstrap",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("  no longer reported: "), "{said}");
    let left = said
        .lines()
        .find(|l| l.starts_with("  still reported, inside the isolation: "))
        .unwrap_or_else(|| panic!("{said}"));
    assert!(
        left.contains("'A traveller hands the newly arrived Tesla")
            && left.contains("happens before its cause"),
        "{said}"
    );
    assert!(
        said.contains("no move puts a loop in order, so it stays while the loop does"),
        "{said}"
    );
}

/// F8: a timeline's isolations are listed by `timelines show`, with the command that lifts one,
/// and are gone from it once lifted.
#[test]
fn timelines_show_lists_the_isolations_in_force_and_how_to_lift_one() {
    let dir = tempfile::tempdir().unwrap();
    let show = || {
        let out = with_backtraces(dir.path(), &["timelines", "show", "tml_tesla_bootstrap"]);
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert!(!show().contains("isolations:"), "{}", show());
    let made = with_backtraces(
        dir.path(),
        &[
            "--json",
            "events",
            "isolate",
            "bootstrap-blueprint-delivered",
            "--timeline",
            "tml_tesla_bootstrap",
        ],
    );
    assert!(made.status.success(), "{made:?}");
    let made: serde_json::Value = serde_json::from_slice(&made.stdout).unwrap();
    let id = made["isolation_id"].as_str().unwrap().to_owned();
    let shown = show();
    assert!(
        shown.contains(&format!(
            "  isolations:  {id} (`chronoscope events lift ID` lifts one)"
        )),
        "{shown}"
    );
    let lifted = with_backtraces(dir.path(), &["events", "lift", &id]);
    assert!(lifted.status.success(), "{lifted:?}");
    assert!(!show().contains("isolations:"), "{}", show());
}

#[tokio::test]
async fn deleting_a_timeline_names_your_anchors_in_it_that_can_no_longer_be_returned_to() {
    let engine = engine().await;
    let ada = engine.session("ada".parse().unwrap());
    let created = json(&ada, &["timelines", "create", "Anchor test 2"]).await;
    let tl = created["id"].as_str().unwrap().to_owned();
    run_cli(&ada, &["switch", &tl]).await.unwrap();
    let anchor = json(
        &ada,
        &[
            "anchors",
            "set",
            "2026-11-22T10:00:00Z",
            "--description",
            "in branch 2",
        ],
    )
    .await;
    let anchor = anchor["id"].as_str().unwrap().to_owned();
    run_cli(&ada, &["switch", "primary"]).await.unwrap();
    let text = run_cli(&ada, &["timelines", "delete", &tl]).await.unwrap();
    assert!(text.contains(&format!("deleted timeline {tl}")), "{text}");
    assert!(
        text.contains(&format!(
            "your active anchor in it can no longer be returned to: 'in branch 2' at \
             2026-11-22 10:00:00 ({anchor})"
        )),
        "{text}"
    );
    // N8: the list no longer calls it active, and says why.
    let listed = run_cli(&ada, &["anchors", "list"]).await.unwrap();
    let row = listed
        .lines()
        .find(|l| l.starts_with(&anchor))
        .unwrap_or_else(|| panic!("{anchor} is listed: {listed}"));
    assert!(row.contains("dead") && !row.contains("active"), "{listed}");
    assert!(
        listed.contains("dead: its timeline is gone (deleted, or hidden from you)"),
        "{listed}"
    );

    // --json lists them by id; a timeline without your anchors names none.
    let other = json(&ada, &["timelines", "create", "Other"]).await;
    let other = other["id"].as_str().unwrap().to_owned();
    let deleted = json(&ada, &["timelines", "delete", &other]).await;
    assert_eq!(deleted["stranded_anchors"], serde_json::json!([]));
}

/// A branch of primary and primary both moved `launch` (a lineage they conflict on), merged
/// into primary with manual review: the pending merge's id.
async fn conflict_waiting_for_review(ada: &dyn TimelineService) -> (String, String) {
    let launch = json(
        ada,
        &[
            "events",
            "add",
            "Launch",
            "--time",
            "2025-03-01T12:00:00Z",
            "--location",
            "Cape Canaveral",
        ],
    )
    .await;
    let launch = launch["event_id"].as_str().unwrap().to_owned();
    let branch = json(ada, &["timelines", "create", "Delayed"]).await;
    let branch = branch["id"].as_str().unwrap().to_owned();
    for (timeline, time) in [
        (branch.as_str(), "2025-03-05T12:00:00Z"),
        ("primary", "2025-03-09T12:00:00Z"),
    ] {
        run_cli(
            ada,
            &[
                "events",
                "manipulate",
                &launch,
                "--timeline",
                timeline,
                "--time",
                time,
            ],
        )
        .await
        .unwrap();
    }
    let merged = json(
        ada,
        &[
            "timelines",
            "merge",
            &branch,
            "primary",
            "--strategy",
            "manual-review",
        ],
    )
    .await;
    let merge = merged["merge_id"].as_str().unwrap().to_owned();
    (launch, merge)
}

#[tokio::test]
async fn the_second_to_resolve_a_conflict_is_told_who_resolved_it_and_when() {
    let engine = engine().await;
    let ada = engine.session("ada".parse().unwrap());
    let bob = engine.session("bob".parse().unwrap());
    let (launch, merge) = conflict_waiting_for_review(&ada).await;
    let done = run_cli(&ada, &["merges", "resolve", &launch, "keep-source"])
        .await
        .unwrap();
    assert!(done.contains("merged"), "{done}");
    assert!(
        done.contains(&format!("completed by ada at {}", support::START)),
        "{done}"
    );
    let refused = run_cli(&bob, &["merges", "resolve", &launch, "keep-destination"])
        .await
        .expect_err("the conflict is resolved already");
    let said = refused.explain();
    assert!(
        said.contains(&format!(
            "the conflict on event '{launch}' was already resolved by ada at {}",
            support::START
        )),
        "{said}"
    );
    assert!(
        said.contains(&format!("merge '{merge}' into 'primary' is complete")),
        "{said}"
    );
    assert!(!said.contains("Unknown reference"), "{said}");
}

#[tokio::test]
async fn align_without_a_timeline_works_where_you_are_as_isolate_does() {
    let engine = engine().await;
    let ada = engine.session("ada".parse().unwrap());
    let side = ada
        .create_timeline(support::named("Side"))
        .await
        .unwrap()
        .id;
    run_cli(&ada, &["switch", side.as_str()]).await.unwrap();
    let add = |what: &'static str, time: &'static str, cause: Option<String>| {
        let (ada, side) = (&ada, side.as_str());
        async move {
            let mut args = vec!["events", "add", what, "--time", time, "--location", "Lab"];
            args.extend(["--timeline", side]);
            if let Some(cause) = &cause {
                args.extend(["--cause", cause.as_str()]);
            }
            let added = json(ada, &args).await;
            added["event_id"].as_str().unwrap().to_owned()
        }
    };
    let cause = add("Spark", "2025-03-01T12:00:00Z", None).await;
    let effect = add("Fire", "2025-03-01T13:00:00Z", Some(cause.clone())).await;
    // The cause moves after its effect: the effect is out of order, in Side only.
    run_cli(
        &ada,
        &[
            "events",
            "manipulate",
            &cause,
            "--time",
            "2025-03-01T14:00:00Z",
        ],
    )
    .await
    .unwrap();
    let aligned = json(&ada, &["events", "align", &effect]).await;
    assert_eq!(aligned["timeline_id"], side.as_str(), "{aligned}");
    assert_eq!(aligned["status"], "aligned", "{aligned}");
    assert_eq!(
        aligned["moves"][0]["to"], "2025-03-01T14:00:01Z",
        "{aligned}"
    );
}

#[tokio::test]
async fn a_superseded_event_named_as_a_cause_or_aligned_says_what_stands_for_it() {
    let engine = engine().await;
    let ada = engine.session("ada".parse().unwrap());
    let launch = json(
        &ada,
        &[
            "events",
            "add",
            "Launch",
            "--time",
            "2025-03-01T12:00:00Z",
            "--location",
            "Cape Canaveral",
        ],
    )
    .await;
    let launch = launch["event_id"].as_str().unwrap().to_owned();
    let moved = json(
        &ada,
        &[
            "events",
            "manipulate",
            &launch,
            "--time",
            "2025-03-02T12:00:00Z",
        ],
    )
    .await;
    let current = moved["new_event_id"]
        .as_str()
        .or_else(|| moved["event_id"].as_str())
        .unwrap_or_else(|| panic!("the new event: {moved}"))
        .to_owned();
    assert_ne!(current, launch);

    let refused = run_cli(
        &ada,
        &[
            "events",
            "add",
            "Deploy",
            "--time",
            "2025-03-03T12:00:00Z",
            "--location",
            "Orbit",
            "--cause",
            &launch,
        ],
    )
    .await
    .expect_err("an old version is not a cause");
    let said = refused.explain();
    assert!(
        said.contains(&format!(
            "event '{launch}' was superseded by '{current}'; use the current event instead"
        )),
        "{said}"
    );
    assert!(!said.contains("Unknown reference"), "{said}");

    let aligned = run_cli(&ada, &["events", "align", &launch]).await.unwrap();
    assert!(
        aligned.contains(&format!(
            "{launch} was superseded by {current}: the current event was aligned instead"
        )),
        "{aligned}"
    );
    let aligned = json(&ada, &["events", "align", &launch]).await;
    assert_eq!(
        aligned["superseded"][0]["current_event_id"],
        current.as_str()
    );
}

#[tokio::test]
async fn an_anchors_environment_is_typed_listed_and_cleared_from_the_command_line() {
    let engine = engine().await;
    let ada = engine.session("ada".parse().unwrap());
    let set = json(
        &ada,
        &[
            "anchors",
            "set",
            "2024-09-01T00:00:00Z",
            "--description",
            "lab",
            "--env",
            "temperature=20",
            "--env",
            "sealed=true",
        ],
    )
    .await;
    let id = set["id"].as_str().unwrap().to_owned();
    assert_eq!(
        set["environment"]["sealed"],
        serde_json::json!(true),
        "{set}"
    );
    assert_eq!(
        set["environment"]["temperature"],
        serde_json::json!(20),
        "{set}"
    );

    let listed = json(&ada, &["anchors", "list"]).await;
    assert_eq!(
        listed["items"][0]["environment"]["sealed"],
        serde_json::json!(true),
        "{listed}"
    );

    let cleared = json(&ada, &["anchors", "adjust", &id, "--clear-env"]).await;
    let left = cleared["environment"].as_object().map_or(0, |m| m.len());
    assert_eq!(left, 0, "{cleared}");
    let listed = json(&ada, &["anchors", "list", "--active"]).await;
    let left = listed["items"][0]["environment"]
        .as_object()
        .map_or(0, |m| m.len());
    assert_eq!(left, 0, "{listed}");
    // One or the other: an adjustment says what the environment becomes.
    assert!(Cli::try_parse_from(["chronoscope", "anchors", "adjust", &id]).is_err());
}

#[tokio::test]
async fn levels_strategies_and_check_times_are_taken_as_the_readme_and_server_write_them() {
    let engine = engine().await;
    let root = engine.session("root".parse().unwrap());
    for level in [
        "no_access",
        "read_only",
        "limited_access",
        "no-access",
        "read-only",
    ] {
        let text = run_cli(&root, &["access", "restrict", "tom", level])
            .await
            .unwrap_or_else(|e| panic!("{level}: {}", e.explain()));
        assert!(
            text.contains(&format!("restricted to {}", level.replace('-', "_"))),
            "{level}: {text}"
        );
    }
    for strategy in ["manual_review", "source_overwrite", "destination_preserve"] {
        let parsed = Cli::try_parse_from([
            "chronoscope",
            "timelines",
            "merge",
            "a",
            "primary",
            "--strategy",
            strategy,
        ]);
        assert!(parsed.is_ok(), "{strategy}: {:?}", parsed.err());
    }

    let ada = engine.session("ada".parse().unwrap());
    for at in ["1969-07-01", "1889-03-10 23:50", "1889-03-10T23:50:00Z"] {
        let event = format!("Retrieve the blueprint@{at}");
        let checked = run_cli(&ada, &["check", "primary", "--event", &event]).await;
        assert!(
            checked.is_ok(),
            "{at}: {}",
            checked.err().map(|e| e.explain()).unwrap_or_default()
        );
    }
    let refused = run_cli(&ada, &["check", "primary", "--event", "x@not-a-time"])
        .await
        .expect_err("not a time");
    assert!(
        refused.explain().contains("not-a-time"),
        "{}",
        refused.explain()
    );
}

#[tokio::test]
async fn merges_show_credits_who_completed_a_reviewed_merge_and_when() {
    let fresh = support::Fresh::new().await;
    let warp = fresh.engine.session("warp-demo".parse().unwrap());
    let traveller = fresh.engine.session("traveller".parse().unwrap());
    let (launch, merge) = conflict_waiting_for_review(&warp).await;
    fresh.clock.advance(chrono::Duration::minutes(30));
    run_cli(&traveller, &["merges", "resolve", &launch, "keep-source"])
        .await
        .unwrap();
    let shown = run_cli(&warp, &["merges", "show", &merge]).await.unwrap();
    assert!(shown.contains(&format!("{merge}  merged: ")), "{shown}");
    support::assert_contains_all(
        &shown,
        &[
            "completed by traveller at 2026-11-22T10:30:00Z",
            "left for review by warp-demo at 2026-11-22T10:00:00Z",
            "keep_source by traveller",
        ],
    );
    let json = json(&warp, &["merges", "show", &merge]).await;
    assert_eq!(json["completed_by"], "traveller");
    assert_eq!(json["completed_at"], "2026-11-22T10:30:00Z");
}

/// A stream's snapshot is one page: `events monitor --follow` reads the rest of the matching
/// events through `monitor-events` before it prints, so a person following sees every event
/// (here with a page of one), then each change.
#[tokio::test]
async fn events_monitor_follow_prints_every_matching_event_though_a_snapshot_is_a_page() {
    let engine = engine().await;
    let ada = engine.session("ada".parse().unwrap());
    let primary = chronoscope::model::TimelineId::primary();
    let turin = |description: &str, time: &str| support::new_event(description, time, "Turin", &[]);
    for (description, time) in [
        ("Treaty", "1860-06-01T12:00:00Z"),
        ("Treaty celebrated", "1861-06-01T12:00:00Z"),
        ("Treaty forgotten", "1862-06-01T12:00:00Z"),
    ] {
        ada.add_event(&primary, turin(description, time))
            .await
            .unwrap();
    }
    let cli = Cli::try_parse_from([
        "chronoscope",
        "--json",
        "events",
        "monitor",
        "--location",
        "turin",
        "--limit",
        "1",
        "--follow",
    ])
    .unwrap();
    let out = Shared::default();
    let service = engine.session("ada".parse().unwrap());
    let mut sink = out.clone();
    let follow = execute(
        cli.command.expect("a subcommand"),
        &service,
        cli.global.json,
        &mut sink,
    );
    let checks = async {
        let first: serde_json::Value = serde_json::from_str(&out.lines(1).await[0]).unwrap();
        let described: Vec<_> = first["change"]["events"]
            .as_array()
            .unwrap_or_else(|| panic!("a snapshot: {first}"))
            .iter()
            .map(|e| e["description"].as_str().unwrap_or_default().to_owned())
            .collect();
        assert_eq!(
            described,
            ["Treaty", "Treaty celebrated", "Treaty forgotten"],
            "{first}"
        );
        assert!(first["change"].get("next_cursor").is_none(), "{first}");
        ada.add_event(&primary, turin("Treaty remembered", "1863-06-01T12:00:00Z"))
            .await
            .unwrap();
        let changed: serde_json::Value = serde_json::from_str(&out.lines(2).await[1]).unwrap();
        assert_eq!(changed["change"]["kind"], "changed", "{changed}");
        assert_eq!(
            changed["change"]["event"]["description"],
            "Treaty remembered"
        );
    };
    tokio::select! {
        ended = follow => panic!("--follow ended: {ended:?}"),
        () = checks => {}
    }
}

/// `timelines list` counts each timeline's open anomalies, as the dashboard's ⚠ column does:
/// the demo's bootstrap loop is among them.
#[tokio::test]
async fn timelines_list_counts_each_timelines_anomalies() {
    use chronoscope::engine::{EngineConfig, ManualClock, Seed};
    use chronoscope::service::PageRequest;
    let clock = Arc::new(ManualClock::new(
        parse_instant("now", "2026-11-22T10:00:00Z").unwrap(),
    ));
    let engine = Engine::open(
        Arc::new(chronoscope::store::MemoryStore::new()),
        clock,
        EngineConfig::default(),
        Seed::Demo,
    )
    .await
    .expect("the demo world loads");
    let ada = engine.session("ada".parse().unwrap());
    // The counts are worked out in the background after loading: wait for them.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let listed = loop {
        let page = ada.list_timelines(PageRequest::default()).await.unwrap();
        if page.items.iter().all(|t| !t.paradoxes_recounting) {
            break page.items;
        }
        assert!(std::time::Instant::now() < deadline, "never counted");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    let text = run_cli(&ada, &["timelines", "list"]).await.unwrap();
    let mut lines = text.lines();
    // Cells start where their header does (a window reads "30 minutes": not split on spaces).
    let column = lines.next().unwrap().find("ANOMALIES").expect(&text);
    let mut counted = 0;
    for line in lines.filter(|l| !l.starts_with("more:")) {
        let id = line.split_whitespace().next().unwrap();
        let cell = line[column..].split_whitespace().next().unwrap_or_default();
        let t = listed
            .iter()
            .find(|t| t.id.as_str() == id)
            .unwrap_or_else(|| panic!("{line}"));
        assert_eq!(cell, t.paradoxes.to_string(), "{text}");
        counted += t.paradoxes;
    }
    let bootstrap = listed
        .iter()
        .find(|t| t.id.as_str() == "tml_tesla_bootstrap")
        .expect("the demo's loop");
    assert!(
        bootstrap.paradoxes > 0 && counted >= bootstrap.paradoxes,
        "{text}"
    );
}

/// N1 of the 2026-11-29 walk-through: `backup`, `verify`, `witness show` (and the other commands
/// that work on this machine's store) with `--remote` acted on an empty local store and exited
/// 0 ("all 0 records verify", a backup holding nothing). They refuse, in one line, and touch
/// nothing; the flag from the environment is refused the same way.
#[test]
fn commands_on_the_local_store_refuse_a_remote_instead_of_acting_on_an_empty_one() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let backup = dir.path().join("server.backup");
    let backup = backup.to_str().unwrap();
    for args in [
        &["backup", backup][..],
        &["verify"],
        &["verify", "--backup", backup],
        &["witness", "show"],
        &["token", "--subject", "ada"],
        &["restore", backup],
        &["link-unchained-store"],
        &["serve", "--listen", "127.0.0.1:0"],
    ] {
        for by_env in [false, true] {
            let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_chronoscope"));
            command.arg("--data-dir").arg(&data).env("NO_COLOR", "1");
            if by_env {
                command.env("CHRONOSCOPE_REMOTE", "http://127.0.0.1:9");
            } else {
                command.args(["--remote", "http://127.0.0.1:9"]);
                command.env_remove("CHRONOSCOPE_REMOTE");
            }
            let out = command.args(args).output().expect("the binary runs");
            let said = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {said}");
            assert_eq!(said.lines().count(), 1, "{args:?}: {said}");
            assert!(
                said.contains(&format!("`{}` works on a store on this machine", args[0]))
                    && said.contains("http://127.0.0.1:9"),
                "{args:?}: {said}"
            );
            assert!(out.stdout.is_empty(), "{args:?}");
            assert!(!data.exists(), "{args:?} made a local store");
            assert!(
                !std::path::Path::new(backup).exists(),
                "{args:?} wrote a backup"
            );
        }
    }
}
