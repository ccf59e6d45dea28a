//! One interface for every engine: the objects in, results out as they come.
//!
//! [`PolicyEngine::review`] takes a [`ReviewInput`] — the policy objects (ConstraintTemplates,
//! Constraints, Namespaces), held whole because every review needs them, and an iterator over
//! the other objects (the workloads), taken one at a time — and hands every result to `emit`.
//! What an engine keeps of the objects is its own business:
//!
//! - [`Embedded`]: the in-process `gatekeeper-engine`; nothing touches the disk. When no template
//!   reads `data.inventory` it reviews the objects a page ([`PAGE_OBJECTS`]) at a time against
//!   the policy side and drops them (`Engine::review_page`), so it never holds every object;
//!   otherwise every object goes into one engine first.
//! - [`Gator`]: the pinned `gator test` binary (the seed's way); it writes the objects to its
//!   input directory `<work>/in` (`cluster_projection::write_projected`) and runs gator on it.
//! - [`Both`]: runs the two (in parallel) on the same objects, emits the embedded results and
//!   reports every disagreement between them, so a team can switch engines with evidence.
//!
//! The next engine (CEL…) is one more implementation. Results go out through `emit` as they
//! come, so the caller keeps results and counts, never the objects.
//!
//! The trait is synchronous: the embedded engine is CPU-bound and gator is a child process. Call
//! it from `tokio::task::spawn_blocking` in async code.

use std::path::{Path, PathBuf};

use gatekeeper_engine::{
    DetailedResult, Engine, EngineError, EngineOptions, ReviewResult, sort_results,
};
use serde_json::Value;
use thiserror::Error;

use crate::compare::Comparison;
use crate::run::{GatorRunner, RunError};

/// An object that could not be produced for the review (a page that could not be read, an
/// object that could not be parsed). It ends the review: the results emitted so far are void.
#[derive(Debug, Error)]
#[error("{0}")]
pub struct InputError(pub Box<dyn std::error::Error + Send + Sync>);

impl InputError {
    /// An input error saying `text`.
    pub fn new(text: impl Into<String>) -> InputError {
        InputError(text.into().into())
    }
}

/// The objects an engine reviews (every one of them is reviewed, as `gator test` reviews every
/// input object).
pub struct ReviewInput<'a> {
    /// ConstraintTemplates, Constraints and Namespaces: what every review depends on.
    pub policy: Vec<Value>,
    /// Every other object, one at a time; an `Err` ends the review with that error.
    pub objects: Box<dyn Iterator<Item = Result<Value, InputError>> + Send + 'a>,
}

impl std::fmt::Debug for ReviewInput<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReviewInput")
            .field("policy", &self.policy.len())
            .finish_non_exhaustive()
    }
}

impl<'a> ReviewInput<'a> {
    /// The policy objects and the other objects, which cannot fail.
    pub fn new(policy: Vec<Value>, objects: impl Iterator<Item = Value> + Send + 'a) -> Self {
        ReviewInput {
            policy,
            objects: Box::new(objects.map(Ok)),
        }
    }

    /// The policy objects and objects that are produced as they are read (and may fail).
    pub fn fallible(
        policy: Vec<Value>,
        objects: impl Iterator<Item = Result<Value, InputError>> + Send + 'a,
    ) -> Self {
        ReviewInput {
            policy,
            objects: Box::new(objects),
        }
    }

    /// `objects` in any order (what a file reader gives), split into the policy side and the
    /// rest by group and kind.
    pub fn sorted_out(objects: impl IntoIterator<Item = Value>) -> ReviewInput<'static> {
        let (policy, rest): (Vec<Value>, Vec<Value>) =
            objects.into_iter().partition(is_policy_object);
        ReviewInput::new(policy, rest.into_iter())
    }

    /// Hands every object, the policy side first, to `consume`; an object that failed ends the
    /// objects, and its error is the result.
    fn consume<T>(
        self,
        consume: impl FnOnce(&mut dyn Iterator<Item = Value>) -> T,
    ) -> Result<T, InputError> {
        let mut failure = None;
        let objects = self.objects.map_while(|object| match object {
            Ok(object) => Some(object),
            Err(error) => {
                failure = Some(error);
                None
            }
        });
        let consumed = consume(&mut self.policy.into_iter().chain(objects));
        match failure {
            Some(error) => Err(error),
            None => Ok(consumed),
        }
    }
}

/// Whether `object` belongs to the policy side of a [`ReviewInput`]: a ConstraintTemplate, a
/// Constraint, an ExpansionTemplate or a Namespace.
pub fn is_policy_object(object: &Value) -> bool {
    let api_version = object["apiVersion"].as_str().unwrap_or("");
    let kind = object["kind"].as_str().unwrap_or("");
    let group = api_version.split_once('/').map_or("", |(group, _)| group);
    group == gatekeeper_engine::CONSTRAINT_GROUP
        || (group == "templates.gatekeeper.sh" && kind == "ConstraintTemplate")
        || (group == "expansion.gatekeeper.sh" && kind == "ExpansionTemplate")
        || (api_version == "v1" && kind == "Namespace")
}

