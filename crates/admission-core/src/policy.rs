//! [`JobValidationPolicy`]: what one deployment enforces, built from a `GET /api/v1/policy`
//! `policy` object with the reference's lenient coercions.

use std::sync::LazyLock;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::py::{self, PythonError};

/// The eight `block_*` security flags, in the reference's document order.
pub const SECURITY_FLAG_NAMES: [&str; 8] = [
    "block_privileged",
    "block_privilege_escalation",
    "block_host_network",
    "block_host_pid",
    "block_host_ipc",
    "block_host_path",
    "block_added_capabilities",
    "block_run_as_root",
];

/// The eight `block_*` flags of `manifest_security_policy` (the shipped defaults via
/// [`Default`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct SecurityFlags {
    /// Reject privileged containers and pod-level `privileged`.
    pub block_privileged: bool,
    /// Reject `allowPrivilegeEscalation`.
    pub block_privilege_escalation: bool,
    /// Reject `hostNetwork`.
    pub block_host_network: bool,
    /// Reject `hostPID`.
    pub block_host_pid: bool,
    /// Reject `hostIPC`.
    pub block_host_ipc: bool,
    /// Reject `hostPath` volumes.
    pub block_host_path: bool,
    /// Reject any `capabilities.add`.
    pub block_added_capabilities: bool,
    /// Reject `runAsUser: 0`.
    pub block_run_as_root: bool,
}

impl Default for SecurityFlags {
    /// The shipped defaults: everything blocked except running as root.
    fn default() -> Self {
        Self {
            block_privileged: true,
            block_privilege_escalation: true,
            block_host_network: true,
            block_host_pid: true,
            block_host_ipc: true,
            block_host_path: true,
            block_added_capabilities: true,
            block_run_as_root: false,
        }
    }
}

impl SecurityFlags {
    fn slot(&mut self, name: &str) -> Option<&mut bool> {
        Some(match name {
            "block_privileged" => &mut self.block_privileged,
            "block_privilege_escalation" => &mut self.block_privilege_escalation,
            "block_host_network" => &mut self.block_host_network,
            "block_host_pid" => &mut self.block_host_pid,
            "block_host_ipc" => &mut self.block_host_ipc,
            "block_host_path" => &mut self.block_host_path,
            "block_added_capabilities" => &mut self.block_added_capabilities,
            "block_run_as_root" => &mut self.block_run_as_root,
            _ => return None,
        })
    }

    /// The flag called `name`, if it is one of the eight.
    pub fn get(&self, name: &str) -> Option<bool> {
        let mut copy = *self;
        copy.slot(name).map(|flag| *flag)
    }

