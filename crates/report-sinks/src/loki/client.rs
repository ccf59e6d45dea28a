//! The client of one Loki: where and as whom (URL, tenant, credentials), pushing a report's lines
//! and reading lines back with `query_range`, both through the sinks' one HTTP client.

use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http::{HeaderName, HeaderValue, StatusCode, Uri};
use secrecy::{ExposeSecret, SecretString};

use super::lines::LokiPush;
use super::query::{AnswerError, Entry, ParseLimits, QueryRange, parse_streams};
use crate::http::{HttpClient, HttpOptions, SendError, failure, retry_after_secs};
use crate::secret::parse_http_url;

/// Credentials for Loki (held as secrets: never printed, never in error texts).
#[derive(Debug, Clone)]
pub enum LokiAuth {
    /// HTTP basic authentication.
    Basic {
        /// The user name.
        username: String,
        /// The password.
        password: SecretString,
    },
    /// `Authorization: Bearer <token>`.
    Bearer(SecretString),
}

/// Where and as whom to push and read: the Loki URL, tenant and credentials (what the report's
/// `loki` config section and environment resolve to).
#[derive(Debug, Clone)]
pub struct LokiEndpoint {
    /// The Loki base URL (`http(s)://host[:port][/prefix]`); `/loki/api/v1/push` and
    /// `/loki/api/v1/query_range` are appended. User info in the URL (`https://user:pass@host`)
    /// becomes basic authentication.
    pub url: String,
    /// The `X-Scope-OrgID` tenant header, if any.
    pub tenant: Option<String>,
    /// Credentials, if any.
    pub auth: Option<LokiAuth>,
}

/// Pushes [`LokiPush`] bodies to one Loki and reads lines back from it.
///
/// A 2xx answer is success; anything else (including 429, which is not retried, and every 3xx,
/// which is not followed) and a timeout are [`SendError`]s, with credentials removed.
#[derive(Clone)]
pub struct LokiClient {
    http: HttpClient,
    push_uri: Uri,
    /// The base URL without user info or a trailing `/`.
    base: String,
    headers: Vec<(HeaderName, HeaderValue)>,
    secrets: Vec<SecretString>,
}

impl std::fmt::Debug for LokiClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LokiClient")
            .field("push_uri", &self.push_uri.path())
            .finish_non_exhaustive()
    }
}

impl LokiClient {
    /// A client for `endpoint` with `options`' timeouts and trust. A malformed URL or tenant is
    /// [`SendError::InvalidUrl`].
    pub fn new(endpoint: &LokiEndpoint, options: &HttpOptions) -> Result<LokiClient, SendError> {
        let mut url = url::Url::parse(endpoint.url.trim()).map_err(|_| SendError::InvalidUrl)?;
        let mut secrets: Vec<SecretString> = Vec::new();
        let mut auth = endpoint.auth.clone();
        if !url.username().is_empty() || url.password().is_some() {
            let username = percent_decode(url.username());
            let password = percent_decode(url.password().unwrap_or(""));
            secrets.push(SecretString::from(url.as_str().to_string()));
            if auth.is_none() {
                auth = Some(LokiAuth::Basic {
                    username,
                    password: SecretString::from(password),
                });
            }
            url.set_username("").map_err(|_| SendError::InvalidUrl)?;
            url.set_password(None).map_err(|_| SendError::InvalidUrl)?;
        }
        let base = url.as_str().trim_end_matches('/').to_string();
        let push_uri = parse_http_url(&format!("{base}/loki/api/v1/push"))?;

        let mut headers = Vec::new();
        if let Some(tenant) = &endpoint.tenant {
            let value = HeaderValue::from_str(tenant).map_err(|_| SendError::InvalidUrl)?;
            headers.push((HeaderName::from_static("x-scope-orgid"), value));
        }
        if let Some(auth) = auth {
            let text = match &auth {
                LokiAuth::Basic { username, password } => {
                    secrets.push(password.clone());
                    let raw = format!("{username}:{}", password.expose_secret());
                    format!(
                        "Basic {}",
                        base64::engine::general_purpose::STANDARD.encode(raw)
                    )
                }
                LokiAuth::Bearer(token) => {
                    secrets.push(token.clone());
                    format!("Bearer {}", token.expose_secret())
                }
            };
            let mut value = HeaderValue::from_str(&text).map_err(|_| SendError::InvalidUrl)?;
            value.set_sensitive(true);
            secrets.push(SecretString::from(text));
            headers.push((http::header::AUTHORIZATION, value));
        }
        Ok(LokiClient {
            http: HttpClient::new(options)?,
            push_uri,
            base,
            headers,
            secrets,
        })
    }

