//! Malformed input never panics. The seeds are the conformance cases' manifests and region
//! response bodies; every function `jobcheck` calls with them must return normally after:
//!
//! - every node of a manifest replaced, one at a time, by values of every JSON type;
//! - every node of a manifest or a response body deleted, duplicated (an array element twice, an
//!   object member wrapped in a list) or flipped to each other type, one at a time;
//! - random stacks of such mutations with hostile values (quantities, Unicode digits, huge and
//!   negative numbers, mixed-type lists), a property test (proptest, a bounded number of cases;
//!   a failure is shrunk and its seed saved in `robustness.proptest-regressions`, replayed
//!   first by every later run).
//!
//! Every crash found is kept below as an explicit regression case; the inputs the earlier
//! fuzzer's seeds produced are kept whole in `robustness-regressions.json`.

use std::path::PathBuf;
use std::sync::LazyLock;

use admission_core::{
    JobValidationPolicy, RegionPolicy, all_policy_drift, attach_enforcement_warnings,
    ecr_augmentation, evaluate_manifest, manifest_label, prefill_namespaces, py_repr,
    region_verdicts, validate_manifest,
};
use proptest::prelude::*;
use proptest::sample::{Index, select};
use serde_json::{Map, Value, json};

/// The manifests and the region response bodies of the conformance cases.
struct Seeds {
    manifests: Vec<Value>,
    bodies: Vec<Value>,
}

fn seeds() -> Seeds {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/conformance/gco/cases.jsonl");
    let text = std::fs::read_to_string(path).expect("read cases.jsonl");
    let mut seeds = Seeds {
        manifests: Vec::new(),
        bodies: Vec::new(),
    };
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let case: Value = serde_json::from_str(line).expect("case is JSON");
        seeds
            .manifests
            .extend(case["manifests"].as_array().into_iter().flatten().cloned());
        for region in case["regions"]
            .as_object()
            .into_iter()
            .flat_map(Map::values)
        {
            if let Some(body) = region.get("body") {
                seeds.bodies.push(body.clone());
            }
        }
    }
    assert!(seeds.manifests.len() > 100 && seeds.bodies.len() > 100);
    seeds
}

/// The multi-region path (each manifest prepared once, its answers shared between regions)
/// finds exactly what judging each manifest against each policy alone finds.
fn assert_verdicts_match_single_judgements(
    verdicts: &[admission_core::RegionVerdict],
    manifests: &[Value],
    policies: &[RegionPolicy],
) {
    for (verdict, entry) in verdicts.iter().zip(policies) {
        let Some(policy) = entry.readable_policy() else {
            continue;
        };
        let mut alone = Vec::new();
        for manifest in manifests.iter().filter(|m| m.is_object()) {
            alone.extend(
                evaluate_manifest(manifest, policy)
                    .expect("region_verdicts judged it without error"),
            );
        }
        assert_eq!(verdict.issues, alone, "region {}", entry.region);
    }
}

/// Everything `jobcheck check` does with manifests and response bodies, results discarded: only
/// a panic can fail.
fn judge_everything(manifests: &[Value], bodies: &[Value]) {
    let policies: Vec<RegionPolicy> = bodies
        .iter()
        .enumerate()
        .map(|(i, body)| RegionPolicy::from_response_body(format!("r{i}"), body))
        .collect();
    let mut manifests = manifests.to_vec();
    let _ = prefill_namespaces(&mut manifests, "gco-jobs");
    for manifest in &manifests {
        let _ = manifest_label(manifest);
        for policy in policies.iter().filter_map(|p| p.policy.as_ref()) {
            let _ = evaluate_manifest(manifest, policy);
            let _ = validate_manifest(manifest, policy, None);
            let _ = validate_manifest(manifest, policy, Some("gco-jobs"));
        }
    }
    if let Ok(mut verdicts) = region_verdicts(&manifests, &policies) {
        assert_verdicts_match_single_judgements(&verdicts, &manifests, &policies);
        attach_enforcement_warnings(&mut verdicts, &manifests, &policies, true);
        serde_json::to_string(&verdicts).expect("verdicts serialize");
    }
    if let Ok(drift) = all_policy_drift(&policies) {
        serde_json::to_string(&drift).expect("drift serializes");
    }
    let _ = ecr_augmentation(&policies);
    for policy in &policies {
        let _ = policy.enforcement_gaps();
        let _ = py_repr(&policy.document);
    }
}

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

/// A structural change at one node.
#[derive(Debug, Clone, Copy)]
enum Edit {
    /// Remove the node from its parent.
    Delete,
    /// An array element twice; an object member wrapped in a one-element list.
    Duplicate,
    /// The node's value turned into another JSON type that keeps some of its content.
    Flip,
}

const EDITS: [Edit; 3] = [Edit::Delete, Edit::Duplicate, Edit::Flip];

