//! A real Kubernetes API server for tests: etcd and kube-apiserver from the tools tarball, on
//! free loopback ports, with RBAC, static token users, ServiceAccount tokens, Gatekeeper's CRDs
//! and one CRD per constraint kind.
//!
//! ```text
//! let Some(tools) = require(Tool::Kube, "real_reads_every_page") else { return };
//! let kube = RealKube::start(&tools);
//! kube.load(&read_objects("fixtures/demo/cluster"));     // CRDs for constraint kinds included
//! let kubeconfig = kube.write_kubeconfig(dir.path(), kube.admin_token());
//! ```
//!
//! No controllers run: objects are stored and served as a cluster's API serves them (defaults,
//! lists with `limit`/`continue`, RBAC, 403/404/410), but nothing reconciles them. etcd is never
//! compacted unless a test asks ([`RealKube::compact_etcd`]).

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use http::{Method, Request};
use http_body_util::BodyExt;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::GroupVersionKind;
use kube::discovery::{ApiCapabilities, ApiResource, Scope, pinned_kind};
use serde_json::{Value, json};

use super::background::Background;
use super::http::send;
use super::process::{NotReady, ServerProcess, free_port, start_with_retries};
use super::tools::Extracted;

/// The static user with no rights (until a test binds a role to it).
pub const READER_USER: &str = "reader";

/// The group of Gatekeeper's constraint kinds.
pub const CONSTRAINTS_GROUP: &str = "constraints.gatekeeper.sh";

const READY_WITHIN: Duration = Duration::from_secs(60);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);
const FIELD_MANAGER: &str = "test-support";

/// How to start the API server.
#[derive(Debug, Clone, Default)]
pub struct KubeOptions {
    /// `--feature-gates` entries, e.g. `ListFromCacheSnapshot=false`.
    pub feature_gates: Vec<String>,
    /// `--authorization-mode` (default `RBAC`); the node uses `Node,RBAC`.
    pub authorization_mode: Option<String>,
    /// More `tokens.csv` lines (`token,user,uid,"group"`): the node's components.
    pub extra_tokens: Vec<String>,
    /// More API server flags.
    pub extra_args: Vec<String>,
}

/// A running etcd + kube-apiserver; dropping it stops both.
pub struct RealKube {
    admin: kube::Client,
    port: u16,
    etcd_url: String,
    admin_token: String,
    reader_token: String,
    crds: PathBuf,
    kinds: Mutex<HashMap<String, (ApiResource, ApiCapabilities)>>,
    background: Background,
    apiserver: ServerProcess,
    etcd: ServerProcess,
    dir: tempfile::TempDir,
}

impl std::fmt::Debug for RealKube {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RealKube")
            .field("url", &self.url())
            .field("dir", &self.dir.path())
            .finish_non_exhaustive()
    }
}

/// One access question for [`RealKube::wait_for_access`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    /// The verb, e.g. `list`.
    pub verb: String,
    /// The API group (`""` for the core group).
    pub group: String,
    /// The resource, e.g. `statefulsets`.
    pub resource: String,
    /// The object name (`get` by `resourceNames`), if any.
    pub name: Option<String>,
}

impl Access {
    /// `verb` on `resource` of `group`.
    pub fn new(verb: &str, group: &str, resource: &str) -> Access {
        Access {
            verb: verb.into(),
            group: group.into(),
            resource: resource.into(),
            name: None,
        }
    }

    /// The same, for one named object.
    pub fn named(mut self, name: &str) -> Access {
        self.name = Some(name.into());
        self
    }
}

impl RealKube {
    /// Starts etcd and the API server with default options and installs Gatekeeper's CRDs.
    pub fn start(tools: &Extracted) -> RealKube {
        Self::start_with(tools, KubeOptions::default())
    }

    /// Starts etcd and the API server with `options` and installs Gatekeeper's CRDs. Panics with
    /// the servers' log tails when they do not come up.
    pub fn start_with(tools: &Extracted, options: KubeOptions) -> RealKube {
        crate::real::install_crypto_provider();
        let kube = start_with_retries("kube-apiserver + etcd", || attempt(tools, &options));
        for file in crd_files(&kube.crds) {
            for crd in crate::real::fixtures::read_objects(&file) {
                kube.install_crd(&crd);
            }
        }
        kube
    }

