//! Judging one manifest: the CLI variant [`evaluate_manifest`] (every check, issues labelled
//! `Kind/name`), the server variant [`validate_manifest`] (first failure wins) and the CLI's
//! namespace pre-fill [`prefill_namespaces`].

use std::cell::OnceCell;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::checks::{self, AllowlistTexts, ManifestPods, SecurityFindings};
use crate::policy::{JobValidationPolicy, set_contains};
use crate::py::{self, Fields, PythonError};

/// The namespace the CLI pre-fills when a manifest names none.
pub const DEFAULT_NAMESPACE: &str = "gco-jobs";

/// Which layer objected, in the CLI's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Check {
    /// The kind allowlist.
    Kind,
    /// The namespace allowlist.
    Namespace,
    /// Trusted registries and Docker Hub organisations.
    Images,
    /// Per-manifest CPU / memory / GPU caps.
    ResourceCaps,
    /// The `block_*` security flags.
    SecurityContext,
    /// Accelerator tolerations.
    Tolerations,
    /// A namespace LimitRange `max` (never produced by the reference's checks: only when a caller
    /// promotes [`crate::enforcement`] warnings to issues, as `jobcheck --strict-enforcement` does).
    LimitRange,
    /// A namespace ResourceQuota hard limit (promoted warnings only, like [`Check::LimitRange`]).
    ResourceQuota,
    /// A manifest the reference's checks raise on (`containers: null`), so it cannot be judged
    /// (never produced here: `jobcheck` reports such a manifest as a rejection in every region
    /// instead of failing the whole run).
    Manifest,
}

impl Check {
    /// The check's name as printed and serialized (`resource_caps`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Kind => "kind",
            Self::Namespace => "namespace",
            Self::Images => "images",
            Self::ResourceCaps => "resource_caps",
            Self::SecurityContext => "security_context",
            Self::Tolerations => "tolerations",
            Self::LimitRange => "limit_range",
            Self::ResourceQuota => "resource_quota",
            Self::Manifest => "manifest",
        }
    }
}

impl std::fmt::Display for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One reason a manifest would be rejected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AdmissionIssue {
    /// The check that objected.
    pub check: Check,
    /// The reference's message text.
    pub message: String,
    /// The manifest's `Kind/name` label.
    pub manifest: Option<String>,
}

/// A manifest that makes the reference raise instead of reporting an issue.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvaluationError {
    /// A check raised (e.g. an unhashable kind, `containers: null` in the toleration check).
    #[error("a manifest could not be evaluated")]
    Manifest(#[source] PythonError),
    /// A readable region's `cluster_enforcement` is not an object, so its gaps cannot be read.
    #[error("the cluster_enforcement of region {region} is not an object")]
    ClusterEnforcement {
        /// The region.
        region: String,
        /// The exception the reference raises.
        #[source]
        source: PythonError,
    },
}

impl EvaluationError {
    /// The Python exception behind the failure.
    pub fn python_error(&self) -> &PythonError {
        match self {
            Self::Manifest(error) | Self::ClusterEnforcement { source: error, .. } => error,
        }
    }
}

/// A manifest whose `metadata` is present but not a mapping, so no namespace can be pre-filled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("manifest {position} has a metadata that is not a mapping")]
pub struct PrefillError {
    /// 1-based position of the manifest.
    pub position: usize,
    /// The exception the reference raises.
    #[source]
    pub source: PythonError,
}

/// The CLI's namespace pre-fill, in place: for every mapping manifest, `metadata` is created if
/// absent and `metadata.namespace` set to `namespace` only where the key is absent (a present
/// `null` or `""` stays and skips the namespace check). Non-mapping documents are left alone.
///
/// Fails, like the reference, when `metadata` is present but not a mapping.
pub fn prefill_namespaces(manifests: &mut [Value], namespace: &str) -> Result<(), PrefillError> {
    for (index, manifest) in manifests.iter_mut().enumerate() {
        let Value::Object(map) = manifest else {
            continue;
        };
        let metadata = map
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        match metadata {
            Value::Object(metadata) => {
                metadata
                    .entry("namespace")
                    .or_insert_with(|| Value::String(namespace.to_owned()));
            }
            other => {
                return Err(PrefillError {
                    position: index + 1,
                    source: PythonError::no_attribute(other, "setdefault"),
                });
            }
        }
    }
    Ok(())
}