/// `value` with `edit` applied at `pointer` (unchanged when the pointer no longer resolves).
fn edited(value: &Value, pointer: &str, edit: Edit) -> Value {
    let mut out = value.clone();
    let Some((parent_pointer, last)) = pointer.rsplit_once('/') else {
        return out;
    };
    let key = last.replace("~1", "/").replace("~0", "~");
    let Some(parent) = out.pointer_mut(parent_pointer) else {
        return out;
    };
    match (parent, edit) {
        (Value::Array(items), Edit::Delete) => {
            if let Ok(index) = key.parse::<usize>()
                && index < items.len()
            {
                items.remove(index);
            }
        }
        (Value::Array(items), Edit::Duplicate) => {
            if let Some(item) = key.parse::<usize>().ok().and_then(|i| items.get(i)) {
                let copy = item.clone();
                items.push(copy);
            }
        }
        (Value::Object(map), Edit::Delete) => {
            map.remove(&key);
        }
        (Value::Object(map), Edit::Duplicate) => {
            if let Some(node) = map.get_mut(&key) {
                *node = Value::Array(vec![node.clone()]);
            }
        }
        (parent, Edit::Flip) => {
            if let Some(node) = parent.pointer_mut(&format!("/{last}")) {
                *node = flipped(node);
            }
        }
        _ => {}
    }
    out
}

/// A value of another type carrying some of `value`'s content: scalars become their string, a
/// string its number (or list of characters), a list a dict of its items, a dict its keys.
fn flipped(value: &Value) -> Value {
    match value {
        Value::Null => json!(false),
        Value::Bool(b) => json!(u8::from(*b)),
        Value::Number(n) => Value::String(n.to_string()),
        Value::String(s) => s
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number)
            .unwrap_or_else(|| s.chars().map(|c| json!(c.to_string())).collect()),
        Value::Array(items) => Value::Object(
            items
                .iter()
                .enumerate()
                .map(|(i, v)| (i.to_string(), v.clone()))
                .collect(),
        ),
        Value::Object(map) => map.keys().map(|k| json!(k)).collect(),
    }
}

#[test]
fn mutated_manifests_never_panic() {
    let seeds = seeds();
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
    for manifest in seeds.manifests.iter().step_by(5) {
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
    assert!(evaluations > 1000, "only {evaluations} mutations ran");
}

#[test]
fn every_node_deleted_duplicated_or_flipped_never_panics() {
    let seeds = seeds();
    let reference_body = seeds.bodies[0].clone();
    let reference_manifest = seeds.manifests[0].clone();
    let mut runs = 0usize;
    for manifest in seeds.manifests.iter().step_by(67) {
        let mut nodes = Vec::new();
        pointers(manifest, String::new(), &mut nodes);
        for pointer in &nodes {
            for edit in EDITS {
                let mutated = edited(manifest, pointer, edit);
                judge_everything(&[mutated], std::slice::from_ref(&reference_body));
                runs += 1;
            }
        }
    }
    for body in seeds.bodies.iter().step_by(67) {
        let mut nodes = Vec::new();
        pointers(body, String::new(), &mut nodes);
        for pointer in &nodes {
            for edit in EDITS {
                let mutated = edited(body, pointer, edit);
                judge_everything(
                    std::slice::from_ref(&reference_manifest),
                    &[mutated, reference_body.clone()],
                );
                runs += 1;
            }
        }
    }
    assert!(runs > 1000, "only {runs} mutations ran");
}

/// Strings the checks look for or choke on.
const STRINGS: &[&str] = &[
    "",
    "0",
    "4000m",
    "1e3",
    "1Gi",
    "1.5",
    "-1",
    "nan",
    "inf",
    " 7 ",
    "1_000",
    "١٢",
    "Job",
    "Pod",
    "gco-jobs",
    "docker.io",
    "nvidia.com/gpu",
    "Exists",
    "Equal",
    "NoSchedule",
    "privileged",
    "ALL",
    "x/y",
    "a:b@sha256:0",
    "ok",
    "Container",
    "requests.cpu",
];

fn known_string() -> impl Strategy<Value = Value> {
    select(STRINGS).prop_map(|s| json!(s))
}

/// A long list of mixed scalars: sorting it is where type mixes surface.
fn mixed_list() -> impl Strategy<Value = Value> {
    let item = prop_oneof![
        (0..=9i64).prop_map(|n| json!(n)),
        any::<bool>().prop_map(Value::Bool),
        Just(Value::Null),
        known_string(),
    ];
    prop::collection::vec(item, 16..=40).prop_map(Value::Array)
}

/// A hostile JSON value: quantities, Unicode digits, huge and negative numbers, the names the
/// checks look for, nested lists and dicts of such values (three levels at most).
fn hostile_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        1 => Just(Value::Null),
        1 => any::<bool>().prop_map(Value::Bool),
        1 => any::<i64>().prop_map(|n| json!(n)),
        1 => any::<u64>().prop_map(|n| json!(n)),
        1 => any::<f64>().prop_map(|f| {
            serde_json::Number::from_f64(f)
                .map(Value::Number)
                .unwrap_or(Value::Null)
        }),
        2 => known_string(),
        1 => any::<String>().prop_map(Value::String),
        1 => mixed_list(),
    ];
    leaf.prop_recursive(3, 32, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..=4).prop_map(Value::Array),
            prop::collection::vec((select(STRINGS), inner), 0..=3).prop_map(|members| {
                Value::Object(
                    members
                        .into_iter()
                        .map(|(key, value)| (key.to_string(), value))
                        .collect(),
                )
            }),
        ]
    })
}

