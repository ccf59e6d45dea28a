//! A loopback fake of the Kubernetes API server (HTTPS with a [`TestCa`], bearer-token auth)
//! serving raw API fixtures with real list semantics, plus fault injection.
//!
//! ```text
//! let fake = FakeApiServer::start(Scenario::from_dir("fixtures/cluster/basic"));
//! let kubeconfig = fake.write_kubeconfig(dir.path());          // context "fake"
//! fake.inject("/apis/apps/v1/deployments", Fault::ExpireOnContinue);
//! ```
//!
//! A [`Scenario`] maps request paths to fixtures: a list (served page by page) or a single object
//! (served as is). [`Scenario::from_dir`] reads `fixtures/cluster/<scenario>/`, where a file's path
//! relative to the directory, minus `.json`, is the request path
//! (`apis/apps/v1/deployments.json` answers `GET /apis/apps/v1/deployments`); a body with an
//! `items` array is a list.
//!
//! List semantics: `limit` (0 or absent = everything), an opaque `continue` token bound to the
//! list's `resourceVersion` (a token from another resourceVersion answers 410 Gone, as after
//! etcd compaction), `metadata.resourceVersion`, `metadata.continue` and
//! `metadata.remainingItemCount`, items in fixture order. Unknown paths answer 404 with a
//! `Status` body; a missing or wrong bearer token answers 401. Faults ([`Fault`]) replace the
//! answer of one path: a status, a delay, a truncated, non-JSON or huge body, an echo of the
//! credential.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::StatusCode;
use serde_json::{Value, json};

use crate::server::{RecordedRequest, Reply, TestServer, respond, respond_json};
use crate::slack::{EchoStyle, percent_decoded};
use crate::tls::TestCa;

/// The bearer token the fake accepts.
pub const FAKE_TOKEN: &str = "fake-sa-token-0123456789";

/// A fault served instead of the normal answer for one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// Every request carrying a `continue` token (the second page on) answers 410 Gone.
    ExpireOnContinue,
    /// Every request answers this status with a `Status` body (403, 404, 500…).
    Status(u16),
    /// The answer is delayed by this long (use more than the client's timeout).
    Delay(Duration),
    /// The body stops halfway through the JSON document.
    TruncatedBody,
    /// A 200 answer whose body is not JSON.
    NotJson,
    /// This status with a `Status` body whose message echoes the request's `Authorization`
    /// header in `style` (as a misbehaving proxy or webhook authenticator might).
    EchoAuthorization {
        /// The status.
        status: u16,
        /// How the echo is disguised.
        style: EchoStyle,
    },
    /// This status with a body of `bytes` bytes (spaces: valid JSON whitespace that never ends
    /// in a document).
    Body {
        /// The status.
        status: u16,
        /// The body's size.
        bytes: usize,
    },
}

#[derive(Debug, Clone)]
enum Entry {
    List {
        kind: String,
        api_version: String,
        items: Arc<Vec<Bytes>>,
    },
    Object(Bytes),
}

/// The fixtures a [`FakeApiServer`] serves.
#[derive(Debug, Clone, Default)]
pub struct Scenario {
    entries: BTreeMap<String, Entry>,
    resource_version: u64,
}

impl Scenario {
    /// An empty scenario (every path answers 404) at resourceVersion 1000.
    pub fn new() -> Scenario {
        Scenario {
            entries: BTreeMap::new(),
            resource_version: 1000,
        }
    }

