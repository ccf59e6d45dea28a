//! The embedded engine reviews the objects a page at a time when no template reads
//! `data.inventory`: its results must be exactly those of one engine holding every object (the
//! same multiset; pages come out one after the other), over more objects than a page holds.

use gatekeeper_engine::{Engine, EngineOptions, ReviewResult};
use gator_runner::engine::{Embedded, PAGE_OBJECTS, PolicyEngine, ReviewInput};
use serde_json::{Value, json};

fn fixture(path: &str) -> Value {
    let file = format!(
        "{}/../../fixtures/gatekeeper/{path}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file}: {e}"));
    serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{file}: {e}"))
}

fn constraint(kind: &str, name: &str, parameters: Value) -> Value {
    json!({
        "apiVersion": "constraints.gatekeeper.sh/v1beta1",
        "kind": kind,
        "metadata": {"name": name},
        "spec": {
            "match": {"kinds": [{"apiGroups": ["apps"], "kinds": ["Deployment"]}]},
            "parameters": parameters,
        },
    })
}

/// Deployments in three namespaces (one without a Namespace object), some labelled, some with
/// the same `app` label as others, a few with the same message as others.
fn deployments(count: usize) -> Vec<Value> {
    (0..count)
        .map(|i| {
            let mut labels = json!({"app": format!("app-{}", i % 700)});
            if i % 3 == 0 {
                labels["owner"] = json!("payments.team");
            }
            let namespace = ["team-a", "team-b", "elsewhere"][i % 3];
            json!({
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {
                    "name": format!("d{}", i % 900),
                    "namespace": namespace,
                    "labels": labels,
                },
                "spec": {"replicas": i % 4},
            })
        })
        .collect()
}

fn namespace(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": {"team": name}}})
}

fn required_labels_policy() -> Vec<Value> {
    vec![
        fixture("requiredlabels/template.yaml"),
        constraint(
            "K8sRequiredLabels",
            "owner",
            json!({"labels": [{"key": "owner"}]}),
        ),
        namespace("team-a"),
        namespace("team-b"),
    ]
}

/// What one engine holding every object gives, sorted.
fn whole(policy: &[Value], objects: &[Value]) -> Vec<ReviewResult> {
    let all = policy.iter().chain(objects).cloned();
    let mut results = Engine::new(all, EngineOptions::default())
        .expect("engine")
        .review_all()
        .expect("review");
    results.sort();
    results
}

/// What the paging engine gives, sorted.
fn paged(policy: &[Value], objects: &[Value]) -> Vec<ReviewResult> {
    let input = ReviewInput::new(policy.to_vec(), objects.iter().cloned());
    let mut results = Embedded::default().review_to_vec(input).expect("review");
    results.sort();
    results
}

#[test]
fn paged_results_are_the_whole_reviews_results() {
    let policy = required_labels_policy();
    let objects = deployments(2 * PAGE_OBJECTS + 77);
    let expected = whole(&policy, &objects);
    assert!(
        expected.len() > PAGE_OBJECTS,
        "the input must fill several pages with results: {}",
        expected.len()
    );
    assert_eq!(paged(&policy, &objects), expected);
}

#[test]
fn a_template_reading_the_inventory_gets_every_object_at_once() {
    let mut policy = required_labels_policy();
    policy.push(fixture("uniquelabel/template.yaml"));
    policy.push(constraint(
        "K8sUniqueLabel",
        "unique-app",
        json!({"label": "app"}),
    ));
    let objects = deployments(PAGE_OBJECTS + 300);
    let expected = whole(&policy, &objects);
    let duplicates = expected
        .iter()
        .filter(|r| r.constraint.kind == "K8sUniqueLabel")
        .count();
    assert!(
        duplicates > 300,
        "duplicates across pages are found: {duplicates}"
    );
    assert_eq!(paged(&policy, &objects), expected);
}

#[test]
fn a_policy_object_among_the_paged_objects_is_refused_by_name() {
    let policy = required_labels_policy();
    let mut objects = deployments(3);
    objects.push(namespace("late"));
    let input = ReviewInput::new(policy, objects.into_iter());
    let error = Embedded::default().review_to_vec(input).unwrap_err();
    let text = format!("{error}: {}", std::error::Error::source(&error).unwrap());
    assert!(
        text.contains("Namespace \"late\"") && text.contains("policy object"),
        "{text}"
    );
}
