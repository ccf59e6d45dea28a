//! Reading a live cluster through `kube`: raw requests on a [`kube::Client`] (so status codes and
//! bodies are ours to judge), lists only through the list verb, paginated with `limit` and
//! `continue`, each request (body included) under a finite timeout.
//!
//! What is read, in this order of error precedence: the Constraints of each configured kind
//! (`constraints.gatekeeper.sh/v1beta1`, plural = lower-case kind), the ConstraintTemplate of each
//! configured kind (GET `templates.gatekeeper.sh/v1` `constrainttemplates/<lower-case kind>`),
//! the ExpansionTemplates, the mutators, Namespaces, then each configured workload kind. Resources are fetched concurrently; when several
//! fail, the error reported is the first in that order.
//!
//! ExpansionTemplates are listed as Gatekeeper serves them: `expansion.gatekeeper.sh/v1beta1`,
//! and when that version answers 404, `v1alpha1` (older releases); the resource is
//! `expansiontemplate`, singular, as Gatekeeper's CRD names it. Gatekeeper's mutators
//! (`mutations.gatekeeper.sh` `assign`, `assignmetadata`, `modifyset` in `v1`, `assignimage` in
//! `v1alpha1`) are listed the same way, only so the report can say that it does not apply them. When neither is served (the
//! CRD is not installed) the cluster has none: that is not an error.
//!
//! Every body is read up to [`ReadSpec::max_body_bytes`] (64 MiB by default), so an endless 200
//! answer fails at the cap instead of growing memory. Texts taken from an answer (a `Status`
//! message, the start of an error page) are redacted with [`ReadSpec::redactor`], which
//! [`read_cluster`] extends with the source's own credentials, before they are shortened.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use http::StatusCode;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use kube::api::ListParams;
use kube::client::Body;
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::Semaphore;

use crate::access::{ClusterSource, ConfigError};
use crate::model::{
    CONSTRAINTS_API_VERSION, ClusterState, EXPANSION_API_VERSIONS, Item, MUTATORS, ModelError,
    ReadSpec, TEMPLATES_API_VERSION, Workload, WorkloadKind, classify, normalize,
};

