//! Fetches, verifies and runs the pinned `gator` binary, and puts both engines behind one
//! [`Evaluator`] interface.
//!
//! - [`pin`]: the pin (`version`, `url`, `sha256`), validated before any download.
//! - [`download`]: HTTPS download (the workspace's `https-client`) with timeouts, a size cap and bounded
//!   redirects; errors name the host only.
//! - [`fetch`]: cache by hash in the work dir, sha256 check before the archive is touched.
//! - [`archive`]: extraction of the single top-level `gator` member, refusing unsafe members.
//! - [`run`]: the one place in the workspace that spawns a process: `gator test`, its stdin, env,
//!   timeout and the interpretation of its output.
//! - [`compare`]: results compared as multisets of (constraint, object, message).
//! - [`evaluator`]: the [`Evaluator`] trait with [`Gator`], [`Embedded`] and [`Both`].
//! - [`config`]: building an evaluator from the report's configuration.

pub mod archive;
pub mod compare;
pub mod config;
pub mod download;
pub mod evaluator;
pub mod fetch;
pub mod pin;
pub mod run;

pub use compare::{Comparison, Disagreement, ResultKey};
pub use config::{
    BuildError, ConfigError, EngineKind, EvaluatorConfig, GatorConfig, GatorSource, build_evaluator,
};
pub use evaluator::{Both, Embedded, Evaluation, Evaluator, EvaluatorError, Gator};
pub use fetch::{FetchError, FetchOptions, fetch_gator};
pub use https_client::{ExtraCa, TrustError, TrustRoots};
pub use pin::{GATOR_VERSION, GatorPin, PinError};
pub use run::{GatorRunner, RunError};
