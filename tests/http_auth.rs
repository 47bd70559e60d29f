//! Authentication and scopes on every authenticated route of the OpenAPI document:
//! missing, malformed, expired, tampered, `alg: none`, other algorithms and foreign secrets
//! are 401 problems with `WWW-Authenticate: Bearer error="invalid_token"`; a valid token
//! without the scope is 403.

mod support;

use axum::body::Body;
use axum::http::{Method, Request};
use chronoscope::auth::Claims;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use support::http::*;

/// Every (method, path) of the document that needs a token, with path parameters filled in.
fn authenticated_routes() -> Vec<(Method, String)> {
    let doc = serde_json::to_value(chronoscope::server::openapi()).unwrap();
    let mut routes = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let open = op
                .get("security")
                .and_then(|s| s.as_array())
                .is_some_and(|s| {
                    s.iter()
                        .all(|r| r.as_object().is_some_and(|o| o.is_empty()))
                });
            if open {
                continue;
            }
            let filled = path
                .split('/')
                .map(|seg| if seg.starts_with('{') { "x_1" } else { seg })
                .collect::<Vec<_>>()
                .join("/");
            routes.push((method.to_uppercase().parse().unwrap(), filled));
        }
    }
    assert!(routes.len() >= 35, "only {} routes found", routes.len());
    routes
}

