//! The projection under `<work>/in/`: golden files, every Constraint once as `warn`, stale and
//! foreign files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use cluster_projection::projection::{MANIFEST, file_name};
use cluster_projection::{
    ClusterState, ProjectionError, ReadSpec, WorkloadKind, project, project_lazily, project_split,
    read_snapshot, write_projected, write_projection,
};
use serde_json::Value;

fn basic() -> ClusterState {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/cluster/basic");
    let spec = ReadSpec {
        workload_kinds: WorkloadKind::ALL.to_vec(),
        ..ReadSpec::for_constraint_kinds(["K8sRequiredLabels", "K8sContainerLimits"])
    };
    read_snapshot(&dir)
        .expect("snapshot")
        .restrict_to(&spec)
        .expect("restrict")
}

/// Every object in the projection files `names` of `dir` (one JSON object a line), by object
/// name; each file holds objects of one kind, in name order.
fn objects_in(dir: &Path, names: &[String]) -> BTreeMap<String, Value> {
    let mut objects = BTreeMap::new();
    for name in names.iter().filter(|n| n.as_str() != MANIFEST) {
        let text = std::fs::read_to_string(dir.join(name)).expect("read");
        let (kind, _) = name.split_once('.').expect("<kind>.<n>.json");
        let mut previous = String::new();
        for line in text.lines() {
            let value: Value = serde_json::from_str(line).expect("json line");
            let object_name = file_name(&value);
            assert!(
                object_name.starts_with(&format!("{kind}_")),
                "{name}: {object_name}"
            );
            assert!(object_name > previous, "{name}: {object_name} out of order");
            previous.clone_from(&object_name);
            assert!(objects.insert(object_name, value).is_none(), "{name}");
        }
    }
    objects
}

fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn projection_golden_files() {
    let state = basic();
    let work = tempfile::tempdir().expect("tempdir");
    let summary = write_projection(&state, work.path()).expect("write");
    let dir = work.path().join("in");
    assert_eq!(summary.written, state.len());
    assert_eq!(summary.removed, 0);

    let names = listing(&dir);
    assert_eq!(summary.files, names.len() - 1, "{names:?}");
    insta::assert_yaml_snapshot!("projection_file_names", names);

    let files = objects_in(&dir, &names);
    assert_eq!(files.len(), state.len());
    insta::assert_json_snapshot!("projection_basic", files);

    // The lazy projection yields the files in name order, one at a time.
    let lazily = project_lazily(&state).expect("project lazily");
    assert_eq!(lazily.len(), files.len());
    let lazy_names: Vec<String> = lazily.map(|o| o.file_name).collect();
    assert_eq!(lazy_names, files.keys().cloned().collect::<Vec<_>>());

    // The in-memory projection is what was written.
    let projected = project(&state).expect("project");
    assert_eq!(projected.len(), files.len());
    for object in projected {
        assert_eq!(
            files[&object.file_name], object.object,
            "{}",
            object.file_name
        );
    }

    // Split for a review: the policy side and the workloads, the same objects.
    let (policy, workloads) = project_split(&state).expect("split");
    assert_eq!(policy.len(), 2 + 3 + 4);
    let split: BTreeMap<String, Value> = policy
        .into_iter()
        .chain(workloads)
        .map(|object| (file_name(&object), object))
        .collect();
    assert_eq!(split, files);

    // Written from the objects, the directory holds the same files.
    let again = tempfile::tempdir().unwrap();
    let summary = write_projected(again.path(), split.into_values()).expect("write objects");
    assert_eq!(summary.written, files.len());
    assert_eq!(listing(&again.path().join("in")), names);
}

#[test]
fn large_kinds_are_split_into_files_of_a_thousand_objects() {
    let lines: Vec<(String, String)> = (0..2001)
        .map(|i| {
            (
                format!("deployment_ns_d{i:05}.json"),
                format!("{{\"i\":{i}}}"),
            )
        })
        .chain([("namespace_ns.json".to_string(), "{}".to_string())])
        .collect();
    let files = cluster_projection::projection::group_files(lines);
    let shape: Vec<(&str, usize)> = files
        .iter()
        .map(|(name, bytes)| (name.as_str(), bytes.iter().filter(|b| **b == b'\n').count()))
        .collect();
    assert_eq!(
        shape,
        [
            ("deployment.00001.json", 1000),
            ("deployment.00002.json", 1000),
            ("deployment.00003.json", 1),
            ("namespace.00001.json", 1),
        ]
    );
    assert!(files[0].1.starts_with(b"{\"i\":0}\n{\"i\":1}\n"));
}

