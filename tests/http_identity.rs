//! Tokens from a team's identity provider: ES256 tokens verified against a JSON Web Key Set
//! served by a local listener (as an identity provider serves its `jwks_uri`), with `iss` and
//! `aud` checked, the set kept as long as its cache headers say, and a key rotation followed
//! without a restart. The server's own HS256 tokens keep working beside them.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::http::header::CACHE_CONTROL;
use axum::routing::get;
use base64::Engine as _;
use chronoscope::auth::{IdentityChecks, IdentityKeys};
use chronoscope::server::ServerConfig;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use support::http::*;

const ISSUER: &str = "https://id.example.test";
const AUDIENCE: &str = "chronoscope";

/// A P-256 key pair made now: its signing key and its public JWK named `kid`.
fn ec_key(kid: &str) -> (EncodingKey, Value) {
    let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let point = pair.public_key_raw();
    let (x, y) = point[1..].split_at(32);
    let b64 = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
    let jwk = json!({"kty": "EC", "crv": "P-256", "kid": kid, "alg": "ES256",
                     "x": b64(x), "y": b64(y)});
    (EncodingKey::from_ec_der(&pair.serialize_der()), jwk)
}

/// A token as the identity provider would issue it.
fn provider_token(key: &EncodingKey, kid: &str, iss: &str, scope: &str) -> String {
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some(kid.into());
    let claims = json!({"sub": "grace", "iss": iss, "aud": [AUDIENCE, "other-app"],
                        "exp": now() + 600, "iat": now(), "scope": scope});
    jsonwebtoken::encode(&header, &claims, key).unwrap()
}

/// The provider's key-set endpoint: serves `set` with a one-hour max-age, counting fetches.
struct KeyServer {
    url: reqwest::Url,
    set: Arc<Mutex<Value>>,
    fetches: Arc<AtomicUsize>,
}

async fn key_server(keys: Vec<Value>) -> KeyServer {
    let set = Arc::new(Mutex::new(json!({ "keys": keys })));
    let fetches = Arc::new(AtomicUsize::new(0));
    let (served, counted) = (Arc::clone(&set), Arc::clone(&fetches));
    let app = Router::new().route(
        "/.well-known/jwks.json",
        get(move || {
            counted.fetch_add(1, Ordering::SeqCst);
            let body = served.lock().unwrap().to_string();
            async move { ([(CACHE_CONTROL, "public, max-age=3600")], body) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let at = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    KeyServer {
        url: format!("http://{at}/.well-known/jwks.json")
            .parse()
            .unwrap(),
        set,
        fetches,
    }
}

/// A server whose identity provider is `keys`, fetched and kept current as `serve` does.
async fn served_with(keys: &KeyServer) -> App {
    chronoscope::tls::install_default_provider();
    let identity = IdentityKeys::at_url(
        &keys.url,
        IdentityChecks {
            issuer: Some(ISSUER.into()),
            audience: Some(AUDIENCE.into()),
            ..IdentityChecks::default()
        },
    );
    let http = reqwest::Client::new();
    let keep = identity.fetch(&http, &keys.url).await.unwrap();
    assert_eq!(
        keep,
        Duration::from_secs(3600),
        "the set is kept as its max-age says"
    );
    tokio::spawn(Arc::clone(&identity).refresh_from(http, keys.url.clone(), keep));
    App::with(ServerConfig {
        identity: Some(identity),
        ..config()
    })
    .await
}

#[tokio::test]
async fn an_identity_providers_tokens_are_accepted_with_their_scopes() {
    let (key, jwk) = ec_key("2026-11");
    let keys = key_server(vec![jwk]).await;
    let app = served_with(&keys).await;

    let reader = provider_token(&key, "2026-11", ISSUER, "openid read");
    assert_eq!(app.get("/v1/timelines", &reader).await.status, 200);
    // The scopes are the provider's: reading only.
    let refused = app
        .post("/v1/timelines", &reader, json!({"name": "by-grace"}))
        .await;
    refused.assert_problem(403, "forbidden");
    let writer = provider_token(&key, "2026-11", ISSUER, "read write");
    let created = app
        .post("/v1/timelines", &writer, json!({"name": "by-grace"}))
        .await;
    assert_eq!(created.status, 201, "{}", created.text);

    // Another issuer, or a key from elsewhere, is refused, saying which.
    let foreign = app
        .get(
            "/v1/timelines",
            &provider_token(&key, "2026-11", "https://evil.test", "read"),
        )
        .await
        .assert_problem(401, "unauthorized");
    assert!(detail(&foreign).contains(ISSUER), "{foreign}");
    let (stranger, _) = ec_key("2026-11");
    let forged = app
        .get(
            "/v1/timelines",
            &provider_token(&stranger, "2026-11", ISSUER, "read"),
        )
        .await
        .assert_problem(401, "unauthorized");
    assert!(detail(&forged).contains("signature"), "{forged}");

    // The server's own tokens still work beside the provider's.
    assert_eq!(app.get("/v1/timelines", &token("ada")).await.status, 200);
    // Nothing above needed the set again: it is kept for its max-age.
    assert_eq!(keys.fetches.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_key_rotation_at_the_provider_is_followed_without_a_restart() {
    let (old, old_jwk) = ec_key("old");
    let keys = key_server(vec![old_jwk.clone()]).await;
    let app = served_with(&keys).await;
    assert_eq!(
        app.get(
            "/v1/timelines",
            &provider_token(&old, "old", ISSUER, "read")
        )
        .await
        .status,
        200
    );

    // The provider publishes a new key and signs with it from now on.
    let (new, new_jwk) = ec_key("new");
    *keys.set.lock().unwrap() = json!({ "keys": [old_jwk, new_jwk] });
    let token = provider_token(&new, "new", ISSUER, "read");
    let first = app.get("/v1/timelines", &token).await;
    let problem = first.assert_problem(401, "unauthorized");
    assert!(
        detail(&problem).contains("retry in a few seconds"),
        "{problem}"
    );
    // The unknown key id made the server fetch the set again, soon, not at the hour.
    let mut status = first.status;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        status = app.get("/v1/timelines", &token).await.status;
        if status == 200 {
            break;
        }
    }
    assert_eq!(status, 200, "the new key was not picked up within 10 s");
    assert_eq!(keys.fetches.load(Ordering::SeqCst), 2);
}
