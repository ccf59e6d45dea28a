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
    insta::assert_yaml_snapshot!("projection_file_names", names);

    let mut files = BTreeMap::new();
    for name in names.iter().filter(|n| n.as_str() != MANIFEST) {
        let text = std::fs::read_to_string(dir.join(name)).expect("read");
        let value: Value = serde_json::from_str(&text).expect("json");
        files.insert(name.clone(), value);
    }
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
    write_projection(&state, work.path()).expect("first");
    let dir = work.path().join("in");
    assert!(dir.join("deployment_team-a_web.json").is_file());

    let mut smaller = state.clone();
    smaller.workloads.retain(|w| w.name != "web");
    let summary = write_projection(&smaller, work.path()).expect("second");
    assert_eq!(summary.removed, state.len());
    assert_eq!(summary.written, state.len() - 1);
    assert!(
        !dir.join("deployment_team-a_web.json").exists(),
        "stale file kept"
    );
    assert_eq!(listing(&dir).len(), state.len());
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
    std::fs::write(fresh.path().join("in/namespace_team-a.json"), "{}").expect("write");
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