/// Errors while reading the cluster. Every text names the resource (and the HTTP status when one
/// was received); none holds a credential.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// No client could be configured.
    #[error("cluster access: {0}")]
    Config(#[source] ConfigError),
    /// A `continue` page answered 410 Gone: the list snapshot expired; not retried.
    #[error("list expired (410 Gone) while listing {resource}")]
    ListExpired {
        /// The resource, e.g. `apps/v1 deployments`.
        resource: String,
    },
    /// A configured Constraint kind is not a valid kind name (letters and digits only).
    #[error("invalid constraint kind {kind:?}: expected letters and digits only")]
    InvalidConstraintKind {
        /// The configured value.
        kind: String,
    },
    /// A configured Constraint kind is not served (its collection answered 404).
    #[error("constraint kind {kind} is not served by the API ({resource}: HTTP 404)")]
    ConstraintKindNotServed {
        /// The kind, e.g. `K8sRequiredLabels`.
        kind: String,
        /// The resource.
        resource: String,
    },
    /// The ConstraintTemplate of a configured kind does not exist.
    #[error("constrainttemplate {name} of constraint kind {kind} not found ({resource}: HTTP 404)")]
    TemplateNotFound {
        /// The Constraint kind.
        kind: String,
        /// The template name (lower-case kind).
        name: String,
        /// The resource.
        resource: String,
    },
    /// Any other non-success status (401, 403, 404, 5xx…).
    #[error("{resource}: HTTP {status}{}", message_suffix(.message))]
    Status {
        /// The resource.
        resource: String,
        /// The HTTP status code.
        status: u16,
        /// The API's `Status.message` (or the start of the body), possibly empty.
        message: String,
    },
    /// No complete response within the timeout.
    #[error("{resource}: no complete response within {timeout:?}")]
    Timeout {
        /// The resource.
        resource: String,
        /// The timeout.
        timeout: Duration,
    },
    /// The request could not be sent or no response head arrived (connection, TLS, auth setup).
    #[error("{resource}: request failed")]
    Transport {
        /// The resource.
        resource: String,
        /// kube's error.
        #[source]
        source: kube::Error,
    },
    /// The response body broke off before its end (the connection dropped, or the JSON document
    /// ends early).
    #[error("{resource}: HTTP {status} response body was truncated")]
    TruncatedBody {
        /// The resource.
        resource: String,
        /// The status of the response.
        status: u16,
        /// Why reading stopped.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The body is longer than the cap.
    #[error("{resource}: HTTP {status} response body is larger than the {} cap", bounded_input::format_size(*.cap))]
    BodyTooLarge {
        /// The resource.
        resource: String,
        /// The status of the response.
        status: u16,
        /// The cap, in bytes.
        cap: u64,
    },
    /// The body is not JSON.
    #[error("{resource}: HTTP {status} response body is not valid JSON")]
    InvalidBody {
        /// The resource.
        resource: String,
        /// The status of the response.
        status: u16,
        /// The parse error.
        #[source]
        source: serde_json::Error,
    },
    /// The body is JSON but not the expected shape (a list without `items`, a non-object item,
    /// a continue token that does not advance).
    #[error("{resource}: HTTP {status} response is not {expected}")]
    UnexpectedBody {
        /// The resource.
        resource: String,
        /// The status of the response.
        status: u16,
        /// What was expected.
        expected: &'static str,
    },
    /// An object the API returned is malformed.
    #[error("{resource}: malformed object")]
    Model {
        /// The resource.
        resource: String,
        /// What is wrong.
        #[source]
        source: ModelError,
    },
    /// The model as a whole is inconsistent (e.g. a duplicate).
    #[error("inconsistent cluster state")]
    State(#[source] ModelError),
    /// A concurrent read task stopped abnormally.
    #[error("{resource}: read task stopped")]
    Task {
        /// The resource.
        resource: String,
        /// Why.
        #[source]
        source: tokio::task::JoinError,
    },
    /// The blocking wrapper could not start its runtime.
    #[error("starting the async runtime failed")]
    Runtime(#[source] std::io::Error),
}

fn message_suffix(message: &str) -> String {
    if message.is_empty() {
        String::new()
    } else {
        format!(": {message}")
    }
}

/// Reads what `spec` selects from the cluster `source` points at.
pub async fn read_cluster(
    source: &ClusterSource,
    spec: &ReadSpec,
) -> Result<ClusterState, ReadError> {
    let (client, spec) = connect(source, spec).await?;
    read_with_client(&client, &spec).await
}

/// A client for `source`, and `spec` redacting the source's own credentials too.
async fn connect(
    source: &ClusterSource,
    spec: &ReadSpec,
) -> Result<(kube::Client, ReadSpec), ReadError> {
    install_crypto_provider();
    let client = source
        .client(spec.request_timeout)
        .await
        .map_err(ReadError::Config)?;
    let mut spec = spec.clone();
    spec.redactor.merge(&source.redactor());
    Ok((client, spec))
}

/// [`read_cluster`] on a runtime of its own, for synchronous callers.
pub fn read_cluster_blocking(
    source: &ClusterSource,
    spec: &ReadSpec,
) -> Result<ClusterState, ReadError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(ReadError::Runtime)?;
    runtime.block_on(read_cluster(source, spec))
}

/// Makes `ring` the process's rustls provider (kube builds its TLS config from the default
/// provider); harmless when one is already installed.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// What one request reads.
#[derive(Debug, Clone)]
struct Resource {
    /// Text for errors, e.g. `apps/v1 deployments`.
    label: String,
    /// The request path.
    path: String,
    /// apiVersion and kind to fill into items that lack them.
    api_version: String,
    kind: String,
    role: Role,
}

#[derive(Debug, Clone)]
enum Role {
    Constraints {
        kind: String,
    },
    Template {
        kind: String,
        name: String,
    },
    /// A collection the cluster may not serve (ExpansionTemplates, mutators): its versions in
    /// the order tried (a 404 means "try the next", and after the last one "none"), the first
    /// being this resource's.
    Optional {
        versions: &'static [&'static str],
        plural: &'static str,
    },
    Namespaces,
    Workloads,
}

fn resources(spec: &ReadSpec) -> Vec<Resource> {
    let mut out = Vec::new();
    for kind in &spec.constraint_kinds {
        let plural = kind.to_ascii_lowercase();
        out.push(Resource {
            label: format!("{CONSTRAINTS_API_VERSION} {plural}"),
            path: format!("/apis/{CONSTRAINTS_API_VERSION}/{plural}"),
            api_version: CONSTRAINTS_API_VERSION.into(),
            kind: kind.clone(),
            role: Role::Constraints { kind: kind.clone() },
        });
    }
    for kind in &spec.constraint_kinds {
        let name = kind.to_ascii_lowercase();
        out.push(Resource {
            label: format!("{TEMPLATES_API_VERSION} constrainttemplates/{name}"),
            path: format!("/apis/{TEMPLATES_API_VERSION}/constrainttemplates/{name}"),
            api_version: TEMPLATES_API_VERSION.into(),
            kind: "ConstraintTemplate".into(),
            role: Role::Template {
                kind: kind.clone(),
                name,
            },
        });
    }
    out.push(optional_resource(
        &EXPANSION_API_VERSIONS,
        EXPANSION_API_VERSIONS[0],
        "expansiontemplate",
        "ExpansionTemplate",
    ));
    for (kind, plural, versions) in MUTATORS {
        out.push(optional_resource(versions, versions[0], plural, kind));
    }
    out.push(Resource {
        label: "v1 namespaces".into(),
        path: "/api/v1/namespaces".into(),
        api_version: "v1".into(),
        kind: "Namespace".into(),
        role: Role::Namespaces,
    });
    let mut kinds: Vec<WorkloadKind> = spec.workload_kinds.clone();
    kinds.sort();
    kinds.dedup();
    for kind in kinds {
        out.push(Resource {
            label: format!("{} {}", kind.api_version(), kind.plural()),
            path: kind.collection_path(),
            api_version: kind.api_version().into(),
            kind: kind.kind().into(),
            role: Role::Workloads,
        });
    }
    out
}

/// One version of a collection the cluster may not serve (see [`Role::Optional`]).
fn optional_resource(
    versions: &'static [&'static str],
    api_version: &str,
    plural: &'static str,
    kind: &str,
) -> Resource {
    Resource {
        label: format!("{api_version} {plural}"),
        path: format!("/apis/{api_version}/{plural}"),
        api_version: api_version.into(),
        kind: kind.into(),
        role: Role::Optional { versions, plural },
    }
}

