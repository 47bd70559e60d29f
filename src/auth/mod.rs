//! Bearer JWT: signing, verification, scopes, the server's secret.
//!
//! Tokens are HS256 JWTs with the claims `sub` (the traveller), `exp`, `iat` and `scope` (a
//! space-separated subset of `read write admin`). The secret comes from a flag, the
//! `CHRONOSCOPE_JWT_SECRET` environment variable, or a generated file in the data directory,
//! so `chronoscope token` and `chronoscope serve` on one data directory agree.

mod extract;
pub mod jwks;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

use crate::model::Traveller;

pub use extract::{AuthRejection, Authenticated};
pub use jwks::{IdentityChecks, IdentityKeys};

/// Environment variable holding the signing secret.
pub const SECRET_ENV: &str = "CHRONOSCOPE_JWT_SECRET";
/// Name of the generated secret file in the data directory.
pub const SECRET_FILE: &str = "jwt-secret";
/// Clock skew tolerated on `exp` and `iat`, in seconds.
pub const LEEWAY_SECS: u64 = 5;
/// Shortest secret accepted: HS256 wants a key at least as long as its 256-bit hash
/// (RFC 7518 §3.2).
pub const MIN_SECRET_LEN: usize = 32;

/// What a token allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scope {
    /// GET operations.
    Read,
    /// POST and DELETE operations.
    Write,
    /// Everything (implies read and write).
    Admin,
}

impl Scope {
    /// The word used in the `scope` claim.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Read => "read",
            Scope::Write => "write",
            Scope::Admin => "admin",
        }
    }

    /// Parses one scope word.
    pub fn parse(word: &str) -> Option<Self> {
        match word {
            "read" => Some(Scope::Read),
            "write" => Some(Scope::Write),
            "admin" => Some(Scope::Admin),
            _ => None,
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The scopes a token grants (unknown words are ignored).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scopes(Vec<Scope>);

impl Scopes {
    /// Parses a space-separated `scope` claim.
    pub fn parse(claim: &str) -> Self {
        let mut scopes: Vec<Scope> = claim.split_whitespace().filter_map(Scope::parse).collect();
        scopes.sort();
        scopes.dedup();
        Self(scopes)
    }

    /// Whether these scopes allow an operation needing `needed` (admin allows everything).
    pub fn allows(&self, needed: Scope) -> bool {
        self.0.contains(&needed) || self.0.contains(&Scope::Admin)
    }

    /// The scopes granted.
    pub fn iter(&self) -> impl Iterator<Item = Scope> + '_ {
        self.0.iter().copied()
    }

    /// The `scope` claim for these scopes.
    pub fn to_claim(&self) -> String {
        self.0
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

impl FromIterator<Scope> for Scopes {
    fn from_iter<I: IntoIterator<Item = Scope>>(iter: I) -> Self {
        let mut scopes: Vec<Scope> = iter.into_iter().collect();
        scopes.sort();
        scopes.dedup();
        Self(scopes)
    }
}

/// The claims of a chronoscope token.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// The traveller.
    pub sub: String,
    /// Expiry, seconds since the epoch.
    pub exp: u64,
    /// Issue time, seconds since the epoch.
    pub iat: u64,
    /// Space-separated scopes; absent means none.
    #[serde(default)]
    pub scope: String,
}

/// What can go wrong with secrets and tokens.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// The secret file or directory could not be read or written.
    #[error("cannot use the token secret at {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The secret file exists but others may read it.
    #[error(
        "refusing to use the token secret {path}: it is readable by group or others (mode {mode:o}); \
         run `chmod 600 {path}` or delete it to have a new one generated"
    )]
    InsecureFile {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The secret given is unusable.
    #[error("the token secret {0}")]
    BadSecret(String),
    /// The token is malformed, expired, tampered with or not HS256.
    #[error("{0}")]
    InvalidToken(TokenRefusal),
    /// An identity provider's key set cannot be read or used.
    #[error("{0}")]
    KeySet(String),
    /// A token could not be signed.
    #[error("cannot sign a token: {0}")]
    Signing(String),
}

