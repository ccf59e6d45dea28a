//! The one HTTP client both sinks send with: the workspace's HTTPS client (`https-client`, hyper
//! over rustls with `ring`; `http://` allowed for an in-cluster Loki), finite timeouts, no
//! redirects, and [`SendError`], whose every text is already free of secrets.
//!
//! Posts are classified by status alone: any 2xx is a success whatever its body. Of an error body
//! only a bounded prefix is ever read ([`MAX_BODY_BYTES`]); the rest is left unread (the
//! connection is then not reused), so a server answering an endless body costs nothing. A GET
//! (Loki's `query_range`) needs its success body: it is read up to the caller's cap, and an
//! answer over it is [`SendError::TooLarge`], never read further. Error texts are redacted before
//! they are shortened, so a cut never leaves half a secret.

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, StatusCode, Uri};
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use https_client::{ClientOptions, HttpsClient, TrustRoots};

use crate::secret::{Redactor, redactor_of};

/// How much of an error body is kept for the error text (after redaction).
const BODY_SNIPPET_CHARS: usize = 200;
/// How much of a response body is read at all; the rest is never read.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// Why a post or push failed. Every text is free of secrets: values come from [`crate::hide`]d
/// strings or from fixed words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    /// The URL is malformed (a scheme-less, whitespace or non-http value). The text is fixed and
    /// says nothing about the value.
    #[error("invalid URL")]
    InvalidUrl,
    /// The server answered with an error status (4xx, 5xx, or any other non-2xx but 3xx/429).
    #[error("server answered HTTP {status}{}", body_suffix(.body))]
    Status {
        /// The status code.
        status: u16,
        /// The start of the (redacted) response body, on one line; may be empty.
        body: String,
    },
    /// The server answered with a redirect, which is never followed.
    #[error("server answered HTTP {status} (redirects are not followed)")]
    Redirect {
        /// The 3xx status code.
        status: u16,
    },
    /// The server answered 429 and the post was not (or no longer) retried.
    #[error("server answered HTTP 429 (rate limited{})", retry_suffix(*.retry_after_secs, *.retried))]
    RateLimited {
        /// The `Retry-After` the server asked for, in seconds, when it sent one.
        retry_after_secs: Option<u64>,
        /// Whether the post had already been retried once.
        retried: bool,
    },
    /// No complete answer within the timeout.
    #[error("no answer within {seconds}s")]
    Timeout {
        /// The timeout that elapsed, in whole seconds.
        seconds: u64,
    },
    /// The request could not be sent or the answer not read (connection refused, TLS failure).
    /// The cause chain is kept as redacted text, not as a source, because it could carry the URL.
    #[error("request failed: {0}")]
    Transport(String),
    /// The TLS client could not be set up (a bad extra CA, named in the text).
    #[error("failed to set up TLS: {0}")]
    Tls(String),
    /// A success answer was larger than the reader's cap; the rest was not read.
    #[error("answer larger than the cap of {cap_bytes} bytes")]
    TooLarge {
        /// The cap, in bytes.
        cap_bytes: usize,
    },
}

fn body_suffix(body: &str) -> String {
    if body.is_empty() {
        String::new()
    } else {
        format!(": {body}")
    }
}

fn retry_suffix(retry_after: Option<u64>, retried: bool) -> String {
    match (retry_after, retried) {
        (_, true) => ", again after one retry".to_string(),
        (Some(secs), false) => format!(", Retry-After {secs}s"),
        (None, false) => String::new(),
    }
}

/// Timeouts and trust for the sinks' HTTP client.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Total time for one request, from connecting to the end of the response body.
    pub timeout: Duration,
    /// Time to establish the TCP connection.
    pub connect_timeout: Duration,
    /// Who is trusted: the system roots, plus e.g. the CA of an in-cluster Loki.
    pub trust: TrustRoots,
}

impl Default for HttpOptions {
    /// 10 s per request, 5 s to connect, system roots only.
    fn default() -> Self {
        HttpOptions {
            timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(5),
            trust: TrustRoots::system(),
        }
    }
}

/// A response as the sinks need it.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
}

/// A hyper client over rustls (ring) that never follows redirects.
#[derive(Clone)]
pub(crate) struct HttpClient {
    client: HttpsClient<Full<Bytes>>,
    timeout: Duration,
}

