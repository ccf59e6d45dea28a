//! `gator test` semantics of [`gatekeeper_engine::Engine`]: ingestion rules, review shape and
//! results, the attached-namespace quirks and the enforcement actions (see
//! `docs/gatekeeper-semantics.md`).

use gatekeeper_engine::{
    Engine, EngineError, EngineOptions, NamespaceMode, ResultKind, ReviewResult,
};
use serde_json::{Value, json};

fn template(kind: &str, rego: &str) -> Value {
    json!({
        "apiVersion": "templates.gatekeeper.sh/v1",
        "kind": "ConstraintTemplate",
        "metadata": {"name": kind.to_lowercase()},
        "spec": {
            "crd": {"spec": {"names": {"kind": kind}, "validation": {"openAPIV3Schema": {
                "type": "object",
                "properties": {"n": {"type": "integer", "default": 7}, "word": {"type": "string"}}
            }}}},
            "targets": [{"target": "admission.k8s.gatekeeper.sh", "rego": rego}]
        }
    })
}

fn constraint(kind: &str, name: &str, spec: Value) -> Value {
    json!({"apiVersion": "constraints.gatekeeper.sh/v1beta1", "kind": kind, "metadata": {"name": name}, "spec": spec})
}

fn pod(namespace: &str, name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace}, "spec": {"replicas": 1000000}})
}

const ALWAYS: &str = "package always\nviolation[{\"msg\": msg}] {\n  msg := sprintf(\"%v %v\", [input.review.kind.kind, input.review.object.metadata.name])\n}\n";

fn review(objects: Vec<Value>) -> Vec<ReviewResult> {
    Engine::new(objects, EngineOptions::default())
        .expect("engine")
        .review_all()
        .expect("review")
}

fn msgs(results: &[ReviewResult]) -> Vec<String> {
    let mut m: Vec<String> = results.iter().map(|r| r.msg.clone()).collect();
    m.sort();
    m
}

#[test]
fn every_object_is_reviewed_including_template_and_constraint() {
    let results = review(vec![
        template("Always", ALWAYS),
        constraint("Always", "c", json!({})),
        pod("default", "p"),
    ]);
    assert_eq!(
        msgs(&results),
        vec!["Always c", "ConstraintTemplate always", "Pod p"]
    );
    let r = results.iter().find(|r| r.msg == "Pod p").unwrap();
    assert_eq!(r.constraint.enforcement_action, "deny");
    assert_eq!(r.details.as_deref(), Some("{}"));
    assert_eq!(r.object.namespace.as_deref(), Some("default"));
    assert!(r.is_enforceable());
}

#[test]
fn input_review_has_the_framework_shape() {
    let rego = "package shape\nviolation[{\"msg\": msg}] {\n  r := input.review\n  msg := json.marshal([r.uid, r.kind, r.resource, r.operation, r.userInfo, r.oldObject, r.options, r.namespaceObject, r.name, r.namespace, input.parameters])\n}\n";
    let results = review(vec![
        template("Shape", rego),
        constraint(
            "Shape",
            "c",
            json!({"match": {"kinds": [{"apiGroups": ["apps"], "kinds": ["Deployment"]}]}, "parameters": {"word": "x"}}),
        ),
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "ns1"}}),
    ]);
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(
        results[0].msg,
        r#"["",{"group":"apps","kind":"Deployment","version":"v1"},{"group":"","resource":"","version":""},"",{},null,null,null,"d","ns1",{"n":7,"word":"x"}]"#
    );
}

#[test]
fn inventory_has_cluster_and_namespace_layout() {
    let rego = "package inv\nviolation[{\"msg\": msg}] {\n  input.review.object.kind == \"Pod\"\n  c := data.inventory.cluster[\"v1\"].Namespace.ns1.metadata.name\n  p := data.inventory.namespace.ns1.v1.Pod[input.review.object.metadata.name].metadata.name\n  d := data.inventory.namespace.ns1[\"apps/v1\"].Deployment.d.metadata.name\n  msg := concat(\",\", [c, p, d])\n}\n";
    let results = review(vec![
        template("Inv", rego),
        constraint("Inv", "c", json!({})),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns1"}}),
        pod("ns1", "p"),
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "ns1"}}),
    ]);
    assert_eq!(msgs(&results), vec!["ns1,p,d"]);
}

