//! `timelines export` and `timelines import`: the real binary on data directories and against
//! a server, and the engine's refusals leaving the store as it was.

mod support;

use std::path::Path;
use std::process::Output;

use chronoscope::error::ServiceError;
use chronoscope::service::ImportRequest;
use chronoscope::store::Store;
use serde_json::Value;

/// The binary on data directory `dir` (a new one seeded as `seed`), with `args`.
fn cli(dir: &Path, seed: &str, args: &[&str]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_chronoscope"))
        .arg("--data-dir")
        .arg(dir)
        .args(["--seed", seed])
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("the CLI runs")
}

/// What a successful run printed.
fn ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// What a refused run said on stderr.
fn refused(out: Output) -> String {
    assert!(
        !out.status.success(),
        "should be refused: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8(out.stderr).expect("utf-8")
}

fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// The one timeline of an exported file, without its id.
fn timeline_of(file: &Value) -> Value {
    let mut tl = file["timelines"][0].clone();
    tl.as_object_mut().expect("a timeline object").remove("id");
    tl
}

/// The demo's `tml_sarajevo_averted` (a branch: inherited events, a manipulation) and
/// `primary` (a reverted manipulation, a manipulation undone by a step, fixed points) exported
/// from one store and imported into another reproduce every event version: ids (free there),
/// causes, fixed points, times, places, descriptions, statuses; the taken `primary` gets a new
/// id, reported old -> new. Nothing is printed on stderr when it is not a terminal.
#[test]
fn export_then_import_into_a_fresh_store_reproduces_the_timeline() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    for id in ["primary", "tml_sarajevo_averted"] {
        let file = a.path().join(format!("{id}.json"));
        let said = ok(cli(
            a.path(),
            "demo",
            &["timelines", "export", id, "--to", file.to_str().unwrap()],
        ));
        assert!(
            said.starts_with(&format!("exported timeline {id} (")),
            "{said}"
        );
        let exported = parse(&std::fs::read_to_string(&file).unwrap());
        assert_eq!(exported["format"], "chronoscope-world");
        assert_eq!(exported["version"], 1);
        assert!(exported["timelines"][0].get("parent").is_none());

        let out = cli(
            b.path(),
            "none",
            &["--json", "timelines", "import", file.to_str().unwrap()],
        );
        assert!(
            out.stderr.is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report = parse(&ok(out));
        let new_id = report["timelines"][0]["id"].as_str().unwrap().to_owned();
        assert_eq!(report["timelines"][0]["from"], id);
        if id == "primary" {
            assert!(new_id.starts_with("tml_"), "{report}");
            assert_eq!(report["remapped"][0]["kind"], "timeline");
            assert_eq!(report["remapped"][0]["from"], "primary");
            assert_eq!(report["remapped"][0]["to"], new_id.as_str());
        } else {
            assert_eq!(new_id, id, "a free id is kept: {report}");
            assert_eq!(report["remapped"], serde_json::json!([]));
        }
        let again = parse(&ok(cli(
            b.path(),
            "none",
            &["timelines", "export", &new_id],
        )));
        assert_eq!(timeline_of(&again), timeline_of(&exported), "{id}");
    }
    // What the demo primary holds really came across: a reverted manipulation, a fixed point.
    let primary = parse(&std::fs::read_to_string(a.path().join("primary.json")).unwrap());
    let events = primary["timelines"][0]["events"].as_array().unwrap();
    assert!(events.iter().any(|e| e["status"] == "reverted"));
    assert!(events.iter().any(|e| e["fixed_point"] == true));
}

/// The demo world file is an import file: its paradoxes (the bootstrap loop) refuse it,
/// naming the file's line and the event; without the safety check it is imported, paradoxes
/// listed.
#[test]
fn the_demo_world_file_imports_and_its_paradoxes_are_named_by_line() {
    let dir = tempfile::tempdir().unwrap();
    let demo = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/worlds/demo.json");
    let said = refused(cli(dir.path(), "none", &["timelines", "import", demo]));
    let text = std::fs::read_to_string(demo).unwrap();
    let line = text
        .lines()
        .position(|l| l.contains("\"id\": \"bootstrap-blueprint-delivered\""))
        .unwrap()
        + 1;
    assert!(
        said.contains(&format!(
            "timeline 'tml_tesla_bootstrap' unstable: line {line}, timelines[4].events[0]: "
        )),
        "{said}"
    );
    let before = ok(cli(dir.path(), "none", &["--json", "timelines", "list"]));
    assert_eq!(
        parse(&before)["items"].as_array().unwrap().len(),
        1,
        "{before}"
    );

    let report = parse(&ok(cli(
        dir.path(),
        "none",
        &["--json", "timelines", "import", demo, "--no-safety-check"],
    )));
    assert_eq!(report["timelines"].as_array().unwrap().len(), 8, "{report}");
    let bootstrap = &report["timelines"][4];
    assert_eq!(bootstrap["id"], "tml_tesla_bootstrap");
    assert_eq!(
        bootstrap["paradoxes"].as_array().unwrap().len(),
        2,
        "{report}"
    );
}

/// Each kind of bad input is refused whole, naming the line and the field; the store's
/// timelines stay as they were.
#[test]
fn bad_input_is_refused_whole_with_its_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let listed = || ok(cli(dir.path(), "none", &["--json", "timelines", "list"]));
    let before = listed();
    let event = |id: &str, time: &str, causes: &str| {
        format!(
            "      {{\"id\": \"{id}\", \"time\": \"{time}\", \"location\": \"Lab\", \
             \"description\": \"{id} happens\"{causes}}}"
        )
    };
    let file = |events: &[String]| {
        format!(
            "{{\n  \"timelines\": [\n    {{\"id\": \"tml_x\", \"name\": \"X\", \"events\": [\n{}\n    ]}}\n  ]\n}}\n",
            events.join(",\n")
        )
    };
    let good = event("a", "1900-01-01T00:00:00Z", "");
    let cases = [
        (
            "a bad time",
            file(&[good.clone(), event("b", "1900-13-01T00:00:00Z", "")]),
            "line 5, timelines[0].events[1].time: not an RFC 3339 date-time",
        ),
        (
            "an unknown cause",
            file(&[
                good.clone(),
                event("b", "1901-01-01T00:00:00Z", ", \"causes\": [\"nope\"]"),
            ]),
            "line 5, timelines[0].events[1].causes[0]: no event 'nope'",
        ),
        (
            "a duplicate id",
            file(&[good.clone(), event("a", "1901-01-01T00:00:00Z", "")]),
            "line 5, timelines[0].events[1].id: event 'a' appears twice",
        ),
        (
            "a missing field",
            file(&[
                good.clone(),
                "      {\"id\": \"b\", \"time\": \"1901-01-01T00:00:00Z\", \"location\": \"Lab\"}"
                    .into(),
            ]),
            "line 5, timelines[0].events[1]: missing field `description`",
        ),
        (
            "a paradox",
            file(&[
                good.clone(),
                event("b", "1800-01-01T00:00:00Z", ", \"causes\": [\"a\"]"),
            ]),
            "line 5, timelines[0].events[1]: ",
        ),
    ];
    for (what, text, expected) in cases {
        let path = dir.path().join("bad.json");
        std::fs::write(&path, &text).unwrap();
        let said = refused(cli(
            dir.path(),
            "none",
            &["timelines", "import", path.to_str().unwrap()],
        ));
        assert!(said.contains(expected), "{what}: {said}\n{text}");
        // One line says what is wrong; a paradox's is followed by the way on.
        let lines: Vec<&str> = said.trim_end().lines().collect();
        assert_eq!(
            lines.len(),
            if what == "a paradox" { 2 } else { 1 },
            "{what}: {said}"
        );
        if what == "a paradox" {
            assert!(lines[1].contains("--no-safety-check for a merge, a resolution or an import"));
        }
        assert_eq!(listed(), before, "{what} left the store as it was");
    }
    // With --json, the refusal is a problem a script reads.
    let path = dir.path().join("bad.json");
    let out = cli(
        dir.path(),
        "none",
        &["--json", "timelines", "import", path.to_str().unwrap()],
    );
    let problem = parse(&String::from_utf8_lossy(&out.stderr));
    assert_eq!(problem["type"], "/problems/paradox-detected", "{problem}");
}