/// Lists an optional collection in the first of its versions the API serves; nothing when it
/// serves none of them (see the module documentation).
async fn list_optional(
    client: &kube::Client,
    resource: &Resource,
    page_size: u32,
    answers: &Answers,
    parsers: Arc<Semaphore>,
) -> Result<Vec<Item>, ReadError> {
    let Role::Optional { versions, plural } = resource.role else {
        return list_all(client, resource, page_size, answers, parsers).await;
    };
    for api_version in versions {
        let version = optional_resource(versions, api_version, plural, &resource.kind);
        match list_all(client, &version, page_size, answers, Arc::clone(&parsers)).await {
            Err(ReadError::Status { status: 404, .. }) => continue,
            other => return other,
        }
    }
    Ok(Vec::new())
}

/// Reads what `spec` selects through an existing client.
pub async fn read_with_client(
    client: &kube::Client,
    spec: &ReadSpec,
) -> Result<ClusterState, ReadError> {
    read_resources(client, spec, resources(spec)).await
}

/// Reads the policy side of what `spec` selects (ConstraintTemplates, Constraints, Namespaces)
/// from the cluster `source` points at, and opens the workloads as pages ([`WorkloadPages`]),
/// read one `limit`-sized list page at a time as the caller asks for them.
pub async fn open_cluster(
    source: &ClusterSource,
    spec: &ReadSpec,
) -> Result<(ClusterState, WorkloadPages), ReadError> {
    let (client, spec) = connect(source, spec).await?;
    let (workloads, policy): (Vec<Resource>, Vec<Resource>) = resources(&spec)
        .into_iter()
        .partition(|r| matches!(r.role, Role::Workloads));
    let state = read_resources(&client, &spec, policy).await?;
    let pages = WorkloadPages {
        client,
        answers: answers(&spec),
        page_size: spec.page_size.max(1),
        resources: workloads.into_iter().rev().collect(),
        token: None,
        seen: HashSet::new(),
    };
    Ok((state, pages))
}

