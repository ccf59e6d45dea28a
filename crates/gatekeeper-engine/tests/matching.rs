//! The match conformance cases (gatekeeper's
//! `TestMatch`, `Test_namesMatch`, the wildcard tests and `TestMatcher_Match`), run against
//! [`gatekeeper_engine::matching::Match`].

use gatekeeper_engine::matching::{
    Match, NamespaceInfo, Source, wildcard_matches, wildcard_matches_generate_name,
};
use serde_json::{Value, json};

#[derive(Debug, PartialEq)]
enum Expect {
    Yes,
    No,
    Error,
}
use Expect::*;

fn obj(namespace: Option<&str>, name: &str) -> Value {
    let mut o = json!({"apiVersion": "group/v1", "kind": "kind", "metadata": {"name": name}});
    if let Some(ns) = namespace {
        o["metadata"]["namespace"] = json!(ns);
    }
    o
}

fn namespace_obj(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}})
}

fn ns(name: &str, labels: Value) -> NamespaceInfo {
    NamespaceInfo::from_object(&namespace_obj(name, labels))
}

fn run(
    object: Option<&Value>,
    attached: Option<&NamespaceInfo>,
    m: Value,
    source: Option<Source>,
) -> Expect {
    let parsed = match Match::parse(Some(&m)) {
        Ok(parsed) => parsed,
        Err(_) => return Error,
    };
    match parsed.matches_review(object, None, attached, source) {
        Ok(true) => Yes,
        Ok(false) => No,
        Err(_) => Error,
    }
}

fn check(
    case: u32,
    object: Option<&Value>,
    attached: Option<&NamespaceInfo>,
    m: Value,
    expect: Expect,
) {
    check_source(case, object, attached, m, Some(Source::Original), expect);
}

fn check_source(
    case: u32,
    object: Option<&Value>,
    attached: Option<&NamespaceInfo>,
    m: Value,
    source: Option<Source>,
    expect: Expect,
) {
    let got = run(object, attached, m.clone(), source);
    assert_eq!(
        got, expect,
        "case {case}: match {m} on {object:?} with {attached:?}"
    );
}

#[test]
fn test_match_cases_1_to_9_kinds() {
    let o = obj(None, "name");
    check(1, None, None, json!({"namespaceSelector": {}}), Error);
    check(
        2,
        Some(&o),
        None,
        json!({"kinds": [{"kinds": [], "apiGroups": []}]}),
        Yes,
    );
    check(
        3,
        Some(&o),
        None,
        json!({"kinds": [{"kinds": [], "apiGroups": ["*"]}]}),
        Yes,
    );
    check(
        4,
        Some(&o),
        None,
        json!({"kinds": [{"kinds": [], "apiGroups": ["rbac"]}]}),
        No,
    );
    check(
        5,
        Some(&o),
        None,
        json!({"kinds": [{"kinds": ["*"], "apiGroups": ["*"]}]}),
        Yes,
    );
    check(
        6,
        Some(&o),
        None,
        json!({"kinds": [{"kinds": ["notmatching", "neithermatching"], "apiGroups": ["*"]}, {"apiGroups": ["*"]}]}),
        Yes,
    );
    check(
        7,
        Some(&o),
        None,
        json!({"kinds": [{"kinds": ["kind", "neithermatching"]}]}),
        Yes,
    );
    check(
        8,
        Some(&o),
        None,
        json!({"kinds": [{"kinds": ["nm", "nm2"], "apiGroups": ["*"]}, {"kinds": ["nm", "kind"], "apiGroups": ["*"]}]}),
        Yes,
    );
    check(
        9,
        Some(&o),
        None,
        json!({"kinds": [{"kinds": ["nm", "nm2"], "apiGroups": ["*"]}, {"kinds": ["nm", "kind"], "apiGroups": ["notmatchinggroup"]}]}),
        No,
    );
}

