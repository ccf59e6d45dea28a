//! Benchmark (`cargo xtask bench projection`): 20,000 Deployments and 5,000 StatefulSets in 500
//! namespaces, served by the loopback fake API server (TLS, pages of 500), read through `kube`
//! into the model and projected to `<work>/in/`. Target: under 5 s wall and under 400 MiB peak
//! RSS for the whole process (fake server included). Prints its figures; exits 1 on a miss.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use cluster_projection::{ClusterSource, ReadSpec, read_cluster_blocking, write_projection};
use serde_json::json;
use test_support::kube_api::{FakeApiServer, Scenario};

const NAMESPACES: usize = 500;
const DEPLOYMENTS: usize = 20_000;
const STATEFULSETS: usize = 5_000;
const WALL_TARGET: Duration = Duration::from_secs(5);
const RSS_TARGET_MIB: f64 = 400.0;

/// One workload as the API returns it in a list (no kind/apiVersion), about 1.5 KB of JSON.
fn workload(kind: &str, namespace: &str, name: &str, index: usize) -> String {
    let team = index % 17;
    format!(
        concat!(
            r#"{{"metadata":{{"name":"{name}","namespace":"{ns}","uid":"00000000-0000-0000-0000-{index:012}","#,
            r#""resourceVersion":"{rv}","generation":3,"creationTimestamp":"2026-03-01T00:00:00Z","#,
            r#""labels":{{"app":"{name}","team":"team-{team}","criticality":"high"}},"#,
            r#""annotations":{{"deployment.kubernetes.io/revision":"3","mapcolonies.io/owner":"team-{team}"}},"#,
            r#""managedFields":[{{"manager":"helm","operation":"Update","apiVersion":"apps/v1","time":"2026-03-01T00:00:00Z","#,
            r#""fieldsType":"FieldsV1","fieldsV1":{{"f:metadata":{{"f:labels":{{"f:app":{{}},"f:team":{{}},"f:criticality":{{}}}}}},"#,
            r#""f:spec":{{"f:replicas":{{}},"f:template":{{"f:spec":{{"f:containers":{{}}}}}}}}}}}}]}},"#,
            r#""spec":{{"replicas":2,"selector":{{"matchLabels":{{"app":"{name}"}}}},"#,
            r#""template":{{"metadata":{{"labels":{{"app":"{name}","team":"team-{team}"}}}},"#,
            r#""spec":{{"serviceAccountName":"{name}","containers":[{{"name":"main","image":"registry.example/{ns}/{name}:1.{index}","#,
            r#""ports":[{{"containerPort":8080,"protocol":"TCP"}}],"env":[{{"name":"MODE","value":"production"}},{{"name":"KIND","value":"{kind}"}}],"#,
            r#""resources":{{"limits":{{"cpu":"1","memory":"512Mi"}},"requests":{{"cpu":"250m","memory":"256Mi"}}}},"#,
            r#""securityContext":{{"runAsNonRoot":true,"readOnlyRootFilesystem":true}}}}]}}}}}},"#,
            r#""status":{{"replicas":2,"readyReplicas":2,"observedGeneration":3}}}}"#
        ),
        name = name,
        ns = namespace,
        index = index,
        rv = 100_000 + index,
        team = team,
        kind = kind,
    )
}

fn scenario() -> Scenario {
    let namespaces = (0..NAMESPACES).map(|i| {
        json!({"metadata": {"name": format!("ns-{i:03}"), "labels": {"kubernetes.io/metadata.name": format!("ns-{i:03}"), "owner": format!("team-{}", i % 17)}}})
    });
    let deployments = (0..DEPLOYMENTS).map(|i| {
        let ns = format!("ns-{:03}", i % NAMESPACES);
        workload("Deployment", &ns, &format!("deploy-{i:05}"), i)
    });
    let statefulsets = (0..STATEFULSETS).map(|i| {
        let ns = format!("ns-{:03}", i % NAMESPACES);
        workload("StatefulSet", &ns, &format!("sts-{i:05}"), i)
    });
    let template = json!({
        "apiVersion": "templates.gatekeeper.sh/v1", "kind": "ConstraintTemplate",
        "metadata": {"name": "k8srequiredlabels"},
        "spec": {"crd": {"spec": {"names": {"kind": "K8sRequiredLabels"}}},
                 "targets": [{"target": "admission.k8s.gatekeeper.sh", "rego": "package k8srequiredlabels\nviolation[{\"msg\": \"x\"}] { false }\n"}]}
    });
    let constraints = (0..4).map(|i| {
        json!({"apiVersion": "constraints.gatekeeper.sh/v1beta1", "kind": "K8sRequiredLabels",
               "metadata": {"name": format!("rule-{i}")},
               "spec": {"enforcementAction": "deny", "parameters": {"labels": [{"key": "team"}]}},
               "status": {"totalViolations": i, "auditTimestamp": "2026-03-09T07:00:00Z"}})
    });
    Scenario::new()
        .with_list("/api/v1/namespaces", "NamespaceList", "v1", namespaces)
        .with_raw_list(
            "/apis/apps/v1/deployments",
            "DeploymentList",
            "apps/v1",
            deployments,
        )
        .with_raw_list(
            "/apis/apps/v1/statefulsets",
            "StatefulSetList",
            "apps/v1",
            statefulsets,
        )
        .with_list(
            "/apis/constraints.gatekeeper.sh/v1beta1/k8srequiredlabels",
            "K8sRequiredLabelsList",
            "constraints.gatekeeper.sh/v1beta1",
            constraints,
        )
        .with_object(
            "/apis/templates.gatekeeper.sh/v1/constrainttemplates/k8srequiredlabels",
            template,
        )
}

