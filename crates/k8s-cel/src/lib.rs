//! Kubernetes CEL: compiles and evaluates the `K8sNativeValidation` source of a Gatekeeper
//! ConstraintTemplate with the CEL libraries Kubernetes provides, and decides as Gatekeeper's
//! CEL driver (Kubernetes' ValidatingAdmissionPolicy validator) decides.
//!
//! **For:** the embedded engine's CEL half — a template's `validations`, `variables` and
//! `matchCondition`, the bindings Gatekeeper gives them (`object`, `oldObject`, `request`,
//! `namespaceObject`, `variables.anyObject`, `variables.params`, and `params` in variables), the
//! message and failure-policy rules. **Not for:** matching (`spec.match` is the engine's job, as
//! it is gator's), reading files or clusters (the crate is pure: no I/O), or ValidatingAdmission
//! Policy objects themselves. [`gator_request`] builds the `request` gator binds for an object;
//! the crate's `docs/cel-semantics.md` records the reference behaviour.
//!
//! CEL itself is cel-rust (the `cel` crate); the Kubernetes libraries are in `library`
//! (lists, regex, quantity, URLs, IP/CIDR, format, sets), cel-rust's strings and lists
//! extensions and optional types cover the rest. Something Kubernetes declares that this crate
//! does not provide (two-variable comprehensions, `first`/`last`, semver, some named formats) is
//! a [`CompileError::Unsupported`] naming it, never a silent pass. Every evaluation runs under a
//! cost budget and value caps ([`COST_BUDGET`], [`MAX_VALUE_BYTES`]), with parser and binding
//! depth bounds, so a hostile expression ends in an error.
//!
//! ```
//! use k8s_cel::{Bindings, CelProgram, Decision};
//! use serde_json::json;
//!
//! let program = CelProgram::compile(&json!({
//!     "validations": [{
//!         "expression": "object.spec.replicas <= variables.params.max",
//!         "messageExpression": "'replicas must be at most ' + string(variables.params.max)",
//!     }],
//! }))
//! .unwrap();
//! let object = json!({"kind": "Deployment", "spec": {"replicas": 5}});
//! let constraint = json!({"spec": {"parameters": {"max": 3}}});
//! let decisions = program.evaluate(&Bindings {
//!     object: Some(&object),
//!     params: Some(&constraint),
//!     ..Bindings::default()
//! });
//! let [Decision::Violation(violation)] = decisions.as_slice() else { panic!("{decisions:?}") };
//! assert_eq!(violation.message, "replicas must be at most 3");
//! ```

mod access;
mod budget;
mod check;
mod env;
mod error;
pub(crate) mod library;
mod program;
mod request;
mod source;
mod value;

pub use budget::{COST_BUDGET, MAX_BUILT_VALUES, MAX_VALUE_BYTES};
pub use error::{CompileError, EvalError};
pub use program::{
    Bindings, CelProgram, CelViolation, DEFAULT_REASON, Decision, MAX_EXPRESSION_BYTES,
    MAX_EXPRESSION_NESTING, MAX_MESSAGE_BYTES, PreparedBindings, PreparedParams,
};
pub use request::gator_request;
pub use source::{FailurePolicy, Named, Source, Validation};
pub use value::MAX_DEPTH;
