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

/// The operations that can refuse with a 409 problem (the state forbids it).
const CONFLICT_ROUTES: &[(&str, &str)] = &[
    ("delete", "/v1/timeline/{timeline_id}"),
    ("delete", "/v1/scripts/{script_id}"),
    ("delete", "/v1/schedules/{schedule_id}"),
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
    components(schemas(views::Problem)),
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
pub fn openapi() -> utoipa::openapi::OpenApi {
    let (_, doc) = super::routes::api_router().split_for_parts();
    finish(doc)
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

/// Adds the shared parameter and the error responses to one operation.
fn complete(method: &str, path: &str, op: &mut Operation) {
    let open = op
        .security
        .as_ref()
        .is_some_and(|s| s.iter().all(|r| *r == SecurityRequirement::default()));
    let params = op.parameters.get_or_insert_with(Vec::new);
    params.push(
        ParameterBuilder::new()
            .name("view")
            .parameter_in(ParameterIn::Query)
            .required(Required::False)
            .description(Some(
                "`full` answers the full types (and problems with `error`, `paradoxes`); \
                 default `documented`",
            ))
            .schema(Some(
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .enum_values(Some(["documented", "full"])),
            ))
            .build(),
    );
    if method == "post" && !open {
        params.push(
            ParameterBuilder::new()
                .name("Idempotency-Key")
                .parameter_in(ParameterIn::Header)
                .required(Required::False)
                .description(Some(
                    "Makes the POST safe to retry: a repeat with the same key and the same \
                     request gets the first answer again (status, body, Location) without the \
                     change being made twice, on any replica, for 24 hours. Keys are per \
                     traveller; reusing one for a different request is 422. Requests that \
                     change nothing (checks, scans) are answered afresh.",
                ))
                .schema(Some(
                    ObjectBuilder::new()
                        .schema_type(Type::String)
                        .min_length(Some(1))
                        .max_length(Some(crate::engine::idempotency::MAX_KEY_LEN))
                        .pattern(Some("^[!-~]+$")),
                ))
                .build(),
        );
    }
    let responses = &mut op.responses.responses;
    let mut add = |status: &str, response: utoipa::openapi::Response| {
        responses
            .entry(status.to_owned())
            .or_insert(RefOr::T(response));
    };
    add(
        "400",
        problem_response("Invalid request (e.g. an unknown `view`)"),
    );
    // The limit by client address applies before authentication, open endpoints included.
    add(
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
        op.responses.responses.remove("400");
    }
    let responses = &mut op.responses.responses;
    let mut add = |status: &str, response: utoipa::openapi::Response| {
        responses
            .entry(status.to_owned())
            .or_insert(RefOr::T(response));
    };
    add(
        validation,
        problem_response(
            "The request cannot be used: malformed or missing fields, a wrong field type, an \
             unknown reference (unknown-reference), a closed timeline (timeline-closed), an event \
             that cannot be manipulated (event-locked), or an unstable change (paradox-detected)",
        ),
    );
    add(
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
    add(
        "403",
        problem_response(
            "The token lacks the scope (read for GET, write for POST and DELETE, admin to \
             delete a timeline another traveller created)",
        ),
    );
    add(
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
    add("500", problem_response("An unexpected failure"));
    add(
        "503",
        problem_response("The service timed out or its storage is unavailable"),
    );
    if method == "post" {
        add(
            "422",
            problem_response(
                "The Idempotency-Key was sent before with a different request \
                 (idempotency-key-reused)",
            ),
        );
    }
    if op.request_body.is_some() {
        add("413", problem_response("The request body is too large"));
        add(
            "415",
            problem_response("The body is not sent as Content-Type: application/json"),
        );
    }
    if path.contains('{') {
        add(
            "404",
            problem_response("No such resource, or it belongs to another traveller"),
        );
    }
    if listed(BODILESS_CONFLICT_ROUTES, method, path) {
        add(
            "409",
            ResponseBuilder::new()
                .description("It exists already: no body; Location names the existing one")
                .header("Location", string_header("Path of the existing resource"))
                .build(),
        );
    }
    if listed(CONFLICT_ROUTES, method, path) {
        add(
            "409",
            problem_response(
                "Refused in the current state (branches or travellers in it, or the job already ran)",
            ),
        );
    }
}

/// Completes a generated document: bearer security, the `view` parameter and error responses.
pub(super) fn finish(mut doc: utoipa::openapi::OpenApi) -> utoipa::openapi::OpenApi {
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
    // A full body also matches its documented projection, so the views are anyOf, not oneOf.
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
