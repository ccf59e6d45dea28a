//! One region's policy read ([`RegionPolicy`]) and the shape of a per-region verdict
//! ([`RegionVerdict`]) of `cli/job_policy.py`; the verdicts are
//! computed in `judgement`.

use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use crate::enforcement::{EnforcementCheck, EnforcementWarning, enforcement_warnings};
use crate::evaluate::{AdmissionIssue, Check};
use crate::policy::{JobValidationPolicy, PolicyDocumentError};
use crate::py;

/// The reason given for a response body without a usable `policy` object.
pub const NO_POLICY_REASON: &str = "the response carried no policy object";

/// How one region's policy read ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FetchStatus {
    /// The read returned a usable policy.
    Ok,
    /// The region has no regional API bridge (`not deployed`).
    Unreachable,
    /// Anything else: HTTP failure, bad body, unconvertible policy.
    Error,
}

impl FetchStatus {
    /// `ok`, `unreachable` or `error`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Unreachable => "unreachable",
            Self::Error => "error",
        }
    }
}

/// One region's policy read, successful or not (source-agnostic: a live read or a saved body).
#[derive(Debug, Clone, PartialEq)]
pub struct RegionPolicy {
    /// The region name.
    pub region: String,
    /// How the read ended.
    pub status: FetchStatus,
    /// The policy, when the read succeeded.
    pub policy: Option<JobValidationPolicy>,
    /// The `policy` object on success; the whole body when it carried no policy; else `{}`.
    pub document: Value,
    /// The body's `cluster_enforcement` (`{}` when missing or falsy).
    pub cluster_enforcement: Value,
    /// Why the read failed (`<ErrorType>: <text>` or [`NO_POLICY_REASON`]).
    pub reason: Option<String>,
}

impl RegionPolicy {
    /// Turns a `GET /api/v1/policy` response body into a region policy the way the reference's
    /// `fetch_region_policy` does, but without crashing: a body with a missing, empty or null
    /// `policy` is status `error` with reason [`NO_POLICY_REASON`]; a policy that cannot be
    /// converted (or a body that is not an object) is status `error` with the conversion error
    /// (`ValueError: …`) as the reason.
    pub fn from_response_body(region: impl Into<String>, body: &Value) -> Self {
        let region = region.into();
        match Self::try_from_response_body(region.clone(), body) {
            Ok(entry) => entry,
            Err(error) => Self::failed(region, FetchStatus::Error, error.to_string()),
        }
    }

    /// Like [`RegionPolicy::from_response_body`], but returns the conversion failure the
    /// reference would raise (it converts outside its error handling, so with a single region
    /// the whole command fails).
    pub fn try_from_response_body(
        region: impl Into<String>,
        body: &Value,
    ) -> Result<Self, PolicyDocumentError> {
        let region = region.into();
        let document = py::get(body, "policy")?;
        let Some(document) = document.filter(|d| py::truthy(d)) else {
            return Ok(Self {
                region,
                status: FetchStatus::Error,
                policy: None,
                document: body.clone(),
                cluster_enforcement: Value::Object(Map::new()),
                reason: Some(NO_POLICY_REASON.to_owned()),
            });
        };
        let policy = JobValidationPolicy::from_policy_document(document)?;
        let cluster_enforcement = match py::get(body, "cluster_enforcement")? {
            Some(value) if py::truthy(value) => value.clone(),
            _ => Value::Object(Map::new()),
        };
        Ok(Self {
            region,
            status: FetchStatus::Ok,
            policy: Some(policy),
            document: document.clone(),
            cluster_enforcement,
            reason: None,
        })
    }

    /// A read that failed before any body was available.
    pub fn failed(
        region: impl Into<String>,
        status: FetchStatus,
        reason: impl Into<String>,
    ) -> Self {
        Self {
            region: region.into(),
            status,
            policy: None,
            document: Value::Object(Map::new()),
            cluster_enforcement: Value::Object(Map::new()),
            reason: Some(reason.into()),
        }
    }

    /// Whether the read succeeded and produced a policy.
    pub fn is_ok(&self) -> bool {
        self.status == FetchStatus::Ok && self.policy.is_some()
    }

    /// The policy of a readable region.
    pub fn readable_policy(&self) -> Option<&JobValidationPolicy> {
        if self.status == FetchStatus::Ok {
            self.policy.as_ref()
        } else {
            None
        }
    }

    /// Namespaces whose live ResourceQuota / LimitRange could not be read: sorted names whose
    /// `cluster_enforcement` entry is an object with `status` other than `"ok"` (namespaces
    /// missing from the map are not gaps). A non-object `cluster_enforcement` has no gaps here;
    /// [`region_verdicts`](crate::region_verdicts) reports it as an error like the reference.
    pub fn enforcement_gaps(&self) -> Vec<String> {
        let Value::Object(entries) = &self.cluster_enforcement else {
            return Vec::new();
        };
        let mut gaps: Vec<String> = entries
            .iter()
            .filter(|(_, layer)| {
                layer
                    .as_object()
                    .is_some_and(|l| l.get("status").and_then(Value::as_str) != Some("ok"))
            })
            .map(|(namespace, _)| namespace.clone())
            .collect();
        gaps.sort();
        gaps
    }
}

/// Admissibility of the manifests in one region.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// No issue in any manifest.
    Admit,
    /// At least one issue.
    Reject,
    /// The region's policy could not be read (never counts as a rejection).
    Unknown,
}

impl Verdict {
    /// `admit`, `reject` or `unknown`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Admit => "admit",
            Self::Reject => "reject",
            Self::Unknown => "unknown",
        }
    }
}

