//! The OpenAPI document the server serves: OpenAPI 3.1, every route of the contract, every
//! `$ref` resolvable, bearer security, the error responses each route really gives, and a
//! snapshot so any change to the public description shows up in review.

mod support;

use axum::http::{Method, StatusCode};
use serde_json::Value;
use support::http::*;

/// HTTP.md's routes (method, OpenAPI path).
const CONTRACT: &[(&str, &str)] = &[
    ("get", "/v1/timelines"),
    ("post", "/v1/timelines"),
    ("get", "/v1/timeline/{timeline_id}"),
    ("delete", "/v1/timeline/{timeline_id}"),
    ("post", "/v1/travels"),
    ("get", "/v1/travels"),
    ("post", "/v1/items"),
    ("get", "/v1/items"),
    ("get", "/v1/items/{item_id}"),
    ("post", "/v1/events"),
    ("post", "/v1/anchors"),
    ("get", "/v1/anchors"),
    ("get", "/v1/anchors/{anchor_id}"),
    ("post", "/v1/paradox-checks"),
    ("get", "/v1/monitor-timeline"),
    ("get", "/v1/monitor-timeline/stream"),
    ("get", "/v1/me"),
    ("get", "/v1/timeline/{timeline_id}/events"),
    ("post", "/v1/timeline/{timeline_id}/events"),
    ("get", "/v1/timeline/{timeline_id}/export"),
    ("post", "/v1/timelines/import"),
    ("get", "/v1/scripts"),
    ("delete", "/v1/scripts/{script_id}"),
    ("get", "/v1/schedules"),
    ("delete", "/v1/schedules/{schedule_id}"),
    ("get", "/v1/search-events"),
    ("post", "/v1/manipulate-event"),
    ("post", "/v1/create-timeline"),
    ("post", "/v1/create-parallel-timeline"),
    ("get", "/v1/check-paradox"),
    ("post", "/v1/revert-event"),
    ("post", "/v1/set-anchor"),
    ("post", "/v1/create-script"),
    ("post", "/v1/schedule-manipulation"),
    ("post", "/v1/trigger-external-manipulation"),
    ("get", "/v1/automation-log"),
    ("post", "/api/v1/travel"),
    ("post", "/api/v1/scan-events"),
    ("get", "/api/v1/monitor-paradox"),
    ("get", "/api/v1/check-timeline"),
    ("post", "/v1/merge-timelines"),
    ("get", "/v1/merges"),
    ("get", "/v1/merges/{merge_id}"),
    ("post", "/v1/correct-dissonance"),
    ("post", "/v1/travel"),
    ("post", "/v1/return"),
    ("get", "/v1/list-timelines"),
    ("post", "/v1/switch-timeline"),
    ("post", "/v1/fast-forward"),
    ("post", "/v1/rewind"),
    ("post", "/v1/pause-time"),
    ("post", "/v1/resume-time"),
    ("get", "/v1/list-anchors"),
    ("delete", "/v1/delete-anchor"),
    ("get", "/v1/check-anchor-stability"),
    ("post", "/v1/adjust-anchor"),
    ("post", "/v1/simulate-wormhole"),
    ("post", "/api/v1/manipulate-event"),
    ("post", "/v1/shard-data"),
    ("post", "/v1/entangle-particles"),
    ("post", "/v1/store-data"),
    ("get", "/v1/retrieve-data"),
    ("post", "/v1/encrypt-data"),
    ("post", "/v1/decrypt-data"),
    ("post", "/v1/create-index"),
    ("post", "/v1/enable-caching"),
    ("get", "/healthz"),
    ("get", "/readyz"),
    ("get", "/v1/openapi.json"),
    ("get", "/problems/{slug}"),
    ("get", "/v1/review-conflicts"),
    ("post", "/v1/resolve-conflict"),
    ("delete", "/v1/merges/{merge_id}"),
    ("get", "/v1/diff-timelines"),
    ("post", "/v1/isolate-event"),
    ("delete", "/v1/isolations/{isolation_id}"),
    ("get", "/v1/retrieve-item"),
    ("post", "/v1/retrieve-item"),
    ("get", "/v1/monitor-events"),
    ("get", "/v1/monitor-events/stream"),
    ("delete", "/v1/caches/{cache_id}"),
    ("post", "/v1/detect-tampering"),
    ("post", "/v1/validate-integrity"),
    ("post", "/v1/set-access-control"),
    ("get", "/v1/timeline/{timeline_id}/access-control"),
    ("get", "/v1/access-controls"),
    ("post", "/v1/restrict-time-travel"),
    ("get", "/v1/restrictions"),
    ("get", "/v1/access-logs"),
];