/// The workloads of a cluster, one list page at a time (see [`open_cluster`]): each configured
/// kind in turn, each paged with `limit` and `continue`. Only the keys of the workloads already
/// given are kept (a workload met twice is [`ReadError::State`], as in a whole read).
pub struct WorkloadPages {
    client: kube::Client,
    answers: Answers,
    page_size: u32,
    /// The collections still to list, the current one last.
    resources: Vec<Resource>,
    /// The `continue` token of the current collection's next page.
    token: Option<String>,
    seen: HashSet<(WorkloadKind, String, String)>,
}

impl std::fmt::Debug for WorkloadPages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkloadPages")
            .field("collections_left", &self.resources.len())
            .field("seen", &self.seen.len())
            .finish_non_exhaustive()
    }
}

impl WorkloadPages {
    /// The next non-empty page of workloads, or `None` when every collection is listed.
    pub async fn next_page(&mut self) -> Result<Option<Vec<Workload>>, ReadError> {
        while let Some(resource) = self.resources.last() {
            let (status, body, next) = list_page(
                &self.client,
                resource,
                self.page_size,
                self.token.as_deref(),
                &self.answers,
            )
            .await?;
            let items = parse_page(resource, status, &body)?;
            if next.is_none() {
                self.resources.pop();
            }
            self.token = next;
            let mut page = Vec::with_capacity(items.len());
            for item in items {
                let Item::Workload(workload) = item else {
                    continue;
                };
                let key = (
                    workload.kind,
                    workload.namespace.clone(),
                    workload.name.clone(),
                );
                if !self.seen.insert(key) {
                    let object = format!(
                        "{} {}/{}",
                        workload.kind.kind(),
                        workload.namespace,
                        workload.name
                    );
                    return Err(ReadError::State(ModelError::Duplicate { object }));
                }
                page.push(workload);
            }
            if !page.is_empty() {
                return Ok(Some(page));
            }
        }
        Ok(None)
    }
}

fn answers(spec: &ReadSpec) -> Answers {
    Answers {
        timeout: spec.request_timeout,
        max_body_bytes: spec.max_body_bytes,
        redactor: spec.redactor.clone(),
    }
}

