//! A loopback HTTP/1.1 server (plain or TLS) driven by a handler closure, recording requests.
//!
//! The server runs on its own thread with its own tokio runtime, so synchronous tests, tests on
//! either tokio flavour and tests that spawn a binary can all use it the same way. It stops when
//! the [`TestServer`] is dropped.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::{HeaderMap, Method, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

use crate::tls::TestCa;

/// What a handler answers: a complete response.
pub type Reply = Response<Full<Bytes>>;

type BoxedHandler =
    Arc<dyn Fn(RecordedRequest) -> Pin<Box<dyn Future<Output = Reply> + Send>> + Send + Sync>;

/// One request as the server received it.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    /// The HTTP method.
    pub method: Method,
    /// The path, e.g. `/api/v1/namespaces`.
    pub path: String,
    /// The raw query string, without `?` (empty when absent).
    pub query: String,
    /// The request headers.
    pub headers: HeaderMap,
    /// The whole request body.
    pub body: Bytes,
}

impl RecordedRequest {
    /// The value of a query parameter, if present (no percent-decoding beyond `+`/`%XX` is needed
    /// by the fakes, which only use simple tokens).
    pub fn query_param(&self, name: &str) -> Option<String> {
        self.query.split('&').find_map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (key == name).then(|| value.to_string())
        })
    }

    /// A header value as text, if present and valid UTF-8.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// A running loopback server. Dropping it stops the server.
#[derive(Debug)]
pub struct TestServer {
    addr: SocketAddr,
    tls: bool,
    requests: Arc<Mutex<Vec<RecordedRequest>>>,
    stop: Option<oneshot::Sender<()>>,
}

impl TestServer {
    /// Starts a plain-HTTP server on `127.0.0.1:0`.
    pub fn start<H, F>(handler: H) -> TestServer
    where
        H: Fn(RecordedRequest) -> F + Send + Sync + 'static,
        F: Future<Output = Reply> + Send + 'static,
    {
        Self::spawn(None, box_handler(handler))
    }

    /// Starts an HTTPS server on `127.0.0.1:0` presenting `ca`'s leaf certificate.
    pub fn start_tls<H, F>(ca: &TestCa, handler: H) -> TestServer
    where
        H: Fn(RecordedRequest) -> F + Send + Sync + 'static,
        F: Future<Output = Reply> + Send + 'static,
    {
        Self::spawn(Some(ca.server_config()), box_handler(handler))
    }

    /// The socket address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL: `http://127.0.0.1:PORT` or `https://localhost:PORT` (the name the test
    /// certificate is issued for).
    pub fn url(&self) -> String {
        if self.tls {
            format!("https://localhost:{}", self.addr.port())
        } else {
            format!("http://127.0.0.1:{}", self.addr.port())
        }
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.requests.lock().expect("request log").clone()
    }

    fn spawn(tls: Option<Arc<rustls::ServerConfig>>, handler: BoxedHandler) -> TestServer {
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (stop_tx, stop_rx) = oneshot::channel();
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let is_tls = tls.is_some();
        let log = Arc::clone(&requests);
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("test server runtime");
            runtime.block_on(async move {
                let listener = TcpListener::bind("127.0.0.1:0")
                    .await
                    .expect("bind loopback");
                addr_tx
                    .send(listener.local_addr().expect("local addr"))
                    .expect("report address");
                tokio::select! {
                    _ = accept_loop(listener, tls, handler, log) => {}
                    _ = stop_rx => {}
                }
            });
            runtime.shutdown_background();
        });
        let addr = addr_rx.recv().expect("test server started");
        TestServer {
            addr,
            tls: is_tls,
            requests,
            stop: Some(stop_tx),
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// A response with `status`, a `content-type` and `body`.
pub fn respond(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Reply {
    Response::builder()
        .status(status)
        .header(http::header::CONTENT_TYPE, content_type)
        .body(Full::new(body.into()))
        .expect("valid response")
}

/// A JSON response with `status`.
pub fn respond_json(status: StatusCode, body: impl Into<Bytes>) -> Reply {
    respond(status, "application/json", body)
}

fn box_handler<H, F>(handler: H) -> BoxedHandler
where
    H: Fn(RecordedRequest) -> F + Send + Sync + 'static,
    F: Future<Output = Reply> + Send + 'static,
{
    Arc::new(move |request| Box::pin(handler(request)))
}

async fn accept_loop(
    listener: TcpListener,
    tls: Option<Arc<rustls::ServerConfig>>,
    handler: BoxedHandler,
    log: Arc<Mutex<Vec<RecordedRequest>>>,
) {
    let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let handler = Arc::clone(&handler);
        let log = Arc::clone(&log);
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let handler = Arc::clone(&handler);
                let log = Arc::clone(&log);
                async move {
                    let recorded = record(request).await;
                    log.lock().expect("request log").push(recorded.clone());
                    Ok::<_, std::convert::Infallible>(handler(recorded).await)
                }
            });
            let builder = hyper::server::conn::http1::Builder::new();
            match acceptor {
                Some(acceptor) => {
                    if let Ok(stream) = acceptor.accept(stream).await {
                        let _ = builder
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    }
                }
                None => {
                    let _ = builder
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                }
            }
        });
    }
}

async fn record(request: http::Request<Incoming>) -> RecordedRequest {
    let (parts, body) = request.into_parts();
    let body = body
        .collect()
        .await
        .map(|c| c.to_bytes())
        .unwrap_or_default();
    RecordedRequest {
        method: parts.method,
        path: parts.uri.path().to_string(),
        query: parts.uri.query().unwrap_or("").to_string(),
        headers: parts.headers,
        body,
    }
}