impl HttpClient {
    pub(crate) fn new(options: &HttpOptions) -> Result<HttpClient, SendError> {
        let client = https_client::build(&ClientOptions {
            trust: options.trust.clone(),
            connect_timeout: Some(options.connect_timeout),
            allow_http: true,
        })
        .map_err(|e| SendError::Tls(e.to_string()))?;
        Ok(HttpClient {
            client,
            timeout: options.timeout,
        })
    }

    /// POSTs `body` as JSON to `uri` with extra `headers`; any answer (whatever its status) is
    /// returned, a success without its body; failures to get one become [`SendError`]s with
    /// `secrets` removed.
    pub(crate) async fn post_json(
        &self,
        uri: &Uri,
        headers: &[(http::HeaderName, HeaderValue)],
        body: Bytes,
        secrets: &[&str],
    ) -> Result<Answer, SendError> {
        let builder =
            http::Request::post(uri.clone()).header(http::header::CONTENT_TYPE, "application/json");
        self.exchange(builder, headers, body, secrets, None).await
    }

    /// GETs `uri` with extra `headers`; any answer is returned, a success with its whole body
    /// when it is at most `max_body` bytes ([`SendError::TooLarge`] otherwise).
    pub(crate) async fn get(
        &self,
        uri: &Uri,
        headers: &[(http::HeaderName, HeaderValue)],
        secrets: &[&str],
        max_body: usize,
    ) -> Result<Answer, SendError> {
        let builder = http::Request::get(uri.clone());
        self.exchange(builder, headers, Bytes::new(), secrets, Some(max_body))
            .await
    }

    /// Sends one request under the timeout. A success body is read up to `success_body` bytes
    /// (not at all when `None`), an error body's prefix always.
    async fn exchange(
        &self,
        builder: http::request::Builder,
        headers: &[(http::HeaderName, HeaderValue)],
        body: Bytes,
        secrets: &[&str],
        success_body: Option<usize>,
    ) -> Result<Answer, SendError> {
        let mut builder = builder.header(http::header::USER_AGENT, "workload-report");
        for (name, value) in headers {
            builder = builder.header(name, value);
        }
        let request = builder
            .body(Full::new(body))
            .map_err(|_| SendError::InvalidUrl)?;
        let redactor = redactor_of(secrets);
        let exchange = async {
            let response = self
                .client
                .request(request)
                .await
                .map_err(|e| transport(&e, &redactor))?;
            let (parts, body) = response.into_parts();
            let body = match (parts.status.is_success(), success_body) {
                (true, Some(cap)) => whole_body(body, cap, &redactor).await?,
                (success, _) => body_prefix(body, MAX_BODY_BYTES, success)
                    .await
                    .map_err(|e| transport(&*e, &redactor))?,
            };
            Ok(Answer {
                status: parts.status,
                headers: parts.headers,
                body,
            })
        };
        match tokio::time::timeout(self.timeout, exchange).await {
            Ok(result) => result,
            Err(_) => Err(SendError::Timeout {
                seconds: self.timeout.as_secs().max(1),
            }),
        }
    }
}

/// The whole of `body` when it is at most `cap` bytes; reading stops at the cap.
async fn whole_body<B>(body: B, cap: usize, redactor: &Redactor) -> Result<Bytes, SendError>
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    match Limited::new(body, cap).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(error) if error.is::<LengthLimitError>() => Err(SendError::TooLarge { cap_bytes: cap }),
        Err(error) => Err(transport(&*error, redactor)),
    }
}

/// Reads at most `cap` bytes of `body`. The body of a success is not needed at all: reading
/// stops at once, and an error while reading it does not matter.
async fn body_prefix<B>(
    mut body: B,
    cap: usize,
    success: bool,
) -> Result<Bytes, Box<dyn std::error::Error + Send + Sync>>
where
    B: hyper::body::Body<Data = Bytes> + Unpin,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let mut prefix = Vec::new();
    while prefix.len() < cap && !success {
        let Some(frame) = body.frame().await else {
            break;
        };
        match frame.map_err(Into::into)?.into_data() {
            Ok(data) => {
                let room = cap - prefix.len();
                prefix.extend_from_slice(&data[..data.len().min(room)]);
            }
            Err(_trailers) => break,
        }
    }
    Ok(Bytes::from(prefix))
}