    /// `(name, value)` pairs sorted by name (the order drift and tables print them in).
    pub fn sorted_pairs(&self) -> [(&'static str, bool); 8] {
        let mut pairs = SECURITY_FLAG_NAMES.map(|name| (name, self.get(name).unwrap_or(false)));
        pairs.sort_by(|a, b| a.0.cmp(b.0));
        pairs
    }
}

/// Failure to build a [`JobValidationPolicy`] from a policy document: the exception the
/// reference raises (`ValueError: …`, `TypeError: …`, `AttributeError: …`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyDocumentError {
    /// A field could not be coerced the way the reference coerces it.
    #[error(transparent)]
    Coercion(#[from] PythonError),
}

impl PolicyDocumentError {
    /// The Python exception behind the failure.
    pub fn python_error(&self) -> &PythonError {
        match self {
            Self::Coercion(error) => error,
        }
    }
}

/// Everything the admission checks need to know about one deployment.
///
/// Collections keep the JSON values the document carried (normally strings) because the
/// reference reads them leniently: `allowed_namespaces: "gco-jobs"` is the set of its
/// characters, and odd element types change what the checks do.
#[derive(Debug, Clone, PartialEq)]
pub struct JobValidationPolicy {
    /// Per-manifest CPU cap in millicores (a manifest above it is rejected).
    pub max_cpu_millicores: i128,
    /// Per-manifest memory cap in bytes.
    pub max_memory_bytes: i128,
    /// Per-manifest `nvidia.com/gpu` cap.
    pub max_gpu_count: i128,
    /// Allowed namespaces (a set: unique hashable values, document order).
    pub allowed_namespaces: Vec<Value>,
    /// Allowed kinds (a set; empty rejects every kind).
    pub allowed_kinds: Vec<Value>,
    /// Trusted registry hosts and path prefixes, sorted.
    pub trusted_registries: Vec<Value>,
    /// Trusted Docker Hub organisations, sorted.
    pub trusted_dockerhub_orgs: Vec<Value>,
    /// Whether accelerator requests need a matching toleration.
    pub require_accelerator_toleration: bool,
    /// The eight security flags.
    pub security: SecurityFlags,
    /// Master switch: `false` admits everything.
    pub validation_enabled: bool,
    /// Maximum YAML nesting depth (server variant only; compared for drift).
    pub yaml_max_depth: i128,
}

impl JobValidationPolicy {
    /// Builds the policy from a `policy` object, exactly as the reference's
    /// `from_policy_document` does: missing caps are `0`, caps go through Python `int()` (so
    /// `"4000m"` is a `ValueError`), collections through `frozenset()`/`sorted()`, booleans by
    /// truthiness, unknown security keys ignored.
    ///
    /// ```
    /// use admission_core::JobValidationPolicy;
    /// let doc = serde_json::json!({"manifest_caps": {"max_gpu_count": 4}, "validation_enabled": "false"});
    /// let policy = JobValidationPolicy::from_policy_document(&doc).unwrap();
    /// assert_eq!((policy.max_gpu_count, policy.max_cpu_millicores), (4, 0));
    /// assert!(policy.validation_enabled); // truthiness: "false" is a non-empty string
    /// let bad = serde_json::json!({"manifest_caps": {"max_cpu_millicores": "4000m"}});
    /// let error = JobValidationPolicy::from_policy_document(&bad).unwrap_err();
    /// assert!(error.to_string().starts_with("ValueError: "));
    /// ```
    pub fn from_policy_document(doc: &Value) -> Result<Self, PolicyDocumentError> {
        let caps = or_empty(py::get(doc, "manifest_caps")?);
        let mut security = SecurityFlags::default();
        if let Some(overlay) = py::get(doc, "manifest_security_policy")?
            && py::truthy(overlay)
        {
            let Value::Object(entries) = overlay else {
                return Err(PythonError::no_attribute(overlay, "items").into());
            };
            for (key, value) in entries {
                if let Some(flag) = security.slot(key) {
                    *flag = py::truthy(value);
                }
            }
        }
        let cap = |name: &str| -> Result<i128, PythonError> {
            match py::get(caps, name)? {
                None => Ok(0),
                Some(value) => py::py_int(value),
            }
        };
        Ok(Self {
            max_cpu_millicores: cap("max_cpu_millicores")?,
            max_memory_bytes: cap("max_memory_bytes")?,
            max_gpu_count: cap("max_gpu_count")?,
            allowed_namespaces: frozenset(py::get(doc, "allowed_namespaces")?)?,
            allowed_kinds: frozenset(py::get(doc, "allowed_kinds")?)?,
            trusted_registries: sorted_tuple(py::get(doc, "trusted_registries")?)?,
            trusted_dockerhub_orgs: sorted_tuple(py::get(doc, "trusted_dockerhub_orgs")?)?,
            require_accelerator_toleration: py::get(doc, "require_accelerator_toleration")?
                .is_none_or(py::truthy),
            security,
            validation_enabled: py::get(doc, "validation_enabled")?.is_none_or(py::truthy),
            yaml_max_depth: match py::get(doc, "yaml_max_depth")? {
                None => 50,
                Some(value) => py::py_int(value)?,
            },
        })
    }

    /// Whether `value` is in `allowed_namespaces` (Python set membership; unhashable values
    /// raise `TypeError`).
    pub(crate) fn namespace_allowed(&self, value: &Value) -> Result<bool, PythonError> {
        set_contains(&self.allowed_namespaces, value)
    }

