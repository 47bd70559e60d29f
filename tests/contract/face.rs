//! The two faces the contract suite runs against, and the transcript that lets their answers
//! be compared.
//!
//! A [`Face`] hands out one [`TimelineService`] per traveller name: the embedded face an
//! [`EngineSession`](chronoscope::engine::EngineSession), the remote face a
//! [`RemoteClient`](chronoscope::client::RemoteClient) with a token for that traveller, talking to the real server on a
//! loopback port in front of the same kind of engine. Every call a scenario makes goes
//! through [`Face::ok`], [`Face::err`] or [`Face::any`], which record the answer; the remote
//! test then runs the scenario on a fresh embedded face too and asserts both transcripts are
//! the same, errors and messages included, once ids (random per run) are numbered in order
//! of appearance.

use std::collections::HashMap;
use std::fmt::Debug;
use std::future::Future;
use std::sync::{Arc, Mutex};

use chrono::Duration;

use chronoscope::engine::{Engine, ManualClock};
use chronoscope::error::ServiceError;
use chronoscope::model::Instant;
use chronoscope::service::ServiceResult;
use chronoscope::service::prelude::*;
use chronoscope::store::{MemoryStore, Store};
use serde::Serialize;
use serde_json::Value;

use super::remote::Server;

pub use crate::support::{START, t};

/// Which face a scenario runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `Engine` in-process.
    Embedded,
    /// `RemoteClient -> server -> Engine`.
    Remote,
}

/// One face of the service, with its own fresh engine, clock and transcript.
pub struct Face {
    /// Which face.
    pub kind: Kind,
    clock: Arc<ManualClock>,
    engine: Arc<Engine>,
    server: Option<Server>,
    transcript: Mutex<Vec<(String, Value)>>,
}

async fn fresh_engine() -> (Arc<Engine>, Arc<ManualClock>) {
    engine_on(Arc::new(MemoryStore::new())).await
}

async fn engine_on(store: Arc<dyn Store>) -> (Arc<Engine>, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(t(START)));
    let engine = crate::support::engine_on(store, clock.clone()).await;
    (engine, clock)
}

impl Face {
    /// The engine, in-process.
    pub async fn embedded() -> Self {
        let (engine, clock) = fresh_engine().await;
        Self::in_process(engine, clock)
    }

    /// The engine, in-process, on another store (PostgreSQL).
    pub async fn embedded_on(store: Arc<dyn Store>) -> Self {
        let (engine, clock) = engine_on(store).await;
        Self::in_process(engine, clock)
    }

    fn in_process(engine: Arc<Engine>, clock: Arc<ManualClock>) -> Self {
        Self {
            kind: Kind::Embedded,
            clock,
            engine,
            server: None,
            transcript: Mutex::new(Vec::new()),
        }
    }

    /// The same kind of engine behind the real server on a loopback port.
    pub async fn remote() -> Self {
        let (engine, clock) = fresh_engine().await;
        let server = Server::start(engine.clone()).await;
        Self::behind(server, engine, clock)
    }

    /// The same kind of engine behind the real server over https, with a private CA.
    pub async fn remote_tls() -> Self {
        let (engine, clock) = fresh_engine().await;
        let server = Server::start_tls(engine.clone()).await;
        Self::behind(server, engine, clock)
    }

    fn behind(server: Server, engine: Arc<Engine>, clock: Arc<ManualClock>) -> Self {
        Self {
            kind: Kind::Remote,
            clock,
            engine,
            server: Some(server),
            transcript: Mutex::new(Vec::new()),
        }
    }

    /// The service acting as `name`.
    pub fn traveller(&self, name: &str) -> Arc<dyn TimelineService> {
        match &self.server {
            None => Arc::new(self.engine.session(name.parse().expect("traveller name"))),
            Some(server) => Arc::new(server.client_for(name)),
        }
    }

    /// A traveller without the admin scope (the embedded engine's user owns the whole store;
    /// a server's token grants read and write): they see only their own automation.
    pub fn member(&self, name: &str) -> Arc<dyn TimelineService> {
        match &self.server {
            None => Arc::new(
                self.engine
                    .session(name.parse().expect("traveller name"))
                    .with_admin(false),
            ),
            Some(server) => Arc::new(server.client_for(name)),
        }
    }

    /// An operator: every right on every timeline, never restricted (the embedded engine's
    /// user; a server's token with the admin scope).
    pub fn operator(&self, name: &str) -> Arc<dyn TimelineService> {
        match &self.server {
            None => Arc::new(self.engine.session(name.parse().expect("traveller name"))),
            Some(server) => Arc::new(server.operator_client(name)),
        }
    }

    /// Moves both the engine's clock forward (the server reads the same clock).
    pub fn advance(&self, by: Duration) {
        self.clock.advance(by);
    }

    /// Runs the automation jobs that are due now (the server's scheduler does this on a
    /// timer; the suite does it on cue so both faces run them at the same point).
    pub async fn run_due(&self) {
        self.engine.run_due().await.expect("due jobs run");
    }

    /// The engine's clock now.
    pub fn now(&self) -> Instant {
        self.engine.now()
    }

    fn record(&self, label: &str, value: Value) {
        self.transcript
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((label.to_owned(), value));
    }

    fn recorded<T: Serialize>(result: &ServiceResult<T>) -> Value {
        match result {
            Ok(v) => {
                serde_json::json!({ "ok": serde_json::to_value(v).expect("answers serialize") })
            }
            Err(e) => serde_json::json!({ "error": format!("{e:?}"), "detail": e.to_string() }),
        }
    }

