//! CEL reviews: a template evaluated by its `K8sNativeValidation` code (see
//! `docs/gatekeeper-semantics.md`). Each matching Constraint is one evaluation with the bindings
//! Gatekeeper's CEL driver gives (`object`, `oldObject`, `request`, `namespaceObject`, the
//! Constraint as `params`). The review's bindings are prepared once for all its CEL templates,
//! each Constraint's `params` once per evaluator. Each failed validation is a violation and
//! each evaluation error an error finding, side by side, as Gatekeeper reports them. `review`
//! turns findings into results.

use std::time::Instant;

use k8s_cel::{Bindings, CelProgram, Decision, EvalError, PreparedBindings, PreparedParams};

use crate::constraint::Constraint;
use crate::request::ReviewRequest;

/// One result of a CEL evaluation, before it becomes a `DetailedResult`.
pub(crate) struct Finding<'c> {
    /// The Constraint evaluated.
    pub(crate) constraint: &'c Constraint,
    /// The violation's message, or the error's text.
    pub(crate) msg: String,
    /// Whether it is an evaluation error rather than a failed validation.
    pub(crate) is_error: bool,
}

/// The deadline passed before every Constraint was evaluated.
pub(crate) struct PastDeadline;

/// A request under review, with its CEL bindings (all but `params`) once a CEL template has
/// needed them: made once per review and shared by its CEL templates, each binding converted
/// when an expression first reads it.
pub(crate) struct UnderReview<'r> {
    pub(crate) request: &'r ReviewRequest,
    cel_bindings: Option<Result<PreparedBindings<'r>, EvalError>>,
}

impl<'r> UnderReview<'r> {
    pub(crate) fn new(request: &'r ReviewRequest) -> UnderReview<'r> {
        UnderReview {
            request,
            cel_bindings: None,
        }
    }

    /// The CEL bindings, made on first use.
    pub(crate) fn cel_bindings(&mut self) -> &Result<PreparedBindings<'r>, EvalError> {
        let request = self.request;
        self.cel_bindings.get_or_insert_with(|| {
            PreparedBindings::new(&Bindings {
                object: request.cel_object(),
                old_object: request.old_object(),
                request: Some(request.cel_request()),
                params: None,
                namespace_object: request.namespace_object(),
            })
        })
    }
}

/// Evaluates `program` with the review's `bindings` for every Constraint of `matched` (each
/// with its converted `params`), in order, stopping when `deadline` passes; `evaluations`
/// counts the evaluations run.
pub(crate) fn findings<'c>(
    program: &CelProgram,
    bindings: &Result<PreparedBindings<'_>, EvalError>,
    matched: impl Iterator<
        Item = (
            &'c Constraint,
            Option<&'c Result<PreparedParams, EvalError>>,
        ),
    >,
    deadline: Option<Instant>,
    evaluations: &mut usize,
) -> Result<Vec<Finding<'c>>, PastDeadline> {
    let mut out = Vec::new();
    for (constraint, params) in matched {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(PastDeadline);
        }
        *evaluations += 1;
        let decisions = match (bindings, params) {
            (Ok(bindings), Some(Ok(params))) => program
                .evaluate_until(bindings, params, deadline)
                .ok_or(PastDeadline)?,
            (Err(error), _) | (_, Some(Err(error))) => program.conversion_failed(error.clone()),
            // No params for this Constraint (an evaluator made from another policy set): an
            // error result, never a silent pass.
            (Ok(_), None) => program.conversion_failed(EvalError::Internal),
        };
        out.extend(decisions.into_iter().map(|decision| match decision {
            Decision::Violation(v) => Finding {
                constraint,
                msg: v.message,
                is_error: false,
            },
            Decision::Error(e) => Finding {
                constraint,
                msg: e.to_string(),
                is_error: true,
            },
        }));
    }
    Ok(out)
}
