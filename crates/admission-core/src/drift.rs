//! Cross-region comparison: [`detect_policy_drift`], [`registry_drift`] and
//! [`ecr_augmentation`], as the reference CLI compares region policies.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::policy::JobValidationPolicy;
use crate::py::{self, PythonError};
use crate::region::{RegionMap, RegionPolicy};

/// Policy fields compared across regions, in the reference's order (`trusted_registries` is
/// compared separately by [`registry_drift`]).
pub const DRIFT_FIELDS: [&str; 10] = [
    "max_cpu_millicores",
    "max_memory_bytes",
    "max_gpu_count",
    "allowed_namespaces",
    "allowed_kinds",
    "trusted_dockerhub_orgs",
    "require_accelerator_toleration",
    "validation_enabled",
    "yaml_max_depth",
    "security",
];

/// One policy field that is not identical across regions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PolicyDrift {
    /// The field name.
    pub field: String,
    /// Each readable region's value, in region order.
    pub values: RegionMap<Value>,
}

/// Policies whose values the reference cannot compare (it raises `TypeError`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DriftError {
    /// A value could not be sorted, hashed or matched.
    #[error("the region policies could not be compared")]
    Incomparable(#[source] PythonError),
}

fn int_value(value: i128) -> Value {
    match i64::try_from(value) {
        Ok(v) => Value::from(v),
        Err(_) => Value::from(value as f64),
    }
}

fn require_hashable(items: &[Value]) -> Result<(), DriftError> {
    match items.iter().find(|item| !py::hashable(item)) {
        Some(item) => Err(DriftError::Incomparable(PythonError::unhashable(item))),
        None => Ok(()),
    }
}

/// The comparable (and renderable) value of one drift field.
fn field_value(policy: &JobValidationPolicy, field: &str) -> Result<Value, DriftError> {
    let sorted = |items: &[Value]| -> Result<Value, DriftError> {
        let mut items = items.to_vec();
        py::py_sort(&mut items).map_err(DriftError::Incomparable)?;
        Ok(Value::Array(items))
    };
    Ok(match field {
        "max_cpu_millicores" => int_value(policy.max_cpu_millicores),
        "max_memory_bytes" => int_value(policy.max_memory_bytes),
        "max_gpu_count" => int_value(policy.max_gpu_count),
        "allowed_namespaces" => sorted(&policy.allowed_namespaces)?,
        "allowed_kinds" => sorted(&policy.allowed_kinds)?,
        "trusted_dockerhub_orgs" => {
            require_hashable(&policy.trusted_dockerhub_orgs)?;
            Value::Array(policy.trusted_dockerhub_orgs.clone())
        }
        "require_accelerator_toleration" => Value::Bool(policy.require_accelerator_toleration),
        "validation_enabled" => Value::Bool(policy.validation_enabled),
        "yaml_max_depth" => int_value(policy.yaml_max_depth),
        _ => {
            let mut flags = Map::new();
            for (name, value) in policy.security.sorted_pairs() {
                flags.insert(name.to_owned(), Value::Bool(value));
            }
            Value::Object(flags)
        }
    })
}

fn readable(policies: &[RegionPolicy]) -> Vec<(&str, &JobValidationPolicy)> {
    policies
        .iter()
        .filter_map(|entry| entry.readable_policy().map(|p| (entry.region.as_str(), p)))
        .collect()
}

/// Whether the observed values are not all equal (Python `len(set(values)) > 1`).
fn differs(values: &RegionMap<Value>) -> bool {
    let mut iter = values.iter().map(|(_, v)| v);
    match iter.next() {
        Some(first) => iter.any(|v| !py::py_eq(first, v)),
        None => false,
    }
}

/// The policy fields that differ across readable regions, in [`DRIFT_FIELDS`] order (empty with
/// fewer than two readable regions). Sets compare sorted; `security` renders as a dict.
pub fn detect_policy_drift(policies: &[RegionPolicy]) -> Result<Vec<PolicyDrift>, DriftError> {
    let readable = readable(policies);
    if readable.len() < 2 {
        return Ok(Vec::new());
    }
    let mut drifts = Vec::new();
    for field in DRIFT_FIELDS {
        let mut values = RegionMap::new();
        for (region, policy) in &readable {
            values.insert(*region, field_value(policy, field)?);
        }
        if differs(&values) {
            drifts.push(PolicyDrift {
                field: field.to_owned(),
                values,
            });
        }
    }
    Ok(drifts)
}

/// Whether `host` is an AWS ECR registry hostname of the commercial or China partition:
/// `^\d{12}\.dkr\.ecr\.[a-z0-9-]+\.amazonaws\.com(\.cn)?$` with Python `re.match` semantics
/// (`\d` is any Unicode decimal digit; `$` also matches before one trailing newline).
pub fn is_ecr_hostname(host: &str) -> bool {
    matches_ecr(host) || host.strip_suffix('\n').is_some_and(matches_ecr)
}

fn matches_ecr(host: &str) -> bool {
    let mut chars = host.char_indices();
    for _ in 0..12 {
        match chars.next() {
            Some((_, c)) if py::decimal_digit(c).is_some() => {}
            _ => return false,
        }
    }
    let rest = match chars.next() {
        Some((index, _)) => &host[index..],
        None => return false,
    };
    let Some(rest) = rest.strip_prefix(".dkr.ecr.") else {
        return false;
    };
    let Some((region, tail)) = rest.split_once('.') else {
        return false;
    };
    !region.is_empty()
        && region
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && (tail == "amazonaws.com" || tail == "amazonaws.com.cn")
}