#[test]
fn test_match_cases_10_to_15_namespaces() {
    let attached = ns("namespace", json!({}));
    check(
        10,
        Some(&obj(Some("namespace"), "name")),
        Some(&attached),
        json!({"namespaces": ["nonmatching", "namespace"]}),
        Yes,
    );
    check(
        11,
        Some(&namespace_obj("matching", json!({}))),
        None,
        json!({"namespaces": ["matching"]}),
        Yes,
    );
    check(
        12,
        Some(&namespace_obj("non-matching", json!({}))),
        None,
        json!({"namespaces": ["matching"]}),
        No,
    );
    check(
        13,
        Some(&obj(None, "name")),
        None,
        json!({"namespaces": ["nonmatching", "namespace"]}),
        Yes,
    );
    let kube = ns("kube-system", json!({}));
    check(
        14,
        Some(&obj(Some("kube-system"), "name")),
        Some(&kube),
        json!({"namespaces": ["nonmatching", "kube-*"]}),
        Yes,
    );
    check(
        15,
        Some(&obj(Some("namespace2"), "name")),
        None,
        json!({"namespaces": ["nonmatching", "notmatchingeither"]}),
        No,
    );
}

#[test]
fn test_match_cases_16_to_22_scope() {
    let namespaced = obj(Some("namespace"), "name");
    let cluster = obj(None, "name");
    let foo = namespace_obj("foo", json!({}));
    check(16, Some(&namespaced), None, json!({"scope": "Cluster"}), No);
    check(
        17,
        Some(&namespaced),
        None,
        json!({"scope": "Namespaced"}),
        Yes,
    );
    check(
        18,
        Some(&namespaced),
        None,
        json!({"scope": "cluster"}),
        Yes,
    );
    check(19, Some(&cluster), None, json!({"scope": "Cluster"}), Yes);
    check(20, Some(&cluster), None, json!({"scope": "Namespaced"}), No);
    check(21, Some(&foo), None, json!({"scope": "Cluster"}), Yes);
    check(22, Some(&foo), None, json!({"scope": "Namespaced"}), No);
}

#[test]
fn test_match_cases_23_to_27_excluded_namespaces() {
    check(
        23,
        Some(&obj(Some("namespace"), "name")),
        None,
        json!({"excludedNamespaces": ["namespace"]}),
        No,
    );
    check(
        24,
        Some(&namespace_obj("excluded", json!({}))),
        None,
        json!({"excludedNamespaces": ["excluded"]}),
        No,
    );
    check(
        25,
        Some(&namespace_obj("not-excluded", json!({}))),
        None,
        json!({"excludedNamespaces": ["excluded"]}),
        Yes,
    );
    check(
        26,
        Some(&obj(None, "name")),
        None,
        json!({"excludedNamespaces": ["namespace"]}),
        Yes,
    );
    let kube = ns("kube-system", json!({}));
    check(
        27,
        Some(&obj(Some("kube-system"), "name")),
        Some(&kube),
        json!({"excludedNamespaces": ["kube-*"]}),
        No,
    );
}

