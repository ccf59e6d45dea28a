//! The crate's errors: [`CompileError`] (the source cannot be taken as Gatekeeper takes it, or
//! it uses something this crate does not provide) and [`EvalError`] (one evaluation failed, with
//! the text Kubernetes' validator gives for the same failure).

use thiserror::Error;

/// Why a `K8sNativeValidation` source cannot be compiled.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CompileError {
    /// The source is not the shape Gatekeeper reads (`GetSource`): the text says what and where.
    #[error("invalid K8sNativeValidation source: {0}")]
    Source(String),
    /// A name Gatekeeper reserves for itself.
    #[error("{0}")]
    Reserved(String),
    /// An expression uses a function, macro or feature of Kubernetes CEL this crate does not
    /// provide; evaluating it could only give a wrong answer.
    #[error("{place}: {feature} is not supported by the embedded CEL engine")]
    Unsupported {
        /// Where: `validations[0].expression`, `variables[1] (name)`, …
        place: String,
        /// What: `function 'first'`, `two-variable comprehension 'all'`, …
        feature: String,
    },
}

/// Why one evaluation did not give a decision; `Display` is the message Gatekeeper's result
/// carries for the same failure.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum EvalError {
    /// The expression failed to compile (syntax, an undeclared name, a non-boolean validation);
    /// Gatekeeper accepts such a template and reports this on every review.
    #[error("compilation error: {detail}")]
    Compilation {
        /// cel-go's wording of the problem (`compilation failed: ERROR: <input>:1:1: …`).
        detail: String,
    },
    /// The expression raised an error while it ran.
    #[error("expression '{expression}' resulted in error: {detail}")]
    Runtime {
        /// The expression as written.
        expression: String,
        /// The error.
        detail: String,
    },
    /// Several match conditions failed: Kubernetes' aggregate text, `[e1, e2]`.
    #[error("{0}")]
    Aggregate(String),
    /// The evaluation spent its whole cost budget.
    #[error(
        "validation failed due to running out of cost budget, no further validation rules will be run"
    )]
    OutOfBudget,
    /// A binding (`object`, `params`, …) nests deeper than the crate accepts.
    #[error("{binding} nests deeper than {max} levels")]
    TooDeep {
        /// Which binding.
        binding: &'static str,
        /// The cap.
        max: usize,
    },
    /// The interpreter failed in a way it should not (a defect caught at the boundary).
    #[error("internal error: the CEL interpreter failed")]
    Internal,
}
