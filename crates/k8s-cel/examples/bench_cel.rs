//! Compiled-program evaluations per second on a Deployment-sized object: the CEL halves of the
//! six dual-engine suites, each evaluated against one Deployment (prepared once, as an engine
//! reviewing an object against several templates would) and against fresh bindings.
//!
//! `cargo run --release -p k8s-cel --example bench_cel [iterations]`; prints one line per
//! template and a total, in evaluations per second.

use k8s_cel::{Bindings, CelProgram, PreparedBindings, PreparedParams};
use serde_json::{Value, json};
use std::path::Path;
use std::time::Instant;

fn deployment() -> Value {
    let container = |name: &str, image: &str| {
        json!({
            "name": name, "image": image, "imagePullPolicy": "IfNotPresent",
            "ports": [{"containerPort": 8080, "protocol": "TCP"}],
            "env": [{"name": "LOG_LEVEL", "value": "info"}, {"name": "REGION", "value": "eu-west-1"}],
            "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}},
            "securityContext": {"privileged": false, "runAsNonRoot": true, "readOnlyRootFilesystem": true},
            "volumeMounts": [{"name": "config", "mountPath": "/etc/app"}]
        })
    };
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "shop", "labels": {"app": "web", "owner": "alice", "team": "shop"},
                     "annotations": {"deployment.kubernetes.io/revision": "7"}},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}},
            "containers": [container("web", "registry.example.com/web:1.4.2"), container("sidecar", "registry.example.com/envoy:1.30")],
            "initContainers": [container("migrate", "registry.example.com/migrate:1.4.2")],
            "volumes": [{"name": "config", "configMap": {"name": "web-config"}}]
        }
    })
}

fn suite_program(dir: &Path) -> (String, CelProgram, Value) {
    let read = |file: &str| -> Value {
        let text = std::fs::read_to_string(dir.join(file)).expect("suite file");
        serde_yaml::from_str(&text).expect("suite YAML")
    };
    let template = read("template.yaml");
    let source = template["spec"]["targets"][0]["code"]
        .as_array()
        .and_then(|code| code.iter().find(|c| c["engine"] == "K8sNativeValidation"))
        .map(|c| c["source"].clone())
        .expect("CEL code");
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    (
        name,
        CelProgram::compile(&source).expect("compiles"),
        read("constraint.yaml"),
    )
}

/// The dual-engine suites under `fixtures/gatekeeper/`.
const DUAL_ENGINE_SUITES: [&str; 6] = [
    "celallowedrepos",
    "celhostnamespaces",
    "celprivileged",
    "celreplicas",
    "celrequiredlabels",
    "celresourcelimits",
];

fn main() {
    let iterations: u32 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20_000);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/gatekeeper");
    let mut dirs: Vec<_> = DUAL_ENGINE_SUITES.iter().map(|d| root.join(d)).collect();
    dirs.sort();
    let object = deployment();
    let mut total_evaluations = 0u64;
    let mut total_seconds = 0f64;
    for dir in dirs {
        let (name, program, constraint) = suite_program(&dir);
        let bindings = Bindings {
            object: Some(&object),
            params: Some(&constraint),
            ..Bindings::default()
        };
        let prepared = PreparedBindings::new(&bindings).expect("bindings");
        let params = PreparedParams::new(Some(&constraint)).expect("params");
        let start = Instant::now();
        for _ in 0..iterations {
            std::hint::black_box(program.evaluate_prepared(&prepared, &params));
        }
        let prepared_secs = start.elapsed().as_secs_f64();
        let start = Instant::now();
        for _ in 0..iterations {
            std::hint::black_box(program.evaluate(&bindings));
        }
        let fresh_secs = start.elapsed().as_secs_f64();
        println!(
            "{name:<16} {:>10.0} evaluations/s (prepared bindings)  {:>10.0} evaluations/s (converting the object each time)",
            f64::from(iterations) / prepared_secs,
            f64::from(iterations) / fresh_secs
        );
        total_evaluations += u64::from(iterations);
        total_seconds += prepared_secs;
    }
    println!(
        "all six         {:>10.0} evaluations/s (prepared bindings)",
        total_evaluations as f64 / total_seconds
    );
}
