//! The engine part of the report's configuration — `engine: embedded|gator|both` ([`EngineKind`])
//! and the `gator` section ([`GatorConfig`]) — and building the configured [`PolicyEngine`].
//!
//! This module owns these settings: the report's config file deserializes them as they are here,
//! and every rule about them (the pin, the local binary) lives here. [`GatorConfig::pin`] checks
//! a pin as soon as the config is read; [`EngineConfig::validate`] checks, without network I/O,
//! everything the chosen engine needs (the pin, or that a local binary exists), so configuration
//! errors come before any cluster read or download. [`build_engine`] then fetches the pinned
//! gator when needed.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use gatekeeper_engine::EngineOptions;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::engine::{Both, Embedded, Gator, PolicyEngine};
use crate::fetch::{FetchError, FetchOptions, fetch_gator};
use crate::pin::{GatorPin, PinError};
use crate::run::{DEFAULT_TIMEOUT, GatorRunner};

/// Which engine reviews the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    /// The in-process engine (no download, no process).
    #[default]
    Embedded,
    /// The pinned `gator` binary.
    Gator,
    /// Both, compared; the embedded results are used.
    Both,
}

impl EngineKind {
    /// `embedded`, `gator` or `both`.
    pub fn as_str(self) -> &'static str {
        match self {
            EngineKind::Embedded => "embedded",
            EngineKind::Gator => "gator",
            EngineKind::Both => "both",
        }
    }

    /// Whether this engine runs gator.
    pub fn needs_gator(self) -> bool {
        matches!(self, EngineKind::Gator | EngineKind::Both)
    }
}

impl fmt::Display for EngineKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for EngineKind {
    type Err = ConfigError;

    fn from_str(text: &str) -> Result<EngineKind, ConfigError> {
        match text {
            "embedded" => Ok(EngineKind::Embedded),
            "gator" => Ok(EngineKind::Gator),
            "both" => Ok(EngineKind::Both),
            other => Err(ConfigError::UnknownEngine(other.to_string())),
        }
    }
}

/// The `gator` section of the configuration: the pinned release (all of `version`, `url`,
/// `sha256`, or none) and/or a local binary. Its `Debug` shows the URL's host only.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GatorConfig {
    /// The pinned version, e.g. `v3.22.0`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The tarball URL (upstream or a mirror); must contain `version`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The tarball's sha256, 64 lowercase hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// A local gator binary to use instead of downloading (air-gapped use, tests); `--gator PATH`
    /// sets it. When set (and not empty), the pin is not used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    /// `--enable-k8s-native-validation` for gator. Unset: the embedded engine's setting
    /// ([`EngineOptions::k8s_native_validation`], gator's default true unless turned off), so
    /// `engine: both` compares like with like.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k8s_native_validation: Option<bool>,
}

impl fmt::Debug for GatorConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GatorConfig")
            .field("version", &self.version)
            .field("url_host", &self.url.as_deref().map(crate::pin::url_host))
            .field("sha256", &self.sha256)
            .field("path", &self.path)
            .field("k8s_native_validation", &self.k8s_native_validation)
            .finish()
    }
}

/// Where the gator binary comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GatorSource {
    /// A local binary (`gator.path` / `--gator PATH`).
    Local(PathBuf),
    /// The pinned release, downloaded and verified into the work dir.
    Pinned(GatorPin),
}