#[test]
fn test_match_cases_28_to_37_selectors() {
    let mut labelled = obj(None, "name");
    labelled["metadata"]["labels"] = json!({"labelname": "labelvalue"});
    check(
        28,
        Some(&labelled),
        None,
        json!({"labelSelector": {"matchLabels": {"labelname": "labelvalue"}}}),
        Yes,
    );
    check(
        29,
        Some(&labelled),
        None,
        json!({"labelSelector": {"matchExpressions": [{"key": "labelname", "operator": "Invalid"}]}}),
        Error,
    );
    check(
        30,
        Some(&labelled),
        None,
        json!({"labelSelector": {"matchLabels": {"labelname": "labelvalue", "labelnotmatching": "foo"}}}),
        No,
    );
    let foo = ns("foo", json!({"labelname": "labelvalue"}));
    let cluster = obj(None, "name");
    check(
        31,
        Some(&cluster),
        Some(&foo),
        json!({"namespaceSelector": {"matchLabels": {"labelname": "labelvalue"}}}),
        Yes,
    );
    check(
        32,
        Some(&cluster),
        Some(&foo),
        json!({"namespaceSelector": {"matchExpressions": [{"key": "labelname", "operator": "Invalid"}]}}),
        Error,
    );
    check(
        33,
        Some(&obj(Some("foo"), "name")),
        Some(&foo),
        json!({"namespaceSelector": {"matchLabels": {"labelname": "labelvalue", "foo": "bar"}}}),
        No,
    );
    check(
        34,
        Some(&cluster),
        None,
        json!({"namespaceSelector": {"matchLabels": {"labelname": "labelvalue", "foo": "bar"}}}),
        Yes,
    );
    let namespace = namespace_obj("namespace", json!({"labelname": "labelvalue"}));
    check(
        35,
        Some(&namespace),
        None,
        json!({"namespaceSelector": {"matchLabels": {"labelname": "labelvalue"}}}),
        Yes,
    );
    check(
        36,
        Some(&namespace),
        None,
        json!({"namespaceSelector": {"matchLabels": {"labelname": "badvalue"}}}),
        No,
    );
    check(
        37,
        Some(&obj(Some("foo"), "name")),
        None,
        json!({"namespaceSelector": {"matchLabels": {"labelname": "badvalue"}}}),
        Error,
    );
}

#[test]
fn test_match_cases_38_to_46_name_and_source() {
    let o = obj(None, "name-foo");
    check(38, Some(&o), None, json!({"name": "name-foo"}), Yes);
    check(39, Some(&o), None, json!({"name": "name-*"}), Yes);
    check(40, Some(&o), None, json!({"name": "name-"}), No);
    check(41, Some(&o), None, json!({"name": "name-bar"}), No);
    let namespaced = obj(Some("namespace"), "name-foo");
    check(
        42,
        Some(&namespaced),
        None,
        json!({"name": "name-foo", "namespaces": ["other-namespace"]}),
        No,
    );
    let my_ns = ns("my-ns", json!({}));
    let generated = Some(Source::Generated);
    check_source(
        43,
        Some(&namespaced),
        Some(&my_ns),
        json!({"name": "name-foo", "namespaces": ["my-ns"], "source": "Generated"}),
        generated,
        Yes,
    );
    check_source(
        44,
        Some(&namespaced),
        Some(&my_ns),
        json!({"name": "name-foo", "namespaces": ["my-ns"]}),
        generated,
        Yes,
    );
    check_source(
        45,
        Some(&namespaced),
        Some(&my_ns),
        json!({"source": "Original"}),
        generated,
        No,
    );
    check_source(
        46,
        Some(&namespaced),
        Some(&my_ns),
        json!({"source": "Original"}),
        None,
        Error,
    );
    check(
        0,
        Some(&namespaced),
        None,
        json!({"source": "Sometimes"}),
        Error,
    );
}

#[test]
fn names_match_with_generate_name() {
    let pod = |name: Option<&str>, generate: Option<&str>| {
        let mut o = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": "my-ns"}});
        if let Some(n) = name {
            o["metadata"]["name"] = json!(n);
        }
        if let Some(g) = generate {
            o["metadata"]["generateName"] = json!(g);
        }
        o
    };
    let cases = [
        ("foo*", pod(Some("foo-bar"), None), Yes),
        ("foo*", pod(None, Some("foo-bar-")), Yes),
        ("foo*", pod(Some("fob"), None), No),
        ("foo*", pod(None, Some("fob-bar-")), No),
        ("foo", pod(None, Some("foo")), No),
        ("*foo", pod(None, Some("foo")), No),
        ("*-bar*", pod(None, Some("fob-bar")), Yes),
    ];
    for (i, (pattern, object, expect)) in cases.into_iter().enumerate() {
        let my_ns = ns("my-ns", json!({}));
        check(
            i as u32,
            Some(&object),
            Some(&my_ns),
            json!({"name": pattern}),
            expect,
        );
    }
}