    /// Reads `fixtures/cluster/<scenario>/`-style fixtures (see the module documentation).
    /// Panics with the file name on an unreadable or non-JSON fixture (test setup error).
    pub fn from_dir(dir: impl AsRef<Path>) -> Scenario {
        let dir = dir.as_ref();
        let mut files = Vec::new();
        collect_json(dir, &mut files);
        files.sort();
        let mut scenario = Scenario::new();
        for file in files {
            let relative = file.strip_prefix(dir).expect("file under dir");
            let path = format!(
                "/{}",
                relative
                    .with_extension("")
                    .to_string_lossy()
                    .replace(std::path::MAIN_SEPARATOR, "/")
            );
            let text = std::fs::read_to_string(&file)
                .unwrap_or_else(|e| panic!("reading fixture {}: {e}", file.display()));
            let body: Value = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("fixture {} is not JSON: {e}", file.display()));
            scenario.insert(&path, body);
        }
        scenario
    }

    /// Serves `body` at `path`: as a list when it has an `items` array (its `kind`/`apiVersion`
    /// are kept and its `metadata.resourceVersion`, when numeric, raises the scenario's), else as
    /// a single object.
    pub fn insert(&mut self, path: &str, body: Value) {
        if let Some(items) = body.get("items").and_then(Value::as_array) {
            let rv = body
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0);
            self.resource_version = self.resource_version.max(rv);
            let items = items
                .iter()
                .map(|item| Bytes::from(item.to_string()))
                .collect();
            self.entries.insert(
                path.to_string(),
                Entry::List {
                    kind: text(&body, "kind"),
                    api_version: text(&body, "apiVersion"),
                    items: Arc::new(items),
                },
            );
        } else {
            self.entries.insert(
                path.to_string(),
                Entry::Object(Bytes::from(body.to_string())),
            );
        }
    }

    /// Builder form of a list: serves `items` at `path` as a `kind` list of `api_version`.
    pub fn with_list(
        self,
        path: &str,
        kind: &str,
        api_version: &str,
        items: impl IntoIterator<Item = Value>,
    ) -> Scenario {
        let items = items.into_iter().map(|item| item.to_string());
        self.with_raw_list(path, kind, api_version, items)
    }

    /// Like [`Scenario::with_list`] with items already serialized as compact JSON (fast setup
    /// for large scenarios; the text is served verbatim).
    pub fn with_raw_list(
        mut self,
        path: &str,
        kind: &str,
        api_version: &str,
        items: impl IntoIterator<Item = String>,
    ) -> Scenario {
        let items = items.into_iter().map(Bytes::from).collect();
        self.entries.insert(
            path.to_string(),
            Entry::List {
                kind: kind.to_string(),
                api_version: api_version.to_string(),
                items: Arc::new(items),
            },
        );
        self
    }

    /// Builder form of a single object served at `path`.
    pub fn with_object(mut self, path: &str, object: Value) -> Scenario {
        self.entries.insert(
            path.to_string(),
            Entry::Object(Bytes::from(object.to_string())),
        );
        self
    }

    /// The paths served, sorted.
    pub fn paths(&self) -> Vec<String> {
        self.entries.keys().cloned().collect()
    }
}

fn text(body: &Value, key: &str) -> String {
    body.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn collect_json(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading fixture dir {}: {e}", dir.display()));
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_json(&path, out);
        } else if path.extension().is_some_and(|e| e == "json") {
            out.push(path);
        }
    }
}

#[derive(Debug)]
struct State {
    scenario: Scenario,
    faults: HashMap<String, Fault>,
}

/// A running fake API server. Dropping it stops the server.
#[derive(Debug)]
pub struct FakeApiServer {
    server: TestServer,
    ca: TestCa,
    state: Arc<Mutex<State>>,
}

impl FakeApiServer {
    /// Starts the fake on `https://localhost:PORT` with a fresh CA.
    pub fn start(scenario: Scenario) -> FakeApiServer {
        let ca = TestCa::new();
        let state = Arc::new(Mutex::new(State {
            scenario,
            faults: HashMap::new(),
        }));
        let shared = Arc::clone(&state);
        let server = TestServer::start_tls(&ca, move |request| {
            let shared = Arc::clone(&shared);
            async move { answer(&shared, request).await }
        });
        FakeApiServer { server, ca, state }
    }

    /// The base URL, `https://localhost:PORT`.
    pub fn url(&self) -> String {
        self.server.url()
    }

    /// The CA certificate (PEM) the server's certificate chains to.
    pub fn ca_pem(&self) -> &str {
        self.ca.ca_pem()
    }

