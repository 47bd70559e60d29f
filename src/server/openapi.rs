//! The OpenAPI 3.1 description, generated from the handlers' `#[utoipa::path]` attributes and
//! the types' schemas, then completed with what every operation shares: the `view`
//! parameter, the bearer requirement, and the error responses the server really gives.

use utoipa::OpenApi;
use utoipa::openapi::content::ContentBuilder;
use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::path::{Operation, ParameterBuilder, ParameterIn};
use utoipa::openapi::response::ResponseBuilder;
use utoipa::openapi::schema::{AnyOfBuilder, ObjectBuilder, Schema, Type};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{Ref, RefOr, Required};

use super::problem::PROBLEM_JSON;
use super::views;

/// The documented operations that have no documented 400: their validation errors are 422.
pub(crate) const UNPROCESSABLE_ROUTES: &[(&str, &str)] = &[
    ("post", "/v1/timelines"),
    ("post", "/v1/items"),
    ("post", "/v1/anchors"),
    ("get", "/v1/timeline/{timeline_id}"),
    ("delete", "/v1/timeline/{timeline_id}"),
];

/// The operations whose "already exists" is the documented bodiless 409 with `Location`.
const BODILESS_CONFLICT_ROUTES: &[(&str, &str)] = &[
    ("post", "/v1/items"),
    ("post", "/v1/anchors"),
    ("post", "/v1/set-anchor"),
];

/// The operations that can refuse with a 409 problem (the state forbids it), and why each
/// does. Every state refusal the engine makes (`ServiceError::Conflict`) belongs to one of
/// these or to a route that documents its own 409 (`retrieve-item`, `retrieve-data`); every
/// answer in the HTTP tests is checked against the description's statuses.
const CONFLICT_ROUTES: &[(&str, &str, &str)] = &[
    (
        "delete",
        "/v1/timeline/{timeline_id}",
        "primary cannot be deleted, nor a timeline with branches, travellers in it or a \
         merge waiting for review that names it",
    ),
    (
        "delete",
        "/v1/schedules/{schedule_id}",
        "the job ran or was cancelled already",
    ),
    (
        "post",
        "/v1/merge-timelines",
        "the timelines are not on one line of descent, or a merge of the source into the \
         destination is waiting for review",
    ),
    (
        "post",
        "/v1/adjust-anchor",
        "the anchor was returned to: it is history",
    ),
    (
        "post",
        "/v1/resolve-conflict",
        "several pending merges conflict on the lineage (give merge_id), the merge is not \
         waiting for review, or the conflict was resolved already",
    ),
    (
        "get",
        "/v1/review-conflicts",
        "the merge named is not waiting for review (merged or aborted)",
    ),
    (
        "delete",
        "/v1/merges/{merge_id}",
        "the merge is not waiting for review (merged or aborted already)",
    ),
    (
        "get",
        "/v1/diff-timelines",
        "the timelines are not on one line of descent",
    ),
    ("post", "/v1/isolate-event", "the event is isolated already"),
    (
        "post",
        "/v1/set-access-control",
        "the list would take its author's own admin right away",
    ),
];

#[derive(OpenApi)]
#[openapi(
    info(
        title = "chronoscope",
        description = "Timeline travel service: the documented Warp operations, the guide \
                       operations and chronoscope's extensions. Responses of documented \
                       operations carry exactly the documented properties; add `view=full` \
                       for the richer shapes. Errors are application/problem+json; their \
                       `type` is a path under /problems/ that explains them.",
        license(name = "MIT", identifier = "MIT"),
    ),
    servers((url = "/", description = "The server answering this document")),
    components(schemas(views::Problem, crate::service::EventsChange)),
    tags(
        (name = "Timelines", description = "Documented: timelines"),
        (name = "Travel", description = "Documented: journeys"),
        (name = "Items", description = "Documented: items"),
        (name = "Events", description = "Documented: manipulating events"),
        (name = "Anchors", description = "Documented: temporal anchors"),
        (name = "Paradoxes", description = "Documented: paradox checks"),
        (name = "Monitoring", description = "Documented: anomaly monitoring"),
        (name = "Guide", description = "Operations the interface's guide illustrates by example"),
        (name = "Extensions", description = "chronoscope's own endpoints"),
        (name = "Operations", description = "Open endpoints: health, readiness, this document, problem types"),
    ),
)]
struct ApiDoc;

/// The document the routes are added to.
pub(super) fn base() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi()
}