    /// Runs a call that must succeed, records its answer and returns it.
    pub async fn ok<T: Serialize + Debug>(
        &self,
        label: &str,
        call: impl Future<Output = ServiceResult<T>>,
    ) -> T {
        match self.any(label, call).await {
            Ok(v) => v,
            Err(e) => panic!("[{:?}] {label}: expected success, got {e:?}", self.kind),
        }
    }

    /// Runs a call that must fail, records the error and returns it.
    pub async fn err<T: Serialize + Debug>(
        &self,
        label: &str,
        call: impl Future<Output = ServiceResult<T>>,
    ) -> ServiceError {
        match self.any(label, call).await {
            Ok(v) => panic!("[{:?}] {label}: expected a refusal, got {v:?}", self.kind),
            Err(e) => e,
        }
    }

    /// Runs a call whose outcome this suite leaves to other tests (the scenario checks what it
    /// needs of it), records it for the comparison of faces and returns it.
    pub async fn any<T: Serialize + Debug>(
        &self,
        label: &str,
        call: impl Future<Output = ServiceResult<T>>,
    ) -> ServiceResult<T> {
        let result = call.await;
        self.record(label, Self::recorded(&result));
        result
    }

    /// The transcript with ids numbered in order of first appearance.
    pub fn transcript(&self) -> Vec<(String, Value)> {
        let steps = self
            .transcript
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let mut ids = Ids::default();
        steps
            .into_iter()
            .map(|(label, mut v)| {
                // `whoami` says whether the session is an operator's, and `traveller()` is one
                // on the embedded face only (see `member`): by construction, not a difference.
                if let Some(answer) = v.get_mut("ok").and_then(Value::as_object_mut) {
                    answer.remove("operator");
                }
                (label, ids.normalize(v))
            })
            .collect()
    }
}

/// Asserts two faces answered the same scenario step by step.
pub fn assert_same_answers(embedded: &Face, remote: &Face) {
    let a = embedded.transcript();
    let b = remote.transcript();
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        assert_eq!(x.0, y.0, "the faces took different steps at step {i}");
        assert!(
            x.1 == y.1,
            "the faces disagree at step {i} '{}':\n  embedded: {}\n  remote:   {}",
            x.0,
            x.1,
            y.1
        );
    }
    assert_eq!(
        a.len(),
        b.len(),
        "the faces ran a different number of steps"
    );
}

/// Numbers minted ids (`tml_` + 26 lowercase ULID characters and friends) in order of first
/// appearance, so two runs of a scenario compare equal.
#[derive(Default)]
struct Ids {
    seen: HashMap<String, usize>,
}

const PREFIXES: [&str; 12] = [
    "tml_", "evt_", "itm_", "anc_", "jrn_", "scr_", "sch_", "anm_", "mrg_", "dat_", "cch_", "iso_",
];
const ULID_LEN: usize = 26;

impl Ids {
    fn normalize(&mut self, v: Value) -> Value {
        match v {
            Value::String(s) => Value::String(self.text(&s)),
            Value::Array(items) => {
                Value::Array(items.into_iter().map(|v| self.normalize(v)).collect())
            }
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(k, v)| (self.text(&k), self.normalize(v)))
                    .collect(),
            ),
            other => other,
        }
    }

    fn text(&mut self, s: &str) -> String {
        let mut out = String::with_capacity(s.len());
        let bytes = s.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            let boundary = i == 0 || !bytes[i - 1].is_ascii_alphanumeric();
            let id_len = PREFIXES.iter().find_map(|p| {
                let end = i + p.len() + ULID_LEN;
                (boundary
                    && s[i..].starts_with(p)
                    && end <= bytes.len()
                    && bytes[i + p.len()..end]
                        .iter()
                        .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase())
                    && bytes.get(end).is_none_or(|b| !b.is_ascii_alphanumeric()))
                .then_some((p, end))
            });
            match id_len {
                Some((prefix, end)) => {
                    let next = self.seen.len() + 1;
                    let n = *self.seen.entry(s[i..end].to_owned()).or_insert(next);
                    out.push_str(&format!("{prefix}#{n}"));
                    i = end;
                }
                None => {
                    let c = s[i..].chars().next().expect("in bounds");
                    out.push(c);
                    i += c.len_utf8();
                }
            }
        }
        out
    }
}

#[test]
fn ids_are_numbered_in_order_of_appearance_wherever_they_occur() {
    let mut ids = Ids::default();
    let a = "tml_01kakzq3xv9d5v3m0f4g8q2h7c";
    let b = "itm_01kakzq3xv9d5v3m0f4g8q2h7d";
    let v = serde_json::json!([
        { "id": a },
        format!("no item '{b}' is known to you; see /v1/items/{b} in {a}"),
        "primary",
        "xtml_01kakzq3xv9d5v3m0f4g8q2h7c",
        "tml_01kakzq3xv9d5v3m0f4g8q2h7cc",
    ]);
    assert_eq!(
        ids.normalize(v),
        serde_json::json!([
            { "id": "tml_#1" },
            "no item 'itm_#2' is known to you; see /v1/items/itm_#2 in tml_#1",
            "primary",
            "xtml_01kakzq3xv9d5v3m0f4g8q2h7c",
            "tml_01kakzq3xv9d5v3m0f4g8q2h7cc",
        ])
    );
}