/// base64url without padding, so the test can craft tokens by hand.
fn b64(bytes: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(T[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

fn claims(sub: &str, exp: u64) -> Claims {
    Claims {
        sub: sub.into(),
        exp,
        iat: now(),
        scope: "read write admin".into(),
    }
}

/// The refused Authorization headers, named.
fn bad_authorizations() -> Vec<(&'static str, Option<String>)> {
    let good = token("ada");
    let mut parts: Vec<&str> = good.split('.').collect();
    let forged_payload = b64(serde_json::to_string(&claims("mallory", now() + 600))
        .unwrap()
        .as_bytes());
    parts[1] = &forged_payload;
    let tampered = parts.join(".");
    let none = format!(
        "{}.{}.",
        b64(br#"{"alg":"none","typ":"JWT"}"#),
        b64(serde_json::to_string(&claims("ada", now() + 600))
            .unwrap()
            .as_bytes())
    );
    let expired = chronoscope::auth::sign(&secret(), &claims("ada", now() - 120)).unwrap();
    let hs512 = jsonwebtoken::encode(
        &Header::new(Algorithm::HS512),
        &claims("ada", now() + 600),
        &EncodingKey::from_secret(SECRET.as_bytes()),
    )
    .unwrap();
    let foreign = jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &claims("ada", now() + 600),
        &EncodingKey::from_secret(b"some other server's secret"),
    )
    .unwrap();
    vec![
        ("missing", None),
        ("malformed", Some("Bearer not-a-jwt".into())),
        ("empty bearer", Some("Bearer ".into())),
        ("basic scheme", Some(format!("Basic {good}"))),
        ("expired", Some(format!("Bearer {expired}"))),
        ("tampered", Some(format!("Bearer {tampered}"))),
        ("alg none", Some(format!("Bearer {none}"))),
        ("HS512", Some(format!("Bearer {hs512}"))),
        ("foreign secret", Some(format!("Bearer {foreign}"))),
    ]
}

#[tokio::test]
async fn every_authenticated_route_refuses_bad_tokens_with_401() {
    let app = App::new().await;
    let routes = authenticated_routes();
    for (name, auth) in bad_authorizations() {
        for (method, path) in &routes {
            let mut req = Request::builder().method(method.clone()).uri(path.as_str());
            if let Some(a) = &auth {
                req = req.header("authorization", a.as_str());
            }
            // A malformed body too: authentication must be decided first.
            let req = req
                .header("content-type", "application/json")
                .body(Body::from("{not json"))
                .unwrap();
            let r = app.send(req).await;
            assert_eq!(
                r.status.as_u16(),
                401,
                "{name}: {method} {path}: {}",
                r.text
            );
            r.assert_problem(401, "unauthorized");
            assert_eq!(
                r.header("www-authenticate"),
                Some("Bearer error=\"invalid_token\""),
                "{name}: {method} {path}"
            );
        }
    }
}

#[tokio::test]
async fn a_valid_token_without_the_scope_is_403_on_every_route() {
    let app = App::new().await;
    let read_only = token_with_scope("ada", "read");
    let write_only = token_with_scope("ada", "write");
    let nothing = token_with_scope("ada", "");
    // The scope follows what an operation does: these POSTs only read.
    let reading_posts = [
        "/v1/simulate-wormhole",
        "/v1/decrypt-data",
        "/v1/create-index",
        "/v1/detect-tampering",
        "/v1/validate-integrity",
    ];
    // And this GET writes (the traveller goes and picks the item up).
    let writing_gets = ["/v1/retrieve-item"];
    for (method, path) in authenticated_routes() {
        let reads = if method == Method::GET {
            !writing_gets.contains(&path.as_str())
        } else {
            reading_posts.contains(&path.as_str())
        };
        let wrong = if reads { &write_only } else { &read_only };
        for t in [wrong, &nothing] {
            let r = app.call(method.clone(), &path, Some(t), None).await;
            r.assert_problem(403, "forbidden");
        }
    }
}

#[tokio::test]
async fn admin_implies_read_and_write() {
    let app = App::new().await;
    let admin = token_with_scope("ada", "admin");
    let r = app.get("/v1/me", &admin).await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.text);
    let r = app
        .post(
            "/v1/items",
            &admin,
            serde_json::json!({"description": "lamp"}),
        )
        .await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.text);
    // And a token made by issue_token for read+write works on both too.
    assert_eq!(
        app.get("/v1/items", &token("ada")).await.status.as_u16(),
        200
    );
}

#[tokio::test]
async fn a_token_within_the_leeway_is_still_accepted() {
    let app = App::new().await;
    let just_expired = chronoscope::auth::sign(
        &secret(),
        &Claims {
            scope: "read".into(),
            ..claims("ada", now() - 1)
        },
    )
    .unwrap();
    assert_eq!(app.get("/v1/me", &just_expired).await.status.as_u16(), 200);
}

#[tokio::test]
async fn each_refused_token_is_explained_in_a_sentence() {
    let app = App::new().await;
    let long_ago = Claims {
        iat: 1_699_990_000,
        ..claims("ada", 1_700_000_000)
    };
    let expired = chronoscope::auth::sign(&secret(), &long_ago).unwrap();
    let mut bad = bad_authorizations();
    bad.push(("long expired", Some(format!("Bearer {expired}"))));
    let expected = [
        ("malformed", "the token is not a well-formed JWT (three base64url parts joined by dots); was it pasted whole?".to_owned()),
        ("long expired", "the token expired at 2023-11-14T22:13:20Z; mint a new one with `chronoscope token`".to_owned()),
        ("tampered", "the token's signature does not match this server's secret".to_owned()),
        ("foreign secret", "the token's signature does not match this server's secret".to_owned()),
        ("alg none", "the token is signed with none, and this server accepts HS256 tokens only".to_owned()),
        ("HS512", "the token is signed with HS512, and this server accepts HS256 tokens only".to_owned()),
    ];
    for (name, wording) in expected {
        let auth = bad
            .iter()
            .find(|(n, _)| *n == name)
            .and_then(|(_, a)| a.clone())
            .unwrap();
        let req = Request::builder()
            .uri("/v1/me")
            .header("authorization", auth)
            .body(Body::empty())
            .unwrap();
        let problem = app.send(req).await.assert_problem(401, "unauthorized");
        let detail = problem["detail"].as_str().unwrap_or_default();
        assert!(detail.starts_with(&wording), "{name}: {detail}");
        assert!(
            !detail.contains("Signature") && !detail.contains("InvalidToken"),
            "{name}: no library names: {detail}"
        );
    }
}