/// Reads `resources` concurrently into a model (see the module documentation for the error
/// precedence).
async fn read_resources(
    client: &kube::Client,
    spec: &ReadSpec,
    resources: Vec<Resource>,
) -> Result<ClusterState, ReadError> {
    if let Some(kind) = spec
        .constraint_kinds
        .iter()
        .find(|k| k.is_empty() || !k.chars().all(|c| c.is_ascii_alphanumeric()))
    {
        return Err(ReadError::InvalidConstraintKind { kind: kind.clone() });
    }
    let parsers = Arc::new(Semaphore::new(
        std::thread::available_parallelism().map_or(2, |n| n.get().max(2)),
    ));
    let mut tasks = Vec::new();
    for resource in resources {
        let client = client.clone();
        let parsers = Arc::clone(&parsers);
        let label = resource.label.clone();
        let page_size = spec.page_size.max(1);
        let answers = answers(spec);
        let handle = tokio::spawn(async move {
            match &resource.role {
                Role::Template { .. } => {
                    get_one(&client, &resource, &answers).await.map(|i| vec![i])
                }
                Role::Optional { .. } => {
                    list_optional(&client, &resource, page_size, &answers, parsers).await
                }
                _ => list_all(&client, &resource, page_size, &answers, parsers).await,
            }
        });
        tasks.push((label, handle));
    }
    let mut state = ClusterState::default();
    let mut first_error = None;
    for (label, handle) in tasks {
        let result = handle.await.map_err(|source| ReadError::Task {
            resource: label,
            source,
        });
        match result.and_then(|r| r) {
            Ok(items) => items.into_iter().for_each(|item| state.push(item)),
            Err(error) => {
                first_error.get_or_insert(error);
            }
        }
    }
    if let Some(error) = first_error {
        return Err(error);
    }
    state.finish().map_err(ReadError::State)?;
    Ok(state)
}

/// How answers are read and turned into text: the timeout, the body cap, the secrets to remove.
struct Answers {
    timeout: Duration,
    max_body_bytes: u64,
    redactor: redaction::Redactor,
}

async fn get_one(
    client: &kube::Client,
    resource: &Resource,
    answers: &Answers,
) -> Result<Item, ReadError> {
    let request = http::Request::get(resource.path.as_str())
        .body(Vec::new())
        .map_err(|_| invalid_path(resource))?;
    let (status, body) = fetch(client, request, &resource.label, answers).await?;
    if !status.is_success() {
        return Err(status_error(resource, status, &body, &answers.redactor));
    }
    let object: Value = parse_json(resource, status, &body)?;
    if !object.is_object() {
        return Err(ReadError::UnexpectedBody {
            resource: resource.label.clone(),
            status: status.as_u16(),
            expected: "a JSON object",
        });
    }
    to_item(resource, object)
}

/// The part of a list page needed before its items are parsed: the continue token.
#[derive(Deserialize)]
struct PageHead {
    #[serde(default)]
    metadata: Option<PageMeta>,
}

#[derive(Deserialize)]
struct PageMeta {
    #[serde(default, rename = "continue")]
    continue_token: Option<String>,
}

/// Lists a collection page by page. Each page's items are parsed on the blocking pool (at most
/// `parsers` pages at once across the whole read) while the next page is fetched.
async fn list_all(
    client: &kube::Client,
    resource: &Resource,
    page_size: u32,
    answers: &Answers,
    parsers: Arc<Semaphore>,
) -> Result<Vec<Item>, ReadError> {
    let mut pending = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let (status, body, next) =
            list_page(client, resource, page_size, token.as_deref(), answers).await?;
        let permit =
            Arc::clone(&parsers)
                .acquire_owned()
                .await
                .map_err(|_| ReadError::UnexpectedBody {
                    resource: resource.label.clone(),
                    status: status.as_u16(),
                    expected: "parsed (the parser pool closed)",
                })?;
        let page_resource = resource.clone();
        pending.push(tokio::task::spawn_blocking(move || {
            let result = parse_page(&page_resource, status, &body);
            drop(permit);
            result
        }));
        match next {
            Some(next) => token = Some(next),
            None => break,
        }
    }
    let mut items = Vec::new();
    for page in pending {
        let page = page.await.map_err(|source| ReadError::Task {
            resource: resource.label.clone(),
            source,
        })??;
        if items.is_empty() {
            items = page;
        } else {
            items.extend(page);
        }
    }
    Ok(items)
}