    /// The bearer token the fake accepts ([`FAKE_TOKEN`]).
    pub fn token(&self) -> &'static str {
        FAKE_TOKEN
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.server.requests()
    }

    /// Requests received for `path`, in order.
    pub fn requests_to(&self, path: &str) -> Vec<RecordedRequest> {
        self.requests()
            .into_iter()
            .filter(|r| r.path == path)
            .collect()
    }

    /// Serves `fault` for every later request to `path` (replacing an earlier fault there).
    pub fn inject(&self, path: &str, fault: Fault) {
        self.lock().faults.insert(path.to_string(), fault);
    }

    /// Removes every injected fault.
    pub fn clear_faults(&self) {
        self.lock().faults.clear();
    }

    /// Raises the resourceVersion, as a write would: outstanding continue tokens then expire
    /// (410 Gone), as after an etcd compaction.
    pub fn bump_resource_version(&self) {
        self.lock().scenario.resource_version += 1;
    }

    /// Writes `ca.crt` and `kubeconfig` into `dir`: one context `fake` (the current context),
    /// cluster = this server, user = bearer token. Returns the kubeconfig path.
    pub fn write_kubeconfig(&self, dir: &Path) -> PathBuf {
        self.write_kubeconfig_file(dir, "fake")
    }

    /// Like [`FakeApiServer::write_kubeconfig`], with a second context `decoy` that is the
    /// current context and points at a port where nothing listens: only `--context fake` works.
    pub fn write_kubeconfig_with_decoy(&self, dir: &Path) -> PathBuf {
        self.write_kubeconfig_file(dir, "decoy")
    }

    fn write_kubeconfig_file(&self, dir: &Path, current: &str) -> PathBuf {
        let ca = dir.join("ca.crt");
        std::fs::write(&ca, self.ca_pem()).expect("write ca.crt");
        let kubeconfig = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n\
             - name: fake\n  cluster:\n    server: {url}\n    certificate-authority: {ca}\n\
             - name: decoy\n  cluster:\n    server: https://127.0.0.1:9\n    certificate-authority: {ca}\n\
             users:\n- name: fake\n  user:\n    token: {token}\n\
             contexts:\n- name: fake\n  context:\n    cluster: fake\n    user: fake\n\
             - name: decoy\n  context:\n    cluster: decoy\n    user: fake\n\
             current-context: {current}\n",
            url = self.url(),
            ca = ca.display(),
            token = FAKE_TOKEN,
        );
        let path = dir.join("kubeconfig");
        std::fs::write(&path, kubeconfig).expect("write kubeconfig");
        path
    }

    /// Writes a ServiceAccount mount (`token`, `ca.crt`) into `dir`, as a Pod sees it under
    /// `/var/run/secrets/kubernetes.io/serviceaccount/`. Returns `(token path, CA path)`.
    pub fn write_service_account(&self, dir: &Path) -> (PathBuf, PathBuf) {
        let token = dir.join("token");
        let ca = dir.join("ca.crt");
        std::fs::write(&token, FAKE_TOKEN).expect("write token");
        std::fs::write(&ca, self.ca_pem()).expect("write ca.crt");
        (token, ca)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().expect("fake API state")
    }
}

