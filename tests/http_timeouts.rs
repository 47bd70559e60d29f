//! Connections that cannot be held forever, against the real server on a loopback port: a
//! partial header, an idle keep-alive connection, a stalled keyed body, an unauthenticated
//! keyed POST and a shutdown with a stalled request in flight (http and https).
//!
//! The short timeouts are set through [`ServerConfig`]; every wait in these tests is bounded by
//! [`PATIENCE`], far above the timeout under test and far below what the server would take
//! without it (the request timeout and the other limits are set to minutes).

#[path = "pki/mod.rs"]
mod pki;
mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use chronoscope::server::ServerConfig;
use futures::StreamExt;
use support::http::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// How long a test waits for what the short timeout under test must bring about.
const PATIENCE: Duration = Duration::from_secs(10);
/// The timeout under test.
const SHORT: Duration = Duration::from_millis(300);
/// Every other limit: long enough that only the one under test can end the wait.
const LONG: Duration = Duration::from_secs(600);

/// A server on a loopback port (https when `tls` is given), stopped when `stop` is sent.
struct Served {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<std::io::Result<()>>,
}

impl Served {
    async fn start(config: ServerConfig, tls: Option<Arc<rustls::ServerConfig>>) -> Self {
        chronoscope::tls::install_default_provider();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let shutdown = async {
            let _ = stopped.await;
        };
        let engine = engine().await;
        let task = tokio::spawn(async move {
            match tls {
                Some(tls) => {
                    chronoscope::server::run_tls(listener, tls, config, engine, shutdown).await
                }
                None => chronoscope::server::run(listener, config, engine, shutdown).await,
            }
        });
        Self {
            addr,
            stop: Some(stop),
            task,
        }
    }

    async fn connect(&self) -> TcpStream {
        TcpStream::connect(self.addr).await.unwrap()
    }
}

/// Every limit long, so that a test shortens only the one it is about.
fn patient() -> ServerConfig {
    ServerConfig {
        request_timeout: LONG,
        header_read_timeout: LONG,
        idle_timeout: LONG,
        shutdown_timeout: LONG,
        ..config()
    }
}