fn ecr_match(host: &Value) -> Result<bool, DriftError> {
    match host {
        Value::String(host) => Ok(is_ecr_hostname(host)),
        other => Err(DriftError::Incomparable(PythonError::type_error(format!(
            "expected string or bytes-like object, got '{}'",
            py::type_name(other)
        )))),
    }
}

/// `trusted_registries` compared with ECR hostnames removed (CDK appends the project's own ECR
/// hosts per region, so those legitimately differ). `None` when the rest agrees or fewer than
/// two regions are readable.
pub fn registry_drift(policies: &[RegionPolicy]) -> Result<Option<PolicyDrift>, DriftError> {
    let readable = readable(policies);
    if readable.len() < 2 {
        return Ok(None);
    }
    let mut values = RegionMap::new();
    for (region, policy) in &readable {
        let mut kept = Vec::new();
        for host in &policy.trusted_registries {
            if !ecr_match(host)? {
                kept.push(host.clone());
            }
        }
        require_hashable(&kept)?;
        values.insert(*region, Value::Array(kept));
    }
    if !differs(&values) {
        return Ok(None);
    }
    Ok(Some(PolicyDrift {
        field: "trusted_registries".to_owned(),
        values,
    }))
}

/// The ECR hostnames CDK added to each readable region's allowlist (sorted; empty lists kept).
pub fn ecr_augmentation(policies: &[RegionPolicy]) -> Result<RegionMap<Vec<String>>, DriftError> {
    let mut out = RegionMap::new();
    for entry in policies {
        let Some(policy) = entry.readable_policy() else {
            continue;
        };
        let mut hosts = Vec::new();
        for host in &policy.trusted_registries {
            if ecr_match(host)?
                && let Value::String(host) = host
            {
                hosts.push(host.clone());
            }
        }
        hosts.sort();
        out.insert(entry.region.clone(), hosts);
    }
    Ok(out)
}

/// Generic drift followed by the registry drift, as the CLI reports them.
pub fn all_policy_drift(policies: &[RegionPolicy]) -> Result<Vec<PolicyDrift>, DriftError> {
    let mut drift = detect_policy_drift(policies)?;
    if let Some(registries) = registry_drift(policies)? {
        drift.push(registries);
    }
    Ok(drift)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn region(name: &str, policy: Value) -> RegionPolicy {
        RegionPolicy::from_response_body(name, &json!({ "policy": policy }))
    }

    #[test]
    fn ecr_hostname_shapes() {
        assert!(is_ecr_hostname(
            "111122223333.dkr.ecr.us-east-1.amazonaws.com"
        ));
        assert!(is_ecr_hostname(
            "111122223333.dkr.ecr.cn-north-1.amazonaws.com.cn"
        ));
        assert!(is_ecr_hostname(
            "111122223333.dkr.ecr.us-east-1.amazonaws.com\n"
        ));
        for near_miss in [
            "1.dkr.ecr.us-east-1.amazonaws.com",
            "1111222233334444.dkr.ecr.us-east-1.amazonaws.com",
            "evil.dkr.ecr.us-east-1.amazonaws.com",
            "111122223333.dkr.ecr.us-east-1.amazonaws.com.evil.io",
            "111122223333.dkr.ecr-fips.us-east-1.amazonaws.com",
            "111122223333.dkr.ecr.us-iso-east-1.c2s.ic.gov",
            "docker.io",
            "public.ecr.aws",
        ] {
            assert!(!is_ecr_hostname(near_miss), "{near_miss}");
        }
    }

    #[test]
    fn differing_cap_is_drift_and_identical_regions_are_not() {
        let a = region("us-east-1", json!({"manifest_caps": {"max_gpu_count": 16}}));
        let b = region("us-east-2", json!({"manifest_caps": {"max_gpu_count": 8}}));
        let drift = detect_policy_drift(&[a.clone(), b]).unwrap();
        assert_eq!(drift.len(), 1);
        assert_eq!(drift[0].field, "max_gpu_count");
        assert_eq!(
            serde_json::to_value(&drift[0].values).unwrap(),
            json!({"us-east-1": 16, "us-east-2": 8})
        );
        assert!(
            detect_policy_drift(&[a.clone(), a.clone()])
                .unwrap()
                .is_empty()
        );
        assert!(detect_policy_drift(&[a]).unwrap().is_empty());
    }

    #[test]
    fn ecr_hosts_are_not_registry_drift_but_real_differences_are() {
        let a = region(
            "us-east-1",
            json!({"trusted_registries": ["docker.io", "quay.io", "111122223333.dkr.ecr.us-east-1.amazonaws.com"]}),
        );
        let b = region(
            "us-east-2",
            json!({"trusted_registries": ["docker.io", "111122223333.dkr.ecr.us-east-2.amazonaws.com"]}),
        );
        let c = region(
            "us-west-2",
            json!({"trusted_registries": ["docker.io", "111122223333.dkr.ecr.us-west-2.amazonaws.com"]}),
        );
        assert_eq!(registry_drift(&[b.clone(), c]).unwrap(), None);
        let drift = registry_drift(&[a.clone(), b]).unwrap().unwrap();
        assert_eq!(
            drift.values.get("us-east-1"),
            Some(&json!(["docker.io", "quay.io"]))
        );
        let augmentation = ecr_augmentation(&[a]).unwrap();
        assert_eq!(
            augmentation.get("us-east-1"),
            Some(&vec![
                "111122223333.dkr.ecr.us-east-1.amazonaws.com".to_owned()
            ])
        );
    }
}
