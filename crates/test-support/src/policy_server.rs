//! A fake of the regional GCO policy endpoints: one loopback HTTPS server answering
//! `GET /<region>/prod/api/v1/policy` for many regions, each with its own behaviour (serve a
//! document, be slow, hang, fail, throttle then succeed, redirect, send garbage, send a huge
//! body, echo the request into the document) and optionally its own authentication requirement (bearer token, SigV4-shaped header).
//!
//! Regions not configured answer 404. Behaviours can be changed while the server runs.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use bytes::Bytes;
use http::StatusCode;
use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::{Value, json};

use crate::server::{RecordedRequest, Reply, TestServer, respond, respond_json};
use crate::tls::TestCa;

/// How one region's endpoint answers.
#[derive(Debug, Clone)]
pub enum Behaviour {
    /// 200 with this JSON body.
    Serve(Value),
    /// Waits, then 200 with this JSON body.
    Slow(Duration, Value),
    /// Accepts the request and never answers.
    Hang,
    /// Answers this status with a small JSON error body, every time.
    Status(u16),
    /// The first `failures` requests get `status` (with `Retry-After: retry_after` when given),
    /// later ones 200 with `body`.
    FailThen {
        /// The failing status, e.g. 429 or 503.
        status: u16,
        /// How many requests fail before the first success.
        failures: usize,
        /// The `Retry-After` header value sent with each failure.
        retry_after: Option<String>,
        /// The body served once the failures are used up.
        body: Value,
    },
    /// 302 to this location.
    Redirect(String),
    /// 200 with a body that is not JSON.
    InvalidJson,
    /// 200 with a JSON body that has no `policy` object.
    NoPolicy,
    /// 200 with a syntactically valid JSON body of (at least) this many bytes.
    Oversized(usize),
    /// 200 with the JSON body this function builds from the request: a hostile or buggy server
    /// that echoes what it received (for example the caller's credentials) into the policy.
    Echo(fn(&RecordedRequest) -> Value),
}

/// What a region's endpoint demands before answering.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum AuthCheck {
    /// Nothing.
    #[default]
    None,
    /// `Authorization: Bearer <token>` exactly; otherwise 401.
    Bearer(String),
    /// An `Authorization` header shaped like AWS SigV4 for `execute-api` in this region, plus
    /// `x-amz-date`; otherwise 403 (the API Gateway answer).
    SigV4 {
        /// The region the credential scope must name.
        region: String,
    },
    /// A named header with exactly this value; otherwise 401.
    Header {
        /// The header name (lower-case).
        name: String,
        /// The expected value.
        value: String,
    },
}

/// One region's route: behaviour plus authentication requirement.
#[derive(Debug, Clone)]
pub struct Route {
    /// How the endpoint answers once authenticated.
    pub behaviour: Behaviour,
    /// What it demands first.
    pub auth: AuthCheck,
}

impl From<Behaviour> for Route {
    fn from(behaviour: Behaviour) -> Route {
        Route {
            behaviour,
            auth: AuthCheck::None,
        }
    }
}

#[derive(Debug, Default)]
struct State {
    routes: BTreeMap<String, Route>,
    hits: BTreeMap<String, usize>,
}

/// The running fake. Dropping it stops the server (hung requests are abandoned).
#[derive(Debug)]
pub struct PolicyServer {
    server: TestServer,
    state: Arc<Mutex<State>>,
}

impl PolicyServer {
    /// Starts an HTTPS server presenting `ca`'s `localhost` certificate, with no regions yet.
    pub fn start(ca: &TestCa) -> PolicyServer {
        let state = Arc::new(Mutex::new(State::default()));
        let shared = Arc::clone(&state);
        let server = TestServer::start_tls(ca, move |request| {
            let shared = Arc::clone(&shared);
            async move { answer(&shared, request).await }
        });
        PolicyServer { server, state }
    }

    /// Sets (or replaces) `region`'s route and resets its hit count.
    pub fn route(&self, region: &str, route: impl Into<Route>) -> &PolicyServer {
        let mut state = self.state.lock().expect("policy server state");
        state.routes.insert(region.to_string(), route.into());
        state.hits.remove(region);
        self
    }

    /// `region`'s endpoint base URL, `https://localhost:PORT/<region>/prod` (what a regions
    /// file's `endpoint` holds).
    pub fn endpoint(&self, region: &str) -> String {
        format!("{}/{region}/prod", self.server.url())
    }

    /// How many requests reached `region`'s policy path.
    pub fn hits(&self, region: &str) -> usize {
        let state = self.state.lock().expect("policy server state");
        state.hits.get(region).copied().unwrap_or(0)
    }

    /// Every request received, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.server.requests()
    }

    /// The underlying server (address, URL).
    pub fn server(&self) -> &TestServer {
        &self.server
    }
}