/// An import into a store where its ids are taken: the timeline gets a new id, an event its
/// branch inherited under the same id gets a new one, references in the file follow, and the
/// report says old -> new for each.
#[tokio::test]
async fn taken_ids_are_remapped_and_reported() {
    let fresh = support::Fresh::new().await;
    let ada = fresh.session("ada");
    let cause = support::add_to_primary(
        ada.as_ref(),
        support::new_event("A letter is posted", "1900-01-01T00:00:00Z", "Paris", &[]),
    )
    .await;
    let text = format!(
        r#"{{"timelines": [{{"id": "tml_branch", "name": "Branch", "parent": "primary", "events": [
  {{"id": "{cause}", "time": "1900-02-01T00:00:00Z", "location": "Rome", "description": "Its own event, same id"}},
  {{"id": "reply", "time": "1900-03-01T00:00:00Z", "location": "Rome", "description": "A reply", "causes": ["{cause}"]}}
]}}]}}"#
    );
    let import = |text: String| ImportRequest {
        document: text,
        safety_check: true,
        progress: None,
    };
    let first = ada.import_timelines(import(text.clone())).await.unwrap();
    assert_eq!(first.timelines[0].id.as_str(), "tml_branch");
    let event_remap = &first.remapped[0];
    assert_eq!(
        (event_remap.kind.as_str(), event_remap.from.as_str()),
        ("event", cause.as_str())
    );
    assert_eq!(event_remap.timeline.as_ref(), Some(&first.timelines[0].id));
    let exported = ada.export_timeline(&first.timelines[0].id).await.unwrap();
    let events = &exported.timelines[0].events;
    let reply = events.iter().find(|e| e.id.as_str() == "reply").unwrap();
    assert_eq!(
        reply.causes[0].as_str(),
        event_remap.to,
        "the cause followed"
    );
    assert!(
        events.iter().any(|e| e.id == cause),
        "the inherited event stands"
    );

    let second = ada.import_timelines(import(text)).await.unwrap();
    let moved = &second.timelines[0].id;
    assert_ne!(moved.as_str(), "tml_branch");
    assert!(
        second
            .remapped
            .iter()
            .any(|r| r.kind == "timeline" && r.from == "tml_branch" && r.to == moved.as_str())
    );
}

