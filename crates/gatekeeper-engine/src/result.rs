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

/// How every autoreject (matching error) result's `msg` starts (after the
/// [`IMPLIED_BY_PREFIX`] part, on a result of an expansion resultant).
pub const AUTOREJECT_PREFIX: &str = "unable to match constraints: ";

/// How the `msg` of a result of an expansion resultant starts: `[Implied by <template>] `,
/// then the message the constraint gave for the resultant.
pub const IMPLIED_BY_PREFIX: &str = "[Implied by ";

/// The `msg` Gatekeeper gives a result of a resultant made by the ExpansionTemplate
/// `template`: `[Implied by <template>] <msg>`.
pub fn implied_message(template: &str, msg: &str) -> String {
    format!("{IMPLIED_BY_PREFIX}{template}] {msg}")
}

/// Whether a message of a CEL template's result is an evaluation error rather than a failed
/// validation. Gatekeeper's CEL driver gives both as a bare message (no `metadata`), so gator's
/// output tells them apart only by the shape of the text ([`k8s_cel::EvalError`]'s).
pub fn cel_message_is_error(msg: &str) -> bool {
    k8s_cel::EvalError::is_error_message(msg)
}

impl ReviewResult {
    /// Whether the result is a Rego evaluation error of the constraint's template (its `msg`
    /// is the error text) rather than a violation. Both engines mark them the same way: no
    /// `details` (gator prints `"details": null`), and no autoreject prefix (autorejects have
    /// no details either but are matching errors, which Gatekeeper reports as violations).
    pub fn is_evaluation_error(&self) -> bool {
        self.details.is_none() && !self.own_message().starts_with(AUTOREJECT_PREFIX)
    }

    /// The ExpansionTemplate whose resultant gave this result, read from Gatekeeper's
    /// `[Implied by <template>] ` message prefix (the same for both engines: gator marks such
    /// results only there). The result's `object` is the expanded object, not the resultant.
    /// A template name containing `] ` cannot be told from the message; names of templates in
    /// a cluster cannot contain one.
    pub fn implied_by(&self) -> Option<&str> {
        self.split_implied().map(|(template, _)| template)
    }

    /// The message without an `[Implied by <template>] ` prefix: what the constraint said about
    /// the reviewed resource.
    pub fn own_message(&self) -> &str {
        self.split_implied().map_or(&self.msg, |(_, msg)| msg)
    }

    fn split_implied(&self) -> Option<(&str, &str)> {
        self.msg.strip_prefix(IMPLIED_BY_PREFIX)?.split_once("] ")
    }

    /// Whether the result fails `gator test`'s exit code: action `deny`, or a scoped `deny`.
    pub fn is_enforceable(&self) -> bool {
        self.constraint.enforcement_action == "deny"
            || self.constraint.scoped_actions.iter().any(|a| a == "deny")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(msg: &str, details: Option<&str>) -> ReviewResult {
        ReviewResult {
            target: ADMISSION_TARGET.to_string(),
            msg: msg.to_string(),
            details: details.map(str::to_string),
            constraint: ConstraintRef {
                kind: "K".into(),
                name: "c".into(),
                enforcement_action: "deny".into(),
                scoped_actions: Vec::new(),
            },
            object: ObjectRef {
                api_version: "apps/v1".into(),
                kind: "Deployment".into(),
                namespace: None,
                name: "d".into(),
            },
        }
    }

    #[test]
    fn the_implied_by_prefix_is_read_back() {
        let implied = result(&implied_message("expand-pods", "Pod d-pod: no"), Some("{}"));
        assert_eq!(implied.msg, "[Implied by expand-pods] Pod d-pod: no");
        assert_eq!(implied.implied_by(), Some("expand-pods"));
        assert_eq!(implied.own_message(), "Pod d-pod: no");
        let direct = result("[Implied by nothing", Some("{}"));
        assert_eq!(direct.implied_by(), None);
        assert_eq!(direct.own_message(), "[Implied by nothing");
    }

    #[test]
    fn autorejects_of_resultants_are_not_evaluation_errors() {
        let autoreject = format!("{AUTOREJECT_PREFIX}error matching the requested object");
        assert!(!result(&autoreject, None).is_evaluation_error());
        assert!(!result(&implied_message("t", &autoreject), None).is_evaluation_error());
        assert!(
            result(
                &implied_message("t", "template:3: eval_conflict_error"),
                None
            )
            .is_evaluation_error()
        );
        assert!(!result(&implied_message("t", "violation"), Some("{}")).is_evaluation_error());
    }
}