/// Fetches one list page (after `token`) of `resource`: its status, its body and the `continue`
/// token of the next page (`None` on the last page; a token that does not advance is an error).
async fn list_page(
    client: &kube::Client,
    resource: &Resource,
    page_size: u32,
    token: Option<&str>,
    answers: &Answers,
) -> Result<(StatusCode, bytes::Bytes, Option<String>), ReadError> {
    let mut params = ListParams::default().limit(page_size);
    if let Some(token) = token {
        params = params.continue_token(token);
    }
    let request = kube::core::Request::new(resource.path.as_str())
        .list(&params)
        .map_err(|_| invalid_path(resource))?;
    let (status, body) = fetch(client, request, &resource.label, answers).await?;
    if !status.is_success() {
        return Err(status_error(resource, status, &body, &answers.redactor));
    }
    let head: PageHead =
        serde_json::from_slice(&body).map_err(|e| json_error(resource, status, e))?;
    let next = head
        .metadata
        .and_then(|m| m.continue_token)
        .filter(|t| !t.is_empty());
    if next.is_some() && next.as_deref() == token {
        return Err(ReadError::UnexpectedBody {
            resource: resource.label.clone(),
            status: status.as_u16(),
            expected: "a list page with an advancing continue token",
        });
    }
    Ok((status, body, next))
}

/// Parses one list page's items into the model.
fn parse_page(
    resource: &Resource,
    status: StatusCode,
    body: &[u8],
) -> Result<Vec<Item>, ReadError> {
    let mut page = parse_json(resource, status, body)?;
    let not_a_list = || ReadError::UnexpectedBody {
        resource: resource.label.clone(),
        status: status.as_u16(),
        expected: "a list (an object with an items array)",
    };
    let page_items = match page.get_mut("items").map(Value::take) {
        Some(Value::Array(list)) => list,
        Some(Value::Null) => Vec::new(),
        _ => return Err(not_a_list()),
    };
    drop(page);
    let mut items = Vec::with_capacity(page_items.len());
    for item in page_items {
        if !item.is_object() {
            return Err(not_a_list());
        }
        items.push(to_item(resource, item)?);
    }
    Ok(items)
}

fn to_item(resource: &Resource, object: Value) -> Result<Item, ReadError> {
    let object = normalize(object, &resource.api_version, &resource.kind);
    classify(object).map_err(|source| ReadError::Model {
        resource: resource.label.clone(),
        source,
    })
}

/// Parses a body; a document that ends early is a truncated body, anything else invalid JSON.
fn parse_json(resource: &Resource, status: StatusCode, body: &[u8]) -> Result<Value, ReadError> {
    serde_json::from_slice(body).map_err(|e| json_error(resource, status, e))
}

fn json_error(resource: &Resource, status: StatusCode, source: serde_json::Error) -> ReadError {
    if source.is_eof() {
        ReadError::TruncatedBody {
            resource: resource.label.clone(),
            status: status.as_u16(),
            source: Box::new(source),
        }
    } else {
        ReadError::InvalidBody {
            resource: resource.label.clone(),
            status: status.as_u16(),
            source,
        }
    }
}

/// Sends one request and reads the whole body (up to the cap), all within the timeout.
async fn fetch(
    client: &kube::Client,
    request: http::Request<Vec<u8>>,
    label: &str,
    answers: &Answers,
) -> Result<(StatusCode, bytes::Bytes), ReadError> {
    let exchange = async {
        let response = client
            .send(request.map(Body::from))
            .await
            .map_err(|source| ReadError::Transport {
                resource: label.to_string(),
                source,
            })?;
        let status = response.status();
        let body = read_capped(response.into_body(), answers.max_body_bytes)
            .await
            .map_err(|failure| match failure {
                BodyFailure::TooLarge => ReadError::BodyTooLarge {
                    resource: label.to_string(),
                    status: status.as_u16(),
                    cap: answers.max_body_bytes,
                },
                BodyFailure::Broken(source) => ReadError::TruncatedBody {
                    resource: label.to_string(),
                    status: status.as_u16(),
                    source,
                },
            })?;
        Ok((status, body))
    };
    match tokio::time::timeout(answers.timeout, exchange).await {
        Ok(result) => result,
        Err(_) => Err(ReadError::Timeout {
            resource: label.to_string(),
            timeout: answers.timeout,
        }),
    }
}

