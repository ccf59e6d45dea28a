//! ExpansionTemplates in [`gatekeeper_engine::Engine`], as `gator test` applies them (see
//! `docs/gatekeeper-semantics.md`): resultants reviewed after their object, results on the
//! object with the `[Implied by …]` prefix and the template's action, `match.source`, chained
//! expansion, gator's errors, and the API a report uses to tell what a constraint can see.

use gatekeeper_engine::matching::{Match, Source};
use gatekeeper_engine::{
    Engine, EngineError, EngineOptions, ExpansionSet, ExpansionTemplate, Gvk, NamespaceMode,
    ResultKind, ReviewResult, output,
};
use serde_json::{Value, json};

/// A template flagging every reviewed object, with its kind and name (and its review's
/// namespace object's `team` label, when there is one).
fn name_everything() -> Value {
    json!({
        "apiVersion": "templates.gatekeeper.sh/v1",
        "kind": "ConstraintTemplate",
        "metadata": {"name": "nameit"},
        "spec": {"crd": {"spec": {"names": {"kind": "NameIt"}}}, "targets": [{
            "target": "admission.k8s.gatekeeper.sh",
            "rego": "package nameit\nviolation[{\"msg\": msg, \"details\": {\"team\": team}}] {\n  team := object.get(input.review, [\"namespaceObject\", \"metadata\", \"labels\", \"team\"], \"none\")\n  msg := sprintf(\"%v %v\", [input.review.kind.kind, input.review.object.metadata.name])\n}\n"
        }]}
    })
}

fn constraint(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "constraints.gatekeeper.sh/v1beta1", "kind": "NameIt", "metadata": {"name": name}, "spec": spec})
}

fn pods_only(name: &str) -> Value {
    constraint(
        name,
        json!({"match": {"kinds": [{"apiGroups": [""], "kinds": ["Pod"]}]}}),
    )
}

fn expansion(
    name: &str,
    from: (&str, &str),
    source: &str,
    to: (&str, &str),
    action: &str,
) -> Value {
    json!({
        "apiVersion": "expansion.gatekeeper.sh/v1beta1",
        "kind": "ExpansionTemplate",
        "metadata": {"name": name},
        "spec": {
            "applyTo": [{"groups": [from.0], "kinds": [from.1], "versions": ["v1"]}],
            "templateSource": source,
            "generatedGVK": {"group": to.0, "version": "v1", "kind": to.1},
            "enforcementAction": action
        }
    })
}

fn workload_expansions() -> Vec<Value> {
    vec![
        expansion(
            "expand-deployments",
            ("apps", "Deployment"),
            "spec.template",
            ("", "Pod"),
            "",
        ),
        expansion(
            "expand-cronjobs",
            ("batch", "CronJob"),
            "spec.jobTemplate",
            ("batch", "Job"),
            "",
        ),
        expansion(
            "expand-jobs",
            ("batch", "Job"),
            "spec.template",
            ("", "Pod"),
            "",
        ),
    ]
}

fn deployment(namespace: &str, name: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
           "spec": {"template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": []}}}})
}

fn cronjob(namespace: &str, name: &str) -> Value {
    json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name, "namespace": namespace},
           "spec": {"jobTemplate": {"spec": {"template": {"spec": {}}}}}})
}

fn engine(objects: Vec<Value>) -> Engine {
    Engine::new(objects, EngineOptions::default()).expect("engine")
}

fn review(objects: Vec<Value>) -> Vec<ReviewResult> {
    engine(objects).review_all().expect("review")
}

/// (object kind/name, constraint, action, msg) of every result, sorted.
fn shown(results: &[ReviewResult]) -> Vec<(String, String, String, String)> {
    let mut out: Vec<_> = results
        .iter()
        .map(|r| {
            (
                format!("{}/{}", r.object.kind, r.object.name),
                r.constraint.name.clone(),
                r.constraint.enforcement_action.clone(),
                r.msg.clone(),
            )
        })
        .collect();
    out.sort();
    out
}

fn row(
    object: &str,
    constraint: &str,
    action: &str,
    msg: &str,
) -> (String, String, String, String) {
    (object.into(), constraint.into(), action.into(), msg.into())
}