#[test]
fn identical_violations_collapse_and_missing_msg_is_dropped() {
    let rego = "package dup\nviolation[{\"msg\": \"same\", \"extra\": x}] { x := [1, 2][_] }\nviolation[{\"msg\": \"same\", \"details\": {\"a\": 1}}] { true }\nviolation[{\"nomsg\": true}] { true }\n";
    let results = review(vec![
        template("Dup", rego),
        constraint(
            "Dup",
            "c",
            json!({"match": {"kinds": [{"kinds": ["Pod"]}]}}),
        ),
        pod("default", "p"),
    ]);
    let mut details: Vec<_> = results.iter().map(|r| r.details.clone().unwrap()).collect();
    details.sort();
    assert_eq!(details, vec!["{\"a\":1}".to_string(), "{}".to_string()]);
}

#[test]
fn evaluation_errors_become_results_for_every_constraint_of_the_kind() {
    let rego = "package boom\nf(x) = 1 { true }\nf(x) = 2 { true }\nviolation[{\"msg\": sprintf(\"%v\", [f(input.review.object)])}] { true }\n";
    let engine = Engine::new(
        vec![
            template("Boom", rego),
            constraint(
                "Boom",
                "a",
                json!({"match": {"kinds": [{"kinds": ["Pod"]}]}}),
            ),
            constraint(
                "Boom",
                "b",
                json!({"enforcementAction": "warn", "match": {"kinds": [{"kinds": ["Pod"]}]}}),
            ),
            pod("default", "p"),
        ],
        EngineOptions::default(),
    )
    .unwrap();
    let outcome = engine.review_all_detailed().expect("review");
    assert_eq!(outcome.results.len(), 2, "{:?}", outcome.results);
    for r in &outcome.results {
        assert_eq!(r.kind, ResultKind::EvalError);
        assert!(
            r.result
                .msg
                .contains("functions must not produce multiple outputs"),
            "{}",
            r.result.msg
        );
        assert!(r.result.msg.starts_with("template:"), "{}", r.result.msg);
        assert_eq!(r.result.details, None);
    }
}

