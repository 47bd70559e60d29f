//! A store that is down, full or failing, seen from the real server: writes and `/readyz`
//! answer 503 with `Retry-After` at once once the store is known down, recover when it answers
//! again, and no 503 body carries a database URL or the driver's words (the log has them).
//!
//! PostgreSQL is taken away by a TCP proxy the test controls (its connections cut, new ones
//! held unanswered, as a network partition would), never by stopping the cluster.

mod support;

use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use chronoscope::error::ServiceError;
use chronoscope::store::{Store, StoreError, Watched};
use serde_json::json;
use support::http::*;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// How long a test waits for what must happen; far above what it takes.
const PATIENCE: Duration = Duration::from_secs(10);
/// How long an answer may take once the store is known down: far below the 5 s a request
/// waited for a connection before, far above the few milliseconds a refusal takes.
const AT_ONCE: Duration = Duration::from_secs(1);

/// A TCP proxy to `upstream` that can be cut (connections closed, new ones accepted and held
/// without an answer) and restored.
struct Proxy {
    port: u16,
    forwarding: Arc<AtomicBool>,
    links: Arc<Mutex<Vec<JoinHandle<()>>>>,
    held: Arc<Mutex<Vec<TcpStream>>>,
    accepting: JoinHandle<()>,
}

impl Proxy {
    async fn start(upstream: String) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let forwarding = Arc::new(AtomicBool::new(true));
        let links = Arc::new(Mutex::new(Vec::new()));
        let held = Arc::new(Mutex::new(Vec::new()));
        let accepting = tokio::spawn({
            let (forwarding, links, held) = (forwarding.clone(), links.clone(), held.clone());
            async move {
                while let Ok((mut client, _)) = listener.accept().await {
                    if !forwarding.load(Ordering::SeqCst) {
                        held.lock().unwrap().push(client);
                        continue;
                    }
                    let upstream = upstream.clone();
                    links.lock().unwrap().push(tokio::spawn(async move {
                        if let Ok(mut server) = TcpStream::connect(upstream).await {
                            let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                        }
                    }));
                }
            }
        });
        Self {
            port,
            forwarding,
            links,
            held,
            accepting,
        }
    }

    fn cut(&self) {
        self.forwarding.store(false, Ordering::SeqCst);
        for link in self.links.lock().unwrap().drain(..) {
            link.abort();
        }
    }

    fn restore(&self) {
        self.held.lock().unwrap().clear();
        self.forwarding.store(true, Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.cut();
        self.accepting.abort();
    }
}

/// A server over `store` on a loopback port; its base URL.
async fn serve(store: Arc<dyn Store>) -> String {
    let engine = support::system_engine(store).await;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(chronoscope::server::run(
        listener,
        config(),
        engine,
        std::future::pending(),
    ));
    base
}

/// Ada's request to create a timeline called `name` on the server at `base`.
fn create_timeline(http: &reqwest::Client, base: &str, name: &str) -> reqwest::RequestBuilder {
    http.post(format!("{base}/v1/timelines"))
        .bearer_auth(token("ada"))
        .json(&json!({ "name": name }))
}

/// Ada's request for the timelines on the server at `base`.
fn list_timelines(http: &reqwest::Client, base: &str) -> reqwest::RequestBuilder {
    http.get(format!("{base}/v1/timelines"))
        .bearer_auth(token("ada"))
}

/// Asserts a 503 problem with `Retry-After` whose body names none of `secrets`.
async fn assert_quiet_503(resp: reqwest::Response, secrets: &[&str]) {
    assert_eq!(resp.status().as_u16(), 503);
    assert!(
        resp.headers().contains_key("retry-after"),
        "no Retry-After: {:?}",
        resp.headers()
    );
    let body = resp.text().await.unwrap();
    for secret in secrets {
        assert!(!body.contains(secret), "{secret:?} in {body}");
    }
}

