//! An embedded Gatekeeper evaluator: reviews objects against ConstraintTemplates and Constraints
//! in-process (Rego through `regorus`, `K8sNativeValidation` CEL through `k8s-cel`, chosen as
//! gator chooses: [`EngineOptions::k8s_native_validation`]) and gives the answers `gator test`
//! v3.22.0 gives.
//!
//! - [`read_sources`] reads files and directories like `gator test -f`.
//! - [`Engine`] ingests templates, constraints, data and ExpansionTemplates from those objects
//!   and reviews every object and the resultants of its expansion ([`Engine::review_all`]),
//!   like `gator test`.
//! - [`ExpansionSet`] holds ExpansionTemplates: it expands objects into their resultants and
//!   says what a constraint can see of a workload kind ([`ExpansionSet::visible_to`]);
//!   [`ReviewResult::implied_by`] tells which template a result came through.
//! - [`PolicySet`], [`Inventory`], [`ReviewRequest`] and [`Evaluator`] are the pieces, for
//!   callers (such as [`verify`]) that review single objects against a chosen inventory.
//! - [`verify`] runs `gator verify` Suite files.
//! - [`output`] renders results as gator's `-o json`, `-o yaml` and human formats.
//! - [`rego`] evaluates plain Rego modules the same way, for the differential check against
//!   OPA; [`goregex`] is Go's regular-expression syntax; [`limits`] are the engine's caps.

mod analysis;
mod celreview;
mod constraint;
mod deprecated;
mod engine;
mod error;
mod expander;
mod expansion;
mod extensions;
mod goarith;
pub mod goregex;
mod gosprintf;
mod gotext;
mod inventory;
pub mod limits;
pub mod matching;
pub mod output;
mod reader;
mod regexmatch;
pub mod rego;
mod regosource;
mod regovalue;
mod request;
pub mod result;
mod review;
mod rewrite;
mod rewrite_names;
mod schema;
mod spanedit;
mod template;
pub mod verify;

pub use constraint::{CONSTRAINT_GROUP, Constraint};
pub use engine::{
    AUDIT_ENFORCEMENT_POINT, Engine, EngineOptions, GATOR_ENFORCEMENT_POINT, NamespaceMode,
    ReviewOutcome, sort_results,
};
pub use error::EngineError;
pub use expander::{ExpansionSet, MAX_EXPANSION_DEPTH, MAX_RESULTANTS, Resultant, ReviewedAs};
pub use expansion::{
    ApplyTo, EXPANSION_GROUP, ExpansionError, ExpansionTemplate, Gvk, MUTATION_GROUP,
    MUTATOR_KINDS, is_expansion_template, is_mutator,
};
pub use inventory::Inventory;
pub use reader::{
    MAX_FILE_BYTES, MAX_TOTAL_BYTES, STDIN_PATH, gator_numbers, normalize_numbers, parse_stream,
    read_source_file, read_sources, read_sources_with_origin, read_sources_with_stdin,
    read_verify_file, read_verify_file_within, yaml_to_json,
};
pub use request::ReviewRequest;
pub use result::{ConstraintRef, ObjectRef, ReviewResult};
pub use review::{
    DeadlinePassed, DetailedResult, Driver, Evaluator, PolicySet, ResultKind, ReviewStats,
};
pub use template::{CEL_ENGINE, Template};