fn doc() -> Value {
    serde_json::to_value(chronoscope::server::openapi()).unwrap()
}

fn refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                if k == "$ref" {
                    out.push(v.as_str().unwrap().to_owned());
                }
                refs(v, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}

#[test]
fn the_document_is_openapi_3_1_with_every_contract_route() {
    let doc = doc();
    assert!(
        doc["openapi"].as_str().unwrap().starts_with("3.1."),
        "{}",
        doc["openapi"]
    );
    assert!(doc["info"]["title"].is_string() && doc["info"]["version"].is_string());
    let paths = doc["paths"].as_object().unwrap();
    for (method, path) in CONTRACT {
        assert!(
            paths.get(*path).and_then(|p| p.get(*method)).is_some(),
            "missing {method} {path}"
        );
    }
    let operations: usize = paths.values().map(|p| p.as_object().unwrap().len()).sum();
    assert_eq!(
        operations,
        CONTRACT.len(),
        "the document has routes the contract does not list"
    );
    let mut ids: Vec<&str> = paths
        .values()
        .flat_map(|p| p.as_object().unwrap().values())
        .map(|op| op["operationId"].as_str().unwrap())
        .collect();
    let n = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), n, "operationIds are unique");
    // Documented operations keep the interface's operationIds.
    for (path, method, id) in [
        ("/v1/timelines", "get", "listTimelines"),
        ("/v1/travels", "post", "timeTravel"),
        ("/v1/monitor-timeline", "get", "monitorTimeline"),
    ] {
        assert_eq!(paths[path][method]["operationId"], id);
    }
}

#[test]
fn every_reference_resolves_and_the_projections_are_described() {
    let doc = doc();
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    let mut found = Vec::new();
    refs(&doc, &mut found);
    assert!(!found.is_empty());
    for r in found {
        let name = r
            .strip_prefix("#/components/schemas/")
            .unwrap_or_else(|| panic!("odd ref {r}"));
        assert!(schemas.contains_key(name), "dangling {r}");
    }
    for name in [
        "Problem",
        "TimelineDoc",
        "TimelineInfo",
        "ItemDoc",
        "AnchorDoc",
        "TimeTravelDoc",
        "EventManipulationDoc",
        "ParadoxCheckDoc",
        "MonitoringDoc",
        "EventsDoc",
        "ManipulatedDoc",
        "CreatedTimelineDoc",
        "StabilityDoc",
        "RevertedDoc",
        "AnchorSetDoc",
        "ScriptDoc",
        "ScheduledDoc",
        "TriggeredDoc",
        "AutomationLogDoc",
        "Journey",
        "EventRecord",
        "Paradox",
    ] {
        assert!(schemas.contains_key(name), "schema {name} missing");
    }
    let problem: Vec<&String> = schemas["Problem"]["properties"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    for k in ["type", "title", "status", "detail", "instance"] {
        assert!(problem.iter().any(|p| *p == k), "{k}");
    }
}

#[test]
fn security_and_error_responses_are_those_the_server_gives() {
    let doc = doc();
    assert_eq!(
        doc["components"]["securitySchemes"]["bearerAuth"]["scheme"],
        "bearer"
    );
    assert_eq!(doc["security"][0]["bearerAuth"], serde_json::json!([]));
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let responses = op["responses"].as_object().unwrap();
            let open = op.get("security").is_some();
            let params = op["parameters"].as_array().unwrap();
            assert!(
                params.iter().any(|p| p["name"] == "view"),
                "{method} {path}: view"
            );
            if open {
                assert!(!responses.contains_key("401"), "{method} {path} is open");
                continue;
            }
            for status in ["401", "403", "429", "503"] {
                let r = &responses[status];
                assert_eq!(
                    r["content"]["application/problem+json"]["schema"]["$ref"],
                    "#/components/schemas/Problem",
                    "{method} {path} {status}"
                );
            }
            assert!(
                responses["401"]["headers"]
                    .get("WWW-Authenticate")
                    .is_some()
            );
            assert!(responses["429"]["headers"].get("Retry-After").is_some());
            let unprocessable = matches!(
                (method.as_str(), path.as_str()),
                ("post", "/v1/timelines" | "/v1/items" | "/v1/anchors")
                    | ("get" | "delete", "/v1/timeline/{timeline_id}")
            );
            // Every POST can also refuse an Idempotency-Key reused for another request.
            let post = method == "post";
            assert_eq!(
                responses.contains_key("422"),
                unprocessable || post,
                "{method} {path}"
            );
            assert_eq!(
                params
                    .iter()
                    .any(|p| p["name"] == "Idempotency-Key" && p["in"] == "header"),
                post,
                "{method} {path}: Idempotency-Key"
            );
            // Every operation refuses an unknown `view` with 400; where other faults are 422,
            // the 400 says it is only that.
            assert!(responses.contains_key("400"), "{method} {path}");
            if unprocessable {
                let about = responses["400"]["description"].as_str().unwrap_or_default();
                assert!(about.contains("`view`"), "{method} {path}: {about}");
            }
            let has_body = op.get("requestBody").is_some();
            assert_eq!(responses.contains_key("413"), has_body, "{method} {path}");
            assert_eq!(responses.contains_key("415"), has_body, "{method} {path}");
            // A path that names a resource can name nothing; so can retrieve-data's time.
            let names_something = (method.as_str(), path.as_str()) == ("get", "/v1/retrieve-data");
            assert_eq!(
                responses.contains_key("404"),
                path.contains('{') || names_something,
                "{method} {path}"
            );
        }
    }
    let items = &doc["paths"]["/v1/items"]["post"]["responses"]["409"];
    assert!(
        items.get("content").is_none(),
        "the documented 409 has no body"
    );
    assert!(items["headers"].get("Location").is_some());
}

