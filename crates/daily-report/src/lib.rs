//! The daily workload report pipeline: configuration, counting, audit cross-check and run status.
//!
//! [`config`] validates the YAML config and reads the environment through an injectable lookup;
//! [`count`] turns evaluation results into per team → namespace → rule counts; [`audit`] cross-
//! checks them against Gatekeeper's audit; [`coverage`] says which workload kinds each rule can
//! see (directly or through ExpansionTemplates) and warns about rules that can see none;
//! [`history`] compares them with the previous run (new, fixed); [`run`] orchestrates one run
//! over injectable I/O (collect, deliver and read back, clock) and decides the status (ok /
//! partial / skipped); [`progress`] is what a run reports while it works (shown by the binary).

pub mod audit;
pub mod config;
pub mod count;
pub mod coverage;
pub mod history;
pub mod live;
pub mod progress;
pub mod run;

pub use cluster_projection::WorkloadKind;
pub use config::{Config, ConfigError, EngineKind, EnvError, Settings};
pub use count::Finding;
pub use run::{Collected, Delivery, Outcome, RunContext, RunOutput, execute};
