//! One interface for both engines: a projection directory in, results out.
//!
//! - [`Gator`]: the pinned `gator test` binary (the seed's way).
//! - [`Embedded`]: the in-process `gatekeeper-engine`.
//! - [`Both`]: runs the two (in parallel), returns the embedded results and every disagreement
//!   between them, so a team can switch engines with evidence.
//!
//! The trait is synchronous: the embedded engine is CPU-bound and gator is a child process. Call
//! it from `tokio::task::spawn_blocking` in async code.

use std::path::{Path, PathBuf};

use gatekeeper_engine::{Engine, EngineError, EngineOptions, ReviewResult};
use thiserror::Error;

use crate::compare::Comparison;
use crate::run::{GatorRunner, RunError};

/// Why an evaluation gave no results. The message is a skipped run's reason.
#[derive(Debug, Error)]
pub enum EvaluatorError {
    /// The embedded engine failed (unreadable input, a template that does not compile…).
    #[error("embedded engine failed")]
    Embedded(#[from] EngineError),
    /// gator failed (error, warning, non-JSON output, timeout…).
    #[error("gator run failed")]
    Gator(#[from] RunError),
    /// The gator side of a [`Both`] run could not be joined.
    #[error("gator run of the engine comparison panicked")]
    Panicked,
}

/// What an evaluation produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evaluation {
    /// The results (for [`Both`], the embedded engine's).
    pub results: Vec<ReviewResult>,
    /// For [`Both`]: embedded (left) versus gator (right).
    pub comparison: Option<Comparison>,
}

/// Evaluates a projection directory (`<work>/in`, one object per file).
pub trait Evaluator: Send + Sync {
    /// The engine's name: `embedded`, `gator` or `both`.
    fn name(&self) -> &'static str;

    /// The results for every object under `projection_dir`.
    fn evaluate(&self, projection_dir: &Path) -> Result<Vec<ReviewResult>, EvaluatorError>;

    /// The results plus, for [`Both`], the engine comparison.
    fn evaluate_detailed(&self, projection_dir: &Path) -> Result<Evaluation, EvaluatorError> {
        Ok(Evaluation {
            results: self.evaluate(projection_dir)?,
            comparison: None,
        })
    }
}

/// The pinned (or local) `gator` binary.
#[derive(Debug, Clone)]
pub struct Gator {
    runner: GatorRunner,
}

impl Gator {
    /// An evaluator running `gator test` through `runner`.
    pub fn new(runner: GatorRunner) -> Gator {
        Gator { runner }
    }

    /// The runner.
    pub fn runner(&self) -> &GatorRunner {
        &self.runner
    }
}

impl Evaluator for Gator {
    fn name(&self) -> &'static str {
        "gator"
    }

    fn evaluate(&self, projection_dir: &Path) -> Result<Vec<ReviewResult>, EvaluatorError> {
        Ok(self.runner.test(projection_dir)?)
    }
}

/// The in-process engine.
#[derive(Debug, Clone, Default)]
pub struct Embedded {
    options: EngineOptions,
}

impl Embedded {
    /// An embedded evaluator with `options`.
    pub fn new(options: EngineOptions) -> Embedded {
        Embedded { options }
    }

    /// Evaluates objects already in memory (e.g. a projection that was never written); they
    /// are taken one at a time, so a lazy projection is never whole in memory.
    pub fn evaluate_objects(
        &self,
        objects: impl IntoIterator<Item = serde_json::Value>,
    ) -> Result<Vec<ReviewResult>, EvaluatorError> {
        let engine = Engine::new(objects, self.options.clone())?;
        Ok(engine.review_all()?)
    }
}

impl Evaluator for Embedded {
    fn name(&self) -> &'static str {
        "embedded"
    }

    fn evaluate(&self, projection_dir: &Path) -> Result<Vec<ReviewResult>, EvaluatorError> {
        let objects = gatekeeper_engine::read_sources(&[PathBuf::from(projection_dir)])?;
        self.evaluate_objects(objects)
    }
}

/// Both engines; the embedded results are authoritative, gator's are compared with them.
///
/// Generic so either side can be any evaluator (by default [`Embedded`] and [`Gator`]).
#[derive(Debug, Clone)]
pub struct Both<E = Embedded, G = Gator> {
    embedded: E,
    gator: G,
}

impl<E: Evaluator, G: Evaluator> Both<E, G> {
    /// Runs `embedded` and `gator` on the same input.
    pub fn new(embedded: E, gator: G) -> Both<E, G> {
        Both { embedded, gator }
    }
}

impl<E: Evaluator, G: Evaluator> Evaluator for Both<E, G> {
    fn name(&self) -> &'static str {
        "both"
    }

    fn evaluate(&self, projection_dir: &Path) -> Result<Vec<ReviewResult>, EvaluatorError> {
        Ok(self.evaluate_detailed(projection_dir)?.results)
    }

    fn evaluate_detailed(&self, projection_dir: &Path) -> Result<Evaluation, EvaluatorError> {
        let (embedded, gator) = std::thread::scope(|scope| {
            let gator = scope.spawn(|| self.gator.evaluate(projection_dir));
            let embedded = self.embedded.evaluate(projection_dir);
            (embedded, gator.join())
        });
        let embedded = embedded?;
        let gator = gator.map_err(|_| EvaluatorError::Panicked)??;
        let comparison = Comparison::new("embedded", &embedded, "gator", &gator);
        if !comparison.agrees() {
            tracing::warn!(
                disagreements = comparison.disagreements.len(),
                "embedded and gator results differ: {comparison}"
            );
        }
        Ok(Evaluation {
            results: embedded,
            comparison: Some(comparison),
        })
    }
}