#[tokio::test]
async fn every_documented_path_is_routed() {
    let app = App::new().await;
    let t = token_with_scope("ada", "admin");
    let doc = doc();
    for (path, item) in doc["paths"].as_object().unwrap() {
        let filled = path.replace("{slug}", "not-found");
        let filled: String = filled
            .split('/')
            .map(|seg| if seg.starts_with('{') { "x_1" } else { seg })
            .collect::<Vec<_>>()
            .join("/");
        // A stream of a timeline that exists lasts as long as it is read: name one that does
        // not, refused before any stream.
        let filled = if filled.ends_with("/stream") {
            format!("{filled}?timeline_id=x_1")
        } else {
            filled
        };
        for method in item.as_object().unwrap().keys() {
            let r = app
                .call(
                    method.to_uppercase().parse::<Method>().unwrap(),
                    &filled,
                    Some(&t),
                    None,
                )
                .await;
            let unrouted = r.status == StatusCode::NOT_FOUND && r.text.contains("no path");
            assert!(!unrouted, "{method} {path} is not routed: {}", r.text);
            assert_ne!(r.status, StatusCode::METHOD_NOT_ALLOWED, "{method} {path}");
        }
    }
}

#[tokio::test]
async fn the_served_document_is_the_generated_one() {
    let app = App::new().await;
    let r = app.call(Method::GET, "/v1/openapi.json", None, None).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.content_type(), "application/json");
    assert_eq!(r.json(), doc());
}

#[test]
fn the_document_matches_its_snapshot() {
    insta::assert_snapshot!("openapi", serde_json::to_string_pretty(&doc()).unwrap());
}

