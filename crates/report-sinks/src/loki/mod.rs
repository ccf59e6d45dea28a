//! Loki: the `run`, `policy_error`, `summary`, `team_total` and `violation` lines of a report
//! ([`LokiSink`], pure), the client that pushes them to `POST {url}/loki/api/v1/push` and reads
//! lines back with `GET {url}/loki/api/v1/query_range` ([`LokiClient`]), the read wire format
//! ([`query`], sans I/O) and the previous run a report is compared with ([`history`]).
//!
#![doc = include_str!("../../LOKI_CONTRACT.md")]

mod client;
pub mod history;
mod lines;
pub mod query;

pub use client::{LokiAuth, LokiClient, LokiEndpoint, QueryError};
pub use history::{HistoryError, HistoryLimits, HistoryQuery, PreviousRun, PreviousViolation};
pub use lines::{LokiBatches, LokiPush, LokiSink, LokiStream};

/// The `team` label of the `run` and `policy_error` lines (which belong to no team).
pub const RUN_TEAM: &str = "_run";