#[test]
fn gator_test_attaches_an_empty_namespace_to_cluster_scoped_objects() {
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "r"}});
    let cases = [
        (json!({"scope": "Cluster"}), false),
        (json!({"scope": "Namespaced"}), true),
        (json!({"namespaces": ["foo"]}), false),
        (json!({"namespaces": ["*"]}), true),
        (json!({"excludedNamespaces": ["foo"]}), true),
        (json!({"excludedNamespaces": ["*"]}), false),
        (
            json!({"namespaceSelector": {"matchLabels": {"a": "b"}}}),
            false,
        ),
        (
            json!({"namespaceSelector": {"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}}),
            true,
        ),
    ];
    for (m, expect) in cases {
        let mut full = m.clone();
        full["kinds"] =
            json!([{"apiGroups": ["rbac.authorization.k8s.io"], "kinds": ["ClusterRole"]}]);
        let objects = vec![
            template("Always", ALWAYS),
            constraint("Always", "c", json!({"match": full})),
            role.clone(),
        ];
        let gator = Engine::new(objects.clone(), EngineOptions::default())
            .unwrap()
            .review_all()
            .expect("review");
        assert_eq!(!gator.is_empty(), expect, "gator test with {m}");
        let audit = Engine::new(
            objects,
            EngineOptions {
                namespace_mode: NamespaceMode::Audit,
                ..EngineOptions::default()
            },
        )
        .unwrap()
        .review_all()
        .expect("review");
        let audit_expect = !m.get("scope").is_some_and(|s| s == "Namespaced");
        assert_eq!(!audit.is_empty(), audit_expect, "audit with {m}");
    }
}

#[test]
fn namespace_selector_uses_input_namespaces_default_and_autorejects_the_rest() {
    let m = json!({"kinds": [{"kinds": ["Pod"]}], "namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "NotIn", "values": ["x"]}]}});
    let engine = Engine::new(
        vec![
            template("Always", ALWAYS),
            constraint("Always", "c", json!({"match": m})),
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "known", "labels": {"team": "x"}}}),
            pod("known", "in-known"),
            pod("default", "in-default"),
            pod("unknown", "in-unknown"),
        ],
        EngineOptions::default(),
    )
    .unwrap();
    let results = engine.review_all_detailed().expect("review").results;
    assert_eq!(results.len(), 2, "{results:?}");
    let default = results
        .iter()
        .find(|r| r.result.object.name == "in-default")
        .unwrap();
    assert_eq!(default.kind, ResultKind::Violation);
    let unknown = results
        .iter()
        .find(|r| r.result.object.name == "in-unknown")
        .unwrap();
    assert_eq!(unknown.kind, ResultKind::Autoreject);
    assert_eq!(
        unknown.result.msg,
        "unable to match constraints: error matching the requested object: in-unknown :failed to run Match criteria: namespace selector for namespace-scoped object but missing Namespace"
    );
    assert!(unknown.result.is_enforceable());
}

#[test]
fn audit_mode_skips_unknown_namespaces_and_sets_namespace_object() {
    let rego = "package nsobj\nviolation[{\"msg\": msg}] {\n  msg := input.review.namespaceObject.metadata.labels.team\n}\n";
    let results = Engine::new(
        vec![
            template("NsObj", rego),
            constraint("NsObj", "c", json!({"match": {"kinds": [{"kinds": ["Pod"]}]}})),
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "known", "labels": {"team": "blue"}}}),
            pod("known", "a"),
            pod("unknown", "b"),
        ],
        EngineOptions { namespace_mode: NamespaceMode::Audit, ..EngineOptions::default() },
    )
    .unwrap()
    .review_all().expect("review");
    assert_eq!(msgs(&results), vec!["blue"]);
}

#[test]
fn enforcement_actions_and_scoped_actions() {
    let pod_match = json!({"kinds": [{"kinds": ["Pod"]}]});
    let results = review(vec![
        template("Always", ALWAYS),
        constraint(
            "Always",
            "warn",
            json!({"enforcementAction": "warn", "match": pod_match}),
        ),
        constraint(
            "Always",
            "scoped-gator",
            json!({"enforcementAction": "scoped", "match": pod_match, "scopedEnforcementActions": [
                {"action": "warn", "enforcementPoints": [{"name": "*"}]},
                {"action": "deny", "enforcementPoints": [{"name": "gator.gatekeeper.sh"}]}
            ]}),
        ),
        constraint(
            "Always",
            "scoped-audit",
            json!({"enforcementAction": "scoped", "match": pod_match, "scopedEnforcementActions": [
                {"action": "deny", "enforcementPoints": [{"name": "audit.gatekeeper.sh"}]}
            ]}),
        ),
        pod("default", "p"),
    ]);
    assert_eq!(results.len(), 2, "{results:?}");
    let warn = results
        .iter()
        .find(|r| r.constraint.name == "warn")
        .unwrap();
    assert!(!warn.is_enforceable());
    let scoped = results
        .iter()
        .find(|r| r.constraint.name == "scoped-gator")
        .unwrap();
    assert_eq!(scoped.constraint.enforcement_action, "scoped");
    assert_eq!(scoped.constraint.scoped_actions, vec!["deny", "warn"]);
    assert!(scoped.is_enforceable());
}

fn ingest_error(objects: Vec<Value>) -> EngineError {
    Engine::new(objects, EngineOptions::default()).expect_err("ingestion should fail")
}

