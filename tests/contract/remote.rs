//! The remote face's server: the real router ([`chronoscope::server::run`], or
//! [`chronoscope::server::run_tls`] with certificates made for the test) in front of an
//! engine, on a loopback port the OS picks, with tokens signed by [`chronoscope::auth`].
//! Also the few checks only the remote face has: scopes, foreign tokens, a server that is gone.

use std::sync::Arc;
use std::time::Duration;

use chronoscope::auth::{Scopes, Secret, issue_token};
use chronoscope::client::RemoteClient;
use chronoscope::engine::Engine;
use chronoscope::error::ServiceError;
use chronoscope::server::{RateLimit, ServerConfig, run, run_tls};
use chronoscope::service::PageRequest;
use chronoscope::service::prelude::*;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::pki::Pki;

/// The secret of every test server (tests only).
const SECRET: &str = "contract-suite-secret-not-for-production";

/// A running test server; shut down when dropped.
pub struct Server {
    /// Its root URL, like `http://127.0.0.1:41234`.
    pub base_url: String,
    /// Over https: the certificates, the CA among them.
    pki: Option<Pki>,
    secret: Secret,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<std::io::Result<()>>>,
}

impl Server {
    /// Starts the server in front of `engine`, with the default settings a user gets.
    pub async fn start(engine: Arc<Engine>) -> Self {
        Self::start_with(engine, |config| config).await
    }

    /// Starts the server in front of `engine` with settings adjusted by `adjust`.
    pub async fn start_with(
        engine: Arc<Engine>,
        adjust: impl FnOnce(ServerConfig) -> ServerConfig,
    ) -> Self {
        Self::start_on(engine, adjust, None).await
    }

    /// Starts the server in front of `engine` over https, with a certificate for `localhost`
    /// that a CA made for the test signed.
    pub async fn start_tls(engine: Arc<Engine>) -> Self {
        Self::start_on(engine, |config| config, Some(Pki::new())).await
    }