/// The complete document this server serves at `/v1/openapi.json`.
pub fn openapi() -> serde_json::Value {
    let (_, doc) = super::routes::api_router().0.split_for_parts();
    document(doc)
}

/// The served form of a generated document: [`finish`]ed, then [`constrain`]ed (on its JSON
/// form, which reaches into schemas of every shape).
pub(super) fn document(doc: utoipa::openapi::OpenApi) -> serde_json::Value {
    let mut value = serde_json::to_value(finish(doc)).unwrap_or_default();
    constrain(&mut value);
    describe_views(&mut value);
    describe_streams(&mut value);
    value
}

/// The name of the component a schema (or the items of an array schema) refers to.
fn component_name(schema: &serde_json::Value) -> Option<&str> {
    schema
        .get("$ref")
        .or_else(|| schema.pointer("/items/$ref"))
        .and_then(|r| r.as_str())
        .and_then(|r| r.strip_prefix("#/components/schemas/"))
}

/// Pushes the name of every component schema `v` refers to (`$ref`), at any depth, onto `out`.
fn refs(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => {
            if let Some(serde_json::Value::String(r)) = m.get("$ref")
                && let Some(name) = r.strip_prefix("#/components/schemas/")
            {
                out.push(name.to_owned());
            }
            m.values().for_each(|v| refs(v, out));
        }
        serde_json::Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}

/// The components reachable from `roots` through `$ref`s, the roots included.
fn reachable(
    schemas: &serde_json::Map<String, serde_json::Value>,
    roots: impl IntoIterator<Item = String>,
) -> std::collections::BTreeSet<String> {
    let mut todo: Vec<String> = roots.into_iter().collect();
    let mut seen = std::collections::BTreeSet::new();
    while let Some(name) = todo.pop() {
        if let Some(schema) = schemas.get(&name)
            && seen.insert(name)
        {
            refs(schema, &mut todo);
        }
    }
    seen
}

/// The two views of every answer, as typed clients read them. A `…View` component is "the
/// documented projection, or with `view=full` the full type" (see `views`). Generated clients
/// try the alternatives of an `anyOf` in order and keep the first that parses, so:
/// - the documented projection carries exactly its properties (DESIGN §4), and says so:
///   `additionalProperties: false` on it and on every object schema only projections reach
///   (not on what full types or request bodies use);
/// - the full type comes first: a documented answer lacks members the full type requires
///   (`tests/http_openapi.rs` checks that of every view), so it is not taken for a full one,
///   and a full answer is never cut down to the projection.
fn describe_views(doc: &mut serde_json::Value) {
    // Request bodies stay open: the server ignores unknown fields there (DESIGN §4).
    let in_requests = request_components(doc);
    let Some(schemas) = doc
        .pointer_mut("/components/schemas")
        .and_then(|s| s.as_object_mut())
    else {
        return;
    };
    let mut documented = Vec::new();
    let mut full = Vec::new();
    for (name, schema) in schemas.iter_mut() {
        if !name.ends_with("View") {
            continue;
        }
        let Some(alternatives) = schema.get_mut("anyOf").and_then(|a| a.as_array_mut()) else {
            continue;
        };
        if alternatives.len() != 2 {
            continue;
        }
        if let (Some(d), Some(f)) = (
            component_name(&alternatives[0]),
            component_name(&alternatives[1]),
        ) {
            documented.push(d.to_owned());
            full.push(f.to_owned());
        }
        alternatives.swap(0, 1);
    }
    let in_full = reachable(schemas, full);
    for name in reachable(schemas, documented) {
        if in_full.contains(&name) || in_requests.contains(&name) {
            continue;
        }
        if let Some(schema) = schemas.get_mut(&name).and_then(|s| s.as_object_mut())
            && schema.contains_key("properties")
            && !schema.contains_key("allOf")
        {
            schema.insert(
                "additionalProperties".into(),
                serde_json::Value::Bool(false),
            );
        }
    }
}