/// A configuration error, detected before anything is read or downloaded. Each text starts with
/// the key it is about.
#[derive(Debug, Error)]
pub enum ConfigError {
    /// `engine` is not `embedded`, `gator` or `both`.
    #[error("engine {0:?} is not one of embedded, gator, both")]
    UnknownEngine(String),
    /// Some but not all of the pin keys are set.
    #[error("gator.{missing}: is required with the other pin keys (version, url, sha256)")]
    PartialPin {
        /// The first key missing.
        missing: &'static str,
    },
    /// The engine runs gator, and neither a pin nor a local binary is configured.
    #[error("gator.{0}: is required when the engine runs gator and gator.path is not set")]
    MissingPinKey(&'static str),
    /// The pin is invalid.
    #[error(transparent)]
    Pin(#[from] PinError),
    /// `gator.path` does not name a file.
    #[error("gator.path: {0} is not a file")]
    PathNotFile(String),
}

impl GatorConfig {
    /// The validated pin when `version`, `url` and `sha256` are all set, `None` when none is; an
    /// error when only some are or the pin breaks a rule of [`GatorPin::new`].
    pub fn pin(&self) -> Result<Option<GatorPin>, ConfigError> {
        match (&self.version, &self.url, &self.sha256) {
            (None, None, None) => Ok(None),
            (Some(version), Some(url), Some(sha256)) => {
                Ok(Some(GatorPin::new(version, url, sha256)?))
            }
            (version, url, _) => Err(ConfigError::PartialPin {
                missing: first_missing(version, url),
            }),
        }
    }

    /// The local binary, when `path` is set and not empty.
    pub fn local_binary(&self) -> Option<&Path> {
        self.path.as_deref().filter(|p| !p.as_os_str().is_empty())
    }

    /// The local binary when one is set (it must be a file), otherwise the validated pin.
    pub fn source(&self) -> Result<GatorSource, ConfigError> {
        if let Some(path) = self.local_binary() {
            if !path.is_file() {
                return Err(ConfigError::PathNotFile(path.display().to_string()));
            }
            return Ok(GatorSource::Local(path.to_path_buf()));
        }
        match self.pin()? {
            Some(pin) => Ok(GatorSource::Pinned(pin)),
            None => Err(ConfigError::MissingPinKey("version")),
        }
    }
}

fn first_missing(version: &Option<String>, url: &Option<String>) -> &'static str {
    if version.is_none() {
        "version"
    } else if url.is_none() {
        "url"
    } else {
        "sha256"
    }
}

/// Everything needed to build an engine.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Which engine.
    pub engine: EngineKind,
    /// The gator section (ignored with `engine: embedded`).
    pub gator: GatorConfig,
    /// The work dir: the gator cache, its binary and its input (`<work>/in`) live under it.
    pub work_dir: PathBuf,
    /// Limit on one gator run and on the embedded engine's evaluation (default 300 s).
    pub timeout: Duration,
    /// Download limits and trust for the pinned gator.
    pub fetch: FetchOptions,
    /// Options of the embedded engine.
    pub engine_options: EngineOptions,
}

impl EngineConfig {
    /// A configuration with default timeout, fetch limits and engine options.
    pub fn new(engine: EngineKind, gator: GatorConfig, work_dir: impl Into<PathBuf>) -> Self {
        EngineConfig {
            engine,
            gator,
            work_dir: work_dir.into(),
            timeout: DEFAULT_TIMEOUT,
            fetch: FetchOptions::default(),
            engine_options: EngineOptions::default(),
        }
    }

    /// The embedded engine's options: [`EngineConfig::engine_options`] with
    /// [`EngineConfig::timeout`] as its time budget when it has none of its own.
    pub fn embedded_options(&self) -> EngineOptions {
        let mut options = self.engine_options.clone();
        options.time_budget = options.time_budget.or(Some(self.timeout));
        options
    }

    /// Checks the configuration without touching the network.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.engine.needs_gator() {
            self.gator.source()?;
        }
        Ok(())
    }
}

/// Why no engine could be built.
#[derive(Debug, Error)]
pub enum BuildError {
    /// The configuration is invalid (exit 2 in the binaries).
    #[error("invalid engine configuration")]
    Config(#[from] ConfigError),
    /// The pinned gator could not be fetched (a skipped run).
    #[error("gator could not be fetched")]
    Fetch(#[from] FetchError),
}

/// Builds the configured engine, fetching and verifying the pinned gator when the engine needs
/// it and `gator.path` is not set.
pub async fn build_engine(config: &EngineConfig) -> Result<Box<dyn PolicyEngine>, BuildError> {
    config.validate()?;
    let embedded = || Embedded::new(config.embedded_options());
    Ok(match config.engine {
        EngineKind::Embedded => Box::new(embedded()),
        EngineKind::Gator => Box::new(gator(config).await?),
        EngineKind::Both => Box::new(Both::new(embedded(), gator(config).await?)),
    })
}

/// The configured gator (fetched when pinned), writing its input under the work dir. Unless
/// `gator.k8sNativeValidation` is set, gator gets the embedded engine's CEL setting (no flag
/// when that is gator's default).
async fn gator(config: &EngineConfig) -> Result<Gator, BuildError> {
    let native_default = (!config.engine_options.k8s_native_validation).then_some(false);
    let binary = match config.gator.source()? {
        GatorSource::Local(path) => path,
        GatorSource::Pinned(pin) => fetch_gator(&pin, &config.work_dir, &config.fetch).await?,
    };
    let runner = GatorRunner::new(binary)
        .with_timeout(config.timeout)
        .with_k8s_native_validation(config.gator.k8s_native_validation.or(native_default))
        .with_work_dir(&config.work_dir);
    Ok(Gator::new(runner, &config.work_dir))
}