    /// The server URL, `https://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("https://127.0.0.1:{}", self.port)
    }

    /// The CA bundle that verifies the server's certificate.
    pub fn ca_path(&self) -> PathBuf {
        self.dir.path().join("certs/apiserver.crt")
    }

    /// The token of `admin` (group `system:masters`).
    pub fn admin_token(&self) -> &str {
        &self.admin_token
    }

    /// The token of [`READER_USER`], who has no rights until a test binds some.
    pub fn reader_token(&self) -> &str {
        &self.reader_token
    }

    /// Runs a future on this handle's runtime.
    pub fn block<F>(&self, future: F) -> F::Output
    where
        F: std::future::Future + Send,
        F::Output: Send,
    {
        self.background.block(future)
    }

    /// Writes `ca.crt` and `kubeconfig` (context `real`, user with `token`) into `dir`.
    pub fn write_kubeconfig(&self, dir: &Path, token: &str) -> PathBuf {
        let ca = dir.join("ca.crt");
        copy(&self.ca_path(), &ca);
        let text = kubeconfig_text(&self.url(), &ca, token);
        let path = dir.join("kubeconfig");
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
        path
    }

    /// Writes a kubeconfig (server, CA, `token`) to `path`.
    pub fn write_kubeconfig_at(&self, path: &Path, token: &str) {
        std::fs::write(path, kubeconfig_text(&self.url(), &self.ca_path(), token))
            .unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    }

    /// The API server's port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The private key that signs ServiceAccount tokens (PEM), for a controller-manager.
    pub fn service_account_key_path(&self) -> PathBuf {
        self.dir.path().join("sa.key")
    }

    /// The API server's log so far, with `what` (for a failure message).
    pub fn failure(&self, what: &str) -> String {
        self.apiserver.failure(what)
    }

    /// Writes a ServiceAccount mount (`token`, `ca.crt`) into `dir`, as a Pod sees it under
    /// `/var/run/secrets/kubernetes.io/serviceaccount/`. Returns `(token path, CA path)`.
    pub fn write_service_account_mount(&self, dir: &Path, token: &str) -> (PathBuf, PathBuf) {
        let token_path = dir.join("token");
        let ca = dir.join("ca.crt");
        std::fs::write(&token_path, token).expect("write token");
        copy(&self.ca_path(), &ca);
        (token_path, ca)
    }

    /// A token for the ServiceAccount `namespace/name` (TokenRequest API, one hour).
    pub fn service_account_token(&self, namespace: &str, name: &str) -> String {
        let path = format!("/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token");
        let body = json!({
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": 3600}
        });
        let answer = self.expect_ok(Method::POST, &path, Some(body));
        answer["status"]["token"]
            .as_str()
            .unwrap_or_else(|| {
                panic!("TokenRequest for {namespace}/{name} gave no token: {answer}")
            })
            .to_string()
    }

    /// Creates or updates `object` (server-side apply, forced) and writes its `status` through
    /// the status subresource when it has one. Returns the stored object.
    pub fn apply(&self, object: &Value) -> Value {
        let (mut body, status) = without_server_fields(object);
        let (resource, caps) = self.resource_of(&body);
        let name = text(&body, "/metadata/name");
        let api = self.api(&resource, &caps, &body);
        if caps.scope == Scope::Cluster
            && let Some(meta) = body["metadata"].as_object_mut()
        {
            meta.remove("namespace");
        }
        let dynamic: DynamicObject = serde_json::from_value(body.clone())
            .unwrap_or_else(|e| panic!("{} is not an object: {e}", describe(&body)));
        let params = PatchParams::apply(FIELD_MANAGER).force();
        let stored = self
            .block(api.patch(&name, &params, &Patch::Apply(&dynamic)))
            .unwrap_or_else(|e| {
                panic!(
                    "{}",
                    self.apiserver
                        .failure(&format!("apply {}: {e}", describe(&body)))
                )
            });
        let has_status = caps.subresources.iter().any(|(r, _)| r.plural == "status");
        match status {
            Some(status) if has_status => self.write_status(&body, status),
            _ => serde_json::to_value(stored).expect("stored object as JSON"),
        }
    }

    /// Replaces the `status` of the stored `object` through its status subresource.
    pub fn write_status(&self, object: &Value, status: Value) -> Value {
        let (body, _) = without_server_fields(object);
        let (resource, caps) = self.resource_of(&body);
        let api = self.api(&resource, &caps, &body);
        let name = text(&body, "/metadata/name");
        let patch = Patch::Merge(json!({"status": status}));
        let stored = self
            .block(api.patch_status(&name, &PatchParams::default(), &patch))
            .unwrap_or_else(|e| panic!("status of {}: {e}", describe(&body)));
        serde_json::to_value(stored).expect("stored object as JSON")
    }

    /// Deletes `object` (by kind, namespace and name); a missing object is fine.
    pub fn delete(&self, object: &Value) {
        let (body, _) = without_server_fields(object);
        let (resource, caps) = self.resource_of(&body);
        let api = self.api(&resource, &caps, &body);
        let name = text(&body, "/metadata/name");
        match self.block(api.delete(&name, &Default::default())) {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(e) => panic!("delete {}: {e}", describe(&body)),
        }
    }

    /// Loads a fixture cluster: namespaces first, then a CRD per constraint kind, templates,
    /// constraints and everything else. Server-managed fields are dropped (the server sets its
    /// own); an `auditTimestamp` keeps its distance from `creationTimestamp`, so an audit that
    /// was fresh (or stale) in the fixture stays fresh (or stale) on the server.
    pub fn load(&self, objects: &[Value]) {
        let mut ordered: Vec<&Value> = objects.iter().collect();
        ordered.sort_by_key(|o| load_rank(o));
        let mut kinds: Vec<String> = objects
            .iter()
            .filter(|o| is_constraint(o))
            .map(|o| text(o, "/kind"))
            .collect();
        kinds.sort();
        kinds.dedup();
        for kind in &kinds {
            self.install_constraint_crd(kind);
        }
        for object in ordered {
            let stored = self.apply(object);
            if let Some(status) = shifted_audit_status(object, &stored) {
                self.write_status(object, status);
            }
        }
    }

    /// Installs (or updates) a CRD and waits until its resource is served.
    pub fn install_crd(&self, crd: &Value) {
        self.apply(crd);
        let name = text(crd, "/metadata/name");
        let group = text(crd, "/spec/group");
        let plural = text(crd, "/spec/names/plural");
        let version = crd["spec"]["versions"]
            .as_array()
            .and_then(|v| v.iter().find(|v| v["storage"] == json!(true)))
            .map(|v| text(v, "/name"))
            .unwrap_or_else(|| panic!("CRD {name} has no storage version"));
        let path = format!("/apis/{group}/{version}/{plural}?limit=1");
        let deadline = Instant::now() + READY_WITHIN;
        loop {
            let crd_now = self.get(&format!(
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}"
            ));
            let established = crd_now["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "Established" && c["status"] == "True");
            if established && self.raw(Method::GET, &path, None).0 == 200 {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{}",
                self.apiserver.failure(&format!(
                    "CRD {name} was not served within {READY_WITHIN:?}"
                ))
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Installs the CRD Gatekeeper generates for a constraint kind: cluster-scoped in
    /// `constraints.gatekeeper.sh`, plural = lower-case kind, versions v1beta1 (storage),
    /// v1alpha1 and v1, a status subresource, any content.
    pub fn install_constraint_crd(&self, kind: &str) {
        let plural = kind.to_ascii_lowercase();
        let version = |name: &str, storage: bool| {
            json!({
                "name": name, "served": true, "storage": storage,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {
                    "type": "object", "x-kubernetes-preserve-unknown-fields": true
                }}
            })
        };
        self.install_crd(&json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("{plural}.{CONSTRAINTS_GROUP}")},
            "spec": {
                "group": CONSTRAINTS_GROUP,
                "scope": "Cluster",
                "names": {
                    "kind": kind, "listKind": format!("{kind}List"), "plural": plural,
                    "singular": plural, "categories": ["constraint", "constraints"]
                },
                "versions": [
                    version("v1beta1", true), version("v1alpha1", false), version("v1", false)
                ]
            }
        }));
    }

    /// GET `path` as admin; panics unless 200.
    pub fn get(&self, path: &str) -> Value {
        self.expect_ok(Method::GET, path, None)
    }

    /// Sends one request as admin and returns the status and the body (JSON, or the text as a
    /// JSON string when it is not JSON).
    pub fn raw(&self, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let bytes = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
        let request = Request::builder()
            .method(method.clone())
            .uri(path)
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(kube::client::Body::from(bytes))
            .unwrap_or_else(|e| panic!("invalid request {method} {path}: {e}"));
        let admin = self.admin.clone();
        let exchange = async move {
            let response = admin.send(request).await.map_err(|e| e.to_string())?;
            let status = response.status().as_u16();
            let body = response
                .into_body()
                .collect()
                .await
                .map_err(|e| e.to_string())?
                .to_bytes();
            Ok::<_, String>((status, body))
        };
        let (status, body) = self
            .block(async { tokio::time::timeout(REQUEST_TIMEOUT, exchange).await })
            .unwrap_or_else(|_| panic!("{method} {path}: no answer within {REQUEST_TIMEOUT:?}"))
            .unwrap_or_else(|e| {
                panic!(
                    "{}",
                    self.apiserver.failure(&format!("{method} {path}: {e}"))
                )
            });
        let value = serde_json::from_slice(&body)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()));
        (status, value)
    }

    fn expect_ok(&self, method: Method, path: &str, body: Option<Value>) -> Value {
        let (status, answer) = self.raw(method.clone(), path, body);
        assert!(
            (200..300).contains(&status),
            "{method} {path}: HTTP {status}: {answer}"
        );
        answer
    }

    /// Whether `user` (with `groups`) may do `access`, per a SubjectAccessReview.
    pub fn allowed(&self, user: &str, groups: &[String], access: &Access) -> bool {
        let mut attributes = json!({
            "verb": access.verb, "group": access.group, "resource": access.resource
        });
        if let Some(name) = &access.name {
            attributes["name"] = json!(name);
        }
        let review = self.expect_ok(
            Method::POST,
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            Some(json!({
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SubjectAccessReview",
                "spec": {"user": user, "groups": groups, "resourceAttributes": attributes}
            })),
        );
        review["status"]["allowed"] == json!(true)
    }

    /// Waits until the authorizer answers every `(access, allowed)` as given (RBAC changes reach
    /// the authorizer through a watch, a moment after the write). Panics after 30 s.
    pub fn wait_for_access(&self, user: &str, groups: &[String], expected: &[(Access, bool)]) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let wrong: Vec<String> = expected
                .iter()
                .filter(|(access, allowed)| self.allowed(user, groups, access) != *allowed)
                .map(|(access, allowed)| format!("{access:?} should be allowed={allowed}"))
                .collect();
            if wrong.is_empty() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the authorizer did not settle for {user}: {}",
                wrong.join("; ")
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Advances etcd's revision by one write of its own and compacts everything before it, so
    /// every `continue` token issued so far refers to a compacted revision.
    pub fn compact_etcd(&self) {
        let url = self.etcd_url.clone();
        let compacted = self.block(async move {
            let put = json!({
                "key": base64_of("/test-support/compaction-marker"),
                "value": base64_of("x")
            });
            let answer = post_json(&format!("{url}/v3/kv/put"), &put).await?;
            let revision = answer["header"]["revision"]
                .as_str()
                .ok_or_else(|| format!("etcd put gave no revision: {answer}"))?
                .to_string();
            let compact = json!({"revision": revision, "physical": true});
            post_json(&format!("{url}/v3/kv/compaction"), &compact).await
        });
        if let Err(e) = compacted {
            panic!("{}", self.etcd.failure(&e));
        }
    }

    fn resource_of(&self, object: &Value) -> (ApiResource, ApiCapabilities) {
        let api_version = text(object, "/apiVersion");
        let kind = text(object, "/kind");
        let key = format!("{api_version}/{kind}");
        if let Some(found) = self.kinds.lock().expect("kinds").get(&key) {
            return found.clone();
        }
        let (group, version) = api_version
            .rsplit_once('/')
            .unwrap_or(("", api_version.as_str()));
        let gvk = GroupVersionKind::gvk(group, version, &kind);
        let found = self
            .block(pinned_kind(&self.admin, &gvk))
            .unwrap_or_else(|e| panic!("the server does not serve {key}: {e}"));
        self.kinds.lock().expect("kinds").insert(key, found.clone());
        found
    }

    fn api(
        &self,
        resource: &ApiResource,
        caps: &ApiCapabilities,
        object: &Value,
    ) -> Api<DynamicObject> {
        match caps.scope {
            Scope::Cluster => Api::all_with(self.admin.clone(), resource),
            Scope::Namespaced => {
                let namespace = object["metadata"]["namespace"]
                    .as_str()
                    .unwrap_or("default");
                Api::namespaced_with(self.admin.clone(), namespace, resource)
            }
        }
    }
}

