//! Tokens from a team's identity provider: RS256, ES256 and the other asymmetric JWS
//! algorithms, verified against the provider's JSON Web Key Set (RFC 7517).
//!
//! The key set comes from a file (`--jwks-file`, read once at start) or a URL (`--jwks-url`,
//! fetched at start and again when its `Cache-Control: max-age` runs out, and early when a
//! token names a key id the set does not have: the provider rotated its keys). `iss` and `aud`
//! are checked when configured. A team then mints no tokens with the server's secret; HS256
//! tokens from `chronoscope token` keep working beside them.
//!
//! Keys are chosen by the token's `kid`, and a token must be signed with the algorithm its key
//! is for: an `oct` (shared secret) key in a published set is ignored, so a public key can
//! never be used as an HMAC secret (the algorithm-confusion attack).

use std::fmt;
use std::path::Path;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Header, Validation};
use serde::Deserialize;

use super::{
    AuthError, Claims, LEEWAY_SECS, PROVIDER_CLAIMS, TokenRefusal, claim_at_fault, now_secs,
    rfc3339,
};

/// Shortest wait between two fetches of a key set, whatever its cache headers say.
pub const MIN_REFRESH: Duration = Duration::from_secs(60);
/// Longest a fetched key set is kept without asking again.
pub const MAX_REFRESH: Duration = Duration::from_secs(24 * 3600);
/// How long a fetched key set is kept when its answer has no `max-age`.
pub const DEFAULT_REFRESH: Duration = Duration::from_secs(15 * 60);
/// How soon a fetch that failed is tried again.
pub const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(10);
/// Shortest wait between two fetches started by unknown key ids (a flood of tokens naming
/// made-up keys costs at most one fetch per this interval).
pub const UNKNOWN_KEY_REFRESH: Duration = Duration::from_secs(2);

/// What the identity provider's travellers are called here by default: `idp:` before their
/// `sub`, so that no token the server mints itself can name one of them, nor they one of its.
pub const DEFAULT_SUBJECT_PREFIX: &str = "idp:";

/// What a token from the identity provider must also say, when configured, and what its
/// subjects are called here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdentityChecks {
    /// The `iss` every token must carry.
    pub issuer: Option<String>,
    /// A value the token's `aud` must carry.
    pub audience: Option<String>,
    /// Put before every provider token's `sub` to name its traveller ([`DEFAULT_SUBJECT_PREFIX`]
    /// unless the operator chose another; empty when they chose to share one namespace). The
    /// server's own tokens may not name a subject that starts with it.
    pub subject_prefix: String,
}

impl Default for IdentityChecks {
    fn default() -> Self {
        Self {
            issuer: None,
            audience: None,
            subject_prefix: DEFAULT_SUBJECT_PREFIX.into(),
        }
    }
}

impl IdentityChecks {
    /// Refuses a configuration without an audience unless `any_audience` says every audience
    /// is meant: without one, a token the provider issued to another service (with an `admin`
    /// scope there) would be an operator's here.
    pub fn require_audience(&self, any_audience: bool) -> Result<(), AuthError> {
        match (&self.audience, any_audience) {
            (None, false) => Err(AuthError::KeySet(
                "an identity provider's key set is given without --jwt-audience: every token \
                 that provider issued to any service would be accepted here, with its scopes. \
                 Name this server's audience with --jwt-audience, or pass --jwt-any-audience if \
                 every token of the provider is meant for this server"
                    .into(),
            )),
            _ => Ok(()),
        }
    }

    /// The traveller name a provider token's `sub` stands for.
    fn traveller(&self, sub: &str) -> String {
        format!("{}{sub}", self.subject_prefix)
    }

    /// Whether `sub`, named by one of the server's own tokens, is in the provider's namespace.
    pub(super) fn reserves(&self, sub: &str) -> bool {
        !self.subject_prefix.is_empty() && sub.starts_with(&self.subject_prefix)
    }
}

/// The identity provider's public keys, and what its tokens must say.
pub struct IdentityKeys {
    /// The file or URL the keys come from, for messages.
    source: String,
    checks: IdentityChecks,
    /// `None` until a fetched set arrives.
    set: RwLock<Option<Arc<JwkSet>>>,
    /// When the set was last fetched (URL only).
    fetched: Mutex<Option<Instant>>,
    /// Wakes the refresher early (an unknown key id).
    wake: tokio::sync::Notify,
    /// Whether the set is fetched from a URL (and so fetched again), or read from a file once.
    from_url: bool,
}

