//! Serving the webhook over HTTPS: rustls (ring) in front of hyper's HTTP/1.1 server.
//!
//! `POST /validate` takes an `AdmissionReview` and answers with one ([`crate::review`]);
//! `GET /healthz` answers `ok` for probes. Every resource is bounded: request bodies
//! ([`Limits::max_body_bytes`], 413 beyond), the TLS handshake and the request (headers and body
//! within [`Limits::request_timeout`], 408 for a slow body), and the connections served at once.
//! Judging runs on the blocking pool, so a large object never stalls the other connections.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use admission_core::JobValidationPolicy;
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_rustls::TlsAcceptor;

use crate::review::{self, Answer};

/// How much one client may ask of the server.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The largest request body read (an `AdmissionReview` holds the object and the old
    /// object; the API server caps an object near 3 MiB).
    pub max_body_bytes: usize,
    /// Time for a client to finish the TLS handshake.
    pub handshake_timeout: Duration,
    /// Time for a request's headers, and again for its body, to arrive.
    pub request_timeout: Duration,
    /// Connections served at once; more wait to be accepted.
    pub max_connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_body_bytes: 8 * 1024 * 1024,
            handshake_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(10),
            max_connections: 256,
        }
    }
}

/// Serves the webhook on `listener` until the process ends.
pub async fn serve(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    policy: Arc<JobValidationPolicy>,
    limits: Limits,
) {
    let acceptor = TlsAcceptor::from(tls);
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    loop {
        // The semaphore is never closed, so a permit always comes.
        let Ok(permit) = Arc::clone(&slots).acquire_owned().await else {
            return;
        };
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(error) => {
                // Out of descriptors and the like pass: wait a little instead of spinning.
                eprintln!("admission-webhook: accept failed: {error}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let acceptor = acceptor.clone();
        let policy = Arc::clone(&policy);
        tokio::spawn(async move {
            let _permit = permit;
            let handshake = tokio::time::timeout(limits.handshake_timeout, acceptor.accept(stream));
            let Ok(Ok(tls)) = handshake.await else {
                return;
            };
            let service = service_fn(move |request| handle(request, Arc::clone(&policy), limits));
            // A client that breaks the protocol or goes away ends its own connection only.
            let _ = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(limits.request_timeout)
                .serve_connection(TokioIo::new(tls), service)
                .await;
        });
    }
}

async fn handle(
    request: Request<Incoming>,
    policy: Arc<JobValidationPolicy>,
    limits: Limits,
) -> Result<Response<Full<Bytes>>, Infallible> {
    Ok(match (request.method(), request.uri().path()) {
        (&Method::POST, "/validate") => validate(request, policy, limits).await,
        (&Method::GET, "/healthz") => text(StatusCode::OK, "ok".to_owned()),
        (_, "/validate" | "/healthz") => text(
            StatusCode::METHOD_NOT_ALLOWED,
            "method not allowed".to_owned(),
        ),
        _ => text(StatusCode::NOT_FOUND, "not found".to_owned()),
    })
}

async fn validate(
    request: Request<Incoming>,
    policy: Arc<JobValidationPolicy>,
    limits: Limits,
) -> Response<Full<Bytes>> {
    let too_large = || {
        text(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("request body over {} bytes", limits.max_body_bytes),
        )
    };
    let body = Limited::new(request.into_body(), limits.max_body_bytes);
    let body = match tokio::time::timeout(limits.request_timeout, body.collect()).await {
        Err(_) => {
            return text(
                StatusCode::REQUEST_TIMEOUT,
                "request body not received in time".to_owned(),
            );
        }
        Ok(Err(error)) if error.downcast_ref::<LengthLimitError>().is_some() => return too_large(),
        Ok(Err(_)) => {
            return text(
                StatusCode::BAD_REQUEST,
                "cannot read the request body".to_owned(),
            );
        }
        Ok(Ok(collected)) => collected.to_bytes(),
    };
    let judged = tokio::task::spawn_blocking(move || review::answer(&body, &policy)).await;
    match judged {
        Ok(Answer::Review { body, decision }) => {
            let verdict = if decision.allowed {
                "allowed".to_owned()
            } else {
                format!("denied: {}", decision.message)
            };
            eprintln!(
                "admission-webhook: {} {}: {verdict}",
                decision.uid, decision.object
            );
            let mut response = Response::new(Full::new(Bytes::from(body)));
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                header::HeaderValue::from_static("application/json"),
            );
            response
        }
        Ok(Answer::BadRequest(reason)) => text(StatusCode::BAD_REQUEST, reason),
        Err(_) => text(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the review could not be judged".to_owned(),
        ),
    }
}

fn text(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}