    fn exposed_secrets(&self) -> Vec<&str> {
        self.secrets.iter().map(|s| s.expose_secret()).collect()
    }

    /// Pushes `payload`.
    pub async fn push(&self, payload: &LokiPush) -> Result<(), SendError> {
        let body = Bytes::from(payload.to_json());
        let secrets = self.exposed_secrets();
        let answer = self
            .http
            .post_json(&self.push_uri, &self.headers, body, &secrets)
            .await?;
        if answer.status.is_success() {
            return Ok(());
        }
        Err(not_success(&answer, &secrets))
    }

    /// [`LokiClient::push`], again while Loki answers that it is too busy for now (429, its
    /// ingestion rate limit, or 503) and the wait before the next try ends before `deadline`:
    /// after `Retry-After` when Loki sends one, else after 250 ms, doubling up to 8 s. Loki's
    /// default limits (4 MiB/s, bursts of 6 MiB per tenant) refuse a large run's lines unless
    /// they come in batches and are paced like this. Any other answer ends at once.
    pub async fn push_until(
        &self,
        payload: &LokiPush,
        deadline: tokio::time::Instant,
    ) -> Result<(), SendError> {
        let mut backoff = FIRST_BACKOFF;
        loop {
            let error = match self.push(payload).await {
                Ok(()) => return Ok(()),
                Err(error) => error,
            };
            let wait = match &error {
                SendError::RateLimited {
                    retry_after_secs: Some(secs),
                    ..
                } => Duration::from_secs(*secs),
                SendError::RateLimited { .. } | SendError::Status { status: 503, .. } => backoff,
                _ => return Err(error),
            };
            if tokio::time::Instant::now()
                .checked_add(wait)
                .is_none_or(|resume| resume >= deadline)
            {
                return Err(error);
            }
            tokio::time::sleep(wait).await;
            backoff = backoff.saturating_mul(2).min(MAX_BACKOFF);
        }
    }

    /// Runs one `query_range` of a log query and returns its lines, reading at most `max_body`
    /// bytes of the answer and keeping at most the query's `limit` lines. The answer is parsed
    /// on the blocking pool (a 32 MiB answer takes a while, and the runtime may have one thread)
    /// and the parse itself stops at `deadline`, so a timeout around this call really ends it.
    pub async fn query_range(
        &self,
        query: &QueryRange,
        max_body: usize,
        deadline: Option<std::time::Instant>,
    ) -> Result<Vec<Entry>, QueryError> {
        let uri: Uri = format!(
            "{}/loki/api/v1/query_range?{}",
            self.base,
            query.query_string()
        )
        .parse()
        .map_err(|_| SendError::InvalidUrl)?;
        let secrets = self.exposed_secrets();
        let answer = self
            .http
            .get(&uri, &self.headers, &secrets, max_body)
            .await?;
        if !answer.status.is_success() {
            return Err(not_success(&answer, &secrets).into());
        }
        let limits = ParseLimits {
            max_lines: query.limit,
            deadline,
        };
        let body = answer.body;
        match tokio::task::spawn_blocking(move || parse_streams(&body, limits)).await {
            Ok(parsed) => Ok(parsed?),
            // the parse panicked or the runtime is shutting down: no answer either way
            Err(_) => Err(AnswerError::Aborted.into()),
        }
    }
}

/// The first wait of [`LokiClient::push_until`] when Loki gives no `Retry-After`.
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
/// The longest wait between two tries of one push (without `Retry-After`).
const MAX_BACKOFF: Duration = Duration::from_secs(8);

/// Why a `query_range` gave no lines: the request failed, or the answer is no log answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    /// No answer, or an error status (the text is free of secrets).
    #[error(transparent)]
    Send(#[from] SendError),
    /// A success whose body is not a log query's answer.
    #[error(transparent)]
    Answer(#[from] super::query::AnswerError),
}

/// The error of a non-2xx answer: 429 (never retried) or [`failure`].
fn not_success(answer: &crate::http::Answer, secrets: &[&str]) -> SendError {
    if answer.status == StatusCode::TOO_MANY_REQUESTS {
        return SendError::RateLimited {
            retry_after_secs: retry_after_secs(&answer.headers),
            retried: false,
        };
    }
    failure(answer, secrets)
}

fn percent_decode(text: &str) -> String {
    url::form_urlencoded::parse(format!("x={}", text.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}