#[test]
fn wildcards() {
    let matches = [
        ("kube-system", "kube-system", true),
        ("kube-system", "gatekeeper-system", false),
        ("kube-*", "kube-system", true),
        ("kube-*", "gatekeeper-system", false),
        ("*-system", "kube-system", true),
        ("*-system", "kube-public", false),
        ("kube-", "kube-system", false),
        ("*-kube-*", "test-kube-test", true),
        ("*-kube-*", "my-kub-controller", false),
        ("-kube-", "test-kube-test", false),
        ("*--*", "my--namespace", true),
        ("**", "my:namespace", true),
        ("*", "", true),
    ];
    for (pattern, candidate, expect) in matches {
        assert_eq!(
            wildcard_matches(pattern, candidate),
            expect,
            "{pattern} ~ {candidate}"
        );
    }
    let generate = [
        ("kube-system", "kube-system", false),
        ("kube-*", "kube-system", true),
        ("*-system", "kube-system", false),
        ("*-kube-*", "test-dev-kube-dev-test", true),
        ("*-kube-*", "my-controller-manager", false),
    ];
    for (pattern, candidate, expect) in generate {
        assert_eq!(
            wildcard_matches_generate_name(pattern, candidate),
            expect,
            "{pattern} ~ {candidate}"
        );
    }
}

#[test]
fn matcher_cases_from_target_test() {
    let foo_match = json!({
        "kinds": [{"apiGroups": ["some"], "kinds": ["Thing"]}],
        "scope": "Namespaced",
        "namespaces": ["my-ns"],
        "labelSelector": {"matchLabels": {"obj": "label"}},
        "namespaceSelector": {"matchLabels": {"ns": "label"}},
        "source": "All"
    });
    let thing = json!({"apiVersion": "some/v1", "kind": "Thing", "metadata": {"name": "bar", "namespace": "foo", "labels": {"obj": "label"}}});
    // `namespaces` tests `foo` and fails before the namespaceSelector would err.
    check(1, Some(&thing), None, foo_match.clone(), No);
    let cluster_thing = json!({"apiVersion": "some/v1", "kind": "Thing", "metadata": {"name": "foo", "labels": {"obj": "label"}}});
    check(2, Some(&cluster_thing), None, foo_match.clone(), No);
    let ns_label = json!({
        "kinds": [{"apiGroups": ["some"], "kinds": ["Thing"]}],
        "namespaceSelector": {"matchLabels": {"ns": "label"}}
    });
    check(3, Some(&thing), None, ns_label.clone(), Error);
    check(
        4,
        Some(&namespace_obj("my-ns", json!({"ns": "label"}))),
        None,
        foo_match.clone(),
        No,
    );
    let my_ns = ns("my-ns", json!({"ns": "label"}));
    check(5, Some(&thing), Some(&my_ns), foo_match.clone(), Yes);
    let foo_without = ns("foo", json!({}));
    let foo_with = ns("foo", json!({"ns": "label"}));
    check(6, Some(&thing), Some(&foo_without), ns_label.clone(), No);
    check(7, Some(&thing), Some(&foo_with), ns_label.clone(), Yes);
    // Either object or oldObject suffices.
    let m = Match::parse(Some(&json!({"name": "new"}))).unwrap();
    let new = obj(None, "new");
    let old = obj(None, "old");
    assert_eq!(
        m.matches_review(Some(&new), Some(&old), None, Some(Source::Original)),
        Ok(true)
    );
    assert_eq!(
        m.matches_review(Some(&old), Some(&new), None, Some(Source::Original)),
        Ok(true)
    );
    assert_eq!(
        m.matches_review(Some(&old), Some(&old), None, Some(Source::Original)),
        Ok(false)
    );
    assert!(
        m.matches_review(None, None, None, Some(Source::Original))
            .is_err()
    );
}