/// Why a token was refused, worded for the person holding it: what is wrong, and what to do.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TokenRefusal {
    /// Its `exp` has passed.
    #[error("the token expired at {at}; mint a new one with `chronoscope token`")]
    Expired {
        /// When, RFC 3339 in UTC.
        at: String,
    },
    /// Signed with another secret, or altered.
    #[error(
        "the token's signature does not match this server's secret (was it minted for another \
         server, or altered?); mint one with `chronoscope token` on the server's data directory \
         or with its --jwt-secret-file"
    )]
    BadSignature,
    /// Not three base64url parts of JSON joined by dots.
    #[error(
        "the token is not a well-formed JWT (three base64url parts joined by dots); was it \
         pasted whole? `chronoscope token` mints one"
    )]
    Malformed,
    /// Signed with an algorithm other than HS256.
    #[error(
        "the token is signed with {alg}, and this server accepts HS256 tokens only; mint one \
         with `chronoscope token`"
    )]
    WrongAlgorithm {
        /// The `alg` its header names.
        alg: String,
    },
    /// A claim the token needs is missing or not of its type.
    #[error("the token's '{claim}' claim {problem}; mint one with `chronoscope token`")]
    BadClaim {
        /// The claim.
        claim: String,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// Its header names critical extensions this server does not understand.
    #[error(
        "the token's header marks extensions as critical ('crit': {names}), and this server \
         understands none, so it cannot accept the token (RFC 7515 §4.1.11)"
    )]
    CriticalExtension {
        /// The extensions named.
        names: String,
    },
    /// Its `iat` is ahead of this server's clock.
    #[error(
        "the token was issued at {at}, which is in this server's future; is the clock of the \
         machine that minted it (or of the server) wrong?"
    )]
    IssuedInFuture {
        /// When, RFC 3339 in UTC.
        at: String,
    },
    /// Its `sub` is not a traveller name.
    #[error("the token's subject cannot be a traveller: {0}")]
    BadSubject(String),
    /// Signed with an identity provider's key that is not in its key set (yet). Where the
    /// keys come from is the operator's business: it is logged, never told to the caller.
    #[error(
        "the token is signed with the key '{kid}', which is not in the identity provider's key \
         set{}",
        if *refetched {
            "; the set is being fetched again, so retry in a few seconds if the provider has \
             just rotated its keys"
        } else {
            " this server read at start; if the provider has rotated its keys, the server's \
             operator must give it the new set"
        }
    )]
    UnknownKey {
        /// The key id the token names.
        kid: String,
        /// Whether the set is being fetched again (a URL), or was read once (a file).
        refetched: bool,
    },
    /// The identity provider's keys have not been fetched yet.
    #[error(
        "this server could not fetch its identity provider's keys yet; retry shortly (the \
         server's log says why)"
    )]
    ProviderKeysMissing,
    /// The signature does not verify with the identity provider's key.
    #[error(
        "the token's signature does not verify with the identity provider's key (was it \
         altered, or issued by another provider?)"
    )]
    ProviderSignature,
    /// Signed with an algorithm the named key is not for.
    #[error("the token is signed with {alg}, which its key '{kid}' is not for")]
    KeyForAnotherAlgorithm {
        /// The `alg` of the token's header.
        alg: String,
        /// The key id.
        kid: String,
    },
    /// Its `iss` is not the configured issuer.
    #[error(
        "the token was not issued by {expected}, the issuer this server accepts (--jwt-issuer)"
    )]
    WrongIssuer {
        /// The issuer configured.
        expected: String,
    },
    /// Its `aud` does not name the configured audience.
    #[error(
        "the token is not meant for {expected}, the audience this server accepts (--jwt-audience)"
    )]
    WrongAudience {
        /// The audience configured.
        expected: String,
    },
    /// Its `nbf` (not before) is ahead of this server's clock.
    #[error("the token is not valid before {at}; use it then, or mint one valid now")]
    NotYetValid {
        /// When it becomes valid, RFC 3339 in UTC.
        at: String,
    },
    /// Its `sub` is not the subject this server expects.
    #[error("the token names a subject this server does not accept")]
    WrongSubject,
    /// The key this server would check the token with cannot be used (a server-side problem).
    #[error(
        "this server cannot check the token: the key it would use is unusable ({0}); the \
         server's operator must fix its key settings"
    )]
    UnusableKey(String),
    /// Anything else the JWT library refuses, in words (never the library's error name).
    #[error("the token was refused: {0}")]
    Other(String),
}

