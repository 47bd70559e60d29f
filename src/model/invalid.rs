//! The domain's one refusal: a value that does not parse or lies outside what the rules accept.
//!
//! The domain names the field and says what was expected; the faces above it turn this into
//! their own error (`ServiceError::InvalidInput`, through `From`), so the domain imports nothing
//! above itself.

/// A value refused at the edge: which field, and what was wrong and what was expected.
/// `Display` is `field: message`, the wording every face shows.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct InvalidValue {
    /// The field at fault.
    pub field: String,
    /// What was wrong and what was expected.
    pub message: String,
}

impl InvalidValue {
    /// A refusal of `field`, saying why.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
        }
    }
}
