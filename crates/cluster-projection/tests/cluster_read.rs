//! Reading a live cluster: the loopback fake API server (`test-support::kube_api`) serving the
//! `fixtures/cluster/basic` scenario, through kubeconfig and in-cluster access, with faults.

use std::path::PathBuf;
use std::time::Duration;

use cluster_projection::{
    ClusterSource, InClusterConfig, ReadError, ReadSpec, WorkloadKind, read_cluster, read_snapshot,
    save_snapshot,
};
use test_support::kube_api::{FakeApiServer, Fault, Scenario};

const DEPLOYMENTS: &str = "/apis/apps/v1/deployments";

fn basic_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/cluster/basic")
}

fn fake() -> FakeApiServer {
    FakeApiServer::start(Scenario::from_dir(basic_dir()))
}

fn spec() -> ReadSpec {
    ReadSpec {
        page_size: 2,
        request_timeout: Duration::from_secs(5),
        ..ReadSpec::for_constraint_kinds(["K8sRequiredLabels", "K8sContainerLimits"])
    }
}

fn kubeconfig(fake: &FakeApiServer, dir: &tempfile::TempDir) -> ClusterSource {
    ClusterSource::Kubeconfig {
        path: Some(fake.write_kubeconfig(dir.path())),
        context: None,
    }
}

#[tokio::test]
async fn reads_every_part_over_several_pages() {
    let fake = fake();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut spec = spec();
    spec.page_size = 1;
    spec.workload_kinds = WorkloadKind::ALL.to_vec();
    let state = read_cluster(&kubeconfig(&fake, &dir), &spec)
        .await
        .expect("read");

    let names: Vec<_> = state.templates.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["k8scontainerlimits", "k8srequiredlabels"]);
    let constraints: Vec<_> = state
        .constraints
        .iter()
        .map(|c| format!("{}/{}", c.kind, c.name))
        .collect();
    assert_eq!(
        constraints,
        [
            "K8sContainerLimits/containers-must-have-limits",
            "K8sRequiredLabels/namespaces-must-have-owner",
            "K8sRequiredLabels/workloads-must-have-team",
        ]
    );
    let namespaces: Vec<_> = state.namespaces.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(namespaces, ["kube-system", "sandbox-x", "team-a", "team-b"]);
    let workloads: Vec<_> = state
        .workloads
        .iter()
        .map(|w| format!("{} {}/{}", w.kind, w.namespace, w.name))
        .collect();
    assert_eq!(
        workloads,
        [
            "Deployment kube-system/coredns",
            "DaemonSet sandbox-x/node-agent",
            "Deployment team-a/api",
            "Deployment team-a/web",
            "StatefulSet team-a/db",
            "ReplicaSet team-a/api-6d9f7c",
            "Job team-a/migrate",
            "Deployment team-b/api",
            "StatefulSet team-b/api",
            "CronJob team-b/nightly",
        ]
    );

    // Four Deployments at one per page: four list requests, chained by continue tokens.
    let pages = fake.requests_to(DEPLOYMENTS);
    assert_eq!(pages.len(), 4, "{pages:?}");
    assert_eq!(pages[0].query_param("continue"), None);
    assert!(
        pages[1..]
            .iter()
            .all(|p| p.query_param("continue").is_some())
    );
    assert!(
        pages
            .iter()
            .all(|p| p.query_param("limit").as_deref() == Some("1"))
    );
    // Templates are the only single-object GETs; everything else is a list.
    for request in fake.requests() {
        let is_template = request.path.contains("/constrainttemplates/");
        assert_eq!(
            request.query_param("limit").is_none(),
            is_template,
            "{}",
            request.path
        );
    }

    // The model: typed fields, kind/apiVersion filled in, managedFields dropped, status kept.
    let web = state
        .workloads
        .iter()
        .find(|w| w.name == "web")
        .expect("web");
    assert_eq!(web.api_version, "apps/v1");
    assert_eq!(
        web.labels.get("criticality").map(String::as_str),
        Some("urgent")
    );
    let raw = web.raw.to_value();
    assert_eq!(raw["kind"], "Deployment");
    assert!(raw["metadata"].get("managedFields").is_none());
    assert!(raw["metadata"].get("uid").is_some());
    assert_eq!(
        web.pod_template().expect("template")["spec"]["containers"][0]["name"],
        "web"
    );
    let team = state
        .constraints
        .iter()
        .find(|c| c.name == "workloads-must-have-team")
        .expect("constraint");
    assert_eq!(team.enforcement_action(), "deny");
    assert_eq!(team.total_violations().expect("count"), Some(4));
    assert_eq!(
        team.audit_timestamp()
            .expect("audit")
            .map(|t| t.to_string()),
        Some("2026-03-09T07:00:00Z".to_string())
    );
    let owner = state
        .namespaces
        .iter()
        .find(|n| n.name == "team-a")
        .expect("ns");
    assert_eq!(
        owner.labels.get("owner").map(String::as_str),
        Some("team-a")
    );
}

