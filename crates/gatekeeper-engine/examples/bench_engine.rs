//! Benchmark for the embedded engine (`cargo xtask bench engine`): 10,000 workloads in 200
//! namespaces reviewed against 10 templates / 20 constraints, on rayon's pool (both cores).
//! Prints reviews/s (object × matching constraint), wall time and counts; exits non-zero below
//! 20,000 reviews/s.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use gatekeeper_engine::{Engine, EngineOptions, read_sources};
use serde_json::{Value, json};

const WORKLOADS: usize = 10_000;
const NAMESPACES: usize = 200;
const TARGET_REVIEWS_PER_SEC: f64 = 20_000.0;

/// The fixture templates used (the inventory-scanning one is left out: it is O(inventory)).
const FIXTURE_TEMPLATES: [&str; 8] = [
    "requiredlabels",
    "requiredannotations",
    "allowedrepos",
    "containerlimits",
    "privileged",
    "hostnamespaces",
    "replicalimits",
    "disallowedtags",
];

fn extra_templates() -> Vec<Value> {
    let template = |kind: &str, rego: &str| {
        json!({
            "apiVersion": "templates.gatekeeper.sh/v1",
            "kind": "ConstraintTemplate",
            "metadata": {"name": kind.to_lowercase()},
            "spec": {
                "crd": {"spec": {"names": {"kind": kind}}},
                "targets": [{"target": "admission.k8s.gatekeeper.sh", "rego": rego}]
            }
        })
    };
    vec![
        template(
            "K8sRequiredProbes",
            "package k8srequiredprobes\n\nviolation[{\"msg\": msg}] {\n  c := input.review.object.spec.template.spec.containers[_]\n  probe := input.parameters.probes[_]\n  not c[probe]\n  msg := sprintf(\"container <%v> has no %v\", [c.name, probe])\n}\n",
        ),
        template(
            "K8sBlockDefaultNamespace",
            "package k8sblockdefaultnamespace\n\nviolation[{\"msg\": msg}] {\n  input.review.object.metadata.namespace == \"default\"\n  msg := sprintf(\"%v %v must not live in the default namespace\", [input.review.object.kind, input.review.object.metadata.name])\n}\n",
        ),
    ]
}

fn constraint(kind: &str, name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "constraints.gatekeeper.sh/v1beta1",
        "kind": kind,
        "metadata": {"name": name},
        "spec": spec,
    })
}

fn constraints() -> Vec<Value> {
    let deployments = json!({"kinds": [{"apiGroups": ["apps"], "kinds": ["Deployment"]}]});
    let with = |extra: Value| {
        let mut m = deployments.clone();
        for (k, v) in extra.as_object().into_iter().flatten() {
            m[k] = v.clone();
        }
        m
    };
    vec![
        constraint(
            "K8sRequiredLabels",
            "owner",
            json!({"match": deployments, "parameters": {"labels": [{"key": "owner", "allowedRegex": "^[a-z]+$"}]}}),
        ),
        constraint(
            "K8sRequiredLabels",
            "app",
            json!({"match": with(json!({"namespaceSelector": {"matchLabels": {"tier": "prod"}}})), "parameters": {"labels": [{"key": "app"}]}}),
        ),
        constraint(
            "K8sRequiredAnnotations",
            "contact",
            json!({"match": deployments, "parameters": {"annotations": [{"key": "example.com/contact", "allowedRegex": "@example\\.com$"}]}}),
        ),
        constraint(
            "K8sRequiredAnnotations",
            "runbook",
            json!({"enforcementAction": "warn", "match": with(json!({"excludedNamespaces": ["team-1*"]})), "parameters": {"annotations": [{"key": "example.com/runbook", "allowedRegex": "^https://"}]}}),
        ),
        constraint(
            "K8sAllowedRepos",
            "internal",
            json!({"match": deployments, "parameters": {"repos": ["registry.example.com/"]}}),
        ),
        constraint(
            "K8sAllowedRepos",
            "mirror",
            json!({"enforcementAction": "dryrun", "match": deployments, "parameters": {"repos": ["registry.example.com/", "mirror.example.com/"]}}),
        ),
        constraint(
            "K8sContainerLimits",
            "limits",
            json!({"match": deployments, "parameters": {"cpu": "2", "memory": "1Gi"}}),
        ),
        constraint(
            "K8sContainerLimits",
            "limits-small",
            json!({"enforcementAction": "warn", "match": with(json!({"namespaces": ["team-2*"]})), "parameters": {"cpu": "500m", "memory": "256Mi"}}),
        ),
        constraint(
            "K8sPSPPrivileged",
            "privileged",
            json!({"match": deployments, "parameters": {"exemptImages": []}}),
        ),
        constraint(
            "K8sPSPPrivileged",
            "privileged-prod",
            json!({"match": with(json!({"namespaceSelector": {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["prod"]}]}}))}),
        ),
        constraint(
            "K8sPSPHostNamespace",
            "host",
            json!({"match": deployments, "parameters": {"allow": []}}),
        ),
        constraint(
            "K8sPSPHostNamespace",
            "host-net-ok",
            json!({"enforcementAction": "warn", "match": deployments, "parameters": {"allow": ["hostNetwork"]}}),
        ),
        constraint(
            "K8sReplicaLimits",
            "replicas",
            json!({"match": deployments, "parameters": {"ranges": [{"min": 1, "max": 5}]}}),
        ),
        constraint(
            "K8sReplicaLimits",
            "replicas-wide",
            json!({"match": deployments, "parameters": {"ranges": [{"min": 0, "max": 3}, {"min": 5, "max": 50}]}}),
        ),
        constraint(
            "K8sDisallowedTags",
            "no-latest",
            json!({"match": deployments, "parameters": {"tags": ["latest"]}}),
        ),
        constraint(
            "K8sDisallowedTags",
            "no-dev",
            json!({"enforcementAction": "dryrun", "match": deployments, "parameters": {"tags": ["dev", "test"], "requireTag": false}}),
        ),
        constraint(
            "K8sRequiredProbes",
            "probes",
            json!({"match": deployments, "parameters": {"probes": ["readinessProbe", "livenessProbe"]}}),
        ),
        constraint(
            "K8sRequiredProbes",
            "readiness",
            json!({"match": with(json!({"labelSelector": {"matchLabels": {"critical": "true"}}})), "parameters": {"probes": ["readinessProbe"]}}),
        ),
        constraint(
            "K8sBlockDefaultNamespace",
            "no-default",
            json!({"match": deployments}),
        ),
        constraint(
            "K8sBlockDefaultNamespace",
            "no-default-all",
            json!({"enforcementAction": "warn"}),
        ),
    ]
}