impl TokenRefusal {
    /// The refusal `e` stands for, for `token` (whose header and claims it may read again).
    fn of(e: &jsonwebtoken::errors::Error, token: &str) -> Self {
        use jsonwebtoken::errors::ErrorKind as K;
        match e.kind() {
            // The signature was checked before the expiry, so the claims are the issuer's.
            K::ExpiredSignature => {
                match jsonwebtoken::dangerous::insecure_decode_claims::<Claims>(token) {
                    Ok(claims) => Self::expired(claims.exp),
                    Err(_) => Self::Expired {
                        at: "an earlier time".into(),
                    },
                }
            }
            K::InvalidSignature => Self::BadSignature,
            K::InvalidAlgorithm | K::InvalidAlgorithmName | K::UnsupportedAlgorithm => {
                Self::WrongAlgorithm {
                    alg: header_alg(token).unwrap_or_else(|| "another algorithm".into()),
                }
            }
            K::InvalidToken | K::Base64(_) | K::Utf8(_) => Self::Malformed,
            // The header names an algorithm jsonwebtoken does not know ("none", say).
            K::Json(_) if header_alg(token).is_some_and(|alg| alg != "HS256") => {
                Self::WrongAlgorithm {
                    alg: header_alg(token).unwrap_or_default(),
                }
            }
            // Well formed, but a claim is missing or of another type: say which.
            K::Json(_) => claim_at_fault(token, OWN_CLAIMS).unwrap_or(Self::Malformed),
            K::MissingRequiredClaim(claim) => Self::BadClaim {
                claim: claim.clone(),
                problem: "is missing",
            },
            K::InvalidClaimFormat(claim) => Self::BadClaim {
                claim: claim.clone(),
                problem: "is not of its type",
            },
            K::ImmatureSignature => {
                match jsonwebtoken::dangerous::insecure_decode_claims::<NotBefore>(token) {
                    Ok(NotBefore { nbf }) => Self::NotYetValid { at: rfc3339(nbf) },
                    Err(_) => Self::NotYetValid {
                        at: "a later time".into(),
                    },
                }
            }
            K::InvalidSubject => Self::WrongSubject,
            K::InvalidIssuer => {
                Self::Other("its issuer ('iss') is not one this server accepts".into())
            }
            K::InvalidAudience => {
                Self::Other("its audience ('aud') does not name this server".into())
            }
            _ => Self::key_trouble(e),
        }
    }

    /// A failure of the checking key or the library itself, said in words: jsonwebtoken's
    /// `Display` of these is the bare variant name (`InvalidKeyFormat`), which means nothing
    /// to the token's holder.
    pub(crate) fn key_trouble(e: &jsonwebtoken::errors::Error) -> Self {
        use jsonwebtoken::errors::ErrorKind as K;
        let why = match e.kind() {
            K::InvalidEcdsaKey => "not a valid ECDSA key".to_owned(),
            K::InvalidEddsaKey => "not a valid EdDSA key".to_owned(),
            K::InvalidRsaKey(why) => format!("not a valid RSA key: {why}"),
            K::InvalidKeyFormat => "the key is not in a format for its algorithm".to_owned(),
            K::MissingAlgorithm => "no algorithm is configured to check with".to_owned(),
            K::Provider(why) | K::Signing(why) => why.clone(),
            _ => return Self::Other("the token could not be checked".into()),
        };
        Self::UnusableKey(why)
    }

    /// Expired at `exp` (seconds since the epoch).
    fn expired(exp: u64) -> Self {
        Self::Expired { at: rfc3339(exp) }
    }
}

/// A token's `nbf` claim, read again to say when it becomes valid.
#[derive(serde::Deserialize)]
struct NotBefore {
    nbf: u64,
}

/// Seconds since the epoch as RFC 3339 (UTC, whole seconds).
fn rfc3339(secs: u64) -> String {
    i64::try_from(secs)
        .ok()
        .and_then(|s| chrono::DateTime::from_timestamp(s, 0))
        .map_or_else(
            || format!("{secs} s after 1970"),
            |t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        )
}

/// The JSON of a token's `part` (0: header, 1: claims), read without trusting it.
fn token_part(token: &str, part: usize) -> Option<serde_json::Map<String, serde_json::Value>> {
    use base64::Engine as _;
    let text = token.split('.').nth(part)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(text.trim_end_matches('='))
        .ok()?;
    match serde_json::from_slice(&bytes).ok()? {
        serde_json::Value::Object(map) => Some(map),
        _ => None,
    }
}

