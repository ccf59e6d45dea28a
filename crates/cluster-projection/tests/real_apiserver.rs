//! Reading a real kube-apiserver (`test-support::real`): the `fixtures/cluster/basic` scenario
//! grown to more objects than one page holds for every collection, so `continue` is exercised for
//! real; templates by `get`; a constraint kind without a CRD; an expired `continue` after etcd
//! compaction; a saved snapshot of the live read; in-cluster access with a ServiceAccount token.
//! Faults a real server will not produce on demand stay with the fake (`cluster_read.rs`).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use cluster_projection::{
    ClusterSource, ClusterState, InClusterConfig, ReadError, ReadSpec, WorkloadKind, read_cluster,
    read_snapshot, read_with_client, save_snapshot,
};
use serde_json::{Value, json};
use test_support::real::{KubeOptions, RealKube, Tool, read_objects, require};

const KINDS: [&str; 2] = ["K8sRequiredLabels", "K8sContainerLimits"];
/// Every collection is loaded with more objects than this, so each read takes several pages.
const PAGE: u32 = 2;

fn basic_objects() -> Vec<Value> {
    read_objects(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/cluster/basic"))
}

/// The basic scenario plus copies, so that every listed collection holds more than `PAGE`
/// objects: three more of each workload kind, namespace and constraint kind.
fn grown_objects() -> Vec<Value> {
    let mut objects = basic_objects();
    let mut extra = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for object in &objects {
        let kind = object["kind"].as_str().unwrap_or_default().to_string();
        if kind == "ConstraintTemplate" || !seen.insert(kind) {
            continue;
        }
        for i in 0..3 {
            let mut copy = object.clone();
            let name = format!("{}-copy{i}", copy["metadata"]["name"].as_str().unwrap());
            copy["metadata"]["name"] = json!(name);
            extra.push(copy);
        }
    }
    objects.extend(extra);
    objects
}

fn spec() -> ReadSpec {
    ReadSpec {
        page_size: PAGE,
        request_timeout: Duration::from_secs(10),
        workload_kinds: WorkloadKind::ALL.to_vec(),
        ..ReadSpec::for_constraint_kinds(KINDS)
    }
}

fn start(test: &str, options: KubeOptions) -> Option<RealKube> {
    let tools = require(Tool::Kube, test)?;
    Some(RealKube::start_with(&tools, options))
}

/// A server holding `grown_objects()`, read by admin with `spec()`.
async fn grown_and_read(test: &str) -> Option<(RealKube, tempfile::TempDir, ClusterState)> {
    let kube = start(test, KubeOptions::default())?;
    kube.load(&grown_objects());
    let dir = tempfile::tempdir().unwrap();
    let state = read_cluster(&admin_source(&kube, &dir), &spec())
        .await
        .expect("read");
    Some((kube, dir, state))
}

fn admin_source(kube: &RealKube, dir: &tempfile::TempDir) -> ClusterSource {
    ClusterSource::Kubeconfig {
        path: Some(kube.write_kubeconfig(dir.path(), kube.admin_token())),
        context: None,
    }
}

/// `namespace/name` of every item of an unpaginated admin list.
fn listed(kube: &RealKube, path: &str) -> Vec<String> {
    let list = kube.get(path);
    let mut names: Vec<String> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| {
            let meta = &item["metadata"];
            match meta["namespace"].as_str() {
                Some(ns) => format!("{ns}/{}", meta["name"].as_str().unwrap()),
                None => meta["name"].as_str().unwrap().to_string(),
            }
        })
        .collect();
    names.sort();
    names
}

fn read_names(state: &ClusterState, path: &str) -> Vec<String> {
    let mut names: Vec<String> = match path {
        "/api/v1/namespaces" => state.namespaces.iter().map(|n| n.name.clone()).collect(),
        _ if path.contains("constraints.gatekeeper.sh") => state
            .constraints
            .iter()
            .filter(|c| path.ends_with(&c.kind.to_ascii_lowercase()))
            .map(|c| c.name.clone())
            .collect(),
        _ => state
            .workloads
            .iter()
            .filter(|w| w.kind.collection_path() == path)
            .map(|w| format!("{}/{}", w.namespace, w.name))
            .collect(),
    };
    names.sort();
    names
}

