//! The one HTTP client every outgoing request uses (Raft RPCs and the client library): hyper-util's
//! pooled HTTP/1.1 client, so connections are kept alive and shared by every clone. It knows
//! nothing of Raft or of the API's error types; it moves bytes and reports transport failures.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Body;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

/// A request body: a whole buffer or a stream (a snapshot file).
pub type ReqBody = BoxBody<Bytes, std::io::Error>;

/// Why a request got no answer. `NotSent` means the server certainly did not see it.
#[derive(Debug)]
pub enum TransportError {
    /// The connection could not be made: the request never reached the server.
    NotSent(String),
    /// The request may have reached the server, but no whole answer came back.
    Failed(String),
    /// No answer within the deadline (the server may still act on the request).
    Timeout,
}

impl std::fmt::Display for TransportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TransportError::NotSent(m) => write!(f, "connection failed: {m}"),
            TransportError::Failed(m) => write!(f, "request failed: {m}"),
            TransportError::Timeout => write!(f, "timed out"),
        }
    }
}

impl std::error::Error for TransportError {}

/// A cheap-to-clone pooled HTTP client.
#[derive(Clone)]
pub struct HttpClient {
    inner: Client<HttpConnector, ReqBody>,
}

impl Default for HttpClient {
    fn default() -> Self {
        Self::new()
    }
}

impl HttpClient {
    pub fn new() -> HttpClient {
        let mut connector = HttpConnector::new();
        // Raft messages are small and latency-bound: do not let Nagle hold them back.
        connector.set_nodelay(true);
        connector.set_connect_timeout(Some(Duration::from_secs(2)));
        let inner = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(60))
            // Every clone shares this pool: a benchmark's concurrent calls keep their connections.
            .pool_max_idle_per_host(256)
            .build(connector);
        HttpClient { inner }
    }

    /// `POST http://{addr}{path}` with a postcard body; the answer's status and bytes.
    pub async fn post(
        &self,
        addr: &str,
        path: &str,
        body: Vec<u8>,
        timeout: Duration,
    ) -> Result<(u16, Bytes), TransportError> {
        let body = Full::new(Bytes::from(body)).map_err(|never| match never {}).boxed();
        self.send("POST", addr, path, None, body, timeout).await
    }

    /// `GET http://{addr}{path}`.
    pub async fn get(
        &self,
        addr: &str,
        path: &str,
        timeout: Duration,
    ) -> Result<(u16, Bytes), TransportError> {
        let body = Full::new(Bytes::new()).map_err(|never| match never {}).boxed();
        self.send("GET", addr, path, None, body, timeout).await
    }

    /// Sends any body, with an optional extra header; reads the whole answer within `timeout`.
    pub async fn send(
        &self,
        method: &str,
        addr: &str,
        path: &str,
        header: Option<(&str, String)>,
        body: ReqBody,
        timeout: Duration,
    ) -> Result<(u16, Bytes), TransportError> {
        let mut builder = hyper::Request::builder()
            .method(method)
            .uri(format!("http://{addr}{path}"))
            .header("content-type", "application/octet-stream");
        if let Some((name, value)) = header {
            builder = builder.header(name, value);
        }
        if let Some(len) = body.size_hint().exact() {
            builder = builder.header("content-length", len);
        }
        let request = builder.body(body).map_err(|e| TransportError::NotSent(e.to_string()))?;
        let exchange = async {
            let response = self.inner.request(request).await.map_err(|e| {
                if e.is_connect() {
                    TransportError::NotSent(chain(&e))
                } else {
                    TransportError::Failed(chain(&e))
                }
            })?;
            let status = response.status().as_u16();
            let bytes = response
                .into_body()
                .collect()
                .await
                .map_err(|e| TransportError::Failed(chain(&e)))?
                .to_bytes();
            Ok((status, bytes))
        };
        tokio::time::timeout(timeout, exchange).await.unwrap_or(Err(TransportError::Timeout))
    }
}

/// An error with its causes ("client error (Connect): tcp connect error: Connection refused"):
/// hyper's own message alone does not say what went wrong.
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}