/// The `alg` a token's header names, read without trusting it.
fn header_alg(token: &str) -> Option<String> {
    token_part(token, 0)?
        .get("alg")?
        .as_str()
        .map(str::to_owned)
}

/// Refuses a token whose header lists critical extensions (`crit`, RFC 7515 §4.1.11): this
/// server understands none, so it must not accept a token that depends on one.
fn refuse_critical_extensions(token: &str) -> Result<(), AuthError> {
    match token_part(token, 0).as_ref().and_then(|h| h.get("crit")) {
        None => Ok(()),
        Some(crit) => Err(AuthError::InvalidToken(TokenRefusal::CriticalExtension {
            names: match crit.as_array() {
                Some(names) if !names.is_empty() => names
                    .iter()
                    .map(|n| n.as_str().map_or_else(|| n.to_string(), str::to_owned))
                    .collect::<Vec<_>>()
                    .join(", "),
                _ => "a malformed list".into(),
            },
        })),
    }
}

/// A claim a token is read with: its name, whether it is required, and a check of its JSON type.
pub(crate) type ClaimShape = (&'static str, bool, fn(&serde_json::Value) -> bool);

/// Which claim of a well-formed token is missing or not of its type, for a token whose claims
/// did not deserialize: `expected` lists each claim with whether it is required and a check of
/// its JSON type. `None` when the claims are not a JSON object at all.
pub(crate) fn claim_at_fault(token: &str, expected: &[ClaimShape]) -> Option<TokenRefusal> {
    let claims = token_part(token, 1)?;
    expected.iter().find_map(|&(name, required, fits)| {
        let kind = match claims.get(name) {
            None if required => "is missing",
            Some(value) if !fits(value) => "is not of its type",
            _ => return None,
        };
        Some(TokenRefusal::BadClaim {
            claim: name.into(),
            problem: kind,
        })
    })
}

/// The claims of an identity provider's tokens that chronoscope reads, and their types.
pub(crate) const PROVIDER_CLAIMS: &[ClaimShape] = &[
    ("sub", true, serde_json::Value::is_string),
    ("exp", true, serde_json::Value::is_u64),
    ("iat", false, serde_json::Value::is_u64),
    ("nbf", false, serde_json::Value::is_u64),
    ("scope", false, serde_json::Value::is_string),
    ("scp", false, |v| {
        v.is_string()
            || v.as_array()
                .is_some_and(|a| a.iter().all(serde_json::Value::is_string))
    }),
];

/// The claims of chronoscope's own tokens and the type each must have.
const OWN_CLAIMS: &[ClaimShape] = &[
    ("sub", true, serde_json::Value::is_string),
    ("exp", true, serde_json::Value::is_u64),
    ("iat", true, serde_json::Value::is_u64),
    ("nbf", false, serde_json::Value::is_u64),
    ("scope", false, serde_json::Value::is_string),
];

/// The HMAC secret tokens are signed with. Never printed.
#[derive(Clone)]
pub struct Secret(Vec<u8>);

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(..)")
    }
}

impl Secret {
    /// A secret from explicit bytes (flag, environment, tests).
    pub fn from_bytes(bytes: impl Into<Vec<u8>>) -> Result<Self, AuthError> {
        let bytes = bytes.into();
        if bytes.len() < MIN_SECRET_LEN {
            return Err(AuthError::BadSecret(format!(
                "is {} bytes long; HS256 needs at least {MIN_SECRET_LEN} (RFC 7518 §3.2): \
                 generate one with `openssl rand -hex 32`",
                bytes.len()
            )));
        }
        Ok(Self(bytes))
    }

    /// Reads the secret from a file the operator names (`--jwt-secret-file`, a mounted
    /// secret): surrounding whitespace is ignored, and unlike a flag it never shows in `ps`.
    pub fn from_secret_file(path: &Path) -> Result<Self, AuthError> {
        let text = std::fs::read_to_string(path).map_err(|source| AuthError::Io {
            path: path.to_owned(),
            source,
        })?;
        Self::from_bytes(text.trim().as_bytes()).map_err(|e| match e {
            AuthError::BadSecret(why) => {
                AuthError::BadSecret(format!("in {} {why}", path.display()))
            }
            other => other,
        })
    }

    /// Loads the secret: `explicit` (a flag) first, then [`SECRET_ENV`], then the file
    /// [`SECRET_FILE`] in `data_dir`, generated when missing.
    pub fn load(explicit: Option<&str>, data_dir: &Path) -> Result<Self, AuthError> {
        let env = std::env::var(SECRET_ENV).ok();
        Self::resolve(explicit, env.as_deref(), data_dir)
    }

