//! Reads Gatekeeper ConstraintTemplates, Constraints, ExpansionTemplates, Namespaces and workloads
//! from a live cluster or a snapshot, and writes the projection an evaluator reads.
//!
//! Data flow: the API ([`read::read_cluster`], through `kube`) or a snapshot
//! ([`snapshot::read_snapshot`]) → the typed model ([`model::ClusterState`]) → the projection
//! ([`projection::write_projection`] to `<work>/in/`, or [`projection::project`] in memory) and,
//! optionally, a saved snapshot ([`snapshot::save_snapshot`]) that replays the run offline.
//!
//! A run that must not hold the whole cluster uses [`read::open_cluster`]: the policy side
//! (templates, Constraints, Namespaces) as a model, the workloads as list pages
//! ([`read::WorkloadPages`]), saved on the way by a [`snapshot::SnapshotWriter`].
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use cluster_projection::{ClusterSource, ReadSpec, read_cluster, write_projection};
//! let source = ClusterSource::detect(None, None);
//! let spec = ReadSpec::for_constraint_kinds(["K8sRequiredLabels"]);
//! let state = read_cluster(&source, &spec).await?;
//! write_projection(&state, std::path::Path::new("/work"))?;
//! # Ok(()) }
//! ```

pub mod access;
pub mod model;
pub mod projection;
pub mod read;
pub mod snapshot;

pub use access::{ClusterSource, ConfigError, InClusterConfig};
pub use model::{
    ClusterState, Constraint, ExpansionTemplate, MAX_BODY_BYTES, ModelError, Mutator, Namespace,
    RawObject, ReadSpec, Template, Workload, WorkloadKind,
};
pub use projection::{
    ProjectedObject, ProjectionError, ProjectionSummary, project, project_lazily, project_object,
    project_owned, project_split, write_projected, write_projection,
};
pub use read::{
    ReadError, WorkloadPages, open_cluster, read_cluster, read_cluster_blocking, read_with_client,
};
pub use snapshot::{
    SnapshotError, SnapshotLimits, SnapshotWorkloads, SnapshotWriter, open_snapshot,
    open_snapshot_with, read_snapshot, read_snapshot_text, read_snapshot_with, save_snapshot,
};
