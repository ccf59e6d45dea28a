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

impl EvalError {
    /// Whether `message` has the shape of an [`EvalError`]'s text. Gatekeeper's results of a CEL
    /// template carry only a message, for a failed validation and for an error alike; a reader
    /// of gator's output (which marks Rego errors, but not CEL ones) tells them apart by this.
    /// A `messageExpression` could mimic these shapes; no real policy does.
    pub fn is_error_message(message: &str) -> bool {
        const OUT_OF_BUDGET: &str = "validation failed due to running out of cost budget";
        let single = |text: &str| {
            text.starts_with("compilation error: ")
                || (text.starts_with("expression '") && text.contains("' resulted in error: "))
                || text.starts_with(OUT_OF_BUDGET)
        };
        single(message)
            || message
                .strip_prefix('[')
                .and_then(|inner| inner.strip_suffix(']'))
                .is_some_and(single)
    }
}

#[cfg(test)]
mod tests {
    use super::EvalError;

    #[test]
    fn error_texts_are_recognised_and_violation_messages_are_not() {
        let errors = [
            EvalError::Compilation {
                detail: "compilation failed: ERROR: <input>:1:1: undeclared reference".into(),
            },
            EvalError::Runtime {
                expression: "1/0 == 1".into(),
                detail: "division by zero".into(),
            },
            EvalError::OutOfBudget,
            EvalError::Aggregate(
                "[expression 'a' resulted in error: x, expression 'b' resulted in error: y]".into(),
            ),
        ];
        for error in &errors {
            assert!(EvalError::is_error_message(&error.to_string()), "{error}");
        }
        for message in [
            "plain",
            "replicas must be between 2 and 5, not 7",
            "[a, b]",
            "expression 'x' is wrong",
        ] {
            assert!(!EvalError::is_error_message(message), "{message}");
        }
    }
}
