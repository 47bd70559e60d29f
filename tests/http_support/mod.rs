//! For the test files that still say `mod http_support;`: the HTTP helpers live in
//! `support::http` (tests/support/http.rs), the one test-support module.

#[path = "../support/http.rs"]
mod http;

pub use http::*;
