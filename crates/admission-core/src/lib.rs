//! GCO's front-door job admission checks as pure functions.
//!
//! This crate re-implements the checks of the GCO project's `gco/job_admission.py` and the
//! multi-region judgement of `cli/job_policy.py` (see `gco-admission.md`): no HTTP, no cluster,
//! no async. It follows the reference's Python semantics on malformed input (truthiness,
//! `int()` parsing, which inputs raise) and never panics.
//!
//! - [`JobValidationPolicy::from_policy_document`] builds a policy from a `GET /api/v1/policy`
//!   `policy` object; [`RegionPolicy::from_response_body`] wraps a whole response body.
//! - [`evaluate_manifest`] (the CLI variant: every check, issues labelled `Kind/name`) and
//!   [`validate_manifest`] (the server variant: first failure wins).
//! - [`region_verdicts`], [`detect_policy_drift`], [`registry_drift`], [`ecr_augmentation`]
//!   across regions; [`prefill_namespaces`] is the CLI's namespace pre-fill.
//!
//! Judging a manifest in five lines:
//!
//! ```
//! use admission_core::{JobValidationPolicy, evaluate_manifest};
//! use serde_json::json;
//! let policy = JobValidationPolicy::from_policy_document(&json!({
//!     "manifest_caps": {"max_gpu_count": 4}, "allowed_kinds": ["Job"], "require_accelerator_toleration": false}))?;
//! let job = json!({"kind": "Job", "metadata": {"name": "trainer"}, "spec": {"template": {"spec": {
//!     "containers": [{"name": "c", "image": "nginx", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}}});
//! let issues = evaluate_manifest(&job, &policy)?;
//! assert!(issues[0].message.starts_with("GPU 8 exceeds max 4."));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod checks;
mod drift;
pub mod enforcement;
mod evaluate;
mod judgement;
mod policy;
mod py;
mod region;

pub use checks::{
    ACCELERATOR_TAINTS, CAPS_HINT, check_images, check_resource_caps, check_security_context,
    check_tolerations, parse_cpu_millicores, parse_memory_bytes, resource_totals,
};
pub use drift::{
    DRIFT_FIELDS, DriftError, PolicyDrift, all_policy_drift, detect_policy_drift, ecr_augmentation,
    is_ecr_hostname, registry_drift,
};
pub use evaluate::{
    AdmissionIssue, Check, DEFAULT_NAMESPACE, EvaluationError, PrefillError, ServerRejection,
    evaluate_manifest, manifest_label, prefill_namespaces, validate_manifest,
};
pub use judgement::{RegionJudgement, region_verdicts};
pub use policy::{JobValidationPolicy, PolicyDocumentError, SECURITY_FLAG_NAMES, SecurityFlags};
pub use py::{PythonError, PythonErrorKind, float_repr, py_repr, py_str, truthy};
pub use region::{
    FetchStatus, NO_POLICY_REASON, RegionMap, RegionPolicy, RegionVerdict, Verdict,
    attach_enforcement_warnings,
};