/// One event of a stream: its name, the component its data is, whether it carries an `id`,
/// and what it is.
type StreamEvent = (&'static str, &'static str, bool, &'static str);

/// The events that end either stream, after its own ([`STREAMS`]).
const ENDINGS: &[StreamEvent] = &[
    (
        "error",
        "Problem",
        false,
        "Why the stream ends (e.g. the timeline was deleted); nothing follows it",
    ),
    (
        "access_revoked",
        "Problem",
        false,
        "The caller lost the read right on the timeline; nothing follows it",
    ),
];

/// The two event streams: path, the component naming one event of it, and its own events
/// (then the [`ENDINGS`]).
const STREAMS: &[(&str, &str, &[StreamEvent])] = &[
    (
        "/v1/monitor-timeline/stream",
        "MonitorTimelineStreamEvent",
        &[
            (
                "snapshot",
                "MonitorReport",
                true,
                "First (also after a reconnection): every open anomaly; replaces what the client knew",
            ),
            ("appeared", "Anomaly", true, "An anomaly that appeared"),
            ("resolved", "Anomaly", true, "An anomaly that was resolved"),
        ],
    ),
    (
        "/v1/monitor-events/stream",
        "MonitorEventsStreamEvent",
        &[
            (
                "snapshot",
                "EventsChange",
                true,
                "First: every matching event now (`kind` `snapshot`); replaces what the client knew",
            ),
            (
                "changed",
                "EventsChange",
                true,
                "A matching event that is new or whose change state moved (`kind` `changed`)",
            ),
            (
                "removed",
                "EventsChange",
                true,
                "An event that no longer stands (`kind` `removed`)",
            ),
        ],
    ),
];

/// The schema of one event of a stream, as OpenAPI 3.2 (`itemSchema`) and schemathesis read
/// it: an object of the event's `event`, `id` and `data` fields, `data` being JSON
/// (`contentMediaType`) of the named component (`contentSchema`).
fn stream_event(
    name: &str,
    component: &str,
    with_id: bool,
    description: &str,
) -> serde_json::Value {
    let mut required = vec!["event", "data"];
    if with_id {
        required.push("id");
    }
    serde_json::json!({
        "type": "object",
        "description": description,
        "required": required,
        "properties": {
            "event": { "const": name },
            "id": {
                "type": "string",
                "pattern": "^[0-9]+$",
                "description": "The log position the change was seen at; send it back as `Last-Event-ID` to resume",
            },
            "data": {
                "type": "string",
                "contentMediaType": "application/json",
                "contentSchema": { "$ref": format!("#/components/schemas/{component}") },
            },
        },
    })
}

/// Describes the event streams as OpenAPI 3.1 can: the body is text (`schema: string`), so
/// generated clients hand it over as text instead of parsing it as JSON, and one event's shape
/// is a component (named by the media type's `x-itemSchema`, OpenAPI 3.2's `itemSchema`, which
/// a 3.1 document may only carry as an extension) for readers that follow the stream event by
/// event. Also says what the monitor stream's 400 stands for.
fn describe_streams(doc: &mut serde_json::Value) {
    for (path, component, events) in STREAMS {
        let one_of: Vec<serde_json::Value> = events
            .iter()
            .chain(ENDINGS)
            .map(|(name, data, with_id, about)| stream_event(name, data, *with_id, about))
            .collect();
        if let Some(schemas) = doc
            .pointer_mut("/components/schemas")
            .and_then(|s| s.as_object_mut())
        {
            schemas.insert(
                (*component).to_owned(),
                serde_json::json!({
                    "description": format!(
                        "One event of `GET {path}` (Server-Sent Events): its `event` name, \
                         `id` and JSON `data`"
                    ),
                    "oneOf": one_of,
                }),
            );
        }
        let pointer = format!("/paths/{}/get/responses", path.replace('/', "~1"));
        let Some(responses) = doc.pointer_mut(&pointer) else {
            continue;
        };
        if let Some(media) = responses.pointer_mut("/200/content/text~1event-stream") {
            media["schema"] = serde_json::json!({
                "type": "string",
                "description": format!(
                    "The stream's text, which lasts as long as the client reads it: read it \
                     event by event (each is a {component}), not to its end"
                ),
            });
            media["x-itemSchema"] =
                serde_json::json!({ "$ref": format!("#/components/schemas/{component}") });
        }
        if *path == "/v1/monitor-timeline/stream"
            && let Some(bad) = responses.pointer_mut("/400/description")
        {
            *bad = serde_json::Value::from(
                "An unknown timeline (unknown-reference), a malformed `timeline_id` or \
                 `Last-Event-ID`, or an unknown `view`; answered before the stream starts",
            );
        }
    }
}

fn problem_response(description: &str) -> utoipa::openapi::Response {
    ResponseBuilder::new()
        .description(description)
        .content(
            PROBLEM_JSON,
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("Problem")))
                .build(),
        )
        .build()
}