fn workloads() -> Vec<Value> {
    let mut out = Vec::with_capacity(WORKLOADS + NAMESPACES);
    for n in 0..NAMESPACES {
        let tier = if n % 3 == 0 { "prod" } else { "dev" };
        out.push(json!({
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": format!("team-{n}"), "labels": {"tier": tier}}
        }));
    }
    for i in 0..WORKLOADS {
        let ns = format!("team-{}", i % NAMESPACES);
        let repo = if i % 7 == 0 {
            "docker.io/library"
        } else {
            "registry.example.com"
        };
        let tag = if i % 11 == 0 { "latest" } else { "1.2.3" };
        let mut labels = json!({"app": format!("app-{i}"), "critical": (i % 5 == 0).to_string()});
        if i % 4 != 0 {
            labels["owner"] = json!("payments");
        }
        out.push(json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {
                "name": format!("app-{i}"), "namespace": ns, "labels": labels,
                "annotations": {"example.com/contact": "ops@example.com"}
            },
            "spec": {
                "replicas": i % 9,
                "template": {"spec": {
                    "hostPID": i % 13 == 0,
                    "containers": [
                        {"name": "main", "image": format!("{repo}/app-{}:{tag}", i % 50),
                         "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080}},
                         "resources": {"limits": {"cpu": if i % 6 == 0 { "3" } else { "500m" }, "memory": "512Mi"}},
                         "securityContext": {"privileged": i % 17 == 0}},
                        {"name": "sidecar", "image": "registry.example.com/proxy:1.0",
                         "resources": {"limits": {"cpu": "100m", "memory": "64Mi"}}}
                    ]
                }}
            }
        }));
    }
    out
}

fn main() -> ExitCode {
    let started = Instant::now();
    let paths: Vec<PathBuf> = FIXTURE_TEMPLATES
        .iter()
        .map(|p| PathBuf::from(format!("fixtures/gatekeeper/{p}/template.yaml")))
        .collect();
    let mut objects = match read_sources(&paths) {
        Ok(objects) => objects,
        Err(e) => {
            eprintln!("bench engine: reading fixture templates: {e}");
            return ExitCode::FAILURE;
        }
    };
    objects.extend(extra_templates());
    objects.extend(constraints());
    objects.extend(workloads());
    let object_count = objects.len();
    let engine = match Engine::new(objects, EngineOptions::default()) {
        Ok(engine) => engine,
        Err(e) => {
            eprintln!("bench engine: ingest: {e}");
            return ExitCode::FAILURE;
        }
    };
    let ingested = started.elapsed();
    let review_started = Instant::now();
    let outcome = match engine.review_all_detailed() {
        Ok(outcome) => outcome,
        Err(error) => {
            eprintln!("bench engine: {error}");
            return ExitCode::FAILURE;
        }
    };
    let review_wall = review_started.elapsed();
    let rate = outcome.stats.reviews as f64 / review_wall.as_secs_f64();
    println!(
        "bench engine: {} templates, {} constraints, {} objects ({WORKLOADS} workloads in {NAMESPACES} namespaces), {} threads",
        engine.policies().templates().len(),
        engine.policies().constraints().len(),
        object_count,
        rayon::current_num_threads()
    );
    println!(
        "bench engine: ingest {:.3} s; review {:.3} s; {} reviews (object x matching constraint), {} Rego evaluations ({:.0}/s); {} results; {:.0} reviews/s (target >= {TARGET_REVIEWS_PER_SEC:.0})",
        ingested.as_secs_f64(),
        review_wall.as_secs_f64(),
        outcome.stats.reviews,
        outcome.stats.evaluations,
        outcome.stats.evaluations as f64 / review_wall.as_secs_f64(),
        outcome.results.len(),
        rate
    );
    if engine.policies().templates().len() != 10 || engine.policies().constraints().len() != 20 {
        eprintln!("bench engine: expected 10 templates and 20 constraints");
        return ExitCode::FAILURE;
    }
    if rate < TARGET_REVIEWS_PER_SEC {
        eprintln!("bench engine: below target");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
