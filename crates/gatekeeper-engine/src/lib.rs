//! An embedded Gatekeeper evaluator: reviews objects against ConstraintTemplates and Constraints
//! in-process (Rego through `regorus`) and gives the answers `gator test` v3.22.0 gives.

pub mod result;

pub use result::{ConstraintRef, ObjectRef, ReviewResult};