fn string_header(description: &str) -> utoipa::openapi::header::Header {
    HeaderBuilder::new()
        .schema(ObjectBuilder::new().schema_type(Type::String))
        .description(Some(description))
        .build()
}

fn listed(table: &[(&str, &str)], method: &str, path: &str) -> bool {
    table.iter().any(|(m, p)| *m == method && *p == path)
}

/// A parameter that may be left out.
fn optional_param(
    name: &str,
    located: ParameterIn,
    description: &str,
    schema: ObjectBuilder,
) -> utoipa::openapi::path::Parameter {
    ParameterBuilder::new()
        .name(name)
        .parameter_in(located)
        .required(Required::False)
        .description(Some(description))
        .schema(Some(schema))
        .build()
}

/// Adds the shared parameter and the error responses to one operation.
fn complete(method: &str, path: &str, op: &mut Operation) {
    let open = op
        .security
        .as_ref()
        .is_some_and(|s| s.iter().all(|r| *r == SecurityRequirement::default()));
    let params = op.parameters.get_or_insert_with(Vec::new);
    params.push(optional_param(
        "view",
        ParameterIn::Query,
        "`full` answers the full types (and problems with `error`, `paradoxes`); \
         default `documented`",
        ObjectBuilder::new()
            .schema_type(Type::String)
            .enum_values(Some(["documented", "full"])),
    ));
    if method == "post" && !open {
        params.push(optional_param(
            "Idempotency-Key",
            ParameterIn::Header,
            "Makes the POST safe to retry: a repeat with the same key and the same \
             request gets the first answer again (status, body, Location) without the \
             change being made twice, on any replica, for 24 hours. Keys are per \
             traveller; reusing one for a different request is 422. A JSON body is \
             compared in canonical form (whitespace and key order do not matter). Each \
             traveller's newest keys are remembered, up to the server's \
             --idempotency-keys-per-traveller (1000 by default): beyond it the oldest \
             are forgotten first, and a retry with a forgotten key is carried out \
             again. Requests that change nothing (checks, scans) are answered afresh.",
            ObjectBuilder::new()
                .schema_type(Type::String)
                .min_length(Some(1))
                .max_length(Some(crate::engine::idempotency::MAX_KEY_LEN))
                .pattern(Some("^[!-~]+$")),
        ));
    }
    add_response(
        op,
        "400",
        problem_response("Invalid request (e.g. an unknown `view`)"),
    );
    // The limit by client address applies before authentication, open endpoints included.
    add_response(
        op,
        "429",
        ResponseBuilder::from(problem_response(
            "Too many requests from this client address or traveller",
        ))
        .header(
            "Retry-After",
            string_header("Seconds to wait before trying again"),
        )
        .build(),
    );
    if open {
        return;
    }
    let validation = if listed(UNPROCESSABLE_ROUTES, method, path) {
        "422"
    } else {
        "400"
    };
    if validation == "422" {
        // Only a bad `view` is 400 here; everything else about the request is 422.
        op.responses.responses.insert(
            "400".to_owned(),
            RefOr::T(problem_response("An unknown `view`")),
        );
    }
    add_response(
        op,
        validation,
        problem_response(
            "The request cannot be used: malformed or missing fields, a wrong field type, an \
             unknown reference (unknown-reference), a closed timeline (timeline-closed), an event \
             that cannot be manipulated (event-locked), or an unstable change (paradox-detected)",
        ),
    );
    add_response(
        op,
        "401",
        ResponseBuilder::from(problem_response(
            "Missing, malformed, expired, tampered or unsigned bearer token",
        ))
        .header(
            "WWW-Authenticate",
            string_header("Bearer error=\"invalid_token\""),
        )
        .build(),
    );
    add_response(
        op,
        "403",
        problem_response(
            "The token lacks the scope the operation needs (its `x-chronoscope-operation` \
             says which: read, write or admin; admin also to delete a timeline another \
             traveller created): forbidden; the timeline's \
             access-control list does not give the right the operation needs: access-denied; \
             an operator restricted the traveller: travel-restricted",
        ),
    );
    add_response(op, "500", problem_response("An unexpected failure"));
    add_response(
        op,
        "503",
        problem_response("The service timed out or its storage is unavailable"),
    );
    if method == "post" {
        add_response(
            op,
            "422",
            problem_response(
                "The Idempotency-Key was sent before with a different request \
                 (idempotency-key-reused)",
            ),
        );
    }
    if op.request_body.is_some() {
        add_response(op, "413", problem_response("The request body is too large"));
        add_response(
            op,
            "415",
            problem_response("The body is not sent as Content-Type: application/json"),
        );
    }
    if path.contains('{') {
        add_response(
            op,
            "404",
            problem_response("No such resource, or it belongs to another traveller"),
        );
    }
    if listed(BODILESS_CONFLICT_ROUTES, method, path) {
        add_response(
            op,
            "409",
            ResponseBuilder::new()
                .description("It exists already: no body; Location names the existing one")
                .header("Location", string_header("Path of the existing resource"))
                .build(),
        );
    }
    if let Some((_, _, why)) = CONFLICT_ROUTES
        .iter()
        .find(|(m, p, _)| *m == method && *p == path)
    {
        add_response(
            op,
            "409",
            problem_response(&format!("Refused in the current state (conflict): {why}")),
        );
    }
}

