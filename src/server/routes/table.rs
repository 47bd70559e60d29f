//! The operation table: what every route does, declared once where it is routed (beside its
//! OpenAPI registration), and read by everything that must know it — the scope check and HEAD
//! handling ([`super::super::extract::Caller`]), forwarding writes to the writer's lease holder
//! ([`super::super::forward`]), the access log's name for a refusal and
//! the served OpenAPI description (`x-chronoscope-operation` on each operation).
//!
//! Before it, three places guessed from the method and the path and disagreed: a write under
//! `/api/v1/` was never forwarded, a GET that writes (`retrieve-item`) was made on a follower,
//! and POSTs that only read were sent to the writer.

use std::collections::HashMap;
use std::sync::Arc;

use axum::http::Method;
use utoipa::openapi::extensions::ExtensionsBuilder;
use utoipa::openapi::path::{Operation as Documented, PathItem};
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouter};

use super::super::AppState;
use crate::auth::Scope;

/// What an operation does, as the layers around it need to know.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::server) struct Does {
    /// The scope its token needs; `None` for the open endpoints (no token).
    pub scope: Option<Scope>,
    /// Whether it may change the state: made by the holder of the writer's lease (forwarded
    /// there from a follower), never answered to HEAD.
    pub writes: bool,
    /// Whether its cost grows with the history or the world rather than with what it asks:
    /// marked in the description (its rate-limit cost is not applied yet).
    pub heavy: bool,
}

impl Does {
    /// Reads, with the `read` scope.
    pub const fn reads() -> Self {
        Self {
            scope: Some(Scope::Read),
            writes: false,
            heavy: false,
        }
    }

    /// Changes the state, with the `write` scope.
    pub const fn writes() -> Self {
        Self {
            scope: Some(Scope::Write),
            writes: true,
            heavy: false,
        }
    }

    /// Needs no token (health, readiness, the description, problem pages).
    pub const fn open() -> Self {
        Self {
            scope: None,
            writes: false,
            heavy: false,
        }
    }

    /// The same, needing `scope` instead.
    pub const fn needing(self, scope: Scope) -> Self {
        Self {
            scope: Some(scope),
            ..self
        }
    }

    /// The same, costing more as history grows.
    pub const fn heavy(self) -> Self {
        Self {
            heavy: true,
            ..self
        }
    }

    /// As the served description says it.
    fn described(&self) -> serde_json::Value {
        serde_json::json!({
            "scope": self.scope.map(Scope::as_str),
            "writes": self.writes,
            "heavy": self.heavy,
        })
    }
}

/// One routed operation.
#[derive(Debug)]
pub(in crate::server) struct Operation {
    /// Its method (GET also answers HEAD unless it writes).
    pub method: Method,
    /// What it does.
    pub does: Does,
    /// Its name in the access log when refused before a session sees it: `GET /v1/timeline/{timeline_id}`.
    pub log_name: String,
}

/// The access log's name of the operation whose OpenAPI id is `operation_id`, in the engine's
/// words (`isolateEvent` → `isolate_event`): for most operations the very name a session logs
/// it under once the token's scope lets it through. The engine names a few by what they record
/// instead (every journey is `travel`, `addEvent` is `add_events`); those keep the operation's
/// own name here. The guides' spellings of an operation are that operation
/// (`guideSetAnchor` → `set_anchor`).
fn log_name(operation_id: &str) -> String {
    let bare = ["guide", "tutorial"]
        .iter()
        .find_map(|p| {
            operation_id
                .strip_prefix(p)
                .filter(|r| r.starts_with(char::is_uppercase))
        })
        .unwrap_or(operation_id);
    let mut name = String::with_capacity(bare.len() + 4);
    for c in bare.chars() {
        if c.is_uppercase() && !name.is_empty() {
            name.push('_');
        }
        name.push(c.to_ascii_lowercase());
    }
    name
}

/// Every routed operation, looked up by the route a request matched.
#[derive(Debug, Default)]
pub(in crate::server) struct Operations {
    by_path: HashMap<String, Vec<Arc<Operation>>>,
}

impl Operations {
    /// The operation `method` on the route `path` (as matched: `/v1/timeline/{timeline_id}`);
    /// HEAD is its GET's.
    pub fn find(&self, method: &Method, path: &str) -> Option<&Arc<Operation>> {
        let method = if method == Method::HEAD {
            &Method::GET
        } else {
            method
        };
        self.by_path.get(path)?.iter().find(|o| o.method == method)
    }

    /// Every operation, in no particular order.
    #[cfg(test)]
    pub fn iter(&self) -> impl Iterator<Item = &Operation> {
        self.by_path.values().flatten().map(AsRef::as_ref)
    }
}

/// Builds the router and the table together: every route is added with what it does.
pub(in crate::server) struct Api {
    router: OpenApiRouter<AppState>,
    table: Operations,
}

impl Api {
    /// Routes added to `router` (which has none yet).
    pub fn new(router: OpenApiRouter<AppState>) -> Self {
        Self {
            router,
            table: Operations::default(),
        }
    }