/// The `Kind/name` label of a manifest (`?` for a missing kind, `<unnamed>` for a missing name).
///
/// Fails when `metadata` is a truthy non-mapping (the reference raises there).
pub fn manifest_label(manifest: &Value) -> Result<String, PythonError> {
    let kind = py::get(manifest, "kind")?.filter(|v| py::truthy(v));
    let metadata = py::get(manifest, "metadata")?.filter(|v| py::truthy(v));
    let name = match metadata {
        Some(metadata) => py::get(metadata, "name")?.filter(|v| py::truthy(v)),
        None => None,
    };
    let mut label = String::new();
    match kind {
        Some(kind) => py::push_py_str(&mut label, kind),
        None => label.push('?'),
    }
    label.push('/');
    match name {
        Some(name) => py::push_py_str(&mut label, name),
        None => label.push_str("<unnamed>"),
    }
    Ok(label)
}

/// Every reason `policy` would reject `manifest` (the CLI's `evaluate_manifest`).
///
/// Every check runs, in the order kind, namespace, images, resource_caps, security_context,
/// tolerations (the last only when the policy requires accelerator tolerations); nothing when
/// validation is disabled. Issues carry the manifest's `Kind/name` label.
///
/// Errors where the reference raises: a non-mapping manifest or `metadata`, an unhashable kind
/// or namespace, an allowlist that cannot be sorted for the message, and a malformed pod spec in
/// the toleration check (which, unlike the others, is not exception-safe).
///
/// ```
/// use admission_core::{JobValidationPolicy, evaluate_manifest};
/// let policy = JobValidationPolicy::from_policy_document(&serde_json::json!({
///     "allowed_kinds": ["Job"], "allowed_namespaces": ["gco-jobs"]})).unwrap();
/// let issues = evaluate_manifest(&serde_json::json!({"kind": "Pod"}), &policy).unwrap();
/// assert_eq!(issues[0].message, "Resource kind 'Pod' is not allowed. Allowed kinds: ['Job']");
/// assert_eq!(issues[0].manifest.as_deref(), Some("Pod/<unnamed>"));
/// ```
pub fn evaluate_manifest(
    manifest: &Value,
    policy: &JobValidationPolicy,
) -> Result<Vec<AdmissionIssue>, EvaluationError> {
    let mut issues = Vec::new();
    evaluate_into(manifest, policy, &mut issues)?;
    Ok(issues)
}

/// [`evaluate_manifest`] appending to `issues`.
pub(crate) fn evaluate_into(
    manifest: &Value,
    policy: &JobValidationPolicy,
    issues: &mut Vec<AdmissionIssue>,
) -> Result<(), EvaluationError> {
    let prepared = PreparedManifest::new(manifest)?;
    let answers = PodAnswers::default();
    prepared.evaluate_into(&answers, policy, &AllowlistTexts::default(), issues)
}

/// One mapping manifest prepared for judging against many policies: its namespace, label and
/// pod specs are read once. The policy-independent answers about its pods live next to it in
/// [`PodAnswers`], which borrows from it.
pub(crate) struct PreparedManifest<'a> {
    manifest: &'a Value,
    /// `metadata.namespace` when `metadata` is truthy (a mapping), or the exception a
    /// non-mapping `metadata` raises.
    namespace: Result<Option<&'a Value>, PythonError>,
    label: OnceCell<String>,
    pods: ManifestPods<'a>,
}

/// The policy-independent answers about a prepared manifest's pods (image list, resource
/// totals, toleration check, security findings), each computed the first time a policy needs
/// it and reused for every other region.
#[derive(Default)]
pub(crate) struct PodAnswers<'p> {
    images: OnceCell<Vec<checks::ImageStep<'p>>>,
    totals: OnceCell<Result<(i128, i128, i128), PythonError>>,
    tolerations: OnceCell<Result<Option<String>, PythonError>>,
    security: OnceCell<SecurityFindings>,
}