impl fmt::Debug for IdentityKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let keys = self
            .set
            .read()
            .map(|s| s.as_ref().map_or(0, |s| s.keys.len()))
            .unwrap_or(0);
        f.debug_struct("IdentityKeys")
            .field("source", &self.source)
            .field("checks", &self.checks)
            .field("keys", &keys)
            .finish()
    }
}

/// The claims an identity provider's token is read with: `iat` is optional there, and scopes
/// come as OAuth 2's space-separated `scope` or as `scp` (a string or a list of strings).
#[derive(Deserialize)]
struct ProviderClaims {
    sub: String,
    exp: u64,
    #[serde(default)]
    iat: Option<u64>,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    scp: Option<ScopeList>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ScopeList {
    Words(String),
    List(Vec<String>),
}

impl IdentityKeys {
    /// The key set in `path` (read now, once).
    pub fn from_file(path: &Path, checks: IdentityChecks) -> Result<Arc<Self>, AuthError> {
        let text = std::fs::read(path).map_err(|e| {
            AuthError::KeySet(format!("cannot read the key set {}: {e}", path.display()))
        })?;
        let source = path.display().to_string();
        let set = parse_set(&text, &source)?;
        Ok(Arc::new(Self::new(source, checks, Some(set))))
    }

    /// Keys to be fetched from `url` by [`IdentityKeys::refresh_from`]; until the first fetch
    /// succeeds, the provider's tokens are refused saying so.
    pub fn at_url(url: &reqwest::Url, checks: IdentityChecks) -> Arc<Self> {
        Arc::new(Self::new(url.to_string(), checks, None))
    }

    fn new(source: String, checks: IdentityChecks, set: Option<JwkSet>) -> Self {
        Self {
            source,
            checks,
            from_url: set.is_none(),
            set: RwLock::new(set.map(Arc::new)),
            fetched: Mutex::new(None),
            wake: tokio::sync::Notify::new(),
        }
    }

    /// Whether the set is fetched again while the server runs (from a URL), not read once.
    fn fetches(&self) -> bool {
        self.from_url
    }

    /// What the provider's tokens must say, and how their subjects are named here.
    pub fn checks(&self) -> &IdentityChecks {
        &self.checks
    }

    /// Where the keys come from.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Fetches the set from `url` once and keeps it; answers how long it may be kept.
    pub async fn fetch(
        &self,
        http: &reqwest::Client,
        url: &reqwest::Url,
    ) -> Result<Duration, String> {
        if let Ok(mut at) = self.fetched.lock() {
            *at = Some(Instant::now());
        }
        let answer = http
            .get(url.clone())
            .send()
            .await
            .map_err(|e| format!("cannot fetch the key set from {url}: {}", root_cause(&e)))?;
        if !answer.status().is_success() {
            return Err(format!(
                "{url} answered {} for the key set",
                answer.status()
            ));
        }
        let keep = max_age(answer.headers());
        let body = answer
            .bytes()
            .await
            .map_err(|e| format!("cannot read the key set from {url}: {}", root_cause(&e)))?;
        let set = parse_set(&body, url.as_str()).map_err(|e| e.to_string())?;
        if let Ok(mut kept) = self.set.write() {
            *kept = Some(Arc::new(set));
        }
        Ok(keep)
    }

    /// Keeps the set from `url` current, forever: again when its `max-age` runs out (within
    /// [`MIN_REFRESH`]..[`MAX_REFRESH`]), [`RETRY_AFTER_FAILURE`] after a failed fetch, and
    /// early when a token names a key id the set does not have. `first_wait` is how long the
    /// set fetched at start may be kept.
    pub async fn refresh_from(
        self: Arc<Self>,
        http: reqwest::Client,
        url: reqwest::Url,
        first_wait: Duration,
    ) {
        let mut wait = first_wait;
        loop {
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = self.wake.notified() => {
                    let since = self.since_fetch().unwrap_or(UNKNOWN_KEY_REFRESH);
                    tokio::time::sleep(UNKNOWN_KEY_REFRESH.saturating_sub(since)).await;
                }
            }
            wait = match self.fetch(&http, &url).await {
                Ok(keep) => keep,
                Err(e) => {
                    tracing::warn!(%e, "the identity provider's keys were not refreshed; the \
                                        ones fetched before are kept");
                    RETRY_AFTER_FAILURE
                }
            };
        }
    }

