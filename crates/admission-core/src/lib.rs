//! GCO's front-door job admission checks as pure functions.
//!
//! This crate re-implements the checks of the GCO project's `gco/job_admission.py` and the
//! multi-region judgement of its `cli/job_policy.py` for programs that want the same answers
//! without running Python: CI checks, admission webhooks, editors. It is what `jobcheck` is made
//! of. It does no I/O — no HTTP, no cluster, no files, no async: you bring the region's
//! `GET /api/v1/policy` response body and the manifests as JSON values (`serde_json`), it tells
//! you what each region would say, with the reference's message texts byte for byte.
//!
//! # Loading a policy
//!
//! A region's policy is the `policy` object of its response body.
//! [`JobValidationPolicy::from_policy_document`] reads that object with the reference's lenient
//! coercions (missing caps are `0`, caps go through Python's `int()`, allowlists are sets);
//! [`RegionPolicy::from_response_body`] takes the whole body and never fails: a body without a
//! usable policy becomes an unreadable region with the reason, which judges as
//! [`Verdict::Unknown`].
//!
//! ```
//! use admission_core::{FetchStatus, JobValidationPolicy, RegionPolicy};
//! use serde_json::json;
//!
//! let body = json!({"region": "us-east-1", "policy": {
//!     "manifest_caps": {"max_gpu_count": 8},
//!     "allowed_namespaces": ["gco-jobs"],
//!     "allowed_kinds": ["Job", "CronJob"],
//!     "trusted_registries": ["nvcr.io"],
//!     "trusted_dockerhub_orgs": ["pytorch"],
//! }});
//! let policy = JobValidationPolicy::from_policy_document(&body["policy"])?;
//! assert_eq!(policy.max_gpu_count, 8);
//! assert!(policy.security.block_privileged, "the shipped defaults apply");
//!
//! let region = RegionPolicy::from_response_body("us-east-1", &body);
//! assert_eq!(region.status, FetchStatus::Ok);
//! let broken = RegionPolicy::from_response_body("eu-west-1", &json!({"policy": {
//!     "manifest_caps": {"max_cpu_millicores": "4000m"}}}));
//! assert_eq!(broken.reason.as_deref(), Some("ValueError: invalid literal for int() with base 10: '4000m'"));
//! # Ok::<(), admission_core::PolicyDocumentError>(())
//! ```
//!
//! # Judging a manifest
//!
//! Two variants, as in the reference. [`evaluate_manifest`] is the CLI's: every check runs
//! (kind, namespace, images, resource caps, security context, accelerator tolerations) and
//! every [`AdmissionIssue`] is listed, labelled `Kind/name`. [`validate_manifest`] is the server
//! gate an admission webhook embeds: the first failure wins, as a [`ServerRejection`] carrying
//! the message the GCO API returns.
//!
//! ```
//! use admission_core::{Check, JobValidationPolicy, evaluate_manifest, validate_manifest};
//! use serde_json::json;
//!
//! let policy = JobValidationPolicy::from_policy_document(&json!({
//!     "manifest_caps": {"max_cpu_millicores": 64000, "max_memory_bytes": 274877906944u64, "max_gpu_count": 4},
//!     "allowed_namespaces": ["gco-jobs"], "allowed_kinds": ["Job"],
//!     "trusted_registries": ["nvcr.io"], "trusted_dockerhub_orgs": ["pytorch"],
//!     "require_accelerator_toleration": false,
//! }))?;
//! let job = json!({
//!     "apiVersion": "batch/v1", "kind": "Job",
//!     "metadata": {"name": "trainer", "namespace": "gco-jobs"},
//!     "spec": {"template": {"spec": {"containers": [{
//!         "name": "main", "image": "quay.io/acme/train:1",
//!         "resources": {"limits": {"nvidia.com/gpu": "8"}},
//!     }]}}},
//! });
//!
//! let issues = evaluate_manifest(&job, &policy)?;
//! let found: Vec<(Check, &str)> = issues.iter().map(|i| (i.check, i.message.as_str())).collect();
//! assert_eq!(found[0], (Check::Images, "container 'main': Untrusted image source 'quay.io/acme/train:1'"));
//! assert_eq!(found[1].0, Check::ResourceCaps);
//! assert!(found[1].1.starts_with("GPU 8 exceeds max 4."));
//! assert_eq!(issues[0].manifest.as_deref(), Some("Job/trainer"));
//!
//! // The server gate checks caps before images and stops at the first failure.
//! let rejection = validate_manifest(&job, &policy, None).unwrap_err();
//! assert!(rejection.message.starts_with("GPU 8 exceeds max 4."));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Reading verdicts across regions
//!
//! [`region_verdicts`] judges many manifests against every region: one [`RegionVerdict`] per
//! region in order — `admit`, `reject` with every issue, or `unknown` with the reason the
//! region could not be read (an unreadable region never counts as a rejection).
//! [`attach_enforcement_warnings`] adds the advisory warnings from the regions' live
//! LimitRanges and ResourceQuotas ([`enforcement`]); [`all_policy_drift`] and
//! [`ecr_augmentation`] compare the readable regions. For many manifests, [`RegionJudgement`]
//! judges them in batches that may run on separate threads.
//!
//! ```
//! use admission_core::{FetchStatus, RegionPolicy, Verdict, prefill_namespaces, region_verdicts};
//! use serde_json::json;
//!
//! let policies = [
//!     RegionPolicy::from_response_body("us-east-1", &json!({"policy": {
//!         "allowed_namespaces": ["gco-jobs"], "allowed_kinds": ["Job"]}})),
//!     RegionPolicy::from_response_body("us-west-2", &json!({"policy": {
//!         "allowed_namespaces": ["ml"], "allowed_kinds": ["Job"]}})),
//!     RegionPolicy::failed("eu-west-1", FetchStatus::Unreachable, "connection failed: refused"),
//! ];
//! let mut manifests = vec![json!({"kind": "Job", "metadata": {"name": "nightly"}})];
//! // Like the CLI: a manifest without a namespace is judged in `gco-jobs`.
//! prefill_namespaces(&mut manifests, admission_core::DEFAULT_NAMESPACE)?;
//!
//! let verdicts = region_verdicts(&manifests, &policies)?;
//! let summary: Vec<(&str, Verdict)> = verdicts.iter().map(|v| (v.region.as_str(), v.verdict)).collect();
//! assert_eq!(summary, [("us-east-1", Verdict::Admit), ("us-west-2", Verdict::Reject), ("eu-west-1", Verdict::Unknown)]);
//! assert_eq!(verdicts[1].issues[0].message, "namespace 'gco-jobs' is not in the allowlist (ml)");
//! assert_eq!(verdicts[2].reason.as_deref(), Some("connection failed: refused"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Malformed input
//!
//! Manifests and policies are untrusted. Where the reference reports a problem as an issue
//! (`Security context error: …`), so does this crate; where the reference raises, the call
//! returns an error whose text starts with the Python exception it would raise
//! ([`EvaluationError`], [`PolicyDocumentError`], [`PythonError`]): e.g. `containers: null`
//! in the toleration check. Nothing panics, quantities and totals saturate instead of
//! overflowing, and the Python semantics the answers depend on (truthiness, `str()`, `int()`,
//! set and sort behaviour) are modelled on `serde_json` values; [`py_str`] prints a value the
//! way the reference prints it.
#![deny(missing_docs)]
#![deny(rustdoc::broken_intra_doc_links)]

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