/// A refused import writes nothing: the log is as long as before, whatever was wrong, and a
/// step that would change a timeline of the store is refused too.
#[tokio::test]
async fn a_refused_import_leaves_the_store_untouched() {
    let fresh = support::Fresh::new().await;
    let ada = fresh.session("ada");
    let before = fresh.store.last_seq().await.unwrap();
    let refusals = [
        // Half the file is fine: the first timeline would be created, the second is bad.
        r#"{"timelines": [{"id": "ok", "name": "Fine", "events": []},
            {"id": "bad", "name": "", "events": []}]}"#,
        r#"{"timelines": [{"id": "ok", "name": "Fine"}],
            "steps": [{"revert": {"timeline": "primary", "head": "x"}}]}"#,
        // A pending merge between timelines that are not branches of one another.
        r#"{"timelines": [{"id": "ok", "name": "Fine"}, {"id": "other", "name": "Other"}],
            "steps": [{"pending_merge": {"id": "m", "source": "other", "destination": "ok",
                                         "by": "ada"}}]}"#,
        r#"{"version": 2, "timelines": [{"id": "ok", "name": "Fine"}]}"#,
        r#"{"timelines": [{"id": "ok", "name": "Fine"}]} trailing"#,
        "not json",
    ];
    for text in refusals {
        let e = ada
            .import_timelines(ImportRequest {
                document: text.into(),
                safety_check: true,
                progress: None,
            })
            .await
            .expect_err(text);
        assert!(
            matches!(&e, ServiceError::InvalidInput { field, .. } if field.starts_with("line ")),
            "{text}: {e:?}"
        );
        assert_eq!(fresh.store.last_seq().await.unwrap(), before, "{text}");
    }
    assert!(ada.get_timeline(&"ok".parse().unwrap()).await.is_err());
}

