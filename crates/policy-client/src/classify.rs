//! Pure classification of one policy read: what a response (or a transport failure) means, whether
//! to retry it, and the short, stable, secret-free reason reported for the region.
//!
//! Transport failures (DNS, refused, TLS, timeouts) are `unreachable`; everything the server said
//! that is not a usable JSON document is `error`.

use std::time::Duration;

use admission_core::FetchStatus;
use http::header::RETRY_AFTER;
use http::{HeaderMap, StatusCode};
use serde_json::Value;

use crate::request::RequestError;
use crate::timing;
use redaction::Redactor;

/// The largest response body accepted (8 MiB); reading stops there.
pub const MAX_BODY_BYTES: usize = 8 * 1024 * 1024;

/// Why one region's policy document could not be read. `Display` is the reason shown to users:
/// short, stable, and free of credentials.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    /// The request could not be built (missing or invalid credentials, bad URL, signing).
    #[error(transparent)]
    Request(#[from] RequestError),
    /// One request exceeded the per-request timeout.
    #[error("request timed out after {}", seconds(*after))]
    Timeout {
        /// The per-request timeout.
        after: Duration,
    },
    /// The fan-out deadline passed before this region answered.
    #[error("timed out after {}", seconds(*after))]
    Deadline {
        /// The fan-out deadline.
        after: Duration,
    },
    /// The TLS handshake failed (untrusted certificate, wrong name, protocol error).
    #[error("TLS handshake failed: {detail}")]
    Tls {
        /// The TLS library's description.
        detail: String,
    },
    /// The connection could not be made or broke (DNS, refused, reset).
    #[error("connection failed: {detail}")]
    Connect {
        /// The transport's description.
        detail: String,
    },
    /// A non-2xx, non-3xx status, after any retries.
    #[error("HTTP {}{}", status_text(*status), attempts_text(*attempts))]
    Status {
        /// The last status received.
        status: StatusCode,
        /// How many attempts were made.
        attempts: u32,
    },
    /// A retryable status whose `Retry-After` would pass the fan-out deadline.
    #[error("HTTP {}; Retry-After {} is beyond the deadline", status_text(*status), seconds(*retry_after))]
    RetryAfterBeyondDeadline {
        /// The status received.
        status: StatusCode,
        /// The server's requested wait.
        retry_after: Duration,
    },
    /// A 3xx answer (redirects are not followed).
    #[error("HTTP {}: redirects are not followed", status_text(*status))]
    Redirect {
        /// The redirect status.
        status: StatusCode,
    },
    /// The body exceeded [`MAX_BODY_BYTES`].
    #[error("response body is larger than 8 MiB")]
    TooLarge,
    /// The body is not JSON.
    #[error("response body is not JSON ({detail})")]
    NotJson {
        /// The parser's position-only description (never the body's content).
        detail: String,
    },
}

impl FetchError {
    /// The same failure with every text that came from outside (a TLS or connection detail,
    /// which can quote a certificate's names) passed through `redactor`.
    pub fn scrubbed(self, redactor: &Redactor) -> FetchError {
        match self {
            FetchError::Tls { detail } => FetchError::Tls {
                detail: redactor.redact(&detail),
            },
            FetchError::Connect { detail } => FetchError::Connect {
                detail: redactor.redact(&detail),
            },
            FetchError::NotJson { detail } => FetchError::NotJson {
                detail: redactor.redact(&detail),
            },
            other => other,
        }
    }

    /// The region status this failure maps to: transport problems are `unreachable`, everything
    /// else is `error`.
    pub fn status(&self) -> FetchStatus {
        match self {
            FetchError::Timeout { .. }
            | FetchError::Deadline { .. }
            | FetchError::Tls { .. }
            | FetchError::Connect { .. } => FetchStatus::Unreachable,
            FetchError::Request(_)
            | FetchError::Status { .. }
            | FetchError::RetryAfterBeyondDeadline { .. }
            | FetchError::Redirect { .. }
            | FetchError::TooLarge
            | FetchError::NotJson { .. } => FetchStatus::Error,
        }
    }
}

/// What to do with a response status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StatusAction {
    /// 2xx: read and parse the body.
    ReadBody,
    /// 429/502/503/504: retry if attempts and time remain, waiting at least this long
    /// (`Retry-After` when the server sent one in seconds).
    Retry(Option<Duration>),
    /// Anything else: fail with this error.
    Fail(FetchError),
}

/// Classifies a response status (and its `Retry-After` header) after `attempt` attempts.
pub fn classify_status(status: StatusCode, headers: &HeaderMap, attempt: u32) -> StatusAction {
    if status.is_success() {
        StatusAction::ReadBody
    } else if status.is_redirection() {
        StatusAction::Fail(FetchError::Redirect { status })
    } else if is_retryable(status) {
        StatusAction::Retry(retry_after(headers))
    } else {
        StatusAction::Fail(FetchError::Status {
            status,
            attempts: attempt,
        })
    }
}

/// How long to wait before retrying a retryable `status` answered to attempt `attempt` (of
/// `attempts`), with `remaining` time before the deadline: the server's `Retry-After` when it sent
/// one, else `backoff_base * 2^(attempt - 1)`. Fails when the attempts are used up or the wait
/// would reach the deadline. All arithmetic saturates: any `Retry-After` or option is safe.
pub fn retry_delay(
    status: StatusCode,
    retry_after: Option<Duration>,
    attempt: u32,
    attempts: u32,
    backoff_base: Duration,
    remaining: Duration,
) -> Result<Duration, FetchError> {
    let exhausted = FetchError::Status {
        status,
        attempts: attempt,
    };
    if attempt >= attempts {
        return Err(exhausted);
    }
    let wait = retry_after.unwrap_or_else(|| timing::backoff(backoff_base, attempt));
    if wait >= remaining {
        return Err(match retry_after {
            Some(retry_after) => FetchError::RetryAfterBeyondDeadline {
                status,
                retry_after,
            },
            None => exhausted,
        });
    }
    Ok(wait)
}

