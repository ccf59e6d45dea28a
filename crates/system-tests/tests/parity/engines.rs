//! The engines parity compares with, behind gator-runner's engine interface, and the one call
//! that evaluates a directory of objects with one of them.

use std::path::Path;

use anyhow::Result;
use gatekeeper_engine::ReviewResult;
use gator_runner::evaluator::{Embedded, Evaluator, Gator};
use gator_runner::run::GatorRunner;

/// An engine, as gator-runner's interface.
pub(crate) type Engine = Box<dyn Evaluator>;

/// The embedded engine with its default options.
pub(crate) fn embedded() -> Engine {
    Box::new(Embedded::default())
}

/// The `gator` binary at `path`.
pub(crate) fn gator(path: &Path) -> Engine {
    Box::new(Gator::new(GatorRunner::new(path)))
}

/// The results of every object in the files under `dir`.
pub(crate) fn evaluate(engine: &Engine, dir: &Path) -> Result<Vec<ReviewResult>> {
    Ok(engine.evaluate(dir)?)
}
