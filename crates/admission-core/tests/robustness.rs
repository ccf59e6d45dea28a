//! Malformed input never panics: every node of the conformance manifests is replaced, one at a
//! time, by values of every JSON type, and the CLI and server variants must return normally.

use std::path::PathBuf;

use admission_core::{
    JobValidationPolicy, RegionPolicy, evaluate_manifest, region_verdicts, validate_manifest,
};
use serde_json::{Value, json};

/// Every JSON pointer to a node of `value` (root excluded).
fn pointers(value: &Value, prefix: String, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                let pointer = format!("{prefix}/{}", key.replace('~', "~0").replace('/', "~1"));
                out.push(pointer.clone());
                pointers(child, pointer, out);
            }
        }
        Value::Array(items) => {
            for (index, child) in items.iter().enumerate() {
                let pointer = format!("{prefix}/{index}");
                out.push(pointer.clone());
                pointers(child, pointer, out);
            }
        }
        _ => {}
    }
}

#[test]
fn mutated_manifests_never_panic() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/conformance/gco/cases.jsonl");
    let text = std::fs::read_to_string(path).expect("read cases.jsonl");
    let policy = JobValidationPolicy::from_policy_document(&json!({
        "manifest_caps": {"max_cpu_millicores": 1000, "max_memory_bytes": 1073741824u64, "max_gpu_count": 1},
        "allowed_namespaces": ["gco-jobs"], "allowed_kinds": ["Job", "Pod", "TrainJob", "CronJob"],
        "trusted_registries": ["docker.io", "ghcr.io/huggingface"], "trusted_dockerhub_orgs": ["pytorch"],
        "manifest_security_policy": {"block_run_as_root": true},
    }))
    .expect("policy");
    let region =
        RegionPolicy::from_response_body("r", &json!({"policy": {"allowed_kinds": ["Job"]}}));
    let replacements = [
        json!(null),
        json!(0),
        json!(1.5),
        json!(true),
        json!("x/y"),
        json!([]),
        json!(["/"]),
        json!({}),
        json!({"a": null}),
    ];
    let mut evaluations = 0usize;
    for line in text.lines().filter(|l| !l.trim().is_empty()).step_by(5) {
        let case: Value = serde_json::from_str(line).expect("case is JSON");
        for manifest in case["manifests"].as_array().into_iter().flatten() {
            let mut nodes = Vec::new();
            pointers(manifest, String::new(), &mut nodes);
            for pointer in nodes {
                for replacement in &replacements {
                    let mut mutated = manifest.clone();
                    if let Some(node) = mutated.pointer_mut(&pointer) {
                        *node = replacement.clone();
                    }
                    let _ = evaluate_manifest(&mutated, &policy);
                    let _ = validate_manifest(&mutated, &policy, None);
                    let _ = region_verdicts(
                        std::slice::from_ref(&mutated),
                        std::slice::from_ref(&region),
                    );
                    evaluations += 1;
                }
            }
        }
    }
    assert!(evaluations > 1000, "only {evaluations} mutations ran");
}

/// Found by sorting random mixed lists: with 24 items Rust's sort detected the inconsistent
/// comparison of ints and strings and panicked ("does not correctly implement a total order").
const MIXED_REGISTRIES: &str = r#"[2,7,"r4","r8",1,"r2","r9","r7","r4","r3","r9",5,"r8",0,3,"r6",7,8,3,"r7",5,"r0","r0","r5"]"#;

#[test]
fn mixed_types_in_sorted_allowlists_raise_type_error_instead_of_panicking() {
    let mixed: Value = serde_json::from_str(MIXED_REGISTRIES).expect("JSON");
    for key in ["trusted_registries", "trusted_dockerhub_orgs"] {
        let error = JobValidationPolicy::from_policy_document(&json!({ key: mixed.clone() }))
            .expect_err("Python's sorted() raises on int < str");
        assert!(
            error
                .to_string()
                .starts_with("TypeError: '<' not supported between instances of "),
            "{key}: {error}"
        );
    }
    // Sets are sorted for drift and for messages: the same class of input must raise there too.
    let kinds = json!({"policy": {"allowed_kinds": mixed, "allowed_namespaces": mixed}});
    let regions = [
        RegionPolicy::from_response_body("a", &kinds),
        RegionPolicy::from_response_body("b", &json!({"policy": {"allowed_kinds": ["Job"]}})),
    ];
    assert!(admission_core::all_policy_drift(&regions).is_err());
    let manifest = json!({"kind": "Deployment", "metadata": {"name": "x", "namespace": "x"}});
    let issues = admission_core::evaluate_manifest(&manifest, regions[0].policy.as_ref().unwrap());
    assert!(issues.is_err(), "{issues:?}");
}