/// Whether a status is retried for GET: 429, 502, 503, 504.
pub fn is_retryable(status: StatusCode) -> bool {
    matches!(status.as_u16(), 429 | 502 | 503 | 504)
}

/// The `Retry-After` header as a delay, when it is a whole number of seconds (HTTP-dates are
/// ignored and the normal backoff applies).
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    headers
        .get(RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse::<u64>()
        .ok()
        .map(Duration::from_secs)
}

/// Parses a complete 2xx body as JSON.
pub fn parse_body(body: &[u8]) -> Result<Value, FetchError> {
    if body.len() > MAX_BODY_BYTES {
        return Err(FetchError::TooLarge);
    }
    serde_json::from_slice(body).map_err(|error| FetchError::NotJson {
        detail: json_error_detail(&error),
    })
}

/// A parse failure described by its category and position only, so no body content leaks.
fn json_error_detail(error: &serde_json::Error) -> String {
    let what = match error.classify() {
        serde_json::error::Category::Eof => "unexpected end of input",
        serde_json::error::Category::Syntax => "syntax error",
        serde_json::error::Category::Data => "unexpected data",
        serde_json::error::Category::Io => "read error",
    };
    format!("{what} at line {} column {}", error.line(), error.column())
}

/// Renders a duration as seconds for reasons: `45s`, `0.5s`.
pub fn seconds(duration: Duration) -> String {
    if duration.subsec_nanos() == 0 {
        format!("{}s", duration.as_secs())
    } else {
        let text = format!("{:.3}", duration.as_secs_f64());
        format!("{}s", text.trim_end_matches('0').trim_end_matches('.'))
    }
}

fn status_text(status: StatusCode) -> String {
    match status.canonical_reason() {
        Some(reason) => format!("{} {reason}", status.as_u16()),
        None => status.as_u16().to_string(),
    }
}

fn attempts_text(attempts: u32) -> String {
    if attempts > 1 {
        format!(" after {attempts} attempts")
    } else {
        String::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    #[test]
    fn statuses_are_classified() {
        let none = HeaderMap::new();
        assert_eq!(
            classify_status(StatusCode::OK, &none, 1),
            StatusAction::ReadBody
        );
        assert_eq!(
            classify_status(StatusCode::SERVICE_UNAVAILABLE, &none, 1),
            StatusAction::Retry(None)
        );
        let mut with_retry = HeaderMap::new();
        with_retry.insert(RETRY_AFTER, HeaderValue::from_static(" 2 "));
        assert_eq!(
            classify_status(StatusCode::TOO_MANY_REQUESTS, &with_retry, 1),
            StatusAction::Retry(Some(Duration::from_secs(2)))
        );
        let StatusAction::Fail(error) = classify_status(StatusCode::FOUND, &none, 1) else {
            panic!("a redirect must fail");
        };
        assert_eq!(
            error.to_string(),
            "HTTP 302 Found: redirects are not followed"
        );
        let StatusAction::Fail(error) = classify_status(StatusCode::FORBIDDEN, &none, 1) else {
            panic!("a 403 must fail");
        };
        assert_eq!(error.to_string(), "HTTP 403 Forbidden");
        assert_eq!(error.status(), FetchStatus::Error);
    }

    #[test]
    fn reasons_are_short_and_stable() {
        let error = FetchError::Status {
            status: StatusCode::BAD_GATEWAY,
            attempts: 3,
        };
        assert_eq!(error.to_string(), "HTTP 502 Bad Gateway after 3 attempts");
        let deadline = FetchError::Deadline {
            after: Duration::from_secs(45),
        };
        assert_eq!(deadline.to_string(), "timed out after 45s");
        assert_eq!(deadline.status(), FetchStatus::Unreachable);
        assert_eq!(seconds(Duration::from_millis(1500)), "1.5s");
        assert_eq!(seconds(Duration::from_millis(250)), "0.25s");
    }

    #[test]
    fn retry_delays_saturate_and_respect_the_deadline() {
        let busy = StatusCode::SERVICE_UNAVAILABLE;
        let second = Duration::from_secs(1);
        let minute = Duration::from_secs(60);
        assert_eq!(retry_delay(busy, None, 1, 3, second, minute), Ok(second));
        assert_eq!(
            retry_delay(busy, None, 2, 3, second, minute),
            Ok(2 * second)
        );
        assert_eq!(
            retry_delay(busy, None, 3, 3, second, minute),
            Err(FetchError::Status {
                status: busy,
                attempts: 3
            })
        );
        let forever = Duration::from_secs(u64::MAX);
        assert_eq!(
            retry_delay(busy, Some(forever), 1, 3, second, minute),
            Err(FetchError::RetryAfterBeyondDeadline {
                status: busy,
                retry_after: forever
            })
        );
        assert_eq!(
            retry_delay(busy, None, 40, 50, Duration::MAX, Duration::MAX),
            Err(FetchError::Status {
                status: busy,
                attempts: 40
            })
        );
    }

    #[test]
    fn non_json_reason_does_not_echo_the_body() {
        let error = parse_body(b"<html>secret-page</html>").unwrap_err();
        assert_eq!(
            error.to_string(),
            "response body is not JSON (syntax error at line 1 column 1)"
        );
        assert!(parse_body(br#"{"policy": {}}"#).is_ok());
    }
}