/// This process's peak RSS in MiB (`VmHWM`), 0 when unknown.
fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kib| kib.parse::<f64>().ok())
        })
        .map_or(0.0, |kib| kib / 1024.0)
}

fn main() -> ExitCode {
    let started = Instant::now();
    let fake = FakeApiServer::start(scenario());
    let setup = started.elapsed();
    // The work dir lives on tmpfs when there is one (as an emptyDir with `medium: Memory`), so
    // the figure measures this crate rather than the disk's inode allocator; the files are
    // written the same way either way. `BENCH_WORK_DIR` overrides the parent directory.
    let parent = std::env::var_os("BENCH_WORK_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            let shm = std::path::Path::new("/dev/shm");
            if shm.is_dir() {
                shm.to_path_buf()
            } else {
                std::env::temp_dir()
            }
        });
    let dir = tempfile::Builder::new()
        .prefix("bench-projection-")
        .tempdir_in(&parent)
        .expect("tempdir");
    let source = ClusterSource::Kubeconfig {
        path: Some(fake.write_kubeconfig(dir.path())),
        context: None,
    };
    let spec = ReadSpec::for_constraint_kinds(["K8sRequiredLabels"]);

    let read_started = Instant::now();
    let state = match read_cluster_blocking(&source, &spec) {
        Ok(state) => state,
        Err(error) => {
            eprintln!("bench projection: read failed: {error}");
            return ExitCode::FAILURE;
        }
    };
    let read = read_started.elapsed();
    let requests = fake.requests().len();

    let project_started = Instant::now();
    let work = dir.path().join("work");
    let summary = match write_projection(&state, &work) {
        Ok(summary) => summary,
        Err(error) => {
            eprintln!("bench projection: projection failed: {error}");
            return ExitCode::FAILURE;
        }
    };
    let project = project_started.elapsed();
    let total = started.elapsed();
    let rss = peak_rss_mib();
    let raw_bytes: usize = state.raw_objects().map(|r| r.len()).sum();

    println!(
        "bench projection: {} workloads, {} namespaces, {} constraints, {} templates",
        state.workloads.len(),
        state.namespaces.len(),
        state.constraints.len(),
        state.templates.len()
    );
    println!(
        "  setup (fake server) {:.3} s; read {:.3} s ({requests} requests, {:.0} objects/s); project {:.3} s ({} files, {:.0} files/s)",
        setup.as_secs_f64(),
        read.as_secs_f64(),
        state.len() as f64 / read.as_secs_f64(),
        project.as_secs_f64(),
        summary.written,
        summary.written as f64 / project.as_secs_f64()
    );
    println!(
        "  total {:.3} s (target < {} s); peak RSS {rss:.1} MiB (target < {RSS_TARGET_MIB} MiB); model holds {:.1} MiB of object text; work dir under {}",
        total.as_secs_f64(),
        WALL_TARGET.as_secs(),
        raw_bytes as f64 / (1024.0 * 1024.0),
        parent.display()
    );
    let expected = DEPLOYMENTS + STATEFULSETS;
    if state.workloads.len() != expected || summary.written != expected + NAMESPACES + 4 + 1 {
        eprintln!("bench projection: wrong counts");
        return ExitCode::FAILURE;
    }
    if total > WALL_TARGET || rss > RSS_TARGET_MIB {
        eprintln!("bench projection: target missed");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
