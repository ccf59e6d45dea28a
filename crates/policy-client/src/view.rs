//! The `jobcheck policy -r REGION` table (`docs/gco-policy-endpoint.md`): one region's full
//! `GET /api/v1/policy` response rendered for people. Pure; values are printed the way the reference prints them
//! (Python `str()`: `True`, `None`, `{'cpu': '4'}`).
//!
//! Choices where the reference text leaves room: a missing value prints `None` (so a missing cap
//! prints `Nonem`, as the reference's f-string would); list items are joined with `, ` after
//! `str()`; namespaces, quota names, LimitRange names and quota keys are sorted; the blank line
//! before CLUSTER ENFORCEMENT appears only with that section.

use admission_core::{py_str, truthy};
use serde_json::{Map, Value};

const RULE: &str = "------------------------------------------------------------";

/// Renders the table for the response `body` read for `region_flag` (the `-r` value, used
/// when the body names no region). Ends with a newline.
pub fn policy_table(region_flag: &str, body: &Value) -> String {
    let empty = Map::new();
    let field = |map: &Map<String, Value>, key: &str| -> String {
        map.get(key).map_or_else(|| "None".to_string(), py_str)
    };
    let object = |value: Option<&Value>| -> Map<String, Value> {
        match value {
            Some(Value::Object(map)) => map.clone(),
            _ => Map::new(),
        }
    };
    let top = body.as_object().unwrap_or(&empty);
    let region = top
        .get("region")
        .filter(|v| truthy(v))
        .map_or_else(|| region_flag.to_string(), py_str);
    let cluster = top
        .get("cluster_id")
        .filter(|v| truthy(v))
        .map_or_else(|| "unknown".to_string(), py_str);
    let policy = object(top.get("policy").filter(|v| truthy(v)));
    let caps = object(policy.get("manifest_caps").filter(|v| truthy(v)));

    let mut lines: Vec<String> = vec![
        String::new(),
        format!("  Job Validation Policy — {region}"),
        format!("  Cluster: {cluster}"),
        format!("  {RULE}"),
        format!(
            "  Validation enabled:  {}",
            field(&policy, "validation_enabled")
        ),
        String::new(),
        "  PER-MANIFEST CAPS (front door)".to_string(),
        format!("    max CPU:     {}m", field(&caps, "max_cpu_millicores")),
        format!(
            "    max memory:  {} bytes",
            field(&caps, "max_memory_bytes")
        ),
        format!("    max GPU:     {}", field(&caps, "max_gpu_count")),
        String::new(),
        "  ALLOWLISTS".to_string(),
        format!(
            "    namespaces:       {}",
            joined(policy.get("allowed_namespaces"))
        ),
        format!(
            "    kinds:            {}",
            joined(policy.get("allowed_kinds"))
        ),
        format!(
            "    registries:       {}",
            joined(policy.get("trusted_registries"))
        ),
        format!(
            "    dockerhub orgs:   {}",
            joined(policy.get("trusted_dockerhub_orgs"))
        ),
        String::new(),
        "  OTHER CHECKS".to_string(),
        format!(
            "    accelerator toleration required: {}",
            field(&policy, "require_accelerator_toleration")
        ),
        format!(
            "    YAML max depth:                  {}",
            field(&policy, "yaml_max_depth")
        ),
    ];

    let security = object(policy.get("manifest_security_policy").filter(|v| truthy(v)));
    if !security.is_empty() {
        let names = |blocked: bool| -> String {
            let mut names: Vec<&str> = security
                .iter()
                .filter(|(_, v)| truthy(v) == blocked)
                .map(|(k, _)| k.as_str())
                .collect();
            names.sort_unstable();
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        };
        lines.push(format!("    blocked:     {}", names(true)));
        lines.push(format!("    not blocked: {}", names(false)));
    }

    let enforcement = object(top.get("cluster_enforcement").filter(|v| truthy(v)));
    if !enforcement.is_empty() {
        lines.push(String::new());
        lines.push("  CLUSTER ENFORCEMENT (live from the Kubernetes API)".to_string());
        for (namespace, layer) in sorted(&enforcement) {
            let layer = object(Some(layer));
            let status = layer.get("status").and_then(Value::as_str);
            if status != Some("ok") {
                let reason = layer
                    .get("reason")
                    .filter(|v| truthy(v))
                    .map_or_else(|| "no reason given".to_string(), py_str);
                lines.push(format!(
                    "    {namespace}: {} — {reason}",
                    field(&layer, "status")
                ));
                continue;
            }
            for (name, hard) in sorted(&object(layer.get("resource_quotas"))) {
                lines.push(format!("    {namespace} ResourceQuota/{name}:"));
                for (key, value) in sorted(&object(Some(hard))) {
                    lines.push(format!("      {key}: {}", py_str(value)));
                }
            }
            for (name, items) in sorted(&object(layer.get("limit_ranges"))) {
                lines.push(format!("    {namespace} LimitRange/{name}:"));
                for item in items.as_array().into_iter().flatten() {
                    let Some(max) = item.get("max").filter(|m| truthy(m)) else {
                        continue;
                    };
                    let kind = item
                        .get("type")
                        .filter(|t| truthy(t))
                        .map_or_else(|| "?".to_string(), py_str);
                    lines.push(format!("      {kind} max: {}", py_str(max)));
                }
            }
        }
    }
    lines.push(String::new());
    let mut text = lines.join("\n");
    text.push('\n');
    text
}

fn joined(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => String::new(),
        Some(Value::Array(items)) => items.iter().map(py_str).collect::<Vec<_>>().join(", "),
        Some(other) => py_str(other),
    }
}

fn sorted(map: &Map<String, Value>) -> Vec<(&str, &Value)> {
    let mut entries: Vec<(&str, &Value)> = map.iter().map(|(k, v)| (k.as_str(), v)).collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    entries
}