#[test]
fn template_ingestion_errors_name_the_template() {
    let mut wrong_name = template("Always", ALWAYS);
    wrong_name["metadata"]["name"] = json!("other");
    let e = ingest_error(vec![wrong_name]);
    assert!(
        e.to_string().contains(
            "adding template \"other\": invalid ConstraintTemplate: the ConstraintTemplate's name"
        ),
        "{e}"
    );

    let e = ingest_error(vec![template(
        "NoViolation",
        "package x\ndeny[msg] { msg := \"a\" }\n",
    )]);
    assert!(
        e.to_string()
            .contains("missing required rules: [violation]"),
        "{e}"
    );

    let e = ingest_error(vec![template(
        "Broken",
        "package x\nviolation[{\"msg\": m}] { m := \n",
    )]);
    assert!(
        e.to_string().starts_with(
            "adding template \"broken\": invalid ConstraintTemplate: invalid rego: template:"
        ),
        "{e}"
    );

    let e = ingest_error(vec![template(
        "Unsafe",
        "package x\nviolation[{\"msg\": m}] { m > 1 }\n",
    )]);
    assert!(e.to_string().contains("adding template \"unsafe\""), "{e}");

    let e = ingest_error(vec![template(
        "BadRef",
        "package x\nviolation[{\"msg\": m}] { m := data.other.x }\n",
    )]);
    assert!(e.to_string().contains("disallowed ref data.other.x"), "{e}");

    let e = ingest_error(vec![template(
        "BadImport",
        "package x\nimport rego.v1\nviolation[{\"msg\": \"m\"}] { true }\n",
    )]);
    assert!(e.to_string().contains("bad import: rego.v1"), "{e}");

    let mut target = template("Always", ALWAYS);
    target["spec"]["targets"][0]["target"] = json!("other.target");
    let e = ingest_error(vec![target]);
    assert!(
        e.to_string()
            .contains("target \"other.target\" not recognized"),
        "{e}"
    );

    let mut lib = template("Always", ALWAYS);
    lib["spec"]["targets"][0]["libs"] = json!(["package notlib\nf(x) { true }\n"]);
    let e = ingest_error(vec![lib]);
    assert!(e.to_string().contains("not found in lib prefixes"), "{e}");
}

#[test]
fn legacy_rego_overrides_code_and_is_always_v0() {
    let mut t = template(
        "Legacy",
        "package legacy\nviolation[{\"msg\": \"legacy\"}] { input.review.object.kind == \"Pod\" }\n",
    );
    t["spec"]["targets"][0]["code"] = json!([{"engine": "Rego", "source": {"version": "v1", "rego": "package x\nviolation contains {\"msg\": \"code\"} if { true }\n"}}]);
    let results = review(vec![
        t,
        constraint("Legacy", "c", json!({})),
        pod("default", "p"),
    ]);
    assert_eq!(msgs(&results), vec!["legacy"]);
}