/// Through a server: the binary imports a file exported from an embedded store with
/// `--remote`, in one request (`POST /v1/timelines/import`), and exports it back the same; a
/// refusal there names the file's line too and writes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_then_import_through_a_server_reproduces_the_timeline() {
    let local = tempfile::tempdir().unwrap();
    let file = local.path().join("branch.json");
    ok(cli(
        local.path(),
        "demo",
        &[
            "timelines",
            "export",
            "tml_ai_containment",
            "--to",
            file.to_str().unwrap(),
        ],
    ));
    let exported = parse(&std::fs::read_to_string(&file).unwrap());

    let fresh = support::Fresh::new().await;
    let (url, token) = support::serve(fresh.engine.clone(), "ada").await;
    let remote = |args: &[&str]| {
        let dir = local.path().to_owned();
        let url = url.clone();
        let token = token.clone();
        let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        async move {
            tokio::process::Command::new(env!("CARGO_BIN_EXE_chronoscope"))
                .arg("--data-dir")
                .arg(dir)
                .args(["--remote", &url, "--token", &token])
                .args(&args)
                .env("NO_COLOR", "1")
                .output()
                .await
                .expect("the CLI runs")
        }
    };
    let report = parse(&ok(remote(&[
        "--json",
        "timelines",
        "import",
        file.to_str().unwrap(),
    ])
    .await));
    assert_eq!(
        report["timelines"][0]["id"], "tml_ai_containment",
        "{report}"
    );
    let back = parse(&ok(
        remote(&["timelines", "export", "tml_ai_containment"]).await
    ));
    assert_eq!(back, exported);

    let before = fresh.store.last_seq().await.unwrap();
    let bad = local.path().join("bad.json");
    let text =
        std::fs::read_to_string(&file)
            .unwrap()
            .replacen("\"time\":\"", "\"time\":\"later ", 3);
    std::fs::write(&bad, &text).unwrap();
    let line = 1 + text.lines().position(|l| l.contains("later")).unwrap();
    let said = refused(remote(&["timelines", "import", bad.to_str().unwrap()]).await);
    assert!(
        said.contains(&format!("line {line}, timelines[0].events[0].time: ")),
        "{said}"
    );
    assert_eq!(fresh.store.last_seq().await.unwrap(), before);
}

/// `--help` of both commands answers what the file holds, what happens to taken ids and
/// what is refused.
#[test]
fn help_says_what_the_file_holds_what_happens_to_taken_ids_and_what_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let import = ok(cli(dir.path(), "none", &["timelines", "import", "--help"]));
    for said in [
        "\"timelines\"",
        "causes",
        "Taken ids",
        "new tml_... id",
        "old -> new",
        "Refused whole",
        "line 14, timelines[0].events[3].time",
        "paradox",
        "--no-safety-check",
    ] {
        assert!(import.contains(said), "{said}: {import}");
    }
    let export = ok(cli(dir.path(), "none", &["timelines", "export", "--help"]));
    for said in ["every version of its events", "temporary name", "--to"] {
        assert!(export.contains(said), "{said}: {export}");
    }
}

