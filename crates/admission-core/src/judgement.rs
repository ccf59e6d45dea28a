//! Judging manifests against every region: [`region_verdicts`] for a whole list, and
//! [`RegionJudgement`] for the same judgement fed in batches (which may be judged on separate
//! threads and joined in manifest order).

use serde_json::Value;

use crate::checks::AllowlistTexts;
use crate::evaluate::{AdmissionIssue, EvaluationError, PodAnswers, PreparedManifest};
use crate::py::{self, PythonError};
use crate::region::{RegionPolicy, RegionVerdict, Verdict};

/// Judges `manifests` against each region's policy, in region order: `unknown` (with the read's
/// reason) for an unreadable region, else `reject` if any mapping manifest has an issue, else
/// `admit`, with the region's enforcement gaps. Non-mapping documents are skipped.
///
/// Fails where the reference raises: a manifest the checks cannot evaluate, or a readable
/// region whose `cluster_enforcement` is a non-empty non-object.
///
/// ```
/// use admission_core::{RegionPolicy, Verdict, region_verdicts};
/// use serde_json::json;
/// let east = RegionPolicy::from_response_body("us-east-1", &json!({"policy": {"allowed_kinds": ["Job"]}}));
/// let verdicts = region_verdicts(&[json!({"kind": "Pod", "metadata": {"name": "p"}})], &[east])?;
/// assert_eq!(verdicts[0].verdict, Verdict::Reject);
/// assert_eq!(verdicts[0].issues[0].manifest.as_deref(), Some("Pod/p"));
/// # Ok::<(), admission_core::EvaluationError>(())
/// ```
pub fn region_verdicts(
    manifests: &[Value],
    policies: &[RegionPolicy],
) -> Result<Vec<RegionVerdict>, EvaluationError> {
    let mut judgement = RegionJudgement::new(policies);
    judgement.judge(manifests)?;
    judgement.finish()
}

/// [`region_verdicts`] in parts: manifests are judged in batches, and the judgements of
/// consecutive batches are joined in order, so a large list can be judged on several threads.
///
/// The verdicts are exactly those of [`region_verdicts`] over all the manifests in order: for a
/// failure, take the first batch (in manifest order) whose [`judge`](Self::judge) failed.
///
/// ```
/// use admission_core::{RegionJudgement, RegionPolicy, region_verdicts};
/// use serde_json::json;
/// let policies = [RegionPolicy::from_response_body("eu-west-1", &json!({"policy": {"allowed_kinds": ["Job"]}}))];
/// let manifests = [json!({"kind": "Job"}), json!({"kind": "Pod"}), json!({"kind": "CronJob"})];
/// let (first, rest) = manifests.split_at(1);
/// let (mut left, mut right) = (RegionJudgement::new(&policies), RegionJudgement::new(&policies));
/// std::thread::scope(|scope| {
///     let later = scope.spawn(|| right.judge(rest));
///     left.judge(first)?;
///     later.join().expect("no panic")
/// })?;
/// left.append(right);
/// assert_eq!(left.finish()?, region_verdicts(&manifests, &policies)?);
/// # Ok::<(), admission_core::EvaluationError>(())
/// ```
#[derive(Debug)]
pub struct RegionJudgement<'p> {
    policies: &'p [RegionPolicy],
    /// Every issue found so far, per region (in `policies` order), in manifest order.
    issues: Vec<Vec<AdmissionIssue>>,
    /// Each policy's rendered allowlists, shared by the manifests of this judgement.
    texts: Vec<AllowlistTexts>,
}

impl<'p> RegionJudgement<'p> {
    /// An empty judgement against `policies` (one verdict per entry, in this order).
    pub fn new(policies: &'p [RegionPolicy]) -> Self {
        Self {
            policies,
            issues: vec![Vec::new(); policies.len()],
            texts: policies.iter().map(|_| AllowlistTexts::default()).collect(),
        }
    }

    /// Judges the next `manifests` against every readable region. After a failure the
    /// judgement is incomplete: report the error instead of finishing it.
    pub fn judge(&mut self, manifests: &[Value]) -> Result<(), EvaluationError> {
        // Manifest-outer: each manifest is prepared once and judged against every readable
        // region while its data is hot; issues stay in manifest order within each region.
        for manifest in manifests.iter().filter(|m| m.is_object()) {
            let prepared = PreparedManifest::new(manifest)?;
            let answers = PodAnswers::default();
            let regions = self.policies.iter().zip(&self.texts).zip(&mut self.issues);
            for ((entry, texts), found) in regions {
                if let Some(policy) = entry.readable_policy() {
                    prepared.evaluate_into(&answers, policy, texts, found)?;
                }
            }
        }
        Ok(())
    }

    /// Appends the judgement of the manifests that follow this judgement's (same policies).
    pub fn append(&mut self, later: RegionJudgement<'_>) {
        for (found, more) in self.issues.iter_mut().zip(later.issues) {
            found.extend(more);
        }
    }

    /// The verdicts, one per region in order; fails, like the reference, for a readable region
    /// whose `cluster_enforcement` is a non-empty non-object.
    pub fn finish(self) -> Result<Vec<RegionVerdict>, EvaluationError> {
        let mut verdicts = Vec::with_capacity(self.policies.len());
        for (entry, issues) in self.policies.iter().zip(self.issues) {
            verdicts.push(verdict(entry, issues)?);
        }
        Ok(verdicts)
    }
}

/// One region's verdict from the issues its policy found.
fn verdict(
    entry: &RegionPolicy,
    issues: Vec<AdmissionIssue>,
) -> Result<RegionVerdict, EvaluationError> {
    if entry.readable_policy().is_none() {
        return Ok(RegionVerdict {
            region: entry.region.clone(),
            verdict: Verdict::Unknown,
            issues: Vec::new(),
            reason: entry.reason.clone(),
            enforcement_gaps: Vec::new(),
            warnings: Vec::new(),
        });
    }
    if !entry.cluster_enforcement.is_object() && py::truthy(&entry.cluster_enforcement) {
        return Err(EvaluationError::ClusterEnforcement {
            region: entry.region.clone(),
            source: PythonError::no_attribute(&entry.cluster_enforcement, "items"),
        });
    }
    Ok(RegionVerdict {
        region: entry.region.clone(),
        verdict: if issues.is_empty() {
            Verdict::Admit
        } else {
            Verdict::Reject
        },
        issues,
        reason: None,
        enforcement_gaps: entry.enforcement_gaps(),
        warnings: Vec::new(),
    })
}
