//! The attacks of the trust review (issue 37) that a token holder can try over HTTP, each
//! tried as the attacker would: a token not valid yet, a header marking an unknown extension
//! critical, subjects that look like another traveller's, a well-formed token with a bad
//! claim, `HEAD` on a GET that writes, and a reader's scans appending to the log.

mod support;

use axum::http::Method;
use chronoscope::auth::Claims;
use jsonwebtoken::{EncodingKey, Header};
use serde_json::{Value, json};
use support::http::*;

/// An HS256 token with this server's secret and exactly these claims and header.
fn signed(header: &Header, claims: &Value) -> String {
    jsonwebtoken::encode(header, claims, &EncodingKey::from_secret(SECRET.as_bytes())).unwrap()
}

fn hs256() -> Header {
    Header::new(jsonwebtoken::Algorithm::HS256)
}

/// The claims a good token carries, for `sub`.
fn good_claims(sub: &str) -> Value {
    json!({"sub": sub, "iat": now(), "exp": now() + 600, "scope": "read write"})
}

/// The refusal `token` gets on `/v1/me`: its detail, after checking it is a 401 problem.
async fn refused(app: &App, token: &str) -> String {
    let r = app.get("/v1/me", token).await;
    let problem = r.assert_problem(401, "unauthorized");
    problem["detail"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn a_token_not_valid_yet_is_refused_saying_when_it_becomes_valid() {
    let app = App::new().await;
    let a_year = 365 * 24 * 3600;
    let mut claims = good_claims("ada");
    claims["nbf"] = json!(now() + a_year);
    let detail = refused(&app, &signed(&hs256(), &claims)).await;
    assert!(detail.contains("is not valid before"), "{detail}");
    // Valid from now (or a moment ago): accepted.
    claims["nbf"] = json!(now() - 1);
    let r = app.get("/v1/me", &signed(&hs256(), &claims)).await;
    assert_eq!(r.status, 200, "{}", r.text);
}

#[tokio::test]
async fn a_header_naming_a_critical_extension_is_refused() {
    let app = App::new().await;
    // jsonwebtoken's Header has no `crit`: build the token's header by hand.
    use base64::Engine as _;
    use hmac::Mac as _;
    let b64 = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
    let forge = |header: Value| {
        let head = b64(header.to_string().as_bytes());
        let body = b64(good_claims("ada").to_string().as_bytes());
        let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(SECRET.as_bytes()).unwrap();
        mac.update(format!("{head}.{body}").as_bytes());
        format!("{head}.{body}.{}", b64(&mac.finalize().into_bytes()))
    };
    let critical = forge(json!({"alg": "HS256", "typ": "JWT", "crit": ["exp-v2"], "exp-v2": 1}));
    let detail = refused(&app, &critical).await;
    assert!(
        detail.contains("critical") && detail.contains("exp-v2"),
        "{detail}"
    );
    // The same header without `crit`, signed the same way, is accepted: the refusal is the
    // extension's, not the hand-made token's.
    let plain = forge(json!({"alg": "HS256", "typ": "JWT", "exp-v2": 1}));
    let r = app.get("/v1/me", &plain).await;
    assert_eq!(r.status, 200, "{}", r.text);
}

#[tokio::test]
async fn subjects_that_would_pass_for_another_traveller_are_refused() {
    let app = App::new().await;
    for sub in [
        "root ",
        " root",
        "root\t",
        "ro\u{200b}ot", // zero-width space
        "root\u{200d}", // zero-width joiner
        "\u{202e}toor", // right-to-left override
        "\u{feff}root", // byte order mark
        "root\u{2060}", // word joiner
    ] {
        let detail = refused(&app, &signed(&hs256(), &good_claims(sub))).await;
        assert!(detail.contains("subject"), "{sub:?}: {detail}");
    }
    // And they cannot be named in an access list either, where they would show as `root`.
    let ada = token("ada");
    let created = app
        .post("/v1/timelines", &ada, json!({"name": "ada's"}))
        .await;
    assert_eq!(created.status, 201, "{}", created.text);
    let id = created.json()["id"].as_str().unwrap().to_owned();
    let r = app
        .post(
            "/v1/set-access-control",
            &ada,
            json!({"timeline_id": id, "permissions": {"read": ["ro\u{200b}ot"], "write": [], "admin": ["ada"]}}),
        )
        .await;
    r.assert_problem(400, "invalid-request");
    // A plain name is still fine.
    assert_eq!(app.get("/v1/me", &token("grace hopper")).await.status, 200);
}

#[tokio::test]
async fn a_well_formed_token_with_a_bad_claim_is_told_which_claim() {
    let app = App::new().await;
    let cases = [
        (
            json!({"sub": "ada", "iat": now(), "exp": now() + 600, "scope": 7}),
            "'scope'",
        ),
        (
            json!({"sub": "ada", "iat": now(), "exp": "tomorrow"}),
            "'exp'",
        ),
        (
            json!({"sub": 42, "iat": now(), "exp": now() + 600}),
            "'sub'",
        ),
        (json!({"sub": "ada", "exp": now() + 600}), "'iat'"),
        (json!({"iat": now(), "exp": now() + 600}), "'sub'"),
    ];
    for (claims, claim) in cases {
        let detail = refused(&app, &signed(&hs256(), &claims)).await;
        assert!(
            detail.contains(claim) && !detail.contains("not a well-formed JWT"),
            "{claims}: {detail}"
        );
    }
}

#[tokio::test]
async fn head_never_performs_the_write_a_get_makes() {
    let app = App::new().await;
    let ada = token("ada");
    let lamp = "/v1/retrieve-item?item_description=lamp";
    let r = app.call(Method::HEAD, lamp, Some(&ada), None).await;
    assert_eq!(r.status, 405, "{}", r.text);
    assert_eq!(r.header("allow"), Some("GET, POST"));
    // Nothing was registered.
    let items = app.get("/v1/items", &ada).await;
    assert_eq!(items.json(), json!([]), "{}", items.text);
    // HEAD on a GET that only reads still answers.
    let timelines = app
        .call(Method::HEAD, "/v1/timelines", Some(&ada), None)
        .await;
    assert_eq!(timelines.status, 200);
    // The GET itself still picks the item up.
    let got = app.get(lamp, &ada).await;
    assert_eq!(got.status, 200, "{}", got.text);
}

#[tokio::test]
async fn a_readers_tampering_scans_append_nothing_to_the_log() {
    let app = App::new().await;
    let store = app.engine.store();
    let operator = token_with_scope("root", "read write admin");
    let scan = |t: String| {
        let app = &app;
        async move {
            let r = app
                .post(
                    "/v1/detect-tampering",
                    &t,
                    json!({"timeline_id": "primary", "scan_depth": "full"}),
                )
                .await;
            assert_eq!(r.status, 200, "{}", r.text);
        }
    };
    // A `read` token, and a traveller an operator made read-only or limited.
    for (who, level) in [("rhea", "read_only"), ("lim", "limited_access")] {
        let r = app
            .post(
                "/v1/restrict-time-travel",
                &operator,
                json!({"user_id": who, "restriction_level": level}),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.text);
    }
    let before = store.last_seq().await.unwrap();
    for _ in 0..3 {
        scan(token_with_scope("reader", "read")).await;
        scan(token("rhea")).await;
        scan(token("lim")).await;
    }
    assert_eq!(
        store.last_seq().await.unwrap(),
        before,
        "nine scans by callers who may not write appended records"
    );
    // A writer's scan is recorded, as before.
    scan(token("ada")).await;
    assert_eq!(store.last_seq().await.unwrap(), before + 1);
}

#[test]
fn claims_of_a_minted_token_still_verify() {
    // The strict checks above must not refuse what `chronoscope token` mints.
    let token = chronoscope::auth::issue_token(
        &secret(),
        "ada",
        &chronoscope::auth::Scopes::parse("read"),
        std::time::Duration::from_secs(60),
    )
    .unwrap();
    let claims: Claims = chronoscope::auth::verify(&secret(), &token).unwrap();
    assert_eq!(claims.sub, "ada");
}