/// One start: ports, etcd, the API server and the admin client.
fn attempt(tools: &Extracted, options: &KubeOptions) -> Result<RealKube, NotReady> {
    let dir = tempfile::Builder::new()
        .prefix("real-kube-")
        .tempdir()
        .expect("tempdir");
    let background = Background::new();
    let (etcd_port, peer_port, port) = (free_port(), free_port(), free_port());
    let etcd_url = format!("http://127.0.0.1:{etcd_port}");
    let mut etcd = ServerProcess::spawn(
        "etcd",
        &tools.bin("etcd"),
        &[
            dir.path().join("etcd-data").into_os_string(),
            etcd_port.to_string().into(),
            peer_port.to_string().into(),
        ],
        dir.path(),
    );
    let health = format!("{etcd_url}/health");
    etcd.wait_ready(READY_WITHIN, || {
        let answer = background.block(send(
            Method::GET,
            &health,
            &[],
            None,
            Duration::from_secs(2),
        ))?;
        if answer.text().contains("\"health\":\"true\"") {
            Ok(())
        } else {
            Err(format!("/health answered {}", answer.text()))
        }
    })?;

    let admin_token = random_token("admin");
    let reader_token = random_token(READER_USER);
    write_credentials(
        dir.path(),
        &admin_token,
        &reader_token,
        &options.extra_tokens,
    );
    let mut args: Vec<OsString> = [
        format!("--etcd-servers={etcd_url}"),
        "--bind-address=127.0.0.1".into(),
        "--advertise-address=127.0.0.1".into(),
        format!("--secure-port={port}"),
        format!("--cert-dir={}", dir.path().join("certs").display()),
        "--service-account-issuer=https://kubernetes.default.svc".into(),
        "--service-account-key-file=sa.pub".into(),
        "--service-account-signing-key-file=sa.key".into(),
        "--token-auth-file=tokens.csv".into(),
        format!(
            "--authorization-mode={}",
            options.authorization_mode.as_deref().unwrap_or("RBAC")
        ),
        "--service-cluster-ip-range=10.96.0.0/24".into(),
        "--enable-priority-and-fairness=false".into(),
        // Compaction only when a test asks for it, so a list never expires by chance.
        "--etcd-compaction-interval=0".into(),
    ]
    .into_iter()
    .map(OsString::from)
    .collect();
    args.extend(options.extra_args.iter().map(OsString::from));
    if !options.feature_gates.is_empty() {
        args.push(format!("--feature-gates={}", options.feature_gates.join(",")).into());
    }
    let mut apiserver = ServerProcess::spawn(
        "kube-apiserver",
        &tools.bin("kube-apiserver"),
        &args,
        dir.path(),
    );
    let url = format!("https://127.0.0.1:{port}");
    let ca = dir.path().join("certs/apiserver.crt");
    let admin_config = dir.path().join("admin.kubeconfig");
    let mut admin: Option<kube::Client> = None;
    apiserver.wait_ready(READY_WITHIN, || {
        if admin.is_none() {
            if !ca.is_file() {
                return Err("no serving certificate yet".into());
            }
            std::fs::write(&admin_config, kubeconfig_text(&url, &ca, &admin_token))
                .map_err(|e| e.to_string())?;
            admin = Some(background.block(admin_client(&admin_config))?);
        }
        let client = admin.clone().expect("admin client");
        let answer = background.block(async move {
            let request = Request::get("/readyz").body(Vec::new()).expect("request");
            tokio::time::timeout(Duration::from_secs(2), client.request_text(request)).await
        });
        match answer {
            Ok(Ok(text)) if text.trim() == "ok" => Ok(()),
            Ok(Ok(text)) => Err(format!("/readyz answered {text:?}")),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err("/readyz did not answer within 2s".into()),
        }
    })?;
    Ok(RealKube {
        admin: admin.expect("admin client once ready"),
        port,
        etcd_url,
        admin_token,
        reader_token,
        crds: tools.located.folder.join("crds"),
        kinds: Mutex::new(HashMap::new()),
        background,
        apiserver,
        etcd,
        dir,
    })
}