/// The description's constraints are the server's: what it allows is accepted, what it
/// forbids is refused with a problem (found by schemathesis, tests/schemathesis/run.sh).
#[tokio::test]
async fn the_description_and_the_server_agree_on_what_a_request_may_be() {
    let app = App::new().await;
    let ada = token("ada");
    let doc = doc();

    // Page sizes: 1 to 1000, described and served.
    let limit = doc["paths"]["/v1/timelines"]["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "limit")
        .unwrap()["schema"]
        .clone();
    assert_eq!(
        (limit["minimum"].as_u64(), limit["maximum"].as_u64()),
        (Some(1), Some(1000))
    );
    assert_eq!(
        app.get("/v1/timelines?limit=1", &ada).await.status,
        StatusCode::OK
    );
    app.get("/v1/timelines?limit=0", &ada)
        .await
        .assert_problem(400, "invalid-request");

    // `view` is `documented` or `full`: an empty one is refused like any other, open
    // endpoints included, and every operation lists that 400.
    for uri in ["/v1/me?view=", "/healthz?view=", "/v1/timelines?view=nope"] {
        app.get(uri, &ada)
            .await
            .assert_problem(400, "invalid-request");
    }
    assert_eq!(
        app.get("/v1/me?view=full", &ada).await.status,
        StatusCode::OK
    );

    // Ids follow their pattern wherever they are sent.
    let id = &doc["components"]["schemas"]["SearchParams"]["properties"]["timeline_id"];
    assert_eq!(id["pattern"], "^[A-Za-z0-9_.-]{1,128}$");
    app.get("/v1/search-events?timeline_id=", &ada)
        .await
        .assert_problem(400, "invalid-request");

    // A traveller is named, not an id: the served schema takes what the service takes
    // (`ada@example.com`), and what it refuses the service refuses too.
    let user = &doc["components"]["schemas"]["RestrictRequest"]["properties"]["user_id"];
    let pattern = regex::Regex::new(user["pattern"].as_str().unwrap()).unwrap();
    for (name, valid) in [
        ("ada@example.com", true),
        ("P0*", true),
        ("tom", true),
        (" tom", false),
        ("tom ", false),
        ("", false),
        ("a\nb", false),
    ] {
        assert_eq!(pattern.is_match(name), valid, "{name:?} against {pattern}");
        assert_eq!(
            name.parse::<chronoscope::model::Traveller>().is_ok(),
            valid,
            "{name:?}"
        );
    }
    // Character by character, alone and between two letters, the pattern takes exactly what
    // the service takes: every basic-plane character, and beyond it each one the service
    // refuses, its neighbours and one in 101 (schemathesis found U+00AD taken by `\S`).
    let service_takes = |name: &str| name.parse::<chronoscope::model::Traveller>().is_ok();
    let refused_beyond: Vec<u32> = (0x10000..=0x10FFFF)
        .filter(|&n| char::from_u32(n).is_some_and(|c| !service_takes(&c.to_string())))
        .collect();
    assert!(
        refused_beyond.contains(&0xE0001),
        "a language tag is a format character"
    );
    let beyond = refused_beyond
        .iter()
        .flat_map(|&n| [n - 1, n, n + 1])
        .chain((0x10000..=0x10FFFF).step_by(101));
    for c in (0..0x10000).chain(beyond).filter_map(char::from_u32) {
        for name in [c.to_string(), format!("a{c}b")] {
            assert_eq!(
                pattern.is_match(&name),
                service_takes(&name),
                "{name:?} (U+{:04X})",
                u32::from(c)
            );
        }
    }
    let longest = "é".repeat(128);
    assert!(service_takes(&longest) && pattern.is_match(&longest));
    assert_eq!(
        user["maxLength"], 128,
        "counted in characters, as the service counts"
    );
    assert!(!service_takes(&format!("{longest}é")));

    // A GET guide operation checks its query even when it reads a body.
    let bad_query = app
        .call(
            Method::GET,
            "/v1/automation-log?timeline_id=",
            Some(&ada),
            Some(serde_json::json!({"timeline_id": "primary"})),
        )
        .await;
    bad_query.assert_problem(400, "invalid-request");
    // A field given in both must say the same in both.
    let body = serde_json::json!({"timeline_id": "primary"});
    let same = app
        .call(
            Method::GET,
            "/v1/check-paradox?timeline_id=primary",
            Some(&ada),
            Some(body.clone()),
        )
        .await;
    assert_eq!(same.status, StatusCode::OK, "{}", same.text);
    app.call(
        Method::GET,
        "/v1/check-paradox?timeline_id=other",
        Some(&ada),
        Some(body),
    )
    .await
    .assert_problem(400, "invalid-request");

    // An interval given end first is the same stretch of time.
    let range = |r: &str| format!("/v1/search-events?time_range={r}");
    let forward = app
        .get(&range("1800-01-01T00:00:00Z/2100-01-01T00:00:00Z"), &ada)
        .await;
    let backward = app
        .get(&range("2100-01-01T00:00:00Z/1800-01-01T00:00:00Z"), &ada)
        .await;
    assert_eq!(forward.status, StatusCode::OK);
    assert_eq!(backward.json(), forward.json());
    let pattern = doc["components"]["schemas"]["TimeRange"]["pattern"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        pattern.starts_with('^') && pattern.contains("02-29"),
        "{pattern}"
    );

    // Text the service trims and refuses empty is described so.
    let name = &doc["components"]["schemas"]["NewTimeline"]["properties"]["name"];
    assert_eq!(name["minLength"].as_u64(), Some(1));
    let text = regex::Regex::new(name["pattern"].as_str().unwrap()).unwrap();
    // What counts as a space is the service's reading, not ECMA-262's `\s`: U+0085 is trimmed
    // away, U+FEFF is not.
    for (given, taken) in [
        ("  ", false),
        ("\u{85}", false),
        ("\u{FEFF}", true),
        (" x ", true),
    ] {
        assert_eq!(text.is_match(given), taken, "{given:?} against {text}");
        let answer = app
            .post(
                "/v1/create-timeline",
                &ada,
                serde_json::json!({ "name": given }),
            )
            .await;
        if taken {
            assert_eq!(
                answer.status,
                StatusCode::CREATED,
                "{given:?}: {}",
                answer.text
            );
        } else {
            answer.assert_problem(400, "invalid-request");
        }
    }

    // The guides' action word is in the description.
    let words = &doc["components"]["schemas"]["Action"]["properties"]["action_type"]["enum"];
    assert_eq!(
        *words,
        serde_json::json!(["manipulate", "revert", "modify_event"])
    );
}

/// A schema's required members, through its `allOf` parts.
fn required_members(doc: &Value, schema: &Value) -> Vec<String> {
    let schema = resolve(doc, schema);
    let mut out: Vec<String> = schema["required"]
        .as_array()
        .map(|r| r.iter().map(|m| m.as_str().unwrap().to_owned()).collect())
        .unwrap_or_default();
    for part in schema["allOf"].as_array().into_iter().flatten() {
        out.extend(required_members(doc, part));
    }
    out
}

/// The component a `$ref` names (or the schema itself).
fn resolve<'a>(doc: &'a Value, schema: &'a Value) -> &'a Value {
    match schema["$ref"].as_str() {
        Some(r) => &doc["components"]["schemas"][r.strip_prefix("#/components/schemas/").unwrap()],
        None => schema,
    }
}

/// Generated clients (openapi-python-client, among others) try a union's alternatives in
/// order and keep the first that parses. So each view lists its full type first, and a
/// documented answer cannot pass for a full one: the full type requires a member the
/// documented projection does not have. The projection says it has exactly its members
/// (`additionalProperties: false`, DESIGN §4), so a full answer is no projection either.
#[test]
fn each_view_parses_into_its_own_model_in_a_generated_client() {
    let doc = doc();
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    let mut views = 0;
    for (name, schema) in schemas.iter().filter(|(n, _)| n.ends_with("View")) {
        // (AccessControlView is one type, named for what it is.)
        let Some(alternatives) = schema["anyOf"].as_array() else {
            continue;
        };
        let [full, documented] = alternatives.as_slice() else {
            panic!("{name} is two views: {schema}");
        };
        let (full, documented) = match (full.get("items"), documented.get("items")) {
            (Some(f), Some(d)) => (f, d),
            _ => (full, documented),
        };
        let projection = resolve(&doc, documented);
        assert_eq!(
            projection["additionalProperties"], false,
            "{name}: the documented projection {documented} is closed"
        );
        let members: Vec<&String> = projection["properties"]
            .as_object()
            .unwrap()
            .keys()
            .collect();
        let only_full: Vec<String> = required_members(&doc, full)
            .into_iter()
            .filter(|m| !members.contains(&m))
            .collect();
        assert!(
            !only_full.is_empty(),
            "{name}: the full type {full} requires no member the projection lacks, so a \
             documented answer passes for a full one"
        );
        views += 1;
    }
    assert!(views > 40, "{views} views");
    // Request bodies stay open: the server ignores unknown fields there.
    assert!(schemas["NewTimeline"].get("additionalProperties").is_none());
}

/// openapi-python-client could not merge the documented body of `POST /v1/events` (an
/// `allOf` of the guide's request, whose `timeline_id` may be null, and a required string):
/// it is one object schema with `timeline_id` required and never null.
#[test]
fn the_documented_manipulation_body_is_one_object() {
    let doc = doc();
    let body = &doc["paths"]["/v1/events"]["post"]["requestBody"];
    assert_eq!(body["required"], true);
    let schema = resolve(&doc, &body["content"]["application/json"]["schema"]);
    assert!(schema.get("allOf").is_none(), "{schema}");
    let required = required_members(&doc, schema);
    for member in ["timeline_id", "event_id", "new_outcome"] {
        assert!(required.iter().any(|r| r == member), "{member}: {schema}");
    }
    assert_eq!(
        schema["properties"]["timeline_id"]["$ref"],
        "#/components/schemas/TimelineId"
    );
    // The guide's manipulate-event keeps its optional timeline.
    let guide = &doc["paths"]["/v1/manipulate-event"]["post"]["requestBody"]["content"]["application/json"]
        ["schema"];
    let guide = resolve(&doc, guide);
    assert!(!required_members(&doc, guide).contains(&"timeline_id".to_owned()));
}

/// A body a caller may leave out is an optional request body of its type, not a nullable
/// one: a generated client then sends nothing when given nothing (with `oneOf [null, X]` it
/// failed before sending; with a required body it could not call delete-anchor by its query).
#[test]
fn bodies_that_may_be_left_out_are_optional_not_null() {
    let doc = doc();
    for (path, method) in [
        ("/v1/pause-time", "post"),
        ("/v1/resume-time", "post"),
        ("/v1/list-anchors", "get"),
    ] {
        let body = &doc["paths"][path][method]["requestBody"];
        assert_eq!(body["required"], false, "{method} {path}");
        let schema = resolve(&doc, &body["content"]["application/json"]["schema"]);
        assert!(
            body["content"]["application/json"]["schema"]["$ref"].is_string(),
            "{method} {path}: {body}"
        );
        // The server takes `null` as no body: the schema allows an object or null, without
        // a type union (which generators turn back into `X | None`).
        assert!(schema.get("type").is_none(), "{method} {path}: {schema}");
        assert_eq!(
            schema["not"]["type"],
            serde_json::json!(["string", "number", "boolean", "array"]),
            "{method} {path}"
        );
    }
    // delete-anchor takes `anchor_id` from its body or its query: neither is required alone.
    let delete = &doc["paths"]["/v1/delete-anchor"]["delete"];
    assert_eq!(delete["requestBody"]["required"], false);
    assert!(
        delete["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["in"] != "query" || p["required"] == false),
        "{delete}"
    );
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let schema = &op["requestBody"]["content"]["application/json"]["schema"];
            let nullable = schema["oneOf"]
                .as_array()
                .is_some_and(|a| a.iter().any(|s| s["type"] == "null"));
            assert!(!nullable, "{method} {path}: a null body: {schema}");
        }
    }
}