/// Why a body could not be read whole.
#[derive(Debug)]
enum BodyFailure {
    /// It is longer than the cap (announced or actually).
    TooLarge,
    /// The stream broke off.
    Broken(Box<dyn std::error::Error + Send + Sync>),
}

/// Reads a body of at most `cap` bytes: one announcing a longer length fails at once, an
/// endless one after `cap` bytes.
async fn read_capped<B>(body: B, cap: u64) -> Result<bytes::Bytes, BodyFailure>
where
    B: hyper::body::Body<Data = bytes::Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let limit = usize::try_from(cap).unwrap_or(usize::MAX);
    match Limited::new(body, limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(error) if error.is::<LengthLimitError>() => Err(BodyFailure::TooLarge),
        Err(error) => Err(BodyFailure::Broken(error)),
    }
}

fn status_error(
    resource: &Resource,
    status: StatusCode,
    body: &[u8],
    redactor: &redaction::Redactor,
) -> ReadError {
    let label = resource.label.clone();
    if status == StatusCode::GONE && !matches!(resource.role, Role::Template { .. }) {
        return ReadError::ListExpired { resource: label };
    }
    if status == StatusCode::NOT_FOUND {
        match &resource.role {
            Role::Constraints { kind } => {
                return ReadError::ConstraintKindNotServed {
                    kind: kind.clone(),
                    resource: label,
                };
            }
            Role::Template { kind, name } => {
                return ReadError::TemplateNotFound {
                    kind: kind.clone(),
                    name: name.clone(),
                    resource: label,
                };
            }
            Role::Optional { .. } | Role::Namespaces | Role::Workloads => {}
        }
    }
    ReadError::Status {
        resource: label,
        status: status.as_u16(),
        message: status_message(status, body, redactor),
    }
}

/// How many characters of an answer's message an error keeps.
const MESSAGE_CHARS: usize = 300;
/// How much of a non-`Status` body is looked at for the message (redaction needs the text
/// around the cut, so a little more than is kept).
const MESSAGE_SOURCE_BYTES: usize = 64 * 1024;

/// The reason phrase plus the API `Status.message` (or the start of a non-Status body): redacted,
/// then on one line and at most 300 characters.
fn status_message(status: StatusCode, body: &[u8], redactor: &redaction::Redactor) -> String {
    let reason = status.canonical_reason().unwrap_or("");
    let detail = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v.get("message").and_then(Value::as_str).map(str::to_string))
        .unwrap_or_else(|| {
            String::from_utf8_lossy(&body[..body.len().min(MESSAGE_SOURCE_BYTES)]).into_owned()
        });
    let detail = redactor.redact(&detail);
    let mut chars = detail.chars().map(|c| if c.is_control() { ' ' } else { c });
    let mut detail: String = chars.by_ref().take(MESSAGE_CHARS).collect();
    if chars.next().is_some() {
        detail.push('…');
    }
    let detail = detail.trim();
    match (reason.is_empty(), detail.is_empty()) {
        (_, true) => reason.to_string(),
        (true, false) => detail.to_string(),
        (false, false) => format!("{reason}: {detail}"),
    }
}