async fn admin_client(path: &Path) -> Result<kube::Client, String> {
    let file = kube::config::Kubeconfig::read_from(path).map_err(|e| e.to_string())?;
    let config = kube::Config::from_custom_kubeconfig(file, &Default::default())
        .await
        .map_err(|e| e.to_string())?;
    kube::Client::try_from(config).map_err(|e| e.to_string())
}

/// `sa.key`/`sa.pub` (an ECDSA P-256 pair for ServiceAccount tokens) and `tokens.csv`.
fn write_credentials(dir: &Path, admin_token: &str, reader_token: &str, extra: &[String]) {
    let key = rcgen::KeyPair::generate().expect("generate the service-account key");
    std::fs::write(dir.join("sa.key"), key.serialize_pem()).expect("write sa.key");
    std::fs::write(dir.join("sa.pub"), key.public_key_pem()).expect("write sa.pub");
    let mut tokens = format!(
        "{admin_token},admin,admin,\"system:masters\"\n{reader_token},{READER_USER},{READER_USER},\n"
    );
    for line in extra {
        tokens.push_str(line);
        tokens.push('\n');
    }
    std::fs::write(dir.join("tokens.csv"), tokens).expect("write tokens.csv");
}

fn kubeconfig_text(url: &str, ca: &Path, token: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n\
         - name: real\n  cluster:\n    server: {url}\n    certificate-authority: {ca}\n\
         users:\n- name: real\n  user:\n    token: {token}\n\
         contexts:\n- name: real\n  context:\n    cluster: real\n    user: real\n\
         current-context: real\n",
        ca = ca.display()
    )
}

