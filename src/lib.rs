//! chronoscope: a timeline travel service and the terminal dashboard that drives it.
//!
//! Layers (DESIGN §2): [`model`] types, [`paradox`] and [`monitor`] (pure domain rules),
//! [`engine`] (the embedded [`service::TimelineService`]), [`automation`], [`store`] (SQLite,
//! PostgreSQL), [`server`] (HTTP), [`client`] (HTTP client), [`auth`], [`tui`], [`cli`];
//! [`tls`] and [`metrics`] for deployments.

/// Every binary of the crate (the server, examples, tests, benches) allocates with mimalloc: a
/// start from a snapshot of a big world is millions of small allocations on several threads.
/// It is built without transparent huge pages (Cargo.toml): faulting in 2 MB pages made a cold
/// start more than twice as slow, and requests were no faster with them.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub mod auth;
pub mod automation;
pub mod cli;
pub mod client;
pub mod engine;
pub mod error;
pub mod metrics;
pub mod model;
pub mod monitor;
pub mod paradox;
pub mod server;
pub mod service;
pub mod store;
pub mod tls;
pub mod tui;