#[test]
fn a_pod_constraint_flags_a_deployment_through_its_pod() {
    let mut objects = vec![
        name_everything(),
        pods_only("pods"),
        deployment("shop", "API"),
    ];
    objects.extend(workload_expansions());
    let engine = engine(objects);
    let outcome = engine.review_all_detailed().expect("review");
    assert_eq!(outcome.results.len(), 1, "{:?}", outcome.results);
    let found = &outcome.results[0];
    let result = &found.result;
    // The message is the resultant's, prefixed; the result is the Deployment's.
    assert_eq!(result.msg, "[Implied by expand-deployments] Pod api-pod");
    assert_eq!(result.implied_by(), Some("expand-deployments"));
    assert_eq!(result.own_message(), "Pod api-pod");
    assert_eq!(
        (
            result.object.api_version.as_str(),
            result.object.kind.as_str(),
            result.object.name.as_str()
        ),
        ("apps/v1", "Deployment", "API")
    );
    assert_eq!(result.object.namespace.as_deref(), Some("shop"));
    assert_eq!(found.kind, ResultKind::Violation);
    assert!(!result.is_evaluation_error());
    // gator's output shows the Deployment as the violating object.
    let json: Value =
        serde_json::from_str(&output::render_json(&engine, &outcome.results)).unwrap();
    assert_eq!(json[0]["violatingObject"]["kind"], "Deployment");
    assert_eq!(
        output::render_text(&outcome.results),
        "apps/v1/Deployment shop/API: [\"pods\"] Message: \"[Implied by expand-deployments] Pod api-pod\"\n"
    );
}

#[test]
fn a_cronjob_is_expanded_into_its_job_and_the_jobs_pod() {
    let mut objects = vec![
        name_everything(),
        constraint(
            "jobs-and-pods",
            json!({"match": {"kinds": [{"apiGroups": ["", "batch"], "kinds": ["Pod", "Job"]}]}}),
        ),
        cronjob("batch", "nightly"),
    ];
    objects.extend(workload_expansions());
    assert_eq!(
        shown(&review(objects)),
        [
            row(
                "CronJob/nightly",
                "jobs-and-pods",
                "deny",
                "[Implied by expand-cronjobs] Job nightly-job"
            ),
            row(
                "CronJob/nightly",
                "jobs-and-pods",
                "deny",
                "[Implied by expand-jobs] Pod nightly-job-pod"
            ),
        ]
    );
}

#[test]
fn match_source_tells_objects_from_resultants() {
    let pods = |name: &str, source: &str| {
        constraint(
            name,
            json!({"match": {"source": source, "kinds": [{"apiGroups": ["", "apps"], "kinds": ["Pod", "Deployment"]}]}}),
        )
    };
    let mut objects = vec![
        name_everything(),
        pods("all", "All"),
        pods("generated", "Generated"),
        pods("original", "Original"),
        deployment("shop", "api"),
    ];
    objects.extend(workload_expansions());
    assert_eq!(
        shown(&review(objects)),
        [
            row("Deployment/api", "all", "deny", "Deployment api"),
            row(
                "Deployment/api",
                "all",
                "deny",
                "[Implied by expand-deployments] Pod api-pod"
            ),
            row(
                "Deployment/api",
                "generated",
                "deny",
                "[Implied by expand-deployments] Pod api-pod"
            ),
            row("Deployment/api", "original", "deny", "Deployment api"),
        ]
    );
}

#[test]
fn the_templates_action_replaces_the_constraints_and_scoped_actions_stay() {
    let scoped = constraint(
        "scoped",
        json!({"enforcementAction": "scoped", "scopedEnforcementActions": [
            {"action": "deny", "enforcementPoints": [{"name": "gator.gatekeeper.sh"}]}],
            "match": {"kinds": [{"apiGroups": [""], "kinds": ["Pod"]}]}}),
    );
    let objects = vec![
        name_everything(),
        pods_only("pods"),
        scoped,
        expansion(
            "expand-deployments",
            ("apps", "Deployment"),
            "spec.template",
            ("", "Pod"),
            "warn",
        ),
        deployment("shop", "api"),
    ];
    let results = review(objects);
    assert_eq!(
        shown(&results),
        [
            row(
                "Deployment/api",
                "pods",
                "warn",
                "[Implied by expand-deployments] Pod api-pod"
            ),
            row(
                "Deployment/api",
                "scoped",
                "warn",
                "[Implied by expand-deployments] Pod api-pod"
            ),
        ]
    );
    let pods = results
        .iter()
        .find(|r| r.constraint.name == "pods")
        .unwrap();
    assert!(!pods.is_enforceable());
    let scoped = results
        .iter()
        .find(|r| r.constraint.name == "scoped")
        .unwrap();
    assert_eq!(scoped.constraint.scoped_actions, ["deny"]);
    // As in gator: the scoped `deny` still fails `gator test`.
    assert!(scoped.is_enforceable());
}