impl<'a> PreparedManifest<'a> {
    /// Prepares a manifest; fails for a non-mapping one (the reference raises there).
    pub(crate) fn new(manifest: &'a Value) -> Result<Self, EvaluationError> {
        let Value::Object(map) = manifest else {
            return Err(EvaluationError::Manifest(PythonError::no_attribute(
                manifest, "get",
            )));
        };
        let namespace = match map.field("metadata").filter(|v| py::truthy(v)) {
            Some(Value::Object(metadata)) => Ok(metadata.field("namespace")),
            Some(metadata) => Err(PythonError::no_attribute(metadata, "get")),
            None => Ok(None),
        };
        Ok(Self {
            manifest,
            namespace,
            label: OnceCell::new(),
            pods: ManifestPods::of(map),
        })
    }

    /// Every issue `policy` finds, appended to `issues` (see [`evaluate_manifest`]); `answers`
    /// caches what this manifest's pods say across regions, `texts` the policy's rendered
    /// allowlists across manifests.
    pub(crate) fn evaluate_into<'p>(
        &'p self,
        answers: &PodAnswers<'p>,
        policy: &JobValidationPolicy,
        texts: &AllowlistTexts,
        issues: &mut Vec<AdmissionIssue>,
    ) -> Result<(), EvaluationError> {
        // The reference computes the label first: a truthy non-mapping metadata raises even
        // when validation is disabled.
        let namespace = self.namespace.clone().map_err(EvaluationError::Manifest)?;
        if !policy.validation_enabled {
            return Ok(());
        }
        let pods = &self.pods;
        let mut push = |check: Check, message: String| {
            let label = self.label.get_or_init(|| {
                // Cannot fail: the manifest is a mapping and its metadata was checked above.
                manifest_label(self.manifest).unwrap_or_default()
            });
            issues.push(AdmissionIssue {
                check,
                message,
                manifest: Some(label.clone()),
            });
        };
        if let Some(message) =
            checks::check_kind(pods.manifest(), policy, texts).map_err(EvaluationError::Manifest)?
        {
            push(Check::Kind, message);
        }
        if let Some(message) =
            checks::check_namespace(namespace, policy, texts).map_err(EvaluationError::Manifest)?
        {
            push(Check::Namespace, message);
        }
        let steps = answers.images.get_or_init(|| checks::image_steps(pods));
        if let Some(message) = checks::judge_image_steps(steps, policy) {
            push(Check::Images, non_empty(message, "untrusted image source"));
        }
        let totals = answers.totals.get_or_init(|| checks::totals_of(pods));
        if let Some(message) = checks::caps_message(totals, policy) {
            push(Check::ResourceCaps, message);
        }
        let security = answers.security.get_or_init(|| SecurityFindings::of(pods));
        if let Some(message) = security.message(&policy.security) {
            push(
                Check::SecurityContext,
                non_empty(message, "security policy violation"),
            );
        }
        if policy.require_accelerator_toleration {
            let outcome = answers
                .tolerations
                .get_or_init(|| checks::tolerations_of(pods));
            match outcome {
                Ok(Some(message)) => {
                    push(
                        Check::Tolerations,
                        non_empty(message.clone(), "missing toleration"),
                    );
                }
                Ok(None) => {}
                Err(error) => return Err(EvaluationError::Manifest(error.clone())),
            }
        }
        Ok(())
    }
}

fn non_empty(message: String, fallback: &str) -> String {
    if message.is_empty() {
        fallback.to_owned()
    } else {
        message
    }
}

/// Why the server variant rejected a manifest: the message the manifest processor returns.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ServerRejection {
    /// The server's message, e.g. `Missing required field: kind`.
    pub message: String,
}