/// A token unique to this process and moment (the servers live on loopback for one test).
pub(crate) fn random_token(user: &str) -> String {
    use sha2::{Digest, Sha256};
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let count = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let seed = format!("{user}-{}-{nanos}-{count}", std::process::id());
    hex::encode(Sha256::digest(seed.as_bytes()))[..32].to_string()
}

/// POSTs JSON to etcd's gateway; the answer's JSON, or why not.
async fn post_json(url: &str, body: &Value) -> Result<Value, String> {
    let answer = send(
        Method::POST,
        url,
        &[("content-type", "application/json")],
        Some(body.to_string().into_bytes()),
        REQUEST_TIMEOUT,
    )
    .await?;
    if !answer.status.is_success() {
        return Err(format!("{url}: HTTP {}: {}", answer.status, answer.text()));
    }
    answer.json()
}

fn base64_of(text: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(text)
}

fn crd_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("Gatekeeper CRDs: {} is not readable: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    files.sort();
    files
}

fn copy(from: &Path, to: &Path) {
    std::fs::copy(from, to)
        .unwrap_or_else(|e| panic!("copy {} to {}: {e}", from.display(), to.display()));
}

/// `object` without what the server sets (uid, resourceVersion, timestamps, managedFields…), and
/// its `status` apart (written through the status subresource).
fn without_server_fields(object: &Value) -> (Value, Option<Value>) {
    let mut body = object.clone();
    let status = body.as_object_mut().and_then(|o| o.remove("status"));
    if let Some(meta) = body.get_mut("metadata").and_then(Value::as_object_mut) {
        for key in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "managedFields",
            "generation",
            "selfLink",
            "deletionTimestamp",
        ] {
            meta.remove(key);
        }
    }
    (body, status.filter(|s| !s.is_null()))
}