/// One step of a mutation stack: at the node `at` picks (among the value's nodes when the step
/// runs), a hostile replacement or a structural edit.
#[derive(Debug, Clone)]
enum Mutation {
    Replace(Index, Value),
    Edit(Index, Edit),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        1 => (any::<Index>(), hostile_value()).prop_map(|(at, value)| Mutation::Replace(at, value)),
        2 => (any::<Index>(), select(EDITS.to_vec())).prop_map(|(at, edit)| Mutation::Edit(at, edit)),
    ]
}

/// `seed` with `mutations` applied in turn (a stack of one to six).
fn mutate(seed: &Value, mutations: &[Mutation]) -> Value {
    let mut value = seed.clone();
    for mutation in mutations {
        let mut nodes = Vec::new();
        pointers(&value, String::new(), &mut nodes);
        if nodes.is_empty() {
            break;
        }
        match mutation {
            Mutation::Replace(at, replacement) => {
                if let Some(node) = value.pointer_mut(at.get(&nodes).as_str()) {
                    *node = replacement.clone();
                }
            }
            Mutation::Edit(at, edit) => value = edited(&value, at.get(&nodes).as_str(), *edit),
        }
    }
    value
}

fn mutations() -> impl Strategy<Value = Vec<Mutation>> {
    prop::collection::vec(mutation(), 1..=6)
}

static SEEDS: LazyLock<Seeds> = LazyLock::new(seeds);

proptest! {
    #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

    /// A mutated manifest judged against a mutated and an intact response body.
    #[test]
    fn fuzzed_manifests_and_policies_never_panic(
        manifest in select(SEEDS.manifests.clone()),
        manifest_mutations in mutations(),
        body in select(SEEDS.bodies.clone()),
        body_mutations in mutations(),
        second in select(SEEDS.bodies.clone()),
    ) {
        let manifest = mutate(&manifest, &manifest_mutations);
        let first = mutate(&body, &body_mutations);
        judge_everything(&[manifest], &[first, second]);
    }
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
    assert!(all_policy_drift(&regions).is_err());
    let manifest = json!({"kind": "Deployment", "metadata": {"name": "x", "namespace": "x"}});
    let issues = evaluate_manifest(&manifest, regions[0].policy.as_ref().unwrap());
    assert!(issues.is_err(), "{issues:?}");
}

/// Found by the fuzzer (seed 0x1e21e2e400010000 with this file's generator): a replica count near
/// `i64::MAX` times a large request overflowed the quota totals ("attempt to multiply with
/// overflow"). Totals saturate now, and still exceed the quota.
#[test]
fn huge_replica_counts_saturate_instead_of_overflowing() {
    let manifest = json!({
        "kind": "Deployment",
        "metadata": {"name": "wide", "namespace": "gco-jobs"},
        "spec": {"replicas": i64::MAX, "template": {"spec": {"containers": [
            {"name": "a", "image": "nginx", "resources": {"requests": {"cpu": "9E"}, "limits": {"cpu": "9E"}}},
            {"name": "b", "image": "nginx", "resources": {"requests": {"cpu": "9E"}}},
        ]}}},
    });
    let enforcement = json!({"gco-jobs": {
        "status": "ok",
        "resource_quotas": {"q": {"requests.cpu": "1", "limits.cpu": "1", "pods": "1"}},
    }});
    let warnings = admission_core::enforcement::enforcement_warnings(
        &[manifest.clone(), manifest],
        &enforcement,
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.message.starts_with("requests.cpu total ")),
        "{warnings:?}"
    );
}

/// The inputs the seeds of the earlier fuzzer (arbtest, seeds `0x7a4df65e00010000` and
/// `0x1e21e2e400010000`) generated when they found the crashes above, kept whole.
#[test]
fn the_inputs_that_found_crashes_stay_fixed() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/robustness-regressions.json");
    let text = std::fs::read_to_string(path).expect("read robustness-regressions.json");
    let cases: Vec<Value> = serde_json::from_str(&text).expect("JSON");
    assert_eq!(cases.len(), 2);
    for case in cases {
        let manifests = case["manifests"].as_array().expect("manifests").clone();
        let bodies = case["bodies"].as_array().expect("bodies").clone();
        judge_everything(&manifests, &bodies);
    }
}