    /// Whether `value` is in `allowed_kinds`.
    pub(crate) fn kind_allowed(&self, value: &Value) -> Result<bool, PythonError> {
        set_contains(&self.allowed_kinds, value)
    }
}

/// `value or {}`: a missing or falsy value reads as an empty dict.
fn or_empty(value: Option<&Value>) -> &Value {
    static EMPTY: LazyLock<Value> = LazyLock::new(|| Value::Object(Map::new()));
    match value {
        Some(v) if py::truthy(v) => v,
        _ => &EMPTY,
    }
}

/// Python set membership over the stored (hashable) elements.
pub(crate) fn set_contains(set: &[Value], value: &Value) -> Result<bool, PythonError> {
    if let Value::String(needle) = value {
        // Fast path: strings only equal strings.
        return Ok(set.iter().any(|item| item.as_str() == Some(needle)));
    }
    if !py::hashable(value) {
        return Err(PythonError::unhashable(value));
    }
    Ok(set.iter().any(|item| py::py_eq(item, value)))
}

/// `frozenset(value or ())`: iterate, require hashable elements, drop duplicates.
fn frozenset(value: Option<&Value>) -> Result<Vec<Value>, PythonError> {
    let Some(value) = value.filter(|v| py::truthy(v)) else {
        return Ok(Vec::new());
    };
    let mut out: Vec<Value> = Vec::new();
    for item in py::iterate(value)? {
        let item = item.value();
        if !py::hashable(item) {
            return Err(PythonError::unhashable(item));
        }
        if !out.iter().any(|seen| py::py_eq(seen, item)) {
            out.push(item.clone());
        }
    }
    Ok(out)
}

/// `tuple(sorted(value or ()))`.
fn sorted_tuple(value: Option<&Value>) -> Result<Vec<Value>, PythonError> {
    let Some(value) = value.filter(|v| py::truthy(v)) else {
        return Ok(Vec::new());
    };
    let mut out: Vec<Value> = py::iterate(value)?.map(py::PyItem::into_owned).collect();
    py::py_sort(&mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn missing_keys_use_the_documented_fallbacks() {
        let policy = JobValidationPolicy::from_policy_document(&json!({})).unwrap();
        assert_eq!(policy.max_cpu_millicores, 0);
        assert!(policy.allowed_kinds.is_empty());
        assert!(policy.require_accelerator_toleration);
        assert!(policy.validation_enabled);
        assert_eq!(policy.yaml_max_depth, 50);
        assert_eq!(policy.security, SecurityFlags::default());
    }

    #[test]
    fn coercions_follow_python() {
        let doc = json!({
            "manifest_caps": {"max_cpu_millicores": 4.7, "max_memory_bytes": "16", "max_gpu_count": true},
            "allowed_namespaces": "ab",
            "trusted_registries": ["quay.io", "docker.io"],
            "require_accelerator_toleration": null,
            "manifest_security_policy": {"block_run_as_root": 1, "unknown": true, "block_host_ipc": ""},
        });
        let policy = JobValidationPolicy::from_policy_document(&doc).unwrap();
        assert_eq!(policy.max_cpu_millicores, 4);
        assert_eq!(policy.max_memory_bytes, 16);
        assert_eq!(policy.max_gpu_count, 1);
        assert_eq!(policy.allowed_namespaces, vec![json!("a"), json!("b")]);
        assert_eq!(
            policy.trusted_registries,
            vec![json!("docker.io"), json!("quay.io")]
        );
        assert!(!policy.require_accelerator_toleration);
        assert!(policy.security.block_run_as_root);
        assert!(!policy.security.block_host_ipc);
    }

    #[test]
    fn conversion_failures_name_the_python_error() {
        let cases = [
            (
                json!({"manifest_caps": {"max_cpu_millicores": "4000m"}}),
                "ValueError: ",
            ),
            (
                json!({"manifest_caps": {"max_gpu_count": null}}),
                "TypeError: ",
            ),
            (json!({"allowed_namespaces": [["x"]]}), "TypeError: "),
            (json!({"allowed_kinds": 5}), "TypeError: "),
            (json!({"trusted_registries": ["a", 1]}), "TypeError: "),
            (
                json!({"manifest_security_policy": "false"}),
                "AttributeError: ",
            ),
            (json!({"manifest_caps": "x"}), "AttributeError: "),
            (json!({"yaml_max_depth": null}), "TypeError: "),
            (json!(["not", "a", "dict"]), "AttributeError: "),
        ];
        for (doc, prefix) in cases {
            let error = JobValidationPolicy::from_policy_document(&doc).unwrap_err();
            assert!(error.to_string().starts_with(prefix), "{doc}: {error}");
        }
    }
}
