//! Kubernetes ValidatingAdmissionPolicies (`admissionregistration.k8s.io/v1`) evaluated against
//! existing objects, with the API server's semantics: what a dry-run CREATE of the object
//! would be told now.
//!
//! **For:** auditing objects that were admitted before a policy existed, or before a binding
//! selected their namespace. [`Policy::compile`] reads a ValidatingAdmissionPolicy (its CEL
//! through `k8s-cel`, the same libraries and limits as the K8sNativeValidation engine),
//! [`Binding::parse`] a binding, [`Review::new`] turns an object (and its Namespace) into the
//! request the API server would evaluate, and [`Review::evaluate`] gives the binding's
//! [`Finding`]s: the decisions the API server would deny (or, under `Warn`/`Audit`, warn about or
//! record), each with the API server's message ([`Finding::denial`]). **Not for:** reading
//! clusters or files (the crate is pure), mutating policies.
//!
//! [`PolicySet`] is the report's view: every binding of a selected policy is a rule named
//! `<policy>/<binding>`, evaluated against each object with the cluster's parameters.
//!
//! What the API server reports while evaluating (an expression error under
//! `failurePolicy: Fail`, a binding whose parameters are missing) is a finding, as it is a
//! denial there; what cannot be answered offline (`authorizer`, `auditAnnotations`, a match
//! through an equivalent version, a kind whose resource is unknown) is a [`PolicyError`]
//! naming the policy, never a silent pass.
//!
//! ```
//! use admission_policy::{Binding, Policy, Resources, Review};
//! use serde_json::json;
//!
//! let policy = Policy::compile(&json!({
//!     "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
//!     "metadata": {"name": "replicas"},
//!     "spec": {
//!         "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
//!             "operations": ["CREATE"], "resources": ["deployments"]}]},
//!         "validations": [{"expression": "object.spec.replicas <= 3", "message": "too many"}],
//!     },
//! }))
//! .unwrap();
//! let binding = Binding::parse(&json!({
//!     "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
//!     "metadata": {"name": "replicas-binding"},
//!     "spec": {"policyName": "replicas", "validationActions": ["Deny"]},
//! }))
//! .unwrap();
//! let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}});
//! let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
//!     "metadata": {"name": "web", "namespace": "shop"}, "spec": {"replicas": 5}});
//! let resources = Resources::default();
//! let review = Review::new(&deployment, Some(&namespace), &resources).unwrap();
//! let findings = review.evaluate(&policy, &binding, &[], &resources).unwrap();
//! assert_eq!(
//!     findings[0].denial(),
//!     "ValidatingAdmissionPolicy 'replicas' with binding 'replicas-binding' denied request: too many"
//! );
//! ```

mod error;
mod evaluate;
mod matching;
mod params;
pub use params::MAX_PARAMS_PER_BINDING;
mod policy;
mod resources;
mod selector;
mod set;

pub use error::PolicyError;
pub use evaluate::{Finding, FindingKind, OPERATION, Review};
pub use matching::{MatchResources, NamedRule};
pub use policy::{Binding, FailurePolicy, ParamKind, ParamRef, Policy, ValidationAction};
pub use resources::{Resource, Resources};
pub use selector::{LabelSelector, Requirement};
pub use set::{PolicySet, Rule, RuleOutcome, SetInputs, SetProblem};