#[tokio::test]
async fn postgres_down_is_answered_503_at_once_and_ready_again_when_it_is_back() {
    let Some(db) = support::fresh_postgres().await else {
        return;
    };
    let options = sqlx::postgres::PgConnectOptions::from_str(&db.url).unwrap();
    let upstream = format!("{}:{}", options.get_host(), options.get_port());
    let proxy = Proxy::start(upstream).await;
    let via_proxy = format!(
        "postgres://{}@127.0.0.1:{}/{}",
        options.get_username(),
        proxy.port,
        db.name
    );
    let store = chronoscope::store::open(&via_proxy)
        .await
        .expect("the store");
    let base = serve(store).await;
    chronoscope::tls::install_default_provider();
    let http = reqwest::Client::builder().timeout(AT_ONCE).build().unwrap();
    let slow = reqwest::Client::builder()
        .timeout(PATIENCE)
        .build()
        .unwrap();
    let ready = format!("{base}/readyz");
    let write = || create_timeline(&slow, &base, "kept");
    assert_eq!(
        slow.get(&ready).send().await.unwrap().status().as_u16(),
        200
    );
    assert_eq!(write().send().await.unwrap().status().as_u16(), 201);

    proxy.cut();
    let secrets = [
        "postgres",
        db.name.as_str(),
        "127.0.0.1",
        &proxy.port.to_string(),
    ];
    // The first write finds the store gone.
    assert_quiet_503(write().send().await.unwrap(), &secrets).await;
    // From then on, writes, reads and readiness are refused at once.
    for _ in 0..3 {
        let w = create_timeline(&http, &base, "lost")
            .send()
            .await
            .expect("a write answered at once");
        assert_quiet_503(w, &secrets).await;
        let r = http.get(&ready).send().await.expect("readiness at once");
        assert_quiet_503(r, &secrets).await;
        let r = list_timelines(&http, &base)
            .send()
            .await
            .expect("a read answered at once");
        assert_quiet_503(r, &secrets).await;
    }

    proxy.restore();
    let back = tokio::time::timeout(PATIENCE, async {
        loop {
            if let Ok(r) = http.get(&ready).send().await
                && r.status().as_u16() == 200
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    assert!(back.is_ok(), "never ready again");
    assert_eq!(write().send().await.unwrap().status().as_u16(), 201);
}

#[tokio::test]
async fn a_503_names_no_url_and_no_driver_text_but_says_when_to_retry() {
    let driver = "cannot reach PostgreSQL at postgres://ada:hunter2@db.internal:5432/log: \
                  error communicating with database: Connection refused (os error 111)";
    let app = Wrapped::new(engine().await)
        .failing("list_items", ServiceError::Unavailable(driver.into()))
        .failing("whoami", ServiceError::Unavailable(driver.into()))
        .app(config());
    for uri in ["/v1/items", "/v1/items?view=full", "/readyz"] {
        let r = app.get(uri, &token("ada")).await;
        assert_eq!(r.status.as_u16(), 503, "{uri}: {}", r.text);
        assert_eq!(r.header("retry-after"), Some("1"), "{uri}");
        for secret in ["postgres", "hunter2", "db.internal", "5432", "os error"] {
            assert!(!r.text.contains(secret), "{uri}: {secret:?} in {}", r.text);
        }
    }
}

/// A log in memory whose writes fail as SQLite's do on a full disk while `full` is set.
#[derive(Default)]
struct FullDisk {
    full: AtomicBool,
}

impl FullDisk {
    fn refuse(&self) -> Result<(), StoreError> {
        if self.full.load(Ordering::SeqCst) {
            return Err(StoreError::Unavailable(
                "cannot write /var/lib/chronoscope/chronoscope.db: the disk is full".into(),
            ));
        }
        Ok(())
    }
}

#[async_trait]
impl support::StoreHooks for FullDisk {
    fn describe(&self, _: &dyn Store) -> String {
        "a log on a disk that fills up".into()
    }

    async fn lock(&self) -> Result<(), StoreError> {
        self.refuse()
    }

    async fn start_chain(&self) -> Result<(), StoreError> {
        self.refuse()
    }
}

#[tokio::test]
async fn readiness_says_not_ready_once_a_write_found_the_disk_full() {
    let disk = Arc::new(support::Hooked::memory(FullDisk::default()));
    let store = Arc::new(Watched::new(disk.clone(), None));
    let base = serve(store.clone()).await;
    chronoscope::tls::install_default_provider();
    let http = reqwest::Client::builder()
        .timeout(PATIENCE)
        .build()
        .unwrap();
    let ready = format!("{base}/readyz");
    assert_eq!(
        http.get(&ready).send().await.unwrap().status().as_u16(),
        200
    );
    disk.full.store(true, Ordering::SeqCst);
    let w = create_timeline(&http, &base, "no room")
        .send()
        .await
        .unwrap();
    assert_quiet_503(w, &["/var/lib"]).await;
    // Reads go on once the store's probe finds it answering; readiness still says no.
    let reads = tokio::time::timeout(PATIENCE, async {
        loop {
            let r = list_timelines(&http, &base).send().await.unwrap();
            if r.status().is_success() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    assert!(reads.is_ok(), "reads never came back");
    let why = store.writable().expect_err("writes cannot be made");
    assert!(why.to_string().contains("the disk is full"), "{why}");
    assert_quiet_503(
        http.get(&ready).send().await.unwrap(),
        &["/var/lib", "disk"],
    )
    .await;
    // Room again: the next write succeeds, and readiness follows.
    disk.full.store(false, Ordering::SeqCst);
    let w = create_timeline(&http, &base, "room").send().await.unwrap();
    assert_eq!(w.status().as_u16(), 201);
    assert_eq!(
        http.get(&ready).send().await.unwrap().status().as_u16(),
        200
    );
}