#[test]
fn a_workload_flagged_directly_and_through_its_pod_is_one_object() {
    let both = constraint(
        "both",
        json!({"match": {"kinds": [{"apiGroups": ["", "apps"], "kinds": ["Pod", "Deployment"]}]}}),
    );
    let mut objects = vec![name_everything(), both, deployment("shop", "api")];
    objects.extend(workload_expansions());
    let results = review(objects);
    assert_eq!(results.len(), 2);
    assert_eq!(results[0].object, results[1].object);
    assert_eq!(results[0].constraint, results[1].constraint);
    let implied: Vec<Option<&str>> = results.iter().map(ReviewResult::implied_by).collect();
    assert!(
        implied.contains(&None) && implied.contains(&Some("expand-deployments")),
        "{implied:?}"
    );
}

#[test]
fn resultants_get_the_objects_namespace_and_autorejects_stay_autorejects() {
    let selected = constraint(
        "selected",
        json!({"match": {"kinds": [{"apiGroups": [""], "kinds": ["Pod"]}], "namespaceSelector": {"matchLabels": {"team": "x"}}}}),
    );
    let mut objects = vec![name_everything(), selected, deployment("ghost", "web")];
    objects.extend(workload_expansions());
    let outcome = engine(objects).review_all_detailed().expect("review");
    assert_eq!(outcome.results.len(), 1);
    let found = &outcome.results[0];
    assert_eq!(found.kind, ResultKind::Autoreject);
    assert_eq!(
        found.result.msg,
        "[Implied by expand-deployments] unable to match constraints: error matching the requested \
         object: web-pod :failed to run Match criteria: namespace selector for namespace-scoped \
         object but missing Namespace"
    );
    // An autoreject is a violation for the report, not an evaluation error, prefix or not.
    assert!(!found.result.is_evaluation_error());
}

#[test]
fn evaluation_errors_of_resultants_are_evaluation_errors() {
    let mut boom = name_everything();
    boom["spec"]["targets"][0]["rego"] = json!(
        "package nameit\nf(x) = 1 { true }\nf(x) = 2 { true }\nviolation[{\"msg\": sprintf(\"%v\", [f(input.review.object)])}] { true }\n"
    );
    let mut objects = vec![boom, pods_only("pods"), deployment("shop", "api")];
    objects.extend(workload_expansions());
    let results = review(objects);
    assert_eq!(results.len(), 1);
    assert!(
        results[0]
            .msg
            .starts_with("[Implied by expand-deployments] template:"),
        "{}",
        results[0].msg
    );
    assert!(results[0].is_evaluation_error());
}

#[test]
fn audit_mode_gives_resultants_the_objects_namespace_object() {
    let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop", "labels": {"team": "blue"}}});
    let mut objects = vec![
        name_everything(),
        pods_only("pods"),
        namespace,
        deployment("shop", "api"),
    ];
    objects.extend(workload_expansions());
    let options = EngineOptions {
        namespace_mode: NamespaceMode::Audit,
        ..EngineOptions::default()
    };
    let results = Engine::new(objects, options)
        .unwrap()
        .review_all()
        .expect("review");
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].details.as_deref(), Some(r#"{"team":"blue"}"#));
}

#[test]
fn the_first_object_that_cannot_be_expanded_in_input_order_stops_the_review() {
    let broken = |name: &str| json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "shop"}, "spec": {}});
    let mut objects = vec![name_everything(), pods_only("pods")];
    objects.extend(workload_expansions());
    for i in 0..40 {
        objects.push(deployment("shop", &format!("ok-{i}")));
    }
    objects.push(broken("first-broken"));
    objects.extend((0..40).map(|i| broken(&format!("later-{i}"))));
    for _ in 0..3 {
        let error = engine(objects.clone()).review_all().unwrap_err();
        assert!(matches!(error, EngineError::Expansion { .. }), "{error:?}");
        assert_eq!(
            format!("{:#}", anyhow::Error::new(error)),
            "expanding resource first-broken: error expanding resource first-broken: could not \
             find source field \"spec.template\" in resource first-broken"
        );
    }
}

