//! The `jobcheck policy` table (`docs/gco-policy-endpoint.md`), snapshotted.

use policy_client::policy_table;
use serde_json::json;
use test_support::policy_server::sample_policy_response;

#[test]
fn a_full_document_renders_every_section() {
    let table = policy_table("us-east-1", &sample_policy_response("us-east-1"));
    insta::assert_snapshot!(table);
}

#[test]
fn live_layers_and_failures_render_like_the_reference() {
    // The reference's own test: a namespace named `blocked` whose layer is unreadable, and one
    // with a quota and a LimitRange.
    let body = json!({
        "region": "us-east-2",
        "cluster_id": "gco-us-east-2",
        "policy": {
            "validation_enabled": true,
            "manifest_caps": {"max_cpu_millicores": 4000, "max_memory_bytes": 8589934592_u64, "max_gpu_count": 1},
            "allowed_namespaces": ["blocked", "jobs"],
            "allowed_kinds": ["Job"],
            "trusted_registries": ["docker.io"],
            "trusted_dockerhub_orgs": [],
            "require_accelerator_toleration": false,
            "yaml_max_depth": 50,
            "manifest_security_policy": {"block_privileged": true, "block_run_as_root": false}
        },
        "cluster_enforcement": {
            "jobs": {
                "resource_quotas": {"jobs": {"requests.cpu": "8", "pods": "10"}},
                "limit_ranges": {"containers": [
                    {"type": "Container", "max": {"cpu": "4"}, "min": {}, "default": {}, "defaultRequest": {}},
                    {"type": "Pod", "max": {}, "min": {}, "default": {}, "defaultRequest": {}}
                ]},
                "status": "ok"
            },
            "blocked": {"status": "unavailable", "reason": "RBAC denied"}
        }
    });
    let table = policy_table("us-east-2", &body);
    for needle in [
        "Job Validation Policy",
        "PER-MANIFEST CAPS",
        "block_privileged",
        "block_run_as_root",
        "blocked: unavailable — RBAC denied",
        "ResourceQuota/jobs",
        "requests.cpu: 8",
        "LimitRange/containers",
        "Container max: {'cpu': '4'}",
    ] {
        assert!(table.contains(needle), "missing {needle:?} in:\n{table}");
    }
    assert!(!table.contains("Pod max"), "empty max maps are skipped");
    insta::assert_snapshot!(table);
}

#[test]
fn a_sparse_body_falls_back_to_the_flag_and_none() {
    let table = policy_table("eu-west-1", &json!({"policy": {"allowed_kinds": ["Job"]}}));
    insta::assert_snapshot!(table);
}