    /// [`Secret::load`] with the environment value passed in (testable without touching the
    /// process environment).
    pub fn resolve(
        explicit: Option<&str>,
        env: Option<&str>,
        data_dir: &Path,
    ) -> Result<Self, AuthError> {
        match explicit.or(env).map(str::trim).filter(|s| !s.is_empty()) {
            Some(value) => Self::from_bytes(value.as_bytes()),
            None => Self::from_file(&data_dir.join(SECRET_FILE)),
        }
    }

    /// Reads the secret file, creating it with 32 random bytes (hex) and mode 0600 when missing.
    pub fn from_file(path: &Path) -> Result<Self, AuthError> {
        Self::open_file(path).map(|(secret, _)| secret)
    }

    /// [`Secret::from_file`], also saying whether this call created the file (so a token
    /// minted with a brand-new secret can say which servers will accept it).
    pub fn open_file(path: &Path) -> Result<(Self, bool), AuthError> {
        let io = |source| AuthError::Io {
            path: path.to_owned(),
            source,
        };
        match std::fs::read_to_string(path) {
            Ok(text) => {
                check_private(path)?;
                let secret = Self::from_bytes(text.trim().as_bytes()).map_err(|_| {
                    AuthError::BadSecret(format!(
                        "file {} is shorter than {MIN_SECRET_LEN} bytes; delete it to have a \
                         new one generated",
                        path.display()
                    ))
                })?;
                Ok((secret, false))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir).map_err(io)?;
                }
                let hex = random_hex(32);
                write_private(path, &hex).map_err(io)?;
                // Another process may have won the race to create it: use what is on disk.
                let text = std::fs::read_to_string(path).map_err(io)?;
                Ok((Self::from_bytes(text.trim().as_bytes())?, true))
            }
            Err(e) => Err(io(e)),
        }
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        &self.0
    }
}

fn random_hex(n: usize) -> String {
    use rand::RngCore;
    let mut bytes = vec![0u8; n];
    rand::rng().fill_bytes(&mut bytes);
    crate::store::chain::hex(&bytes)
}

/// Creates `path` holding `text`, readable by the owner only, unless it exists already. The
/// file appears whole or not at all: `text` goes to a temporary file beside it (tempfile makes
/// it owner-only), which is then moved into place without replacing what another process made
/// meanwhile (`persist_noclobber`). So a second process starting at the same moment never
/// reads a half-written secret.
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path
        .parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut file = tempfile::Builder::new()
        .prefix(".jwt-secret.")
        .tempfile_in(dir)?;
    file.write_all(text.as_bytes())?;
    file.as_file().sync_all()?;
    match file.persist_noclobber(path) {
        Ok(_) => Ok(()),
        // Another process made it first; ours is deleted as it is dropped.
        Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e.error),
    }
}

