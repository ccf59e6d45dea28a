//! Benchmark for the embedded engine (`cargo xtask bench engine`): 10,000 workloads in 200
//! namespaces reviewed against 10 templates / 20 constraints, on rayon's pool (both cores).
//! Prints reviews/s (object × matching constraint), wall time and counts; exits non-zero below
//! 20,000 reviews/s.
//!
//! `cargo xtask bench engine --cel`: the six dual-engine fixture templates (`fixtures/gatekeeper/
//! cel*`, CEL and Rego code) with their Constraints over 10,000 Pods, 1,000 Deployments and 200
//! Namespaces, reviewed once by their Rego and once by their CEL; prints both rates and exits
//! non-zero when the two disagree on the results or CEL is slower than Rego.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use gatekeeper_engine::{Engine, EngineOptions, read_sources};
use serde_json::{Value, json};

/// The allocator `workload-report` ships with: both engines allocate heavily per review (CEL's
/// values are boxed maps), so the figures are the binary's only with the binary's allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
    if std::env::args().skip(1).any(|a| a == "--cel") {
        return cel::compare();
    }
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

/// `--cel`: the same workload through the dual-engine templates' Rego and their CEL.
mod cel {
    use std::path::PathBuf;
    use std::process::ExitCode;
    use std::time::Instant;

    use gatekeeper_engine::{Engine, EngineOptions, read_sources};
    use serde_json::{Value, json};

    const PODS: usize = 10_000;
    const DEPLOYMENTS: usize = 1_000;
    const NAMESPACES: usize = 200;

    /// The dual-engine fixtures: each has `template.yaml` and `constraint.yaml`.
    const DUAL_ENGINE_FIXTURES: [&str; 6] = [
        "celallowedrepos",
        "celhostnamespaces",
        "celprivileged",
        "celreplicas",
        "celrequiredlabels",
        "celresourcelimits",
    ];

    fn policies() -> Result<Vec<Value>, String> {
        let paths: Vec<PathBuf> = DUAL_ENGINE_FIXTURES
            .iter()
            .flat_map(|d| {
                ["template.yaml", "constraint.yaml"]
                    .map(|f| PathBuf::from(format!("fixtures/gatekeeper/{d}/{f}")))
            })
            .collect();
        read_sources(&paths).map_err(|e| format!("reading the dual-engine fixtures: {e}"))
    }

    fn containers(i: usize) -> Value {
        let repo = if i.is_multiple_of(7) {
            "docker.io/library"
        } else {
            "registry.example.com"
        };
        let cpu = if i.is_multiple_of(6) { "3" } else { "500m" };
        let mut main = json!({
            "name": "main", "image": format!("{repo}/app-{}:1.2.3", i % 50),
            "securityContext": {"privileged": i.is_multiple_of(17)}
        });
        if !i.is_multiple_of(10) {
            main["resources"] = json!({"limits": {"cpu": cpu, "memory": "512Mi"}});
        }
        json!([main, {"name": "sidecar", "image": "registry.example.com/proxy:1.0",
                      "resources": {"limits": {"cpu": "100m", "memory": "64Mi"}}}])
    }

    fn workload() -> Vec<Value> {
        let mut out = Vec::with_capacity(PODS + DEPLOYMENTS + NAMESPACES);
        for n in 0..NAMESPACES {
            let mut labels = json!({"owner": "payments"});
            if !n.is_multiple_of(3) {
                labels["team"] = json!(format!("team-{n}"));
            }
            out.push(json!({"apiVersion": "v1", "kind": "Namespace",
                            "metadata": {"name": format!("team-{n}"), "labels": labels}}));
        }
        for i in 0..PODS {
            out.push(json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": format!("pod-{i}"), "namespace": format!("team-{}", i % NAMESPACES)},
                "spec": {"hostPID": i.is_multiple_of(13), "hostNetwork": i.is_multiple_of(19), "containers": containers(i)}
            }));
        }
        for i in 0..DEPLOYMENTS {
            out.push(json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": format!("app-{i}"), "namespace": format!("team-{}", i % NAMESPACES)},
                "spec": {"replicas": i % 9, "template": {"spec": {"containers": containers(i)}}}
            }));
        }
        out
    }

    /// One pass: reviews/s, reviews, the results (messages and constraints, sorted), seconds.
    struct Pass {
        rate: f64,
        reviews: usize,
        results: Vec<(String, String, String)>,
        seconds: f64,
    }

    fn pass(objects: Vec<Value>, cel: bool) -> Result<Pass, String> {
        let options = EngineOptions {
            k8s_native_validation: cel,
            ..EngineOptions::default()
        };
        let engine = Engine::new(objects, options).map_err(|e| format!("ingest: {e}"))?;
        if engine
            .policies()
            .templates()
            .iter()
            .any(|t| t.is_cel() != cel)
        {
            return Err("a template runs the other engine's code".to_string());
        }
        let started = Instant::now();
        let outcome = engine.review_all_detailed().map_err(|e| e.to_string())?;
        let seconds = started.elapsed().as_secs_f64();
        let mut results: Vec<(String, String, String)> = outcome
            .results
            .into_iter()
            .map(|d| (d.result.constraint.name, d.result.object.name, d.result.msg))
            .collect();
        results.sort();
        Ok(Pass {
            rate: outcome.stats.reviews as f64 / seconds,
            reviews: outcome.stats.reviews,
            results,
            seconds,
        })
    }

    /// Runs both passes and reports them side by side.
    pub(crate) fn compare() -> ExitCode {
        let run = || -> Result<(Pass, Pass), String> {
            let mut objects = policies()?;
            objects.extend(workload());
            Ok((pass(objects.clone(), false)?, pass(objects, true)?))
        };
        let (rego, cel) = match run() {
            Ok(passes) => passes,
            Err(e) => {
                eprintln!("bench engine --cel: {e}");
                return ExitCode::FAILURE;
            }
        };
        println!(
            "bench engine --cel: 6 dual-engine templates, 6 constraints, {PODS} Pods + {DEPLOYMENTS} Deployments + {NAMESPACES} Namespaces, {} threads",
            rayon::current_num_threads()
        );
        for (name, p) in [("rego", &rego), ("cel", &cel)] {
            println!(
                "bench engine --cel: {name:<4} review {:.3} s; {} reviews; {} results; {:.0} reviews/s",
                p.seconds,
                p.reviews,
                p.results.len(),
                p.rate
            );
        }
        println!(
            "bench engine --cel: CEL/Rego = {:.2} (target >= 1.00)",
            cel.rate / rego.rate
        );
        if rego.results != cel.results || rego.reviews != cel.reviews {
            eprintln!("bench engine --cel: CEL and Rego give different results");
            return ExitCode::FAILURE;
        }
        if cel.rate < rego.rate {
            eprintln!("bench engine --cel: CEL is below target (slower than Rego)");
            return ExitCode::FAILURE;
        }
        ExitCode::SUCCESS
    }
}
