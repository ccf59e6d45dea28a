//! Loki lines: the `run`, `policy_error`, `summary`, `team_total` and `violation` lines of a
//! report, and the client that pushes them to `POST {url}/loki/api/v1/push`.
//!
#![doc = include_str!("../LOKI_CONTRACT.md")]

use std::collections::BTreeMap;

use base64::Engine as _;
use bytes::Bytes;
use http::{HeaderName, HeaderValue, StatusCode, Uri};
use secrecy::{ExposeSecret, SecretString};
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::http::{HttpClient, HttpOptions, SendError, failure, retry_after_secs};
use crate::model::Report;
use crate::secret::parse_http_url;

/// The `team` label of the `run` and `policy_error` lines (which belong to no team).
pub const RUN_TEAM: &str = "_run";

/// The push body: `{"streams": [{"stream": {labels}, "values": [["<ns>", "<line>"], …]}]}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LokiPush {
    /// One entry per distinct label set, sorted by labels.
    pub streams: Vec<LokiStream>,
}

impl LokiPush {
    /// The exact JSON body pushed (and written by `--out DIR` as `loki.json`).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a Loki push always serializes")
    }

    /// The number of lines over all streams.
    pub fn line_count(&self) -> usize {
        self.streams.iter().map(|s| s.values.len()).sum()
    }
}

/// One Loki stream: its labels and its lines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LokiStream {
    /// Stream labels: exactly `job`, `cluster`, `team`, `type`.
    pub stream: BTreeMap<String, String>,
    /// `[timestamp in Unix nanoseconds as a string, JSON line]` pairs.
    pub values: Vec<[String; 2]>,
}

/// Renders a report as Loki lines (see the Loki contract above).
#[derive(Debug, Clone)]
pub struct LokiSink {
    job: String,
}

impl LokiSink {
    /// A sink labelling every stream with `job` (e.g. `gatekeeper-workload-report`).
    pub fn new(job: impl Into<String>) -> LokiSink {
        LokiSink { job: job.into() }
    }

    /// The push body of `report`: every line of the contract, streams sorted by labels. Pure.
    pub fn render(&self, report: &Report) -> LokiPush {
        let run = &report.run;
        let ts = run.finished_at.as_nanosecond().to_string();
        let mut streams: BTreeMap<BTreeMap<String, String>, Vec<[String; 2]>> = BTreeMap::new();
        let labels = |team: &str, kind: &str| -> BTreeMap<String, String> {
            BTreeMap::from([
                ("job".to_string(), self.job.clone()),
                ("cluster".to_string(), run.cluster.clone()),
                ("team".to_string(), team.to_string()),
                ("type".to_string(), kind.to_string()),
            ])
        };
        let mut push = |team: &str, kind: &str, line: Value| {
            streams
                .entry(labels(team, kind))
                .or_default()
                .push([ts.clone(), line.to_string()]);
        };

        let mut run_line = Map::new();
        run_line.insert("type".into(), json!("run"));
        if let Value::Object(fields) = serde_json::to_value(run).expect("run summary serializes") {
            run_line.extend(fields);
        }
        let total: usize = report.teams.values().map(|t| t.total()).sum();
        let errors: usize = report.teams.values().map(|t| t.errors()).sum();
        run_line.insert("total".into(), json!(total));
        run_line.insert("errors".into(), json!(errors));
        push(RUN_TEAM, "run", Value::Object(run_line));

        for error in &report.policy_errors {
            push(
                RUN_TEAM,
                "policy_error",
                json!({
                    "type": "policy_error",
                    "runId": run.run_id,
                    "rule": error.rule,
                    "constraint": error.constraint,
                    "objects": error.objects,
                    "kind": error.first_object.kind,
                    "namespace": error.first_object.namespace,
                    "name": error.first_object.name,
                    "message": error.message,
                }),
            );
        }

        for (team, tr) in &report.teams {
            let mut rules: BTreeMap<&str, usize> = BTreeMap::new();
            for (namespace, ns) in &tr.namespaces {
                for (rule, rr) in &ns.rules {
                    if rr.count > 0 {
                        *rules.entry(rule).or_default() += rr.count;
                    }
                    push(
                        team,
                        "summary",
                        json!({
                            "type": "summary",
                            "runId": run.run_id,
                            "team": team,
                            "namespace": namespace,
                            "rule": rule,
                            "count": rr.count,
                            "errors": rr.errors,
                            "categories": rr.categories,
                        }),
                    );
                    for w in &rr.workloads {
                        push(
                            team,
                            "violation",
                            json!({
                                "type": "violation",
                                "runId": run.run_id,
                                "team": team,
                                "namespace": namespace,
                                "rule": rule,
                                "kind": w.kind,
                                "name": w.name,
                                "category": w.category,
                                "message": w.message,
                            }),
                        );
                    }
                }
            }
            push(
                team,
                "team_total",
                json!({
                    "type": "team_total",
                    "runId": run.run_id,
                    "team": team,
                    "total": tr.total(),
                    "errors": tr.errors(),
                    "namespaces": tr.violating_namespaces(),
                    "rules": rules,
                }),
            );
        }
        LokiPush {
            streams: streams
                .into_iter()
                .map(|(stream, values)| LokiStream { stream, values })
                .collect(),
        }
    }
}

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

/// Where and as whom to push: the Loki URL, tenant and credentials (what the report's `loki`
/// config section and environment resolve to).
#[derive(Debug, Clone)]
pub struct LokiEndpoint {
    /// The Loki base URL (`http(s)://host[:port][/prefix]`); `/loki/api/v1/push` is appended.
    /// User info in the URL (`https://user:pass@host`) becomes basic authentication.
    pub url: String,
    /// The `X-Scope-OrgID` tenant header, if any.
    pub tenant: Option<String>,
    /// Credentials, if any.
    pub auth: Option<LokiAuth>,
}

/// Pushes [`LokiPush`] bodies to one Loki.
///
/// A 2xx answer is success; anything else (including 429, which is not retried, and every 3xx,
/// which is not followed) and a timeout are [`SendError`]s, with credentials removed.
#[derive(Clone)]
pub struct LokiClient {
    http: HttpClient,
    push_uri: Uri,
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
            headers,
            secrets,
        })
    }

    /// Pushes `payload`.
    pub async fn push(&self, payload: &LokiPush) -> Result<(), SendError> {
        let body = Bytes::from(payload.to_json());
        let secrets: Vec<&str> = self.secrets.iter().map(|s| s.expose_secret()).collect();
        let answer = self
            .http
            .post_json(&self.push_uri, &self.headers, body, &secrets)
            .await?;
        if answer.status.is_success() {
            return Ok(());
        }
        if answer.status == StatusCode::TOO_MANY_REQUESTS {
            let retry_after_secs = retry_after_secs(&answer.headers);
            return Err(SendError::RateLimited {
                retry_after_secs,
                retried: false,
            });
        }
        Err(failure(&answer, &secrets))
    }
}

fn percent_decode(text: &str) -> String {
    url::form_urlencoded::parse(format!("x={}", text.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}
