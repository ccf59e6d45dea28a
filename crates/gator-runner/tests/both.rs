//! `Both` mode: every disagreement between the two engines is reported, compared as multisets
//! of (constraint kind and name, object, message), ignoring order and enforcement action.

mod common;

use std::path::Path;

use gatekeeper_engine::ReviewResult;
use gator_runner::compare::Comparison;
use gator_runner::engine::{Both, Gator, PolicyEngine, ReviewError, ReviewInput, ReviewSummary};
use gator_runner::run::parse_results;
use gator_runner::{GatorRunner, RunError};

/// An engine that emits fixed results (stands in for the embedded engine here, so the
/// comparison logic is tested on exactly known inputs).
struct Fixed(Vec<ReviewResult>);

impl PolicyEngine for Fixed {
    fn name(&self) -> &'static str {
        "fixed"
    }

    fn review(
        &self,
        _: ReviewInput<'_>,
        emit: &mut dyn FnMut(ReviewResult),
    ) -> Result<ReviewSummary, ReviewError> {
        self.0.iter().cloned().for_each(emit);
        Ok(ReviewSummary {
            results: self.0.len(),
            comparison: None,
        })
    }
}

fn no_objects() -> ReviewInput<'static> {
    ReviewInput::new(Vec::new(), std::iter::empty())
}

/// Reviews nothing with `engine`: the results it emitted and its summary.
fn review(engine: &dyn PolicyEngine) -> Result<(Vec<ReviewResult>, ReviewSummary), ReviewError> {
    let mut results = Vec::new();
    let summary = engine.review(no_objects(), &mut |r| results.push(r))?;
    Ok((results, summary))
}

fn recorded() -> Vec<ReviewResult> {
    parse_results(&std::fs::read_to_string(common::data("gator-results.json")).unwrap()).unwrap()
}

fn gator_printing_recorded(dir: &Path) -> Gator {
    let fixture = common::data("gator-results.json");
    let script = common::script(
        dir,
        "gator",
        &format!("cat '{}'\nexit 1", fixture.display()),
    );
    Gator::new(GatorRunner::new(script), dir)
}

#[test]
fn same_multiset_in_another_order_with_other_actions_agrees() {
    let dir = tempfile::tempdir().unwrap();
    let mut embedded = recorded();
    embedded.reverse();
    for result in &mut embedded {
        result.constraint.enforcement_action = "warn".to_string();
        result.constraint.scoped_actions.clear();
        result.details = None;
    }
    let both = Both::new(Fixed(embedded.clone()), gator_printing_recorded(dir.path()));
    let (results, summary) = review(&both).unwrap();
    assert_eq!(results, embedded, "the embedded results are emitted");
    assert_eq!(summary.results, embedded.len());
    let comparison = summary.comparison.unwrap();
    assert!(comparison.agrees(), "{comparison}");
    assert_eq!((comparison.left_total, comparison.right_total), (4, 4));
}

#[test]
fn every_disagreement_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let gator = recorded();
    let mut embedded = gator.clone();
    // One result missing on the embedded side, one only there, one reported twice, one with a
    // different message.
    embedded.remove(1);
    let mut extra = gator[0].clone();
    extra.object.name = "worker".to_string();
    embedded.push(extra);
    embedded.push(gator[2].clone());
    embedded[2].msg = "1:1: rego_type_error: undefined function data.lib.helpers.fullname".into();
    let both = Both::new(Fixed(embedded.clone()), gator_printing_recorded(dir.path()));
    let (results, summary) = review(&both).unwrap();
    assert_eq!(results, embedded);
    let comparison = summary.comparison.unwrap();
    assert_eq!(
        comparison,
        Comparison::new("embedded", &embedded, "gator", &gator)
    );
    insta::assert_snapshot!("both_disagreements", comparison.to_string());
    insta::assert_json_snapshot!("both_disagreements_json", comparison);
    // `review_to_vec` gives the embedded results only.
    assert_eq!(both.review_to_vec(no_objects()).unwrap(), embedded);
}

#[test]
fn a_gator_failure_fails_the_comparison() {
    let dir = tempfile::tempdir().unwrap();
    let script = common::script(
        dir.path(),
        "gator",
        "echo 'no input data identified' >&2\nexit 1",
    );
    let both = Both::new(
        Fixed(recorded()),
        Gator::new(GatorRunner::new(script), dir.path()),
    );
    let error = review(&both).unwrap_err();
    assert!(
        matches!(error, ReviewError::Gator(RunError::Failed { .. })),
        "{error:?}"
    );
}