/// The `Retry-After` of an answer in seconds, when it is a number; a number too large for `u64`
/// saturates (it is "longer than anyone waits", not absent). HTTP dates are not used by Slack or
/// Loki and count as absent.
pub(crate) fn retry_after_secs(headers: &HeaderMap) -> Option<u64> {
    let value = headers
        .get(http::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim();
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(value.parse::<u64>().unwrap_or(u64::MAX))
}

/// Classifies a non-2xx answer other than 429 into a [`SendError`].
pub(crate) fn failure(answer: &Answer, secrets: &[&str]) -> SendError {
    let status = answer.status.as_u16();
    if answer.status.is_redirection() {
        return SendError::Redirect { status };
    }
    SendError::Status {
        status,
        body: snippet(&answer.body, &redactor_of(secrets)),
    }
}

/// The start of a body on one line: redacted first, then shortened (see the module docs).
pub(crate) fn snippet(body: &[u8], redactor: &Redactor) -> String {
    let text = String::from_utf8_lossy(body);
    let hidden = redactor.redact(&text);
    let one_line: String = hidden.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut cut: String = one_line.chars().take(BODY_SNIPPET_CHARS).collect();
    if cut.len() < one_line.len() {
        cut.push('…');
    }
    cut
}

fn transport(error: &(dyn std::error::Error + 'static), redactor: &Redactor) -> SendError {
    SendError::Transport(redactor.redact(&redaction::error_text(error)))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const HOOK: &str = "https://hooks.slack.example/services/T0001ABC/B0002XYZ/sEcReT7919tOkEn";

    fn answer(status: u16, retry_after: &[u8], body: Vec<u8>) -> Answer {
        let mut headers = HeaderMap::new();
        if let Ok(value) = HeaderValue::from_bytes(retry_after) {
            headers.insert(http::header::RETRY_AFTER, value);
        }
        Answer {
            status: StatusCode::from_u16(status).unwrap_or(StatusCode::IM_A_TEAPOT),
            headers,
            body: Bytes::from(body),
        }
    }

    #[test]
    fn retry_after_saturates_and_ignores_what_is_no_number() {
        let of = |value: &[u8]| retry_after_secs(&answer(429, value, Vec::new()).headers);
        assert_eq!(of(b"7"), Some(7));
        assert_eq!(of(b" 18446744073709551615 "), Some(u64::MAX));
        assert_eq!(of(b"18446744073709551616"), Some(u64::MAX));
        assert_eq!(of(b"-1"), None);
        assert_eq!(of(b"Wed, 21 Oct 2015 07:28:00 GMT"), None);
        assert_eq!(of(b""), None);
    }

    #[tokio::test]
    async fn only_a_prefix_of_an_error_body_is_read_and_none_of_a_success() {
        let body = Full::new(Bytes::from(vec![b'x'; 1 << 20]));
        assert_eq!(body_prefix(body, 1024, false).await.unwrap().len(), 1024);
        let body = Full::new(Bytes::from(vec![b'x'; 1 << 20]));
        assert!(body_prefix(body, 1024, true).await.unwrap().is_empty());
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        #[test]
        fn classifying_any_answer_never_panics_or_leaks(
            status in 100u16..1000,
            retry_after in proptest::collection::vec(any::<u8>(), 0..30),
            before in proptest::collection::vec(any::<u8>(), 0..400),
            after in proptest::collection::vec(any::<u8>(), 0..400),
            echo in 0usize..4,
        ) {
            let echoed = match echo {
                0 => String::new(),
                1 => HOOK.to_string(),
                2 => HOOK.replace('/', "\\/").to_ascii_uppercase(),
                _ => HOOK.replace('/', "%2F"),
            };
            let mut body = before;
            body.extend_from_slice(echoed.as_bytes());
            body.extend_from_slice(&after);
            let answer = answer(status, &retry_after, body);
            let _ = retry_after_secs(&answer.headers);
            let error = failure(&answer, &[HOOK]);
            let text = error.to_string();
            prop_assert!(!text.to_ascii_lowercase().contains("secret7919token"), "{}", text);
            if let SendError::Status { body, .. } = &error {
                prop_assert!(body.chars().count() <= BODY_SNIPPET_CHARS + 1);
            }
        }
    }
}