#[tokio::test]
async fn default_workload_kinds_are_deployments_and_statefulsets() {
    let fake = fake();
    let dir = tempfile::tempdir().expect("tempdir");
    let state = read_cluster(&kubeconfig(&fake, &dir), &spec())
        .await
        .expect("read");
    assert!(
        state
            .workloads
            .iter()
            .all(|w| matches!(w.kind, WorkloadKind::Deployment | WorkloadKind::StatefulSet))
    );
    assert_eq!(state.workloads.len(), 6);
    assert!(fake.requests_to("/apis/batch/v1/jobs").is_empty());
}

#[tokio::test]
async fn gone_on_a_continue_is_list_expired() {
    let fake = fake();
    let dir = tempfile::tempdir().expect("tempdir");
    fake.inject(DEPLOYMENTS, Fault::ExpireOnContinue);
    let err = read_cluster(&kubeconfig(&fake, &dir), &spec())
        .await
        .unwrap_err();
    assert!(matches!(err, ReadError::ListExpired { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "list expired (410 Gone) while listing apps/v1 deployments"
    );
    // Not retried: exactly the first page and the expired continue.
    assert_eq!(fake.requests_to(DEPLOYMENTS).len(), 2);
}

#[tokio::test]
async fn forbidden_names_the_resource_and_status() {
    let fake = fake();
    let dir = tempfile::tempdir().expect("tempdir");
    fake.inject("/api/v1/namespaces", Fault::Status(403));
    let err = read_cluster(&kubeconfig(&fake, &dir), &spec())
        .await
        .unwrap_err();
    assert!(
        matches!(err, ReadError::Status { status: 403, .. }),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "v1 namespaces: HTTP 403: Forbidden: injected 403 for /api/v1/namespaces"
    );
}

#[tokio::test]
async fn a_constraint_kind_the_api_does_not_serve_is_its_own_error() {
    let fake = fake();
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = ReadSpec {
        page_size: 2,
        ..ReadSpec::for_constraint_kinds(["K8sRequiredLabels", "K8sNoSuchRule"])
    };
    let err = read_cluster(&kubeconfig(&fake, &dir), &spec)
        .await
        .unwrap_err();
    match &err {
        ReadError::ConstraintKindNotServed { kind, .. } => assert_eq!(kind, "K8sNoSuchRule"),
        other => panic!("unexpected {other:?}"),
    }
    assert!(err.to_string().contains("K8sNoSuchRule"), "{err}");

    // A kind that is not a kind name never reaches the API.
    let before = fake.requests().len();
    let odd = ReadSpec::for_constraint_kinds(["../namespaces"]);
    let err = read_cluster(&kubeconfig(&fake, &dir), &odd)
        .await
        .unwrap_err();
    assert!(
        matches!(err, ReadError::InvalidConstraintKind { .. }),
        "{err:?}"
    );
    assert_eq!(fake.requests().len(), before);
}

#[tokio::test]
async fn a_missing_template_is_named() {
    let fake = fake();
    let dir = tempfile::tempdir().expect("tempdir");
    fake.inject(
        "/apis/templates.gatekeeper.sh/v1/constrainttemplates/k8scontainerlimits",
        Fault::Status(404),
    );
    let err = read_cluster(&kubeconfig(&fake, &dir), &spec())
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "constrainttemplate k8scontainerlimits of constraint kind K8sContainerLimits not found \
         (templates.gatekeeper.sh/v1 constrainttemplates/k8scontainerlimits: HTTP 404)"
    );
}

#[tokio::test]
async fn server_errors_timeouts_and_broken_bodies_are_typed() {
    let fake = fake();
    let dir = tempfile::tempdir().expect("tempdir");
    let source = kubeconfig(&fake, &dir);
    let mut spec = spec();
    spec.request_timeout = Duration::from_millis(400);

    fake.inject(DEPLOYMENTS, Fault::Status(500));
    let err = read_cluster(&source, &spec).await.unwrap_err();
    assert!(
        matches!(err, ReadError::Status { status: 500, .. }),
        "{err:?}"
    );
    assert!(
        err.to_string().starts_with("apps/v1 deployments: HTTP 500"),
        "{err}"
    );

    fake.inject(DEPLOYMENTS, Fault::Delay(Duration::from_secs(3)));
    let started = std::time::Instant::now();
    let err = read_cluster(&source, &spec).await.unwrap_err();
    assert!(
        matches!(err, ReadError::Timeout { .. } | ReadError::Transport { .. }),
        "{err:?}"
    );
    assert!(err.to_string().starts_with("apps/v1 deployments:"), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );

    fake.inject(DEPLOYMENTS, Fault::TruncatedBody);
    let err = read_cluster(&source, &spec).await.unwrap_err();
    assert!(
        matches!(err, ReadError::TruncatedBody { status: 200, .. }),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "apps/v1 deployments: HTTP 200 response body was truncated"
    );

    fake.inject(DEPLOYMENTS, Fault::NotJson);
    let err = read_cluster(&source, &spec).await.unwrap_err();
    assert!(
        matches!(err, ReadError::InvalidBody { status: 200, .. }),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "apps/v1 deployments: HTTP 200 response body is not valid JSON"
    );
}

#[tokio::test]
async fn a_wrong_token_is_unauthorized_and_never_shown() {
    let fake = fake();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = fake.write_kubeconfig(dir.path());
    let text = std::fs::read_to_string(&path).expect("kubeconfig");
    std::fs::write(&path, text.replace(fake.token(), "wrong-token-value")).expect("write");
    let source = ClusterSource::Kubeconfig {
        path: Some(path),
        context: None,
    };
    let err = read_cluster(&source, &spec()).await.unwrap_err();
    assert!(
        matches!(err, ReadError::Status { status: 401, .. }),
        "{err:?}"
    );
    let chain = format!("{err} {err:?}");
    assert!(!chain.contains("wrong-token-value"), "{chain}");
}

#[tokio::test]
async fn in_cluster_config_uses_the_token_and_ca_on_disk() {
    let fake = fake();
    let dir = tempfile::tempdir().expect("tempdir");
    let (token, ca) = fake.write_service_account(dir.path());
    let source = ClusterSource::InCluster(InClusterConfig::with_paths(fake.url(), token, ca));
    let state = read_cluster(&source, &spec()).await.expect("read");
    assert_eq!(state.namespaces.len(), 4);
    let expected = format!("Bearer {}", fake.token());
    assert!(
        fake.requests()
            .iter()
            .all(|r| r.header("authorization") == Some(expected.as_str()))
    );

    // Missing files: a clear configuration error before any request.
    let before = fake.requests().len();
    let missing = ClusterSource::InCluster(InClusterConfig::with_paths(
        fake.url(),
        dir.path().join("no-token"),
        dir.path().join("ca.crt"),
    ));
    let err = read_cluster(&missing, &spec()).await.unwrap_err();
    assert!(matches!(err, ReadError::Config(_)), "{err:?}");
    assert!(err.to_string().contains("no-token"), "{err}");
    assert_eq!(fake.requests().len(), before);
}

#[tokio::test]
async fn kubeconfig_context_override_selects_the_cluster() {
    let fake = fake();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = fake.write_kubeconfig_with_decoy(dir.path());
    let mut spec = spec();
    spec.request_timeout = Duration::from_secs(2);

    let current = ClusterSource::Kubeconfig {
        path: Some(path.clone()),
        context: None,
    };
    let err = read_cluster(&current, &spec).await.unwrap_err();
    assert!(
        matches!(err, ReadError::Transport { .. } | ReadError::Timeout { .. }),
        "{err:?}"
    );
    assert!(fake.requests().is_empty());

    let chosen = ClusterSource::Kubeconfig {
        path: Some(path.clone()),
        context: Some("fake".into()),
    };
    let state = read_cluster(&chosen, &spec).await.expect("read");
    assert_eq!(state.templates.len(), 2);

    let unknown = ClusterSource::Kubeconfig {
        path: Some(path),
        context: Some("nope".into()),
    };
    let err = read_cluster(&unknown, &spec).await.unwrap_err();
    assert!(matches!(err, ReadError::Config(_)), "{err:?}");
}

#[tokio::test]
async fn a_saved_snapshot_reads_back_as_tarball_and_extracted() {
    let fake = fake();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut spec = spec();
    spec.workload_kinds = WorkloadKind::ALL.to_vec();
    let state = read_cluster(&kubeconfig(&fake, &dir), &spec)
        .await
        .expect("read");

    let tarball = dir.path().join("run.tar.gz");
    save_snapshot(&state, &tarball).expect("save");
    assert_eq!(read_snapshot(&tarball).expect("read tarball"), state);

    // Deterministic: the same state gives the same bytes.
    let again = dir.path().join("again.tar.gz");
    save_snapshot(&state, &again).expect("save");
    assert_eq!(
        std::fs::read(&tarball).expect("read"),
        std::fs::read(&again).expect("read")
    );

    let extracted = dir.path().join("extracted");
    let file = std::fs::File::open(&tarball).expect("open");
    tar::Archive::new(flate2::read::GzDecoder::new(file))
        .unpack(&extracted)
        .expect("unpack");
    assert_eq!(read_snapshot(&extracted).expect("read dir"), state);
    assert_eq!(
        read_snapshot(&extracted)
            .expect("read dir")
            .restrict_to(&spec)
            .expect("restrict"),
        state
    );
}

const EXPANSION_V1BETA1: &str = "/apis/expansion.gatekeeper.sh/v1beta1/expansiontemplate";
const EXPANSION_V1ALPHA1: &str = "/apis/expansion.gatekeeper.sh/v1alpha1/expansiontemplate";

/// An ExpansionTemplate as a list item (no apiVersion or kind).
fn expansion_item(name: &str) -> serde_json::Value {
    serde_json::json!({
        "metadata": {"name": name, "managedFields": [{"manager": "kubectl"}]},
        "spec": {"applyTo": [{"groups": ["apps"], "kinds": ["Deployment"], "versions": ["v1"]}],
                 "templateSource": "spec.template",
                 "generatedGVK": {"group": "", "version": "v1", "kind": "Pod"}}
    })
}

fn with_expansions(path: &str, api_version: &str, names: &[&str]) -> FakeApiServer {
    let items: Vec<_> = names.iter().map(|n| expansion_item(n)).collect();
    FakeApiServer::start(Scenario::from_dir(basic_dir()).with_list(
        path,
        "ExpansionTemplateList",
        api_version,
        items,
    ))
}

#[tokio::test]
async fn expansion_templates_are_read_paged_in_the_version_served_and_snapshotted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut spec = spec();
    spec.page_size = 1;
    let fake = with_expansions(
        EXPANSION_V1BETA1,
        "expansion.gatekeeper.sh/v1beta1",
        &["expand-b", "expand-a"],
    );
    let state = read_cluster(&kubeconfig(&fake, &dir), &spec)
        .await
        .expect("read");
    let read: Vec<_> = state
        .expansion_templates
        .iter()
        .map(|e| format!("{} {}", e.api_version, e.name))
        .collect();
    assert_eq!(
        read,
        [
            "expansion.gatekeeper.sh/v1beta1 expand-a",
            "expansion.gatekeeper.sh/v1beta1 expand-b"
        ]
    );
    assert_eq!(fake.requests_to(EXPANSION_V1BETA1).len(), 2, "one per page");
    assert!(fake.requests_to(EXPANSION_V1ALPHA1).is_empty());
    let raw = state.expansion_templates[0].raw.to_value();
    assert_eq!(raw["kind"], "ExpansionTemplate");
    assert!(raw["metadata"].get("managedFields").is_none());
    // --save-snapshot / --snapshot round trip
    let file = dir.path().join("saved.tar.gz");
    save_snapshot(&state, &file).expect("save");
    assert_eq!(read_snapshot(&file).expect("replay"), state);

    // an older Gatekeeper serves only v1alpha1
    let fake = with_expansions(
        EXPANSION_V1ALPHA1,
        "expansion.gatekeeper.sh/v1alpha1",
        &["expand-old"],
    );
    let state = read_cluster(&kubeconfig(&fake, &dir), &spec)
        .await
        .expect("read");
    assert_eq!(state.expansion_templates.len(), 1);
    assert_eq!(
        state.expansion_templates[0].api_version,
        "expansion.gatekeeper.sh/v1alpha1"
    );
}

