//! Snapshots read from files: single objects, multi-document YAML, typed and untyped lists, JSON
//! streams, tarballs; and their errors.

use std::path::PathBuf;

use cluster_projection::{
    ClusterState, ModelError, ReadSpec, SnapshotError, WorkloadKind, open_snapshot, read_snapshot,
    read_snapshot_text,
};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

fn summary(state: &ClusterState) -> Vec<String> {
    let mut out = Vec::new();
    out.extend(
        state
            .templates
            .iter()
            .map(|t| format!("template {}", t.name)),
    );
    out.extend(
        state
            .constraints
            .iter()
            .map(|c| format!("{} {} {}", c.kind, c.name, c.enforcement_action())),
    );
    out.extend(
        state
            .namespaces
            .iter()
            .map(|n| format!("Namespace {}", n.name)),
    );
    out.extend(
        state
            .workloads
            .iter()
            .map(|w| format!("{} {}/{}", w.kind, w.namespace, w.name)),
    );
    out
}

#[test]
fn source_yaml_and_raw_api_lists_read_to_the_same_objects() {
    // fixtures/cluster-src/basic: multi-document YAML of whole objects.
    let from_source = read_snapshot(&fixtures().join("cluster-src/basic")).expect("source");
    // fixtures/cluster/basic: raw API list responses (items without kind/apiVersion).
    let from_api = read_snapshot(&fixtures().join("cluster/basic")).expect("api lists");
    assert_eq!(summary(&from_source), summary(&from_api));
    assert_eq!(from_api.workloads.len(), 10);
    assert_eq!(from_api.workloads[0].api_version, "apps/v1");
    assert_eq!(from_api.workloads[0].raw.to_value()["kind"], "Deployment");
    // Server fields are in the API fixtures only; managedFields never reaches the model.
    let api_meta = &from_api.namespaces[0].raw.to_value()["metadata"];
    assert!(api_meta.get("uid").is_some());
    assert!(api_meta.get("managedFields").is_none());
}

#[test]
fn restrict_to_keeps_what_a_live_read_would_read() {
    let state = read_snapshot(&fixtures().join("cluster-src/basic")).expect("source");
    let spec = ReadSpec::for_constraint_kinds(["K8sContainerLimits"]);
    let restricted = state.clone().restrict_to(&spec).expect("restrict");
    assert_eq!(restricted.templates.len(), 1);
    assert_eq!(
        restricted.templates[0].constraint_kind,
        "K8sContainerLimits"
    );
    assert_eq!(restricted.constraints.len(), 1);
    assert_eq!(restricted.namespaces.len(), 4);
    assert!(
        restricted
            .workloads
            .iter()
            .all(|w| WorkloadKind::DEFAULT.contains(&w.kind))
    );
    assert_eq!(restricted.workloads.len(), 6);

    let err = state
        .restrict_to(&ReadSpec::for_constraint_kinds(["K8sMissing"]))
        .unwrap_err();
    assert!(matches!(err, ModelError::MissingTemplate { .. }), "{err}");
}

#[test]
fn single_objects_lists_multi_doc_and_json_streams() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    std::fs::create_dir(root.join("nested")).expect("mkdir");
    std::fs::write(
        root.join("ns.yaml"),
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n  labels: {team: x}\n",
    )
    .expect("write");
    std::fs::write(
        root.join("multi.yml"),
        "---\n# empty documents are skipped\n---\napiVersion: apps/v1\nkind: Deployment\n\
         metadata: {name: d1, namespace: a}\n---\napiVersion: apps/v1\nkind: StatefulSet\n\
         metadata: {name: s1, namespace: a}\n...\n",
    )
    .expect("write");
    std::fs::write(
        root.join("nested/list.yaml"),
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: batch/v1\n  kind: Job\n  \
         metadata: {name: j1, namespace: a}\n- apiVersion: v1\n  kind: Namespace\n  \
         metadata: {name: b}\n",
    )
    .expect("write");
    std::fs::write(
        root.join("typed.json"),
        r#"{"kind":"DeploymentList","apiVersion":"apps/v1","metadata":{},"items":[{"metadata":{"name":"d2","namespace":"b"}}]}
{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"c1","namespace":"b"}}"#,
    )
    .expect("write");
    std::fs::write(root.join("notes.txt"), "skipped, like gator does").expect("write");

    let state = read_snapshot(root).expect("snapshot");
    assert_eq!(
        summary(&state),
        [
            "Namespace a",
            "Namespace b",
            "Deployment a/d1",
            "StatefulSet a/s1",
            "Job a/j1",
            "Deployment b/d2",
            "CronJob b/c1",
        ]
    );
    assert_eq!(state.namespaces[0].labels["team"], "x");

    // A single file works too.
    let one = read_snapshot(&root.join("ns.yaml")).expect("file");
    assert_eq!(summary(&one), ["Namespace a"]);
}