/// Reads until the server closes the connection; what it sent, or `None` when it kept the
/// connection open for [`PATIENCE`].
async fn read_until_closed(stream: &mut TcpStream) -> Option<String> {
    let mut got = Vec::new();
    let read = tokio::time::timeout(PATIENCE, async {
        let mut buf = [0_u8; 4096];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    read.ok()
        .map(|()| String::from_utf8_lossy(&got).into_owned())
}

/// Reads one answer's head and body up to `marker` (the connection stays open).
async fn read_until(stream: &mut TcpStream, marker: &str) -> String {
    let mut got = Vec::new();
    let mut buf = [0_u8; 4096];
    let read = tokio::time::timeout(PATIENCE, async {
        while !String::from_utf8_lossy(&got).contains(marker) {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    let text = String::from_utf8_lossy(&got).into_owned();
    assert!(
        read.is_ok() && text.contains(marker),
        "no {marker:?} in {text:?}"
    );
    text
}

#[tokio::test]
async fn a_client_that_sends_part_of_a_header_or_nothing_is_cut_after_the_header_read_timeout() {
    let server = Served::start(
        ServerConfig {
            header_read_timeout: SHORT,
            ..patient()
        },
        None,
    )
    .await;
    let mut partial = server.connect().await;
    partial
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: chronoscope\r\nX-Slow: ")
        .await
        .unwrap();
    let mut silent = server.connect().await;
    assert!(
        read_until_closed(&mut partial).await.is_some(),
        "a partial header held its connection open"
    );
    assert!(
        read_until_closed(&mut silent).await.is_some(),
        "a connection that sent nothing stayed open"
    );
    // A whole request is still answered.
    let mut whole = server.connect().await;
    whole
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: chronoscope\r\n\r\n")
        .await
        .unwrap();
    read_until(&mut whole, "\"ok\"").await;
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed_after_the_idle_timeout() {
    let server = Served::start(
        ServerConfig {
            idle_timeout: SHORT,
            ..patient()
        },
        None,
    )
    .await;
    let mut conn = server.connect().await;
    conn.write_all(b"GET /healthz HTTP/1.1\r\nHost: chronoscope\r\n\r\n")
        .await
        .unwrap();
    let answer = read_until(&mut conn, "\"ok\"").await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // Kept alive (HTTP/1.1's default), then left idle.
    let rest = read_until_closed(&mut conn).await;
    assert_eq!(
        rest.as_deref(),
        Some(""),
        "an idle connection stayed open (or was answered again)"
    );
}

/// A keyed POST whose head is whole and whose body stops after a few bytes.
fn stalled_keyed_post(token: Option<&str>) -> String {
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    format!(
        "POST /v1/timelines HTTP/1.1\r\nHost: chronoscope\r\n{auth}\
         Idempotency-Key: stalled-1\r\nContent-Type: application/json\r\n\
         Content-Length: 100\r\n\r\n{{\"name\""
    )
}

#[tokio::test]
async fn a_stalled_keyed_body_is_cut_by_the_request_timeout() {
    let server = Served::start(
        ServerConfig {
            request_timeout: SHORT,
            ..patient()
        },
        None,
    )
    .await;
    let mut conn = server.connect().await;
    conn.write_all(stalled_keyed_post(Some(&token("ada"))).as_bytes())
        .await
        .unwrap();
    let answer = read_until(&mut conn, "\"status\":503").await;
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
}

#[tokio::test]
async fn an_unauthenticated_keyed_post_is_refused_before_its_body_is_read() {
    let server = Served::start(patient(), None).await;
    let mut conn = server.connect().await;
    conn.write_all(stalled_keyed_post(None).as_bytes())
        .await
        .unwrap();
    let answer = read_until(&mut conn, "\"status\":401").await;
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
    assert!(
        answer.contains("/problems/unauthorized"),
        "the usual problem: {answer}"
    );
    // With a token that does not verify, the same.
    let mut conn = server.connect().await;
    conn.write_all(stalled_keyed_post(Some("not.a.token")).as_bytes())
        .await
        .unwrap();
    let answer = read_until(&mut conn, "\"status\":401").await;
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
}

/// Opens a request whose body never ends on a connection the server has already served (so it
/// is accepted and in flight), asks the server to stop, and answers whether it stopped.
async fn stops_with_a_stalled_request(tls: bool) -> bool {
    let pki = pki::Pki::new();
    let server = Served::start(
        ServerConfig {
            shutdown_timeout: SHORT,
            ..patient()
        },
        tls.then(|| pki.server_config()),
    )
    .await;
    let mut client = reqwest::Client::builder();
    let base = if tls {
        let ca = std::fs::read(pki.ca()).unwrap();
        client = client.add_root_certificate(reqwest::Certificate::from_pem(&ca).unwrap());
        format!("https://localhost:{}", server.addr.port())
    } else {
        format!("http://{}", server.addr)
    };
    let client = client.build().unwrap();
    let warm = client.get(format!("{base}/healthz")).send().await.unwrap();
    assert_eq!(warm.status().as_u16(), 200);
    // The same (pooled) connection carries a body that sends a few bytes, then nothing.
    let body = futures::stream::once(async { Ok::<_, std::io::Error>("{\"name\"") })
        .chain(futures::stream::pending());
    let stalled = tokio::spawn(
        client
            .post(format!("{base}/v1/timelines"))
            .bearer_auth(token("ada"))
            .header("content-type", "application/json")
            .body(reqwest::Body::wrap_stream(body))
            .send(),
    );
    // Lets the request's head reach the handler before the stop.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let Served { stop, task, .. } = server;
    let _ = stop.map(|stop| stop.send(()));
    let stopped = tokio::time::timeout(PATIENCE, task).await;
    stalled.abort();
    matches!(stopped, Ok(Ok(Ok(()))))
}

#[tokio::test]
async fn a_shutdown_ends_within_its_deadline_with_a_stalled_request_open() {
    assert!(
        stops_with_a_stalled_request(false).await,
        "the server waited for the stalled request"
    );
}

#[tokio::test]
async fn a_shutdown_over_https_ends_within_its_deadline_with_a_stalled_request_open() {
    assert!(
        stops_with_a_stalled_request(true).await,
        "the server waited for the stalled request"
    );
}