#[cfg(unix)]
fn check_private(path: &Path) -> Result<(), AuthError> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path)
        .map_err(|source| AuthError::Io {
            path: path.to_owned(),
            source,
        })?
        .permissions()
        .mode();
    if mode & 0o077 != 0 {
        return Err(AuthError::InsecureFile {
            path: path.to_owned(),
            mode: mode & 0o777,
        });
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_private(_path: &Path) -> Result<(), AuthError> {
    Ok(())
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Signs `claims` with HS256.
pub fn sign(secret: &Secret, claims: &Claims) -> Result<String, AuthError> {
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        claims,
        &EncodingKey::from_secret(secret.bytes()),
    )
    .map_err(|e| AuthError::Signing(e.to_string()))
}

/// Verifies an HS256 token: signature, algorithm, expiry (a few seconds of leeway), issue time
/// not in the future, and a usable `sub`.
pub fn verify(secret: &Secret, token: &str) -> Result<Claims, AuthError> {
    refuse_critical_extensions(token)?;
    let mut validation = Validation::new(Algorithm::HS256);
    validation.leeway = LEEWAY_SECS;
    validation.validate_exp = true;
    validation.validate_nbf = true;
    validation.set_required_spec_claims(&["exp", "sub", "iat"]);
    let data = jsonwebtoken::decode::<Claims>(
        token,
        &DecodingKey::from_secret(secret.bytes()),
        &validation,
    )
    .map_err(|e| AuthError::InvalidToken(TokenRefusal::of(&e, token)))?;
    let claims = data.claims;
    if claims.iat > now_secs() + LEEWAY_SECS {
        return Err(AuthError::InvalidToken(TokenRefusal::IssuedInFuture {
            at: rfc3339(claims.iat),
        }));
    }
    claims
        .sub
        .parse::<Traveller>()
        .map_err(|e| AuthError::InvalidToken(TokenRefusal::BadSubject(e.to_string())))?;
    Ok(claims)
}

/// How many verified tokens a [`Verifier`] remembers (a few hundred bytes each).
const REMEMBERED_TOKENS: u64 = 10_000;

/// Forgets each remembered token when it expires (with the leeway [`verify`] allows).
struct UntilExpiry;

impl moka::Expiry<String, Claims> for UntilExpiry {
    fn expire_after_create(
        &self,
        _token: &String,
        claims: &Claims,
        _created_at: std::time::Instant,
    ) -> Option<Duration> {
        let left = claims
            .exp
            .saturating_add(LEEWAY_SECS)
            .saturating_sub(now_secs());
        Some(Duration::from_secs(left))
    }
}

/// Verifies tokens against one secret, remembering the ones that passed until they expire: a
/// client sends the same token with every request, and checking its signature again costs more
/// than the rest of a small request's authentication. Only tokens that verified are
/// remembered, so a flood of forged ones cannot fill the memory; the cache is bounded (least
/// used tokens go first) and forgets each token when it expires.
pub struct Verifier {
    secret: Secret,
    /// An identity provider's keys, for its asymmetric (RS256, ES256, …) tokens.
    identity: Option<Arc<IdentityKeys>>,
    verified: moka::sync::Cache<String, Claims>,
}

impl fmt::Debug for Verifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Verifier")
            .field("remembered", &self.verified.entry_count())
            .finish()
    }
}

impl Verifier {
    /// A verifier for tokens signed with `secret`.
    pub fn new(secret: Secret) -> Self {
        Self::with_identity(secret, None)
    }

    /// A verifier for tokens signed with `secret` (HS256) and, when given, for an identity
    /// provider's tokens signed with one of `identity`'s keys.
    pub fn with_identity(secret: Secret, identity: Option<Arc<IdentityKeys>>) -> Self {
        Self {
            secret,
            identity,
            verified: moka::sync::Cache::builder()
                .max_capacity(REMEMBERED_TOKENS)
                .expire_after(UntilExpiry)
                .build(),
        }
    }

    /// What [`verify`] answers for `token`, without checking a remembered token's signature
    /// again.
    pub fn verify(&self, token: &str) -> Result<Claims, AuthError> {
        self.verify_at(token, now_secs())
    }

    fn verify_at(&self, token: &str, now: u64) -> Result<Claims, AuthError> {
        // The cache's own expiry runs on its clock; this check keeps the answer exact.
        if let Some(claims) = self.verified.get(token) {
            if claims.exp.saturating_add(LEEWAY_SECS) >= now {
                return Ok(claims);
            }
            self.verified.invalidate(token);
            return Err(AuthError::InvalidToken(TokenRefusal::expired(claims.exp)));
        }
        let claims = self.verify_signed(token)?;
        self.verified.insert(token.to_owned(), claims.clone());
        Ok(claims)
    }
}

impl Verifier {
    /// Checks `token` with the key its header asks for: an asymmetric algorithm goes to the
    /// identity provider's keys when there are any, everything else to the server's secret.
    fn verify_signed(&self, token: &str) -> Result<Claims, AuthError> {
        refuse_critical_extensions(token)?;
        let Some(identity) = &self.identity else {
            return verify(&self.secret, token);
        };
        if let Ok(header) = jsonwebtoken::decode_header(token)
            && header.alg != Algorithm::HS256
        {
            return identity.verify(token, &header);
        }
        let claims = verify(&self.secret, token)?;
        // The provider's travellers are named in a namespace of their own.
        if identity.checks().reserves(&claims.sub) {
            return Err(AuthError::InvalidToken(TokenRefusal::BadSubject(format!(
                "'{}' starts with '{}', which names the identity provider's travellers \
                 (--jwt-subject-prefix); mint this server's tokens for other names",
                claims.sub,
                identity.checks().subject_prefix
            ))));
        }
        Ok(claims)
    }
}