#[test]
fn errors_name_the_file_and_document() {
    let err = read_snapshot_text(
        "objects.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\n",
    )
    .unwrap_err();
    assert!(
        matches!(err, SnapshotError::Object { document: 2, .. }),
        "{err:?}"
    );
    assert_eq!(err.to_string(), "objects.yaml: document 2");
    let source = std::error::Error::source(&err).expect("cause").to_string();
    assert!(source.contains("unsupported object v1 Pod"), "{source}");

    let err = read_snapshot_text("bad.yaml", "a: [unclosed\n").unwrap_err();
    assert!(matches!(err, SnapshotError::Yaml { .. }), "{err:?}");

    let err = read_snapshot_text("bad.json", "{\"a\": ").unwrap_err();
    assert!(matches!(err, SnapshotError::Json { .. }), "{err:?}");

    let ns = "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n";
    let err = read_snapshot_text("dup.yaml", &format!("{ns}---\n{ns}")).unwrap_err();
    assert!(matches!(err, SnapshotError::State { .. }), "{err:?}");

    let dir = tempfile::tempdir().expect("tempdir");
    let other = dir.path().join("objects.txt");
    std::fs::write(&other, "x").expect("write");
    let err = read_snapshot(&other).unwrap_err();
    assert!(matches!(err, SnapshotError::NotASnapshot { .. }), "{err:?}");
    let err = read_snapshot(&dir.path().join("missing")).unwrap_err();
    assert!(matches!(err, SnapshotError::Io { .. }), "{err:?}");
}

/// The basic source snapshot with `extra` Deployments in a JSON list named to be read first.
fn basic_with_many_deployments(extra: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(fixtures().join("cluster-src/basic")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dir.path().join(entry.file_name())).unwrap();
    }
    let items: Vec<serde_json::Value> = (0..extra)
        .map(|i| {
            serde_json::json!({
                "metadata": {"name": format!("bulk-{i:04}"), "namespace": format!("bulk-{}", i % 7)},
                "spec": {"replicas": 1},
            })
        })
        .collect();
    let list =
        serde_json::json!({"apiVersion": "apps/v1", "kind": "DeploymentList", "items": items});
    std::fs::write(dir.path().join("0-many.json"), list.to_string()).unwrap();
    dir
}

#[test]
fn a_snapshot_opened_for_paging_gives_what_the_whole_read_gives_in_pages() {
    let dir = basic_with_many_deployments(1_234);
    let spec = ReadSpec::for_constraint_kinds(["K8sRequiredLabels", "K8sContainerLimits"]);
    let whole = read_snapshot(dir.path())
        .unwrap()
        .restrict_to(&spec)
        .unwrap();
    let (policy, mut pages) = open_snapshot(dir.path(), &spec).unwrap();
    assert!(policy.workloads.is_empty());
    let ClusterState {
        workloads: expected,
        ..
    } = whole.clone();
    assert_eq!(
        summary(&policy),
        summary(&ClusterState {
            workloads: Vec::new(),
            ..whole
        })
    );
    let mut given = Vec::new();
    let mut sizes = Vec::new();
    while let Some(page) = pages.next_page().unwrap() {
        sizes.push(page.len());
        given.extend(page);
    }
    assert!(
        pages.next_page().unwrap().is_none(),
        "the end stays the end"
    );
    assert!(sizes.iter().all(|&n| n > 0 && n <= 500), "{sizes:?}");
    assert_eq!(sizes.len(), expected.len().div_ceil(500));
    given.sort_by(|a, b| (&a.namespace, a.kind, &a.name).cmp(&(&b.namespace, b.kind, &b.name)));
    assert_eq!(given, expected);
    assert!(expected.len() > 1_234);
}

#[test]
fn a_snapshot_opened_for_paging_fails_as_the_whole_read_fails() {
    let dir = basic_with_many_deployments(3);
    // The same Deployment again, in another file.
    let again = serde_json::json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "bulk-0001", "namespace": "bulk-1"}});
    std::fs::write(dir.path().join("1-again.json"), again.to_string()).unwrap();
    let spec = ReadSpec::for_constraint_kinds(["K8sRequiredLabels"]);
    let whole = read_snapshot(dir.path()).unwrap_err();
    let paged = open_snapshot(dir.path(), &spec).unwrap_err();
    assert_eq!(paged.to_string(), whole.to_string());
    assert_eq!(
        std::error::Error::source(&paged).map(ToString::to_string),
        Some("Deployment bulk-1/bulk-0001 occurs more than once".to_string())
    );
    assert_eq!(
        std::error::Error::source(&paged).map(ToString::to_string),
        std::error::Error::source(&whole).map(ToString::to_string)
    );

    std::fs::write(dir.path().join("1-again.json"), "{\"kind\": \"Pod\"").unwrap();
    let whole = read_snapshot(dir.path()).unwrap_err();
    let paged = open_snapshot(dir.path(), &spec).unwrap_err();
    assert_eq!(paged.to_string(), whole.to_string());
}

#[test]
fn a_leading_bom_is_skipped_and_merge_keys_are_applied() {
    let state = read_snapshot_text(
        "ns.yaml",
        "\u{feff}# exported with a BOM\napiVersion: v1\nkind: Namespace\nmetadata:\n  <<: {name: a, labels: {team: x}}\n  labels: {team: y}\n",
    )
    .expect("a BOM and a merge key are read as kubectl reads them");
    assert_eq!(summary(&state), ["Namespace a"]);
    // The explicit key wins over the merged one.
    assert_eq!(state.namespaces[0].labels["team"], "y");
}