/// A timeline needs a name or a description; that rule stands in an `allOf` so generators
/// keep the properties beside it (with a bare `anyOf`, they kept only the alternatives and
/// left `base_timeline_id`, `variation` and `destination_time` untyped).
#[test]
fn the_new_timeline_rule_leaves_its_properties_typed() {
    let doc = doc();
    let schema = &doc["components"]["schemas"]["NewTimeline"];
    assert!(schema.get("anyOf").is_none(), "{schema}");
    let properties = schema["properties"].as_object().unwrap();
    for name in [
        "name",
        "description",
        "base_timeline_id",
        "variation",
        "destination_time",
    ] {
        assert!(properties.contains_key(name), "{name}");
    }
    let rule = &schema["allOf"][0]["anyOf"];
    assert_eq!(rule[0]["required"], serde_json::json!(["name"]));
    assert_eq!(rule[1]["required"], serde_json::json!(["description"]));
}

/// The event streams are text to a generated client (not JSON to parse when the stream
/// ends), and each names its events' shape for readers that follow them event by event.
#[test]
fn the_streams_are_text_with_their_events_described() {
    let doc = doc();
    for (path, component, names) in [
        (
            "/v1/monitor-timeline/stream",
            "MonitorTimelineStreamEvent",
            &[
                "snapshot",
                "appeared",
                "resolved",
                "error",
                "access_revoked",
            ][..],
        ),
        (
            "/v1/monitor-events/stream",
            "MonitorEventsStreamEvent",
            &["snapshot", "changed", "removed", "error", "access_revoked"][..],
        ),
    ] {
        let media = &doc["paths"][path]["get"]["responses"]["200"]["content"]["text/event-stream"];
        assert_eq!(media["schema"]["type"], "string", "{path}");
        assert_eq!(
            media["x-itemSchema"]["$ref"],
            format!("#/components/schemas/{component}")
        );
        let events: Vec<&Value> = doc["components"]["schemas"][component]["oneOf"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| &e["properties"]["event"]["const"])
            .collect();
        assert_eq!(events, names, "{path}");
    }
    assert!(doc["components"]["schemas"]["EventsChange"].is_object());
}

/// Jobs and merges name what they made in `Location` (their guide answers carry no id).
#[test]
fn jobs_and_merges_document_their_location() {
    let doc = doc();
    for (path, status) in [
        ("/v1/schedule-manipulation", "201"),
        ("/v1/trigger-external-manipulation", "202"),
        ("/v1/merge-timelines", "200"),
    ] {
        let headers = &doc["paths"][path]["post"]["responses"][status]["headers"];
        assert!(headers.get("Location").is_some(), "{path}: {headers}");
    }
}