#[tokio::test]
async fn real_reads_every_collection_across_pages_and_templates_by_get() {
    let Some((kube, _dir, state)) =
        grown_and_read("real_reads_every_collection_across_pages_and_templates_by_get").await
    else {
        return;
    };

    let mut paths = vec!["/api/v1/namespaces".to_string()];
    paths.extend(KINDS.map(|k| {
        format!(
            "/apis/constraints.gatekeeper.sh/v1beta1/{}",
            k.to_lowercase()
        )
    }));
    paths.extend(WorkloadKind::ALL.iter().map(|k| k.collection_path()));
    for path in &paths {
        // The server really pages this collection at `PAGE` per request ...
        let first = kube.get(&format!("{path}?limit={PAGE}"));
        assert!(
            first["metadata"]["continue"]
                .as_str()
                .is_some_and(|t| !t.is_empty()),
            "{path} fits one page: {}",
            first["metadata"]
        );
        // ... and the paged read holds exactly what one unpaginated list holds.
        assert_eq!(read_names(&state, path), listed(&kube, path), "{path}");
    }
    assert!(state.workloads.len() >= 6 * 4, "{}", state.workloads.len());

    let names: Vec<_> = state.templates.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["k8scontainerlimits", "k8srequiredlabels"]);
    // Templates come from `get` of the template of each configured kind only: the server holds
    // no others here, so check the one read is the stored one.
    let stored = kube.get("/apis/templates.gatekeeper.sh/v1/constrainttemplates/k8srequiredlabels");
    let read = state
        .templates
        .iter()
        .find(|t| t.name == "k8srequiredlabels")
        .unwrap()
        .raw
        .to_value();
    assert_eq!(read["spec"], stored["spec"]);
    assert_eq!(read["kind"], "ConstraintTemplate");

    // The model of a real object: kind/apiVersion filled in, managedFields dropped, server
    // defaults kept as the API serves them.
    let web = state
        .workloads
        .iter()
        .find(|w| w.name == "web" && w.namespace == "team-a")
        .expect("web");
    let raw = web.raw.to_value();
    assert_eq!(raw["kind"], "Deployment");
    assert_eq!(raw["apiVersion"], "apps/v1");
    assert!(raw["metadata"].get("managedFields").is_none());
    assert!(raw["metadata"]["uid"].is_string());
    assert_eq!(
        raw["spec"]["strategy"]["type"], "RollingUpdate",
        "server default"
    );
    assert_eq!(
        web.pod_template().expect("template")["spec"]["containers"][0]["name"],
        "web"
    );
}