#[test]
fn every_object_once_with_type_and_constraints_as_warn() {
    let state = basic();
    let projected = project(&state).expect("project");
    assert_eq!(projected.len(), 2 + 3 + 4 + 10);
    let mut constraints = 0;
    for object in &projected {
        let value = &object.object;
        assert!(value["apiVersion"].as_str().is_some_and(|v| !v.is_empty()));
        assert!(value["kind"].as_str().is_some_and(|v| !v.is_empty()));
        assert!(value.get("status").is_none(), "{}", object.file_name);
        let meta = value["metadata"].as_object().expect("metadata");
        for noise in [
            "managedFields",
            "resourceVersion",
            "uid",
            "generation",
            "creationTimestamp",
        ] {
            assert!(
                !meta.contains_key(noise),
                "{} keeps {noise}",
                object.file_name
            );
        }
        if value["apiVersion"]
            .as_str()
            .unwrap_or("")
            .starts_with("constraints.gatekeeper.sh/")
        {
            constraints += 1;
            assert_eq!(value["spec"]["enforcementAction"], "warn");
            assert!(value["spec"].get("scopedEnforcementActions").is_none());
            assert!(value["spec"].get("match").is_some());
        }
    }
    assert_eq!(constraints, 3);
    // What constraints see is untouched.
    let rs = projected
        .iter()
        .find(|o| o.file_name == "replicaset_team-a_api-6d9f7c.json")
        .expect("replicaset");
    assert_eq!(rs.object["metadata"]["ownerReferences"][0]["name"], "api");
    assert_eq!(
        rs.object["metadata"]["labels"]["pod-template-hash"],
        "6d9f7c"
    );
}

#[test]
fn a_rerun_removes_what_the_previous_run_wrote() {
    let state = basic();
    let work = tempfile::tempdir().expect("tempdir");
    let first = write_projection(&state, work.path()).expect("first");
    let dir = work.path().join("in");
    assert!(objects_in(&dir, &listing(&dir)).contains_key("deployment_team-a_web.json"));

    let mut smaller = state.clone();
    smaller
        .workloads
        .retain(|w| w.kind != WorkloadKind::Deployment);
    let summary = write_projection(&smaller, work.path()).expect("second");
    assert_eq!(summary.removed, first.files);
    assert_eq!(summary.written, smaller.len());
    assert!(
        !dir.join("deployment.00001.json").exists(),
        "stale file kept"
    );
    let names = listing(&dir);
    assert_eq!(names.len(), summary.files + 1);
    assert_eq!(objects_in(&dir, &names).len(), smaller.len());
}

#[test]
fn a_foreign_file_stops_the_run_and_nothing_is_removed() {
    let state = basic();
    let work = tempfile::tempdir().expect("tempdir");
    write_projection(&state, work.path()).expect("first");
    let dir = work.path().join("in");
    std::fs::write(dir.join("extra.yaml"), "kind: Pod\n").expect("write");
    std::fs::create_dir(dir.join("sub")).expect("mkdir");
    let before = listing(&dir);

    let err = write_projection(&state, work.path()).unwrap_err();
    match &err {
        ProjectionError::ForeignFiles { files, .. } => assert_eq!(files, &["extra.yaml", "sub"]),
        other => panic!("unexpected {other:?}"),
    }
    assert!(
        err.to_string()
            .contains("holds files this tool did not write (extra.yaml, sub)")
    );
    assert_eq!(listing(&dir), before);

    // A file with a projection-like name but not in the manifest is foreign too.
    let fresh = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(fresh.path().join("in")).expect("mkdir");
    std::fs::write(fresh.path().join("in/namespace.00001.json"), "{}").expect("write");
    let err = write_projection(&state, fresh.path()).unwrap_err();
    assert!(
        matches!(err, ProjectionError::ForeignFiles { .. }),
        "{err:?}"
    );
}

#[test]
fn two_objects_with_one_file_name_fail_before_anything_is_projected() {
    let mut state = basic();
    let duplicate = state.workloads[0].clone();
    state.workloads.push(duplicate);
    let expected = cluster_projection::projection::file_name_for(
        state.workloads[0].kind.kind(),
        &state.workloads[0].namespace,
        &state.workloads[0].name,
    );
    let split = project_split(&state).err();
    for error in [project(&state).err(), project_lazily(&state).err(), split] {
        match error {
            Some(ProjectionError::Collision { file }) => assert_eq!(file, expected),
            other => panic!("expected a collision, got {other:?}"),
        }
    }
}