/// Documents `response` for `status` in `op`, unless the operation documents that status itself.
fn add_response(op: &mut Operation, status: &str, response: utoipa::openapi::Response) {
    op.responses
        .responses
        .entry(status.to_owned())
        .or_insert(RefOr::T(response));
}

/// Completes a generated document: bearer security, the `view` parameter and error responses.
fn finish(mut doc: utoipa::openapi::OpenApi) -> utoipa::openapi::OpenApi {
    let components = doc.components.get_or_insert_with(Default::default);
    components.add_security_scheme(
        "bearerAuth",
        SecurityScheme::Http(
            HttpBuilder::new()
                .scheme(HttpAuthScheme::Bearer)
                .bearer_format("JWT")
                .description(Some(
                    "HS256 JWT with sub (traveller), exp, iat and scope (read write admin); \
                     `chronoscope token` issues one",
                ))
                .build(),
        ),
    );
    doc.security = Some(vec![SecurityRequirement::new::<_, _, &str>(
        "bearerAuth",
        [],
    )]);
    // An empty list is both views of a list, so the views are anyOf, not oneOf (`describe_views`
    // puts the full type first and closes the projection).
    for (name, schema) in components.schemas.iter_mut() {
        if let (true, RefOr::T(Schema::OneOf(one))) = (name.ends_with("View"), &*schema) {
            let any = one
                .items
                .iter()
                .cloned()
                .fold(AnyOfBuilder::new(), AnyOfBuilder::item)
                .description(one.description.clone());
            *schema = RefOr::T(Schema::AnyOf(any.build()));
        }
    }
    for (path, item) in doc.paths.paths.iter_mut() {
        for (method, op) in [
            ("get", &mut item.get),
            ("post", &mut item.post),
            ("delete", &mut item.delete),
            ("put", &mut item.put),
            ("patch", &mut item.patch),
        ] {
            if let Some(op) = op {
                complete(method, path, op);
            }
        }
    }
    doc
}

/// What an id looks like (see `model::ids`).
const ID_PATTERN: &str = "^[A-Za-z0-9_.-]{1,128}$";
/// A traveller's name as `model::Traveller` takes it: characters `Traveller::may_hold` allows,
/// the first and last also `Traveller::may_end`. Written from those two tests, so the schema and
/// the service cannot disagree; classes of explicit code points, because `\s` and `.` mean
/// different things to ECMA-262 validators and to Python's `re`, which schemathesis draws with.
fn traveller_pattern() -> &'static str {
    static PATTERN: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PATTERN.get_or_init(|| {
        use crate::model::Traveller;
        let end = class_of(Traveller::may_end);
        let inner = class_of(Traveller::may_hold);
        format!("^{end}(?:{inner}*{end})?$")
    })
}

/// The class of the characters `allowed` takes, written `[^…]` with the ranges it refuses.
/// Code points beyond the basic plane are written as themselves: no escape for them reads the
/// same in ECMA-262's `u` mode, Python and Rust.
fn class_of(allowed: fn(char) -> bool) -> String {
    fn push(class: &mut String, c: char) {
        use std::fmt::Write as _;
        if u32::from(c) <= 0xFFFF {
            let _ = write!(class, "\\u{:04X}", u32::from(c));
        } else {
            class.push(c);
        }
    }
    let mut ranges: Vec<(char, char)> = Vec::new();
    for c in (0..=u32::from(char::MAX)).filter_map(char::from_u32) {
        if allowed(c) {
            continue;
        }
        match ranges.last_mut() {
            Some((_, last)) if u32::from(*last) + 1 == u32::from(c) => *last = c,
            _ => ranges.push((c, c)),
        }
    }
    let mut class = String::from("[^");
    for (first, last) in ranges {
        push(&mut class, first);
        if last != first {
            class.push('-');
            push(&mut class, last);
        }
    }
    class.push(']');
    class
}