#[tokio::test]
async fn real_constraint_kind_without_crd_or_template_is_named() {
    let Some(kube) = start(
        "real_constraint_kind_without_crd_or_template_is_named",
        KubeOptions::default(),
    ) else {
        return;
    };
    kube.load(&basic_objects());
    let dir = tempfile::tempdir().unwrap();
    let source = admin_source(&kube, &dir);

    let no_crd = ReadSpec::for_constraint_kinds(["K8sRequiredLabels", "K8sNoSuchRule"]);
    let err = read_cluster(&source, &no_crd).await.unwrap_err();
    match &err {
        ReadError::ConstraintKindNotServed { kind, .. } => assert_eq!(kind, "K8sNoSuchRule"),
        other => panic!("unexpected {other:?}"),
    }
    assert!(err.to_string().contains("K8sNoSuchRule"), "{err}");

    // A CRD without its template: the template `get` answers 404.
    kube.install_constraint_crd("K8sOrphanRule");
    let no_template = ReadSpec::for_constraint_kinds(["K8sRequiredLabels", "K8sOrphanRule"]);
    let err = read_cluster(&source, &no_template).await.unwrap_err();
    assert!(matches!(err, ReadError::TemplateNotFound { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "constrainttemplate k8sorphanrule of constraint kind K8sOrphanRule not found \
         (templates.gatekeeper.sh/v1 constrainttemplates/k8sorphanrule: HTTP 404)"
    );
}

/// A client that compacts etcd before it sends the first `continue` request for `path`.
fn compacting_client(
    kube: Arc<RealKube>,
    inner: kube::Client,
    path: &'static str,
    compacted: Arc<AtomicBool>,
) -> kube::Client {
    let service = tower::service_fn(move |request: http::Request<kube::client::Body>| {
        let inner = inner.clone();
        let kube = Arc::clone(&kube);
        let compacted = Arc::clone(&compacted);
        async move {
            let continues = request
                .uri()
                .query()
                .is_some_and(|q| q.contains("continue="));
            if continues && request.uri().path() == path && !compacted.swap(true, Ordering::SeqCst)
            {
                tokio::task::spawn_blocking(move || kube.compact_etcd())
                    .await
                    .expect("compaction task");
            }
            inner.send(request).await
        }
    });
    kube::Client::new(service, "default")
}

#[tokio::test]
async fn real_expired_continue_after_etcd_compaction_is_list_expired() {
    // Continue pages come from etcd (not from the watch cache's list snapshots), as on any
    // server whose snapshot of the list is gone; etcd compaction then expires the token.
    let options = KubeOptions {
        feature_gates: vec!["ListFromCacheSnapshot=false".into()],
        ..KubeOptions::default()
    };
    let Some(kube) = start(
        "real_expired_continue_after_etcd_compaction_is_list_expired",
        options,
    ) else {
        return;
    };
    let kube = Arc::new(kube);
    // Only the Deployments outgrow a page of 10, so theirs is the one continue request.
    let mut objects = basic_objects();
    let deployment = objects
        .iter()
        .find(|o| o["kind"] == "Deployment")
        .unwrap()
        .clone();
    for i in 0..10 {
        let mut copy = deployment.clone();
        copy["metadata"]["name"] = json!(format!("many-{i}"));
        objects.push(copy);
    }
    kube.load(&objects);
    let spec = ReadSpec {
        page_size: 10,
        ..spec()
    };
    let dir = tempfile::tempdir().unwrap();
    cluster_projection::read::install_crypto_provider();
    let inner = admin_source(&kube, &dir)
        .client(Duration::from_secs(10))
        .await
        .expect("client");
    let path = "/apis/apps/v1/deployments";

    // Control: without compaction the same paged read succeeds.
    let state = read_with_client(&inner, &spec).await.expect("read");
    assert_eq!(
        state
            .workloads
            .iter()
            .filter(|w| w.kind == WorkloadKind::Deployment)
            .count(),
        14
    );

    let compacted = Arc::new(AtomicBool::new(false));
    let client = compacting_client(Arc::clone(&kube), inner, path, Arc::clone(&compacted));
    let err = read_with_client(&client, &spec).await.unwrap_err();
    assert!(
        compacted.load(Ordering::SeqCst),
        "no continue request was sent"
    );
    assert!(matches!(err, ReadError::ListExpired { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "list expired (410 Gone) while listing apps/v1 deployments"
    );
}

#[tokio::test]
async fn real_saved_snapshot_of_a_live_read_reads_back_identical() {
    let Some((_kube, dir, state)) =
        grown_and_read("real_saved_snapshot_of_a_live_read_reads_back_identical").await
    else {
        return;
    };
    let tarball = dir.path().join("live.tar.gz");
    save_snapshot(&state, &tarball).expect("save");
    let replayed = read_snapshot(&tarball).expect("read back");
    assert_eq!(replayed, state);
    assert_eq!(
        cluster_projection::project(&replayed).expect("project"),
        cluster_projection::project(&state).expect("project"),
    );
}

#[tokio::test]
async fn real_in_cluster_config_uses_a_service_account_token_and_ca_on_disk() {
    let Some(kube) = start(
        "real_in_cluster_config_uses_a_service_account_token_and_ca_on_disk",
        KubeOptions::default(),
    ) else {
        return;
    };
    kube.load(&basic_objects());
    kube.apply(&json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "report"}}));
    kube.apply(&json!({
        "apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": "reporter", "namespace": "report"}
    }));
    let token = kube.service_account_token("report", "reporter");
    let mount = tempfile::tempdir().unwrap();
    let (token_path, ca_path) = kube.write_service_account_mount(mount.path(), &token);
    let source =
        ClusterSource::InCluster(InClusterConfig::with_paths(kube.url(), token_path, ca_path));

    // The token is really used: without a binding the ServiceAccount may read nothing.
    let err = read_cluster(&source, &spec()).await.unwrap_err();
    assert!(
        matches!(err, ReadError::Status { status: 403, .. }),
        "{err:?}"
    );
    assert!(
        err.to_string().starts_with(
            "constraints.gatekeeper.sh/v1beta1 k8srequiredlabels: HTTP 403: Forbidden: "
        ),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("system:serviceaccount:report:reporter"),
        "{err}"
    );
    assert!(!format!("{err} {err:?}").contains(&token));

    kube.apply(&json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "reporter-view-all"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"kind": "ServiceAccount", "name": "reporter", "namespace": "report"}]
    }));
    let user = "system:serviceaccount:report:reporter";
    let groups = ["system:serviceaccounts".to_string()];
    let access = test_support::real::Access::new("list", "", "namespaces");
    kube.wait_for_access(user, &groups, &[(access, true)]);
    let state = read_cluster(&source, &spec()).await.expect("read");
    assert_eq!(state.templates.len(), 2);
    assert!(state.namespaces.iter().any(|n| n.name == "report"));
}

