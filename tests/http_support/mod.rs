//! For the test files that still say `mod http_support;` beside `mod support;`: the HTTP helpers
//! live in `support::http` (tests/support/http.rs), the one test-support module.

pub use crate::support::http::*;
