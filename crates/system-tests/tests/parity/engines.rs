//! The engines parity compares with, behind gator-runner's engine interface, and the one call
//! that reviews a directory of objects with one of them.

use std::path::Path;

use anyhow::Result;
use gatekeeper_engine::ReviewResult;
use gator_runner::engine::{Embedded, Gator, PolicyEngine, read_dir_input};
use gator_runner::run::GatorRunner;
use tempfile::TempDir;

/// An engine, as gator-runner's interface, with the work directory it writes to (if any).
pub(crate) struct Engine {
    engine: Box<dyn PolicyEngine>,
    /// gator writes the objects it is given to its own input directory under this folder.
    _work: Option<TempDir>,
}

impl Engine {
    /// The engine's name, for messages.
    pub(crate) fn name(&self) -> &'static str {
        self.engine.name()
    }
}

/// The embedded engine with its default options.
pub(crate) fn embedded() -> Engine {
    Engine {
        engine: Box::new(Embedded::default()),
        _work: None,
    }
}

/// The `gator` binary at `path`, with a fresh work directory.
pub(crate) fn gator(path: &Path) -> Result<Engine> {
    let work = tempfile::tempdir()?;
    Ok(Engine {
        engine: Box::new(Gator::new(GatorRunner::new(path), work.path())),
        _work: Some(work),
    })
}

/// The results of every object in the files under `dir`.
pub(crate) fn evaluate(engine: &Engine, dir: &Path) -> Result<Vec<ReviewResult>> {
    Ok(engine.engine.review_to_vec(read_dir_input(dir)?)?)
}