#[test]
fn bad_expansion_templates_are_reported_after_every_other_ingestion_error() {
    let cycle = vec![
        expansion("a-to-b", ("x", "A"), "spec.t", ("x", "B"), ""),
        expansion("b-to-a", ("x", "B"), "spec.t", ("x", "A"), ""),
    ];
    let mut objects = vec![name_everything(), pods_only("pods")];
    objects.extend(cycle.clone());
    let error = Engine::new(objects, EngineOptions::default()).unwrap_err();
    assert_eq!(
        format!("{:#}", anyhow::Error::new(error)),
        "error creating expander: error upserting template b-to-a: template forms expansion cycle"
    );
    // A constraint without its template is reported first, as gator ingests in that order.
    let mut objects = cycle;
    objects.push(pods_only("pods"));
    let error = Engine::new(objects, EngineOptions::default()).unwrap_err();
    assert!(matches!(error, EngineError::Constraint { .. }), "{error:?}");
    let mut shapeless = expansion("shapeless", ("x", "A"), "spec.t", ("x", "B"), "");
    shapeless["spec"]["applyTo"] = json!("apps");
    let error =
        Engine::new(vec![name_everything(), shapeless], EngineOptions::default()).unwrap_err();
    assert_eq!(
        format!("{:#}", anyhow::Error::new(error)),
        "error creating expander: error parsing resources: ExpansionTemplate \"shapeless\": spec.applyTo must be a list"
    );
}

#[test]
fn mutators_are_refused_naming_the_object() {
    let mutator = json!({"apiVersion": "mutations.gatekeeper.sh/v1", "kind": "AssignMetadata", "metadata": {"name": "add-owner"}, "spec": {}});
    let error =
        Engine::new(vec![name_everything(), mutator], EngineOptions::default()).unwrap_err();
    let text = error.to_string();
    assert!(
        text.starts_with("unsupported: mutators are not supported by the embedded engine"),
        "{text}"
    );
    assert!(text.ends_with("(AssignMetadata \"add-owner\")"), "{text}");
}

#[test]
fn what_a_constraint_can_see_through_the_expansions() {
    let mut objects = vec![name_everything(), pods_only("pods")];
    objects.extend(workload_expansions());
    let engine = engine(objects);
    let expansions: &ExpansionSet = engine.expansions();
    let pods: &Match = &engine
        .policies()
        .constraint("NameIt", "pods")
        .unwrap()
        .matcher;
    let sights = |gvk: Gvk| -> Vec<Vec<String>> {
        expansions
            .visible_to(pods, &gvk)
            .into_iter()
            .map(|seen| seen.templates)
            .collect()
    };
    assert_eq!(
        sights(Gvk::new("apps", "v1", "Deployment")),
        [vec!["expand-deployments".to_string()]]
    );
    assert_eq!(
        sights(Gvk::new("batch", "v1", "CronJob")),
        [vec![
            "expand-cronjobs".to_string(),
            "expand-jobs".to_string()
        ]]
    );
    assert!(sights(Gvk::new("apps", "v1", "StatefulSet")).is_empty());
    assert_eq!(sights(Gvk::new("", "v1", "Pod")), [Vec::<String>::new()]);
    // `match.source` decides whether objects or resultants are visible.
    let generated = Match::parse(Some(
        &json!({"source": "Generated", "kinds": [{"kinds": ["Pod"]}]}),
    ))
    .unwrap();
    assert!(generated.may_match("", "Pod", Source::Generated));
    assert!(!generated.may_match("", "Pod", Source::Original));
    assert!(!generated.may_match("apps", "Deployment", Source::Generated));
    assert!(
        Match::parse(None)
            .unwrap()
            .may_match("any", "Thing", Source::Original)
    );
}

