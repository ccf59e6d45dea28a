//! The report's engines behind one [`PolicyEngine`] interface — the embedded engine, the pinned
//! `gator` binary, and both compared — and everything gator needs: its pin, download, cache,
//! archive and process.
//!
//! - [`engine`]: the [`PolicyEngine`] trait (objects in, results out as they come) with
//!   [`Embedded`], [`Gator`] and [`Both`].
//! - [`config`]: the engine settings of the report's configuration ([`EngineKind`],
//!   [`GatorConfig`], owned here) and building the configured engine.
//! - [`pin`]: the pin (`version`, `url`, `sha256`), validated before any download.
//! - [`download`]: HTTPS download (the workspace's `https-client`) with timeouts, a size cap and
//!   bounded redirects; errors name the host only.
//! - [`fetch`]: cache by hash in the work dir, sha256 check before the archive is touched.
//! - [`archive`]: extraction of the single top-level `gator` member, refusing unsafe members.
//! - [`run`]: the one place in the workspace that spawns a process: `gator test`, its stdin, env,
//!   timeout and the interpretation of its output.
//! - [`compare`]: results compared as multisets of (constraint, object, message).

pub mod archive;
pub mod compare;
pub mod config;
pub mod download;
pub mod engine;
pub mod fetch;
pub mod pin;
pub mod run;

pub use compare::{Comparison, Disagreement, ResultKey};
pub use config::{
    BuildError, ConfigError, EngineConfig, EngineKind, GatorConfig, GatorSource, build_engine,
};
pub use engine::{
    Both, Embedded, Gator, InputError, PolicyEngine, ReviewError, ReviewInput, ReviewSummary,
    is_policy_object, read_dir_input,
};
pub use fetch::{FetchError, FetchOptions, fetch_gator};
pub use https_client::{ExtraCa, TrustError, TrustRoots};
pub use pin::{GATOR_VERSION, GatorPin, PinError};
pub use run::{GatorRunner, RunError};