async fn answer(state: &Mutex<State>, request: RecordedRequest) -> Reply {
    let expected = format!("Bearer {FAKE_TOKEN}");
    if request.header("authorization") != Some(expected.as_str()) {
        return status_reply(StatusCode::UNAUTHORIZED, "Unauthorized");
    }
    if request.method != http::Method::GET {
        return status_reply(StatusCode::METHOD_NOT_ALLOWED, "only GET is served");
    }
    let (fault, entry, rv) = {
        let state = state.lock().expect("fake API state");
        (
            state.faults.get(&request.path).cloned(),
            state.scenario.entries.get(&request.path).cloned(),
            state.scenario.resource_version,
        )
    };
    let continued = request
        .query_param("continue")
        .map(|t| percent_decoded(&t.replace('+', " ")))
        .filter(|t| !t.is_empty());
    match fault {
        Some(Fault::Delay(delay)) => tokio::time::sleep(delay).await,
        Some(Fault::Status(code)) => {
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            return status_reply(status, &format!("injected {code} for {}", request.path));
        }
        Some(Fault::ExpireOnContinue) if continued.is_some() => return gone(),
        Some(Fault::NotJson) => {
            return respond(
                StatusCode::OK,
                "text/html",
                "<html><body>proxy error</body></html>",
            );
        }
        Some(Fault::EchoAuthorization { status, style }) => {
            let credential = request.header("authorization").unwrap_or("");
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::UNAUTHORIZED);
            return status_reply(
                status,
                &format!("invalid credential {}", style.apply(credential)),
            );
        }
        Some(Fault::Body { status, bytes }) => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
            return respond_json(status, vec![b' '; bytes]);
        }
        _ => {}
    }
    let (status, body) = match entry {
        None => {
            return status_reply(
                StatusCode::NOT_FOUND,
                "the server could not find the requested resource",
            );
        }
        Some(Entry::Object(body)) => (StatusCode::OK, body),
        Some(Entry::List {
            kind,
            api_version,
            items,
        }) => {
            let limit = request
                .query_param("limit")
                .and_then(|l| l.parse::<usize>().ok())
                .filter(|l| *l > 0)
                .unwrap_or(usize::MAX);
            let start = match continued {
                None => 0,
                Some(token) => match parse_token(&token) {
                    Some((offset, token_rv)) if token_rv == rv => offset,
                    Some(_) => return gone(),
                    None => {
                        return status_reply(StatusCode::BAD_REQUEST, "invalid continue token");
                    }
                },
            };
            let page = list_page(&kind, &api_version, &items, start, limit, rv);
            (StatusCode::OK, Bytes::from(page))
        }
    };
    if fault == Some(Fault::TruncatedBody) {
        return truncated(status, "application/json", body);
    }
    respond_json(status, body)
}

fn list_page(
    kind: &str,
    api_version: &str,
    items: &[Bytes],
    start: usize,
    limit: usize,
    rv: u64,
) -> Vec<u8> {
    let start = start.min(items.len());
    let end = start.saturating_add(limit).min(items.len());
    let mut metadata = json!({"resourceVersion": rv.to_string()});
    if end < items.len() {
        metadata["continue"] = Value::String(make_token(end, rv));
        metadata["remainingItemCount"] = json!(items.len() - end);
    }
    let head = json!({"kind": kind, "apiVersion": api_version, "metadata": metadata}).to_string();
    let size: usize = items[start..end].iter().map(|i| i.len() + 1).sum();
    let mut body = Vec::with_capacity(head.len() + size + 16);
    body.extend_from_slice(&head.as_bytes()[..head.len() - 1]);
    body.extend_from_slice(b",\"items\":[");
    for (i, item) in items[start..end].iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        body.extend_from_slice(item);
    }
    body.extend_from_slice(b"]}");
    body
}

/// An opaque-looking token that needs percent-encoding (as real base64 tokens do).
fn make_token(offset: usize, rv: u64) -> String {
    format!("o={offset}&rv={rv}+")
}

fn parse_token(token: &str) -> Option<(usize, u64)> {
    let rest = token.strip_prefix("o=")?.strip_suffix('+')?;
    let (offset, rv) = rest.split_once("&rv=")?;
    Some((offset.parse().ok()?, rv.parse().ok()?))
}

fn gone() -> Reply {
    status_reply(
        StatusCode::GONE,
        "The provided continue parameter is too old to display a consistent list result.",
    )
}

fn status_reply(status: StatusCode, message: &str) -> Reply {
    let body = json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Failure", "message": message,
        "reason": status.canonical_reason().unwrap_or("").replace(' ', ""),
        "code": status.as_u16(),
    });
    respond_json(status, body.to_string())
}

/// The first half of `full`, framed as a complete response: the client receives a body that
/// stops in the middle of the JSON document, as when a proxy drops the tail of a response.
fn truncated(status: StatusCode, content_type: &str, full: Bytes) -> Reply {
    respond(status, content_type, full.slice(..full.len() / 2))
}