/// On a terminal, a large import shows a bar of the events checked with the rate and the
/// time left (on a pipe nothing: see the round trip above), then the report.
#[test]
fn a_large_import_shows_its_progress_on_a_terminal() {
    use portable_pty::{CommandBuilder, PtySize, native_pty_system};
    use std::io::Read;

    let dir = tempfile::tempdir().unwrap();
    let events: Vec<String> = (0..20_000)
        .map(|i| {
            format!(
                "{{\"id\": \"e{i}\", \"time\": \"{}\", \"location\": \"Lab\", \"description\": \"Step {i}\"}}",
                chronoscope::model::format_instant(
                    &(support::t("1900-01-01T00:00:00Z") + chrono::Duration::minutes(i))
                )
            )
        })
        .collect();
    let file = dir.path().join("big.json");
    std::fs::write(
        &file,
        format!(
            "{{\"timelines\": [{{\"id\": \"tml_big\", \"name\": \"Big\", \"events\": [\n{}\n]}}]}}",
            events.join(",\n")
        ),
    )
    .unwrap();
    let pty = native_pty_system()
        .openpty(PtySize {
            rows: 24,
            cols: 120,
            pixel_width: 0,
            pixel_height: 0,
        })
        .expect("a pseudo-terminal");
    let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_chronoscope"));
    cmd.arg("--data-dir");
    cmd.arg(dir.path());
    cmd.args(["--seed", "none", "timelines", "import"]);
    cmd.arg(&file);
    cmd.env("NO_COLOR", "1");
    cmd.env("TERM", "xterm-256color");
    let mut child = pty.slave.spawn_command(cmd).expect("the binary starts");
    drop(pty.slave);
    let mut reader = pty.master.try_clone_reader().expect("pty reader");
    let reading = std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut buf = [0u8; 8192];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            seen.extend_from_slice(&buf[..n]);
            if String::from_utf8_lossy(&seen).contains("imported 1 timeline") {
                break;
            }
        }
        String::from_utf8_lossy(&seen).into_owned()
    });
    let status = child.wait().expect("the import ends");
    drop(pty.master);
    let shown = reading.join().expect("the reader ends");
    assert!(status.success(), "{shown}");
    support::assert_contains_all(
        &shown,
        &[
            "/20,000 events",
            "/s, ",
            " left",
            "checking ",
            "imported 1 timeline, 20000 event versions",
        ],
    );
}

/// Over HTTP: an import sent twice with one `Idempotency-Key` is made once and answered the
/// same; a refusal is a problem+json naming the body's line and field, and writes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_import_operation_is_keyed_and_refuses_with_a_problem() {
    let fresh = support::Fresh::new().await;
    let (url, token) = support::serve(fresh.engine.clone(), "ada").await;
    let http = reqwest::Client::new();
    let post = |body: &'static str, key: Option<&'static str>| {
        let mut request = http
            .post(format!("{url}/v1/timelines/import"))
            .bearer_auth(&token)
            .header("content-type", "application/json")
            .body(body);
        if let Some(key) = key {
            request = request.header("idempotency-key", key);
        }
        request.send()
    };
    let file = "{\"timelines\": [{\"id\": \"tml_keyed\", \"name\": \"Keyed\", \"events\": [\n\
                {\"id\": \"a\", \"time\": \"1900-01-01T00:00:00Z\", \"location\": \"Lab\", \"description\": \"A\"}]}]}";
    let first = post(file, Some("import-1")).await.unwrap();
    assert_eq!(first.status(), 201);
    let first: Value = first.json().await.unwrap();
    let again = post(file, Some("import-1")).await.unwrap();
    assert_eq!(again.status(), 201);
    assert_eq!(again.json::<Value>().await.unwrap(), first);
    assert_eq!(first["timelines"][0]["id"], "tml_keyed");
    let ada = fresh.session("ada");
    let listed = ada
        .list_timelines(chronoscope::service::PageRequest::default())
        .await
        .unwrap();
    assert_eq!(
        listed.items.iter().filter(|t| t.name == "Keyed").count(),
        1,
        "imported once"
    );

    let before = fresh.store.last_seq().await.unwrap();
    let bad = "{\"timelines\": [{\"id\": \"tml_bad\", \"name\": \"Bad\", \"events\": [\n\
               {\"id\": \"a\", \"time\": \"1900-01-01T00:00:00Z\", \"location\": \"Lab\", \"description\": \"A\", \"causes\": [\"ghost\"]}]}]}";
    let refused = post(bad, None).await.unwrap();
    assert_eq!(refused.status(), 400);
    assert_eq!(
        refused.headers()["content-type"],
        "application/problem+json"
    );
    let problem: Value = refused.json().await.unwrap();
    assert_eq!(problem["type"], "/problems/invalid-request", "{problem}");
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .starts_with("line 2, timelines[0].events[0].causes[0]: no event 'ghost'"),
        "{problem}"
    );
    assert_eq!(fresh.store.last_seq().await.unwrap(), before);
}