#[tokio::test]
async fn a_cluster_without_expansion_templates_has_none() {
    let fake = fake();
    let dir = tempfile::tempdir().expect("tempdir");
    let state = read_cluster(&kubeconfig(&fake, &dir), &spec())
        .await
        .expect("no CRD is not an error");
    assert!(state.expansion_templates.is_empty());
    assert_eq!(fake.requests_to(EXPANSION_V1BETA1).len(), 1);
    assert_eq!(fake.requests_to(EXPANSION_V1ALPHA1).len(), 1);
}

#[tokio::test]
async fn a_forbidden_expansion_template_list_fails_the_read_naming_it() {
    let fake = fake();
    let dir = tempfile::tempdir().expect("tempdir");
    fake.inject(EXPANSION_V1BETA1, Fault::Status(403));
    let err = read_cluster(&kubeconfig(&fake, &dir), &spec())
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("expansion.gatekeeper.sh/v1beta1 expansiontemplate: HTTP 403"),
        "{err}"
    );
}

#[tokio::test]
async fn mutators_are_read_where_served_and_snapshotted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mutator = |name: &str| serde_json::json!({"metadata": {"name": name}, "spec": {}});
    let fake = FakeApiServer::start(
        Scenario::from_dir(basic_dir())
            .with_list(
                "/apis/mutations.gatekeeper.sh/v1/assign",
                "AssignList",
                "mutations.gatekeeper.sh/v1",
                vec![mutator("set-non-root"), mutator("add-label")],
            )
            .with_list(
                "/apis/mutations.gatekeeper.sh/v1alpha1/assignimage",
                "AssignImageList",
                "mutations.gatekeeper.sh/v1alpha1",
                vec![mutator("mirror")],
            ),
    );
    let state = read_cluster(&kubeconfig(&fake, &dir), &spec())
        .await
        .expect("read");
    let read: Vec<_> = state
        .mutators
        .iter()
        .map(|m| format!("{} {}", m.kind, m.name))
        .collect();
    assert_eq!(
        read,
        [
            "Assign add-label",
            "Assign set-non-root",
            "AssignImage mirror"
        ]
    );
    let file = dir.path().join("saved.tar.gz");
    save_snapshot(&state, &file).expect("save");
    assert_eq!(read_snapshot(&file).expect("replay"), state);
    // AssignMetadata and ModifySet are not served: none, and no error
    assert_eq!(
        fake.requests_to("/apis/mutations.gatekeeper.sh/v1/modifyset")
            .len(),
        1
    );
}
