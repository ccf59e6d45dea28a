//! The one place that talks to the network: the workspace's HTTPS client (`https-client`, hyper
//! over rustls with the `ring` provider) trusting the system roots plus an optional `caFile`
//! (read capped at [`MAX_CA_FILE_BYTES`], regular files only, refused whole when any part of it
//! is unusable), sending one request and reading its body up to [`MAX_BODY_BYTES`].
//!
//! Redirects are never followed (hyper does not); timeouts are applied by the caller.

use std::error::Error as StdError;
use std::path::Path;

use bytes::Bytes;
use http::header::CONTENT_LENGTH;
use http::{HeaderMap, Request, StatusCode};
use http_body_util::{BodyExt, Empty, LengthLimitError, Limited};
use https_client::{ClientOptions, ExtraCa, HttpsClient};
pub use https_client::{MAX_CA_FILE_BYTES, TrustRoots};
use hyper::body::Incoming;

use crate::classify::{FetchError, MAX_BODY_BYTES};

/// Why the HTTPS client could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The trust roots are unusable: the `caFile` cannot be read or holds no usable certificate
    /// (the message names the file and the problem), or nothing is trusted at all.
    #[error(transparent)]
    Trust(#[from] https_client::TrustError),
    /// The async runtime for a blocking call could not be started.
    #[error("cannot start the async runtime")]
    Runtime(#[source] std::io::Error),
}

/// The system roots plus the regions file's `caFile`, when it names one.
pub fn trust_with_ca_file(ca_file: Option<&Path>) -> TrustRoots {
    TrustRoots::system_and(ca_file.map(|path| ExtraCa::file("caFile", path)))
}

/// A response's head and its complete (capped) body.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
}

/// The HTTPS client, cheap to clone.
#[derive(Clone, Debug)]
pub(crate) struct Transport {
    client: HttpsClient<Empty<Bytes>>,
}

impl Transport {
    /// A client trusting `trust` (https only).
    pub(crate) fn new(trust: &TrustRoots) -> Result<Transport, ClientError> {
        let client = https_client::build(&ClientOptions {
            trust: trust.clone(),
            ..ClientOptions::default()
        })?;
        Ok(Transport { client })
    }

    /// Sends `request` and reads the whole body, stopping at [`MAX_BODY_BYTES`].
    pub(crate) async fn send(&self, request: Request<()>) -> Result<Answer, FetchError> {
        let request = request.map(|()| Empty::<Bytes>::new());
        let response = self
            .client
            .request(request)
            .await
            .map_err(|error| transport_error(&error))?;
        let (parts, body) = response.into_parts();
        let body = if parts.status.is_success() {
            read_capped(&parts.headers, body).await?
        } else {
            // Error and redirect bodies are never shown; don't read them.
            Bytes::new()
        };
        Ok(Answer {
            status: parts.status,
            headers: parts.headers,
            body,
        })
    }
}

async fn read_capped(headers: &HeaderMap, body: Incoming) -> Result<Bytes, FetchError> {
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > MAX_BODY_BYTES as u64) {
        return Err(FetchError::TooLarge);
    }
    read_limited(body).await
}

/// Collects `body`, failing with [`FetchError::TooLarge`] as soon as it passes the cap.
pub(crate) async fn read_limited<B>(body: B) -> Result<Bytes, FetchError>
where
    B: hyper::body::Body,
    B::Error: Into<Box<dyn StdError + Send + Sync>>,
{
    match Limited::new(body, MAX_BODY_BYTES).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(error) if error.downcast_ref::<LengthLimitError>().is_some() => {
            Err(FetchError::TooLarge)
        }
        Err(error) => Err(describe(error.as_ref())),
    }
}

fn transport_error(error: &hyper_util::client::legacy::Error) -> FetchError {
    describe(error)
}

/// Maps a transport failure to `Tls` (a rustls error anywhere in the chain) or `Connect` (the
/// innermost cause's text). These texts come from the OS, DNS and TLS libraries and never carry
/// request headers.
fn describe(error: &(dyn StdError + 'static)) -> FetchError {
    let mut current: Option<&(dyn StdError + 'static)> = Some(error);
    let mut innermost = error;
    while let Some(cause) = current {
        if let Some(tls) = cause.downcast_ref::<rustls::Error>() {
            return FetchError::Tls {
                detail: tls.to_string(),
            };
        }
        // `io::Error::source` skips the wrapped error itself, and hyper-rustls wraps the TLS
        // stream's io::Error in another one: descend through `get_ref` explicitly.
        let mut wrapped = cause.downcast_ref::<std::io::Error>();
        while let Some(io) = wrapped {
            let Some(inner) = io.get_ref() else { break };
            if let Some(tls) = inner.downcast_ref::<rustls::Error>() {
                return FetchError::Tls {
                    detail: tls.to_string(),
                };
            }
            wrapped = inner.downcast_ref::<std::io::Error>();
        }
        innermost = cause;
        current = cause.source();
    }
    FetchError::Connect {
        detail: innermost.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::StreamBody;
    use hyper::body::Frame;

    #[tokio::test]
    async fn reading_stops_at_the_cap_without_a_length_hint() {
        // 9 chunks of 1 MiB and no size hint: the cap, not Content-Length, must stop the read.
        let chunks =
            (0..9).map(|_| Ok::<_, std::io::Error>(Frame::data(Bytes::from(vec![b' '; 1 << 20]))));
        let body = StreamBody::new(futures::stream::iter(chunks));
        assert_eq!(read_limited(body).await.unwrap_err(), FetchError::TooLarge);
    }

    #[tokio::test]
    async fn a_body_under_the_cap_is_read_whole() {
        let chunks = [Ok::<_, std::io::Error>(Frame::data(Bytes::from_static(
            b"{}",
        )))];
        let body = StreamBody::new(futures::stream::iter(chunks));
        assert_eq!(read_limited(body).await.unwrap(), Bytes::from_static(b"{}"));
    }
}