fn load_rank(object: &Value) -> u8 {
    match text(object, "/kind").as_str() {
        "Namespace" => 0,
        "CustomResourceDefinition" => 1,
        "ConstraintTemplate" => 2,
        _ if is_constraint(object) => 3,
        _ => 4,
    }
}

fn is_constraint(object: &Value) -> bool {
    text(object, "/apiVersion").starts_with(&format!("{CONSTRAINTS_GROUP}/"))
}

/// The fixture's `status` with `auditTimestamp` moved by the difference between the stored and
/// the fixture's `creationTimestamp`; `None` when either timestamp is absent.
fn shifted_audit_status(fixture: &Value, stored: &Value) -> Option<Value> {
    let parse = |value: &Value, pointer: &str| {
        value
            .pointer(pointer)
            .and_then(Value::as_str)
            .and_then(|t| t.parse::<jiff::Timestamp>().ok())
    };
    let created = parse(fixture, "/metadata/creationTimestamp")?;
    let audit = parse(fixture, "/status/auditTimestamp")?;
    let stored_created = parse(stored, "/metadata/creationTimestamp")?;
    let offset = audit.duration_since(created);
    let shifted = stored_created.checked_add(offset).ok()?;
    let mut status = fixture["status"].clone();
    status["auditTimestamp"] = json!(shifted.strftime("%Y-%m-%dT%H:%M:%SZ").to_string());
    Some(status)
}

fn text(value: &Value, pointer: &str) -> String {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn describe(object: &Value) -> String {
    let namespace = text(object, "/metadata/namespace");
    let name = text(object, "/metadata/name");
    let kind = text(object, "/kind");
    if namespace.is_empty() {
        format!("{kind} {name}")
    } else {
        format!("{kind} {namespace}/{name}")
    }
}