    fn since_fetch(&self) -> Option<Duration> {
        self.fetched.lock().ok()?.map(|at| at.elapsed())
    }

    /// Verifies a token whose header names an asymmetric algorithm.
    pub(super) fn verify(&self, token: &str, header: &Header) -> Result<Claims, AuthError> {
        let refuse = |why| Err(AuthError::InvalidToken(why));
        if !is_asymmetric(header.alg) {
            return refuse(TokenRefusal::WrongAlgorithm {
                alg: format!("{:?}", header.alg),
            });
        }
        let Some(set) = self.set.read().ok().and_then(|s| s.clone()) else {
            tracing::info!(keys = %self.source, "a provider token was refused: its keys are not fetched yet");
            return refuse(TokenRefusal::ProviderKeysMissing);
        };
        let jwk = match &header.kid {
            Some(kid) => match set.find(kid).filter(|k| usable(k)) {
                Some(jwk) => jwk,
                None => {
                    // Perhaps the provider rotated its keys: fetch the set again soon (a
                    // set read from a file is read at start only).
                    let refetched = self.fetches();
                    if refetched {
                        self.wake.notify_one();
                    }
                    return refuse(TokenRefusal::UnknownKey {
                        kid: kid.clone(),
                        refetched,
                    });
                }
            },
            None => {
                let mut fitting = set.keys.iter().filter(|k| fits(k, header.alg));
                match (fitting.next(), fitting.next()) {
                    (Some(only), None) => only,
                    _ => {
                        return refuse(TokenRefusal::BadClaim {
                            claim: "kid".into(),
                            problem: "(a header field) is missing, and the identity provider's \
                                      key set has several keys for this algorithm, or none",
                        });
                    }
                }
            }
        };
        if !fits(jwk, header.alg) {
            return refuse(TokenRefusal::KeyForAnotherAlgorithm {
                alg: format!("{:?}", header.alg),
                kid: header.kid.clone().unwrap_or_default(),
            });
        }
        let key = DecodingKey::from_jwk(jwk)
            .map_err(|e| AuthError::InvalidToken(TokenRefusal::key_trouble(&e)))?;
        let mut validation = Validation::new(header.alg);
        validation.leeway = LEEWAY_SECS;
        validation.validate_exp = true;
        let mut required = vec!["exp", "sub"];
        if let Some(issuer) = &self.checks.issuer {
            validation.set_issuer(&[issuer]);
            required.push("iss");
        }
        match &self.checks.audience {
            Some(audience) => {
                validation.set_audience(&[audience]);
                required.push("aud");
            }
            None => validation.validate_aud = false,
        }
        validation.validate_nbf = true;
        validation.set_required_spec_claims(&required);
        let claims = jsonwebtoken::decode::<ProviderClaims>(token, &key, &validation)
            .map_err(|e| AuthError::InvalidToken(self.refusal(&e, token)))?
            .claims;
        if let Some(iat) = claims.iat
            && iat > now_secs() + LEEWAY_SECS
        {
            return refuse(TokenRefusal::IssuedInFuture { at: rfc3339(iat) });
        }
        let sub = self.checks.traveller(&claims.sub);
        sub.parse::<crate::model::Traveller>()
            .map_err(|e| AuthError::InvalidToken(TokenRefusal::BadSubject(e.to_string())))?;
        let mut scope = claims.scope.unwrap_or_default();
        match claims.scp {
            Some(ScopeList::Words(words)) => scope = format!("{scope} {words}"),
            Some(ScopeList::List(list)) => scope = format!("{scope} {}", list.join(" ")),
            None => {}
        }
        Ok(Claims {
            sub,
            exp: claims.exp,
            iat: claims.iat.unwrap_or(0),
            scope: scope.split_whitespace().collect::<Vec<_>>().join(" "),
        })
    }