async fn answer(state: &Mutex<State>, request: RecordedRequest) -> Reply {
    let Some(region) = request
        .path
        .strip_prefix('/')
        .and_then(|rest| rest.strip_suffix("/prod/api/v1/policy"))
        .filter(|region| !region.contains('/'))
        .map(str::to_string)
    else {
        return respond_json(StatusCode::NOT_FOUND, r#"{"detail":"Not Found"}"#);
    };
    let (route, hit) = {
        let mut state = state.lock().expect("policy server state");
        let Some(route) = state.routes.get(&region).cloned() else {
            return respond_json(StatusCode::NOT_FOUND, r#"{"detail":"Not Found"}"#);
        };
        let hit = state.hits.entry(region.clone()).or_insert(0);
        *hit += 1;
        (route, *hit)
    };
    if request.method != http::Method::GET {
        return respond_json(
            StatusCode::METHOD_NOT_ALLOWED,
            r#"{"detail":"Method Not Allowed"}"#,
        );
    }
    if let Some(denied) = check_auth(&route.auth, &request) {
        return denied;
    }
    match route.behaviour {
        Behaviour::Serve(body) => json_reply(&body),
        Behaviour::Slow(delay, body) => {
            tokio::time::sleep(delay).await;
            json_reply(&body)
        }
        Behaviour::Hang => std::future::pending().await,
        Behaviour::Status(status) => status_reply(status),
        Behaviour::FailThen {
            status,
            failures,
            retry_after,
            body,
        } => {
            if hit <= failures {
                let mut reply = status_reply(status);
                if let Some(value) = retry_after {
                    reply.headers_mut().insert(
                        http::header::RETRY_AFTER,
                        value.parse().expect("Retry-After value"),
                    );
                }
                reply
            } else {
                json_reply(&body)
            }
        }
        Behaviour::Redirect(location) => {
            let mut reply = respond(StatusCode::FOUND, "text/plain", "moved");
            reply.headers_mut().insert(
                http::header::LOCATION,
                location.parse().expect("Location value"),
            );
            reply
        }
        Behaviour::InvalidJson => respond(
            StatusCode::OK,
            "application/json",
            "<html><body>not json</body></html>",
        ),
        Behaviour::NoPolicy => json_reply(&json!({
            "service": "GCO Manifest Processor API",
            "region": region,
            "source": "deployed-cluster-runtime",
        })),
        Behaviour::Oversized(bytes) => {
            let mut body = Vec::with_capacity(bytes + 64);
            body.extend_from_slice(br#"{"policy": {}, "padding": ""#);
            body.resize(body.len() + bytes, b'x');
            body.extend_from_slice(br#""}"#);
            respond(StatusCode::OK, "application/json", Bytes::from(body))
        }
        Behaviour::Echo(build) => json_reply(&build(&request)),
    }
}

fn check_auth(auth: &AuthCheck, request: &RecordedRequest) -> Option<Reply> {
    let unauthorized = || {
        Some(respond_json(
            StatusCode::UNAUTHORIZED,
            r#"{"detail":"Unauthorized"}"#,
        ))
    };
    match auth {
        AuthCheck::None => None,
        AuthCheck::Bearer(token) => {
            if request.header("authorization") == Some(&format!("Bearer {token}")) {
                None
            } else {
                unauthorized()
            }
        }
        AuthCheck::Header { name, value } => {
            if request.header(name) == Some(value.as_str()) {
                None
            } else {
                unauthorized()
            }
        }
        AuthCheck::SigV4 { region } => {
            let shaped = request
                .header("authorization")
                .is_some_and(|value| is_sigv4_shaped(value, region))
                && request
                    .header("x-amz-date")
                    .is_some_and(|date| date.len() == 16 && date.ends_with('Z'));
            if shaped {
                None
            } else {
                Some(respond_json(
                    StatusCode::FORBIDDEN,
                    r#"{"message":"Missing Authentication Token"}"#,
                ))
            }
        }
    }
}

/// Whether `value` looks like `AWS4-HMAC-SHA256 Credential=<key>/<yyyymmdd>/<region>/execute-api/aws4_request, SignedHeaders=<…host…x-amz-date…>, Signature=<64 hex>`.
pub fn is_sigv4_shaped(value: &str, region: &str) -> bool {
    let Some(rest) = value.strip_prefix("AWS4-HMAC-SHA256 ") else {
        return false;
    };
    let parts: Vec<&str> = rest.split(", ").collect();
    let [credential, signed, signature] = parts.as_slice() else {
        return false;
    };
    let scope: Vec<&str> = credential
        .strip_prefix("Credential=")
        .unwrap_or_default()
        .split('/')
        .collect();
    let scope_ok = matches!(
        scope.as_slice(),
        [key, date, r, "execute-api", "aws4_request"]
            if !key.is_empty() && date.len() == 8 && date.bytes().all(|b| b.is_ascii_digit()) && *r == region
    );
    let signed_ok = signed.strip_prefix("SignedHeaders=").is_some_and(|list| {
        let names: Vec<&str> = list.split(';').collect();
        names.contains(&"host") && names.contains(&"x-amz-date")
    });
    let signature_ok = signature
        .strip_prefix("Signature=")
        .is_some_and(|hex| hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()));
    scope_ok && signed_ok && signature_ok
}

fn json_reply(body: &Value) -> Reply {
    respond_json(StatusCode::OK, body.to_string())
}

fn status_reply(status: u16) -> Reply {
    let status = StatusCode::from_u16(status).expect("valid status");
    respond_json(
        status,
        json!({"detail": status.canonical_reason().unwrap_or("error")}).to_string(),
    )
}

/// A realistic `GET /api/v1/policy` response for `region`, shaped as `docs/gco-policy-endpoint.md`
/// describes the answer: shipped defaults, ECR hosts for two regions, and one namespace's live
/// ResourceQuota and LimitRange.
pub fn sample_policy_response(region: &str) -> Value {
    json!({
        "service": "GCO Manifest Processor API",
        "timestamp": "2026-09-01T14:42:56.123456+00:00",
        "cluster_id": format!("gco-{region}"),
        "region": region,
        "source": "deployed-cluster-runtime",
        "policy": {
            "validation_enabled": true,
            "manifest_caps": {
                "max_cpu_millicores": 384000,
                "max_memory_bytes": 4398046511104_u64,
                "max_gpu_count": 16,
                "configured": {"max_cpu_per_manifest": "384", "max_memory_per_manifest": "4096Gi", "max_gpu_per_manifest": "16"}
            },
            "allowed_namespaces": ["gco-jobs"],
            "allowed_kinds": ["ConfigMap", "CronJob", "DaemonSet", "Deployment", "Job", "Pod", "Service", "StatefulSet", "TrainJob"],
            "allowed_api_versions": {
                "ConfigMap": ["v1"], "CronJob": ["batch/v1"], "DaemonSet": ["apps/v1"], "Deployment": ["apps/v1"],
                "Job": ["batch/v1"], "Pod": ["v1"], "Service": ["v1"], "StatefulSet": ["apps/v1"],
                "TrainJob": ["trainer.kubeflow.org/v1alpha1"]
            },
            "trusted_registries": [
                "111122223333.dkr.ecr.us-east-1.amazonaws.com", "111122223333.dkr.ecr.us-east-2.amazonaws.com",
                "docker.io", "gcr.io", "k8s.gcr.io", "nvcr.io", "public.ecr.aws", "quay.io", "registry.k8s.io"
            ],
            "trusted_dockerhub_orgs": ["amazon", "bitnami", "gco", "huggingface", "lmsysorg", "nvidia", "pytorch", "rayproject", "tensorflow", "vllm"],
            "require_accelerator_toleration": true,
            "yaml_max_depth": 50,
            "manifest_security_policy": {
                "block_privileged": true, "block_privilege_escalation": true, "block_host_network": true,
                "block_host_pid": true, "block_host_ipc": true, "block_host_path": true,
                "block_added_capabilities": true, "block_run_as_root": false
            }
        },
        "cluster_enforcement": {
            "gco-jobs": {
                "resource_quotas": {"gco-jobs-quota": {"requests.cpu": "400", "requests.memory": "4096Gi", "requests.nvidia.com/gpu": "32", "pods": "50"}},
                "limit_ranges": {"gco-jobs-limits": [
                    {"type": "Container", "max": {"cpu": "192", "memory": "2048Gi", "nvidia.com/gpu": "8"}, "min": {}, "default": {}, "defaultRequest": {}}
                ]},
                "status": "ok"
            }
        }
    })
}

/// The forms a server can reasonably echo a credential in: raw, case-folded, base64 (alone, of
/// `Bearer <s>`, of `user:<s>` URL-safe), percent-encoded, JSON-escaped (`\/`), and base64
/// wrapped over lines.
pub fn credential_encodings(secret: &str) -> Vec<String> {
    let base64 = STANDARD.encode(secret);
    let wrapped: Vec<String> = base64
        .as_bytes()
        .chunks(8)
        .map(|chunk| String::from_utf8_lossy(chunk).into_owned())
        .collect();
    vec![
        secret.to_string(),
        secret.to_uppercase(),
        secret.to_lowercase(),
        base64.clone(),
        STANDARD.encode(format!("Bearer {secret}")),
        URL_SAFE_NO_PAD.encode(format!("user:{secret}")),
        utf8_percent_encode(secret, NON_ALPHANUMERIC).to_string(),
        secret.replace('/', "\\/"),
        wrapped.join("\n"),
    ]
}

/// The first of [`credential_encodings`] of `secret` found in `rendered`, compared lower-cased
/// and without whitespace, backslashes or escaped newlines, so a leak cannot hide behind JSON
/// escaping, case or line wrapping in the rendering.
pub fn leaked_encoding(rendered: &str, secret: &str) -> Option<String> {
    let normalize = |text: &str| -> String {
        text.replace("\\n", "")
            .chars()
            .filter(|c| !c.is_whitespace() && *c != '\\')
            .collect::<String>()
            .to_lowercase()
    };
    let haystack = normalize(rendered);
    credential_encodings(secret)
        .into_iter()
        .find(|encoded| haystack.contains(&normalize(encoded)))
}

/// Every credential-bearing header of `request` (the `Authorization` value, a bearer token, a
/// SigV4 access key, the session token), each in every [`credential_encodings`] form.
fn echoed_credentials(request: &RecordedRequest) -> Vec<String> {
    let mut secrets = Vec::new();
    if let Some(authorization) = request.header("authorization") {
        secrets.push(authorization.to_string());
        if let Some(token) = authorization.strip_prefix("Bearer ") {
            secrets.push(token.to_string());
        }
        if let Some(scope) = authorization.split("Credential=").nth(1) {
            secrets.push(scope.split('/').next().unwrap_or_default().to_string());
        }
    }
    if let Some(session) = request.header("x-amz-security-token") {
        secrets.push(session.to_string());
    }
    secrets
        .iter()
        .flat_map(|s| credential_encodings(s))
        .collect()
}

/// For [`Behaviour::Echo`]: a readable policy carrying the request's credentials in every
/// encoding, wherever a reason, a drift value, a table line or the raw document could show them
/// (allowlists, keys, the caps' extras, an enforcement reason, the top-level fields).
pub fn echo_credentials_everywhere(request: &RecordedRequest) -> Value {
    let echoed = echoed_credentials(request);
    let first = echoed.first().cloned().unwrap_or_default();
    let keyed: serde_json::Map<String, Value> = echoed
        .iter()
        .map(|s| (s.clone(), Value::String(s.clone())))
        .collect();
    json!({
        "cluster_id": first,
        "region": format!("echo of {first}"),
        "policy": {
            "allowed_kinds": ["Job", first],
            "allowed_namespaces": ["gco-jobs"],
            "trusted_registries": echoed,
            "trusted_dockerhub_orgs": [format!("org-{first}")],
            "manifest_caps": {"max_gpu_count": 4, "configured": keyed},
            "require_accelerator_toleration": false,
        },
        "cluster_enforcement": {
            "gco-jobs": {"status": "unavailable", "reason": format!("401 for {first}")},
        },
    })
}

/// For [`Behaviour::Echo`]: a policy whose CPU cap is the `Authorization` header, so the
/// conversion error (`invalid literal for int() …`) quotes it.
pub fn echo_authorization_into_a_cap(request: &RecordedRequest) -> Value {
    let authorization = request.header("authorization").unwrap_or_default();
    json!({"policy": {"manifest_caps": {"max_cpu_millicores": authorization}}})
}

/// For [`Behaviour::Echo`]: a policy whose CPU cap is the SigV4 session token.
pub fn echo_session_token_into_a_cap(request: &RecordedRequest) -> Value {
    let session = request.header("x-amz-security-token").unwrap_or_default();
    json!({"policy": {"manifest_caps": {"max_cpu_millicores": session}}})
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260829/us-east-1/execute-api/aws4_request, SignedHeaders=accept;host;x-amz-date, Signature=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn sigv4_shape_is_checked_part_by_part() {
        assert!(is_sigv4_shaped(GOOD, "us-east-1"));
        assert!(!is_sigv4_shaped(GOOD, "eu-west-1"), "wrong region");
        assert!(!is_sigv4_shaped(
            &GOOD.replace("execute-api", "s3"),
            "us-east-1"
        ));
        assert!(!is_sigv4_shaped(&GOOD.replace("host;", ""), "us-east-1"));
        assert!(!is_sigv4_shaped(
            &GOOD.replace("Signature=0", "Signature="),
            "us-east-1"
        ));
        assert!(!is_sigv4_shaped("Bearer token", "us-east-1"));
    }

    #[test]
    fn sample_response_has_the_documented_shape() {
        let body = sample_policy_response("us-east-2");
        assert_eq!(body["region"], "us-east-2");
        assert_eq!(body["policy"]["manifest_caps"]["max_gpu_count"], 16);
        assert_eq!(body["cluster_enforcement"]["gco-jobs"]["status"], "ok");
    }
}