/// A text field: at least one character that is not white space as the server trims it (`\S`
/// would not do: ECMA-262 counts U+FEFF as a space and U+0085 as none, Rust the reverse).
fn text_pattern() -> &'static str {
    static PATTERN: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PATTERN.get_or_init(|| class_of(|c| !c.is_whitespace()))
}

/// An RFC 3339 date-time of a real calendar day (leap years included), as the server parses
/// them.
fn date_time_pattern() -> String {
    let long = r"\d{4}-(?:0[13578]|1[02])-(?:0[1-9]|[12]\d|3[01])";
    let short = r"\d{4}-(?:0[469]|11)-(?:0[1-9]|[12]\d|30)";
    let feb = r"\d{4}-02-(?:0[1-9]|1\d|2[0-8])";
    let leap = r"(?:\d{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)-02-29";
    let time = r"T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d{1,9})?";
    let offset = r"(?:Z|[+-](?:[01]\d|2[0-3]):[0-5]\d)";
    format!("(?:{long}|{short}|{feb}|{leap}){time}{offset}")
}

/// An ISO 8601 duration as the server reads it: up to four date parts and three time parts.
const DURATION_PATTERN: &str =
    r"P(?:(?:\d{1,4}[YMWD]){1,4}(?:T(?:\d{1,4}[HMS]){1,3})?|T(?:\d{1,4}[HMS]){1,3})";

/// `start/end`, `start/duration` or `duration/end`.
fn interval_pattern() -> String {
    let dt = date_time_pattern();
    format!("^(?:{dt}/(?:{dt}|{DURATION_PATTERN})|{DURATION_PATTERN}/{dt})$")
}

/// The cursor of an event search: the last event's time and id.
fn event_cursor_pattern() -> String {
    format!(r"^{}\|[A-Za-z0-9_.-]{{1,128}}$", date_time_pattern())
}

/// The text fields the service trims and refuses empty (`rules::text`).
const TEXT_FIELDS: &[&str] = &[
    "description",
    "external_system",
    "item_description",
    "location",
    "name",
    "script_name",
    "significant_event",
    "variation",
];

/// Operations whose `cursor` is an event cursor.
const EVENT_CURSOR_PATHS: &[&str] = &[
    "/v1/search-events",
    "/api/v1/scan-events",
    "/v1/monitor-events",
    "/v1/timeline/{timeline_id}/events",
];

/// Adds what the service checks to a string or integer schema named `name`, in place. `text`:
/// whether text fields are checked here (request bodies; query text is matched as given).
fn constrain_named(name: &str, schema: &mut serde_json::Value, path: &str, text: bool) {
    use serde_json::json;
    let Some(obj) = schema.as_object_mut() else {
        return;
    };
    if obj.contains_key("$ref") || obj.contains_key("oneOf") || obj.contains_key("anyOf") {
        return;
    }
    let is_type = |obj: &serde_json::Map<String, serde_json::Value>, ty: &str| match obj.get("type")
    {
        Some(serde_json::Value::String(t)) => t == ty,
        Some(serde_json::Value::Array(ts)) => ts.iter().any(|t| t == ty),
        _ => false,
    };
    if name == "limit" && is_type(obj, "integer") {
        obj.insert("minimum".into(), json!(1));
        obj.insert(
            "maximum".into(),
            json!(crate::service::PageRequest::MAX_LIMIT),
        );
        return;
    }
    if !is_type(obj, "string") {
        return;
    }
    // `format` only annotates in JSON Schema 2020-12; the pattern makes it a rule.
    if obj.get("format").and_then(|f| f.as_str()) == Some("date-time") {
        obj.insert(
            "pattern".into(),
            json!(format!("^{}$", date_time_pattern())),
        );
        return;
    }
    if name == "user_id" {
        // A traveller's name (a token's `sub`), not an id: printable characters, no space at
        // either end, no invisible format character (see `model::Traveller`). The id pattern
        // refused `ada@example.com`, which the service takes, and a schema must not refuse
        // what the service accepts.
        obj.insert("minLength".into(), json!(1));
        obj.insert(
            "maxLength".into(),
            json!(crate::model::Traveller::MAX_CHARS),
        );
        obj.insert("pattern".into(), json!(traveller_pattern()));
    } else if name.ends_with("_id") || name == "destination" {
        obj.insert("pattern".into(), json!(ID_PATTERN));
    } else if name == "time_range" || name == "date_range" {
        obj.insert("pattern".into(), json!(interval_pattern()));
    } else if name == "cursor" && EVENT_CURSOR_PATHS.contains(&path) {
        obj.insert("pattern".into(), json!(event_cursor_pattern()));
    } else if text && TEXT_FIELDS.contains(&name) {
        obj.insert("minLength".into(), json!(1));
        obj.insert("maxLength".into(), json!(crate::engine::rules::MAX_TEXT));
        obj.insert("pattern".into(), json!(text_pattern()));
    }
}