#[tokio::test]
async fn real_expansion_templates_are_listed_across_pages_as_v1beta1() {
    let Some(kube) = start(
        "real_expansion_templates_are_listed_across_pages_as_v1beta1",
        KubeOptions::default(),
    ) else {
        return;
    };
    let template = |version: &str, name: &str| {
        json!({
            "apiVersion": format!("expansion.gatekeeper.sh/{version}"),
            "kind": "ExpansionTemplate",
            "metadata": {"name": name},
            "spec": {"applyTo": [{"groups": ["apps"], "kinds": ["Deployment"], "versions": ["v1"]}],
                     "templateSource": "spec.template",
                     "generatedGVK": {"group": "", "version": "v1", "kind": "Pod"}}
        })
    };
    let mut objects = basic_objects();
    objects.extend([
        template("v1beta1", "expand-c"),
        template("v1alpha1", "expand-a"),
        template("v1beta1", "expand-b"),
    ]);
    kube.load(&objects);
    let dir = tempfile::tempdir().unwrap();
    let state = read_cluster(&admin_source(&kube, &dir), &spec())
        .await
        .expect("read");
    let read: Vec<String> = state
        .expansion_templates
        .iter()
        .map(|e| format!("{} {}", e.api_version, e.name))
        .collect();
    // the server serves every one in the version asked for, v1beta1, whatever it was created as
    assert_eq!(
        read,
        [
            "expansion.gatekeeper.sh/v1beta1 expand-a",
            "expansion.gatekeeper.sh/v1beta1 expand-b",
            "expansion.gatekeeper.sh/v1beta1 expand-c",
        ]
    );
    assert_eq!(
        listed(
            &kube,
            "/apis/expansion.gatekeeper.sh/v1beta1/expansiontemplate"
        ),
        ["expand-a", "expand-b", "expand-c"]
    );
    let file = dir.path().join("saved.tar.gz");
    save_snapshot(&state, &file).expect("save");
    assert_eq!(read_snapshot(&file).expect("replay"), state);
}