/// A resource path that cannot form a request (never for the fixed paths this crate builds).
fn invalid_path(resource: &Resource) -> ReadError {
    ReadError::UnexpectedBody {
        resource: resource.label.clone(),
        status: 0,
        expected: "a valid request path",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_message_prefers_the_api_message() {
        let body = br#"{"kind":"Status","message":"deployments.apps is forbidden"}"#;
        let none = redaction::Redactor::new();
        assert_eq!(
            status_message(StatusCode::FORBIDDEN, body, &none),
            "Forbidden: deployments.apps is forbidden"
        );
        assert_eq!(
            status_message(StatusCode::BAD_GATEWAY, b"<html>\nbad\n</html>", &none),
            "Bad Gateway: <html> bad </html>"
        );
        assert_eq!(
            status_message(StatusCode::INTERNAL_SERVER_ERROR, b"", &none),
            "Internal Server Error"
        );
    }

    /// A body that never ends and announces no length.
    struct Endless;

    impl hyper::body::Body for Endless {
        type Data = bytes::Bytes;
        type Error = std::convert::Infallible;

        fn poll_frame(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Result<hyper::body::Frame<bytes::Bytes>, Self::Error>>>
        {
            let chunk = bytes::Bytes::from_static(&[b' '; 4096]);
            std::task::Poll::Ready(Some(Ok(hyper::body::Frame::data(chunk))))
        }
    }

    #[tokio::test]
    async fn an_endless_body_stops_at_the_cap() {
        let failure = read_capped(Endless, 1 << 20).await.unwrap_err();
        assert!(matches!(failure, BodyFailure::TooLarge), "{failure:?}");
        let full = http_body_util::Full::new(bytes::Bytes::from_static(b"{}"));
        assert_eq!(read_capped(full, 2).await.unwrap(), "{}");
    }

    #[test]
    fn a_message_is_redacted_before_it_is_cut() {
        let mut redactor = redaction::Redactor::new();
        redactor.add_secret("tok-0123456789-abcdef");
        let padding = "x".repeat(290);
        let body = format!("{padding} Bearer tok-0123456789-abcdef");
        let message = status_message(StatusCode::UNAUTHORIZED, body.as_bytes(), &redactor);
        assert!(!message.contains("tok-01"), "{message}");
        assert!(message.ends_with('…'), "{message}");
    }

    fn resource() -> Resource {
        let spec = ReadSpec::for_constraint_kinds(["K8sRequiredLabels"]);
        resources(&spec).remove(0)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 512, ..Default::default() })]

        #[test]
        fn classifying_any_answer_never_panics(
            status in 100u16..1000,
            body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..2000),
            json in "[\\[\\]{}:,\"a-z0-9 ]{0,300}",
        ) {
            let status = StatusCode::from_u16(status).unwrap();
            let mut redactor = redaction::Redactor::new();
            redactor.add_secret("fake-sa-token-0123456789");
            for body in [body.as_slice(), json.as_bytes()] {
                let message = status_message(status, body, &redactor);
                proptest::prop_assert!(message.chars().count() <= MESSAGE_CHARS + 40);
                let _ = status_error(&resource(), status, body, &redactor).to_string();
                let _ = parse_page(&resource(), status, body);
            }
        }
    }

    #[test]
    fn resources_follow_the_spec() {
        let mut spec = ReadSpec::for_constraint_kinds(["K8sRequiredLabels"]);
        spec.workload_kinds = vec![WorkloadKind::CronJob, WorkloadKind::Deployment];
        let paths: Vec<String> = resources(&spec).into_iter().map(|r| r.path).collect();
        assert_eq!(
            paths,
            [
                "/apis/constraints.gatekeeper.sh/v1beta1/k8srequiredlabels",
                "/apis/templates.gatekeeper.sh/v1/constrainttemplates/k8srequiredlabels",
                "/apis/expansion.gatekeeper.sh/v1beta1/expansiontemplate",
                "/apis/mutations.gatekeeper.sh/v1/assign",
                "/apis/mutations.gatekeeper.sh/v1/assignmetadata",
                "/apis/mutations.gatekeeper.sh/v1/modifyset",
                "/apis/mutations.gatekeeper.sh/v1alpha1/assignimage",
                "/api/v1/namespaces",
                "/apis/apps/v1/deployments",
                "/apis/batch/v1/cronjobs",
            ]
        );
    }
}
