//! The daily report's sinks: Slack digests (Block Kit) and Loki push lines.
//!
//! The pipeline builds one [`Report`] per run ([`model`]); each sink renders it purely
//! ([`SlackSink::render`], [`LokiSink::render`]): `render` returns exactly the payloads that would
//! be sent, so a dry run or `--out DIR` writes the same bytes a live run sends, and
//! [`SlackMessage::plain_text`] is what a terminal shows of a digest (this crate is the only one
//! that knows Block Kit). Delivery is a separate, thin I/O step: [`slack::SlackPoster::post`] and [`loki::LokiClient::push`], both over hyper + rustls
//! (ring) with finite timeouts and no redirect following.
//!
//! Reading is this crate's job too: [`loki::LokiClient::previous_run`] reads the previous run of
//! the cluster back from Loki (`query_range`, paged and bounded), the baseline the pipeline
//! compares a report with before it is rendered.
//!
//! ```text
//!                       LokiClient::previous_run ──▶ PreviousRun (compared by daily-report)
//!              ┌── SlackSink::render ──▶ Vec<TeamDigest> ──▶ SlackPoster::post (per team)
//! Report ──────┤
//!              └── LokiSink::render  ──▶ LokiPush       ──▶ LokiClient::push
//! ```
//!
//! Secrets: webhook URLs and Loki credentials are held as [`secrecy::SecretString`] (inside
//! [`WebhookUrl`] and [`loki::LokiAuth`]), whose `Debug` prints nothing and which has no
//! `Display`. Every error text that could carry them goes through [`hide`] (the workspace's one
//! redactor, [`Redactor`]), which removes the URL, its path tails and its token in any encoding a
//! server echoes them in (raw, case-folded, percent-encoded, JSON-escaped, wrapped), also when an
//! error body echoes the path without a scheme; ordinary words of the path stay.
//! A malformed webhook value fails with the fixed reason `invalid URL` ([`SendError::InvalidUrl`]).

pub mod http;
pub mod loki;
pub mod model;
pub mod secret;
pub mod slack;

pub use http::{HttpOptions, SendError};
pub use https_client::{ExtraCa, TrustRoots};
pub use loki::{
    HistoryError, HistoryLimits, HistoryQuery, LokiAuth, LokiBatches, LokiClient, LokiEndpoint,
    LokiPush, LokiSink, PreviousRun, PreviousViolation,
};
pub use model::{
    AuditCheck, FixedWorkload, History, NamespaceReport, ObjectName, PolicyError, PreviousRunRef,
    Report, RuleReport, RunStatus, RunSummary, TeamReport, ViolatingWorkload,
};
pub use secret::{REDACTED, Redactor, WebhookUrl, hide};
pub use slack::{SlackMessage, SlackOptions, SlackPoster, SlackSink, TeamDigest, problems_message};