#[test]
fn expansion_templates_are_read_from_objects_for_callers() {
    let templates: Vec<ExpansionTemplate> = workload_expansions()
        .iter()
        .map(|object| ExpansionTemplate::from_object(object).unwrap())
        .collect();
    let set = ExpansionSet::from_templates(templates).unwrap();
    let resultants = set.expand(&cronjob("batch", "nightly")).unwrap();
    let names: Vec<&str> = resultants
        .iter()
        .map(|r| r.object["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["nightly-job-pod", "nightly-job"]);
    assert!(gatekeeper_engine::is_expansion_template(
        &workload_expansions()[0]
    ));
}

/// Issue 26 §5: templates two per level (43: 21 levels of two, one more beside) would make
/// 2^21 resultants, as Gatekeeper applies every template to every resultant. The expansion
/// stops at `MAX_RESULTANTS` with an error naming the limit and the templates, quickly and
/// without building them; a review through the engine reports it the same way.
#[test]
fn fan_out_of_resultants_is_bounded_with_an_error_naming_the_templates() {
    let mut objects: Vec<Value> = (0..21)
        .flat_map(|level| {
            let from = format!("K{level}");
            let to = format!("K{}", level + 1);
            ["a", "b"].map(|side| {
                expansion(
                    &format!("level{level:02}-{side}"),
                    ("example.com", &from),
                    // Every resultant has `metadata`, so each level expands again.
                    "metadata",
                    ("example.com", &to),
                    "",
                )
            })
        })
        .collect();
    objects.push(expansion(
        "beside",
        ("example.com", "Other"),
        "spec",
        ("", "Pod"),
        "",
    ));
    assert_eq!(objects.len(), 43);
    let templates: Vec<ExpansionTemplate> = objects
        .iter()
        .map(|object| ExpansionTemplate::from_object(object).unwrap())
        .collect();
    let set = ExpansionSet::from_templates(templates).unwrap();
    let object = json!({"apiVersion": "example.com/v1", "kind": "K0", "metadata": {"name": "root"}, "spec": {"spec": {}}});
    let started = std::time::Instant::now();
    let error = set.expand(&object).unwrap_err().to_string();
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    assert!(
        error.contains(&format!(
            "more than {} resultants (the embedded engine's limit per object) through ExpansionTemplates level00-a, level00-b",
            gatekeeper_engine::MAX_RESULTANTS
        )),
        "{error}"
    );
    assert!(error.contains("and 32 more"), "{error}");
    assert!(!error.contains("beside"), "{error}");
    // Nine levels (2^10 - 2 = 1022 resultants) pass the limit too; eight (510) do not.
    let shallow = json!({"apiVersion": "example.com/v1", "kind": "K13", "metadata": {"name": "r"}, "spec": {"spec": {}}});
    assert_eq!(set.expand(&shallow).unwrap().len(), 510);
    assert!(set.reviewed_as(&Gvk::of(&object)).len() <= gatekeeper_engine::MAX_RESULTANTS + 2);
    objects.push(name_everything());
    objects.push(constraint("all", json!({})));
    objects.push(object);
    let started = std::time::Instant::now();
    let outcome = Engine::new(objects, EngineOptions::default()).and_then(|e| e.review_all());
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    let error = format!("{:?}", outcome.expect_err("the expansion fails"));
    assert!(
        error.contains("resultants (the embedded engine's limit per object)"),
        "{error}"
    );
}

/// Issue 26 §6: 2,000 unrelated ExpansionTemplates join in well under a second each, and the
/// cycle check still refuses a template closing a cycle among them.
#[test]
fn thousands_of_unrelated_templates_join_near_linearly() {
    let templates: Vec<ExpansionTemplate> = (0..2_000)
        .map(|i| {
            ExpansionTemplate::from_object(&expansion(
                &format!("unrelated-{i:04}"),
                ("example.com", &format!("From{i}")),
                "spec",
                ("example.com", &format!("To{i}")),
                "",
            ))
            .unwrap()
        })
        .collect();
    let started = std::time::Instant::now();
    let mut set = ExpansionSet::from_templates(templates).unwrap();
    assert!(
        started.elapsed() < std::time::Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(set.templates().len(), 2_000);
    let back = ExpansionTemplate::from_object(&expansion(
        "back",
        ("example.com", "To7"),
        "spec",
        ("example.com", "From7"),
        "",
    ))
    .unwrap();
    let error = set.upsert(back).unwrap_err().to_string();
    assert_eq!(
        error,
        "error upserting template back: template forms expansion cycle"
    );
    assert_eq!(set.templates().len(), 2_000);
}