/// Whether one region would admit the manifests, and why not (an element of the reference CLI's
/// `verdicts` payload).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RegionVerdict {
    /// The region.
    pub region: String,
    /// The verdict.
    pub verdict: Verdict,
    /// Every issue over all manifests (empty for `unknown`).
    pub issues: Vec<AdmissionIssue>,
    /// Why the region is `unknown`.
    pub reason: Option<String>,
    /// Namespaces whose live quota/LimitRange could not be read (readable regions only).
    pub enforcement_gaps: Vec<String>,
    /// Advisory findings against the region's live LimitRanges and ResourceQuotas (beyond the
    /// reference, which only displays those layers): filled by [`attach_enforcement_warnings`],
    /// empty otherwise, and left out of the serialized verdict when empty so the reference's
    /// payload is unchanged.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<EnforcementWarning>,
}

/// Adds each readable region's [`enforcement_warnings`] to its verdict (`verdicts` and `policies`
/// in the same region order, as [`region_verdicts`](crate::region_verdicts) returns them).
///
/// With `strict`, every warning becomes an issue too (check `limit_range` / `resource_quota`), so
/// an `admit` with warnings turns into a `reject`; without it the verdict never changes, which
/// keeps the reference's answers.
pub fn attach_enforcement_warnings(
    verdicts: &mut [RegionVerdict],
    manifests: &[Value],
    policies: &[RegionPolicy],
    strict: bool,
) {
    for (verdict, entry) in verdicts.iter_mut().zip(policies) {
        if verdict.verdict == Verdict::Unknown || entry.region != verdict.region {
            continue;
        }
        verdict.warnings = enforcement_warnings(manifests, &entry.cluster_enforcement);
        if strict && !verdict.warnings.is_empty() {
            verdict
                .issues
                .extend(verdict.warnings.iter().map(|warning| AdmissionIssue {
                    check: match warning.check {
                        EnforcementCheck::LimitRange => Check::LimitRange,
                        EnforcementCheck::ResourceQuota => Check::ResourceQuota,
                    },
                    message: warning.message.clone(),
                    manifest: warning.manifest.clone(),
                }));
            verdict.verdict = Verdict::Reject;
        }
    }
}

/// A region-keyed map that keeps insertion order (serialized as a JSON object).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RegionMap<T>(Vec<(String, T)>);

impl<T> RegionMap<T> {
    /// An empty map.
    pub fn new() -> Self {
        Self(Vec::new())
    }

    /// Inserts like a Python dict: an existing region keeps its position and gets the new value.
    pub fn insert(&mut self, region: impl Into<String>, value: T) {
        let region = region.into();
        match self.0.iter_mut().find(|(r, _)| *r == region) {
            Some(slot) => slot.1 = value,
            None => self.0.push((region, value)),
        }
    }

    /// The value for `region`.
    pub fn get(&self, region: &str) -> Option<&T> {
        self.0.iter().find(|(r, _)| r == region).map(|(_, v)| v)
    }

    /// Entries in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &T)> {
        self.0.iter().map(|(r, v)| (r.as_str(), v))
    }

    /// Number of regions.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<T: Serialize> Serialize for RegionMap<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::region_verdicts;
    use serde_json::json;

    #[test]
    fn body_without_policy_is_an_error() {
        for body in [
            json!({"region": "us-east-1"}),
            json!({"policy": {}}),
            json!({"policy": null}),
        ] {
            let entry = RegionPolicy::from_response_body("us-east-1", &body);
            assert_eq!(entry.status, FetchStatus::Error);
            assert_eq!(entry.reason.as_deref(), Some(NO_POLICY_REASON));
            assert_eq!(entry.document, body);
        }
    }

    #[test]
    fn unconvertible_policy_is_an_error_with_the_python_reason() {
        let body = json!({"policy": {"manifest_caps": {"max_cpu_millicores": "4000m"}}});
        let entry = RegionPolicy::from_response_body("us-east-2", &body);
        assert_eq!(entry.status, FetchStatus::Error);
        assert!(!entry.is_ok());
        assert!(entry.reason.unwrap().starts_with("ValueError: "));
        assert!(RegionPolicy::try_from_response_body("us-east-2", &body).is_err());
    }

    #[test]
    fn gaps_are_sorted_non_ok_mapping_entries() {
        let body = json!({"policy": {"allowed_kinds": ["Job"]}, "cluster_enforcement": {
            "zeta": {"status": "unavailable"}, "gco-jobs": {"status": "ok"}, "alpha": {},
            "odd": "ok", "none": null}});
        let entry = RegionPolicy::from_response_body("r", &body);
        assert_eq!(entry.enforcement_gaps(), vec!["alpha", "zeta"]);
    }

    #[test]
    fn unreadable_region_is_unknown_not_reject() {
        let ok = RegionPolicy::from_response_body(
            "us-east-1",
            &json!({"policy": {"allowed_kinds": ["Job"]}}),
        );
        let down = RegionPolicy::failed(
            "eu-west-1",
            FetchStatus::Unreachable,
            "RuntimeError: not deployed",
        );
        let verdicts = region_verdicts(&[json!({"kind": "Pod"})], &[ok, down]).unwrap();
        assert_eq!(verdicts[0].verdict, Verdict::Reject);
        assert_eq!(verdicts[1].verdict, Verdict::Unknown);
        assert!(verdicts[1].issues.is_empty());
        assert_eq!(
            verdicts[1].reason.as_deref(),
            Some("RuntimeError: not deployed")
        );
    }
}