impl ServerRejection {
    fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

/// Kinds the server caps (a bare `Pod` is never capped by the REST path).
const SERVER_CAPPED_KINDS: [&str; 6] = [
    "Deployment",
    "Job",
    "CronJob",
    "StatefulSet",
    "DaemonSet",
    "TrainJob",
];

/// The manifest processor's `validate_manifest` (the server gate), for library consumers
/// who embed the gate: first failure wins, in the server order — depth, required fields,
/// `metadata.name`, namespace (absent ⇒ `default_namespace`, else `gco-jobs`), kind, caps (for
/// workload kinds only), tolerations, security (prefixed), images. A malformed manifest gives
/// `Validation error: <exception>`.
///
/// Deliberate difference: the server prints the namespace allowlist in Python set order
/// (nondeterministic); this prints it sorted.
///
/// ```
/// use admission_core::{JobValidationPolicy, validate_manifest};
/// let policy = JobValidationPolicy::from_policy_document(&serde_json::json!({})).unwrap();
/// let rejection = validate_manifest(&serde_json::json!({"kind": "Job"}), &policy, None).unwrap_err();
/// assert_eq!(rejection.message, "Missing required field: apiVersion");
/// ```
pub fn validate_manifest(
    manifest: &Value,
    policy: &JobValidationPolicy,
    default_namespace: Option<&str>,
) -> Result<(), ServerRejection> {
    match server_checks(manifest, policy, default_namespace) {
        Ok(None) => Ok(()),
        Ok(Some(message)) => Err(ServerRejection::new(message)),
        Err(error) => Err(ServerRejection::new(format!(
            "Validation error: {}",
            error.message
        ))),
    }
}

fn server_checks(
    manifest: &Value,
    policy: &JobValidationPolicy,
    default_namespace: Option<&str>,
) -> Result<Option<String>, PythonError> {
    if !policy.validation_enabled {
        return Ok(None);
    }
    if exceeds_depth(manifest, policy.yaml_max_depth) {
        return Ok(Some(format!(
            "Manifest exceeds maximum nesting depth of {} levels",
            policy.yaml_max_depth
        )));
    }
    for field in ["apiVersion", "kind", "metadata"] {
        if !py::contains_str(manifest, field)? {
            return Ok(Some(format!("Missing required field: {field}")));
        }
    }
    let Value::Object(map) = manifest else {
        return Err(PythonError::type_error(format!(
            "'{}' object is not subscriptable",
            py::type_name(manifest)
        )));
    };
    let metadata = map.field("metadata").unwrap_or(&Value::Null);
    if !py::contains_str(metadata, "name")? {
        return Ok(Some("Missing metadata.name field".to_owned()));
    }
    let fallback = Value::String(default_namespace.unwrap_or(DEFAULT_NAMESPACE).to_owned());
    let namespace = py::get(metadata, "namespace")?.unwrap_or(&fallback);
    if !set_contains(&policy.allowed_namespaces, namespace)? {
        let mut allowed = policy.allowed_namespaces.clone();
        if py::py_sort(&mut allowed).is_err() {
            allowed.clone_from(&policy.allowed_namespaces);
        }
        let mut message = String::from("Namespace '");
        py::push_py_str(&mut message, namespace);
        message.push_str("' not allowed. Allowed namespaces: ");
        py::push_list_repr(&mut message, allowed.iter());
        return Ok(Some(message));
    }
    if let Some(message) = checks::check_kind(map, policy, &AllowlistTexts::default())? {
        return Ok(Some(message));
    }
    let kind = map.field("kind").and_then(Value::as_str);
    if kind.is_some_and(|k| SERVER_CAPPED_KINDS.contains(&k))
        && let Some(message) = checks::check_resource_caps(map, policy)
    {
        return Ok(Some(message));
    }
    if policy.require_accelerator_toleration
        && let Some(message) = checks::check_tolerations(map)?
    {
        return Ok(Some(message));
    }
    if let Some(message) = checks::check_security_context(map, policy) {
        return Ok(Some(format!(
            "Security context validation failed: {message}"
        )));
    }
    if let Some(message) = checks::check_images(map, policy) {
        return Ok(Some(non_empty(message, "Untrusted image sources detected")));
    }
    Ok(None)
}

/// Whether any node (scalars included) sits deeper than `max` (root at depth 0).
fn exceeds_depth(root: &Value, max: i128) -> bool {
    let mut stack: Vec<(&Value, i128)> = vec![(root, 0)];
    while let Some((node, depth)) = stack.pop() {
        if depth > max {
            return true;
        }
        match node {
            Value::Object(map) => stack.extend(map.values().map(|v| (v, depth + 1))),
            Value::Array(items) => stack.extend(items.iter().map(|v| (v, depth + 1))),
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p0() -> JobValidationPolicy {
        JobValidationPolicy::from_policy_document(&json!({
            "validation_enabled": true,
            "manifest_caps": {"max_cpu_millicores": 384000, "max_memory_bytes": 4398046511104u64, "max_gpu_count": 16},
            "allowed_namespaces": ["gco-jobs"], "allowed_kinds": ["Job", "Pod", "TrainJob"],
            "trusted_registries": ["docker.io"], "trusted_dockerhub_orgs": ["pytorch"],
            "require_accelerator_toleration": true, "yaml_max_depth": 50,
        }))
        .unwrap()
    }

    fn job(gpus: u32, image: &str, namespace: &str) -> Value {
        let mut container = json!({"name": "c", "image": image});
        let mut pod = json!({"containers": []});
        if gpus > 0 {
            container["resources"] = json!({"limits": {"nvidia.com/gpu": gpus.to_string()}});
            pod["tolerations"] = json!([{"key": "nvidia.com/gpu", "operator": "Exists"}]);
        }
        pod["containers"] = json!([container]);
        json!({"apiVersion": "batch/v1", "kind": "Job",
               "metadata": {"name": "trainer", "namespace": namespace},
               "spec": {"template": {"spec": pod}}})
    }

    #[test]
    fn x1_every_failing_check_is_reported_in_order() {
        let issues = evaluate_manifest(&job(999, "evil.example.com/x:1", "nope"), &p0()).unwrap();
        let got: Vec<(Check, &str)> = issues
            .iter()
            .map(|i| (i.check, i.message.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    Check::Namespace,
                    "namespace 'nope' is not in the allowlist (gco-jobs)"
                ),
                (
                    Check::Images,
                    "container 'c': Untrusted image source 'evil.example.com/x:1'"
                ),
                (
                    Check::ResourceCaps,
                    "GPU 999 exceeds max 16. To raise limits, update resource_quotas in cdk.json and redeploy (see examples/README.md#troubleshooting)"
                ),
            ]
        );
        assert!(
            issues
                .iter()
                .all(|i| i.manifest.as_deref() == Some("Job/trainer"))
        );
    }

    #[test]
    fn x28_caps_message_lists_every_excess() {
        let mut policy = p0();
        policy.max_cpu_millicores = 10_000;
        policy.max_memory_bytes = 32 << 30;
        policy.max_gpu_count = 4;
        let mut manifest = job(8, "nginx:latest", "gco-jobs");
        manifest["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] =
            json!({"cpu": "20", "memory": "64Gi", "nvidia.com/gpu": "8"});
        let issues = evaluate_manifest(&manifest, &policy).unwrap();
        assert_eq!(issues.len(), 1);
        assert!(issues[0].message.starts_with(
            "CPU 20000m exceeds max 10000m; Memory 64Gi exceeds max 32Gi; GPU 8 exceeds max 4. To raise"
        ));
    }

    #[test]
    fn x12_missing_toleration_message() {
        let mut manifest = job(0, "nginx", "gco-jobs");
        manifest["spec"]["template"]["spec"]["containers"][0]["resources"] =
            json!({"requests": {"nvidia.com/gpu": "2"}});
        let issues = evaluate_manifest(&manifest, &p0()).unwrap();
        assert_eq!(issues[0].check, Check::Tolerations);
        assert_eq!(
            issues[0].message,
            "Job requests accelerator 'nvidia.com/gpu' but no matching toleration for taint nvidia.com/gpu=true:NoSchedule was found. add a matching toleration (e.g. key 'nvidia.com/gpu', operator 'Exists', effect 'NoSchedule'); see examples/gpu-job.yaml"
        );
    }

    #[test]
    fn x36_null_containers_fail_the_evaluation() {
        let manifest = json!({"kind": "Job", "metadata": {"name": "t", "namespace": "gco-jobs"},
                              "spec": {"template": {"spec": {"containers": null}}}});
        let error = evaluate_manifest(&manifest, &p0()).unwrap_err();
        assert_eq!(
            error.python_error().to_string(),
            "TypeError: 'NoneType' object is not iterable"
        );
    }

    #[test]
    fn validation_disabled_admits_everything() {
        let mut policy = p0();
        policy.validation_enabled = false;
        assert!(
            evaluate_manifest(&job(0, "evil.io/x:1", "nope"), &policy)
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn label_uses_placeholders() {
        assert_eq!(
            manifest_label(&json!({"kind": "Job", "metadata": {"name": "x"}})).unwrap(),
            "Job/x"
        );
        assert_eq!(manifest_label(&json!({})).unwrap(), "?/<unnamed>");
    }

    #[test]
    fn prefill_only_fills_absent_namespaces() {
        let mut manifests = vec![
            json!({"kind": "Job"}),
            json!({"kind": "Job", "metadata": {"namespace": null}}),
            json!("not a mapping"),
        ];
        prefill_namespaces(&mut manifests, "fallback").unwrap();
        assert_eq!(manifests[0]["metadata"]["namespace"], "fallback");
        assert_eq!(manifests[1]["metadata"]["namespace"], Value::Null);
        let mut bad = vec![json!({"metadata": null})];
        assert!(prefill_namespaces(&mut bad, "x").is_err());
    }

    #[test]
    fn server_variant_order_and_messages() {
        let policy = p0();
        let ok = job(0, "docker.io/pytorch/pytorch:2", "gco-jobs");
        assert_eq!(validate_manifest(&ok, &policy, None), Ok(()));
        let mut no_name = ok.clone();
        no_name["metadata"].as_object_mut().unwrap().remove("name");
        assert_eq!(
            validate_manifest(&no_name, &policy, None)
                .unwrap_err()
                .message,
            "Missing metadata.name field"
        );
        let mut null_ns = ok.clone();
        null_ns["metadata"]["namespace"] = Value::Null;
        assert_eq!(
            validate_manifest(&null_ns, &policy, None)
                .unwrap_err()
                .message,
            "Namespace 'None' not allowed. Allowed namespaces: ['gco-jobs']"
        );
        let mut privileged = ok.clone();
        privileged["spec"]["template"]["spec"]["containers"][0]["securityContext"] =
            json!({"privileged": true});
        assert_eq!(
            validate_manifest(&privileged, &policy, None)
                .unwrap_err()
                .message,
            "Security context validation failed: container 'c': privileged containers are not permitted"
        );
        // X37: a bare Pod is not capped by the server.
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "nginx", "resources": {"limits": {"nvidia.com/gpu": "1000"}}}],
                     "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]}});
        assert_eq!(validate_manifest(&pod, &policy, None), Ok(()));
        assert_eq!(
            evaluate_manifest(&pod, &policy).unwrap()[0].check,
            Check::ResourceCaps
        );
    }

    #[test]
    fn server_depth_limit() {
        let mut policy = p0();
        policy.yaml_max_depth = 3;
        let mut manifest = job(0, "nginx", "gco-jobs");
        manifest["metadata"]["annotations"] = json!({"a": "leaf"});
        assert_eq!(
            validate_manifest(&manifest, &policy, None).map_err(|r| r.message),
            Err("Manifest exceeds maximum nesting depth of 3 levels".to_owned())
        );
        // depth(leaf) = 2 here: metadata -> name.
        let shallow = json!({"apiVersion": "v1", "kind": "Job", "metadata": {"name": "x", "namespace": "gco-jobs"}});
        policy.yaml_max_depth = 2;
        assert_eq!(validate_manifest(&shallow, &policy, None), Ok(()));
        policy.yaml_max_depth = 1;
        assert!(validate_manifest(&shallow, &policy, None).is_err());
    }
}