    async fn start_on(
        engine: Arc<Engine>,
        adjust: impl FnOnce(ServerConfig) -> ServerConfig,
        pki: Option<Pki>,
    ) -> Self {
        let secret = Secret::from_bytes(SECRET).expect("a long enough test secret");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let addr = listener.local_addr().expect("the bound address");
        let (stop, stopped) = oneshot::channel::<()>();
        let config = adjust(ServerConfig::new(secret.clone()));
        let tls = pki.as_ref().map(Pki::server_config);
        let task = tokio::spawn(async move {
            let shutdown = async {
                let _ = stopped.await;
            };
            match tls {
                Some(tls) => run_tls(listener, tls, config, engine, shutdown).await,
                None => run(listener, config, engine, shutdown).await,
            }
        });
        let base_url = match &pki {
            Some(_) => format!("https://localhost:{}", addr.port()),
            None => format!("http://{addr}"),
        };
        Self {
            base_url,
            pki,
            secret,
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// A token for `traveller` with `scopes`, valid for an hour.
    pub fn token_with(&self, traveller: &str, scopes: &str) -> String {
        issue_token(
            &self.secret,
            traveller,
            &Scopes::parse(scopes),
            Duration::from_secs(3600),
        )
        .expect("a token for the test traveller")
    }

    /// A token for `traveller` with the read and write scopes.
    pub fn token_for(&self, traveller: &str) -> String {
        self.token_with(traveller, "read write")
    }

    /// A client acting as `traveller` (read and write), trusting the test CA over https.
    pub fn client_for(&self, traveller: &str) -> RemoteClient {
        self.client_with(self.token_for(traveller))
    }

    /// A client acting as `traveller` with the admin scope too: an operator.
    pub fn operator_client(&self, traveller: &str) -> RemoteClient {
        self.client_with(self.token_with(traveller, "read write admin"))
    }

    fn client_with(&self, token: String) -> RemoteClient {
        let mut client = RemoteClient::builder(&self.base_url, token);
        if let Some(pki) = &self.pki {
            client = client.ca_cert(pki.ca());
        }
        client.build().expect("a client of the test server")
    }

    /// A client of `url` acting as ada that retries without waiting: for addresses that do not
    /// answer as this server would.
    pub fn impatient_client(&self, url: &str) -> RemoteClient {
        RemoteClient::builder(url, self.token_for("ada"))
            .retry_backoff(Duration::from_millis(1))
            .build()
            .expect("a client")
    }

    /// Stops the server and waits until its port is closed.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let served = task.await.expect("the server task ends cleanly");
            served.expect("the server shut down without an I/O error");
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

async fn engine() -> Arc<Engine> {
    crate::support::memory_engine().await
}

#[tokio::test]
async fn a_read_only_token_reads_but_is_forbidden_to_write() {
    let server = Server::start(engine().await).await;
    let reader =
        RemoteClient::new(&server.base_url, server.token_with("ada", "read")).expect("a client");
    let list = reader
        .list_timelines(PageRequest::default())
        .await
        .expect("read is allowed");
    assert_eq!(list.items.len(), 1);
    let err = reader
        .create_timeline(crate::support::named("nope"))
        .await
        .expect_err("write needs the write scope");
    assert!(matches!(err, ServiceError::Forbidden(_)), "{err:?}");
    let admin =
        RemoteClient::new(&server.base_url, server.token_with("ada", "admin")).expect("a client");
    admin
        .create_timeline(crate::support::named("admin may"))
        .await
        .expect("admin implies write");
}

#[tokio::test]
async fn a_token_signed_with_another_secret_is_unauthorized() {
    let server = Server::start(engine().await).await;
    let other = Secret::from_bytes("some-other-secret-of-sufficient-length").expect("secret");
    let forged = issue_token(
        &other,
        "ada",
        &Scopes::parse("read write admin"),
        Duration::from_secs(60),
    )
    .expect("token");
    let client = RemoteClient::new(&server.base_url, forged).expect("a client");
    let err = client.whoami().await.expect_err("a foreign token");
    assert!(matches!(err, ServiceError::Unauthorized(_)), "{err:?}");
}

#[tokio::test]
async fn a_stopped_server_is_unavailable_naming_its_url() {
    let server = Server::start(engine().await).await;
    let base = server.base_url.clone();
    let client = server.impatient_client(&base);
    client
        .whoami()
        .await
        .expect("the server answers while it runs");
    server.stop().await;
    let err = client.whoami().await.expect_err("the server is stopped");
    assert_eq!(
        err,
        ServiceError::Unavailable(format!("cannot reach {base}: connection refused"))
    );
    // It may come back: worth trying again, unlike a refused certificate.
    assert!(!chronoscope::client::is_lasting(&err), "{err:?}");
}

#[tokio::test]
async fn past_the_rate_limit_the_client_is_told_how_long_to_wait() {
    let server = Server::start_with(engine().await, |config| ServerConfig {
        // One request, then one more per hour: the second request is refused.
        rate_limit: RateLimit {
            per_second: 1.0 / 3600.0,
            burst: 1,
        },
        ..config
    })
    .await;
    let client = RemoteClient::new(&server.base_url, server.token_for("ada")).expect("a client");
    client.whoami().await.expect("the first request passes");
    match client.whoami().await {
        Err(ServiceError::RateLimited { retry_after_secs }) => {
            assert!(
                (1..=3600).contains(&retry_after_secs),
                "wait {retry_after_secs} s"
            );
        }
        other => panic!("expected RateLimited, got {other:?}"),
    }
    // The limit is per traveller: bob is not slowed down by ada.
    let bob = RemoteClient::new(&server.base_url, server.token_for("bob")).expect("a client");
    bob.whoami().await.expect("another traveller passes");
}

#[tokio::test]
async fn over_https_with_the_private_ca_the_client_works_and_v1_may_end_the_url() {
    let server = Server::start_tls(engine().await).await;
    assert!(server.base_url.starts_with("https://localhost:"));
    let ada = server.client_for("ada");
    let made = ada
        .create_timeline(crate::support::named("over tls"))
        .await
        .expect("a write over https");
    let ca = server.pki.as_ref().expect("a TLS server").ca();
    for root in [
        format!("{}/v1", server.base_url),
        format!("{}/v1/", server.base_url),
    ] {
        let client = RemoteClient::builder(&root, server.token_for("ada"))
            .ca_cert(&ca)
            .build()
            .expect("a client");
        assert_eq!(client.base_url(), server.base_url);
        let got = client
            .get_timeline(&made.id)
            .await
            .expect("a read over https");
        assert_eq!(got.name, "over tls");
    }
}

#[tokio::test]
async fn the_https_server_speaks_http2_and_http11_as_the_client_asks() {
    let server = Server::start_tls(engine().await).await;
    let pki = server.pki.as_ref().expect("a TLS server");
    chronoscope::tls::install_default_provider();
    let ca = reqwest::Certificate::from_pem(&std::fs::read(pki.ca()).expect("the CA file"))
        .expect("a PEM certificate");
    let url = format!("{}/healthz", server.base_url);
    for (http1_only, expected) in [
        (false, reqwest::Version::HTTP_2),
        (true, reqwest::Version::HTTP_11),
    ] {
        let mut client = reqwest::Client::builder().tls_certs_only([ca.clone()]);
        if http1_only {
            client = client.http1_only();
        }
        let answer = client
            .build()
            .expect("a client")
            .get(&url)
            .send()
            .await
            .expect("an answer over https");
        assert_eq!(answer.status(), 200);
        assert_eq!(answer.version(), expected);
    }
}

#[tokio::test]
async fn a_certificate_from_another_ca_is_refused_in_words_and_not_retried() {
    let server = Server::start_tls(engine().await).await;
    let pki = server.pki.as_ref().expect("a TLS server");
    for ca in [Some(pki.other_ca()), None] {
        let mut client = RemoteClient::builder(&server.base_url, server.token_for("ada"))
            // Long enough that two retries would show in the time taken.
            .retry_backoff(Duration::from_secs(5));
        if let Some(ca) = &ca {
            client = client.ca_cert(ca);
        }
        let client = client.build().expect("a client");
        let started = std::time::Instant::now();
        let err = client.whoami().await.expect_err("an untrusted certificate");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "a refused certificate was tried again"
        );
        assert_eq!(
            err,
            ServiceError::Unavailable(format!(
                "cannot reach {}: the server's certificate is not trusted (unknown issuer); \
                 if a private CA signed it, pass that CA with --ca-cert FILE (or \
                 CHRONOSCOPE_CA_CERT)",
                server.base_url
            )),
            "with CA {ca:?}"
        );
        // A dashboard says this will not mend by itself rather than "retrying".
        assert!(chronoscope::client::is_lasting(&err), "{err:?}");
    }
}

#[tokio::test]
async fn plain_http_to_an_https_server_and_back_is_explained() {
    let server = Server::start_tls(engine().await).await;
    let plain = server.base_url.replacen("https://", "http://", 1);
    let err = server.impatient_client(&plain).whoami().await;
    let err = err.expect_err("https spoken to in http");
    assert!(
        err.to_string().contains("does it serve https:// there?"),
        "{err}"
    );
    assert!(chronoscope::client::is_lasting(&err), "{err:?}");

    let plain_server = Server::start(engine().await).await;
    let tls = plain_server.base_url.replacen("http://", "https://", 1);
    let err = plain_server.impatient_client(&tls).whoami().await;
    let err = err.expect_err("http spoken to in https");
    assert!(
        err.to_string()
            .contains("does it serve plain http:// there?"),
        "{err}"
    );
    assert!(chronoscope::client::is_lasting(&err), "{err:?}");
}
