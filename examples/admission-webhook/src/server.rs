//! Serving the webhook over HTTPS: rustls (ring) in front of hyper's HTTP/1.1 server.
//!
//! `POST /validate` takes an `AdmissionReview` and answers with one ([`crate::review`]);
//! `GET /healthz` answers `ok` for probes. Every resource is bounded (see [`Limits`] for the
//! values and why): request bodies ([`Limits::max_body_bytes`], 413 beyond), the TLS handshake,
//! a request's headers and body (408 for a slow body), each connection's whole lifetime
//! (handshake, requests, writing the answers: a client that never reads its answer is closed at
//! [`Limits::connection_lifetime`]), the connections served at once, and the reviews read and
//! judged at once ([`Limits::max_reviews_at_once`], the memory-heavy part), so that the process
//! stays within the README Deployment's 128Mi. Judging runs on the blocking pool, so a large
//! object never stalls the other connections. Each decision is logged as one line of escaped
//! fields ([`decision_line`]).

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
    /// The largest request body read: 3 MiB, the API server's own cap on a request body
    /// (`MaxRequestBodyBytes`); an object stored in etcd is at most 1.5 MiB, so a review of an
    /// object and its old object fits.
    pub max_body_bytes: usize,
    /// Time for a client to finish the TLS handshake: 10 s.
    pub handshake_timeout: Duration,
    /// Time for a request's headers, and again for its body, to arrive: 10 s.
    pub request_timeout: Duration,
    /// The longest a connection lives, handshake, requests and writing answers included: 30 s,
    /// the longest `timeoutSeconds` the API server allows a webhook (it gives up on the call
    /// then anyway, and opens a new connection for the next).
    pub connection_lifetime: Duration,
    /// Connections served at once: 1024 (a waiting connection holds only its TLS state and a
    /// small read buffer, [`MAX_READ_BUFFER`]); more wait to be accepted.
    pub max_connections: usize,
    /// Reviews read and judged at once: 2. A review's peak is its body and one JSON value of
    /// its object, at most [`crate::review::MAX_JSON_VALUES`] values (31 MiB for the worst 3 MiB
    /// body, measured by the end-to-end test), so two of them stay within the README
    /// Deployment's 128Mi with the connections' memory (the binary runs them on as many
    /// blocking threads, so no more allocator arenas keep what they freed). A
    /// review waits for its turn within [`Limits::request_timeout`], then gets 503; the API
    /// server's `--max-requests-inflight` bounds its own work the same way.
    pub max_reviews_at_once: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_body_bytes: 3 * 1024 * 1024,
            handshake_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(10),
            connection_lifetime: Duration::from_secs(30),
            max_connections: 1024,
            max_reviews_at_once: 2,
        }
    }
}

/// The most a connection buffers of what a client sends before the server reads it (headers
/// must fit; bodies are read through it): 16 KiB.
pub const MAX_READ_BUFFER: usize = 16 * 1024;

/// Serves the webhook on `listener` until the process ends.
pub async fn serve(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    policy: Arc<JobValidationPolicy>,
    limits: Limits,
) {
    let acceptor = TlsAcceptor::from(tls);
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let reviews = Arc::new(Semaphore::new(limits.max_reviews_at_once.max(1)));
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
        let reviews = Arc::clone(&reviews);
        tokio::spawn(async move {
            let _permit = permit;
            let connection = async move {
                let handshake =
                    tokio::time::timeout(limits.handshake_timeout, acceptor.accept(stream));
                let Ok(Ok(tls)) = handshake.await else {
                    return;
                };
                let service = service_fn(move |request| {
                    handle(request, Arc::clone(&policy), Arc::clone(&reviews), limits)
                });
                // A client that breaks the protocol or goes away ends its own connection only.
                let _ = http1::Builder::new()
                    .timer(TokioTimer::new())
                    .header_read_timeout(limits.request_timeout)
                    .max_buf_size(MAX_READ_BUFFER)
                    .serve_connection(TokioIo::new(tls), service)
                    .await;
            };
            // The whole lifetime, writes included: dropping the connection closes it.
            let _ = tokio::time::timeout(limits.connection_lifetime, connection).await;
        });
    }
}

async fn handle(
    request: Request<Incoming>,
    policy: Arc<JobValidationPolicy>,
    reviews: Arc<Semaphore>,
    limits: Limits,
) -> Result<Response<Full<Bytes>>, Infallible> {
    Ok(match (request.method(), request.uri().path()) {
        (&Method::POST, "/validate") => {
            // The body is read only with a turn: at most `max_reviews_at_once` in memory.
            let turn = tokio::time::timeout(limits.request_timeout, reviews.acquire_owned());
            match turn.await {
                Ok(Ok(_turn)) => validate(request, policy, limits).await,
                _ => text(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "too many reviews at once".to_owned(),
                ),
            }
        }
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
    let body = match tokio::time::timeout(
        limits.request_timeout,
        read_body(body, limits.max_body_bytes),
    )
    .await
    {
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
        Ok(Ok(body)) => body,
    };
    let judged = tokio::task::spawn_blocking(move || review::answer(&body, &policy)).await;
    match judged {
        Ok(Answer::Review { body, decision }) => {
            eprintln!("{}", decision_line(&decision));
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

/// The body in one buffer, sized up front from its `Content-Length` (within the cap) and grown as
/// it arrives otherwise: never collected in frames and copied again.
async fn read_body(
    mut body: Limited<Incoming>,
    cap: usize,
) -> Result<Vec<u8>, Box<dyn std::error::Error + Send + Sync>> {
    let announced = usize::try_from(hyper::body::Body::size_hint(&body).lower()).unwrap_or(cap);
    let mut buffer = Vec::with_capacity(announced.min(cap));
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame?.into_data() {
            buffer.extend_from_slice(&data);
        }
    }
    Ok(buffer)
}

/// One decision as one log line of named fields, each value quoted and escaped
/// ([`escaped`]): a uid, name or message cannot end the line, forge another, or send a
/// terminal escape sequence.
///
/// `admission-webhook: decision uid="…" object="Job ns/name" allowed=false message="…"`
pub fn decision_line(decision: &review::Decision) -> String {
    format!(
        "admission-webhook: decision uid={} object={} allowed={} message={}",
        escaped(&decision.uid),
        escaped(&decision.object),
        decision.allowed,
        escaped(&decision.message)
    )
}

/// `text` quoted, with `"` and `\` escaped and every control character (C0, DEL, C1: newlines
/// and ESC among them), the Unicode line and paragraph separators and the bidirectional
/// overrides written as `\u{…}`, so the value is printable text on one line.
pub fn escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control()
                || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}') =>
            {
                out.push_str(&format!("\\u{{{:04x}}}", u32::from(c)));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
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
