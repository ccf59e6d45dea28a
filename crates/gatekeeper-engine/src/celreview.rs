//! CEL reviews: a template evaluated by its `K8sNativeValidation` code (see
//! `docs/gatekeeper-semantics.md`). Each matching Constraint is one evaluation with the bindings
//! Gatekeeper's CEL driver gives (`object`, `oldObject`, `request`, `namespaceObject`, the
//! Constraint as `params`); each failed validation is a violation and each evaluation error an
//! error finding, side by side, as Gatekeeper reports them. `review` turns findings into results.

use std::time::Instant;

use k8s_cel::{Bindings, CelProgram, Decision, PreparedBindings};

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

/// Evaluates `program` on `request` for every Constraint of `matched`, in order, stopping when
/// `deadline` passes; `evaluations` counts the evaluations run.
pub(crate) fn findings<'c>(
    program: &CelProgram,
    request: &ReviewRequest,
    matched: impl Iterator<Item = &'c Constraint>,
    deadline: Option<Instant>,
    evaluations: &mut usize,
) -> Result<Vec<Finding<'c>>, PastDeadline> {
    let cel_request = request.cel_request();
    // The review's bindings are converted once; only `params` changes per Constraint.
    let mut prepared = PreparedBindings::new(&Bindings {
        object: request.cel_object(),
        old_object: request.old_object(),
        request: Some(&cel_request),
        params: None,
        namespace_object: request.namespace_object(),
    });
    let mut out = Vec::new();
    for constraint in matched {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(PastDeadline);
        }
        *evaluations += 1;
        let decisions = match prepared.as_mut() {
            Ok(bindings) => match bindings.set_params(Some(&constraint.object)) {
                Ok(()) => program.evaluate_prepared(bindings),
                Err(error) => program.conversion_failed(error),
            },
            Err(error) => program.conversion_failed(error.clone()),
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