/// The component schemas request bodies use, found by following `$ref`s from them.
fn request_components(doc: &serde_json::Value) -> std::collections::BTreeSet<String> {
    let mut todo = Vec::new();
    if let Some(paths) = doc.get("paths").and_then(|p| p.as_object()) {
        for item in paths.values().filter_map(|i| i.as_object()) {
            for op in item.values() {
                if let Some(body) = op.get("requestBody") {
                    refs(body, &mut todo);
                }
            }
        }
    }
    match doc
        .pointer("/components/schemas")
        .and_then(|s| s.as_object())
    {
        Some(schemas) => reachable(schemas, todo),
        None => std::collections::BTreeSet::new(),
    }
}

/// Writes into the description what the service checks of every parameter and request body:
/// id patterns, page limits, intervals, non-empty text, and the rules `complete` cannot see.
fn constrain(doc: &mut serde_json::Value) {
    use serde_json::json;
    fn properties(schema: &mut serde_json::Value, path: &str, text: bool) {
        if let Some(props) = schema.get_mut("properties").and_then(|p| p.as_object_mut()) {
            for (name, prop) in props.iter_mut() {
                constrain_named(name, prop, path, text);
            }
        }
    }
    // The GET guide operations (and `DELETE /v1/delete-anchor`) read their fields from a JSON
    // body or the query (or both): each is optional, and a request that gives a required field
    // in neither is a 400.
    if let Some(paths) = doc.get_mut("paths").and_then(|p| p.as_object_mut()) {
        for op in paths
            .values_mut()
            .filter_map(|i| i.as_object_mut())
            .flat_map(|i| i.iter_mut())
            .filter(|(method, _)| *method == "get" || *method == "delete")
            .map(|(_, op)| op)
        {
            let Some(body) = op.get_mut("requestBody") else {
                continue;
            };
            body["required"] = json!(false);
            if let Some(params) = op.get_mut("parameters").and_then(|p| p.as_array_mut()) {
                for param in params.iter_mut().filter(|p| p["in"] == "query") {
                    param["required"] = json!(false);
                }
            }
        }
    }
    // Parameters.
    if let Some(paths) = doc.get_mut("paths").and_then(|p| p.as_object_mut()) {
        for (path, item) in paths.iter_mut() {
            let Some(item) = item.as_object_mut() else {
                continue;
            };
            for op in item.values_mut() {
                if let Some(params) = op.get_mut("parameters").and_then(|p| p.as_array_mut()) {
                    for param in params {
                        let name = param["name"].as_str().unwrap_or_default().to_owned();
                        let text = name == "significant_event";
                        if let Some(schema) = param.get_mut("schema") {
                            constrain_named(&name, schema, path, text);
                        }
                    }
                }
                // Inline request bodies (the GET operations' optional bodies are components).
                if let Some(schema) =
                    op.pointer_mut("/requestBody/content/application~1json/schema")
                {
                    properties(schema, path, true);
                }
            }
        }
    }
    // Request body components: their fields are checked wherever they are sent.
    for name in request_components(doc) {
        let path = match name.as_str() {
            "SearchParams" => "/v1/search-events",
            _ => "",
        };
        // Queries match their text as given; only what is created or named must be non-empty.
        let text = !matches!(
            name.as_str(),
            "SearchParams" | "LogParams" | "MonitorQuery" | "StabilityQuery"
        );
        if let Some(schema) = doc.pointer_mut(&format!("/components/schemas/{name}")) {
            properties(schema, path, text);
        }
    }
    if let Some(range) = doc.pointer_mut("/components/schemas/TimeRange") {
        constrain_named("time_range", range, "", false);
    }
    // Action words, including the guides' `modify_event`.
    if let Some(action_type) = doc.pointer_mut("/components/schemas/Action/properties/action_type")
    {
        let words: Vec<&str> = crate::automation::ACTION_WORDS
            .iter()
            .map(|(w, _)| *w)
            .collect();
        action_type["enum"] = json!(words);
    }
    // A timeline needs a name or a description (the name defaults to the description). The
    // rule stands in an `allOf` beside the properties: generators read a schema's properties
    // and an `allOf`'s, but keep only the alternatives of an `anyOf` standing beside them.
    if let Some(new_timeline) = doc.pointer_mut("/components/schemas/NewTimeline") {
        new_timeline["allOf"] = json!([{"anyOf": [
            {"required": ["name"], "properties": {"name": {"type": "string"}}},
            {"required": ["description"], "properties": {"description": {"type": "string"}}}
        ]}]);
    }
    // The documented manipulateEvent requires `timeline_id` (the guide operation defaults it):
    // its own component, the guide's request with that field required and never null.
    if let Some(manipulate) = doc
        .pointer("/components/schemas/ManipulateRequest")
        .cloned()
    {
        let mut documented = manipulate;
        documented["description"] = json!(
            "The documented ManipulateEventRequest (`POST /v1/events`): the timeline, the event \
             and its new outcome."
        );
        documented["properties"]["timeline_id"] = json!({
            "$ref": "#/components/schemas/TimelineId",
            "description": "The timeline containing the event.",
        });
        if let Some(required) = documented["required"].as_array_mut()
            && !required.iter().any(|r| r == "timeline_id")
        {
            required.insert(0, json!("timeline_id"));
        }
        if let Some(schemas) = doc
            .pointer_mut("/components/schemas")
            .and_then(|s| s.as_object_mut())
        {
            schemas.insert("ManipulateEventRequest".into(), documented);
        }
        if let Some(schema) =
            doc.pointer_mut("/paths/~1v1~1events/post/requestBody/content/application~1json/schema")
        {
            *schema = json!({"$ref": "#/components/schemas/ManipulateEventRequest"});
        }
    }
    // A body that may be left out is an optional request body of its type: `oneOf [null, X]`
    // makes generated clients send `null`, or fail, when the caller leaves it out. The server
    // also takes a `null` body as no body (clients may send one), which X then says: an
    // object or null, written without a `type` union (`not` the other types), which
    // generators would turn back into a union with null.
    let mut nullable_bodies = Vec::new();
    if let Some(paths) = doc.get_mut("paths").and_then(|p| p.as_object_mut()) {
        for item in paths.values_mut().filter_map(|i| i.as_object_mut()) {
            for op in item.values_mut() {
                let Some(body) = op.get_mut("requestBody") else {
                    continue;
                };
                let Some(schema) = body.pointer_mut("/content/application~1json/schema") else {
                    continue;
                };
                let alternatives = schema.get("oneOf").and_then(|o| o.as_array());
                let not_null: Vec<serde_json::Value> = alternatives
                    .map(|a| a.iter().filter(|s| s["type"] != "null").cloned().collect())
                    .unwrap_or_default();
                if alternatives.is_some_and(|a| a.len() == 2) && not_null.len() == 1 {
                    *schema = not_null[0].clone();
                    if let Some(name) = component_name(schema) {
                        nullable_bodies.push(name.to_owned());
                    }
                    body["required"] = json!(false);
                }
            }
        }
    }
    for name in nullable_bodies {
        if let Some(schema) = doc
            .pointer_mut(&format!("/components/schemas/{name}"))
            .and_then(|s| s.as_object_mut())
            && schema.get("type") == Some(&json!("object"))
        {
            schema.remove("type");
            schema.entry("properties").or_insert_with(|| json!({}));
            schema.insert(
                "not".into(),
                json!({"type": ["string", "number", "boolean", "array"]}),
            );
            let about = schema
                .get("description")
                .and_then(|d| d.as_str())
                .unwrap_or_default()
                .to_owned();
            schema.insert(
                "description".into(),
                json!(format!(
                    "{about} An object, or `null` (the same as no body)."
                )),
            );
        }
    }
}