    /// Adds `route` (one `routes!(handler)`), which does `does`; its OpenAPI operation says so.
    pub fn route(mut self, does: Does, route: UtoipaMethodRouter<AppState>) -> Self {
        let (schemas, mut paths, method_router) = route;
        for (path, item) in paths.paths.iter_mut() {
            for (method, op) in operations_mut(item) {
                op.extensions.get_or_insert_with(Default::default).merge(
                    ExtensionsBuilder::new()
                        .add("x-chronoscope-operation", does.described())
                        .build(),
                );
                let log_name = op
                    .operation_id
                    .as_deref()
                    .map_or_else(|| format!("{method} {path}"), log_name);
                self.table
                    .by_path
                    .entry(path.clone())
                    .or_default()
                    .push(Arc::new(Operation {
                        method,
                        does,
                        log_name,
                    }));
            }
        }
        self.router = self.router.routes((schemas, paths, method_router));
        self
    }

    /// Reads: `Does::reads()`.
    pub fn reads(self, route: UtoipaMethodRouter<AppState>) -> Self {
        self.route(Does::reads(), route)
    }

    /// Writes: `Does::writes()`.
    pub fn writes(self, route: UtoipaMethodRouter<AppState>) -> Self {
        self.route(Does::writes(), route)
    }

    /// The router and its table.
    pub fn finish(self) -> (OpenApiRouter<AppState>, Operations) {
        (self.router, self.table)
    }
}

/// The operations of `item` with their methods.
fn operations_mut(item: &mut PathItem) -> impl Iterator<Item = (Method, &mut Documented)> {
    [
        (Method::GET, &mut item.get),
        (Method::PUT, &mut item.put),
        (Method::POST, &mut item.post),
        (Method::DELETE, &mut item.delete),
        (Method::OPTIONS, &mut item.options),
        (Method::HEAD, &mut item.head),
        (Method::PATCH, &mut item.patch),
        (Method::TRACE, &mut item.trace),
    ]
    .into_iter()
    .filter_map(|(method, op)| op.as_mut().map(|op| (method, op)))
}

#[cfg(test)]
mod tests {
    use axum::http::Method;

    #[test]
    fn a_refused_operation_is_logged_by_the_name_the_engine_gives_it() {
        use super::log_name;
        assert_eq!(log_name("isolateEvent"), "isolate_event");
        assert_eq!(log_name("setAccessControl"), "set_access_control");
        assert_eq!(log_name("guideSetAnchor"), "set_anchor");
        assert_eq!(log_name("tutorialManipulateEvent"), "manipulate_event");
        assert_eq!(log_name("whoami"), "whoami");
        // Only a whole word is the guides' mark.
        assert_eq!(log_name("guidelines"), "guidelines");
        // What the table holds for a route, refused by scope before a session sees it.
        let (_, table) = super::super::api_router();
        let isolate = table.find(&Method::POST, "/v1/isolate-event");
        assert_eq!(isolate.map(|o| o.log_name.as_str()), Some("isolate_event"));
    }

    /// A route added beside the table (a plain `.routes(…)`, another router merged in) would
    /// be served without `x-chronoscope-operation` and found by nothing that reads the table:
    /// forwarded or not by guess, needing a scope by guess.
    #[test]
    fn every_served_operation_is_in_the_table_and_says_what_it_does() {
        let (router, table) = super::super::api_router();
        let (_, doc) = router.split_for_parts();
        let served = crate::server::openapi::document(doc);
        let paths = served["paths"]
            .as_object()
            .expect("the description has paths");
        let mut seen = 0;
        for (path, item) in paths {
            let item = item.as_object().expect("a path item is an object");
            for (method, op) in item {
                let Ok(method) = Method::from_bytes(method.to_ascii_uppercase().as_bytes()) else {
                    continue;
                };
                if !op.is_object() {
                    continue;
                }
                let entry = table
                    .find(&method, path)
                    .unwrap_or_else(|| panic!("{method} {path} is served but not in the table"));
                assert_eq!(
                    op["x-chronoscope-operation"],
                    entry.does.described(),
                    "{method} {path} is described as doing something else than the table says"
                );
                seen += 1;
            }
        }
        assert_eq!(
            seen,
            table.iter().count(),
            "the table lists operations that are not served"
        );
    }

    /// What the table says of the operations whose method does not tell: a GET that writes,
    /// POSTs that only read, writes outside `/v1/`.
    #[test]
    fn the_table_says_what_an_operation_does_not_what_its_method_suggests() {
        let (_, table) = super::super::api_router();
        let does = |method: Method, path: &str| {
            table
                .find(&method, path)
                .unwrap_or_else(|| panic!("{method} {path} is not in the table"))
                .does
        };
        assert!(does(Method::GET, "/v1/retrieve-item").writes);
        assert!(does(Method::HEAD, "/v1/retrieve-item").writes);
        assert!(does(Method::POST, "/api/v1/travel").writes);
        assert!(does(Method::POST, "/api/v1/manipulate-event").writes);
        for reads in [
            "/v1/paradox-checks",
            "/v1/decrypt-data",
            "/v1/create-index",
            "/v1/simulate-wormhole",
            "/api/v1/scan-events",
        ] {
            assert!(!does(Method::POST, reads).writes, "POST {reads}");
        }
        assert!(does(Method::GET, "/v1/timeline/{timeline_id}/events").heavy);
        assert!(!does(Method::GET, "/v1/timelines").heavy);
        assert_eq!(does(Method::GET, "/healthz").scope, None);
    }
}
