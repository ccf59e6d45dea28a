//! The real node: Pods of local images run, and nothing can make it pull an image — a
//! Deployment gets no Pods (its controller is off), a Pod of a registry image is denied.

use std::time::{Duration, Instant};

use http::Method;
use serde_json::{Value, json};
use test_support::real::node::{self, RealNode};

#[test]
fn real_node_runs_local_pods_and_never_pulls() {
    let Some(tools) = node::require("real_node_runs_local_pods_and_never_pulls") else {
        return;
    };
    let node = RealNode::start(&tools);
    let kube = node.kube();
    // A Pod of the sandbox image runs (pause never exits: Running is the proof).
    kube.apply(&json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "local", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "localhost/pause:local",
                                  "imagePullPolicy": "Never"}]}
    }));
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let pod = kube.get("/api/v1/namespaces/default/pods/local");
        if pod["status"]["phase"] == "Running" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{}",
            node.failure(&format!("the Pod did not run: {}", pod["status"]))
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    eprintln!("node memory with one Pod: {} MiB", node.memory_mib());

    let (status, answer) = kube.raw(
        Method::POST,
        "/api/v1/namespaces/default/pods",
        Some(json!({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "remote"},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}
        })),
    );
    assert_eq!(
        status, 422,
        "a Pod of a registry image must be denied: {answer}"
    );
    assert!(answer.to_string().contains("local images only"), "{answer}");

    kube.apply(&json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
    }));
    std::thread::sleep(Duration::from_secs(3));
    let sets = kube.get("/apis/apps/v1/namespaces/default/replicasets");
    assert_eq!(
        sets["items"],
        Value::Array(vec![]),
        "a ReplicaSet was made: {sets}"
    );
    let pods = kube.get("/api/v1/namespaces/default/pods");
    let names: Vec<&str> = pods["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, ["local"]);
}