#[test]
fn constraint_ingestion_rules() {
    let base = || vec![template("Always", ALWAYS)];
    let with = |c: Value| {
        let mut objects = base();
        objects.push(c);
        ingest_error(objects)
    };
    let e = with(constraint(
        "Always",
        "c",
        json!({"parameters": {"n": "seven"}}),
    ));
    assert!(e.is_schema(), "{e}");
    assert!(
        e.to_string()
            .contains("schema validation failed: spec.parameters.n"),
        "{e}"
    );

    let e = with(constraint(
        "Always",
        "c",
        json!({"parameters": {"unknown": 1}}),
    ));
    assert!(!e.is_schema());
    assert!(
        e.to_string()
            .contains("unknown fields: [\"spec.parameters.unknown\"]"),
        "{e}"
    );

    let mut v1 = constraint("Always", "c", json!({}));
    v1["apiVersion"] = json!("constraints.gatekeeper.sh/v1");
    let e = with(v1);
    assert!(
        e.to_string()
            .contains("unsupported version \"v1\" for Constraint \"c\""),
        "{e}"
    );

    let e = ingest_error(vec![constraint("Missing", "c", json!({}))]);
    assert!(
        e.to_string()
            .contains("missing ConstraintTemplate: template \"missing\" not found"),
        "{e}"
    );

    let e = with(constraint("Always", "Bad_Name", json!({})));
    assert!(e.to_string().contains("RFC 1123"), "{e}");

    let e = with(constraint(
        "Always",
        "c",
        json!({"match": {"labelSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}}}),
    ));
    assert!(e.to_string().contains("values set can't be empty"), "{e}");
}

#[test]
fn legacy_schema_templates_accept_unknown_parameters_and_defaults_apply() {
    let mut t = template(
        "Params",
        "package params\nviolation[{\"msg\": json.marshal(input.parameters)}] { input.review.object.kind == \"Pod\" }\n",
    );
    t["apiVersion"] = json!("templates.gatekeeper.sh/v1beta1");
    let engine = Engine::new(
        vec![
            t,
            constraint("Params", "c", json!({"parameters": {"extra": true}})),
            pod("default", "p"),
        ],
        EngineOptions::default(),
    )
    .unwrap();
    assert_eq!(
        msgs(&engine.review_all().expect("review")),
        vec![r#"{"extra":true,"n":7}"#]
    );
    let held = engine.constraint_object("Params", "c").unwrap();
    assert_eq!(held["spec"]["enforcementAction"], json!("deny"));
    assert_eq!(held["spec"]["parameters"]["n"], json!(7));
}

#[test]
fn objects_without_version_or_kind_are_rejected() {
    let e = ingest_error(vec![json!({"kind": "Pod", "metadata": {"name": "p"}})]);
    assert!(e.to_string().contains("has no version"), "{e}");
    assert!(matches!(ingest_error(vec![]), EngineError::NoInput));
}

#[test]
fn rego_v1_templates_and_libs() {
    let mut t = template("VOne", "");
    t["spec"]["targets"][0] = json!({"target": "admission.k8s.gatekeeper.sh", "code": [{"engine": "Rego", "source": {
        "version": "v1",
        "rego": "package vone\nimport data.lib.names.shout\nviolation contains {\"msg\": shout(name)} if {\n  some name in [input.review.object.metadata.name]\n  name != \"\"\n}\n",
        "libs": ["package lib.names\nshout(s) := upper(s)\n"]
    }}]});
    let results = review(vec![
        t,
        constraint(
            "VOne",
            "c",
            json!({"match": {"kinds": [{"kinds": ["Pod"]}]}}),
        ),
        pod("default", "quiet"),
    ]);
    assert_eq!(msgs(&results), vec!["QUIET"]);

    let mut bracket = template("VBracket", "");
    bracket["spec"]["targets"][0] = json!({"target": "admission.k8s.gatekeeper.sh", "code": [{"engine": "Rego", "source": {
        "version": "v1", "rego": "package vb\nviolation[{\"msg\": \"m\"}] if { true }\n"
    }}]});
    assert!(
        ingest_error(vec![bracket])
            .to_string()
            .contains("partial object")
    );
}

const WORD: &str = "package word\nviolation[{\"msg\": msg}] {\n  msg := sprintf(\"%v %v\", [input.parameters.word, input.review.object.metadata.name])\n}\n";

#[test]
fn constraints_with_equal_parameters_share_one_evaluation() {
    let pods_only = |word: &str, action: &str| json!({"enforcementAction": action, "match": {"kinds": [{"kinds": ["Pod"]}]}, "parameters": {"word": word}});
    let engine = Engine::new(
        vec![
            template("Word", WORD),
            constraint("Word", "a-deny", pods_only("x", "deny")),
            constraint("Word", "b-warn", pods_only("x", "warn")),
            constraint("Word", "c-other", pods_only("y", "deny")),
            pod("default", "p"),
            pod("default", "q"),
        ],
        EngineOptions::default(),
    )
    .unwrap();
    let outcome = engine.review_all_detailed().expect("review");
    let mut got: Vec<(String, String, String)> = outcome
        .results
        .iter()
        .map(|d| {
            let r = &d.result;
            (
                r.constraint.name.clone(),
                r.constraint.enforcement_action.clone(),
                r.msg.clone(),
            )
        })
        .collect();
    got.sort();
    let want = [
        ("a-deny", "deny", "x p"),
        ("a-deny", "deny", "x q"),
        ("b-warn", "warn", "x p"),
        ("b-warn", "warn", "x q"),
        ("c-other", "deny", "y p"),
        ("c-other", "deny", "y q"),
    ]
    .map(|(n, a, m)| (n.to_string(), a.to_string(), m.to_string()));
    assert_eq!(got, want);
    // Three constraints reviewed each pod; the warn/deny pair shared one Rego evaluation.
    assert_eq!(outcome.stats.reviews, 6);
    assert_eq!(outcome.stats.evaluations, 4);
}

#[test]
fn inventory_is_loaded_for_templates_whose_libs_read_it() {
    let mut t = template("LibInv", "");
    t["spec"]["targets"][0] = json!({
        "target": "admission.k8s.gatekeeper.sh",
        "rego": "package libinv\nimport data.lib.inv.namespaces\nviolation[{\"msg\": msg}] {\n  input.review.object.kind == \"Pod\"\n  msg := concat(\",\", namespaces)\n}\n",
        "libs": ["package lib.inv\nnamespaces := sort([n | data.inventory.cluster.v1.Namespace[n]])\n"]
    });
    let engine = Engine::new(
        vec![
            t,
            template("Always", ALWAYS),
            constraint("LibInv", "c", json!({})),
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns2"}}),
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns1"}}),
            pod("ns1", "p"),
        ],
        EngineOptions::default(),
    )
    .unwrap();
    let uses: Vec<(&str, bool)> = engine
        .policies()
        .templates()
        .iter()
        .map(|t| (t.kind.as_str(), t.uses_inventory()))
        .collect();
    assert_eq!(uses, vec![("LibInv", true), ("Always", false)]);
    assert!(engine.policies().uses_inventory());
    assert_eq!(msgs(&engine.review_all().expect("review")), vec!["ns1,ns2"]);
}

#[test]
fn template_errors_come_before_inventory_errors_whatever_the_input_order() {
    // The framework ingests templates, then constraints, then data: a bad template is reported
    // even when an object without a version comes first.
    let e = ingest_error(vec![
        json!({"kind": "Pod", "metadata": {"name": "p"}}),
        template("Broken", "package broken\n"),
    ]);
    assert!(e.to_string().contains("missing required rules"), "{e}");
}

#[test]
fn input_objects_are_kept_in_order_with_normalised_numbers() {
    let config_map = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"}, "data": {"n": 9007199254740993i64, "f": 2.0}});
    // Any iterator will do: the engine takes objects one at a time.
    let objects = std::iter::once(template("Always", ALWAYS)).chain(std::iter::once(config_map));
    let engine = Engine::new(objects, EngineOptions::default()).unwrap();
    assert_eq!(engine.object_count(), 2);
    assert_eq!(engine.object(0).unwrap()["kind"], "ConstraintTemplate");
    let config_map = engine.object(1).unwrap();
    assert_eq!(config_map["data"]["n"], json!(9007199254740992i64));
    assert_eq!(config_map["data"]["f"], json!(2));
    assert_eq!(engine.object(2), None);
}

#[test]
fn regex_match_is_undefined_for_invalid_patterns_and_non_strings() {
    // Without a `word`, the pattern is the number `n`.
    let rego = "package rx\nviolation[{\"msg\": msg}] {\n  input.review.object.kind == \"Pod\"\n  pattern := object.get(input.parameters, \"word\", input.parameters.n)\n  not regex.match(pattern, input.review.object.metadata.name)\n  msg := sprintf(\"%v does not match\", [pattern])\n}\n";
    let results = review(vec![
        template("Rx", rego),
        constraint("Rx", "matches", json!({"parameters": {"word": "^p$"}})),
        constraint("Rx", "differs", json!({"parameters": {"word": "^q$"}})),
        constraint("Rx", "invalid", json!({"parameters": {"word": "("}})),
        constraint("Rx", "number", json!({"parameters": {"n": 7}})),
        pod("default", "p"),
    ]);
    // `not` of an undefined call holds, as for any non-strict builtin error.
    assert_eq!(
        msgs(&results),
        vec!["( does not match", "7 does not match", "^q$ does not match"]
    );
}
