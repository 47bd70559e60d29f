//! The baseline of `scripts/load.sh`: a bare hyper 1.x HTTP/1.1 server answering every request
//! with the same small JSON body, on the same tokio runtime flavour `chronoscope serve` uses.
//! The performance budgets (DESIGN.md §7) are ratios to its requests per second.
//!
//! `cargo run --release --example bare_hyper -- [ADDR]` (default `127.0.0.1:0`); prints
//! `bare hyper serving on http://ADDR` to stderr once it listens.

use std::convert::Infallible;
use std::net::SocketAddr;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

/// About the size of a short documented answer, so bytes on the wire are comparable.
const BODY: &[u8] =
    br#"{"id":"primary","name":"Primary timeline","status":"open","window":"unbounded"}"#;

async fn answer(_req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let mut response = Response::new(Full::new(Bytes::from_static(BODY)));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Ok(response)
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let addr: SocketAddr = match std::env::args().nth(1) {
        Some(arg) => arg.parse().map_err(|e| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("{arg}: {e}"))
        })?,
        None => SocketAddr::from(([127, 0, 0, 1], 0)),
    };
    let listener = TcpListener::bind(addr).await?;
    eprintln!("bare hyper serving on http://{}", listener.local_addr()?);
    loop {
        let (stream, _) = listener.accept().await?;
        // Same as a production server: no Nagle delay on small responses.
        stream.set_nodelay(true)?;
        tokio::spawn(async move {
            // A client closing mid-request is not the baseline's concern.
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service_fn(answer))
                .await;
        });
    }
}
