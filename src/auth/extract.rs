//! The axum extractor that turns `Authorization: Bearer <JWT>` into a traveller and scopes.

use std::sync::Arc;

use axum::extract::{FromRef, FromRequestParts};
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;

use super::{AuthError, Claims, Scopes, TokenRefusal, Verifier};
use crate::model::Traveller;

/// A caller whose token verified: who they are and what they may do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Authenticated {
    /// The traveller named by `sub`.
    pub traveller: Traveller,
    /// The scopes granted.
    pub scopes: Scopes,
    /// The verified claims.
    pub claims: Claims,
}

/// Why a request is not authenticated (answered 401).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AuthRejection {
    /// No `Authorization: Bearer` header.
    Missing,
    /// An `Authorization` header that does not carry a bearer token.
    Invalid(String),
    /// A bearer token that is malformed, expired, tampered with or not HS256.
    Refused(TokenRefusal),
}

impl AuthRejection {
    /// The problem detail for a person.
    pub fn detail(&self) -> String {
        match self {
            AuthRejection::Missing => {
                "send a token in the header Authorization: Bearer <token> (chronoscope token makes one)"
                    .into()
            }
            AuthRejection::Invalid(why) => format!("the bearer token was refused: {why}"),
            AuthRejection::Refused(why) => why.to_string(),
        }
    }
}

impl Authenticated {
    /// Verifies the request's bearer token with `verifier`.
    pub fn from_parts(parts: &Parts, verifier: &Verifier) -> Result<Self, AuthRejection> {
        let header = parts
            .headers
            .get(AUTHORIZATION)
            .ok_or(AuthRejection::Missing)?;
        let header = header
            .to_str()
            .map_err(|_| AuthRejection::Invalid("the Authorization header is not text".into()))?;
        let (scheme, token) = header.trim().split_once(' ').ok_or_else(|| {
            AuthRejection::Invalid("expected Authorization: Bearer <token>".into())
        })?;
        if !scheme.eq_ignore_ascii_case("bearer") {
            return Err(AuthRejection::Invalid(format!(
                "the {scheme} scheme is not accepted; use Bearer"
            )));
        }
        let claims = verifier.verify(token.trim()).map_err(|e| match e {
            AuthError::InvalidToken(why) => AuthRejection::Refused(why),
            other => AuthRejection::Invalid(other.to_string()),
        })?;
        let traveller = claims
            .sub
            .parse()
            .map_err(|e: crate::model::InvalidValue| AuthRejection::Invalid(e.to_string()))?;
        Ok(Self {
            traveller,
            scopes: Scopes::parse(&claims.scope),
            claims,
        })
    }
}

impl<S> FromRequestParts<S> for Authenticated
where
    S: Send + Sync,
    Arc<Verifier>: FromRef<S>,
{
    type Rejection = AuthRejection;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        if let Some(done) = parts.extensions.get::<Authenticated>() {
            return Ok(done.clone());
        }
        let verifier = Arc::<Verifier>::from_ref(state);
        let auth = Self::from_parts(parts, &verifier)?;
        parts.extensions.insert(auth.clone());
        Ok(auth)
    }
}
