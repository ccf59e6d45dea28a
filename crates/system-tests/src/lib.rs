//! Tests of what ships, across crates, run by `cargo test`: the Helm chart, projection parity
//! and the Rego corpus against live OPA.
//!
//! Nothing here is shipped; the crate exists for its `tests/`:
//! - `chart_render`: `charts/workload-report` rendered with real Helm for a set of value cases
//!   ([`chart`]), each rule of what it must render a named test;
//! - `chart_dashboard`: the dashboard pinned panel by panel and every chart query parsed with
//!   the official LogQL and PromQL grammars ([`grammars`]);
//! - `chart_binary`: the rendered config and the CronJob's own Pod through the
//!   `workload-report` binary ([`binary`]);
//! - `chart_live`: the rendered RBAC installed into a real kube-apiserver, the report run as the
//!   chart's ServiceAccount, the dashboard's and alert rules' queries read back from a real Loki;
//! - `parity`: the engines on fixture objects versus on their projection;
//! - `differential`: the real gator and the embedded engine on mutated fixture objects;
//! - `opa_live`: OPA's recorded answers of the Rego corpus against OPA itself.
//!
//! The library holds what those tests share: where the workspace and the caches are
//! ([`workspace`]), a pinned PyPI package in a project-local venv installed once ([`venv`]),
//! registry installs with a deadline ([`process`]), Helm ([`helm`]), the LogQL and PromQL
//! grammars ([`grammars`]), the rendered release model ([`release`]), the check collector that
//! reports every failed check of a test at once ([`checks`]) and the Loki contract
//! ([`contract`]).

pub mod binary;
pub mod chart;
pub mod checks;
pub mod contract;
pub mod grammars;
pub mod helm;
pub mod process;
pub mod release;
pub mod venv;
pub mod workspace;
