//! HTTPS download of the gator tarball through the workspace's HTTPS client (`https-client`:
//! system roots plus optional extra CAs), a connect timeout, an overall timeout, a size cap and a
//! bounded number of `https` redirects (GitHub release assets redirect once to their storage
//! host).
//!
//! Errors name the host only, never the URL's path or query.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use https_client::{ClientOptions, HttpsClient, TrustError, TrustRoots};
use thiserror::Error;

use crate::pin::url_host;

/// Limits and trust for a download.
#[derive(Debug, Clone)]
pub struct DownloadOptions {
    /// Limit on establishing the TCP connection (default 10 s).
    pub connect_timeout: Duration,
    /// Limit on the whole download, redirects and body included (default 300 s).
    pub timeout: Duration,
    /// Largest accepted body in bytes (default 256 MiB).
    pub max_bytes: u64,
    /// How many redirects are followed before giving up (default 5; 0 follows none).
    pub max_redirects: usize,
    /// Who is trusted (default: the system's roots; add a mirror's private CA, or a test CA).
    pub trust: TrustRoots,
}

impl Default for DownloadOptions {
    fn default() -> Self {
        DownloadOptions {
            connect_timeout: Duration::from_secs(10),
            timeout: Duration::from_secs(300),
            max_bytes: 256 * 1024 * 1024,
            max_redirects: 5,
            trust: TrustRoots::system(),
        }
    }
}

/// Why a download failed. Every variant names at most the host.
#[derive(Debug, Error)]
pub enum DownloadError {
    /// The URL does not parse, has no host, or is not `https`.
    #[error("download URL is not an https URL with a host (host {host})")]
    BadUrl {
        /// The host, or a placeholder.
        host: String,
    },
    /// The trust roots are unusable (a bad extra CA, or nothing trusted at all).
    #[error("cannot set up TLS")]
    Trust(#[from] TrustError),
    /// The request could not be sent (DNS, connect, TLS handshake).
    #[error("request to {host} failed")]
    Request {
        /// The host.
        host: String,
        /// The cause.
        #[source]
        source: hyper_util::client::legacy::Error,
    },
    /// The server answered with a non-success status.
    #[error("download from {host} failed with HTTP {status}")]
    Status {
        /// The host.
        host: String,
        /// The status code.
        status: u16,
    },
    /// A redirect without a usable `Location`, or to a non-https URL.
    #[error("download from {host} redirected to an unusable location")]
    BadRedirect {
        /// The host that redirected.
        host: String,
    },
    /// More redirects than allowed (this also ends redirect loops).
    #[error("download from {host} redirected more than {max} times")]
    TooManyRedirects {
        /// The original host.
        host: String,
        /// The limit.
        max: usize,
    },
    /// The body is larger than the cap.
    #[error("download from {host} is larger than {max_bytes} bytes")]
    TooLarge {
        /// The host.
        host: String,
        /// The cap.
        max_bytes: u64,
    },
    /// Reading the body failed (connection reset, truncated transfer).
    #[error("reading the download from {host} failed")]
    Body {
        /// The host.
        host: String,
        /// The cause.
        #[source]
        source: hyper::Error,
    },
    /// The whole download took longer than the overall timeout.
    #[error("download from {host} timed out after {}s", after.as_secs_f64())]
    Timeout {
        /// The original host.
        host: String,
        /// The limit.
        after: Duration,
    },
}

/// Downloads `url` (https only) into memory under `options`' limits.
pub async fn download(url: &str, options: &DownloadOptions) -> Result<Vec<u8>, DownloadError> {
    let host = url_host(url);
    let parsed = url::Url::parse(url).map_err(|_| DownloadError::BadUrl { host: host.clone() })?;
    if parsed.scheme() != "https" || parsed.host_str().is_none() {
        return Err(DownloadError::BadUrl { host });
    }
    let client = client(options)?;
    match tokio::time::timeout(options.timeout, fetch(&client, parsed, options)).await {
        Ok(result) => result,
        Err(_) => Err(DownloadError::Timeout {
            host,
            after: options.timeout,
        }),
    }
}

fn client(options: &DownloadOptions) -> Result<HttpsClient<Empty<Bytes>>, DownloadError> {
    Ok(https_client::build(&ClientOptions {
        trust: options.trust.clone(),
        connect_timeout: Some(options.connect_timeout),
        allow_http: false,
    })?)
}

async fn fetch(
    client: &HttpsClient<Empty<Bytes>>,
    mut url: url::Url,
    options: &DownloadOptions,
) -> Result<Vec<u8>, DownloadError> {
    let first_host = url_host(url.as_str());
    let mut redirects = 0;
    loop {
        let host = url_host(url.as_str());
        let request = http::Request::get(url.as_str())
            .header(http::header::USER_AGENT, "gator-runner")
            .body(Empty::<Bytes>::new())
            .map_err(|_| DownloadError::BadUrl { host: host.clone() })?;
        let response = client
            .request(request)
            .await
            .map_err(|source| DownloadError::Request {
                host: host.clone(),
                source,
            })?;
        let status = response.status();
        if status.is_redirection() {
            redirects += 1;
            if redirects > options.max_redirects {
                return Err(DownloadError::TooManyRedirects {
                    host: first_host,
                    max: options.max_redirects,
                });
            }
            let next = response
                .headers()
                .get(http::header::LOCATION)
                .and_then(|value| value.to_str().ok())
                .and_then(|location| url.join(location).ok())
                .filter(|next| next.scheme() == "https" && next.host_str().is_some())
                .ok_or_else(|| DownloadError::BadRedirect { host: host.clone() })?;
            tracing::debug!(from = %host, to = %url_host(next.as_str()), "following redirect");
            url = next;
            continue;
        }
        if !status.is_success() {
            return Err(DownloadError::Status {
                host,
                status: status.as_u16(),
            });
        }
        let too_large = || DownloadError::TooLarge {
            host: host.clone(),
            max_bytes: options.max_bytes,
        };
        let declared = response
            .headers()
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|len| len > options.max_bytes) {
            return Err(too_large());
        }
        let mut body = response.into_body();
        let mut bytes = Vec::with_capacity(
            usize::try_from(declared.unwrap_or(0).min(options.max_bytes)).unwrap_or(0),
        );
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|source| DownloadError::Body {
                host: host.clone(),
                source,
            })?;
            if let Ok(data) = frame.into_data() {
                if bytes.len() as u64 + data.len() as u64 > options.max_bytes {
                    return Err(too_large());
                }
                bytes.extend_from_slice(&data);
            }
        }
        tracing::debug!(%host, bytes = bytes.len(), "downloaded");
        return Ok(bytes);
    }
}