/// Why a review gave no (valid) results. The message is a skipped run's reason.
#[derive(Debug, Error)]
pub enum ReviewError {
    /// An object could not be produced.
    #[error("reading the objects failed")]
    Input(#[from] InputError),
    /// The embedded engine failed (a template that does not compile…).
    #[error("embedded engine failed")]
    Embedded(#[from] EngineError),
    /// gator's input directory could not be written.
    #[error("failed to write the projection")]
    Projection(#[from] cluster_projection::ProjectionError),
    /// gator failed (error, warning, non-JSON output, timeout…).
    #[error("gator run failed")]
    Gator(#[from] RunError),
    /// One side of a [`Both`] review could not be joined.
    #[error("gator run of the engine comparison panicked")]
    Panicked,
}

/// What a review reports besides its results.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReviewSummary {
    /// How many results were emitted.
    pub results: usize,
    /// For [`Both`]: embedded (left) versus gator (right).
    pub comparison: Option<Comparison>,
}

/// An engine: reviews objects against the Constraints among them.
pub trait PolicyEngine: Send + Sync {
    /// The engine's name: `embedded`, `gator` or `both`.
    fn name(&self) -> &'static str;

    /// Reviews every object of `input` and hands each result to `emit` as it comes, in no
    /// particular order (the embedded engine emits each page's results sorted, page by page; a
    /// caller sorts when it needs one order). On `Err` the results emitted so far are void.
    fn review(
        &self,
        input: ReviewInput<'_>,
        emit: &mut dyn FnMut(ReviewResult),
    ) -> Result<ReviewSummary, ReviewError>;

    /// [`PolicyEngine::review`] into a list.
    fn review_to_vec(&self, input: ReviewInput<'_>) -> Result<Vec<ReviewResult>, ReviewError> {
        let mut results = Vec::new();
        self.review(input, &mut |result| results.push(result))?;
        Ok(results)
    }
}

/// Emits `results` and says how many there were.
fn emit_all(results: Vec<ReviewResult>, emit: &mut dyn FnMut(ReviewResult)) -> ReviewSummary {
    let count = results.len();
    results.into_iter().for_each(emit);
    ReviewSummary {
        results: count,
        comparison: None,
    }
}

/// The pinned (or local) `gator` binary, reading its input from `<work>/in`.
#[derive(Debug, Clone)]
pub struct Gator {
    runner: GatorRunner,
    work_dir: PathBuf,
}

impl Gator {
    /// An engine running `gator test` through `runner` on the objects written under `work_dir`.
    pub fn new(runner: GatorRunner, work_dir: impl Into<PathBuf>) -> Gator {
        Gator {
            runner,
            work_dir: work_dir.into(),
        }
    }

    /// The runner.
    pub fn runner(&self) -> &GatorRunner {
        &self.runner
    }

    /// Where gator's input is written (`<work>/in`).
    pub fn input_dir(&self) -> PathBuf {
        self.work_dir.join("in")
    }
}

impl PolicyEngine for Gator {
    fn name(&self) -> &'static str {
        "gator"
    }

    fn review(
        &self,
        input: ReviewInput<'_>,
        emit: &mut dyn FnMut(ReviewResult),
    ) -> Result<ReviewSummary, ReviewError> {
        let written = input
            .consume(|objects| cluster_projection::write_projected(&self.work_dir, objects))?;
        let results = self.runner.test(&written?.dir)?;
        Ok(emit_all(results, emit))
    }
}

/// The in-process engine.
#[derive(Debug, Clone, Default)]
pub struct Embedded {
    options: EngineOptions,
}

impl Embedded {
    /// An embedded engine with `options`.
    pub fn new(options: EngineOptions) -> Embedded {
        Embedded { options }
    }
}

impl PolicyEngine for Embedded {
    fn name(&self) -> &'static str {
        "embedded"
    }

    fn review(
        &self,
        input: ReviewInput<'_>,
        emit: &mut dyn FnMut(ReviewResult),
    ) -> Result<ReviewSummary, ReviewError> {
        if input.policy.is_empty() {
            return self.review_whole(input, emit);
        }
        let engine = Engine::new(input.policy.iter().cloned(), self.options.clone())?;
        if engine.reads_inventory() {
            return self.review_whole(input, emit);
        }
        // No template reads data.inventory: the objects are reviewed a page at a time against
        // the policy side and dropped, each page's results emitted (sorted) before the next is
        // read, so only the caller's results outlive a page.
        let mut emitted = emit_sorted(engine.review_all_detailed()?.results, emit);
        let mut objects = input.objects;
        let mut next_index = engine.object_count();
        loop {
            let page = objects
                .by_ref()
                .take(PAGE_OBJECTS)
                .collect::<Result<Vec<Value>, InputError>>()?;
            if page.is_empty() {
                break;
            }
            let count = page.len();
            emitted += emit_sorted(engine.review_page(next_index, page)?.results, emit);
            next_index += count;
        }
        Ok(ReviewSummary {
            results: emitted,
            comparison: None,
        })
    }
}

/// Sorts `results` as a review sorts them, emits them and says how many there were.
fn emit_sorted(mut results: Vec<DetailedResult>, emit: &mut dyn FnMut(ReviewResult)) -> usize {
    sort_results(&mut results);
    let count = results.len();
    results.into_iter().for_each(|d| emit(d.result));
    count
}

/// How many objects the embedded engine reviews at a time when it pages: enough to keep both
/// cores busy, few enough that a page is a few MiB.
pub const PAGE_OBJECTS: usize = 1024;

impl Embedded {
    /// Reviews every object with the whole input in the engine (what a template reading
    /// `data.inventory` needs): the objects go in one at a time and are kept compact.
    fn review_whole(
        &self,
        input: ReviewInput<'_>,
        emit: &mut dyn FnMut(ReviewResult),
    ) -> Result<ReviewSummary, ReviewError> {
        let engine = input.consume(|objects| Engine::new(objects, self.options.clone()))?;
        Ok(emit_all(engine?.review_all()?, emit))
    }
}

/// Both engines; the embedded results are authoritative, gator's are compared with them.
///
/// Generic so either side can be any engine (by default [`Embedded`] and [`Gator`]).
#[derive(Debug, Clone)]
pub struct Both<E = Embedded, G = Gator> {
    embedded: E,
    gator: G,
}

impl<E: PolicyEngine, G: PolicyEngine> Both<E, G> {
    /// Runs `embedded` and `gator` on the same input.
    pub fn new(embedded: E, gator: G) -> Both<E, G> {
        Both { embedded, gator }
    }
}

/// The input of a [`Both`] review, read once and replayed to each engine: the other objects are
/// kept as compact JSON text, as the embedded engine keeps them.
struct Replay {
    policy: Vec<Value>,
    objects: Vec<Box<str>>,
}

impl Replay {
    fn read(input: ReviewInput<'_>) -> Result<Replay, InputError> {
        let objects = input
            .objects
            .map(|object| object.map(|o| o.to_string().into_boxed_str()))
            .collect::<Result<_, _>>()?;
        Ok(Replay {
            policy: input.policy,
            objects,
        })
    }

