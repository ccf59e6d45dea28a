//! Container image archives built here, without a registry or a container engine.
//!
//! [`build`] turns a list of [`Entry`]s (files, directories, symlinks) and an [`ImageConfig`]
//! into a single-layer docker-archive (the format `docker save` writes: `manifest.json`, the
//! config blob named by its sha256 and one uncompressed layer tar), which `docker load` and
//! `ctr images import` accept. Everything that could vary between builds is fixed — entry order
//! (sorted by path), timestamps, owners, the config's key order — so the same inputs give the
//! same bytes and the same image ID.
//!
//! [`dockerfile::final_stage`] reads what a Dockerfile's last stage says about the runtime
//! (binary copied in, user, workdir, entrypoint, cmd); [`workload_report`] is this project's
//! image, which a test compares with the repository's `Dockerfile` so the two cannot drift.
//!
//! Pure but for [`workload_report::from_host`], which reads the binary, the libraries `ldd`
//! names and the CA bundle from this machine; the caller writes the archive.

mod archive;
pub mod dockerfile;
mod layer;
pub mod workload_report;

pub use archive::{Built, ImageConfig, build};
pub use layer::{Entry, EntryKind};

/// Why an archive could not be built.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ImageError {
    /// An entry's path is empty, relative to a parent (`..`) or otherwise unusable.
    #[error("image entry {path:?}: {why}")]
    BadPath {
        /// The path as given.
        path: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// Two entries name the same path.
    #[error("image entry {path:?} is given twice")]
    Duplicate {
        /// The path.
        path: String,
    },
    /// The tar writer failed (in memory: only an unrepresentable header does that).
    #[error("image layer entry {path:?}: {message}")]
    Tar {
        /// The entry.
        path: String,
        /// The writer's message.
        message: String,
    },
}