    fn refusal(&self, e: &jsonwebtoken::errors::Error, token: &str) -> TokenRefusal {
        use jsonwebtoken::errors::ErrorKind as K;
        match e.kind() {
            K::InvalidSignature => TokenRefusal::ProviderSignature,
            K::Json(_) => claim_at_fault(token, PROVIDER_CLAIMS).unwrap_or(TokenRefusal::Malformed),
            K::InvalidIssuer => TokenRefusal::WrongIssuer {
                expected: self.checks.issuer.clone().unwrap_or_default(),
            },
            K::InvalidAudience => TokenRefusal::WrongAudience {
                expected: self.checks.audience.clone().unwrap_or_default(),
            },
            _ => TokenRefusal::of(e, token),
        }
    }
}

/// Parses a key set and checks it has a key chronoscope can verify with.
fn parse_set(bytes: &[u8], source: &str) -> Result<JwkSet, AuthError> {
    let set: JwkSet = serde_json::from_slice(bytes).map_err(|e| {
        AuthError::KeySet(format!(
            "the key set {source} is not a JSON Web Key Set ({{\"keys\": [...]}}): {e}"
        ))
    })?;
    if !set.keys.iter().any(usable) {
        return Err(AuthError::KeySet(format!(
            "the key set {source} has no public key chronoscope can verify with (RSA, EC P-256 or \
             P-384, Ed25519; shared-secret `oct` keys are never taken from a key set)"
        )));
    }
    Ok(set)
}

/// An asymmetric key [`DecodingKey::from_jwk`] can read.
fn usable(jwk: &Jwk) -> bool {
    !matches!(jwk.algorithm, AlgorithmParameters::OctetKey(_)) && DecodingKey::from_jwk(jwk).is_ok()
}

fn is_asymmetric(alg: Algorithm) -> bool {
    !matches!(alg, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512)
}

/// Whether `jwk` is a key for tokens signed with `alg`: its own `alg` when it names one, else
/// its kind (and curve).
fn fits(jwk: &Jwk, alg: Algorithm) -> bool {
    if !usable(jwk) {
        return false;
    }
    if let Some(named) = jwk.common.key_algorithm {
        return Algorithm::try_from(named).is_ok_and(|named| named == alg);
    }
    use Algorithm as A;
    match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => matches!(
            alg,
            A::RS256 | A::RS384 | A::RS512 | A::PS256 | A::PS384 | A::PS512
        ),
        AlgorithmParameters::EllipticCurve(ec) => matches!(
            (&ec.curve, alg),
            (EllipticCurve::P256, A::ES256) | (EllipticCurve::P384, A::ES384)
        ),
        AlgorithmParameters::OctetKeyPair(_) => alg == A::EdDSA,
        _ => false,
    }
}

/// How long an answer may be kept, from its `Cache-Control` (`no-store`/`no-cache`: the
/// shortest wait), within [`MIN_REFRESH`]..[`MAX_REFRESH`].
fn max_age(headers: &reqwest::header::HeaderMap) -> Duration {
    let Some(value) = headers
        .get(reqwest::header::CACHE_CONTROL)
        .and_then(|v| v.to_str().ok())
    else {
        return DEFAULT_REFRESH;
    };
    let mut keep = DEFAULT_REFRESH;
    for directive in value.split(',').map(str::trim) {
        let lower = directive.to_ascii_lowercase();
        if lower == "no-store" || lower == "no-cache" {
            return MIN_REFRESH;
        }
        if let Some(secs) = lower.strip_prefix("max-age=")
            && let Ok(secs) = secs.trim_matches('"').parse::<u64>()
        {
            keep = Duration::from_secs(secs);
        }
    }
    keep.clamp(MIN_REFRESH, MAX_REFRESH)
}

fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;
    use jsonwebtoken::EncodingKey;
    use serde_json::json;

    use super::*;
    use crate::auth::{Scopes, Verifier};

    fn b64(bytes: &[u8]) -> String {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    }

    /// A P-256 key pair made now: its signing key and its public JWK named `kid`.
    fn ec_key(kid: &str) -> (EncodingKey, serde_json::Value) {
        let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)
            .unwrap_or_else(|e| panic!("{e}"));
        let point = pair.public_key_raw();
        // An uncompressed point: 0x04, then x and y.
        let (x, y) = point[1..].split_at(32);
        let jwk = json!({"kty": "EC", "crv": "P-256", "kid": kid, "use": "sig",
                         "x": b64(x), "y": b64(y)});
        (EncodingKey::from_ec_der(&pair.serialize_der()), jwk)
    }

    fn sign(
        alg: Algorithm,
        key: &EncodingKey,
        kid: Option<&str>,
        claims: serde_json::Value,
    ) -> String {
        let mut header = Header::new(alg);
        header.kid = kid.map(str::to_owned);
        jsonwebtoken::encode(&header, &claims, key).unwrap_or_else(|e| panic!("{e}"))
    }

    fn claims(extra: serde_json::Value) -> serde_json::Value {
        let mut c = json!({"sub": "ada", "exp": now_secs() + 600, "scope": "openid read"});
        if let (Some(c), Some(extra)) = (c.as_object_mut(), extra.as_object()) {
            c.extend(extra.clone());
        }
        c
    }

    fn keys(jwks: &[serde_json::Value], checks: IdentityChecks) -> Arc<IdentityKeys> {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("jwks.json");
        std::fs::write(&path, json!({"keys": jwks}).to_string()).unwrap_or_else(|e| panic!("{e}"));
        IdentityKeys::from_file(&path, checks).unwrap_or_else(|e| panic!("{e}"))
    }

    fn secret() -> crate::auth::Secret {
        crate::auth::Secret::from_bytes("0123456789abcdef0123456789abcdef")
            .unwrap_or_else(|e| panic!("{e}"))
    }

    fn refusal(verifier: &Verifier, token: &str) -> TokenRefusal {
        match verifier.verify(token) {
            Err(AuthError::InvalidToken(why)) => why,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn an_es256_token_verifies_against_the_key_set_beside_hs256_tokens() {
        let (key, jwk) = ec_key("k1");
        let verifier =
            Verifier::with_identity(secret(), Some(keys(&[jwk], IdentityChecks::default())));
        let token = sign(
            Algorithm::ES256,
            &key,
            Some("k1"),
            claims(json!({"scp": ["write"]})),
        );
        let claims = verifier.verify(&token).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            claims.sub, "idp:ada",
            "the provider's travellers have a namespace"
        );
        let scopes = Scopes::parse(&claims.scope);
        assert!(
            scopes.allows(crate::auth::Scope::Read) && scopes.allows(crate::auth::Scope::Write)
        );
        // The server's own tokens still verify with its secret.
        let own = crate::auth::issue_token(
            &secret(),
            "bob",
            &Scopes::parse("read"),
            Duration::from_secs(60),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            verifier.verify(&own).map(|c| c.sub).ok(),
            Some("bob".into())
        );
    }

    #[test]
    fn an_rs256_token_verifies_against_the_key_set() {
        use rsa::pkcs1::EncodeRsaPrivateKey;
        use rsa::traits::PublicKeyParts;
        let private = rsa::RsaPrivateKey::new(&mut rand_core_06::OsRng, 2048)
            .unwrap_or_else(|e| panic!("{e}"));
        let der = private.to_pkcs1_der().unwrap_or_else(|e| panic!("{e}"));
        let jwk = json!({"kty": "RSA", "kid": "r1", "alg": "RS256",
                         "n": b64(&private.n().to_bytes_be()), "e": b64(&private.e().to_bytes_be())});
        let verifier =
            Verifier::with_identity(secret(), Some(keys(&[jwk], IdentityChecks::default())));
        let key = EncodingKey::from_rsa_der(der.as_bytes());
        let token = sign(Algorithm::RS256, &key, Some("r1"), claims(json!({})));
        assert_eq!(
            verifier.verify(&token).map(|c| c.sub).ok(),
            Some("idp:ada".into())
        );
        // The key names RS256: a PS256 signature by the same key is refused.
        let pss = sign(Algorithm::PS256, &key, Some("r1"), claims(json!({})));
        assert!(matches!(
            refusal(&verifier, &pss),
            TokenRefusal::KeyForAnotherAlgorithm { .. }
        ));
    }

    #[test]
    fn unknown_keys_altered_tokens_and_foreign_issuers_are_refused_saying_why() {
        let (key, jwk) = ec_key("k1");
        let (stranger, _) = ec_key("k1");
        let checks = IdentityChecks {
            issuer: Some("https://id.example".into()),
            audience: Some("chronoscope".into()),
            ..IdentityChecks::default()
        };
        let verifier = Verifier::with_identity(secret(), Some(keys(&[jwk], checks)));
        let good = json!({"iss": "https://id.example", "aud": ["other", "chronoscope"]});
        let token = sign(Algorithm::ES256, &key, Some("k1"), claims(good.clone()));
        assert!(verifier.verify(&token).is_ok());

        let unknown = sign(Algorithm::ES256, &key, Some("k9"), claims(good.clone()));
        let why = refusal(&verifier, &unknown);
        assert!(
            matches!(&why, TokenRefusal::UnknownKey { kid, .. } if kid == "k9"),
            "{why}"
        );

        let forged = sign(Algorithm::ES256, &stranger, Some("k1"), claims(good));
        let why = refusal(&verifier, &forged);
        assert!(matches!(why, TokenRefusal::ProviderSignature), "{why}");

        let other_issuer = claims(json!({"iss": "https://evil.example", "aud": "chronoscope"}));
        let why = refusal(
            &verifier,
            &sign(Algorithm::ES256, &key, Some("k1"), other_issuer),
        );
        assert!(why.to_string().contains("https://id.example"), "{why}");

        let other_audience = claims(json!({"iss": "https://id.example", "aud": "billing"}));
        let why = refusal(
            &verifier,
            &sign(Algorithm::ES256, &key, Some("k1"), other_audience),
        );
        assert!(matches!(why, TokenRefusal::WrongAudience { .. }), "{why}");
    }

    #[test]
    fn a_key_set_without_an_audience_is_refused_unless_every_audience_is_meant() {
        let none = IdentityChecks::default();
        let err = none.require_audience(false).err().map(|e| e.to_string());
        assert!(
            err.as_deref()
                .is_some_and(|e| e.contains("--jwt-audience") && e.contains("--jwt-any-audience")),
            "{err:?}"
        );
        assert!(none.require_audience(true).is_ok());
        let named = IdentityChecks {
            audience: Some("chronoscope".into()),
            ..IdentityChecks::default()
        };
        assert!(named.require_audience(false).is_ok());
    }

    #[test]
    fn a_provider_token_not_valid_yet_is_refused() {
        let (key, jwk) = ec_key("k1");
        let verifier =
            Verifier::with_identity(secret(), Some(keys(&[jwk], IdentityChecks::default())));
        let thirty_days = 30 * 24 * 3600;
        let early = claims(json!({"nbf": now_secs() + thirty_days}));
        let why = refusal(&verifier, &sign(Algorithm::ES256, &key, Some("k1"), early));
        assert!(matches!(why, TokenRefusal::NotYetValid { .. }), "{why}");
    }

    #[test]
    fn provider_subjects_and_the_servers_own_never_name_each_other() {
        let (key, jwk) = ec_key("k1");
        let verifier = Verifier::with_identity(
            secret(),
            Some(keys(std::slice::from_ref(&jwk), IdentityChecks::default())),
        );
        // The provider's `root` is `idp:root` here, never the operator's `root`.
        let root = sign(
            Algorithm::ES256,
            &key,
            Some("k1"),
            claims(json!({"sub": "root"})),
        );
        assert_eq!(
            verifier.verify(&root).map(|c| c.sub).ok(),
            Some("idp:root".into())
        );
        // A token minted with the server's secret cannot claim a provider traveller's name.
        let own = |sub: &str| {
            crate::auth::issue_token(
                &secret(),
                sub,
                &Scopes::parse("read"),
                Duration::from_secs(60),
            )
            .unwrap_or_else(|e| panic!("{e}"))
        };
        let why = refusal(&verifier, &own("idp:grace"));
        assert!(
            matches!(&why, TokenRefusal::BadSubject(s) if s.contains("--jwt-subject-prefix")),
            "{why}"
        );
        assert!(verifier.verify(&own("grace")).is_ok());
        // An operator who chose one shared namespace gets it, and says so by an empty prefix.
        let shared = IdentityChecks {
            subject_prefix: String::new(),
            ..IdentityChecks::default()
        };
        let verifier = Verifier::with_identity(secret(), Some(keys(&[jwk], shared)));
        assert_eq!(
            verifier.verify(&root).map(|c| c.sub).ok(),
            Some("root".into())
        );
        assert!(verifier.verify(&own("idp:grace")).is_ok());
    }

    #[test]
    fn refusals_never_tell_the_caller_where_the_keys_are() {
        let (key, jwk) = ec_key("k1");
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("provider-keys.json");
        std::fs::write(&path, json!({"keys": [jwk]}).to_string()).unwrap_or_else(|e| panic!("{e}"));
        let keys = IdentityKeys::from_file(&path, IdentityChecks::default())
            .unwrap_or_else(|e| panic!("{e}"));
        let verifier = Verifier::with_identity(secret(), Some(keys));
        let (stranger, _) = ec_key("k1");
        for token in [
            sign(Algorithm::ES256, &key, Some("k9"), claims(json!({}))),
            sign(Algorithm::ES256, &stranger, Some("k1"), claims(json!({}))),
        ] {
            let why = refusal(&verifier, &token).to_string();
            assert!(
                !why.contains("provider-keys.json")
                    && !why.contains(&*dir.path().to_string_lossy()),
                "{why}"
            );
            // A file is read at start only: nobody is fetching it again.
            assert!(!why.contains("fetched again"), "{why}");
        }
    }

    #[test]
    fn a_public_key_is_never_used_as_an_hmac_secret() {
        // An `oct` key in a published set is ignored, and an HS256 token goes to the server's
        // own secret, never to a key of the set.
        let (_, jwk) = ec_key("k1");
        let oct = json!({"kty": "oct", "kid": "s1", "k": b64(b"0123456789abcdef0123456789abcdef")});
        let verifier =
            Verifier::with_identity(secret(), Some(keys(&[jwk, oct], IdentityChecks::default())));
        let hmac = EncodingKey::from_secret(b"0123456789abcdef0123456789abcdef");
        let token = sign(
            Algorithm::HS256,
            &hmac,
            Some("s1"),
            claims(json!({"iat": now_secs()})),
        );
        // Signed with bytes that happen to be this test's server secret: accepted as the
        // server's own token, which it is. With another secret it is refused.
        assert!(verifier.verify(&token).is_ok());
        let other = Verifier::with_identity(
            crate::auth::Secret::from_bytes("another secret, long enough for HS256")
                .unwrap_or_else(|e| panic!("{e}")),
            Some(keys(&[ec_key("k1").1], IdentityChecks::default())),
        );
        assert!(matches!(
            refusal(&other, &token),
            TokenRefusal::BadSignature
        ));
    }

    #[test]
    fn a_key_set_without_a_usable_key_is_refused_at_start() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("jwks.json");
        std::fs::write(&path, r#"{"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}"#)
            .unwrap_or_else(|e| panic!("{e}"));
        let err = IdentityKeys::from_file(&path, IdentityChecks::default())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            err.contains("no public key") && err.contains("jwks.json"),
            "{err}"
        );
        std::fs::write(&path, "[]").unwrap_or_else(|e| panic!("{e}"));
        let err = IdentityKeys::from_file(&path, IdentityChecks::default())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("not a JSON Web Key Set"), "{err}");
    }

    #[test]
    fn cache_headers_decide_how_long_a_fetched_set_is_kept() {
        let with = |value: &str| {
            let mut headers = reqwest::header::HeaderMap::new();
            headers.insert(
                reqwest::header::CACHE_CONTROL,
                value.parse().unwrap_or_else(|e| panic!("{e}")),
            );
            max_age(&headers)
        };
        assert_eq!(with("public, max-age=3600"), Duration::from_secs(3600));
        assert_eq!(with("max-age=5"), MIN_REFRESH);
        assert_eq!(with("max-age=9999999"), MAX_REFRESH);
        assert_eq!(with("no-store"), MIN_REFRESH);
        assert_eq!(max_age(&reqwest::header::HeaderMap::new()), DEFAULT_REFRESH);
    }
}