    fn input(&self) -> ReviewInput<'_> {
        ReviewInput::fallible(
            self.policy.clone(),
            self.objects
                .iter()
                .map(|text| serde_json::from_str(text).map_err(|e| InputError(Box::new(e)))),
        )
    }
}

impl<E: PolicyEngine, G: PolicyEngine> PolicyEngine for Both<E, G> {
    fn name(&self) -> &'static str {
        "both"
    }

    fn review(
        &self,
        input: ReviewInput<'_>,
        emit: &mut dyn FnMut(ReviewResult),
    ) -> Result<ReviewSummary, ReviewError> {
        let replay = Replay::read(input)?;
        let (embedded, gator) = std::thread::scope(|scope| {
            let gator = scope.spawn(|| self.gator.review_to_vec(replay.input()));
            let embedded = self.embedded.review_to_vec(replay.input());
            (embedded, gator.join())
        });
        let embedded = embedded?;
        let gator = gator.map_err(|_| ReviewError::Panicked)??;
        let comparison = Comparison::new("embedded", &embedded, "gator", &gator);
        if !comparison.agrees() {
            tracing::warn!(
                disagreements = comparison.disagreements.len(),
                "embedded and gator results differ: {comparison}"
            );
        }
        Ok(ReviewSummary {
            comparison: Some(comparison),
            ..emit_all(embedded, emit)
        })
    }
}

/// Reads every object under `dir` (files and directories, as `gator test -f` does) into a
/// [`ReviewInput`]: what a caller that holds a directory of objects gives an engine.
pub fn read_dir_input(dir: &Path) -> Result<ReviewInput<'static>, EngineError> {
    let objects = gatekeeper_engine::read_sources(&[dir.to_path_buf()])?;
    Ok(ReviewInput::sorted_out(objects))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_failing_object_ends_the_review_with_its_error() {
        let objects = vec![
            Ok(json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "a"}})),
            Err(InputError::new("page 2 of deployments: HTTP 500")),
        ];
        let input = ReviewInput::fallible(Vec::new(), objects.into_iter());
        let mut emitted = 0;
        let error = Embedded::default()
            .review(input, &mut |_| emitted += 1)
            .unwrap_err();
        assert!(matches!(error, ReviewError::Input(_)), "{error:?}");
        assert_eq!(error.to_string(), "reading the objects failed");
        assert_eq!(emitted, 0);
    }

    #[test]
    fn templates_constraints_and_namespaces_are_the_policy_side() {
        let input = ReviewInput::sorted_out([
            json!({"apiVersion": "templates.gatekeeper.sh/v1", "kind": "ConstraintTemplate"}),
            json!({"apiVersion": "constraints.gatekeeper.sh/v1beta1", "kind": "K8sRequiredLabels"}),
            json!({"apiVersion": "v1", "kind": "Namespace"}),
            json!({"apiVersion": "apps/v1", "kind": "Deployment"}),
            json!({"apiVersion": "example.com/v1", "kind": "Namespace"}),
        ]);
        assert_eq!(input.policy.len(), 3);
        assert_eq!(input.objects.count(), 2);
    }
}
