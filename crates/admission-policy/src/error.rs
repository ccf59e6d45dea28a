//! The crate's errors. What the API server itself reports while evaluating (a failed
//! expression, a binding whose parameters are missing) is not an error here but a
//! [`Finding`](crate::Finding); these are the cases where no answer the API server would give
//! can be computed.

use thiserror::Error;

/// Why a policy, a binding or an evaluation cannot be taken.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PolicyError {
    /// The object is not a ValidatingAdmissionPolicy or binding the API server would store.
    #[error("{what} {name:?}: {detail}")]
    Invalid {
        /// `ValidatingAdmissionPolicy` or `ValidatingAdmissionPolicyBinding`.
        what: &'static str,
        /// Its `metadata.name` (empty when it has none).
        name: String,
        /// What is wrong and where (the key).
        detail: String,
    },
    /// The policy uses something an offline evaluation cannot give the API server's answer for
    /// (`authorizer`, a version conversion, …); evaluating it could only give a wrong answer.
    #[error("ValidatingAdmissionPolicy {policy:?}: {feature} is not supported offline")]
    Unsupported {
        /// The policy's name.
        policy: String,
        /// What: `the authorizer binding (validations[0].expression)`, …
        feature: String,
    },
    /// The policy's CEL cannot be compiled the way the API server compiles it.
    #[error("ValidatingAdmissionPolicy {policy:?}: {detail}")]
    Compile {
        /// The policy's name.
        policy: String,
        /// The compiler's words, naming the expression.
        detail: String,
    },
    /// An input is beyond one of this crate's limits (nesting, parameters per binding): not
    /// the API server's verdict, so not a finding.
    #[error("ValidatingAdmissionPolicy {policy:?}: {detail}")]
    Limit {
        /// The policy's name.
        policy: String,
        /// Which limit, and by how much.
        detail: String,
    },
    /// The object's kind (or a `paramKind`) is not in the [`Resources`](crate::Resources)
    /// table, so its resource name and scope (what the rules match) are unknown.
    #[error(
        "the resource of {api_version} {kind} is not known (register it in the resource table)"
    )]
    UnknownResource {
        /// The `apiVersion`.
        api_version: String,
        /// The `kind`.
        kind: String,
    },
    /// The object under review is not a Kubernetes object (no `apiVersion`, `kind` or name).
    #[error("the object under review has no {0}")]
    Object(&'static str),
    /// A namespaced object's Namespace was not given; the API server reads it for every
    /// namespaced request (`namespaceObject`, `namespaceSelector`).
    #[error("the Namespace {0:?} of the object under review was not given")]
    NamespaceMissing(String),
}
