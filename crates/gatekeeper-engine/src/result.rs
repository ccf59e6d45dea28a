//! The result model shared by every evaluator (the embedded engine and the pinned `gator`).
//!
//! It mirrors one element of `gator test -o json`, keeping
//! references to the constraint and the violating object instead of whole objects, so a report
//! over a large cluster stays small and results from two engines compare as plain values.

use serde::{Deserialize, Serialize};

/// The admission target every Gatekeeper result carries.
pub const ADMISSION_TARGET: &str = "admission.k8s.gatekeeper.sh";

/// One violation (or evaluation error reported as a violation) of one constraint by one object.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReviewResult {
    /// The target, always [`ADMISSION_TARGET`] for Gatekeeper templates.
    pub target: String,
    /// The violation message (`msg`); empty when the template gave none.
    pub msg: String,
    /// `metadata.details` of the result: `Some({})` when the rule gave none, `None` for
    /// evaluation-error results, which carry `{"details": null}` in gator's output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<DetailsJson>,
    /// The constraint that produced the result.
    pub constraint: ConstraintRef,
    /// The object that was reviewed.
    pub object: ObjectRef,
}

/// `details` as canonical JSON text, so results are totally ordered and hashable.
pub type DetailsJson = String;

/// Which constraint produced a result, and with which enforcement action.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConstraintRef {
    /// The constraint kind (the template's CRD kind), e.g. `K8sRequiredLabels`.
    pub kind: String,
    /// `metadata.name` of the constraint.
    pub name: String,
    /// `spec.enforcementAction` after defaulting (`deny` when absent).
    pub enforcement_action: String,
    /// Scoped actions that apply to gator's enforcement point; empty unless the action is `scoped`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scoped_actions: Vec<String>,
}

/// Which object a result is about.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectRef {
    /// The object's full `apiVersion`, e.g. `apps/v1`.
    pub api_version: String,
    /// The object's `kind`.
    pub kind: String,
    /// `metadata.namespace`; `None` for cluster-scoped objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// `metadata.name`.
    pub name: String,
}

/// How every autoreject (matching error) result's `msg` starts.
pub const AUTOREJECT_PREFIX: &str = "unable to match constraints: ";

impl ReviewResult {
    /// Whether the result is a Rego evaluation error of the constraint's template (its `msg`
    /// is the error text) rather than a violation. Both engines mark them the same way: no
    /// `details` (gator prints `"details": null`), and no autoreject prefix (autorejects have
    /// no details either but are matching errors, which Gatekeeper reports as violations).
    pub fn is_evaluation_error(&self) -> bool {
        self.details.is_none() && !self.msg.starts_with(AUTOREJECT_PREFIX)
    }

    /// Whether the result fails `gator test`'s exit code: action `deny`, or a scoped `deny`.
    pub fn is_enforceable(&self) -> bool {
        self.constraint.enforcement_action == "deny"
            || self.constraint.scoped_actions.iter().any(|a| a == "deny")
    }
}