/// A fresh token for `subject` with `scopes`, valid for `ttl` (the `chronoscope token` command).
pub fn issue_token(
    secret: &Secret,
    subject: &str,
    scopes: &Scopes,
    ttl: Duration,
) -> Result<String, AuthError> {
    let subject: Traveller = subject
        .parse()
        .map_err(|e| AuthError::Signing(format!("subject: {e}")))?;
    let iat = now_secs();
    sign(
        secret,
        &Claims {
            sub: subject.to_string(),
            iat,
            exp: iat.saturating_add(ttl.as_secs()),
            scope: scopes.to_claim(),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whatever jsonwebtoken refuses a token for, the holder reads a sentence, never the
    /// library's error name (`ExpiredSignature`, `ImmatureSignature`, `InvalidKeyFormat`, …).
    #[test]
    fn every_refusal_is_said_in_words_not_the_librarys_error_name() {
        use jsonwebtoken::errors::{Error, ErrorKind as K};
        let secret = Secret::from_bytes(b"a secret that is long enough for HS256!".to_vec())
            .expect("a secret");
        let token = sign(
            &secret,
            &Claims {
                sub: "ada".into(),
                iat: 1_700_000_000,
                exp: 1_700_000_600,
                scope: "read".into(),
            },
        )
        .expect("signed");
        let kinds = [
            K::InvalidToken,
            K::InvalidSignature,
            K::InvalidEcdsaKey,
            K::InvalidEddsaKey,
            K::InvalidRsaKey("bad modulus".into()),
            K::RsaFailedSigning,
            K::InvalidAlgorithmName,
            K::UnsupportedAlgorithm,
            K::InvalidKeyFormat,
            K::ExpiredSignature,
            K::InvalidIssuer,
            K::InvalidAudience,
            K::InvalidSubject,
            K::ImmatureSignature,
            K::InvalidAlgorithm,
            K::MissingAlgorithm,
        ];
        for kind in kinds {
            let name = format!("{kind:?}");
            let name = name.split('(').next().unwrap_or_default().to_owned();
            let said = TokenRefusal::of(&Error::from(kind), &token).to_string();
            assert!(!said.contains(&name), "{name}: {said}");
            assert!(
                said.starts_with("the token") || said.starts_with("this server"),
                "{said}"
            );
        }
        assert_eq!(
            TokenRefusal::of(&Error::from(K::ExpiredSignature), &token).to_string(),
            "the token expired at 2023-11-14T22:23:20Z; mint a new one with `chronoscope token`"
        );
    }

    #[test]
    fn processes_creating_the_secret_file_at_once_all_read_the_same_whole_secret() {
        for _ in 0..20 {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("data").join(SECRET_FILE);
            let barrier = std::sync::Arc::new(std::sync::Barrier::new(8));
            let loaders: Vec<_> = (0..8)
                .map(|_| {
                    let (path, barrier) = (path.clone(), barrier.clone());
                    std::thread::spawn(move || {
                        barrier.wait();
                        Secret::from_file(&path).map(|s| s.bytes().to_vec())
                    })
                })
                .collect();
            let secrets: Vec<_> = loaders
                .into_iter()
                .map(|l| l.join().unwrap().expect("every loader gets the secret"))
                .collect();
            assert!(secrets.iter().all(|s| s == &secrets[0]));
            // Only the secret is left behind, no temporary files.
            let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            assert_eq!(names, [SECRET_FILE]);
        }
    }

    #[test]
    fn the_verifier_answers_like_verify_and_forgets_tokens_once_expired() {
        let scopes: Scopes = [Scope::Read].into_iter().collect();
        let token = issue_token(&secret(), "ada", &scopes, Duration::from_secs(60)).unwrap();
        let verifier = Verifier::new(secret());
        let now = now_secs();
        assert_eq!(
            verifier.verify_at(&token, now).unwrap(),
            verify(&secret(), &token).unwrap()
        );
        // Remembered: the same answer again, until the expiry (with leeway) has passed.
        let claims = verifier.verify_at(&token, now).unwrap();
        assert_eq!(claims.sub, "ada");
        assert!(verifier.verify_at(&token, claims.exp + LEEWAY_SECS).is_ok());
        let expired = verifier.verify_at(&token, claims.exp + LEEWAY_SECS + 1);
        assert!(
            matches!(
                &expired,
                Err(AuthError::InvalidToken(TokenRefusal::Expired { .. }))
            ),
            "{expired:?}"
        );

        // A token signed with another secret is refused every time, and never remembered.
        let other = Secret::from_bytes("another secret, long enough for HS256").unwrap();
        let forged = issue_token(&other, "ada", &scopes, Duration::from_secs(60)).unwrap();
        for _ in 0..2 {
            assert!(verifier.verify(&forged).is_err());
        }
        assert!(!verifier.verified.contains_key(&forged));
    }

    #[test]
    fn the_verifier_remembers_a_bounded_number_of_tokens() {
        let verifier = Verifier::new(secret());
        let scopes = Scopes::parse("read");
        for i in 0..REMEMBERED_TOKENS + 500 {
            let token = issue_token(
                &secret(),
                &format!("t{i}"),
                &scopes,
                Duration::from_secs(60),
            )
            .unwrap();
            assert!(verifier.verify(&token).is_ok());
        }
        verifier.verified.run_pending_tasks();
        assert!(
            verifier.verified.entry_count() <= REMEMBERED_TOKENS,
            "{} remembered",
            verifier.verified.entry_count()
        );
    }

    fn secret() -> Secret {
        Secret::from_bytes("0123456789abcdef0123456789abcdef").unwrap()
    }

    #[test]
    fn issued_tokens_verify_and_carry_their_scopes() {
        let scopes: Scopes = [Scope::Read, Scope::Write].into_iter().collect();
        let token = issue_token(&secret(), "ada", &scopes, Duration::from_secs(60)).unwrap();
        let claims = verify(&secret(), &token).unwrap();
        assert_eq!(claims.sub, "ada");
        assert_eq!(Scopes::parse(&claims.scope), scopes);
        let other = Secret::from_bytes("another secret, long enough for HS256").unwrap();
        assert!(verify(&other, &token).is_err());
    }

    #[test]
    fn admin_implies_everything_and_unknown_words_grant_nothing() {
        assert!(Scopes::parse("admin").allows(Scope::Write));
        assert!(Scopes::parse("admin").allows(Scope::Read));
        assert!(!Scopes::parse("read").allows(Scope::Write));
        assert!(!Scopes::parse("root sudo").allows(Scope::Read));
    }

    #[test]
    fn the_secret_file_is_generated_private_and_reused() {
        let dir = tempfile::tempdir().unwrap();
        let a = Secret::resolve(None, None, dir.path()).unwrap();
        let b = Secret::resolve(None, None, dir.path()).unwrap();
        assert_eq!(a.bytes(), b.bytes());
        assert_eq!(a.bytes().len(), 64);
        let explicit = Secret::resolve(
            Some("flag value, thirty-two bytes or more"),
            Some("env value, thirty-two bytes or more!"),
            dir.path(),
        )
        .unwrap();
        assert_eq!(explicit.bytes(), b"flag value, thirty-two bytes or more");
        let env = Secret::resolve(
            None,
            Some("env value, thirty-two bytes or more!"),
            dir.path(),
        )
        .unwrap();
        assert_eq!(env.bytes(), b"env value, thirty-two bytes or more!");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let path = dir.path().join(SECRET_FILE);
            assert_eq!(
                std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
                0o600
            );
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
            let err = Secret::resolve(None, None, dir.path()).unwrap_err();
            assert!(err.to_string().contains("chmod 600"), "{err}");
        }
    }

    #[test]
    fn secrets_shorter_than_32_bytes_are_refused_saying_how_to_make_one() {
        let err = Secret::from_bytes("sixteen bytes ok")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("at least 32") && err.contains("openssl rand -hex 32"),
            "{err}"
        );
        assert!(Secret::from_bytes("0123456789abcdef0123456789abcdef").is_ok());
    }

    #[test]
    fn a_secret_file_is_read_trimmed_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mounted-secret");
        std::fs::write(&path, "0123456789abcdef0123456789abcdef\n").unwrap();
        let secret = Secret::from_secret_file(&path).unwrap();
        assert_eq!(secret.bytes(), b"0123456789abcdef0123456789abcdef");
        std::fs::write(&path, "too short\n").unwrap();
        let err = Secret::from_secret_file(&path).unwrap_err().to_string();
        assert!(
            err.contains("mounted-secret") && err.contains("at least 32"),
            "{err}"
        );
        let err = Secret::from_secret_file(&dir.path().join("missing"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("missing"), "{err}");
    }
}
